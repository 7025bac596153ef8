//! The driver's own tests: it passes correct maps (`ModelMap` and friends) and catches every
//! deliberately broken variant, for every key shape.

use super::{
    apply::*, keys::*, model::*, ops::*, ordered::*, report::*, rng::*, static_map::*,
    strategies::*,
};
use crate::KeyRange;
use core::ops::{Bound, ControlFlow};
use std::panic::{self};

use super::*;
use crate::Error;
use crate::api::{
    ByValue, ConcurrentOrderedMap, OrderedMap, RangeCursor, StaticMap, StaticMapBuilder,
};
use crate::key::{Escaped, is_empty_range};
use proptest::prelude::{ProptestConfig, proptest};
use proptest::test_runner::{
    Config, RngAlgorithm, TestCaseError, TestError, TestRng as PropRng, TestRunner,
};
use std::collections::{BTreeMap, BTreeSet, btree_map};
use std::sync::{Mutex, MutexGuard};

const SEEDS: [u64; 3] = [1, 0x5eed, 0xdead_beef];
const STEPS: usize = 20_000;

// ----- random numbers and key shapes -----------------------------------------------------

#[test]
fn rng_is_deterministic_and_bounded() {
    let a: Vec<u64> = {
        let mut r = TestRng::new(7);
        (0..100).map(|_| r.next_u64()).collect()
    };
    let b: Vec<u64> = {
        let mut r = TestRng::new(7);
        (0..100).map(|_| r.next_u64()).collect()
    };
    assert_eq!(a, b);
    assert_ne!(a, {
        let mut r = TestRng::new(8);
        (0..100).map(|_| r.next_u64()).collect::<Vec<_>>()
    });
    let mut r = TestRng::new(1);
    let mut seen = [0usize; 10];
    for _ in 0..10_000 {
        let x = r.below(10);
        assert!(x < 10);
        seen[x as usize] += 1;
    }
    // Every value turns up roughly a tenth of the time.
    assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    assert_eq!(r.below(0), 0);
    assert_eq!(r.index(1), 0);
    assert!((0..1000).all(|_| !r.chance(0.0) && r.chance(1.0)));
    let hits = (0..10_000).filter(|_| r.chance(0.25)).count();
    assert!((2_200..2_800).contains(&hits), "{hits}");
    assert_eq!(*r.pick(&[42]), 42);
}

fn draw(shape: KeyShape, seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = TestRng::new(seed);
    (0..n).map(|_| shape.gen_key(&mut rng)).collect()
}

#[test]
fn shapes_respect_their_constraints() {
    let n = 5_000;
    for k in draw(KeyShape::RandomBytes, 1, n) {
        assert!(k.len() <= 24, "{}", Escaped(&k));
    }
    for k in draw(KeyShape::ZeroFf, 2, n) {
        assert!(k.len() <= 12 && k.iter().all(|&b| b == 0 || b == 0xff));
    }
    for k in draw(KeyShape::U64, 3, n) {
        assert_eq!(k.len(), 8);
    }
    for k in draw(KeyShape::Long, 4, 500) {
        assert!((1024..=8192).contains(&k.len()), "{}", k.len());
    }
    for k in draw(KeyShape::SharedPrefix, 5, n) {
        assert!(k.len() <= 40 + 3);
    }
    // Prefix chains: every key is a chain prefix, maybe with one byte appended.
    for k in draw(KeyShape::PrefixChains, 6, n) {
        let ok = CHAINS
            .iter()
            .any(|c| c.starts_with(&k) || (!k.is_empty() && c.starts_with(&k[..k.len() - 1])));
        assert!(ok, "{}", Escaped(&k));
    }
    // Long keys share long prefixes: many pairs agree on their first 1000 bytes.
    let long = draw(KeyShape::Long, 7, 50);
    let sharing = long
        .iter()
        .filter(|k| long.iter().filter(|o| o[..1000] == k[..1000]).count() > 1)
        .count();
    assert!(sharing > 40, "{sharing}");
}

