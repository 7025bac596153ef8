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
//! - [`stress`] (values `u64`): `plan.writers` writers and `plan.readers` readers on one map,
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
//!   [`stress`] apply too. Afterwards: the stable keys are there, no doomed key is back, only
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
//!   a remove of the key runs in between). The per-thread order checks of [`stress`], the
//!   final contents and a drain to empty are checked too.
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

use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
use std::thread;

use super::{KeyShape, TestRng, permutations};
use crate::key::{Escaped, after_start, before_end, show_bound};
use crate::{ConcurrentOrderedMap, Error};

// ---------------------------------------------------------------------------------------------
// The map under test
// ---------------------------------------------------------------------------------------------

/// An invariant check of a map: `Err` says what is wrong.
type Audit<M> = dyn Fn(&M) -> Result<(), String>;

/// What an invariant check given to [`Subject::with_audit`] returns: `()` for a check that
/// panics when something is wrong, or `Result<(), E>` for one that says so with `Err`.
pub trait AuditOutcome {
    /// `Ok` when the check passed, else what is wrong.
    fn into_result(self) -> Result<(), String>;
}

impl AuditOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: fmt::Display> AuditOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// A concurrent map type under test, as the harnesses see it: how to make an empty map, how to
/// check its internal invariants, and the longest key it accepts.
///
/// `M` is the map type with its value type, e.g. `SkipList<u64>` for [`stress`] and
/// `SkipList<Counted>` for [`values_dropped_once`].
pub struct Subject<M> {
    name: String,
    make: Box<dyn Fn() -> M>,
    audit: Option<Box<Audit<M>>>,
    max_key_len: Option<usize>,
}

impl<M> Subject<M> {
    /// A subject called `name` in failure messages, whose empty maps `make` returns; no
    /// invariant check and no key-length limit.
    pub fn new(name: impl Into<String>, make: impl Fn() -> M + 'static) -> Self {
        Subject {
            name: name.into(),
            make: Box::new(make),
            audit: None,
            max_key_len: None,
        }
    }

    /// Adds a check of the map's internal invariants, run by the harnesses before and after
    /// their runs (never while other threads use the map). The check either returns
    /// `Result<(), E>` (`E: Display`, e.g. `ConcurrentCuckooTrie::check_invariants`) or
    /// returns `()` and panics when something is wrong; either way the harness's failure
    /// message names the subject and the point of the run.
    pub fn with_audit<R: AuditOutcome>(mut self, audit: impl Fn(&M) -> R + 'static) -> Self {
        self.audit = Some(Box::new(move |map: &M| audit(map).into_result()));
        self
    }

    /// Declares that the map refuses keys longer than `max` bytes with [`Error::KeyTooLong`];
    /// [`values_dropped_once`] then inserts a key of `max + 1` bytes (allocated whole, so
    /// declare only a limit that is cheap to exceed) and checks that it is refused and its
    /// value dropped at once. The harnesses' keys are at most 8 KiB, so `max` must be at
    /// least 8192.
    pub fn with_max_key_len(mut self, max: usize) -> Self {
        self.max_key_len = Some(max);
        self
    }

    /// The name given to [`new`](Self::new).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new empty map.
    pub fn make(&self) -> M {
        (self.make)()
    }

    /// Runs the invariant check, if any; panics with the subject's name, `ctx` and the check's
    /// message if it fails (or panics).
    pub fn audit(&self, map: &M, ctx: &str) {
        let Some(audit) = &self.audit else { return };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| audit(map)));
        let e = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(p) => match (p.downcast_ref::<String>(), p.downcast_ref::<&str>()) {
                (Some(s), _) => format!("panicked: {s}"),
                (None, Some(s)) => format!("panicked: {s}"),
                (None, None) => "panicked".to_string(),
            },
        };
        panic!("[{}] {ctx}: the invariant check failed: {e}", self.name);
    }

    /// The key-length limit given to [`with_max_key_len`](Self::with_max_key_len).
    pub fn max_key_len(&self) -> Option<usize> {
        self.max_key_len
    }
}

impl<M> fmt::Debug for Subject<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subject")
            .field("name", &self.name)
            .field("audit", &self.audit.is_some())
            .field("max_key_len", &self.max_key_len)
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// Every entry of `map` in ascending order, through `visit_range(..)`.
pub fn entries<V: Clone, M: ConcurrentOrderedMap<V>>(map: &M) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// Every entry of `map` in descending order, through `visit_range_rev(..)`.
pub fn entries_rev<V: Clone, M: ConcurrentOrderedMap<V>>(map: &M) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range_rev(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// An owned bound as a borrowed one.
pub fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Counts a finished (or panicked) worker thread when dropped, so that the threads waiting
/// for the writers never wait for one that panicked.
#[derive(Debug)]
pub struct Done<'a>(pub &'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Release);
    }
}

/// Joins scoped threads, re-raising the first panic (the scope still waits for the others).
pub fn join_all<T>(handles: Vec<thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| match h.join() {
            Ok(x) => x,
            Err(p) => std::panic::resume_unwind(p),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Key universes and stamped values
// ---------------------------------------------------------------------------------------------

/// A sorted set of distinct keys; a key is named by its index, so key order is index order.
struct Universe {
    keys: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, usize>,
}

/// A sorted set of at least `target` adversarial keys: the empty key; prefix chains (every
/// prefix of `abcdefghijkl`, of twelve 0x00 bytes, of twelve 0xFF bytes and of `a\0b\xffa`,
/// each also followed by 0x00 and by 0xFF); every 0x00/0xFF string of 1 to 5 bytes; `long`
/// multi-KiB keys, each with its first half and its one-byte 0x00 extension; then random keys
/// of the other [`KeyShape`]s (random bytes, shared prefixes, prefix chains, 0x00/0xFF,
/// 8-byte integers). Deterministic in `seed`.
pub fn mixed_keys(target: usize, long: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut set: BTreeSet<Vec<u8>> = BTreeSet::new();
    set.insert(Vec::new());
    let chains: [&[u8]; 4] = [b"abcdefghijkl", &[0x00; 12], &[0xff; 12], b"a\x00b\xffa"];
    for chain in chains {
        for n in 1..=chain.len() {
            let p = chain[..n].to_vec();
            for b in [0x00, 0xff] {
                let mut q = p.clone();
                q.push(b);
                set.insert(q);
            }
            set.insert(p);
        }
    }
    for len in 1..=5u32 {
        for bits in 0..(1u32 << len) {
            set.insert(
                (0..len)
                    .map(|i| if bits >> i & 1 == 1 { 0xff } else { 0x00 })
                    .collect(),
            );
        }
    }
    let mut rng = TestRng::new(seed);
    let mut longs = 0;
    while longs < long {
        let k = KeyShape::Long.gen_key(&mut rng);
        if set.insert(k.clone()) {
            longs += 1;
            set.insert(k[..k.len() / 2].to_vec());
            let mut ext = k;
            ext.push(0x00);
            set.insert(ext);
        }
    }
    const FILL: [KeyShape; 5] = [
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::U64,
    ];
    let mut i = 0;
    while set.len() < target {
        set.insert(FILL[i % FILL.len()].gen_key(&mut rng));
        i += 1;
    }
    set.into_iter().collect()
}

impl Universe {
    /// [`mixed_keys`]`(target, long, seed)`, indexed.
    fn new(target: usize, long: usize, seed: u64) -> Universe {
        Universe::from_keys(mixed_keys(target, long, seed))
    }

    /// The sorted, distinct `keys`, indexed.
    fn from_keys(keys: Vec<Vec<u8>>) -> Universe {
        debug_assert!(keys.is_sorted_by(|a, b| a < b));
        assert!(
            keys.len() < 1 << INDEX_BITS,
            "universe too large for a stamp"
        );
        let index = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        Universe { keys, index }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn idx(&self, key: &[u8]) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// A bound for a range or a seek: mostly around a key of the universe, sometimes a key
    /// next to one (one byte longer, shorter, or last byte incremented), sometimes unbounded.
    fn random_bound(&self, rng: &mut TestRng) -> Bound<Vec<u8>> {
        if rng.chance(0.1) {
            return Bound::Unbounded;
        }
        let mut k = rng.pick(&self.keys).clone();
        match rng.below(8) {
            0 => k.push(0x00),
            1 => {
                k.pop();
            }
            2 => match k.last_mut() {
                Some(b) if *b < 0xff => *b += 1,
                _ => k.push(0x01),
            },
            _ => {}
        }
        if rng.chance(0.5) {
            Bound::Included(k)
        } else {
            Bound::Excluded(k)
        }
    }

    /// The indexes of the keys within `(s, e)`, as a half-open range of indexes.
    fn inside(&self, s: Bound<&[u8]>, e: Bound<&[u8]>) -> core::ops::Range<usize> {
        let lo = self.keys.partition_point(|k| !after_start(k, s));
        let hi = self.keys.partition_point(|k| before_end(k, e));
        lo..hi.max(lo)
    }

    fn show(&self, idx: usize) -> String {
        format!("key #{idx} {}", Escaped(&self.keys[idx]))
    }
}

/// Bits of a stamped value holding the writer id.
const WRITER_BITS: u32 = 8;
/// Bits of a stamped value holding the key's index in its universe.
const INDEX_BITS: u32 = 16;

/// What a stress value says about its write: which writer wrote it, as that writer's
/// how-manieth operation, for which key (by index in the run's sorted key universe).
///
/// The maps hold [`encode`](Self::encode)d stamps; failure messages show them decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The writer's operation counter when it wrote the value.
    pub counter: u64,
    /// The index of the key in the run's universe.
    pub idx: usize,
    /// The writer's id (for values inserted before a churn run, the number of writers).
    pub writer: usize,
}

impl Stamp {
    /// The stamp as a `u64`: counter, then 16 bits of key index, then 8 bits of writer.
    ///
    /// # Panics
    ///
    /// If a field does not fit.
    pub fn encode(self) -> u64 {
        assert!(self.counter < 1 << (64 - INDEX_BITS - WRITER_BITS));
        assert!(self.idx < 1 << INDEX_BITS && self.writer < 1 << WRITER_BITS);
        (self.counter << (INDEX_BITS + WRITER_BITS))
            | ((self.idx as u64) << WRITER_BITS)
            | self.writer as u64
    }

    /// The stamp [`encode`](Self::encode) turned into `v`.
    pub fn decode(v: u64) -> Stamp {
        Stamp {
            counter: v >> (INDEX_BITS + WRITER_BITS),
            idx: ((v >> WRITER_BITS) & ((1 << INDEX_BITS) - 1)) as usize,
            writer: (v & ((1 << WRITER_BITS) - 1)) as usize,
        }
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "writer {}'s operation #{} on key #{}",
            self.writer, self.counter, self.idx
        )
    }
}

/// What one thread has seen: per key and writer the largest counter seen (plus one), and
/// every value seen, to be checked against what the writers wrote.
struct View {
    who: String,
    writers: usize,
    last: Vec<u64>,
    seen: HashSet<u64>,
}

impl View {
    fn new(who: String, keys: usize, writers: usize) -> View {
        View {
            who,
            writers,
            last: vec![0; keys * writers],
            seen: HashSet::new(),
        }
    }

    /// Records that `op` saw value `v` under key `idx`: the value must have been written for
    /// that key by a known writer, and must not be older than one this thread saw before from
    /// the same writer for the same key.
    fn observe(&mut self, u: &Universe, op: &dyn fmt::Display, idx: usize, v: u64) {
        let s = Stamp::decode(v);
        assert!(
            s.idx == idx && s.writer < self.writers,
            "{}: {op} found the value {v:#x} ({s}) under {}: it was not written for this key",
            self.who,
            u.show(idx)
        );
        let slot = idx * self.writers + s.writer;
        assert!(
            s.counter + 1 >= self.last[slot],
            "{}: {op} found {s} under {} after this thread had seen writer {}'s later \
             operation #{} on it: not linearizable",
            self.who,
            u.show(idx),
            s.writer,
            self.last[slot] - 1
        );
        self.last[slot] = s.counter + 1;
        self.seen.insert(v);
    }
}

/// The result of one visit: the `(index, value)` pairs reported, in order.
struct Visit {
    entries: Vec<(usize, u64)>,
    broke: bool,
    unknown: Option<Vec<u8>>,
    called_after_break: bool,
}

/// Visits `(s, e)` forward or backward, breaking after `limit` entries.
fn visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    u: &Universe,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    forward: bool,
    limit: usize,
) -> Visit {
    let mut out = Visit {
        entries: Vec::new(),
        broke: false,
        unknown: None,
        called_after_break: false,
    };
    let f = |k: &[u8], v: &u64| {
        if out.broke {
            out.called_after_break = true;
            return ControlFlow::Break(());
        }
        match u.idx(k) {
            Some(i) => out.entries.push((i, *v)),
            None => {
                out.unknown = Some(k.to_vec());
                out.broke = true;
                return ControlFlow::Break(());
            }
        }
        if out.entries.len() >= limit {
            out.broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if forward {
        map.visit_range((s, e), f);
    } else {
        map.visit_range_rev((s, e), f);
    }
    out
}

/// Checks what a visit of `(s, e)` reported: known keys, within the range, strictly in order,
/// at most `limit` of them, nothing after `Break`.
fn check_visit_shape(
    u: &Universe,
    who: &str,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    forward: bool,
    limit: usize,
    v: &Visit,
) {
    let what = || {
        format!(
            "{who}: {}({}, {}) breaking after {limit}",
            if forward {
                "visit_range"
            } else {
                "visit_range_rev"
            },
            show_bound(s),
            show_bound(e)
        )
    };
    if let Some(k) = &v.unknown {
        panic!("{} reported {}, a key never inserted", what(), Escaped(k));
    }
    assert!(
        !v.called_after_break,
        "{} called the visitor again after it returned Break",
        what()
    );
    assert!(v.entries.len() <= limit, "{}: too many entries", what());
    for (n, &(i, _)) in v.entries.iter().enumerate() {
        let k = &u.keys[i][..];
        assert!(
            after_start(k, s) && before_end(k, e),
            "{} reported {} (entry {n}), outside the range",
            what(),
            u.show(i)
        );
        if n > 0 {
            let p = v.entries[n - 1].0;
            assert!(
                if forward { p < i } else { p > i },
                "{} reported {} after {}: out of order or repeated",
                what(),
                u.show(i),
                u.show(p)
            );
        }
    }
}

fn visit_name(forward: bool, s: Bound<&[u8]>, e: Bound<&[u8]>) -> String {
    format!(
        "{}({}, {})",
        if forward {
            "visit_range"
        } else {
            "visit_range_rev"
        },
        show_bound(s),
        show_bound(e)
    )
}

fn seek_name(lower: bool, b: Bound<&[u8]>) -> String {
    format!(
        "{}({})",
        if lower {
            "lower_bound_with"
        } else {
            "upper_bound_with"
        },
        show_bound(b)
    )
}

// ---------------------------------------------------------------------------------------------
// Multi-threaded stress
// ---------------------------------------------------------------------------------------------

/// Which keys the writers of a [`stress`] run write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Writer `w` writes only the keys whose index is `w` modulo the number of writers.
    Partitioned,
    /// Every writer writes every key.
    Shared,
}

/// The size of a [`stress`] run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Which keys each writer writes.
    pub sharing: Sharing,
    /// Writer threads (at most 255).
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// Keys in the universe, at most 65,535: about 200 fixed ones (the empty key, prefix
    /// chains, short 0x00/0xFF strings, the long keys and two relatives of one), then random
    /// ones up to this count.
    pub keys: usize,
    /// How many of the keys are 1–8 KiB long.
    pub long_keys: usize,
    /// Each writer runs this many cycles of a fill phase (85 % inserts) and a drain phase
    /// (85 % removes) of `phase_ops` operations each.
    pub cycles: usize,
    /// Operations of each phase, per writer.
    pub phase_ops: usize,
    /// Reads each reader makes at least, even if the writers are done.
    pub min_reads: usize,
    /// Seeds the universe and every thread's random choices.
    pub seed: u64,
}

