//! Integration tests of [`mlpdex::cuckoo_trie::CuckooTrie`] through its public API
//! (`cargo test -p mlpdex --test cuckoo_trie`).
//!
//! What is covered:
//!
//! 1. **Differential runs** against the `BTreeMap` oracle of the testing driver for every
//!    [`KeyShape`] (the byte-string shapes and `U64`), several seeds each, with the default
//!    [`Config`], with a config that grows the table often (`initial_buckets: 1`, a one-bucket
//!    table from the allocator, and `max_load_factor: 0.5`) and with each `symbol_bits` in
//!    `1..=5`. Each run is followed by an *audited churn*: a hand-written insert/remove sequence
//!    compared step by step with a `BTreeMap`, calling `check_invariants()` every
//!    [`AUDIT_EVERY`] steps, then comparing full forward and reverse iteration, seeks and ranges
//!    with every `Bound` kind, then draining the map.
//! 2. **Property tests**: `run_ops` on arbitrary operation sequences (default config, a growing
//!    config with every symbol size, 8-byte integer keys), and ranges, `lower_bound` and
//!    `upper_bound` over arbitrary key sets and bounds compared with `BTreeMap`.
//! 3. **Growth and shrinking**: 200k pseudo-random 8-byte keys and 20k az-like keys (about 36
//!    bytes with long shared prefixes) inserted from the smallest table, checked, all removed
//!    (memory must drop back to at most [`SHRINK_FACTOR`] times an empty map's), reinserted, and
//!    finally cleared (same memory bound).
//! 4. **Generic values**: `String`s, values counting their drops (updates return the old value,
//!    `remove` returns the value, `clear` and `Drop` drop every live value exactly once, a refused
//!    insert drops its value once), zero-sized values, over-aligned and large values, `get_mut`.
//! 5. **Edge keys**: the empty key, keys that are prefixes of each other (in every insertion
//!    order), keys of only 0x00/0xFF, 1–8 KiB keys differing only in the last byte or only by
//!    length, a key of exactly `MAX_KEY_LEN` (accepted) and one byte more (refused with
//!    `Error::KeyTooLong`, the map unchanged).
//! 6. **Configuration**: `with_config` refuses every out-of-range field with
//!    `Error::InvalidConfig` and accepts the ends of each range.
//! 7. **Seeks and ranges on small maps**: `first`/`last`/`lower_bound`/`upper_bound` with every
//!    bound kind on every subset of a small key universe, an empty map answering `None`
//!    everywhere, and empty or inverted ranges yielding nothing.
//!
//! Failures found so far are kept as `repro_*` tests at the end. To measure the heap one call
//! needs, the file installs a counting global allocator (per thread, so parallel tests do not
//! disturb each other).
//!
//! No test asserts on timing. The file takes about 20 s in the test profile on 2 cores; its peak
//! RSS, about 1 GB, comes from `check_invariants()` on 8 KiB keys at 1-bit symbols (see the
//! repro).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::fmt::{self, Debug};
use std::ops::Bound;
use std::rc::Rc;

use mlpdex::Error;
use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config, CuckooTrie};
use mlpdex::key::{Escaped, is_empty_range, show_bound};
use mlpdex::testing::{
    KeyShape, TestRng, arb_key, arb_ops, arb_ops_with, arb_u64_key, permutations, run_ops,
    try_differential_ordered,
};
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------------------------
// Budgets
// ---------------------------------------------------------------------------------------------

/// Steps of one differential run: a whole grow–churn–shrink cycle of the driver (8000 steps).
const DIFF_STEPS: usize = 8_000;
/// Steps of one differential run with [`KeyShape::Long`] (1–8 KiB keys) at 5-bit symbols; fewer
/// with narrower symbols, whose paths are proportionally deeper.
const DIFF_STEPS_LONG: usize = 1_500;
/// Steps of one audited churn.
const CHURN_STEPS: usize = 1_500;
/// Steps of one audited churn with [`KeyShape::Long`] at 5-bit symbols.
const CHURN_STEPS_LONG: usize = 300;
/// An audited churn calls `check_invariants()` every this many steps.
const AUDIT_EVERY: usize = 50;
/// After removing every key, `memory_usage()` must be at most this many times that of a freshly
/// created empty map with the same config: the table must shrink back, not keep its peak size.
const SHRINK_FACTOR: usize = 4;
/// One page of buckets: the least an empty map is documented to hold, used as the floor of the
/// shrink comparison in case an empty map allocates lazily.
const PAGE: usize = 4096;

fn diff_steps(shape: KeyShape, bits: u32) -> usize {
    match shape {
        KeyShape::Long => (DIFF_STEPS_LONG * bits as usize / 5).max(200),
        _ => DIFF_STEPS,
    }
}

fn churn_steps(shape: KeyShape, bits: u32) -> usize {
    match shape {
        KeyShape::Long => (CHURN_STEPS_LONG * bits as usize / 5).max(100),
        _ => CHURN_STEPS,
    }
}

// ---------------------------------------------------------------------------------------------
// Configs and small helpers
// ---------------------------------------------------------------------------------------------

fn default_config() -> Config {
    Config::default()
}

/// A config that makes the table grow often: one bucket to start, resize at half load.
fn growth_config() -> Config {
    Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    }
}

/// The smallest table with the default load factor.
fn smallest_table_config() -> Config {
    Config {
        initial_buckets: 1,
        ..Config::default()
    }
}

/// The key index on, in a table that starts at one bucket and grows at half load, so the
/// index is rebuilt by many resizes.
fn key_index_config() -> Config {
    Config {
        key_index: true,
        ..growth_config()
    }
}

fn bits_config(bits: u32) -> Config {
    Config {
        symbol_bits: bits,
        ..Config::default()
    }
}

fn trie<V>(cfg: Config) -> CuckooTrie<V> {
    match CuckooTrie::with_config(cfg) {
        Ok(map) => map,
        Err(e) => panic!("with_config refused a valid config: {e}"),
    }
}

fn all_shapes() -> impl Iterator<Item = KeyShape> {
    KeyShape::ALL.iter().copied()
}

fn audit<V>(map: &CuckooTrie<V>, ctx: &str) {
    if let Err(e) = map.check_invariants() {
        panic!("{ctx}: check_invariants() failed: {e}");
    }
}

/// The SplitMix64 finalizer: a bijection on `u64`, so distinct inputs give distinct keys.
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random permutation of `0..n`.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| mix64(i as u64 ^ seed.wrapping_mul(0xD6E8_FEB8_6659_FD93)));
    order
}

type Entry<'a, V> = (&'a [u8], &'a V);

fn show_entry<V: Debug>(e: Option<&Entry<'_, V>>) -> String {
    match e {
        Some((k, v)) => format!("Some(({}, {v:?}))", Escaped(k)),
        None => "None".to_string(),
    }
}

/// Every bound kind around `k`.
fn bounds_of(k: &[u8]) -> [Bound<&[u8]>; 3] {
    [Bound::Included(k), Bound::Excluded(k), Bound::Unbounded]
}

/// Keys next to `key`: one byte longer (0x00 and 0xFF), one shorter, last byte incremented.
fn neighbours(key: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(4);
    let mut k = key.to_vec();
    k.push(0x00);
    out.push(k);
    let mut k = key.to_vec();
    k.push(0xff);
    out.push(k);
    if !key.is_empty() {
        out.push(key[..key.len() - 1].to_vec());
        let mut k = key.to_vec();
        match k.last_mut() {
            Some(b) if *b < 0xff => *b += 1,
            _ => k.push(0x01),
        }
        out.push(k);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Comparing a map with the oracle
// ---------------------------------------------------------------------------------------------

type Oracle<V> = BTreeMap<Vec<u8>, V>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The oracle's entries within `(s, e)`; none for an empty or inverted range.
fn oracle_range<'a, V>(
    oracle: &'a Oracle<V>,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
) -> Vec<Entry<'a, V>> {
    if is_empty_range(s, e) {
        return Vec::new();
    }
    oracle
        .range::<[u8], _>((s, e))
        .map(|(k, v)| (k.as_slice(), v))
        .collect()
}

