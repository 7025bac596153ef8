//! Integration tests of [`mlpdex::pi::Pi`] through its public API
//! (`cargo test -p mlpdex --test pi`).
//!
//! 1. **Batches against sequential application**: every batch's answers equal those of
//!    running its queries one at a time, in batch order, on a `BTreeMap`; batches mix every
//!    query kind, repeat keys (several writes and reads of one key, ranges and count-limited
//!    scans over keys written before and after them in the batch), and include empty batches
//!    and batches of one.
//!    Maps of 1, 2, 4 and 8 workers run the same stream and must all agree with the oracle.
//! 2. **Streams with rebuilds**: long streams whose writes trigger many rebuilds of the
//!    index layer (and sweeps of deleted nodes) lose nothing: contents and `len` checked
//!    after every batch by full ranges.
//! 3. **Configuration**: invalid configurations are errors; the pool can change size
//!    between batches.
//! 4. **One query at a time**: the `BTreeMap`-shaped methods and `OrderedMap` against a
//!    `BTreeMap`, `FromIterator`, `Extend` and `Debug`.

use std::collections::BTreeMap;
use std::ops::Bound;

use mlpdex::Error;
use mlpdex::pi::{Answer, Batch, Config, Pi, Query};
use mlpdex::testing::TestRng;

mod pi_common;

fn pi(threads: usize) -> Pi {
    Pi::with_config(Config {
        threads,
        ..Config::default()
    })
    .unwrap()
}

/// Keys that stress the index: a small dense domain (repeats within a batch), the ends of
/// the key space and the sign bit (the SIMD compares flip it), and random keys.
fn key(rng: &mut TestRng) -> u64 {
    match rng.below(8) {
        0 => rng.below(4),
        1 => u64::MAX - rng.below(4),
        2 => (1 << 63) + rng.below(8) - 4,
        3 | 4 => rng.below(3000) * 7,
        5 => rng.next_u64(),
        _ => 1_000_000 + rng.below(50_000),
    }
}