impl Plan {
    /// The full-size run: 2000 keys (8 of them long), 4 fill/drain cycles of 800,000 writes in
    /// all, split between the writers; readers make at least 2000 reads each.
    pub fn standard(sharing: Sharing, writers: usize, readers: usize, seed: u64) -> Plan {
        Plan {
            sharing,
            writers,
            readers,
            keys: 2000,
            long_keys: 8,
            cycles: 4,
            phase_ops: 200_000 / writers,
            min_reads: 2000,
            seed,
        }
    }

    /// A small run for CI: 2 writers and 2 readers, 300 keys (2 long), 2 cycles of 600
    /// operations per phase and writer, at least 500 reads per reader.
    pub fn quick(sharing: Sharing, seed: u64) -> Plan {
        Plan {
            sharing,
            writers: 2,
            readers: 2,
            keys: 300,
            long_keys: 2,
            cycles: 2,
            phase_ops: 600,
            min_reads: 500,
            seed,
        }
    }
}

/// State shared by the threads of a stress run.
struct Stress<'a, M> {
    map: &'a M,
    u: &'a Universe,
    plan: Plan,
    name: &'a str,
    /// `floor[idx * writers + w]`: one more than the counter of the last operation writer `w`
    /// completed on key `idx` (0 before the first).
    floor: Vec<AtomicU64>,
    writers_done: AtomicUsize,
    /// The largest `len()` a writer saw, to show that the map filled up.
    peak_len: AtomicUsize,
}

/// What a writer did: its last operation on each key (`None`: never touched it,
/// `Some(None)`: removed it), every value it wrote, and what it saw.
struct WriterLog {
    last: Vec<Option<Option<u64>>>,
    written: HashSet<u64>,
    view: View,
}

