//! Integration tests of [`mlpdex::hope`], the order-preserving key encoder, and of the [`Hope`]
//! wrapper, through the public API
//! (`cargo test -p mlpdex --release --test hope`).
//!
//! Encoders are built for every [`Scheme`] × dictionary limit (257, 1000, 65,536; the
//! fixed-interval schemes ignore the limit) from ten samples: empty, e-mail-like keys (random
//! users, a few frequent hosts), strings over a five-letter alphabet with 0x00/0xFF, and every
//! [`KeyShape`]. They are built once and shared by the tests.
//!
//! 1. **Order preservation**: for adversarial keys (empty, 0x00/0xFF runs, multi-KiB keys,
//!    bytes no sample holds, prefix pairs, shared prefixes, and every dictionary boundary with
//!    its one-byte neighbours) sorted, the encodings strictly increase, and random pairs give
//!    `a.cmp(b) == enc(a).cmp(enc(b))`; exhaustively, every pair of strings of length ≤ 3 over
//!    {0x00, 0x01, `a`, 0xFE, 0xFF}; and a proptest over `arb_key` pairs built to share
//!    prefixes, be prefixes of each other, or differ by one byte. `encode_into` appends exactly
//!    `encode`'s bytes and reports their bit length.
//! 2. **Decoding**: `decode(encode(k)) == k` for all of the above; damaged encodings
//!    (truncations, one extra byte, single-bit flips of short encodings, random bytes) never
//!    panic, truncations and extra bytes are `Error::Format`, and a damaged encoding that
//!    decodes must not decode to the original key and must be the encoding of what it
//!    decodes to.
//! 3. **Batch encoding**: `encode_batch` of sorted lists (long shared prefixes, 0x00/0xFF
//!    runs, e-mails, every shape) with block sizes 0, 1, 2, 7, 64 and more than the list
//!    equals per-key `encode`, appended after what `out` held.
//! 4. **Serialization**: `from_bytes(to_bytes(e)) == e`, encodes identically and writes the
//!    same image; every truncation is `Error::Format`; byte flips (checksum left stale) and
//!    damage with a recomputed checksum load as an error or as an encoder that still
//!    preserves order and round-trips on a probe set (never a panic); wrong magic, version,
//!    scheme, reserved bytes and crafted structural damage (unsorted or missing boundaries,
//!    non-alphabetic code lengths, wrong counts, fixed-interval images with other
//!    boundaries) are typed errors.
//! 5. **Build errors**: a limit below 257 for a limited scheme is `Error::InvalidConfig`; the
//!    fixed-interval schemes ignore the limit; scheme names round-trip.
//! 6. **Wrappers against the `BTreeMap` oracle**: `HopeBuilder<FstBuilder>` → `Hope<Fst>`
//!    through `check_static` for every shape and scheme (cursor keys come back decoded);
//!    `Hope<Surf>` over encoded sorted keys has no false negatives for points and ranges with
//!    every bound kind (and `approx_count` within SuRF's error); `Hope<CuckooTrie<u64>>`
//!    through [`EncodedMap`] in a long random differential run (inserts, removes, gets, seeks,
//!    ranges walked from both ends, clears), keys decoded; `Hope<SkipList<u64>>` and
//!    `Hope<ConcurrentCuckooTrie<u64>>` through `ConcurrentOrderedMap` with the driver's
//!    `differential_concurrent`, the edge-case harnesses, the quick `concurrent::stress`
//!    plans, and a 4-thread run on disjoint keys whose final content must equal the oracle.
//!
//! The code assigner's own tests (`optimal_lengths` against the O(n³) interval DP,
//! `canonical_codes` on valid and broken lengths) are unit tests in `src/hope/code.rs`: the
//! module is crate-private.
//!
//! No test asserts on timing. The whole file takes about 15 s with `--release` on 2 cores.
//!
//! Three tests pin bugs this file found and that are fixed: `decode` accepted code sequences
//! the encoder never produces (`damaged_encodings_never_decode_to_the_original_key`,
//! `decode_accepts_a_second_encoding_of_a_key`), and `from_bytes` accepted a Double-Char image
//! whose boundaries were not the fixed ones
//! (`fixed_interval_images_with_other_boundaries_are_rejected`).

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, CuckooTrie};
use mlpdex::fst::{Fst, FstBuilder};
use mlpdex::hope::{DEFAULT_LIMIT, EncodedMap, Encoder, Hope, HopeBuilder, Scheme};
use mlpdex::key::{Escaped, is_empty_range};
use mlpdex::skiplist::SkipList;
use mlpdex::surf::{SurfBuilder, SurfKind};
use mlpdex::testing::concurrent::{self, Plan, Sharing, Subject, entries, entries_rev};
use mlpdex::testing::{KeyShape, TestRng, check_static, differential_concurrent, reseal};
use mlpdex::{ConcurrentOrderedMap, Error, RangeFilter};

// ---------------------------------------------------------------------------------------------
// Samples, encoders and probe keys
// ---------------------------------------------------------------------------------------------

const LIMITS: [usize; 3] = [257, 1000, 65_536];

/// The alphabet of the exhaustive test, and of one sample.
const ALPHABET: [u8; 5] = [0x00, 0x01, b'a', 0xFE, 0xFF];

/// An e-mail-like key: a random user and one of a few frequent hosts (sometimes a rare one).
fn email(rng: &mut TestRng) -> Vec<u8> {
    const HOSTS: [&[u8]; 5] = [
        b"@gmail.com",
        b"@gmail.com",
        b"@yahoo.com",
        b"@hotmail.com",
        b"@cs.cmu.edu",
    ];
    let n = 3 + rng.index(10);
    let mut k: Vec<u8> = (0..n)
        .map(|_| match rng.below(10) {
            0 => b'0' + rng.below(10) as u8,
            1 => b'.',
            _ => b'a' + rng.below(26) as u8,
        })
        .collect();
    if rng.chance(0.05) {
        k.push(b'@');
        k.extend((0..3 + rng.index(6)).map(|_| b'a' + rng.below(26) as u8));
        k.extend_from_slice(b".org");
    } else {
        k.extend_from_slice(HOSTS[rng.index(HOSTS.len())]);
    }
    k
}

fn alphabet_key(rng: &mut TestRng) -> Vec<u8> {
    (0..rng.index(9)).map(|_| *rng.pick(&ALPHABET)).collect()
}

/// The dictionary samples: name and keys.
fn samples() -> Vec<(String, Vec<Vec<u8>>)> {
    let mut rng = TestRng::new(0x5A3D);
    let mut out = vec![
        ("empty".to_string(), Vec::new()),
        (
            "email".to_string(),
            (0..3000).map(|_| email(&mut rng)).collect(),
        ),
        (
            "alphabet".to_string(),
            (0..2000).map(|_| alphabet_key(&mut rng)).collect(),
        ),
    ];
    for shape in [
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::Long,
        KeyShape::U64,
        KeyShape::Mixed,
    ] {
        // Multi-KiB keys: a few dozen make a sample of hundreds of KiB.
        let n = if shape == KeyShape::Long { 30 } else { 2000 };
        out.push((
            format!("{shape:?}"),
            (0..n).map(|_| shape.gen_key(&mut rng)).collect(),
        ));
    }
    out
}

/// One encoder of the shared set, with how it was built.
struct Case {
    label: String,
    scheme: Scheme,
    limit: usize,
    enc: Arc<Encoder>,
}

/// Every scheme × limit × sample, built once per test binary.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let mut out = Vec::new();
        for (name, sample) in samples() {
            for scheme in Scheme::ALL {
                let limits: &[usize] = if scheme.has_limit() {
                    &LIMITS
                } else {
                    &[DEFAULT_LIMIT]
                };
                for &limit in limits {
                    let enc =
                        Encoder::build_with_limit(scheme, &sample, limit).unwrap_or_else(|e| {
                            panic!("build {} limit {limit} sample {name}: {e}", scheme.name())
                        });
                    assert_eq!(enc.scheme(), scheme);
                    if scheme.has_limit() {
                        assert!(enc.entries() <= limit, "{name} {scheme:?} {limit}");
                    }
                    out.push(Case {
                        label: format!("{} limit {limit} sample {name}", scheme.name()),
                        scheme,
                        limit,
                        enc: Arc::new(enc),
                    });
                }
            }
        }
        out
    })
}

