//! Multi-threaded tests of [`mlpdex::skiplist::SkipList`]
//! (`cargo test -p mlpdex --release --test concurrent_skiplist`).
//!
//! The generic harnesses of [`mlpdex::testing::concurrent`], which every concurrent map of the
//! crate runs, get the skip list as a [`Subject`] (a list made with a given prefetch depth `K`,
//! audited with `check_invariants()`); the harnesses' range visits go through `visit_range`,
//! which uses the prefetching iterator, so those run at `K = 0` (the plain iterator), `3` (the
//! default) and `6` (the deepest). The rest of the file drives the guard-based [`Iterator`]
//! API directly. What is covered:
//!
//! 1. **Multi-threaded stress** ([`concurrent::stress`], standard plans, default config: 2
//!    writers + 2 readers and 4 writers + 2 readers, partitioned and shared keys; and 6
//!    writers + 2 readers on shared keys with 15 % of the writes, 8 threads on 2 cores):
//!    linearizability of every read and of the values `insert`/`remove` return, visit shape,
//!    exact or last-writer final contents, `check_invariants()` after the run and after draining.
//! 2. **Range visits under churn** ([`concurrent::range_visits_under_churn`], 2 and 4 writers,
//!    each at `K = 0`, `3` and `6`, and 6 writers with a quarter of the writes at `K = 3`):
//!    keys present throughout are reported by every visit and seek covering them; keys
//!    removed before a visit starts never are.
//! 3. **Values are dropped exactly once** ([`concurrent::values_dropped_once`] at `K = 0`, `3`,
//!    `6`; [`concurrent::values_dropped_once_concurrently`] at `K = 3` and `6`): clones on the
//!    way out only, nothing dropped early or twice, epoch reclamation eventually frees every
//!    replaced or removed value; and ([`concurrent::replaced_values_dropped_while_key_stays`])
//!    a key updated eleven times has every replaced value freed, its first one included,
//!    while the key stays stored.
//!
//!    3a. **Linearizable histories** ([`concurrent::linearizable_histories`]): 3,000 short
//!    runs each of 4 and of 8 threads on 3 keys, every history checked.
//!
//!    3b. **Many threads on a few keys** ([`concurrent::same_key_stress`]): 8 threads on 1
//!    and on 2 keys, 6 threads on 16 keys, 4 threads on 400 keys (at `K = 0`), each value
//!    inserted unique: every value comes out exactly once (returned by `insert` or `remove`,
//!    or stored at the end), none is invented, and `len()` read after every operation never
//!    exceeds the number of keys.
//! 4. **Edge cases** ([`concurrent::empty_key_alone_and_with_others`],
//!    [`concurrent::prefix_keys_in_every_insertion_order`]) at `K = 0`, `3` and `6`.
//! 5. `stress_small_quick`: the quick plans (stress partitioned and shared, churn at `K = 0`,
//!    `3`, `6`), well under a second, for CI.
//! 6. **Iterators under churn**, through `SkipList::range`/`iter` and a guard held for the
//!    whole scan, for `K` in {0, 1, 3, 6}: a universe of about 4000 keys of mixed shapes (the
//!    empty key, prefix chains with 0x00/0xFF extensions, 0x00/0xFF strings, multi-KiB keys with
//!    a prefix and an extension of each, random bytes, shared prefixes, 8-byte integers) is
//!    split by position in key order into *stable* keys (inserted before the start, never
//!    touched), *doomed* keys (inserted before the start; half removed before the readers
//!    start, the others removed by the writers during the run, each published through a flag
//!    after its `remove` returned) and *churn* keys interleaved with them, which 2 writers
//!    (each owning half, 600,000 operations each) insert, update and remove. While a reader
//!    is scanning, a third of the writers' operations target the keys just ahead of (or just
//!    behind) where its iterator is, so removals and re-insertions happen around the
//!    iterator's prefetch queue; late doomed keys are removed right ahead of readers too.
//!    Every value is a [`Stamp`] naming its key, writer and operation. 2 readers run forward
//!    scans over random ranges (every bound kind, bounds on and between keys, a quarter of
//!    them the whole map, some through `iter`), some cut short with `take(n)`, holding the
//!    iterator across thousands of steps and yielding the CPU while holding it; backward
//!    scans (`rev`, re-seeking per step); and scans alternating `next` and `next_back` at
//!    random until both ends meet. Checked per scan: keys strictly increasing
//!    (decreasing backward; the two ends never cross), inside the range, known keys only, every
//!    value written for the key it is seen under by the key's owner (or before the run) and not
//!    by an operation that had not started, per-key counters never going back for a reader,
//!    every stable key in the part of the range the scan covered yielded, no doomed key
//!    removed before the scan began yielded. After joining: `check_invariants()`, the contents
//!    (through `iter`, `get` and `len`) exactly what the writers' own logs imply, and removing
//!    every key returns its value and leaves an empty list (`len() == 0`, nothing iterated).
//! 7. **Removals around a prefetching iterator**, single-threaded: lists of 50,000 keys
//!    (`K = 3` over the whole list and over a bounded range, and `K = 1` and `6`); an iterator
//!    is advanced part way, then half the keys are removed (every other key everywhere, the 64
//!    keys right ahead, and whole stretches further ahead), some removed keys and some new keys
//!    ahead are inserted, and the iteration continues in bursts, each followed by removing the
//!    next few hundred keys ahead and every third key of the next few thousand and re-inserting
//!    some. The prefetch queue then points at unlinked nodes, whose starts the walk never
//!    reaches, so phases are forced by the countdown. Checked: keys strictly increasing and
//!    inside the range, every yielded key present (with its current value) when yielded, no key
//!    removed while ahead of the iterator (and not re-inserted) yielded, every key present
//!    throughout (there when the iterator was made, never removed) yielded; then
//!    `check_invariants()` and the contents against a `BTreeMap`.
//!
//! The iterator checks of 6 and 7 were tried against iterators made to skip one entry, to
//! repeat one, and to yield one entry with the previous entry's value: each is caught.
//!
//! No test asserts on timing: the multi-threaded tests are sized by operation counts, and
//! readers run until every writer is done (and a minimum number of scans). The file takes
//! about 30 to 45 s on 2 cores, with `--release` or in the test profile.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::ops::{Bound, Range};
use std::panic;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::thread;

