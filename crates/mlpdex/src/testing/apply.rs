//! Applying one operation to a map and to the `BTreeMap` oracle and comparing the answers, for the
//! three kinds of map: `OrderedMap` (`&mut self`), `ConcurrentOrderedMap` (`&self`, visits) and
//! `StaticMap` (reads and cursors only).

use core::ops::{Bound, ControlFlow};
use std::collections::BTreeMap;
use std::collections::btree_map;

use crate::api::{ConcurrentOrderedMap, OrderedMap, RangeCursor, StaticMap};
use crate::key::{Escaped, is_empty_range};

use super::{
    ops::{MapOp, Walk, as_slice_bound},
    report::{Mismatch, expect_entry, expect_eq, expect_memory, show_entry, show_insert},
    rng::TestRng,
};

pub(super) type Oracle = BTreeMap<Vec<u8>, u64>;
pub(super) type OracleRange<'o> =
    core::iter::Flatten<core::option::IntoIter<btree_map::Range<'o, Vec<u8>, u64>>>;

/// The oracle's entries within `(start, end)`; empty for an empty or inverted range, where
/// `BTreeMap::range` would panic.
pub(super) fn oracle_range<'o>(
    oracle: &'o Oracle,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> OracleRange<'o> {
    let inner = if is_empty_range(start, end) {
        None
    } else {
        Some(oracle.range::<[u8], _>((start, end)))
    };
    inner.into_iter().flatten()
}

pub(super) fn next_end<I: DoubleEndedIterator>(it: &mut I, back: bool) -> Option<I::Item> {
    if back { it.next_back() } else { it.next() }
}

/// Walks `expected` as `walk` says, asking `step(back, want)` to pull the same end of the
/// structure's range and compare it with `want` (returning the actual answer on a difference).
pub(super) fn walk_compare<'e, E>(
    mut expected: E,
    walk: Walk,
    mut step: impl FnMut(bool, Option<(&[u8], u64)>) -> Result<(), String>,
) -> Result<(), Mismatch>
where
    E: DoubleEndedIterator<Item = (&'e Vec<u8>, &'e u64)>,
{
    let (limit, mut chooser, back_only) = match walk {
        Walk::Forward(n) => (n, None, false),
        Walk::Backward(n) => (n, None, true),
        Walk::Alternate(pattern, n) => (n, Some(TestRng::new(pattern)), false),
    };
    let mut call = 0usize;
    while call < limit {
        let back = chooser.as_mut().map_or(back_only, |r| r.chance(0.5));
        let want = next_end(&mut expected, back).map(|(k, v)| (k.as_slice(), *v));
        step(back, want).map_err(|got| Mismatch::call(call, back, want, got))?;
        if want.is_none() {
            // The ends met: the other end must be exhausted as well.
            step(!back, None).map_err(|got| Mismatch::call(call + 1, !back, None, got))?;
            return Ok(());
        }
        call += 1;
    }
    Ok(())
}

/// Calls `$recv.$method(range, extra args…)` with the range in the std form that fits
/// the bounds (`a..b`, `a..=b`, `a..`, `..b`, `..=b`, `..`), or as a pair of bounds.
macro_rules! call_with_range_form {
    ($recv:expr, $method:ident, $start:expr, $end:expr $(, $arg:expr)*) => {
        match ($start, $end) {
            (Bound::Included(s), Bound::Excluded(e)) => {
                match (core::str::from_utf8(s), core::str::from_utf8(e)) {
                    (Ok(s), Ok(e)) => $recv.$method(s..e $(, $arg)*),
                    _ => $recv.$method(s.to_vec()..e.to_vec() $(, $arg)*),
                }
            }
            (Bound::Included(s), Bound::Included(e)) => $recv.$method(s..=e $(, $arg)*),
            (Bound::Included(s), Bound::Unbounded) => {
                $recv.$method(s.to_vec().. $(, $arg)*)
            }
            (Bound::Unbounded, Bound::Excluded(e)) => $recv.$method(..e $(, $arg)*),
            (Bound::Unbounded, Bound::Included(e)) => {
                $recv.$method(..=e.to_vec() $(, $arg)*)
            }
            (Bound::Unbounded, Bound::Unbounded) => $recv.$method(.. $(, $arg)*),
            (s, e) => $recv.$method((s, e) $(, $arg)*),
        }
    };
}

