//! The guard-based API the concurrent byte-string maps share (`get`, `range`, `iter`,
//! `lower_bound`, `upper_bound`, `first`, `last`, `contains_key`, `insert`, `remove`, `len`):
//! one macro runs every check on [`SkipList`], on [`ConcurrentCuckooTrie`] and on
//! [`ConcurrentMlpIndexBytes`], which is itself a check that their inherent methods have the
//! same names and signatures.
//!
//! 1. **Differential runs** against `BTreeMap`, single-threaded: random inserts and removes
//!    over a small alphabet (the empty key, prefix keys, long runs of one byte), then every
//!    query and random ranges with each bound form, read forwards, backwards and with `next`
//!    and `next_back` interleaved. Ranges of hundreds of keys cross the Cuckoo Trie's
//!    32-leaf batches and the MLP index's 64-key leaves.
//! 2. **The range contract under churn**: writers insert and remove keys of their own while
//!    readers iterate (from the front, the back, or both) under one guard each; every key
//!    present throughout is yielded, no key removed before the iteration started is, keys
//!    come strictly in order from each end and the ends never cross, and each key once.
//!
//! Runs under plain `cargo test` (no `testing` feature needed).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config};
use mlpdex::epoch::pin;
use mlpdex::mlp_index_bytes::ConcurrentMlpIndexBytes;
use mlpdex::skiplist::SkipList;

/// A small xorshift generator: the tests need no dependency for their randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A key of 0..=5 bytes over `a..=d`: short enough that prefixes and equal keys are common.
fn small_key(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(6);
    (0..len).map(|_| b'a' + rng.below(4) as u8).collect()
}

fn bound(rng: &mut Rng) -> Bound<Vec<u8>> {
    match rng.below(5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(small_key(rng)),
        _ => Bound::Excluded(small_key(rng)),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// What the oracle holds within `(lo, hi)`, in order; empty for an empty or inverted range
/// (where `BTreeMap::range` would panic).
fn expected(
    oracle: &BTreeMap<Vec<u8>, u64>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Vec<(Vec<u8>, u64)> {
    let above = |k: &[u8]| match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    };
    let below = |k: &[u8]| match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    };
    oracle
        .iter()
        .filter(|(k, _)| above(k) && below(k))
        .map(|(k, &v)| (k.clone(), v))
        .collect()
}

fn owned<'a>(it: impl Iterator<Item = (&'a [u8], &'a u64)>) -> Vec<(Vec<u8>, u64)> {
    it.map(|(k, &v)| (k.to_vec(), v)).collect()
}

/// Checks every guard-based query of `$map` against `$oracle`.
macro_rules! check_queries {
    ($map:expr, $oracle:expr, $rng:expr) => {{
        let (map, oracle, rng) = (&$map, &$oracle, &mut $rng);
        let guard = pin();
        let all: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, &v)| (k.clone(), v)).collect();
        assert_eq!(map.len(), oracle.len());
        assert_eq!(map.is_empty(), oracle.is_empty());
        assert_eq!(owned(map.iter(&guard)), all, "iter");
        let mut back = owned(map.iter(&guard).rev());
        back.reverse();
        assert_eq!(back, all, "iter().rev()");
        let first = map.first(&guard).map(|(k, &v)| (k.to_vec(), v));
        let last = map.last(&guard).map(|(k, &v)| (k.to_vec(), v));
        assert_eq!(first.as_ref(), all.first(), "first");
        assert_eq!(last.as_ref(), all.last(), "last");
        for _ in 0..40 {
            let k = small_key(rng);
            assert_eq!(map.get(&k, &guard), oracle.get(&k), "get {k:?}");
            assert_eq!(map.contains_key(&k), oracle.contains_key(&k));
            let b = bound(rng);
            let lb = map
                .lower_bound(as_ref(&b), &guard)
                .map(|(k, &v)| (k.to_vec(), v));
            let ub = map
                .upper_bound(as_ref(&b), &guard)
                .map(|(k, &v)| (k.to_vec(), v));
            let want_lb = expected(oracle, as_ref(&b), Bound::Unbounded)
                .first()
                .cloned();
            let want_ub = expected(oracle, Bound::Unbounded, as_ref(&b))
                .last()
                .cloned();
            assert_eq!(lb, want_lb, "lower_bound {b:?}");
            assert_eq!(ub, want_ub, "upper_bound {b:?}");

            let (lo, hi) = (bound(rng), bound(rng));
            let want = expected(oracle, as_ref(&lo), as_ref(&hi));
            let r = (as_ref(&lo), as_ref(&hi));
            assert_eq!(owned(map.range(r, &guard)), want, "range {lo:?}..{hi:?}");
            let mut back = owned(map.range(r, &guard).rev());
            back.reverse();
            assert_eq!(back, want, "range {lo:?}..{hi:?} reversed");
            // Both ends at once, in a random interleaving: they meet without overlap.
            let mut it = map.range(r, &guard);
            let (mut front, mut rear) = (Vec::new(), Vec::new());
            loop {
                let item = if rng.below(2) == 0 {
                    it.next().map(|e| (true, e))
                } else {
                    it.next_back().map(|e| (false, e))
                };
                match item {
                    Some((true, (k, &v))) => front.push((k.to_vec(), v)),
                    Some((false, (k, &v))) => rear.push((k.to_vec(), v)),
                    None => break,
                }
            }
            // Once one end is exhausted the other may still hold entries: drain both.
            front.extend(owned(it.by_ref()));
            rear.extend(owned(it.by_ref().rev()));
            rear.reverse();
            front.extend(rear);
            assert_eq!(front, want, "range {lo:?}..{hi:?} from both ends");
        }
    }};
}

