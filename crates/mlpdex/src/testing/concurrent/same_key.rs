//! `same_key_stress`: more threads than cores inserting, removing and reading the same few keys,
//! with every inserted value unique so that each must come out exactly once.

use core::ops::Bound;
use std::collections::HashMap;
use std::thread;

use crate::ConcurrentOrderedMap;
use crate::key::Escaped;
use crate::testing::TestRng;

use super::{
    drain::drain,
    helpers::{entries, entries_rev, join_all},
    stamp::{Stamp, Universe, WRITER_BITS, mixed_keys},
    subject::Subject,
    view::View,
};

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

/// `n` keys drawn at random from [`mixed_keys`] as `subject` stores them (fewer if fitting
/// them to its key width leaves fewer), sorted.
pub(super) fn same_key_set<M>(subject: &Subject<M>, n: usize, seed: u64) -> Universe {
    let pool = subject.fit_keys(mixed_keys(n, usize::from(n >= 64), seed));
    let n = n.min(pool.len());
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
pub(super) struct SameKeyLog {
    inserted: Vec<u64>,
    returned: Vec<u64>,
    view: View,
}

pub(super) fn same_key_thread<M: ConcurrentOrderedMap<u64>>(
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
pub(super) fn show_stamps(values: &[u64]) -> String {
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
/// `stress`: a value is only seen under its own key, per thread the counters seen from
/// each writer on each key never go back, and a value a thread gets back from `insert` or
/// `remove` that it wrote itself is its own latest on the key. After joining: the final
/// contents through visits both ways, `get` and `len()`, the invariant check, and a drain to
/// empty.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it).
///
pub fn same_key_stress<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>, plan: SameKeyPlan) {
    assert!(
        (1..1 << WRITER_BITS).contains(&plan.threads) && plan.keys >= 1,
        "bad plan {plan:?}"
    );
    let u = same_key_set(subject, plan.keys, plan.seed);
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
