//! Integration tests of [`mlpdex::fst::Fst`] through its public API
//! (`cargo test -p mlpdex --test fst`).
//!
//! 1. **Differential runs**: maps built from key sets of every [`KeyShape`] (several seeds and
//!    sizes), under several dense ratios (all dense, default, all sparse) and both key storages,
//!    checked against the `BTreeMap` oracle by the driver's `check_static` (lookups of present
//!    and absent keys, seeks, cursors over ranges with every bound kind, both directions).
//! 2. **Builder contract**: `check_builder_rejects` (out-of-order and duplicate keys name the
//!    key and leave the builder unchanged).
//! 3. **Serialization**: round trips of every map of (1); every truncation and single-byte
//!    corruption of small images is an error (never a panic); version and magic checks;
//!    zero-copy loads from a `Vec`, an `Arc<[u8]>`, a memory-mapped file and an unaligned
//!    buffer answer like the built map.

use std::collections::BTreeMap;

use mlpdex::fst::{Config, Fst, FstBuilder, KeyStorage, SuffixCoding};
use mlpdex::testing::{
    KeyShape, TestRng, check_builder_rejects, check_static, first_sparse_label_at, reseal,
    sparse_chain_bits_at,
};
use mlpdex::{Error, RangeCursor, StaticMap};

fn key_set(shape: KeyShape, seed: u64, n: usize) -> BTreeMap<Vec<u8>, u64> {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| (shape.gen_key(&mut rng), rng.next_u64()))
        .collect()
}

fn build(set: &BTreeMap<Vec<u8>, u64>, config: Config) -> Fst {
    let mut b = FstBuilder::with_config(config);
    for (k, &v) in set {
        b.push(k, v).unwrap();
    }
    b.finish().unwrap()
}

/// [`build`] with dense ratio `ratio` and key storage `keys`, suffixes coded as `Auto` picks.
fn build_as(set: &BTreeMap<Vec<u8>, u64>, ratio: u32, keys: KeyStorage) -> Fst {
    build(
        set,
        Config {
            dense_ratio: ratio,
            keys,
            suffix_coding: SuffixCoding::Auto,
        },
    )
}

const CODINGS: [SuffixCoding; 3] = [SuffixCoding::Auto, SuffixCoding::Plain, SuffixCoding::Coded];

/// The key storages the suites cover at dense ratio `ratio`: complete keys with plain and with
/// encoded suffixes, and unique prefixes.
fn storages(ratio: u32) -> [Config; 3] {
    [
        (KeyStorage::Complete, SuffixCoding::Plain),
        (KeyStorage::Complete, SuffixCoding::Coded),
        (KeyStorage::UniquePrefixes, SuffixCoding::Auto),
    ]
    .map(|(keys, suffix_coding)| Config {
        dense_ratio: ratio,
        keys,
        suffix_coding,
    })
}

const SHAPES: &[KeyShape] = KeyShape::ALL;

#[test]
fn differential_complete_keys_every_shape_and_ratio() {
    for &shape in SHAPES {
        for (seed, n) in [(1, 0), (2, 1), (3, 7), (4, 300), (5, 3000)] {
            let set = key_set(shape, seed, n);
            for (ratio, suffix_coding) in [0, 1, 64, u32::MAX]
                .into_iter()
                .flat_map(|r| CODINGS.map(|c| (r, c)))
            {
                let cfg = Config {
                    dense_ratio: ratio,
                    keys: KeyStorage::Complete,
                    suffix_coding,
                };
                let fst = build(&set, cfg);
                check_static(&fst, &set, shape, seed * 31 + ratio as u64, 400);
                let back = Fst::from_bytes(&fst.to_bytes()).unwrap();
                assert_eq!(back, fst);
            }
        }
    }
}

#[test]
fn unique_prefix_maps_find_every_key_and_iterate_prefixes_in_order() {
    for &shape in SHAPES {
        let set = key_set(shape, 9, 2000);
        for ratio in [0, 64, u32::MAX] {
            let cfg = Config {
                dense_ratio: ratio,
                keys: KeyStorage::UniquePrefixes,
                ..Config::default()
            };
            let fst = build(&set, cfg);
            for (k, &v) in &set {
                assert_eq!(fst.get(k), Some(v), "{shape:?} {k:?}");
            }
            let mut c = fst.cursor(..);
            let mut n = 0;
            let mut prev: Option<Vec<u8>> = None;
            let keys: Vec<&Vec<u8>> = set.keys().collect();
            while let Some((p, v)) = c.next() {
                assert!(
                    keys[n].starts_with(p),
                    "{p:?} not a prefix of {:?}",
                    keys[n]
                );
                assert_eq!(v, set[keys[n]]);
                if let Some(q) = &prev {
                    assert!(q.as_slice() < p);
                }
                prev = Some(p.to_vec());
                n += 1;
            }
            assert_eq!(n, set.len());
            let back = Fst::from_bytes(&fst.to_bytes()).unwrap();
            assert_eq!(back, fst);
        }
    }
}

#[test]
fn builder_rejects_bad_input() {
    check_builder_rejects(FstBuilder::new);
    check_builder_rejects(|| {
        FstBuilder::with_config(Config {
            dense_ratio: 0,
            keys: KeyStorage::Complete,
            suffix_coding: SuffixCoding::Coded,
        })
    });
}