fn stress_writer<M: ConcurrentOrderedMap<u64>>(sh: &Stress<'_, M>, w: usize) -> WriterLog {
    let _done = Done(&sh.writers_done);
    let (map, u, plan) = (sh.map, sh.u, sh.plan);
    let n = u.len();
    let who = format!(
        "[{}] writer {w} ({:?}, seed {})",
        sh.name, plan.sharing, plan.seed
    );
    let mine: Vec<usize> = match plan.sharing {
        Sharing::Partitioned => (0..n).filter(|i| i % plan.writers == w).collect(),
        Sharing::Shared => (0..n).collect(),
    };
    let mut log = WriterLog {
        last: vec![None; n],
        written: HashSet::new(),
        view: View::new(who.clone(), n, plan.writers),
    };
    let mut rng = TestRng::new(plan.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut counter = 0u64;
    for _ in 0..plan.cycles {
        for fill in [true, false] {
            for _ in 0..plan.phase_ops {
                let idx = *rng.pick(&mine);
                let key = &u.keys[idx][..];
                let c = counter;
                counter += 1;
                let own = log.last[idx].flatten();
                let insert = rng.chance(if fill { 0.85 } else { 0.15 });
                let (op, prev) = if insert {
                    let v = Stamp {
                        counter: c,
                        idx,
                        writer: w,
                    }
                    .encode();
                    let prev = match map.insert(key, v) {
                        Ok(prev) => prev,
                        Err(e) => panic!("{who}: insert({}) failed: {e}", u.show(idx)),
                    };
                    log.last[idx] = Some(Some(v));
                    log.written.insert(v);
                    ("insert", prev)
                } else {
                    log.last[idx] = Some(None);
                    ("remove", map.remove(key))
                };
                sh.floor[idx * plan.writers + w].store(c + 1, Release);
                let ctx = format!("{op}({}) as operation #{c}", u.show(idx));
                match plan.sharing {
                    Sharing::Partitioned => assert!(
                        prev == own,
                        "{who}: {ctx} returned {:?}, but this writer, the only one writing \
                         the key, had left {:?} there",
                        prev.map(Stamp::decode),
                        own.map(Stamp::decode)
                    ),
                    Sharing::Shared => {
                        if let Some(p) = prev {
                            log.view.observe(u, &ctx, idx, p);
                            assert!(
                                Stamp::decode(p).writer != w || Some(p) == own,
                                "{who}: {ctx} returned {}, written by this writer, but its last \
                                 operation on the key left {:?}",
                                Stamp::decode(p),
                                own.map(Stamp::decode)
                            );
                        }
                    }
                }
                if plan.sharing == Sharing::Partitioned && rng.chance(0.1) {
                    // Read back what this writer alone writes.
                    let want = log.last[idx].flatten();
                    let got = map.get_cloned(key);
                    assert!(
                        got == want,
                        "{who}: get({}) right after {ctx} returned {:?}, expected {:?}",
                        u.show(idx),
                        got.map(Stamp::decode),
                        want.map(Stamp::decode)
                    );
                    let lb = map.lower_bound_with(Bound::Included(key), |k, v| (k == key, *v));
                    let found = match lb {
                        Some((true, v)) => Some(v),
                        _ => None,
                    };
                    assert!(
                        found == want,
                        "{who}: lower_bound_with(Included({})) right after {ctx} found {:?}, \
                         expected {:?}",
                        u.show(idx),
                        found.map(Stamp::decode),
                        want.map(Stamp::decode)
                    );
                }
            }
            sh.peak_len.fetch_max(map.len(), Relaxed);
        }
    }
    log
}

fn stress_reader<M: ConcurrentOrderedMap<u64>>(sh: &Stress<'_, M>, r: usize) -> View {
    let (map, u, plan) = (sh.map, sh.u, sh.plan);
    let n = u.len();
    let ws = plan.writers;
    let who = format!(
        "[{}] reader {r} ({:?}, seed {})",
        sh.name, plan.sharing, plan.seed
    );
    let mut view = View::new(who.clone(), n, ws);
    let mut rng = TestRng::new(plan.seed ^ (r as u64 + 101).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let mut reads = 0usize;
    while sh.writers_done.load(Acquire) < ws || reads < plan.min_reads {
        reads += 1;
        match rng.below(100) {
            0..=49 => {
                // get, checked against the writes completed before it began.
                let idx = rng.index(n);
                let floors: Vec<u64> = (0..ws)
                    .map(|w| sh.floor[idx * ws + w].load(Acquire))
                    .collect();
                let got = if rng.chance(0.5) {
                    map.get_cloned(&u.keys[idx])
                } else {
                    map.get_with(&u.keys[idx], |v| *v)
                };
                if let Some(v) = got {
                    let what = format!("get({})", u.show(idx));
                    view.observe(u, &what, idx, v);
                    let s = Stamp::decode(v);
                    assert!(
                        s.counter + 1 >= floors[s.writer],
                        "{who}: {what} returned {s}, but writer {} had completed its \
                         operation #{} on the key before the get began: stale read",
                        s.writer,
                        floors[s.writer] - 1
                    );
                }
            }
            50..=69 => {
                // A seek from a random bound.
                let b = u.random_bound(&mut rng);
                let b = as_slice(&b);
                let lower = rng.chance(0.5);
                let f = |k: &[u8], v: &u64| (u.idx(k).ok_or_else(|| k.to_vec()), *v);
                let got = if lower {
                    map.lower_bound_with(b, f)
                } else {
                    map.upper_bound_with(b, f)
                };
                let what = seek_name(lower, b);
                if let Some((idx, v)) = got {
                    let idx = match idx {
                        Ok(i) => i,
                        Err(k) => panic!("{who}: {what} found {}, never inserted", Escaped(&k)),
                    };
                    let k = &u.keys[idx][..];
                    let ok = if lower {
                        after_start(k, b)
                    } else {
                        before_end(k, b)
                    };
                    assert!(ok, "{who}: {what} found {}, beyond the bound", u.show(idx));
                    view.observe(u, &what, idx, v);
                }
            }
            70..=97 => {
                let (s, e) = (u.random_bound(&mut rng), u.random_bound(&mut rng));
                let (s, e) = (as_slice(&s), as_slice(&e));
                let forward = rng.chance(0.6);
                let limit = if rng.chance(0.05) {
                    usize::MAX
                } else {
                    1 + rng.index(40)
                };
                let v = visit(map, u, s, e, forward, limit);
                check_visit_shape(u, &who, s, e, forward, limit, &v);
                let what = visit_name(forward, s, e);
                for &(idx, val) in &v.entries {
                    view.observe(u, &what, idx, val);
                }
            }
            _ => {
                let len = map.len();
                assert!(len <= n, "{who}: len() = {len} with {n} possible keys");
                if rng.chance(0.1) {
                    assert!(map.memory_usage() > 0, "{who}: memory_usage() = 0");
                }
            }
        }
    }
    view
}

/// Runs `plan.writers` writers and `plan.readers` readers on one map from `subject` and checks
/// linearizability, visit shape, the final contents and a drain to empty; see the
/// [module documentation](self) for every check.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it), or if the plan did not
/// fill the map to a third of its keys and drain it to half its peak or less.
pub fn stress<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>, plan: Plan) {
    let u = Universe::new(plan.keys, plan.long_keys, plan.seed);
    let n = u.len();
    let map = subject.make();
    let ctx = format!("[{}] {plan:?}", subject.name());
    assert!(map.is_empty(), "{ctx}: a new map is not empty");
    let sh = Stress {
        map: &map,
        u: &u,
        plan,
        name: subject.name(),
        floor: (0..n * plan.writers).map(|_| AtomicU64::new(0)).collect(),
        writers_done: AtomicUsize::new(0),
        peak_len: AtomicUsize::new(0),
    };
    let (logs, views): (Vec<WriterLog>, Vec<View>) = thread::scope(|s| {
        let sh = &sh;
        let ws: Vec<_> = (0..plan.writers)
            .map(|w| s.spawn(move || stress_writer(sh, w)))
            .collect();
        let rs: Vec<_> = (0..plan.readers)
            .map(|r| s.spawn(move || stress_reader(sh, r)))
            .collect();
        (join_all(ws), join_all(rs))
    });

    // Every value anyone saw was written, for the key it was seen under (checked on sight).
    let written: HashSet<u64> = logs
        .iter()
        .flat_map(|l| l.written.iter().copied())
        .collect();
    for view in views.iter().chain(logs.iter().map(|l| &l.view)) {
        for &v in &view.seen {
            assert!(
                written.contains(&v),
                "{ctx}: {} saw {}, which was never written",
                view.who,
                Stamp::decode(v)
            );
        }
    }

    // The final contents.
    let got = entries(&map);
    let mut present: Vec<Option<u64>> = vec![None; n];
    for (i, (k, v)) in got.iter().enumerate() {
        let Some(idx) = u.idx(k) else {
            panic!(
                "{ctx}: final visit_range(..) reported {}, never inserted",
                Escaped(k)
            )
        };
        if i > 0 {
            assert!(
                got[i - 1].0 < *k,
                "{ctx}: final visit_range(..) out of order at {}",
                u.show(idx)
            );
        }
        present[idx] = Some(*v);
    }
    for idx in 0..n {
        let last: Vec<Option<u64>> = logs.iter().filter_map(|l| l.last[idx]).collect();
        let ok = match plan.sharing {
            Sharing::Partitioned => present[idx] == logs[idx % plan.writers].last[idx].flatten(),
            Sharing::Shared if last.is_empty() => present[idx].is_none(),
            Sharing::Shared => last.contains(&present[idx]),
        };
        assert!(
            ok,
            "{ctx}: after the run {} holds {:?}; the writers' last operations on it left {:?}",
            u.show(idx),
            present[idx].map(Stamp::decode),
            last.iter()
                .map(|o| o.map(Stamp::decode))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            map.get_cloned(&u.keys[idx]),
            present[idx],
            "{ctx}: get({}) disagrees with visit_range after the run",
            u.show(idx)
        );
    }
    let mut rev = entries_rev(&map);
    rev.reverse();
    assert!(
        rev == got,
        "{ctx}: visit_range_rev(..) is not visit_range(..) reversed after the run"
    );
    assert_eq!(map.len(), got.len(), "{ctx}: len() after the run");
    subject.audit(&map, &format!("{plan:?}: after the run"));

    // The run filled the map with a good part of the universe (for a structure that grows,
    // far more than it starts with) and ended drained well below its peak.
    let peak = sh.peak_len.load(Relaxed);
    assert!(
        peak >= n / 3 && got.len() * 2 <= peak,
        "{ctx}: the plan did not fill and drain the map (peak len {peak}, final len {}, {n} \
         keys)",
        got.len()
    );

    drain(subject, &map, &got, &ctx, &plan);
}

/// Removes every entry of `got` (the map's final contents), each removal answering its value;
/// then the map must be empty both by `len` and by a visit, and pass the subject's audit.
fn drain<M: ConcurrentOrderedMap<u64>>(
    subject: &Subject<M>,
    map: &M,
    got: &[(Vec<u8>, u64)],
    ctx: &str,
    plan: &dyn fmt::Debug,
) {
    for (k, v) in got {
        assert_eq!(map.remove(k), Some(*v), "{ctx}: draining {}", Escaped(k));
    }
    assert!(map.is_empty(), "{ctx}: drained map has len {}", map.len());
    assert!(entries(map).is_empty(), "{ctx}: drained map visits entries");
    subject.audit(map, &format!("{plan:?}: drained"));
}

// ---------------------------------------------------------------------------------------------
// Range visits under churn
// ---------------------------------------------------------------------------------------------

/// What a key of a churn run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Inserted before the run, never touched: every visit and seek covering it finds it.
    Stable,
    /// Inserted before the run, removed by writer 0 before the visitors start.
    GoneEarly,
    /// Inserted before the run, removed by writer 0 one by one during the run.
    GoneLate,
    /// Inserted and removed by the writers all the time.
    Churn,
}

fn role(idx: usize) -> Role {
    match idx % 16 {
        0 | 8 => Role::Stable,
        1 => Role::GoneEarly,
        9 => Role::GoneLate,
        _ => Role::Churn,
    }
}

/// The size of a [`range_visits_under_churn`] run.
#[derive(Clone, Copy, Debug)]
pub struct ChurnPlan {
    /// Keys in the universe, at most 65,535: about 200 fixed ones (the empty key, prefix
    /// chains, short 0x00/0xFF strings, the long keys and two relatives of one), then random
    /// ones up to this count.
    pub keys: usize,
    /// How many of the keys are 1–8 KiB long.
    pub long_keys: usize,
    /// Writer threads churning the keys (at least 1, at most 254); writer 0 also removes the
    /// doomed keys.
    pub writers: usize,
    /// Visitor threads.
    pub visitors: usize,
    /// Each writer runs this many cycles of a fill phase (85 % inserts) and a drain phase
    /// (85 % removes).
    pub cycles: usize,
    /// Operations of each phase, per writer.
    pub phase_ops: usize,
    /// Operations each visitor makes at least, even if the writers are done.
    pub min_visits: usize,
    /// Seeds the universe and every thread's random choices.
    pub seed: u64,
}

impl ChurnPlan {
    /// The full-size run: 1600 keys (6 of them long), 2 visitors, 4 fill/drain cycles of
    /// 640,000 writes in all, split between the writers; at least 500 operations per visitor.
    pub fn standard(writers: usize, seed: u64) -> ChurnPlan {
        ChurnPlan {
            keys: 1600,
            long_keys: 6,
            writers,
            visitors: 2,
            cycles: 4,
            phase_ops: 160_000 / writers,
            min_visits: 500,
            seed,
        }
    }

    /// A small run for CI: 2 writers and 2 visitors, 300 keys (2 long), 2 cycles of 1500
    /// operations per phase and writer, at least 300 operations per visitor.
    pub fn quick(seed: u64) -> ChurnPlan {
        ChurnPlan {
            keys: 300,
            long_keys: 2,
            writers: 2,
            visitors: 2,
            cycles: 2,
            phase_ops: 1500,
            min_visits: 300,
            seed,
        }
    }
}

struct ChurnRun<'a, M> {
    map: &'a M,
    u: &'a Universe,
    plan: ChurnPlan,
    name: &'a str,
    /// Set (after the `remove` returned) for each removed `GoneEarly`/`GoneLate` key.
    gone: Vec<AtomicBool>,
    /// Set once every `GoneEarly` key is removed.
    ready: AtomicBool,
    writers_done: AtomicUsize,
    /// The nearest stable key at or after / at or before each index.
    next_stable: Vec<Option<usize>>,
    prev_stable: Vec<Option<usize>>,
}

impl<M> ChurnRun<'_, M> {
    /// The writer id of the values inserted before the run.
    fn setup_writer(&self) -> usize {
        self.plan.writers
    }
    fn setup_value(&self, idx: usize) -> u64 {
        Stamp {
            counter: 0,
            idx,
            writer: self.setup_writer(),
        }
        .encode()
    }
}

