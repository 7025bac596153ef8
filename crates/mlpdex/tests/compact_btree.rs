//! Integration tests of [`mlpdex::compact_btree::CompactBTree`] through its public API
//! (`cargo test -p mlpdex --test compact_btree`).
//!
//! 1. **Differential runs**: maps built from key sets of every [`KeyShape`] (several seeds and
//!    sizes) under several leaf sizes, checked against the `BTreeMap` oracle by the driver's
//!    `check_static`, and every seek (`lower_bound`, `upper_bound`, `lower_bound_value` with
//!    every bound kind, `first`, `last`) against the oracle.
//! 2. **Shapes the layout must get right**: runs of keys sharing their first 8 bytes across
//!    many leaves (the separators tie), keys that differ from each other only in zero padding
//!    (`"ab"`, `"ab\0"`, ...), consecutive and sparse integers at leaf boundaries.
//! 3. **Builder contract**: `check_builder_rejects`, and leaf sizes out of range.
//! 4. **Merges**: `merged` against the oracle on batches that append, touch only the end,
//!    insert, update and delete anywhere; each result must be the very tree a build of the
//!    same entries makes (leaves copied whole included), and bad batches are refused.
//! 5. **Serialization**: round trips; every truncation and single-byte corruption of small
//!    images is an error; damaged images with recomputed checksums either fail to load or
//!    answer consistently; zero-copy loads answer like the built map.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

use mlpdex::Error;
use mlpdex::compact_btree::{CompactBTree, CompactBTreeBuilder, Config};
use mlpdex::testing::{KeyShape, TestRng, apply_batch, check_builder_rejects, check_static};

type Oracle = BTreeMap<Vec<u8>, u64>;
type Entries = Vec<(Vec<u8>, u64)>;

fn key_set(shape: KeyShape, seed: u64, n: usize) -> Oracle {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| (shape.gen_key(&mut rng), rng.next_u64()))
        .collect()
}

fn build(set: &Oracle, leaf_keys: u32) -> CompactBTree {
    let mut b = CompactBTreeBuilder::with_config(Config { leaf_keys }).unwrap();
    for (k, &v) in set {
        b.push(k, v).unwrap();
    }
    assert_eq!(b.len(), set.len());
    b.finish().unwrap()
}

const SHAPES: &[KeyShape] = KeyShape::ALL;

/// Every seek of `m` around `probe`, against the oracle.
fn check_seeks(m: &CompactBTree, set: &Oracle, probe: &[u8]) {
    let entry = |e: Option<(&Vec<u8>, &u64)>| e.map(|(k, v)| (k.clone(), *v));
    for b in [Included(probe), Excluded(probe), Unbounded] {
        let want_lo = entry(set.range::<[u8], _>((b, Unbounded)).next());
        let want_hi = entry(set.range::<[u8], _>((Unbounded, b)).next_back());
        assert_eq!(m.lower_bound(b), want_lo, "lower_bound({b:?})");
        assert_eq!(m.upper_bound(b), want_hi, "upper_bound({b:?})");
        assert_eq!(
            m.lower_bound_value(b),
            want_lo.map(|e| e.1),
            "lower_bound_value({b:?})"
        );
    }
    assert_eq!(m.get(probe), set.get(probe).copied(), "get({probe:?})");
    assert_eq!(m.contains_key(probe), set.contains_key(probe));
}

fn check_all(m: &CompactBTree, set: &Oracle, shape: KeyShape, seed: u64) {
    check_static(m, set, shape, seed, 400);
    assert_eq!(
        m.first(),
        set.first_key_value().map(|(k, v)| (k.clone(), *v))
    );
    assert_eq!(m.last(), set.last_key_value().map(|(k, v)| (k.clone(), *v)));
    let mut rng = TestRng::new(seed ^ 0x5eed);
    for (k, _) in set.iter().step_by(1 + set.len() / 50) {
        check_seeks(m, set, k);
        let mut longer = k.clone();
        longer.push(0);
        check_seeks(m, set, &longer);
        if let Some((_, shorter)) = k.split_last() {
            check_seeks(m, set, shorter);
        }
    }
    for _ in 0..50 {
        check_seeks(m, set, &shape.gen_key(&mut rng));
    }
}