fn expect_entries<V: PartialEq + Debug>(
    what: impl FnOnce() -> String,
    want: &[Entry<'_, V>],
    got: &[Entry<'_, V>],
) -> Result<(), String> {
    if want == got {
        return Ok(());
    }
    let i = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    Err(format!(
        "{}: expected {} entries, got {}; first difference at #{i}: expected {}, got {}",
        what(),
        want.len(),
        got.len(),
        show_entry(want.get(i)),
        show_entry(got.get(i)),
    ))
}

/// `range((s, e))` walked forward, backward, and alternating ends, against the oracle.
fn check_range<V: PartialEq + Debug>(
    map: &CuckooTrie<V>,
    oracle: &Oracle<V>,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    ctx: &str,
) -> Result<(), String> {
    let want = oracle_range(oracle, s, e);
    let what = |how: &str| format!("{ctx}: range({}, {}) {how}", show_bound(s), show_bound(e));
    let fwd: Vec<_> = map.range((s, e)).collect();
    expect_entries(|| what("forward"), &want, &fwd)?;
    let mut back: Vec<_> = map.range((s, e)).rev().collect();
    back.reverse();
    expect_entries(|| what("backward (reversed)"), &want, &back)?;
    // Alternating next / next_back until the ends meet; both ends must then be exhausted.
    let mut it = map.range((s, e));
    let (mut lo, mut hi) = (0, want.len());
    for call in 0.. {
        let front = call % 2 == 0;
        let got = if front { it.next() } else { it.next_back() };
        let exp = if lo == hi {
            None
        } else if front {
            lo += 1;
            Some(want[lo - 1])
        } else {
            hi -= 1;
            Some(want[hi])
        };
        ensure!(
            got == exp,
            "{} call #{call} ({}): expected {}, got {}",
            what("alternating ends"),
            if front { "next" } else { "next_back" },
            show_entry(exp.as_ref()),
            show_entry(got.as_ref())
        );
        if exp.is_none() {
            let other = if front { it.next_back() } else { it.next() };
            ensure!(
                other.is_none(),
                "{}: after the ends met, the other end returned {}",
                what("alternating ends"),
                show_entry(other.as_ref())
            );
            break;
        }
    }
    Ok(())
}

/// `get`, `lower_bound` and `upper_bound` with every bound kind around `probe`.
fn check_seeks<V: PartialEq + Debug>(
    map: &CuckooTrie<V>,
    oracle: &Oracle<V>,
    probe: &[u8],
    ctx: &str,
) -> Result<(), String> {
    let want = oracle.get(probe);
    let got = map.get(probe);
    ensure!(
        want == got,
        "{ctx}: get({}) expected {want:?}, got {got:?}",
        Escaped(probe)
    );
    ensure!(
        map.contains_key(probe) == want.is_some(),
        "{ctx}: contains_key({}) disagrees with get",
        Escaped(probe)
    );
    for b in bounds_of(probe) {
        let want = oracle
            .range::<[u8], _>((b, Bound::Unbounded))
            .next()
            .map(|(k, v)| (k.as_slice(), v));
        let got = map.lower_bound(b);
        ensure!(
            want == got,
            "{ctx}: lower_bound({}) expected {}, got {}",
            show_bound(b),
            show_entry(want.as_ref()),
            show_entry(got.as_ref())
        );
        let want = oracle
            .range::<[u8], _>((Bound::Unbounded, b))
            .next_back()
            .map(|(k, v)| (k.as_slice(), v));
        let got = map.upper_bound(b);
        ensure!(
            want == got,
            "{ctx}: upper_bound({}) expected {}, got {}",
            show_bound(b),
            show_entry(want.as_ref()),
            show_entry(got.as_ref())
        );
    }
    Ok(())
}

/// `len`, full iteration both ways, `first`/`last`, seeks around every probe, and ranges with
/// every combination of bound kinds between `pairs` random pairs of probes.
fn check_all<V: PartialEq + Debug>(
    map: &CuckooTrie<V>,
    oracle: &Oracle<V>,
    probes: &[Vec<u8>],
    pairs: usize,
    rng: &mut TestRng,
    ctx: &str,
) -> Result<(), String> {
    ensure!(
        map.len() == oracle.len(),
        "{ctx}: len() expected {}, got {}",
        oracle.len(),
        map.len()
    );
    ensure!(
        map.is_empty() == oracle.is_empty(),
        "{ctx}: is_empty() expected {}",
        oracle.is_empty()
    );
    let want: Vec<Entry<'_, V>> = oracle.iter().map(|(k, v)| (k.as_slice(), v)).collect();
    let fwd: Vec<_> = map.iter().collect();
    expect_entries(|| format!("{ctx}: iter() forward"), &want, &fwd)?;
    let mut rev: Vec<_> = map.iter().rev().collect();
    rev.reverse();
    expect_entries(|| format!("{ctx}: iter() reverse (reversed)"), &want, &rev)?;
    let (first, last) = (map.first(), map.last());
    ensure!(
        first == want.first().copied(),
        "{ctx}: first() = {}",
        show_entry(first.as_ref())
    );
    ensure!(
        last == want.last().copied(),
        "{ctx}: last() = {}",
        show_entry(last.as_ref())
    );
    for p in probes {
        check_seeks(map, oracle, p, ctx)?;
    }
    check_get_batch(map, oracle, probes, ctx)?;
    if probes.is_empty() {
        return Ok(());
    }
    for _ in 0..pairs {
        let a = rng.pick(probes).clone();
        let b = rng.pick(probes).clone();
        for s in bounds_of(&a) {
            for e in bounds_of(&b) {
                check_range(map, oracle, s, e, ctx)?;
            }
        }
    }
    Ok(())
}

/// `get_batch` over the probes and every stored key, in batches whose lengths (1 to 40)
/// fall on, below and across the 16-key chunks of the batched search: each answer must be
/// the oracle's.
fn check_get_batch<V: PartialEq + Debug>(
    map: &CuckooTrie<V>,
    oracle: &Oracle<V>,
    probes: &[Vec<u8>],
    ctx: &str,
) -> Result<(), String> {
    let keys: Vec<&[u8]> = probes
        .iter()
        .chain(oracle.keys())
        .map(Vec::as_slice)
        .collect();
    let mut out = vec![None; 40];
    let mut rest = &keys[..];
    for len in [1, 15, 16, 17, 33, 40].into_iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (batch, tail) = rest.split_at(len.min(rest.len()));
        map.get_batch(batch, &mut out);
        for (k, got) in batch.iter().zip(&out) {
            ensure!(
                *got == oracle.get(*k),
                "{ctx}: get_batch answered {got:?} for {}, in a batch of {}",
                Escaped(k),
                batch.len()
            );
        }
        rest = tail;
    }
    Ok(())
}

/// Probe keys for `check_all`: fresh keys of `shape`, the stored keys next to them and their
/// neighbours, and a few extremes.
fn probes_for<V>(oracle: &Oracle<V>, shape: KeyShape, rng: &mut TestRng, n: usize) -> Vec<Vec<u8>> {
    let mut probes = vec![Vec::new(), vec![0x00], vec![0xff, 0xff, 0xff]];
    for _ in 0..n {
        let k = shape.gen_key(rng);
        let stored = oracle
            .range::<[u8], _>((Bound::Included(k.as_slice()), Bound::Unbounded))
            .next()
            .map(|(s, _)| s.clone());
        probes.push(k);
        if let Some(s) = stored {
            let ns = neighbours(&s);
            probes.push(rng.pick(&ns).clone());
            probes.push(s);
        }
    }
    probes
}

fn ok_or_panic(r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs and audited churns
// ---------------------------------------------------------------------------------------------

/// A stored key (the one at or after a fresh key of `shape`, else the first). `oracle` is not
/// empty.
fn stored_key(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle<u64>) -> Vec<u8> {
    let probe = shape.gen_key(rng);
    oracle
        .range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Unbounded))
        .next()
        .or_else(|| oracle.first_key_value())
        .map(|(k, _)| k.clone())
        .unwrap_or(probe)
}

/// A random insert/remove sequence over keys of `shape`, compared with a `BTreeMap` at every
/// step, with `check_invariants()` every [`AUDIT_EVERY`] steps; then full iteration, seeks and
/// ranges with every bound kind; then every key removed, auditing as it goes.
fn audited_churn(config: &str, cfg: fn() -> Config, shape: KeyShape, seed: u64, steps: usize) {
    let mut rng = TestRng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xC0FF_EE00);
    let mut map: CuckooTrie<u64> = trie(cfg());
    let mut oracle: Oracle<u64> = BTreeMap::new();
    let ctx = |step: usize, op: &str| {
        format!("audited_churn [{config}] shape={shape:?} seed={seed} step={step} {op}")
    };
    for step in 0..steps {
        // First half mostly inserts, second half mostly removes.
        let p_insert = if step < steps / 2 { 0.75 } else { 0.3 };
        if rng.chance(p_insert) {
            let key = if !oracle.is_empty() && rng.chance(0.2) {
                stored_key(&mut rng, shape, &oracle)
            } else {
                shape.gen_key(&mut rng)
            };
            let value = step as u64;
            let got = map.insert(&key, value);
            let want = oracle.insert(key.clone(), value);
            assert_eq!(
                got,
                Ok(want),
                "{}",
                ctx(step, &format!("insert({}, {value})", Escaped(&key)))
            );
        } else {
            let key = if !oracle.is_empty() && rng.chance(0.8) {
                stored_key(&mut rng, shape, &oracle)
            } else {
                shape.gen_key(&mut rng)
            };
            let got = map.remove(&key);
            let want = oracle.remove(&key);
            assert_eq!(
                got,
                want,
                "{}",
                ctx(step, &format!("remove({})", Escaped(&key)))
            );
        }
        assert_eq!(map.len(), oracle.len(), "{}", ctx(step, "len()"));
        let probe = shape.gen_key(&mut rng);
        assert_eq!(
            map.get(&probe),
            oracle.get(&probe),
            "{}",
            ctx(step, &format!("get({})", Escaped(&probe)))
        );
        if step % AUDIT_EVERY == AUDIT_EVERY - 1 {
            audit(&map, &ctx(step, "after this step"));
        }
    }
    audit(&map, &ctx(steps, "at the end"));
    let probes = probes_for(&oracle, shape, &mut rng, 24);
    let pairs = if shape == KeyShape::Long { 20 } else { 60 };
    ok_or_panic(check_all(
        &map,
        &oracle,
        &probes,
        pairs,
        &mut rng,
        &ctx(steps, "final comparison"),
    ));
    // Drain.
    let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
    for (i, &j) in shuffled(keys.len(), seed).iter().enumerate() {
        let k = &keys[j];
        assert_eq!(
            map.remove(k),
            oracle.remove(k),
            "{}",
            ctx(steps + i, &format!("drain: remove({})", Escaped(k)))
        );
        if i % AUDIT_EVERY == AUDIT_EVERY - 1 {
            audit(&map, &ctx(steps + i, "while draining"));
        }
    }
    assert!(map.is_empty(), "{}", ctx(steps, "drained map not empty"));
    assert!(
        map.iter().next().is_none(),
        "{}",
        ctx(steps, "drained map iterates")
    );
    audit(&map, &ctx(steps, "drained"));
}

/// Every shape, `seeds` seeds each: a differential run, then an audited churn.
fn differential_suite(config: &str, cfg: fn() -> Config, seeds: &[u64]) {
    let bits = cfg().symbol_bits;
    for shape in all_shapes() {
        for &seed in seeds {
            let steps = diff_steps(shape, bits);
            if let Err(d) = try_differential_ordered(|| trie::<u64>(cfg()), shape, seed, steps) {
                panic!("[config {config}] {d}");
            }
            audited_churn(config, cfg, shape, seed, churn_steps(shape, bits));
        }
    }
}

#[test]
fn differential_default_config() {
    differential_suite("default", default_config, &[1, 2, 3]);
}

#[test]
fn differential_frequent_growth() {
    differential_suite(
        "initial_buckets=1 max_load_factor=0.5",
        growth_config,
        &[11, 12, 13],
    );
}

#[test]
fn differential_key_index() {
    differential_suite("key_index", key_index_config, &[71, 72]);
}

#[test]
fn differential_symbol_bits_1() {
    differential_suite("symbol_bits=1", || bits_config(1), &[21, 22]);
}

#[test]
fn differential_symbol_bits_2() {
    differential_suite("symbol_bits=2", || bits_config(2), &[31, 32]);
}

#[test]
fn differential_symbol_bits_3() {
    differential_suite("symbol_bits=3", || bits_config(3), &[41, 42]);
}

#[test]
fn differential_symbol_bits_4() {
    differential_suite("symbol_bits=4", || bits_config(4), &[51, 52]);
}

#[test]
fn differential_symbol_bits_5() {
    differential_suite("symbol_bits=5", || bits_config(5), &[61, 62]);
}

// ---------------------------------------------------------------------------------------------
// 2. Property tests
// ---------------------------------------------------------------------------------------------

/// A key for a range or seek bound: a stored key, a neighbour of one, or a fresh key.
#[derive(Clone, Debug)]
enum Probe {
    Stored(Index),
    Neighbour(Index, Index),
    Fresh(Vec<u8>),
}

impl Probe {
    fn resolve(&self, keys: &[Vec<u8>]) -> Vec<u8> {
        match self {
            Probe::Stored(i) if !keys.is_empty() => keys[i.index(keys.len())].clone(),
            Probe::Neighbour(i, n) if !keys.is_empty() => {
                let ns = neighbours(&keys[i.index(keys.len())]);
                ns[n.index(ns.len())].clone()
            }
            Probe::Fresh(k) => k.clone(),
            _ => Vec::new(),
        }
    }
}

fn arb_probe() -> impl Strategy<Value = Probe> {
    prop_oneof![
        3 => any::<Index>().prop_map(Probe::Stored),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(i, n)| Probe::Neighbour(i, n)),
        2 => arb_key().prop_map(Probe::Fresh),
    ]
}

