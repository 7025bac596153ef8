//! Values are cloned on the way out and dropped exactly once: `Counted`, a value that records its
//! clones and drops, and the harnesses built on it (`values_dropped_once`, its concurrent version,
//! and `replaced_values_dropped_while_key_stays`).

use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicU8, AtomicUsize};
use std::thread;

use crate::testing::TestRng;
use crate::{ConcurrentOrderedMap, Error};

use super::{
    helpers::{Done, join_all},
    stamp::Universe,
    subject::Subject,
};

/// Counts the clones of [`Counted`] values and the drops of each.
pub(super) struct Ledger {
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
pub(super) fn check_returned(
    got: Option<Counted>,
    held: Option<usize>,
    ctx: &dyn fmt::Display,
) -> bool {
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
/// all eventually freed; see the [module documentation](super).
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
/// that hold under concurrency; see the [module documentation](super).
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
                                if let Some(c) = map.get(key) {
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
