//! Integration tests of [`mlpdex::mlp_index_bytes::MlpIndexBytes`] through its public API
//! (`cargo test -p mlpdex --test mlp_index_bytes`).
//!
//! What is covered:
//!
//! 1. **Differential runs** against the testing driver's `BTreeMap` oracle for every
//!    byte-string [`KeyShape`] and `U64`, several seeds each.
//! 2. **Audited churn**: inserts and removes over thousands of keys of each shape (enough for
//!    many leaf splits and leaf removals), compared step by step with a `BTreeMap`, with
//!    `check_invariants()` every [`AUDIT_EVERY`] steps; then forward and reverse iteration,
//!    `lower_bound`/`upper_bound` and ranges with every `Bound` kind at keys present, absent,
//!    cut short and extended; then draining in random order down to the empty map.
//! 3. **Property tests**: `run_ops` on arbitrary operation sequences; seeks and ranges over
//!    arbitrary key sets and bounds compared with `BTreeMap`.
//! 4. **Edge keys**: the empty key, prefix chains in every insertion order, 0x00/0xFF keys,
//!    1–4 KiB keys differing only late or only by length, many keys sharing one 3 KiB prefix.
//! 5. **Shrinking**: removing nine keys in ten merges sparse leaves; memory drops below a quarter.
//! 6. **Entry API** against `BTreeMap`'s on 20k operations; keys over `MAX_KEY_LEN` refused
//!    (`insert`, `try_entry`, `try_extend`), one at the limit accepted.
//! 7. **Values**: drop counting (replace, remove, clear, drop), `get_mut`, `retain`,
//!    `pop_first`/`pop_last`, `Clone`/`PartialEq`, `Debug`, `FromIterator`.
//!
//! No test asserts on timing.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::rc::Rc;

use mlpdex::mlp_index_bytes::MlpIndexBytes;
use mlpdex::testing::{KeyShape, TestRng, arb_key, arb_ops, differential_ordered, run_ops};
use proptest::prelude::*;

/// Steps between two invariant checks in the audited churn.
const AUDIT_EVERY: usize = 97;

#[test]
fn differential_every_shape() {
    for &shape in KeyShape::ALL {
        for seed in 1..=3u64 {
            differential_ordered(MlpIndexBytes::<u64>::new, shape, seed, 6_000);
        }
    }
}

/// Every bound kind at `k`.
fn bounds(k: &[u8]) -> [Bound<&[u8]>; 3] {
    [Bound::Included(k), Bound::Excluded(k), Bound::Unbounded]
}

fn probes(keys: &[Vec<u8>], rng: &mut TestRng) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(), vec![0], vec![0xFF; 9]];
    for _ in 0..40 {
        if keys.is_empty() {
            break;
        }
        let k = &keys[rng.below(keys.len() as u64) as usize];
        out.push(k.clone());
        out.push(k[..k.len() / 2].to_vec());
        let mut longer = k.clone();
        longer.push(rng.below(256) as u8);
        out.push(longer);
        if let Some((last, head)) = k.split_last() {
            let mut next = head.to_vec();
            next.push(last.wrapping_add(1));
            out.push(next);
        }
    }
    out
}

