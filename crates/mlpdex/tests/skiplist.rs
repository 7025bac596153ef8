//! Tests of [`mlpdex::skiplist::SkipList`]
//! (`cargo test -p mlpdex --release --test skiplist`).
//!
//! 1. **Differential runs** against the `BTreeMap` oracle of the testing driver, single-threaded
//!    through the `&self` API, for every [`KeyShape`] and every prefetch depth `K` in 0..=6,
//!    with `check_invariants()` after each run.
//! 2. **Property tests**: arbitrary operation sequences (`arb_ops`), then the invariants.
//! 3. **Iterators**: for every `K`, forward iteration over random ranges yields exactly what
//!    the plain iterator (`K = 0`) and the oracle yield, on lists of up to 20,000 keys (so
//!    towers reach the prefetch depth and the task queue fills); mixed `next`/`next_back`.
//! 4. **API edges**: the empty key, prefix keys, a multi-KiB key, replacing values (boxed
//!    replacements), `get` references living as long as the guard, bad config.

use std::collections::BTreeMap;
use std::ops::Bound;

use mlpdex::ConcurrentOrderedMap;
use mlpdex::Error;
use mlpdex::epoch::pin;
use mlpdex::skiplist::{Config, SkipList};
use mlpdex::testing::{KeyShape, TestRng, arb_ops, differential_concurrent, run_ops_concurrent};
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};

fn list<V: Send + Sync + 'static>(depth: usize) -> SkipList<V> {
    SkipList::with_config(Config {
        prefetch_depth: depth,
    })
    .expect("valid depth")
}

fn all_shapes() -> impl Iterator<Item = KeyShape> {
    KeyShape::ALL.iter().copied()
}

#[test]
fn differential_every_shape_and_depth() {
    for shape in all_shapes() {
        for depth in 0..=6 {
            for seed in [1, 2] {
                let seed = seed * 100 + depth as u64;
                differential_concurrent(|| list::<u64>(depth), shape, seed, 3_000);
            }
        }
    }
}

#[test]
fn differential_long_runs() {
    for shape in all_shapes() {
        differential_concurrent(SkipList::<u64>::new, shape, 77, 40_000);
    }
}

#[test]
fn property_operation_sequences() {
    let mut runner = TestRunner::new(PtConfig {
        cases: 256,
        ..PtConfig::default()
    });
    runner
        .run(&arb_ops(), |ops| {
            let map = SkipList::<u64>::new();
            run_ops_concurrent(&map, &ops).map_err(TestCaseError::fail)?;
            map.check_invariants();
            Ok(())
        })
        .unwrap();
}

fn random_key(rng: &mut TestRng) -> Vec<u8> {
    let len = rng.below(12) as usize;
    (0..len).map(|_| rng.below(256) as u8).collect()
}

fn bound(rng: &mut TestRng) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng)),
        _ => Bound::Excluded(random_key(rng)),
    }
}

