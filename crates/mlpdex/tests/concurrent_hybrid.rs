//! Integration tests of [`mlpdex::hybrid::ConcurrentHybrid`]
//! (`cargo test -p mlpdex --release --test concurrent_hybrid`).
//!
//! Every map here merges often (small `min_merge`, ratio 2), so merges run on the merge
//! thread all through each test, freezing and swapping stages under the readers and writers.
//!
//! 1. **Differential runs** through `&self` against the `BTreeMap` oracle of the testing
//!    driver, every key shape, each static stage (compact ART, compact B-tree, FST): the
//!    driver's thread and the merge thread interleave, so every operation (inserts, updates,
//!    removes, gets, seeks with every bound kind, ranges both ways) runs against stages being
//!    frozen and swapped. `check_invariants()` after each run.
//! 2. **Property tests**: arbitrary operation sequences, then `check_invariants()`.
//! 3. **The generic multi-threaded harnesses** every concurrent map of the crate runs
//!    ([`concurrent::stress`]: linearizability of reads and of returned values with
//!    per-thread stamps, exact final contents; [`concurrent::range_visits_under_churn`];
//!    [`concurrent::same_key_stress`]; [`concurrent::linearizable_histories`]; the empty-key
//!    and prefix-key edge cases).
//! 4. **Versions never go back across swaps**: 4 writers raise per-key version numbers
//!    (each writer owns its keys; some keys are removed and re-inserted with a higher
//!    version) while 2 readers read every key over and over: a reader never sees a version
//!    older than one it saw before, never sees a key that is never removed go missing after
//!    it was seen, and the final contents equal the writers' logs. The test checks that
//!    merges ran during it.
//! 5. `merge`, `clear` and dropping the map while merges run; stats and configuration errors.
//!
//! No test asserts on timing.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};

use mlpdex::compact_art::CompactArt;
use mlpdex::compact_btree::CompactBTree;
use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
use mlpdex::fst::Fst;
use mlpdex::hybrid::{ConcurrentHybrid, Config, StaticStage};
use mlpdex::testing::concurrent::{
    self, ChurnPlan, HistoryPlan, Plan, SameKeyPlan, Sharing, Subject,
};
use mlpdex::testing::{
    KeyShape, TestRng, arb_ops, run_ops_concurrent, try_differential_concurrent,
};
use mlpdex::{ConcurrentOrderedMap, Error};
use proptest::prelude::*;

type Map<S> = ConcurrentHybrid<S>;

fn small<S: StaticStage + Send + Sync + 'static>(ratio: u32, min_merge: usize) -> Map<S> {
    Map::with_config(Config { ratio, min_merge }).expect("a valid config")
}

fn audit<S: StaticStage + Send + Sync + 'static>(map: &Map<S>, ctx: &str) {
    map.wait_for_merges();
    if let Err(e) = map.check_invariants() {
        panic!("{ctx}: check_invariants() failed: {e}");
    }
}

/// The map as the generic harnesses see it: merging every 64 entries at ratio 2.
fn subject() -> Subject<Map<CompactArt>> {
    Subject::new("concurrent hybrid, min_merge 64", || {
        small::<CompactArt>(2, 64)
    })
    .with_audit(|m: &Map<CompactArt>| {
        m.wait_for_merges();
        m.check_invariants()
    })
    .with_max_key_len(ConcurrentCuckooTrie::<u64>::MAX_KEY_LEN)
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs
// ---------------------------------------------------------------------------------------------

const SHAPES: &[KeyShape] = KeyShape::ALL;

fn differential_for<S: StaticStage + Send + Sync + 'static>(name: &str) {
    for &shape in SHAPES {
        let steps = if shape == KeyShape::Long { 1500 } else { 4000 };
        for (seed, ratio, min_merge) in [(1, 2, 16), (2, 10, 64), (3, 1, 1)] {
            let map = small::<S>(ratio, min_merge);
            if let Err(d) = try_differential_concurrent(|| &map, shape, seed, steps) {
                panic!("[{name}, ratio {ratio}, min_merge {min_merge}] {d}");
            }
            audit(&map, &format!("[{name}] after {shape:?} seed {seed}"));
            assert_eq!(map.stats().failures, 0);
        }
    }
}