#[test]
fn differential_every_shape_and_leaf_size() {
    for &shape in SHAPES {
        for (seed, n) in [(1, 0), (2, 1), (3, 7), (4, 9), (5, 300), (6, 3000)] {
            let set = key_set(shape, seed, n);
            for leaf_keys in [8, 16, 256] {
                let m = build(&set, leaf_keys);
                assert_eq!(m.config().leaf_keys, leaf_keys);
                check_all(&m, &set, shape, seed * 31 + leaf_keys as u64);
                let back = CompactBTree::from_bytes(&m.to_bytes()).unwrap();
                assert_eq!(back, m);
            }
        }
    }
}

#[test]
fn keys_sharing_their_first_eight_bytes_across_many_leaves() {
    // 3000 keys behind one 8-byte head, so dozens of leaves of 8 share a separator; plus
    // keys just below and above the run, and short keys that pad to the same head.
    let mut set = Oracle::new();
    let mut rng = TestRng::new(8);
    for i in 0..3000u64 {
        let mut k = b"michael.".to_vec();
        for _ in 0..rng.index(4) {
            k.push(b"ab\0\xff"[rng.index(4)]);
        }
        k.extend_from_slice(format!("{}", i * 7919 % 10_007).as_bytes());
        set.insert(k, i);
    }
    for k in [
        &b"michael"[..],
        b"michael.",
        b"michael-",
        b"michael/",
        b"michaeL.zzz",
        b"mich",
        b"",
    ] {
        set.insert(k.to_vec(), 7);
    }
    for leaf_keys in [8, 64, 256] {
        let m = build(&set, leaf_keys);
        check_all(&m, &set, KeyShape::SharedPrefix, leaf_keys as u64);
        for k in set.keys() {
            for probe in [
                k.clone(),
                [&k[..], b"\0"].concat(),
                [&k[..], b"\xff"].concat(),
            ] {
                check_seeks(&m, &set, &probe);
            }
        }
    }
}

#[test]
fn keys_that_differ_only_in_zero_padding() {
    let keys: Vec<Vec<u8>> = (0..=10)
        .flat_map(|n| [[&b"ab"[..], &vec![0u8; n]].concat(), vec![0u8; n]])
        .chain([b"ab\0\0\0\0\0\0\x01".to_vec(), b"\xff".repeat(9)])
        .collect();
    let set: Oracle = keys.into_iter().zip(0..).collect();
    for leaf_keys in [8, 16] {
        let m = build(&set, leaf_keys);
        let got: Vec<(Vec<u8>, u64)> = m.iter().collect();
        let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, want);
        check_all(&m, &set, KeyShape::ZeroFf, 3);
        for k in set.keys() {
            for n in 0..k.len() + 2 {
                let probe = if n <= k.len() {
                    k[..n].to_vec()
                } else {
                    [&k[..], b"\0"].concat()
                };
                check_seeks(&m, &set, &probe);
            }
        }
    }
}