#[test]
fn every_depth_iterates_like_the_plain_iterator() {
    let mut rng = TestRng::new(9);
    for n in [0usize, 1, 7, 100, 2_000, 20_000] {
        let lists: Vec<SkipList<u64>> = (0..=6).map(list).collect();
        let mut oracle = BTreeMap::new();
        for i in 0..n {
            let k = random_key(&mut rng);
            for l in &lists {
                l.insert(&k, i as u64).unwrap();
            }
            oracle.insert(k, i as u64);
        }
        // Remove some, so iterators step over unlinked and replaced nodes' neighbours.
        let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
        for k in keys.iter().step_by(5) {
            for l in &lists {
                assert_eq!(l.remove(k), oracle.get(k).copied());
            }
            oracle.remove(k);
        }
        let guard = pin();
        for _ in 0..60 {
            let (s, e) = (bound(&mut rng), bound(&mut rng));
            let range = (
                s.as_ref().map(|k| k.as_slice()),
                e.as_ref().map(|k| k.as_slice()),
            );
            let empty = match (&s, &e) {
                (Bound::Included(a), Bound::Included(b)) => a > b,
                (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
                | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
                _ => false,
            };
            let want: Vec<(Vec<u8>, u64)> = if empty {
                Vec::new()
            } else {
                oracle
                    .range::<Vec<u8>, _>((s.clone(), e.clone()))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect()
            };
            let limit = rng.below(want.len() as u64 + 2) as usize;
            for l in &lists {
                let got: Vec<(Vec<u8>, u64)> = l
                    .range(range, &guard)
                    .map(|(k, v)| (k.to_vec(), *v))
                    .collect();
                assert_eq!(got, want, "depth {} n {n}", l.config().prefetch_depth);
                let got: Vec<(Vec<u8>, u64)> = l
                    .range(range, &guard)
                    .take(limit)
                    .map(|(k, v)| (k.to_vec(), *v))
                    .collect();
                assert_eq!(got, want[..limit.min(want.len())]);
                let back: Vec<Vec<u8>> = l
                    .range(range, &guard)
                    .rev()
                    .take(50)
                    .map(|(k, _)| k.to_vec())
                    .collect();
                let want_back: Vec<Vec<u8>> =
                    want.iter().rev().take(50).map(|(k, _)| k.clone()).collect();
                assert_eq!(back, want_back);
            }
            // Alternating ends meet without overlap.
            let l = &lists[3];
            let mut it = l.range(range, &guard);
            let mut seen = Vec::new();
            let mut flip = false;
            loop {
                flip = !flip;
                let x = if flip { it.next() } else { it.next_back() };
                match x {
                    Some((k, _)) => seen.push(k.to_vec()),
                    None => break,
                }
            }
            assert!(it.next().is_none() && it.next_back().is_none());
            seen.sort();
            let all: Vec<Vec<u8>> = want.iter().map(|(k, _)| k.clone()).collect();
            assert_eq!(seen, all);
        }
        for l in &lists {
            l.check_invariants();
        }
    }
}

#[test]
fn edges() {
    let map = SkipList::<String>::new();
    let guard = pin();
    assert!(map.get(b"", &guard).is_none());
    assert_eq!(map.insert(b"", "empty".into()).unwrap(), None);
    assert_eq!(map.insert(b"a", "a".into()).unwrap(), None);
    assert_eq!(map.insert(b"a\0", "a0".into()).unwrap(), None);
    let long = vec![0xFFu8; 5000];
    assert_eq!(map.insert(&long, "long".into()).unwrap(), None);
    assert_eq!(map.insert(b"a", "a2".into()).unwrap().as_deref(), Some("a"));
    assert_eq!(
        map.insert(b"a", "a3".into()).unwrap().as_deref(),
        Some("a2")
    );
    let a = map.get(b"a", &guard).unwrap();
    assert_eq!(
        map.insert(b"a", "a4".into()).unwrap().as_deref(),
        Some("a3")
    );
    // The reference taken before the update still reads the old value under the guard.
    assert_eq!(a, "a3");
    assert_eq!(map.get(b"", &guard).map(String::as_str), Some("empty"));
    assert_eq!(map.get(&long, &guard).map(String::as_str), Some("long"));
    let keys: Vec<&[u8]> = map.iter(&guard).map(|(k, _)| k).collect();
    assert_eq!(keys, vec![&b""[..], b"a", b"a\0", &long]);
    assert_eq!(
        map.lower_bound(Bound::Excluded(b"a"), &guard).unwrap().0,
        b"a\0"
    );
    assert_eq!(
        map.upper_bound(Bound::Excluded(b"a"), &guard).unwrap().0,
        b""
    );
    assert_eq!(
        map.upper_bound(Bound::Unbounded, &guard).unwrap().0,
        &long[..]
    );
    assert_eq!(map.remove(b"a").as_deref(), Some("a4"));
    assert_eq!(map.remove(b"a"), None);
    assert_eq!(map.len(), 3);
    map.check_invariants();
    assert!(ConcurrentOrderedMap::memory_usage(&map) > 5000);
    assert_eq!(
        SkipList::<u64>::with_config(Config { prefetch_depth: 7 }).unwrap_err(),
        Error::InvalidConfig {
            what: "prefetch_depth must be 0..=6"
        }
    );
}
