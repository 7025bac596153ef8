//! The differential-test driver: every structure is checked against `std::collections::BTreeMap`.
//!
//! A structure's tests hand the driver a way to make an empty map, a [`KeyShape`], a seed and a
//! number of steps. The driver then plays a long random sequence of operations against the map
//! and against a `BTreeMap<Vec<u8>, u64>` oracle, compares every answer, and panics at the first
//! difference with a message naming the seed, the step, the operation (keys printed with
//! [`Escaped`]), and the expected and actual answers. The sequence depends only on the seed, so a
//! failure is reproduced by running the same call again.
//!
//! # What is checked
//!
//! - [`differential_ordered`] ([`OrderedMap`]): `insert` of new and existing keys (the previous
//!   value is compared, then the key is read back and `len` compared), `remove`, `get`,
//!   `contains_key`, `len`/`is_empty`, `first`/`last`, `lower_bound`/`upper_bound` with every
//!   [`Bound`] kind, `range` with every combination of bound kinds (empty and inverted ranges
//!   included, which must yield nothing) walked forward, backward or alternating `next` and
//!   `next_back` up to a random limit, a full `iter()` comparison with a `size_hint` check, a rare
//!   `clear()`, and `memory_usage() > 0` whenever the map is not empty.
//! - [`differential_concurrent`] ([`ConcurrentOrderedMap`]): the same, single-threaded, through
//!   the `&self` API: `get`/`get_with`, `insert`, `remove`, `len`, `lower_bound_with`,
//!   `upper_bound_with`, `visit_range` and `visit_range_rev` breaking after a random count (a
//!   visitor called again after it returned `Break` is a failure). The trait has no `clear`; the
//!   driver sometimes removes every key one by one instead.
//! - [`check_static`] ([`StaticMap`]): `get` of present, absent and neighbouring keys, cursors
//!   over ranges with every bound kind walked forward, backward or alternating, `len`.
//! - [`check_builder_rejects`] ([`StaticMapBuilder`]): out-of-order and repeated keys are refused
//!   with the right [`Error`] fields, a refused push leaves the builder unchanged, and the
//!   finished map holds exactly the accepted keys.
//!
//! Ranges are passed in every form a caller may use (`a..b` over `Vec<u8>` or `&str`,
//! `a..=b`, `a..`, `..b`, `..=b`, `..`, and pairs of `Bound<&[u8]>`).
//!
//! # Keys
//!
//! [`KeyShape`] names the adversarial key distributions: random bytes, long shared prefixes, keys
//! that are prefixes of each other (the empty key included), keys of only 0x00 and 0xFF bytes,
//! multi-KiB keys that differ late or by length, and 8-byte big-endian integers for integer-only
//! maps. Each draws from a small universe so that inserts, removes and gets of the same key are
//! frequent; the driver also picks keys already stored and their neighbours (one byte longer,
//! shorter, incremented) for gets and range bounds.
//!
//! # Using it from a structure's tests
//!
//! ```
//! use mlpdex::testing::{differential_ordered, KeyShape, ModelMap};
//!
//! // `ModelMap` stands in for the structure under test.
//! for &shape in KeyShape::ALL_BYTES {
//!     for seed in [1, 2] {
//!         differential_ordered(ModelMap::new, shape, seed, 2_000);
//!     }
//! }
//! ```
//!
//! A static structure draws its key set with [`KeyShape::gen_key`], builds from the sorted
//! oracle, and checks the result and its builder:
//!
//! ```text
//! let mut rng = TestRng::new(seed);
//! let oracle: BTreeMap<Vec<u8>, u64> =
//!     (0..10_000).map(|i| (shape.gen_key(&mut rng), i)).collect();
//! let mut builder = MyBuilder::new();
//! builder.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))?;
//! check_static(&builder.finish()?, &oracle, shape, seed, 20_000);
//! check_builder_rejects(MyBuilder::new);
//! ```
//!
//! Integer-only maps use [`KeyShape::U64`], whose keys (and probe keys) are all 8 bytes wide.
//! Any `Err` from `insert` is a divergence, since the oracle takes every key: a structure that
//! refuses some keys (say [`Error::KeyTooLong`]) is run only with the shapes it accepts.
//! The `try_*` variants return the [`Divergence`] instead of panicking, for tests asserting that
//! a deliberately broken structure is caught. A panic inside the map is reported as a divergence
//! too, with the step and the operation during which it happened.
//!
//! For property tests, [`arb_ops`] generates operation sequences ([`MapOp`]) that proptest
//! shrinks to a minimal failing case, and [`run_ops`] applies one against an oracle:
//!
//! ```
//! use mlpdex::testing::{arb_ops, run_ops, ModelMap};
//! use proptest::test_runner::{Config, TestCaseError, TestRunner};
//!
//! let mut runner = TestRunner::new(Config { cases: 32, ..Config::default() });
//! runner
//!     .run(&arb_ops(), |ops| {
//!         run_ops(&mut ModelMap::new(), &ops).map_err(TestCaseError::fail)
//!     })
//!     .unwrap();
//! ```
//!
//! # Phases and cost
//!
//! The writing drivers cycle through phases of 8000 steps: 4000 of growth (mostly inserts of
//! drawn keys), 2000 of churn (inserts and removes balance), 2000 of shrinking (mostly
//! removes), with a `clear` about once in 10,000 steps, a `memory_usage` check every 1000 and a
//! full comparison at the end. A map thus grows to a large part of its shape's universe (a few
//! hundred keys for `PrefixChains` and `Long`, around a thousand for `Mixed` and `U64`) and
//! empties again. For [`ModelMap`], 20,000 steps take 10–25 ms in the test profile
//! (`opt-level = 2`), about 150 ms with `Long` keys. A structure whose nodes split only at thousands of keys should add runs
//! with `U64`, `RandomBytes` or `Mixed` and more steps.
//!
//! [`ModelMap`] is a sorted-`Vec` implementation of [`OrderedMap`] using the trait's default
//! methods; the driver's own tests run it, and broken variants of it, to show that the driver
//! passes a correct map and catches wrong ones.
//!
//! The module exists under `cfg(test)` and with the `testing` feature, which also brings in
//! proptest (re-exported as [`proptest`](mod@proptest)). The crate's own integration tests get
//! the feature from a dev-dependency of the crate on itself, so a plain `cargo test` runs them;
//! a downstream crate turns it on in its `[dev-dependencies]`. The module is hidden from the
//! crate's documentation: it is test support, not part of the indexes' API.
//!
//! Multi-threaded checks of [`ConcurrentOrderedMap`] implementations (stress with
//! linearizability checks, range visits under churn, values dropped exactly once) are in
//! [`concurrent`].
//!
//! [`internals`] wraps the crate-internal primitives (rank and select, the SIMD label search,
//! the Cuckoo Trie's and MlpIndex's prefix hashes) for the micro-benchmarks in `benches/`.
//!
//! [`Bound`]: core::ops::Bound
//! [`ConcurrentOrderedMap`]: crate::ConcurrentOrderedMap
//! [`Error`]: crate::Error
//! [`Error::KeyTooLong`]: crate::Error::KeyTooLong
//! [`Escaped`]: crate::key::Escaped
//! [`OrderedMap`]: crate::OrderedMap
//! [`StaticMap`]: crate::StaticMap
//! [`StaticMapBuilder`]: crate::StaticMapBuilder

pub mod concurrent;
pub mod internals;

#[doc(no_inline)]
pub use proptest;

mod apply;
mod format;
mod generate;
mod keys;
mod model;
mod ops;
mod ordered;
mod report;
mod rng;
mod static_map;
mod strategies;

pub use self::format::{
    damage_keeping_checksum, first_sparse_label_at, reseal, sparse_chain_bits_at,
};
pub use self::keys::{KeyShape, permutations};
pub use self::model::{ModelMap, ModelRange};
pub use self::ops::{MapOp, Walk};
pub use self::ordered::{
    differential_concurrent, differential_ordered, try_differential_concurrent,
    try_differential_ordered,
};
pub use self::report::Divergence;
pub use self::rng::TestRng;
pub use self::static_map::{apply_batch, check_builder_rejects, check_static, try_check_static};
pub use self::strategies::{
    arb_key, arb_ops, arb_ops_with, arb_u64_key, run_ops, run_ops_concurrent,
};

#[cfg(test)]
mod tests;