fn arb_bound() -> impl Strategy<Value = Bound<Probe>> {
    prop_oneof![
        arb_probe().prop_map(Bound::Included),
        arb_probe().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn resolve_bound(b: &Bound<Probe>, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(p) => Bound::Included(p.resolve(keys)),
        Bound::Excluded(p) => Bound::Excluded(p.resolve(keys)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Inserts `keys`, removes the ones `removed` picks, then checks every query against
/// `BTreeMap`: ranges walked three ways, `lower_bound` of each start, `upper_bound` of each end.
fn ranges_property(
    keys: &[Vec<u8>],
    removed: &[Index],
    queries: &[(Bound<Probe>, Bound<Probe>)],
) -> Result<(), String> {
    let mut map = CuckooTrie::<u64>::new();
    let mut oracle = Oracle::new();
    for (i, k) in keys.iter().enumerate() {
        let got = map.insert(k, i as u64);
        let want = oracle.insert(k.clone(), i as u64);
        ensure!(
            got == Ok(want),
            "insert({}, {i}) = {got:?}, expected Ok({want:?})",
            Escaped(k)
        );
    }
    if !keys.is_empty() {
        for r in removed {
            let k = &keys[r.index(keys.len())];
            let (got, want) = (map.remove(k), oracle.remove(k));
            ensure!(
                got == want,
                "remove({}) = {got:?}, expected {want:?}",
                Escaped(k)
            );
        }
    }
    let ctx = "ranges_property";
    for (s, e) in queries {
        let (s, e) = (resolve_bound(s, keys), resolve_bound(e, keys));
        let (s, e) = (as_slice(&s), as_slice(&e));
        check_range(&map, &oracle, s, e, ctx)?;
        for b in [s, e] {
            if let Bound::Included(k) | Bound::Excluded(k) = b {
                check_seeks(&map, &oracle, k, ctx)?;
            }
        }
        let lower = map.lower_bound(s);
        let want = oracle
            .range::<[u8], _>((s, Bound::Unbounded))
            .next()
            .map(|(k, v)| (k.as_slice(), v));
        ensure!(
            lower == want,
            "lower_bound({}) = {}, expected {}",
            show_bound(s),
            show_entry(lower.as_ref()),
            show_entry(want.as_ref())
        );
        let upper = map.upper_bound(e);
        let want = oracle
            .range::<[u8], _>((Bound::Unbounded, e))
            .next_back()
            .map(|(k, v)| (k.as_slice(), v));
        ensure!(
            upper == want,
            "upper_bound({}) = {}, expected {}",
            show_bound(e),
            show_entry(upper.as_ref()),
            show_entry(want.as_ref())
        );
    }
    map.check_invariants()
        .map_err(|e| format!("check_invariants: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn proptest_arbitrary_ops(ops in arb_ops()) {
        let mut map = CuckooTrie::<u64>::new();
        run_ops(&mut map, &ops).map_err(TestCaseError::fail)?;
        map.check_invariants()
            .map_err(|e| TestCaseError::fail(format!("check_invariants after the ops: {e}")))?;
    }

    #[test]
    fn proptest_arbitrary_ops_growing_any_symbol_size(ops in arb_ops(), bits in 1u32..=5) {
        let mut cfg = growth_config();
        cfg.symbol_bits = bits;
        let mut map = trie::<u64>(cfg);
        run_ops(&mut map, &ops).map_err(TestCaseError::fail)?;
        map.check_invariants()
            .map_err(|e| TestCaseError::fail(format!("check_invariants after the ops: {e}")))?;
    }

    #[test]
    fn proptest_u64_key_ops(ops in arb_ops_with(arb_u64_key())) {
        let mut map = trie::<u64>(growth_config());
        run_ops(&mut map, &ops).map_err(TestCaseError::fail)?;
        map.check_invariants()
            .map_err(|e| TestCaseError::fail(format!("check_invariants after the ops: {e}")))?;
    }

    #[test]
    fn proptest_ranges_and_seeks(
        keys in proptest::collection::vec(arb_key(), 0..48),
        removed in proptest::collection::vec(any::<Index>(), 0..12),
        queries in proptest::collection::vec((arb_bound(), arb_bound()), 1..24),
    ) {
        ranges_property(&keys, &removed, &queries).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Growth and shrinking
// ---------------------------------------------------------------------------------------------

/// Inserts `keys` (distinct) from the smallest table, checks every key, `len` and iteration,
/// removes every key, checks that memory drops back near an empty map's, and does it all again.
fn grow_empty_regrow(name: &str, keys: &[Vec<u8>]) {
    let fresh = trie::<u64>(smallest_table_config()).memory_usage();
    let limit = SHRINK_FACTOR * fresh.max(PAGE);
    let mut map = trie::<u64>(smallest_table_config());
    let n = keys.len();
    let mut sorted: Vec<(&[u8], u64)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_slice(), i as u64))
        .collect();
    sorted.sort_unstable();
    for round in 0..2u64 {
        let ctx = format!("{name} round {round}");
        for (i, k) in keys.iter().enumerate() {
            let got = map.insert(k, i as u64 + round);
            assert_eq!(got, Ok(None), "{ctx}: insert #{i} ({})", Escaped(k));
        }
        assert_eq!(map.len(), n, "{ctx}: len() after inserting");
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(
                map.get(k),
                Some(&(i as u64 + round)),
                "{ctx}: get({}) of key #{i}",
                Escaped(k)
            );
        }
        let mut count = 0;
        for (j, (got, want)) in map.iter().zip(&sorted).enumerate() {
            assert!(
                got.0 == want.0 && *got.1 == want.1 + round,
                "{ctx}: iter() entry #{j} is ({}, {}), expected ({}, {})",
                Escaped(got.0),
                got.1,
                Escaped(want.0),
                want.1 + round
            );
            count += 1;
        }
        assert_eq!(count, n, "{ctx}: iter() yielded {count} of {n} entries");
        let mut count = 0;
        for (j, (got, want)) in map.iter().rev().zip(sorted.iter().rev()).enumerate() {
            assert!(
                got.0 == want.0,
                "{ctx}: iter().rev() entry #{j} is {}, expected {}",
                Escaped(got.0),
                Escaped(want.0)
            );
            count += 1;
        }
        assert_eq!(
            count, n,
            "{ctx}: iter().rev() yielded {count} of {n} entries"
        );
        audit(&map, &format!("{ctx}: full"));
        let full = map.memory_usage();
        assert!(
            full >= n * size_of::<u64>(),
            "{ctx}: memory_usage() = {full} bytes cannot hold {n} u64 values"
        );
        for (removed, &i) in shuffled(n, round + 7).iter().enumerate() {
            assert_eq!(
                map.remove(&keys[i]),
                Some(i as u64 + round),
                "{ctx}: remove #{removed} ({}) of key #{i}",
                Escaped(&keys[i])
            );
        }
        assert_eq!(map.len(), 0, "{ctx}: len() after removing every key");
        assert!(map.is_empty());
        assert!(map.iter().next().is_none(), "{ctx}: emptied map iterates");
        assert!(map.first().is_none() && map.last().is_none());
        for k in keys.iter().step_by(97) {
            assert_eq!(map.get(k), None, "{ctx}: get({}) after removal", Escaped(k));
        }
        audit(&map, &format!("{ctx}: emptied"));
        let after = map.memory_usage();
        assert!(
            after <= limit,
            "{ctx}: memory_usage() after removing all {n} keys is {after} bytes (peak {full}); \
             must be at most {SHRINK_FACTOR} x max(empty map {fresh}, {PAGE}) = {limit}"
        );
    }
    // clear() gives the memory back as well.
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            map.insert(k, i as u64),
            Ok(None),
            "{name} before clear: insert #{i}"
        );
    }
    map.clear();
    assert!(
        map.is_empty() && map.iter().next().is_none(),
        "{name}: clear()"
    );
    let after = map.memory_usage();
    assert!(
        after <= limit,
        "{name}: memory_usage() after clear() is {after} bytes; must be at most {limit}"
    );
    audit(&map, &format!("{name}: cleared"));
}

#[test]
fn growth_200k_random_8_byte_keys() {
    let keys: Vec<Vec<u8>> = (0..200_000u64)
        .map(|i| mix64(i ^ 0xABCD_EF01).to_be_bytes().to_vec())
        .collect();
    grow_empty_regrow("200k random 8-byte keys", &keys);
}

/// Keys shaped like the paper's `az` data set (Amazon reviews: item ID, user ID, time): a few
/// hundred items and users, so keys share prefixes of 11 and 26 bytes; 36 bytes each.
fn az_like_keys(n: usize, seed: u64) -> Vec<Vec<u8>> {
    const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut rng = TestRng::new(seed);
    let items: Vec<Vec<u8>> = (0..120)
        .map(|_| format!("B00{:07}", rng.below(10_000_000)).into_bytes())
        .collect();
    let users: Vec<Vec<u8>> = (0..600)
        .map(|_| {
            let mut u = b"A".to_vec();
            u.extend((0..13).map(|_| *rng.pick(ALNUM)));
            u
        })
        .collect();
    let mut seen = HashSet::new();
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        // Popular items and users are drawn more often.
        let popular_items = rng.index(items.len()) + 1;
        let item = &items[rng.index(popular_items)];
        let popular_users = rng.index(users.len()) + 1;
        let user = &users[rng.index(popular_users)];
        let time = 1_300_000_000 + rng.below(400_000_000);
        let mut key = item.clone();
        key.push(b'|');
        key.extend_from_slice(user);
        key.push(b'|');
        key.extend_from_slice(format!("{time:010}").as_bytes());
        debug_assert_eq!(key.len(), 36);
        if seen.insert(key.clone()) {
            keys.push(key);
        }
    }
    keys
}

#[test]
fn growth_20k_az_like_keys() {
    let keys = az_like_keys(20_000, 0xA2);
    grow_empty_regrow("20k az-like keys", &keys);
}

/// Writer scratch a map may keep beyond what its recent operations needed (the maps keep
/// up to 64 KiB of it whatever happened before, so small-key workloads never reallocate).
const SCRATCH_SLACK: usize = 64 * 1024;

/// Inserts and removes 64 8-byte keys: the "recent operations" after which a map's writer
/// scratch must fit small keys again.
fn small_key_ops(map: &mut CuckooTrie<u64>) {
    for i in 0..64u64 {
        assert_eq!(
            map.insert(&mix64(i).to_be_bytes(), i),
            Ok(None),
            "small insert #{i}"
        );
    }
    for i in 0..64u64 {
        assert_eq!(
            map.remove(&mix64(i).to_be_bytes()),
            Some(i),
            "small remove #{i}"
        );
    }
}

/// Regression (issue 16, defect 5): the writer's scratch buffers (search path, created
/// entries, jump chain, held locks) kept their largest size forever, so two `MAX_KEY_LEN`
/// keys sharing all but their last byte, once inserted and removed, left the map holding
/// 22.5 MiB until `clear()`. After small-key operations the map must use about what a map
/// that only ever saw those operations uses.
#[test]
fn scratch_shrinks_after_huge_keys_are_removed() {
    let n = CuckooTrie::<u64>::MAX_KEY_LEN;
    let a = vec![0x5au8; n];
    let mut b = a.clone();
    b[n - 1] ^= 0xff;

    let mut small_only = CuckooTrie::<u64>::new();
    small_key_ops(&mut small_only);
    let baseline = small_only.memory_usage();

    let mut map = CuckooTrie::<u64>::new();
    assert_eq!(map.insert(&a, 1), Ok(None));
    assert_eq!(map.insert(&b, 2), Ok(None));
    let peak = map.memory_usage();
    assert_eq!(map.remove(&a), Some(1));
    assert_eq!(map.remove(&b), Some(2));
    small_key_ops(&mut map);
    audit(&map, "after the huge keys and the small ones");
    let after = map.memory_usage();
    assert!(
        after <= baseline + SCRATCH_SLACK,
        "memory_usage() is {after} bytes after inserting and removing two {n}-byte keys (peak \
         {peak}) and 64 small keys; a map that saw only the small keys uses {baseline} \
         (limit {baseline} + {SCRATCH_SLACK})"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Generic values
// ---------------------------------------------------------------------------------------------

#[test]
fn string_values() {
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("growth", growth_config),
    ] {
        let mut map: CuckooTrie<String> = trie(cfg());
        let mut oracle: Oracle<String> = BTreeMap::new();
        let mut rng = TestRng::new(0x5757);
        for step in 0..4_000 {
            let key = KeyShape::Mixed.gen_key(&mut rng);
            if rng.below(3) < 2 {
                let v = format!("value {step} of {}", Escaped(&key));
                let got = map.insert(&key, v.clone());
                let want = oracle.insert(key.clone(), v);
                assert_eq!(
                    got,
                    Ok(want),
                    "[{name}] step {step}: insert({})",
                    Escaped(&key)
                );
            } else {
                let (got, want) = (map.remove(&key), oracle.remove(&key));
                assert_eq!(got, want, "[{name}] step {step}: remove({})", Escaped(&key));
            }
            assert_eq!(map.len(), oracle.len(), "[{name}] step {step}: len()");
        }
        audit(&map, &format!("[{name}] string values"));
        let probes = probes_for(&oracle, KeyShape::Mixed, &mut rng, 24);
        ok_or_panic(check_all(
            &map,
            &oracle,
            &probes,
            30,
            &mut rng,
            &format!("[{name}] string values"),
        ));
        let some_key = oracle.keys().next().cloned().expect("keys were inserted");
        map.clear();
        assert!(map.is_empty(), "[{name}] clear() left keys");
        assert_eq!(map.get(&some_key), None);
        assert!(map.iter().next().is_none());
        audit(&map, &format!("[{name}] after clear"));
        assert_eq!(map.insert(b"again", "x".to_string()), Ok(None));
        assert_eq!(map.get(b"again").map(String::as_str), Some("x"));
        assert_eq!(
            map.insert(b"again", "y".to_string()),
            Ok(Some("x".to_string()))
        );
        assert_eq!(map.remove(b"again"), Some("y".to_string()));
    }
}

/// Counts, per value id, how many times the value was dropped.
#[derive(Clone, Default)]
struct Ledger(Rc<RefCell<Vec<u32>>>);

/// A value that records its drop in a [`Ledger`].
struct Tracked {
    id: usize,
    ledger: Ledger,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.ledger.0.borrow_mut()[self.id] += 1;
    }
}

impl Debug for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tracked#{}", self.id)
    }
}

