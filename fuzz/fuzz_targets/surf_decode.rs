//! The SuRF loader on damaged images: a valid image of a fuzzer-chosen kind and key set (or
//! fuzzer bytes behind a valid magic and version) is mutated, its checksum recomputed, and
//! loaded through both `Surf::from_bytes` and the zero-copy `Surf::from_shared`. Loading must
//! not panic and both paths must agree; a loaded filter's cursor must visit strictly sorted
//! prefixes, at most `len` of them, forward equal to reversed backward, and the filter must
//! admit every visited key (`may_contain` for kinds without hash bits, a range from it for
//! all) and answer probes alike through both paths.

#![no_main]

use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::surf::{Surf, SurfBuilder, SurfKind};
use mlpdex_fuzz::{
    KeySpec, Mutation, Oracle, Pool, check_surf, check_surf_keys, dense_ratio, fst_format_version,
    graft, load_both, mutate, surf_kind,
};

#[derive(Arbitrary, Debug)]
enum Source {
    Built {
        keys: Vec<KeySpec>,
        kind: (u8, u8, u8),
        ratio: u8,
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

/// The key set of `keys` (values unused).
fn key_set(keys: &[KeySpec], pool: &mut Pool) -> Oracle {
    keys.iter()
        .take(mlpdex_fuzz::MAX_KEYS)
        .map(|k| (k.make(pool), 0))
        .collect()
}

fn build(keys: &Oracle, kind: SurfKind, ratio: u32) -> Surf {
    let mut b = SurfBuilder::with_dense_ratio(kind, ratio).expect("a valid kind");
    for k in keys.keys() {
        b.push(k).expect("sorted distinct keys");
    }
    b.finish().expect("finish")
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let mut grafted = false;
    let (mut img, built) = match &input.source {
        Source::Built { keys, kind, ratio } => {
            let oracle = key_set(keys, &mut pool);
            let kind = surf_kind(kind.0, kind.1, kind.2);
            let ratio = dense_ratio(*ratio);
            let surf = build(&oracle, kind, ratio);
            let mut img = surf.to_bytes();
            if let Some((donor, which)) = &input.donor {
                let donor = build(&key_set(donor, &mut pool), kind, ratio).to_bytes();
                graft(&mut img, &donor, which);
                grafted = !which.is_empty();
            }
            (img, Some((surf, oracle)))
        }
        Source::Raw(bytes) => {
            let mut img = b"MLPDSURF".to_vec();
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
    let Some((copied, shared)) = load_both(&img, must_load, Surf::from_bytes, Surf::from_shared)
    else {
        return;
    };
    if let (Some((orig, oracle)), true) = (&built, untouched) {
        assert!(
            &copied == orig,
            "an unmutated image loads a different filter"
        );
        check_surf_keys(&copied, oracle, "unmutated image");
    }
    let visited = check_surf(&copied, "from_bytes");
    assert!(
        check_surf(&shared, "from_shared") == visited,
        "from_bytes and from_shared visit differently"
    );
    for p in input.probes.iter().take(16) {
        let p = p.make(&mut pool);
        assert_eq!(
            copied.may_contain(&p),
            shared.may_contain(&p),
            "may_contain disagrees"
        );
        for r in [
            (Bound::Included(p.as_slice()), Bound::Unbounded),
            (Bound::Unbounded, Bound::Excluded(p.as_slice())),
        ] {
            assert_eq!(
                copied.may_contain_range(r),
                shared.may_contain_range(r),
                "may_contain_range disagrees"
            );
            assert_eq!(
                copied.approx_count(r),
                shared.approx_count(r),
                "approx_count disagrees"
            );
        }
    }
});