fn churn_writer<M: ConcurrentOrderedMap<u64>>(run: &ChurnRun<'_, M>, w: usize) {
    let _done = Done(&run.writers_done);
    let (map, u, plan) = (run.map, run.u, run.plan);
    let n = u.len();
    let who = format!("[{}] churn writer {w} (seed {})", run.name, plan.seed);
    let mut view = View::new(who.clone(), n, plan.writers + 1);
    let remove_gone = |idx: usize| {
        let got = map.remove(&u.keys[idx]);
        assert!(
            got == Some(run.setup_value(idx)),
            "{who}: remove({}) of a key inserted before the run returned {:?}",
            u.show(idx),
            got.map(Stamp::decode)
        );
        run.gone[idx].store(true, Release);
    };
    if w == 0 {
        (0..n)
            .filter(|&i| role(i) == Role::GoneEarly)
            .for_each(remove_gone);
        run.ready.store(true, Release);
    }
    let churn: Vec<usize> = (0..n).filter(|&i| role(i) == Role::Churn).collect();
    let mut late: Vec<usize> = if w == 0 {
        (0..n).filter(|&i| role(i) == Role::GoneLate).collect()
    } else {
        Vec::new()
    };
    let total = plan.cycles * 2 * plan.phase_ops;
    let late_every = (total / (late.len() + 1)).max(1);
    let mut rng = TestRng::new(plan.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut counter = 1u64;
    for _ in 0..plan.cycles {
        for fill in [true, false] {
            for _ in 0..plan.phase_ops {
                if !late.is_empty() && (counter as usize).is_multiple_of(late_every) {
                    let i = rng.index(late.len());
                    remove_gone(late.swap_remove(i));
                }
                let idx = *rng.pick(&churn);
                let key = &u.keys[idx][..];
                let c = counter;
                counter += 1;
                let (what, prev) = if rng.chance(if fill { 0.85 } else { 0.15 }) {
                    let v = Stamp {
                        counter: c,
                        idx,
                        writer: w,
                    }
                    .encode();
                    match map.insert(key, v) {
                        Ok(prev) => ("insert", prev),
                        Err(e) => panic!("{who}: insert({}) failed: {e}", u.show(idx)),
                    }
                } else {
                    ("remove", map.remove(key))
                };
                if let Some(p) = prev {
                    view.observe(u, &format!("{what}({})", u.show(idx)), idx, p);
                }
            }
        }
    }
    late.into_iter().for_each(remove_gone);
}

fn churn_visitor<M: ConcurrentOrderedMap<u64>>(run: &ChurnRun<'_, M>, r: usize) -> usize {
    let (map, u, plan) = (run.map, run.u, run.plan);
    let n = u.len();
    let who = format!("[{}] visitor {r} (seed {})", run.name, plan.seed);
    let mut view = View::new(who.clone(), n, plan.writers + 1);
    let mut rng = TestRng::new(plan.seed ^ (r as u64 + 101).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let doomed: Vec<usize> = (0..n)
        .filter(|&i| matches!(role(i), Role::GoneEarly | Role::GoneLate))
        .collect();
    let mut gone = vec![false; n];
    while !run.ready.load(Acquire) {
        if run.writers_done.load(Acquire) == plan.writers {
            return 0; // writer 0 failed before the start; its panic is reported
        }
        thread::yield_now();
    }
    let mut ops = 0usize;
    while run.writers_done.load(Acquire) < plan.writers || ops < plan.min_visits {
        ops += 1;
        // The keys removed before this operation begins.
        for &i in &doomed {
            gone[i] = run.gone[i].load(Acquire);
        }
        // Checks an entry reported by this operation.
        let check_entry = |view: &mut View, what: &dyn fmt::Display, idx: usize, v: u64| {
            assert!(
                !gone[idx],
                "{who}: {what} reported {}, removed before it began",
                u.show(idx)
            );
            if role(idx) == Role::Stable {
                assert!(
                    v == run.setup_value(idx),
                    "{who}: {what} reported the stable {} with the value {}",
                    u.show(idx),
                    Stamp::decode(v)
                );
            }
            view.observe(u, what, idx, v);
        };
        match rng.below(100) {
            0..=59 => {
                // A visit: the whole map (a third of them) or a random range.
                let (s, e, limit) = if rng.chance(0.33) {
                    (Bound::Unbounded, Bound::Unbounded, usize::MAX)
                } else {
                    let limit = if rng.chance(0.3) {
                        usize::MAX
                    } else {
                        1 + rng.index(100)
                    };
                    (u.random_bound(&mut rng), u.random_bound(&mut rng), limit)
                };
                let (s, e) = (as_slice(&s), as_slice(&e));
                let forward = rng.chance(0.5);
                let v = visit(map, u, s, e, forward, limit);
                check_visit_shape(u, &who, s, e, forward, limit, &v);
                let what = visit_name(forward, s, e);
                for &(idx, val) in &v.entries {
                    check_entry(&mut view, &what, idx, val);
                }
                // Every stable key of the range, up to where the visit broke off, was reported.
                let mut covered = u.inside(s, e);
                if v.broke {
                    let last = v.entries.last().map_or(covered.start, |&(i, _)| i);
                    if forward {
                        covered.end = last + 1;
                    } else {
                        covered.start = last;
                    }
                }
                let mut reported: Vec<usize> = v.entries.iter().map(|&(i, _)| i).collect();
                if !forward {
                    reported.reverse();
                }
                for idx in covered.filter(|&i| role(i) == Role::Stable) {
                    assert!(
                        reported.binary_search(&idx).is_ok(),
                        "{who}: {what} (breaking after {limit}, {} reported) skipped the \
                         stable {}",
                        reported.len(),
                        u.show(idx)
                    );
                }
            }
            60..=84 => {
                // A seek never passes over a stable key nor finds a removed one.
                let b = u.random_bound(&mut rng);
                let b = as_slice(&b);
                let lower = rng.chance(0.5);
                let f = |k: &[u8], v: &u64| (u.idx(k).ok_or_else(|| k.to_vec()), *v);
                let (got, nearest) = if lower {
                    let from = u.inside(b, Bound::Unbounded).start;
                    (map.lower_bound_with(b, f), run.next_stable[from])
                } else {
                    let to = u.inside(Bound::Unbounded, b).end;
                    let nearest = to.checked_sub(1).and_then(|i| run.prev_stable[i]);
                    (map.upper_bound_with(b, f), nearest)
                };
                let what = seek_name(lower, b);
                match got {
                    None => assert!(
                        nearest.is_none(),
                        "{who}: {what} found nothing, but the stable {} is there",
                        u.show(nearest.unwrap_or_default())
                    ),
                    Some((Err(k), _)) => {
                        panic!("{who}: {what} found {}, never inserted", Escaped(&k))
                    }
                    Some((Ok(idx), v)) => {
                        let k = &u.keys[idx][..];
                        let inside = if lower {
                            after_start(k, b)
                        } else {
                            before_end(k, b)
                        };
                        assert!(
                            inside,
                            "{who}: {what} found {}, beyond the bound",
                            u.show(idx)
                        );
                        if let Some(st) = nearest {
                            assert!(
                                if lower { idx <= st } else { idx >= st },
                                "{who}: {what} found {}, passing over the stable {}",
                                u.show(idx),
                                u.show(st)
                            );
                        }
                        check_entry(&mut view, &what, idx, v);
                    }
                }
            }
            _ => {
                // Gets of a stable key and of a doomed one.
                let st = run.next_stable[rng.index(n)].unwrap_or(0);
                let got = map.get_cloned(&u.keys[st]);
                assert!(
                    got == Some(run.setup_value(st)),
                    "{who}: get of the stable {} returned {:?}",
                    u.show(st),
                    got.map(Stamp::decode)
                );
                let d = *rng.pick(&doomed);
                let got = map.get_with(&u.keys[d], |v| *v);
                if let Some(v) = got {
                    check_entry(&mut view, &format!("get({})", u.show(d)), d, v);
                }
            }
        }
    }
    ops
}

/// Checks that range visits and seeks running during heavy churn report every key present
/// throughout (stable keys) and no key removed before they began (doomed keys), on one map
/// from `subject`; see the [module documentation](self) for every check.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it).
pub fn range_visits_under_churn<M: ConcurrentOrderedMap<u64>>(
    subject: &Subject<M>,
    plan: ChurnPlan,
) {
    assert!(plan.writers >= 1, "a churn run needs a writer");
    let u = Universe::new(plan.keys, plan.long_keys, plan.seed);
    let n = u.len();
    let map = subject.make();
    let mut next_stable = vec![None; n + 1];
    for i in (0..n).rev() {
        next_stable[i] = if role(i) == Role::Stable {
            Some(i)
        } else {
            next_stable[i + 1]
        };
    }
    let mut prev_stable = vec![None; n];
    for i in 0..n {
        prev_stable[i] = if role(i) == Role::Stable {
            Some(i)
        } else {
            i.checked_sub(1).and_then(|p| prev_stable[p])
        };
    }
    let run = ChurnRun {
        map: &map,
        u: &u,
        plan,
        name: subject.name(),
        gone: (0..n).map(|_| AtomicBool::new(false)).collect(),
        ready: AtomicBool::new(false),
        writers_done: AtomicUsize::new(0),
        next_stable,
        prev_stable,
    };
    let ctx = format!("[{}] {plan:?}", subject.name());
    // Every key but half the churn keys.
    for (idx, key) in u.keys.iter().enumerate() {
        if role(idx) != Role::Churn || idx % 2 == 0 {
            assert_eq!(map.insert(key, run.setup_value(idx)), Ok(None), "{ctx}");
        }
    }
    subject.audit(&map, &format!("{plan:?}: before the run"));
    let ops = thread::scope(|s| {
        let run = &run;
        let ws: Vec<_> = (0..plan.writers)
            .map(|w| s.spawn(move || churn_writer(run, w)))
            .collect();
        let vs: Vec<_> = (0..plan.visitors)
            .map(|r| s.spawn(move || churn_visitor(run, r)))
            .collect();
        join_all(ws);
        join_all(vs)
    });
    assert!(
        ops.iter().all(|&o| o >= plan.min_visits),
        "{ctx}: visitors made too few operations: {ops:?}"
    );
    // Afterwards: the stable keys with their values, no doomed key, only known keys.
    let got = entries(&map);
    let mut seen = vec![false; n];
    for (k, v) in &got {
        let Some(idx) = u.idx(k) else {
            panic!(
                "{ctx}: the map holds {} after the run, never inserted",
                Escaped(k)
            )
        };
        seen[idx] = true;
        assert!(
            !matches!(role(idx), Role::GoneEarly | Role::GoneLate),
            "{ctx}: the removed {} is back",
            u.show(idx)
        );
        assert_eq!(
            Stamp::decode(*v).idx,
            idx,
            "{ctx}: value of {}",
            u.show(idx)
        );
    }
    for idx in (0..n).filter(|&i| role(i) == Role::Stable) {
        assert!(seen[idx], "{ctx}: the stable {} is gone", u.show(idx));
    }
    assert_eq!(map.len(), got.len(), "{ctx}: len() after the run");
    subject.audit(&map, &format!("{plan:?}: after the run"));
}

// ---------------------------------------------------------------------------------------------
// Many threads on a few keys
// ---------------------------------------------------------------------------------------------

/// The size of a [`same_key_stress`] run.
#[derive(Clone, Copy, Debug)]
pub struct SameKeyPlan {
    /// Keys every thread writes, 1 to 65,535, drawn at random from [`mixed_keys`] (so the
    /// set may hold the empty key, keys that are prefixes of each other, and from 64 keys on a
    /// multi-KiB key).
    pub keys: usize,
    /// Threads, 1 to 255, each inserting, removing and reading every key. More threads than
    /// cores means threads are preempted in the middle of operations.
    pub threads: usize,
    /// Operations of each thread.
    pub ops: usize,
    /// Seeds the key set and every thread's random choices.
    pub seed: u64,
}

impl SameKeyPlan {
    /// The full-size run: `keys` keys, `threads` threads, 960,000 operations split between
    /// the threads.
    pub fn standard(keys: usize, threads: usize, seed: u64) -> SameKeyPlan {
        SameKeyPlan {
            keys,
            threads,
            ops: 960_000 / threads.max(1),
            seed,
        }
    }

    /// A small run for CI: `keys` keys, 4 threads of 4000 operations.
    pub fn quick(keys: usize, seed: u64) -> SameKeyPlan {
        SameKeyPlan {
            keys,
            threads: 4,
            ops: 4000,
            seed,
        }
    }
}

/// `n` keys drawn at random from [`mixed_keys`], sorted.
fn same_key_set(n: usize, seed: u64) -> Universe {
    let pool = mixed_keys(n, usize::from(n >= 64), seed);
    let mut order: Vec<usize> = (0..pool.len()).collect();
    let mut rng = TestRng::new(seed ^ 0x5A3E_C0DE);
    for i in 0..n {
        let j = i + rng.index(order.len() - i);
        order.swap(i, j);
    }
    let mut chosen = order[..n].to_vec();
    chosen.sort_unstable();
    Universe::from_keys(chosen.into_iter().map(|i| pool[i].clone()).collect())
}

/// What one thread of a [`same_key_stress`] run did: every value it inserted, every value
/// `insert` and `remove` handed back to it, and what it saw.
struct SameKeyLog {
    inserted: Vec<u64>,
    returned: Vec<u64>,
    view: View,
}

fn same_key_thread<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    u: &Universe,
    plan: SameKeyPlan,
    name: &str,
    t: usize,
) -> SameKeyLog {
    let n = u.len();
    let who = format!(
        "[{name}] thread {t} of {} on {n} keys (seed {:#x})",
        plan.threads, plan.seed
    );
    let mut log = SameKeyLog {
        inserted: Vec::with_capacity(plan.ops),
        returned: Vec::with_capacity(plan.ops),
        view: View::new(who.clone(), n, plan.threads),
    };
    // This thread's last write on each key: the value it inserted, or `None` after a remove.
    let mut own: Vec<Option<u64>> = vec![None; n];
    let mut rng = TestRng::new(plan.seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for c in 0..plan.ops {
        let idx = rng.index(n);
        let key = &u.keys[idx][..];
        let what = |op: &str| format!("{op}({}) as operation #{c}", u.show(idx));
        let r = rng.below(100);
        let op = if r < 90 {
            let (op, prev, mine) = if r < 50 {
                let v = Stamp {
                    counter: c as u64,
                    idx,
                    writer: t,
                }
                .encode();
                log.inserted.push(v);
                let prev = match map.insert(key, v) {
                    Ok(prev) => prev,
                    Err(e) => panic!("{who}: {} failed: {e}", what("insert")),
                };
                ("insert", prev, own[idx].replace(v))
            } else {
                ("remove", map.remove(key), own[idx].take())
            };
            if let Some(p) = prev {
                let ctx = what(op);
                log.view.observe(u, &ctx, idx, p);
                // A value of this thread's own can only come back if it is its latest on
                // the key: its next write on the key replaced or removed the older ones.
                assert!(
                    Stamp::decode(p).writer != t || Some(p) == mine,
                    "{who}: {ctx} returned {}, written by this thread, but its last operation \
                     on the key left {:?}",
                    Stamp::decode(p),
                    mine.map(Stamp::decode)
                );
                log.returned.push(p);
            }
            op
        } else {
            let (op, got) = if r < 95 {
                ("get_with", map.get_with(key, |v| *v))
            } else {
                let f = |k: &[u8], v: &u64| (k == key).then_some(*v);
                let got = map.lower_bound_with(Bound::Included(key), f).flatten();
                ("lower_bound_with(Included)", got)
            };
            if let Some(v) = got {
                log.view.observe(u, &what(op), idx, v);
            }
            op
        };
        let len = map.len();
        assert!(
            len <= n,
            "{who}: len() = {len} right after {}, with {n} keys in the set",
            what(op)
        );
    }
    log
}

/// Up to six stamped values, decoded.
fn show_stamps(values: &[u64]) -> String {
    let shown: Vec<String> = values
        .iter()
        .take(6)
        .map(|&v| format!("{v:#x} ({})", Stamp::decode(v)))
        .collect();
    format!(
        "[{}{}]",
        shown.join(", "),
        if values.len() > 6 { ", …" } else { "" }
    )
}

/// Runs `plan.threads` threads on one map from `subject`, all inserting, removing and reading
/// the same `plan.keys` keys, and checks that every value inserted comes out exactly once:
/// returned by one `insert` (as the value it replaced) or one `remove`, or still stored at the
/// end; that no value comes out that was never inserted; and that `len()`, read after every
/// operation, never exceeds the number of keys.
///
/// Each thread inserts (50 % of its operations) values that are unique in the run (a
/// [`Stamp`] of the thread and its operation counter, for the key), removes (40 %), and reads
/// with `get_with` and `lower_bound_with` (10 %). Also checked while running, as in
/// [`stress`]: a value is only seen under its own key, per thread the counters seen from
/// each writer on each key never go back, and a value a thread gets back from `insert` or
/// `remove` that it wrote itself is its own latest on the key. After joining: the final
/// contents through visits both ways, `get` and `len()`, the invariant check, and a drain to
/// empty.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it).
pub fn same_key_stress<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>, plan: SameKeyPlan) {
    assert!(
        (1..1 << WRITER_BITS).contains(&plan.threads) && plan.keys >= 1,
        "bad plan {plan:?}"
    );
    let u = same_key_set(plan.keys, plan.seed);
    let n = u.len();
    let name = subject.name();
    let ctx = format!("[{name}] {plan:?}");
    let map = subject.make();
    let logs: Vec<SameKeyLog> = thread::scope(|s| {
        let (map, u) = (&map, &u);
        let hs: Vec<_> = (0..plan.threads)
            .map(|t| s.spawn(move || same_key_thread(map, u, plan, name, t)))
            .collect();
        join_all(hs)
    });

    // Every value inserted comes out exactly once: returned, or present at the end.
    let total: usize = logs.iter().map(|l| l.inserted.len()).sum();
    let mut times: HashMap<u64, u32> = HashMap::with_capacity(total);
    for l in &logs {
        times.extend(l.inserted.iter().map(|&v| (v, 0)));
    }
    assert_eq!(times.len(), total, "{ctx}: inserted values are not unique");
    let mut invented = Vec::new();
    let mut count = |v: u64| match times.get_mut(&v) {
        Some(t) => *t += 1,
        None => invented.push(v),
    };
    for l in &logs {
        l.returned.iter().for_each(|&v| count(v));
    }
    let got = entries(&map);
    let mut present: Vec<Option<u64>> = vec![None; n];
    for (k, v) in &got {
        let Some(idx) = u.idx(k) else {
            panic!(
                "{ctx}: the map holds {} after the run, never inserted",
                Escaped(k)
            )
        };
        assert_eq!(
            Stamp::decode(*v).idx,
            idx,
            "{ctx}: after the run {} holds {}, written for another key",
            u.show(idx),
            Stamp::decode(*v)
        );
        present[idx] = Some(*v);
        count(*v);
    }
    let mut lost: Vec<u64> = times.iter().filter(|e| *e.1 == 0).map(|e| *e.0).collect();
    let mut repeated: Vec<u64> = times.iter().filter(|e| *e.1 > 1).map(|e| *e.0).collect();
    lost.sort_unstable();
    repeated.sort_unstable();
    invented.sort_unstable();
    let returned: usize = logs.iter().map(|l| l.returned.len()).sum();
    assert!(
        lost.is_empty() && repeated.is_empty() && invented.is_empty(),
        "{ctx}: of {total} values inserted ({returned} returned by insert/remove, {} stored at \
         the end), {} were lost (never returned nor stored at the end): {}; {} came out more \
         than once: {}; and {} values that were never inserted came out: {}",
        got.len(),
        lost.len(),
        show_stamps(&lost),
        repeated.len(),
        show_stamps(&repeated),
        invented.len(),
        show_stamps(&invented)
    );
    // Values seen by reads were inserted too.
    for l in &logs {
        for v in &l.view.seen {
            assert!(
                times.contains_key(v),
                "{ctx}: {} saw {}, which was never written",
                l.view.who,
                Stamp::decode(*v)
            );
        }
    }

    // The final contents, every way.
    assert_eq!(map.len(), got.len(), "{ctx}: len() after the run");
    let mut rev = entries_rev(&map);
    rev.reverse();
    assert!(
        rev == got,
        "{ctx}: visit_range_rev(..) is not visit_range(..) reversed after the run"
    );
    for (idx, want) in present.iter().enumerate() {
        assert_eq!(
            map.get_cloned(&u.keys[idx]),
            *want,
            "{ctx}: get({}) disagrees with visit_range after the run",
            u.show(idx)
        );
    }
    subject.audit(&map, &format!("{plan:?}: after the run"));
    drain(subject, &map, &got, &ctx, &plan);
}

// ---------------------------------------------------------------------------------------------
// Values are cloned on the way out and dropped exactly once
// ---------------------------------------------------------------------------------------------

/// Counts the clones of [`Counted`] values and the drops of each.
struct Ledger {
    drops: Vec<AtomicU8>,
    next: AtomicUsize,
    clones: AtomicUsize,
    /// How many times a value was dropped again, and the first such id.
    twice: AtomicUsize,
    first_twice: AtomicUsize,
}

/// The value type of [`values_dropped_once`]: a value with an id, recording its clones and its
/// drop in a ledger shared by the run; a clone gets a new id and keeps its origin.
///
/// Only the harnesses make `Counted` values; a structure's tests only name the type, to make a
/// map holding them (`Subject<SkipList<Counted>>`).
pub struct Counted {
    id: usize,
    origin: usize,
    ledger: Arc<Ledger>,
}

impl Counted {
    /// This value's id, unique within its run.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The id of the value first made, of which this one is a clone (or its own id).
    pub fn origin(&self) -> usize {
        self.origin
    }
}

impl Ledger {
    fn new(capacity: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            drops: (0..capacity).map(|_| AtomicU8::new(0)).collect(),
            next: AtomicUsize::new(0),
            clones: AtomicUsize::new(0),
            twice: AtomicUsize::new(0),
            first_twice: AtomicUsize::new(usize::MAX),
        })
    }

    fn new_id(&self) -> usize {
        let id = self.next.fetch_add(1, Relaxed);
        assert!(id < self.drops.len(), "ledger full: raise its capacity");
        id
    }

    fn make(self: &Arc<Self>) -> Counted {
        let id = self.new_id();
        Counted {
            id,
            origin: id,
            ledger: Arc::clone(self),
        }
    }

    fn drops_of(&self, id: usize) -> u8 {
        self.drops[id].load(Acquire)
    }

    fn created(&self) -> usize {
        self.next.load(Acquire)
    }

    fn assert_no_double_drop(&self, ctx: &str) {
        let twice = self.twice.load(Acquire);
        assert!(
            twice == 0,
            "{ctx}: {twice} values were dropped more than once (first: #{})",
            self.first_twice.load(Acquire)
        );
    }

    /// Panics unless each of `ids` was dropped exactly `times` times.
    fn assert_dropped(&self, ids: &[usize], times: u8, ctx: &str) {
        let wrong: Vec<(usize, u8)> = ids
            .iter()
            .map(|&id| (id, self.drops_of(id)))
            .filter(|&(_, d)| d != times)
            .collect();
        assert!(
            wrong.is_empty(),
            "{ctx}: {} of {} values were not dropped {times} times; (id, drops): {:?}",
            wrong.len(),
            ids.len(),
            &wrong[..wrong.len().min(8)]
        );
    }

    /// Works another map from `subject` (pinning and retiring, which drives deferred
    /// reclamation such as epochs) until every value created so far is dropped, then checks
    /// none was dropped twice.
    fn assert_all_dropped_eventually<M: ConcurrentOrderedMap<Counted>>(
        &self,
        subject: &Subject<M>,
        ctx: &str,
    ) {
        let all: Vec<usize> = (0..self.created()).collect();
        self.assert_dropped_eventually(&all, subject, ctx);
    }

    /// Works another map from `subject`, as [`assert_all_dropped_eventually`]
    /// (Self::assert_all_dropped_eventually) does, until each of `ids` is dropped, then checks
    /// that no value was dropped twice.
    fn assert_dropped_eventually<M: ConcurrentOrderedMap<Counted>>(
        &self,
        ids: &[usize],
        subject: &Subject<M>,
        ctx: &str,
    ) {
        const ROUNDS: usize = 5_000;
        const KEYS: usize = 64;
        // The scratch map's own values, in a ledger of their own: an insert makes one value
        // and gets back at most one clone.
        let scratch_ledger = Ledger::new(2 * ROUNDS * KEYS);
        let scratch = subject.make();
        for round in 0..ROUNDS {
            if ids.iter().all(|&id| self.drops_of(id) > 0) {
                self.assert_no_double_drop(ctx);
                return;
            }
            for i in 0..KEYS as u64 {
                let _ = scratch.insert(&i.to_be_bytes(), scratch_ledger.make());
            }
            // Back off, so that a thread of another test pinned and descheduled on a busy
            // machine gets to unpin (not a timing assertion: only the round count bounds this).
            if round < 100 {
                thread::yield_now();
            } else {
                thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let never: Vec<usize> = ids
            .iter()
            .copied()
            .filter(|&id| self.drops_of(id) == 0)
            .collect();
        panic!(
            "{ctx}: {} of {} values were never dropped, even after {} operations on another map \
             drove reclamation (first ids {:?})",
            never.len(),
            ids.len(),
            ROUNDS * KEYS,
            &never[..never.len().min(8)]
        );
    }
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        self.ledger.clones.fetch_add(1, Relaxed);
        Counted {
            id: self.ledger.new_id(),
            origin: self.origin,
            ledger: Arc::clone(&self.ledger),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if self.ledger.drops[self.id].fetch_add(1, AcqRel) != 0 {
            self.ledger.twice.fetch_add(1, AcqRel);
            let _ = self
                .ledger
                .first_twice
                .compare_exchange(usize::MAX, self.id, AcqRel, Acquire);
        }
    }
}

impl fmt::Debug for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counted#{} (from #{})", self.id, self.origin)
    }
}