#[test]
fn corrupt_and_truncated_images_are_errors() {
    for &shape in SHAPES {
        let set = key_set(shape, 11, 40);
        for keys in [KeyStorage::Complete, KeyStorage::UniquePrefixes] {
            let fst = build_as(&set, 1, keys);
            let img = fst.to_bytes();
            for len in 0..img.len() {
                assert!(Fst::from_bytes(&img[..len]).is_err(), "truncated to {len}");
            }
            let mut bad = img.clone();
            for i in 0..img.len().min(4096) {
                bad[i] ^= 0x5A;
                // An error, or (if the checksum were fooled) a map that still answers safely.
                if let Ok(m) = Fst::from_bytes(&bad) {
                    let _ = m.get(b"a");
                }
                bad[i] = img[i];
            }
            let mut v = img.clone();
            v[8] = 9;
            assert!(matches!(
                Fst::from_bytes(&v),
                Err(Error::Version { found: 9, .. })
            ));
            // Images from before path compression (version 2) are refused, not misread.
            v[8] = 2;
            reseal(&mut v);
            assert!(matches!(
                Fst::from_bytes(&v),
                Err(Error::Version { found: 2, .. })
            ));
            let mut m = img.clone();
            m[0] = b'X';
            assert!(matches!(Fst::from_bytes(&m), Err(Error::Format { .. })));
        }
    }
}

#[test]
fn range_iterator_meets_in_the_middle_and_matches_the_cursor() {
    let set = key_set(KeyShape::Mixed, 6, 500);
    let fst = build(&set, Config::default());
    let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, &v)| (k.clone(), v)).collect();
    assert_eq!(fst.iter().collect::<Vec<_>>(), want);
    assert_eq!((&fst).into_iter().count(), want.len());
    assert!(fst.range(..).rev().eq(want.iter().rev().cloned()));
    for split in [0, 1, 250, 499, 500] {
        let mut it = fst.range(..);
        let mut got: Vec<_> = it.by_ref().take(split).collect();
        let mut back: Vec<_> = it.by_ref().rev().collect();
        assert_eq!(it.next(), None);
        back.reverse();
        got.extend(back);
        assert_eq!(got, want, "split {split}");
    }
    // The collect helpers of the lending cursor give the same entries.
    let (a, b) = (want.len() / 4, want.len() * 3 / 4);
    let (lo, hi) = (&want[a].0, &want[b].0);
    let mut into = Vec::new();
    fst.cursor(lo.as_slice()..hi.as_slice())
        .collect_into(&mut into);
    assert_eq!(into, want[a..b]);
    let keys = fst.cursor(lo.as_slice()..=hi.as_slice()).collect_keys();
    assert!(keys.iter().eq(want[a..=b].iter().map(|(k, _)| k)));
    let mut seen = Vec::new();
    fst.cursor(..).for_each(|k, v| seen.push((k.to_vec(), v)));
    assert_eq!(seen, want);
    assert_eq!(
        fst.range(lo.as_slice()..hi.as_slice()).collect::<Vec<_>>(),
        into
    );
}

#[test]
fn cursor_meets_in_the_middle() {
    let set = key_set(KeyShape::Mixed, 5, 500);
    let fst = build(&set, Config::default());
    let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, &v)| (k.clone(), v)).collect();
    for split in [0, 1, 250, 499, 500] {
        let mut c = StaticMap::cursor(&fst, ..);
        let mut front = Vec::new();
        for _ in 0..split {
            match RangeCursor::next(&mut c) {
                Some((k, v)) => front.push((k.to_vec(), v)),
                None => break,
            }
        }
        let mut back = Vec::new();
        while let Some((k, v)) = RangeCursor::next_back(&mut c) {
            back.push((k.to_vec(), v));
        }
        assert!(RangeCursor::next(&mut c).is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, want, "split {split}");
    }
}

#[test]
fn seeks_match_the_oracle_with_every_bound_kind() {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    for &shape in SHAPES {
        let set = key_set(shape, 21, 800);
        for keys in [KeyStorage::Complete, KeyStorage::UniquePrefixes] {
            let fst = build_as(&set, 64, keys);
            let mut rng = TestRng::new(5);
            let mut probes: Vec<Vec<u8>> = (0..300).map(|_| shape.gen_key(&mut rng)).collect();
            probes.extend(set.keys().take(100).cloned());
            for p in &probes {
                for b in [Included(&p[..]), Excluded(&p[..]), Unbounded] {
                    let want_lo = set.range::<[u8], _>((b, Unbounded)).next();
                    let want_hi = set.range::<[u8], _>((Unbounded, b)).next_back();
                    if keys == KeyStorage::Complete {
                        assert_eq!(
                            fst.lower_bound(b),
                            want_lo.map(|(k, &v)| (k.clone(), v)),
                            "{shape:?} lower_bound {b:?}"
                        );
                        assert_eq!(fst.lower_bound_value(b), want_lo.map(|(_, &v)| v));
                        assert_eq!(
                            fst.upper_bound(b),
                            want_hi.map(|(k, &v)| (k.clone(), v)),
                            "{shape:?} upper_bound {b:?}"
                        );
                    } else if let Some(v) = fst.lower_bound_value(b) {
                        // A unique-prefix map may stop one key early, at the last key not
                        // above the probe (its record then fails the bound), never later.
                        let first = want_lo.map(|(_, &v)| v);
                        let prev = match b {
                            Unbounded => None,
                            _ => set
                                .range::<[u8], _>((Unbounded, Included(&p[..])))
                                .next_back()
                                .map(|(_, &v)| v),
                        };
                        assert!(Some(v) == first || Some(v) == prev, "{shape:?} {b:?}");
                    } else {
                        assert_eq!(want_lo, None);
                    }
                }
            }
        }
    }
}

