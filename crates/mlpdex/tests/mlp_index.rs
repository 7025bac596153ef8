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
