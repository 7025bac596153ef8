//! `range_visits_under_churn`: range visits and seeks racing with writers, checked against keys
//! that never change ("stable") and keys removed during the run ("doomed").

use core::fmt;
use core::ops::Bound;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::thread;

use crate::ConcurrentOrderedMap;
use crate::key::{Escaped, after_start, before_end};
use crate::testing::TestRng;

use super::{
    helpers::{Done, as_slice, entries, join_all},
    stamp::{Stamp, Universe, mixed_keys},
    subject::Subject,
    view::{View, check_visit_shape, seek_name, visit, visit_name},
};

/// What a key of a churn run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Inserted before the run, never touched: every visit and seek covering it finds it.
    Stable,
    /// Inserted before the run, removed by writer 0 before the visitors start.
    GoneEarly,
    /// Inserted before the run, removed by writer 0 one by one during the run.
    GoneLate,
    /// Inserted and removed by the writers all the time.
    Churn,
}

pub(super) fn role(idx: usize) -> Role {
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

pub(super) struct ChurnRun<'a, M> {
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

pub(super) fn churn_writer<M: ConcurrentOrderedMap<u64>>(run: &ChurnRun<'_, M>, w: usize) {
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

pub(super) fn churn_visitor<M: ConcurrentOrderedMap<u64>>(
    run: &ChurnRun<'_, M>,
    r: usize,
) -> usize {
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
/// from `subject`; see the [module documentation](super) for every check.
///
/// # Panics
///
/// At the first failed check (re-raised from the thread that found it).
pub fn range_visits_under_churn<M: ConcurrentOrderedMap<u64>>(
    subject: &Subject<M>,
    plan: ChurnPlan,
) {
    assert!(plan.writers >= 1, "a churn run needs a writer");
    let u = Universe::from_keys(subject.fit_keys(mixed_keys(plan.keys, plan.long_keys, plan.seed)));
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
