//! `linearizable_histories`: many short runs of a few threads on a handful of keys, every
//! operation's invocation and response stamped on one global clock, each run's history then
//! checked for linearizability.
//!
//! Point operations (`get_with`, `insert`, `remove`) are checked exactly: a map is one register
//! per key, and linearizability is local (Herlihy and Wing, 1990), so a history is
//! linearizable if and only if each key's sub-history is. Each key's is searched for a legal
//! order respecting real time, depth first, as Wing and Gong's checker does, remembering
//! (set of operations placed, value) states already explored, as Lowe's refinement does.
//!
//! Range operations (`visit_range`, `visit_range_rev` with a limit, `lower_bound_with`,
//! `upper_bound_with`) are not atomic in the maps of this crate (a visit is a sequence of
//! seeks), so they are checked per key: the keys reported come in strict order, inside the
//! bounds, no more than the limit; and for every key of the run inside the part of the range
//! the visit covered, what the visit said of it (its value, or its absence) must be a state
//! the key could have had at some moment between the visit's invocation and its response,
//! given the writes around it. That is a state produced by a write (or the initial absence)
//! that may have taken effect before the visit ended, and that no other write completed
//! after it had surely replaced before the visit began.

use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::collections::HashSet;
use std::sync::Barrier;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use std::thread;

use super::helpers::join_all;
use super::subject::Subject;
use crate::ConcurrentOrderedMap;
use crate::key::{Escaped, after_start, before_end};
use crate::testing::TestRng;

/// The keys a run draws from, sorted: the empty key, keys that are prefixes of each other,
/// 0x00 and 0xFF bytes.
const KEYS: [&[u8]; 8] = [
    b"", b"\x00", b"a", b"a\x00", b"ab", b"ab\xff", b"b", b"\xff",
];

/// The same shapes in 8 bytes, for maps of 8-byte keys ([`Subject::with_key_width`]): all
/// zeros, zeros ending in 1, a shared first byte, a shared two-byte prefix with 0xFF after
/// it, all 0xFF bytes.
const KEYS8: [&[u8]; 8] = [
    b"\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\x00\x00\x00\x00\x00\x00\x00\x01",
    b"a\x00\x00\x00\x00\x00\x00\x00",
    b"a\x00\x00\x00\x00\x00\x00\x01",
    b"ab\x00\x00\x00\x00\x00\x00",
    b"ab\xff\xff\xff\xff\xff\xff",
    b"b\x00\x00\x00\x00\x00\x00\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
];

std::thread_local! {
    /// The key set of the check running on this thread: [`KEYS`] or [`KEYS8`].
    static SET: core::cell::Cell<&'static [&'static [u8]; 8]> = const { core::cell::Cell::new(&KEYS) };
}

/// Key `k` of the set in use.
fn key(k: usize) -> &'static [u8] {
    SET.with(|s| s.get()[k])
}

/// The size of a [`linearizable_histories`] check.
///
/// ```
/// use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
/// use mlpdex::testing::concurrent::{HistoryPlan, Subject, linearizable_histories};
///
/// let subject = Subject::new("cuckoo trie", ConcurrentCuckooTrie::<u64>::new);
/// linearizable_histories(&subject, HistoryPlan { runs: 20, ..HistoryPlan::quick(4, 7) });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HistoryPlan {
    /// Threads of each run, 1 to 16; more than the cores, so that operations are preempted
    /// half-way and overlap for long.
    pub threads: usize,
    /// Keys of each run, 1 to 8, from the empty key, prefix keys, 0x00 and 0xFF bytes.
    pub keys: usize,
    /// Operations of each thread in each run; `threads * ops` is at most 64 (a key's
    /// operations are searched as a bit set).
    pub ops: usize,
    /// Runs, each on a new map.
    pub runs: usize,
    /// Seeds every run's keys and choices.
    pub seed: u64,
}