#[test]
fn integers_dense_sparse_and_at_leaf_boundaries() {
    let families: [Vec<u64>; 4] = [
        (0..5000).collect(),
        (0..5000).map(|i| i * 1_000_003).collect(),
        (0..5000).map(|i| u64::MAX - 5000 + i).collect(),
        (0..5000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    ];
    for ints in families {
        let set: Oracle = ints
            .iter()
            .map(|&x| (x.to_be_bytes().to_vec(), x ^ 1))
            .collect();
        for leaf_keys in [8, 256] {
            let m = build(&set, leaf_keys);
            for &x in &ints {
                assert_eq!(m.get(&x.to_be_bytes()), Some(x ^ 1));
                for y in [x.wrapping_sub(1), x.wrapping_add(1)] {
                    check_seeks(&m, &set, &y.to_be_bytes());
                }
            }
            check_all(&m, &set, KeyShape::U64, 5);
        }
    }
}

#[test]
fn memory_of_random_integers_is_close_to_the_entropy() {
    let mut rng = TestRng::new(4);
    let set: Oracle = (0..200_000)
        .map(|_| (rng.next_u64().to_be_bytes().to_vec(), 0))
        .collect();
    let m = build(&set, 256);
    // log2(C(2^64, n)) / n ≈ 64 - log2(n) + 1.44 = 47.8 bits for n = 200,000; Elias–Fano
    // takes about 2 bits more, and the leaves' headers and separators about 0.6.
    let bits = m.structure_bytes() as f64 * 8.0 / set.len() as f64;
    assert!(bits < 51.0, "{bits:.1} bits per key");
    assert_eq!(m.memory_usage() - m.structure_bytes(), 8 * set.len());
}

#[test]
fn builder_rejects_bad_input() {
    check_builder_rejects(CompactBTreeBuilder::new);
    check_builder_rejects(|| CompactBTreeBuilder::with_config(Config { leaf_keys: 8 }).unwrap());
    for leaf_keys in [0, 1, 4, 7, 100, 1 << 17] {
        assert!(
            matches!(
                CompactBTreeBuilder::with_config(Config { leaf_keys }),
                Err(Error::InvalidConfig { .. })
            ),
            "{leaf_keys}"
        );
    }
}

#[test]
fn debug_prints_the_entries() {
    let m = CompactBTree::from_sorted([(&b"a"[..], 1), (b"b\xff", 2)]).unwrap();
    assert_eq!(format!("{m:?}"), r#"{"a": 1, "b\xff": 2}"#);
}

#[test]
fn corrupt_and_truncated_images_are_errors() {
    for &shape in SHAPES {
        let set = key_set(shape, 11, 40);
        let img = build(&set, 8).to_bytes();
        for len in 0..img.len() {
            assert!(
                CompactBTree::from_bytes(&img[..len]).is_err(),
                "truncated to {len}"
            );
        }
        let mut bad = img.clone();
        for i in 0..img.len().min(4096) {
            bad[i] ^= 0x5A;
            assert!(CompactBTree::from_bytes(&bad).is_err(), "byte {i} flipped");
            bad[i] = img[i];
        }
        let mut v = img.clone();
        v[8] = 9;
        assert!(matches!(
            CompactBTree::from_bytes(&v),
            Err(Error::Version { found: 9, .. })
        ));
        let mut m = img.clone();
        m[0] = b'X';
        assert!(matches!(
            CompactBTree::from_bytes(&m),
            Err(Error::Format { .. })
        ));
    }
}

/// Every entry from the front and from the back (at most `len + 1` each).
fn both_ways(m: &CompactBTree) -> (Entries, Entries) {
    let fwd: Vec<_> = m.iter().take(m.len() + 1).collect();
    let mut back: Vec<_> = m.iter().rev().take(m.len() + 1).collect();
    back.reverse();
    (fwd, back)
}

/// What every loaded map must satisfy: iteration strictly increasing and the same both ways,
/// `len` counting it, `get` finding every key, seeks agreeing with the iterated order.
fn check_self_consistent(m: &CompactBTree, probes: &[Vec<u8>]) -> Result<(), String> {
    let (fwd, back) = both_ways(m);
    if let Some(w) = fwd.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(format!(
            "iteration out of order: {:?} then {:?}",
            w[0], w[1]
        ));
    }
    if fwd.len() != m.len() || back != fwd {
        return Err(format!(
            "len {}, forward {fwd:?}, backward {back:?}",
            m.len()
        ));
    }
    let set: Oracle = fwd.iter().cloned().collect();
    for p in fwd.iter().map(|(k, _)| k).chain(probes) {
        let entry = |e: Option<(&Vec<u8>, &u64)>| e.map(|(k, v)| (k.clone(), *v));
        if m.get(p) != set.get(p).copied() {
            return Err(format!("get({p:?}) = {:?}", m.get(p)));
        }
        for b in [Included(&p[..]), Excluded(&p[..])] {
            let lo = entry(set.range::<[u8], _>((b, Unbounded)).next());
            let hi = entry(set.range::<[u8], _>((Unbounded, b)).next_back());
            if m.lower_bound(b) != lo || m.upper_bound(b) != hi {
                return Err(format!("seeks of {b:?} disagree with the iteration"));
            }
        }
    }
    Ok(())
}

#[test]
fn damaged_images_that_load_answer_consistently() {
    let mut rng = TestRng::new(2016);
    let mut loaded = 0usize;
    let mut tried = 0usize;
    for &shape in SHAPES.iter().filter(|&&s| s != KeyShape::Long) {
        let set = key_set(shape, 61, 50);
        let probes: Vec<Vec<u8>> = set
            .keys()
            .cloned()
            .chain((0..8).map(|_| shape.gen_key(&mut rng)))
            .collect();
        for leaf_keys in [8, 256] {
            let img = build(&set, leaf_keys).to_bytes();
            for round in 0..400 {
                let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
                let in_place = CompactBTree::from_shared(bad.clone());
                let copied = CompactBTree::from_bytes(&bad);
                assert_eq!(copied, in_place, "{shape:?} {leaf_keys}: loaders disagree");
                tried += 1;
                let Ok(m) = copied else { continue };
                loaded += 1;
                if let Err(e) = check_self_consistent(&m, &probes) {
                    panic!("{shape:?}, leaf_keys {leaf_keys}, round {round}: {e}");
                }
            }
        }
    }
    // Damage to values keeps an image valid; damage to the structure is caught.
    assert!(
        loaded > 0,
        "no damaged image loaded: the test checks nothing"
    );
    assert!(loaded < tried, "the loader rejected nothing");
}

/// An image at an odd address: loads by copying its sections, and still answers.
fn unaligned(img: &[u8]) -> &'static [u8] {
    let mut v = vec![0u8; img.len() + 1];
    v[1..].copy_from_slice(img);
    let leaked: &'static [u8] = Vec::leak(v);
    &leaked[1..]
}