/// Checks a value `insert` or `remove` returned against the id the key held; true if it
/// returned one (a clone).
fn check_returned(got: Option<Counted>, held: Option<usize>, ctx: &dyn fmt::Display) -> bool {
    match (&got, held) {
        (None, None) => false,
        (Some(c), Some(h)) => {
            assert!(
                c.origin == h && c.id != h,
                "{ctx}: returned {c:?}; the key held #{h}: expected a clone of it"
            );
            true
        }
        _ => panic!("{ctx}: returned {got:?}; the key held {held:?}"),
    }
}

/// Single-threaded: 6000 random operations over 600 keys (4 of them long) on one map from
/// `subject`, alternating fill and drain phases, checking that values leave the map only as
/// clones, are never dropped while stored, are dropped once when the map is dropped, and are
/// all eventually freed; see the [module documentation](self).
///
/// # Panics
///
/// At the first failed check.
pub fn values_dropped_once<M: ConcurrentOrderedMap<Counted>>(subject: &Subject<M>, seed: u64) {
    let name = subject.name();
    let ledger = Ledger::new(1 << 16);
    let u = Universe::new(600, 4, seed);
    let n = u.len();
    let map = subject.make();
    let mut held: Vec<Option<usize>> = vec![None; n];
    let mut clones = 0usize;
    let mut rng = TestRng::new(seed);
    for step in 0..6000 {
        let idx = rng.index(n);
        let key = &u.keys[idx][..];
        let ctx = format!("[{name}] seed {seed:#x}, step {step}, {}", u.show(idx));
        let fill = step % 2000 < 1200;
        match rng.below(10) {
            0..=4 if fill => {
                let v = ledger.make();
                let id = v.id;
                let prev = match map.insert(key, v) {
                    Ok(prev) => prev,
                    Err(e) => panic!("{ctx}: insert failed: {e}"),
                };
                clones += usize::from(check_returned(prev, held[idx], &ctx));
                assert_eq!(ledger.drops_of(id), 0, "{ctx}: stored value dropped");
                held[idx] = Some(id);
            }
            0..=5 => {
                let prev = map.remove(key);
                clones += usize::from(check_returned(prev, held[idx], &ctx));
                held[idx] = None;
            }
            6..=7 => {
                let got = map.get_cloned(key);
                assert_eq!(got.as_ref().map(|c| c.origin), held[idx], "{ctx}: get");
                clones += usize::from(got.is_some());
            }
            _ => {
                // get_with sees the stored value itself, alive.
                let got = map.get_with(key, |v| (v.id, v.origin, ledger.drops_of(v.id)));
                assert_eq!(got, held[idx].map(|h| (h, h, 0)), "{ctx}: get_with");
            }
        }
        if step % 500 == 499 {
            assert_eq!(
                ledger.clones.load(Relaxed),
                clones,
                "{ctx}: the map cloned values other than the ones it returned"
            );
            let live: Vec<usize> = held.iter().flatten().copied().collect();
            ledger.assert_dropped(&live, 0, &format!("{ctx}: values in the map"));
            ledger.assert_no_double_drop(&ctx);
        }
    }
    // Visits see the stored values themselves.
    map.visit_range(.., |k, v| {
        let idx = u.idx(k).expect("known key");
        assert_eq!(Some(v.id), held[idx], "[{name}] visit of {}", u.show(idx));
        ControlFlow::Continue(())
    });
    assert_eq!(
        ledger.clones.load(Relaxed),
        clones,
        "[{name}] after a visit"
    );
    // A refused insert drops its value at once.
    if let Some(max) = subject.max_key_len() {
        let v = ledger.make();
        let id = v.id;
        let len = map.len();
        match map.insert(&vec![7; max + 1], v) {
            Err(Error::KeyTooLong { len: l, max: m }) if l == max + 1 && m == max => {}
            other => panic!(
                "[{name}] insert of a key of {} bytes, over the limit, returned {other:?}",
                max + 1
            ),
        }
        assert_eq!(ledger.drops_of(id), 1, "[{name}] refused value");
        assert_eq!(map.len(), len, "[{name}] len() after a refused insert");
    }
    subject.audit(&map, "before dropping the map");
    // Dropping the map drops every stored value right away.
    let live: Vec<usize> = held.iter().flatten().copied().collect();
    assert!(!live.is_empty());
    ledger.assert_dropped(&live, 0, &format!("[{name}] before dropping the map"));
    drop(map);
    ledger.assert_dropped(&live, 1, &format!("[{name}] right after dropping the map"));
    ledger.assert_no_double_drop(&format!("[{name}] after dropping the map"));
    ledger.assert_all_dropped_eventually(subject, &format!("[{name}] retired values"));
}

