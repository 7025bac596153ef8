//! MlpIndex against `BTreeMap<u64, u64>`: long random operation sequences over adversarial key
//! shapes, every bound kind, iteration both ways, growth and shrinking.

use std::collections::BTreeMap;
use std::ops::Bound;

use mlpdex::mlp_index::{Config, Layout, MlpIndex};
use proptest::prelude::*;

const LAYOUTS: [Layout; 2] = [Layout::Bucketized, Layout::Paper];

fn map(layout: Layout) -> MlpIndex {
    MlpIndex::with_config(Config::with_layout(layout)).unwrap()
}

/// A small deterministic generator (tests must not depend on the run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Key shapes of the issue: uniform, dense, long shared prefixes, last-byte-only, extremes,
/// and the MLP paper's decimal distributions.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Uniform,
    Dense,
    SharedPrefix,
    LastByte,
    Extremes,
    DecA,
    DecB,
    Mixed,
}

const SHAPES: [Shape; 8] = [
    Shape::Uniform,
    Shape::Dense,
    Shape::SharedPrefix,
    Shape::LastByte,
    Shape::Extremes,
    Shape::DecA,
    Shape::DecB,
    Shape::Mixed,
];

fn key(shape: Shape, r: &mut Rng, universe: u64) -> u64 {
    match shape {
        Shape::Uniform => r.next(),
        Shape::Dense => r.below(universe),
        Shape::SharedPrefix => 0xABCD_EF01_2345_0000 | r.below(universe.min(1 << 16)),
        Shape::LastByte => 0x1122_3344_5566_7700 | r.below(256),
        Shape::Extremes => match r.below(6) {
            0 => 0,
            1 => u64::MAX,
            2 => r.below(300),
            3 => u64::MAX - r.below(300),
            4 => (r.below(4)) << 56,
            _ => r.next() | 0xFFFF_FF00_0000_0000,
        },
        Shape::DecA => {
            // 6 high bytes from 6 candidates, 2 low bytes from ~100.
            let mut k = 0u64;
            for _ in 0..6 {
                k = k << 8 | [3, 17, 64, 128, 200, 255][r.below(6) as usize];
            }
            for _ in 0..2 {
                k = k << 8 | (r.below(100) * 2 + 10);
            }
            k
        }
        Shape::DecB => {
            let mut k = 0u64;
            for _ in 0..2 {
                k = k << 8 | (r.below(100) * 2 + 10);
            }
            for _ in 0..6 {
                k = k << 8 | [0, 9, 33, 100, 201, 254][r.below(6) as usize];
            }
            k
        }
        Shape::Mixed => {
            let s = SHAPES[r.below(7) as usize];
            key(s, r, universe)
        }
    }
}

