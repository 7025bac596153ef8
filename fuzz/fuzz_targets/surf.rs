//! SuRF built from a fuzzer-chosen key set, of every kind (Base, Hash, Real, Mixed with
//! fuzzer-chosen bit counts) and dense ratio: no false negative for any stored key (points, the
//! point as a range, ranges starting or ending at it, seeks landing on its leaf, the batch
//! forms), no false negative for fuzzer-chosen ranges holding stored keys and `approx_count`
//! within its documented error, the cursor visiting each key's unique prefix in order both
//! ways, and a serialization round trip through `from_bytes` and `from_shared`.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::RangeFilter;
use mlpdex::key::Escaped;
use mlpdex::surf::{Surf, SurfBuilder};
use mlpdex_fuzz::{
    BoundSpec, KeySpec, Pool, check_surf, check_surf_keys, check_surf_range, dense_ratio, surf_kind,
};

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<KeySpec>,
    kind: (u8, u8, u8),
    ratio: u8,
    ranges: Vec<(BoundSpec, BoundSpec)>,
    probes: Vec<KeySpec>,
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let oracle: mlpdex_fuzz::Oracle = input
        .keys
        .iter()
        .take(mlpdex_fuzz::MAX_KEYS)
        .map(|k| (k.make(&mut pool), 0))
        .collect();
    let kind = surf_kind(input.kind.0, input.kind.1, input.kind.2);
    let ratio = dense_ratio(input.ratio);
    let mut b = SurfBuilder::with_dense_ratio(kind, ratio).expect("a valid kind");
    for k in oracle.keys() {
        b.push(k).expect("sorted distinct keys");
    }
    let surf = b.finish().expect("finish");
    let what = format!("surf {kind:?} ratio {ratio} of {} keys", oracle.len());

    assert_eq!(surf.len(), oracle.len(), "{what}: len");
    check_surf_keys(&surf, &oracle, &what);
    let visited = check_surf(&surf, &what);
    let stored: Vec<&Vec<u8>> = oracle.keys().filter(|k| !k.is_empty()).collect();
    assert_eq!(
        visited.len(),
        stored.len(),
        "{what}: the cursor visits other than the non-empty keys"
    );
    for (p, k) in visited.iter().zip(&stored) {
        assert!(
            k.starts_with(p),
            "{what}: visited {} is not a prefix of the stored key {}",
            Escaped(p),
            Escaped(k)
        );
    }
    for (lo, hi) in input.ranges.iter().take(32) {
        let (lo, hi) = (lo.make(&mut pool), hi.make(&mut pool));
        let (lo, hi) = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        check_surf_range(&surf, &oracle, lo, hi, &what);
    }
    let probes: Vec<Vec<u8>> = input
        .probes
        .iter()
        .take(32)
        .map(|k| k.make(&mut pool))
        .collect();
    let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    let mut batch = vec![false; refs.len()];
    surf.may_contain_batch(&refs, &mut batch);
    for (p, b) in refs.iter().zip(&batch) {
        let one = surf.may_contain(p);
        assert_eq!(
            one,
            *b,
            "{what}: may_contain({}) and its batch form disagree",
            Escaped(p)
        );
        assert!(
            one || !oracle.contains_key(*p),
            "{what}: false negative on {}",
            Escaped(p)
        );
    }

    let img = surf.to_bytes();
    let copied = Surf::from_bytes(&img).expect("from_bytes of to_bytes");
    let shared = Surf::from_shared(img).expect("from_shared of to_bytes");
    assert!(
        copied == surf,
        "{what}: from_bytes(to_bytes) differs from the original"
    );
    assert!(
        shared == surf,
        "{what}: from_shared(to_bytes) differs from the original"
    );
    assert!(
        check_surf(&shared, &what) == visited,
        "{what}: the loaded filter visits differently"
    );
    let _ = RangeFilter::memory_usage(&shared);
});