#[test]
fn batched_lookups_answer_like_single_ones() {
    for &shape in SHAPES {
        let set = key_set(shape, 33, 1500);
        let mut rng = TestRng::new(8);
        let mut probes: Vec<Vec<u8>> = (0..700).map(|_| shape.gen_key(&mut rng)).collect();
        probes.extend(set.keys().cloned());
        probes.push(Vec::new());
        let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        for ratio in [0, 64, u32::MAX] {
            for config in storages(ratio) {
                let fst = build(&set, config);
                let mut out = vec![Some(0); refs.len()];
                fst.get_batch(&refs, &mut out);
                for (k, got) in refs.iter().zip(&out) {
                    assert_eq!(*got, fst.get(k), "{shape:?} {config:?} {k:?}");
                }
            }
        }
    }
}

mod properties {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use mlpdex::fst::{Config, Fst, FstBuilder, KeyStorage};
    use mlpdex::testing::arb_key;
    use proptest::prelude::*;

    fn bound(kind: u8, k: &[u8]) -> Bound<&[u8]> {
        match kind % 3 {
            0 => Bound::Included(k),
            1 => Bound::Excluded(k),
            _ => Bound::Unbounded,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any key set, any ratio: lookups, both seeks and a range walked from both ends agree
        /// with a BTreeMap, and the serialized form loads back equal.
        #[test]
        fn any_key_set_behaves_like_a_btreemap(
            keys in proptest::collection::btree_set(arb_key(), 0..60),
            probes in proptest::collection::vec(arb_key(), 0..20),
            ratio in prop_oneof![Just(0u32), Just(1), Just(64), Just(u32::MAX)],
            kinds in (any::<u8>(), any::<u8>()),
            split in 0usize..70,
            coding in 0usize..3,
        ) {
            let oracle: BTreeMap<Vec<u8>, u64> =
                keys.iter().enumerate().map(|(i, k)| (k.clone(), i as u64 * 7 + 1)).collect();
            let mut b = FstBuilder::with_config(Config {
                dense_ratio: ratio,
                keys: KeyStorage::Complete,
                suffix_coding: super::CODINGS[coding],
            });
            for (k, &v) in &oracle {
                b.push(k, v).unwrap();
            }
            let fst = b.finish().unwrap();
            prop_assert_eq!(fst.len(), oracle.len());
            for p in probes.iter().chain(oracle.keys()) {
                prop_assert_eq!(fst.get(p), oracle.get(p).copied());
                let lo = bound(kinds.0, p);
                let want = oracle.range::<[u8], _>((lo, Bound::Unbounded)).next();
                prop_assert_eq!(fst.lower_bound(lo), want.map(|(k, &v)| (k.clone(), v)));
                let want = oracle.range::<[u8], _>((Bound::Unbounded, lo)).next_back();
                prop_assert_eq!(fst.upper_bound(lo), want.map(|(k, &v)| (k.clone(), v)));
            }
            if let (Some(a), Some(z)) = (probes.first(), probes.last()) {
                let (lo, hi) = (bound(kinds.0, a), bound(kinds.1, z));
                let want: Vec<(Vec<u8>, u64)> = if mlpdex::key::is_empty_range(lo, hi) {
                    Vec::new()
                } else {
                    oracle.range::<[u8], _>((lo, hi)).map(|(k, &v)| (k.clone(), v)).collect()
                };
                let mut c = fst.cursor((lo, hi));
                let mut got = Vec::new();
                for _ in 0..split {
                    match c.next() {
                        Some((k, v)) => got.push((k.to_vec(), v)),
                        None => break,
                    }
                }
                let mut back = Vec::new();
                while let Some((k, v)) = c.next_back() {
                    back.push((k.to_vec(), v));
                }
                back.reverse();
                got.extend(back);
                prop_assert_eq!(got, want);
            }
            prop_assert_eq!(Fst::from_bytes(&fst.to_bytes()).unwrap(), fst);
        }
    }
}

#[test]
fn batched_seeks_answer_like_single_ones() {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    for &shape in SHAPES {
        let set = key_set(shape, 34, 1500);
        let mut rng = TestRng::new(9);
        let mut probes: Vec<Vec<u8>> = (0..400).map(|_| shape.gen_key(&mut rng)).collect();
        probes.extend(set.keys().step_by(3).cloned());
        probes.push(Vec::new());
        let mut bounds = vec![Unbounded];
        for p in &probes {
            bounds.push(Included(&p[..]));
            bounds.push(Excluded(&p[..]));
        }
        for ratio in [0, 64, u32::MAX] {
            for config in storages(ratio) {
                let fst = build(&set, config);
                let mut out = vec![Some(0); bounds.len()];
                fst.lower_bound_value_batch(&bounds, &mut out);
                for (b, got) in bounds.iter().zip(&out) {
                    assert_eq!(
                        *got,
                        fst.lower_bound_value(*b),
                        "{shape:?} {config:?} {b:?}"
                    );
                }
            }
        }
    }
}

/// Damaged images whose checksum is recomputed (as an attacker or a buggy writer could) get
/// past the checksum to the structural validation: every load must be an error or a map that
/// answers every query without panicking.
#[test]
fn damaged_images_with_valid_checksums_never_panic() {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let mut rng = TestRng::new(77);
    for &shape in SHAPES {
        let set = key_set(shape, 41, 60);
        // Plain suffixes at ratio 0, coded ones at 64, unique prefixes at 1.
        for (i, ratio) in [0, 64, 1].into_iter().enumerate() {
            let fst = build(&set, storages(ratio)[i]);
            let img = fst.to_bytes();
            let probes: Vec<Vec<u8>> = set
                .keys()
                .cloned()
                .chain((0..10).map(|_| shape.gen_key(&mut rng)))
                .collect();
            let mut loaded = 0;
            for _ in 0..300 {
                let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
                let in_place = Fst::from_shared(bad.clone());
                let Ok(m) = Fst::from_bytes(&bad) else {
                    assert!(in_place.is_err());
                    continue;
                };
                assert_eq!(in_place.as_ref(), Ok(&m));
                loaded += 1;
                for p in &probes {
                    let _ = m.get(p);
                    for b in [Included(&p[..]), Excluded(&p[..])] {
                        let _ = m.lower_bound(b);
                        let _ = m.upper_bound(b);
                    }
                }
                let mut out = vec![None; probes.len()];
                let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
                m.get_batch(&refs, &mut out);
                let mut c = m.cursor((Unbounded::<&[u8]>, Unbounded));
                let mut steps = 0;
                while c.next().is_some() && steps < 10 * m.len() + 10 {
                    steps += 1;
                }
                let mut c = m.cursor(..);
                let mut steps = 0;
                while c.next_back().is_some() && steps < 10 * m.len() + 10 {
                    steps += 1;
                }
            }
            // Some damage (to values, labels of leaves) keeps the image valid; most is caught.
            assert!(loaded < 300, "{shape:?}: validation rejected nothing");
        }
    }
}

/// An image at an odd address: loads by copying its sections, and still answers.
fn unaligned(img: &[u8]) -> &'static [u8] {
    let mut v = vec![0u8; img.len() + 1];
    v[1..].copy_from_slice(img);
    &Box::leak(v.into_boxed_slice())[1..]
}

