//! Integration tests of [`mlpdex::dynamic_surf::DynamicSurf`]
//! (`cargo test -p mlpdex --test dynamic_surf`).
//!
//! 1. **No false negatives across many merges**, for every kind: about 200 merges over an
//!    adversarial key stream (the empty key, prefix chains, 0x00/0xFF keys, long shared
//!    prefixes, multi-KiB keys, random 8-byte keys, e-mail addresses), checked between merges
//!    with point queries of inserted keys and range queries holding one, with every bound
//!    kind. 10^7 queries per kind with `cargo test --release` (about 25 seconds for all
//!    kinds), `DEBUG_QUERIES` per kind under the test profile (debug assertions on, about 5
//!    seconds); `MLPDEX_DYNAMIC_SURF_QUERIES` overrides both.
//! 2. **Properties** (proptest): random insert / merge / query sequences against a `BTreeSet`
//!    oracle: every oracle key passes `may_contain`, every range holding one (all bound kinds)
//!    passes `may_contain_range`, `approx_count` is never below the dynamic stage's share.
//! 3. **False positives stay bounded** after many merges, for points and ranges (loose bounds,
//!    deterministic seeds), and merging degrades no SuRF-Base entry.
//! 4. **API**: errors (configuration, kinds, long keys), `len`, `Debug`, `Extend`, stats,
//!    starting from a built or loaded SuRF, queries that allocate nothing.
//! 5. `fpr_drift_table` (ignored): the false-positive drift table of the module docs.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ops::Bound;

use mlpdex::dynamic_surf::{Config, DynamicSurf};
use mlpdex::surf::{Surf, SurfKind};
use mlpdex::testing::{KeyShape, TestRng};
use mlpdex::{Error, RangeFilter};

const KINDS: &[SurfKind] = &[
    SurfKind::Base,
    SurfKind::Hash(8),
    SurfKind::Real(8),
    SurfKind::Real(5),
    SurfKind::Real(64),
    SurfKind::Mixed { hash: 4, real: 8 },
    SurfKind::Mixed { hash: 3, real: 13 },
];

/// Queries per kind of the no-false-negative run in debug builds.
const DEBUG_QUERIES: u64 = 1_000_000;