#[test]
fn paths_share_long_prefixes_and_hold_their_directories() {
    let keys: BTreeSet<Vec<u8>> = draw(KeyShape::Paths, 8, 5_000).into_iter().collect();
    let sorted: Vec<&Vec<u8>> = keys.iter().collect();
    let shared: usize = sorted
        .windows(2)
        .map(|w| {
            w[0].iter()
                .zip(w[1].iter())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .sum();
    let mean = shared / (sorted.len() - 1);
    assert!(mean >= 40, "mean shared prefix {mean}");
    let prefixes = sorted.windows(2).filter(|w| w[1].starts_with(w[0])).count();
    assert!(prefixes > 100, "{prefixes} keys are prefixes of the next");
    assert!(keys.iter().all(|k| k.len() < 400));
    assert!(keys.iter().any(|k| k.contains(&0x00)) && keys.iter().any(|k| k.contains(&0xff)));
}

#[test]
fn shapes_draw_adversarial_keys_from_small_universes() {
    let wanted_empty = [
        KeyShape::RandomBytes,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::Mixed,
    ];
    let all = KeyShape::ALL.iter();
    for &shape in all {
        let n = if shape == KeyShape::Long {
            2_000
        } else {
            10_000
        };
        let keys = draw(shape, 11, n);
        let distinct: BTreeSet<&Vec<u8>> = keys.iter().collect();
        // Repeats are frequent: at most 60% of the draws are distinct keys.
        assert!(
            distinct.len() * 10 <= n * 6,
            "{shape:?}: {} of {n}",
            distinct.len()
        );
        assert!(
            distinct.len() > 50,
            "{shape:?}: only {} keys",
            distinct.len()
        );
        if wanted_empty.contains(&shape) {
            assert!(
                distinct.contains(&Vec::new()),
                "{shape:?} never draws the empty key"
            );
        }
    }
    let bytes: BTreeSet<u8> = draw(KeyShape::RandomBytes, 12, 5_000)
        .concat()
        .into_iter()
        .collect();
    assert!(bytes.contains(&0) && bytes.contains(&0xff) && bytes.len() > 200);
    // Prefix chains hold long chains of keys each a prefix of the next.
    let chain: BTreeSet<Vec<u8>> = draw(KeyShape::PrefixChains, 13, 5_000)
        .into_iter()
        .collect();
    assert!((0..=26).all(|n| chain.contains(&b"abcdefghijklmnopqrstuvwxyz"[..n])));
    // U64 keys include the edges and keys differing only in the last byte.
    let ints: BTreeSet<Vec<u8>> = draw(KeyShape::U64, 14, 5_000).into_iter().collect();
    assert!(ints.contains(0u64.to_be_bytes().as_slice()));
    assert!(ints.contains(u64::MAX.to_be_bytes().as_slice()));
    let last_byte_run = ints
        .iter()
        .filter(|k| k[..7] == 0xdead_beef_0000_0000u64.to_be_bytes()[..7])
        .count();
    assert!(last_byte_run > 20, "{last_byte_run}");
}

// ----- the reference map -----------------------------------------------------------------

#[test]
fn model_map_basics_and_exact_memory() {
    let mut m = ModelMap::new();
    assert_eq!(m.memory_usage(), 0);
    assert_eq!(m.insert(b"b", 2), Ok(None));
    assert_eq!(m.insert(b"", 0), Ok(None));
    assert_eq!(m.insert(b"abc", 3), Ok(None));
    assert_eq!(m.insert(b"b", 20), Ok(Some(2)));
    let keys: Vec<&[u8]> = m.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [&b""[..], b"abc", b"b"]);
    let entry = core::mem::size_of::<(Vec<u8>, u64)>();
    assert_eq!(m.memory_usage(), m.entries.capacity() * entry + 4);
    assert_eq!(
        m.lower_bound(Bound::Excluded(b"abc")),
        Some((&b"b"[..], &20))
    );
    assert_eq!(m.upper_bound(Bound::Excluded(b"abc")), Some((&b""[..], &0)));
    assert_eq!(
        m.range((
            Bound::Excluded(b"b".as_slice()),
            Bound::Excluded(b"b".as_slice())
        ))
        .count(),
        0
    );
    assert_eq!(m.range(b"c".as_slice()..=b"a".as_slice()).count(), 0);
    assert_eq!(m.range("a".."b").rev().count(), 1);
    assert_eq!(m.remove(b""), Some(0));
    m.clear();
    assert!(m.is_empty());
    assert_eq!(m.memory_usage(), 0);
}

#[test]
fn model_map_passes_every_shape() {
    for &shape in KeyShape::ALL.iter() {
        for seed in SEEDS {
            differential_ordered(ModelMap::new, shape, seed, STEPS);
        }
    }
}

/// An integer-only map: panics on any key or bound that is not 8 bytes wide, to show that
/// `KeyShape::U64` runs never produce one.
#[derive(Default)]
struct IntOnly(ModelMap<u64>);

fn width(k: &[u8]) -> &[u8] {
    assert_eq!(
        k.len(),
        8,
        "a {}-byte key reached an integer-only map",
        k.len()
    );
    k
}

fn width_bound(b: Bound<&[u8]>) -> Bound<&[u8]> {
    b.map(width)
}

impl OrderedMap<u64> for IntOnly {
    type Key<'a> = &'a [u8];
    type Value<'a> = &'a u64;
    type Range<'a> = ModelRange<'a, u64>;

    fn get(&self, key: &[u8]) -> Option<&u64> {
        self.0.get(width(key))
    }
    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        self.0.insert(width(key), value)
    }
    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        self.0.remove(width(key))
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        let (s, e) = range.key_bounds();
        self.0.range((width_bound(s), width_bound(e)))
    }
    fn memory_usage(&self) -> usize {
        self.0.memory_usage()
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

#[test]
fn u64_shape_keeps_every_key_eight_bytes_wide() {
    for seed in SEEDS {
        differential_ordered(IntOnly::default, KeyShape::U64, seed, STEPS);
    }
}

// ----- maps that lend nothing ------------------------------------------------------------

/// A map that lends neither keys nor values, as one decoding a compressed layout on the fly
/// does: keys come out as owned `Vec<u8>` (neither `Copy` nor a borrow of the map) and values as
/// [`ByValue`] copies. Shows that the drivers need no more of `OrderedMap::Key` and
/// `OrderedMap::Value` than the trait promises.
#[derive(Default)]
struct Decoding {
    map: BTreeMap<Vec<u8>, u64>,
    /// Added to every value a range hands out (0 for a correct map).
    range_error: u64,
}

/// A range of [`Decoding`]: the `BTreeMap`'s range, copied out entry by entry.
struct DecodingRange<'a> {
    inner: Option<btree_map::Range<'a, Vec<u8>, u64>>,
    error: u64,
}