#[test]
fn zero_copy_loads_answer_like_the_built_map() {
    let dir = std::env::temp_dir();
    for &shape in SHAPES {
        let set = key_set(shape, 9, 500);
        for (ratio, keys) in [
            (0, KeyStorage::Complete),
            (64, KeyStorage::Complete),
            (u32::MAX, KeyStorage::UniquePrefixes),
        ] {
            let fst = build_as(&set, ratio, keys);
            let img = fst.to_bytes();
            let path = dir.join(format!(
                "mlpdex-fst-test-{}-{shape:?}-{ratio}.img",
                std::process::id()
            ));
            std::fs::write(&path, &img).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: the test owns the file and nothing writes it while it is mapped.
            let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            let arc: std::sync::Arc<[u8]> = img.clone().into();
            let loads = [
                (Fst::from_shared(img.clone()).unwrap(), true),
                (Fst::from_shared(arc).unwrap(), true),
                (Fst::from_shared(map).unwrap(), true),
                (Fst::from_shared(unaligned(&img)).unwrap(), false),
                (Fst::from_bytes(&img).unwrap(), true),
            ];
            std::fs::remove_file(&path).unwrap();
            for (i, (m, in_place)) in loads.into_iter().enumerate() {
                assert_eq!(m.is_zero_copy(), in_place, "{shape:?} load {i}");
                assert_eq!(m, fst, "{shape:?} load {i}");
                assert_eq!(m.memory_usage(), fst.memory_usage());
                if keys == KeyStorage::Complete {
                    check_static(&m, &set, shape, 5 + i as u64, 200);
                } else {
                    for (k, &v) in &set {
                        assert_eq!(m.get(k), Some(v));
                    }
                }
                // The loaded map outlives every other handle on its buffer.
                let again = m.clone();
                drop(m);
                assert_eq!(again.len(), set.len());
            }
        }
    }
}

// ---- Images that pass the checksum but not the structure (issue 16, defect 6) ---------------

