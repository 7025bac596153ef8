//! The HOPE dictionary loader on damaged images: a valid dictionary of a fuzzer-chosen scheme
//! and sample (or fuzzer bytes behind a valid magic and version) is mutated, its checksum
//! recomputed so the damage reaches the boundary and code-length checks, and loaded with
//! `Encoder::from_bytes`. Loading must not panic; a loaded encoder must keep its promise that
//! it can never mis-encode: on fuzzer-chosen keys and their neighbours, order is preserved and
//! `decode(encode(k)) = k`; decoding arbitrary bytes never panics; and the loaded dictionary
//! survives another `to_bytes`/`from_bytes`.

#![no_main]

use std::collections::BTreeSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::hope::{Encoder, Scheme};
use mlpdex::key::Escaped;
use mlpdex_fuzz::{KeySpec, Mutation, Pool, mutate};

#[derive(Arbitrary, Debug)]
enum Source {
    Built {
        scheme: u8,
        limit: u16,
        sample: Vec<KeySpec>,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    source: Source,
    mutations: Vec<Mutation>,
    keep_bad_checksum: bool,
    probes: Vec<KeySpec>,
    encoded: Vec<Vec<u8>>,
}

fuzz_target!(|input: Input| {
    let mut pool = Pool::default();
    let (mut img, built) = match &input.source {
        Source::Built {
            scheme,
            limit,
            sample,
        } => {
            // The Double-Char dictionary (65,793 entries) is left to the `hope` target: its
            // image is too large to mutate usefully a few bytes at a time.
            let schemes = [
                Scheme::SingleChar,
                Scheme::ThreeGrams,
                Scheme::FourGrams,
                Scheme::Alm,
                Scheme::AlmImproved,
            ];
            let scheme = schemes[usize::from(*scheme) % schemes.len()];
            let sample: Vec<Vec<u8>> = sample.iter().take(100).map(|k| k.make(&mut pool)).collect();
            let enc = Encoder::build_with_limit(scheme, &sample, 257 + usize::from(limit % 512))
                .expect("a limit of at least 257");
            (enc.to_bytes(), Some(enc))
        }
        Source::Raw(bytes) => {
            let mut img = b"MLPDHOPE".to_vec();
            img.extend_from_slice(&1u32.to_le_bytes());
            img.extend_from_slice(bytes);
            (img, None)
        }
    };
    let untouched = input.mutations.is_empty();
    mutate(
        &mut img,
        &input.mutations,
        !input.keep_bad_checksum || untouched,
    );

    let enc = match Encoder::from_bytes(&img) {
        Ok(enc) => enc,
        Err(e) => {
            if let (Some(_), true) = (&built, untouched) {
                panic!("a valid dictionary, unmutated, fails to load: {e}");
            }
            return;
        }
    };
    if let (Some(orig), true) = (&built, untouched) {
        assert!(
            &enc == orig,
            "an unmutated dictionary loads a different encoder"
        );
    }

    let mut keys: BTreeSet<Vec<u8>> = BTreeSet::new();
    keys.insert(Vec::new());
    for k in input.probes.iter().take(32) {
        let k = k.make(&mut pool);
        let mut up = k.clone();
        up.push(0xff);
        keys.insert(up);
        keys.insert(k);
    }
    let keys: Vec<Vec<u8>> = keys.into_iter().collect();
    let codes: Vec<Vec<u8>> = keys.iter().map(|k| enc.encode(k)).collect();
    for (k, c) in keys.iter().zip(&codes) {
        match enc.decode(c) {
            Ok(d) if d == *k => {}
            other => panic!(
                "loaded {:?} dictionary: decode(encode({})) = {other:?}",
                enc.scheme(),
                Escaped(k)
            ),
        }
    }
    for (i, w) in codes.windows(2).enumerate() {
        assert!(
            w[0] < w[1],
            "loaded {:?} dictionary: order not preserved: {} < {} but their encodings are {} and {}",
            enc.scheme(),
            Escaped(&keys[i]),
            Escaped(&keys[i + 1]),
            Escaped(&w[0]),
            Escaped(&w[1])
        );
    }
    for e in input.encoded.iter().take(16) {
        if let Ok(k) = enc.decode(e) {
            assert!(
                enc.encode(&k) == *e,
                "decode({}) is not inverted by encode",
                Escaped(e)
            );
        }
    }
    let again =
        Encoder::from_bytes(&enc.to_bytes()).expect("from_bytes of a loaded dictionary's to_bytes");
    assert!(
        again == enc,
        "a loaded dictionary changes through to_bytes/from_bytes"
    );
});