impl Ledger {
    fn make(&self) -> Tracked {
        let mut v = self.0.borrow_mut();
        v.push(0);
        Tracked {
            id: v.len() - 1,
            ledger: self.clone(),
        }
    }
    fn created(&self) -> usize {
        self.0.borrow().len()
    }
    fn drops_of(&self, id: usize) -> u32 {
        self.0.borrow()[id]
    }
    fn live(&self) -> usize {
        self.0.borrow().iter().filter(|&&d| d == 0).count()
    }
    /// Panics unless every value created so far was dropped exactly once.
    fn assert_all_dropped_once(&self, ctx: &str) {
        let v = self.0.borrow();
        let never: Vec<usize> = (0..v.len()).filter(|&i| v[i] == 0).collect();
        let twice: Vec<usize> = (0..v.len()).filter(|&i| v[i] > 1).collect();
        assert!(
            never.is_empty() && twice.is_empty(),
            "{ctx}: of {} values, {} were never dropped (first ids {:?}) and {} more than once \
             (first ids {:?})",
            v.len(),
            never.len(),
            &never[..never.len().min(8)],
            twice.len(),
            &twice[..twice.len().min(8)]
        );
    }
    /// Panics if any value was dropped more than once.
    fn assert_no_double_drop(&self, ctx: &str) {
        let v = self.0.borrow();
        let twice: Vec<usize> = (0..v.len()).filter(|&i| v[i] > 1).collect();
        assert!(
            twice.is_empty(),
            "{ctx}: values dropped twice: {:?}",
            &twice[..twice.len().min(8)]
        );
    }
}

#[test]
fn drop_counted_values_are_dropped_exactly_once() {
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("growth", growth_config),
    ] {
        let ledger = Ledger::default();
        let mut map: CuckooTrie<Tracked> = trie(cfg());
        let mut ids: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        let mut rng = TestRng::new(0xD209);
        // Keys of several shapes, so the trie has prefix keys and deep paths.
        let mut keys: Vec<Vec<u8>> = (0..2_000u64)
            .map(|i| format!("key-{i:05}").into_bytes())
            .collect();
        keys.extend((0..600).map(|_| KeyShape::PrefixChains.gen_key(&mut rng)));
        keys.extend((0..600).map(|_| KeyShape::U64.gen_key(&mut rng)));
        for k in &keys {
            let v = ledger.make();
            let id = v.id;
            let got = map.insert(k, v).expect("insert");
            match ids.insert(k.clone(), id) {
                None => assert!(
                    got.is_none(),
                    "[{name}] insert({}) of a new key returned {got:?}",
                    Escaped(k)
                ),
                Some(old) => {
                    let old_v = got.unwrap_or_else(|| {
                        panic!("[{name}] update of {} returned None", Escaped(k))
                    });
                    assert_eq!(
                        old_v.id,
                        old,
                        "[{name}] update of {} returned the wrong value",
                        Escaped(k)
                    );
                    drop(old_v);
                    assert_eq!(ledger.drops_of(old), 1);
                }
            }
        }
        ledger.assert_no_double_drop(&format!("[{name}] after inserting"));
        assert_eq!(
            ledger.live(),
            map.len(),
            "[{name}] live values after inserting (values dropped while the table grew?)"
        );
        assert_eq!(map.len(), ids.len());
        // Updates return the old value.
        let stored: Vec<Vec<u8>> = ids.keys().cloned().collect();
        for k in stored.iter().step_by(3) {
            let v = ledger.make();
            let new_id = v.id;
            let old = map
                .insert(k, v)
                .expect("insert")
                .unwrap_or_else(|| panic!("[{name}] update of {} returned None", Escaped(k)));
            let old_id = ids.insert(k.clone(), new_id).unwrap();
            assert_eq!(
                old.id,
                old_id,
                "[{name}] update of {} returned the wrong value",
                Escaped(k)
            );
            assert_eq!(
                ledger.drops_of(old_id),
                0,
                "[{name}] the returned old value was already dropped"
            );
            drop(old);
            assert_eq!(ledger.drops_of(old_id), 1);
        }
        for (k, &id) in &ids {
            assert_eq!(
                map.get(k).map(|v| v.id),
                Some(id),
                "[{name}] get({})",
                Escaped(k)
            );
        }
        // Remove returns the value.
        for k in stored.iter().step_by(5) {
            let id = ids.remove(k).unwrap();
            let v = map
                .remove(k)
                .unwrap_or_else(|| panic!("[{name}] remove({}) returned None", Escaped(k)));
            assert_eq!(
                v.id,
                id,
                "[{name}] remove({}) returned the wrong value",
                Escaped(k)
            );
            assert_eq!(
                ledger.drops_of(id),
                0,
                "[{name}] the removed value was already dropped"
            );
            drop(v);
            assert!(
                map.remove(k).is_none(),
                "[{name}] second remove({})",
                Escaped(k)
            );
        }
        let before = ledger.live();
        assert!(map.remove(b"absent key").is_none());
        assert_eq!(
            ledger.live(),
            before,
            "[{name}] removing an absent key dropped a value"
        );
        // A refused insert drops its value once and stores nothing.
        let too_long = vec![b'x'; CuckooTrie::<Tracked>::MAX_KEY_LEN + 1];
        let v = ledger.make();
        let refused_id = v.id;
        let len = map.len();
        assert!(
            matches!(map.insert(&too_long, v), Err(Error::KeyTooLong { .. })),
            "[{name}] a key of MAX_KEY_LEN + 1 bytes was not refused"
        );
        assert_eq!(
            ledger.drops_of(refused_id),
            1,
            "[{name}] the refused value was not dropped exactly once"
        );
        assert_eq!(map.len(), len);
        // Iteration sees the right values.
        let got: Vec<(Vec<u8>, usize)> = map.iter().map(|(k, v)| (k.to_vec(), v.id)).collect();
        let want: Vec<(Vec<u8>, usize)> = ids.iter().map(|(k, &id)| (k.clone(), id)).collect();
        assert!(
            got == want,
            "[{name}] iteration disagrees with the stored ids"
        );
        audit(&map, &format!("[{name}] tracked values"));
        ledger.assert_no_double_drop(&format!("[{name}] before clear"));
        assert_eq!(
            ledger.live(),
            map.len(),
            "[{name}] live values before clear"
        );
        // clear() drops every live value exactly once.
        map.clear();
        assert!(map.is_empty());
        ledger.assert_all_dropped_once(&format!("[{name}] after clear()"));
        // Dropping the map drops every live value exactly once.
        ids.clear();
        for k in keys.iter().take(1_500) {
            let v = ledger.make();
            ids.insert(k.clone(), v.id);
            map.insert(k, v).expect("insert");
        }
        for k in keys.iter().take(300) {
            drop(map.remove(k));
        }
        assert_eq!(ledger.live(), map.len(), "[{name}] live values before drop");
        let created = ledger.created();
        drop(map);
        assert_eq!(ledger.created(), created);
        ledger.assert_all_dropped_once(&format!("[{name}] after dropping the map"));
    }
}

/// A value whose alignment exceeds the 16 bytes the records are aligned to by default.
#[repr(align(64))]
#[derive(Clone, Debug, PartialEq)]
struct Aligned64([u8; 64]);

/// A zero-sized value with a large alignment.
#[repr(align(256))]
#[derive(Clone, Debug, PartialEq)]
struct AlignedUnit;

#[test]
fn over_aligned_and_large_values() {
    let mut map: CuckooTrie<Aligned64> = trie(growth_config());
    let key = |i: u32| format!("k{i}").into_bytes();
    for i in 0..3_000u32 {
        let v = Aligned64([i as u8; 64]);
        assert_eq!(map.insert(&key(i), v), Ok(None));
        // Prefix keys of the 4-byte encoding, the empty key among them.
        let short = &i.to_be_bytes()[..(i % 5) as usize];
        map.insert(short, Aligned64([0xee; 64])).expect("insert");
    }
    for i in 0..3_000u32 {
        let v = map.get(&key(i)).expect("stored");
        assert_eq!(v.0, [i as u8; 64], "value of {}", Escaped(&key(i)));
        assert_eq!(v as *const Aligned64 as usize % 64, 0, "misaligned value");
    }
    for (k, v) in map.iter() {
        assert_eq!(
            v as *const Aligned64 as usize % 64,
            0,
            "misaligned value of {}",
            Escaped(k)
        );
    }
    // get_mut changes the stored value in place.
    map.get_mut(&key(7)).expect("stored").0[0] = 0xaa;
    assert_eq!(map.get(&key(7)).map(|v| v.0[0]), Some(0xaa));
    assert!(map.get_mut(b"absent").is_none());
    assert_eq!(map.remove(&key(7)).map(|v| v.0[1]), Some(7));
    audit(&map, "over-aligned values");

    let mut map: CuckooTrie<[u64; 40]> = trie(growth_config());
    for i in 0..2_000u64 {
        assert_eq!(map.insert(&i.to_le_bytes(), [i; 40]), Ok(None));
    }
    assert_eq!(map.insert(&5u64.to_le_bytes(), [0; 40]), Ok(Some([5; 40])));
    for i in (0..2_000u64).filter(|&i| i != 5) {
        assert_eq!(map.get(&i.to_le_bytes()), Some(&[i; 40]));
    }
    audit(&map, "320-byte values");

    let mut map: CuckooTrie<AlignedUnit> = CuckooTrie::new();
    for k in [&b""[..], b"a", b"ab", b"\xff"] {
        assert_eq!(map.insert(k, AlignedUnit), Ok(None));
    }
    for (k, v) in map.iter() {
        assert_eq!(
            v as *const AlignedUnit as usize % 256,
            0,
            "misaligned unit of {}",
            Escaped(k)
        );
    }
    assert_eq!(map.insert(b"", AlignedUnit), Ok(Some(AlignedUnit)));
    assert_eq!(map.remove(b""), Some(AlignedUnit));
    assert_eq!(map.len(), 3);
    audit(&map, "over-aligned unit values");
}

thread_local! {
    static UNIT_DROPS: Cell<usize> = const { Cell::new(0) };
}

/// A zero-sized value that counts its drops.
#[derive(Debug)]
struct CountedUnit;

impl Drop for CountedUnit {
    fn drop(&mut self) {
        UNIT_DROPS.with(|d| d.set(d.get() + 1));
    }
}