/// The example of the issue: the root's sparse label 0x00 (a leaf) rewritten to 0xFF, which
/// then reads as a terminator, i.e. the empty key inside the trie, carrying the leaf's suffix.
/// It used to load, and then iterated `zz` before `b` and lost `get(b"zz")`.
#[test]
fn forged_root_terminator_is_rejected_by_both_loaders() {
    let set: BTreeMap<Vec<u8>, u64> = [(&b"\x00zz"[..], 1), (b"b", 2), (b"c", 3)]
        .into_iter()
        .map(|(k, v)| (k.to_vec(), v))
        .collect();
    for keys in [KeyStorage::Complete, KeyStorage::UniquePrefixes] {
        let fst = build_as(&set, u32::MAX, keys);
        assert_eq!(fst.stats().dense_levels, 0, "the root must be sparse");
        let mut bad = fst.to_bytes();
        let at = first_sparse_label_at(&bad);
        assert_eq!(bad[at], 0x00, "{keys:?}: root label not found");
        bad[at] = 0xFF;
        reseal(&mut bad);
        let copied = Fst::from_bytes(&bad);
        assert!(
            matches!(copied, Err(Error::Format { .. })),
            "{keys:?}: from_bytes accepted the forged image: {:?}",
            copied.map(|m| collect_forward(&m))
        );
        let in_place = Fst::from_shared(bad.clone());
        assert!(
            matches!(in_place, Err(Error::Format { .. })),
            "{keys:?}: from_shared accepted the forged image: {:?}",
            in_place.map(|m| collect_forward(&m))
        );
        assert_eq!(copied, in_place);
        assert_eq!(
            copied,
            Err(Error::Format {
                what: "root holds a prefix key",
                offset: at
            })
        );
    }
}

/// The same forgery on a dense root: leaf `b` traded for the root's prefix-key bit (the key
/// count stays), which puts the empty key inside the trie, where `get(b"")` never looks.
#[test]
fn forged_dense_root_prefix_key_is_rejected() {
    let set: BTreeMap<Vec<u8>, u64> = [(b"a".to_vec(), 1), (b"b".to_vec(), 2)].into();
    let fst = build_as(&set, 0, KeyStorage::Complete);
    assert!(fst.stats().dense_levels > 0, "the root must be dense");
    let mut bad = fst.to_bytes();
    let u64_at =
        |img: &[u8], at: usize| u64::from_le_bytes(img[at..at + 8].try_into().unwrap()) as usize;
    // d_labels starts at 64 (bit count, then words); d_is_prefix follows d_has_child.
    let label_b = 64 + 8 + usize::from(b'b') / 8;
    let mut at = 64;
    for _ in 0..2 {
        at += 8 + u64_at(&bad, at).div_ceil(64) * 8;
    }
    let root_prefix = at + 8;
    assert_eq!(bad[label_b] & 1 << (b'b' % 8), 1 << (b'b' % 8));
    assert_eq!(bad[root_prefix] & 1, 0);
    bad[label_b] &= !(1 << (b'b' % 8));
    bad[root_prefix] |= 1;
    reseal(&mut bad);
    let want = Err(Error::Format {
        what: "root holds a prefix key",
        offset: root_prefix,
    });
    assert_eq!(Fst::from_bytes(&bad), want);
    assert_eq!(Fst::from_shared(bad), want);
}

/// Keys sharing prefixes of 1 byte to 4 KiB with one another, cut at and around word
/// boundaries of the chain bits, each continued by nothing (a prefix key), 0x00, 0xFF or
/// letters: chains of every length from 0 to 3 KiB, ending at terminators, at the smallest
/// and largest bytes, and at the trie's dense boundary for some dense ratio.
fn chain_keys() -> BTreeMap<Vec<u8>, u64> {
    let stem: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8 + 1).collect();
    let mut set = BTreeMap::new();
    for cut in [1usize, 2, 3, 63, 64, 65, 127, 1024, 4095, 4096] {
        for tail in [&b""[..], b"\x00", b"\xff", b"a", b"ab", b"b\x00\xff"] {
            let v = set.len() as u64;
            set.insert([&stem[..cut], tail].concat(), v);
        }
    }
    set
}

/// Path compression: chains of single-child nodes fold into the node below, so a trie over
/// keys sharing KiB-long prefixes has a handful of levels, and answers like the oracle under
/// every dense ratio (the chains then start at different depths, below the dense levels).
#[test]
fn long_shared_prefixes_fold_into_chains() {
    let set = chain_keys();
    for ratio in [0, 1, 64, u32::MAX] {
        for keys in [KeyStorage::Complete, KeyStorage::UniquePrefixes] {
            let fst = build_as(&set, ratio, keys);
            let stats = fst.stats();
            // Ratio 0 makes every level dense, where nothing folds.
            assert!(
                ratio == 0 || (stats.chain_bytes > 3000 && stats.levels < stats.dense_levels + 16),
                "ratio {ratio}: {stats:?}"
            );
            let back = Fst::from_bytes(&fst.to_bytes()).unwrap();
            assert_eq!(back, fst);
            if keys == KeyStorage::Complete {
                check_static(&fst, &set, KeyShape::Long, 77 + ratio as u64, 400);
            }
            let probes: Vec<Vec<u8>> = set.keys().cloned().collect();
            if let Err(e) = check_self_consistent(&fst, &probes) {
                panic!("ratio {ratio}, {keys:?}: {e}");
            }
        }
    }
}