pub(super) fn apply_ordered<M: OrderedMap<u64>>(
    map: &mut M,
    oracle: &mut Oracle,
    op: &MapOp,
) -> Result<(), Mismatch> {
    match op {
        MapOp::Insert(k, v) => {
            let got = map.insert(k, *v);
            let want = oracle.insert(k.clone(), *v);
            if got != Ok(want) {
                return Err(Mismatch::new(show_insert(&Ok(want)), show_insert(&got)));
            }
            expect_eq("get(key) after insert", Some(*v), map.get(k).map(|v| *v))?;
            expect_eq("len() after insert", oracle.len(), map.len())
        }
        MapOp::Remove(k) => {
            expect_eq("remove(key)", oracle.remove(k.as_slice()), map.remove(k))?;
            expect_eq("get(key) after remove", None, map.get(k).map(|v| *v))?;
            expect_eq("len() after remove", oracle.len(), map.len())
        }
        MapOp::Get(k) => expect_eq(
            "get(key)",
            oracle.get(k.as_slice()).copied(),
            map.get(k).map(|v| *v),
        ),
        MapOp::ContainsKey(k) => expect_eq(
            "contains_key(key)",
            oracle.contains_key(k.as_slice()),
            map.contains_key(k),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => expect_entry(
            "first()",
            oracle.first_key_value().map(|(k, v)| (k.as_slice(), *v)),
            map.first().map(|(k, v)| (k, *v)),
        ),
        MapOp::Last => expect_entry(
            "last()",
            oracle.last_key_value().map(|(k, v)| (k.as_slice(), *v)),
            map.last().map(|(k, v)| (k, *v)),
        ),
        MapOp::LowerBound(b) => {
            let b = as_slice_bound(b);
            expect_entry(
                "lower_bound(bound)",
                oracle_range(oracle, b, Bound::Unbounded)
                    .next()
                    .map(|(k, v)| (k.as_slice(), *v)),
                map.lower_bound(b).map(|(k, v)| (k, *v)),
            )
        }
        MapOp::UpperBound(b) => {
            let b = as_slice_bound(b);
            expect_entry(
                "upper_bound(bound)",
                oracle_range(oracle, Bound::Unbounded, b)
                    .next_back()
                    .map(|(k, v)| (k.as_slice(), *v)),
                map.upper_bound(b).map(|(k, v)| (k, *v)),
            )
        }
        MapOp::Range(s, e, walk) => {
            let (s, e) = (as_slice_bound(s), as_slice_bound(e));
            let mut it = call_with_range_form!(map, range, s, e);
            walk_compare(oracle_range(oracle, s, e), *walk, |back, want| {
                let got = next_end(&mut it, back);
                let got = got.as_ref().map(|(k, v)| (k.as_ref(), **v));
                if got == want {
                    Ok(())
                } else {
                    Err(show_entry(got))
                }
            })
        }
        MapOp::Iter => {
            let n = oracle.len();
            let (lo, hi) = map.iter().size_hint();
            if lo > n || hi.is_some_and(|h| h < n) {
                return Err(Mismatch::new(
                    format!("iter().size_hint() admitting {n}"),
                    format!("iter().size_hint() = ({lo}, {hi:?})"),
                ));
            }
            for walk in [Walk::Forward(usize::MAX), Walk::Backward(usize::MAX)] {
                let mut it = map.iter();
                walk_compare(oracle.iter(), walk, |back, want| {
                    let got = next_end(&mut it, back);
                    let got = got.as_ref().map(|(k, v)| (k.as_ref(), **v));
                    if got == want {
                        Ok(())
                    } else {
                        Err(show_entry(got))
                    }
                })?;
            }
            expect_eq("len()", n, map.len())
        }
        MapOp::Clear => {
            map.clear();
            oracle.clear();
            expect_eq("len() after clear", 0, map.len())?;
            expect_eq("is_empty() after clear", true, map.is_empty())?;
            expect_entry(
                "iter().next() after clear",
                None,
                map.iter().next().map(|(k, v)| (k, *v)),
            )
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}

/// What a visitor saw: the entries, and how often it was called after returning `Break`.
pub(super) struct Visit {
    entries: Vec<(Vec<u8>, u64)>,
    calls_after_break: usize,
}

pub(super) fn visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
    limit: usize,
) -> Visit {
    let stop_after = limit.max(1);
    let mut entries = Vec::new();
    let mut broke = false;
    let mut calls_after_break = 0;
    let mut f = |k: &[u8], v: &u64| {
        if broke {
            calls_after_break += 1;
            return ControlFlow::Break(());
        }
        entries.push((k.to_vec(), *v));
        if entries.len() >= stop_after {
            broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if rev {
        call_with_range_form!(map, visit_range_rev, start, end, &mut f);
    } else {
        call_with_range_form!(map, visit_range, start, end, &mut f);
    }
    Visit {
        entries,
        calls_after_break,
    }
}

pub(super) fn compare_visit<'e>(
    name: &str,
    want: impl Iterator<Item = (&'e Vec<u8>, &'e u64)>,
    got: &Visit,
) -> Result<(), Mismatch> {
    let mut want = want.map(|(k, v)| (k.as_slice(), *v));
    for (i, &(ref k, v)) in got.entries.iter().enumerate() {
        let w = want.next();
        if w != Some((k.as_slice(), v)) {
            return Err(Mismatch::new(
                format!("{name} entry #{i} = {}", show_entry(w)),
                format!("{name} entry #{i} = {}", show_entry(Some((k, v)))),
            ));
        }
    }
    if let Some(w) = want.next() {
        let i = got.entries.len();
        return Err(Mismatch::new(
            format!("{name} entry #{i} = {}", show_entry(Some(w))),
            format!("{name} stopped after {i} entries"),
        ));
    }
    if got.calls_after_break > 0 {
        return Err(Mismatch::new(
            format!("{name}: no call of the visitor after it returned Break"),
            format!("{name}: {} calls after Break", got.calls_after_break),
        ));
    }
    Ok(())
}

pub(super) fn check_visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &Oracle,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
    limit: usize,
) -> Result<(), Mismatch> {
    let got = visit(map, start, end, rev, limit);
    let take = limit.max(1);
    let want = oracle_range(oracle, start, end);
    if rev {
        compare_visit("visit_range_rev", want.rev().take(take), &got)
    } else {
        compare_visit("visit_range", want.take(take), &got)
    }
}

pub(super) fn apply_concurrent<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &mut Oracle,
    op: &MapOp,
) -> Result<(), Mismatch> {
    let owned = |k: &[u8], v: &u64| (k.to_vec(), *v);
    let oracle_entry = |e: Option<(&Vec<u8>, &u64)>| e.map(|(k, v)| (k.clone(), *v));
    match op {
        MapOp::Insert(k, v) => {
            let got = map.insert(k, *v);
            let want = oracle.insert(k.clone(), *v);
            if got != Ok(want) {
                return Err(Mismatch::new(show_insert(&Ok(want)), show_insert(&got)));
            }
            expect_eq("get(key) after insert", Some(*v), map.get_cloned(k))?;
            expect_eq("len() after insert", oracle.len(), map.len())
        }
        MapOp::Remove(k) => {
            expect_eq("remove(key)", oracle.remove(k.as_slice()), map.remove(k))?;
            expect_eq("get(key) after remove", None, map.get_cloned(k))?;
            expect_eq("len() after remove", oracle.len(), map.len())
        }
        MapOp::Get(k) => {
            let want = oracle.get(k.as_slice()).copied();
            expect_eq("get(key)", want, map.get_cloned(k))?;
            expect_eq("get_with(key, |v| *v)", want, map.get_with(k, |v| *v))
        }
        MapOp::ContainsKey(k) => expect_eq(
            "get_with(key, |_| ()).is_some()",
            oracle.contains_key(k.as_slice()),
            map.get_with(k, |_| ()).is_some(),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => expect_eq(
            "lower_bound_with(Unbounded)",
            oracle_entry(oracle.iter().next()),
            map.lower_bound_with(Bound::Unbounded, owned),
        ),
        MapOp::Last => expect_eq(
            "upper_bound_with(Unbounded)",
            oracle_entry(oracle.iter().next_back()),
            map.upper_bound_with(Bound::Unbounded, owned),
        ),
        MapOp::LowerBound(b) => {
            let b = as_slice_bound(b);
            let want = oracle_entry(oracle_range(oracle, b, Bound::Unbounded).next());
            let got = map.lower_bound_with(b, owned);
            if want == got {
                Ok(())
            } else {
                Err(Mismatch::new(
                    format!("lower_bound_with(bound) = {}", show_owned(&want)),
                    format!("lower_bound_with(bound) = {}", show_owned(&got)),
                ))
            }
        }
        MapOp::UpperBound(b) => {
            let b = as_slice_bound(b);
            let want = oracle_entry(oracle_range(oracle, Bound::Unbounded, b).next_back());
            let got = map.upper_bound_with(b, owned);
            if want == got {
                Ok(())
            } else {
                Err(Mismatch::new(
                    format!("upper_bound_with(bound) = {}", show_owned(&want)),
                    format!("upper_bound_with(bound) = {}", show_owned(&got)),
                ))
            }
        }
        MapOp::Range(s, e, walk) => {
            let (s, e) = (as_slice_bound(s), as_slice_bound(e));
            match *walk {
                Walk::Forward(n) => check_visit(map, oracle, s, e, false, n),
                Walk::Backward(n) => check_visit(map, oracle, s, e, true, n),
                Walk::Alternate(pattern, n) => {
                    let rev_first = pattern & 1 == 1;
                    check_visit(map, oracle, s, e, rev_first, n)?;
                    check_visit(map, oracle, s, e, !rev_first, n)
                }
            }
        }
        MapOp::Iter => {
            let all = Bound::Unbounded;
            check_visit(map, oracle, all, all, false, usize::MAX)?;
            check_visit(map, oracle, all, all, true, usize::MAX)?;
            expect_eq("len()", oracle.len(), map.len())
        }
        MapOp::Clear => {
            for (k, v) in core::mem::take(oracle) {
                let got = map.remove(&k);
                if got != Some(v) {
                    return Err(Mismatch::new(
                        format!(
                            "remove({}) while removing every key = {:?}",
                            Escaped(&k),
                            Some(v)
                        ),
                        format!("remove({}) while removing every key = {got:?}", Escaped(&k)),
                    ));
                }
            }
            expect_eq("len() after removing every key", 0, map.len())?;
            expect_eq("is_empty() after removing every key", true, map.is_empty())?;
            check_visit(
                map,
                oracle,
                Bound::Unbounded,
                Bound::Unbounded,
                false,
                usize::MAX,
            )
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}

pub(super) fn show_owned(e: &Option<(Vec<u8>, u64)>) -> String {
    show_entry(e.as_ref().map(|(k, v)| (k.as_slice(), *v)))
}

/// Applies a read-only operation to a static map; write operations are ignored.
pub(super) fn apply_static<M: StaticMap>(
    map: &M,
    oracle: &Oracle,
    op: &MapOp,
) -> Result<(), Mismatch> {
    let cursor_walk = |s: Bound<&[u8]>, e: Bound<&[u8]>, walk: Walk| {
        let mut cursor = call_with_range_form!(map, cursor, s, e);
        walk_compare(oracle_range(oracle, s, e), walk, |back, want| {
            let got = if back {
                cursor.next_back()
            } else {
                cursor.next()
            };
            if got == want {
                Ok(())
            } else {
                Err(show_entry(got))
            }
        })
    };
    // The same walk through the owned iterator `range` returns.
    let iter_walk = |s: Bound<&[u8]>, e: Bound<&[u8]>, walk: Walk| {
        let mut it = call_with_range_form!(map, range, s, e);
        walk_compare(oracle_range(oracle, s, e), walk, |back, want| {
            let got = if back { it.next_back() } else { it.next() };
            if got.as_ref().map(|(k, v)| (k.as_slice(), *v)) == want {
                Ok(())
            } else {
                Err(show_owned(&got))
            }
        })
    };
    match op {
        MapOp::Insert(..) | MapOp::Remove(_) | MapOp::Clear => Ok(()),
        MapOp::Get(k) => expect_eq("get(key)", oracle.get(k.as_slice()).copied(), map.get(k)),
        MapOp::ContainsKey(k) => expect_eq(
            "get(key).is_some()",
            oracle.contains_key(k.as_slice()),
            map.get(k).is_some(),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => cursor_walk(Bound::Unbounded, Bound::Unbounded, Walk::Forward(1)),
        MapOp::Last => cursor_walk(Bound::Unbounded, Bound::Unbounded, Walk::Backward(1)),
        MapOp::LowerBound(b) => cursor_walk(as_slice_bound(b), Bound::Unbounded, Walk::Forward(1)),
        MapOp::UpperBound(b) => cursor_walk(Bound::Unbounded, as_slice_bound(b), Walk::Backward(1)),
        MapOp::Range(s, e, walk) => {
            cursor_walk(as_slice_bound(s), as_slice_bound(e), *walk)?;
            iter_walk(as_slice_bound(s), as_slice_bound(e), *walk)
        }
        MapOp::Iter => {
            iter_walk(
                Bound::Unbounded,
                Bound::Unbounded,
                Walk::Backward(usize::MAX),
            )?;
            cursor_walk(
                Bound::Unbounded,
                Bound::Unbounded,
                Walk::Forward(usize::MAX),
            )?;
            cursor_walk(
                Bound::Unbounded,
                Bound::Unbounded,
                Walk::Backward(usize::MAX),
            )?;
            expect_eq("len()", oracle.len(), map.len())
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}