impl HistoryPlan {
    /// 3,000 runs of `threads` threads, 48 operations a run over 3 keys (a few seconds on 2
    /// cores in the test profile for a structure of this crate).
    pub fn standard(threads: usize, seed: u64) -> HistoryPlan {
        HistoryPlan {
            threads,
            keys: 3,
            ops: 48 / threads.max(1),
            runs: 3_000,
            seed,
        }
    }

    /// 100 runs of the standard shape.
    pub fn quick(threads: usize, seed: u64) -> HistoryPlan {
        HistoryPlan {
            runs: 100,
            ..HistoryPlan::standard(threads, seed)
        }
    }
}

/// What an operation did, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `insert(key, value)` returned `old`.
    Insert {
        key: usize,
        value: u64,
        old: Option<u64>,
    },
    /// `remove(key)` returned `old`.
    Remove { key: usize, old: Option<u64> },
    /// `get_with(key)` saw `value`.
    Get { key: usize, value: Option<u64> },
    /// A visit of `lo..hi` (key indices as bounds), forward or backward, stopped after `limit`
    /// entries; `seen` are the entries it reported, in the order reported. Seeks are visits
    /// of limit 1.
    Range {
        lo: Bound<usize>,
        hi: Bound<usize>,
        rev: bool,
        limit: usize,
        seen: Vec<(usize, u64)>,
    },
}

impl Op {
    /// The key a point operation is on.
    fn point_key(&self) -> Option<usize> {
        match *self {
            Op::Insert { key, .. } | Op::Remove { key, .. } | Op::Get { key, .. } => Some(key),
            Op::Range { .. } => None,
        }
    }
}

/// One operation of a history: which thread made it, when it was invoked and when it
/// returned (ticks of one clock shared by every thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) thread: usize,
    pub(crate) call: u64,
    pub(crate) ret: u64,
    pub(crate) op: Op,
}

/// Why a history is not linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation(pub(crate) String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a history whose operations are on keys `0..keys` (indices into `KEYS`).
pub(crate) fn check(events: &[Event], keys: usize) -> Result<(), Violation> {
    for key in 0..keys {
        let point: Vec<&Event> = events
            .iter()
            .filter(|e| e.op.point_key() == Some(key))
            .collect();
        check_key(&point)?;
    }
    for e in events {
        if matches!(e.op, Op::Range { .. }) {
            check_range(e, events, keys)?;
        }
    }
    Ok(())
}

/// The value a key holds after a point operation, and whether the operation's answer agrees
/// with the value it held before.
fn apply(op: &Op, state: Option<u64>) -> Option<Option<u64>> {
    match *op {
        Op::Insert { value, old, .. } => (old == state).then_some(Some(value)),
        Op::Remove { old, .. } => (old == state).then_some(None),
        Op::Get { value, .. } => (value == state).then_some(state),
        Op::Range { .. } => None,
    }
}

/// Searches a legal sequential order of one key's point operations (the key absent at the
/// start) that respects real time: an operation may come next only if it was invoked before
/// every operation not yet placed had returned.
fn check_key(ops: &[&Event]) -> Result<(), Violation> {
    assert!(
        ops.len() <= 64,
        "a key's operations are searched as a 64-bit set"
    );
    let all: u64 = if ops.len() == 64 {
        u64::MAX
    } else {
        (1 << ops.len()) - 1
    };
    let mut seen: HashSet<(u64, Option<u64>)> = HashSet::new();
    // Depth-first, with an explicit stack of (placed set, value).
    let mut stack = vec![(0u64, None::<u64>)];
    while let Some((placed, state)) = stack.pop() {
        if placed == all {
            return Ok(());
        }
        if !seen.insert((placed, state)) {
            continue;
        }
        let first_ret = (0..ops.len())
            .filter(|&i| placed >> i & 1 == 0)
            .map(|i| ops[i].ret)
            .min()
            .unwrap_or(u64::MAX);
        for (i, e) in ops.iter().enumerate() {
            if placed >> i & 1 == 1 || e.call > first_ret {
                continue;
            }
            if let Some(next) = apply(&e.op, state) {
                stack.push((placed | 1 << i, next));
            }
        }
    }
    let mut lines: Vec<String> = ops.iter().map(|e| describe(e)).collect();
    lines.sort();
    Err(Violation(format!(
        "no legal order of these operations on one key respects real time:\n  {}",
        lines.join("\n  ")
    )))
}

