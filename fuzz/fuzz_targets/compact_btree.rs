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
use mlpdex::StaticMapBuilder;
use mlpdex::compact_btree::{CompactBTree, CompactBTreeBuilder, Config};
use mlpdex::key::show_bound;
use mlpdex::testing::{KeyShape, check_static};
use mlpdex_fuzz::{
    KeySpec, Mutation, Pool, StaticQuery, check_static_map, check_static_queries, key_set,
    load_both, mutate,
};

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<(KeySpec, u64)>,
    /// log2 of the keys per leaf, from 3.
    leaf: u8,
    seed: u64,
    queries: Vec<StaticQuery>,
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
    assert!(
        entries == want,
        "{what}: iteration differs from the key set"
    );
    check_static(&map, &oracle, KeyShape::Mixed, input.seed, 48);
    check_static_queries(
        &map,
        &oracle,
        &input.queries,
        &mut pool,
        &what,
        |b, want| {
            assert_eq!(
                map.lower_bound_value(b),
                want.as_ref().map(|e| e.1),
                "{what}: value"
            );
        },
    );

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
    mutate(
        &mut img,
        &input.mutations,
        !input.keep_bad_checksum || untouched,
    );
    let Some((copied, shared)) = load_both(
        &img,
        untouched,
        CompactBTree::from_bytes,
        CompactBTree::from_shared,
    ) else {
        return;
    };
    if untouched {
        assert!(
            copied == map,
            "{what}: an unmutated image loads a different map"
        );
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
            let want = loaded
                .iter()
                .find(|(k, _)| mlpdex::key::after_start(k, b))
                .cloned();
            assert_eq!(
                lo,
                want,
                "lower_bound({}) disagrees with the iteration",
                show_bound(b)
            );
            assert_eq!(
                copied.upper_bound(b),
                shared.upper_bound(b),
                "upper_bound disagrees"
            );
        }
    }
});