fn bound(r: &mut Rng, k: u64) -> Bound<u64> {
    match r.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn check_bounds(m: &MlpIndex, b: &BTreeMap<u64, u64>, k: u64, r: &mut Rng) {
    let lb = bound(r, k);
    let want = b
        .range((lb, Bound::Unbounded))
        .next()
        .map(|(&k, &v)| (k, v));
    assert_eq!(m.lower_bound(lb), want, "lower_bound({lb:?})");
    let want = b
        .range((Bound::Unbounded, lb))
        .next_back()
        .map(|(&k, &v)| (k, v));
    assert_eq!(m.upper_bound(lb), want, "upper_bound({lb:?})");
}

fn check_range(m: &MlpIndex, b: &BTreeMap<u64, u64>, r: &mut Rng, shape: Shape, universe: u64) {
    let (x, y) = (key(shape, r, universe), key(shape, r, universe));
    let (lo, hi) = (bound(r, x.min(y)), bound(r, x.max(y)));
    if matches!((lo, hi), (Bound::Excluded(a), Bound::Excluded(b)) if a == b) {
        return; // BTreeMap panics on this empty range; ours is empty (tested below).
    }
    let take = r.below(40) as usize;
    let want: Vec<_> = b
        .range((lo, hi))
        .map(|(&k, &v)| (k, v))
        .take(take)
        .collect();
    let got: Vec<_> = m.range((lo, hi)).take(take).collect();
    assert_eq!(got, want, "range({lo:?}, {hi:?}) forward");
    let want: Vec<_> = b
        .range((lo, hi))
        .rev()
        .map(|(&k, &v)| (k, v))
        .take(take)
        .collect();
    let got: Vec<_> = m.range((lo, hi)).rev().take(take).collect();
    assert_eq!(got, want, "range({lo:?}, {hi:?}) backward");
    if b.len() > 3_000 {
        return; // Alternation below walks the whole range; keep it to small maps.
    }
    let want: Vec<_> = b.range((lo, hi)).map(|(&k, &v)| (k, v)).collect();
    // Alternating ends meet without overlap or gap.
    let mut it = m.range((lo, hi));
    let mut got = Vec::new();
    let mut tail = Vec::new();
    let mut turn = false;
    loop {
        turn = !turn;
        let e = if turn { it.next() } else { it.next_back() };
        match e {
            Some(e) if turn => got.push(e),
            Some(e) => tail.push(e),
            None => break,
        }
    }
    tail.reverse();
    got.extend(tail);
    assert_eq!(got, want, "range({lo:?}, {hi:?}) from both ends");
}

fn run(layout: Layout, seed: u64, shape: Shape, ops: usize, universe: u64) {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut m = map(layout);
    let mut b = BTreeMap::new();
    let audit_every = if ops > 10_000 { 9_973 } else { 997 };
    for i in 0..ops {
        let k = key(shape, &mut r, universe);
        match r.below(10) {
            0..=4 => {
                let v = r.next();
                assert_eq!(m.insert(k, v).unwrap(), b.insert(k, v), "insert {k:#x}");
            }
            5..=6 => assert_eq!(m.remove(k), b.remove(&k), "remove {k:#x}"),
            7 => assert_eq!(m.get(k), b.get(&k).copied(), "get {k:#x}"),
            8 => check_bounds(&m, &b, k, &mut r),
            _ => check_range(&m, &b, &mut r, shape, universe),
        }
        assert_eq!(m.len(), b.len());
        if i % audit_every == 0 {
            m.check_invariants()
                .unwrap_or_else(|e| panic!("op {i}: {e}"));
        }
    }
    m.check_invariants().unwrap();
    assert!(m.iter().eq(b.iter().map(|(&k, &v)| (k, v))));
    assert!(m.iter().rev().eq(b.iter().rev().map(|(&k, &v)| (k, v))));
    for (&k, &v) in &b {
        assert_eq!(m.get(k), Some(v));
    }
}

#[test]
fn differential_every_shape_many_seeds() {
    for layout in LAYOUTS {
        for shape in SHAPES {
            for seed in 1..=6 {
                for universe in [300, 5_000, 1 << 40] {
                    run(layout, seed, shape, 6_000, universe);
                }
            }
        }
    }
}

#[test]
fn differential_long_run_with_growth() {
    for layout in LAYOUTS {
        for shape in [Shape::Uniform, Shape::DecA, Shape::DecB, Shape::Mixed] {
            run(layout, 99, shape, 120_000, 200_000);
        }
    }
}

#[test]
fn growth_then_remove_everything_then_reinsert() {
    for layout in LAYOUTS {
        growth_then_remove_everything(layout);
    }
}

fn growth_then_remove_everything(layout: Layout) {
    let mut m = map(layout);
    let empty = m.memory_usage();
    // The smallest table, which removing every key returns to.
    let smallest = {
        let mut one = map(layout);
        one.insert(1, 1).unwrap();
        one.memory_usage()
    };
    let mut r = Rng(5);
    let keys: Vec<u64> = (0..150_000).map(|_| r.next()).collect();
    for (i, &k) in keys.iter().enumerate() {
        m.insert(k, i as u64).unwrap();
    }
    m.check_invariants().unwrap();
    assert!(m.memory_usage() > smallest + (1 << 20), "the table grew");
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(m.get(k), Some(i as u64));
    }
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(m.remove(k), Some(i as u64));
        if i % 10_007 == 0 {
            m.check_invariants().unwrap();
        }
    }
    assert!(m.is_empty());
    assert_eq!(m.memory_usage(), smallest);
    assert_eq!(m.iter().next(), None);
    for (i, &k) in keys.iter().enumerate().take(20_000) {
        m.insert(k, i as u64).unwrap();
    }
    m.check_invariants().unwrap();
    assert_eq!(m.len(), 20_000);
    m.clear();
    assert!(m.is_empty());
    assert_eq!(m.memory_usage(), empty);
    assert_eq!(m.first(), None);
    assert_eq!(m.last(), None);
}