#[test]
fn zero_sized_values() {
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("growth", growth_config),
    ] {
        let mut map: CuckooTrie<()> = trie(cfg());
        let mut oracle: Oracle<()> = BTreeMap::new();
        let mut rng = TestRng::new(0x2E0);
        for step in 0..3_000 {
            let shape = if step % 2 == 0 {
                KeyShape::U64
            } else {
                KeyShape::RandomBytes
            };
            let key = shape.gen_key(&mut rng);
            if rng.below(3) < 2 {
                let got = map.insert(&key, ());
                let want = oracle.insert(key.clone(), ());
                assert_eq!(
                    got,
                    Ok(want),
                    "[{name}] step {step}: insert({})",
                    Escaped(&key)
                );
                assert_eq!(map.get(&key), Some(&()));
            } else {
                let (got, want) = (map.remove(&key), oracle.remove(&key));
                assert_eq!(got, want, "[{name}] step {step}: remove({})", Escaped(&key));
            }
            assert_eq!(map.len(), oracle.len());
        }
        audit(&map, &format!("[{name}] unit values"));
        let probes = probes_for(&oracle, KeyShape::RandomBytes, &mut rng, 24);
        ok_or_panic(check_all(
            &map,
            &oracle,
            &probes,
            30,
            &mut rng,
            &format!("[{name}] unit values"),
        ));

        // A zero-sized value with a destructor.
        UNIT_DROPS.with(|d| d.set(0));
        let mut map: CuckooTrie<CountedUnit> = trie(cfg());
        let n = 2_000u64;
        let mut created = 0usize;
        for i in 0..n {
            created += 1;
            assert!(
                map.insert(&i.to_be_bytes(), CountedUnit)
                    .expect("insert")
                    .is_none()
            );
        }
        assert_eq!(
            UNIT_DROPS.with(Cell::get),
            0,
            "[{name}] unit values dropped while growing"
        );
        for i in (0..n).step_by(4) {
            created += 1;
            let old = map.insert(&i.to_be_bytes(), CountedUnit).expect("insert");
            assert!(
                old.is_some(),
                "[{name}] update of unit key {i} returned None"
            );
            drop(old);
        }
        for i in (1..n).step_by(4) {
            assert!(
                map.remove(&i.to_be_bytes()).is_some(),
                "[{name}] remove of unit key {i}"
            );
            assert!(
                map.remove(&i.to_be_bytes()).is_none(),
                "[{name}] second remove of {i}"
            );
        }
        assert_eq!(map.len(), (n - n / 4) as usize);
        map.clear();
        assert_eq!(
            UNIT_DROPS.with(Cell::get),
            created,
            "[{name}] unit drops after clear"
        );
        for i in 0..500u64 {
            created += 1;
            map.insert(&i.to_be_bytes(), CountedUnit).expect("insert");
        }
        drop(map);
        assert_eq!(
            UNIT_DROPS.with(Cell::get),
            created,
            "[{name}] unit drops after drop"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Edge keys
// ---------------------------------------------------------------------------------------------

#[test]
fn prefix_keys_in_every_insertion_order() {
    let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"abc", b"ab\x00", b"ab\xff"];
    let mut probes: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    for k in keys {
        probes.extend(neighbours(k));
    }
    probes.extend([b"b".to_vec(), b"aa".to_vec(), b"abcd".to_vec(), vec![0xff]]);
    let perms = permutations(keys.len());
    assert_eq!(perms.len(), 720);
    for bits in 1..=5 {
        for (p, perm) in perms.iter().enumerate() {
            let ctx =
                |what: &str| format!("prefix keys, symbol_bits={bits}, order {perm:?}: {what}");
            let mut map: CuckooTrie<u64> = trie(bits_config(bits));
            let mut oracle = Oracle::new();
            for &i in perm {
                assert_eq!(
                    map.insert(keys[i], i as u64),
                    Ok(None),
                    "{}",
                    ctx(&format!("insert({})", Escaped(keys[i])))
                );
                oracle.insert(keys[i].to_vec(), i as u64);
                for k in keys {
                    assert_eq!(
                        map.get(k),
                        oracle.get(k),
                        "{}",
                        ctx(&format!(
                            "get({}) after inserting {}",
                            Escaped(k),
                            Escaped(keys[i])
                        ))
                    );
                }
            }
            // Seeks and ranges on every 8th order (they do not depend much on the order).
            let mut rng = TestRng::new(p as u64);
            let pairs = if p % 8 == 0 { 12 } else { 0 };
            let seek_probes: &[Vec<u8>] = if p % 8 == 0 { &probes } else { &[] };
            ok_or_panic(check_all(
                &map,
                &oracle,
                seek_probes,
                pairs,
                &mut rng,
                &ctx("full"),
            ));
            audit(&map, &ctx("full"));
            // Remove in another order, checking every key after each removal.
            for &i in perm.iter().rev().cycle().skip(p % 6).take(keys.len()) {
                assert_eq!(
                    map.remove(keys[i]),
                    Some(i as u64),
                    "{}",
                    ctx(&format!("remove({})", Escaped(keys[i])))
                );
                oracle.remove(keys[i]);
                for k in keys {
                    assert_eq!(
                        map.get(k),
                        oracle.get(k),
                        "{}",
                        ctx(&format!(
                            "get({}) after removing {}",
                            Escaped(k),
                            Escaped(keys[i])
                        ))
                    );
                }
                let got: Vec<&[u8]> = map.iter().map(|(k, _)| k).collect();
                let want: Vec<&[u8]> = oracle.keys().map(Vec::as_slice).collect();
                assert_eq!(
                    got,
                    want,
                    "{}",
                    ctx(&format!("iter() after removing {}", Escaped(keys[i])))
                );
            }
            assert!(map.is_empty());
            audit(&map, &ctx("emptied"));
        }
    }
}

#[test]
fn empty_key_alone_and_with_others() {
    for bits in 1..=5 {
        let mut map: CuckooTrie<u64> = trie(bits_config(bits));
        assert_eq!(map.insert(b"", 7), Ok(None));
        assert_eq!(map.get(b""), Some(&7));
        assert_eq!(map.len(), 1);
        assert_eq!(map.first(), Some((&b""[..], &7)));
        assert_eq!(map.last(), Some((&b""[..], &7)));
        assert_eq!(map.lower_bound(Bound::Included(b"")), Some((&b""[..], &7)));
        assert_eq!(map.lower_bound(Bound::Excluded(b"")), None);
        assert_eq!(map.upper_bound(Bound::Included(b"")), Some((&b""[..], &7)));
        assert_eq!(map.upper_bound(Bound::Excluded(b"")), None);
        assert_eq!(
            map.upper_bound(Bound::Included(b"\x00")),
            Some((&b""[..], &7))
        );
        assert_eq!(map.range("".."").count(), 0);
        assert_eq!(map.range(..=&b""[..]).count(), 1);
        assert_eq!(map.insert(b"", 8), Ok(Some(7)));
        assert_eq!(map.insert(b"\x00", 9), Ok(None));
        assert_eq!(
            map.lower_bound(Bound::Excluded(b"")),
            Some((&b"\x00"[..], &9))
        );
        assert_eq!(
            map.upper_bound(Bound::Excluded(b"\x00")),
            Some((&b""[..], &8))
        );
        let all: Vec<_> = map.iter().collect();
        assert_eq!(all, vec![(&b""[..], &8), (&b"\x00"[..], &9)]);
        audit(&map, &format!("empty key, symbol_bits={bits}"));
        assert_eq!(map.remove(b""), Some(8));
        assert_eq!(map.get(b""), None);
        assert_eq!(map.first(), Some((&b"\x00"[..], &9)));
        assert_eq!(map.remove(b"\x00"), Some(9));
        assert!(map.is_empty());
        audit(&map, &format!("empty key removed, symbol_bits={bits}"));
    }
}

#[test]
fn keys_of_only_zero_and_ff_bytes() {
    // Every string of 0x00 and 0xFF bytes of length 0 to 8: 511 keys.
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for len in 0..=8u32 {
        for bits in 0..(1u32 << len) {
            keys.push(
                (0..len)
                    .map(|i| if bits >> i & 1 == 1 { 0xff } else { 0x00 })
                    .collect(),
            );
        }
    }
    assert_eq!(keys.len(), 511);
    for sb in 1..=5 {
        let ctx = |what: &str| format!("0x00/0xFF keys, symbol_bits={sb}: {what}");
        let mut map: CuckooTrie<u64> = trie(bits_config(sb));
        let mut oracle = Oracle::new();
        let order = shuffled(keys.len(), u64::from(sb));
        for (n, &i) in order.iter().enumerate() {
            assert_eq!(
                map.insert(&keys[i], i as u64),
                Ok(None),
                "{}",
                ctx(&format!("insert #{n} ({})", Escaped(&keys[i])))
            );
            oracle.insert(keys[i].clone(), i as u64);
            if n % 64 == 63 {
                audit(&map, &ctx(&format!("after {} inserts", n + 1)));
            }
        }
        audit(&map, &ctx("full"));
        let mut rng = TestRng::new(u64::from(sb));
        let mut probes: Vec<Vec<u8>> = keys.iter().step_by(7).cloned().collect();
        probes.extend([vec![0x00; 9], vec![0xff; 9], vec![0x01], vec![0xfe, 0xff]]);
        ok_or_panic(check_all(
            &map,
            &oracle,
            &probes,
            40,
            &mut rng,
            &ctx("full"),
        ));
        // Remove every other key, check, then the rest.
        for (n, &i) in order.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
            assert_eq!(
                map.remove(&keys[i]),
                Some(i as u64),
                "{}",
                ctx(&format!("remove #{n} ({})", Escaped(&keys[i])))
            );
            oracle.remove(&keys[i]);
        }
        audit(&map, &ctx("half removed"));
        ok_or_panic(check_all(
            &map,
            &oracle,
            &probes,
            40,
            &mut rng,
            &ctx("half removed"),
        ));
        for &i in order.iter().skip(1).step_by(2) {
            assert_eq!(
                map.remove(&keys[i]),
                Some(i as u64),
                "{}",
                ctx(&format!("remove({})", Escaped(&keys[i])))
            );
        }
        assert!(map.is_empty());
        audit(&map, &ctx("emptied"));
    }
}

/// Keys of 1 to 8 KiB: a chain of prefixes of one pattern (differing only by length), and keys
/// differing only in their last byte.
fn long_keys() -> Vec<Vec<u8>> {
    let pattern: Vec<u8> = (0..8192usize).map(|i| b'a' + (i % 23) as u8).collect();
    let mut keys = Vec::new();
    for len in [1024, 1025, 2047, 2048, 4096, 8191, 8192] {
        keys.push(pattern[..len].to_vec());
    }
    for len in [1024, 4096, 8192] {
        for last in [0x00, 0x01, 0x7f, 0xfe, 0xff] {
            let mut k = pattern[..len].to_vec();
            k[len - 1] = last;
            keys.push(k);
        }
    }
    // A key of zeros and one of 0xFF bytes, differing from their sibling only at the end.
    for fill in [0x00u8, 0xff] {
        let mut k = vec![fill; 3000];
        keys.push(k.clone());
        k[2999] ^= 0x01;
        keys.push(k);
    }
    keys
}

#[test]
fn multi_kib_keys_differing_late_or_by_length() {
    let keys = long_keys();
    for sb in [1, 3, 5] {
        let ctx = |what: &str| format!("long keys, symbol_bits={sb}: {what}");
        let mut map: CuckooTrie<u64> = trie(bits_config(sb));
        let mut oracle = Oracle::new();
        for (n, &i) in shuffled(keys.len(), u64::from(sb)).iter().enumerate() {
            let got = map.insert(&keys[i], i as u64);
            let want = oracle.insert(keys[i].clone(), i as u64);
            assert_eq!(
                got,
                Ok(want),
                "{}",
                ctx(&format!("insert #{n} ({})", Escaped(&keys[i])))
            );
            for k in &keys {
                assert_eq!(
                    map.get(k),
                    oracle.get(k),
                    "{}",
                    ctx(&format!(
                        "get({}) after inserting {}",
                        Escaped(k),
                        Escaped(&keys[i])
                    ))
                );
            }
        }
        audit(&map, &ctx("full"));
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for k in &keys {
            probes.push(k.clone());
            probes.extend(neighbours(k));
        }
        let mut rng = TestRng::new(u64::from(sb));
        ok_or_panic(check_all(
            &map,
            &oracle,
            &probes,
            30,
            &mut rng,
            &ctx("full"),
        ));
        for (n, &i) in shuffled(keys.len(), 99).iter().enumerate() {
            let got = map.remove(&keys[i]);
            let want = oracle.remove(&keys[i]);
            assert_eq!(
                got,
                want,
                "{}",
                ctx(&format!("remove #{n} ({})", Escaped(&keys[i])))
            );
            for k in &keys {
                assert_eq!(
                    map.get(k),
                    oracle.get(k),
                    "{}",
                    ctx(&format!(
                        "get({}) after removing {}",
                        Escaped(k),
                        Escaped(&keys[i])
                    ))
                );
            }
            if n % 4 == 0 {
                audit(&map, &ctx(&format!("after {} removals", n + 1)));
            }
        }
        assert!(map.is_empty());
        audit(&map, &ctx("emptied"));
    }
}