#[test]
fn differential_compact_art() {
    differential_for::<CompactArt>("compact ART");
}

#[test]
fn differential_compact_btree() {
    differential_for::<CompactBTree>("compact B-tree");
}

#[test]
fn differential_fst() {
    differential_for::<Fst>("FST");
}

// ---------------------------------------------------------------------------------------------
// 2. Property tests
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn proptest_arbitrary_ops(ops in arb_ops(), min_merge in 1usize..40) {
        let map = small::<CompactArt>(2, min_merge);
        run_ops_concurrent(&map, &ops).map_err(TestCaseError::fail)?;
        map.wait_for_merges();
        map.check_invariants().map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The generic multi-threaded harnesses
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_partitioned_4_writers_2_readers() {
    concurrent::stress(
        &subject(),
        Plan::standard(Sharing::Partitioned, 4, 2, 0x4B1D_0001),
    );
}

#[test]
fn stress_shared_keys_4_writers_2_readers() {
    concurrent::stress(
        &subject(),
        Plan::standard(Sharing::Shared, 4, 2, 0x4B1D_0002),
    );
}

#[test]
fn range_visits_under_churn_4_writers() {
    concurrent::range_visits_under_churn(&subject(), ChurnPlan::standard(4, 0x4B1D_0003));
}

#[test]
fn same_key_stress_8_threads_2_keys() {
    concurrent::same_key_stress(&subject(), SameKeyPlan::standard(2, 8, 0x4B1D_0004));
}

#[test]
fn same_key_stress_4_threads_400_keys() {
    concurrent::same_key_stress(&subject(), SameKeyPlan::standard(400, 4, 0x4B1D_0005));
}

#[test]
fn empty_key_and_prefix_keys() {
    concurrent::empty_key_alone_and_with_others(&subject());
    concurrent::prefix_keys_in_every_insertion_order(&subject());
}

// ---------------------------------------------------------------------------------------------
// 4. Versions never go back across swaps
// ---------------------------------------------------------------------------------------------

/// Keys per writer; keys whose index is a multiple of [`CHURNED`] are removed and re-inserted.
const KEYS_PER_WRITER: u64 = 1500;
const CHURNED: u64 = 5;
const WRITERS: u64 = 4;
/// Rounds each writer runs at least; it goes on until [`MERGES`] merges ran.
const ROUNDS: u64 = 12;
const MERGES: u64 = 20;

/// Keys of the static stage that no writer touches.
const BACKGROUND: u64 = 200_000;

/// Background key `i`: 9 bytes, spread among the writers' keys.
fn background_key(i: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&(i * 7 % (KEYS_PER_WRITER * WRITERS)).to_be_bytes());
    k[8] = (i / (KEYS_PER_WRITER * WRITERS)) as u8;
    k
}

/// Writer `w`'s key `i`: 8 bytes, so that keys of all writers interleave in key order.
fn versioned_key(w: u64, i: u64) -> [u8; 8] {
    (i * WRITERS + w).to_be_bytes()
}