fn compare_reads(m: &MlpIndexBytes<u64>, o: &BTreeMap<Vec<u8>, u64>, rng: &mut TestRng) {
    let got: Vec<(Vec<u8>, u64)> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    let want: Vec<(Vec<u8>, u64)> = o.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(got, want, "forward iteration");
    let got_rev: Vec<Vec<u8>> = m.iter().rev().map(|(k, _)| k.to_vec()).collect();
    let want_rev: Vec<Vec<u8>> = o.keys().rev().cloned().collect();
    assert_eq!(got_rev, want_rev, "reverse iteration");
    let keys: Vec<Vec<u8>> = o.keys().cloned().collect();
    for p in probes(&keys, rng) {
        assert_eq!(m.get(&p), o.get(&p), "get {p:?}");
        for b in bounds(&p) {
            let lb = o.range::<[u8], _>((b, Bound::Unbounded)).next();
            assert_eq!(
                m.lower_bound(b).map(|(k, v)| (k.to_vec(), *v)),
                lb.map(|(k, v)| (k.clone(), *v)),
                "lower_bound {b:?}"
            );
            let ub = o.range::<[u8], _>((Bound::Unbounded, b)).next_back();
            assert_eq!(
                m.upper_bound(b).map(|(k, v)| (k.to_vec(), *v)),
                ub.map(|(k, v)| (k.clone(), *v)),
                "upper_bound {b:?}"
            );
        }
    }
    let ps = probes(&keys, rng);
    for _ in 0..30 {
        let a = &ps[rng.below(ps.len() as u64) as usize];
        let b = &ps[rng.below(ps.len() as u64) as usize];
        for s in bounds(a) {
            for e in bounds(b) {
                let got: Vec<&[u8]> = m.range((s, e)).map(|(k, _)| k).collect();
                let inverted = mlpdex::key::is_empty_range(s, e);
                let want: Vec<&[u8]> = if inverted {
                    Vec::new()
                } else {
                    o.range::<[u8], _>((s, e)).map(|(k, _)| &k[..]).collect()
                };
                assert_eq!(got, want, "range {s:?}..{e:?}");
                if !inverted {
                    let back: Vec<&[u8]> = m.range((s, e)).rev().map(|(k, _)| k).collect();
                    let mut w = want.clone();
                    w.reverse();
                    assert_eq!(back, w, "range {s:?}..{e:?} reversed");
                    // Both ends at once.
                    let mut it = m.range((s, e));
                    let mut mixed = Vec::new();
                    let mut tail = Vec::new();
                    while let Some((k, _)) = it.next() {
                        mixed.push(k);
                        match it.next_back() {
                            Some((k, _)) => tail.push(k),
                            None => break,
                        }
                    }
                    tail.reverse();
                    mixed.extend(tail);
                    assert_eq!(mixed, want, "range {s:?}..{e:?} from both ends");
                }
            }
        }
    }
}

fn churn(shape: KeyShape, seed: u64, keys: usize) {
    let mut rng = TestRng::new(seed);
    let mut m = MlpIndexBytes::new();
    let mut o = BTreeMap::new();
    let universe: Vec<Vec<u8>> = (0..keys).map(|_| shape.gen_key(&mut rng)).collect();
    for step in 0..keys * 3 {
        let k = &universe[rng.below(universe.len() as u64) as usize];
        if rng.below(4) == 0 {
            assert_eq!(m.remove(k), o.remove(k), "step {step}: remove {k:?}");
        } else {
            let v = rng.below(1 << 40);
            assert_eq!(
                m.insert(k, v).unwrap(),
                o.insert(k.clone(), v),
                "step {step}: insert {k:?}"
            );
        }
        assert_eq!(m.len(), o.len());
        if step.is_multiple_of(AUDIT_EVERY) {
            m.check_invariants()
                .unwrap_or_else(|e| panic!("step {step}: {e}"));
        }
    }
    m.check_invariants().unwrap();
    compare_reads(&m, &o, &mut rng);
    let mut left: Vec<Vec<u8>> = o.keys().cloned().collect();
    while !left.is_empty() {
        let k = left.swap_remove(rng.below(left.len() as u64) as usize);
        assert_eq!(m.remove(&k), o.remove(&k));
        if left.len().is_multiple_of(AUDIT_EVERY) {
            m.check_invariants().unwrap();
        }
    }
    assert!(m.is_empty());
    m.check_invariants().unwrap();
    assert_eq!(m.iter().next(), None);
    assert_eq!(m.lower_bound(Bound::Unbounded), None);
}

#[test]
fn audited_churn_every_shape() {
    for (i, &shape) in KeyShape::ALL.iter().enumerate() {
        let keys = if shape == KeyShape::Long { 600 } else { 4_000 };
        churn(shape, 100 + i as u64, keys);
    }
}