/// Queries per kind of the no-false-negative run.
fn queries_per_kind() -> u64 {
    if let Some(n) = std::env::var("MLPDEX_DYNAMIC_SURF_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if cfg!(debug_assertions) {
        DEBUG_QUERIES
    } else {
        10_000_000
    }
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

const SYLLABLES: &[&str] = &[
    "an", "be", "ca", "de", "el", "fa", "ga", "ha", "is", "jo", "ka", "li", "ma", "ne", "ol", "pa",
    "qu", "ra", "sa", "ta", "ul", "va", "wi", "xe", "ya", "zo", "mar", "son", "ber", "lin",
];
const DOMAINS: &[&str] = &[
    "gmail.com",
    "gmail.com",
    "gmail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "example.org",
    "mail.ru",
    "uni-heidelberg.de",
];

/// An e-mail-like key: `name.surname42@domain`, names made of two or three syllables; a
/// skewed, long-shared-prefix string key set.
fn email(rng: &mut TestRng) -> Vec<u8> {
    let mut s = String::new();
    for part in 0..2 {
        for _ in 0..2 + rng.below(2) {
            s.push_str(SYLLABLES[rng.index(SYLLABLES.len())]);
        }
        if part == 0 {
            s.push(*rng.pick(&['.', '_', '.']));
        }
    }
    if rng.chance(0.6) {
        s.push_str(&rng.below(1000).to_string());
    }
    s.push('@');
    s.push_str(DOMAINS[rng.index(DOMAINS.len())]);
    s.into_bytes()
}

/// One key of the adversarial stream.
fn adversarial(rng: &mut TestRng) -> Vec<u8> {
    match rng.below(100) {
        0..=29 => rng.next_u64().to_be_bytes().to_vec(),
        30..=54 => email(rng),
        55..=64 => KeyShape::PrefixChains.gen_key(rng),
        65..=72 => KeyShape::ZeroFf.gen_key(rng),
        73..=82 => KeyShape::SharedPrefix.gen_key(rng),
        83..=91 => KeyShape::RandomBytes.gen_key(rng),
        92..=95 => KeyShape::U64.gen_key(rng),
        // Multi-KiB keys are rare: each walks thousands of trie levels.
        96 if rng.chance(0.3) => KeyShape::Long.gen_key(rng),
        _ => {
            // A key one byte longer or shorter than a random 8-byte key: prefixes of each other.
            let mut k = rng.next_u64().to_be_bytes().to_vec();
            k.truncate(1 + rng.index(8));
            k
        }
    }
}

/// A key just below `k` in key order (shorter or decremented), or `None` for the empty key.
fn below(k: &[u8]) -> Option<Vec<u8>> {
    let (&last, head) = k.split_last()?;
    let mut v = head.to_vec();
    if last > 0 {
        v.push(last - 1);
        v.extend_from_slice(&[0xff; 3]);
    }
    Some(v)
}

/// A range holding `k`, with bound kinds chosen by `pick`.
fn range_around(k: &[u8], pick: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let lo = match pick % 5 {
        0 => Bound::Included(k.to_vec()),
        1 => Bound::Unbounded,
        2 => below(k).map_or(Bound::Unbounded, Bound::Excluded),
        3 => below(k).map_or(Bound::Unbounded, Bound::Included),
        _ => Bound::Included(k[..k.len() / 2].to_vec()),
    };
    let mut longer = k.to_vec();
    longer.push(0);
    let hi = match (pick / 5) % 5 {
        0 => Bound::Included(k.to_vec()),
        1 => Bound::Unbounded,
        2 => Bound::Excluded(longer),
        3 => {
            longer.extend_from_slice(&[0xff; 4]);
            Bound::Included(longer)
        }
        _ => {
            // The next key of the same length, or longer.
            let mut up = k.to_vec();
            match up.iter().rposition(|&b| b < 0xff) {
                Some(i) => {
                    up[i] += 1;
                    up.truncate(i + 1);
                }
                None => up.push(0),
            }
            Bound::Excluded(up)
        }
    };
    (lo, hi)
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

fn in_range(key: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    mlpdex::key::after_start(key, lo) && mlpdex::key::before_end(key, hi)
}

// ---------------------------------------------------------------------------------------------
// 1. No false negatives across many merges
// ---------------------------------------------------------------------------------------------

/// Inserts a stream of `keys_total` keys into `f`, and after every `check_every` inserts asks
/// `per_check` point and range queries about keys inserted so far; returns the queries asked.
fn stream_and_check(
    f: &mut DynamicSurf,
    rng: &mut TestRng,
    keys_total: usize,
    check_every: usize,
    per_check: u64,
) -> u64 {
    let mut inserted: Vec<Vec<u8>> = Vec::with_capacity(keys_total);
    let mut queries = 0;
    for i in 0..keys_total {
        let k = adversarial(rng);
        f.insert(&k).unwrap();
        inserted.push(k);
        if (i + 1) % check_every == 0 || i + 1 == keys_total {
            for _ in 0..per_check {
                // Favour recent keys (still in the dynamic stage, or just merged) and the
                // oldest (merged most often).
                let j = match rng.below(3) {
                    0 => inserted.len() - 1 - rng.index(inserted.len().min(512)),
                    1 => rng.index(inserted.len().min(4096)),
                    _ => rng.index(inserted.len()),
                };
                let k = &inserted[j];
                assert!(
                    f.may_contain(k),
                    "false negative {:?} after {} merges",
                    k,
                    f.stats().merges
                );
                let (lo, hi) = range_around(k, rng.next_u64());
                let (lo, hi) = (as_ref(&lo), as_ref(&hi));
                assert!(in_range(k, lo, hi));
                assert!(
                    f.may_contain_range((lo, hi)),
                    "range false negative {lo:?}..{hi:?} holding {k:?} after {} merges",
                    f.stats().merges
                );
                queries += 2;
            }
        }
    }
    // Every key, once, at the end.
    for k in &inserted {
        assert!(f.may_contain(k), "false negative {k:?} at the end");
        queries += 1;
    }
    queries
}

#[test]
fn no_false_negatives_across_many_merges() {
    let total = queries_per_kind();
    for (i, &kind) in KINDS.iter().enumerate() {
        // About 200 merges of 256 keys (the ratio keeps the trigger at `min_merge`).
        let config = Config {
            ratio: 1000,
            min_merge: 256,
        };
        let mut f = DynamicSurf::with_config(kind, config).unwrap();
        let mut rng = TestRng::new(0xD5 + i as u64);
        let keys_total = 200 * 256;
        let checks = keys_total / 100;
        let per_check = (total / 2).div_ceil(checks as u64);
        let asked = stream_and_check(&mut f, &mut rng, keys_total, 100, per_check);
        let s = f.stats();
        assert!(s.merges >= 150, "{kind:?}: {} merges", s.merges);
        assert!(asked >= total, "{kind:?}: {asked} queries");
        if kind == SurfKind::Base {
            assert_eq!(s.degraded, 0);
        }
        eprintln!(
            "{kind:?}: {asked} queries, {} merges, {} entries ({} degraded), {:.1} bits/key",
            s.merges,
            s.entries,
            s.degraded,
            f.bits_per_key()
        );
    }
}

/// Merges under the default ratio, with the static stage started from a built SuRF: the
/// trigger grows with the static stage.
#[test]
fn from_sorted_then_ratio_merges() {
    for &kind in KINDS {
        let mut rng = TestRng::new(7);
        let first: BTreeSet<Vec<u8>> = (0..3000).map(|_| adversarial(&mut rng)).collect();
        let surf = Surf::from_sorted(kind, &first).unwrap();
        let mut f = DynamicSurf::from_surf(
            surf,
            Config {
                ratio: 4,
                min_merge: 100,
            },
        )
        .unwrap();
        let mut all = first.clone();
        for _ in 0..12_000 {
            let k = adversarial(&mut rng);
            f.insert(&k).unwrap();
            all.insert(k);
        }
        assert!(f.stats().merges >= 3, "{kind:?}");
        for k in &all {
            assert!(f.may_contain(k), "{kind:?} {k:?}");
        }
        f.merge().unwrap();
        assert_eq!(f.dynamic_len(), 0);
        for k in &all {
            assert!(f.may_contain(k), "{kind:?} {k:?}");
            assert!(f.may_contain_range(k.as_slice()..=k.as_slice()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Properties against a BTreeSet oracle
// ---------------------------------------------------------------------------------------------

mod properties {
    use std::collections::BTreeSet;
    use std::ops::Bound;

    use mlpdex::dynamic_surf::{Config, DynamicSurf};
    use mlpdex::surf::SurfKind;
    use proptest::prelude::*;

    /// Keys over a small alphabet (0x00, 0x01, `a`, `b`, 0xFE, 0xFF), so that keys share
    /// prefixes, are prefixes of each other and land in each other's regions; sometimes long.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            Just(0u8),
            Just(1u8),
            Just(b'a'),
            Just(b'b'),
            Just(0xfeu8),
            Just(0xffu8),
            any::<u8>()
        ];
        prop_oneof![
            8 => proptest::collection::vec(byte.clone(), 0..7),
            1 => proptest::collection::vec(byte, 0..48),
        ]
    }

    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            key().prop_map(Bound::Included),
            key().prop_map(Bound::Excluded),
            Just(Bound::Unbounded),
        ]
    }

    fn kind() -> impl Strategy<Value = SurfKind> {
        prop_oneof![
            Just(SurfKind::Base),
            (1u8..=64).prop_map(SurfKind::Hash),
            (1u8..=64).prop_map(SurfKind::Real),
            (1u8..=32, 1u8..=32).prop_map(|(hash, real)| SurfKind::Mixed { hash, real }),
        ]
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(Vec<u8>),
        Merge,
        Point(Vec<u8>),
        Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => key().prop_map(Op::Insert),
            1 => Just(Op::Merge),
            2 => key().prop_map(Op::Point),
            2 => (bound(), bound()).prop_map(|(a, b)| Op::Range(a, b)),
        ]
    }

    fn check_all(f: &DynamicSurf, oracle: &BTreeSet<Vec<u8>>) -> Result<(), TestCaseError> {
        for k in oracle {
            prop_assert!(f.may_contain(k), "false negative {:?}", k);
            prop_assert!(f.may_contain_range(k.as_slice()..=k.as_slice()));
            let mut next = k.clone();
            next.push(0);
            prop_assert!(f.may_contain_range(k.as_slice()..next.as_slice()));
            prop_assert!(f.may_contain_range((Bound::Unbounded, Bound::Included(k.as_slice()))));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// No false negative for points and ranges of every bound kind, through any sequence
        /// of inserts and merges (automatic ones with a tiny trigger, and forced ones).
        #[test]
        fn never_a_false_negative(
            kind in kind(),
            ratio in 1u32..5,
            min_merge in 1usize..9,
            ops in proptest::collection::vec(op(), 0..160),
        ) {
            let mut f = DynamicSurf::with_config(kind, Config { ratio, min_merge }).unwrap();
            let mut oracle = BTreeSet::new();
            for op in &ops {
                match op {
                    Op::Insert(k) => {
                        f.insert(k).unwrap();
                        oracle.insert(k.clone());
                    }
                    Op::Merge => f.merge().unwrap(),
                    Op::Point(k) => {
                        if oracle.contains(k) {
                            prop_assert!(f.may_contain(k));
                        }
                    }
                    Op::Range(a, b) => {
                        let (lo, hi) = (a.as_ref().map(Vec::as_slice), b.as_ref().map(Vec::as_slice));
                        let exact = if mlpdex::key::is_empty_range(lo, hi) {
                            0
                        } else {
                            oracle.range::<[u8], _>((lo, hi)).count() as u64
                        };
                        let ans = f.may_contain_range((lo, hi));
                        if exact > 0 {
                            prop_assert!(ans, "range {:?}..{:?} holds {} keys", lo, hi, exact);
                        }
                        if mlpdex::key::is_empty_range(lo, hi) {
                            prop_assert!(!ans);
                        }
                    }
                }
            }
            check_all(&f, &oracle)?;
            f.merge().unwrap();
            prop_assert_eq!(f.dynamic_len(), 0);
            check_all(&f, &oracle)?;
            prop_assert!(f.len() >= oracle.len());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. False positives stay bounded
// ---------------------------------------------------------------------------------------------

/// Point and range false-positive rates of `f` over `set` (random 8-byte keys): absent random
/// keys, and ranges `[x, x + gap)` that hold no key.
fn int_fprs(f: &DynamicSurf, set: &BTreeSet<u64>, rng: &mut TestRng, probes: usize) -> (f64, f64) {
    let gap = u64::MAX / set.len().max(1) as u64 / 4;
    let (mut neg, mut fp, mut rneg, mut rfp) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..probes {
        let x = rng.next_u64();
        if !set.contains(&x) {
            neg += 1;
            fp += f.may_contain(&x.to_be_bytes()) as u64;
        }
        let hi = x.saturating_add(gap);
        if set.range(x..hi).next().is_none() {
            rneg += 1;
            rfp += f.may_contain_range(x.to_be_bytes()..hi.to_be_bytes()) as u64;
        }
    }
    (
        fp as f64 / neg.max(1) as f64,
        rfp as f64 / rneg.max(1) as f64,
    )
}

#[test]
fn false_positive_rates_stay_bounded_after_many_merges() {
    let n = 100_000;
    for (kind, point_max, range_max) in [
        // SuRF-Base's regions freeze at the coarse cuts of the early merges: on random keys
        // it drifts towards accepting everything (module docs, "False-positive drift").
        (SurfKind::Base, 0.95, 0.95),
        (SurfKind::Hash(8), 0.8, 0.95),
        (SurfKind::Real(8), 0.05, 0.05),
        (SurfKind::Mixed { hash: 4, real: 8 }, 0.05, 0.05),
    ] {
        let mut rng = TestRng::new(41);
        let mut f = DynamicSurf::with_config(
            kind,
            Config {
                ratio: 10,
                min_merge: 512,
            },
        )
        .unwrap();
        let mut set = BTreeSet::new();
        for _ in 0..n {
            let x = rng.next_u64();
            f.insert(&x.to_be_bytes()).unwrap();
            set.insert(x);
        }
        assert!(
            f.stats().merges >= 20,
            "{kind:?}: {} merges",
            f.stats().merges
        );
        let (p, r) = int_fprs(&f, &set, &mut rng, 50_000);
        eprintln!(
            "{kind:?}: {} merges, point FPR {p:.4}, range FPR {r:.4}, {:.1} bits/key, {} degraded",
            f.stats().merges,
            f.bits_per_key(),
            f.stats().degraded
        );
        assert!(p <= point_max, "{kind:?} point FPR {p}");
        assert!(r <= range_max, "{kind:?} range FPR {r}");
        // A filter that answers yes to everything is caught: most negatives are rejected.
        assert!(p < 0.95 && r < 0.95);
    }
}

#[test]
fn a_never_merged_filter_is_as_good_as_its_surf() {
    let mut rng = TestRng::new(5);
    let keys: BTreeSet<[u8; 8]> = (0..20_000).map(|_| rng.next_u64().to_be_bytes()).collect();
    let surf = Surf::from_sorted(SurfKind::Real(8), &keys).unwrap();
    let f = DynamicSurf::from_sorted(SurfKind::Real(8), &keys).unwrap();
    for _ in 0..20_000 {
        let q = rng.next_u64().to_be_bytes();
        assert_eq!(f.may_contain(&q), surf.may_contain(&q));
        let hi = u64::from_be_bytes(q).saturating_add(1 << 44).to_be_bytes();
        assert_eq!(f.may_contain_range(q..hi), surf.may_contain_range(q..hi));
    }
}

// ---------------------------------------------------------------------------------------------
// 4. API
// ---------------------------------------------------------------------------------------------

#[test]
fn configuration_and_kind_errors() {
    for bad in [
        Config {
            ratio: 0,
            min_merge: 1,
        },
        Config {
            ratio: 1,
            min_merge: 0,
        },
    ] {
        assert!(matches!(
            DynamicSurf::with_config(SurfKind::Base, bad),
            Err(Error::InvalidConfig { .. })
        ));
    }
    for kind in [
        SurfKind::Hash(0),
        SurfKind::Real(65),
        SurfKind::Mixed { hash: 0, real: 3 },
        SurfKind::Mixed { hash: 33, real: 3 },
    ] {
        assert!(matches!(
            DynamicSurf::new(kind),
            Err(Error::InvalidConfig { .. })
        ));
    }
    assert!(matches!(
        DynamicSurf::from_sorted(SurfKind::Base, ["b", "a"]),
        Err(Error::OutOfOrder { .. })
    ));
}

#[test]
fn too_long_keys_are_refused_and_change_nothing() {
    let mut f = DynamicSurf::new(SurfKind::Real(8)).unwrap();
    f.insert(b"short").unwrap();
    let long = vec![7u8; mlpdex::cuckoo_trie::CuckooTrie::<()>::MAX_KEY_LEN + 1];
    assert!(matches!(f.insert(&long), Err(Error::KeyTooLong { .. })));
    assert_eq!(f.len(), 1);
    assert!(f.try_extend([&b"a"[..], &long, b"z"]).is_err());
    assert_eq!(f.len(), 2);
    assert!(!f.may_contain(b"z"));
}

#[test]
fn len_debug_extend_and_stats() {
    let mut f = DynamicSurf::with_config(
        SurfKind::Mixed { hash: 4, real: 8 },
        Config {
            ratio: 10,
            min_merge: 3,
        },
    )
    .unwrap();
    assert!(f.is_empty());
    f.extend(["a", "b", "a"]);
    assert_eq!((f.len(), f.dynamic_len(), f.stats().merges), (2, 2, 0));
    f.extend([b"c".to_vec()]);
    assert_eq!((f.len(), f.dynamic_len(), f.stats().merges), (3, 0, 1));
    let s = f.stats();
    assert_eq!((s.last_keys, s.last_kept, s.entries), (3, 3, 3));
    assert!(s.total >= s.last);
    let shown = format!("{f:?}");
    assert!(
        shown.starts_with("DynamicSurf {") && shown.contains("merges: 1"),
        "{shown}"
    );
    assert!(!shown.contains("\"a\""), "Debug lists no keys: {shown}");
    assert!(f.memory_usage() > 0 && RangeFilter::memory_usage(&f) == f.memory_usage());
    // The empty key, in both stages.
    assert!(!f.may_contain(b""));
    f.insert(b"").unwrap();
    assert!(f.may_contain(b""));
    f.merge().unwrap();
    assert!(f.may_contain(b"") && f.may_contain_range(..=&b""[..]));
    assert_eq!(f.approx_count(..), 4);
    // The SuRF's estimate may count one entry too many at each end.
    assert!((1..=2).contains(&RangeFilter::approx_count(&f, "b".."c")));
    assert!(!f.may_contain_range("c".."a"));
    assert!(!f.may_contain_range("d"..));
    // A merge of nothing does nothing.
    let merges = f.stats().merges;
    f.merge().unwrap();
    assert_eq!(f.stats().merges, merges);
}

/// A key under an old entry's prefix whose suffix bits differ degrades that entry; the entry
/// then still admits what it admitted, and the new key too.
#[test]
fn conflicting_keys_degrade_entries_and_stay_visible() {
    let mut f = DynamicSurf::from_sorted(SurfKind::Hash(16), ["apple", "banana"]).unwrap();
    // "a" and "b" are the entries; "avocado" falls under "a" with other hash bits.
    assert!(!f.may_contain(b"avocado"));
    f.insert(b"avocado").unwrap();
    f.merge().unwrap();
    assert!(f.may_contain(b"apple") && f.may_contain(b"avocado") && f.may_contain(b"banana"));
    assert_eq!(f.stats().degraded, 1);
    // Degraded: everything under its prefix passes now (the price of a lost hash).
    assert!(f.may_contain(b"apricot"));
    assert!(!f.may_contain(b"blueberry"));

    // Real bits: the entry's path grows by its real byte, so it stays as selective.
    let mut f = DynamicSurf::from_sorted(SurfKind::Real(8), ["apple", "banana"]).unwrap();
    f.insert(b"avocado").unwrap();
    f.merge().unwrap();
    for k in ["apple", "avocado", "banana"] {
        assert!(f.may_contain(k.as_bytes()), "{k}");
        assert!(f.may_contain_range(k..=k), "{k}");
    }
    assert!(f.may_contain(b"apricot"), "under the kept path \"ap\"");
    assert!(!f.may_contain(b"axe") && !f.may_contain(b"a"));
}

#[test]
fn queries_allocate_nothing() {
    let mut f = DynamicSurf::with_config(
        SurfKind::Real(8),
        Config {
            ratio: 10,
            min_merge: 100,
        },
    )
    .unwrap();
    let mut rng = TestRng::new(3);
    let keys: Vec<[u8; 8]> = (0..1050).map(|_| rng.next_u64().to_be_bytes()).collect();
    for k in &keys {
        f.insert(k).unwrap();
    }
    assert!(f.dynamic_len() > 0 && f.stats().merges > 0);
    let ask = |f: &DynamicSurf| {
        let mut yes = 0;
        for k in &keys {
            yes += f.may_contain(k) as u32;
            yes += f.may_contain_range(k.as_slice()..=k.as_slice()) as u32;
            yes += f.may_contain(&k[..5]) as u32;
            yes += f.may_contain_range((Bound::Excluded(&k[..]), Bound::Unbounded)) as u32;
        }
        yes
    };
    // The first pass grows this thread's reusable seek path to the trie's height.
    ask(&f);
    let before = ALLOCS.with(Cell::get);
    let yes = ask(&f);
    assert_eq!(ALLOCS.with(Cell::get), before, "a query allocated");
    assert!(yes >= 2 * keys.len() as u32);
}

// Counts this thread's allocations, for `queries_allocate_nothing`.
struct CountingAlloc;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` unchanged; the count touches only a
// const-initialized thread-local, which never allocates.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: the caller's contract is `System.alloc`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

// ---------------------------------------------------------------------------------------------
// 5. The drift table of the module docs
// ---------------------------------------------------------------------------------------------

/// How the drift table's filter receives `keys`.
#[derive(Clone, Copy, Debug)]
enum Schedule {
    /// `Surf::from_sorted` over every key: no merge.
    Fresh,
    /// The first half built with `from_sorted`, the second half inserted in `m` equal
    /// batches, each merged: the set grows 2x, over `m` merges.
    Half(usize),
    /// Every key inserted into `DynamicSurf::new` (ratio 10, min_merge 4096), then one final
    /// merge: the set grows from nothing under the default policy.
    Default,
}

fn fill(kind: SurfKind, keys: &[Vec<u8>], schedule: Schedule) -> DynamicSurf {
    let manual = Config {
        ratio: u32::MAX,
        min_merge: usize::MAX,
    };
    let from = |n: usize| {
        let mut first: Vec<&Vec<u8>> = keys[..n].iter().collect();
        first.sort();
        DynamicSurf::from_surf(Surf::from_sorted(kind, first).unwrap(), manual).unwrap()
    };
    match schedule {
        Schedule::Fresh => from(keys.len()),
        Schedule::Half(m) => {
            let mut f = from(keys.len() / 2);
            let rest = &keys[keys.len() / 2..];
            for chunk in rest.chunks(rest.len().div_ceil(m)) {
                for k in chunk {
                    f.insert(k).unwrap();
                }
                f.merge().unwrap();
            }
            assert_eq!(f.stats().merges as usize, m);
            f
        }
        Schedule::Default => {
            let mut f = DynamicSurf::new(kind).unwrap();
            for k in keys {
                f.insert(k).unwrap();
            }
            f.merge().unwrap();
            f
        }
    }
}

/// Prints the module docs' table: point and range FPR and bits per key of a fresh SuRF, after
/// the set doubled over 1, 10 and 100 merges, and after growing from nothing under the
/// default policy; on random 8-byte keys and on e-mail addresses.
#[test]
#[ignore = "minutes in release; prints the drift table of the dynamic_surf docs"]
fn fpr_drift_table() {
    let n = std::env::var("MLPDEX_DRIFT_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000usize);
    let probes = 200_000;
    const KINDS: [SurfKind; 4] = [
        SurfKind::Base,
        SurfKind::Hash(8),
        SurfKind::Real(8),
        SurfKind::Mixed { hash: 4, real: 8 },
    ];
    println!(
        "| keys ({n}) | schedule | merges | Base | Hash(8) | Real(8) | Mixed {{ hash: 4, real: 8 }} |"
    );
    println!("|---|---|---|---|---|---|---|");
    for data in ["rand-8", "email"] {
        let mut rng = TestRng::new(2024);
        let draw = |rng: &mut TestRng| -> Vec<u8> {
            if data == "rand-8" {
                rng.next_u64().to_be_bytes().to_vec()
            } else {
                email(rng)
            }
        };
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n);
        let mut seen = BTreeSet::new();
        while keys.len() < n {
            let k = draw(&mut rng);
            if seen.insert(k.clone()) {
                keys.push(k);
            }
        }
        // Probes: absent keys of the same distribution, and the empty ranges right after
        // them, about one key gap wide for integers, the keys extending the probe for e-mail.
        let mut points = Vec::new();
        while points.len() < probes {
            let k = draw(&mut rng);
            if !seen.contains(&k) {
                points.push(k);
            }
        }
        let ranges: Vec<(Vec<u8>, Vec<u8>)> = points
            .iter()
            .map(|q| {
                let hi = if data == "rand-8" {
                    let x = u64::from_be_bytes(q[..8].try_into().unwrap());
                    x.saturating_add(u64::MAX / n as u64).to_be_bytes().to_vec()
                } else {
                    let mut hi = q.clone();
                    hi.push(0xff);
                    hi
                };
                (q.clone(), hi)
            })
            .filter(|(lo, hi)| seen.range(lo.clone()..hi.clone()).next().is_none())
            .collect();
        for schedule in [
            Schedule::Fresh,
            Schedule::Half(1),
            Schedule::Half(10),
            Schedule::Half(100),
            Schedule::Default,
        ] {
            let mut cells = Vec::new();
            let mut merges = Vec::new();
            for kind in KINDS {
                let f = fill(kind, &keys, schedule);
                for k in keys.iter().step_by(97) {
                    assert!(f.may_contain(k));
                }
                let p =
                    points.iter().filter(|q| f.may_contain(q)).count() as f64 / points.len() as f64;
                let r = ranges
                    .iter()
                    .filter(|(lo, hi)| f.may_contain_range(lo.as_slice()..hi.as_slice()))
                    .count() as f64
                    / ranges.len().max(1) as f64;
                let s = f.stats();
                cells.push(format!(
                    "{:.2}% / {:.2}%, {:.1} b, {:.0}% deg.",
                    p * 100.0,
                    r * 100.0,
                    f.bits_per_key(),
                    s.degraded as f64 * 100.0 / s.entries.max(1) as f64
                ));
                merges.push(s.merges);
            }
            let (lo, hi) = (merges.iter().min().unwrap(), merges.iter().max().unwrap());
            let merges = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}–{hi}")
            };
            let sched = match schedule {
                Schedule::Fresh => "fresh SuRF",
                Schedule::Half(_) => "half, then 2x",
                Schedule::Default => "from empty, default policy",
            };
            println!("| {data} | {sched} | {merges} | {} |", cells.join(" | "));
        }
    }
}

/// A filter grown from empty by merges alone drifts; `rebuild` from the key set makes it
/// answer exactly as a SuRF built over that set and the dynamic stage's keys, drops the keys
/// left out (deletes), and refuses unsorted input without changing anything.
#[test]
fn rebuild_answers_as_a_fresh_surf_and_applies_deletes() {
    for kind in [SurfKind::Base, SurfKind::Hash(8), SurfKind::Real(8)] {
        let cfg = Config {
            ratio: 10,
            min_merge: 64,
        };
        let mut f = DynamicSurf::with_config(kind, cfg).unwrap();
        let mut rng = TestRng::new(0xB1D);
        let mut keys = BTreeSet::new();
        while keys.len() < 20_000 {
            let k = rng.next_u64().to_be_bytes().to_vec();
            f.insert(&k).unwrap();
            keys.insert(k);
        }
        assert!(f.stats().merges > 10);
        // The store keeps every other key; three late keys sit in the dynamic stage.
        let kept: Vec<Vec<u8>> = keys.iter().step_by(2).cloned().collect();
        let late: Vec<Vec<u8>> = (0..3).map(|i| vec![0x80, i]).collect();
        f.merge().unwrap();
        for k in &late {
            f.insert(k).unwrap();
        }
        // Unsorted input is an error and changes nothing.
        let before = (f.len(), f.stats(), f.dynamic_len());
        let unsorted = [b"b".to_vec(), b"a".to_vec()];
        assert!(matches!(
            f.rebuild(&unsorted),
            Err(Error::OutOfOrder { .. })
        ));
        assert_eq!((f.len(), f.stats(), f.dynamic_len()), before);

        let union: BTreeSet<Vec<u8>> = kept.iter().chain(&late).cloned().collect();
        let fresh = Surf::from_sorted(kind, &union).unwrap();
        let probes: Vec<[u8; 8]> = (0..20_000).map(|_| rng.next_u64().to_be_bytes()).collect();
        let admitted = |g: &dyn Fn(&[u8]) -> bool| probes.iter().filter(|p| g(&p[..])).count();
        let drifted = admitted(&|p| f.may_contain(p));
        let fresh_fp = admitted(&|p| fresh.may_contain(p));
        assert!(
            drifted > fresh_fp,
            "{kind:?}: no drift to undo ({drifted} vs {fresh_fp})"
        );

        f.rebuild(&kept).unwrap();
        assert_eq!(f.len(), union.len());
        assert_eq!(
            (f.dynamic_len(), f.stats().rebuilds, f.stats().degraded),
            (0, 1, 0)
        );
        for k in &union {
            assert!(f.may_contain(k), "{kind:?}: {k:?} lost by the rebuild");
        }
        for _ in 0..20_000 {
            let p = rng.next_u64().to_be_bytes();
            assert_eq!(
                f.may_contain(&p),
                fresh.may_contain(&p),
                "{kind:?}: probe {p:?}"
            );
            let hi = p.map(|b| b | 0x0F);
            assert_eq!(
                f.may_contain_range(&p[..]..=&hi[..]),
                fresh.may_contain_range(&p[..]..=&hi[..]),
                "{kind:?}: range from {p:?}"
            );
        }
        // Keys dropped by the store are answered as a fresh SuRF without them answers.
        for k in keys.iter().skip(1).step_by(2) {
            assert_eq!(
                f.may_contain(k),
                fresh.may_contain(k),
                "{kind:?}: dropped {k:?}"
            );
        }
    }
}
