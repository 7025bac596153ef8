//! The FST loader on damaged images: a valid image built from fuzzer-chosen keys (or fuzzer
//! bytes behind a valid magic and version) is mutated (byte edits, u64 field edits, truncation,
//! splices, insertions, removals), its checksum recomputed so the damage reaches the
//! structural validation, and loaded through both `Fst::from_bytes` and the zero-copy
//! `Fst::from_shared`. Loading must not panic and both paths must agree; a loaded map must
//! iterate strictly sorted with `len` entries, forward equal to reversed backward, with `get`
//! and both seeks finding every iterated key and its value, and answer probe queries alike
//! through both paths.

#![no_main]

use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::StaticMapBuilder;
use mlpdex::fst::{Config, Fst, FstBuilder};
use mlpdex_fuzz::{
    KeySpec, Mutation, Oracle, Pool, check_static_map, dense_ratio, fst_format_version, graft,
    key_set, key_storage, load_both, mutate, suffix_coding,
};

#[derive(Arbitrary, Debug)]
enum Source {
    Built {
        keys: Vec<(KeySpec, u64)>,
        ratio: u8,
        unique: bool,
        coding: u8,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    source: Source,
    /// Keys of a second image, built with the same settings, whose sections `graft` crosses
    /// into the first one (section indices in the second field).
    donor: Option<(Vec<KeySpec>, Vec<u8>)>,
    mutations: Vec<Mutation>,
    keep_bad_checksum: bool,
    probes: Vec<KeySpec>,
}

fn build(keys: &Oracle, config: Config) -> Fst {
    let mut b = FstBuilder::with_config(config);
    b.extend_sorted(keys.iter().map(|(k, v)| (k, *v)))
        .expect("sorted distinct keys");
    b.finish().expect("finish")
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let mut grafted = false;
    let (mut img, built) = match &input.source {
        Source::Built {
            keys,
            ratio,
            unique,
            coding,
        } => {
            let config = Config {
                dense_ratio: dense_ratio(*ratio),
                keys: key_storage(*unique),
                suffix_coding: suffix_coding(*coding),
            };
            let fst = build(&key_set(keys, &mut pool), config);
            let mut img = fst.to_bytes();
            if let Some((donor, which)) = &input.donor {
                let donor: Vec<(KeySpec, u64)> = donor.iter().cloned().zip(100..).collect();
                let donor = build(&key_set(&donor, &mut pool), config).to_bytes();
                graft(&mut img, &donor, which);
                grafted = !which.is_empty();
            }
            (img, Some(fst))
        }
        Source::Raw(bytes) => {
            let mut img = b"MLPDXFST".to_vec();
            img.extend_from_slice(&fst_format_version());
            img.extend_from_slice(bytes);
            (img, None)
        }
    };
    let untouched = input.mutations.is_empty() && !grafted;
    mutate(
        &mut img,
        &input.mutations,
        !input.keep_bad_checksum || untouched,
    );

    let must_load = built.is_some() && untouched;
    let Some((copied, shared)) = load_both(&img, must_load, Fst::from_bytes, Fst::from_shared)
    else {
        return;
    };
    if let (Some(orig), true) = (&built, untouched) {
        assert!(&copied == orig, "an unmutated image loads a different map");
    }
    let entries = check_static_map(&copied, "from_bytes");
    assert!(
        check_static_map(&shared, "from_shared") == entries,
        "from_bytes and from_shared iterate differently"
    );
    for p in input.probes.iter().take(16) {
        let p = p.make(&mut pool);
        assert_eq!(copied.get(&p), shared.get(&p), "get disagrees");
        for b in [Bound::Included(p.as_slice()), Bound::Excluded(p.as_slice())] {
            assert_eq!(
                copied.lower_bound(b),
                shared.lower_bound(b),
                "lower_bound disagrees"
            );
            assert_eq!(
                copied.upper_bound(b),
                shared.upper_bound(b),
                "upper_bound disagrees"
            );
        }
    }
});