/// Chain bits of an image moved (one set bit cleared and a clear one near it set, so the
/// key count still agrees; checksum resealed): a chain byte turned into an item, an item
/// into a chain byte, a chain that swallows its node or starts inside one. Each damaged image
/// is refused with a format error, or loads (by copy and in place alike) as a self-consistent
/// map.
#[test]
fn damaged_chain_bits_are_refused_or_consistent() {
    let set = chain_keys();
    let probes: Vec<Vec<u8>> = set.keys().cloned().collect();
    let mut rng = TestRng::new(46);
    for ratio in [1, u32::MAX] {
        let fst = build_as(&set, ratio, KeyStorage::Complete);
        let img = fst.to_bytes();
        let (at, bits) = sparse_chain_bits_at(&img);
        assert_eq!(bits, fst.stats().sparse_labels, "chain bits not found");
        let bit = |i: usize| img[at + i / 8] >> (i % 8) & 1;
        let mut refused = 0;
        for round in 0..600 {
            // Around node starts and chain ends at both ends, then anywhere.
            let i = match round {
                0..200 => round % bits,
                200..400 => bits - 1 - round % bits,
                _ => rng.index(bits),
            };
            let Some(j) = (1..70)
                .flat_map(|d| [i.checked_sub(d), Some(i + d)])
                .flatten()
                .find(|&j| j < bits && bit(j) != bit(i))
            else {
                continue;
            };
            let mut bad = img.clone();
            for k in [i, j] {
                bad[at + k / 8] ^= 1 << (k % 8);
            }
            reseal(&mut bad);
            let copied = Fst::from_bytes(&bad);
            assert_eq!(
                copied,
                Fst::from_shared(bad.clone()),
                "{i}, {j}: loaders disagree"
            );
            match copied {
                Err(Error::Format { .. }) => refused += 1,
                Err(e) => panic!("bits {i}, {j}: {e:?}"),
                Ok(m) => {
                    if let Err(e) = check_self_consistent(&m, &probes) {
                        panic!("ratio {ratio}, bits {i}, {j}: {e}");
                    }
                }
            }
        }
        assert!(refused > 0, "ratio {ratio}: no moved chain bit was refused");
    }
}

/// Every entry from the front (at most `len + 1`: a cursor that does not end is a failure).
fn collect_forward(m: &Fst) -> Vec<(Vec<u8>, u64)> {
    let mut c = m.cursor(..);
    let mut out = Vec::new();
    while let Some((k, v)) = c.next() {
        out.push((k.to_vec(), v));
        if out.len() > m.len() {
            break;
        }
    }
    out
}

/// Every entry from the back, in key order (at most `len + 1`).
fn collect_backward(m: &Fst) -> Vec<(Vec<u8>, u64)> {
    let mut c = m.cursor(..);
    let mut out = Vec::new();
    while let Some((k, v)) = c.next_back() {
        out.push((k.to_vec(), v));
        if out.len() > m.len() {
            break;
        }
    }
    out.reverse();
    out
}

/// What every loaded map must satisfy, whatever its image: iteration strictly increasing and
/// the same from both ends, `len` counting it, `get` (one by one and batched) finding every
/// iterated key with its value, and seeks agreeing with the iterated sequence.
fn check_self_consistent(m: &Fst, probes: &[Vec<u8>]) -> Result<(), String> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let complete = m.config().keys == KeyStorage::Complete;
    let fwd = collect_forward(m);
    if let Some(w) = fwd.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(format!(
            "iteration out of order: {:?} then {:?}",
            w[0], w[1]
        ));
    }
    if fwd.len() != m.len() {
        return Err(format!("len {} but {} iterated", m.len(), fwd.len()));
    }
    let back = collect_backward(m);
    if back != fwd {
        return Err(format!("forward {fwd:?} but backward {back:?}"));
    }
    let keys: Vec<&[u8]> = fwd.iter().map(|(k, _)| k.as_slice()).collect();
    let mut batch = vec![None; keys.len()];
    m.get_batch(&keys, &mut batch);
    for (i, (k, v)) in fwd.iter().enumerate() {
        let entry = Some((k.clone(), *v));
        if m.get(k) != Some(*v) || batch[i] != Some(*v) {
            return Err(format!(
                "get({k:?}) = {:?}, batched {:?}, iterated {v}",
                m.get(k),
                batch[i]
            ));
        }
        let next = fwd.get(i + 1).cloned();
        let prev = i.checked_sub(1).map(|j| fwd[j].clone());
        let got = (
            m.lower_bound(Included(k)),
            m.lower_bound(Excluded(k)),
            m.upper_bound(Included(k)),
            m.upper_bound(Excluded(k)),
        );
        // A unique-prefix map cannot order a probe against a leaf it reaches, and keeps it.
        let ok = got.0 == entry
            && got.2 == entry
            && (got.1 == next || (!complete && got.1 == entry))
            && (got.3 == prev || (!complete && got.3 == entry));
        if !ok || m.lower_bound_value(Included(k)) != Some(*v) {
            return Err(format!(
                "seeks around {k:?} (prev {prev:?}, next {next:?}): {got:?}"
            ));
        }
    }
    for p in probes {
        for b in [Included(&p[..]), Excluded(&p[..]), Unbounded] {
            let lo = fwd.partition_point(|(k, _)| !mlpdex::key::after_start(k, b));
            let hi = fwd.partition_point(|(k, _)| mlpdex::key::before_end(k, b));
            let first = fwd.get(lo).cloned();
            let last = hi.checked_sub(1).map(|j| fwd[j].clone());
            let (got_lo, got_hi) = (m.lower_bound(b), m.upper_bound(b));
            let ok = if complete {
                got_lo == first && got_hi == last
            } else {
                // One early at most (at the last key not above the probe), or one late.
                (got_lo == first || got_lo == lo.checked_sub(1).map(|j| fwd[j].clone()))
                    && (got_hi == last || got_hi == fwd.get(hi).cloned())
            };
            if !ok || m.lower_bound_value(b) != got_lo.as_ref().map(|e| e.1) {
                return Err(format!(
                    "seeks of {b:?}: {got_lo:?} / {got_hi:?}, iteration says {first:?} / {last:?}"
                ));
            }
        }
    }
    if complete && fwd.len() >= 2 {
        let (a, z) = (&fwd[0].0, &fwd[fwd.len() - 1].0);
        let mut c = m.cursor((Excluded(&a[..]), Excluded(&z[..])));
        let mut inner = Vec::new();
        while let Some((k, v)) = c.next() {
            inner.push((k.to_vec(), v));
            if inner.len() > fwd.len() {
                break;
            }
        }
        if inner[..] != fwd[1..fwd.len() - 1] {
            return Err(format!("range between the ends yields {inner:?}"));
        }
    }
    let _ = (m.memory_usage(), m.stats());
    Ok(())
}

