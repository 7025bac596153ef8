//! Multi-threaded checks for any [`ConcurrentOrderedMap`]: stress runs with linearizability
//! checks, range visits under churn, and values dropped exactly once.
//!
//! A structure's test file describes its map as a [`Subject`] (how to make an empty map, and
//! optionally an invariant check and a key-length limit) and passes it, with a plan, to the
//! harnesses below. Every harness panics at the first failed check with a message naming the
//! subject, the plan (or seed), the thread, the operation and the key. Runs are sized by
//! operation counts and their random choices depend only on the seed (the interleaving of
//! course does not); nothing asserts on timing, and readers run until every writer is done.
//!
//! # The harnesses
//!
//! - `stress` (values `u64`): `plan.writers` writers and `plan.readers` readers on one map,
//!   over a universe of about `plan.keys` keys of mixed shapes (the empty key, prefix chains
//!   with 0x00 and 0xFF extensions, every 0x00/0xFF string of 1 to 5 bytes, a few multi-KiB
//!   keys and keys that are prefixes of them, then random bytes, shared prefixes, prefix
//!   chains, 0x00/0xFF strings and 8-byte integers). Writers run fill phases (85 % inserts)
//!   and drain phases (85 % removes), so the map grows to a good part of the universe and
//!   shrinks again, several times. Every value is a [`Stamp`]: the key it was written for, the
//!   writer, and the writer's operation counter. Checked while running:
//!   - a value is only ever seen under its own key, from a writer that exists;
//!   - per thread, per key and per writer, the counters seen never go back (`get`, `get_with`,
//!     `lower_bound_with`, `upper_bound_with`, `visit_range`, `visit_range_rev`, and the values
//!     `insert`/`remove` return);
//!   - a `get` never returns a value of writer `w` older than the last write `w` had completed
//!     on that key before the `get` began (real-time order across threads);
//!   - seeks find known keys on the right side of their bound;
//!   - visits report known keys, within their range, strictly in order, at most as many as the
//!     visitor accepted, and never call the visitor again after it returned `Break`;
//!   - `len()` never exceeds the universe and `memory_usage()` is never 0.
//!
//!   After joining: every value anyone saw was actually written; the final contents (a full
//!   `visit_range` both ways, `get` of every key, `len()`) are what the writers' last operations
//!   imply; the subject's invariant check passes; the plan really filled and drained the map;
//!   and removing every key returns its value and leaves an empty map that visits nothing,
//!   checked again.
//!   - [`Sharing::Partitioned`]: each writer owns the keys whose index is its id modulo the
//!     number of writers, so every `insert`/`remove` must return exactly the writer's own last
//!     value, a read-back (`get`, `lower_bound_with`) right after a write must see it, and the
//!     final contents are determined exactly.
//!   - [`Sharing::Shared`]: every writer writes every key, so each key's final value must be
//!     the last operation of one of the writers that touched it, and a value a writer gets back
//!     from `insert`/`remove` that it wrote itself must be its own latest one.
//! - [`range_visits_under_churn`] (values `u64`): keys are given roles by index. "Stable" keys
//!   are inserted before the run and never touched: every concurrent `visit_range` /
//!   `visit_range_rev` whose range (up to where it broke off) covers one must report it with its
//!   original value, every seek must stop at or before the nearest one, and `get` must find it.
//!   "Doomed" keys are inserted before the run and removed by writer 0, half of them before the
//!   visitors start and the others one by one during the run, each published through a flag
//!   after its `remove` returned: no visit, seek or `get` that began after the flag was set
//!   may report it. The other keys churn under `plan.writers` writers (fill and drain phases)
//!   while `plan.visitors` visitors run whole-map visits and random ranges with every bound
//!   kind, some breaking off early; all the visit-shape and per-thread order checks of
//!   `stress` apply too. Afterwards: the stable keys are there, no doomed key is back, only
//!   known keys with their own values, `len()` matches, the invariant check passes.
//! - [`values_dropped_once`] and [`values_dropped_once_concurrently`] (values [`Counted`]): a
//!   value type that records each clone and each drop, per id. `insert` and `remove` must
//!   return a clone of the value the key held (checked by origin); the map may not clone
//!   values otherwise (the clone count is exact: a `get` clones once, `get_with` and visits
//!   see the stored value itself, alive); a stored value is never dropped while stored, no
//!   value is dropped twice, dropping the map drops the values still stored right away, and
//!   every replaced or removed value is eventually dropped (work on a second map of the same
//!   type drives deferred reclamation; the loop is bounded by a round count, not by time). If
//!   the subject declares a key-length limit ([`Subject::with_max_key_len`]), an insert of a
//!   longer key must fail with [`Error::KeyTooLong`] and drop its value at once. The
//!   concurrent version runs 2 writers, each owning half the keys, and 2 readers checking that
//!   everything they reach through `get_with`, `lower_bound_with` and `visit_range` is a
//!   stored original not yet dropped.
//! - [`same_key_stress`] (values `u64`): `plan.threads` threads (more than the cores, so that
//!   threads are preempted inside operations) all inserting, removing and reading the same
//!   `plan.keys` keys (1, 2, 16, 400 in the crate's tests). Every value inserted is unique in
//!   the run, so the values must come out exactly once: each is returned by one `insert` (as
//!   the value it replaced) or one `remove`, or is still stored at the end, and nothing comes
//!   out that was never inserted. `len()`, read after every operation, must never exceed the
//!   number of keys (a length counter updated after the linking CAS can wrap below zero when
//!   a remove of the key runs in between). The per-thread order checks of `stress`, the
//!   final contents and a drain to empty are checked too.
//! - [`linearizable_histories`] (values `u64`): thousands of short runs, each on a new map:
//!   `plan.threads` threads (more than the cores) released together make a few random
//!   operations each on a few keys (the empty key, prefix keys, 0x00 and 0xFF bytes): inserts
//!   of values unique in the run, removes, gets, seeks both ways, and visits both ways with
//!   every bound kind and a limit. Every invocation and response is stamped on one shared
//!   clock, and each run's history is checked: each key's point operations must have a legal
//!   sequential order respecting real time (an exact search, Wing and Gong's with Lowe's
//!   memory of explored states), and every visit and seek must report keys in order, inside
//!   its bounds, within its limit, each with a value (or, for a key skipped, an absence) the
//!   key could have had at some moment of the visit given the writes around it. A failure
//!   prints the whole history, sorted by invocation.
//! - [`replaced_values_dropped_while_key_stays`] (values [`Counted`]): one key updated eleven
//!   times; every replaced value, the first included, is eventually dropped while the key is
//!   still stored (a map keeping a key's first value alive until the key is removed passes
//!   [`values_dropped_once`] but fails here).
//! - [`empty_key_alone_and_with_others`] and [`prefix_keys_in_every_insertion_order`]:
//!   single-threaded edge cases through the `&self` API, compared with a `BTreeMap` (full
//!   visits both ways, `len`, `is_empty`, `get`, and both seeks with every bound kind around
//!   each key and its neighbours): the empty key alone and next to `"\x00"` and `"\xff"`, and
//!   six keys that are prefixes of each other (`""`, `"a"`, `"ab"`, `"abc"`, `"ab\x00"`,
//!   `"ab\xff"`) inserted in all 720 orders and removed in another, compared after each step.
//!
//! [`entries`] and [`entries_rev`] collect a map's contents through full visits, for a
//! structure's own tests.
//!
//! Beyond the [`ConcurrentOrderedMap`] contract, the harnesses expect what every map of the
//! crate does: `insert` and `remove` hand back a clone of the old value (not the original),
//! dropping the map drops the values it still holds before `drop` returns, and
//! `memory_usage()` is above 0 even for an empty map. Keys are at most 8 KiB.
//!
//! # Using it from a structure's tests
//!
//! The harnesses take the map through a [`Subject`]; the `u64` harnesses and the [`Counted`]
//! ones need a subject each, which a generic function gives:
//!
//! ```text
//! use mlpdex::skiplist::SkipList;
//! use mlpdex::testing::concurrent::{self, ChurnPlan, Plan, Sharing, Subject};
//!
//! fn subject<V: Clone + Send + Sync + 'static>() -> Subject<SkipList<V>> {
//!     // The invariant check is optional; it returns `()` (panicking on failure) or
//!     // `Result<(), impl Display>`. A map with a small key-length limit would also declare it
//!     // with `.with_max_key_len(MAX_KEY_LEN)`.
//!     Subject::new("skip list", SkipList::new).with_audit(SkipList::check_invariants)
//! }
//!
//! #[test]
//! fn stress_partitioned_2_writers_2_readers() {
//!     concurrent::stress(&subject(), Plan::standard(Sharing::Partitioned, 2, 2, 0x5EED_0001));
//! }
//!
//! #[test]
//! fn range_visits_under_churn() {
//!     concurrent::range_visits_under_churn(&subject(), ChurnPlan::standard(2, 0xC4A2_0001));
//! }
//!
//! #[test]
//! fn values_dropped_once() {
//!     concurrent::values_dropped_once(&subject(), 0xD209);
//!     concurrent::values_dropped_once_concurrently(&subject(), 0xD210);
//! }
//! ```
//!
//! With a structure of this crate, a quick run looks like this:
//!
//! ```
//! use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
//! use mlpdex::testing::concurrent::{self, Plan, Sharing, Subject};
//!
//! let subject = Subject::new("cuckoo trie", ConcurrentCuckooTrie::<u64>::new)
//!     .with_audit(ConcurrentCuckooTrie::check_invariants);
//! concurrent::stress(&subject, Plan::quick(Sharing::Shared, 72));
//! ```
//!
//! # Cost
//!
//! The standard plans ([`Plan::standard`], [`ChurnPlan::standard`]) run 800,000 and 640,000
//! write operations plus the readers' work, a few seconds each on 2 cores for a structure of
//! this crate with `--release`; the quick plans ([`Plan::quick`], [`ChurnPlan::quick`]) a few
//! thousand, well under a second. [`values_dropped_once`] makes 6,000 operations and
//! [`values_dropped_once_concurrently`] 160,000 writes. [`SameKeyPlan::standard`] makes
//! 960,000 operations, 2 to 4 s on 2 cores in the test profile;
//! [`SameKeyPlan::quick`] 16,000.
//!
//! [`ConcurrentOrderedMap`]: crate::ConcurrentOrderedMap
//! [`Error::KeyTooLong`]: crate::Error::KeyTooLong

mod churn;
mod drain;
mod drops;
mod edge_cases;
mod helpers;
mod history;
mod same_key;
mod stamp;
mod stress;
mod subject;
mod view;

pub use self::churn::{ChurnPlan, range_visits_under_churn};
pub use self::drops::{
    Counted, replaced_values_dropped_while_key_stays, values_dropped_once,
    values_dropped_once_concurrently,
};
pub use self::edge_cases::{empty_key_alone_and_with_others, prefix_keys_in_every_insertion_order};
pub use self::helpers::{Done, as_slice, entries, entries_rev, join_all};
pub use self::history::{HistoryPlan, linearizable_histories};
pub use self::same_key::{SameKeyPlan, same_key_stress};
pub use self::stamp::{Stamp, mixed_keys};
pub use self::stress::{Plan, Sharing, stress};
pub use self::subject::{AuditOutcome, Subject};

#[cfg(test)]
mod tests;
