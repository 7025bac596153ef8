//! Integration tests of [`mlpdex::surf::Surf`] (`cargo test -p mlpdex --test surf`).
//!
//! 1. **No false negatives**, for every kind (Base, Hash, Real, Mixed at several widths) over
//!    every [`KeyShape`], several seeds and sizes, and dense ratios: every stored key passes
//!    `may_contain`; every range holding a stored key passes `may_contain_range` — ranges
//!    around each stored key with every bound kind, and random ranges checked against the
//!    oracle.
//! 2. **Counts**: `approx_count` is never below the exact count and at most two above it.
//! 3. **False-positive rates** on random 8-byte keys and on string keys: SuRF-Hash-8 points
//!    ≤ 1% (the thesis: about 2^-8 of Base's), SuRF-Real-8 ranges below Base's, Base's point
//!    FPR on random integers small; bounds loose enough not to flake, tight enough to catch a
//!    filter that answers `true` too often.
//! 4. **Cursor**: walking from the first key yields every stored key's unique prefix in order.
//! 5. **Serialization**: round trips, truncations and corruptions are errors.

use std::collections::BTreeSet;
use std::ops::{Bound, RangeBounds};

use mlpdex::surf::{Surf, SurfBuilder, SurfKind};
use mlpdex::testing::{KeyShape, TestRng, first_sparse_label_at, reseal};
use mlpdex::{Error, RangeFilter};

const KINDS: &[SurfKind] = &[
    SurfKind::Base,
    SurfKind::Hash(4),
    SurfKind::Hash(8),
    SurfKind::Real(1),
    SurfKind::Real(8),
    SurfKind::Real(13),
    SurfKind::Real(64),
    SurfKind::Mixed { hash: 4, real: 4 },
    SurfKind::Mixed { hash: 3, real: 9 },
];

const SHAPES: &[KeyShape] = KeyShape::ALL;

fn key_set(shape: KeyShape, seed: u64, n: usize) -> BTreeSet<Vec<u8>> {
    let mut rng = TestRng::new(seed);
    (0..n).map(|_| shape.gen_key(&mut rng)).collect()
}

fn build(set: &BTreeSet<Vec<u8>>, kind: SurfKind, ratio: u32) -> Surf {
    let mut b = SurfBuilder::with_dense_ratio(kind, ratio).unwrap();
    for k in set {
        b.push(k).unwrap();
    }
    b.finish().unwrap()
}

/// True when `key` lies within `(lo, hi)` (byte slices compare lexicographically, a proper
/// prefix first: the key order).
fn in_range(key: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    (lo, hi).contains(&key)
}

