#![cfg(feature = "testing")]
//! Integration tests of [`mlpdex::cuckoo_trie::ConcurrentCuckooTrie`] through the
//! [`ConcurrentOrderedMap`] API (needs the `testing` feature:
//! `cargo test -p mlpdex --release --features testing --test concurrent_cuckoo_trie`).
//!
//! What is covered:
//!
//! 1. **Differential runs**, single-threaded through `&self`, against the `BTreeMap` oracle of
//!    the testing driver: every [`KeyShape`] (the byte-string shapes and `U64`), three seeds
//!    each, with the default [`Config`] and with a config that grows the table often
//!    (`initial_buckets: 1`, `max_load_factor: 0.5`); `check_invariants()` after every run.
//! 2. **Property tests**: `run_ops_concurrent` on arbitrary operation sequences (`arb_ops`,
//!    default config, growing config with every symbol size, 8-byte integer keys), then
//!    `check_invariants()`.
//! 3. **Multi-threaded stress** (2 writers + 2 readers, 4 writers + 2 readers) on a universe of
//!    about 2000 keys of mixed shapes (the empty key, prefix chains, 0x00/0xFF keys, random
//!    bytes, integers, a few multi-KiB keys, some of them prefixes of each other), with the
//!    growing config and fill/drain cycles so that the table grows and shrinks during the run.
//!    Every value names the key it was written for, the writer and the writer's operation
//!    counter ([`Stamp`]). Checked while running: a value is only ever seen under its own key;
//!    per reader, per key and per writer, the counters seen never go back (`get`,
//!    `lower_bound_with`, `upper_bound_with`, `visit_range`, `visit_range_rev`, and the values
//!    `insert`/`remove` return); a `get` never returns a value of writer `w` older than the
//!    last write `w` had completed on that key before the `get` began (real-time order across
//!    threads); visits report known keys, within their range, strictly in order, and stop at
//!    `Break`. After joining: every value seen was actually written; the final contents (full
//!    `visit_range` both ways, `get` of every key, `len()`) are what the writers' last
//!    operations imply, `check_invariants()` passes, and the map drains to empty.
//!    * *Partitioned* runs: each writer owns a share of the keys, so every `insert`/`remove`
//!      must return exactly the writer's own last value, a read-back after a write must see
//!      it, and the final contents are determined exactly.
//!    * *Shared* runs: all writers write all keys, so each key's final value must be the last
//!      operation of one of the writers that touched it, and a value a writer gets back from
//!      `insert`/`remove` that it wrote itself must be its own latest one.
//! 4. **Range visits under churn**: "stable" keys inserted before the start and never touched
//!    are reported by every concurrent `visit_range`/`visit_range_rev` whose range (up to where
//!    it broke off) covers them, and found by every seek; keys removed before a visit starts
//!    (half of them before the readers start, the others one by one during the run, published
//!    through flags) are never reported by it nor returned by `get`. Visits are whole-map or
//!    random ranges with every bound kind, some breaking off early; 2 and 4 writers churn the
//!    other keys (growing config, fill/drain cycles) while 2 visitors run.
//! 5. **Values are dropped exactly once**: a value type counting its clones and drops (per id).
//!    `insert` and `remove` return clones of the stored value (checked by origin), the map
//!    never clones a value otherwise (exact clone count), never drops a stored value early,
//!    never drops one twice, drops the values still stored when the map is dropped right
//!    away, drops a refused insert's value at once, and eventually frees every retired value
//!    (epoch-based reclamation, driven by further work on another map). Single-threaded and
//!    with 2 writers + 2 readers.
//! 6. **Edge cases** through the concurrent API: the empty key, prefix keys in every insertion
//!    order, a key of `MAX_KEY_LEN` (accepted) and one byte more (refused with
//!    `Error::KeyTooLong`, the map unchanged), `with_config` refusing every out-of-range field
//!    with `Error::InvalidConfig`.
//! 7. `stress_small_quick`: small versions of 3 (partitioned and shared) and 4, well under a
//!    second, for CI.
//!
//! The checks were tried against deliberately broken copies of the map (no seqlock
//! validation, a visit skipping entries, `insert` returning the new value, retired values
//! freed at once, shrinking from the state before a removal, `Drop` leaking values): each was
//! caught by the multi-threaded tests, and all but the first and the fourth by single-threaded
//! tests too.
//!
//! No test asserts on timing: the stress tests are sized by operation counts, and readers run
//! until every writer is done. The file takes about 20 s on 2 cores, with `--release` or in the
//! test profile.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::{self, Debug};
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
use std::thread;

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config};
use mlpdex::key::Escaped;
use mlpdex::testing::{
    KeyShape, TestRng, arb_ops, arb_ops_with, arb_u64_key, run_ops_concurrent,
    try_differential_concurrent,
};
use mlpdex::{ConcurrentOrderedMap, Error};
use proptest::prelude::*;

type Map<V> = ConcurrentCuckooTrie<V>;

// ---------------------------------------------------------------------------------------------
// Configs and small helpers
// ---------------------------------------------------------------------------------------------

fn default_config() -> Config {
    Config::default()
}

/// A config that makes the table grow often: one bucket to start, resize at half load.
fn growth_config() -> Config {
    Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    }
}

fn ctrie<V: Clone + Send + Sync + 'static>(cfg: Config) -> Map<V> {
    match Map::with_config(cfg) {
        Ok(map) => map,
        Err(e) => panic!("with_config refused a valid config: {e}"),
    }
}

fn all_shapes() -> impl Iterator<Item = KeyShape> {
    KeyShape::ALL_BYTES.iter().copied().chain([KeyShape::U64])
}