impl DecodingRange<'_> {
    fn decode((k, v): (&Vec<u8>, &u64), error: u64) -> (Vec<u8>, ByValue<u64>) {
        (k.clone(), ByValue(v + error))
    }
}

impl Iterator for DecodingRange<'_> {
    type Item = (Vec<u8>, ByValue<u64>);
    fn next(&mut self) -> Option<Self::Item> {
        let e = self.inner.as_mut()?.next()?;
        Some(Self::decode(e, self.error))
    }
}

impl DoubleEndedIterator for DecodingRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let e = self.inner.as_mut()?.next_back()?;
        Some(Self::decode(e, self.error))
    }
}

impl OrderedMap<u64> for Decoding {
    type Key<'a> = Vec<u8>;
    type Value<'a> = ByValue<u64>;
    type Range<'a> = DecodingRange<'a>;

    fn get(&self, key: &[u8]) -> Option<ByValue<u64>> {
        self.map.get(key).copied().map(ByValue)
    }
    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        Ok(self.map.insert(key.to_vec(), value))
    }
    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        self.map.remove(key)
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn range<R>(&self, range: R) -> DecodingRange<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        DecodingRange {
            inner: (!is_empty_range(start, end)).then(|| self.map.range::<[u8], _>((start, end))),
            error: self.range_error,
        }
    }
    fn memory_usage(&self) -> usize {
        self.map.keys().map(|k| k.capacity() + 8).sum::<usize>() + 64
    }
    fn clear(&mut self) {
        self.map.clear();
    }
}

#[test]
fn a_map_lending_nothing_passes_every_shape() {
    for &shape in KeyShape::ALL.iter() {
        differential_ordered(Decoding::default, shape, 11, STEPS);
    }
    let mut m = Decoding::default();
    m.insert(b"k", 5).unwrap();
    let (k, v) = m.first().unwrap();
    assert_eq!((k, *v), (b"k".to_vec(), 5));
    assert_eq!(format!("{:?}", m.get(b"k")), "Some(5)");
}