#[test]
fn dense_range_every_key() {
    for layout in LAYOUTS {
        dense_range(layout);
    }
}

fn dense_range(layout: Layout) {
    let mut m = map(layout);
    for k in 0..70_000u64 {
        assert_eq!(m.insert(k, !k).unwrap(), None);
    }
    m.check_invariants().unwrap();
    assert!(m.iter().map(|(k, _)| k).eq(0..70_000));
    assert!(
        m.range(1000..2000)
            .rev()
            .map(|(k, _)| k)
            .eq((1000..2000).rev())
    );
    assert_eq!(m.lower_bound(Bound::Excluded(69_999)), None);
    assert_eq!(m.upper_bound(Bound::Excluded(0)), None);
    assert_eq!(m.first(), Some((0, !0)));
    assert_eq!(m.last(), Some((69_999, !69_999)));
}

#[test]
fn extremes_and_empty_ranges() {
    for layout in LAYOUTS {
        extremes(layout);
    }
}

fn extremes(layout: Layout) {
    let mut m = map(layout);
    assert_eq!(m.get(0), None);
    assert_eq!(m.lower_bound(Bound::Unbounded), None);
    m.insert(0, 1).unwrap();
    m.insert(u64::MAX, 2).unwrap();
    assert_eq!(m.lower_bound(Bound::Excluded(0)), Some((u64::MAX, 2)));
    assert_eq!(m.upper_bound(Bound::Excluded(u64::MAX)), Some((0, 1)));
    assert_eq!(m.lower_bound(Bound::Excluded(u64::MAX)), None);
    assert_eq!(m.upper_bound(Bound::Excluded(0)), None);
    assert_eq!(m.range(5..5).next(), None);
    assert_eq!(
        m.range((Bound::Excluded(7), Bound::Excluded(7))).next(),
        None
    );
    assert_eq!(
        m.range((Bound::Excluded(u64::MAX), Bound::Unbounded))
            .next(),
        None
    );
    assert_eq!(m.range(..).collect::<Vec<_>>(), vec![(0, 1), (u64::MAX, 2)]);
    assert_eq!(
        m.range(..=u64::MAX).rev().collect::<Vec<_>>(),
        vec![(u64::MAX, 2), (0, 1)]
    );
}

