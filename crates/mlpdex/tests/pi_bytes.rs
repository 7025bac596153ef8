//! Integration tests of [`mlpdex::pi::Pi`] on byte-string keys, `Pi<Vec<u8>>`
//! (`cargo test -p mlpdex --test pi_bytes`).
//!
//! The index layer compares 8-byte prefixes and settles ties by comparing whole keys, so the
//! keys here are chosen to tie: the empty key, keys of only 0x00 and 0xFF bytes (prefixes of
//! one another, and equal once zero-padded), many keys sharing their first 8 or more bytes,
//! multi-KiB keys that differ only at the end, and short random keys.
//!
//! 1. **Batches against sequential application** on 1, 2, 4 and 8 workers, as for `u64` keys
//!    (`tests/pi.rs`): every query kind, repeated keys, ranges with every kind of bound,
//!    empty and inverted ranges, scans, empty batches and batches of one.
//! 2. **Streams with rebuilds**: growth and shrinking phases rebuild the index layer and
//!    free deleted nodes many times; contents checked by full ranges.
//! 3. **One query at a time**: the byte-map methods and `OrderedMap` against a `BTreeMap`.

use std::collections::BTreeMap;
use std::ops::Bound;

use mlpdex::OrderedMap;
use mlpdex::pi::{Answer, Batch, Config, Pi, Query};
use mlpdex::testing::TestRng;

mod pi_common;

type Oracle = BTreeMap<Vec<u8>, u64>;

fn pi(threads: usize) -> Pi<Vec<u8>> {
    Pi::with_config(Config {
        threads,
        rebuild_fraction: 0.05,
        ..Config::default()
    })
    .unwrap()
}

/// Keys that tie on their 8-byte prefixes in every way (see the module docs).
fn key(rng: &mut TestRng) -> Vec<u8> {
    match rng.below(8) {
        // The empty key, and short runs of 0x00 and 0xFF.
        0 => (0..rng.below(4))
            .map(|_| if rng.below(2) == 0 { 0 } else { 0xff })
            .collect(),
        // A long shared prefix, then a number: a tie on every prefix.
        1 | 2 => format!("shared/prefix/{}", rng.below(800)).into_bytes(),
        // Eight bytes and more of 0xFF, the largest prefix.
        3 => vec![0xff; 7 + rng.below(4) as usize],
        // Multi-KiB keys that differ only in their last byte.
        4 if rng.below(8) == 0 => {
            let mut k = vec![b'k'; 3000];
            k.push(rng.below(4) as u8);
            k
        }
        // Keys of 0, 1 and 0xFF bytes around the 8-byte boundary.
        4 | 5 => (0..6 + rng.below(5))
            .map(|_| [0u8, 1, 0xff][rng.below(3) as usize])
            .collect(),
        // 8-byte integers, as an integer map would hold them.
        6 => (rng.below(3000) * 7).to_be_bytes().to_vec(),
        _ => (0..rng.below(12)).map(|_| rng.below(256) as u8).collect(),
    }
}

fn bound(rng: &mut TestRng, k: Vec<u8>) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn query(rng: &mut TestRng) -> Query<Vec<u8>> {
    let k = key(rng);
    match rng.below(10) {
        0..=2 => Query::Get(k),
        3..=5 => Query::Insert(k, rng.next_u64()),
        6..=7 => Query::Remove(k),
        8 if rng.below(2) == 0 => {
            let count = match rng.below(4) {
                0 => 0,
                1 => 1,
                2 => rng.below(20) as usize,
                _ => rng.below(3000) as usize,
            };
            Query::Scan(k, count)
        }
        _ => {
            // Bounds from two keys, in either order (some ranges are inverted or empty).
            let other = key(rng);
            Query::Range(bound(rng, k), bound(rng, other))
        }
    }
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on inverted ones and on
/// `(Excluded(x), Excluded(x))`); a batch answers those with no entries.
fn valid(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a <= b
        }
        _ => true,
    }
}

/// The answers of running `batch` one query at a time on `oracle`.
fn sequential(oracle: &mut Oracle, batch: &Batch<Vec<u8>>) -> Vec<Answer<Vec<u8>>> {
    batch
        .queries()
        .iter()
        .map(|q| match q {
            Query::Get(k) => Answer::Value(oracle.get(k).copied()),
            Query::Insert(k, v) => Answer::Value(oracle.insert(k.clone(), *v)),
            Query::Remove(k) => Answer::Value(oracle.remove(k)),
            Query::Scan(k, count) => Answer::Entries(
                oracle
                    .range::<Vec<u8>, _>((Bound::Included(k), Bound::Unbounded))
                    .take(*count)
                    .map(|(k, &v)| (k.clone(), v))
                    .collect(),
            ),
            Query::Range(lo, hi) => Answer::Entries(if valid(lo, hi) {
                oracle
                    .range((lo.clone(), hi.clone()))
                    .map(|(k, &v)| (k.clone(), v))
                    .collect()
            } else {
                Vec::new()
            }),
        })
        .collect()
}

fn contents(p: &mut Pi<Vec<u8>>) -> Vec<(Vec<u8>, u64)> {
    let mut b = Batch::new();
    b.push(Query::range(..));
    p.execute(&mut b);
    b.answers()[0].entries().to_vec()
}