#[test]
fn versions_never_go_back_across_swaps() {
    // A large static stage of other keys makes each merge long, so that readers and writers
    // spend most of the run against a frozen stage: a small threshold (ratio 1000) then
    // starts the next merge soon after each swap.
    let map = small::<CompactArt>(1000, 256);
    for i in 0..BACKGROUND {
        map.insert(&background_key(i), i).expect("insert");
    }
    map.merge().expect("merge");
    let done = AtomicBool::new(false);
    let logs: Vec<HashMap<[u8; 8], Option<u64>>> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                let (map, done) = (&map, &done);
                s.spawn(move || {
                    let mut seen: HashMap<[u8; 8], u64> = HashMap::new();
                    let mut rng = TestRng::new(r + 100);
                    let mut reads = 0u64;
                    while !done.load(Ordering::Acquire) || reads < 20_000 {
                        let w = rng.next_u64() % WRITERS;
                        let i = rng.next_u64() % KEYS_PER_WRITER;
                        let key = versioned_key(w, i);
                        let guard = mlpdex::epoch::pin();
                        let got = map.get(&key, &guard);
                        reads += 1;
                        match (got, seen.get(&key).copied()) {
                            (Some(v), Some(before)) => assert!(
                                v >= before,
                                "key {key:?}: version {v} read after version {before}"
                            ),
                            (None, Some(before)) => assert!(
                                i.is_multiple_of(CHURNED),
                                "key {key:?} (never removed) went missing after version {before}"
                            ),
                            _ => {}
                        }
                        if let Some(v) = got {
                            seen.insert(key, v);
                        }
                        // Scans see each stable key too, in order.
                        if reads.is_multiple_of(512) {
                            let lo = versioned_key(w, i);
                            let mut last: Option<Vec<u8>> = None;
                            for (k, v) in map.range(lo.., &guard).take(64) {
                                if let Some(l) = &last {
                                    assert!(l < &k, "range out of order");
                                }
                                if let Ok(k8) = <[u8; 8]>::try_from(k.as_slice())
                                    && let Some(&before) = seen.get(&k8)
                                {
                                    assert!(v >= before, "scan read an older version of {k8:?}");
                                }
                                last = Some(k);
                            }
                        }
                    }
                    reads
                })
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let map = &map;
                s.spawn(move || {
                    let mut log: HashMap<[u8; 8], Option<u64>> = HashMap::new();
                    let mut round = 0;
                    while round < ROUNDS || map.stats().merges < MERGES {
                        round += 1;
                        assert!(round < 100_000, "merges stopped: {:?}", map.stats());
                        for i in 0..KEYS_PER_WRITER {
                            let key = versioned_key(w, i);
                            let prev = log.get(&key).copied().flatten();
                            if i.is_multiple_of(CHURNED) && round % 3 == 0 {
                                assert_eq!(map.remove(&key), prev, "remove of {key:?}");
                                log.insert(key, None);
                            } else {
                                let got = map.insert(&key, round).expect("insert");
                                assert_eq!(got, prev, "insert of {key:?} returned");
                                log.insert(key, Some(round));
                            }
                        }
                    }
                    log
                })
            })
            .collect();
        let logs = writers
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect();
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().expect("reader") > 0);
        }
        logs
    });
    audit(&map, "after the versioned run");
    let mut expected: BTreeMap<Vec<u8>, u64> = (0..BACKGROUND)
        .map(|i| (background_key(i).to_vec(), i))
        .collect();
    for log in logs {
        for (k, v) in log {
            if let Some(v) = v {
                expected.insert(k.to_vec(), v);
            }
        }
    }
    let guard = mlpdex::epoch::pin();
    let got: BTreeMap<Vec<u8>, u64> = map.iter(&guard).collect();
    assert_eq!(got, expected);
    let stats = map.stats();
    assert!(stats.merges >= MERGES, "only {} merges ran", stats.merges);
    assert_eq!(stats.failures, 0);
}

// ---------------------------------------------------------------------------------------------
// 5. Merge, clear, drop; stats and configuration
// ---------------------------------------------------------------------------------------------

#[test]
fn forced_merges_and_clears_while_threads_read_and_write() {
    let map = small::<CompactBTree>(4, 128);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (m, stop) = (&map, &stop);
        // A writer of keys 0..1000 that re-inserts its whole set after each clear.
        s.spawn(move || {
            let mut rng = TestRng::new(7);
            while !stop.load(Ordering::Acquire) {
                let k = rng.next_u64() % 1000;
                m.insert(&k.to_be_bytes(), k).expect("insert");
            }
        });
        // A reader: every value read is its key's own.
        s.spawn(move || {
            let mut rng = TestRng::new(8);
            while !stop.load(Ordering::Acquire) {
                let k = rng.next_u64() % 1000;
                let g = mlpdex::epoch::pin();
                if let Some(v) = m.get(&k.to_be_bytes(), &g) {
                    assert_eq!(v, k);
                }
                if let Some((key, v)) = m.lower_bound(Bound::Included(&k.to_be_bytes()), &g) {
                    assert!(key.as_slice() >= &k.to_be_bytes()[..]);
                    assert_eq!(key, v.to_be_bytes());
                }
            }
        });
        for round in 0..30 {
            if round % 10 == 9 {
                m.clear().expect("clear");
            } else {
                m.merge().expect("merge");
            }
        }
        stop.store(true, Ordering::Release);
    });
    audit(&map, "after merges and clears");
}