#[test]
fn zero_copy_loads_answer_like_the_built_map() {
    for &shape in SHAPES {
        let set = key_set(shape, 21, 2000);
        let m = build(&set, 16);
        let img = m.to_bytes();
        let arc: std::sync::Arc<[u8]> = img.clone().into();
        let vec = CompactBTree::from_shared(img.clone()).unwrap();
        let shared = CompactBTree::from_shared(arc).unwrap();
        let odd = CompactBTree::from_shared(unaligned(&img)).unwrap();
        assert!(vec.is_zero_copy() && shared.is_zero_copy());
        assert!(!odd.is_zero_copy());
        assert!(!m.is_zero_copy());
        for loaded in [&vec, &shared, &odd] {
            assert_eq!(loaded, &m);
            check_static(loaded, &set, shape, 3, 200);
        }
    }
}

#[test]
fn zero_copy_from_a_memory_mapped_file() {
    let set = key_set(KeyShape::Mixed, 5, 3000);
    let m = build(&set, 256);
    let path = std::env::temp_dir().join(format!("mlpdex-cbt-{}.img", std::process::id()));
    std::fs::write(&path, m.to_bytes()).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: the file is this test's own and nobody changes it while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let loaded = CompactBTree::from_shared(map).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(loaded.is_zero_copy());
    check_static(&loaded, &set, KeyShape::Mixed, 9, 300);
}