/// Random inserts and removes over `$make()`, checking every return value and, every 200
/// operations, every query.
macro_rules! differential {
    ($make:expr, $seed:expr) => {{
        let map = $make;
        let mut oracle: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        let mut rng = Rng($seed | 1);
        for i in 0..3000u64 {
            let k = small_key(&mut rng);
            if rng.below(3) == 0 {
                assert_eq!(map.remove(&k), oracle.remove(&k), "remove {k:?}");
            } else {
                assert_eq!(map.insert(&k, i), Ok(oracle.insert(k.clone(), i)), "insert");
            }
            if i % 200 == 0 {
                check_queries!(map, oracle, rng);
            }
        }
        check_queries!(map, oracle, rng);
        // Long ranges: hundreds of keys in one iteration.
        for i in 0..600u64 {
            let k = format!("b{i:04}").into_bytes();
            assert_eq!(map.insert(&k, i), Ok(oracle.insert(k, i)));
        }
        check_queries!(map, oracle, rng);
    }};
}

fn growing_trie() -> ConcurrentCuckooTrie<u64> {
    ConcurrentCuckooTrie::with_config(Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn skiplist_matches_btreemap() {
    for seed in 1..=3 {
        differential!(SkipList::<u64>::new(), seed);
    }
}

#[test]
fn cuckoo_trie_matches_btreemap() {
    for seed in 1..=3 {
        differential!(ConcurrentCuckooTrie::<u64>::new(), seed);
        differential!(growing_trie(), seed);
    }
}

#[test]
fn mlp_index_bytes_matches_btreemap() {
    for seed in 1..=3 {
        differential!(ConcurrentMlpIndexBytes::<u64>::new(), seed);
    }
}

/// A held reference and a running iterator survive removals and, for the Cuckoo Trie, the
/// growth that replaces the whole table (for the MLP index, the leaf splits and prefix-table
/// growth of 4,950 insertions).
///
/// The second argument says whether the map's iterators also yield every key inserted after
/// the iteration began, beyond the contract's keys present throughout: all three do here (the
/// skip list reads live, the Cuckoo Trie reads its batches after the insertions, the MLP
/// index seeks past the last leaf version it read from the last key it yielded).
#[test]
fn references_outlive_removal_and_growth() {
    macro_rules! check {
        ($map:expr, $yields_later_keys:expr) => {{
            let map = $map;
            for i in 0..50u64 {
                map.insert(&i.to_be_bytes(), i).unwrap();
            }
            let guard = pin();
            let held = map.get(&7u64.to_be_bytes(), &guard).unwrap();
            let mut it = map.iter(&guard);
            assert_eq!(it.next().map(|(_, &v)| v), Some(0));
            assert_eq!(map.remove(&7u64.to_be_bytes()), Some(7));
            for i in 50..5000u64 {
                map.insert(&i.to_be_bytes(), i).unwrap();
            }
            for _ in 0..64 {
                pin().flush();
            }
            assert_eq!(*held, 7);
            // Keys present throughout are all yielded, in order. 7 was removed after the
            // iteration started, so it may be yielded (the Cuckoo Trie read it in its first
            // batch, the MLP index in its first leaf version) or not (the skip list reads
            // live), but not twice.
            let mut rest: Vec<u64> = it.map(|(_, &v)| v).collect();
            assert!(rest.windows(2).all(|p| p[0] < p[1]), "out of order");
            assert!(rest.iter().all(|&v| (1..5000).contains(&v)), "unknown key");
            let sevens = rest.iter().filter(|&&v| v == 7).count();
            assert!(sevens <= 1, "7 yielded {sevens} times");
            rest.retain(|&v| v != 7);
            let throughout: Vec<u64> = (1..50).filter(|&i| i != 7).collect();
            assert!(
                rest.starts_with(&throughout),
                "a key present throughout is missing: {rest:?}"
            );
            if $yields_later_keys {
                let want: Vec<u64> = (1..5000).filter(|&i| i != 7).collect();
                assert_eq!(rest, want);
            }
        }};
    }
    check!(SkipList::<u64>::new(), true);
    check!(growing_trie(), true);
    check!(ConcurrentMlpIndexBytes::<u64>::new(), true);
}

/// Which ends a reader takes entries from.
#[derive(Clone, Copy, Debug)]
enum Ends {
    Front,
    Back,
    Both,
}

/// Writers churn keys of their own (`w{id}-{n}`) while readers iterate over everything.
/// Stable keys (`s-{n}`) are present throughout and must all be yielded; gone keys (`g-{n}`),
/// removed before any reader starts and never re-inserted, never.
macro_rules! range_contract_under_churn {
    ($map:expr) => {{
        let map = $map;
        const STABLE: usize = 300;
        const GONE: usize = 100;
        let stable: BTreeSet<Vec<u8>> = (0..STABLE)
            .map(|i| format!("s-{i:04}").into_bytes())
            .collect();
        for (i, k) in stable.iter().enumerate() {
            map.insert(k, i as u64).unwrap();
        }
        for i in 0..GONE {
            let k = format!("g-{i:04}").into_bytes();
            map.insert(&k, 0).unwrap();
            assert_eq!(map.remove(&k), Some(0));
        }
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for w in 0..2 {
                let (map, stop) = (&map, &stop);
                s.spawn(move || {
                    let mut rng = Rng(0x9e37 + w);
                    while !stop.load(Ordering::Relaxed) {
                        let k = format!("w{w}-{:03}", rng.below(400)).into_bytes();
                        if rng.below(2) == 0 {
                            map.insert(&k, 1).unwrap();
                        } else {
                            map.remove(&k);
                        }
                    }
                });
            }
            let readers: Vec<_> = [Ends::Front, Ends::Back, Ends::Both]
                .into_iter()
                .map(|ends| {
                    let (map, stable) = (&map, &stable);
                    s.spawn(move || {
                        let mut rng = Rng(7 + ends as u64);
                        for round in 0..30 {
                            let guard = pin();
                            let mut it = map.iter(&guard);
                            let (mut front, mut back): (Vec<&[u8]>, Vec<&[u8]>) =
                                (Vec::new(), Vec::new());
                            loop {
                                let from_front = match ends {
                                    Ends::Front => true,
                                    Ends::Back => false,
                                    Ends::Both => rng.below(2) == 0,
                                };
                                let item = if from_front {
                                    it.next()
                                } else {
                                    it.next_back()
                                };
                                match (item, from_front) {
                                    (Some((k, _)), true) => front.push(k),
                                    (Some((k, _)), false) => back.push(k),
                                    (None, _) => break,
                                }
                            }
                            let what = format!("{ends:?} round {round}");
                            assert!(front.windows(2).all(|p| p[0] < p[1]), "{what}: front");
                            assert!(back.windows(2).all(|p| p[0] > p[1]), "{what}: back");
                            if let (Some(f), Some(b)) = (front.last(), back.last()) {
                                assert!(f < b, "{what}: the ends crossed");
                            }
                            let seen: BTreeSet<&[u8]> =
                                front.iter().chain(back.iter()).copied().collect();
                            assert_eq!(seen.len(), front.len() + back.len(), "{what}: twice");
                            for k in stable {
                                assert!(seen.contains(k.as_slice()), "{what}: skipped {k:?}");
                            }
                            assert!(!seen.iter().any(|k| k.starts_with(b"g-")), "{what}: gone");
                        }
                    })
                })
                .collect();
            // Stop the writers before a reader's failure is passed on, or the scope would wait
            // for them forever.
            let results: Vec<_> = readers.into_iter().map(|r| r.join()).collect();
            stop.store(true, Ordering::Relaxed);
            for r in results {
                if let Err(panic) = r {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }};
}

#[test]
fn skiplist_range_contract_under_churn() {
    range_contract_under_churn!(SkipList::<u64>::new());
}

#[test]
fn cuckoo_trie_range_contract_under_churn() {
    range_contract_under_churn!(growing_trie());
}

#[test]
fn mlp_index_bytes_range_contract_under_churn() {
    range_contract_under_churn!(ConcurrentMlpIndexBytes::<u64>::new());
}