use mlpdex::epoch::pin;
use mlpdex::key::{Escaped, after_start, before_end, show_bound};
use mlpdex::skiplist::{Config, SkipList};
use mlpdex::testing::TestRng;
use mlpdex::testing::concurrent::{
    self, ChurnPlan, Done, HistoryPlan, Plan, SameKeyPlan, Sharing, Stamp, Subject, as_slice,
    join_all,
};

// ---------------------------------------------------------------------------------------------
// Lists, subjects and small helpers
// ---------------------------------------------------------------------------------------------

/// The default prefetch depth.
const DEFAULT_K: usize = 3;

fn list<V: Send + Sync + 'static>(depth: usize) -> SkipList<V> {
    match SkipList::with_config(Config {
        prefetch_depth: depth,
    }) {
        Ok(l) => l,
        Err(e) => panic!("with_config refused prefetch_depth {depth}: {e}"),
    }
}

/// The skip list as the generic harnesses see it: lists of prefetch depth `depth`, audited
/// with `check_invariants()`.
fn subject<V: Clone + Send + Sync + 'static>(depth: usize) -> Subject<SkipList<V>> {
    Subject::new(format!("skip list, K = {depth}"), move || list(depth))
        .with_audit(SkipList::check_invariants)
}

/// The indices of the sorted `keys` inside `(s, e)` (empty when the range is).
fn inside(keys: &[Vec<u8>], s: Bound<&[u8]>, e: Bound<&[u8]>) -> Range<usize> {
    let start = keys.partition_point(|k| !after_start(k, s));
    let end = keys.partition_point(|k| before_end(k, e));
    start..end.max(start)
}

// ---------------------------------------------------------------------------------------------
// 1. Multi-threaded stress (generic harness)
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_partitioned_2_writers_2_readers() {
    concurrent::stress(
        &subject(DEFAULT_K),
        Plan::standard(Sharing::Partitioned, 2, 2, 0x5EED_5101),
    );
}

#[test]
fn stress_partitioned_4_writers_2_readers() {
    concurrent::stress(
        &subject(DEFAULT_K),
        Plan::standard(Sharing::Partitioned, 4, 2, 0x5EED_5102),
    );
}

#[test]
fn stress_shared_keys_2_writers_2_readers() {
    concurrent::stress(
        &subject(DEFAULT_K),
        Plan::standard(Sharing::Shared, 2, 2, 0x5EED_5103),
    );
}

#[test]
fn stress_shared_keys_4_writers_2_readers() {
    concurrent::stress(
        &subject(DEFAULT_K),
        Plan::standard(Sharing::Shared, 4, 2, 0x5EED_5104),
    );
}