#[test]
fn many_keys_sharing_a_long_prefix() {
    let stem = vec![b'x'; 3 * 1024];
    let mut m = MlpIndexBytes::new();
    let mut o = BTreeMap::new();
    let mut rng = TestRng::new(7);
    for i in 0..3_000u64 {
        let mut k = stem.clone();
        k.extend_from_slice(format!("{}", rng.below(100_000)).as_bytes());
        if i % 3 == 0 {
            k.truncate(stem.len() - rng.below(40) as usize);
        }
        assert_eq!(m.insert(&k, i).unwrap(), o.insert(k, i));
    }
    m.check_invariants().unwrap();
    compare_reads(&m, &o, &mut rng);
}

/// Removing most keys merges the leaves they leave sparse: memory follows the map down.
#[test]
fn removals_give_memory_back() {
    let key = |i: u64| {
        format!(
            "/home/user{}/projects/p{}/src/file{:05}.rs",
            i % 5,
            i % 31,
            i
        )
    };
    let mut m = MlpIndexBytes::new();
    for i in 0..40_000u64 {
        m.insert(key(i).as_bytes(), i).unwrap();
    }
    let full = m.memory_usage();
    // Keep one key in ten, removed in an order unrelated to key order.
    for i in (0..40_000u64).filter(|i| i % 10 != 0) {
        assert_eq!(m.remove(key(i).as_bytes()), Some(i));
    }
    m.check_invariants().unwrap();
    assert_eq!(m.len(), 4_000);
    let sparse = m.memory_usage();
    assert!(
        sparse * 4 < full,
        "{sparse} bytes for a tenth of the keys, {full} for all"
    );
    for i in (0..40_000u64).step_by(10) {
        assert_eq!(m.get(key(i).as_bytes()), Some(&i));
    }
}