#[test]
fn dropping_the_map_while_a_merge_runs() {
    for n in [1000u64, 20_000] {
        let map = small::<CompactArt>(1, 500);
        for i in 0..n {
            map.insert(&i.to_be_bytes(), i).expect("insert");
        }
        // A merge may be under way: dropping waits for it and stops the thread.
        drop(map);
    }
}

#[test]
fn merge_moves_everything_to_the_static_stage() {
    let map = ConcurrentHybrid::new();
    assert!(map.is_empty());
    map.merge().expect("merging nothing");
    assert_eq!(map.stats().merges, 0);
    for i in 0..100u64 {
        map.insert(&i.to_be_bytes(), i).expect("insert");
    }
    assert_eq!(map.remove(&5u64.to_be_bytes()), Some(5));
    map.merge().expect("merge");
    assert_eq!(
        (map.dynamic_len(), map.static_len(), map.len()),
        (0, 99, 99)
    );
    let s = map.stats();
    assert_eq!((s.merges, s.last_entries, s.failures), (1, 99, 0));
    assert!(map.last_merge_error().is_none());
    // Updates and removes of static keys are hidden by the dynamic stage until merged.
    assert_eq!(
        map.insert(&7u64.to_be_bytes(), 70).expect("update"),
        Some(7)
    );
    assert_eq!(map.remove(&8u64.to_be_bytes()), Some(8));
    assert_eq!(map.remove(&8u64.to_be_bytes()), None);
    let g = mlpdex::epoch::pin();
    assert_eq!(map.get(&7u64.to_be_bytes(), &g), Some(70));
    assert_eq!(map.get(&8u64.to_be_bytes(), &g), None);
    assert_eq!(map.dynamic_len(), 2);
    assert_eq!(map.first(&g), Some((0u64.to_be_bytes().to_vec(), 0)));
    assert_eq!(map.last(&g), Some((99u64.to_be_bytes().to_vec(), 99)));
    assert_eq!(
        map.upper_bound(Bound::Excluded(&9u64.to_be_bytes()), &g),
        Some((7u64.to_be_bytes().to_vec(), 70))
    );
    let debug = format!("{map:?}");
    assert!(debug.contains("len: 98"), "{debug}");
}

#[test]
fn config_errors_are_typed() {
    for (ratio, min_merge) in [(0, 1), (1, 0)] {
        assert!(matches!(
            Map::<CompactArt>::with_config(Config { ratio, min_merge }),
            Err(Error::InvalidConfig { .. })
        ));
    }
    let map = ConcurrentHybrid::new();
    let too_long = vec![0u8; ConcurrentCuckooTrie::<u64>::MAX_KEY_LEN + 1];
    assert!(matches!(
        map.insert(&too_long, 1),
        Err(Error::KeyTooLong { .. })
    ));
    assert!(map.is_empty());
    assert_eq!(ConcurrentOrderedMap::len(&map), 0);
}

#[test]
fn linearizable_histories_4_threads() {
    concurrent::linearizable_histories(&subject(), HistoryPlan::standard(4, 0x11_4B04));
    // Merging every 2 entries, so that runs race merges (in the background) too.
    let merging = Subject::new("concurrent hybrid, min_merge 2", || {
        small::<CompactArt>(2, 2)
    })
    .with_audit(|m: &Map<CompactArt>| {
        m.wait_for_merges();
        m.check_invariants()
    });
    concurrent::linearizable_histories(
        &merging,
        HistoryPlan {
            runs: 1_000,
            ..HistoryPlan::standard(4, 0x11_4B05)
        },
    );
}