/// The dictionary's interval boundaries, read from its documented serialized form (24-byte
/// header, then per interval a length byte, the boundary and its code length).
fn boundaries(enc: &Encoder) -> Vec<Vec<u8>> {
    let img = enc.to_bytes();
    let n = u64::from_le_bytes(img[16..24].try_into().unwrap()) as usize;
    let mut at = 24;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let l = usize::from(img[at]);
        out.push(img[at + 1..at + 1 + l].to_vec());
        at += 2 + l;
    }
    assert_eq!(at, img.len() - 8, "image layout");
    out
}

/// Keys next to `b`: itself, one byte longer (0x00, 0xFF, a letter), one shorter, the last
/// byte one lower (with and without a 0xFF tail) and one higher.
fn neighbours(b: &[u8], out: &mut Vec<Vec<u8>>) {
    out.push(b.to_vec());
    for x in [0x00, 0xFF, b'x'] {
        let mut k = b.to_vec();
        k.push(x);
        out.push(k);
    }
    let mut k = b.to_vec();
    k.extend_from_slice(&[0, 0]);
    out.push(k);
    if let Some((&last, init)) = b.split_last() {
        out.push(init.to_vec());
        if last > 0 {
            let mut k = init.to_vec();
            k.push(last - 1);
            out.push(k.clone());
            k.push(0xFF);
            out.push(k);
        }
        if last < 0xFF {
            let mut k = init.to_vec();
            k.push(last + 1);
            out.push(k);
        }
    }
}

/// Adversarial keys independent of any dictionary.
fn common_probes() -> &'static [Vec<u8>] {
    static PROBES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    PROBES.get_or_init(|| {
        let mut rng = TestRng::new(0xB0B);
        let mut v: Vec<Vec<u8>> = vec![Vec::new()];
        for n in [1, 2, 3, 7, 100, 3000] {
            v.push(vec![0x00; n]);
            v.push(vec![0xFF; n]);
        }
        v.extend([
            vec![0x00, 0xFF],
            vec![0xFF, 0x00],
            vec![0x00, 0x00, 0x01],
            vec![0xFF, 0xFF, 0xFE],
            vec![0x80; 10],
            vec![0x7F, 0x80, 0x81],
            (0x80..=0xBF).collect(),
        ]);
        // Every single byte, and with a 0x00, 0xFF or itself after it.
        for b in 0..=255u8 {
            v.push(vec![b]);
            v.push(vec![b, 0x00]);
            v.push(vec![b, 0xFF]);
            v.push(vec![b, b]);
        }
        // E-mails, every prefix of some, and some with a byte appended or changed.
        for i in 0..400 {
            let e = email(&mut rng);
            if i % 20 == 0 {
                for n in 0..e.len() {
                    v.push(e[..n].to_vec());
                }
            }
            if i % 7 == 0 {
                neighbours(&e, &mut v);
            }
            v.push(e);
        }
        // Every shape; multi-KiB keys, some differing only in the last byte or by length.
        for shape in KeyShape::ALL.iter() {
            let n = if *shape == KeyShape::Long { 12 } else { 150 };
            for _ in 0..n {
                v.push(shape.gen_key(&mut rng));
            }
        }
        let long: Vec<u8> = b"@gmail.com".iter().copied().cycle().take(4096).collect();
        neighbours(&long, &mut v);
        let random: Vec<u8> = (0..5000).map(|_| rng.next_u64() as u8).collect();
        neighbours(&random, &mut v);
        neighbours(&vec![b'a'; 2048], &mut v);
        let mut mid = long.clone();
        mid[2000] ^= 1;
        v.push(mid);
        v.sort();
        v.dedup();
        v
    })
}

/// Common probes plus the neighbours of (up to about 600 of) the encoder's boundaries, sorted
/// and distinct.
fn probes_for(enc: &Encoder) -> Vec<Vec<u8>> {
    let mut v = common_probes().to_vec();
    let b = boundaries(enc);
    let step = b.len().div_ceil(600).max(1);
    for (i, s) in b.iter().enumerate() {
        // Multi-byte boundaries are the interesting ones; take every one of a small dictionary.
        if i % step == 0 || (s.len() > 1 && b.len() <= 2000) {
            neighbours(s, &mut v);
        }
    }
    v.sort();
    v.dedup();
    v
}

fn esc(k: &[u8]) -> String {
    let s = format!("{}", Escaped(k));
    if s.len() > 200 {
        format!("{}… ({} bytes)", &s[..200], k.len())
    } else {
        s
    }
}

/// Asserts that `keys` (sorted, distinct) encode to strictly increasing encodings, and that
/// random pairs compare like their encodings; returns the encodings.
fn assert_order_preserved(case: &str, enc: &Encoder, keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let encs: Vec<Vec<u8>> = keys.iter().map(|k| enc.encode(k)).collect();
    for i in 1..keys.len() {
        assert!(
            keys[i - 1] < keys[i],
            "{case}: probe keys not sorted and distinct"
        );
        assert!(
            encs[i - 1] < encs[i],
            "{case}: order lost: {} < {} but enc {:?} >= {:?}",
            esc(&keys[i - 1]),
            esc(&keys[i]),
            encs[i - 1],
            encs[i]
        );
    }
    let mut rng = TestRng::new(keys.len() as u64);
    for _ in 0..keys.len().min(2000) {
        let (i, j) = (rng.index(keys.len()), rng.index(keys.len()));
        assert_eq!(
            keys[i].cmp(&keys[j]),
            encs[i].cmp(&encs[j]),
            "{case}: {} vs {}",
            esc(&keys[i]),
            esc(&keys[j])
        );
    }
    encs
}

// ---------------------------------------------------------------------------------------------
// 1. Order preservation
// ---------------------------------------------------------------------------------------------

#[test]
fn order_is_preserved_on_adversarial_keys_every_scheme_and_limit() {
    for c in cases() {
        let keys = probes_for(&c.enc);
        let encs = assert_order_preserved(&c.label, &c.enc, &keys);
        // Encoding is deterministic, and encode_into appends exactly encode's bytes.
        let mut buf = Vec::new();
        for (k, e) in keys.iter().zip(&encs).step_by(3) {
            assert_eq!(&c.enc.encode(k), e, "{}: encode not deterministic", c.label);
            buf.clear();
            buf.extend_from_slice(b"junk");
            let bits = c.enc.encode_into(k, &mut buf);
            assert_eq!(
                &buf[4..],
                e.as_slice(),
                "{}: encode_into {}",
                c.label,
                esc(k)
            );
            assert!(bits > 0, "{}: {} encodes to no bits", c.label, esc(k));
            assert_eq!(
                bits.div_ceil(8),
                e.len(),
                "{}: bit count {}",
                c.label,
                esc(k)
            );
        }
    }
}

/// Every string of length ≤ 3 over {0x00, 0x01, `a`, 0xFE, 0xFF}, sorted.
fn small_strings() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = vec![Vec::new()];
    let mut last = vec![Vec::new()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for k in &last {
            for &b in &ALPHABET {
                let mut x: Vec<u8> = k.clone();
                x.push(b);
                next.push(x);
            }
        }
        v.extend(next.iter().cloned());
        last = next;
    }
    v.sort();
    assert_eq!(v.len(), 1 + 5 + 25 + 125);
    v
}

#[test]
fn order_is_preserved_exhaustively_on_short_strings() {
    let keys = small_strings();
    for c in cases() {
        let encs: Vec<Vec<u8>> = keys.iter().map(|k| c.enc.encode(k)).collect();
        for (a, ea) in keys.iter().zip(&encs) {
            for (b, eb) in keys.iter().zip(&encs) {
                assert_eq!(
                    a.cmp(b),
                    ea.cmp(eb),
                    "{}: {} vs {} encode to {ea:?} vs {eb:?}",
                    c.label,
                    esc(a),
                    esc(b)
                );
            }
            assert_eq!(c.enc.decode(ea).as_ref(), Ok(a), "{}: decode", c.label);
        }
    }
}

