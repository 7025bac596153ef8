//! Low-level pieces shared by every structure (crate-internal): memory regions on huge pages, software prefetch,
//! hashing, and bit vectors. Nothing here knows about any particular index.
//!
//! | module | what |
//! |---|---|
//! | [`region`] | zeroed 2 MiB-aligned mappings with `MADV_HUGEPAGE`, the [`HugePages`] setting |
//! | [`prefetch`] | `prefetch_read` / `prefetch_write`, safe for any address |
//! | [`hash`] | XXH3 for bytes, a 64-bit mixer for integers, a `BuildHasher` |
//! | [`bits`] | growable `BitVec` with zeroed tail bits, its read-only `FrozenBits` form |
//! | [`frozen`] | read-only arrays owned or borrowed from a loaded image (zero-copy loading) |
//! | [`popcount`] | POPCNT detected at run time, a portable fallback, one dispatch per query |
//! | [`rank`] | rank directories (64- and 512-bit blocks), sampled select, broadword select-in-word |
//! | [`labels`] | SIMD search of a sorted run of byte labels, scalar fallback |
//! | [`inline_vec`] | a vector of at most `N` values stored inline (values at a fixed offset from their node) |
//!
//! Memory accounting convention: every structure's `memory_usage()` adds up the capacity of the
//! heap blocks it owns and the full length of the [`region::Region`]s it maps; a [`Frozen`] array
//! counts its length whether owned or borrowed from a loaded image.

#[forbid(unsafe_code)]
pub mod bits;
pub mod frozen;
pub mod hash;
pub mod image;
pub mod inline_vec;
pub mod labels;
pub mod popcount;
pub mod prefetch;
#[forbid(unsafe_code)]
pub mod rank;
pub mod region;

pub use bits::{BitVec, FrozenBits};
pub use frozen::{Frozen, Shared};
pub use region::HugePages;

/// The proptest settings of this module's tests: the defaults natively; under miri a few cases
/// and no failure file (miri's isolation hides the file system, and every case is interpreted).
#[cfg(test)]
pub(crate) fn proptest_config() -> proptest::prelude::ProptestConfig {
    if cfg!(miri) {
        proptest::prelude::ProptestConfig {
            cases: 4,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        }
    } else {
        proptest::prelude::ProptestConfig::default()
    }
}
