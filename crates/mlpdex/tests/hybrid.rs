//! Integration tests of [`mlpdex::hybrid::Hybrid`] (`cargo test -p mlpdex --test hybrid`).
//!
//! 1. **Differential runs** through the `testing` driver (inserts, updates, removes, gets,
//!    seeks with every bound kind, ranges both ways, clears) against `BTreeMap`, for every key
//!    shape and each static stage (compact ART, compact B-tree, FST), with small merge
//!    thresholds so that a run merges hundreds of times.
//! 2. **Stage semantics**: updates and deletes of keys in the static stage are hidden by the
//!    dynamic stage until a merge applies them; no read returns a stale or deleted value, at
//!    any point between merges; the merge trigger follows the ratio.
//! 3. **The static-key filter** never hides a key of the static stage from an insert or a
//!    remove (an update must return the old value), at any bits per key, across the merges
//!    that rebuild it and when it is rebuilt or dropped between merges.
//! 4. **Merged ranges**: a cursor walked from both ends at once over keys spread across both
//!    stages (some hidden by tombstones) returns each live entry exactly once.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::ops::RangeBounds;

use mlpdex::compact_art::CompactArt;
use mlpdex::compact_btree::CompactBTree;
use mlpdex::cuckoo_trie::CuckooTrie;
use mlpdex::fst::Fst;
use mlpdex::hybrid::{Config, Hybrid, Slot, StaticStage};
use mlpdex::testing::{KeyShape, TestRng, differential_ordered};

const SHAPES: &[KeyShape] = KeyShape::ALL;

fn small<S: StaticStage>(ratio: u32, min_merge: usize) -> Hybrid<CuckooTrie<Slot>, S> {
    Hybrid::with_config(Config { ratio, min_merge }).unwrap()
}

fn differential_for<S: StaticStage>() {
    for &shape in SHAPES {
        for (seed, ratio, min_merge) in [(1, 2, 4), (2, 10, 16), (3, 1, 1)] {
            differential_ordered(|| small::<S>(ratio, min_merge), shape, seed, 3000);
        }
    }
}

#[test]
fn differential_compact_art() {
    differential_for::<CompactArt>();
}

#[test]
fn differential_compact_btree() {
    differential_for::<CompactBTree>();
}

#[test]
fn differential_fst() {
    differential_for::<Fst>();
}

/// Plays random writes on a hybrid and an oracle and checks every key of a probe set after
/// every write; returns the hybrid for its statistics.
fn play<S: StaticStage>(
    shape: KeyShape,
    seed: u64,
    steps: usize,
    config: Config,
) -> Hybrid<CuckooTrie<Slot>, S> {
    let mut rng = TestRng::new(seed);
    let mut h: Hybrid<CuckooTrie<Slot>, S> = Hybrid::with_config(config).unwrap();
    let mut oracle = BTreeMap::new();
    let pool: Vec<Vec<u8>> = (0..200).map(|_| shape.gen_key(&mut rng)).collect();
    for step in 0..steps {
        let key = &pool[rng.below(pool.len() as u64) as usize];
        if rng.below(3) == 0 {
            assert_eq!(h.remove(key), oracle.remove(key), "remove at {step}");
        } else {
            let v = rng.next_u64();
            assert_eq!(
                h.insert(key, v).unwrap(),
                oracle.insert(key.clone(), v),
                "insert at {step}"
            );
        }
        assert_eq!(h.len(), oracle.len(), "len at {step}");
        let probe = &pool[rng.below(pool.len() as u64) as usize];
        assert_eq!(h.get(probe), oracle.get(probe).copied(), "get at {step}");
        assert!(
            h.dynamic_len()
                < h.config()
                    .min_merge
                    .max(h.static_len() / h.config().ratio as usize)
                    + 1
        );
    }
    let all: Vec<(Vec<u8>, u64)> = h.range(..).map(|(k, v)| (k, *v)).collect();
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(all, want);
    h
}

#[test]
fn hundreds_of_merges_never_show_stale_or_deleted_values() {
    for &shape in SHAPES {
        let h = play::<CompactArt>(
            shape,
            7,
            4000,
            Config {
                ratio: 10,
                min_merge: 4,
            },
        );
        assert!(h.stats().merges >= 200, "{shape:?}: {:?}", h.stats());
        let h = play::<CompactBTree>(
            shape,
            8,
            1500,
            Config {
                ratio: 20,
                min_merge: 2,
            },
        );
        assert!(h.stats().merges >= 100, "{shape:?}: {:?}", h.stats());
    }
}

