//! The FST built from a fuzzer-chosen key set against `BTreeMap`: the `testing` module's
//! `check_static` (gets of present, absent and neighbouring keys, cursors over ranges with
//! every bound kind, walked forward, backward or alternating) plus fuzzer-chosen gets, seeks
//! and range walks, iteration both ways, and a serialization round trip through `from_bytes`
//! and the zero-copy `from_shared`. Unique-prefix FSTs are checked for what they promise: each
//! key's `get` finds its value, and iteration yields each key's unique prefix in order.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::StaticMapBuilder;
use mlpdex::fst::{Config, Fst, FstBuilder, KeyStorage};
use mlpdex::key::Escaped;
use mlpdex::testing::{KeyShape, check_static};
use mlpdex_fuzz::{
    KeySpec, Pool, StaticQuery, check_static_map, check_static_queries, dense_ratio, key_set,
    key_storage, suffix_coding,
};

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<(KeySpec, u64)>,
    ratio: u8,
    unique: bool,
    coding: u8,
    seed: u64,
    queries: Vec<StaticQuery>,
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let oracle = key_set(&input.keys, &mut pool);
    let config = Config {
        dense_ratio: dense_ratio(input.ratio),
        keys: key_storage(input.unique),
        suffix_coding: suffix_coding(input.coding),
    };
    let mut b = FstBuilder::with_config(config);
    b.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))
        .expect("sorted distinct keys");
    let fst = b.finish().expect("finish");
    let what = format!("fst {config:?} of {} keys", oracle.len());

    let entries = check_static_map(&fst, &what);
    assert_eq!(fst.len(), oracle.len(), "{what}: len");
    match config.keys {
        KeyStorage::Complete => {
            let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
            assert!(
                entries == want,
                "{what}: iteration differs from the key set"
            );
            check_static(&fst, &oracle, KeyShape::Mixed, input.seed, 48);
            check_static_queries(&fst, &oracle, &input.queries, &mut pool, &what, |_, _| {});
        }
        KeyStorage::UniquePrefixes => {
            for ((p, pv), (k, v)) in entries.iter().zip(&oracle) {
                assert!(
                    k.starts_with(p) && pv == v,
                    "{what}: iterated {} => {pv} is not the unique prefix of {} => {v}",
                    Escaped(p),
                    Escaped(k)
                );
            }
            for (k, v) in &oracle {
                assert_eq!(
                    fst.get(k),
                    Some(*v),
                    "{what}: get({}) of a stored key",
                    Escaped(k)
                );
            }
        }
    }

    let img = fst.to_bytes();
    let copied = Fst::from_bytes(&img).expect("from_bytes of to_bytes");
    let shared = Fst::from_shared(img).expect("from_shared of to_bytes");
    assert!(
        copied == fst,
        "{what}: from_bytes(to_bytes) differs from the original"
    );
    assert!(
        shared == fst,
        "{what}: from_shared(to_bytes) differs from the original"
    );
    assert!(
        check_static_map(&shared, &what) == entries,
        "{what}: the loaded map iterates differently"
    );
});