/// Multi-threaded: 2 writers (80,000 operations each, each owning half of 800 keys, 2 of them
/// long) and 2 readers on one map from `subject`, with the checks of [`values_dropped_once`]
/// that hold under concurrency; see the [module documentation](self).
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it).
pub fn values_dropped_once_concurrently<M: ConcurrentOrderedMap<Counted>>(
    subject: &Subject<M>,
    seed: u64,
) {
    const WRITERS: usize = 2;
    const READERS: usize = 2;
    let name = subject.name();
    // Readers' `get`s take ids too, as many as they make while the writers run.
    let ledger = Ledger::new(1 << 22);
    let u = Universe::new(800, 2, seed);
    let n = u.len();
    let map = subject.make();
    let writers_done = AtomicUsize::new(0);
    let (held, clones): (Vec<Vec<Option<usize>>>, Vec<usize>) = thread::scope(|s| {
        let (map, u, ledger, writers_done) = (&map, &u, &ledger, &writers_done);
        let ws: Vec<_> = (0..WRITERS)
            .map(|w| {
                s.spawn(move || {
                    let _done = Done(writers_done);
                    let mut held: Vec<Option<usize>> = vec![None; n];
                    let mut clones = 0usize;
                    let mut rng = TestRng::new(seed + w as u64);
                    let mine: Vec<usize> = (0..n).filter(|i| i % WRITERS == w).collect();
                    for step in 0..80_000 {
                        let idx = *rng.pick(&mine);
                        let key = &u.keys[idx][..];
                        let ctx = format!("[{name}] writer {w}, step {step}, {}", u.show(idx));
                        let fill = step % 20_000 < 10_000;
                        if rng.chance(if fill { 0.85 } else { 0.15 }) {
                            let v = ledger.make();
                            let id = v.id;
                            let prev = match map.insert(key, v) {
                                Ok(prev) => prev,
                                Err(e) => panic!("{ctx}: insert failed: {e}"),
                            };
                            clones += usize::from(check_returned(prev, held[idx], &ctx));
                            held[idx] = Some(id);
                        } else {
                            let prev = map.remove(key);
                            clones += usize::from(check_returned(prev, held[idx], &ctx));
                            held[idx] = None;
                        }
                        // This writer alone writes the key: its value is still stored, alive.
                        if let Some(h) = held[idx] {
                            assert_eq!(ledger.drops_of(h), 0, "{ctx}: stored value dropped");
                        }
                    }
                    (held, clones)
                })
            })
            .collect();
        let rs: Vec<_> = (0..READERS)
            .map(|r| {
                s.spawn(move || {
                    let mut rng = TestRng::new((seed << 4) + r as u64);
                    let mut clones = 0usize;
                    let alive = |what: &str, v: &Counted| {
                        assert!(
                            v.id == v.origin && ledger.drops_of(v.id) == 0,
                            "[{name}] reader {r}: {what} reached {v:?}, dropped {} times, which \
                             is not a stored original",
                            ledger.drops_of(v.id)
                        );
                    };
                    let mut reads = 0;
                    while writers_done.load(Acquire) < WRITERS || reads < 1000 {
                        reads += 1;
                        let key = &rng.pick(&u.keys)[..];
                        match rng.below(4) {
                            0 => {
                                if let Some(c) = map.get_cloned(key) {
                                    clones += 1;
                                    assert!(
                                        c.id != c.origin,
                                        "[{name}] reader {r}: get did not clone"
                                    );
                                }
                            }
                            1 => {
                                map.get_with(key, |v| alive("get_with", v));
                            }
                            2 => {
                                map.lower_bound_with(Bound::Excluded(key), |_, v| {
                                    alive("lower_bound_with", v)
                                });
                            }
                            _ => {
                                let mut left = 1 + rng.index(30);
                                map.visit_range(
                                    (Bound::Included(key), Bound::Unbounded),
                                    |_, v| {
                                        alive("visit_range", v);
                                        left -= 1;
                                        if left == 0 {
                                            ControlFlow::Break(())
                                        } else {
                                            ControlFlow::Continue(())
                                        }
                                    },
                                );
                            }
                        }
                    }
                    (vec![], clones)
                })
            })
            .collect();
        let mut out: Vec<(Vec<Option<usize>>, usize)> = join_all(ws);
        out.extend(join_all(rs));
        out.into_iter().unzip()
    });
    let ctx = |what: &str| format!("[{name}] seed {seed:#x}: {what}");
    ledger.assert_no_double_drop(&ctx("after the run"));
    assert_eq!(
        ledger.clones.load(Relaxed),
        clones.iter().sum::<usize>(),
        "{}",
        ctx("the map cloned values other than the ones it returned")
    );
    let mut live = Vec::new();
    for idx in 0..n {
        let want = held[idx % WRITERS][idx];
        let got = map.get_with(&u.keys[idx], |v| v.id);
        assert_eq!(
            got,
            want,
            "{}",
            ctx(&format!("after the run: value of {}", u.show(idx)))
        );
        live.extend(want);
    }
    assert_eq!(map.len(), live.len(), "{}", ctx("len() after the run"));
    assert!(!live.is_empty());
    subject.audit(&map, "after the concurrent run");
    ledger.assert_dropped(&live, 0, &ctx("values stored after the run"));
    drop(map);
    ledger.assert_dropped(
        &live,
        1,
        &ctx("values stored, right after dropping the map"),
    );
    ledger.assert_all_dropped_eventually(subject, &ctx("after the concurrent run"));
}