#[test]
fn edge_keys() {
    let mut keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0],
        vec![0, 0],
        vec![0xFF],
        vec![0xFF; 2],
        b"a".to_vec(),
        b"ab".to_vec(),
        b"abc".to_vec(),
        b"abd".to_vec(),
    ];
    for len in [1024usize, 2048, 4096] {
        let mut k = vec![b'k'; len];
        keys.push(k.clone());
        k.push(0);
        keys.push(k.clone());
        *k.last_mut().unwrap() = 0xFF;
        keys.push(k);
    }
    for order in [0u64, 1, 2, 3] {
        let mut ks = keys.clone();
        let mut rng = TestRng::new(order);
        if order == 1 {
            ks.reverse();
        } else if order > 1 {
            for i in (1..ks.len()).rev() {
                ks.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let mut m = MlpIndexBytes::new();
        let mut o = BTreeMap::new();
        for (i, k) in ks.iter().enumerate() {
            assert_eq!(
                m.insert(k, i as u64).unwrap(),
                o.insert(k.clone(), i as u64)
            );
        }
        m.check_invariants().unwrap();
        compare_reads(&m, &o, &mut rng);
    }
}

#[derive(Debug)]
struct Counted(Rc<Cell<usize>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn values_drop_once() {
    let drops = Rc::new(Cell::new(0));
    let mut m = MlpIndexBytes::new();
    for i in 0..500u32 {
        m.insert(format!("key/{i:05}").as_bytes(), Counted(drops.clone()))
            .unwrap();
    }
    let old = m.insert(b"key/00007", Counted(drops.clone())).unwrap();
    drop(old);
    assert_eq!(drops.get(), 1);
    drop(m.remove(b"key/00008"));
    assert_eq!(drops.get(), 2);
    m.retain(|k, _| k.ends_with(b"0"));
    assert_eq!(m.len(), 50);
    assert_eq!(drops.get(), 2 + 449);
    m.check_invariants().unwrap();
    drop(m.pop_first());
    drop(m.pop_last());
    assert_eq!(drops.get(), 453);
    // 501 values were made: 500 inserts and one replacement.
    m.clear();
    assert_eq!(drops.get(), 501);
    m.insert(b"z", Counted(drops.clone())).unwrap();
    drop(m);
    assert_eq!(drops.get(), 502);
}

#[test]
fn std_conveniences() {
    let m: MlpIndexBytes<u32> = [("b", 2), ("a", 1), ("c", 3)].into_iter().collect();
    assert_eq!(format!("{m:?}"), r#"{"a": 1, "b": 2, "c": 3}"#);
    let mut n = m.clone();
    assert_eq!(m, n);
    *n.get_mut(b"b").unwrap() += 10;
    assert_ne!(m, n);
    assert_eq!(n[&b"b"[..]], 12);
    assert_eq!(m.first_key_value(), Some((&b"a"[..], &1)));
    assert_eq!(m.last_key_value(), Some((&b"c"[..], &3)));
    assert_eq!(m.first(), m.first_key_value());
    assert_eq!(m.last(), m.last_key_value());
    assert_eq!(MlpIndexBytes::<u8>::new().first(), None);
    let ks: Vec<&[u8]> = (&m).into_iter().map(|(k, _)| k).collect();
    assert_eq!(ks, [&b"a"[..], b"b", b"c"]);
    assert_eq!(m.range(&b"b"[..]..).count(), 2);
    assert!(m.memory_usage() > 0);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<MlpIndexBytes<u64>>();
    send_sync::<mlpdex::mlp_index_bytes::IterMut<'_, u64>>();
    send_sync::<mlpdex::mlp_index_bytes::IntoIter<u64>>();
}

#[test]
fn entry_api() {
    let mut m: MlpIndexBytes<u64> = MlpIndexBytes::new();
    let mut o: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut rng = TestRng::new(3);
    for step in 0..20_000u64 {
        let k = KeyShape::Paths.gen_key(&mut rng);
        match rng.below(4) {
            0 => {
                *m.entry(&k).or_insert(step) += 1;
                *o.entry(k).or_insert(step) += 1;
            }
            1 => {
                m.entry(&k).and_modify(|v| *v *= 3).or_default();
                o.entry(k).and_modify(|v| *v *= 3).or_default();
            }
            2 => {
                let got = match m.entry(&k) {
                    mlpdex::mlp_index_bytes::Entry::Occupied(e) => {
                        assert_eq!(e.key(), &k[..]);
                        Some(e.remove_entry())
                    }
                    mlpdex::mlp_index_bytes::Entry::Vacant(e) => {
                        assert_eq!(e.into_key(), k);
                        None
                    }
                };
                assert_eq!(got, o.remove_entry(&k));
            }
            _ => {
                let v = *m.entry(&k).or_insert_with_key(|key| key.len() as u64);
                assert_eq!(v, *o.entry(k.clone()).or_insert_with(|| k.len() as u64));
            }
        }
        if step.is_multiple_of(1_000) {
            m.check_invariants().unwrap();
        }
    }
    let got: Vec<(Vec<u8>, u64)> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    let want: Vec<(Vec<u8>, u64)> = o.into_iter().collect();
    assert_eq!(got, want);
}

#[test]
fn keys_over_the_limit_are_refused() {
    let mut m = MlpIndexBytes::new();
    m.insert(b"a", 1).unwrap();
    let long = vec![7u8; MlpIndexBytes::<u8>::MAX_KEY_LEN + 1];
    assert_eq!(
        m.insert(&long, 2),
        Err(mlpdex::Error::KeyTooLong {
            len: long.len(),
            max: MlpIndexBytes::<u8>::MAX_KEY_LEN
        })
    );
    assert!(m.try_entry(&long).is_err());
    assert!(m.try_extend([(&long[..], 3)]).is_err());
    let at_limit = &long[..MlpIndexBytes::<u8>::MAX_KEY_LEN];
    assert_eq!(m.insert(at_limit, 4), Ok(None));
    assert_eq!(m.get(at_limit), Some(&4));
    assert_eq!(m.len(), 2);
    m.check_invariants().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn proptest_arbitrary_ops(ops in arb_ops()) {
        let mut map = MlpIndexBytes::new();
        run_ops(&mut map, &ops).map_err(TestCaseError::fail)?;
        map.check_invariants().map_err(TestCaseError::fail)?;
    }

    #[test]
    fn proptest_seeks_and_ranges(
        keys in proptest::collection::vec(arb_key(), 0..300),
        a in arb_key(),
        b in arb_key(),
    ) {
        let m: MlpIndexBytes<u8> = keys.iter().map(|k| (k, 0u8)).collect();
        let o: BTreeMap<Vec<u8>, u8> = keys.iter().map(|k| (k.clone(), 0u8)).collect();
        for s in bounds(&a) {
            let want = o.range::<[u8], _>((s, Bound::Unbounded)).next().map(|(k, _)| k.clone());
            prop_assert_eq!(m.lower_bound(s).map(|(k, _)| k.to_vec()), want);
            let want = o.range::<[u8], _>((Bound::Unbounded, s)).next_back().map(|(k, _)| k.clone());
            prop_assert_eq!(m.upper_bound(s).map(|(k, _)| k.to_vec()), want);
            for e in bounds(&b) {
                let got: Vec<Vec<u8>> = m.range((s, e)).map(|(k, _)| k.to_vec()).collect();
                let want: Vec<Vec<u8>> = if mlpdex::key::is_empty_range(s, e) {
                    Vec::new()
                } else {
                    o.range::<[u8], _>((s, e)).map(|(k, _)| k.clone()).collect()
                };
                prop_assert_eq!(got, want);
            }
        }
    }
}

/// The mutable, owning and batched interfaces against `BTreeMap`'s, on every key shape:
/// `iter_mut` and `range_mut` walked from both ends in a random interleaving, writing every
/// value they hand out; `into_iter` likewise; `get_batch` against `get` at present, absent,
/// cut and extended keys.
#[test]
fn mutable_owning_and_batched_access() {
    for (s, &shape) in KeyShape::ALL.iter().enumerate() {
        let mut rng = TestRng::new(500 + s as u64);
        let n = if shape == KeyShape::Long { 300 } else { 3_000 };
        let mut m = MlpIndexBytes::new();
        let mut o = BTreeMap::new();
        for i in 0..n as u64 {
            let k = shape.gen_key(&mut rng);
            assert_eq!(m.insert(&k, i).unwrap(), o.insert(k, i));
        }
        let keys: Vec<Vec<u8>> = o.keys().cloned().collect();

        // Batched lookups, in batches of every size up to 20.
        let ps = probes(&keys, &mut rng);
        let refs: Vec<&[u8]> = ps.iter().map(|k| &k[..]).collect();
        // An output longer than the batch keeps its slots past the batch (the answers to
        // other keys once landed there).
        let sentinel = u64::MAX;
        for size in 1..=20 {
            for batch in refs.chunks(size) {
                let mut out = vec![Some(&sentinel); batch.len() + 9];
                m.get_batch(batch, &mut out);
                let mut want: Vec<Option<&u64>> = batch.iter().map(|k| o.get(*k)).collect();
                want.resize(batch.len() + 9, Some(&sentinel));
                assert_eq!(out, want, "batch of {size}");
            }
        }

        // Every value once, through iter_mut, then values_mut.
        for (k, v) in &mut m {
            *v = v.wrapping_mul(3) ^ k.len() as u64;
        }
        for (k, v) in o.iter_mut() {
            *v = v.wrapping_mul(3) ^ k.len() as u64;
        }
        m.values_mut().rev().for_each(|v| *v += 1);
        o.values_mut().for_each(|v| *v += 1);
        assert!(m.iter().eq(o.iter().map(|(k, v)| (&k[..], v))));

        // Ranges, both ends interleaved, each value handed out written.
        let ps = probes(&keys, &mut rng);
        for (t, a) in ps.iter().enumerate() {
            let b = &ps[(t * 7 + 3) % ps.len()];
            for (lo, hi) in bounds(a).into_iter().zip(bounds(b).into_iter().rev()) {
                if let (
                    Bound::Included(x) | Bound::Excluded(x),
                    Bound::Included(y) | Bound::Excluded(y),
                ) = (lo, hi)
                    && (x > y
                        || (x == y
                            && !matches!((lo, hi), (Bound::Included(_), Bound::Included(_)))))
                {
                    // BTreeMap panics on an empty or inverted range; ours is empty.
                    assert_eq!(m.range_mut((lo, hi)).count(), 0);
                    continue;
                }
                let mut got = m.range_mut((lo, hi));
                let mut want = o.range_mut::<[u8], _>((lo, hi));
                loop {
                    let back = rng.below(2) == 0;
                    let (g, w) = if back {
                        (got.next_back(), want.next_back())
                    } else {
                        (got.next(), want.next())
                    };
                    match (g, w) {
                        (Some((gk, gv)), Some((wk, wv))) => {
                            assert_eq!((gk, &*gv), (&wk[..], &*wv));
                            *gv += t as u64;
                            *wv += t as u64;
                        }
                        (None, None) => break,
                        (g, w) => panic!("range ({lo:?}, {hi:?}): {g:?} against {w:?}"),
                    }
                }
            }
        }
        assert!(m.iter().eq(o.iter().map(|(k, v)| (&k[..], v))));
        m.check_invariants().unwrap();

        // The owning iterator, from both ends, its length exact all along.
        let mut got = m.clone().into_iter();
        let mut want = o.clone().into_iter();
        loop {
            assert_eq!(got.len(), want.len());
            let (g, w) = if rng.below(3) == 0 {
                (got.next_back(), want.next_back())
            } else {
                (got.next(), want.next())
            };
            assert_eq!(g, w);
            if g.is_none() {
                break;
            }
        }
        assert!(m.clone().into_keys().eq(o.keys().cloned()));
        assert!(m.into_values().rev().eq(o.into_values().rev()));
    }
}

#[test]
fn partly_walked_owning_iterators_drop_every_value_once() {
    let drops = Rc::new(Cell::new(0));
    let mut m = MlpIndexBytes::new();
    for i in 0..2_000u32 {
        m.insert(
            format!("k/{:03}/{i}", i % 97).as_bytes(),
            Counted(drops.clone()),
        )
        .unwrap();
    }
    let mut it = m.into_iter();
    for _ in 0..300 {
        drop(it.next());
        drop(it.next_back());
    }
    assert_eq!(drops.get(), 600);
    drop(it);
    assert_eq!(drops.get(), 2_000);
}

#[test]
fn reservations_and_shrinking() {
    let key = |i: u64| format!("/var/lib/app{}/shard{:03}/obj{i:07}", i % 3, i % 211).into_bytes();
    let mut m = MlpIndexBytes::with_capacity(30_000);
    for i in 0..30_000u64 {
        m.insert(&key(i), i).unwrap();
    }
    m.reserve(10_000);
    m.try_reserve(10_000).unwrap();
    let full = m.memory_usage();
    assert!(matches!(
        m.try_reserve(usize::MAX),
        Err(mlpdex::Error::OutOfMemory { .. })
    ));
    assert_eq!(m.len(), 30_000);
    for i in (0..30_000u64).filter(|i| i % 8 != 0) {
        assert_eq!(m.remove(&key(i)), Some(i));
    }
    let sparse = m.memory_usage();
    m.shrink_to_fit();
    m.check_invariants().unwrap();
    let shrunk = m.memory_usage();
    assert!(shrunk < sparse && sparse < full, "{full} {sparse} {shrunk}");
    for i in 0..30_000u64 {
        assert_eq!(m.get(&key(i)), (i % 8 == 0).then_some(&i));
    }
    // Still a working map after shrinking.
    for i in 30_000..40_000u64 {
        m.insert(&key(i), i).unwrap();
    }
    m.check_invariants().unwrap();
    assert_eq!(m.len(), 30_000 / 8 + 10_000);
}