#[test]
fn a_wrong_value_handed_out_by_value_is_caught() {
    let broken = || Decoding {
        range_error: 1,
        ..Decoding::default()
    };
    let d = try_differential_ordered(broken, KeyShape::Mixed, 11, STEPS)
        .expect_err("values off by one were not caught");
    assert_eq!(d.driver, "differential_ordered");
}

// ----- broken ordered maps are caught ----------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// `range` treats an `Excluded` start as `Included`.
    ExcludedStartAsIncluded,
    /// `insert` returns `None` when it replaces a value.
    UpdateReturnsNone,
    /// Inserting the empty key is accepted but does nothing.
    LosesEmptyKey,
    /// `next_back` does not stop where `next` has got to.
    BackCrossesFront,
    /// `remove` takes the key but returns `None`.
    RemoveReturnsNone,
    /// `memory_usage` is always 0.
    NoMemory,
    /// `get` panics on keys longer than 8 bytes.
    PanicsOnLongGet,
    /// After 5000 inserts, a new key is not stored (an update still is).
    DropsNewKeysLate,
}

struct Faulty {
    inner: ModelMap<u64>,
    fault: Fault,
    inserts: usize,
}

impl Faulty {
    fn new(fault: Fault) -> Self {
        Faulty {
            inner: ModelMap::new(),
            fault,
            inserts: 0,
        }
    }
}

struct FaultyRange<'a> {
    entries: &'a [(Vec<u8>, u64)],
    front: usize,
    back: usize,
    crossing: bool,
}

impl<'a> Iterator for FaultyRange<'a> {
    type Item = (&'a [u8], &'a u64);
    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        let (k, v) = &self.entries[self.front - 1];
        Some((k, v))
    }
}

impl DoubleEndedIterator for FaultyRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let floor = if self.crossing { 0 } else { self.front };
        if self.back <= floor {
            return None;
        }
        self.back -= 1;
        let (k, v) = &self.entries[self.back];
        Some((k, v))
    }
}

impl OrderedMap<u64> for Faulty {
    type Key<'a> = &'a [u8];
    type Value<'a> = &'a u64;
    type Range<'a> = FaultyRange<'a>;

    fn get(&self, key: &[u8]) -> Option<&u64> {
        if self.fault == Fault::PanicsOnLongGet && key.len() > 8 {
            panic!("deliberate panic in get");
        }
        self.inner.get(key)
    }
    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        if self.fault == Fault::LosesEmptyKey && key.is_empty() {
            return Ok(None);
        }
        self.inserts += 1;
        if self.fault == Fault::DropsNewKeysLate
            && self.inserts > 5000
            && !self.inner.contains_key(key)
        {
            return Ok(None);
        }
        let previous = self.inner.insert(key, value)?;
        if self.fault == Fault::UpdateReturnsNone {
            return Ok(None);
        }
        Ok(previous)
    }
    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        let v = self.inner.remove(key);
        if self.fault == Fault::RemoveReturnsNone {
            return None;
        }
        v
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        let (mut s, e) = range.key_bounds();
        if let (Fault::ExcludedStartAsIncluded, Bound::Excluded(k)) = (self.fault, s) {
            s = Bound::Included(k);
        }
        let r = self.inner.index_range(s, e);
        FaultyRange {
            entries: &self.inner.entries,
            front: r.start,
            back: r.end,
            crossing: self.fault == Fault::BackCrossesFront,
        }
    }
    fn memory_usage(&self) -> usize {
        if self.fault == Fault::NoMemory {
            0
        } else {
            self.inner.memory_usage()
        }
    }
    fn clear(&mut self) {
        self.inner.clear();
    }
}

/// Runs a faulty map and checks that the divergence names the run.
fn caught(fault: Fault, shape: KeyShape, seed: u64) -> Divergence {
    let d = try_differential_ordered(|| Faulty::new(fault), shape, seed, STEPS).expect_err(
        &format!("{fault:?} with {shape:?} seed {seed} was not caught"),
    );
    assert_eq!(
        (d.driver, d.seed, d.shape),
        ("differential_ordered", seed, shape)
    );
    assert!(d.step <= STEPS);
    let msg = d.to_string();
    assert!(msg.contains(&format!("seed={seed} ")), "{msg}");
    assert!(msg.contains(&format!("step={}", d.step)), "{msg}");
    d
}