/// Single-threaded: a key of a map from `subject` is given a first value and then updated
/// eleven times while it stays stored; each replaced value (the first one included) must be
/// dropped eventually while the key is still there (work on a second map drives deferred
/// reclamation, as in [`values_dropped_once`]), and the current one must stay alive. Then the
/// key is removed and its last value must be dropped eventually too.
///
/// A map that keeps a key's first value for as long as the key lives passes
/// [`values_dropped_once`] (the value is dropped with the map) but fails here.
///
/// # Panics
///
/// At the first failed check.
pub fn replaced_values_dropped_while_key_stays<M: ConcurrentOrderedMap<Counted>>(
    subject: &Subject<M>,
) {
    const UPDATES: usize = 11;
    let name = subject.name();
    let ledger = Ledger::new(64);
    let map = subject.make();
    let key = b"replaced";
    let mut ids = Vec::with_capacity(UPDATES + 1);
    for step in 0..=UPDATES {
        let v = ledger.make();
        let id = v.id;
        let prev = match map.insert(key, v) {
            Ok(prev) => prev,
            Err(e) => panic!("[{name}] insert #{step} failed: {e}"),
        };
        let ctx = format!("[{name}] insert #{step} of one key");
        check_returned(prev, ids.last().copied(), &ctx);
        ids.push(id);
    }
    let (current, replaced) = ids.split_last().expect("values were inserted");
    ledger.assert_dropped_eventually(
        replaced,
        subject,
        &format!("[{name}] values replaced by {UPDATES} updates, the key still stored"),
    );
    ledger.assert_dropped(&[*current], 0, &format!("[{name}] the key's current value"));
    assert_eq!(
        map.get_with(key, |v| v.id),
        Some(*current),
        "[{name}] get_with after the updates"
    );
    assert_eq!(map.len(), 1, "[{name}] len() after the updates");
    subject.audit(&map, "one key updated");
    check_returned(map.remove(key), Some(*current), &format!("[{name}] remove"));
    ledger.assert_dropped_eventually(
        &[*current],
        subject,
        &format!("[{name}] the last value, the key removed"),
    );
    drop(map);
    ledger.assert_all_dropped_eventually(subject, &format!("[{name}] after dropping the map"));
}

// ---------------------------------------------------------------------------------------------
// Single-threaded edge cases
// ---------------------------------------------------------------------------------------------

type Oracle = BTreeMap<Vec<u8>, u64>;

/// Compares `map` with `oracle`: full visits both ways, `len`, and `get`, `lower_bound_with`
/// and `upper_bound_with` with every bound kind around each probe.
fn check_against<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &Oracle,
    probes: &[Vec<u8>],
    ctx: &str,
) {
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert!(entries(map) == want, "{ctx}: visit_range(..) differs");
    let mut rev = entries_rev(map);
    rev.reverse();
    assert!(rev == want, "{ctx}: visit_range_rev(..) differs");
    assert_eq!(map.len(), oracle.len(), "{ctx}: len()");
    assert_eq!(map.is_empty(), oracle.is_empty(), "{ctx}: is_empty()");
    let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
    for p in probes {
        assert_eq!(
            map.get_cloned(p),
            oracle.get(p).copied(),
            "{ctx}: get({})",
            Escaped(p)
        );
        for b in [
            Bound::Included(&p[..]),
            Bound::Excluded(&p[..]),
            Bound::Unbounded,
        ] {
            let lo = oracle
                .range::<[u8], _>((b, Bound::Unbounded))
                .next()
                .map(|(k, v)| (k.clone(), *v));
            assert_eq!(
                map.lower_bound_with(b, own),
                lo,
                "{ctx}: lower_bound_with({})",
                show_bound(b)
            );
            let hi = oracle
                .range::<[u8], _>((Bound::Unbounded, b))
                .next_back()
                .map(|(k, v)| (k.clone(), *v));
            assert_eq!(
                map.upper_bound_with(b, own),
                hi,
                "{ctx}: upper_bound_with({})",
                show_bound(b)
            );
        }
    }
}

/// Keys next to `key`: one byte longer (0x00 and 0xFF), one shorter, last byte incremented.
fn neighbours(key: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(4);
    for b in [0x00, 0xff] {
        let mut k = key.to_vec();
        k.push(b);
        out.push(k);
    }
    if let Some((&last, head)) = key.split_last() {
        out.push(head.to_vec());
        let mut k = key.to_vec();
        if last < 0xff {
            *k.last_mut().unwrap() += 1;
        } else {
            k.push(0x01);
        }
        out.push(k);
    }
    out
}

/// The empty key alone (every seek and range around it), replaced, next to `"\x00"` and
/// `"\xff"`, and removed, on one map from `subject`, compared with a `BTreeMap`.
///
/// # Panics
///
/// At the first difference.
pub fn empty_key_alone_and_with_others<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>) {
    let name = subject.name();
    let map = subject.make();
    let e: &[u8] = b"";
    assert_eq!(map.get_cloned(e), None, "[{name}]");
    assert_eq!(map.insert(e, 7), Ok(None), "[{name}]");
    assert_eq!(map.get_cloned(e), Some(7), "[{name}]");
    assert_eq!(map.len(), 1, "[{name}]");
    let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
    let empty = Some((Vec::new(), 7));
    assert_eq!(
        map.lower_bound_with(Bound::Unbounded, own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.lower_bound_with(Bound::Included(e), own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.lower_bound_with(Bound::Excluded(e), own),
        None,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Unbounded, own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(e), own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Excluded(e), own),
        None,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(b"\x00"), own),
        empty,
        "[{name}]"
    );
    let count = |r: (Bound<&[u8]>, Bound<&[u8]>)| {
        let mut n = 0;
        map.visit_range(r, |_, _| {
            n += 1;
            ControlFlow::Continue(())
        });
        n
    };
    assert_eq!(
        count((Bound::Included(e), Bound::Excluded(e))),
        0,
        "[{name}]"
    );
    assert_eq!(count((Bound::Unbounded, Bound::Included(e))), 1, "[{name}]");
    assert_eq!(count((Bound::Excluded(e), Bound::Unbounded)), 0, "[{name}]");
    assert_eq!(map.insert(e, 8), Ok(Some(7)), "[{name}]");
    assert_eq!(map.insert(b"\x00", 9), Ok(None), "[{name}]");
    assert_eq!(map.insert(b"\xff", 10), Ok(None), "[{name}]");
    let mut oracle: Oracle = [(vec![], 8), (vec![0], 9), (vec![0xff], 10)].into();
    let probes = vec![
        vec![],
        vec![0],
        vec![0, 0],
        vec![1],
        vec![0xff],
        vec![0xff, 0],
    ];
    check_against(
        &map,
        &oracle,
        &probes,
        &format!("[{name}] empty key and two"),
    );
    subject.audit(&map, "empty key and two");
    assert_eq!(map.remove(e), Some(8), "[{name}]");
    oracle.remove(&[][..]);
    assert_eq!(map.remove(e), None, "[{name}]");
    check_against(
        &map,
        &oracle,
        &probes,
        &format!("[{name}] empty key removed"),
    );
    assert_eq!(map.remove(b"\x00"), Some(9), "[{name}]");
    assert_eq!(map.remove(b"\xff"), Some(10), "[{name}]");
    assert!(map.is_empty(), "[{name}]");
    subject.audit(&map, "emptied");
}

/// Six keys that are prefixes of each other (`""`, `"a"`, `"ab"`, `"abc"`, `"ab\x00"`,
/// `"ab\xff"`) inserted into a map from `subject` in each of the 720 orders, with every key
/// read back after each insert, then the full contents compared with a `BTreeMap` (seeks around
/// every key and its neighbours on every 8th order), then removed in another order, compared
/// after each removal.
///
/// # Panics
///
/// At the first difference.
pub fn prefix_keys_in_every_insertion_order<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>) {
    let name = subject.name();
    let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"abc", b"ab\x00", b"ab\xff"];
    let mut probes: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    for k in keys {
        probes.extend(neighbours(k));
    }
    probes.extend([b"b".to_vec(), b"aa".to_vec(), b"abcd".to_vec(), vec![0xff]]);
    let perms = permutations(keys.len());
    assert_eq!(perms.len(), 720);
    for (p, perm) in perms.iter().enumerate() {
        let ctx = |what: &str| format!("[{name}] prefix keys, order {perm:?}: {what}");
        let map = subject.make();
        let mut oracle = Oracle::new();
        for &i in perm {
            assert_eq!(
                map.insert(keys[i], i as u64),
                Ok(None),
                "{}",
                ctx(&format!("insert({})", Escaped(keys[i])))
            );
            oracle.insert(keys[i].to_vec(), i as u64);
            for k in keys {
                assert_eq!(
                    map.get_cloned(k),
                    oracle.get(k).copied(),
                    "{}",
                    ctx(&format!(
                        "get({}) after inserting {}",
                        Escaped(k),
                        Escaped(keys[i])
                    ))
                );
            }
        }
        // Seeks on every 8th order (they hardly depend on the order); visits on all.
        let seek_probes: &[Vec<u8>] = if p % 8 == 0 { &probes } else { &[] };
        check_against(&map, &oracle, seek_probes, &ctx("full"));
        subject.audit(&map, &format!("prefix keys, order {perm:?}: full"));
        // Remove in another order, comparing after each removal.
        for &i in perm.iter().rev().cycle().skip(p % 6).take(keys.len()) {
            assert_eq!(
                map.remove(keys[i]),
                Some(i as u64),
                "{}",
                ctx(&format!("remove({})", Escaped(keys[i])))
            );
            oracle.remove(keys[i]);
            check_against(
                &map,
                &oracle,
                &[],
                &ctx(&format!("after removing {}", Escaped(keys[i]))),
            );
        }
        assert!(map.is_empty(), "{}", ctx("emptied"));
        subject.audit(&map, &format!("prefix keys, order {perm:?}: emptied"));
    }
}

