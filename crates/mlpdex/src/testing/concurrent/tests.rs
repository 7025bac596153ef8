//! The harnesses on a mutex-guarded [`ModelMap`]: a correct map passes every one.

use super::history::{Event, Op, check};
use super::{
    churn::*, drops::*, edge_cases::*, history::*, same_key::*, stamp::*, stress::*, subject::*,
};
use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use crate::{ConcurrentOrderedMap, Error};
use std::sync::{Mutex, MutexGuard};

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

impl<V: Clone + Send + Sync + fmt::Debug> ConcurrentOrderedMap<V> for Locked<V> {
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

fn subject<V: Clone + Send + Sync + fmt::Debug + 'static>() -> Subject<Locked<V>> {
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
    /// Every third `get_with` of a key that was updated answers with the value the last
    /// update replaced: a stale read.
    StaleGets,
    /// Every third visit leaves out its first entry.
    SkipsInVisits,
}

/// A [`Locked`] model with a [`Fault`].
struct Faulty<V> {
    inner: Locked<V>,
    fault: Fault,
    calls: AtomicUsize,
    /// For `KeepsFirstValue`: each updated key's first value, kept until it is removed.
    kept: Mutex<BTreeMap<Vec<u8>, V>>,
}

impl<V: Clone + Send + Sync + fmt::Debug> ConcurrentOrderedMap<V> for Faulty<V> {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        let map = self.inner.lock();
        let n = self.calls.fetch_add(1, Relaxed);
        if let (Fault::StaleGets, 0) = (self.fault, n % 3)
            && let Some(old) = self.kept.lock().unwrap().get(key)
        {
            return Some(f(old));
        }
        map.get(key).map(f)
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
            (Fault::StaleGets, Some(old)) => {
                self.kept.lock().unwrap().insert(key.to_vec(), old);
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
        self.inner.visit_range(range, self.skipping(f));
    }
    fn visit_range_rev<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: crate::KeyRange,
    {
        self.inner.visit_range_rev(range, self.skipping(f));
    }
}

impl<V> Faulty<V> {
    /// For `SkipsInVisits`: the visitor, without the first entry on every third visit.
    fn skipping<'a>(
        &self,
        mut f: impl FnMut(&[u8], &V) -> ControlFlow<()> + 'a,
    ) -> impl FnMut(&[u8], &V) -> ControlFlow<()> + 'a {
        let n = self.calls.fetch_add(1, Relaxed);
        let mut skip = matches!(self.fault, Fault::SkipsInVisits) && n.is_multiple_of(3);
        move |k, v| {
            if std::mem::take(&mut skip) {
                return ControlFlow::Continue(());
            }
            f(k, v)
        }
    }
}

fn faulty<V: Clone + Send + Sync + fmt::Debug + 'static>(fault: Fault) -> Subject<Faulty<V>> {
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
    let msg =
        panic_message(|| same_key_stress(&faulty(Fault::LosesReplaced), SameKeyPlan::quick(2, 11)));
    assert!(
        msg.contains("were lost") && !msg.contains(" 0 were lost"),
        "{msg}"
    );
    let msg =
        panic_message(|| same_key_stress(&faulty(Fault::ReturnsTwice), SameKeyPlan::quick(16, 12)));
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
    let msg =
        panic_message(|| replaced_values_dropped_while_key_stays(&faulty(Fault::KeepsFirstValue)));
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

#[test]
fn locked_model_passes_the_history_checks() {
    linearizable_histories(&subject::<u64>(), HistoryPlan::quick(4, 0x4157));
    linearizable_histories(&subject::<u64>(), HistoryPlan::quick(8, 0x4158));
}

#[test]
fn history_checks_catch_lost_updates_stale_reads_and_skipping_visits() {
    let msg = panic_message(|| {
        linearizable_histories(&faulty(Fault::LosesReplaced), HistoryPlan::quick(4, 21))
    });
    assert!(msg.contains("no legal order"), "{msg}");
    let msg = panic_message(|| {
        linearizable_histories(&faulty(Fault::StaleGets), HistoryPlan::quick(4, 22))
    });
    assert!(msg.contains("no legal order"), "{msg}");
    let msg = panic_message(|| {
        linearizable_histories(&faulty(Fault::SkipsInVisits), HistoryPlan::quick(4, 23))
    });
    assert!(msg.contains("skipped"), "{msg}");
}

/// An event of thread `thread` from `call` to `ret`.
fn ev(thread: usize, call: u64, ret: u64, op: Op) -> Event {
    Event {
        thread,
        call,
        ret,
        op,
    }
}