#[test]
fn ranges_of_every_form_and_both_directions() {
    let set = key_set(KeyShape::RandomBytes, 17, 500);
    let m = build(&set, 8);
    let keys: Vec<&Vec<u8>> = set.keys().collect();
    let (a, b) = (keys[100].clone(), keys[300].clone());
    let want = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| -> Vec<(Vec<u8>, u64)> {
        set.range::<[u8], _>((lo, hi))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    assert_eq!(
        m.range(a.clone()..b.clone()).collect::<Vec<_>>(),
        want(Included(&a), Excluded(&b))
    );
    assert_eq!(
        m.range(a.clone()..=b.clone()).collect::<Vec<_>>(),
        want(Included(&a), Included(&b))
    );
    let mut rev: Vec<_> = m.range(..b.clone()).rev().collect();
    rev.reverse();
    assert_eq!(rev, want(Unbounded, Excluded(&b)));
    assert_eq!(m.range(b.clone()..a.clone()).count(), 0, "inverted");
    assert_eq!(
        m.range((Excluded(&a[..]), Excluded(&a[..]))).count(),
        0,
        "empty"
    );
    // Alternating ends meet in the middle without repeating an entry.
    let mut c = m.cursor(a.clone()..=b.clone());
    let mut seen = Vec::new();
    loop {
        let next = if seen.len() % 2 == 0 {
            c.next()
        } else {
            c.next_back()
        };
        match next {
            Some((k, _)) => seen.push(k.to_vec()),
            None => break,
        }
    }
    seen.sort();
    let all: Vec<Vec<u8>> = want(Included(&a), Included(&b))
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(seen, all);
    assert_eq!((&m).into_iter().count(), set.len());
}

#[test]
fn extreme_leaf_sizes_and_many_leaves() {
    // 70,000 keys: one leaf of 65,536 and a partial one; or 8,750 leaves of 8 under three
    // inner levels.
    let mut rng = TestRng::new(65536);
    let set: Oracle = (0..70_000)
        .map(|i| {
            let mut k = rng.next_u64().to_be_bytes().to_vec();
            k.truncate(4 + i % 6);
            k.extend(std::iter::repeat_n(b'z', i % 11));
            (k, i as u64)
        })
        .collect();
    for leaf_keys in [8, 1 << 16] {
        let m = build(&set, leaf_keys);
        for (k, &v) in set.iter().step_by(7) {
            assert_eq!(m.get(k), Some(v), "leaf_keys {leaf_keys}");
        }
        check_all(&m, &set, KeyShape::Mixed, leaf_keys as u64);
        assert_eq!(CompactBTree::from_bytes(&m.to_bytes()).unwrap(), m);
    }
}

#[test]
fn a_leaf_may_end_with_the_head_the_next_one_starts_with() {
    // Leaves of 8 whose first heads strictly increase (the fast route), where leaf 0 ends
    // with `X` and leaf 1 starts with `X\0`, the same 8-byte head: a search for `X` lands on
    // leaf 1 and must look back.
    for at in [7usize, 15, 23] {
        let mut set: Oracle = (0..40u64)
            .map(|i| ((i * 1000).to_be_bytes().to_vec(), i))
            .collect();
        let keys: Vec<Vec<u8>> = set.keys().cloned().collect();
        let x = (u64::from_be_bytes(keys[at - 1].clone().try_into().unwrap()) + 1).to_be_bytes();
        set.insert(x.to_vec(), 100);
        set.insert([&x[..], b"\0"].concat(), 101);
        set.insert([&x[..], b"\0\0"].concat(), 102);
        let m = build(&set, 8);
        check_all(&m, &set, KeyShape::U64, at as u64);
        for probe in [
            &x[..],
            &x[..7],
            &[&x[..], b"\0"].concat(),
            &[&x[..], b"\x01"].concat(),
        ] {
            check_seeks(&m, &set, probe);
        }
    }
}

/// A batch for `merged` of `size` keys: old keys, neighbours of old keys, new keys, only keys
/// past the largest (`append`), or only keys from the last tenth of the old keys on.
fn merge_batch(
    rng: &mut TestRng,
    shape: KeyShape,
    set: &Oracle,
    size: usize,
    kind: u64,
) -> BTreeMap<Vec<u8>, Option<u64>> {
    let olds: Vec<Vec<u8>> = set.keys().cloned().collect();
    let mut batch = BTreeMap::new();
    let late = olds.len() - olds.len().div_ceil(10);
    for _ in 0..size {
        let key = match (olds.is_empty(), kind, rng.below(4)) {
            // Appends: keys past every old one.
            (false, 0, _) => {
                let mut k = olds[olds.len() - 1].clone();
                k.extend_from_slice(&rng.next_u64().to_be_bytes());
                k
            }
            (_, 0, _) => shape.gen_key(rng),
            // Only old keys, and their neighbours, in the last tenth.
            (false, 1, r) => {
                let mut k = olds[late + rng.below((olds.len() - late) as u64) as usize].clone();
                if r == 0 {
                    k.push(rng.below(256) as u8);
                }
                k
            }
            (false, _, 0) => olds[rng.below(olds.len() as u64) as usize].clone(),
            (false, _, 1) => {
                let mut k = olds[rng.below(olds.len() as u64) as usize].clone();
                if rng.below(2) == 0 {
                    k.push(rng.below(256) as u8);
                } else {
                    k.pop();
                }
                k
            }
            _ => shape.gen_key(rng),
        };
        let v = (kind == 0 || rng.below(3) != 0).then(|| rng.next_u64());
        batch.insert(key, v);
    }
    batch
}

/// `merged` against the oracle, on every shape and several leaf sizes: appending batches
/// (every old leaf but the last copied whole), batches reaching only the last keys (the
/// leaves before them copied), and batches of inserts, updates and deletes anywhere. Each
/// result is the tree a build of the same entries makes, loads back from its image (the
/// audit), answers every seek, and is the next round's base; the last round deletes
/// everything.
#[test]
fn merged_applies_sorted_batches_like_a_btreemap() {
    let mut rng = TestRng::new(5353);
    for &shape in SHAPES {
        for leaf_keys in [8, 256] {
            for (seed, n) in [(1, 0), (2, 1), (3, 40), (4, 3000)] {
                let mut set = key_set(shape, seed, n);
                let mut m = build(&set, leaf_keys);
                for round in 0..10u64 {
                    let size = 1 + rng.below(1 + set.len() as u64 / 3) as usize;
                    let mut batch = merge_batch(&mut rng, shape, &set, size, round % 3);
                    if round == 9 {
                        batch = set.keys().map(|k| (k.clone(), None)).collect();
                    }
                    let next = m.merged(batch.iter().map(|(k, v)| (k, *v))).unwrap();
                    apply_batch(&mut set, &batch);
                    let what = format!("{shape:?} leaf_keys {leaf_keys} seed {seed} round {round}");
                    assert_eq!(
                        next,
                        build(&set, leaf_keys),
                        "{what}: not the tree a build makes"
                    );
                    assert_eq!(next.config().leaf_keys, leaf_keys, "{what}");
                    assert_eq!(CompactBTree::from_bytes(&next.to_bytes()).unwrap(), next);
                    if round % 4 == 0 {
                        check_all(&next, &set, shape, seed + round);
                    }
                    m = next;
                }
                assert!(m.is_empty());
            }
        }
    }
}

/// Batches out of order or repeating a key are refused, wherever the bad pair falls: among
/// leaves copied whole, inside a re-encoded leaf, or after the old keys; a key repeated as a
/// delete then a store included, which no output order check would see.
#[test]
fn merged_refuses_unsorted_or_repeated_batches() {
    let m = build(
        &(0u64..100).map(|i| (i.to_be_bytes().to_vec(), i)).collect(),
        8,
    );
    let k = |i: u64| i.to_be_bytes().to_vec();
    for (a, b) in [(5, 3), (50, 2), (500, 200), (99, 40)] {
        let batch = [(k(a), Some(1)), (k(b), Some(2))];
        assert!(
            matches!(m.merged(batch), Err(Error::OutOfOrder { .. })),
            "{a} {b}"
        );
        let batch = [(k(a), None), (k(b), None)];
        assert!(
            matches!(m.merged(batch), Err(Error::OutOfOrder { .. })),
            "{a} {b}"
        );
    }
    for a in [3, 64, 99, 500] {
        for (x, y) in [
            (None, Some(1)),
            (Some(1), None),
            (None, None),
            (Some(1), Some(2)),
        ] {
            let batch = [(k(a), x), (k(a), y)];
            assert!(
                matches!(m.merged(batch), Err(Error::DuplicateKey { .. })),
                "{a}"
            );
        }
    }
    // The map merged from is left as it was.
    assert_eq!(m, build(&(0u64..100).map(|i| (k(i), i)).collect(), 8));
}