#[cfg(test)]
mod tests {
    //! The harnesses on a mutex-guarded [`ModelMap`]: a correct map passes every one.

    use std::sync::{Mutex, MutexGuard};

    use super::*;
    use crate::OrderedMap;
    use crate::testing::ModelMap;

    /// A `ModelMap` behind a mutex, returning clones of replaced and removed values as the
    /// concurrent contract asks.
    struct Locked<V>(Mutex<ModelMap<V>>);

    impl<V> Locked<V> {
        fn new() -> Self {
            Locked(Mutex::new(ModelMap::new()))
        }
        fn lock(&self) -> MutexGuard<'_, ModelMap<V>> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl<V: Clone + Send + Sync> ConcurrentOrderedMap<V> for Locked<V> {
        fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
            self.lock().get(key).map(f)
        }
        fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
            let old = self.lock().insert(key, value)?;
            // Take the value out, hand back a clone, drop the original.
            Ok(old.clone())
        }
        fn remove(&self, key: &[u8]) -> Option<V> {
            let old = self.lock().remove(key);
            old.clone()
        }
        fn len(&self) -> usize {
            self.lock().len()
        }
        fn memory_usage(&self) -> usize {
            size_of::<Self>() + self.lock().memory_usage()
        }
        fn lower_bound_with<R>(
            &self,
            bound: Bound<&[u8]>,
            f: impl FnOnce(&[u8], &V) -> R,
        ) -> Option<R> {
            self.lock().lower_bound(bound).map(|(k, v)| f(k, v))
        }
        fn upper_bound_with<R>(
            &self,
            bound: Bound<&[u8]>,
            f: impl FnOnce(&[u8], &V) -> R,
        ) -> Option<R> {
            self.lock().upper_bound(bound).map(|(k, v)| f(k, v))
        }
        fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
        where
            Rg: crate::KeyRange,
        {
            for (k, v) in self.lock().range(range) {
                if f(k, v).is_break() {
                    break;
                }
            }
        }
        fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
        where
            Rg: crate::KeyRange,
        {
            for (k, v) in self.lock().range(range).rev() {
                if f(k, v).is_break() {
                    break;
                }
            }
        }
    }

    fn subject<V: Clone + Send + Sync + 'static>() -> Subject<Locked<V>> {
        Subject::new("locked model", Locked::new).with_audit(|m: &Locked<V>| {
            let map = m.lock();
            let keys: Vec<&[u8]> = map.iter().map(|(k, _)| k).collect();
            if keys.is_sorted_by(|a, b| a < b) {
                Ok(())
            } else {
                Err("keys out of order".to_string())
            }
        })
    }

    #[test]
    fn locked_model_passes_the_quick_stress_runs() {
        for (sharing, seed) in [(Sharing::Partitioned, 1), (Sharing::Shared, 2)] {
            stress(&subject(), Plan::quick(sharing, seed));
        }
        stress(
            &subject(),
            Plan {
                writers: 3,
                readers: 1,
                ..Plan::quick(Sharing::Shared, 3)
            },
        );
    }

    #[test]
    fn locked_model_passes_range_visits_under_churn() {
        range_visits_under_churn(&subject(), ChurnPlan::quick(4));
    }

    #[test]
    fn locked_model_drops_values_once() {
        values_dropped_once(&subject(), 5);
        values_dropped_once_concurrently(&subject(), 6);
    }

    #[test]
    fn locked_model_passes_the_edge_cases() {
        empty_key_alone_and_with_others(&subject());
        prefix_keys_in_every_insertion_order(&subject());
    }

    #[test]
    fn locked_model_passes_same_key_stress() {
        for (keys, seed) in [(1, 7), (2, 8), (16, 9), (400, 10)] {
            same_key_stress(&subject(), SameKeyPlan::quick(keys, seed));
        }
    }

    #[test]
    fn locked_model_drops_replaced_values_while_the_key_stays() {
        replaced_values_dropped_while_key_stays(&subject());
    }

    /// What a [`Faulty`] map gets wrong.
    #[derive(Clone, Copy, Debug)]
    enum Fault {
        /// `insert` over a present key returns `None`: the replaced value is lost.
        LosesReplaced,
        /// `remove` sometimes returns the removed value and stores it back: it comes out twice.
        ReturnsTwice,
        /// Every 50th `len()` is one less, wrapping below zero as a racy counter would.
        LenWraps,
        /// A key keeps its first value alive until it is removed.
        KeepsFirstValue,
    }

    /// A [`Locked`] model with a [`Fault`].
    struct Faulty<V> {
        inner: Locked<V>,
        fault: Fault,
        calls: AtomicUsize,
        /// For `KeepsFirstValue`: each updated key's first value, kept until it is removed.
        kept: Mutex<BTreeMap<Vec<u8>, V>>,
    }

    impl<V: Clone + Send + Sync> ConcurrentOrderedMap<V> for Faulty<V> {
        fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
            self.inner.get_with(key, f)
        }
        fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
            let mut map = self.inner.lock();
            let old = map.insert(key, value)?;
            let out = old.clone();
            match (self.fault, old) {
                (Fault::LosesReplaced, _) => return Ok(None),
                (Fault::KeepsFirstValue, Some(old)) => {
                    self.kept.lock().unwrap().entry(key.to_vec()).or_insert(old);
                }
                _ => {}
            }
            Ok(out)
        }
        fn remove(&self, key: &[u8]) -> Option<V> {
            let mut map = self.inner.lock();
            let old = map.remove(key);
            self.kept.lock().unwrap().remove(key);
            let n = self.calls.fetch_add(1, Relaxed);
            if let (Fault::ReturnsTwice, Some(v), 0) = (self.fault, &old, n % 100) {
                map.insert(key, v.clone()).expect("the model takes any key");
            }
            old.clone()
        }
        fn len(&self) -> usize {
            let len = self.inner.len();
            let n = self.calls.fetch_add(1, Relaxed);
            match self.fault {
                Fault::LenWraps if n.is_multiple_of(50) => len.wrapping_sub(1),
                _ => len,
            }
        }
        fn memory_usage(&self) -> usize {
            self.inner.memory_usage()
        }
        fn lower_bound_with<R>(
            &self,
            bound: Bound<&[u8]>,
            f: impl FnOnce(&[u8], &V) -> R,
        ) -> Option<R> {
            self.inner.lower_bound_with(bound, f)
        }
        fn upper_bound_with<R>(
            &self,
            bound: Bound<&[u8]>,
            f: impl FnOnce(&[u8], &V) -> R,
        ) -> Option<R> {
            self.inner.upper_bound_with(bound, f)
        }
        fn visit_range<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
        where
            Rg: crate::KeyRange,
        {
            self.inner.visit_range(range, f);
        }
        fn visit_range_rev<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
        where
            Rg: crate::KeyRange,
        {
            self.inner.visit_range_rev(range, f);
        }
    }

    fn faulty<V: Clone + Send + Sync + 'static>(fault: Fault) -> Subject<Faulty<V>> {
        Subject::new(format!("{fault:?}"), move || Faulty {
            inner: Locked::new(),
            fault,
            calls: AtomicUsize::new(0),
            kept: Mutex::new(BTreeMap::new()),
        })
    }

    /// The panic message of `f`, which must panic.
    fn panic_message(f: impl FnOnce()) -> String {
        let err = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the check passed");
        match (err.downcast_ref::<String>(), err.downcast_ref::<&str>()) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => s.to_string(),
            (None, None) => String::new(),
        }
    }

    #[test]
    fn same_key_stress_catches_lost_repeated_values_and_a_wrapped_len() {
        let msg = panic_message(|| {
            same_key_stress(&faulty(Fault::LosesReplaced), SameKeyPlan::quick(2, 11))
        });
        assert!(
            msg.contains("were lost") && !msg.contains(" 0 were lost"),
            "{msg}"
        );
        let msg = panic_message(|| {
            same_key_stress(&faulty(Fault::ReturnsTwice), SameKeyPlan::quick(16, 12))
        });
        // Caught by the accounting, or first by the thread that gets its own value back.
        assert!(
            msg.contains("came out more than once") || msg.contains("written by this thread"),
            "{msg}"
        );
        let msg =
            panic_message(|| same_key_stress(&faulty(Fault::LenWraps), SameKeyPlan::quick(1, 13)));
        assert!(msg.contains(&format!("len() = {}", usize::MAX)), "{msg}");
    }

    #[test]
    fn replaced_values_check_catches_a_kept_first_value() {
        let msg = panic_message(|| {
            replaced_values_dropped_while_key_stays(&faulty(Fault::KeepsFirstValue))
        });
        assert!(
            msg.contains("values replaced by 11 updates") && msg.contains("first ids [0]"),
            "{msg}"
        );
    }

    #[test]
    fn stamps_round_trip() {
        let s = Stamp {
            counter: (1 << 40) - 1,
            idx: 65_535,
            writer: 255,
        };
        assert_eq!(Stamp::decode(s.encode()), s);
        assert_eq!(
            Stamp::decode(0),
            Stamp {
                counter: 0,
                idx: 0,
                writer: 0
            }
        );
    }

    #[test]
    fn subject_audit_reports_its_context() {
        let s: Subject<Locked<u64>> =
            Subject::new("broken", Locked::new).with_audit(|_| Err("bad".to_string()));
        let map = s.make();
        let err = panic::catch_unwind(AssertUnwindSafe(|| s.audit(&map, "here")))
            .expect_err("the audit passed");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(msg, "[broken] here: the invariant check failed: bad");
        assert!(format!("{s:?}").contains("broken"));
        fn panicky(_: &Locked<u64>) {
            panic!("bad {}", 1);
        }
        let s: Subject<Locked<u64>> = Subject::new("panicky", Locked::new).with_audit(panicky);
        let err = panic::catch_unwind(AssertUnwindSafe(|| s.audit(&map, "there")))
            .expect_err("the audit passed");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(
            msg,
            "[panicky] there: the invariant check failed: panicked: bad 1"
        );
        let s: Subject<Locked<u64>> = Subject::new("fine", Locked::new).with_audit(|_| ());
        s.audit(&map, "anywhere");
    }
}