/// Whether `key` could hold `what` at some moment between `call` and `ret`, given every
/// write to it in `events`.
fn could_hold(events: &[Event], key: usize, what: Option<u64>, call: u64, ret: u64) -> bool {
    let writes: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.op.point_key() == Some(key) && matches!(e.op, Op::Insert { .. } | Op::Remove { .. })
        })
        .collect();
    let made = |e: &Event| match e.op {
        Op::Insert { value, .. } => Some(value),
        _ => None,
    };
    // The writes that leave the key as `what`, as (invoked, returned); the initial absence
    // is a write done before time began.
    let mut sources: Vec<(u64, u64)> = writes
        .iter()
        .filter(|e| made(e) == what)
        .map(|e| (e.call, e.ret))
        .collect();
    if what.is_none() {
        sources.push((0, 0));
    }
    sources.iter().any(|&(s_call, s_ret)| {
        // It may take effect before the visit ends, and no write that surely followed it
        // surely finished before the visit began (one leaving the same state replaces it
        // with an equal one, which counts as a source of its own).
        s_call < ret
            && !writes
                .iter()
                .any(|w| made(w) != what && w.call > s_ret && w.ret < call)
    })
}

/// The per-key check of one visit (see the module's docs).
fn check_range(e: &Event, events: &[Event], keys: usize) -> Result<(), Violation> {
    let Op::Range {
        lo,
        hi,
        rev,
        limit,
        ref seen,
    } = e.op
    else {
        return Ok(());
    };
    let fail = |why: String| Err(Violation(format!("{}: {why}", describe(e))));
    let inside = |k: usize| after_start_idx(k, lo) && before_end_idx(k, hi);
    if seen.len() > limit {
        return fail(format!("reported {} entries, past its limit", seen.len()));
    }
    for w in seen.windows(2) {
        if (w[0].0 >= w[1].0) != rev || w[0].0 == w[1].0 {
            return fail("entries out of order or repeated".to_string());
        }
    }
    // The keys the visit covered: all of the range, or up to the last one reported when the
    // limit stopped it.
    let covered = |k: usize| {
        inside(k)
            && match (seen.len() == limit, seen.last()) {
                (true, Some(&(last, _))) => {
                    if rev {
                        k >= last
                    } else {
                        k <= last
                    }
                }
                _ => true,
            }
    };
    for &(k, v) in seen {
        if !inside(k) {
            return fail(format!("reported {:?}, outside the range", name(k)));
        }
        if !could_hold(events, k, Some(v), e.call, e.ret) {
            return fail(format!(
                "reported {:?} = {v:#x}, which it did not hold at any moment of the visit",
                name(k)
            ));
        }
    }
    for k in (0..keys).filter(|&k| covered(k)) {
        if seen.iter().all(|&(s, _)| s != k) && !could_hold(events, k, None, e.call, e.ret) {
            return fail(format!(
                "skipped {:?}, which was present throughout the visit",
                name(k)
            ));
        }
    }
    Ok(())
}

fn after_start_idx(k: usize, lo: Bound<usize>) -> bool {
    after_start(key(k), lo.map(key))
}

fn before_end_idx(k: usize, hi: Bound<usize>) -> bool {
    before_end(key(k), hi.map(key))
}

fn name(k: usize) -> String {
    format!("{}", Escaped(key(k)))
}