#[test]
fn every_fault_is_caught_for_every_shape() {
    let faults = [
        Fault::ExcludedStartAsIncluded,
        Fault::UpdateReturnsNone,
        Fault::BackCrossesFront,
        Fault::RemoveReturnsNone,
        Fault::NoMemory,
    ];
    for fault in faults {
        for &shape in KeyShape::ALL.iter() {
            caught(fault, shape, 3);
        }
    }
}

#[test]
fn a_late_fault_is_caught_late() {
    // Shows that runs really are long: the fault starts after 5000 inserts.
    for shape in [KeyShape::U64, KeyShape::RandomBytes] {
        let d = caught(Fault::DropsNewKeysLate, shape, 6);
        assert!(d.step > 10_000, "{d}");
        assert!(d.op.starts_with("insert("), "{d}");
        assert!(
            d.expected.starts_with("get(key) after insert = Some("),
            "{d}"
        );
        assert_eq!(d.actual, "get(key) after insert = None");
    }
}

#[test]
fn divergence_names_operation_and_answers() {
    let d = caught(Fault::UpdateReturnsNone, KeyShape::PrefixChains, 5);
    assert!(d.op.starts_with("insert("), "{d}");
    assert!(d.expected.starts_with("Ok(Some("), "{d}");
    assert_eq!(d.actual, "Ok(None)");

    let d = caught(Fault::LosesEmptyKey, KeyShape::PrefixChains, 5);
    assert_eq!(d.op.split(',').next(), Some("insert(\"\""), "{d}");

    let d = caught(Fault::ExcludedStartAsIncluded, KeyShape::ZeroFf, 5);
    assert!(d.op.contains("Excluded("), "{d}");

    let d = caught(Fault::BackCrossesFront, KeyShape::RandomBytes, 5);
    assert!(
        d.op.starts_with("range(") && d.actual.contains("next_back"),
        "{d}"
    );

    let d = caught(Fault::NoMemory, KeyShape::Mixed, 5);
    assert_eq!(d.op, "memory_usage()");
}

#[test]
fn a_panicking_map_is_reported_with_step_and_operation() {
    let d = caught(Fault::PanicsOnLongGet, KeyShape::SharedPrefix, 9);
    assert!(d.actual.contains("deliberate panic in get"), "{d}");
    assert!(
        ["insert(", "get(", "remove("]
            .iter()
            .any(|p| d.op.starts_with(p)),
        "{d}"
    );
}

#[test]
fn panicking_driver_message_names_seed_and_step() {
    let outcome = panic::catch_unwind(|| {
        differential_ordered(
            || Faulty::new(Fault::LosesEmptyKey),
            KeyShape::ZeroFf,
            77,
            STEPS,
        )
    });
    let msg = panic_message(&*outcome.expect_err("the broken map passed"));
    let d = caught(Fault::LosesEmptyKey, KeyShape::ZeroFf, 77);
    assert_eq!(msg, d.to_string());
    assert!(msg.contains("seed=77 ") && msg.contains("step=") && msg.contains("expected:"));
}

#[test]
#[should_panic(expected = "seed=99 shape=Long step=")]
fn panicking_driver_fails_the_test() {
    differential_ordered(
        || Faulty::new(Fault::ExcludedStartAsIncluded),
        KeyShape::Long,
        99,
        STEPS,
    );
}

// ----- concurrent maps -------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum ConcurrentFault {
    /// Visits go on after the visitor returned `Break`.
    IgnoresBreak,
    /// `upper_bound_with` treats `Excluded` as `Included`.
    UpperExcludedAsIncluded,
    /// `visit_range_rev` skips the last entry of the range.
    RevSkipsLast,
}

struct Locked {
    map: Mutex<ModelMap<u64>>,
    fault: Option<ConcurrentFault>,
}

impl Locked {
    fn new(fault: Option<ConcurrentFault>) -> Self {
        Locked {
            map: Mutex::new(ModelMap::new()),
            fault,
        }
    }
    fn lock(&self) -> MutexGuard<'_, ModelMap<u64>> {
        self.map.lock().unwrap()
    }
}