#[test]
fn the_checker_orders_overlapping_operations_and_refuses_what_real_time_forbids() {
    let ins = |key, value, old| Op::Insert { key, value, old };
    let get = |key, value| Op::Get { key, value };
    // Sequential: insert 1, insert 2 (replacing 1), get 2, remove 2.
    let seq = [
        ev(0, 1, 2, ins(0, 1, None)),
        ev(0, 3, 4, ins(0, 2, Some(1))),
        ev(1, 5, 6, get(0, Some(2))),
        ev(
            1,
            7,
            8,
            Op::Remove {
                key: 0,
                old: Some(2),
            },
        ),
    ];
    assert_eq!(check(&seq, 8), Ok(()));
    // A get after both inserts completed may not see the first value.
    let stale = [
        ev(0, 1, 2, ins(0, 1, None)),
        ev(0, 3, 4, ins(0, 2, Some(1))),
        ev(1, 5, 6, get(0, Some(1))),
    ];
    assert!(check(&stale, 8).is_err());
    // ... but a get overlapping the second insert may.
    let overlapping = [
        ev(0, 1, 2, ins(0, 1, None)),
        ev(0, 3, 6, ins(0, 2, Some(1))),
        ev(1, 4, 5, get(0, Some(1))),
    ];
    assert_eq!(check(&overlapping, 8), Ok(()));
    // Two overlapping inserts of a new key cannot both find it absent.
    let lost = [ev(0, 1, 4, ins(0, 1, None)), ev(1, 2, 3, ins(0, 2, None))];
    assert!(check(&lost, 8).is_err());
    // The order that explains overlapping operations may be the reverse of their calls.
    let reversed = [
        ev(0, 1, 6, ins(0, 1, Some(2))),
        ev(1, 2, 3, ins(0, 2, None)),
        ev(1, 4, 5, get(0, Some(2))),
    ];
    assert_eq!(check(&reversed, 8), Ok(()));
    // Keys are independent: an answer about key 1 says nothing of key 0.
    let keys = [ev(0, 1, 2, ins(0, 1, None)), ev(1, 3, 4, get(1, None))];
    assert_eq!(check(&keys, 8), Ok(()));
}

#[test]
fn the_checker_bounds_visits_by_what_keys_could_hold_meanwhile() {
    let ins = |key, value, old| Op::Insert { key, value, old };
    let visit = |lo, hi, rev, limit, seen| Op::Range {
        lo,
        hi,
        rev,
        limit,
        seen,
    };
    let all = |seen| visit(Bound::Unbounded, Bound::Unbounded, false, 9, seen);
    // Keys 2 and 4 present throughout: a visit must report both, in order.
    let base = [ev(0, 1, 2, ins(2, 7, None)), ev(0, 3, 4, ins(4, 8, None))];
    let with = |op| {
        let mut v = base.to_vec();
        v.push(ev(1, 10, 11, op));
        v
    };
    assert_eq!(check(&with(all(vec![(2, 7), (4, 8)])), 8), Ok(()));
    assert!(check(&with(all(vec![(4, 8)])), 8).is_err(), "skipped a key");
    assert!(
        check(&with(all(vec![(4, 8), (2, 7)])), 8).is_err(),
        "out of order"
    );
    assert!(
        check(&with(all(vec![(2, 7), (4, 9)])), 8).is_err(),
        "never written"
    );
    assert!(
        check(&with(all(vec![(2, 7), (3, 1), (4, 8)])), 8).is_err(),
        "never there"
    );
    // A limit stops the coverage at the last key reported; backwards too.
    let limited = visit(Bound::Unbounded, Bound::Unbounded, false, 1, vec![(2, 7)]);
    assert_eq!(check(&with(limited), 8), Ok(()));
    let back = visit(Bound::Unbounded, Bound::Unbounded, true, 1, vec![(4, 8)]);
    assert_eq!(check(&with(back), 8), Ok(()));
    let over = visit(
        Bound::Unbounded,
        Bound::Unbounded,
        false,
        1,
        vec![(2, 7), (4, 8)],
    );
    assert!(check(&with(over), 8).is_err(), "past the limit");
    // Bounds: an excluded bound leaves its key out.
    let outside = visit(
        Bound::Excluded(2),
        Bound::Unbounded,
        false,
        9,
        vec![(2, 7), (4, 8)],
    );
    assert!(check(&with(outside), 8).is_err(), "outside the range");
    let inside = visit(
        Bound::Excluded(2),
        Bound::Included(4),
        false,
        9,
        vec![(4, 8)],
    );
    assert_eq!(check(&with(inside), 8), Ok(()));
    // A write overlapping the visit may or may not be seen; one done before it must be.
    let mut racing = base.to_vec();
    racing.push(ev(0, 9, 12, ins(4, 5, Some(8))));
    racing.push(ev(1, 10, 11, all(vec![(2, 7), (4, 8)])));
    assert_eq!(check(&racing, 8), Ok(()));
    let mut done = base.to_vec();
    done.push(ev(0, 5, 6, ins(4, 5, Some(8))));
    done.push(ev(1, 10, 11, all(vec![(2, 7), (4, 8)])));
    assert!(check(&done, 8).is_err(), "an overwritten value");
}
