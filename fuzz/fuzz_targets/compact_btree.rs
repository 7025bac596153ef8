//! The compact B-tree, built from a fuzzer-chosen key set, against `BTreeMap`, and its loader
//! on damaged images.
//!
//! 1. The built map: the `testing` module's `check_static` (gets of present, absent and
//!    neighbouring keys, cursors over ranges with every bound kind, walked forward, backward or
//!    alternating), fuzzer-chosen gets, seeks and range walks, and iteration both ways.
//! 2. Its image, mutated (byte edits, u64 field edits, truncation, splices, insertions,
//!    removals; by default with the checksum recomputed so the damage reaches the structural
//!    checks), or fuzzer bytes behind a valid magic and version, loaded through both
//!    `from_bytes` and the zero-copy `from_shared`: loading must not panic and both paths must
//!    agree; an untouched image loads as the map it came from; a map that loads must iterate
//!    strictly sorted with `len` entries, forward equal to reversed backward, with `get` and
//!    both seeks finding every iterated key, and answer probes alike through both paths.

#![no_main]

use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::compact_btree::{CompactBTree, CompactBTreeBuilder, Config};
use mlpdex::key::{Escaped, show_bound};
use mlpdex::testing::{KeyShape, check_static};
use mlpdex::StaticMapBuilder;
use mlpdex_fuzz::{
    BoundSpec, KeySpec, Mutation, Pool, WalkSpec, check_static_map, check_static_query, first_in, key_set,
    load_both, mutate,
};

#[derive(Arbitrary, Debug)]
enum Query {
    Get(KeySpec),
    LowerBound(BoundSpec),
    UpperBound(BoundSpec),
    Range(BoundSpec, BoundSpec, WalkSpec),
}

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<(KeySpec, u64)>,
    /// log2 of the keys per leaf, from 3.
    leaf: u8,
    seed: u64,
    queries: Vec<Query>,
    /// Fuzzer bytes behind the magic and version, instead of the built map's image.
    raw: Option<Vec<u8>>,
    mutations: Vec<Mutation>,
    keep_bad_checksum: bool,
    probes: Vec<KeySpec>,
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let oracle = key_set(&input.keys, &mut pool);
    let config = Config {
        leaf_keys: 1 << (3 + input.leaf % 6),
    };
    let mut b = CompactBTreeBuilder::with_config(config).expect("valid leaf size");
    b.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))
        .expect("sorted distinct keys");
    let map = b.finish().expect("finish");
    let what = format!("compact B-tree {config:?} of {} keys", oracle.len());

    let entries = check_static_map(&map, &what);
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert!(entries == want, "{what}: iteration differs from the key set");
    check_static(&map, &oracle, KeyShape::Mixed, input.seed, 48);
    for q in input.queries.iter().take(64) {
        match q {
            Query::Get(k) => {
                let k = k.make(&mut pool);
                assert_eq!(map.get(&k), oracle.get(&k).copied(), "{what}: get({})", Escaped(&k));
            }
            Query::LowerBound(b) => {
                let b = b.make(&mut pool);
                let b = b.as_ref().map(Vec::as_slice);
                let want = first_in(&oracle, b, Bound::Unbounded, false);
                assert_eq!(map.lower_bound(b), want, "{what}: lower_bound({})", show_bound(b));
                assert_eq!(map.lower_bound_value(b), want.map(|e| e.1), "{what}: value");
            }
            Query::UpperBound(b) => {
                let b = b.make(&mut pool);
                let b = b.as_ref().map(Vec::as_slice);
                let want = first_in(&oracle, Bound::Unbounded, b, true);
                assert_eq!(map.upper_bound(b), want, "{what}: upper_bound({})", show_bound(b));
            }
            Query::Range(lo, hi, walk) => {
                let (lo, hi) = (lo.make(&mut pool), hi.make(&mut pool));
                let (lo, hi) = (lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice));
                check_static_query(&map, &oracle, lo, hi, *walk, &what);
            }
        }
    }

    let mut img = match &input.raw {
        None => map.to_bytes(),
        Some(bytes) => {
            let mut img = b"MLPDXCBT".to_vec();
            img.extend_from_slice(&1u32.to_le_bytes());
            img.extend_from_slice(bytes);
            img
        }
    };
    let untouched = input.raw.is_none() && input.mutations.is_empty();
    mutate(&mut img, &input.mutations, !input.keep_bad_checksum || untouched);
    let Some((copied, shared)) =
        load_both(&img, untouched, CompactBTree::from_bytes, CompactBTree::from_shared)
    else {
        return;
    };
    if untouched {
        assert!(copied == map, "{what}: an unmutated image loads a different map");
    }
    let loaded = check_static_map(&copied, "from_bytes");
    assert!(
        check_static_map(&shared, "from_shared") == loaded,
        "from_bytes and from_shared iterate differently"
    );
    for p in input.probes.iter().take(16) {
        let p = p.make(&mut pool);
        assert_eq!(copied.get(&p), shared.get(&p), "get disagrees");
        for b in [Bound::Included(p.as_slice()), Bound::Excluded(p.as_slice())] {
            let lo = copied.lower_bound(b);
            assert_eq!(lo, shared.lower_bound(b), "lower_bound disagrees");
            let want = loaded.iter().find(|(k, _)| mlpdex::key::after_start(k, b)).cloned();
            assert_eq!(lo, want, "lower_bound({}) disagrees with the iteration", show_bound(b));
            assert_eq!(copied.upper_bound(b), shared.upper_bound(b), "upper_bound disagrees");
        }
    }
});