impl ConcurrentOrderedMap<u64> for Locked {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&u64) -> R) -> Option<R> {
        self.lock().get(key).map(f)
    }
    fn insert(&self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        self.lock().insert(key, value)
    }
    fn remove(&self, key: &[u8]) -> Option<u64> {
        self.lock().remove(key)
    }
    fn len(&self) -> usize {
        self.lock().len()
    }
    fn memory_usage(&self) -> usize {
        self.lock().memory_usage()
    }
    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        self.lock().lower_bound(bound).map(|(k, v)| f(k, v))
    }
    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        let bound = match (self.fault, bound) {
            (Some(ConcurrentFault::UpperExcludedAsIncluded), Bound::Excluded(k)) => {
                Bound::Included(k)
            }
            _ => bound,
        };
        self.lock().upper_bound(bound).map(|(k, v)| f(k, v))
    }
    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let map = self.lock();
        for (k, v) in map.range(range) {
            if f(k, v).is_break() && self.fault != Some(ConcurrentFault::IgnoresBreak) {
                break;
            }
        }
    }
    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let map = self.lock();
        let skip = usize::from(self.fault == Some(ConcurrentFault::RevSkipsLast));
        for (k, v) in map.range(range).rev().skip(skip) {
            if f(k, v).is_break() && self.fault != Some(ConcurrentFault::IgnoresBreak) {
                break;
            }
        }
    }
}

#[test]
fn locked_model_passes_differential_concurrent() {
    for &shape in KeyShape::ALL.iter() {
        for seed in [21, 22] {
            differential_concurrent(|| Locked::new(None), shape, seed, STEPS);
        }
    }
}

#[test]
fn broken_concurrent_maps_are_caught() {
    for fault in [
        ConcurrentFault::IgnoresBreak,
        ConcurrentFault::UpperExcludedAsIncluded,
        ConcurrentFault::RevSkipsLast,
    ] {
        for &shape in KeyShape::ALL_BYTES {
            let d = try_differential_concurrent(|| Locked::new(Some(fault)), shape, 4, STEPS)
                .expect_err(&format!("{fault:?} with {shape:?} was not caught"));
            let msg = d.to_string();
            assert!(msg.contains("differential_concurrent diverged"), "{msg}");
            assert!(msg.contains("seed=4 ") && msg.contains(&format!("step={}", d.step)));
        }
    }
    let d = try_differential_concurrent(
        || Locked::new(Some(ConcurrentFault::IgnoresBreak)),
        KeyShape::PrefixChains,
        4,
        STEPS,
    )
    .unwrap_err();
    assert!(d.actual.contains("after Break"), "{d}");
}

// ----- static maps and builders ----------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum StaticFault {
    /// Ranges drop an `Included` end key.
    IncludedEndAsExcluded,
    /// `get` misses the first key.
    MissesFirstKey,
}

struct VecStatic {
    entries: Vec<(Vec<u8>, u64)>,
    fault: Option<StaticFault>,
}

/// A cursor that rebuilds each key in its own buffer, as a succinct trie would.
struct VecCursor<'a> {
    entries: &'a [(Vec<u8>, u64)],
    front: usize,
    back: usize,
    buf: Vec<u8>,
}

impl VecCursor<'_> {
    fn emit(&mut self, i: usize) -> Option<(&[u8], u64)> {
        self.buf.clear();
        self.buf.extend_from_slice(&self.entries[i].0);
        Some((&self.buf, self.entries[i].1))
    }
}

impl RangeCursor for VecCursor<'_> {
    fn next(&mut self) -> Option<(&[u8], u64)> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        self.emit(self.front - 1)
    }
    fn next_back(&mut self) -> Option<(&[u8], u64)> {
        if self.back <= self.front {
            return None;
        }
        self.back -= 1;
        self.emit(self.back)
    }
}

impl StaticMap for VecStatic {
    type Range<'a> = crate::api::Entries<VecCursor<'a>>;
    type Cursor<'a> = VecCursor<'a>;