#[test]
fn static_keys_are_updated_and_deleted_through_the_dynamic_stage() {
    let mut h: Hybrid = Hybrid::with_config(Config {
        ratio: 10,
        min_merge: 1000,
    })
    .unwrap();
    for i in 0u64..100 {
        h.insert(&i.to_be_bytes(), i).unwrap();
    }
    h.merge().unwrap();
    assert_eq!((h.static_len(), h.dynamic_len()), (100, 0));
    // An update and a delete of static keys: recorded in the dynamic stage.
    assert_eq!(h.insert(&5u64.to_be_bytes(), 500).unwrap(), Some(5));
    assert_eq!(h.remove(&6u64.to_be_bytes()), Some(6));
    assert_eq!(h.remove(&6u64.to_be_bytes()), None);
    assert_eq!(h.dynamic().get(&6u64.to_be_bytes()), Some(&Slot::Deleted));
    assert_eq!(h.static_stage().get(&6u64.to_be_bytes()), Some(6));
    assert_eq!(h.get(&5u64.to_be_bytes()), Some(500));
    assert_eq!(h.get(&6u64.to_be_bytes()), None);
    assert_eq!(h.len(), 99);
    // Re-inserting a deleted static key revives it with the new value.
    assert_eq!(h.insert(&6u64.to_be_bytes(), 600).unwrap(), None);
    assert_eq!(h.remove(&6u64.to_be_bytes()), Some(600));
    // A key only in the dynamic stage leaves it on removal, without a tombstone.
    h.insert(b"fresh", 1).unwrap();
    assert_eq!(h.remove(b"fresh"), Some(1));
    assert_eq!(h.dynamic().get(b"fresh"), None);
    // The merge applies the update and the delete.
    h.merge().unwrap();
    assert_eq!((h.static_len(), h.dynamic_len()), (99, 0));
    assert_eq!(h.static_stage().get(&5u64.to_be_bytes()), Some(500));
    assert_eq!(h.static_stage().get(&6u64.to_be_bytes()), None);
    assert_eq!(h.stats().merges, 2);
    assert_eq!(h.stats().last_entries, 99);
}

/// Loads `keys` (with their positions as values) checking every insert's answer, then
/// updates and removes them all checking every answer, changing the static-key filter's bits
/// per key to each of `bits` in turn along the way (between merges, with the dynamic stage
/// full of keys the next merge moves to the static stage).
fn filter_run<S: StaticStage>(keys: &[Vec<u8>], bits: &[usize]) {
    let mut h = small::<S>(4, 8);
    let mut oracle = BTreeMap::new();
    let mut bits = bits.iter().cycle();
    let step = keys.len() / 5 + 1;
    let check = |i: usize, h: &mut Hybrid<_, S>, bits: &mut dyn Iterator<Item = &usize>| {
        if i % step == step / 2 {
            h.set_static_filter_bits(*bits.next().unwrap()).unwrap();
        }
    };
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            h.insert(k, i as u64).unwrap(),
            oracle.insert(k.clone(), i as u64),
            "load {i}"
        );
        check(i, &mut h, &mut bits);
    }
    for (i, k) in keys.iter().enumerate() {
        let v = i as u64 + 1_000_000;
        assert_eq!(
            h.insert(k, v).unwrap(),
            oracle.insert(k.clone(), v),
            "update {i}"
        );
        check(i, &mut h, &mut bits);
    }
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
        assert_eq!(h.remove(k), oracle.remove(k), "remove {i}");
        check(i, &mut h, &mut bits);
    }
    assert_eq!(h.len(), oracle.len());
    let all: Vec<(Vec<u8>, u64)> = h.range(..).map(|(k, v)| (k, *v)).collect();
    assert_eq!(all, oracle.into_iter().collect::<Vec<_>>());
    assert!(h.stats().merges > 20, "{:?}", h.stats());
}

