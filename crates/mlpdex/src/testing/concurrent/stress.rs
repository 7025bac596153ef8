//! `stress`: writers and readers on one map over a mixed key universe, with linearizability checks
//! while running and an exact check of the final contents after joining, for partitioned and shared
//! key ownership.

use core::ops::Bound;
use std::collections::HashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::thread;

use crate::ConcurrentOrderedMap;
use crate::key::{Escaped, after_start, before_end};
use crate::testing::TestRng;

use super::{
    drain::drain,
    helpers::{Done, as_slice, entries, entries_rev, join_all},
    stamp::{Stamp, Universe, mixed_keys},
    subject::Subject,
    view::{View, check_visit_shape, seek_name, visit, visit_name},
};

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
pub(super) struct Stress<'a, M> {
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
pub(super) struct WriterLog {
    last: Vec<Option<Option<u64>>>,
    written: HashSet<u64>,
    view: View,
}

pub(super) fn stress_writer<M: ConcurrentOrderedMap<u64>>(
    sh: &Stress<'_, M>,
    w: usize,
) -> WriterLog {
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

pub(super) fn stress_reader<M: ConcurrentOrderedMap<u64>>(sh: &Stress<'_, M>, r: usize) -> View {
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
/// [module documentation](super) for every check.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it), or if the plan did not
/// fill the map to a third of its keys and drain it to half its peak or less.
pub fn stress<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>, plan: Plan) {
    let u = Universe::from_keys(subject.fit_keys(mixed_keys(plan.keys, plan.long_keys, plan.seed)));
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
    // far more than it starts with) and ended drained well below its peak. Partitioned
    // writers on an overloaded machine may run one after another, each filling and draining
    // only its own share, so the peak they can be held to is a share's, not the universe's.
    let peak = sh.peak_len.load(Relaxed);
    // For the same reason the leftovers of every share add up at the end, so a partitioned
    // run is held to ending below its peak, a shared one to ending below half of it.
    let (fill, drained) = match plan.sharing {
        Sharing::Partitioned => (n / plan.writers.max(1) / 3, got.len() < peak),
        Sharing::Shared => (n / 3, got.len() * 2 <= peak),
    };
    assert!(
        peak >= fill && drained,
        "{ctx}: the plan did not fill and drain the map (peak len {peak}, final len {}, {n} \
         keys)",
        got.len()
    );

    drain(subject, &map, &got, &ctx, &plan);
}