#[test]
fn bad_config_is_an_error() {
    let c = Config {
        max_load_factor: Some(0.99),
        ..Config::default()
    };
    assert!(MlpIndex::with_config(c).is_err());
    let c = Config {
        max_load_factor: Some(0.6),
        ..Config::with_layout(Layout::Paper)
    };
    assert!(MlpIndex::with_config(c).is_err());
    assert_eq!(
        Config::with_layout(Layout::Paper).effective_max_load_factor(),
        0.5
    );
    assert_eq!(Config::default().effective_max_load_factor(), 0.9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bounds_match_btreemap(keys in proptest::collection::vec(any::<u64>(), 0..400),
                             probes in proptest::collection::vec(any::<u64>(), 1..50),
                             paper in any::<bool>()) {
        let mut m = map(if paper { Layout::Paper } else { Layout::Bucketized });
        let mut b = BTreeMap::new();
        for (i, &k) in keys.iter().enumerate() {
            // Cluster half the keys to build deep paths.
            let k = if i % 2 == 0 { k } else { k & 0xFFFF_0000_0000_00FF };
            m.insert(k, i as u64).unwrap();
            b.insert(k, i as u64);
        }
        for &p in &probes {
            for bd in [Bound::Included(p), Bound::Excluded(p)] {
                prop_assert_eq!(m.lower_bound(bd), b.range((bd, Bound::Unbounded)).next().map(|(&k, &v)| (k, v)));
                prop_assert_eq!(m.upper_bound(bd), b.range((Bound::Unbounded, bd)).next_back().map(|(&k, &v)| (k, v)));
            }
        }
    }

    #[test]
    fn ranges_match_btreemap(keys in proptest::collection::vec(any::<u16>(), 0..300),
                             lo in any::<u16>(), len in 0u16..2000, paper in any::<bool>()) {
        let mut m = map(if paper { Layout::Paper } else { Layout::Bucketized });
        let mut b = BTreeMap::new();
        for &k in &keys {
            let k = u64::from(k) << 20;
            m.insert(k, k).unwrap();
            b.insert(k, k);
        }
        let lo = u64::from(lo) << 20;
        let hi = lo + (u64::from(len) << 20);
        prop_assert!(m.range(lo..hi).eq(b.range(lo..hi).map(|(&k, &v)| (k, v))));
        prop_assert!(m.range(lo..=hi).rev().eq(b.range(lo..=hi).rev().map(|(&k, &v)| (k, v))));
    }
}

// ---------------------------------------------------------------------------------------------
// BTreeMap parity: every std-shaped method against `BTreeMap<u64, u64>`
// ---------------------------------------------------------------------------------------------

/// The map's entries, in order, through the by-value iterator.
fn entries(m: &MlpIndex) -> Vec<(u64, u64)> {
    m.iter().collect()
}

fn std_entries(b: &BTreeMap<u64, u64>) -> Vec<(u64, u64)> {
    b.iter().map(|(&k, &v)| (k, v)).collect()
}

/// One random std-shaped operation on both maps, checking every answer.
fn parity_step(
    m: &mut MlpIndex,
    b: &mut BTreeMap<u64, u64>,
    r: &mut Rng,
    shape: Shape,
    universe: u64,
) {
    let k = key(shape, r, universe);
    let v = r.next();
    match r.below(22) {
        0 => assert_eq!(
            *m.entry(k).or_insert(v),
            *b.entry(k).or_insert(v),
            "or_insert {k:#x}"
        ),
        1 => assert_eq!(
            *m.entry(k).or_insert_with(|| v),
            *b.entry(k).or_insert_with(|| v),
            "or_insert_with"
        ),
        2 => assert_eq!(
            *m.entry(k).or_insert_with_key(|k| k ^ v),
            *b.entry(k).or_insert_with_key(|k| k ^ v),
            "or_insert_with_key"
        ),
        3 => {
            let got = *m
                .entry(k)
                .and_modify(|x| *x = x.wrapping_add(v))
                .or_default();
            let want = *b
                .entry(k)
                .and_modify(|x| *x = x.wrapping_add(v))
                .or_default();
            assert_eq!(got, want, "and_modify.or_default {k:#x}");
        }
        4 => {
            use mlpdex::mlp_index::Entry as E;
            use std::collections::btree_map::Entry as S;
            match (m.entry(k), b.entry(k)) {
                (E::Occupied(mut o), S::Occupied(mut s)) => {
                    assert_eq!((*o.key(), *o.get()), (*s.key(), *s.get()));
                    if v.is_multiple_of(3) {
                        assert_eq!(o.remove_entry(), s.remove_entry());
                    } else if v % 3 == 1 {
                        assert_eq!(o.insert(v), s.insert(v));
                        assert_eq!(*o.get(), v);
                    } else {
                        *o.get_mut() ^= v;
                        *s.get_mut() ^= v;
                        assert_eq!(*o.into_mut(), *s.into_mut());
                    }
                }
                (E::Vacant(o), S::Vacant(s)) => {
                    assert_eq!(*o.key(), *s.key());
                    if v.is_multiple_of(2) {
                        assert_eq!(*o.insert(v), *s.insert(v));
                    } else {
                        assert_eq!(o.into_key(), s.into_key());
                    }
                }
                (e, _) => panic!("entry({k:#x}) is {e:?}, BTreeMap disagrees"),
            }
        }
        5 => {
            let got = m.get_mut(k).map(|x| {
                *x = x.rotate_left(7);
                *x
            });
            let want = b.get_mut(&k).map(|x| {
                *x = x.rotate_left(7);
                *x
            });
            assert_eq!(got, want, "get_mut {k:#x}");
        }
        6 => {
            for (k, x) in m.iter_mut() {
                *x = x.wrapping_mul(3) ^ k;
            }
            for (k, x) in b.iter_mut() {
                *x = x.wrapping_mul(3) ^ k;
            }
        }
        7 => {
            // From the back, and interleaved with the front.
            let mut it = m.iter_mut();
            let mut front = true;
            let mut got = Vec::new();
            while let Some((k, x)) = if front { it.next() } else { it.next_back() } {
                *x += 1;
                got.push(k);
                front = !front;
            }
            let mut want = Vec::new();
            let mut it = b.iter_mut();
            let mut front = true;
            while let Some((k, x)) = if front { it.next() } else { it.next_back() } {
                *x += 1;
                want.push(*k);
                front = !front;
            }
            assert_eq!(got, want, "iter_mut from both ends");
        }
        8 => {
            m.values_mut().for_each(|x| *x = x.wrapping_sub(v));
            b.values_mut().for_each(|x| *x = x.wrapping_sub(v));
        }
        9 => {
            let (modulus, keep) = (2 + r.below(5), r.below(2));
            let mut seen = Vec::new();
            m.retain(|&k, x| {
                seen.push(k);
                *x ^= 1;
                (k ^ *x) % modulus != keep
            });
            let mut want_seen = Vec::new();
            b.retain(|&k, x| {
                want_seen.push(k);
                *x ^= 1;
                (k ^ *x) % modulus != keep
            });
            assert_eq!(seen, want_seen, "retain visits every key in order");
        }
        10 => assert_eq!(m.pop_first(), b.pop_first(), "pop_first"),
        11 => assert_eq!(m.pop_last(), b.pop_last(), "pop_last"),
        12 => {
            let n = r.below(20);
            let pairs: Vec<(u64, u64)> = (0..n).map(|i| (key(shape, r, universe), v ^ i)).collect();
            if v.is_multiple_of(2) {
                m.extend(pairs.iter().copied());
                b.extend(pairs.iter().copied());
            } else {
                m.extend(pairs.iter().map(|(k, v)| (k, v)));
                b.extend(pairs.iter().map(|(k, v)| (k, v)));
            }
        }
        13 => {
            assert_eq!(
                m.get_key_value(k),
                b.get_key_value(&k).map(|(&k, &v)| (k, v))
            );
            assert_eq!(
                m.first_key_value(),
                b.first_key_value().map(|(&k, &v)| (k, v))
            );
            assert_eq!(
                m.last_key_value(),
                b.last_key_value().map(|(&k, &v)| (k, v))
            );
            if let Some(&want) = b.get(&k) {
                assert_eq!(m[k], want);
                assert_eq!(m[&k], want);
            }
        }
        14 => {
            assert!(m.keys().eq(b.keys().copied()), "keys");
            assert!(m.keys().rev().eq(b.keys().rev().copied()), "keys rev");
            assert!(m.values().eq(b.values().copied()), "values");
            assert!(m.values().rev().eq(b.values().rev().copied()), "values rev");
            assert!(
                (&*m).into_iter().eq(b.iter().map(|(&k, &v)| (k, v))),
                "&map into_iter"
            );
        }
        15 => {
            let c = m.clone();
            c.check_invariants().unwrap();
            assert_eq!(c, *m);
            assert_eq!(c.len(), m.len());
            assert_eq!(c.config(), m.config());
            // Owned iteration, from both ends.
            let owned: Vec<_> = c.clone().into_iter().collect();
            assert_eq!(owned, std_entries(b));
            let back: Vec<_> = c.clone().into_iter().rev().collect();
            assert!(
                back.iter()
                    .copied()
                    .eq(b.iter().rev().map(|(&k, &v)| (k, v)))
            );
            assert!(c.clone().into_keys().eq(b.keys().copied()));
            assert!(c.into_values().rev().eq(b.values().rev().copied()));
        }
        16 => {
            // A clone is independent of its source.
            let mut c = m.clone();
            let mut cb = b.clone();
            for _ in 0..5 {
                let k = key(shape, r, universe);
                assert_eq!(c.insert(k, v).unwrap(), cb.insert(k, v));
            }
            if let Some((k, _)) = cb.pop_first() {
                c.remove(k);
            }
            assert_eq!(entries(&c), std_entries(&cb));
            assert_eq!(*m == c, *b == cb);
            assert_eq!((*m).cmp(&c), (*b).cmp(&cb));
        }
        17 => {
            let n = r.below(300) as usize;
            m.reserve(n);
            m.check_invariants().unwrap();
        }
        18 => assert_eq!(m.remove_entry(k), b.remove_entry(&k), "remove_entry"),
        19 => {
            if b.len() < 200 {
                assert_eq!(format!("{m:?}"), format!("{b:?}"), "Debug");
            }
        }
        _ => assert_eq!(m.insert(k, v).unwrap(), b.insert(k, v), "insert"),
    }
    assert_eq!(m.len(), b.len());
}

fn parity_run(layout: Layout, seed: u64, shape: Shape, ops: usize, universe: u64) {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut m = map(layout);
    let mut b = BTreeMap::new();
    for i in 0..ops {
        parity_step(&mut m, &mut b, &mut r, shape, universe);
        if i % 97 == 0 {
            assert_eq!(entries(&m), std_entries(&b), "op {i}");
            m.check_invariants()
                .unwrap_or_else(|e| panic!("op {i}: {e}"));
        }
    }
    assert_eq!(entries(&m), std_entries(&b));
    m.check_invariants().unwrap();
}

#[test]
fn std_shaped_methods_match_btreemap() {
    for layout in LAYOUTS {
        for shape in SHAPES {
            for seed in 1..=3 {
                for universe in [200, 5_000] {
                    parity_run(layout, seed, shape, 1_500, universe);
                }
            }
        }
    }
}

#[test]
fn std_traits_on_fixed_maps() {
    let m = MlpIndex::from([(3, 30), (1, 10), (2, 20), (1, 11)]);
    assert_eq!(format!("{m:?}"), "{1: 11, 2: 20, 3: 30}");
    assert_eq!(format!("{:?}", MlpIndex::new()), "{}");
    assert_eq!(m[2], 20);
    let c: MlpIndex = m.iter().filter(|&(k, _)| k != 2).collect();
    assert_eq!(c, MlpIndex::from([(1, 11), (3, 30)]));
    assert_ne!(c, m);
    assert!(c > m, "[1, 3] sorts after [1, 2, 3] at the second entry");
    // Equal maps hash equal whatever their layout or insertion order.
    use std::hash::{BuildHasher, RandomState};
    let s = RandomState::new();
    let mut p = MlpIndex::with_config(Config::with_layout(Layout::Paper)).unwrap();
    p.extend([(3, 30), (2, 20), (1, 11)]);
    assert_eq!(p, m);
    assert_eq!(s.hash_one(&p), s.hash_one(&m));
    let mut sum = 0;
    for (_, v) in &m {
        sum += v;
    }
    assert_eq!(sum, 61);
    let mut m = m;
    for (_, v) in &mut m {
        *v += 1;
    }
    assert_eq!(
        m.into_iter().collect::<Vec<_>>(),
        [(1, 12), (2, 21), (3, 31)]
    );
}

#[test]
#[should_panic(expected = "key not in the MlpIndex")]
fn index_of_a_missing_key_panics_like_std() {
    let m = MlpIndex::from([(1, 1)]);
    let _ = m[2];
}

/// An empty map maps nothing (it mapped 2 MiB before its first insert); `clear` gives the
/// memory back, and a map that had keys costs no more than its smallest table.
#[test]
fn an_empty_map_costs_little() {
    for layout in LAYOUTS {
        let mut m = map(layout);
        assert!(m.memory_usage() <= 4096, "{layout:?}: {}", m.memory_usage());
        assert_eq!(m.mapped_bytes(), 0);
        assert_eq!(m.get(1), None);
        assert_eq!(m.first(), None);
        assert_eq!(m.range(..).next_back(), None);
        assert_eq!(m.remove(1), None);
        assert_eq!(m.pop_first(), None);
        m.retain(|_, _| false);
        assert_eq!(m.iter_mut().count(), 0);
        assert_eq!(m.clone(), m);
        m.check_invariants().unwrap();
        m.insert(1, 2).unwrap();
        assert!(m.mapped_bytes() > 0);
        m.clear();
        assert!(m.memory_usage() <= 4096);
        assert_eq!(m.mapped_bytes(), 0);
        m.insert(1, 3).unwrap();
        assert_eq!(m.get(1), Some(3));
    }
    assert!(MlpIndex::new().memory_usage() <= 4096);
    assert!(MlpIndex::default().memory_usage() <= 4096);
}

/// `with_capacity`/`reserve` size the table once: inserting that many random keys does not
/// grow it.
#[test]
fn reserve_makes_room_for_random_keys() {
    for layout in LAYOUTS {
        let n = 100_000;
        let mut m = map(layout);
        m.reserve(n);
        let bytes = m.mapped_bytes();
        let mut r = Rng(11);
        for i in 0..n as u64 {
            m.insert(r.next(), i).unwrap();
        }
        assert_eq!(m.mapped_bytes(), bytes, "{layout:?}: the table grew");
        m.check_invariants().unwrap();
        let m = MlpIndex::with_capacity(1000);
        assert!(m.mapped_bytes() > 0);
        assert!(m.is_empty());
    }
}

/// `OrderedMap` over `MlpIndex`: keys of other widths, and byte-string bounds of any width,
/// against a `BTreeMap<Vec<u8>, u64>` of the same 8-byte keys.
#[test]
fn ordered_map_view_matches_a_byte_keyed_btreemap() {
    use mlpdex::{Error, OrderedMap};
    let mut m = MlpIndex::new();
    let mut b: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut r = Rng(3);
    for i in 0..3_000u64 {
        let k = key(Shape::Mixed, &mut r, 5_000).to_be_bytes();
        assert_eq!(
            OrderedMap::insert(&mut m, &k, i).unwrap(),
            b.insert(k.to_vec(), i)
        );
    }
    assert_eq!(
        OrderedMap::insert(&mut m, b"abc", 1),
        Err(Error::KeyWidth {
            len: 3,
            expected: 8
        })
    );
    assert_eq!(OrderedMap::get(&m, b"abc"), None);
    assert!(!OrderedMap::contains_key(&m, b"123456789"));
    assert_eq!(OrderedMap::remove(&mut m, b""), None);
    let bound_key = |r: &mut Rng| -> Vec<u8> {
        let k = key(Shape::Mixed, r, 5_000).to_be_bytes();
        let n = r.below(11) as usize;
        let mut v = k[..n.min(8)].to_vec();
        v.extend((8..n).map(|_| r.below(256) as u8));
        v
    };
    let bound = |r: &mut Rng, k: Vec<u8>| match r.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    };
    for _ in 0..2_000 {
        let (x, y) = (bound_key(&mut r), bound_key(&mut r));
        let (lo, hi) = (
            bound(&mut r, x.clone().min(y.clone())),
            bound(&mut r, x.max(y)),
        );
        let (lo, hi) = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        let empty = match (lo, hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a >= b
            }
            _ => false,
        };
        let want: Vec<(Vec<u8>, u64)> = if empty {
            Vec::new()
        } else {
            b.range::<[u8], _>((lo, hi))
                .map(|(k, &v)| (k.clone(), v))
                .collect()
        };
        let got: Vec<(Vec<u8>, u64)> = OrderedMap::range(&m, (lo, hi))
            .map(|(k, &v)| (k.to_vec(), v))
            .collect();
        assert_eq!(got, want, "range({lo:?}, {hi:?})");
        let got_rev: Vec<(Vec<u8>, u64)> = OrderedMap::range(&m, (lo, hi))
            .rev()
            .map(|(k, &v)| (k.to_vec(), v))
            .collect();
        assert!(got_rev.iter().eq(want.iter().rev()));
        let own = |e: Option<([u8; 8], &u64)>| e.map(|(k, &v)| (k.to_vec(), v));
        assert_eq!(
            own(OrderedMap::lower_bound(&m, lo)),
            b.range::<[u8], _>((lo, Bound::Unbounded))
                .next()
                .map(|(k, &v)| (k.clone(), v)),
            "lower_bound({lo:?})"
        );
        assert_eq!(
            own(OrderedMap::upper_bound(&m, hi)),
            b.range::<[u8], _>((Bound::Unbounded, hi))
                .next_back()
                .map(|(k, &v)| (k.clone(), v)),
            "upper_bound({hi:?})"
        );
    }
}

/// The shared differential driver, through `OrderedMap`, on 8-byte keys.
#[cfg(feature = "testing")]
#[test]
fn differential_driver_on_u64_keys() {
    use mlpdex::testing::{KeyShape, differential_ordered};
    for seed in 1..=4 {
        differential_ordered(MlpIndex::new, KeyShape::U64, seed, 4_000);
        differential_ordered(
            || MlpIndex::with_config(Config::with_layout(Layout::Paper)).unwrap(),
            KeyShape::U64,
            seed,
            4_000,
        );
    }
}

/// The map and its iterators can cross threads, as `BTreeMap`'s do.
#[test]
fn map_and_iterators_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<MlpIndex>();
    send_sync::<mlpdex::mlp_index::Range<'static>>();
    send_sync::<mlpdex::mlp_index::IterMut<'static>>();
    send_sync::<mlpdex::mlp_index::IntoIter>();
    send_sync::<mlpdex::mlp_index::Entry<'static>>();
}
