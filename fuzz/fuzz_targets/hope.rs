//! HOPE encoders of every scheme, built from a fuzzer-chosen sample with a fuzzer-chosen entry
//! limit: for the sample keys, fuzzer-chosen probes and their neighbours, order is preserved
//! (`a < b` ⇔ `enc(a) < enc(b)`, checked on the sorted distinct probes), `decode(encode(k)) = k`,
//! `encode_batch` equals `encode`, the dictionary survives `to_bytes`/`from_bytes`, and decoding
//! arbitrary bytes never panics and, when it succeeds, inverts `encode`. Some inputs also drive
//! the `Hope` wrapper: over an FST through `check_static`, or over the skip list through
//! `run_ops_concurrent`.

#![no_main]

use std::collections::BTreeSet;
use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::StaticMapBuilder;
use mlpdex::fst::FstBuilder;
use mlpdex::hope::{Encoder, Hope, HopeBuilder, Scheme};
use mlpdex::key::Escaped;
use mlpdex::skiplist::SkipList;
use mlpdex::testing::{KeyShape, check_static, run_ops_concurrent};
use mlpdex_fuzz::{KeySpec, OpSpec, Oracle, Pool, map_ops, report};

#[derive(Arbitrary, Debug)]
enum Wrap {
    None,
    Fst(u64),
    SkipList(Vec<OpSpec>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    scheme: u8,
    limit: u16,
    sample: Vec<KeySpec>,
    probes: Vec<KeySpec>,
    block: u8,
    encoded: Vec<Vec<u8>>,
    wrap: Wrap,
}

fuzz_target!(|input: Input| {
    // Double-Char's dictionary has 65,793 entries and takes milliseconds to build: one input
    // in sixteen uses it, the others spread over the remaining schemes.
    let scheme = match input.scheme % 16 {
        15 => Scheme::DoubleChar,
        s => [
            Scheme::SingleChar,
            Scheme::ThreeGrams,
            Scheme::FourGrams,
            Scheme::Alm,
            Scheme::AlmImproved,
        ][usize::from(s) % 5],
    };
    let limit = 257 + usize::from(input.limit % 2048);
    let mut pool = Pool::default();
    let sample: Vec<Vec<u8>> = input
        .sample
        .iter()
        .take(200)
        .map(|k| k.make(&mut pool))
        .collect();
    let enc = Encoder::build_with_limit(scheme, &sample, limit).expect("a limit of at least 257");
    let what = format!("hope {scheme:?} limit {limit}, sample of {}", sample.len());

    let mut keys: BTreeSet<Vec<u8>> = sample.iter().cloned().collect();
    for k in input.probes.iter().take(64) {
        let k = k.make(&mut pool);
        let mut up = k.clone();
        up.push(0);
        keys.insert(up);
        if let Some(short) = k.get(..k.len().saturating_sub(1)) {
            keys.insert(short.to_vec());
        }
        keys.insert(k);
    }
    keys.insert(Vec::new());
    let keys: Vec<Vec<u8>> = keys.into_iter().collect();
    let codes: Vec<Vec<u8>> = keys.iter().map(|k| enc.encode(k)).collect();
    for (k, c) in keys.iter().zip(&codes) {
        match enc.decode(c) {
            Ok(d) if d == *k => {}
            other => panic!("{what}: decode(encode({})) = {other:?}", Escaped(k)),
        }
    }
    for (i, w) in codes.windows(2).enumerate() {
        assert!(
            w[0] < w[1],
            "{what}: order not preserved: {} < {} but their encodings are {} and {}",
            Escaped(&keys[i]),
            Escaped(&keys[i + 1]),
            Escaped(&w[0]),
            Escaped(&w[1])
        );
    }
    let mut batch = Vec::new();
    enc.encode_batch(&keys, usize::from(input.block), &mut batch);
    assert!(batch == codes, "{what}: encode_batch differs from encode");

    let img = enc.to_bytes();
    let loaded = Encoder::from_bytes(&img).expect("from_bytes of to_bytes");
    assert!(
        loaded == enc,
        "{what}: from_bytes(to_bytes) differs from the original"
    );

    for e in input.encoded.iter().take(16) {
        if let Ok(k) = enc.decode(e) {
            assert!(
                enc.encode(&k) == *e,
                "{what}: decode({}) is not inverted by encode",
                Escaped(e)
            );
        }
    }

    let enc = Arc::new(enc);
    match &input.wrap {
        Wrap::None => {}
        Wrap::Fst(seed) => {
            let oracle: Oracle = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), i as u64))
                .collect();
            let mut b = HopeBuilder::new(Arc::clone(&enc), FstBuilder::new());
            b.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))
                .expect("order preserved");
            let map = b.finish().expect("finish");
            check_static(&map, &oracle, KeyShape::Mixed, *seed, 48);
        }
        Wrap::SkipList(ops) => {
            let ops = map_ops(ops);
            let map = Hope::new(Arc::clone(&enc), SkipList::<u64>::new());
            if let Err(e) = run_ops_concurrent(&map, &ops) {
                report("hope over skiplist", &ops, &format!("{what}\n{e}"));
            }
        }
    }
});