fn bound(rng: &mut TestRng, k: u64) -> Bound<u64> {
    match rng.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn query(rng: &mut TestRng) -> Query {
    let k = key(rng);
    match rng.below(10) {
        0..=2 => Query::Get(k),
        3..=5 => Query::Insert(k, rng.next_u64()),
        6..=7 => Query::Remove(k),
        8 if rng.below(2) == 0 => {
            // Scans of every length: none, one (a lower bound), short, past the end.
            let count = match rng.below(4) {
                0 => 0,
                1 => 1,
                2 => rng.below(20) as usize,
                _ => rng.below(5000) as usize,
            };
            Query::Scan(k, count)
        }
        _ => {
            // Mostly short ranges; some empty, inverted or unbounded ones.
            let lo = bound(rng, k);
            let span = match rng.below(4) {
                0 => rng.below(10),
                1 => rng.below(10_000),
                2 => rng.next_u64(),
                _ => 0,
            };
            let hi = bound(rng, k.saturating_add(span));
            if rng.below(20) == 0 {
                Query::Range(hi, lo)
            } else {
                Query::Range(lo, hi)
            }
        }
    }
}

/// The answers of running `batch` one query at a time on `oracle`.
fn sequential(oracle: &mut BTreeMap<u64, u64>, batch: &Batch) -> Vec<Answer> {
    batch
        .queries()
        .iter()
        .map(|q| match *q {
            Query::Get(k) => Answer::Value(oracle.get(&k).copied()),
            Query::Insert(k, v) => Answer::Value(oracle.insert(k, v)),
            Query::Remove(k) => Answer::Value(oracle.remove(&k)),
            Query::Scan(k, count) => Answer::Entries(
                oracle
                    .range(k..)
                    .take(count)
                    .map(|(&k, &v)| (k, v))
                    .collect(),
            ),
            Query::Range(lo, hi) => {
                // As inclusive bounds (BTreeMap panics on inverted ranges; a batch answers
                // them empty).
                let lo = match lo {
                    Bound::Included(a) => Some(a),
                    Bound::Excluded(a) => a.checked_add(1),
                    Bound::Unbounded => Some(0),
                };
                let hi = match hi {
                    Bound::Included(b) => Some(b),
                    Bound::Excluded(b) => b.checked_sub(1),
                    Bound::Unbounded => Some(u64::MAX),
                };
                Answer::Entries(match (lo, hi) {
                    (Some(a), Some(b)) if a <= b => {
                        oracle.range(a..=b).map(|(&k, &v)| (k, v)).collect()
                    }
                    _ => Vec::new(),
                })
            }
        })
        .collect()
}

fn contents(p: &mut Pi) -> Vec<(u64, u64)> {
    let mut b = Batch::new();
    b.push(Query::range(..));
    p.execute(&mut b);
    b.answers()[0].entries().to_vec()
}

#[test]
fn batches_answer_like_sequential_application_on_any_worker_count() {
    let mut rng = TestRng::new(2020);
    let mut maps: Vec<Pi> = [1, 2, 4, 8].into_iter().map(pi).collect();
    let mut oracle = BTreeMap::new();
    for round in 0..400 {
        let size = match round % 10 {
            0 => 0,
            1 => 1,
            2 => rng.below(5000) as usize,
            _ => rng.below(700) as usize,
        };
        let batch: Batch = (0..size).map(|_| query(&mut rng)).collect();
        let want = sequential(&mut oracle, &batch);
        pi_common::run_on_all(&mut maps, &batch, &want, oracle.len(), round);
    }
    for m in &mut maps {
        let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(contents(m), all);
    }
}

/// One key written, read and ranged over many times in one batch, across worker cuts.
#[test]
fn one_key_many_times_in_a_batch_runs_in_batch_order() {
    for threads in [1, 2, 4, 8] {
        let mut m = pi(threads);
        let mut oracle = BTreeMap::new();
        // A map large enough to be rebuilt, so the index spreads the keys over workers.
        let load: Batch = (0..20_000u64).map(|k| Query::Insert(k * 3, k)).collect();
        sequential(&mut oracle, &load);
        m.execute(&mut load.clone());
        let mut rng = TestRng::new(threads as u64);
        for _ in 0..30 {
            let k = rng.below(60_000);
            let mut b = Batch::new();
            for i in 0..2000u64 {
                b.push(match i % 6 {
                    0 => Query::Insert(k, i),
                    1 => Query::Get(k),
                    2 => Query::Remove(k),
                    3 if i % 4 == 3 => Query::Scan(k.saturating_sub(3), 4),
                    3 => Query::range(k.saturating_sub(5)..k + 5),
                    4 => Query::Insert(k + 1 + i % 4, i),
                    _ => Query::Remove(rng.below(60_000)),
                });
            }
            let want = sequential(&mut oracle, &b);
            m.execute(&mut b);
            assert_eq!(b.answers(), want, "{threads} workers");
        }
        let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(contents(&mut m), all);
    }
}

/// Long streams with many rebuilds: contents checked after every batch.
#[test]
fn streams_with_rebuilds_lose_nothing() {
    let batches = if cfg!(debug_assertions) { 300 } else { 1500 };
    for threads in [1, 3] {
        let mut rng = TestRng::new(77 + threads as u64);
        let mut m = Pi::with_config(Config {
            threads,
            rebuild_fraction: 0.05,
            ..Config::default()
        })
        .unwrap();
        let mut oracle = BTreeMap::new();
        for round in 0..batches {
            // Phases of growth and of shrinking, so rebuilds drop many deleted nodes.
            let grow = (round / 100) % 2 == 0;
            let batch: Batch = (0..2000)
                .map(|_| {
                    let k = rng.below(200_000);
                    match (grow, rng.below(4)) {
                        (true, 0..=2) | (false, 0) => Query::Insert(k, rng.next_u64()),
                        (_, 3) => Query::Get(k),
                        _ => Query::Remove(k),
                    }
                })
                .collect();
            let want = sequential(&mut oracle, &batch);
            let mut b = batch;
            m.execute(&mut b);
            assert_eq!(b.answers(), want, "{threads} workers, round {round}");
            assert_eq!(m.len(), oracle.len());
            if round % 50 == 49 {
                let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
                assert_eq!(contents(&mut m), all, "round {round}");
            }
        }
    }
}

#[test]
fn invalid_configurations_are_errors() {
    let bad = [
        Config {
            threads: 0,
            ..Config::default()
        },
        Config {
            rebuild_fraction: 0.0,
            ..Config::default()
        },
        Config {
            rebuild_fraction: 1.5,
            ..Config::default()
        },
        Config {
            rebuild_fraction: f64::NAN,
            ..Config::default()
        },
    ];
    for c in bad {
        assert!(
            matches!(Pi::<u64>::with_config(c), Err(Error::InvalidConfig { .. })),
            "{c:?}"
        );
    }
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pi>();
    let mut m = pi(2);
    assert!(matches!(m.set_threads(0), Err(Error::InvalidConfig { .. })));
    assert_eq!(m.config().threads, 2, "a refused pool keeps the old one");
}

/// Changing the pool between batches changes nothing but who runs them.
#[test]
fn set_threads_between_batches_keeps_every_answer() {
    let mut m = pi(1);
    let mut oracle = BTreeMap::new();
    let mut rng = TestRng::new(99);
    for (round, threads) in [2, 4, 1, 8, 3, 2].into_iter().enumerate() {
        m.set_threads(threads).unwrap();
        assert_eq!(m.config().threads, threads);
        for _ in 0..5 {
            let mut b: Batch = (0..3000).map(|_| query(&mut rng)).collect();
            let want = sequential(&mut oracle, &b);
            m.execute(&mut b);
            assert_eq!(b.answers(), want, "round {round}, {threads} workers");
            // One lookup without a batch answers like one in a batch.
            for q in b.queries().iter().take(200) {
                let k = match *q {
                    Query::Get(k) | Query::Insert(k, _) | Query::Remove(k) | Query::Scan(k, _) => k,
                    Query::Range(..) => continue,
                };
                assert_eq!(m.get(k), oracle.get(&k).copied(), "get({k})");
            }
        }
    }
    let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(contents(&mut m), all);
    assert_eq!(m.len(), all.len());
}

/// The rebuild after a load builds an index layer, and the rebuild after mass deletes frees
/// the deleted nodes, whose memory the next load reuses; rebuilds run in the background,
/// `finish_rebuild` waits for one. (The unit test `nodes_are_linked_rebuilt_unlinked_and_freed`
/// counts the nodes exactly.)
#[test]
fn rebuilds_index_new_nodes_and_free_deleted_ones() {
    for threads in [1, 2] {
        let mut m = pi(threads);
        let load: Batch = (0..20_000u64).map(|k| Query::Insert(k, k)).collect();
        m.execute(&mut load.clone());
        assert!(m.is_rebuilding());
        m.finish_rebuild();
        assert!(!m.is_rebuilding());
        let loaded = m.memory_usage();
        assert!(
            loaded > 20_000 * 32,
            "nodes and index after the load: {m:?}"
        );
        let mut del: Batch = (0..20_000u64).map(Query::Remove).collect();
        m.execute(&mut del);
        assert_eq!(m.len(), 0);
        m.finish_rebuild();
        assert!(
            m.memory_usage() < loaded,
            "the empty index layer kept: {m:?}"
        );
        assert_eq!(contents(&mut m), []);
        m.execute(&mut load.clone());
        m.finish_rebuild();
        assert_eq!(contents(&mut m).len(), 20_000);
        // One worker reuses every freed slot before it takes new memory (with two, a
        // worker's spare slots may be out of the other's reach, and a new chunk doubles the
        // nodes' memory: not a deterministic check).
        if threads == 1 {
            assert!(
                m.memory_usage() <= loaded + loaded / 10,
                "freed nodes not reused: {} bytes, {loaded} after the first load",
                m.memory_usage()
            );
        }
    }
}

/// Nodes deleted while a rebuild scans may be in the new index: they stay linked (deleted)
/// until the next rebuild, then go; nothing is lost or freed early meanwhile.
#[test]
fn deletes_during_a_rebuild_wait_for_the_next_one() {
    let mut rng = TestRng::new(404);
    for threads in [1, 2] {
        let mut m = pi(threads);
        let mut oracle = BTreeMap::new();
        for round in 0..60 {
            let batch: Batch = (0..3000)
                .map(|_| {
                    let k = rng.below(30_000);
                    if round % 2 == 0 || rng.below(3) == 0 {
                        Query::Insert(k, rng.next_u64())
                    } else {
                        Query::Remove(k)
                    }
                })
                .collect();
            let want = sequential(&mut oracle, &batch);
            let mut b = batch;
            m.execute(&mut b);
            assert_eq!(b.answers(), want, "round {round}");
            if round % 7 == 0 {
                m.finish_rebuild();
            }
        }
        m.finish_rebuild();
        let all: Vec<(u64, u64)> = oracle.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(contents(&mut m), all);
        // Two more rebuilds with no deletes in between free every deleted node (counted
        // exactly by the unit test `nodes_are_linked_rebuilt_unlinked_and_freed`); nothing is
        // lost meanwhile.
        for round in 0..2u64 {
            let mut b: Batch = (0..2000u64)
                .map(|k| Query::Insert(1_000_000 + 2000 * round + k, k))
                .collect();
            m.execute(&mut b);
            m.finish_rebuild();
        }
        assert_eq!(contents(&mut m).len(), oracle.len() + 4000);
    }
}

/// The one-at-a-time map API and `OrderedMap` against a `BTreeMap`: writes as batches of one
/// between larger batches (so rebuilds run), reads on the calling thread.
#[test]
fn the_map_api_answers_like_a_btreemap() {
    use mlpdex::OrderedMap;
    let mut rng = TestRng::new(7);
    for threads in [1, 2] {
        let mut m = pi(threads);
        let mut oracle = BTreeMap::new();
        for round in 0..40 {
            // A batch that grows the map past rebuild thresholds.
            let mut b: Batch = (0..500)
                .map(|_| Query::Insert(key(&mut rng), rng.next_u64()))
                .collect();
            sequential(&mut oracle, &b);
            m.execute(&mut b);
            for _ in 0..50 {
                let k = key(&mut rng);
                match rng.below(3) {
                    0 => assert_eq!(m.insert(k, round), oracle.insert(k, round)),
                    1 => assert_eq!(m.remove(k), oracle.remove(&k)),
                    _ => assert_eq!(m.get(k), oracle.get(&k).copied()),
                }
                assert_eq!(m.contains_key(k), oracle.contains_key(&k));
                let (lo, hi) = (k.saturating_sub(rng.below(5000)), k);
                let want: Vec<(u64, u64)> = oracle.range(lo..=hi).map(|(&a, &b)| (a, b)).collect();
                assert_eq!(m.range(lo..=hi).collect::<Vec<_>>(), want);
                let back: Vec<(u64, u64)> = m.range(lo..=hi).rev().collect();
                assert!(back.iter().rev().eq(want.iter()));
                let lb = OrderedMap::lower_bound(&m, Bound::Included(&k.to_be_bytes()[..]));
                let want_lb = oracle
                    .range(k..)
                    .next()
                    .map(|(&a, &b)| (a.to_be_bytes(), b));
                assert_eq!(lb.map(|(a, b)| (a, *b)), want_lb);
            }
            assert_eq!(m.len(), oracle.len());
            assert_eq!(
                m.first_key_value(),
                oracle.first_key_value().map(|(&a, &b)| (a, b))
            );
            assert_eq!(
                m.last_key_value(),
                oracle.last_key_value().map(|(&a, &b)| (a, b))
            );
        }
        assert!(m.iter().eq(oracle.iter().map(|(&a, &b)| (a, b))));
        assert_eq!(OrderedMap::len(&m), oracle.len());
        assert!(OrderedMap::insert(&mut m, b"short", 1).is_err());
        m.clear();
        assert!(m.is_empty() && m.iter().next().is_none());
        assert_eq!(m.config().threads, threads, "clear keeps the pool");
        let mut b: Batch = (0..3000u64).map(|k| Query::Insert(k, k)).collect();
        m.execute(&mut b);
        assert_eq!((m.len(), m.get(2999)), (3000, Some(2999)));
    }
    // FromIterator and Extend in batches, later entries winning; Debug of entries.
    let mut m: Pi = (0..20_000u64).map(|k| (k % 15_000, k)).collect();
    m.extend([(3, 33), (20_000, 1)]);
    assert_eq!(m.len(), 15_001);
    assert_eq!(m.get(14_999), Some(14_999));
    assert_eq!(m.get(1), Some(15_001));
    assert_eq!(m.get(3), Some(33));
    let small: Pi = [(2, 20), (1, 10)].into_iter().collect();
    assert_eq!(format!("{small:?}"), "{1: 10, 2: 20}");
}
