//! Integration tests of [`mlpdex::compact_art::CompactArt`] through its public API
//! (`cargo test -p mlpdex --test compact_art`).
//!
//! 1. **Differential runs**: maps built from key sets of every [`KeyShape`] (several seeds and
//!    sizes, the empty map and a single key included), checked against the `BTreeMap` oracle by
//!    the driver's `check_static`, and every seek (`lower_bound`, `upper_bound`,
//!    `lower_bound_value` with every bound kind, `first`, `last`) against the oracle; a
//!    proptest over small key sets of a five-byte alphabet (0x00, 0x01, 0xFE, 0xFF, `a`) does
//!    the same with shrinking.
//! 2. **Layouts at their boundaries**, with the arena's size checked against the layout
//!    (`raw/mod.rs`): nodes of 24/25 children (Linear to Bitmap) and 255/256 (Bitmap to Full),
//!    a Full root and Full nodes below it; leaf suffixes of 0 to 70 bytes, alone and mixed
//!    under one node, so the record width (8 to 64 bytes) and the inline/out-of-line split at
//!    `w - 9` bytes are crossed; shared prefixes of 2046, 2047, 2048 and 5000 bytes (the
//!    long-prefix length word), at the root and below it; multi-KiB and 16 MiB keys.
//! 3. **Keys a trie must get right**: keys that are prefixes of others (values on inner
//!    nodes, single-child nodes with a value, the empty key), keys of 0x00 and 0xFF bytes and
//!    keys differing only in trailing zeros, dense and sparse integers, a single key, the
//!    empty map.
//! 4. **Cursors**: ranges of every form both ways, and `next`/`next_back` alternated in
//!    several patterns over thousands of ranges: the ends meet exactly, no entry twice, none
//!    lost, and nothing after the end.
//! 5. **Memory**: 200,000 random 8-byte keys take less than a bound derived from the layout.
//! 6. **Builder contract**: `check_builder_rejects`, keys longer than 16 MiB - 1.
//! 7. **Serialization**: round trips; every truncation and single-byte corruption of small
//!    images is an error; damaged images with recomputed checksums (random damage, any word
//!    copied over any other, which points refs at other nodes, at ancestors and at the node
//!    holding them, and the long-prefix length word rewritten) either fail to load or answer
//!    consistently. The damaged images are loaded in a child process whose address space is
//!    capped at 2 GiB, so a loader that allocates without bound fails the test, not the
//!    machine. Zero-copy loads (a `Vec`, an `Arc`, an image at an odd address, a
//!    memory-mapped file) answer like the built map.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{self, Excluded, Included, Unbounded};

use mlpdex::Error;
use mlpdex::compact_art::{CompactArt, CompactArtBuilder, Cursor};
use mlpdex::key::is_empty_range;
use mlpdex::testing::{
    KeyShape, TestRng, apply_batch, check_builder_rejects, check_static, damage_keeping_checksum,
    reseal,
};

type Oracle = BTreeMap<Vec<u8>, u64>;
type Entries = Vec<(Vec<u8>, u64)>;

fn key_set(shape: KeyShape, seed: u64, n: usize) -> Oracle {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| (shape.gen_key(&mut rng), rng.next_u64()))
        .collect()
}

fn build(set: &Oracle) -> CompactArt {
    let mut b = CompactArtBuilder::new();
    assert!(b.is_empty());
    for (k, &v) in set {
        b.push(k, v).unwrap();
    }
    assert_eq!(b.len(), set.len());
    assert_eq!(b.is_empty(), set.is_empty());
    b.finish().unwrap()
}

/// An oracle of `keys`, each valued by its position from 1.
fn oracle_of<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> Oracle {
    keys.into_iter()
        .zip(1..)
        .map(|(k, v)| (k.as_ref().to_vec(), v))
        .collect()
}

const SHAPES: &[KeyShape] = KeyShape::ALL;

fn entry(e: Option<(&Vec<u8>, &u64)>) -> Option<(Vec<u8>, u64)> {
    e.map(|(k, v)| (k.clone(), *v))
}

/// Every seek of `m` around `probe`, against the oracle.
fn check_seeks(m: &CompactArt, set: &Oracle, probe: &[u8]) {
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

/// Seeks around `k`: itself, one byte shorter, extended by 0x00 and by 0xFF, and with its last
/// byte incremented and decremented.
fn check_seeks_around(m: &CompactArt, set: &Oracle, k: &[u8]) {
    check_seeks(m, set, k);
    check_seeks(m, set, &[k, b"\0"].concat());
    check_seeks(m, set, &[k, b"\xff"].concat());
    if let Some((&last, shorter)) = k.split_last() {
        check_seeks(m, set, shorter);
        for b in [last.wrapping_add(1), last.wrapping_sub(1)] {
            check_seeks(m, set, &[shorter, &[b]].concat());
        }
    }
}

fn check_all(m: &CompactArt, set: &Oracle, shape: KeyShape, seed: u64) {
    check_static(m, set, shape, seed, 400);
    assert_eq!(m.len(), set.len());
    assert_eq!(m.is_empty(), set.is_empty());
    assert_eq!(m.first(), entry(set.first_key_value()));
    assert_eq!(m.last(), entry(set.last_key_value()));
    assert_eq!(m.memory_usage() - m.structure_bytes(), 8 * set.len());
    let mut rng = TestRng::new(seed ^ 0x5eed);
    for (k, _) in set.iter().step_by(1 + set.len() / 50) {
        check_seeks_around(m, set, k);
    }
    for _ in 0..50 {
        check_seeks(m, set, &shape.gen_key(&mut rng));
    }
}

/// Builds `set`, checks it fully (every key's neighbourhood too when there are few), and checks
/// that its image loads back equal.
fn check_built(set: &Oracle, shape: KeyShape, seed: u64) -> CompactArt {
    let m = build(set);
    check_all(&m, set, shape, seed);
    if set.len() <= 600 {
        for k in set.keys() {
            check_seeks_around(&m, set, k);
        }
    }
    assert_eq!(CompactArt::from_bytes(&m.to_bytes()).unwrap(), m);
    m
}

/// Bytes of the arena: what `memory_usage` counts beyond the empty map's fixed part.
fn arena_bytes(m: &CompactArt) -> usize {
    let empty = CompactArt::from_sorted::<&[u8]>([]).unwrap();
    m.memory_usage() - empty.memory_usage()
}

/// Bytes of a node's labels for `n` children (`raw/mod.rs`): Linear up to 24 children (one
/// byte each), Bitmap (4 words) up to 255, Full (none) at 256.
fn labels_bytes(n: usize) -> usize {
    match n {
        256 => 0,
        0..=24 => n,
        _ => 32,
    }
}

/// Bytes of a node's labels and `records` bytes of records for `n` children: the two
/// together, padded to a word.
fn labelled_records(n: usize, records: usize) -> usize {
    (labels_bytes(n) + records).next_multiple_of(8)
}

/// Bytes of an out-of-line leaf with a suffix of `len`: its value and its suffix in words.
fn leaf_bytes(len: usize) -> usize {
    8 + len.next_multiple_of(8)
}

/// Bytes of the labels and records of a node whose children are leaves with suffixes of
/// `lens` bytes, plus those of its out-of-line leaves, at the best record width: width `w`
/// (8 to 64 bytes) takes `w` bytes a child, labels and records rounded up to a word, and a
/// leaf whose suffix is longer than `w - 9` bytes (any leaf at `w = 8`, where records hold
/// only refs) lies outside.
fn leaf_records_bytes(lens: &[usize]) -> usize {
    (8..=64)
        .map(|w| {
            labelled_records(lens.len(), lens.len() * w)
                + lens
                    .iter()
                    .filter(|&&len| w == 8 || len + 9 > w)
                    .map(|&len| leaf_bytes(len))
                    .sum::<usize>()
        })
        .min()
        .unwrap()
}

/// Bytes of a node's prefix of `plen` bytes: its words, and a length word from 2047 bytes.
fn prefix_bytes(plen: usize) -> usize {
    plen.next_multiple_of(8) + if plen >= 2047 { 8 } else { 0 }
}

/// `n` (at least 2) distinct bytes spread over 0..=255, 0x00 and 0xFF included.
fn spread(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 255 / (n - 1)) as u8).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs
// ---------------------------------------------------------------------------------------------