    fn get(&self, key: &[u8]) -> Option<u64> {
        let i = self
            .entries
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
            .ok()?;
        if i == 0 && self.fault == Some(StaticFault::MissesFirstKey) {
            return None;
        }
        Some(self.entries[i].1)
    }
    fn len(&self) -> usize {
        self.entries.len()
    }
    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        self.cursor(range).into_entries()
    }
    fn cursor<R>(&self, range: R) -> Self::Cursor<'_>
    where
        R: KeyRange,
    {
        let (s, mut e) = range.key_bounds();
        if let (Some(StaticFault::IncludedEndAsExcluded), Bound::Included(k)) = (self.fault, e) {
            e = Bound::Excluded(k);
        }
        let r = if is_empty_range(s, e) {
            0..0
        } else {
            let lo = match s {
                Bound::Included(s) => self.entries.partition_point(|(k, _)| k.as_slice() < s),
                Bound::Excluded(s) => self.entries.partition_point(|(k, _)| k.as_slice() <= s),
                Bound::Unbounded => 0,
            };
            let hi = match e {
                Bound::Included(e) => self.entries.partition_point(|(k, _)| k.as_slice() <= e),
                Bound::Excluded(e) => self.entries.partition_point(|(k, _)| k.as_slice() < e),
                Bound::Unbounded => self.entries.len(),
            };
            lo..hi.max(lo)
        };
        VecCursor {
            entries: &self.entries,
            front: r.start,
            back: r.end,
            buf: Vec::new(),
        }
    }
    fn memory_usage(&self) -> usize {
        self.entries.capacity() * core::mem::size_of::<(Vec<u8>, u64)>()
            + self
                .entries
                .iter()
                .map(|(k, _)| k.capacity())
                .sum::<usize>()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BuilderFault {
    /// A repeated key is accepted.
    AcceptsDuplicates,
    /// A refused key still becomes the "previous" key.
    RemembersRefusedKey,
    /// `OutOfOrder` reports `previous` and `got` swapped.
    SwapsErrorFields,
    /// A prefix of the previous key is taken as a duplicate.
    PrefixIsDuplicate,
}

struct VecBuilder {
    entries: Vec<(Vec<u8>, u64)>,
    last: Option<Vec<u8>>,
    fault: Option<BuilderFault>,
}

impl VecBuilder {
    fn new(fault: Option<BuilderFault>) -> Self {
        VecBuilder {
            entries: Vec::new(),
            last: None,
            fault,
        }
    }
}

impl StaticMapBuilder for VecBuilder {
    type Map = VecStatic;

    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        let previous = if self.fault == Some(BuilderFault::RemembersRefusedKey) {
            self.last.replace(key.to_vec())
        } else {
            self.last.clone()
        };
        if let Some(previous) = previous {
            let duplicate = key == previous.as_slice()
                || (self.fault == Some(BuilderFault::PrefixIsDuplicate)
                    && previous.starts_with(key));
            if duplicate && self.fault != Some(BuilderFault::AcceptsDuplicates) {
                return Err(Error::DuplicateKey { key: key.to_vec() });
            }
            if key < previous.as_slice() {
                let (previous, got) = if self.fault == Some(BuilderFault::SwapsErrorFields) {
                    (key.to_vec(), previous)
                } else {
                    (previous, key.to_vec())
                };
                return Err(Error::OutOfOrder { previous, got });
            }
        }
        self.last = Some(key.to_vec());
        self.entries.push((key.to_vec(), value));
        Ok(())
    }
    fn finish(self) -> Result<VecStatic, Error> {
        Ok(VecStatic {
            entries: self.entries,
            fault: None,
        })
    }
}

fn random_oracle(shape: KeyShape, seed: u64, n: usize) -> Oracle {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| (shape.gen_key(&mut rng), rng.next_u64()))
        .collect()
}

fn build(oracle: &Oracle, fault: Option<StaticFault>) -> VecStatic {
    let mut b = VecBuilder::new(None);
    b.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))
        .unwrap();
    let mut map = b.finish().unwrap();
    map.fault = fault;
    map
}

#[test]
fn vec_static_passes_check_static() {
    for &shape in KeyShape::ALL.iter() {
        let n = if shape == KeyShape::Long { 300 } else { 3_000 };
        let oracle = random_oracle(shape, 31, n);
        check_static(&build(&oracle, None), &oracle, shape, 32, STEPS);
    }
    check_static(
        &build(&Oracle::new(), None),
        &Oracle::new(),
        KeyShape::Mixed,
        33,
        1_000,
    );
}

#[test]
fn broken_static_maps_are_caught() {
    for fault in [
        StaticFault::IncludedEndAsExcluded,
        StaticFault::MissesFirstKey,
    ] {
        for &shape in KeyShape::ALL_BYTES {
            let oracle = random_oracle(shape, 41, 500);
            let d = try_check_static(&build(&oracle, Some(fault)), &oracle, shape, 42, STEPS)
                .expect_err(&format!("{fault:?} with {shape:?} was not caught"));
            let msg = d.to_string();
            assert!(
                msg.contains("check_static diverged") && msg.contains("seed=42 "),
                "{msg}"
            );
        }
    }
}