/// 8 threads on 2 cores: 6 writers on shared keys (15 % of the standard plan's writes)
/// and 2 readers.
#[test]
fn stress_shared_keys_6_writers_2_readers() {
    concurrent::stress(
        &subject(DEFAULT_K),
        Plan {
            phase_ops: 30_000 / 6,
            ..Plan::standard(Sharing::Shared, 6, 2, 0x5EED_5106)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Range visits under churn (generic harness, through the prefetching iterator)
// ---------------------------------------------------------------------------------------------

#[test]
fn range_visits_under_churn_2_writers_k0() {
    concurrent::range_visits_under_churn(&subject(0), ChurnPlan::standard(2, 0xC4A2_5200));
}

#[test]
fn range_visits_under_churn_2_writers_k3() {
    concurrent::range_visits_under_churn(&subject(3), ChurnPlan::standard(2, 0xC4A2_5203));
}

#[test]
fn range_visits_under_churn_2_writers_k6() {
    concurrent::range_visits_under_churn(&subject(6), ChurnPlan::standard(2, 0xC4A2_5206));
}

#[test]
fn range_visits_under_churn_4_writers_k0() {
    concurrent::range_visits_under_churn(&subject(0), ChurnPlan::standard(4, 0xC4A2_5400));
}

#[test]
fn range_visits_under_churn_4_writers_k3() {
    concurrent::range_visits_under_churn(&subject(3), ChurnPlan::standard(4, 0xC4A2_5403));
}

#[test]
fn range_visits_under_churn_4_writers_k6() {
    concurrent::range_visits_under_churn(&subject(6), ChurnPlan::standard(4, 0xC4A2_5406));
}

/// 8 threads on 2 cores: 6 writers (a quarter of the standard plan's writes) and 2 visitors.
#[test]
fn range_visits_under_churn_6_writers_k3() {
    concurrent::range_visits_under_churn(
        &subject(3),
        ChurnPlan {
            phase_ops: 40_000 / 6,
            ..ChurnPlan::standard(6, 0xC4A2_5603)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Values are cloned on the way out and dropped exactly once
// ---------------------------------------------------------------------------------------------

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_single_thread() {
    for (depth, seed) in [(0, 0xD5_3000), (3, 0xD5_3003), (6, 0xD5_3006)] {
        concurrent::values_dropped_once(&subject(depth), seed);
    }
}

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_concurrently_k3() {
    concurrent::values_dropped_once_concurrently(&subject(3), 0xD5_4003);
}

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_concurrently_k6() {
    concurrent::values_dropped_once_concurrently(&subject(6), 0xD5_4006);
}

#[test]
fn replaced_values_dropped_while_the_key_stays() {
    concurrent::replaced_values_dropped_while_key_stays(&subject(DEFAULT_K));
}

// ---------------------------------------------------------------------------------------------
// 3b. Many threads on a few keys (8 threads on 2 cores)
// ---------------------------------------------------------------------------------------------

#[test]
fn linearizable_histories_4_and_8_threads() {
    concurrent::linearizable_histories(&subject(DEFAULT_K), HistoryPlan::standard(4, 0x11_5004));
    concurrent::linearizable_histories(&subject(DEFAULT_K), HistoryPlan::standard(8, 0x11_5008));
}

#[test]
fn same_key_stress_1_key_8_threads() {
    concurrent::same_key_stress(&subject(DEFAULT_K), SameKeyPlan::standard(1, 8, 0x5A_5001));
}

#[test]
fn same_key_stress_2_keys_8_threads() {
    concurrent::same_key_stress(&subject(DEFAULT_K), SameKeyPlan::standard(2, 8, 0x5A_5002));
}

#[test]
fn same_key_stress_16_keys_6_threads() {
    concurrent::same_key_stress(&subject(DEFAULT_K), SameKeyPlan::standard(16, 6, 0x5A_5016));
}

#[test]
fn same_key_stress_400_keys_4_threads() {
    concurrent::same_key_stress(
        &subject(0),
        SameKeyPlan {
            ops: 120_000,
            ..SameKeyPlan::standard(400, 4, 0x5A_5400)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Edge cases through the concurrent API
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_key_alone_and_with_others() {
    for depth in [0, 3, 6] {
        concurrent::empty_key_alone_and_with_others(&subject(depth));
    }
}

#[test]
fn prefix_keys_in_every_insertion_order() {
    for depth in [0, 3, 6] {
        concurrent::prefix_keys_in_every_insertion_order(&subject(depth));
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Quick stress for CI
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_small_quick() {
    for (sharing, seed) in [(Sharing::Partitioned, 0x5101), (Sharing::Shared, 0x5102)] {
        concurrent::stress(&subject(DEFAULT_K), Plan::quick(sharing, seed));
    }
    for (depth, seed) in [(0, 0x5200), (3, 0x5203), (6, 0x5206)] {
        concurrent::range_visits_under_churn(&subject(depth), ChurnPlan::quick(seed));
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Iterators under churn, through the guard-based Iterator API
// ---------------------------------------------------------------------------------------------

/// Keys in the universe of an iterator run.
const UNIVERSE: usize = 4000;
/// Multi-KiB keys in it (each also with a half-length prefix and a one-byte extension).
const LONG_KEYS: usize = 5;
const WRITERS: usize = 2;
const READERS: usize = 2;
/// Operations of each writer (besides removing its late doomed keys).
const WRITER_OPS: u64 = 600_000;
/// Scans each reader makes at least, even if the writers are done.
const MIN_SCANS: usize = 40;
/// A reader's published position when it is not in a forward scan.
const IDLE: usize = usize::MAX;

/// What a key of the universe does during an iterator run, by its index in key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Inserted before the run, never touched.
    Stable,
    /// Inserted before the run, removed before the readers start.
    GoneEarly,
    /// Inserted before the run, removed by its owner during the run.
    GoneLate,
    /// Inserted, updated and removed by its owner during the run.
    Churn,
}

fn role(idx: usize) -> Role {
    match idx % 10 {
        0 | 4 | 7 => Role::Stable,
        2 => Role::GoneEarly,
        9 => Role::GoneLate,
        _ => Role::Churn,
    }
}

/// The writer that writes the churn or late doomed key `idx`.
fn owner(idx: usize) -> usize {
    ((idx as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % WRITERS
}

/// The value a key holds before the run (written by the pseudo-writer `WRITERS`).
fn setup_value(idx: usize) -> u64 {
    Stamp {
        counter: 0,
        idx,
        writer: WRITERS,
    }
    .encode()
}

/// The sorted key universe of an iterator run (see [`concurrent::mixed_keys`]).
fn iter_universe(seed: u64) -> Vec<Vec<u8>> {
    concurrent::mixed_keys(UNIVERSE, LONG_KEYS, seed)
}

/// State shared by the threads of an iterator run.
struct IterRun<'a> {
    list: &'a SkipList<u64>,
    keys: &'a [Vec<u8>],
    depth: usize,
    seed: u64,
    /// The value each key held when the threads started.
    initial: Vec<Option<u64>>,
    /// Set (after the `remove` returned) for each removed doomed key.
    gone: Vec<AtomicBool>,
    /// Per writer: the counter of the operation it has started last (stored before the
    /// operation, so a value stamped with a higher counter was never written).
    started: Vec<AtomicU64>,
    /// Per reader: the index of the last key its current forward scan yielded, or [`IDLE`].
    pos: Vec<AtomicUsize>,
    writers_done: AtomicUsize,
}

impl IterRun<'_> {
    fn show(&self, idx: usize) -> String {
        format!("key #{idx} {} ({:?})", Escaped(&self.keys[idx]), role(idx))
    }
}

/// What a reader knows while it runs.
struct Reader {
    r: usize,
    /// Per key, the highest counter this reader has seen in its value.
    seen: Vec<u64>,
    /// Per key, whether it was removed for good before the current scan began.
    gone: Vec<bool>,
    /// The doomed keys.
    doomed: Vec<usize>,
}

/// A scan, for failure messages.
struct Scan<'a> {
    depth: usize,
    seed: u64,
    reader: usize,
    number: usize,
    kind: &'static str,
    s: Bound<&'a [u8]>,
    e: Bound<&'a [u8]>,
    limit: usize,
}

impl fmt::Display for Scan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[skip list K = {}, seed {:#x}] reader {} scan #{} ({} over {} .. {}",
            self.depth,
            self.seed,
            self.reader,
            self.number,
            self.kind,
            show_bound(self.s),
            show_bound(self.e)
        )?;
        if self.limit != usize::MAX {
            write!(f, ", take({})", self.limit)?;
        }
        write!(f, ")")
    }
}

impl IterRun<'_> {
    /// Checks one entry a scan yielded (key known, inside the range, value written for it by
    /// its owner and not from the future, not going back, not removed before the scan began);
    /// returns the key's index.
    fn check_entry(&self, rd: &mut Reader, scan: &Scan<'_>, k: &[u8], v: u64) -> usize {
        let Ok(idx) = self.keys.binary_search_by(|x| x.as_slice().cmp(k)) else {
            panic!("{scan}: yielded {}, never inserted", Escaped(k));
        };
        assert!(
            after_start(k, scan.s) && before_end(k, scan.e),
            "{scan}: yielded {}, outside the range",
            self.show(idx)
        );
        let st = Stamp::decode(v);
        assert!(
            st.idx == idx,
            "{scan}: yielded {} with the value {st} (raw {v:#x}), written for another key",
            self.show(idx)
        );
        match role(idx) {
            Role::Stable | Role::GoneEarly | Role::GoneLate => {
                assert!(
                    !rd.gone[idx],
                    "{scan}: yielded {}, removed before the scan began",
                    self.show(idx)
                );
                assert!(
                    v == setup_value(idx),
                    "{scan}: yielded {} with the value {st}, but it was never rewritten",
                    self.show(idx)
                );
            }
            Role::Churn => {
                if st.writer == WRITERS {
                    assert!(
                        st.counter == 0 && self.initial[idx] == Some(v),
                        "{scan}: yielded {} with the value {st}, never written",
                        self.show(idx)
                    );
                } else {
                    assert!(
                        st.writer == owner(idx),
                        "{scan}: yielded {} with the value {st}, but only writer {} writes it",
                        self.show(idx),
                        owner(idx)
                    );
                    let started = self.started[st.writer].load(Acquire);
                    assert!(
                        st.counter <= started,
                        "{scan}: yielded {} with the value {st}, but writer {} has only \
                         started operation #{started}",
                        self.show(idx),
                        st.writer
                    );
                }
            }
        }
        assert!(
            st.counter >= rd.seen[idx],
            "{scan}: yielded {} with the value {st}, older than operation #{} seen before",
            self.show(idx),
            rd.seen[idx]
        );
        rd.seen[idx] = st.counter;
        idx
    }

    /// Checks that every stable key of `covered` is among the sorted indices `got`.
    fn check_stable_keys(&self, scan: &Scan<'_>, covered: Range<usize>, got: &[usize]) {
        for idx in covered.filter(|&i| role(i) == Role::Stable) {
            assert!(
                got.binary_search(&idx).is_ok(),
                "{scan}: skipped the stable {} ({} entries yielded)",
                self.show(idx),
                got.len()
            );
        }
    }
}

/// Where a scan's iterator comes from; the identity here. (Checking the checks: an adapter
/// here that skips, repeats or alters an entry must make the run fail.)
fn wrap<'g, I>(it: I) -> I
where
    I: Iterator<Item = (&'g [u8], &'g u64)>,
{
    it
}

/// A forward scan, holding the iterator while it yields the CPU every `pause` steps.
fn forward_scan<'g>(
    run: &IterRun<'_>,
    rd: &mut Reader,
    scan: &Scan<'_>,
    it: impl Iterator<Item = (&'g [u8], &'g u64)>,
    pause: usize,
) {
    let mut got: Vec<usize> = Vec::new();
    let mut last: Option<&[u8]> = None;
    for (k, v) in wrap(it).take(scan.limit) {
        let idx = run.check_entry(rd, scan, k, *v);
        if let Some(l) = last {
            assert!(
                l < k,
                "{scan}: yielded {} after {}: not strictly increasing",
                run.show(idx),
                Escaped(l)
            );
        }
        last = Some(k);
        got.push(idx);
        run.pos[rd.r].store(idx, Relaxed);
        if got.len().is_multiple_of(pause) {
            thread::yield_now();
        }
    }
    run.pos[rd.r].store(IDLE, Relaxed);
    let mut covered = inside(run.keys, scan.s, scan.e);
    if got.len() == scan.limit
        && let Some(&l) = got.last()
    {
        covered.end = l + 1;
    }
    run.check_stable_keys(scan, covered, &got);
}

/// A backward scan (`next_back`, through `rev`).
fn backward_scan<'g>(
    run: &IterRun<'_>,
    rd: &mut Reader,
    scan: &Scan<'_>,
    it: impl Iterator<Item = (&'g [u8], &'g u64)>,
) {
    let mut got: Vec<usize> = Vec::new();
    let mut last: Option<&[u8]> = None;
    for (k, v) in wrap(it).take(scan.limit) {
        let idx = run.check_entry(rd, scan, k, *v);
        if let Some(l) = last {
            assert!(
                l > k,
                "{scan}: yielded {} after {}: not strictly decreasing",
                run.show(idx),
                Escaped(l)
            );
        }
        last = Some(k);
        got.push(idx);
    }
    let mut covered = inside(run.keys, scan.s, scan.e);
    if got.len() == scan.limit
        && let Some(&l) = got.last()
    {
        covered.start = l;
    }
    got.reverse();
    run.check_stable_keys(scan, covered, &got);
}

/// A scan alternating `next` and `next_back` at random until both ends are done.
fn alternating_scan<'g>(
    run: &IterRun<'_>,
    rd: &mut Reader,
    scan: &Scan<'_>,
    mut it: impl DoubleEndedIterator<Item = (&'g [u8], &'g u64)>,
    rng: &mut TestRng,
) {
    let mut front: Vec<usize> = Vec::new();
    let mut back: Vec<usize> = Vec::new();
    let (mut front_last, mut back_last): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let (mut front_done, mut back_done) = (false, false);
    while !(front_done && back_done) {
        let from_front = if front_done {
            false
        } else if back_done {
            true
        } else {
            rng.chance(0.5)
        };
        if from_front {
            let Some((k, v)) = it.next() else {
                front_done = true;
                continue;
            };
            let idx = run.check_entry(rd, scan, k, *v);
            assert!(
                front_last.is_none_or(|l| l < k),
                "{scan}: next yielded {} after {}: not strictly increasing",
                run.show(idx),
                Escaped(front_last.unwrap_or_default())
            );
            assert!(
                back_last.is_none_or(|b| k < b),
                "{scan}: next yielded {}, not before {} which next_back yielded",
                run.show(idx),
                Escaped(back_last.unwrap_or_default())
            );
            front_last = Some(k);
            front.push(idx);
        } else {
            let Some((k, v)) = it.next_back() else {
                back_done = true;
                continue;
            };
            let idx = run.check_entry(rd, scan, k, *v);
            assert!(
                back_last.is_none_or(|l| l > k),
                "{scan}: next_back yielded {} after {}: not strictly decreasing",
                run.show(idx),
                Escaped(back_last.unwrap_or_default())
            );
            assert!(
                front_last.is_none_or(|f| k > f),
                "{scan}: next_back yielded {}, not after {} which next yielded",
                run.show(idx),
                Escaped(front_last.unwrap_or_default())
            );
            back_last = Some(k);
            back.push(idx);
        }
    }
    assert!(
        it.next().is_none() && it.next_back().is_none(),
        "{scan}: the iterator yielded again after both ends returned None"
    );
    back.reverse();
    front.extend(back);
    run.check_stable_keys(scan, inside(run.keys, scan.s, scan.e), &front);
}

/// A bound for a scan near `keys[idx]`: on it, just after it or just before it.
fn bound_near(rng: &mut TestRng, keys: &[Vec<u8>], idx: usize) -> Bound<Vec<u8>> {
    let mut k = keys[idx].clone();
    match rng.below(4) {
        0 | 1 => {}
        2 => k.push(0x00),
        _ => {
            if k.pop().is_none() {
                k.push(0x00);
            }
        }
    }
    if rng.chance(0.5) {
        Bound::Included(k)
    } else {
        Bound::Excluded(k)
    }
}

fn iter_reader(run: &IterRun<'_>, r: usize) -> usize {
    let n = run.keys.len();
    let mut rng = TestRng::new(run.seed ^ (r as u64 + 101).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let doomed: Vec<usize> = (0..n)
        .filter(|&i| matches!(role(i), Role::GoneEarly | Role::GoneLate))
        .collect();
    let mut rd = Reader {
        r,
        seen: vec![0; n],
        gone: vec![false; n],
        doomed,
    };
    let mut scans = 0usize;
    while run.writers_done.load(Acquire) < WRITERS || scans < MIN_SCANS {
        scans += 1;
        // The doomed keys removed before this scan begins.
        for &i in &rd.doomed {
            rd.gone[i] = run.gone[i].load(Acquire);
        }
        let whole = rng.chance(0.25);
        let (s, e) = if whole {
            (Bound::Unbounded, Bound::Unbounded)
        } else {
            let (mut a, mut b) = (rng.index(n), rng.index(n));
            if a > b && rng.chance(0.9) {
                (a, b) = (b, a);
            }
            let s = if rng.chance(0.1) {
                Bound::Unbounded
            } else {
                bound_near(&mut rng, run.keys, a)
            };
            let e = if rng.chance(0.1) {
                Bound::Unbounded
            } else {
                bound_near(&mut rng, run.keys, b)
            };
            (s, e)
        };
        let (s, e) = (as_slice(&s), as_slice(&e));
        let guard = pin();
        let kind = rng.below(100);
        let mut scan = Scan {
            depth: run.depth,
            seed: run.seed,
            reader: r,
            number: scans,
            kind: "",
            s,
            e,
            limit: usize::MAX,
        };
        match kind {
            0..=59 => {
                scan.kind = "forward";
                if rng.chance(0.5) {
                    let most = if rng.chance(0.5) { 40 } else { 1500 };
                    scan.limit = 1 + rng.index(most);
                }
                let pause = *rng.pick(&[4, 32, 256, usize::MAX]);
                if whole && rng.chance(0.5) {
                    scan.kind = "forward (iter)";
                    forward_scan(run, &mut rd, &scan, run.list.iter(&guard), pause);
                } else {
                    let it = run.list.range((s, e), &guard);
                    forward_scan(run, &mut rd, &scan, it, pause);
                }
            }
            60..=84 => {
                scan.kind = "backward";
                if rng.chance(0.6) {
                    scan.limit = 1 + rng.index(300);
                }
                let it = run.list.range((s, e), &guard).rev();
                backward_scan(run, &mut rd, &scan, it);
            }
            _ => {
                scan.kind = "alternating next/next_back";
                let it = run.list.range((s, e), &guard);
                alternating_scan(run, &mut rd, &scan, it, &mut rng);
            }
        }
    }
    scans
}

/// A writer: inserts, updates and removes its churn keys, a third of the time right around a
/// reader's position, and removes its late doomed keys during the run; returns the values it
/// left (for every key; only its own are meaningful).
fn iter_writer(run: &IterRun<'_>, w: usize) -> Vec<Option<u64>> {
    let _done = Done(&run.writers_done);
    let (list, keys) = (run.list, run.keys);
    let n = keys.len();
    let who = format!(
        "[skip list K = {}, seed {:#x}] writer {w}",
        run.depth, run.seed
    );
    let mut model = run.initial.clone();
    let own: Vec<usize> = (0..n)
        .filter(|&i| role(i) == Role::Churn && owner(i) == w)
        .collect();
    // The first own churn key at or after each index.
    let mut next_own = vec![None; n + 1];
    for i in (0..n).rev() {
        next_own[i] = if role(i) == Role::Churn && owner(i) == w {
            Some(i)
        } else {
            next_own[i + 1]
        };
    }
    let mut late: BTreeSet<usize> = (0..n)
        .filter(|&i| role(i) == Role::GoneLate && owner(i) == w)
        .collect();
    let late_every = (WRITER_OPS / (late.len() as u64 + 1)).max(1);
    let remove_gone = |idx: usize| {
        let got = list.remove(&keys[idx]);
        assert!(
            got == Some(setup_value(idx)),
            "{who}: remove of {} returned {:?}",
            run.show(idx),
            got.map(Stamp::decode)
        );
        run.gone[idx].store(true, Release);
    };
    let mut rng = TestRng::new(run.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for op in 1..=WRITER_OPS {
        let near = run.pos[rng.index(READERS)].load(Relaxed);
        if !late.is_empty() && op.is_multiple_of(late_every) {
            // The late doomed key right ahead of a reader, if there is one.
            let idx = (near != IDLE)
                .then(|| late.range(near + 1..).next().copied())
                .flatten()
                .or_else(|| late.range(rng.index(n)..).next().copied())
                .or_else(|| late.first().copied())
                .unwrap_or_default();
            late.remove(&idx);
            remove_gone(idx);
        }
        let targeted = near != IDLE && rng.chance(0.33);
        let idx = if targeted {
            let at = if rng.chance(0.75) {
                near + 1 + rng.index(128)
            } else {
                near.saturating_sub(1 + rng.index(64))
            };
            next_own[at.min(n)].unwrap_or_else(|| *rng.pick(&own))
        } else {
            *rng.pick(&own)
        };
        run.started[w].store(op, Release);
        let key = &keys[idx][..];
        let cur = model[idx];
        let remove = cur.is_some() && rng.chance(if targeted { 0.8 } else { 0.45 });
        if remove {
            let got = list.remove(key);
            assert!(
                got == cur,
                "{who}: remove of {} returned {:?}, but it held {:?}",
                run.show(idx),
                got.map(Stamp::decode),
                cur.map(Stamp::decode)
            );
            model[idx] = None;
        } else {
            let v = Stamp {
                counter: op,
                idx,
                writer: w,
            }
            .encode();
            let got = match list.insert(key, v) {
                Ok(got) => got,
                Err(e) => panic!("{who}: insert of {} failed: {e}", run.show(idx)),
            };
            assert!(
                got == cur,
                "{who}: insert of {} returned {:?}, but it held {:?}",
                run.show(idx),
                got.map(Stamp::decode),
                cur.map(Stamp::decode)
            );
            model[idx] = Some(v);
        }
    }
    for idx in std::mem::take(&mut late) {
        remove_gone(idx);
    }
    model
}

/// One iterator run at prefetch depth `depth`; see the file's documentation, item 6.
fn iterators_under_churn(depth: usize, seed: u64) {
    let keys = iter_universe(seed);
    let n = keys.len();
    let list = list::<u64>(depth);
    let mut rng = TestRng::new(seed ^ 0x1234_5678);
    let mut initial = vec![None; n];
    for (idx, k) in keys.iter().enumerate() {
        if role(idx) != Role::Churn || rng.chance(0.5) {
            list.insert(k, setup_value(idx)).unwrap();
            initial[idx] = Some(setup_value(idx));
        }
    }
    let gone: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    for idx in (0..n).filter(|&i| role(i) == Role::GoneEarly) {
        assert_eq!(list.remove(&keys[idx]), Some(setup_value(idx)));
        initial[idx] = None;
        gone[idx].store(true, Relaxed);
    }
    list.check_invariants();
    let run = IterRun {
        list: &list,
        keys: &keys,
        depth,
        seed,
        initial,
        gone,
        started: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        pos: (0..READERS).map(|_| AtomicUsize::new(IDLE)).collect(),
        writers_done: AtomicUsize::new(0),
    };
    let (models, scans) = thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let run = &run;
                s.spawn(move || iter_reader(run, r))
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let run = &run;
                s.spawn(move || iter_writer(run, w))
            })
            .collect();
        let models = join_all(writers);
        let scans = join_all(readers);
        (models, scans)
    });
    let ctx = format!("[skip list K = {depth}, seed {seed:#x}] after the run");
    assert!(
        scans.iter().all(|&s| s >= MIN_SCANS),
        "{ctx}: scans {scans:?}"
    );
    list.check_invariants();

    // The contents are what the writers' logs imply.
    let expected: Vec<(usize, u64)> = (0..n)
        .filter_map(|i| {
            let v = match role(i) {
                Role::Stable => Some(setup_value(i)),
                Role::GoneEarly | Role::GoneLate => None,
                Role::Churn => models[owner(i)][i],
            };
            v.map(|v| (i, v))
        })
        .collect();
    assert!(
        (0..n)
            .filter(|&i| matches!(role(i), Role::GoneEarly | Role::GoneLate))
            .all(|i| run.gone[i].load(Relaxed)),
        "{ctx}: a doomed key was not removed"
    );
    {
        let guard = pin();
        let got: Vec<(&[u8], u64)> = list.iter(&guard).map(|(k, v)| (k, *v)).collect();
        for (j, &(idx, v)) in expected.iter().enumerate() {
            let Some(&(k, gv)) = got.get(j) else {
                panic!(
                    "{ctx}: iter ended after {j} entries, before {}",
                    run.show(idx)
                );
            };
            assert!(
                k == &keys[idx][..] && gv == v,
                "{ctx}: iter entry #{j} is {} = {}, expected {} = {}",
                Escaped(k),
                Stamp::decode(gv),
                run.show(idx),
                Stamp::decode(v)
            );
        }
        assert_eq!(
            got.len(),
            expected.len(),
            "{ctx}: iter yielded extra entries"
        );
        let mut e = expected.iter().peekable();
        for (idx, k) in keys.iter().enumerate() {
            let want = e.next_if(|&&(i, _)| i == idx).map(|&(_, v)| v);
            assert_eq!(
                list.get(k, &guard).copied(),
                want,
                "{ctx}: get of {}",
                run.show(idx)
            );
        }
    }
    assert_eq!(list.len(), expected.len(), "{ctx}: len()");

    // Draining returns every value and leaves an empty list.
    for &(idx, v) in &expected {
        assert_eq!(
            list.remove(&keys[idx]),
            Some(v),
            "{ctx}: draining {}",
            run.show(idx)
        );
    }
    assert_eq!(list.len(), 0, "{ctx}: len() after draining");
    assert!(list.is_empty());
    let guard = pin();
    assert!(
        list.iter(&guard).next().is_none() && list.iter(&guard).next_back().is_none(),
        "{ctx}: the drained list still iterates"
    );
    list.check_invariants();
}

#[test]
fn iterators_under_churn_k0() {
    iterators_under_churn(0, 0x17E2_0000);
}

#[test]
fn iterators_under_churn_k1() {
    iterators_under_churn(1, 0x17E2_0001);
}

#[test]
fn iterators_under_churn_k3() {
    iterators_under_churn(3, 0x17E2_0003);
}

#[test]
fn iterators_under_churn_k6() {
    iterators_under_churn(6, 0x17E2_0006);
}

// ---------------------------------------------------------------------------------------------
// 7. Removals around a prefetching iterator, single-threaded
// ---------------------------------------------------------------------------------------------

/// Keys of the single-threaded test: `N` 4-byte big-endian keys `4 i`, so that keys `4 i + 2`
/// fall between them.
const N: u32 = 50_000;

fn key(i: u32) -> [u8; 4] {
    (4 * i).to_be_bytes()
}

fn between(i: u32) -> [u8; 4] {
    (4 * i + 2).to_be_bytes()
}

/// The list, its oracle and what one iterator has yielded so far.
struct Walk<'a> {
    list: &'a SkipList<u64>,
    ctx: String,
    model: BTreeMap<[u8; 4], u64>,
    /// Keys removed at least once.
    ever_removed: HashSet<[u8; 4]>,
    /// Keys created (inserted while absent) after the iterator was made.
    created_late: HashSet<[u8; 4]>,
    /// Whether the iterator has been made.
    started: bool,
    /// Keys removed while the iterator had not reached them, and not inserted again since.
    removed_ahead: HashSet<[u8; 4]>,
    yielded: Vec<[u8; 4]>,
    s: Bound<[u8; 4]>,
    e: Bound<[u8; 4]>,
    done: bool,
}

impl Walk<'_> {
    fn is_ahead(&self, k: &[u8; 4]) -> bool {
        self.yielded.last().is_none_or(|l| k > l)
    }

    fn remove(&mut self, k: [u8; 4]) {
        let want = self.model.remove(&k);
        assert_eq!(
            self.list.remove(&k),
            want,
            "{}: remove of {}",
            self.ctx,
            Escaped(&k)
        );
        if want.is_some() {
            self.ever_removed.insert(k);
            if self.is_ahead(&k) {
                self.removed_ahead.insert(k);
            }
        }
    }

    fn insert(&mut self, k: [u8; 4], v: u64) {
        let want = self.model.insert(k, v);
        assert_eq!(
            self.list.insert(&k, v),
            Ok(want),
            "{}: insert of {}",
            self.ctx,
            Escaped(&k)
        );
        self.removed_ahead.remove(&k);
        if want.is_none() && self.started {
            self.created_late.insert(k);
        }
    }

    /// Up to `steps` more entries of `it`, each checked.
    fn advance<'g>(&mut self, it: &mut impl Iterator<Item = (&'g [u8], &'g u64)>, steps: usize) {
        for _ in 0..steps {
            let Some((k, &v)) = it.next() else {
                self.done = true;
                return;
            };
            let ctx = &self.ctx;
            let Ok(k) = <[u8; 4]>::try_from(k) else {
                panic!("{ctx}: yielded {}, never inserted", Escaped(k));
            };
            assert!(
                after_start(&k, self.s.as_ref().map(|b| &b[..]))
                    && before_end(&k, self.e.as_ref().map(|b| &b[..])),
                "{ctx}: yielded {}, outside the range",
                Escaped(&k)
            );
            if let Some(l) = self.yielded.last() {
                assert!(
                    l < &k,
                    "{ctx}: yielded {} after {}: not strictly increasing",
                    Escaped(&k),
                    Escaped(l)
                );
            }
            assert!(
                !self.removed_ahead.contains(&k),
                "{ctx}: yielded {}, removed before the iterator reached it",
                Escaped(&k)
            );
            assert_eq!(
                self.model.get(&k),
                Some(&v),
                "{ctx}: yielded {} with the value {v}",
                Escaped(&k)
            );
            self.yielded.push(k);
        }
    }

    /// The `count` present keys right after the iterator's position.
    fn ahead(&self, count: usize) -> Vec<[u8; 4]> {
        let from = match self.yielded.last() {
            Some(l) => Bound::Excluded(*l),
            None => Bound::Unbounded,
        };
        self.model
            .range((from, Bound::Unbounded))
            .take(count)
            .map(|(k, _)| *k)
            .collect()
    }

    /// The index `i` of the last key `4 i` (or `4 i + 2`) yielded.
    fn position(&self) -> u32 {
        self.yielded
            .last()
            .map_or(0, |k| u32::from_be_bytes(*k) / 4)
    }
}

fn removals_around_a_prefetching_iterator(depth: usize, bounded: bool) {
    let list = list::<u64>(depth);
    let (s, e) = if bounded {
        (Bound::Included(key(150)), Bound::Excluded(key(N - 150)))
    } else {
        (Bound::Unbounded, Bound::Unbounded)
    };
    let mut walk = Walk {
        list: &list,
        ctx: format!("[skip list K = {depth}, range {s:?} .. {e:?}] removals around an iterator"),
        model: BTreeMap::new(),
        ever_removed: HashSet::new(),
        created_late: HashSet::new(),
        started: false,
        removed_ahead: HashSet::new(),
        yielded: Vec::new(),
        s,
        e,
        done: false,
    };
    for i in 0..N {
        walk.insert(key(i), u64::from(i));
    }
    let guard = pin();
    let range = (s.as_ref().map(|b| &b[..]), e.as_ref().map(|b| &b[..]));
    let mut it = list.range(range, &guard);
    walk.started = true;
    walk.advance(&mut it, 10_000);
    assert!(!walk.done, "{}: ended early", walk.ctx);

    // Half the list goes: every other key everywhere, the 64 keys right ahead, and whole
    // stretches further ahead; then some keys ahead come back and new ones appear.
    let p = walk.position();
    for i in (1..N).step_by(2) {
        walk.remove(key(i));
    }
    for k in walk.ahead(64) {
        walk.remove(k);
    }
    for i in (p + 1_000..p + 6_000).chain(p + 20_000..p + 21_000) {
        walk.remove(key(i));
    }
    for i in (p + 1_000..p + 6_000).step_by(7) {
        walk.insert(key(i), u64::from(i) + 1_000_000);
    }
    for i in (p + 2_000..p + 2_500).chain(p + 30_000..p + 30_100) {
        walk.insert(between(i), u64::from(i) + 2_000_000);
    }
    for i in (p + 30_001..p + 30_100).step_by(2) {
        walk.insert(key(i), u64::from(i) + 3_000_000);
    }

    // The rest in bursts, each followed by removals right ahead and further on, and some
    // re-insertions ahead.
    let mut round = 0u64;
    while !walk.done {
        walk.advance(&mut it, 700);
        round += 1;
        for k in walk.ahead(200) {
            walk.remove(k);
        }
        let further = walk.ahead(3_000);
        for k in further.iter().step_by(3) {
            walk.remove(*k);
        }
        for k in further.iter().step_by(9) {
            let i = u32::from_be_bytes(*k) / 4;
            walk.insert(key(i), u64::from(i) + 4_000_000 + round);
            walk.insert(between(i), u64::from(i) + 5_000_000 + round);
        }
    }
    assert!(
        it.next().is_none(),
        "{}: the iterator yielded after None",
        walk.ctx
    );

    // Every key present throughout (there before the iterator was made, never removed) was
    // yielded. (Keys created during the walk may be missed: one created right ahead of the
    // iterator can land behind the removed node it is about to step onto.)
    let mut missed = walk
        .model
        .keys()
        .filter(|k| {
            after_start(&k[..], range.0)
                && before_end(&k[..], range.1)
                && !walk.ever_removed.contains(*k)
                && !walk.created_late.contains(*k)
        })
        .filter(|k| walk.yielded.binary_search(k).is_err());
    if let Some(k) = missed.next() {
        panic!(
            "{}: present throughout, {} was not yielded ({} entries yielded)",
            walk.ctx,
            Escaped(k),
            walk.yielded.len()
        );
    }
    assert!(
        walk.ever_removed.len() > N as usize / 2,
        "{}: removed only {} keys",
        walk.ctx,
        walk.ever_removed.len()
    );
    drop(guard);
    list.check_invariants();
    let guard = pin();
    let got: Vec<([u8; 4], u64)> = list
        .iter(&guard)
        .map(|(k, v)| (<[u8; 4]>::try_from(k).expect("4-byte keys only"), *v))
        .collect();
    let want: Vec<([u8; 4], u64)> = walk.model.iter().map(|(k, v)| (*k, *v)).collect();
    assert!(got == want, "{}: contents differ afterwards", walk.ctx);
    assert_eq!(list.len(), want.len());
}

#[test]
fn removals_around_a_prefetching_iterator_k3() {
    removals_around_a_prefetching_iterator(3, false);
    removals_around_a_prefetching_iterator(3, true);
}

#[test]
fn removals_around_a_prefetching_iterator_k1_and_k6() {
    removals_around_a_prefetching_iterator(1, false);
    removals_around_a_prefetching_iterator(6, true);
}