#[test]
fn differential_every_shape() {
    for &shape in SHAPES {
        for (seed, n) in [(1, 0), (2, 1), (3, 2), (4, 7), (5, 40), (6, 300), (7, 3000)] {
            let set = key_set(shape, seed, n);
            let m = build(&set);
            check_all(&m, &set, shape, seed * 31);
            let back = CompactArt::from_bytes(&m.to_bytes()).unwrap();
            assert_eq!(back, m);
            check_static(&back, &set, shape, seed * 37, 100);
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Keys over 0x00, 0x01, 0xFE, 0xFF and `a` shorter than `max_len`: many share prefixes,
    /// are prefixes of each other, or differ in their extreme bytes.
    fn small_key(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            proptest::sample::select(vec![0x00u8, 0x01, 0xFE, 0xFF, b'a']),
            0..max_len,
        )
    }

    fn bound(kind: u8, k: &[u8]) -> Bound<&[u8]> {
        match kind % 3 {
            0 => Included(k),
            1 => Excluded(k),
            _ => Unbounded,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any small key set: `get`, `lower_bound`, `upper_bound` (every bound kind) and
        /// ranges walked forward, backward and from both ends agree with a `BTreeMap`, and the
        /// image loads back equal.
        #[test]
        fn small_alphabet_key_sets_behave_like_a_btreemap(
            keys in proptest::collection::btree_set(small_key(6), 0..64),
            probes in proptest::collection::vec(small_key(8), 1..16),
            kinds in proptest::collection::vec(any::<u8>(), 16),
            split in 0usize..70,
        ) {
            let set: Oracle = keys.into_iter().zip(100..).collect();
            let m = build(&set);
            prop_assert_eq!(m.len(), set.len());
            prop_assert_eq!(m.iter().collect::<Entries>(), set.clone().into_iter().collect::<Entries>());
            for p in probes.iter().chain(set.keys()) {
                prop_assert_eq!(m.get(p), set.get(p).copied(), "get({:?})", p);
                for b in [Included(&p[..]), Excluded(&p[..]), Unbounded] {
                    let lo = entry(set.range::<[u8], _>((b, Unbounded)).next());
                    let hi = entry(set.range::<[u8], _>((Unbounded, b)).next_back());
                    prop_assert_eq!(m.lower_bound(b), lo.clone(), "lower_bound({:?})", b);
                    prop_assert_eq!(m.lower_bound_value(b), lo.map(|e| e.1));
                    prop_assert_eq!(m.upper_bound(b), hi, "upper_bound({:?})", b);
                }
            }
            for (i, (a, z)) in probes.iter().zip(probes.iter().rev()).enumerate() {
                let (lo, hi) = (bound(kinds[i], a), bound(kinds[(i + 5) % 16], z));
                let want: Entries = if is_empty_range(lo, hi) {
                    Vec::new()
                } else {
                    set.range::<[u8], _>((lo, hi)).map(|(k, &v)| (k.clone(), v)).collect()
                };
                prop_assert_eq!(m.range((lo, hi)).collect::<Entries>(), want.clone(), "{:?}", (lo, hi));
                let mut back: Entries = m.range((lo, hi)).rev().collect();
                back.reverse();
                prop_assert_eq!(&back, &want, "reversed {:?}", (lo, hi));
                let mut c = m.cursor((lo, hi));
                let mut got = Vec::new();
                for _ in 0..split {
                    match c.next() {
                        Some((k, v)) => got.push((k.to_vec(), v)),
                        None => break,
                    }
                }
                let mut tail = Vec::new();
                while let Some((k, v)) = c.next_back() {
                    tail.push((k.to_vec(), v));
                }
                tail.reverse();
                got.extend(tail);
                prop_assert_eq!(got, want, "split at {} of {:?}", split, (lo, hi));
            }
            prop_assert_eq!(CompactArt::from_bytes(&m.to_bytes()).unwrap(), m);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Layouts at their boundaries
// ---------------------------------------------------------------------------------------------

#[test]
fn node_layouts_at_their_child_count_boundaries() {
    for n in [
        2, 3, 7, 8, 9, 16, 17, 23, 24, 25, 26, 32, 33, 64, 128, 200, 254, 255, 256,
    ] {
        let bytes = spread(n);
        // The root: n leaves of no suffix, each an inline record of 9 bytes (value and tag),
        // the records rounded up to a word.
        let records = labelled_records(n, 9 * n);
        let set = oracle_of(bytes.iter().map(|&b| [b]));
        let m = check_built(&set, KeyShape::ZeroFf, n as u64);
        assert_eq!(arena_bytes(&m), records, "root of {n}");

        // Below a prefix, with the prefix itself a key: the node has a value and a prefix.
        let mut set = oracle_of(bytes.iter().map(|&b| [&b"pre"[..], &[b]].concat()));
        set.insert(b"pre".to_vec(), 7);
        let m = check_built(&set, KeyShape::PrefixChains, n as u64);
        assert_eq!(arena_bytes(&m), 8 + records + 8, "{n} below pre");
        for c in 0..=255u8 {
            check_seeks(&m, &set, &[&b"pre"[..], &[c]].concat());
            check_seeks(&m, &set, &[&b"pre"[..], &[c, 0]].concat());
        }

        // Children that are nodes themselves (two leaves each), below a random set of n bytes.
        let mut rng = TestRng::new(n as u64);
        let mut pick: Vec<u8> = (0..=255).collect();
        for i in (1..pick.len()).rev() {
            pick.swap(i, rng.index(i + 1));
        }
        pick.truncate(n);
        let set = oracle_of(
            pick.iter()
                .flat_map(|&b| [[b'x', b, b'0'], [b'x', b, b'1']])
                .collect::<BTreeSet<_>>(),
        );
        check_built(&set, KeyShape::RandomBytes, n as u64);
    }
}

#[test]
fn full_nodes_at_the_root_and_below_it() {
    // Every key of one byte and the empty key: a Full root with a value.
    let mut set = oracle_of((0..=255u8).map(|b| [b]));
    set.insert(Vec::new(), 0);
    let m = check_built(&set, KeyShape::ZeroFf, 1);
    assert_eq!(arena_bytes(&m), 8 + 256 * 9);

    // Every key of two bytes: a Full root (records of a bare ref) over 256 Full nodes of
    // 9-byte inline records.
    let two: Oracle = (0..=0xFFFFu16)
        .map(|x| (x.to_be_bytes().to_vec(), x as u64))
        .collect();
    let m = build(&two);
    check_all(&m, &two, KeyShape::U64, 2);
    assert_eq!(arena_bytes(&m), 256 * 8 + 256 * 256 * 9);
    // And every key of one byte: each Full child has a value.
    let mut both = two.clone();
    both.extend((0..=255u8).map(|b| (vec![b], 1000 + b as u64)));
    let m = build(&both);
    check_all(&m, &both, KeyShape::U64, 3);
    assert_eq!(arena_bytes(&m), 256 * 8 + 256 * (8 + 256 * 9));
    for b in 0..=255u8 {
        check_seeks_around(&m, &both, &[b]);
        check_seeks_around(&m, &both, &[b, 0]);
        check_seeks_around(&m, &both, &[b, 0xFF]);
    }

    // 256 and 255 children at depth 2, below a one-byte prefix.
    let mut set = Oracle::new();
    for top in [0u8, 0x7F, 0xFF] {
        for b in 0..=255u8 {
            if top != 0x7F || b != 0x40 {
                set.insert(vec![top, 0xAA, b], b as u64);
            }
        }
    }
    check_built(&set, KeyShape::ZeroFf, 4);
}

#[test]
fn leaf_suffixes_around_every_record_width() {
    let suffix = |len: usize, salt: u8| -> Vec<u8> {
        (0..len)
            .map(|i| [0x00, 0xFF, b'q', salt][(i + salt as usize) % 4])
            .collect()
    };
    // Three leaves of one suffix length under the root: inline in records of len + 9 bytes
    // up to 55 bytes, out of line from 56.
    for len in 0..=70 {
        let set = oracle_of([b'a', b'b', b'c'].map(|b| [&[b][..], &suffix(len, b)].concat()));
        let m = check_built(&set, KeyShape::RandomBytes, len as u64);
        let want = leaf_records_bytes(&[len; 3]);
        assert_eq!(arena_bytes(&m), want, "suffixes of {len}");
        if len <= 55 {
            assert_eq!(want, labelled_records(3, 3 * (len + 9)));
        }
    }
    // Leaves of every suffix length from 0 to 60 under one node (a Bitmap of 61), in several
    // orders; then random mixes under a Linear node: some lie inline, some outside.
    let mut rng = TestRng::new(60);
    for round in 0..8 {
        let mut order: Vec<usize> = (0..=60).collect();
        if round > 0 {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.index(i + 1));
            }
        }
        let set = oracle_of(
            order
                .iter()
                .enumerate()
                .map(|(i, &len)| [&[4 * i as u8][..], &suffix(len, i as u8)].concat()),
        );
        let m = check_built(&set, KeyShape::RandomBytes, round);
        assert_eq!(arena_bytes(&m), leaf_records_bytes(&order), "round {round}");
    }
    for round in 0..200 {
        let n = 2 + rng.index(23);
        let lens: Vec<usize> = (0..n)
            .map(|_| match rng.index(3) {
                0 => rng.index(61),
                // Around a split: 8w - 10, 8w - 9 or 8w - 8.
                _ => 8 * (2 + rng.index(7)) - 10 + rng.index(3),
            })
            .collect();
        let set = oracle_of(
            lens.iter()
                .enumerate()
                .map(|(i, &len)| [&[b'0' + i as u8][..], &suffix(len, round as u8)].concat()),
        );
        let m = check_built(&set, KeyShape::RandomBytes, round);
        assert_eq!(
            arena_bytes(&m),
            leaf_records_bytes(&lens),
            "suffix lengths {lens:?}"
        );
    }
}

#[test]
fn long_shared_prefixes_around_the_length_word() {
    for plen in [2046usize, 2047, 2048, 2049, 5000] {
        let head: Vec<u8> = (0..plen).map(|i| (i * 7 % 251) as u8).collect();
        // At the root: the prefix is every key's first `plen` bytes.
        let set = oracle_of([0u8, b'm', 0xFF].map(|b| [&head[..], &[b]].concat()));
        let m = check_built(&set, KeyShape::Long, plen as u64);
        assert_eq!(
            arena_bytes(&m),
            labelled_records(3, 3 * 9) + prefix_bytes(plen),
            "prefix of {plen}"
        );
        // Below the root, with a value: the prefix follows the parent's byte.
        let mut set = oracle_of([0u8, b'm', 0xFF].map(|b| [&b"k"[..], &head, &[b]].concat()));
        set.insert([&b"k"[..], &head].concat(), 5);
        set.insert(b"a".to_vec(), 6);
        set.insert(b"z".to_vec(), 7);
        let m = check_built(&set, KeyShape::Long, plen as u64 + 1);
        for cut in [0, 1, plen / 2, plen - 1, plen] {
            check_seeks_around(&m, &set, &[&b"k"[..], &head[..cut]].concat());
        }
        // Keys leaving the prefix early, midway and at its last byte, above and below it.
        let mut off = [&b"k"[..], &head].concat();
        for at in [1, plen / 2, plen] {
            for d in [1u8, 255] {
                off[at] = head[at - 1].wrapping_add(d);
                check_seeks_around(&m, &set, &off[..=at]);
                check_seeks(&m, &set, &off);
                off[at] = head[at - 1];
            }
        }
    }
}

#[test]
fn multi_kib_keys() {
    let long = |len: usize, last: u8| -> Vec<u8> {
        let mut k: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        if let Some(x) = k.last_mut() {
            *x = last;
        }
        k
    };
    let mut set = Oracle::new();
    for len in [1000, 2047, 2048, 4095, 4096, 8192, 100_000] {
        for last in [0u8, 1, 0xFE, 0xFF] {
            set.insert(long(len, last), len as u64 + last as u64);
        }
    }
    // A 64 KiB key alone below its parent (an out-of-line leaf), and two sharing all but the
    // last byte.
    set.insert([&b"\xff"[..], &long(65_536, 3)].concat(), 1);
    set.insert([&b"\xfe"[..], &long(65_536, 3)].concat(), 2);
    set.insert([&b"\xfe"[..], &long(65_536, 4)].concat(), 3);
    let m = check_built(&set, KeyShape::Long, 8);
    for k in set.keys() {
        let shorter = &k[..k.len() - 1];
        assert_eq!(m.get(shorter), set.get(shorter).copied());
    }
}

#[test]
fn keys_up_to_16_mib_and_not_longer() {
    const MAX: usize = (1 << 24) - 1;
    let mut longest = vec![0xABu8; MAX];
    let m = CompactArt::from_sorted([(&longest, 9)]).unwrap();
    assert_eq!(m.get(&longest), Some(9));
    assert_eq!(arena_bytes(&m), leaf_bytes(MAX));
    assert_eq!(m.first(), Some((longest.clone(), 9)));
    assert_eq!(CompactArt::from_bytes(&m.to_bytes()).unwrap(), m);

    let mut b = CompactArtBuilder::new();
    b.push(b"a", 1).unwrap();
    let mut too_long = longest.clone();
    too_long.push(0);
    assert_eq!(
        b.push(&too_long, 2),
        Err(Error::KeyTooLong {
            len: MAX + 1,
            max: MAX
        })
    );
    assert_eq!(b.len(), 1);
    // The refused key changed nothing. Two longest keys differing in their last byte: a node
    // with a prefix of 16 MiB - 2 bytes.
    *longest.last_mut().unwrap() = 0xAA;
    b.push(&longest, 3).unwrap();
    *longest.last_mut().unwrap() = 0xAB;
    b.push(&longest, 4).unwrap();
    let m = b.finish().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.get(b"a"), Some(1));
    assert_eq!(m.get(&longest), Some(4));
    assert_eq!(m.get(&longest[..MAX - 1]), None);
    assert_eq!(m.upper_bound(Excluded(&longest)).map(|e| e.1), Some(3));
    assert_eq!(m.lower_bound(Excluded(b"a")).map(|e| e.1), Some(3));
    assert_eq!(m.lower_bound(Included(&longest[..9])).map(|e| e.1), Some(3));
    assert_eq!(CompactArt::from_bytes(&m.to_bytes()).unwrap(), m);
}

// ---------------------------------------------------------------------------------------------
// 3. Keys a trie must get right
// ---------------------------------------------------------------------------------------------

#[test]
fn keys_that_are_prefixes_of_other_keys() {
    let chains: Vec<Oracle> = vec![
        // Every node has a value and a single child, the empty key on top.
        oracle_of((0..=40).map(|n| vec![b'a'; n])),
        // The same without the empty key, in 0x00 and 0xFF.
        oracle_of((1..=40).map(|n| vec![0u8; n])),
        oracle_of((1..=40).map(|n| vec![0xFFu8; n])),
        // Values on inner nodes with several children, chains branching at every level.
        oracle_of(
            (0..=12)
                .flat_map(|n| {
                    let base = vec![b'b'; n];
                    [
                        base.clone(),
                        [&base[..], b"\0"].concat(),
                        [&base[..], b"c"].concat(),
                    ]
                })
                .collect::<BTreeSet<_>>(),
        ),
        // The empty key alone; with one other key; with a prefix-compressed node below.
        oracle_of([&b""[..]]),
        oracle_of([&b""[..], b"\0"]),
        oracle_of([&b""[..], b"\xff"]),
        oracle_of([&b""[..], b"abcdef", b"abcdeg"]),
        oracle_of([&b"abc"[..], b"abcdef", b"abcdefgh", b"abcdeg", b"abd"]),
    ];
    for (i, set) in chains.iter().enumerate() {
        let m = check_built(set, KeyShape::PrefixChains, i as u64);
        for k in set.keys() {
            for cut in 0..=k.len() {
                check_seeks_around(&m, set, &k[..cut]);
            }
        }
    }
}

#[test]
fn zero_and_ff_bytes() {
    // Every key of 0x00 and 0xFF up to 6 bytes: a binary trie with a value on every node.
    let mut keys = vec![Vec::new()];
    for len in 1..=6 {
        for bits in 0..1u32 << len {
            keys.push(
                (0..len)
                    .map(|i| if (bits >> i) & 1 == 1 { 0xFF } else { 0 })
                    .collect(),
            );
        }
    }
    keys.sort();
    let set = oracle_of(&keys);
    let m = check_built(&set, KeyShape::ZeroFf, 6);
    assert_eq!(m.len(), 127);
    for k in &keys {
        check_seeks(&m, &set, &[&k[..], &[0, 0]].concat());
        check_seeks(&m, &set, &[&k[..], &[0xFF, 0xFF]].concat());
    }
    // Without the shorter keys: leaves only at depth 6.
    let set = oracle_of(keys.iter().filter(|k| k.len() == 6));
    check_built(&set, KeyShape::ZeroFf, 7);
}

#[test]
fn keys_that_differ_only_in_zero_padding() {
    let keys: Vec<Vec<u8>> = (0..=10)
        .flat_map(|n| [[&b"ab"[..], &vec![0u8; n]].concat(), vec![0u8; n]])
        .chain([b"ab\0\0\0\0\0\0\x01".to_vec(), b"\xff".repeat(9)])
        .collect();
    let set: Oracle = keys.into_iter().zip(0..).collect();
    let m = build(&set);
    let got: Entries = m.iter().collect();
    let want: Entries = set.iter().map(|(k, v)| (k.clone(), *v)).collect();
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

#[test]
fn keys_behind_one_shared_head() {
    // 3000 keys behind one 8-byte head, with short tails of 0x00/0xFF; plus keys just below
    // and above the run, and keys that are prefixes of the head.
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
    let m = build(&set);
    check_all(&m, &set, KeyShape::SharedPrefix, 1);
    for k in set.keys() {
        check_seeks_around(&m, &set, k);
    }
}

#[test]
fn integers_dense_and_sparse() {
    let families: [Vec<u64>; 4] = [
        (0..5000).collect(),
        (0..5000).map(|i| i * 1_000_003).collect(),
        (0..5000).map(|i| u64::MAX - 5000 + i).collect(),
        (0..5000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    ];
    for (f, ints) in families.iter().enumerate() {
        let set: Oracle = ints
            .iter()
            .map(|&x| (x.to_be_bytes().to_vec(), x ^ 1))
            .collect();
        let m = build(&set);
        for &x in ints {
            assert_eq!(m.get(&x.to_be_bytes()), Some(x ^ 1));
            for y in [x.wrapping_sub(1), x.wrapping_add(1)] {
                check_seeks(&m, &set, &y.to_be_bytes());
            }
        }
        check_all(&m, &set, KeyShape::U64, f as u64);
    }
}

#[test]
fn a_single_key() {
    for key in [
        Vec::new(),
        b"a".to_vec(),
        vec![0],
        b"\xff".repeat(9),
        vec![0x5A; 55],
        vec![0x5A; 56],
        vec![7; 5000],
    ] {
        let set = oracle_of([&key]);
        let m = check_built(&set, KeyShape::RandomBytes, key.len() as u64);
        // The root is the key's leaf: its value and the whole key.
        assert_eq!(arena_bytes(&m), leaf_bytes(key.len()));
        assert_eq!(m.first(), Some((key.clone(), 1)));
        assert_eq!(m.last(), Some((key.clone(), 1)));
        assert_eq!(m.iter().collect::<Entries>(), [(key.clone(), 1)]);
        assert_eq!(m.iter().rev().collect::<Entries>(), [(key.clone(), 1)]);
        let mut c = m.cursor(..);
        assert_eq!(c.next_back(), Some((&key[..], 1)));
        assert_eq!(c.next(), None);
        assert_eq!(c.next_back(), None);
        assert_eq!(m.range((Excluded(&key[..]), Unbounded)).count(), 0);
        assert_eq!(m.range((Unbounded, Excluded(&key[..]))).count(), 0);
        assert_eq!(m.range(key.clone()..=key.clone()).count(), 1);
    }
}

#[test]
fn the_empty_map() {
    let m = CompactArtBuilder::new().finish().unwrap();
    let set = Oracle::new();
    check_all(&m, &set, KeyShape::Mixed, 0);
    assert!(m.is_empty());
    assert_eq!(m.len(), 0);
    assert_eq!(arena_bytes(&m), 0);
    assert_eq!(m.structure_bytes(), m.memory_usage());
    for probe in [&b""[..], b"\0", b"\xff", b"a"] {
        assert_eq!(m.get(probe), None);
        assert!(!m.contains_key(probe));
        check_seeks(&m, &set, probe);
    }
    assert_eq!(m.iter().next(), None);
    assert_eq!(m.iter().next_back(), None);
    let mut c = m.cursor(..);
    assert_eq!(c.next(), None);
    assert_eq!(c.next_back(), None);
    assert_eq!(format!("{m:?}"), "{}");
    let back = CompactArt::from_bytes(&m.to_bytes()).unwrap();
    assert_eq!(back, m);
    assert!(back.is_empty());
    assert_eq!(
        CompactArt::from_sorted::<&[u8]>([]).unwrap(),
        CompactArtBuilder::default().finish().unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Cursors
// ---------------------------------------------------------------------------------------------

#[test]
fn ranges_of_every_form_and_both_directions() {
    let set = key_set(KeyShape::RandomBytes, 17, 500);
    let m = build(&set);
    let keys: Vec<&Vec<u8>> = set.keys().collect();
    let (a, b) = (keys[100].clone(), keys[300].clone());
    let want = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| -> Entries {
        set.range::<[u8], _>((lo, hi))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    assert_eq!(
        m.range(a.clone()..b.clone()).collect::<Entries>(),
        want(Included(&a), Excluded(&b))
    );
    assert_eq!(
        m.range(a.clone()..=b.clone()).collect::<Entries>(),
        want(Included(&a), Included(&b))
    );
    assert_eq!(
        m.range(a.clone()..).collect::<Entries>(),
        want(Included(&a), Unbounded)
    );
    assert_eq!(
        m.range(..=b.clone()).collect::<Entries>(),
        want(Unbounded, Included(&b))
    );
    let mut rev: Entries = m.range(..b.clone()).rev().collect();
    rev.reverse();
    assert_eq!(rev, want(Unbounded, Excluded(&b)));
    assert_eq!(m.range(b.clone()..a.clone()).count(), 0, "inverted");
    assert_eq!(m.range(b.clone()..=a.clone()).rev().count(), 0, "inverted");
    assert_eq!(
        m.range((Excluded(&a[..]), Excluded(&a[..]))).count(),
        0,
        "empty"
    );
    assert_eq!(m.range(a.clone()..a.clone()).count(), 0, "empty");
    assert_eq!(m.range(a.clone()..=a.clone()).count(), 1, "one");
    assert_eq!((&m).into_iter().count(), set.len());
    assert_eq!(
        m.cursor(..).collect_keys(),
        set.keys().cloned().collect::<Vec<_>>()
    );
}

/// Walks `c`, taking from the front where `pattern` (cycled) says `true` and from the back
/// where `false`, until one end is exhausted; then checks that neither end yields anything
/// more. Returns the front's entries followed by the back's reversed, which must be the range
/// in order.
fn walk_meeting(mut c: Cursor<'_>, pattern: &[bool], limit: usize) -> Entries {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    for step in 0.. {
        assert!(step <= limit, "the cursor yields more than {limit} entries");
        let from_front = pattern[step % pattern.len()];
        let next = if from_front { c.next() } else { c.next_back() };
        match next {
            Some((k, v)) if from_front => front.push((k.to_vec(), v)),
            Some((k, v)) => back.push((k.to_vec(), v)),
            None => break,
        }
    }
    for _ in 0..3 {
        assert_eq!(c.next(), None, "next after the end");
        assert_eq!(c.next_back(), None, "next_back after the end");
    }
    back.reverse();
    front.extend(back);
    front
}

#[test]
fn cursor_ends_meet_exactly() {
    let mut set = key_set(KeyShape::PrefixChains, 3, 200);
    set.extend(key_set(KeyShape::RandomBytes, 4, 150));
    set.extend(key_set(KeyShape::ZeroFf, 5, 100));
    let m = build(&set);
    let mut rng = TestRng::new(99);
    let mut probes: Vec<Vec<u8>> = set.keys().step_by(23).cloned().collect();
    for _ in 0..6 {
        let k = KeyShape::PrefixChains.gen_key(&mut rng);
        probes.push([&k[..], b"\x01"].concat());
        probes.push(KeyShape::RandomBytes.gen_key(&mut rng));
    }
    probes.push(Vec::new());
    probes.push(vec![0xFF; 14]);
    let mut bounds = vec![Unbounded];
    for p in &probes {
        bounds.push(Included(&p[..]));
        bounds.push(Excluded(&p[..]));
    }
    let patterns: [&[bool]; 5] = [
        &[true, false],
        &[false, true],
        &[true, true, false],
        &[false, false, false, true],
        &[true, false, false, true, true, false, true],
    ];
    let mut nonempty = 0;
    for &lo in &bounds {
        for &hi in &bounds {
            let want: Entries = if is_empty_range(lo, hi) {
                Vec::new()
            } else {
                set.range::<[u8], _>((lo, hi))
                    .map(|(k, &v)| (k.clone(), v))
                    .collect()
            };
            nonempty += usize::from(!want.is_empty());
            for pattern in patterns {
                let got = walk_meeting(m.cursor((lo, hi)), pattern, want.len());
                assert_eq!(got, want, "{:?} walked {pattern:?}", (lo, hi));
            }
            // The owning iterator, alternating.
            let mut it = m.range((lo, hi));
            let (mut front, mut back) = (Vec::new(), Vec::new());
            while let Some(e) = it.next() {
                front.push(e);
                let Some(e) = it.next_back() else { break };
                back.push(e);
            }
            assert_eq!(it.next(), None);
            assert_eq!(it.next_back(), None);
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "range {:?} alternating", (lo, hi));
        }
    }
    assert!(nonempty > 1000, "{nonempty} non-empty ranges");
}

// ---------------------------------------------------------------------------------------------
// 5. Memory
// ---------------------------------------------------------------------------------------------

#[test]
fn memory_of_random_8_byte_keys() {
    let mut rng = TestRng::new(4);
    let set: Oracle = (0..200_000)
        .map(|_| (rng.next_u64().to_be_bytes().to_vec(), 0))
        .collect();
    let m = build(&set);
    // What the layout predicts for n = 200,000 random keys (λ = n / 65,536 ≈ 3.05 keys per
    // two-byte head, Poisson):
    // - every key is a leaf record of 14 bytes: 8 for the value and, inline, the tag and a
    //   5-byte suffix; or, alone under its two-byte head (a fraction λe^-λ ≈ 4.7%), an
    //   out-of-line leaf of 16 bytes (value, 6-byte suffix);                         14.1 B/key
    // - the root is Full (256 8-byte refs) over 256 Bitmap nodes (4 words of bits), each
    //   with ~244 children in 8-byte records (a tagged record would waste 6 bytes on every
    //   child that is a node): ~62,500 records of 8 bytes;                           2.5 B/key
    // - ~53,000 heads hold two keys or more: a Linear node each, with a word of labels and
    //   its records rounded up to a word (4 bytes on average);                       3.1 B/key
    // ≈ 19.7 bytes a key with the values (measured: 19.8). The bound leaves 8% over that.
    let per_key = m.memory_usage() as f64 / set.len() as f64;
    assert!(per_key < 21.5, "{per_key:.2} bytes per key");
    assert_eq!(m.memory_usage() - m.structure_bytes(), 8 * set.len());
    for (k, _) in set.iter().step_by(997) {
        assert_eq!(m.get(k), Some(0));
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Builder contract
// ---------------------------------------------------------------------------------------------

#[test]
fn builder_rejects_bad_input() {
    check_builder_rejects(CompactArtBuilder::new);
    assert!(matches!(
        CompactArt::from_sorted([(&b"b"[..], 1), (b"a", 2)]),
        Err(Error::OutOfOrder { .. })
    ));
    assert!(matches!(
        CompactArt::from_sorted([(&b"a"[..], 1), (b"a", 2)]),
        Err(Error::DuplicateKey { .. })
    ));
}

#[test]
fn debug_prints_the_entries() {
    let m = CompactArt::from_sorted([(&b""[..], 0), (b"a", 1), (b"b\xff", 2)]).unwrap();
    assert_eq!(format!("{m:?}"), r#"{"": 0, "a": 1, "b\xff": 2}"#);
}

#[test]
fn maps_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<CompactArt>();
    check::<CompactArtBuilder>();
}

// ---------------------------------------------------------------------------------------------
// 7. Serialization
// ---------------------------------------------------------------------------------------------

#[test]
fn corrupt_and_truncated_images_are_errors() {
    for &shape in SHAPES {
        let set = key_set(shape, 11, 40);
        let img = build(&set).to_bytes();
        for len in 0..img.len() {
            assert!(
                CompactArt::from_bytes(&img[..len]).is_err(),
                "truncated to {len}"
            );
        }
        let mut bad = img.clone();
        for i in 0..img.len().min(4096) {
            bad[i] ^= 0x5A;
            assert!(CompactArt::from_bytes(&bad).is_err(), "byte {i} flipped");
            bad[i] = img[i];
        }
        let mut v = img.clone();
        v[8] = 9;
        assert!(matches!(
            CompactArt::from_bytes(&v),
            Err(Error::Version { found: 9, .. })
        ));
        let mut m = img.clone();
        m[0] = b'X';
        assert!(matches!(
            CompactArt::from_bytes(&m),
            Err(Error::Format { .. })
        ));
    }
}

/// Every entry from the front and from the back (at most `len + 1` each).
fn both_ways(m: &CompactArt) -> (Entries, Entries) {
    let fwd: Entries = m.iter().take(m.len() + 1).collect();
    let mut back: Entries = m.iter().rev().take(m.len() + 1).collect();
    back.reverse();
    (fwd, back)
}

/// What every loaded map must satisfy: iteration strictly increasing and the same both ways,
/// `len` counting it, `get` finding every key, seeks agreeing with the iterated order.
fn check_self_consistent(m: &CompactArt, probes: &[Vec<u8>]) -> Result<(), String> {
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

/// Damaged images with recomputed checksums: random damage to images of every shape and of
/// every node layout must fail to load or load a map that answers consistently.
fn damaged_images_that_load_answer_consistently() {
    let mut rng = TestRng::new(2016);
    let mut loaded = 0usize;
    let mut tried = 0usize;
    let mut sets: Vec<(String, Oracle)> = SHAPES
        .iter()
        .filter(|&&s| s != KeyShape::Long)
        .map(|&s| (format!("{s:?}"), key_set(s, 61, 50)))
        .collect();
    // A Full root, a Bitmap node, leaves of every record width, a long prefix.
    sets.push(("full root".into(), oracle_of((0..=255u8).map(|b| [b]))));
    sets.push((
        "bitmap".into(),
        oracle_of((0..=120u8).map(|b| [b'b', 2 * b])),
    ));
    sets.push((
        "widths".into(),
        oracle_of((0..=60u8).map(|i| [&[i][..], &vec![i; i as usize]].concat())),
    ));
    sets.push((
        "long prefix".into(),
        oracle_of([1u8, 2].map(|t| [&vec![9u8; 4100][..], &[t]].concat())),
    ));
    for (name, set) in &sets {
        let probes: Vec<Vec<u8>> = set
            .keys()
            .cloned()
            .chain((0..8).map(|_| KeyShape::Mixed.gen_key(&mut rng)))
            .collect();
        let img = build(set).to_bytes();
        for round in 0..400 {
            let bad = damage_keeping_checksum(&img, &mut rng);
            let in_place = CompactArt::from_shared(bad.clone());
            let copied = CompactArt::from_bytes(&bad);
            assert_eq!(copied, in_place, "{name}: loaders disagree");
            tried += 1;
            let Ok(m) = copied else { continue };
            loaded += 1;
            if let Err(e) = check_self_consistent(&m, &probes) {
                panic!("{name}, round {round}: {e}");
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

/// Images in which one arena word was overwritten by a copy of another word (checksum
/// recomputed): a ref then points where another ref does, at a node or leaf met elsewhere in
/// the tree, at an ancestor (a cycle) or at the node holding it. Each must fail to load or
/// load a map that answers consistently, in memory bounded by the image.
fn words_copied_over_other_words() {
    let sets = [
        oracle_of([&b"a0"[..], b"a1", b"b"]),
        oracle_of([&b""[..], b"a", b"ab", b"abc", b"abd", b"b"]),
        key_set(KeyShape::ZeroFf, 62, 30),
        key_set(KeyShape::PrefixChains, 63, 30),
    ];
    let mut loaded = 0;
    for set in &sets {
        let img = build(set).to_bytes();
        let words: Vec<usize> = (24..img.len() - 8).step_by(8).collect();
        let probes: Vec<Vec<u8>> = set.keys().cloned().collect();
        for &to in &words {
            for &from in &words {
                let mut bad = img.clone();
                bad.copy_within(from..from + 8, to);
                if bad == img {
                    continue;
                }
                reseal(&mut bad);
                let copied = CompactArt::from_bytes(&bad);
                assert_eq!(copied, CompactArt::from_shared(bad.clone()));
                if let Ok(m) = copied {
                    loaded += 1;
                    if let Err(e) = check_self_consistent(&m, &probes) {
                        panic!("{set:?}: word at {from} copied to {to}: {e}");
                    }
                }
            }
        }
    }
    assert!(loaded > 0, "no image loaded: the test checks nothing");
}

/// The smallest cyclic image: the root's record of its child node (`a`, above `a0` and
/// `a1`) rewritten to the root's own ref, checksum recomputed. Loading must refuse it.
fn a_child_ref_to_its_own_parent() {
    let img = build(&oracle_of([&b"a0"[..], b"a1", b"b"])).to_bytes();
    // The arena in post-order: the node below `a` (no value; 2 label bytes and two 11-byte
    // records of inline leaves, 3 words) at bytes 0..24, then the root: labels at bytes 24..26
    // and 11-byte records from byte 26, `a`'s first (its ref in bytes 26..34, the tag 0xFF
    // after it), then `b`'s inline leaf. The header holds the root's ref at bytes 24..32 and
    // the arena starts at byte 40.
    let mut bad = img.clone();
    assert_eq!(bad[40 + 34], 0xFF, "the layout this test assumes changed");
    bad.copy_within(24..32, 40 + 26);
    reseal(&mut bad);
    assert!(CompactArt::from_bytes(&bad).is_err());
    assert!(CompactArt::from_shared(bad).is_err());
}

/// The bodies [`capped_child`] runs.
const CAPPED_BODIES: &[(&str, fn())] = &[
    ("damaged", damaged_images_that_load_answer_consistently),
    ("copied words", words_copied_over_other_words),
    ("own parent", a_child_ref_to_its_own_parent),
];

/// Names the body a child process runs.
const CAPPED_ENV: &str = "MLPDEX_TEST_COMPACT_ART_CAPPED";

/// Runs body `name` of [`CAPPED_BODIES`] in a child process of this test binary whose
/// address space is capped at 2 GiB (`ulimit -v`), so a loader that allocates without bound
/// on a damaged image fails that child (the allocation fails and aborts it) and the test,
/// rather than exhausting the machine's memory. Outside Unix the body runs here.
fn in_capped_child(name: &str) {
    let (_, body) = CAPPED_BODIES.iter().find(|(n, _)| *n == name).unwrap();
    if !cfg!(unix) {
        body();
        return;
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 2097152 && exec "$0" --exact capped_child --nocapture --test-threads=1"#)
        .arg(std::env::current_exe().unwrap())
        .env(CAPPED_ENV, name)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name}, in a child process capped at 2 GiB: {}\n{stdout}\n{tail}",
        out.status
    );
}

/// The entry of [`in_capped_child`]'s child process: runs the body its environment names
/// (nothing when run as a test of its own).
#[test]
fn capped_child() {
    if let Ok(name) = std::env::var(CAPPED_ENV) {
        let (_, body) = CAPPED_BODIES.iter().find(|(n, _)| *n == name).unwrap();
        body();
    }
}

#[test]
fn damaged_images_fail_to_load_or_answer_consistently() {
    in_capped_child("damaged");
}

#[test]
fn refs_copied_anywhere_fail_to_load_or_answer_consistently() {
    in_capped_child("copied words");
}

#[test]
fn a_cyclic_image_is_refused() {
    in_capped_child("own parent");
}

#[test]
fn a_rewritten_long_prefix_length_is_caught_or_consistent() {
    let head = vec![0x33u8; 5000];
    let set = oracle_of([0u8, 1, 0xFF].map(|t| [&head[..], &[t]].concat()));
    let img = build(&set).to_bytes();
    // The length word is the only word of the image holding 5000.
    let words: Vec<usize> = (40..img.len() - 8)
        .step_by(8)
        .filter(|&at| img[at..at + 8] == 5000u64.to_le_bytes())
        .collect();
    assert_eq!(words.len(), 1, "{words:?}");
    let at = words[0];
    // The prefix takes 625 words: a length of 4993 to 5000 keeps the node's size, so the
    // image stays a valid tree of other keys; any other length must be refused.
    for (len, must_fail) in [
        (0u64, true),
        (1, true),
        (2046, true),
        (2047, true),
        (4992, true),
        (5001, true),
        (5008, true),
        (1 << 24, true),
        (1 << 40, true),
        (u64::MAX, true),
        (4993, false),
        (4999, false),
    ] {
        let mut bad = img.clone();
        bad[at..at + 8].copy_from_slice(&len.to_le_bytes());
        reseal(&mut bad);
        let copied = CompactArt::from_bytes(&bad);
        assert_eq!(copied, CompactArt::from_shared(bad.clone()), "{len}");
        match copied {
            Ok(_) if must_fail => panic!("a prefix length of {len} loads"),
            Ok(m) => {
                check_self_consistent(&m, std::slice::from_ref(&head)).unwrap();
                assert_eq!(m.len(), 3);
                assert_eq!(m.first().unwrap().0.len(), len as usize + 1);
            }
            Err(e) => assert!(matches!(e, Error::Format { .. }), "{len}: {e:?}"),
        }
    }
}

/// An image at an odd address.
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
        let m = build(&set);
        let img = m.to_bytes();
        let arc: std::sync::Arc<[u8]> = img.clone().into();
        let vec = CompactArt::from_shared(img.clone()).unwrap();
        let shared = CompactArt::from_shared(arc).unwrap();
        let odd = CompactArt::from_shared(unaligned(&img)).unwrap();
        let copied = CompactArt::from_bytes(&img).unwrap();
        // The arena is a byte section, read a word at a time without alignment: an image at
        // an odd address is used in place too.
        assert!(vec.is_zero_copy() && shared.is_zero_copy() && odd.is_zero_copy());
        assert!(!m.is_zero_copy());
        for loaded in [&vec, &shared, &odd, &copied] {
            assert_eq!(loaded, &m);
            assert_eq!(loaded.to_bytes(), img);
            check_static(loaded, &set, shape, 3, 200);
        }
    }
}

#[test]
fn zero_copy_from_a_memory_mapped_file() {
    let set = key_set(KeyShape::Mixed, 5, 3000);
    let m = build(&set);
    let path = std::env::temp_dir().join(format!("mlpdex-cart-{}.img", std::process::id()));
    std::fs::write(&path, m.to_bytes()).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: the file is this test's own and nobody changes it while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let loaded = CompactArt::from_shared(map).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(loaded.is_zero_copy());
    assert_eq!(loaded, m);
    check_static(&loaded, &set, KeyShape::Mixed, 9, 300);
}

/// Batches whose keys leave a node's prefix (keys arriving in increasing order do): the
/// merge puts a new node of the shared part above the old subtree, whose prefix it shortens,
/// copying the subtree whole or merging the updates that go through its byte. The result
/// must hold the oracle's entries and be byte for byte the tree a fresh build of them makes.
#[test]
fn merged_keys_leaving_a_prefix_keep_the_old_subtree() {
    let long: Vec<u8> = (0..3000).map(|i| (i * 7 % 251) as u8).collect();
    let with = |head: &[u8], tail: &[u8]| [head, tail].concat();
    let counted = |head: &[u8], range: core::ops::Range<u32>| -> Vec<Vec<u8>> {
        range.map(|i| with(head, &i.to_be_bytes())).collect()
    };
    // (old keys, batch): the batch's `None`s delete.
    type Batch = Vec<(Vec<u8>, Option<u64>)>;
    let mut cases: Vec<(Vec<Vec<u8>>, Batch)> = vec![
        // Increasing u32s past a byte boundary, below a shared head: the root's prefix parts.
        (
            counted(b"\xAB\xCD", 0..700),
            counted(b"\xAB\xCD", 0x1_0000..0x1_0300)
                .into_iter()
                .map(|k| (k, Some(9)))
                .collect(),
        ),
        // New keys before the old subtree's byte, and one after it.
        (
            counted(b"mmm", 0..300),
            vec![
                (b"ma".to_vec(), Some(1)),
                (b"mb".to_vec(), Some(2)),
                (b"n".to_vec(), Some(3)),
            ],
        ),
        // A new key ending where the prefixes part: the new node's value.
        (
            counted(b"abcd", 0..50),
            vec![(b"ab".to_vec(), Some(4)), (b"abz".to_vec(), Some(5))],
        ),
        // Only deletes of absent keys: the old tree comes back whole.
        (counted(b"aaa", 0..40), vec![(b"b".to_vec(), None)]),
        // A long prefix cut below the length-word threshold, and one kept above it.
        (
            counted(&long, 0..30),
            vec![(with(&long[..2500], b"\xFF"), Some(6))],
        ),
        (
            counted(&long, 0..30),
            vec![(with(&long[..100], &[long[100] ^ 1]), Some(7))],
        ),
        // Some keys go through the old byte: merged into the old subtree below the new node,
        // one of them deleting an old key, one ending inside the old prefix.
        (
            counted(b"xyz", 0..60),
            vec![
                (b"xa".to_vec(), Some(8)),
                (b"xy".to_vec(), Some(9)),
                (b"xyq".to_vec(), Some(10)),
                (with(b"xyz", &7u32.to_be_bytes()), None),
                (with(b"xyz", &70u32.to_be_bytes()), Some(11)),
            ],
        ),
        // Increasing keys across a byte boundary, some continuing the old subtree's range:
        // the merge of mono-8 that used to rebuild everything.
        (
            counted(b"\x00\xF6", 0xAF00..0xAFF0),
            counted(b"\x00\xF6", 0xAFF0..0xB040)
                .into_iter()
                .map(|k| (k, Some(12)))
                .collect(),
        ),
        // Everything of the old subtree deleted, new keys beside it.
        (
            counted(b"qq", 0..5),
            (0..5u32)
                .map(|i| (with(b"qq", &i.to_be_bytes()), None))
                .chain([(b"qz".to_vec(), Some(13))])
                .collect(),
        ),
    ];
    // Deep enough that the walk below the split gives way to the rebuild (a chain of nodes,
    // each key the prefix of the next), at depths around where it does.
    for c in 190..=210 {
        let chain = vec![b'a'; c];
        let mut old: Vec<Vec<u8>> = (1..=c).map(|k| vec![b'a'; k]).collect();
        old.extend(counted(&with(&chain, b"xyzw"), 0..5));
        let batch = vec![
            (with(&chain, b"xq"), Some(14)),
            (with(&with(&chain, b"xyzw"), &9u32.to_be_bytes()), Some(15)),
        ];
        cases.push((old, batch));
    }
    // Below a node rather than at the root: the same batches with a sibling subtree.
    let below: Vec<_> = cases
        .iter()
        .map(|(old, batch)| {
            let mut old: Vec<Vec<u8>> = old.iter().map(|k| with(b"\x10", k)).collect();
            old.extend(counted(b"\x20", 0..20));
            let batch = batch.iter().map(|(k, v)| (with(b"\x10", k), *v)).collect();
            (old, batch)
        })
        .collect();
    cases.extend(below);
    for (i, (old, batch)) in cases.iter().enumerate() {
        let mut set = oracle_of(old.iter());
        let m = build(&set);
        let next = m.merged(batch.iter().map(|(k, v)| (k, *v))).unwrap();
        apply_batch(&mut set, batch.iter().map(|(k, v)| (k, v)));
        let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(next.iter().collect::<Vec<_>>(), want, "case {i}");
        assert_eq!(
            CompactArt::from_bytes(&next.to_bytes()).unwrap(),
            next,
            "case {i}"
        );
        assert_eq!(next, build(&set), "case {i}: not the tree a build makes");
        check_static(&next, &set, KeyShape::Long, i as u64, 60);
    }
}

/// `merged` against the oracle: batches of inserts, updates and deletes (keys old and new,
/// neighbours of old keys, everything deleted) on maps of every shape; each result is
/// checked whole, through its image (the loader's audit), and used as the next base.
#[test]
fn merged_applies_sorted_batches_like_a_btreemap() {
    let mut rng = TestRng::new(5252);
    for &shape in SHAPES {
        for (seed, n) in [(1, 0), (2, 1), (3, 40), (4, 2000)] {
            let mut set = key_set(shape, seed, n);
            let mut m = build(&set);
            for round in 0..12 {
                let mut batch: BTreeMap<Vec<u8>, Option<u64>> = BTreeMap::new();
                let olds: Vec<Vec<u8>> = set.keys().cloned().collect();
                let size = 1 + rng.below(1 + set.len() as u64 / 3) as usize;
                for _ in 0..size {
                    let key = match (olds.is_empty(), rng.below(4)) {
                        (false, 0) => olds[rng.below(olds.len() as u64) as usize].clone(),
                        (false, 1) => {
                            let mut k = olds[rng.below(olds.len() as u64) as usize].clone();
                            if rng.below(2) == 0 {
                                k.push(rng.below(256) as u8);
                            } else {
                                k.pop();
                            }
                            k
                        }
                        _ => shape.gen_key(&mut rng),
                    };
                    let v = (rng.below(3) != 0).then(|| rng.next_u64());
                    batch.insert(key, v);
                }
                if round == 11 {
                    // Delete everything.
                    batch = set.keys().map(|k| (k.clone(), None)).collect();
                }
                let next = m.merged(batch.iter().map(|(k, v)| (k, *v))).unwrap();
                apply_batch(&mut set, &batch);
                let got: Vec<(Vec<u8>, u64)> = next.iter().collect();
                let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, v)| (k.clone(), *v)).collect();
                assert_eq!(got, want, "{shape:?} seed {seed} round {round}");
                assert_eq!(next.len(), set.len());
                let loaded = CompactArt::from_bytes(&next.to_bytes()).unwrap();
                assert_eq!(loaded, next);
                check_static(&next, &set, shape, seed + round, 60);
                m = next;
            }
        }
    }
    // Unsorted batches are refused.
    let m = CompactArt::from_sorted([("a", 1)]).unwrap();
    assert!(matches!(
        m.merged([("b", Some(1)), ("a", None)]),
        Err(Error::OutOfOrder { .. })
    ));
    assert!(matches!(
        m.merged([("b", Some(1)), ("b", None)]),
        Err(Error::DuplicateKey { .. })
    ));
}