#[test]
fn the_static_filter_never_hides_a_static_key() {
    for &shape in SHAPES {
        let mut rng = TestRng::new(31);
        let keys: Vec<Vec<u8>> = (0..6000).map(|_| shape.gen_key(&mut rng)).collect();
        // A filter of one bit a key passes few keys it should not; 32 bits almost none; 0
        // means none; every change rebuilds it from both stages.
        filter_run::<CompactArt>(&keys, &[1, 32, 0, 4]);
        filter_run::<CompactBTree>(&keys, &[4, 1]);
        filter_run::<Fst>(&keys, &[0, 8]);
    }
}

#[test]
fn the_static_filter_has_bounded_bits() {
    let mut h = Hybrid::new();
    assert_eq!(h.static_filter_bits(), mlpdex::hybrid::STATIC_FILTER_BITS);
    assert!(h.set_static_filter_bits(33).is_err());
    assert_eq!(h.static_filter_bits(), mlpdex::hybrid::STATIC_FILTER_BITS);
    h.set_static_filter_bits(32).unwrap();
    h.insert(b"a", 1).unwrap();
    assert_eq!(h.insert(b"a", 2).unwrap(), Some(1));
}

#[test]
fn filter_rebuilds_are_timed_apart_from_merges() {
    let mut h = small::<CompactArt>(10, 64);
    let (mut rebuilds, mut merges, mut sum) = (0, 0, std::time::Duration::ZERO);
    for i in 0u64..20_000 {
        h.insert(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes(), i)
            .unwrap();
        let s = h.stats();
        if s.merges > merges {
            merges = s.merges;
            sum += s.last + s.last_filter;
            rebuilds += usize::from(!s.last_filter.is_zero());
        }
    }
    // From 1,024 keys of room, growing 60% at each rebuild: a handful over 20,000 keys.
    assert!((2..=12).contains(&rebuilds), "{rebuilds} rebuilds");
    assert_eq!(h.stats().total, sum);
}

#[test]
fn merges_follow_the_ratio() {
    let mut h: Hybrid = Hybrid::with_config(Config {
        ratio: 4,
        min_merge: 10,
    })
    .unwrap();
    let mut merges_at = Vec::new();
    for i in 0u64..400 {
        h.insert(&i.to_be_bytes(), i).unwrap();
        if h.dynamic_len() == 0 {
            merges_at.push(i + 1);
        }
    }
    // 10 keys, then 10 more (10 / 4 < 10), then 10 (20 / 4 < 10), then 10 (30 / 4 < 10),
    // then 10 at 40 (40 / 4 = 10), then 12 at 50, 15 at 62, ...: each merge after the
    // dynamic stage reaches max(static / 4, 10).
    let mut want = Vec::new();
    let mut stat = 0u64;
    while stat < 400 {
        let next = stat + (stat / 4).max(10);
        if next > 400 {
            break;
        }
        want.push(next);
        stat = next;
    }
    assert_eq!(merges_at, want);
    assert!(matches!(
        Hybrid::<CuckooTrie<Slot>, CompactArt>::with_config(Config {
            ratio: 0,
            min_merge: 1
        }),
        Err(mlpdex::Error::InvalidConfig { .. })
    ));
}

#[test]
fn cursors_meet_once_across_stages() {
    let mut rng = TestRng::new(99);
    for &shape in SHAPES {
        let mut h: Hybrid<CuckooTrie<Slot>, CompactArt> = Hybrid::with_config(Config {
            ratio: 10,
            min_merge: 100_000,
        })
        .unwrap();
        let mut oracle = BTreeMap::new();
        for _ in 0..300 {
            let (k, v) = (shape.gen_key(&mut rng), rng.next_u64());
            h.insert(&k, v).unwrap();
            oracle.insert(k, v);
        }
        h.merge().unwrap();
        for _ in 0..200 {
            let k = shape.gen_key(&mut rng);
            if rng.below(3) == 0 {
                h.remove(&k);
                oracle.remove(&k);
            } else {
                let v = rng.next_u64();
                h.insert(&k, v).unwrap();
                oracle.insert(k, v);
            }
        }
        let keys: Vec<&Vec<u8>> = oracle.keys().collect();
        for _ in 0..50 {
            let pick = |rng: &mut TestRng| -> Bound<Vec<u8>> {
                let k = if keys.is_empty() || rng.below(4) == 0 {
                    shape.gen_key(rng)
                } else {
                    keys[rng.below(keys.len() as u64) as usize].clone()
                };
                match rng.below(3) {
                    0 => Included(k),
                    1 => Excluded(k),
                    _ => Unbounded,
                }
            };
            let (lo, hi) = (pick(&mut rng), pick(&mut rng));
            let bounds = (lo.as_ref().map(|k| &k[..]), hi.as_ref().map(|k| &k[..]));
            let want: Vec<(Vec<u8>, u64)> = if mlpdex::key::is_empty_range(bounds.0, bounds.1) {
                Vec::new()
            } else {
                oracle
                    .range::<[u8], _>(bounds)
                    .map(|(k, v)| (k.clone(), *v))
                    .collect()
            };
            let mut c = h.cursor(bounds);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            loop {
                let step = if rng.below(2) == 0 {
                    c.next()
                        .map(|(k, v)| (k.to_vec(), v))
                        .map(|e| front.push(e))
                } else {
                    c.next_back()
                        .map(|(k, v)| (k.to_vec(), v))
                        .map(|e| back.push(e))
                };
                if step.is_none() {
                    break;
                }
            }
            assert!(c.next().is_none() && c.next_back().is_none());
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "{shape:?} {bounds:?}");
        }
        let all: Vec<(Vec<u8>, u64)> = h.iter().map(|(k, v)| (k, *v)).collect();
        assert_eq!(all.len(), h.len());
    }
}