fn audit<V: Clone + Send + Sync + 'static>(map: &Map<V>, ctx: &str) {
    if let Err(e) = map.check_invariants() {
        panic!("{ctx}: check_invariants() failed: {e}");
    }
}

/// A key for messages: short keys escaped whole, long ones by their head, tail and length.
struct K<'a>(&'a [u8]);

impl fmt::Display for K<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.0;
        if k.len() <= 64 {
            write!(f, "{}", Escaped(k))
        } else {
            write!(
                f,
                "{}…{} ({} bytes)",
                Escaped(&k[..24]),
                Escaped(&k[k.len() - 8..]),
                k.len()
            )
        }
    }
}

fn show_bound(b: Bound<&[u8]>) -> String {
    match b {
        Bound::Included(k) => format!("Included({})", K(k)),
        Bound::Excluded(k) => format!("Excluded({})", K(k)),
        Bound::Unbounded => "Unbounded".to_string(),
    }
}

/// Whether `key` lies after the start bound `s`.
fn after_start(key: &[u8], s: Bound<&[u8]>) -> bool {
    match s {
        Bound::Included(b) => key >= b,
        Bound::Excluded(b) => key > b,
        Bound::Unbounded => true,
    }
}

/// Whether `key` lies before the end bound `e`.
fn before_end(key: &[u8], e: Bound<&[u8]>) -> bool {
    match e {
        Bound::Included(b) => key <= b,
        Bound::Excluded(b) => key < b,
        Bound::Unbounded => true,
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Every entry of `map` in ascending order, through `visit_range(..)`.
fn entries<V: Clone + Send + Sync + 'static>(map: &Map<V>) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range::<[u8], _>(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// Every entry of `map` in descending order, through `visit_range_rev(..)`.
fn entries_rev<V: Clone + Send + Sync + 'static>(map: &Map<V>) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range_rev::<[u8], _>(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// Counts a finished (or panicked) worker thread when dropped, so that the threads waiting
/// for the writers never wait for one that panicked.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Release);
    }
}