#[test]
fn max_key_len_is_accepted_and_one_more_refused() {
    let max = CuckooTrie::<u64>::MAX_KEY_LEN;
    assert_eq!(max, (1 << 20) - 1, "MAX_KEY_LEN is documented as 1 MiB - 1");
    let longest = vec![0xabu8; max];
    let too_long = vec![0xabu8; max + 1];

    // Refused on an empty map, which stays empty.
    let mut map = CuckooTrie::<u64>::new();
    assert_eq!(
        map.insert(&too_long, 1),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    assert!(map.is_empty() && map.first().is_none());
    audit(&map, "empty map after a refused key");

    // Accepted next to other keys, including its own prefixes.
    assert_eq!(map.insert(b"a", 1), Ok(None));
    assert_eq!(map.insert(&[0xab; 10], 2), Ok(None));
    assert_eq!(map.insert(&longest, 3), Ok(None));
    assert_eq!(map.insert(b"\xff", 4), Ok(None));
    assert_eq!(map.get(&longest), Some(&3));
    assert_eq!(map.len(), 4);
    assert_eq!(map.insert(&longest, 5), Ok(Some(3)));
    let before: Vec<(Vec<u8>, u64)> = map.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    assert_eq!(before.len(), 4);
    assert!(
        before[2].0 == longest && before[2].1 == 5,
        "the longest key is third in order"
    );

    // One byte more is refused with the lengths, and the map is unchanged.
    assert_eq!(
        map.insert(&too_long, 6),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    let mut refused_extension = longest.clone();
    refused_extension.extend_from_slice(b"\x00\x00");
    assert_eq!(
        map.insert(&refused_extension, 7),
        Err(Error::KeyTooLong { len: max + 2, max })
    );
    let after: Vec<(Vec<u8>, u64)> = map.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    assert!(before == after, "a refused insert changed the map");
    assert_eq!(map.len(), 4);
    // Reads with a too-long key answer normally; they do not panic.
    assert_eq!(map.get(&too_long), None);
    assert!(!map.contains_key(&too_long));
    assert_eq!(map.remove(&too_long), None);
    assert_eq!(
        map.lower_bound(Bound::Included(&too_long)).map(|(_, v)| *v),
        Some(4)
    );
    assert_eq!(
        map.upper_bound(Bound::Included(&too_long)).map(|(_, v)| *v),
        Some(5)
    );
    assert_eq!(
        map.range((
            Bound::Excluded(&longest[..]),
            Bound::Included(&too_long[..])
        ))
        .count(),
        0
    );
    audit(&map, "after refused keys");

    // A second key of MAX_KEY_LEN sharing all but its last byte with the first.
    let mut sibling = longest.clone();
    sibling[max - 1] = 0xac;
    assert_eq!(map.insert(&sibling, 8), Ok(None));
    assert_eq!(map.get(&sibling), Some(&8));
    assert_eq!(map.get(&longest), Some(&5));
    assert_eq!(map.len(), 5);
    let keys: Vec<&[u8]> = map.iter().map(|(k, _)| k).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "iteration out of order"
    );
    assert_eq!(
        map.upper_bound(Bound::Excluded(&sibling)).map(|(_, v)| *v),
        Some(5)
    );
    audit(
        &map,
        "two keys of MAX_KEY_LEN sharing all but their last byte",
    );
    assert_eq!(map.remove(&longest), Some(5));
    assert_eq!(map.remove(&sibling), Some(8));
    assert_eq!(map.len(), 3);
    audit(&map, "after removing the longest keys");
}

// ---------------------------------------------------------------------------------------------
// 6. Configuration
// ---------------------------------------------------------------------------------------------

#[test]
fn default_config_values() {
    let c = Config::default();
    assert_eq!(c.symbol_bits, 5);
    assert_eq!(c.prefetch_depth, 8);
    assert_eq!(c.max_load_factor, 0.85);
    assert!(c.initial_buckets >= 1);
    let map = CuckooTrie::<u64>::new();
    assert_eq!(map.config().symbol_bits, 5);
    assert_eq!(map.config().prefetch_depth, 8);
    assert_eq!(map.config().max_load_factor, 0.85);
    let map = CuckooTrie::<u64>::default();
    assert!(map.is_empty());
    assert_eq!(map.config().symbol_bits, 5);
}

#[test]
fn with_config_rejects_each_out_of_range_field() {
    type Edit = fn(&mut Config);
    let bad: [(&str, Edit); 13] = [
        ("symbol_bits = 0", |c| c.symbol_bits = 0),
        ("symbol_bits = 6", |c| c.symbol_bits = 6),
        ("symbol_bits = u32::MAX", |c| c.symbol_bits = u32::MAX),
        ("prefetch_depth = 0", |c| c.prefetch_depth = 0),
        ("prefetch_depth = 17", |c| c.prefetch_depth = 17),
        ("prefetch_depth = usize::MAX", |c| {
            c.prefetch_depth = usize::MAX
        }),
        ("max_load_factor = 0.49", |c| c.max_load_factor = 0.49),
        ("max_load_factor = 0.951", |c| c.max_load_factor = 0.951),
        ("max_load_factor = NaN", |c| c.max_load_factor = f64::NAN),
        ("max_load_factor = -1", |c| c.max_load_factor = -1.0),
        ("max_load_factor = inf", |c| {
            c.max_load_factor = f64::INFINITY
        }),
        ("max_load_factor = 1", |c| c.max_load_factor = 1.0),
        ("initial_buckets = 0", |c| c.initial_buckets = 0),
    ];
    for (what, edit) in bad {
        let mut c = Config::default();
        edit(&mut c);
        match CuckooTrie::<u64>::with_config(c) {
            Err(Error::InvalidConfig { .. }) => {}
            Err(e) => panic!("with_config({what}) failed with the wrong error: {e:?}"),
            Ok(_) => panic!("with_config({what}) was accepted"),
        }
    }
    // The ends of every range are accepted and give a working map reporting its config.
    let good: [(&str, Edit); 9] = [
        ("symbol_bits = 1", |c| c.symbol_bits = 1),
        ("symbol_bits = 5", |c| c.symbol_bits = 5),
        ("prefetch_depth = 1", |c| c.prefetch_depth = 1),
        ("prefetch_depth = 16", |c| c.prefetch_depth = 16),
        ("max_load_factor = 0.5", |c| c.max_load_factor = 0.5),
        ("max_load_factor = 0.95", |c| c.max_load_factor = 0.95),
        ("initial_buckets = 1", |c| c.initial_buckets = 1),
        ("initial_buckets = 1000", |c| c.initial_buckets = 1000),
        ("all at their low ends", |c| {
            c.symbol_bits = 1;
            c.prefetch_depth = 1;
            c.max_load_factor = 0.5;
            c.initial_buckets = 1;
        }),
    ];
    for (what, edit) in good {
        let mut c = Config::default();
        edit(&mut c);
        let (bits, depth, load) = (c.symbol_bits, c.prefetch_depth, c.max_load_factor);
        let mut map = match CuckooTrie::<u64>::with_config(c) {
            Ok(m) => m,
            Err(e) => panic!("with_config({what}) was refused: {e}"),
        };
        assert_eq!(map.config().symbol_bits, bits, "{what}");
        assert_eq!(map.config().prefetch_depth, depth, "{what}");
        assert_eq!(map.config().max_load_factor, load, "{what}");
        for i in 0..300u64 {
            assert_eq!(map.insert(&i.to_be_bytes(), i), Ok(None), "{what}");
        }
        for i in 0..300u64 {
            assert_eq!(map.get(&i.to_be_bytes()), Some(&i), "{what}");
        }
        assert_eq!(map.len(), 300);
        audit(&map, what);
    }
}

/// Table sizes whose byte count passes `usize::MAX` (or the 2^32 hash values) are refused with
/// `Error::OutOfMemory`, never wrapped onto a small table (issue 16's overflow audit).
#[test]
fn with_config_refuses_absurd_initial_buckets() {
    for buckets in [
        usize::MAX,
        usize::MAX - 1,
        usize::MAX / 64 + 1,
        usize::MAX / 64,
        1 << 40,
    ] {
        let c = Config {
            initial_buckets: buckets,
            ..Config::default()
        };
        match CuckooTrie::<u64>::with_config(c.clone()) {
            Err(Error::OutOfMemory { .. }) => {}
            Err(e) => panic!("with_config(initial_buckets = {buckets}) failed with {e:?}"),
            Ok(_) => panic!("with_config(initial_buckets = {buckets}) was accepted"),
        }
        assert!(
            matches!(
                ConcurrentCuckooTrie::<u64>::with_config(c),
                Err(Error::OutOfMemory { .. })
            ),
            "ConcurrentCuckooTrie::with_config(initial_buckets = {buckets})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Seeks and ranges on small maps; empty maps; empty and inverted ranges
// ---------------------------------------------------------------------------------------------

#[test]
fn seeks_and_ranges_on_every_subset_of_a_small_universe() {
    let universe: [&[u8]; 8] = [b"", b"\x00", b"a", b"ab", b"ab\x00", b"abc", b"b", b"\xff"];
    let mut probes: Vec<Vec<u8>> = universe.iter().map(|k| k.to_vec()).collect();
    probes.extend(
        [
            &b"\x00\x00"[..],
            b"a\x00",
            b"aa",
            b"abb",
            b"abc\x00",
            b"ac",
            b"b\xff",
            b"c",
            b"\xff\xff",
        ]
        .map(<[u8]>::to_vec),
    );
    for (name, cfg) in [
        ("default", default_config as fn() -> Config),
        ("symbol_bits=1", || bits_config(1)),
        ("key_index", key_index_config),
    ] {
        for subset in 0u32..(1 << universe.len()) {
            let ctx = format!("[{name}] subset {subset:#010b}");
            let mut map: CuckooTrie<u64> = trie(cfg());
            let mut oracle = Oracle::new();
            for (i, k) in universe.iter().enumerate() {
                if subset >> i & 1 == 1 {
                    assert_eq!(
                        map.insert(k, i as u64),
                        Ok(None),
                        "{ctx}: insert({})",
                        Escaped(k)
                    );
                    oracle.insert(k.to_vec(), i as u64);
                }
            }
            // Seeks with every bound kind around every probe, and ranges between every pair.
            ok_or_panic(check_all(
                &map,
                &oracle,
                &probes,
                0,
                &mut TestRng::new(0),
                &ctx,
            ));
            for a in &probes {
                for b in &probes {
                    for s in bounds_of(a) {
                        for e in bounds_of(b) {
                            ok_or_panic(check_range(&map, &oracle, s, e, &ctx));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn empty_map_answers_none_everywhere() {
    let maps: [(&str, CuckooTrie<u64>); 5] = [
        ("new()", CuckooTrie::new()),
        ("default()", CuckooTrie::default()),
        ("growth config", trie(growth_config())),
        ("symbol_bits=1", trie(bits_config(1))),
        ("key_index", trie(key_index_config())),
    ];
    let probes: [&[u8]; 5] = [b"", b"\x00", b"a", b"\xff\xff", &[0x55; 3000]];
    for (name, mut map) in maps {
        assert_eq!(map.len(), 0, "{name}");
        assert!(map.is_empty(), "{name}");
        assert!(map.first().is_none() && map.last().is_none(), "{name}");
        assert!(
            map.iter().next().is_none() && map.iter().next_back().is_none(),
            "{name}"
        );
        assert!(map.range(..).next().is_none(), "{name}");
        for p in probes {
            assert!(map.get(p).is_none(), "{name}: get({})", Escaped(p));
            assert!(!map.contains_key(p), "{name}");
            for b in bounds_of(p) {
                assert!(
                    map.lower_bound(b).is_none(),
                    "{name}: lower_bound({})",
                    show_bound(b)
                );
                assert!(
                    map.upper_bound(b).is_none(),
                    "{name}: upper_bound({})",
                    show_bound(b)
                );
                for e in bounds_of(b"zz") {
                    let mut r = map.range((b, e));
                    assert!(r.next().is_none() && r.next_back().is_none(), "{name}");
                    let mut r = map.range((e, b));
                    assert!(r.next_back().is_none() && r.next().is_none(), "{name}");
                }
            }
        }
        for p in probes {
            assert!(map.remove(p).is_none(), "{name}: remove({})", Escaped(p));
        }
        audit(&map, name);
        map.clear();
        assert!(map.is_empty(), "{name}: clear() of an empty map");
        audit(&map, name);
    }
}

#[test]
fn empty_and_inverted_ranges_yield_nothing() {
    let mut map = CuckooTrie::<u64>::new();
    for (i, c) in (b'a'..=b'z').enumerate() {
        map.insert(&[c], i as u64).unwrap();
        map.insert(&[c, c], i as u64 + 100).unwrap();
    }
    let (a, b, c): (&[u8], &[u8], &[u8]) = (b"b", b"b\x00", b"c");
    type Pair<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);
    let empty: [(&str, Pair<'_>); 9] = [
        ("c..b", (Bound::Included(c), Bound::Excluded(a))),
        ("c..=b", (Bound::Included(c), Bound::Included(a))),
        ("(c, b]", (Bound::Excluded(c), Bound::Included(a))),
        ("(c, b)", (Bound::Excluded(c), Bound::Excluded(a))),
        ("b..b", (Bound::Included(a), Bound::Excluded(a))),
        ("(b, b]", (Bound::Excluded(a), Bound::Included(a))),
        ("(b, b)", (Bound::Excluded(a), Bound::Excluded(a))),
        // Nothing lies strictly between "b" and "b\0", though the range is not inverted.
        ("(b, b\\0)", (Bound::Excluded(a), Bound::Excluded(b))),
        (
            "zz\\0..zz\\xff (past every key)",
            (
                Bound::Included(&b"zz\x00"[..]),
                Bound::Included(&b"zz\xff"[..]),
            ),
        ),
    ];
    for (what, r) in empty {
        let mut it = map.range(r);
        assert!(it.next().is_none(), "range {what}: next()");
        assert!(it.next_back().is_none(), "range {what}: next_back()");
        assert!(
            it.next().is_none(),
            "range {what}: next() after next_back()"
        );
        assert_eq!(map.range(r).rev().count(), 0, "range {what} reversed");
    }
    // The std range forms.
    assert_eq!(map.range("c".."b").count(), 0);
    assert_eq!(map.range("b".."b").count(), 0);
    assert_eq!(map.range(&b"c"[..]..=&b"b"[..]).count(), 0);
    assert_eq!(map.range(b"c".to_vec()..b"b".to_vec()).next_back(), None);
    // Non-empty neighbours of those ranges, for contrast.
    assert_eq!(map.range("b"..="b").count(), 1);
    assert_eq!(
        map.range((Bound::Excluded(a), Bound::Included(c))).count(),
        2
    );
    assert_eq!(
        map.range("b".."c").map(|(k, _)| k).collect::<Vec<_>>(),
        [&b"b"[..], b"bb"]
    );
    audit(&map, "after empty ranges");
}

#[test]
fn seeks_with_every_bound_kind_on_a_small_map() {
    // Explicit expectations, independent of BTreeMap.
    let mut map = CuckooTrie::<u64>::new();
    for (k, v) in [(&b"b"[..], 1), (b"d", 2), (b"d\x00", 3), (b"f", 4)] {
        map.insert(k, v).unwrap();
    }
    let v = |e: Option<(&[u8], &u64)>| e.map(|(_, v)| *v);
    use Bound::{Excluded as Ex, Included as In, Unbounded as Un};
    assert_eq!(v(map.first()), Some(1));
    assert_eq!(v(map.last()), Some(4));
    assert_eq!(v(map.lower_bound(Un)), Some(1));
    assert_eq!(v(map.upper_bound(Un)), Some(4));
    assert_eq!(v(map.lower_bound(In(b"a"))), Some(1));
    assert_eq!(v(map.lower_bound(In(b"b"))), Some(1));
    assert_eq!(v(map.lower_bound(Ex(b"b"))), Some(2));
    assert_eq!(v(map.lower_bound(In(b"d"))), Some(2));
    assert_eq!(v(map.lower_bound(Ex(b"d"))), Some(3));
    assert_eq!(v(map.lower_bound(Ex(b"d\x00"))), Some(4));
    assert_eq!(v(map.lower_bound(In(b"d\x00\x00"))), Some(4));
    assert_eq!(v(map.lower_bound(Ex(b"f"))), None);
    assert_eq!(v(map.lower_bound(In(b"g"))), None);
    assert_eq!(v(map.upper_bound(In(b"a"))), None);
    assert_eq!(v(map.upper_bound(Ex(b"b"))), None);
    assert_eq!(v(map.upper_bound(In(b"b"))), Some(1));
    assert_eq!(v(map.upper_bound(In(b"c"))), Some(1));
    assert_eq!(v(map.upper_bound(Ex(b"d"))), Some(1));
    assert_eq!(v(map.upper_bound(In(b"d"))), Some(2));
    assert_eq!(v(map.upper_bound(Ex(b"d\x00"))), Some(2));
    assert_eq!(v(map.upper_bound(In(b"d\x00"))), Some(3));
    assert_eq!(v(map.upper_bound(In(b"d\x00\x00"))), Some(3));
    assert_eq!(v(map.upper_bound(Ex(b"e"))), Some(3));
    assert_eq!(v(map.upper_bound(Ex(b"f"))), Some(3));
    assert_eq!(v(map.upper_bound(In(b"f"))), Some(4));
    assert_eq!(v(map.upper_bound(In(b"\xff"))), Some(4));
    let keys = |r: Vec<(&[u8], &u64)>| r.into_iter().map(|(_, v)| *v).collect::<Vec<_>>();
    assert_eq!(
        keys(map.range((In(&b"b"[..]), Ex(&b"d\x00"[..]))).collect()),
        [1, 2]
    );
    assert_eq!(
        keys(map.range((Ex(&b"b"[..]), In(&b"d\x00"[..]))).collect()),
        [2, 3]
    );
    assert_eq!(keys(map.range((Ex(&b"d"[..]), Un)).rev().collect()), [4, 3]);
    assert_eq!(keys(map.range((Un, Ex(&b"d"[..]))).collect()), [1]);
    assert_eq!(keys(map.range((Un::<&[u8]>, Un)).collect()), [1, 2, 3, 4]);
}

// ---------------------------------------------------------------------------------------------
// Reproductions of failures found by the tests above
// ---------------------------------------------------------------------------------------------

/// The global allocator, counting the bytes each thread has live and its peak, so a test can
/// measure the heap one call needs on its own thread while other tests run in parallel.
struct CountingAlloc;

thread_local! {
    static HEAP_LIVE: Cell<isize> = const { Cell::new(0) };
    static HEAP_PEAK: Cell<isize> = const { Cell::new(0) };
}

fn heap_account(delta: isize) {
    // `try_with`: allocations during thread teardown find the thread-locals gone.
    let _ = HEAP_LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = HEAP_PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every method forwards to `System` unchanged; the accounting touches only
// const-initialized thread-locals, which never allocate.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        heap_account(layout.size() as isize);
        // SAFETY: the caller's contract is `System.alloc`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        heap_account(layout.size() as isize);
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        heap_account(-(layout.size() as isize));
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        heap_account(new as isize - layout.size() as isize);
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Runs `f` and returns its result with the peak of heap bytes it had live beyond what the
/// thread held when it started (allocations of this thread only).
fn heap_peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = HEAP_LIVE.with(Cell::get);
    HEAP_PEAK.with(|p| p.set(start));
    let r = f();
    let peak = HEAP_PEAK.with(Cell::get);
    (r, (peak - start).max(0) as usize)
}

/// Regression: `check_invariants()` once cloned the node name walked so far for every jump node
/// of a chain and kept all the clones, so its memory grew with the square of a shared prefix
/// (hundreds of GB for two keys of `MAX_KEY_LEN`; found by
/// `max_key_len_is_accepted_and_one_more_refused`). Two keys of 16 KiB sharing all but the last
/// byte: the audit's heap peak must stay within a small multiple of what the map owns.
#[test]
fn check_invariants_memory_is_linear_in_shared_prefix() {
    let n = 16 * 1024;
    let a = vec![0xabu8; n];
    let mut b = a.clone();
    b[n - 1] = 0xac;
    let mut map = CuckooTrie::<u64>::new();
    assert_eq!(map.insert(&a, 1), Ok(None));
    assert_eq!(map.insert(&b, 2), Ok(None));
    let owned = map.memory_usage();
    let (result, peak) = heap_peak_of(|| map.check_invariants());
    assert_eq!(result, Ok(()));
    let limit = 16 * owned.max(1 << 20);
    assert!(
        peak <= limit,
        "check_invariants() on two {n}-byte keys sharing {} bytes had {peak} heap bytes live at \
         its peak; the map owns {owned} bytes (limit {limit})",
        n - 1
    );
}

// ---------------------------------------------------------------------------------------------
// BTreeMap parity: the std-shaped API against `BTreeMap<Vec<u8>, u64>`
// ---------------------------------------------------------------------------------------------

/// The whole map equals the model: entries both ways, keys, values, lengths, `Debug`, `==`.
fn check_parity(map: &CuckooTrie<u64>, model: &BTreeMap<Vec<u8>, u64>, ctx: &str) {
    let got: Vec<(Vec<u8>, u64)> = map.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    let want: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(got, want, "{ctx}: iter");
    let keys: Vec<&[u8]> = map.keys().rev().collect();
    let want_keys: Vec<&[u8]> = model.keys().rev().map(Vec::as_slice).collect();
    assert_eq!(keys, want_keys, "{ctx}: keys().rev()");
    let values: Vec<u64> = map.values().copied().collect();
    assert_eq!(
        values,
        model.values().copied().collect::<Vec<_>>(),
        "{ctx}: values"
    );
    assert_eq!(map.len(), model.len(), "{ctx}: len");
    let by_ref: Vec<(&[u8], &u64)> = map.into_iter().collect();
    assert_eq!(by_ref.len(), model.len(), "{ctx}: &map into_iter");
    let want_debug = format!(
        "{{{}}}",
        model
            .iter()
            .map(|(k, v)| format!("{:?}: {v:?}", Escaped(k)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(format!("{map:?}"), want_debug, "{ctx}: Debug");
}

/// One random step of the std-shaped API, mirrored on the model.
fn parity_step(
    map: &mut CuckooTrie<u64>,
    model: &mut BTreeMap<Vec<u8>, u64>,
    rng: &mut TestRng,
    shape: KeyShape,
    ctx: &str,
) {
    // Half the time a stored key, so occupied entries and removals are common.
    let key = if !model.is_empty() && rng.chance(0.5) {
        let i = rng.below(model.len() as u64) as usize;
        model.keys().nth(i).expect("in range").clone()
    } else {
        shape.gen_key(rng)
    };
    let v = rng.next_u64() >> 1;
    match rng.below(16) {
        0 => assert_eq!(
            *map.entry(&key).or_insert(v),
            *model.entry(key.clone()).or_insert(v),
            "{ctx}: or_insert"
        ),
        1 => assert_eq!(
            *map.entry(&key).and_modify(|x| *x += 1).or_default(),
            *model
                .entry(key.clone())
                .and_modify(|x| *x += 1)
                .or_default(),
            "{ctx}: and_modify.or_default"
        ),
        2 => {
            let f = |k: &[u8]| k.len() as u64 * 3;
            let got = *map.entry(&key).or_insert_with_key(|k| f(k));
            let want = *model.entry(key.clone()).or_insert_with_key(|k| f(k));
            assert_eq!(got, want, "{ctx}: or_insert_with_key");
        }
        3 => match (map.entry(&key), model.entry(key.clone())) {
            (
                mlpdex::cuckoo_trie::Entry::Occupied(mut o),
                std::collections::btree_map::Entry::Occupied(mut m),
            ) => {
                assert_eq!(
                    (o.key(), o.get()),
                    (m.key().as_slice(), m.get()),
                    "{ctx}: occupied"
                );
                match rng.below(4) {
                    0 => assert_eq!(o.insert(v), m.insert(v), "{ctx}: occupied insert"),
                    1 => assert_eq!(o.remove(), m.remove(), "{ctx}: occupied remove"),
                    2 => assert_eq!(o.remove_entry(), m.remove_entry(), "{ctx}: remove_entry"),
                    _ => {
                        *o.get_mut() ^= 5;
                        *m.get_mut() ^= 5;
                        assert_eq!(*o.into_mut(), *m.into_mut(), "{ctx}: into_mut");
                    }
                }
            }
            (
                mlpdex::cuckoo_trie::Entry::Vacant(e),
                std::collections::btree_map::Entry::Vacant(m),
            ) => {
                assert_eq!(e.key(), m.key().as_slice(), "{ctx}: vacant key");
                assert_eq!(*e.insert(v), *m.insert(v), "{ctx}: vacant insert");
            }
            _ => panic!("{ctx}: entry kinds differ for {}", Escaped(&key)),
        },
        4 => assert_eq!(map.pop_first(), model.pop_first(), "{ctx}: pop_first"),
        5 => assert_eq!(map.pop_last(), model.pop_last(), "{ctx}: pop_last"),
        6 => {
            let salt = rng.next_u64();
            let keep = |k: &[u8], v: &mut u64| {
                *v = v.wrapping_add(1);
                !(mix64(*v ^ salt) ^ k.len() as u64).is_multiple_of(4)
            };
            map.retain(|k, v| keep(k, v));
            model.retain(|k, v| keep(k, v));
        }
        7 => {
            // Mutable ranges from both ends, meeting in the middle.
            let other = shape.gen_key(rng);
            let (lo, hi) = if key <= other {
                (key, other)
            } else {
                (other, key)
            };
            let mut it = map.range_mut(lo.as_slice()..=hi.as_slice());
            let mut mit = model.range_mut(lo.clone()..=hi.clone());
            loop {
                let back = rng.chance(0.5);
                let (g, w) = if back {
                    (it.next_back(), mit.next_back())
                } else {
                    (it.next(), mit.next())
                };
                match (g, w) {
                    (Some((gk, gv)), Some((wk, wv))) => {
                        assert_eq!(gk, wk.as_slice(), "{ctx}: range_mut key");
                        *gv = gv.wrapping_mul(3);
                        *wv = wv.wrapping_mul(3);
                    }
                    (None, None) => break,
                    (g, w) => panic!(
                        "{ctx}: range_mut {:?} vs {:?}",
                        g.map(|x| x.1),
                        w.map(|x| x.1)
                    ),
                }
            }
        }
        8 => {
            for (x, y) in map.values_mut().zip(model.values_mut()) {
                *x ^= 1;
                *y ^= 1;
            }
            for ((_, x), (_, y)) in (&mut *map).into_iter().rev().zip(model.iter_mut().rev()) {
                *x = x.wrapping_add(7);
                *y = y.wrapping_add(7);
            }
        }
        9 => {
            let pairs: Vec<(Vec<u8>, u64)> = (0..rng.below(4))
                .map(|i| (shape.gen_key(rng), v + i))
                .collect();
            if rng.chance(0.5) {
                map.extend(pairs.iter().map(|(k, v)| (k.as_slice(), *v)));
            } else {
                assert_eq!(map.try_extend(pairs.clone()), Ok(()), "{ctx}: try_extend");
            }
            model.extend(pairs);
        }
        10 => {
            assert_eq!(
                map.get_key_value(&key),
                model.get_key_value(&key).map(|(k, v)| (k.as_slice(), v)),
                "{ctx}: get_key_value"
            );
            if let Some(want) = model.get(&key) {
                assert_eq!(map[key.as_slice()], *want, "{ctx}: Index");
            }
            let first = model.first_key_value().map(|(k, v)| (k.as_slice(), v));
            assert_eq!(map.first_key_value(), first, "{ctx}: first_key_value");
            let last = model.last_key_value().map(|(k, v)| (k.as_slice(), v));
            assert_eq!(map.last_key_value(), last, "{ctx}: last_key_value");
        }
        11 => assert_eq!(
            map.remove_entry(&key),
            model.remove_entry(&key),
            "{ctx}: remove_entry"
        ),
        12 => {
            let mut c = map.clone();
            audit(&c, ctx);
            assert!(c == *map, "{ctx}: clone == original");
            c.insert(&key, v ^ 0xFFFF).unwrap();
            let differs = model.get(&key) != Some(&(v ^ 0xFFFF));
            assert_eq!(c != *map, differs, "{ctx}: clone after a change");
        }
        13 => map.reserve(rng.below(2000) as usize),
        _ => assert_eq!(
            map.insert(&key, v).unwrap(),
            model.insert(key, v),
            "{ctx}: insert"
        ),
    }
}

fn parity_run(cfg: fn() -> Config, shape: KeyShape, seed: u64, steps: usize) {
    let ctx = format!("parity {shape:?} seed {seed}");
    let mut map: CuckooTrie<u64> = trie(cfg());
    let mut model = BTreeMap::new();
    let mut rng = TestRng::new(seed);
    for step in 0..steps {
        let ctx = format!("{ctx} step {step}");
        parity_step(&mut map, &mut model, &mut rng, shape, &ctx);
        if step % 25 == 0 {
            check_parity(&map, &model, &ctx);
            audit(&map, &ctx);
        }
    }
    check_parity(&map, &model, &ctx);
    audit(&map, &ctx);
    // FromIterator from the model's pairs (`&[u8]` keys), and `==` with the map.
    let collected: CuckooTrie<u64> = model.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
    assert!(collected == map, "{ctx}: collect == map");
    // Owned iteration, alternating ends, against the model's.
    let mut it = map.clone().into_iter();
    let mut mit = model.clone().into_iter();
    assert_eq!(it.len(), mit.len(), "{ctx}: into_iter len");
    loop {
        let (g, w) = if rng.chance(0.5) {
            (it.next_back(), mit.next_back())
        } else {
            (it.next(), mit.next())
        };
        assert_eq!(g, w, "{ctx}: into_iter");
        if g.is_none() {
            break;
        }
    }
    let keys: Vec<Vec<u8>> = map.clone().into_keys().collect();
    assert_eq!(
        keys,
        model.keys().cloned().collect::<Vec<_>>(),
        "{ctx}: into_keys"
    );
    let values: Vec<u64> = map.into_values().rev().collect();
    assert_eq!(
        values,
        model.values().rev().copied().collect::<Vec<_>>(),
        "{ctx}: into_values"
    );
}

#[test]
fn btreemap_parity_differential() {
    for shape in all_shapes() {
        let steps = if shape == KeyShape::Long { 150 } else { 600 };
        for seed in [1, 2] {
            parity_run(default_config, shape, seed, steps);
        }
        parity_run(smallest_table_config, shape, 3, steps);
    }
}

#[test]
fn into_iter_and_drain_paths_drop_every_value_once() {
    let live = Rc::new(());
    let mut map: CuckooTrie<Rc<()>> = CuckooTrie::new();
    for i in 0..300u32 {
        map.insert(&i.to_be_bytes(), Rc::clone(&live)).unwrap();
    }
    let mut it = map.clone().into_iter();
    assert_eq!(Rc::strong_count(&live), 601);
    let (k, v) = it.next().unwrap();
    assert_eq!(k, 0u32.to_be_bytes());
    drop(v);
    assert_eq!(
        it.next_back().map(|(k, _)| k),
        Some(299u32.to_be_bytes().to_vec())
    );
    assert_eq!(Rc::strong_count(&live), 599);
    drop(it);
    assert_eq!(
        Rc::strong_count(&live),
        301,
        "a half-used IntoIter drops the rest"
    );
    map.retain(|k, _| k[3] % 2 == 0);
    assert_eq!(Rc::strong_count(&live), 151);
    assert_eq!(map.into_values().count(), 150);
    assert_eq!(Rc::strong_count(&live), 1);
}

#[test]
#[should_panic(expected = "no entry for the key")]
fn index_panics_on_a_missing_key() {
    let map: CuckooTrie<u64> = [("a", 1)].into_iter().collect();
    assert_eq!(map["a"], 1);
    let _ = map[b"b"];
}

#[test]
fn over_long_keys_in_the_std_shaped_api() {
    let long = vec![7u8; CuckooTrie::<u64>::MAX_KEY_LEN + 1];
    let mut map: CuckooTrie<u64> = CuckooTrie::new();
    assert!(matches!(
        map.try_entry(&long),
        Err(Error::KeyTooLong { .. })
    ));
    let r = map.try_extend([(b"ok".as_slice(), 1), (long.as_slice(), 2), (b"never", 3)]);
    assert!(matches!(r, Err(Error::KeyTooLong { .. })));
    assert_eq!(
        map.keys().collect::<Vec<_>>(),
        [b"ok"],
        "pairs before the error stay"
    );
    let entry = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        map.entry(&long).or_insert(0);
    }));
    assert!(entry.is_err(), "entry() panics on an over-long key");
    let extend = std::panic::catch_unwind(|| {
        let mut m: CuckooTrie<u64> = CuckooTrie::new();
        m.extend([(long.clone(), 1)]);
    });
    assert!(extend.is_err(), "extend() panics on an over-long key");
}

#[test]
fn empty_map_fits_in_4_kib() {
    let map = CuckooTrie::<u64>::new();
    assert!(
        map.memory_usage() <= PAGE,
        "an empty map owns {} bytes",
        map.memory_usage()
    );
    assert_eq!(map.mapped_bytes(), 0, "an empty map maps no page");
    let mut map = map;
    for i in 0..10_000u64 {
        map.insert(&mix64(i).to_be_bytes(), i).unwrap();
    }
    map.clear();
    assert!(
        map.memory_usage() <= PAGE,
        "a cleared map owns {} bytes",
        map.memory_usage()
    );
}

#[test]
fn with_capacity_does_not_grow_while_filling() {
    let n = 20_000u64;
    let mut map: CuckooTrie<u64> = CuckooTrie::with_capacity(n as usize);
    let reserved = map.mapped_bytes();
    assert!(
        reserved >= 64 * (n as usize) / 4,
        "table of {reserved} bytes for {n} keys"
    );
    for i in 0..n {
        map.insert(&mix64(i).to_be_bytes(), i).unwrap();
    }
    assert_eq!(
        map.mapped_bytes(),
        reserved,
        "the table grew despite the reservation"
    );
    audit(&map, "with_capacity");
    // reserve on a filled map keeps every entry.
    map.reserve(5 * n as usize);
    assert!(map.mapped_bytes() > reserved);
    audit(&map, "reserve");
    assert_eq!(map.len(), n as usize);
    assert!((0..n).all(|i| map.get(&mix64(i).to_be_bytes()) == Some(&i)));
}

#[test]
fn shrink_to_fit_returns_a_reservation_and_keeps_every_entry() {
    let n = 20_000u64;
    let mut map: CuckooTrie<u64> = CuckooTrie::new();
    for i in 0..n {
        map.insert(&mix64(i).to_be_bytes(), i).unwrap();
    }
    let grown = map.mapped_bytes();
    map.shrink_to_fit();
    assert!(map.mapped_bytes() <= grown, "shrink_to_fit grew the table");
    let fitted = map.mapped_bytes();
    map.reserve(50 * n as usize);
    let reserved = map.mapped_bytes();
    assert!(reserved > fitted);
    map.shrink_to_fit();
    assert!(
        map.mapped_bytes() < reserved,
        "shrink_to_fit kept a {reserved}-byte reservation"
    );
    map.shrink_to_fit();
    audit(&map, "shrink_to_fit");
    assert_eq!(map.len(), n as usize);
    assert!((0..n).all(|i| map.get(&mix64(i).to_be_bytes()) == Some(&i)));
}