/// Secondary semantics against `BTreeMap<key, BTreeSet<value>>`: adds, removes of single
/// values and of whole keys, across many merges, with every key shape; values, pair ranges
/// with every bound kind and both directions checked after each round.
#[test]
fn secondary_index_against_a_map_of_sets() {
    use mlpdex::hybrid::Secondary;
    use std::collections::BTreeSet;
    for &shape in SHAPES {
        let mut rng = TestRng::new(404);
        let mut ix: Secondary<CuckooTrie<Slot>, CompactArt> = Secondary::with_config(Config {
            ratio: 10,
            min_merge: 8,
        })
        .unwrap();
        let mut oracle: BTreeMap<Vec<u8>, BTreeSet<u64>> = BTreeMap::new();
        let pool: Vec<Vec<u8>> = (0..40).map(|_| shape.gen_key(&mut rng)).collect();
        for round in 0..60 {
            for _ in 0..25 {
                let key = &pool[rng.below(pool.len() as u64) as usize];
                let value = rng.below(6) * (u64::MAX / 5);
                match rng.below(10) {
                    0 => {
                        let n = oracle.remove(key).map_or(0, |s| s.len());
                        assert_eq!(ix.remove_key(key), n);
                    }
                    1..=3 => {
                        let had = oracle.get_mut(key).is_some_and(|s| s.remove(&value));
                        oracle.retain(|_, s| !s.is_empty());
                        assert_eq!(ix.remove(key, value), had);
                    }
                    _ => {
                        let fresh = oracle.entry(key.clone()).or_default().insert(value);
                        assert_eq!(ix.insert(key, value).unwrap(), fresh);
                    }
                }
            }
            let pairs: Vec<(Vec<u8>, u64)> = oracle
                .iter()
                .flat_map(|(k, s)| s.iter().map(move |v| (k.clone(), *v)))
                .collect();
            assert_eq!(ix.len(), pairs.len(), "{shape:?} round {round}");
            assert_eq!(ix.range(..).collect::<Vec<_>>(), pairs);
            let mut back: Vec<_> = ix.range(..).rev().collect();
            back.reverse();
            assert_eq!(back, pairs);
            for key in pool.iter().take(8) {
                let want: Vec<u64> = oracle
                    .get(key)
                    .map_or(Vec::new(), |s| s.iter().copied().collect());
                assert_eq!(ix.values(key).collect::<Vec<_>>(), want);
                assert_eq!(ix.values(key).rev().count(), want.len());
                for b in [Included(&key[..]), Excluded(&key[..]), Unbounded] {
                    for (lo, hi) in [(b, Unbounded), (Unbounded, b)] {
                        let want: Vec<(Vec<u8>, u64)> = pairs
                            .iter()
                            .filter(|(k, _)| (lo, hi).contains(&k[..]))
                            .cloned()
                            .collect();
                        assert_eq!(
                            ix.range((lo, hi)).collect::<Vec<_>>(),
                            want,
                            "{shape:?} {lo:?} {hi:?}"
                        );
                    }
                }
            }
        }
        assert!(ix.stats().merges > 10, "{shape:?}: {:?}", ix.stats());
    }
}