/// Key families for the damage test: the adversarial shapes (but multi-KiB keys, whose images
/// are mostly suffix bytes, or thousands of dense levels at ratio 0), tiny tries whose few
/// bytes of structure take most of the damage (root labels 0x00 and 0xFF, prefix keys), and a
/// prefix of 200 bytes shared by every key.
fn damage_families() -> Vec<(KeyShape, BTreeMap<Vec<u8>, u64>)> {
    let mut out: Vec<(KeyShape, BTreeMap<Vec<u8>, u64>)> = SHAPES
        .iter()
        .filter(|&&s| s != KeyShape::Long)
        .map(|&s| (s, key_set(s, 61, 50)))
        .collect();
    let shared = [b'x'; 200];
    let long: Vec<Vec<u8>> = [&b""[..], b"\x00", b"a", b"a\xff", b"b", b"\xff"]
        .iter()
        .map(|t| [&shared[..], t].concat())
        .collect();
    let tiny: [&[&[u8]]; 4] = [
        &[b"\x00zz", b"b", b"c"],
        &[b"", b"\x00", b"\x00\x00", b"\x00\xff", b"\xff"],
        &[b"a", b"ab", b"abc", b"b\xff", b"b\xff\xff"],
        &[b"", b"x\x00", b"x\x00y", b"x\xffz", b"y"],
    ];
    let long_refs: Vec<&[u8]> = long.iter().map(Vec::as_slice).collect();
    for keys in tiny.iter().copied().chain([&long_refs[..]]) {
        let set = keys
            .iter()
            .enumerate()
            .map(|(j, k)| (k.to_vec(), 100 + j as u64))
            .collect();
        out.push((KeyShape::ZeroFf, set));
    }
    out
}

/// Damaged images with recomputed checksums (1–3 bytes each, many per image): whatever
/// loads, by copy or in place, must be self-consistent (see `check_self_consistent`), and
/// neither loading nor querying may panic.
#[test]
fn damaged_images_that_load_answer_consistently() {
    let mut rng = TestRng::new(2016);
    let mut loaded = 0usize;
    for (shape, set) in damage_families() {
        let name = format!("{shape:?} ({} keys)", set.len());
        let probes: Vec<Vec<u8>> = set
            .keys()
            .cloned()
            .chain((0..8).map(|_| shape.gen_key(&mut rng)))
            .collect();
        for ratio in [0, 64, u32::MAX] {
            for config in storages(ratio) {
                let fst = build(&set, config);
                let img = fst.to_bytes();
                for round in 0..250 {
                    let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
                    let in_place = Fst::from_shared(bad.clone());
                    let copied = Fst::from_bytes(&bad);
                    assert_eq!(copied, in_place, "{name} {config:?}: loaders disagree");
                    let Ok(m) = copied else { continue };
                    loaded += 1;
                    if let Err(e) = check_self_consistent(&m, &probes) {
                        panic!("{name}, {config:?}, round {round}: {e}");
                    }
                }
            }
        }
    }
    // Damage to values and to the suffixes of leaves leaves a valid map.
    assert!(
        loaded > 0,
        "no damaged image loaded: the test checks nothing"
    );
}

