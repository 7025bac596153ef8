//! The compact ART, built from a fuzzer-chosen key set, against `BTreeMap`, and its loader on
//! damaged images.
//!
//! 1. The built map: the `testing` module's `check_static` (gets of present, absent and
//!    neighbouring keys, cursors over ranges with every bound kind, walked forward, backward or
//!    alternating), fuzzer-chosen gets, seeks and range walks, and iteration both ways. Besides
//!    the `KeySpec` keys, an input may fan one prefix out over up to 256 child bytes with
//!    suffixes of 0 to 60 bytes, so Linear, Bitmap and Full nodes and every record width
//!    (inline leaves and out-of-line ones) occur.
//! 2. Its image, mutated (byte edits, u64 field edits, truncation, splices, insertions,
//!    removals; by default with the checksum recomputed so the damage reaches the structural
//!    checks), or fuzzer bytes behind a valid magic and version, loaded through both
//!    `from_bytes` and the zero-copy `from_shared`: loading must not panic and both paths must
//!    agree; an untouched image loads as the map it came from; a map that loads must iterate
//!    strictly sorted with `len` entries, forward equal to reversed backward, with `get` and
//!    both seeks finding every iterated key, and answer probes alike through both paths and
//!    as its iteration says.
//! 3. A fuzzer-chosen batch of updates (inserts, updates, deletes) applied by `merged`, the
//!    trie merge: the result equals the key set with the batch applied, passes
//!    `check_static`, and its image loads back equal (the loader's audit accepts it).

#![no_main]

use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::StaticMapBuilder;
use mlpdex::compact_art::{CompactArt, CompactArtBuilder};
use mlpdex::key::show_bound;
use mlpdex::testing::{KeyShape, check_static};
use mlpdex_fuzz::{
    KeySpec, Mutation, Pool, StaticQuery, check_static_map, check_static_queries, key_set,
    load_both, mutate,
};

/// Keys below one prefix on many child bytes: `count + 1` bytes from `first`, `step` apart
/// (wrapping; repeats collapse), each followed by a suffix whose length cycles from `tail`
/// through 0..=60.
#[derive(Arbitrary, Debug)]
struct Fan {
    prefix: KeySpec,
    first: u8,
    step: u8,
    count: u8,
    tail: u8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<(KeySpec, u64)>,
    fan: Option<Fan>,
    seed: u64,
    queries: Vec<StaticQuery>,
    /// Fuzzer bytes behind the magic and version, instead of the built map's image.
    raw: Option<Vec<u8>>,
    mutations: Vec<Mutation>,
    keep_bad_checksum: bool,
    probes: Vec<KeySpec>,
    /// A batch of updates (`None` deletes) applied with `merged`.
    updates: Vec<(KeySpec, Option<u64>)>,
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let mut oracle = key_set(&input.keys, &mut pool);
    if let Some(fan) = &input.fan {
        let prefix = fan.prefix.make(&mut pool);
        for i in 0..=fan.count as usize {
            let b = fan.first.wrapping_add((i as u8).wrapping_mul(fan.step));
            let len = (fan.tail as usize + 7 * i) % 61;
            let mut k = prefix.clone();
            k.push(b);
            k.extend((0..len).map(|j| [0x00, 0xFF, b'a', i as u8][j % 4]));
            oracle.insert(k, 1_000_000 + i as u64);
        }
    }
    let mut b = CompactArtBuilder::new();
    b.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))
        .expect("sorted distinct keys");
    let map = b.finish().expect("finish");
    let what = format!("compact ART of {} keys", oracle.len());

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

    // The batch, applied by the trie merge, against the oracle with the batch applied.
    if !input.updates.is_empty() {
        let mut batch = std::collections::BTreeMap::new();
        for (k, v) in &input.updates {
            batch.insert(k.make(&mut pool), *v);
        }
        let merged = map
            .merged(batch.iter().map(|(k, v)| (k, *v)))
            .expect("a sorted batch merges");
        let mut after = oracle.clone();
        for (k, v) in &batch {
            match v {
                Some(v) => after.insert(k.clone(), *v),
                None => after.remove(k),
            };
        }
        let got = check_static_map(&merged, "merged");
        let want: Vec<(Vec<u8>, u64)> = after.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert!(got == want, "merged differs from the batch applied");
        check_static(&merged, &after, KeyShape::Mixed, input.seed ^ 1, 24);
        assert!(
            CompactArt::from_bytes(&merged.to_bytes()).as_ref() == Ok(&merged),
            "a merged map's image does not load back equal"
        );
    }

    let mut img = match &input.raw {
        None => map.to_bytes(),
        Some(bytes) => {
            // The built image's magic and version, whatever version the crate writes.
            let mut img = map.to_bytes();
            img.truncate(12);
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
        CompactArt::from_bytes,
        CompactArt::from_shared,
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
            let hi = copied.upper_bound(b);
            assert_eq!(hi, shared.upper_bound(b), "upper_bound disagrees");
            let want = loaded
                .iter()
                .rev()
                .find(|(k, _)| mlpdex::key::before_end(k, b))
                .cloned();
            assert_eq!(
                hi,
                want,
                "upper_bound({}) disagrees with the iteration",
                show_bound(b)
            );
        }
    }
});
