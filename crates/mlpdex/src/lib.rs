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
//!
//! Each structure is a `raw` core (layout, `unsafe`, SIMD, protocol) under a safe front end.
//!
//! # Keys
//!
//! Keys are byte strings ordered lexicographically, a proper prefix first. The empty key, every
//! byte value including 0x00 and 0xFF, prefix keys stored together and keys of several KiB are
//! legal everywhere unless a structure says it is integer-only.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod api;
pub mod cuckoo_trie;
mod error;
pub mod hope;
pub mod key;
pub mod mlp_index;
pub mod skiplist;
pub mod substrate;
mod succinct;
mod sync;
// Test support for the crate's own tests (turned on for them by the self dev-dependency in
// Cargo.toml) and for downstream crates wrapping an index; not part of the documented API.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

pub use api::{
    ConcurrentOrderedMap, OrderedMap, RangeCursor, RangeFilter, StaticMap, StaticMapBuilder,
};
pub use error::Error;
// The FST and SuRF share one trie core in `succinct`; their public paths stay `mlpdex::fst` and
// `mlpdex::surf`.
pub use key::KeyRange;
pub use succinct::{fst, surf};