fn entries(oracle: &Oracle) -> Vec<(Vec<u8>, u64)> {
    oracle.iter().map(|(k, &v)| (k.clone(), v)).collect()
}

#[test]
fn batches_answer_like_sequential_application_on_any_worker_count() {
    let mut rng = TestRng::new(2021);
    let mut maps: Vec<Pi<Vec<u8>>> = [1, 2, 4, 8].into_iter().map(pi).collect();
    let mut oracle = Oracle::new();
    let rounds = if cfg!(debug_assertions) { 150 } else { 600 };
    for round in 0..rounds {
        let size = match round % 10 {
            0 => 0,
            1 => 1,
            2 => rng.below(4000) as usize,
            _ => rng.below(600) as usize,
        };
        let batch: Batch<Vec<u8>> = (0..size).map(|_| query(&mut rng)).collect();
        let want = sequential(&mut oracle, &batch);
        pi_common::run_on_all(&mut maps, &batch, &want, oracle.len(), round);
    }
    for m in &mut maps {
        assert_eq!(contents(m), entries(&oracle));
    }
}

/// Long streams with many rebuilds over keys that all share a 16-byte prefix (every index
/// compare is a tie): contents checked every 25 batches.
#[test]
fn streams_with_rebuilds_lose_nothing() {
    let batches = if cfg!(debug_assertions) { 200 } else { 1000 };
    for threads in [1, 3] {
        let mut rng = TestRng::new(91 + threads as u64);
        let mut m = pi(threads);
        let mut oracle = Oracle::new();
        for round in 0..batches {
            let grow = (round / 60) % 2 == 0;
            let batch: Batch<Vec<u8>> = (0..1500)
                .map(|_| {
                    let k = format!("tenant-0000/obj/{}", rng.below(60_000)).into_bytes();
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
            if round % 25 == 24 {
                assert_eq!(contents(&mut m), entries(&oracle), "round {round}");
            }
        }
        m.finish_rebuild();
        assert_eq!(contents(&mut m), entries(&oracle));
    }
}

#[test]
fn the_map_api_answers_like_a_btreemap() {
    let mut rng = TestRng::new(5);
    let mut m = pi(2);
    let mut oracle = Oracle::new();
    for step in 0..3000 {
        let k = key(&mut rng);
        match rng.below(6) {
            0 | 1 => assert_eq!(m.insert(&k, step), oracle.insert(k.clone(), step)),
            2 => assert_eq!(m.remove(&k), oracle.remove(&k)),
            3 => assert_eq!(m.get(&k), oracle.get(&k).copied()),
            4 => {
                let got = OrderedMap::lower_bound(&m, Bound::Excluded(&k)).map(|(k, v)| (k, *v));
                let want = oracle
                    .range::<Vec<u8>, _>((Bound::Excluded(&k), Bound::Unbounded))
                    .next()
                    .map(|(k, &v)| (k.clone(), v));
                assert_eq!(got, want, "{k:?}");
            }
            _ => {
                let other = key(&mut rng);
                let (lo, hi) = if k <= other { (k, other) } else { (other, k) };
                let want: Vec<(Vec<u8>, u64)> = oracle
                    .range(lo.clone()..=hi.clone())
                    .map(|(k, &v)| (k.clone(), v))
                    .collect();
                let got: Vec<(Vec<u8>, u64)> = m.range(lo.as_slice()..=hi.as_slice()).collect();
                assert_eq!(got, want);
                let back: Vec<(Vec<u8>, u64)> =
                    m.range(lo.as_slice()..=hi.as_slice()).rev().collect();
                assert!(back.iter().rev().eq(want.iter()));
            }
        }
        assert_eq!(m.len(), oracle.len());
        assert_eq!(m.contains_key(b""), oracle.contains_key(&Vec::new()));
    }
    let first = oracle.iter().next().map(|(k, &v)| (k.clone(), v));
    let last = oracle.iter().next_back().map(|(k, &v)| (k.clone(), v));
    assert_eq!(m.first_key_value(), first);
    assert_eq!(m.last_key_value(), last);
    assert!(m.iter().eq(entries(&oracle)));
    assert_eq!(OrderedMap::len(&m), oracle.len());
    assert!(
        OrderedMap::range(&m, ..)
            .map(|(k, v)| (k, *v))
            .eq(entries(&oracle))
    );

    // FromIterator, Extend (owned and borrowed keys), Debug, clear.
    let mut n: Pi<Vec<u8>> = [(b"b".to_vec(), 2), (b"a".to_vec(), 1)]
        .into_iter()
        .collect();
    n.extend([(&b"c"[..], 3), (&b"\xff"[..], 4)]);
    assert_eq!(
        format!("{n:?}"),
        format!(
            "{{{:?}: 1, {:?}: 2, {:?}: 3, {:?}: 4}}",
            "a", "b", "c", "\\xff"
        )
        .replace("\\\\", "\\")
    );
    n.clear();
    assert!(n.is_empty() && n.iter().next().is_none());
    OrderedMap::insert(&mut n, b"", 9).unwrap();
    assert_eq!(OrderedMap::get(&n, b"").map(|v| *v), Some(9));
}
