#![doc = include_str!("../../../README.md")]
//!
//! # Modules
//!
//! - [`api`]: the traits the structures share, each forwarding to the structures' inherent
//!   methods: [`OrderedMap`], [`ConcurrentOrderedMap`], [`StaticMap`] with
//!   [`StaticMapBuilder`] and [`RangeCursor`], and [`RangeFilter`].
//! - [`cuckoo_trie`]: the Cuckoo Trie, an ordered map for byte-string keys whose lookups
//!   prefetch all trie levels in parallel: [`cuckoo_trie::CuckooTrie`] (one thread, the full
//!   `BTreeMap` API) and [`cuckoo_trie::ConcurrentCuckooTrie`] (lock-free readers).
//! - [`epoch`]: the epoch [`Guard`](epoch::Guard) both concurrent maps lend entries under.
//! - [`mlp_index`]: [`mlp_index::MlpIndex`], the ordered map of `u64` keys that probes every
//!   trie level of a key at once.
//! - [`skiplist`]: [`skiplist::SkipList`], a lock-free skip list of byte-string keys whose
//!   iterator prefetches ahead along the towers, so long scans overlap their DRAM misses.
//! - [`fst`]: [`fst::Fst`], the Fast Succinct Trie, a static ordered map in about ten bits per
//!   trie node (LOUDS-Dense over LOUDS-Sparse), serializable.
//! - [`surf`]: [`surf::Surf`], the succinct range filter on the FST's trie (point and range
//!   queries, approximate counts, no false negatives).
//! - [`hope`]: order-preserving key compression ([`hope::Encoder`]) and [`hope::Hope`], which
//!   puts an encoder in front of any of the maps above.
//! - [`key`]: key order, the [`KeyRange`] argument of every range method, and `u64` ↔
//!   big-endian key conversions.
//! - [`Error`]: the one error enum, with fields naming what went wrong.
//! - [`HugePages`]: whether a structure's tables ask for 2 MiB pages (a field of its `Config`).
//!
//! Each structure is a `raw` core (layout, `unsafe`, SIMD, protocol) under a safe front end.
//!
//! # Platforms
//!
//! Unix only: the hash tables of the Cuckoo Trie and MlpIndex live in anonymous memory
//! mappings (`mmap`, and `madvise` for huge pages on Linux, through `libc`), so the crate does
//! not compile elsewhere. Huge pages are a per-structure setting, [`HugePages`], in each
//! `Config` that maps tables.
//!
//! Any Unix architecture works, with portable code everywhere; none needs target flags. On
//! x86-64 the rank and select of the [`fst`] and [`surf`] use the POPCNT instruction when the
//! CPU has it, detected once per process at run time, so a dependent crate built for plain
//! `x86_64` runs them at full speed; the label search uses SSE2, part of every x86-64 CPU.
//! Elsewhere (aarch64 included) and under miri they use `u64::count_ones` and a scalar label
//! loop.
//!
//! # What is public
//!
//! The memory regions, hashing, bit vectors and rank/select the structures share are internal
//! (`substrate`), as are the range-bound helpers of [`key`]; a dependent crate sees only the
//! structures, their configs and the traits:
//!
//! ```compile_fail
//! use mlpdex::substrate::region::Region; // error[E0603]: module `substrate` is private
//! ```
//!
//! # Keys
//!
//! Keys are byte strings ordered lexicographically, a proper prefix first. The empty key, every
//! byte value including 0x00 and 0xFF, prefix keys stored together and keys of several KiB are
//! legal everywhere unless a structure says it is integer-only.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(not(unix))]
compile_error!(
    "mlpdex supports Unix targets only: its tables are anonymous memory mappings (mmap and \
     madvise through libc); see the crate documentation, section Platforms"
);

pub mod api;
// The modules marked `forbid(unsafe_code)` hold no unsafe code of their own (miri leaves
// their tests out: scripts/miri.sh).
#[forbid(unsafe_code)]
pub mod compact_art;
#[forbid(unsafe_code)]
pub mod compact_btree;
pub mod cuckoo_trie;
#[forbid(unsafe_code)]
pub mod dynamic_surf;
pub mod epoch;
mod error;
#[forbid(unsafe_code)]
pub mod hope;
pub mod hybrid;
pub mod key;
pub mod mlp_index;
pub mod mlp_index_bytes;
pub mod pi;
#[cfg(target_os = "linux")]
pub mod shortcut_eh;
pub mod skiplist;
mod substrate;
#[forbid(unsafe_code)]
mod succinct;
mod sync;
// Test support for the crate's own tests (turned on for them by the self dev-dependency in
// Cargo.toml) and for downstream crates wrapping an index; not part of the documented API.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

pub use api::{
    ByValue, ConcurrentOrderedMap, OrderedMap, RangeCursor, RangeFilter, StaticMap,
    StaticMapBuilder,
};
pub use error::Error;
// The FST and SuRF share one trie core in `succinct`; their public paths stay `mlpdex::fst` and
// `mlpdex::surf`.
pub use key::KeyRange;
pub use substrate::HugePages;
pub use succinct::{fst, surf};