/// `StaticStage::merged` (the hybrid's merge, which reserves the builder's levels from the old
/// map's shape and the batch's size) makes exactly the map a build of the merged entries
/// makes: batches that add deeper keys, delete the deepest ones (the new trie is shallower
/// than the room reserved), update, and delete everything; batches of known size and of none.
#[test]
fn merged_is_the_map_a_build_makes() {
    use mlpdex::hybrid::StaticStage;
    use mlpdex::testing::apply_batch;
    let mut rng = TestRng::new(8080);
    for &shape in SHAPES {
        for (ratio, suffix_coding) in [
            (0, SuffixCoding::Auto),
            (64, SuffixCoding::Coded),
            (u32::MAX, SuffixCoding::Plain),
        ] {
            let cfg = Config {
                dense_ratio: ratio,
                keys: KeyStorage::Complete,
                suffix_coding,
            };
            let mut set = key_set(shape, ratio as u64 ^ 17, 600);
            let mut m = build(&set, cfg);
            for round in 0..8 {
                let mut batch: BTreeMap<Vec<u8>, Option<u64>> = BTreeMap::new();
                let olds: Vec<Vec<u8>> = set.keys().cloned().collect();
                let longest = olds.iter().map(Vec::len).max().unwrap_or(0);
                for _ in 0..1 + rng.below(300) {
                    let key = match (olds.is_empty(), rng.below(4)) {
                        (false, 0) => olds[rng.below(olds.len() as u64) as usize].clone(),
                        (false, 1) => {
                            let mut k = olds[rng.below(olds.len() as u64) as usize].clone();
                            k.extend((0..1 + rng.below(20)).map(|_| rng.below(256) as u8));
                            k
                        }
                        _ => shape.gen_key(&mut rng),
                    };
                    let v = (rng.below(3) != 0).then(|| rng.next_u64());
                    batch.insert(key, v);
                }
                if round % 3 == 2 {
                    // Every key of the deepest lengths goes.
                    for k in olds.iter().filter(|k| k.len() + 2 >= longest) {
                        batch.insert(k.clone(), None);
                    }
                }
                if round == 7 {
                    batch = set.keys().map(|k| (k.clone(), None)).collect();
                }
                let next = if round % 2 == 0 {
                    m.merged(batch.iter().map(|(k, v)| (k, *v))).unwrap()
                } else {
                    // No size hint.
                    m.merged(batch.iter().filter(|_| true).map(|(k, v)| (k, *v)))
                        .unwrap()
                };
                apply_batch(&mut set, &batch);
                let want = build(&set, cfg);
                assert_eq!(next, want, "{shape:?} ratio {ratio} round {round}");
                m = next;
            }
        }
    }
}

/// Keys whose suffixes below the trie are text over a skewed alphabet: a user id and a time,
/// as in the `az` dataset.
fn text_suffix_keys(n: u64) -> BTreeMap<Vec<u8>, u64> {
    let mut rng = TestRng::new(5);
    (0..n)
        .map(|i| {
            let user = rng.below(1_000_000);
            let time = rng.below(10_000_000_000);
            (format!("user{user:06},{time:010}").into_bytes(), i)
        })
        .collect()
}

/// `Auto` codes suffixes when that saves room and not otherwise; the coded map is exact.
#[test]
fn auto_codes_text_suffixes_and_leaves_random_ones_plain() {
    let set = text_suffix_keys(20_000);
    let auto = build(&set, Config::default());
    let plain = build(
        &set,
        Config {
            suffix_coding: SuffixCoding::Plain,
            ..Config::default()
        },
    );
    assert!(auto.suffixes_coded() && !plain.suffixes_coded());
    assert!(
        auto.memory_usage() * 10 < plain.memory_usage() * 9,
        "coded {} bytes, plain {}",
        auto.memory_usage(),
        plain.memory_usage()
    );
    check_static(&auto, &set, KeyShape::Mixed, 9, 2000);
    assert_eq!(collect_forward(&auto), collect_forward(&plain));
    let random: BTreeMap<Vec<u8>, u64> = (0..20_000u64)
        .map(|i| {
            (
                (i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                    .to_be_bytes()
                    .to_vec(),
                i,
            )
        })
        .collect();
    assert!(!build(&random, Config::default()).suffixes_coded());
}

/// A coded image whose code, coding flags or version are forged (checksum recomputed) is
/// refused with the error that names the broken rule.
#[test]
fn forged_suffix_codes_and_flags_are_refused() {
    let set = text_suffix_keys(300);
    let fst = build(
        &set,
        Config {
            suffix_coding: SuffixCoding::Coded,
            ..Config::default()
        },
    );
    let img = fst.to_bytes();
    // The code is the last section: a u64 count of 257, the lengths, 7 bytes of padding.
    let code_at = img.len() - 8 - (8 + 264);
    assert_eq!(img[code_at..code_at + 8], 257u64.to_le_bytes());
    let refused = |edit: &dyn Fn(&mut Vec<u8>), want: &str| {
        let mut bad = img.clone();
        edit(&mut bad);
        reseal(&mut bad);
        match Fst::from_bytes(&bad) {
            Err(Error::Format { what, .. }) => assert_eq!(what, want),
            other => panic!("{want}: {other:?}"),
        }
        assert!(Fst::from_shared(bad).is_err());
    };
    // Two one-bit codes fill the tree: no room for the other 255 symbols.
    refused(
        &|b| {
            b[code_at + 8] = 1;
            b[code_at + 9] = 1;
        },
        "suffix code lengths of no alphabetic code",
    );
    refused(&|b| b[code_at + 8 + 257] = 1, "nonzero padding");
    // Coded suffixes the flags deny, or that the map asked not to have.
    refused(&|b| b[15] &= 1, "suffix code size disagrees with the flags");
    refused(
        &|b| b[15] = (b[15] & 3) | 1 << 2,
        "suffix coding flags disagree",
    );
    refused(&|b| b[15] |= 3 << 2, "reserved flag set");
    let mut v = img.clone();
    v[8] = 3;
    reseal(&mut v);
    assert!(matches!(
        Fst::from_bytes(&v),
        Err(Error::Version { found: 3, .. })
    ));
    assert_eq!(Fst::from_bytes(&img).unwrap(), fst);
}