#[test]
fn vec_builder_passes_check_builder_rejects() {
    check_builder_rejects(|| VecBuilder::new(None));
}

#[test]
fn broken_builders_are_caught() {
    for fault in [
        BuilderFault::AcceptsDuplicates,
        BuilderFault::RemembersRefusedKey,
        BuilderFault::SwapsErrorFields,
        BuilderFault::PrefixIsDuplicate,
    ] {
        let outcome =
            panic::catch_unwind(|| check_builder_rejects(|| VecBuilder::new(Some(fault))));
        let msg = panic_message(&*outcome.expect_err(&format!("{fault:?} was not caught")));
        assert!(msg.starts_with("check_builder_rejects ["), "{msg}");
        assert!(
            msg.contains("expected:") && msg.contains("actual:"),
            "{msg}"
        );
    }
}

#[test]
fn a_builder_whose_map_loses_keys_is_caught() {
    struct Lossy(VecBuilder);
    impl StaticMapBuilder for Lossy {
        type Map = VecStatic;
        fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
            self.0.push(key, value)
        }
        fn finish(self) -> Result<VecStatic, Error> {
            let mut map = self.0.finish()?;
            map.entries.pop();
            Ok(map)
        }
    }
    let outcome = panic::catch_unwind(|| check_builder_rejects(|| Lossy(VecBuilder::new(None))));
    let msg = panic_message(&*outcome.expect_err("the lossy builder was not caught"));
    assert!(msg.contains("holds other than the accepted keys"), "{msg}");
}

// ----- property tests --------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn model_map_passes_arb_ops(ops in arb_ops()) {
        run_ops(&mut ModelMap::new(), &ops).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn int_only_map_passes_u64_ops(ops in arb_ops_with(arb_u64_key())) {
        run_ops(&mut IntOnly::default(), &ops).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn decoding_map_passes_arb_ops(ops in arb_ops()) {
        run_ops(&mut Decoding::default(), &ops).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn locked_model_passes_arb_ops(ops in arb_ops()) {
        run_ops_concurrent(&Locked::new(None), &ops).map_err(TestCaseError::fail)?;
    }
}

fn runner() -> TestRunner {
    let config = Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, PropRng::deterministic_rng(RngAlgorithm::ChaCha))
}

#[test]
fn proptest_finds_and_shrinks_faults() {
    for fault in [
        Fault::ExcludedStartAsIncluded,
        Fault::UpdateReturnsNone,
        Fault::LosesEmptyKey,
        Fault::BackCrossesFront,
        Fault::RemoveReturnsNone,
    ] {
        let result = runner().run(&arb_ops(), |ops| {
            run_ops(&mut Faulty::new(fault), &ops).map_err(TestCaseError::fail)
        });
        match result {
            Err(TestError::Fail(reason, minimal)) => {
                assert!(reason.message().starts_with("run_ops: op #"), "{reason}");
                assert!(minimal.len() <= 4, "{fault:?} shrank only to {minimal:?}");
            }
            other => panic!("{fault:?} was not caught: {other:?}"),
        }
    }
    let result = runner().run(&arb_ops(), |ops| {
        let map = Locked::new(Some(ConcurrentFault::RevSkipsLast));
        run_ops_concurrent(&map, &ops).map_err(TestCaseError::fail)
    });
    assert!(matches!(result, Err(TestError::Fail(..))), "{result:?}");
}

#[test]
fn run_ops_requires_an_empty_map() {
    let mut m = ModelMap::new();
    m.insert(b"x", 1).unwrap();
    assert!(
        run_ops(&mut m, &[])
            .unwrap_err()
            .contains("must start empty")
    );
    let ops = [
        MapOp::Insert(b"a".to_vec(), 1),
        MapOp::Insert(b"a".to_vec(), 2),
    ];
    let err = run_ops(&mut Faulty::new(Fault::UpdateReturnsNone), &ops).unwrap_err();
    assert!(
        err.starts_with("run_ops: op #1 of 2: insert(\"a\", 2)"),
        "{err}"
    );
}