/// Keys of `sorted` within `(lo, hi)`, by two binary searches.
fn exact_count(sorted: &[&Vec<u8>], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> u64 {
    if mlpdex::key::is_empty_range(lo, hi) {
        return 0;
    }
    let a = sorted.partition_point(|k| !mlpdex::key::after_start(k, lo));
    let b = sorted.partition_point(|k| mlpdex::key::before_end(k, hi));
    b.saturating_sub(a) as u64
}

fn bounds_around(k: &[u8]) -> Vec<Bound<Vec<u8>>> {
    let mut v = vec![Bound::Included(k.to_vec()), Bound::Unbounded];
    let mut longer = k.to_vec();
    longer.push(0);
    v.push(Bound::Excluded(longer.clone()));
    v.push(Bound::Included(longer));
    if let Some(&last) = k.last() {
        let mut shorter = k.to_vec();
        shorter.pop();
        v.push(Bound::Included(shorter.clone()));
        v.push(Bound::Excluded(shorter.clone()));
        if last > 0 {
            let mut below = shorter.clone();
            below.push(last - 1);
            v.push(Bound::Excluded(below.clone()));
            below.push(0xFF);
            v.push(Bound::Included(below));
        }
        if last < 0xFF {
            let mut above = shorter;
            above.push(last + 1);
            v.push(Bound::Excluded(above));
        }
    }
    v
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

#[test]
fn no_false_negatives_points_and_ranges() {
    for &shape in SHAPES {
        for (seed, n) in [(1, 1), (2, 9), (3, 400), (4, 2500)] {
            // Multi-KiB keys make tries thousands of levels deep, and a count walks every
            // level: keep those sets small.
            let n = if shape == KeyShape::Long {
                n.min(150)
            } else {
                n
            };
            // A count on a multi-KiB key walks thousands of levels: fewer bounds and random
            // ranges for the shapes that have such keys.
            let long = matches!(shape, KeyShape::Long | KeyShape::Mixed);
            let (per_filter, random) = if long { (4, 25) } else { (15, 100) };
            let set = key_set(shape, seed, n);
            for &kind in KINDS {
                for ratio in [0, 64] {
                    let s = build(&set, kind, ratio);
                    assert_eq!(s.len(), set.len());
                    let keys: Vec<&Vec<u8>> = set.iter().collect();
                    for (i, k) in keys.iter().enumerate() {
                        assert!(s.may_contain(k), "{shape:?} {kind:?} lost {k:?}");
                        // Bounds around at most `per_filter` keys (each costs 169 ranges).
                        if i % keys.len().div_ceil(per_filter) != 0 {
                            continue;
                        }
                        let around = bounds_around(k);
                        for lo in &around {
                            for hi in &around {
                                let (lo, hi) = (as_ref(lo), as_ref(hi));
                                let exact = exact_count(&keys, lo, hi);
                                let got = s.may_contain_range((lo, hi));
                                assert!(
                                    exact == 0 || got,
                                    "{shape:?} {kind:?}: range {lo:?}..{hi:?} holds {exact} keys"
                                );
                                let c = s.approx_count((lo, hi));
                                assert!(
                                    c >= exact && c <= exact + 2,
                                    "{shape:?} {kind:?}: count {c} for exact {exact} in {lo:?}..{hi:?}"
                                );
                            }
                        }
                    }
                    // Random ranges from the same universe.
                    let mut rng = TestRng::new(seed ^ 0xABCD);
                    for _ in 0..random {
                        let a = shape.gen_key(&mut rng);
                        let b = shape.gen_key(&mut rng);
                        let (a, b) = if a <= b { (a, b) } else { (b, a) };
                        for (lo, hi) in [
                            (Bound::Included(&a[..]), Bound::Included(&b[..])),
                            (Bound::Excluded(&a[..]), Bound::Excluded(&b[..])),
                            (Bound::Included(&a[..]), Bound::Unbounded),
                            (Bound::Unbounded, Bound::Excluded(&b[..])),
                        ] {
                            let exact = exact_count(&keys, lo, hi);
                            assert!(exact == 0 || s.may_contain_range((lo, hi)));
                            let c = s.approx_count((lo, hi));
                            assert!(c >= exact && c <= exact + 2, "{c} vs {exact}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn cursor_visits_unique_prefixes_in_order() {
    for &shape in SHAPES {
        let set = key_set(shape, 7, 1500);
        let s = build(&set, SurfKind::Real(8), 64);
        let stored: Vec<&Vec<u8>> = set.iter().filter(|k| !k.is_empty()).collect();
        let mut c = s.cursor();
        let mut ok = c.seek(Bound::Unbounded);
        let mut i = 0;
        while ok {
            assert!(stored[i].starts_with(c.prefix()));
            i += 1;
            ok = c.next();
        }
        assert_eq!(i, stored.len());
        // Seeking each stored key lands on its own prefix, never flagged when real bits
        // settle it.
        for k in &stored {
            assert!(c.seek(Bound::Included(k)));
            assert!(k.starts_with(c.prefix()), "{k:?} -> {:?}", c.prefix());
        }
    }
}

/// `Surf::range` is an iterator of unique prefixes: both directions give the same prefixes, the
/// full range gives every stored key's prefix in order (the empty key first when stored), and
/// a range never drops a stored key within it (no false negatives), whichever end it is walked
/// from; a range is non-empty exactly when `may_contain_range` says so from the front.
#[test]
fn range_iterator_yields_every_stored_prefix_both_ways() {
    for &shape in SHAPES {
        let set = key_set(shape, 8, 800);
        let sorted: Vec<&Vec<u8>> = set.iter().collect();
        for kind in [SurfKind::Base, SurfKind::Real(8), SurfKind::Hash(4)] {
            let s = build(&set, kind, 64);
            let all: Vec<Vec<u8>> = s.iter().collect();
            assert_eq!(all.len(), set.len(), "{shape:?} {kind:?}");
            for (p, k) in all.iter().zip(&sorted) {
                assert!(k.starts_with(p), "{shape:?} {kind:?}: {p:?} for {k:?}");
            }
            let mut back: Vec<Vec<u8>> = s.range(..).rev().collect();
            back.reverse();
            assert_eq!(back, all);
            let mut rng = TestRng::new(3);
            for _ in 0..200 {
                let a = sorted[rng.index(sorted.len())];
                let b = sorted[rng.index(sorted.len())];
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                for (l, h) in [
                    (Bound::Included(&lo[..]), Bound::Included(&hi[..])),
                    (Bound::Excluded(&lo[..]), Bound::Excluded(&hi[..])),
                    (Bound::Included(&lo[..]), Bound::Unbounded),
                ] {
                    let fwd: Vec<Vec<u8>> = s.range((l, h)).collect();
                    let rev: Vec<Vec<u8>> = s.range((l, h)).rev().collect();
                    let inside = sorted
                        .iter()
                        .filter(|k| in_range(k, l, h))
                        .collect::<Vec<_>>();
                    for k in &inside {
                        assert!(
                            fwd.iter().any(|p| k.starts_with(p)),
                            "{shape:?} {kind:?} {k:?}"
                        );
                        assert!(
                            rev.iter().any(|p| k.starts_with(p)),
                            "{shape:?} {kind:?} {k:?}"
                        );
                    }
                    assert_eq!(
                        !fwd.is_empty(),
                        s.may_contain_range((l, h)),
                        "{shape:?} {kind:?}"
                    );
                }
            }
        }
    }
}

fn fpr(s: &Surf, set: &BTreeSet<Vec<u8>>, probes: &[Vec<u8>]) -> f64 {
    let neg: Vec<&Vec<u8>> = probes.iter().filter(|p| !set.contains(*p)).collect();
    let fp = neg.iter().filter(|p| s.may_contain(p)).count();
    fp as f64 / neg.len().max(1) as f64
}

#[test]
fn false_positive_rates_are_bounded() {
    let mut rng = TestRng::new(99);
    let all: Vec<Vec<u8>> = (0..400_000)
        .map(|_| rng.next_u64().to_be_bytes().to_vec())
        .collect();
    let set: BTreeSet<Vec<u8>> = all.iter().step_by(2).cloned().collect();
    let base = build(&set, SurfKind::Base, 64);
    let hash8 = build(&set, SurfKind::Hash(8), 64);
    let real8 = build(&set, SurfKind::Real(8), 64);
    let f_base = fpr(&base, &set, &all);
    let f_hash = fpr(&hash8, &set, &all);
    let f_real = fpr(&real8, &set, &all);
    assert!(f_hash <= 0.01, "hash-8 point FPR {f_hash}");
    assert!(f_real <= f_base, "real-8 {f_real} vs base {f_base}");
    // 200k random keys, about three per 16-bit prefix: a prefix holding one key ends its
    // path at two bytes, so Base answers yes to a sizeable share of absent keys.
    assert!(f_base < 0.3, "base point FPR {f_base}");
    assert!(f_hash <= f_base / 50.0, "hash-8 {f_hash} vs base {f_base}");
    // Ranges [K + 2^37, K + 2^38]: real bits must help.
    let range_fpr = |s: &Surf| {
        let mut neg = 0;
        let mut fp = 0;
        for k in &all {
            let x = u64::from_be_bytes(k[..].try_into().unwrap());
            let lo = x.saturating_add(1 << 37).to_be_bytes();
            let hi = x.saturating_add(1 << 38).to_be_bytes();
            let r = (Bound::Included(&lo[..]), Bound::Included(&hi[..]));
            let truth = set.range::<[u8], _>(r).next().is_some();
            let ans = s.may_contain_range(r);
            assert!(ans || !truth);
            if !truth {
                neg += 1;
                fp += ans as u32;
            }
        }
        fp as f64 / neg.max(1) as f64
    };
    let r_base = range_fpr(&base);
    let r_real = range_fpr(&real8);
    assert!(r_real < r_base, "real-8 range {r_real} vs base {r_base}");
    assert!(r_real <= 0.05, "real-8 range FPR {r_real}");
}

#[test]
fn serialization_round_trips_and_rejects_damage() {
    for &kind in KINDS {
        let set = key_set(KeyShape::Mixed, 3, 60);
        let s = build(&set, kind, 1);
        let img = s.to_bytes();
        assert_eq!(Surf::from_bytes(&img).unwrap(), s);
        let in_place = Surf::from_shared(img.clone()).unwrap();
        assert!(in_place.is_zero_copy());
        assert_eq!(in_place, s);
        for k in &set {
            assert!(in_place.may_contain(k));
        }
        for len in 0..img.len() {
            assert!(Surf::from_bytes(&img[..len]).is_err());
            assert!(Surf::from_shared(img[..len].to_vec()).is_err());
        }
        let mut bad = img.clone();
        for i in 0..img.len() {
            bad[i] ^= 0x21;
            if let Ok(x) = Surf::from_bytes(&bad) {
                let _ = x.may_contain(b"abc");
            }
            bad[i] = img[i];
        }
        // Images from before path compression (version 2) are refused, not misread.
        let mut old = img.clone();
        old[8] = 2;
        mlpdex::testing::reseal(&mut old);
        assert!(matches!(
            Surf::from_bytes(&old),
            Err(Error::Version { found: 2, .. })
        ));
        // An FST image is not a SuRF image.
        let f = mlpdex::fst::Fst::from_sorted(set.iter().map(|k| (k, 1u64))).unwrap();
        assert!(matches!(
            Surf::from_bytes(&f.to_bytes()),
            Err(Error::Format { .. })
        ));
    }
}

#[test]
fn builder_and_kind_errors() {
    assert!(matches!(
        SurfBuilder::new(SurfKind::Hash(0)),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(matches!(
        SurfBuilder::new(SurfKind::Real(65)),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(SurfBuilder::new(SurfKind::Mixed { hash: 33, real: 1 }).is_err());
    let mut b = SurfBuilder::new(SurfKind::Base).unwrap();
    b.push(b"b").unwrap();
    assert!(matches!(b.push(b"a"), Err(Error::OutOfOrder { .. })));
    assert!(matches!(b.push(b"b"), Err(Error::DuplicateKey { .. })));
    b.push(b"c").unwrap();
    let s = b.finish().unwrap();
    assert_eq!(s.len(), 2);
    assert!(s.may_contain(b"b") && s.may_contain(b"c"));
    assert!(!s.may_contain(b"a") && !s.may_contain(b""));
    let empty = Surf::from_sorted(SurfKind::Base, Vec::<Vec<u8>>::new()).unwrap();
    assert!(!empty.may_contain(b"x"));
    assert!(!empty.may_contain_range(..));
    assert_eq!(empty.approx_count(..), 0);
    let only_empty = Surf::from_sorted(SurfKind::Real(8), [b""]).unwrap();
    assert!(only_empty.may_contain(b""));
    assert!(only_empty.may_contain_range(..));
    assert!(!only_empty.may_contain_range(&b"a"[..]..));
    assert_eq!(RangeFilter::approx_count(&only_empty, ..), 1);
}

#[test]
fn batched_queries_answer_like_single_ones() {
    for &shape in SHAPES {
        let set = key_set(shape, 12, 1500);
        let mut rng = TestRng::new(13);
        let mut probes: Vec<Vec<u8>> = (0..700).map(|_| shape.gen_key(&mut rng)).collect();
        probes.extend(set.iter().cloned());
        probes.push(Vec::new());
        let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        for &kind in KINDS {
            for ratio in [0, 64] {
                let s = build(&set, kind, ratio);
                let mut out = vec![false; refs.len()];
                s.may_contain_batch(&refs, &mut out);
                for (k, got) in refs.iter().zip(&out) {
                    assert_eq!(*got, s.may_contain(k), "{shape:?} {kind:?} {k:?}");
                }
            }
        }
    }
}

#[test]
fn batched_ranges_answer_like_single_ones() {
    for &shape in SHAPES {
        let set = key_set(shape, 14, 1200);
        let mut rng = TestRng::new(15);
        let bounds: Vec<(Vec<u8>, Vec<u8>)> = (0..300)
            .map(|_| {
                let a = shape.gen_key(&mut rng);
                let b = shape.gen_key(&mut rng);
                if a <= b { (a, b) } else { (b, a) }
            })
            .collect();
        let mut ranges = Vec::new();
        for (a, b) in &bounds {
            ranges.push((Bound::Included(&a[..]), Bound::Excluded(&b[..])));
            ranges.push((Bound::Excluded(&a[..]), Bound::Included(&b[..])));
            ranges.push((Bound::Unbounded, Bound::Included(&a[..])));
            ranges.push((Bound::Included(&b[..]), Bound::Unbounded));
        }
        let kinds = [
            SurfKind::Base,
            SurfKind::Hash(4),
            SurfKind::Real(8),
            SurfKind::Mixed { hash: 4, real: 4 },
        ];
        for (kind, ratio) in kinds.iter().flat_map(|&k| [(k, 0), (k, 64)]) {
            let s = build(&set, kind, ratio);
            let mut out = vec![false; ranges.len()];
            s.may_contain_range_batch(&ranges, &mut out);
            for (r, got) in ranges.iter().zip(&out) {
                assert_eq!(
                    *got,
                    s.may_contain_range(*r),
                    "{shape:?} {kind:?} ratio {ratio}"
                );
            }
        }
    }
}

mod properties {
    use std::collections::BTreeSet;
    use std::ops::Bound;

    use mlpdex::surf::{Surf, SurfKind};
    use mlpdex::testing::arb_key;
    use proptest::prelude::*;

    fn kind() -> impl Strategy<Value = SurfKind> {
        prop_oneof![
            Just(SurfKind::Base),
            (1u8..=64).prop_map(SurfKind::Hash),
            (1u8..=64).prop_map(SurfKind::Real),
            (1u8..=32, 1u8..=32).prop_map(|(hash, real)| SurfKind::Mixed { hash, real }),
        ]
    }

    proptest! {
        // Each case checks O(keys²) ranges, and counts walk every level of tries that 4 KiB
        // keys make thousands of levels deep: fewer cases than elsewhere.
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// No false negative for any key set, kind, point or range, and counts within the
        /// documented error.
        #[test]
        fn never_a_false_negative(
            keys in proptest::collection::btree_set(arb_key(), 0..60),
            probes in proptest::collection::vec(arb_key(), 0..12),
            kind in kind(),
        ) {
            let s = Surf::from_sorted(kind, &keys).unwrap();
            for k in &keys {
                prop_assert!(s.may_contain(k));
            }
            let sorted: Vec<&Vec<u8>> = keys.iter().collect();
            let all: BTreeSet<&Vec<u8>> = probes.iter().chain(keys.iter().step_by(3)).collect();
            let all: Vec<&Vec<u8>> = all.into_iter().collect();
            for a in &all {
                for z in &all {
                    for (lo, hi) in [
                        (Bound::Included(&a[..]), Bound::Included(&z[..])),
                        (Bound::Excluded(&a[..]), Bound::Excluded(&z[..])),
                        (Bound::Included(&a[..]), Bound::Unbounded),
                    ] {
                        if mlpdex::key::is_empty_range(lo, hi) {
                            continue;
                        }
                        let exact = sorted.iter().filter(|k| super::in_range(k, lo, hi)).count() as u64;
                        if exact > 0 {
                            prop_assert!(s.may_contain_range((lo, hi)));
                        }
                        let c = s.approx_count((lo, hi));
                        prop_assert!(c >= exact && c <= exact + 2, "count {} exact {}", c, exact);
                    }
                }
            }
        }
    }
}

/// Damaged images with recomputed checksums reach the structural validation: each load is an
/// error or a filter that answers every query without panicking.
#[test]
fn damaged_images_with_valid_checksums_never_panic() {
    let mut rng = TestRng::new(78);
    for &shape in SHAPES {
        let set = key_set(shape, 42, 60);
        for &kind in &[
            SurfKind::Base,
            SurfKind::Hash(5),
            SurfKind::Real(12),
            SurfKind::Mixed { hash: 3, real: 5 },
        ] {
            let s = build(&set, kind, 1);
            let img = s.to_bytes();
            let probes: Vec<Vec<u8>> = set
                .iter()
                .cloned()
                .chain((0..10).map(|_| shape.gen_key(&mut rng)))
                .collect();
            let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
            // Damaged tries of multi-KiB keys can be thousands of levels deep: fewer images.
            let images = if matches!(shape, KeyShape::Long | KeyShape::Mixed) {
                50
            } else {
                150
            };
            for _ in 0..images {
                let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
                let in_place = Surf::from_shared(bad.clone());
                let Ok(f) = Surf::from_bytes(&bad) else {
                    assert!(in_place.is_err());
                    continue;
                };
                assert_eq!(in_place.as_ref(), Ok(&f));
                let mut out = vec![false; refs.len()];
                f.may_contain_batch(&refs, &mut out);
                let ranges: Vec<_> = refs
                    .windows(2)
                    .map(|w| (Bound::Included(w[0]), Bound::Excluded(w[1])))
                    .collect();
                let mut rout = vec![false; ranges.len()];
                f.may_contain_range_batch(&ranges, &mut rout);
                for r in &ranges {
                    let _ = f.may_contain_range(*r);
                    let _ = f.approx_count(*r);
                }
                let mut c = f.cursor();
                let mut ok = c.seek(Bound::Unbounded);
                let mut steps = 0;
                while ok && steps < 10 * f.len() + 10 {
                    ok = c.next();
                    steps += 1;
                }
            }
        }
    }
}

// ---- Images that pass the checksum but not the structure (issue 16, defect 6) ---------------

/// The example on a SuRF: the root's sparse leaf label 0x00 rewritten to 0xFF reads
/// as a terminator, a stored empty key inside the trie. It used to load.
#[test]
fn forged_root_terminator_is_rejected_by_both_loaders() {
    let set: BTreeSet<Vec<u8>> = [&b"\x00zz"[..], b"b", b"c"]
        .iter()
        .map(|k| k.to_vec())
        .collect();
    for kind in [SurfKind::Base, SurfKind::Real(8), SurfKind::Hash(8)] {
        let s = build(&set, kind, u32::MAX);
        assert_eq!(s.stats().dense_levels, 0, "the root must be sparse");
        let mut bad = s.to_bytes();
        let at = first_sparse_label_at(&bad);
        assert_eq!(bad[at], 0x00, "{kind:?}: root label not found");
        bad[at] = 0xFF;
        reseal(&mut bad);
        let copied = Surf::from_bytes(&bad);
        assert!(
            matches!(copied, Err(Error::Format { .. })),
            "{kind:?}: from_bytes accepted the forged image: {:?}",
            copied.map(|f| collect_entries(&f, true))
        );
        let in_place = Surf::from_shared(bad.clone());
        assert!(
            matches!(in_place, Err(Error::Format { .. })),
            "{kind:?}: from_shared accepted the forged image"
        );
        assert_eq!(copied, in_place);
    }
}

/// The entries of a filter as (unique prefix, smallest key it stands for), in key order, from
/// the front or from the back (at most `len + 1`: a cursor that does not end is a failure).
fn collect_entries(f: &Surf, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut c = f.cursor();
    let mut ok = if forward {
        c.seek(Bound::Unbounded)
    } else {
        c.seek_back(Bound::Unbounded)
    };
    let mut out = Vec::new();
    while ok && out.len() <= f.len() {
        let mut k = Vec::new();
        c.smallest_key(&mut k);
        out.push((c.prefix().to_vec(), k));
        ok = if forward { c.next() } else { c.prev() };
    }
    if !forward {
        out.reverse();
    }
    out
}

/// What every loaded filter must satisfy, whatever its image: the cursor visits entries in
/// strictly increasing order and the same ones from both ends, as many as `len` says; the
/// filter admits every entry it visits (points for kinds without hash bits and for prefix keys,
/// single-key ranges for all), seeks to an entry's smallest key land on it, and seeks to probes land where the
/// visited sequence says (at the first entry at or above, or one early).
fn check_self_consistent(f: &Surf, probes: &[Vec<u8>]) -> Result<(), String> {
    let fwd = collect_entries(f, true);
    for w in fwd.windows(2) {
        if w[0].0 >= w[1].0 || w[0].1 >= w[1].1 {
            return Err(format!("cursor out of order: {:?} then {:?}", w[0], w[1]));
        }
    }
    let has_empty = f.may_contain(b"");
    if fwd.len() + has_empty as usize != f.len() {
        return Err(format!("len {} but {} visited", f.len(), fwd.len()));
    }
    let back = collect_entries(f, false);
    if back != fwd {
        return Err(format!("forward {fwd:?} but backward {back:?}"));
    }
    let points = matches!(f.kind(), SurfKind::Base | SurfKind::Real(_));
    let smallest: Vec<&[u8]> = fwd.iter().map(|e| e.1.as_slice()).collect();
    let mut batch = vec![false; smallest.len()];
    f.may_contain_batch(&smallest, &mut batch);
    let ranges: Vec<_> = smallest
        .iter()
        .map(|k| (Bound::Included(*k), Bound::Included(*k)))
        .collect();
    let mut rbatch = vec![false; ranges.len()];
    f.may_contain_range_batch(&ranges, &mut rbatch);
    let mut c = f.cursor();
    for (i, (prefix, k)) in fwd.iter().enumerate() {
        if points && !(f.may_contain(k) && batch[i]) {
            return Err(format!("denies its own entry {k:?}"));
        }
        // An entry followed by longer ones under it is a prefix key: stored exactly, whatever
        // the kind.
        let prefix_key = fwd.get(i + 1).is_some_and(|e| e.0.starts_with(prefix));
        if prefix_key && !f.may_contain(prefix) {
            return Err(format!("denies its own prefix key {prefix:?}"));
        }
        let r = (Bound::Included(&k[..]), Bound::Included(&k[..]));
        if !f.may_contain_range(r) || !rbatch[i] || f.approx_count(r) == 0 {
            return Err(format!("denies the range [{k:?}, {k:?}] of its own entry"));
        }
        let wide = (Bound::Included(&prefix[..]), Bound::<&[u8]>::Unbounded);
        if !f.may_contain_range(wide) {
            return Err(format!("denies the range from {prefix:?} up"));
        }
        for forward in [true, false] {
            let found = if forward {
                c.seek(Bound::Included(k))
            } else {
                c.seek_back(Bound::Included(k))
            };
            if !found || c.prefix() != prefix.as_slice() {
                return Err(format!(
                    "seek (forward {forward}) to {k:?} lands on {:?}, not {prefix:?}",
                    found.then(|| c.prefix().to_vec())
                ));
            }
        }
    }
    for p in probes {
        let at = fwd.partition_point(|e| e.1.as_slice() < p.as_slice());
        let first = fwd.get(at).map(|e| e.0.clone());
        let before = at.checked_sub(1).map(|j| fwd[j].0.clone());
        let got = c.seek(Bound::Included(p)).then(|| c.prefix().to_vec());
        if got != first && (got.is_none() || got != before) {
            return Err(format!(
                "seek to {p:?} lands on {got:?}; visited order says {first:?} (or {before:?})"
            ));
        }
    }
    let _ = (f.memory_usage(), f.stats(), f.bits_per_key());
    Ok(())
}

/// Damaged images with recomputed checksums (1–3 bytes each, many per image), of every key
/// family and SuRF kind: whatever loads, by copy or in place, must be self-consistent (see
/// `check_self_consistent`), and neither loading nor querying may panic.
#[test]
fn damaged_images_that_load_answer_consistently() {
    let mut rng = TestRng::new(2017);
    // As for the FST: the adversarial shapes (but multi-KiB keys), tiny tries, and a prefix
    // of 200 bytes shared by every key.
    let mut families: Vec<(KeyShape, BTreeSet<Vec<u8>>)> = SHAPES
        .iter()
        .filter(|&&s| s != KeyShape::Long)
        .map(|&s| (s, key_set(s, 62, 50)))
        .collect();
    let tiny: [&[&[u8]]; 4] = [
        &[b"\x00zz", b"b", b"c"],
        &[b"", b"\x00", b"\x00\x00", b"\x00\xff", b"\xff"],
        &[b"a", b"ab", b"abc", b"b\xff", b"b\xff\xff"],
        &[b"", b"x\x00", b"x\x00y", b"x\xffz", b"y"],
    ];
    for keys in tiny {
        families.push((KeyShape::ZeroFf, keys.iter().map(|k| k.to_vec()).collect()));
    }
    let shared = [b'x'; 200];
    let long = [&b""[..], b"\x00", b"a", b"a\xff", b"b", b"\xff"]
        .iter()
        .map(|t| [&shared[..], t].concat())
        .collect();
    families.push((KeyShape::ZeroFf, long));
    let mut loaded = 0usize;
    for (shape, set) in &families {
        let probes: Vec<Vec<u8>> = set
            .iter()
            .cloned()
            .chain((0..8).map(|_| shape.gen_key(&mut rng)))
            .collect();
        for kind in [
            SurfKind::Base,
            SurfKind::Hash(5),
            SurfKind::Real(12),
            SurfKind::Mixed { hash: 3, real: 5 },
        ] {
            for ratio in [0, 64, u32::MAX] {
                let img = build(set, kind, ratio).to_bytes();
                for round in 0..120 {
                    let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
                    let in_place = Surf::from_shared(bad.clone());
                    let copied = Surf::from_bytes(&bad);
                    assert_eq!(
                        copied, in_place,
                        "{shape:?} {kind:?} {ratio}: loaders disagree"
                    );
                    let Ok(f) = copied else { continue };
                    loaded += 1;
                    if let Err(e) = check_self_consistent(&f, &probes) {
                        panic!(
                            "{shape:?} ({} keys), {kind:?}, ratio {ratio}, round {round}: {e}",
                            set.len()
                        );
                    }
                }
            }
        }
    }
    assert!(
        loaded > 0,
        "no damaged image loaded: the test checks nothing"
    );
}