fn describe(e: &Event) -> String {
    let op = match &e.op {
        Op::Insert { key, value, old } => format!("insert({}, {value:#x}) -> {old:x?}", name(*key)),
        Op::Remove { key, old } => format!("remove({}) -> {old:x?}", name(*key)),
        Op::Get { key, value } => format!("get({}) -> {value:x?}", name(*key)),
        Op::Range {
            lo,
            hi,
            rev,
            limit,
            seen,
        } => {
            let b = |b: &Bound<usize>| match b {
                Bound::Included(i) => format!("[{}", name(*i)),
                Bound::Excluded(i) => format!("({}", name(*i)),
                Bound::Unbounded => "-".to_string(),
            };
            let seen: Vec<String> = seen
                .iter()
                .map(|(k, v)| format!("{}={v:#x}", name(*k)))
                .collect();
            format!(
                "visit{} {}..{} limit {limit} -> [{}]",
                if *rev { "_rev" } else { "" },
                b(lo),
                b(hi),
                seen.join(", ")
            )
        }
    };
    format!("t{} [{}, {}] {op}", e.thread, e.call, e.ret)
}

/// A random operation of thread `t` (its `n`-th), over the first `keys` keys of the run.
fn plan_op(rng: &mut TestRng, keys: &[usize], t: usize, n: usize) -> Op {
    let key = *rng.pick(keys);
    let bound = |rng: &mut TestRng| match rng.below(3) {
        0 => Bound::Included(*rng.pick(keys)),
        1 => Bound::Excluded(*rng.pick(keys)),
        _ => Bound::Unbounded,
    };
    match rng.below(20) {
        0..=6 => Op::Insert {
            key,
            // Unique in the run: the thread and its operation number.
            value: (t as u64) << 32 | n as u64,
            old: None,
        },
        7..=10 => Op::Remove { key, old: None },
        11..=15 => Op::Get { key, value: None },
        16 => Op::Range {
            lo: bound(rng),
            hi: Bound::Unbounded,
            rev: false,
            limit: 1,
            seen: Vec::new(),
        },
        17 => Op::Range {
            lo: Bound::Unbounded,
            hi: bound(rng),
            rev: true,
            limit: 1,
            seen: Vec::new(),
        },
        _ => Op::Range {
            lo: bound(rng),
            hi: bound(rng),
            rev: rng.chance(0.5),
            limit: 1 + rng.index(keys.len() + 1),
            seen: Vec::new(),
        },
    }
}