/// Joins scoped threads, re-raising the first panic (the scope still waits for the others).
fn join_all<T>(handles: Vec<thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| match h.join() {
            Ok(x) => x,
            Err(p) => std::panic::resume_unwind(p),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs
// ---------------------------------------------------------------------------------------------

/// Steps of one differential run: two grow–churn–shrink cycles of the driver.
const DIFF_STEPS: usize = 16_000;
/// Steps with [`KeyShape::Mixed`], which draws a few multi-KiB keys.
const DIFF_STEPS_MIXED: usize = 8_000;
/// Steps with [`KeyShape::Long`] (1–8 KiB keys: about 0.35 ms a step).
const DIFF_STEPS_LONG: usize = 1_500;

/// Lends a map to the driver (which owns what `make` returns), so that the test can audit the
/// map after the run.
struct Lent<'a>(&'a Map<u64>);

impl ConcurrentOrderedMap<u64> for Lent<'_> {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&u64) -> R) -> Option<R> {
        self.0.get_with(key, f)
    }
    fn insert(&self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        self.0.insert(key, value)
    }
    fn remove(&self, key: &[u8]) -> Option<u64> {
        self.0.remove(key)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn memory_usage(&self) -> usize {
        self.0.memory_usage()
    }
    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        self.0.lower_bound_with(bound, f)
    }
    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        self.0.upper_bound_with(bound, f)
    }
    fn visit_range<Q, Rg>(&self, range: Rg, f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Q: AsRef<[u8]> + ?Sized,
        Rg: std::ops::RangeBounds<Q>,
    {
        self.0.visit_range(range, f);
    }
    fn visit_range_rev<Q, Rg>(&self, range: Rg, f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Q: AsRef<[u8]> + ?Sized,
        Rg: std::ops::RangeBounds<Q>,
    {
        self.0.visit_range_rev(range, f);
    }
}

/// Every shape, `seeds` seeds each: a differential run, then `check_invariants()`.
fn differential_suite(config: &str, cfg: fn() -> Config, seeds: &[u64]) {
    for shape in all_shapes() {
        let steps = match shape {
            KeyShape::Long => DIFF_STEPS_LONG,
            KeyShape::Mixed => DIFF_STEPS_MIXED,
            _ => DIFF_STEPS,
        };
        for &seed in seeds {
            let map = ctrie::<u64>(cfg());
            if let Err(d) = try_differential_concurrent(|| Lent(&map), shape, seed, steps) {
                panic!("[config {config}] {d}");
            }
            audit(
                &map,
                &format!("[config {config}] after the differential run {shape:?} seed {seed}"),
            );
        }
    }
}

#[test]
fn differential_default_config() {
    differential_suite("default", default_config, &[1, 2, 3]);
}

#[test]
fn differential_frequent_growth() {
    differential_suite(
        "initial_buckets=1 max_load_factor=0.5",
        growth_config,
        &[11, 12, 13],
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Property tests
// ---------------------------------------------------------------------------------------------

fn ops_then_audit(map: &Map<u64>, ops: &[mlpdex::testing::MapOp]) -> Result<(), TestCaseError> {
    run_ops_concurrent(map, ops).map_err(TestCaseError::fail)?;
    map.check_invariants()
        .map_err(|e| TestCaseError::fail(format!("check_invariants after the ops: {e}")))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn proptest_arbitrary_ops(ops in arb_ops()) {
        ops_then_audit(&Map::<u64>::new(), &ops)?;
    }

    #[test]
    fn proptest_arbitrary_ops_growing_any_symbol_size(ops in arb_ops(), bits in 1u32..=5) {
        let cfg = Config { symbol_bits: bits, ..growth_config() };
        ops_then_audit(&ctrie::<u64>(cfg), &ops)?;
    }

    #[test]
    fn proptest_u64_key_ops(ops in arb_ops_with(arb_u64_key())) {
        ops_then_audit(&ctrie::<u64>(growth_config()), &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Key universes and stamped values for the multi-threaded tests
// ---------------------------------------------------------------------------------------------

/// A sorted set of distinct keys; a key is named by its index, so key order is index order.
struct Universe {
    keys: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, usize>,
}

impl Universe {
    /// The empty key, prefix chains (each prefix, also followed by 0x00 and 0xFF), every
    /// 0x00/0xFF string of 1 to 5 bytes, `long` multi-KiB keys (plus a half and a one-byte
    /// extension of one of them), then keys of the other shapes up to `target` keys.
    fn new(target: usize, long: usize, seed: u64) -> Universe {
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
        let mut longs = Vec::new();
        while longs.len() < long {
            let k = KeyShape::Long.gen_key(&mut rng);
            if set.insert(k.clone()) {
                longs.push(k);
            }
        }
        if let Some(first) = longs.first() {
            set.insert(first[..first.len() / 2].to_vec());
            let mut ext = first.clone();
            ext.push(0x00);
            set.insert(ext);
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
        assert!(
            set.len() < 1 << INDEX_BITS,
            "universe too large for a stamp"
        );
        let keys: Vec<Vec<u8>> = set.into_iter().collect();
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
    fn inside(&self, s: Bound<&[u8]>, e: Bound<&[u8]>) -> std::ops::Range<usize> {
        let lo = self.keys.partition_point(|k| !after_start(k, s));
        let hi = self.keys.partition_point(|k| before_end(k, e));
        lo..hi.max(lo)
    }

    fn show(&self, idx: usize) -> String {
        format!("key #{idx} {}", K(&self.keys[idx]))
    }
}

/// Bits of a stamped value holding the writer id.
const WRITER_BITS: u32 = 8;
/// Bits of a stamped value holding the key's index in its universe.
const INDEX_BITS: u32 = 16;

/// What a stress test's value says about its write: which writer wrote it, as that writer's
/// how-manieth operation, for which key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    counter: u64,
    idx: usize,
    writer: usize,
}

impl Stamp {
    fn encode(self) -> u64 {
        assert!(self.counter < 1 << (64 - INDEX_BITS - WRITER_BITS));
        (self.counter << (INDEX_BITS + WRITER_BITS))
            | ((self.idx as u64) << WRITER_BITS)
            | self.writer as u64
    }
    fn decode(v: u64) -> Stamp {
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
fn visit(
    map: &Map<u64>,
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
        map.visit_range::<[u8], _>((s, e), f);
    } else {
        map.visit_range_rev::<[u8], _>((s, e), f);
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
        panic!("{} reported {}, a key never inserted", what(), K(k));
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

// ---------------------------------------------------------------------------------------------
// 3. Multi-threaded stress
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sharing {
    /// Writer `w` writes only the keys whose index is `w` modulo the number of writers.
    Partitioned,
    /// Every writer writes every key.
    Shared,
}

/// The size of a stress run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    sharing: Sharing,
    writers: usize,
    readers: usize,
    /// Keys in the universe, and how many of them are 1–8 KiB.
    keys: usize,
    long_keys: usize,
    /// Each writer runs this many cycles of a fill phase (85% inserts) and a drain phase (85%
    /// removes) of `phase_ops` operations each.
    cycles: usize,
    phase_ops: usize,
    /// Reads each reader makes at least, even if the writers are done.
    min_reads: usize,
    seed: u64,
}

/// State shared by the threads of a stress run.
struct Stress<'a> {
    map: &'a Map<u64>,
    u: &'a Universe,
    plan: Plan,
    /// `floor[idx * writers + w]`: one more than the counter of the last operation writer `w`
    /// completed on key `idx` (0 before the first).
    floor: Vec<AtomicU64>,
    writers_done: AtomicUsize,
    /// The largest `len()` a writer saw, to show that the table had to grow.
    peak_len: AtomicUsize,
}

/// What a writer did: its last operation on each key (`None`: never touched it,
/// `Some(None)`: removed it), every value it wrote, and what it saw.
struct WriterLog {
    last: Vec<Option<Option<u64>>>,
    written: HashSet<u64>,
    view: View,
}

fn stress_writer(sh: &Stress<'_>, w: usize) -> WriterLog {
    let _done = Done(&sh.writers_done);
    let (map, u, plan) = (sh.map, sh.u, sh.plan);
    let n = u.len();
    let who = format!("writer {w} ({:?}, seed {})", plan.sharing, plan.seed);
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
                    let got = map.get(key);
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

fn stress_reader(sh: &Stress<'_>, r: usize) -> View {
    let (map, u, plan) = (sh.map, sh.u, sh.plan);
    let n = u.len();
    let ws = plan.writers;
    let who = format!("reader {r} ({:?}, seed {})", plan.sharing, plan.seed);
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
                    map.get(&u.keys[idx])
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
                let what = format!(
                    "{}({})",
                    if lower {
                        "lower_bound_with"
                    } else {
                        "upper_bound_with"
                    },
                    show_bound(b)
                );
                if let Some((idx, v)) = got {
                    let idx = match idx {
                        Ok(i) => i,
                        Err(k) => panic!("{who}: {what} found {}, never inserted", K(&k)),
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
                let what = format!(
                    "{}({}, {})",
                    if forward {
                        "visit_range"
                    } else {
                        "visit_range_rev"
                    },
                    show_bound(s),
                    show_bound(e)
                );
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

fn stress(plan: Plan) {
    let u = Universe::new(plan.keys, plan.long_keys, plan.seed);
    let n = u.len();
    let map = ctrie::<u64>(growth_config());
    let sh = Stress {
        map: &map,
        u: &u,
        plan,
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
    let ctx = format!("{plan:?}");

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
                K(k)
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
            map.get(&u.keys[idx]),
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
    audit(&map, &format!("{ctx}: after the run"));

    // The run exercised growth (the map held far more keys than one page of buckets holds at
    // half load) and ended drained well below its peak, so the table shrank or could have.
    let peak = sh.peak_len.load(Relaxed);
    assert!(
        peak >= n / 3 && got.len() * 2 <= peak,
        "{ctx}: the plan did not fill and drain the map (peak len {peak}, final len {}, {n} \
         keys)",
        got.len()
    );

    for (k, v) in &got {
        assert_eq!(map.remove(k), Some(*v), "{ctx}: draining {}", K(k));
    }
    assert!(map.is_empty(), "{ctx}: drained map has len {}", map.len());
    assert!(
        entries(&map).is_empty(),
        "{ctx}: drained map visits entries"
    );
    audit(&map, &format!("{ctx}: drained"));
}

fn plan(sharing: Sharing, writers: usize, readers: usize, seed: u64) -> Plan {
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

#[test]
fn stress_partitioned_2_writers_2_readers() {
    stress(plan(Sharing::Partitioned, 2, 2, 0x5EED_0001));
}

#[test]
fn stress_partitioned_4_writers_2_readers() {
    stress(plan(Sharing::Partitioned, 4, 2, 0x5EED_0002));
}

#[test]
fn stress_shared_keys_2_writers_2_readers() {
    stress(plan(Sharing::Shared, 2, 2, 0x5EED_0003));
}

#[test]
fn stress_shared_keys_4_writers_2_readers() {
    stress(plan(Sharing::Shared, 4, 2, 0x5EED_0004));
}

// ---------------------------------------------------------------------------------------------
// 4. Range visits under churn
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

/// The size of a churn run.
#[derive(Clone, Copy, Debug)]
struct ChurnPlan {
    keys: usize,
    long_keys: usize,
    writers: usize,
    visitors: usize,
    cycles: usize,
    phase_ops: usize,
    /// Operations each visitor makes at least, even if the writers are done.
    min_visits: usize,
    seed: u64,
}

struct ChurnRun<'a> {
    map: &'a Map<u64>,
    u: &'a Universe,
    plan: ChurnPlan,
    /// Set (after the `remove` returned) for each removed `GoneEarly`/`GoneLate` key.
    gone: Vec<AtomicBool>,
    /// Set once every `GoneEarly` key is removed.
    ready: AtomicBool,
    writers_done: AtomicUsize,
    /// The nearest stable key at or after / at or before each index.
    next_stable: Vec<Option<usize>>,
    prev_stable: Vec<Option<usize>>,
}

impl ChurnRun<'_> {
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

fn churn_writer(run: &ChurnRun<'_>, w: usize) {
    let _done = Done(&run.writers_done);
    let (map, u, plan) = (run.map, run.u, run.plan);
    let n = u.len();
    let who = format!("churn writer {w} (seed {})", plan.seed);
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
    let late_every = total / (late.len() + 1);
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

fn churn_visitor(run: &ChurnRun<'_>, r: usize) -> usize {
    let (map, u, plan) = (run.map, run.u, run.plan);
    let n = u.len();
    let who = format!("visitor {r} (seed {})", plan.seed);
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
                let what = format!(
                    "{}({}, {})",
                    if forward {
                        "visit_range"
                    } else {
                        "visit_range_rev"
                    },
                    show_bound(s),
                    show_bound(e)
                );
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
                let what = format!(
                    "{}({})",
                    if lower {
                        "lower_bound_with"
                    } else {
                        "upper_bound_with"
                    },
                    show_bound(b)
                );
                match got {
                    None => assert!(
                        nearest.is_none(),
                        "{who}: {what} found nothing, but the stable {} is there",
                        u.show(nearest.unwrap_or_default())
                    ),
                    Some((Err(k), _)) => panic!("{who}: {what} found {}, never inserted", K(&k)),
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
                let got = map.get(&u.keys[st]);
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

fn range_visits_under_churn(plan: ChurnPlan) {
    let u = Universe::new(plan.keys, plan.long_keys, plan.seed);
    let n = u.len();
    let map = ctrie::<u64>(growth_config());
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
        gone: (0..n).map(|_| AtomicBool::new(false)).collect(),
        ready: AtomicBool::new(false),
        writers_done: AtomicUsize::new(0),
        next_stable,
        prev_stable,
    };
    let ctx = format!("{plan:?}");
    // Every key but half the churn keys.
    for (idx, key) in u.keys.iter().enumerate() {
        if role(idx) != Role::Churn || idx % 2 == 0 {
            assert_eq!(map.insert(key, run.setup_value(idx)), Ok(None), "{ctx}");
        }
    }
    audit(&map, &format!("{ctx}: before the run"));
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
                K(k)
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
    audit(&map, &format!("{ctx}: after the run"));
}

#[test]
fn range_visits_under_churn_keep_stable_keys_and_skip_removed_ones() {
    range_visits_under_churn(ChurnPlan {
        keys: 1600,
        long_keys: 6,
        writers: 2,
        visitors: 2,
        cycles: 4,
        phase_ops: 80_000,
        min_visits: 500,
        seed: 0xC4A2_0001,
    });
}

#[test]
fn range_visits_under_churn_4_writers() {
    range_visits_under_churn(ChurnPlan {
        keys: 1600,
        long_keys: 6,
        writers: 4,
        visitors: 2,
        cycles: 4,
        phase_ops: 40_000,
        min_visits: 500,
        seed: 0xC4A2_0002,
    });
}

// ---------------------------------------------------------------------------------------------
// 5. Values are cloned on the way out and dropped exactly once
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

/// A value with an id, recording its drop; a clone gets a new id and keeps its `origin`.
struct Counted {
    id: usize,
    origin: usize,
    ledger: Arc<Ledger>,
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

    /// Works another map (pinning and retiring, which drives epoch-based reclamation) until
    /// every value created so far is dropped, then checks none was dropped twice.
    fn assert_all_dropped_eventually(&self, ctx: &str) {
        const ROUNDS: u64 = 5_000;
        let scratch = Map::<u64>::new();
        for round in 0..ROUNDS {
            if (0..self.created()).all(|id| self.drops_of(id) > 0) {
                self.assert_no_double_drop(ctx);
                return;
            }
            for i in 0..64u64 {
                let _ = scratch.insert(&i.to_be_bytes(), round);
            }
            // Back off, so that a thread of another test pinned and descheduled on a busy
            // machine gets to unpin (not a timing assertion: only the round count bounds this).
            if round < 100 {
                thread::yield_now();
            } else {
                thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let never: Vec<usize> = (0..self.created())
            .filter(|&id| self.drops_of(id) == 0)
            .collect();
        panic!(
            "{ctx}: {} of {} values were never dropped, even after {} operations on another map \
             drove reclamation (first ids {:?})",
            never.len(),
            self.created(),
            ROUNDS * 64,
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

impl Debug for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counted#{} (from #{})", self.id, self.origin)
    }
}

/// Checks a value `insert` or `remove` returned against the id the key held.
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

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_single_thread() {
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("growth", growth_config),
    ] {
        let ledger = Ledger::new(1 << 16);
        let u = Universe::new(600, 4, 0xD209);
        let n = u.len();
        let map: Map<Counted> = ctrie(cfg());
        let mut held: Vec<Option<usize>> = vec![None; n];
        let mut clones = 0usize;
        let mut rng = TestRng::new(0xD209);
        for step in 0..6000 {
            let idx = rng.index(n);
            let key = &u.keys[idx][..];
            let ctx = format!("[{name}] step {step}, {}", u.show(idx));
            let fill = step % 2000 < 1200;
            match rng.below(10) {
                0..=4 if fill => {
                    let v = ledger.make();
                    let id = v.id;
                    let prev = map.insert(key, v).expect("insert");
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
                    let got = map.get(key);
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
        map.visit_range::<[u8], _>(.., |k, v| {
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
        let v = ledger.make();
        let id = v.id;
        let max = Map::<Counted>::MAX_KEY_LEN;
        let len = map.len();
        assert!(matches!(
            map.insert(&vec![7; max + 1], v),
            Err(Error::KeyTooLong { .. })
        ));
        assert_eq!(ledger.drops_of(id), 1, "[{name}] refused value");
        assert_eq!(map.len(), len);
        audit(&map, &format!("[{name}] before drop"));
        // Dropping the map drops every stored value right away.
        let live: Vec<usize> = held.iter().flatten().copied().collect();
        assert!(!live.is_empty());
        ledger.assert_dropped(&live, 0, &format!("[{name}] before dropping the map"));
        drop(map);
        ledger.assert_dropped(&live, 1, &format!("[{name}] right after dropping the map"));
        ledger.assert_no_double_drop(&format!("[{name}] after dropping the map"));
        ledger.assert_all_dropped_eventually(&format!("[{name}] retired values"));
    }
}

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_concurrently() {
    const WRITERS: usize = 2;
    const READERS: usize = 2;
    let ledger = Ledger::new(1 << 20);
    let u = Universe::new(800, 2, 0xD210);
    let n = u.len();
    let map: Map<Counted> = ctrie(growth_config());
    let writers_done = AtomicUsize::new(0);
    let (held, clones): (Vec<Vec<Option<usize>>>, Vec<usize>) = thread::scope(|s| {
        let (map, u, ledger, writers_done) = (&map, &u, &ledger, &writers_done);
        let ws: Vec<_> = (0..WRITERS)
            .map(|w| {
                s.spawn(move || {
                    let _done = Done(writers_done);
                    let mut held: Vec<Option<usize>> = vec![None; n];
                    let mut clones = 0usize;
                    let mut rng = TestRng::new(0xD210 + w as u64);
                    let mine: Vec<usize> = (0..n).filter(|i| i % WRITERS == w).collect();
                    for step in 0..80_000 {
                        let idx = *rng.pick(&mine);
                        let key = &u.keys[idx][..];
                        let ctx = format!("writer {w}, step {step}, {}", u.show(idx));
                        let fill = step % 20_000 < 10_000;
                        if rng.chance(if fill { 0.85 } else { 0.15 }) {
                            let v = ledger.make();
                            let id = v.id;
                            let prev = map.insert(key, v).expect("insert");
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
                    let mut rng = TestRng::new(0xD2100 + r as u64);
                    let mut clones = 0usize;
                    let alive = |what: &str, v: &Counted| {
                        assert!(
                            v.id == v.origin && ledger.drops_of(v.id) == 0,
                            "reader {r}: {what} reached {v:?}, dropped {} times, which is not \
                             a stored original",
                            ledger.drops_of(v.id)
                        );
                    };
                    let mut reads = 0;
                    while writers_done.load(Acquire) < WRITERS || reads < 1000 {
                        reads += 1;
                        let key = &rng.pick(&u.keys)[..];
                        match rng.below(4) {
                            0 => {
                                if let Some(c) = map.get(key) {
                                    clones += 1;
                                    assert!(c.id != c.origin, "reader {r}: get did not clone");
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
                                map.visit_range::<[u8], _>(
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
    ledger.assert_no_double_drop("after the run");
    assert_eq!(
        ledger.clones.load(Relaxed),
        clones.iter().sum::<usize>(),
        "the map cloned values other than the ones it returned"
    );
    let mut live = Vec::new();
    for idx in 0..n {
        let want = held[idx % WRITERS][idx];
        let got = map.get_with(&u.keys[idx], |v| v.id);
        assert_eq!(got, want, "after the run: value of {}", u.show(idx));
        live.extend(want);
    }
    assert_eq!(map.len(), live.len());
    assert!(!live.is_empty());
    audit(&map, "after the concurrent run");
    ledger.assert_dropped(&live, 0, "values stored after the run");
    drop(map);
    ledger.assert_dropped(&live, 1, "values stored, right after dropping the map");
    ledger.assert_all_dropped_eventually("after the concurrent run");
}

// ---------------------------------------------------------------------------------------------
// 6. Edge cases through the concurrent API
// ---------------------------------------------------------------------------------------------

type Oracle = std::collections::BTreeMap<Vec<u8>, u64>;

/// Compares `map` with `oracle`: full visits both ways, `len`, and `get`, `lower_bound_with`
/// and `upper_bound_with` with every bound kind around each probe.
fn check_against(map: &Map<u64>, oracle: &Oracle, probes: &[Vec<u8>], ctx: &str) {
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert!(entries(map) == want, "{ctx}: visit_range(..) differs");
    let mut rev = entries_rev(map);
    rev.reverse();
    assert!(rev == want, "{ctx}: visit_range_rev(..) differs");
    assert_eq!(map.len(), oracle.len(), "{ctx}: len()");
    assert_eq!(map.is_empty(), oracle.is_empty(), "{ctx}: is_empty()");
    let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
    for p in probes {
        assert_eq!(map.get(p), oracle.get(p).copied(), "{ctx}: get({})", K(p));
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

/// Every permutation of `0..n` (Heap's algorithm).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut c = vec![0usize; n];
    let mut out = vec![a.clone()];
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                a.swap(0, i);
            } else {
                a.swap(c[i], i);
            }
            out.push(a.clone());
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    out
}

#[test]
fn empty_key_alone_and_with_others() {
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("growth", growth_config),
    ] {
        let map: Map<u64> = ctrie(cfg());
        let e: &[u8] = b"";
        assert_eq!(map.get(e), None, "[{name}]");
        assert_eq!(map.insert(e, 7), Ok(None), "[{name}]");
        assert_eq!(map.get(e), Some(7), "[{name}]");
        assert_eq!(map.len(), 1, "[{name}]");
        let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
        let empty = Some((Vec::new(), 7));
        assert_eq!(map.lower_bound_with(Bound::Unbounded, own), empty);
        assert_eq!(map.lower_bound_with(Bound::Included(e), own), empty);
        assert_eq!(map.lower_bound_with(Bound::Excluded(e), own), None);
        assert_eq!(map.upper_bound_with(Bound::Unbounded, own), empty);
        assert_eq!(map.upper_bound_with(Bound::Included(e), own), empty);
        assert_eq!(map.upper_bound_with(Bound::Excluded(e), own), None);
        assert_eq!(map.upper_bound_with(Bound::Included(b"\x00"), own), empty);
        let count = |r: (Bound<&[u8]>, Bound<&[u8]>)| {
            let mut n = 0;
            map.visit_range::<[u8], _>(r, |_, _| {
                n += 1;
                ControlFlow::Continue(())
            });
            n
        };
        assert_eq!(count((Bound::Included(e), Bound::Excluded(e))), 0);
        assert_eq!(count((Bound::Unbounded, Bound::Included(e))), 1);
        assert_eq!(count((Bound::Excluded(e), Bound::Unbounded)), 0);
        assert_eq!(map.insert(e, 8), Ok(Some(7)));
        assert_eq!(map.insert(b"\x00", 9), Ok(None));
        assert_eq!(map.insert(b"\xff", 10), Ok(None));
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
        audit(&map, &format!("[{name}] empty key and two"));
        assert_eq!(map.remove(e), Some(8));
        oracle.remove(&[][..]);
        assert_eq!(map.remove(e), None);
        check_against(
            &map,
            &oracle,
            &probes,
            &format!("[{name}] empty key removed"),
        );
        assert_eq!(map.remove(b"\x00"), Some(9));
        assert_eq!(map.remove(b"\xff"), Some(10));
        assert!(map.is_empty());
        audit(&map, &format!("[{name}] emptied"));
    }
}

#[test]
fn prefix_keys_in_every_insertion_order() {
    let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"abc", b"ab\x00", b"ab\xff"];
    let mut probes: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    for k in keys {
        probes.extend(neighbours(k));
    }
    probes.extend([b"b".to_vec(), b"aa".to_vec(), b"abcd".to_vec(), vec![0xff]]);
    let perms = permutations(keys.len());
    assert_eq!(perms.len(), 720);
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("symbol_bits=1", || Config {
            symbol_bits: 1,
            ..growth_config()
        }),
    ] {
        for (p, perm) in perms.iter().enumerate() {
            let ctx = |what: &str| format!("[{name}] prefix keys, order {perm:?}: {what}");
            let map: Map<u64> = ctrie(cfg());
            let mut oracle = Oracle::new();
            for &i in perm {
                assert_eq!(
                    map.insert(keys[i], i as u64),
                    Ok(None),
                    "{}",
                    ctx(&format!("insert({})", K(keys[i])))
                );
                oracle.insert(keys[i].to_vec(), i as u64);
                for k in keys {
                    assert_eq!(
                        map.get(k),
                        oracle.get(k).copied(),
                        "{}",
                        ctx(&format!("get({}) after inserting {}", K(k), K(keys[i])))
                    );
                }
            }
            // Seeks on every 8th order (they hardly depend on the order); visits on all.
            let seek_probes: &[Vec<u8>] = if p % 8 == 0 { &probes } else { &[] };
            check_against(&map, &oracle, seek_probes, &ctx("full"));
            audit(&map, &ctx("full"));
            // Remove in another order, comparing after each removal.
            for &i in perm.iter().rev().cycle().skip(p % 6).take(keys.len()) {
                assert_eq!(
                    map.remove(keys[i]),
                    Some(i as u64),
                    "{}",
                    ctx(&format!("remove({})", K(keys[i])))
                );
                oracle.remove(keys[i]);
                check_against(
                    &map,
                    &oracle,
                    &[],
                    &ctx(&format!("after removing {}", K(keys[i]))),
                );
            }
            assert!(map.is_empty(), "{}", ctx("emptied"));
            audit(&map, &ctx("emptied"));
        }
    }
}

#[test]
fn max_key_len_is_accepted_and_one_more_refused() {
    let max = Map::<u64>::MAX_KEY_LEN;
    assert_eq!(max, (1 << 20) - 1, "MAX_KEY_LEN is documented as 1 MiB - 1");
    let longest = vec![0xabu8; max];
    let too_long = vec![0xabu8; max + 1];

    // Refused on an empty map, which stays empty.
    let map = Map::<u64>::new();
    assert_eq!(
        map.insert(&too_long, 1),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    assert!(map.is_empty() && entries(&map).is_empty());
    audit(&map, "empty map after a refused key");

    // Accepted next to other keys, including its own prefixes.
    assert_eq!(map.insert(b"a", 1), Ok(None));
    assert_eq!(map.insert(&[0xab; 10], 2), Ok(None));
    assert_eq!(map.insert(&longest, 3), Ok(None));
    assert_eq!(map.insert(b"\xff", 4), Ok(None));
    assert_eq!(map.get(&longest), Some(3));
    assert_eq!(map.insert(&longest, 5), Ok(Some(3)));
    let before = entries(&map);
    assert_eq!(before.len(), 4);
    assert!(
        before[2].0 == longest && before[2].1 == 5,
        "the longest key is third in order"
    );

    // One byte more is refused with the lengths, and the map is unchanged.
    assert_eq!(
        map.insert(&too_long, 6),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    let mut longer = longest.clone();
    longer.extend_from_slice(b"\x00\x00");
    assert_eq!(
        map.insert(&longer, 7),
        Err(Error::KeyTooLong { len: max + 2, max })
    );
    assert!(entries(&map) == before, "a refused insert changed the map");
    assert_eq!(map.len(), 4);
    // Reads with a too-long key answer normally.
    assert_eq!(map.get(&too_long), None);
    assert_eq!(map.remove(&too_long), None);
    assert_eq!(
        map.lower_bound_with(Bound::Included(&too_long), |_, v| *v),
        Some(4)
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(&too_long), |_, v| *v),
        Some(5)
    );
    let mut n = 0;
    map.visit_range::<[u8], _>(
        (
            Bound::Excluded(&longest[..]),
            Bound::Included(&too_long[..]),
        ),
        |_, _| {
            n += 1;
            ControlFlow::Continue(())
        },
    );
    assert_eq!(n, 0);
    audit(&map, "after refused keys");

    // A second key of MAX_KEY_LEN sharing all but its last byte with the first.
    let mut sibling = longest.clone();
    sibling[max - 1] = 0xac;
    assert_eq!(map.insert(&sibling, 8), Ok(None));
    assert_eq!(map.get(&sibling), Some(8));
    assert_eq!(map.get(&longest), Some(5));
    assert_eq!(
        map.upper_bound_with(Bound::Excluded(&sibling), |_, v| *v),
        Some(5)
    );
    audit(&map, "two keys of MAX_KEY_LEN");
    assert_eq!(map.remove(&longest), Some(5));
    assert_eq!(map.remove(&sibling), Some(8));
    assert_eq!(map.len(), 3);
    audit(&map, "after removing the longest keys");
}

#[test]
fn with_config_rejects_each_out_of_range_field() {
    type Edit = fn(&mut Config);
    let bad: [(&str, Edit); 11] = [
        ("symbol_bits = 0", |c| c.symbol_bits = 0),
        ("symbol_bits = 6", |c| c.symbol_bits = 6),
        ("prefetch_depth = 0", |c| c.prefetch_depth = 0),
        ("prefetch_depth = 17", |c| c.prefetch_depth = 17),
        ("max_load_factor = 0.49", |c| c.max_load_factor = 0.49),
        ("max_load_factor = 0.951", |c| c.max_load_factor = 0.951),
        ("max_load_factor = NaN", |c| c.max_load_factor = f64::NAN),
        ("max_load_factor = inf", |c| {
            c.max_load_factor = f64::INFINITY
        }),
        ("max_load_factor = 1", |c| c.max_load_factor = 1.0),
        ("initial_buckets = 0", |c| c.initial_buckets = 0),
        ("all at once", |c| {
            c.symbol_bits = 0;
            c.prefetch_depth = 0;
            c.max_load_factor = 0.0;
            c.initial_buckets = 0;
        }),
    ];
    for (what, edit) in bad {
        let mut c = Config::default();
        edit(&mut c);
        match Map::<u64>::with_config(c) {
            Err(Error::InvalidConfig { .. }) => {}
            Err(e) => panic!("with_config({what}) failed with the wrong error: {e:?}"),
            Ok(_) => panic!("with_config({what}) was accepted"),
        }
    }
    // The ends of every range are accepted and give a working map reporting its config.
    let good: [(&str, Edit); 6] = [
        ("symbol_bits = 1", |c| c.symbol_bits = 1),
        ("prefetch_depth = 1", |c| c.prefetch_depth = 1),
        ("prefetch_depth = 16", |c| c.prefetch_depth = 16),
        ("max_load_factor = 0.5", |c| c.max_load_factor = 0.5),
        ("max_load_factor = 0.95", |c| c.max_load_factor = 0.95),
        ("initial_buckets = 1", |c| c.initial_buckets = 1),
    ];
    for (what, edit) in good {
        let mut c = Config::default();
        edit(&mut c);
        let (bits, depth, load) = (c.symbol_bits, c.prefetch_depth, c.max_load_factor);
        let map = match Map::<u64>::with_config(c) {
            Ok(m) => m,
            Err(e) => panic!("with_config({what}) was refused: {e}"),
        };
        assert_eq!(map.config().symbol_bits, bits, "{what}");
        assert_eq!(map.config().prefetch_depth, depth, "{what}");
        assert_eq!(map.config().max_load_factor, load, "{what}");
        for i in 0..300u64 {
            assert_eq!(map.insert(&i.to_be_bytes(), i), Ok(None), "{what}");
        }
        for i in 0..300u64 {
            assert_eq!(map.get(&i.to_be_bytes()), Some(i), "{what}");
        }
        assert_eq!(map.len(), 300);
        audit(&map, what);
    }
    let map = Map::<u64>::default();
    assert!(map.is_empty());
    assert_eq!(map.config().symbol_bits, Config::default().symbol_bits);
}

// ---------------------------------------------------------------------------------------------
// 7. Quick stress for CI
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_small_quick() {
    for (sharing, seed) in [(Sharing::Partitioned, 71), (Sharing::Shared, 72)] {
        stress(Plan {
            sharing,
            writers: 2,
            readers: 2,
            keys: 300,
            long_keys: 2,
            cycles: 2,
            phase_ops: 600,
            min_reads: 500,
            seed,
        });
    }
    range_visits_under_churn(ChurnPlan {
        keys: 300,
        long_keys: 2,
        writers: 2,
        visitors: 2,
        cycles: 2,
        phase_ops: 1500,
        min_visits: 300,
        seed: 73,
    });
}

/// `clear` empties the map, drops every value once (after reclamation), returns memory, and
/// leaves a map that works; readers running during a clear see either state, never a mix that
/// loses a key written after it.
#[test]
fn clear_empties_and_the_map_stays_usable() {
    let map = ConcurrentCuckooTrie::<u64>::with_config(Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    })
    .unwrap();
    let empty = map.memory_usage();
    for i in 0..20_000u64 {
        map.insert(&i.to_be_bytes(), i).unwrap();
    }
    assert!(map.memory_usage() > empty * 4);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..200 {
                if let Some(v) = map.get(&7u64.to_be_bytes()) {
                    assert_eq!(v, 7);
                }
                let mut last: Option<Vec<u8>> = None;
                map.visit_range::<[u8], _>(.., |k, _| {
                    assert!(last.as_deref().is_none_or(|l| l < k), "visit out of order");
                    last = Some(k.to_vec());
                    ControlFlow::Continue(())
                });
            }
        });
        map.clear().unwrap();
    });
    assert_eq!(map.len(), 0);
    assert!(map.is_empty());
    assert_eq!(map.get(&7u64.to_be_bytes()), None);
    map.check_invariants().unwrap();
    for i in 0..100u64 {
        assert_eq!(map.insert(&i.to_be_bytes(), i + 1).unwrap(), None);
    }
    assert_eq!(map.len(), 100);
    assert_eq!(map.get(&42u64.to_be_bytes()), Some(43));
    map.check_invariants().unwrap();
}

/// After every key is removed, the table shrinks back near an empty map's (the records go
/// through epoch reclamation, so only the mapped table is compared).
#[test]
fn table_shrinks_back_after_removing_every_key() {
    let map = ConcurrentCuckooTrie::<u64>::new();
    let empty = map.mapped_bytes();
    for i in 0..50_000u64 {
        map.insert(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes(), i)
            .unwrap();
    }
    let full = map.mapped_bytes();
    assert!(full > 16 * empty, "the table grew: {empty} -> {full} bytes");
    for i in 0..50_000u64 {
        assert_eq!(
            map.remove(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()),
            Some(i)
        );
    }
    assert!(map.is_empty());
    let after = map.mapped_bytes();
    assert!(
        after <= 2 * empty,
        "table after removing everything: {after} bytes, empty map: {empty}"
    );
    map.check_invariants().unwrap();
}