mod properties {
    use mlpdex::testing::arb_key;
    use proptest::prelude::*;

    use super::cases;

    /// Two keys related as the order proof's cases need: unrelated, one a prefix of the other,
    /// one byte longer, the last byte changed with a tail, equal, or sharing a prefix.
    fn arb_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (arb_key(), arb_key(), 0u8..6, any::<u8>()).prop_map(|(a, b, mode, x)| match mode {
            0 => (a, b),
            1 => {
                let mut c = a.clone();
                c.extend_from_slice(&b);
                (a, c)
            }
            2 => {
                let mut c = a.clone();
                c.push(x);
                (c, a)
            }
            3 => {
                let mut c = a.clone();
                if let Some(l) = c.last_mut() {
                    *l = l.wrapping_add(if x % 2 == 0 { 1 } else { 255 });
                }
                c.extend_from_slice(&b[..b.len().min(3)]);
                (a, c)
            }
            4 => (a.clone(), a),
            _ => {
                let mut c = a.clone();
                c.truncate(usize::from(x) % (a.len() + 1));
                c.extend_from_slice(&b);
                (a, c)
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Any pair of keys compares like its encodings under any encoder, and both decode.
        #[test]
        fn any_pair_compares_like_its_encodings(
            which in 0usize..1_000_000,
            (a, b) in arb_pair(),
        ) {
            let c = &cases()[which % cases().len()];
            let (ea, eb) = (c.enc.encode(&a), c.enc.encode(&b));
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb), "{}", c.label);
            prop_assert_eq!(c.enc.decode(&ea), Ok(a));
            prop_assert_eq!(c.enc.decode(&eb), Ok(b));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Decoding
// ---------------------------------------------------------------------------------------------

/// Decodes `bytes`, turning a panic into a test failure that names the input.
fn decode_no_panic(case: &str, enc: &Encoder, bytes: &[u8]) -> Result<Vec<u8>, Error> {
    match catch_unwind(AssertUnwindSafe(|| enc.decode(bytes))) {
        Ok(r) => r,
        Err(_) => panic!("{case}: decode panicked on {bytes:?}"),
    }
}

#[test]
fn decode_inverts_encode_and_damage_never_panics() {
    for c in cases() {
        let keys = probes_for(&c.enc);
        for (i, k) in keys.iter().enumerate() {
            let e = c.enc.encode(k);
            assert_eq!(c.enc.decode(&e).as_ref(), Ok(k), "{}: round trip", c.label);
            if i % 8 != 0 {
                continue;
            }
            let mut out = b"prefix".to_vec();
            c.enc.decode_into(&e, &mut out).unwrap();
            assert_eq!(&out[6..], k.as_slice(), "{}: decode_into appends", c.label);
            // Every truncation (the last 16 of a long encoding) is an error.
            let from = if e.len() > 64 { e.len() - 16 } else { 0 };
            for len in from..e.len() {
                let r = decode_no_panic(&c.label, &c.enc, &e[..len]);
                assert!(
                    matches!(r, Err(Error::Format { .. })),
                    "{}: {} truncated to {len} of {} bytes decodes to {r:?}",
                    c.label,
                    esc(k),
                    e.len()
                );
            }
            // One more byte of any value is an error.
            for x in [0x00, 0x01, 0x80, 0xFF] {
                let mut longer = e.clone();
                longer.push(x);
                let r = decode_no_panic(&c.label, &c.enc, &longer);
                assert!(
                    matches!(r, Err(Error::Format { .. })),
                    "{}: {} with byte {x:#x} appended decodes to {r:?}",
                    c.label,
                    esc(k)
                );
            }
            // Flipped bits: any answer, but no panic.
            if k.len() <= 12 {
                for bit in 0..e.len() * 8 {
                    let mut y = e.clone();
                    y[bit / 8] ^= 0x80 >> (bit % 8);
                    let _ = decode_no_panic(&c.label, &c.enc, &y);
                }
            }
        }
        // Arbitrary bytes never panic either.
        let mut rng = TestRng::new(c.limit as u64);
        for _ in 0..300 {
            let junk: Vec<u8> = (0..rng.index(12)).map(|_| rng.next_u64() as u8).collect();
            let _ = decode_no_panic(&c.label, &c.enc, &junk);
        }
    }
}

/// The module contract: "a damaged encoding is an error". A damaged encoding that decodes
/// must at least decode to another key than the original, and (for `decode` to be the
/// inverse of `encode`) be the encoding of the key it decodes to.
///
/// The bug this pins (fixed: `decode` now encodes its answer again and compares): decoding
/// followed codes without checking that the decoded bytes fall in each code's interval, so a
/// gap interval whose symbol equals a neighbour's (e.g. `[ac, b)` and `[a, ab)`, both with
/// symbol `a`) gave a second code sequence for the same key. Smallest case: see
/// `decode_accepts_a_second_encoding_of_a_key` below.
#[test]
fn damaged_encodings_never_decode_to_the_original_key() {
    let mut failures = Vec::new();
    for c in cases() {
        let keys = probes_for(&c.enc);
        'keys: for k in keys.iter().filter(|k| k.len() <= 12).step_by(5) {
            let e = c.enc.encode(k);
            for bit in 0..e.len() * 8 {
                let mut y = e.clone();
                y[bit / 8] ^= 0x80 >> (bit % 8);
                if let Ok(k2) = c.enc.decode(&y)
                    && (&k2 == k || c.enc.encode(&k2) != y)
                {
                    failures.push(format!(
                        "{}: enc({}) = {e:?}; bit {bit} flipped = {y:?} decodes to {} \
                         (whose encoding is {:?})",
                        c.label,
                        esc(k),
                        esc(&k2),
                        c.enc.encode(&k2)
                    ));
                    break 'keys;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} encoders decode a damaged encoding to a key it does not encode, e.g.\n{}",
        failures.len(),
        cases().len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// The smallest case of the (fixed) decoding bug above: ALM over the sample `["abc", "abc"]` (263
/// intervals: the end, every byte, and `ab`, `abc`, `abd`, `ac`, `bc`, `bd`; fixed 9-bit
/// codes), key `a`. Its encoding is the code of `[a, ab)` (symbol `a`) and the end: `[49, 0,
/// 0]`. Flipping bit 6 gives the code of `[ac, b)`, whose symbol is `a` too, and `decode`
/// answers `a` for `[51, 0, 0]` as well.
#[test]
fn decode_accepts_a_second_encoding_of_a_key() {
    let enc = Encoder::build_with_limit(Scheme::Alm, [b"abc", b"abc"], 300).unwrap();
    let e = enc.encode(b"a");
    assert_eq!(enc.decode(&e).as_deref(), Ok(&b"a"[..]));
    for bit in 0..e.len() * 8 {
        let mut y = e.clone();
        y[bit / 8] ^= 0x80 >> (bit % 8);
        let r = enc.decode(&y);
        assert!(
            r.as_deref() != Ok(&b"a"[..]),
            "enc(\"a\") = {e:?}, and {y:?} (bit {bit} flipped) decodes to \"a\" as well"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Batch encoding
// ---------------------------------------------------------------------------------------------

/// Sorted, distinct key lists for batch encoding.
fn batch_lists() -> Vec<(String, Vec<Vec<u8>>)> {
    let mut rng = TestRng::new(0xBA7C);
    let mut lists = Vec::new();
    let mut push = |name: &str, mut v: Vec<Vec<u8>>| {
        v.sort();
        v.dedup();
        lists.push((name.to_string(), v));
    };
    // Long shared prefixes of letters, 0x00 and 0xFF, with short tails and prefixes of them.
    for (name, prefix) in [
        ("letters", b"user@gmail.com/".repeat(20)),
        ("zeros", vec![0x00; 300]),
        ("ones", vec![0xFF; 300]),
    ] {
        let mut v = Vec::new();
        for i in 0..200 {
            let mut k = prefix.clone();
            if i % 10 == 0 {
                k.truncate(rng.index(prefix.len() + 1));
            }
            for _ in 0..rng.index(4) {
                k.push(*rng.pick(&[0x00, 0x01, b'a', b'z', 0xFE, 0xFF]));
            }
            v.push(k);
        }
        push(name, v);
    }
    push("email", (0..1500).map(|_| email(&mut rng)).collect());
    push("alphabet", small_strings());
    for &shape in KeyShape::ALL_BYTES {
        let n = if shape == KeyShape::Long { 15 } else { 600 };
        push(
            &format!("{shape:?}"),
            (0..n).map(|_| shape.gen_key(&mut rng)).collect(),
        );
    }
    push("one key", vec![b"only".to_vec()]);
    push("empty key", vec![Vec::new()]);
    lists
}

#[test]
fn encode_batch_equals_per_key_encode() {
    let lists = batch_lists();
    for c in cases() {
        for (name, keys) in &lists {
            let want: Vec<Vec<u8>> = keys.iter().map(|k| c.enc.encode(k)).collect();
            for block in [0, 1, 2, 7, 64, keys.len() + 3] {
                let mut out = vec![b"before".to_vec()];
                c.enc.encode_batch(keys, block, &mut out);
                assert_eq!(
                    out.len(),
                    keys.len() + 1,
                    "{}: {name} block {block}",
                    c.label
                );
                assert_eq!(out[0], b"before");
                for (i, (got, want)) in out[1..].iter().zip(&want).enumerate() {
                    assert_eq!(
                        got,
                        want,
                        "{}: list {name} block {block}: key {i} {}",
                        c.label,
                        esc(&keys[i])
                    );
                }
            }
        }
        let mut out = Vec::new();
        c.enc.encode_batch::<Vec<u8>>(&[], 7, &mut out);
        assert!(out.is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Serialization
// ---------------------------------------------------------------------------------------------

/// An image in the documented format: magic, version 1, the scheme byte, three zero bytes, the
/// interval count, per interval (length, boundary, code length), XXH3-64 of the rest.
fn image(scheme: u8, entries: &[(Vec<u8>, u8)]) -> Vec<u8> {
    let mut v = b"MLPDHOPE".to_vec();
    v.extend_from_slice(&1u32.to_le_bytes());
    v.push(scheme);
    v.extend_from_slice(&[0; 3]);
    v.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (b, l) in entries {
        v.push(b.len() as u8);
        v.extend_from_slice(b);
        v.push(*l);
    }
    reseal_append(&mut v);
    v
}

/// Code lengths of a complete alphabetic code tree over `n` equally weighted intervals (what
/// an optimal code gives them): with `n = 2^k + m`, the first `2m` intervals get `k + 1` bits
/// and the others `k`. The test below checks that an image with these lengths loads.
fn balanced_lengths(n: usize) -> Vec<u8> {
    let k = n.ilog2();
    let deep = 2 * (n - (1 << k));
    (0..n)
        .map(|i| {
            let bits = if i < deep { k + 1 } else { k };
            bits.max(1) as u8
        })
        .collect()
}

/// `⌈log₂ n⌉` bits for each of `n > 1` intervals (ALM's fixed-length codes: alphabetic, and
/// incomplete unless `n` is a power of two).
fn fixed_lengths(n: usize) -> Vec<u8> {
    vec![(n - 1).ilog2() as u8 + 1; n]
}

fn reseal_append(v: &mut Vec<u8>) {
    v.extend_from_slice(&[0; 8]);
    mlpdex::testing::reseal(v);
}

/// The boundaries and code lengths of an encoder's image.
fn entries_of(enc: &Encoder) -> Vec<(Vec<u8>, u8)> {
    let img = enc.to_bytes();
    let mut at = 24;
    boundaries(enc)
        .into_iter()
        .map(|b| {
            let l = img[at + 1 + b.len()];
            at += 2 + b.len();
            (b, l)
        })
        .collect()
}

/// A loaded (possibly damaged) encoder must still be sound on `keys`: order preserved, every
/// key round-trips, no panic.
fn assert_sound(what: &str, enc: &Encoder, keys: &[Vec<u8>]) {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let encs = assert_order_preserved(what, enc, keys);
        for (k, e) in keys.iter().zip(&encs) {
            assert_eq!(enc.decode(e).as_ref(), Ok(k), "{what}: round trip");
        }
    }));
    if let Err(p) = r {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!("{what}: a loaded encoder is unsound: {msg}");
    }
}

/// A smaller probe set for checking many loaded encoders.
fn quick_probes() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = common_probes()
        .iter()
        .filter(|k| k.len() < 64)
        .step_by(4)
        .cloned()
        .collect();
    v.extend(small_strings());
    v.sort();
    v.dedup();
    v
}

#[test]
fn serialization_round_trips_and_rejects_truncation_and_flips() {
    let probes = quick_probes();
    for (n, c) in cases().iter().enumerate() {
        let img = c.enc.to_bytes();
        let back = Encoder::from_bytes(&img).unwrap();
        assert_eq!(back, *c.enc, "{}", c.label);
        assert_eq!(back.scheme(), c.scheme);
        assert_eq!(back.entries(), c.enc.entries());
        assert_eq!(back.to_bytes(), img, "{}: image not stable", c.label);
        for k in common_probes() {
            assert_eq!(back.encode(k), c.enc.encode(k), "{}: {}", c.label, esc(k));
        }
        // Truncations: all of a small image, the ends and a sample of a large one.
        let mut rng = TestRng::new(n as u64);
        let cuts: Vec<usize> = if img.len() <= 20_000 {
            (0..img.len()).collect()
        } else {
            (0..64)
                .chain(img.len() - 64..img.len())
                .chain((0..200).map(|_| rng.index(img.len())))
                .collect()
        };
        for len in cuts {
            let r = Encoder::from_bytes(&img[..len]);
            assert!(
                matches!(r, Err(Error::Format { .. })),
                "{}: truncated to {len} of {}: {r:?}",
                c.label,
                img.len()
            );
        }
        let mut longer = img.clone();
        longer.push(0);
        assert!(Encoder::from_bytes(&longer).is_err(), "{}", c.label);
        // Byte flips with the checksum left as it was: an error, or a sound encoder.
        if img.len() <= 8_000 {
            let mut bad = img.clone();
            for i in 0..img.len() {
                bad[i] ^= 0x5A;
                match catch_unwind(AssertUnwindSafe(|| Encoder::from_bytes(&bad))) {
                    Err(_) => panic!("{}: from_bytes panicked, byte {i} flipped", c.label),
                    Ok(Ok(e)) => assert_sound(&format!("{} flip {i}", c.label), &e, &probes),
                    Ok(Err(_)) => {}
                }
                bad[i] = img[i];
            }
        }
    }
}

#[test]
fn damaged_images_with_valid_checksums_load_sound_or_not_at_all() {
    let probes = quick_probes();
    let mut rng = TestRng::new(0xDA3A);
    let mut loaded = 0usize;
    let mut tried = 0usize;
    for c in cases().iter().filter(|c| c.enc.entries() <= 1000) {
        let img = c.enc.to_bytes();
        for _ in 0..60 {
            let bad = mlpdex::testing::damage_keeping_checksum(&img, &mut rng);
            tried += 1;
            match catch_unwind(AssertUnwindSafe(|| Encoder::from_bytes(&bad))) {
                Err(_) => panic!("{}: from_bytes panicked on a damaged image", c.label),
                Ok(Ok(e)) => {
                    loaded += 1;
                    assert_sound(&format!("{} damaged", c.label), &e, &probes);
                }
                Ok(Err(e)) => assert!(matches!(e, Error::Format { .. }), "{e:?}"),
            }
        }
        // Every scheme byte on the same dictionary: the loader must refuse those that do not
        // fit it, and whatever it accepts must be sound.
        for code in 0..=7u8 {
            let mut v = img.clone();
            v[12] = code;
            reseal(&mut v);
            match Encoder::from_bytes(&v) {
                Ok(e) => {
                    assert!(code < 6, "{}: scheme byte {code} accepted", c.label);
                    assert_eq!(e.scheme(), Scheme::ALL[usize::from(code)]);
                    assert_sound(&format!("{} as scheme {code}", c.label), &e, &probes);
                }
                Err(e) => assert!(matches!(e, Error::Format { .. }), "{e:?}"),
            }
        }
    }
    // Damage to code lengths and boundaries is mostly caught; some (a boundary byte that keeps
    // the order) is harmless.
    assert!(loaded < tried, "validation rejected nothing");
}

#[test]
fn header_and_structure_errors_are_typed() {
    let c = cases()
        .iter()
        .find(|c| c.scheme == Scheme::AlmImproved && c.limit == 1000 && c.label.contains("email"))
        .unwrap();
    let img = c.enc.to_bytes();
    let mut m = img.clone();
    m[0] = b'X';
    assert!(matches!(Encoder::from_bytes(&m), Err(Error::Format { .. })));
    for version in [0u32, 2, 9, u32::MAX] {
        let mut v = img.clone();
        v[8..12].copy_from_slice(&version.to_le_bytes());
        assert_eq!(
            Encoder::from_bytes(&v),
            Err(Error::Version {
                found: version,
                supported: 1
            })
        );
        reseal(&mut v);
        assert!(matches!(
            Encoder::from_bytes(&v),
            Err(Error::Version { found, .. }) if found == version
        ));
    }
    for i in 13..16 {
        let mut v = img.clone();
        v[i] = 1;
        reseal(&mut v);
        assert!(matches!(Encoder::from_bytes(&v), Err(Error::Format { .. })));
    }
    // Another structure's image is not a dictionary.
    let fst = Fst::from_sorted([(b"a", 1u64), (b"b", 2)]).unwrap();
    assert!(matches!(
        Encoder::from_bytes(&fst.to_bytes()),
        Err(Error::Format { .. })
    ));
    assert!(matches!(
        Encoder::from_bytes(&[]),
        Err(Error::Format { .. })
    ));

    // Structural damage behind a valid checksum.
    let good = entries_of(&c.enc);
    let scheme = 5; // AlmImproved
    assert_eq!(
        Encoder::from_bytes(&image(scheme, &good)).as_ref(),
        Ok(&*c.enc)
    );
    // Each boundary defect comes with valid code lengths for its count, so that only the
    // boundary checks can refuse it.
    let with_lengths = |bounds: Vec<Vec<u8>>| -> Vec<(Vec<u8>, u8)> {
        let lens = balanced_lengths(bounds.len());
        bounds.into_iter().zip(lens).collect()
    };
    let bounds: Vec<Vec<u8>> = good.iter().map(|(b, _)| b.clone()).collect();
    let mut bad = Vec::new();
    // Two neighbouring 2-byte boundaries with the same first byte, swapped: every interval
    // still has a symbol, only the order is wrong.
    let pair = (0..bounds.len() - 1)
        .find(|&i| {
            let (a, b) = (&bounds[i], &bounds[i + 1]);
            a.len() == 2 && b.len() == 2 && a[0] == b[0]
        })
        .expect("two neighbouring 2-byte boundaries");
    let mut v = bounds.clone();
    v.swap(pair, pair + 1);
    bad.push(("unsorted", with_lengths(v)));
    // A boundary repeated (an empty interval).
    let mut v = bounds.clone();
    v.insert(pair, bounds[pair].clone());
    bad.push(("repeated", with_lengths(v)));
    // A single byte missing.
    let mut v = bounds.clone();
    v.retain(|b| b != b"q");
    bad.push(("missing single byte", with_lengths(v)));
    // The empty boundary missing.
    bad.push(("no empty boundary", with_lengths(bounds[1..].to_vec())));
    // A boundary longer than the radix dictionary allows (128 bytes), in its sorted place.
    let at = (0..bounds.len() - 1)
        .find(|&i| bounds[i + 1] != [bounds[i].as_slice(), &[0]].concat())
        .unwrap();
    let mut v = bounds.clone();
    let mut long = bounds[at].clone();
    long.resize(200, 0x00);
    v.insert(at + 1, long);
    bad.push(("200-byte boundary", with_lengths(v)));
    // Code lengths of no alphabetic code: all 1, a zero, one over 48, one shortened (an
    // over-full code), a length changed so the tree is not alphabetic.
    bad.push((
        "lengths all 1",
        good.iter().map(|(b, _)| (b.clone(), 1)).collect(),
    ));
    let mut v = good.clone();
    v[7].1 = 0;
    bad.push(("length 0", v));
    let mut v = good.clone();
    v[7].1 = 49;
    bad.push(("length 49", v));
    let mut v = good.clone();
    let longest = (0..v.len()).max_by_key(|&i| v[i].1).unwrap();
    v[longest].1 -= 1;
    bad.push(("a length shortened", v));
    let mut v = with_lengths(bounds.clone());
    let first_short = (1..v.len()).find(|&i| v[i].1 < v[i - 1].1).unwrap_or(1);
    v[first_short].1 += 1;
    v[first_short - 1].1 -= 1;
    bad.push(("lengths of no alphabetic tree", v));
    for (what, entries) in &bad {
        let r = Encoder::from_bytes(&image(scheme, entries));
        assert!(
            matches!(r, Err(Error::Format { .. })),
            "{what}: {:?}",
            r.map(|e| e.entries())
        );
    }
    // The same boundaries with valid lengths load.
    assert!(Encoder::from_bytes(&image(scheme, &with_lengths(bounds.clone()))).is_ok());
    // The checksum is checked: a stale one is an error even when the rest is valid.
    let mut v = image(scheme, &with_lengths(bounds.clone()));
    let last = v.len() - 1;
    v[last] ^= 1;
    assert!(matches!(Encoder::from_bytes(&v), Err(Error::Format { .. })));
    let mut v = image(scheme, &with_lengths(bounds.clone()));
    v[30] ^= 1;
    assert!(matches!(Encoder::from_bytes(&v), Err(Error::Format { .. })));
    // Lengths that are alphabetic but not the built ones load, and are sound.
    let alm = fixed_lengths(good.len());
    let v: Vec<(Vec<u8>, u8)> = good
        .iter()
        .zip(alm)
        .map(|(g, l)| (g.0.clone(), l))
        .collect();
    let e = Encoder::from_bytes(&image(scheme, &v)).unwrap();
    assert_sound("fixed lengths", &e, &quick_probes());
    // The count field disagreeing with the entries.
    let mut v = image(scheme, &good);
    v[16..24].copy_from_slice(&(good.len() as u64 + 1).to_le_bytes());
    reseal(&mut v);
    assert!(matches!(Encoder::from_bytes(&v), Err(Error::Format { .. })));
    v[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut v);
    assert!(matches!(Encoder::from_bytes(&v), Err(Error::Format { .. })));
    // A 3-gram dictionary cannot hold a 4-byte boundary.
    let mut v: Vec<(Vec<u8>, u8)> =
        entries_of(&Encoder::build_with_limit(Scheme::ThreeGrams, [b""; 0], 257).unwrap());
    let at = v.iter().position(|(b, _)| b == b"a").unwrap();
    v.insert(at + 1, (b"aaaa".to_vec(), v[at].1));
    let lens = balanced_lengths(v.len());
    for (e, l) in v.iter_mut().zip(lens) {
        e.1 = l;
    }
    assert!(matches!(
        Encoder::from_bytes(&image(2, &v)),
        Err(Error::Format { .. })
    ));
    assert!(Encoder::from_bytes(&image(3, &v)).is_ok());
}

/// The fixed-interval schemes look intervals up by a formula of the first bytes, so a loaded
/// Double-Char dictionary must have exactly the fixed boundaries (the loader once checked only
/// their count).
///
/// The case: an image with `ab` and `ac` replaced by `abc` and `abd` (still sorted, complete,
/// 65,793 boundaries, valid lengths and checksum) used to load; the slot of `ab` then carried
/// the 3-byte symbol of `[abc, abd)`, so `encode(b"ab")` panicked (slice index 3 of a 2-byte
/// rest) and `abx` encoded like `abc`.
#[test]
fn fixed_interval_images_with_other_boundaries_are_rejected() {
    let enc = Encoder::build_with_limit(Scheme::DoubleChar, [b"abcd"; 4], 0).unwrap();
    let mut entries = entries_of(&enc);
    for e in &mut entries {
        if e.0 == b"ab" {
            e.0 = b"abc".to_vec();
        } else if e.0 == b"ac" {
            e.0 = b"abd".to_vec();
        }
    }
    let img = image(1, &entries);
    let r = Encoder::from_bytes(&img);
    let Ok(loaded) = r else {
        assert!(matches!(r, Err(Error::Format { .. })), "{r:?}");
        return;
    };
    let keys: [&[u8]; 4] = [b"ab", b"abc", b"abx", b"ac"];
    let mut report = Vec::new();
    for k in keys {
        match catch_unwind(AssertUnwindSafe(|| loaded.encode(k))) {
            Ok(e) => report.push(format!("{} -> {e:?}", esc(k))),
            Err(_) => report.push(format!("{} -> panic", esc(k))),
        }
    }
    panic!(
        "a Double-Char image with boundaries abc, abd in place of ab, ac loaded; encodings: {}",
        report.join(", ")
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Build errors and scheme names
// ---------------------------------------------------------------------------------------------

#[test]
fn build_refuses_limits_below_257_and_fixed_schemes_ignore_the_limit() {
    let sample: Vec<Vec<u8>> = {
        let mut rng = TestRng::new(5);
        (0..500).map(|_| email(&mut rng)).collect()
    };
    for scheme in Scheme::ALL {
        assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
        for limit in [0, 1, 2, 100, 255, 256] {
            let r = Encoder::build_with_limit(scheme, &sample, limit);
            if scheme.has_limit() {
                let msg = match r {
                    Err(e @ Error::InvalidConfig { .. }) => e.to_string(),
                    other => panic!("{scheme:?} limit {limit}: {:?}", other.map(|e| e.entries())),
                };
                // The message says what the limit is and which value to use, and no longer
                // gives the advice for oversized input ("split it into several structures").
                assert!(
                    msg.contains("at least 257") && msg.contains("65536") && !msg.contains("split"),
                    "{msg}"
                );
            } else {
                assert_eq!(
                    r.unwrap(),
                    Encoder::build(scheme, &sample).unwrap(),
                    "{scheme:?} limit {limit}"
                );
            }
        }
        let e = Encoder::build_with_limit(scheme, &sample, 257).unwrap();
        if scheme.has_limit() {
            // The smallest complete dictionary: the end of a key and every byte.
            assert_eq!(e.entries(), 257, "{scheme:?}");
        }
        let huge = Encoder::build_with_limit(scheme, &sample, usize::MAX).unwrap();
        assert_sound(&format!("{scheme:?} unlimited"), &huge, &quick_probes());
        assert!(e.memory_usage() >= e.dictionary_bytes() && e.dictionary_bytes() > 0);
    }
    assert_eq!(Scheme::from_name("3-gram"), None);
    assert!(!Scheme::SingleChar.has_limit() && !Scheme::DoubleChar.has_limit());
}

// ---------------------------------------------------------------------------------------------
// 6. The wrapper against the BTreeMap oracle
// ---------------------------------------------------------------------------------------------

const SHAPES: &[KeyShape] = KeyShape::ALL;

fn key_set(shape: KeyShape, seed: u64, n: usize) -> BTreeMap<Vec<u8>, u64> {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| (shape.gen_key(&mut rng), rng.next_u64()))
        .collect()
}

/// An encoder of `scheme` built from a sample of `shape` (drawn with another seed than the
/// keys, so the keys are not all in the sample).
fn encoder_for(scheme: Scheme, shape: KeyShape, limit: usize) -> Arc<Encoder> {
    let mut rng = TestRng::new(0x5A11 ^ shape as u64);
    let n = if shape == KeyShape::Long { 20 } else { 1000 };
    let sample: Vec<Vec<u8>> = (0..n).map(|_| shape.gen_key(&mut rng)).collect();
    Arc::new(Encoder::build_with_limit(scheme, &sample, limit).unwrap())
}

#[test]
fn hope_fst_answers_like_the_oracle() {
    for &shape in SHAPES {
        for (i, scheme) in Scheme::ALL.into_iter().enumerate() {
            let enc = encoder_for(scheme, shape, 1000);
            let n = if shape == KeyShape::Long { 150 } else { 2000 };
            let set = key_set(shape, 100 + i as u64, n);
            let mut b = HopeBuilder::new(enc.clone(), FstBuilder::new());
            for (k, &v) in &set {
                b.push(k, v).unwrap();
            }
            let map: Hope<Fst> = b.finish().unwrap();
            check_static(&map, &set, shape, 7 + i as u64, 300);
            // The inner map holds encoded keys; the wrapper's cursors give them back plain.
            let mut c = map.cursor(..);
            for (k, &v) in &set {
                let (got, gv) = c.next().unwrap();
                assert_eq!((got, gv), (k.as_slice(), v), "{shape:?} {scheme:?}");
                assert_eq!(map.inner().get(&enc.encode(k)), Some(v));
            }
            assert!(c.next().is_none());
            assert!(c.error().is_none());
            // The owned iterator gives the same entries both ways, no trait import needed.
            let want: Vec<(Vec<u8>, u64)> = set.iter().map(|(k, &v)| (k.clone(), v)).collect();
            assert_eq!(map.range(..).collect::<Vec<_>>(), want);
            assert!(map.iter().rev().eq(want.iter().rev().cloned()));
            assert_eq!(map.encoder(), &*enc);
        }
    }
    // The builder refuses out-of-order and repeated keys (naming the encoded keys).
    let enc = encoder_for(Scheme::ThreeGrams, KeyShape::Mixed, 1000);
    let mut b = HopeBuilder::new(enc.clone(), FstBuilder::new());
    b.push(b"b", 1).unwrap();
    assert!(matches!(b.push(b"a", 2), Err(Error::OutOfOrder { .. })));
    assert!(matches!(b.push(b"b", 2), Err(Error::DuplicateKey { .. })));
    b.push(b"b\x00", 3).unwrap();
    let m = b.finish().unwrap();
    assert_eq!(
        (m.get(b"b"), m.get(b"b\x00"), m.get(b"a")),
        (Some(1), Some(3), None)
    );
}

/// Bounds at and around `k` (as in tests/surf.rs), with `Unbounded`.
fn bounds_around(k: &[u8]) -> Vec<Bound<Vec<u8>>> {
    let mut near = Vec::new();
    neighbours(k, &mut near);
    let mut v = vec![Unbounded];
    for n in near {
        v.push(Included(n.clone()));
        v.push(Excluded(n));
    }
    v
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

#[test]
fn hope_surf_has_no_false_negatives() {
    let kinds = [
        SurfKind::Base,
        SurfKind::Hash(8),
        SurfKind::Real(8),
        SurfKind::Mixed { hash: 4, real: 4 },
    ];
    for &shape in SHAPES {
        for (i, scheme) in Scheme::ALL.into_iter().enumerate() {
            let enc = encoder_for(scheme, shape, 1000);
            // Counts walk every level of the trie, and multi-KiB keys make it thousands of
            // levels deep: keep those sets and range lists small.
            let long = shape == KeyShape::Long;
            let n = if long { 60 } else { 1500 };
            let set: Vec<Vec<u8>> = key_set(shape, 200 + i as u64, n).into_keys().collect();
            // Two kinds per scheme, all four over the schemes.
            for kind in [kinds[i % 4], kinds[(i + 1) % 4]] {
                let mut b = SurfBuilder::new(kind).unwrap();
                for k in &set {
                    b.push(&enc.encode(k)).unwrap();
                }
                let f = Hope::new(enc.clone(), b.finish().unwrap());
                for k in &set {
                    assert!(
                        f.may_contain(k),
                        "{shape:?} {scheme:?} {kind:?} lost {}",
                        esc(k)
                    );
                }
                assert!(f.memory_usage() > enc.memory_usage());
                // Ranges around a few keys, and random ones, with every bound kind.
                let mut rng = TestRng::new(i as u64);
                let mut bounds: Vec<Bound<Vec<u8>>> = Vec::new();
                let around = if long { 1 } else { 3 };
                for k in set.iter().step_by(set.len().div_ceil(around)) {
                    bounds.extend(bounds_around(k));
                }
                for _ in 0..if long { 2 } else { 6 } {
                    let k = shape.gen_key(&mut rng);
                    bounds.push(Included(k.clone()));
                    bounds.push(Excluded(k));
                }
                for lo in &bounds {
                    for hi in &bounds {
                        let (lo, hi) = (as_slice(lo), as_slice(hi));
                        let exact = if is_empty_range(lo, hi) {
                            0
                        } else {
                            let a = set.partition_point(|k| !mlpdex::key::after_start(k, lo));
                            let b = set.partition_point(|k| mlpdex::key::before_end(k, hi));
                            b.saturating_sub(a) as u64
                        };
                        let got = f.may_contain_range((lo, hi));
                        assert!(
                            exact == 0 || got,
                            "{shape:?} {scheme:?} {kind:?}: range {lo:?}..{hi:?} holds {exact}"
                        );
                        let count = f.approx_count((lo, hi));
                        assert!(
                            count >= exact && count <= exact + 2,
                            "{shape:?} {scheme:?} {kind:?}: count {count}, exact {exact}"
                        );
                    }
                }
            }
        }
    }
}

/// A key for an operation: drawn from the shape, a stored key, or a neighbour of one.
fn pick_key(rng: &mut TestRng, shape: KeyShape, oracle: &BTreeMap<Vec<u8>, u64>) -> Vec<u8> {
    let fresh = shape.gen_key(rng);
    if oracle.is_empty() || rng.chance(0.4) {
        return fresh;
    }
    let stored = oracle
        .range(fresh.clone()..)
        .next()
        .or_else(|| oracle.iter().next_back())
        .map(|(k, _)| k.clone())
        .unwrap();
    if rng.chance(0.6) {
        return stored;
    }
    let mut near = Vec::new();
    neighbours(&stored, &mut near);
    near.swap_remove(rng.index(near.len()))
}

fn random_bound(rng: &mut TestRng, key: &[u8]) -> Bound<Vec<u8>> {
    match rng.below(5) {
        0 => Unbounded,
        1 | 2 => Included(key.to_vec()),
        _ => Excluded(key.to_vec()),
    }
}

/// `EncodedMap` differential run of `Hope<CuckooTrie<u64>>` against a `BTreeMap`.
fn encoded_map_differential(enc: Arc<Encoder>, shape: KeyShape, seed: u64, steps: usize) {
    let mut map = Hope::new(enc, CuckooTrie::<u64>::new());
    let mut oracle: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut rng = TestRng::new(seed);
    let ctx = |step: usize, op: &str, k: &[u8]| {
        format!("{shape:?} seed {seed} step {step}: {op} {}", esc(k))
    };
    for step in 0..steps {
        let key = pick_key(&mut rng, shape, &oracle);
        // Phases of 3000 steps: growth, then shrinking.
        let growing = step % 3000 < 1800;
        match rng.below(100) {
            0..=29 => {
                let v = rng.next_u64();
                let want = oracle.insert(key.clone(), v);
                let got = EncodedMap::insert(&mut map, &key, v).unwrap();
                assert_eq!(got, want, "{}", ctx(step, "insert", &key));
            }
            30..=44 if !growing || rng.chance(0.3) => {
                let got = EncodedMap::remove(&mut map, &key);
                assert_eq!(got, oracle.remove(&key), "{}", ctx(step, "remove", &key));
            }
            30..=59 => {
                let got = EncodedMap::get(&map, &key).copied();
                assert_eq!(got, oracle.get(&key).copied(), "{}", ctx(step, "get", &key));
            }
            60..=74 => {
                let b = random_bound(&mut rng, &key);
                let b = as_slice(&b);
                let want = oracle
                    .range::<[u8], _>((b, Unbounded))
                    .next()
                    .map(|(k, &v)| (k.clone(), v));
                let got = map.lower_bound(b).map(|(k, &v)| (k, v));
                assert_eq!(got, want, "{}", ctx(step, "lower_bound", &key));
                let want = oracle
                    .range::<[u8], _>((Unbounded, b))
                    .next_back()
                    .map(|(k, &v)| (k.clone(), v));
                let got = map.upper_bound(b).map(|(k, &v)| (k, v));
                assert_eq!(got, want, "{}", ctx(step, "upper_bound", &key));
            }
            75..=96 => {
                let other = pick_key(&mut rng, shape, &oracle);
                let (lo, hi) = if rng.chance(0.9) && key > other {
                    (other, key.clone())
                } else {
                    (key.clone(), other)
                };
                let (lo, hi) = (random_bound(&mut rng, &lo), random_bound(&mut rng, &hi));
                let (lo, hi) = (as_slice(&lo), as_slice(&hi));
                let want: Vec<(Vec<u8>, u64)> = if is_empty_range(lo, hi) {
                    Vec::new()
                } else {
                    oracle
                        .range::<[u8], _>((lo, hi))
                        .map(|(k, &v)| (k.clone(), v))
                        .collect()
                };
                let mut it = map.range((lo, hi));
                let limit = 1 + rng.index(40);
                let (mut front, mut back) = (0usize, want.len());
                let mode = rng.below(3);
                for i in 0..limit {
                    let from_back = mode == 1 || (mode == 2 && i % 2 == 1);
                    let got = if from_back { it.next_back() } else { it.next() };
                    let got = got.map(|(k, &v)| (k, v));
                    let want_now = if front == back {
                        None
                    } else if from_back {
                        back -= 1;
                        Some(want[back].clone())
                    } else {
                        front += 1;
                        Some(want[front - 1].clone())
                    };
                    let done = want_now.is_none();
                    assert_eq!(
                        got,
                        want_now,
                        "{} range {lo:?}..{hi:?} pull {i} (back: {from_back})",
                        ctx(step, "range", &key)
                    );
                    if done {
                        break;
                    }
                }
            }
            97..=98 => {
                assert_eq!(EncodedMap::len(&map), oracle.len());
                assert_eq!(EncodedMap::is_empty(&map), oracle.is_empty());
                assert!(EncodedMap::memory_usage(&map) > 0);
            }
            _ => {
                if rng.chance(0.05) {
                    EncodedMap::clear(&mut map);
                    oracle.clear();
                }
            }
        }
    }
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, &v)| (k.clone(), v)).collect();
    let got: Vec<(Vec<u8>, u64)> = map.range(..).map(|(k, &v)| (k, v)).collect();
    assert_eq!(got, want, "{shape:?} seed {seed}: final forward scan");
    let mut got: Vec<(Vec<u8>, u64)> = map.range(..).rev().map(|(k, &v)| (k, v)).collect();
    got.reverse();
    assert_eq!(got, want, "{shape:?} seed {seed}: final backward scan");
    assert_eq!(EncodedMap::len(&map), oracle.len());
    map.into_inner().check_invariants().unwrap();
}

#[test]
fn hope_cuckoo_trie_encoded_map_differential() {
    for (i, &shape) in SHAPES.iter().enumerate() {
        for (j, scheme) in [Scheme::SingleChar, Scheme::FourGrams, Scheme::AlmImproved]
            .into_iter()
            .enumerate()
        {
            let enc = encoder_for(scheme, shape, 4096);
            let steps = if shape == KeyShape::Long {
                3000
            } else {
                12_000
            };
            encoded_map_differential(enc, shape, (i * 10 + j) as u64, steps);
        }
    }
    // An encoder built from another distribution than the keys.
    let mut rng = TestRng::new(3);
    let emails: Vec<Vec<u8>> = (0..2000).map(|_| email(&mut rng)).collect();
    let enc = Arc::new(Encoder::build_with_limit(Scheme::Alm, &emails, 1000).unwrap());
    encoded_map_differential(enc, KeyShape::Mixed, 99, 12_000);
}

fn skiplist_subject(enc: &Arc<Encoder>) -> Subject<Hope<SkipList<u64>>> {
    let e = enc.clone();
    Subject::new("hope skip list", move || {
        Hope::new(e.clone(), SkipList::new())
    })
    .with_audit(|m: &Hope<SkipList<u64>>| m.inner().check_invariants())
}

fn cuckoo_subject(enc: &Arc<Encoder>) -> Subject<Hope<ConcurrentCuckooTrie<u64>>> {
    let e = enc.clone();
    Subject::new("hope concurrent cuckoo trie", move || {
        Hope::new(e.clone(), ConcurrentCuckooTrie::new())
    })
    .with_audit(|m: &Hope<ConcurrentCuckooTrie<u64>>| m.inner().check_invariants())
}

#[test]
fn hope_concurrent_maps_single_threaded_differential() {
    for (i, &shape) in SHAPES.iter().enumerate() {
        let scheme = Scheme::ALL[i % Scheme::ALL.len()];
        let enc = encoder_for(scheme, shape, 4096);
        let steps = if shape == KeyShape::Long {
            3000
        } else {
            10_000
        };
        let e = enc.clone();
        differential_concurrent(
            move || Hope::new(e.clone(), SkipList::<u64>::new()),
            shape,
            i as u64,
            steps,
        );
        let e = enc.clone();
        differential_concurrent(
            move || Hope::new(e.clone(), ConcurrentCuckooTrie::<u64>::new()),
            shape,
            100 + i as u64,
            steps,
        );
    }
    let enc = encoder_for(Scheme::ThreeGrams, KeyShape::PrefixChains, 1000);
    concurrent::empty_key_alone_and_with_others(&skiplist_subject(&enc));
    concurrent::empty_key_alone_and_with_others(&cuckoo_subject(&enc));
    concurrent::prefix_keys_in_every_insertion_order(&skiplist_subject(&enc));
    concurrent::prefix_keys_in_every_insertion_order(&cuckoo_subject(&enc));
}

#[test]
fn hope_concurrent_maps_quick_stress() {
    let sample = concurrent::mixed_keys(1000, 2, 0x51);
    let enc = Arc::new(Encoder::build_with_limit(Scheme::AlmImproved, &sample, 2000).unwrap());
    for sharing in [Sharing::Partitioned, Sharing::Shared] {
        concurrent::stress(&skiplist_subject(&enc), Plan::quick(sharing, 0x11));
        concurrent::stress(&cuckoo_subject(&enc), Plan::quick(sharing, 0x12));
    }
    let four = Plan {
        writers: 4,
        readers: 0,
        ..Plan::quick(Sharing::Partitioned, 0x13)
    };
    concurrent::stress(&skiplist_subject(&enc), four);
    concurrent::stress(&cuckoo_subject(&enc), four);
}

/// Four threads, each owning every fourth key of a universe, write and read their own keys
/// (checking every answer against their own oracle); afterwards the map holds exactly the
/// union of the oracles, whichever way it is read.
fn disjoint_threads<M: ConcurrentOrderedMap<u64>>(name: &str, map: &M, universe: &[Vec<u8>]) {
    const THREADS: usize = 4;
    let oracles: Vec<BTreeMap<Vec<u8>, u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    let mine: Vec<&Vec<u8>> = universe.iter().skip(t).step_by(THREADS).collect();
                    let mut rng = TestRng::new(t as u64 + 1);
                    let mut oracle = BTreeMap::new();
                    for step in 0..6000 {
                        let k = mine[rng.index(mine.len())];
                        let fill = step % 2000 < 1300;
                        match rng.below(10) {
                            0..=4 if fill => {
                                let v = rng.next_u64();
                                let got = map.insert(k, v).unwrap();
                                assert_eq!(got, oracle.insert(k.clone(), v), "{name} t{t} insert");
                            }
                            0..=5 => {
                                assert_eq!(map.remove(k), oracle.remove(k), "{name} t{t} remove");
                            }
                            _ => {
                                assert_eq!(
                                    map.get_cloned(k),
                                    oracle.get(k).copied(),
                                    "{name} t{t} get"
                                );
                            }
                        }
                    }
                    oracle
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: BTreeMap<Vec<u8>, u64> = oracles.into_iter().flatten().collect();
    let want: Vec<(Vec<u8>, u64)> = all.iter().map(|(k, &v)| (k.clone(), v)).collect();
    assert_eq!(entries(map), want, "{name}: final forward visit");
    let mut back = entries_rev(map);
    back.reverse();
    assert_eq!(back, want, "{name}: final backward visit");
    assert_eq!(map.len(), all.len(), "{name}: len");
    for k in universe {
        assert_eq!(
            map.get_cloned(k),
            all.get(k).copied(),
            "{name}: get {}",
            esc(k)
        );
    }
}

#[test]
fn hope_concurrent_maps_disjoint_threads_end_like_the_oracle() {
    let mut rng = TestRng::new(0xD15);
    let mut universe: Vec<Vec<u8>> = (0..1500).map(|_| email(&mut rng)).collect();
    universe.extend(concurrent::mixed_keys(600, 3, 0xD16));
    universe.sort();
    universe.dedup();
    let sample: Vec<&Vec<u8>> = universe.iter().step_by(3).collect();
    for scheme in [Scheme::DoubleChar, Scheme::ThreeGrams, Scheme::AlmImproved] {
        let enc = Arc::new(Encoder::build_with_limit(scheme, &sample, 4096).unwrap());
        let list = Hope::new(enc.clone(), SkipList::<u64>::new());
        disjoint_threads("hope skip list", &list, &universe);
        list.inner().check_invariants();
        let trie = Hope::new(enc.clone(), ConcurrentCuckooTrie::<u64>::new());
        disjoint_threads("hope cuckoo trie", &trie, &universe);
        trie.inner().check_invariants().unwrap();
    }
}

/// A static map built around the wrapper holds keys that are no encodings: the wrapper must
/// not hand them out as plain keys (the old wrapper passed them through unchanged). Random
/// byte strings are rejected by the decoder, so the cursor stops at the first one with a typed
/// error, and `Encoder::decode` refuses each.
#[test]
fn hope_cursor_refuses_keys_that_are_no_encoding() {
    let enc = encoder_for(Scheme::DoubleChar, KeyShape::Mixed, 1000);
    let mut rng = TestRng::new(17);
    let mut garbage = std::collections::BTreeSet::new();
    while garbage.len() < 200 {
        let len = 1 + rng.below(12) as usize;
        let k: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if enc.decode(&k).is_err() {
            garbage.insert(k);
        }
    }
    for k in &garbage {
        assert!(matches!(enc.decode(k), Err(Error::Format { .. })), "{k:?}");
    }
    let raw = Fst::from_sorted(garbage.iter().map(|k| (k, 1))).unwrap();
    let map = Hope::new(enc.clone(), raw);
    // The wrapper decodes without the re-encoding check, so a key might decode to some other
    // key; none may come out unchanged, and the cursor must stop with a typed error.
    let mut c = map.cursor(..);
    let mut yielded = 0;
    while let Some((k, _)) = c.next() {
        assert!(!garbage.contains(k), "{k:?} came out unchanged");
        yielded += 1;
    }
    assert!(yielded < garbage.len());
    assert!(matches!(c.error(), Some(Error::Format { .. })));
    assert!(c.next_back().is_none());
    for (k, _) in map.range(..).chain(map.iter().rev()) {
        assert!(!garbage.contains(&k), "{k:?} came out unchanged");
    }
}