/// Runs `op` on `map`, filling in its answer. `lower_bound_with` and `upper_bound_with` are
/// the visits of limit 1 from an unbounded side; other visits go through `visit_range` and
/// `visit_range_rev`.
fn run_op<M: ConcurrentOrderedMap<u64>>(map: &M, op: &mut Op, index: &dyn Fn(&[u8]) -> usize) {
    let key_of = key;
    match op {
        Op::Insert { key, value, old } => {
            *old = map
                .insert(key_of(*key), *value)
                .unwrap_or_else(|e| panic!("insert({}) failed: {e}", name(*key)));
        }
        Op::Remove { key, old } => *old = map.remove(key_of(*key)),
        Op::Get { key, value } => *value = map.get_with(key_of(*key), |v| *v),
        Op::Range {
            lo,
            hi,
            rev,
            limit,
            seen,
        } => {
            let lo_b = lo.map(key_of);
            let hi_b = hi.map(key_of);
            let seek = *limit == 1
                && ((!*rev && *hi == Bound::Unbounded) || (*rev && *lo == Bound::Unbounded));
            if seek && !*rev {
                seen.extend(map.lower_bound_with(lo_b, |k, v| (index(k), *v)));
            } else if seek {
                seen.extend(map.upper_bound_with(hi_b, |k, v| (index(k), *v)));
            } else {
                let limit = *limit;
                let mut visit = |k: &[u8], v: &u64| {
                    seen.push((index(k), *v));
                    if seen.len() == limit {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                };
                let bounds = (lo_b, hi_b);
                if *rev {
                    map.visit_range_rev(bounds, &mut visit);
                } else {
                    map.visit_range(bounds, &mut visit);
                }
            }
        }
    }
}

/// Checks that `subject`'s maps are linearizable on `plan.runs` short histories: each run
/// makes a new map and starts `plan.threads` threads together (a barrier), each making
/// `plan.ops` random operations on `plan.keys` keys (inserts of values unique in the run,
/// removes, gets, seeks both ways and limited visits both ways with every bound kind); every
/// invocation and response is stamped on one shared clock. Each run's history is then checked
/// (see the module's docs), and the first violation panics with the whole history.
///
/// A key unknown to the run in any answer, or a failed insert, panics too. With the
/// environment variable `MLPDEX_HISTORY_STATS` set, it prints how many runs had operations
/// of different threads overlapping in time (the runs whose check exercised concurrency: on
/// 2 cores, 40 % to 99 % of them for the maps of this crate).
pub fn linearizable_histories<M>(subject: &Subject<M>, plan: HistoryPlan)
where
    M: ConcurrentOrderedMap<u64>,
{
    assert!((1..=16).contains(&plan.threads), "1 to 16 threads");
    assert!((1..=KEYS.len()).contains(&plan.keys), "1 to 8 keys");
    assert!(plan.threads * plan.ops <= 64, "at most 64 operations a run");
    let set: &'static [&'static [u8]; 8] = match subject.key_width() {
        None => &KEYS,
        Some(8) => &KEYS8,
        Some(w) => panic!("the history check has keys of any width or of 8 bytes, not {w}"),
    };
    SET.with(|s| s.set(set));
    let mut rng = TestRng::new(plan.seed);
    let mut overlapping = 0;
    for run in 0..plan.runs {
        // The run's keys: `plan.keys` of the eight, at random; checked by index.
        let mut pool: Vec<usize> = (0..KEYS.len()).collect();
        let mut keys = Vec::new();
        while keys.len() < plan.keys {
            keys.push(pool.swap_remove(rng.index(pool.len())));
        }
        let ops: Vec<Vec<Op>> = (0..plan.threads)
            .map(|t| {
                (0..plan.ops)
                    .map(|n| plan_op(&mut rng, &keys, t, n))
                    .collect()
            })
            .collect();
        let map = subject.make();
        let clock = AtomicU64::new(1);
        let barrier = Barrier::new(plan.threads);
        let who = subject.name();
        let index = |k: &[u8]| {
            set.iter().position(|&x| x == k).unwrap_or_else(|| {
                panic!(
                    "[{who}] run {run}: reported a key never written: {}",
                    Escaped(k)
                )
            })
        };
        let events: Vec<Event> = thread::scope(|s| {
            let handles: Vec<_> = ops
                .into_iter()
                .enumerate()
                .map(|(t, mine)| {
                    let (map, clock, barrier, index) = (&map, &clock, &barrier, &index);
                    s.spawn(move || {
                        SET.with(|s| s.set(set));
                        barrier.wait();
                        mine.into_iter()
                            .map(|mut op| {
                                let call = clock.fetch_add(1, SeqCst);
                                run_op(map, &mut op, index);
                                let ret = clock.fetch_add(1, SeqCst);
                                Event {
                                    thread: t,
                                    call,
                                    ret,
                                    op,
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            join_all(handles).into_iter().flatten().collect()
        });
        if let Err(v) = check(&events, KEYS.len()) {
            let mut all: Vec<&Event> = events.iter().collect();
            all.sort_by_key(|e| e.call);
            let lines: Vec<String> = all.iter().map(|e| describe(e)).collect();
            panic!(
                "[{}] run {run} of plan {plan:?} is not linearizable: {v}\nthe whole history:\n  {}",
                subject.name(),
                lines.join("\n  ")
            );
        }
        subject.audit(&map, &format!("after run {run}"));
        overlapping += usize::from(overlaps(&events));
    }
    if std::env::var_os("MLPDEX_HISTORY_STATS").is_some() {
        eprintln!(
            "[{}] {overlapping} of {} runs overlapped",
            subject.name(),
            plan.runs
        );
    }
}

/// Whether two operations of different threads overlap in time in `events`.
fn overlaps(events: &[Event]) -> bool {
    events.iter().any(|a| {
        events
            .iter()
            .any(|b| a.thread != b.thread && a.call < b.ret && b.call < a.ret)
    })
}
