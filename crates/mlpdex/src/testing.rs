//! The differential-test driver: every structure is checked against `std::collections::BTreeMap`.
//!
//! A structure's tests hand the driver a way to make an empty map, a [`KeyShape`], a seed and a
//! number of steps. The driver then plays a long random sequence of operations against the map
//! and against a `BTreeMap<Vec<u8>, u64>` oracle, compares every answer, and panics at the first
//! difference with a message naming the seed, the step, the operation (keys printed with
//! [`Escaped`]), and the expected and actual answers. The sequence depends only on the seed, so a
//! failure is reproduced by running the same call again.
//!
//! # What is checked
//!
//! - [`differential_ordered`] ([`OrderedMap`]): `insert` of new and existing keys (the previous
//!   value is compared, then the key is read back and `len` compared), `remove`, `get`,
//!   `contains_key`, `len`/`is_empty`, `first`/`last`, `lower_bound`/`upper_bound` with every
//!   [`Bound`] kind, `range` with every combination of bound kinds (empty and inverted ranges
//!   included, which must yield nothing) walked forward, backward or alternating `next` and
//!   `next_back` up to a random limit, a full `iter()` comparison with a `size_hint` check, a rare
//!   `clear()`, and `memory_usage() > 0` whenever the map is not empty.
//! - [`differential_concurrent`] ([`ConcurrentOrderedMap`]): the same, single-threaded, through
//!   the `&self` API: `get`/`get_with`, `insert`, `remove`, `len`, `lower_bound_with`,
//!   `upper_bound_with`, `visit_range` and `visit_range_rev` breaking after a random count (a
//!   visitor called again after it returned `Break` is a failure). The trait has no `clear`; the
//!   driver sometimes removes every key one by one instead.
//! - [`check_static`] ([`StaticMap`]): `get` of present, absent and neighbouring keys, cursors
//!   over ranges with every bound kind walked forward, backward or alternating, `len`.
//! - [`check_builder_rejects`] ([`StaticMapBuilder`]): out-of-order and repeated keys are refused
//!   with the right [`Error`] fields, a refused push leaves the builder unchanged, and the
//!   finished map holds exactly the accepted keys.
//!
//! Ranges are passed in every form a caller may use (`a..b` over `Vec<u8>` or `&str`,
//! `a..=b`, `a..`, `..b`, `..=b`, `..`, and pairs of `Bound<&[u8]>`).
//!
//! # Keys
//!
//! [`KeyShape`] names the adversarial key distributions: random bytes, long shared prefixes, keys
//! that are prefixes of each other (the empty key included), keys of only 0x00 and 0xFF bytes,
//! multi-KiB keys that differ late or by length, and 8-byte big-endian integers for integer-only
//! maps. Each draws from a small universe so that inserts, removes and gets of the same key are
//! frequent; the driver also picks keys already stored and their neighbours (one byte longer,
//! shorter, incremented) for gets and range bounds.
//!
//! # Using it from a structure's tests
//!
//! ```
//! use mlpdex::testing::{differential_ordered, KeyShape, ModelMap};
//!
//! // `ModelMap` stands in for the structure under test.
//! for &shape in KeyShape::ALL_BYTES {
//!     for seed in [1, 2] {
//!         differential_ordered(ModelMap::new, shape, seed, 2_000);
//!     }
//! }
//! ```
//!
//! A static structure draws its key set with [`KeyShape::gen_key`], builds from the sorted
//! oracle, and checks the result and its builder:
//!
//! ```text
//! let mut rng = TestRng::new(seed);
//! let oracle: BTreeMap<Vec<u8>, u64> =
//!     (0..10_000).map(|i| (shape.gen_key(&mut rng), i)).collect();
//! let mut builder = MyBuilder::new();
//! builder.extend_sorted(oracle.iter().map(|(k, v)| (k, *v)))?;
//! check_static(&builder.finish()?, &oracle, shape, seed, 20_000);
//! check_builder_rejects(MyBuilder::new);
//! ```
//!
//! Integer-only maps use [`KeyShape::U64`], whose keys (and probe keys) are all 8 bytes wide.
//! Any `Err` from `insert` is a divergence, since the oracle takes every key: a structure that
//! refuses some keys (say [`Error::KeyTooLong`]) is run only with the shapes it accepts.
//! The `try_*` variants return the [`Divergence`] instead of panicking, for tests asserting that
//! a deliberately broken structure is caught. A panic inside the map is reported as a divergence
//! too, with the step and the operation during which it happened.
//!
//! For property tests, [`arb_ops`] generates operation sequences ([`MapOp`]) that proptest
//! shrinks to a minimal failing case, and [`run_ops`] applies one against an oracle:
//!
//! ```
//! use mlpdex::testing::{arb_ops, run_ops, ModelMap};
//! use proptest::test_runner::{Config, TestCaseError, TestRunner};
//!
//! let mut runner = TestRunner::new(Config { cases: 32, ..Config::default() });
//! runner
//!     .run(&arb_ops(), |ops| {
//!         run_ops(&mut ModelMap::new(), &ops).map_err(TestCaseError::fail)
//!     })
//!     .unwrap();
//! ```
//!
//! # Phases and cost
//!
//! The writing drivers cycle through phases of 8000 steps: 4000 of growth (mostly inserts of
//! drawn keys), 2000 of churn (inserts and removes balance), 2000 of shrinking (mostly
//! removes), with a `clear` about once in 10,000 steps, a `memory_usage` check every 1000 and a
//! full comparison at the end. A map thus grows to a large part of its shape's universe (a few
//! hundred keys for `PrefixChains` and `Long`, around a thousand for `Mixed` and `U64`) and
//! empties again. For [`ModelMap`], 20,000 steps take 10–25 ms in the test profile
//! (`opt-level = 2`), about 150 ms with `Long` keys. A structure whose nodes split only at thousands of keys should add runs
//! with `U64`, `RandomBytes` or `Mixed` and more steps.
//!
//! [`ModelMap`] is a sorted-`Vec` implementation of [`OrderedMap`] using the trait's default
//! methods; the driver's own tests run it, and broken variants of it, to show that the driver
//! passes a correct map and catches wrong ones.
//!
//! The module exists under `cfg(test)` and with the `testing` feature, which also brings in
//! proptest (re-exported as [`proptest`](mod@proptest)).
//!
//! Multi-threaded checks of [`ConcurrentOrderedMap`] implementations (stress with
//! linearizability checks, range visits under churn, values dropped exactly once) are in
//! [`concurrent`].

use crate::KeyRange;
use core::cell::{Cell, RefCell};
use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::collections::BTreeMap;
use std::collections::btree_map;
use std::panic::{self, AssertUnwindSafe};

pub mod concurrent;

#[doc(no_inline)]
pub use proptest;
use proptest::strategy::{BoxedStrategy, Just, Strategy};

use crate::Error;
use crate::api::{ConcurrentOrderedMap, OrderedMap, RangeCursor, StaticMap, StaticMapBuilder};
use crate::key::{Escaped, is_empty_range, key_to_u64};

// ---------------------------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------------------------

/// A small deterministic pseudo-random generator (SplitMix64), so a seed names a test run.
///
/// Not for cryptography or statistics; its outputs pass the usual smoke tests and it costs a
/// few instructions per number.
#[derive(Clone, Debug)]
pub struct TestRng {
    state: u64,
}

impl TestRng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        TestRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (multiply-shift, bias below 2⁻⁶⁴·n); `0` when `n` is `0`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An index in `0..len`; `0` when `len` is `0`.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `p` (false for `p <= 0`, true for `p >= 1`).
    pub fn chance(&mut self, p: f64) -> bool {
        const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
        ((self.next_u64() >> 11) as f64) * SCALE < p
    }

    /// A random element of `items`.
    ///
    /// # Panics
    ///
    /// If `items` is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
}

// ---------------------------------------------------------------------------------------------
// Key shapes
// ---------------------------------------------------------------------------------------------

/// An adversarial distribution of keys; see [`gen_key`](KeyShape::gen_key).
///
/// Every shape draws from a universe small enough (a few hundred to a few thousand keys) that a
/// long run inserts, removes and looks up the same keys many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyShape {
    /// Lengths 0 to 24, any byte values (0x00 and 0xFF favoured), with shared prefixes of random
    /// length; the empty key included.
    RandomBytes,
    /// A few common prefixes of 20 to 40 bytes, URL-like or made of 0x00 or 0xFF (one extends
    /// another), followed by tails of up to 3 bytes; sometimes a cut-off prefix.
    SharedPrefix,
    /// Prefixes of a few fixed strings (`""`, `"a"`, `"ab"`, `"abc"`, …, and runs of 0x00, 0xFF
    /// and `a`), sometimes with one byte appended: keys that are prefixes of each other.
    PrefixChains,
    /// Only 0x00 and 0xFF bytes, lengths 0 to 12.
    ZeroFf,
    /// Keys of 1 to 8 KiB built on three long patterns, differing late (one of the last 8 bytes)
    /// or only by length.
    Long,
    /// 8-byte big-endian integers: 0, 1, `u64::MAX` and other edges, dense small ranges, runs
    /// differing only in the last byte, and some random values. For integer-only maps: probe
    /// keys derived from these stay 8 bytes wide.
    U64,
    /// Each key from a random one of the other byte-string shapes (not `U64`); few are long.
    Mixed,
}

impl KeyShape {
    /// The byte-string shapes, every shape but [`KeyShape::U64`].
    pub const ALL_BYTES: &'static [KeyShape] = &[
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::Long,
        KeyShape::Mixed,
    ];

    /// Draws one key of this shape.
    pub fn gen_key(&self, rng: &mut TestRng) -> Vec<u8> {
        match self {
            KeyShape::RandomBytes => random_bytes_key(rng),
            KeyShape::SharedPrefix => shared_prefix_key(rng),
            KeyShape::PrefixChains => prefix_chain_key(rng),
            KeyShape::ZeroFf => zero_ff_key(rng),
            KeyShape::Long => long_key(rng),
            KeyShape::U64 => u64_key(rng).to_vec(),
            KeyShape::Mixed => {
                let shape = match rng.below(25) {
                    0..=5 => KeyShape::RandomBytes,
                    6..=11 => KeyShape::SharedPrefix,
                    12..=17 => KeyShape::PrefixChains,
                    18..=23 => KeyShape::ZeroFf,
                    _ => KeyShape::Long,
                };
                shape.gen_key(rng)
            }
        }
    }
}

/// Number of keys in the [`KeyShape::RandomBytes`] universe.
const RANDOM_BYTES_UNIVERSE: u64 = 1536;

/// A byte favouring the values that break byte-wise code: 0x00, 0xFF and a few letters.
fn adversarial_byte(rng: &mut TestRng) -> u8 {
    match rng.below(8) {
        0 => 0x00,
        1 => 0xff,
        2 => b'a' + rng.below(3) as u8,
        _ => rng.next_u64() as u8,
    }
}

fn random_bytes_key(rng: &mut TestRng) -> Vec<u8> {
    if rng.chance(0.08) {
        // A fresh key from the whole space: mostly absent, good for gets and bounds.
        let len = rng.index(25);
        (0..len).map(|_| adversarial_byte(rng)).collect()
    } else {
        universe_key(rng.below(RANDOM_BYTES_UNIVERSE))
    }
}

/// Key `i` of the random-bytes universe: a prefix of its parent `i / 8` plus random bytes, so
/// keys share prefixes of every length. Key 0 is the empty key. At most 24 bytes.
fn universe_key(i: u64) -> Vec<u8> {
    if i == 0 {
        return Vec::new();
    }
    let mut r = TestRng::new(i.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ 0x5EED_5EED);
    let mut key = if i >= 8 {
        let parent = universe_key(i / 8);
        let keep = if r.chance(0.5) {
            parent.len()
        } else {
            r.index(parent.len() + 1)
        };
        parent[..keep].to_vec()
    } else {
        Vec::new()
    };
    let extra = r.index(25 - key.len());
    key.extend((0..extra).map(|_| adversarial_byte(&mut r)));
    key
}

const SHARED_PREFIXES: [&[u8]; 6] = [
    b"https://www.amazon.com/dp/B0",
    b"https://www.amazon.com/dp/B0/reviews/",
    b"https://www.amazon.co.uk/dp/B0",
    b"user\x00000000042\x00profile\x00",
    &[0x00; 24],
    &[0xff; 32],
];

const TAIL_ALPHABET: &[u8] = b"019az/\x00\xff";

fn shared_prefix_key(rng: &mut TestRng) -> Vec<u8> {
    let mut key = rng.pick(&SHARED_PREFIXES).to_vec();
    if rng.chance(0.05) {
        let cut = rng.index(key.len() + 1);
        key.truncate(cut);
        return key;
    }
    let longest = rng.index(4);
    let tail = rng.index(longest + 1);
    for _ in 0..tail {
        key.push(*rng.pick(TAIL_ALPHABET));
    }
    key
}

const CHAINS: [&[u8]; 5] = [
    b"abcdefghijklmnopqrstuvwxyz",
    b"aaaaaaaaaaaaaaaaaaaa",
    &[0x00; 20],
    &[0xff; 20],
    b"a\x00b\xffa\x00b\xffa\x00b\xff",
];

fn prefix_chain_key(rng: &mut TestRng) -> Vec<u8> {
    let chain = rng.pick(&CHAINS);
    let n = rng.index(chain.len() + 1);
    let mut key = chain[..n].to_vec();
    if rng.chance(0.2) {
        key.push(*rng.pick(&[0x00, 0xff, b'a', b'b']));
    }
    key
}

fn zero_ff_key(rng: &mut TestRng) -> Vec<u8> {
    let max = if rng.chance(0.5) { 4 } else { 12 };
    let len = rng.index(max + 1);
    (0..len)
        .map(|_| if rng.chance(0.5) { 0x00 } else { 0xff })
        .collect()
}

const LONG_LENGTHS: [usize; 9] = [1024, 1025, 2047, 2048, 4095, 4096, 6000, 8191, 8192];

/// Byte `i` of long pattern `base`: pattern 1 equals pattern 0 for its first 1000 bytes.
fn long_pattern(base: u64, i: usize) -> u8 {
    match base {
        0 => b'a' + (i % 26) as u8,
        1 if i < 1000 => b'a' + (i % 26) as u8,
        1 => b'A' + (i % 26) as u8,
        _ if i % 1000 == 999 => 0xff,
        _ => 0x00,
    }
}

fn long_key(rng: &mut TestRng) -> Vec<u8> {
    let base = rng.below(3);
    let len = if rng.chance(0.8) {
        *rng.pick(&LONG_LENGTHS)
    } else {
        1024 + rng.index(16)
    };
    let mut key: Vec<u8> = (0..len).map(|i| long_pattern(base, i)).collect();
    match rng.below(6) {
        3 => key[len - 1] = 0x00,
        4 => key[len - 1] = 0xff,
        5 => {
            let pos = len - 1 - rng.index(8);
            key[pos] = key[pos].wrapping_add(1);
        }
        _ => {}
    }
    key
}

fn u64_key(rng: &mut TestRng) -> [u8; 8] {
    const EDGES: [u64; 8] = [
        0,
        1,
        0xff,
        0x100,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        (1 << 63) - 1,
    ];
    const LAST_BYTE_RUNS: [u64; 4] = [
        0x0102_0304_0506_0700,
        0xdead_beef_0000_0000,
        0xffff_ffff_ffff_ff00,
        0x00ff_00ff_00ff_0000,
    ];
    let x = match rng.below(8) {
        0 => *rng.pick(&EDGES),
        1 | 2 => rng.below(512),
        3 => u64::MAX - rng.below(256),
        4 | 5 => *rng.pick(&LAST_BYTE_RUNS) | rng.below(256),
        6 => (1 << 32) - 128 + rng.below(256),
        _ => rng.next_u64(),
    };
    x.to_be_bytes()
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

/// How a range is walked: which ends are pulled, and how many entries at most.
///
/// A walk stops after `limit` entries, or when an end reports exhaustion, in which case the
/// other end must report exhaustion too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// `next` only, at most this many entries.
    Forward(usize),
    /// `next_back` only, at most this many entries.
    Backward(usize),
    /// `next` or `next_back` as a [`TestRng`] seeded with the first field chooses, at most the
    /// second field entries. For visitors, a forward and a reverse visit.
    Alternate(u64, usize),
}

impl Walk {
    /// The most entries the walk takes (`usize::MAX`: the whole range).
    pub fn limit(&self) -> usize {
        match *self {
            Walk::Forward(n) | Walk::Backward(n) | Walk::Alternate(_, n) => n,
        }
    }
}

/// One operation of a differential test, with its arguments; see [`run_ops`].
///
/// `Debug` prints keys readably (as [`Escaped`]), so proptest's minimal failing cases read well.
#[derive(Clone, PartialEq, Eq)]
pub enum MapOp {
    /// `insert(key, value)`, then `get(key)` and `len()`.
    Insert(Vec<u8>, u64),
    /// `remove(key)`, then `get(key)` and `len()`.
    Remove(Vec<u8>),
    /// `get(key)`.
    Get(Vec<u8>),
    /// `contains_key(key)`.
    ContainsKey(Vec<u8>),
    /// `len()` and `is_empty()`.
    Len,
    /// The smallest entry.
    First,
    /// The largest entry.
    Last,
    /// The first entry within the bound from below (`lower_bound`).
    LowerBound(Bound<Vec<u8>>),
    /// The last entry within the bound from above (`upper_bound`).
    UpperBound(Bound<Vec<u8>>),
    /// A range from the first bound to the second, walked as the [`Walk`] says.
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Walk),
    /// The whole map forward and backward, with `len()`.
    Iter,
    /// `clear()`; for a concurrent map, `remove` of every key.
    Clear,
    /// `memory_usage() > 0` unless the map is empty.
    MemoryUsage,
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

struct ShowBound<'a>(Bound<&'a [u8]>);

impl fmt::Display for ShowBound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Bound::Included(k) => write!(f, "Included({})", Escaped(k)),
            Bound::Excluded(k) => write!(f, "Excluded({})", Escaped(k)),
            Bound::Unbounded => f.write_str("Unbounded"),
        }
    }
}

impl fmt::Display for MapOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapOp::Insert(k, v) => write!(f, "insert({}, {v})", Escaped(k)),
            MapOp::Remove(k) => write!(f, "remove({})", Escaped(k)),
            MapOp::Get(k) => write!(f, "get({})", Escaped(k)),
            MapOp::ContainsKey(k) => write!(f, "contains_key({})", Escaped(k)),
            MapOp::Len => f.write_str("len()"),
            MapOp::First => f.write_str("first()"),
            MapOp::Last => f.write_str("last()"),
            MapOp::LowerBound(b) => write!(f, "lower_bound({})", ShowBound(as_slice_bound(b))),
            MapOp::UpperBound(b) => write!(f, "upper_bound({})", ShowBound(as_slice_bound(b))),
            MapOp::Range(s, e, walk) => write!(
                f,
                "range({}, {}) walked {walk:?}",
                ShowBound(as_slice_bound(s)),
                ShowBound(as_slice_bound(e))
            ),
            MapOp::Iter => f.write_str("iter() forward and backward"),
            MapOp::Clear => f.write_str("clear()"),
            MapOp::MemoryUsage => f.write_str("memory_usage()"),
        }
    }
}

impl fmt::Debug for MapOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

// ---------------------------------------------------------------------------------------------
// Divergences
// ---------------------------------------------------------------------------------------------

/// The first difference a driver found between a structure and the `BTreeMap` oracle.
///
/// Its `Display` is the panic message of the panicking drivers:
/// `<driver> diverged from BTreeMap: seed=<seed> shape=<shape> step=<step>`, then the operation
/// and the expected and actual answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The driver that found it, e.g. `"differential_ordered"`.
    pub driver: &'static str,
    /// The seed of the run; the same call with this seed reproduces the failure.
    pub seed: u64,
    /// The key shape of the run.
    pub shape: KeyShape,
    /// The 0-based step (operation or query number) at which the answers differed.
    pub step: usize,
    /// The operation, keys printed as [`Escaped`].
    pub op: String,
    /// What the oracle answered.
    pub expected: String,
    /// What the structure answered, or the message it panicked with.
    pub actual: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} diverged from BTreeMap: seed={} shape={:?} step={}\n  op:       {}\n  expected: {}\n  actual:   {}",
            self.driver, self.seed, self.shape, self.step, self.op, self.expected, self.actual
        )
    }
}

impl std::error::Error for Divergence {}

/// Expected and actual answers of one operation, before the driver adds its context.
#[derive(Debug)]
struct Mismatch {
    expected: String,
    actual: String,
}

impl Mismatch {
    fn new(expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Mismatch {
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    fn call(call: usize, back: bool, want: Option<(&[u8], u64)>, got: String) -> Self {
        let name = if back { "next_back" } else { "next" };
        Mismatch::new(
            format!("call #{call} {name}() -> {}", show_entry(want)),
            format!("call #{call} {name}() -> {got}"),
        )
    }
}

fn show_entry(e: Option<(&[u8], u64)>) -> String {
    match e {
        Some((k, v)) => format!("Some(({}, {v}))", Escaped(k)),
        None => "None".to_string(),
    }
}

fn show_insert(r: &Result<Option<u64>, Error>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e})"),
    }
}

fn expect_eq<T: PartialEq + fmt::Debug>(what: &str, want: T, got: T) -> Result<(), Mismatch> {
    if want == got {
        Ok(())
    } else {
        Err(Mismatch::new(
            format!("{what} = {want:?}"),
            format!("{what} = {got:?}"),
        ))
    }
}

/// Compares an entry with the oracle's; `got`'s key is whatever the map hands out
/// ([`OrderedMap::Key`]).
fn expect_entry<K: AsRef<[u8]>>(
    what: &str,
    want: Option<(&[u8], u64)>,
    got: Option<(K, u64)>,
) -> Result<(), Mismatch> {
    let got = got.as_ref().map(|(k, v)| (k.as_ref(), *v));
    if want == got {
        Ok(())
    } else {
        Err(Mismatch::new(
            format!("{what} = {}", show_entry(want)),
            format!("{what} = {}", show_entry(got)),
        ))
    }
}

fn expect_memory(what: &str, non_empty: bool, bytes: usize) -> Result<(), Mismatch> {
    if non_empty && bytes == 0 {
        Err(Mismatch::new(
            format!("{what} > 0 for a non-empty map"),
            format!("{what} = 0"),
        ))
    } else {
        Ok(())
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle and range walks
// ---------------------------------------------------------------------------------------------

type Oracle = BTreeMap<Vec<u8>, u64>;
type OracleRange<'o> =
    core::iter::Flatten<core::option::IntoIter<btree_map::Range<'o, Vec<u8>, u64>>>;

/// The oracle's entries within `(start, end)`; empty for an empty or inverted range, where
/// `BTreeMap::range` would panic.
fn oracle_range<'o>(oracle: &'o Oracle, start: Bound<&[u8]>, end: Bound<&[u8]>) -> OracleRange<'o> {
    let inner = if is_empty_range(start, end) {
        None
    } else {
        Some(oracle.range::<[u8], _>((start, end)))
    };
    inner.into_iter().flatten()
}

fn next_end<I: DoubleEndedIterator>(it: &mut I, back: bool) -> Option<I::Item> {
    if back { it.next_back() } else { it.next() }
}

/// Walks `expected` as `walk` says, asking `step(back, want)` to pull the same end of the
/// structure's range and compare it with `want` (returning the actual answer on a difference).
fn walk_compare<'e, E>(
    mut expected: E,
    walk: Walk,
    mut step: impl FnMut(bool, Option<(&[u8], u64)>) -> Result<(), String>,
) -> Result<(), Mismatch>
where
    E: DoubleEndedIterator<Item = (&'e Vec<u8>, &'e u64)>,
{
    let (limit, mut chooser, back_only) = match walk {
        Walk::Forward(n) => (n, None, false),
        Walk::Backward(n) => (n, None, true),
        Walk::Alternate(pattern, n) => (n, Some(TestRng::new(pattern)), false),
    };
    let mut call = 0usize;
    while call < limit {
        let back = chooser.as_mut().map_or(back_only, |r| r.chance(0.5));
        let want = next_end(&mut expected, back).map(|(k, v)| (k.as_slice(), *v));
        step(back, want).map_err(|got| Mismatch::call(call, back, want, got))?;
        if want.is_none() {
            // The ends met: the other end must be exhausted as well.
            step(!back, None).map_err(|got| Mismatch::call(call + 1, !back, None, got))?;
            return Ok(());
        }
        call += 1;
    }
    Ok(())
}

/// Calls `$recv.$method(range, extra args…)` with the range in the std form that fits
/// the bounds (`a..b`, `a..=b`, `a..`, `..b`, `..=b`, `..`), or as a pair of bounds.
macro_rules! call_with_range_form {
    ($recv:expr, $method:ident, $start:expr, $end:expr $(, $arg:expr)*) => {
        match ($start, $end) {
            (Bound::Included(s), Bound::Excluded(e)) => {
                match (core::str::from_utf8(s), core::str::from_utf8(e)) {
                    (Ok(s), Ok(e)) => $recv.$method(s..e $(, $arg)*),
                    _ => $recv.$method(s.to_vec()..e.to_vec() $(, $arg)*),
                }
            }
            (Bound::Included(s), Bound::Included(e)) => $recv.$method(s..=e $(, $arg)*),
            (Bound::Included(s), Bound::Unbounded) => {
                $recv.$method(s.to_vec().. $(, $arg)*)
            }
            (Bound::Unbounded, Bound::Excluded(e)) => $recv.$method(..e $(, $arg)*),
            (Bound::Unbounded, Bound::Included(e)) => {
                $recv.$method(..=e.to_vec() $(, $arg)*)
            }
            (Bound::Unbounded, Bound::Unbounded) => $recv.$method(.. $(, $arg)*),
            (s, e) => $recv.$method((s, e) $(, $arg)*),
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Applying operations
// ---------------------------------------------------------------------------------------------

fn apply_ordered<M: OrderedMap<u64>>(
    map: &mut M,
    oracle: &mut Oracle,
    op: &MapOp,
) -> Result<(), Mismatch> {
    match op {
        MapOp::Insert(k, v) => {
            let got = map.insert(k, *v);
            let want = oracle.insert(k.clone(), *v);
            if got != Ok(want) {
                return Err(Mismatch::new(show_insert(&Ok(want)), show_insert(&got)));
            }
            expect_eq("get(key) after insert", Some(*v), map.get(k).copied())?;
            expect_eq("len() after insert", oracle.len(), map.len())
        }
        MapOp::Remove(k) => {
            expect_eq("remove(key)", oracle.remove(k.as_slice()), map.remove(k))?;
            expect_eq("get(key) after remove", None, map.get(k).copied())?;
            expect_eq("len() after remove", oracle.len(), map.len())
        }
        MapOp::Get(k) => expect_eq(
            "get(key)",
            oracle.get(k.as_slice()).copied(),
            map.get(k).copied(),
        ),
        MapOp::ContainsKey(k) => expect_eq(
            "contains_key(key)",
            oracle.contains_key(k.as_slice()),
            map.contains_key(k),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => expect_entry(
            "first()",
            oracle.first_key_value().map(|(k, v)| (k.as_slice(), *v)),
            map.first().map(|(k, v)| (k, *v)),
        ),
        MapOp::Last => expect_entry(
            "last()",
            oracle.last_key_value().map(|(k, v)| (k.as_slice(), *v)),
            map.last().map(|(k, v)| (k, *v)),
        ),
        MapOp::LowerBound(b) => {
            let b = as_slice_bound(b);
            expect_entry(
                "lower_bound(bound)",
                oracle_range(oracle, b, Bound::Unbounded)
                    .next()
                    .map(|(k, v)| (k.as_slice(), *v)),
                map.lower_bound(b).map(|(k, v)| (k, *v)),
            )
        }
        MapOp::UpperBound(b) => {
            let b = as_slice_bound(b);
            expect_entry(
                "upper_bound(bound)",
                oracle_range(oracle, Bound::Unbounded, b)
                    .next_back()
                    .map(|(k, v)| (k.as_slice(), *v)),
                map.upper_bound(b).map(|(k, v)| (k, *v)),
            )
        }
        MapOp::Range(s, e, walk) => {
            let (s, e) = (as_slice_bound(s), as_slice_bound(e));
            let mut it = call_with_range_form!(map, range, s, e);
            walk_compare(oracle_range(oracle, s, e), *walk, |back, want| {
                let got = next_end(&mut it, back);
                let got = got.as_ref().map(|(k, v)| (k.as_ref(), **v));
                if got == want {
                    Ok(())
                } else {
                    Err(show_entry(got))
                }
            })
        }
        MapOp::Iter => {
            let n = oracle.len();
            let (lo, hi) = map.iter().size_hint();
            if lo > n || hi.is_some_and(|h| h < n) {
                return Err(Mismatch::new(
                    format!("iter().size_hint() admitting {n}"),
                    format!("iter().size_hint() = ({lo}, {hi:?})"),
                ));
            }
            for walk in [Walk::Forward(usize::MAX), Walk::Backward(usize::MAX)] {
                let mut it = map.iter();
                walk_compare(oracle.iter(), walk, |back, want| {
                    let got = next_end(&mut it, back);
                    let got = got.as_ref().map(|(k, v)| (k.as_ref(), **v));
                    if got == want {
                        Ok(())
                    } else {
                        Err(show_entry(got))
                    }
                })?;
            }
            expect_eq("len()", n, map.len())
        }
        MapOp::Clear => {
            map.clear();
            oracle.clear();
            expect_eq("len() after clear", 0, map.len())?;
            expect_eq("is_empty() after clear", true, map.is_empty())?;
            expect_entry(
                "iter().next() after clear",
                None,
                map.iter().next().map(|(k, v)| (k, *v)),
            )
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}

/// What a visitor saw: the entries, and how often it was called after returning `Break`.
struct Visit {
    entries: Vec<(Vec<u8>, u64)>,
    calls_after_break: usize,
}

fn visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
    limit: usize,
) -> Visit {
    let stop_after = limit.max(1);
    let mut entries = Vec::new();
    let mut broke = false;
    let mut calls_after_break = 0;
    let mut f = |k: &[u8], v: &u64| {
        if broke {
            calls_after_break += 1;
            return ControlFlow::Break(());
        }
        entries.push((k.to_vec(), *v));
        if entries.len() >= stop_after {
            broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if rev {
        call_with_range_form!(map, visit_range_rev, start, end, &mut f);
    } else {
        call_with_range_form!(map, visit_range, start, end, &mut f);
    }
    Visit {
        entries,
        calls_after_break,
    }
}

fn compare_visit<'e>(
    name: &str,
    want: impl Iterator<Item = (&'e Vec<u8>, &'e u64)>,
    got: &Visit,
) -> Result<(), Mismatch> {
    let mut want = want.map(|(k, v)| (k.as_slice(), *v));
    for (i, &(ref k, v)) in got.entries.iter().enumerate() {
        let w = want.next();
        if w != Some((k.as_slice(), v)) {
            return Err(Mismatch::new(
                format!("{name} entry #{i} = {}", show_entry(w)),
                format!("{name} entry #{i} = {}", show_entry(Some((k, v)))),
            ));
        }
    }
    if let Some(w) = want.next() {
        let i = got.entries.len();
        return Err(Mismatch::new(
            format!("{name} entry #{i} = {}", show_entry(Some(w))),
            format!("{name} stopped after {i} entries"),
        ));
    }
    if got.calls_after_break > 0 {
        return Err(Mismatch::new(
            format!("{name}: no call of the visitor after it returned Break"),
            format!("{name}: {} calls after Break", got.calls_after_break),
        ));
    }
    Ok(())
}

fn check_visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &Oracle,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    rev: bool,
    limit: usize,
) -> Result<(), Mismatch> {
    let got = visit(map, start, end, rev, limit);
    let take = limit.max(1);
    let want = oracle_range(oracle, start, end);
    if rev {
        compare_visit("visit_range_rev", want.rev().take(take), &got)
    } else {
        compare_visit("visit_range", want.take(take), &got)
    }
}

fn apply_concurrent<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &mut Oracle,
    op: &MapOp,
) -> Result<(), Mismatch> {
    let owned = |k: &[u8], v: &u64| (k.to_vec(), *v);
    let oracle_entry = |e: Option<(&Vec<u8>, &u64)>| e.map(|(k, v)| (k.clone(), *v));
    match op {
        MapOp::Insert(k, v) => {
            let got = map.insert(k, *v);
            let want = oracle.insert(k.clone(), *v);
            if got != Ok(want) {
                return Err(Mismatch::new(show_insert(&Ok(want)), show_insert(&got)));
            }
            expect_eq("get(key) after insert", Some(*v), map.get(k))?;
            expect_eq("len() after insert", oracle.len(), map.len())
        }
        MapOp::Remove(k) => {
            expect_eq("remove(key)", oracle.remove(k.as_slice()), map.remove(k))?;
            expect_eq("get(key) after remove", None, map.get(k))?;
            expect_eq("len() after remove", oracle.len(), map.len())
        }
        MapOp::Get(k) => {
            let want = oracle.get(k.as_slice()).copied();
            expect_eq("get(key)", want, map.get(k))?;
            expect_eq("get_with(key, |v| *v)", want, map.get_with(k, |v| *v))
        }
        MapOp::ContainsKey(k) => expect_eq(
            "get_with(key, |_| ()).is_some()",
            oracle.contains_key(k.as_slice()),
            map.get_with(k, |_| ()).is_some(),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => expect_eq(
            "lower_bound_with(Unbounded)",
            oracle_entry(oracle.iter().next()),
            map.lower_bound_with(Bound::Unbounded, owned),
        ),
        MapOp::Last => expect_eq(
            "upper_bound_with(Unbounded)",
            oracle_entry(oracle.iter().next_back()),
            map.upper_bound_with(Bound::Unbounded, owned),
        ),
        MapOp::LowerBound(b) => {
            let b = as_slice_bound(b);
            let want = oracle_entry(oracle_range(oracle, b, Bound::Unbounded).next());
            let got = map.lower_bound_with(b, owned);
            if want == got {
                Ok(())
            } else {
                Err(Mismatch::new(
                    format!("lower_bound_with(bound) = {}", show_owned(&want)),
                    format!("lower_bound_with(bound) = {}", show_owned(&got)),
                ))
            }
        }
        MapOp::UpperBound(b) => {
            let b = as_slice_bound(b);
            let want = oracle_entry(oracle_range(oracle, Bound::Unbounded, b).next_back());
            let got = map.upper_bound_with(b, owned);
            if want == got {
                Ok(())
            } else {
                Err(Mismatch::new(
                    format!("upper_bound_with(bound) = {}", show_owned(&want)),
                    format!("upper_bound_with(bound) = {}", show_owned(&got)),
                ))
            }
        }
        MapOp::Range(s, e, walk) => {
            let (s, e) = (as_slice_bound(s), as_slice_bound(e));
            match *walk {
                Walk::Forward(n) => check_visit(map, oracle, s, e, false, n),
                Walk::Backward(n) => check_visit(map, oracle, s, e, true, n),
                Walk::Alternate(pattern, n) => {
                    let rev_first = pattern & 1 == 1;
                    check_visit(map, oracle, s, e, rev_first, n)?;
                    check_visit(map, oracle, s, e, !rev_first, n)
                }
            }
        }
        MapOp::Iter => {
            let all = Bound::Unbounded;
            check_visit(map, oracle, all, all, false, usize::MAX)?;
            check_visit(map, oracle, all, all, true, usize::MAX)?;
            expect_eq("len()", oracle.len(), map.len())
        }
        MapOp::Clear => {
            for (k, v) in core::mem::take(oracle) {
                let got = map.remove(&k);
                if got != Some(v) {
                    return Err(Mismatch::new(
                        format!(
                            "remove({}) while removing every key = {:?}",
                            Escaped(&k),
                            Some(v)
                        ),
                        format!("remove({}) while removing every key = {got:?}", Escaped(&k)),
                    ));
                }
            }
            expect_eq("len() after removing every key", 0, map.len())?;
            expect_eq("is_empty() after removing every key", true, map.is_empty())?;
            check_visit(
                map,
                oracle,
                Bound::Unbounded,
                Bound::Unbounded,
                false,
                usize::MAX,
            )
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}

fn show_owned(e: &Option<(Vec<u8>, u64)>) -> String {
    show_entry(e.as_ref().map(|(k, v)| (k.as_slice(), *v)))
}

/// Applies a read-only operation to a static map; write operations are ignored.
fn apply_static<M: StaticMap>(map: &M, oracle: &Oracle, op: &MapOp) -> Result<(), Mismatch> {
    let cursor_walk = |s: Bound<&[u8]>, e: Bound<&[u8]>, walk: Walk| {
        let mut cursor = call_with_range_form!(map, range, s, e);
        walk_compare(oracle_range(oracle, s, e), walk, |back, want| {
            let got = if back {
                cursor.next_back()
            } else {
                cursor.next()
            };
            if got == want {
                Ok(())
            } else {
                Err(show_entry(got))
            }
        })
    };
    match op {
        MapOp::Insert(..) | MapOp::Remove(_) | MapOp::Clear => Ok(()),
        MapOp::Get(k) => expect_eq("get(key)", oracle.get(k.as_slice()).copied(), map.get(k)),
        MapOp::ContainsKey(k) => expect_eq(
            "get(key).is_some()",
            oracle.contains_key(k.as_slice()),
            map.get(k).is_some(),
        ),
        MapOp::Len => {
            expect_eq("len()", oracle.len(), map.len())?;
            expect_eq("is_empty()", oracle.is_empty(), map.is_empty())
        }
        MapOp::First => cursor_walk(Bound::Unbounded, Bound::Unbounded, Walk::Forward(1)),
        MapOp::Last => cursor_walk(Bound::Unbounded, Bound::Unbounded, Walk::Backward(1)),
        MapOp::LowerBound(b) => cursor_walk(as_slice_bound(b), Bound::Unbounded, Walk::Forward(1)),
        MapOp::UpperBound(b) => cursor_walk(Bound::Unbounded, as_slice_bound(b), Walk::Backward(1)),
        MapOp::Range(s, e, walk) => cursor_walk(as_slice_bound(s), as_slice_bound(e), *walk),
        MapOp::Iter => {
            cursor_walk(
                Bound::Unbounded,
                Bound::Unbounded,
                Walk::Forward(usize::MAX),
            )?;
            cursor_walk(
                Bound::Unbounded,
                Bound::Unbounded,
                Walk::Backward(usize::MAX),
            )?;
            expect_eq("len()", oracle.len(), map.len())
        }
        MapOp::MemoryUsage => {
            expect_memory("memory_usage()", !oracle.is_empty(), map.memory_usage())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generating operations
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Kind {
    Insert,
    Remove,
    Get,
    ContainsKey,
    Len,
    First,
    Last,
    LowerBound,
    UpperBound,
    Range,
    Iter,
    MemoryUsage,
}

/// An operation mix: weights per operation kind, and the share of inserts that update a stored
/// key rather than draw a key of the shape.
struct Mix {
    weights: &'static [(Kind, u64)],
    updates: f64,
}

/// The churn phase of a writing driver: inserts and removes of stored keys balance.
const CHURN_MIX: Mix = Mix {
    updates: 0.4,
    weights: &[
        (Kind::Insert, 280),
        (Kind::Remove, 140),
        (Kind::Get, 130),
        (Kind::ContainsKey, 40),
        (Kind::Len, 15),
        (Kind::First, 15),
        (Kind::Last, 15),
        (Kind::LowerBound, 80),
        (Kind::UpperBound, 80),
        (Kind::Range, 190),
        (Kind::Iter, 4),
        (Kind::MemoryUsage, 11),
    ],
};

/// The growth phase: mostly inserts of drawn keys, so the map approaches the size of its key
/// universe (node splits, trie growth).
const GROW_MIX: Mix = Mix {
    updates: 0.1,
    weights: &[
        (Kind::Insert, 450),
        (Kind::Remove, 30),
        (Kind::Get, 110),
        (Kind::ContainsKey, 30),
        (Kind::Len, 10),
        (Kind::First, 10),
        (Kind::Last, 10),
        (Kind::LowerBound, 70),
        (Kind::UpperBound, 70),
        (Kind::Range, 196),
        (Kind::Iter, 3),
        (Kind::MemoryUsage, 11),
    ],
};

/// The shrink phase: mostly removes of stored keys, so the map empties again (merges,
/// collapsing nodes).
const SHRINK_MIX: Mix = Mix {
    updates: 0.4,
    weights: &[
        (Kind::Insert, 60),
        (Kind::Remove, 420),
        (Kind::Get, 110),
        (Kind::ContainsKey, 30),
        (Kind::Len, 10),
        (Kind::First, 10),
        (Kind::Last, 10),
        (Kind::LowerBound, 70),
        (Kind::UpperBound, 70),
        (Kind::Range, 196),
        (Kind::Iter, 3),
        (Kind::MemoryUsage, 11),
    ],
};

/// Length in steps of one grow–churn–shrink cycle of a writing driver.
const PHASE_CYCLE: usize = 8000;

/// The operation weights of a writing driver at `step`: half a cycle of growth, a quarter of
/// churn, a quarter of shrinking.
fn write_mix(step: usize) -> &'static Mix {
    match step % PHASE_CYCLE {
        s if s < PHASE_CYCLE / 2 => &GROW_MIX,
        s if s < PHASE_CYCLE * 3 / 4 => &CHURN_MIX,
        _ => &SHRINK_MIX,
    }
}

/// The reads of a static map.
const READ_MIX: Mix = Mix {
    updates: 0.0,
    weights: &[
        (Kind::Get, 300),
        (Kind::ContainsKey, 50),
        (Kind::Len, 20),
        (Kind::First, 20),
        (Kind::Last, 20),
        (Kind::LowerBound, 140),
        (Kind::UpperBound, 140),
        (Kind::Range, 300),
        (Kind::Iter, 2),
        (Kind::MemoryUsage, 8),
    ],
};

/// One in this many steps of a writing driver is a `clear()` (or remove-everything).
const CLEAR_ONE_IN: u64 = 10_000;

/// Every this many steps a writing driver checks `memory_usage()` on top of the random mix.
const MEMORY_EVERY: usize = 1000;

/// A key already stored, found next to a random key of the shape (so not uniform over the
/// stored keys, but covering them all). `oracle` must not be empty.
fn existing_key(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> Vec<u8> {
    let probe = shape.gen_key(rng);
    let found = if rng.chance(0.5) {
        oracle
            .range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Unbounded))
            .next()
    } else {
        oracle
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(probe.as_slice())))
            .next_back()
    };
    match found.or_else(|| oracle.first_key_value()) {
        Some((k, _)) => k.clone(),
        None => probe,
    }
}

/// A key next to `key`: one byte longer or shorter, last byte incremented or decremented, a
/// prefix, or the empty key; for [`KeyShape::U64`], a nearby integer.
fn neighbor(rng: &mut TestRng, shape: KeyShape, mut key: Vec<u8>) -> Vec<u8> {
    if shape == KeyShape::U64 {
        let x = key_to_u64(&key).unwrap_or(0);
        let y = match rng.below(4) {
            0 => x.wrapping_add(1),
            1 => x.wrapping_sub(1),
            2 => x ^ (1 << rng.below(64)),
            _ => (x & !0xff) | rng.below(256),
        };
        return y.to_be_bytes().to_vec();
    }
    match rng.below(7) {
        0 => key.push(0x00),
        1 => key.push(0xff),
        2 => {
            key.pop();
        }
        3 => {
            let n = rng.index(key.len() + 1);
            key.truncate(n);
        }
        4 => match key.last_mut() {
            Some(b) if *b < 0xff => *b += 1,
            _ => key.push(0x00),
        },
        5 => match key.last_mut() {
            Some(b) if *b > 0 => *b -= 1,
            _ => {
                key.pop();
            }
        },
        _ => key.clear(),
    }
    key
}

/// A key for lookups and bounds: stored, next to a stored one, or fresh.
fn probe_key(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> Vec<u8> {
    if oracle.is_empty() {
        return shape.gen_key(rng);
    }
    match rng.below(10) {
        0..=3 => existing_key(rng, shape, oracle),
        4 | 5 => {
            let k = existing_key(rng, shape, oracle);
            neighbor(rng, shape, k)
        }
        _ => shape.gen_key(rng),
    }
}

fn bound_of(rng: &mut TestRng, key: Vec<u8>) -> Bound<Vec<u8>> {
    match rng.below(5) {
        0 | 1 => Bound::Included(key),
        2 | 3 => Bound::Excluded(key),
        _ => Bound::Unbounded,
    }
}

fn gen_walk(rng: &mut TestRng) -> Walk {
    let limit = match rng.below(20) {
        0 => usize::MAX,
        1..=5 => rng.index(256),
        _ => rng.index(24),
    };
    match rng.below(3) {
        0 => Walk::Forward(limit),
        1 => Walk::Backward(limit),
        _ => Walk::Alternate(rng.next_u64(), limit),
    }
}

fn gen_range(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> MapOp {
    let a = probe_key(rng, shape, oracle);
    let b = probe_key(rng, shape, oracle);
    let (lo, hi) = match rng.below(10) {
        0..=3 if a > b => (b, a),
        0..=3 => (a, b),
        4 => (a.clone(), a),
        5 if a < b => (b, a), // inverted
        _ => (a, b),
    };
    let start = bound_of(rng, lo);
    let end = bound_of(rng, hi);
    MapOp::Range(start, end, gen_walk(rng))
}

fn gen_value(rng: &mut TestRng) -> u64 {
    match rng.below(20) {
        0 => 0,
        1 => u64::MAX,
        _ => rng.next_u64(),
    }
}

fn gen_op(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle, mix: &Mix) -> MapOp {
    let total: u64 = mix.weights.iter().map(|&(_, w)| w).sum();
    let mut roll = rng.below(total);
    let mut kind = mix.weights[0].0;
    for &(k, w) in mix.weights {
        if roll < w {
            kind = k;
            break;
        }
        roll -= w;
    }
    match kind {
        Kind::Insert => {
            let key = if !oracle.is_empty() && rng.chance(mix.updates) {
                existing_key(rng, shape, oracle)
            } else {
                shape.gen_key(rng)
            };
            MapOp::Insert(key, gen_value(rng))
        }
        Kind::Remove => {
            let key = if !oracle.is_empty() && rng.chance(0.55) {
                existing_key(rng, shape, oracle)
            } else {
                probe_key(rng, shape, oracle)
            };
            MapOp::Remove(key)
        }
        Kind::Get => MapOp::Get(probe_key(rng, shape, oracle)),
        Kind::ContainsKey => MapOp::ContainsKey(probe_key(rng, shape, oracle)),
        Kind::Len => MapOp::Len,
        Kind::First => MapOp::First,
        Kind::Last => MapOp::Last,
        Kind::LowerBound => {
            let k = probe_key(rng, shape, oracle);
            MapOp::LowerBound(bound_of(rng, k))
        }
        Kind::UpperBound => {
            let k = probe_key(rng, shape, oracle);
            MapOp::UpperBound(bound_of(rng, k))
        }
        Kind::Range => gen_range(rng, shape, oracle),
        Kind::Iter => MapOp::Iter,
        Kind::MemoryUsage => MapOp::MemoryUsage,
    }
}

// ---------------------------------------------------------------------------------------------
// Drivers
// ---------------------------------------------------------------------------------------------

/// Runs a writing driver's loop, turning a panic of the map into a [`Divergence`] that names the
/// step and the operation during which it happened.
fn drive<S>(
    driver: &'static str,
    shape: KeyShape,
    seed: u64,
    steps: usize,
    mut state: S,
    mut apply: impl FnMut(&mut S, &mut Oracle, &MapOp) -> Result<(), Mismatch>,
) -> Result<(), Divergence> {
    let current = RefCell::new(MapOp::Len);
    let step_now = Cell::new(0usize);
    let divergence = |step: usize, op: &MapOp, m: Mismatch| Divergence {
        driver,
        seed,
        shape,
        step,
        op: op.to_string(),
        expected: m.expected,
        actual: m.actual,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut rng = TestRng::new(seed);
        let mut oracle = Oracle::new();
        for step in 0..=steps {
            let op = if step == steps {
                MapOp::Iter // a final full comparison
            } else if step % MEMORY_EVERY == MEMORY_EVERY - 1 {
                MapOp::MemoryUsage
            } else if rng.below(CLEAR_ONE_IN) == 0 {
                MapOp::Clear
            } else {
                gen_op(&mut rng, shape, &oracle, write_mix(step))
            };
            step_now.set(step);
            *current.borrow_mut() = op;
            let op = current.borrow();
            apply(&mut state, &mut oracle, &op).map_err(|m| divergence(step, &op, m))?;
        }
        Ok(())
    }));
    match outcome {
        Ok(result) => result,
        Err(payload) => Err(divergence(
            step_now.get(),
            &current.borrow(),
            Mismatch::new("no panic", format!("panic: {}", panic_message(&*payload))),
        )),
    }
}

/// Differential test of an [`OrderedMap`] against `BTreeMap`: `steps` random operations on
/// keys of `shape`, determined by `seed`, on the map `make` returns (which must be empty).
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message (seed, step, operation, expected
/// and actual answers), including when the map itself panics.
pub fn differential_ordered<M: OrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) {
    if let Err(d) = try_differential_ordered(make, shape, seed, steps) {
        panic!("{d}");
    }
}

/// [`differential_ordered`] returning the first divergence instead of panicking.
pub fn try_differential_ordered<M: OrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) -> Result<(), Divergence> {
    drive(
        "differential_ordered",
        shape,
        seed,
        steps,
        make(),
        |map, oracle, op| apply_ordered(map, oracle, op),
    )
}

/// Differential test of a [`ConcurrentOrderedMap`] against `BTreeMap`, single-threaded through
/// its `&self` API: `steps` random operations on keys of `shape`, determined by `seed`, on the
/// map `make` returns (which must be empty).
///
/// Range visits break after a random number of entries; a visitor called again after it
/// returned `Break` is a divergence.
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message.
pub fn differential_concurrent<M: ConcurrentOrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) {
    if let Err(d) = try_differential_concurrent(make, shape, seed, steps) {
        panic!("{d}");
    }
}

/// [`differential_concurrent`] returning the first divergence instead of panicking.
pub fn try_differential_concurrent<M: ConcurrentOrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) -> Result<(), Divergence> {
    drive(
        "differential_concurrent",
        shape,
        seed,
        steps,
        make(),
        |map, oracle, op| apply_concurrent(map, oracle, op),
    )
}

/// Checks a [`StaticMap`] against the `oracle` it was built from: `len`, a full scan both ways,
/// then `queries` random reads (gets of present, absent and neighbouring keys drawn with
/// `shape`, seeks, cursors over ranges with every bound kind walked forward, backward or
/// alternating), determined by `seed`.
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message. Its steps 0 to 2 are the opening
/// `len`, full scan and `memory_usage` checks, step `3 + i` is query `i`.
pub fn check_static<M: StaticMap>(
    map: &M,
    oracle: &BTreeMap<Vec<u8>, u64>,
    shape: KeyShape,
    seed: u64,
    queries: usize,
) {
    if let Err(d) = try_check_static(map, oracle, shape, seed, queries) {
        panic!("{d}");
    }
}

/// [`check_static`] returning the first divergence instead of panicking.
pub fn try_check_static<M: StaticMap>(
    map: &M,
    oracle: &BTreeMap<Vec<u8>, u64>,
    shape: KeyShape,
    seed: u64,
    queries: usize,
) -> Result<(), Divergence> {
    let current = RefCell::new(MapOp::Len);
    let step_now = Cell::new(0usize);
    let divergence = |step: usize, op: &MapOp, m: Mismatch| Divergence {
        driver: "check_static",
        seed,
        shape,
        step,
        op: op.to_string(),
        expected: m.expected,
        actual: m.actual,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut rng = TestRng::new(seed);
        let opening = [MapOp::Len, MapOp::Iter, MapOp::MemoryUsage];
        for step in 0..opening.len() + queries {
            let op = match opening.get(step) {
                Some(op) => op.clone(),
                None => gen_op(&mut rng, shape, oracle, &READ_MIX),
            };
            step_now.set(step);
            *current.borrow_mut() = op;
            let op = current.borrow();
            apply_static(map, oracle, &op).map_err(|m| divergence(step, &op, m))?;
        }
        Ok(())
    }));
    match outcome {
        Ok(result) => result,
        Err(payload) => Err(divergence(
            step_now.get(),
            &current.borrow(),
            Mismatch::new("no panic", format!("panic: {}", panic_message(&*payload))),
        )),
    }
}

/// Checks that a [`StaticMapBuilder`] refuses bad input as its contract says.
///
/// In several scenarios (plain keys, the empty key, prefix keys, 0x00/0xFF keys, 2 KiB keys,
/// `extend_sorted`, no key at all) it checks that a key sorting before the previous one yields
/// [`Error::OutOfOrder`] with the right `previous` and `got`, that a repeated key yields
/// [`Error::DuplicateKey`], that a refused push leaves the builder unchanged (later errors still
/// name the last accepted key, and keys after it are still accepted), and that the finished
/// map holds exactly the accepted keys (checked with [`check_static`]).
///
/// The keys are byte strings of every kind (the empty key, 0x00/0xFF, 2 KiB keys), so builders
/// of integer-only maps cannot use this check.
///
/// # Panics
///
/// At the first violation, with a message naming the scenario, the keys pushed so far and the
/// expected and actual results.
pub fn check_builder_rejects<B: StaticMapBuilder>(make: impl Fn() -> B) {
    fn long(fill: u8, last: u8) -> Vec<u8> {
        let mut k = vec![fill; 2048];
        k[2047] = last;
        k
    }
    let ooo = |previous: &[u8], got: &[u8]| {
        Err(Error::OutOfOrder {
            previous: previous.to_vec(),
            got: got.to_vec(),
        })
    };
    let dup = |key: &[u8]| Err(Error::DuplicateKey { key: key.to_vec() });

    /// A scenario's name, and its pushes with the result each must have.
    type Scenario = (&'static str, Vec<(Vec<u8>, Result<(), Error>)>);
    let scenarios: Vec<Scenario> = vec![
        (
            "out of order",
            vec![
                (b"b".to_vec(), Ok(())),
                (b"a".to_vec(), ooo(b"b", b"a")),
                (b"a\xff\xff".to_vec(), ooo(b"b", b"a\xff\xff")),
                (b"b".to_vec(), dup(b"b")),
                (b"ba".to_vec(), Ok(())),
                (b"b".to_vec(), ooo(b"ba", b"b")),
                (b"c".to_vec(), Ok(())),
            ],
        ),
        (
            "empty key",
            vec![
                (b"".to_vec(), Ok(())),
                (b"".to_vec(), dup(b"")),
                (b"\x00".to_vec(), Ok(())),
                (b"".to_vec(), ooo(b"\x00", b"")),
                (b"\x00".to_vec(), dup(b"\x00")),
                (b"\xff".to_vec(), Ok(())),
            ],
        ),
        (
            "prefix keys",
            vec![
                (b"abc".to_vec(), Ok(())),
                (b"ab".to_vec(), ooo(b"abc", b"ab")),
                (b"abc".to_vec(), dup(b"abc")),
                (b"abc\x00".to_vec(), Ok(())),
                (b"abc".to_vec(), ooo(b"abc\x00", b"abc")),
                (b"abd".to_vec(), Ok(())),
                (b"abc\xff".to_vec(), ooo(b"abd", b"abc\xff")),
                (b"abd\x00\x00".to_vec(), Ok(())),
            ],
        ),
        (
            "0x00 and 0xFF keys",
            vec![
                (b"\xff".to_vec(), Ok(())),
                (b"\x00\x00\x00".to_vec(), ooo(b"\xff", b"\x00\x00\x00")),
                (b"\xff\x00".to_vec(), Ok(())),
                (b"\xff".to_vec(), ooo(b"\xff\x00", b"\xff")),
                (b"\xff\x00".to_vec(), dup(b"\xff\x00")),
                (b"\xff\xff".to_vec(), Ok(())),
            ],
        ),
        (
            "2 KiB keys differing in the last byte",
            vec![
                (long(b'k', b'm'), Ok(())),
                (long(b'k', b'l'), ooo(&long(b'k', b'm'), &long(b'k', b'l'))),
                (long(b'k', b'm'), dup(&long(b'k', b'm'))),
                (long(b'k', b'n'), Ok(())),
            ],
        ),
        ("no key at all", vec![]),
    ];

    for (scenario, pushes) in &scenarios {
        let mut builder = make();
        let mut accepted = Oracle::new();
        let mut history: Vec<String> = Vec::new();
        for (i, (key, want)) in pushes.iter().enumerate() {
            let value = 1000 + i as u64;
            let got = builder.push(key, value);
            if &got != want {
                panic!(
                    "check_builder_rejects [{scenario}]: push({}) after pushes [{}]\n  expected: {}\n  actual:   {}",
                    Escaped(key),
                    history.join(", "),
                    show_unit_result(want),
                    show_unit_result(&got),
                );
            }
            history.push(format!(
                "{}{}",
                Escaped(key),
                if got.is_ok() { "" } else { " (refused)" }
            ));
            if got.is_ok() {
                accepted.insert(key.clone(), value);
            }
        }
        finish_and_check(builder, &accepted, scenario);
    }

    // `extend_sorted` stops at the first error and keeps what came before it.
    let mut builder = make();
    let got = builder.extend_sorted([
        (b"m".as_slice(), 1),
        (b"n".as_slice(), 2),
        (b"l".as_slice(), 3),
        (b"o".as_slice(), 4),
    ]);
    let want = ooo(b"n", b"l");
    if got != want {
        panic!(
            "check_builder_rejects [extend_sorted]: extend_sorted([m, n, l, o])\n  expected: {}\n  actual:   {}",
            show_unit_result(&want),
            show_unit_result(&got)
        );
    }
    if let Err(e) = builder.push(b"o", 4) {
        panic!(
            "check_builder_rejects [extend_sorted]: push(\"o\") after extend_sorted stopped at \"l\"\n  expected: Ok(())\n  actual:   Err({e})"
        );
    }
    let accepted: Oracle = [(b"m".to_vec(), 1), (b"n".to_vec(), 2), (b"o".to_vec(), 4)]
        .into_iter()
        .collect();
    finish_and_check(builder, &accepted, "extend_sorted");
}

fn show_unit_result(r: &Result<(), Error>) -> String {
    match r {
        Ok(()) => "Ok(())".to_string(),
        Err(e) => format!("Err({e}) = {e:?}"),
    }
}

fn finish_and_check<B: StaticMapBuilder>(builder: B, accepted: &Oracle, scenario: &str) {
    let map = match builder.finish() {
        Ok(map) => map,
        Err(e) => panic!("check_builder_rejects [{scenario}]: finish() failed: {e}"),
    };
    if let Err(d) = try_check_static(&map, accepted, KeyShape::PrefixChains, 0, 200) {
        panic!(
            "check_builder_rejects [{scenario}]: the finished map holds other than the accepted keys: {d}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Operation sequences for property tests
// ---------------------------------------------------------------------------------------------

fn describe_op(driver: &str, i: usize, n: usize, op: &MapOp, m: Mismatch) -> String {
    format!(
        "{driver}: op #{i} of {n}: {op}\n  expected: {}\n  actual:   {}",
        m.expected, m.actual
    )
}

/// A copy of a serialized FST or SuRF image (`fst::raw::format`: XXH3 of the body in the last
/// 8 bytes) with 1 to 3 bytes past the magic and version damaged (one bit flipped, zeroed,
/// set to 0xFF or random) and the checksum recomputed, so the damage reaches the loader's
/// structural checks.
pub fn damage_keeping_checksum(img: &[u8], rng: &mut TestRng) -> Vec<u8> {
    let mut bad = img.to_vec();
    let body = img.len().saturating_sub(8);
    if body <= 12 {
        return bad;
    }
    for _ in 0..1 + rng.index(3) {
        let at = 12 + rng.index(body - 12);
        bad[at] = match rng.index(4) {
            0 => bad[at] ^ (1 << rng.index(8)),
            1 => 0,
            2 => 0xFF,
            _ => rng.next_u64() as u8,
        };
    }
    reseal(&mut bad);
    bad
}

/// Rewrites the trailing checksum of a serialized FST, SuRF or HOPE image (XXH3-64, seed 0, of
/// every byte before the last 8) after its body was changed, as a buggy writer or an attacker
/// could; an image shorter than 8 bytes is left as it is.
pub fn reseal(img: &mut [u8]) {
    let Some(body) = img.len().checked_sub(8) else {
        return;
    };
    let sum = crate::substrate::hash::hash_bytes(&img[..body], 0).to_le_bytes();
    img[body..].copy_from_slice(&sum);
}

/// Byte offset of the first LOUDS-Sparse label of an FST or SuRF image (format version 2: a
/// 64-byte header, three dense bit vectors each a `u64` bit count and its words, then the
/// label count).
pub fn first_sparse_label_at(img: &[u8]) -> usize {
    let u64_at = |at: usize| u64::from_le_bytes(img[at..at + 8].try_into().unwrap()) as usize;
    let mut at = 64;
    for _ in 0..3 {
        at += 8 + u64_at(at).div_ceil(64) * 8;
    }
    at + 8
}

/// Every permutation of `0..n` (Heap's algorithm), for tests that try every insertion order
/// of a few keys.
pub fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut c = vec![0usize; n];
    let mut out = vec![a.clone()];
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                a.swap(0, i);
            } else {
                a.swap(c[i], i);
            }
            out.push(a.clone());
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    out
}

/// Applies `ops` to `map` (which must be empty) and to a `BTreeMap` oracle, then compares the
/// whole map; returns the first divergence, naming the operation's index.
pub fn run_ops<M: OrderedMap<u64>>(map: &mut M, ops: &[MapOp]) -> Result<(), String> {
    if !map.is_empty() {
        return Err(format!(
            "run_ops: the map must start empty, it holds {} keys",
            map.len()
        ));
    }
    let mut oracle = Oracle::new();
    for (i, op) in ops.iter().chain([&MapOp::Iter]).enumerate() {
        apply_ordered(map, &mut oracle, op)
            .map_err(|m| describe_op("run_ops", i, ops.len(), op, m))?;
    }
    Ok(())
}

/// [`run_ops`] for a [`ConcurrentOrderedMap`], single-threaded; [`MapOp::Clear`] removes every
/// key one by one.
pub fn run_ops_concurrent<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    ops: &[MapOp],
) -> Result<(), String> {
    if !map.is_empty() {
        return Err(format!(
            "run_ops_concurrent: the map must start empty, it holds {} keys",
            map.len()
        ));
    }
    let mut oracle = Oracle::new();
    for (i, op) in ops.iter().chain([&MapOp::Iter]).enumerate() {
        apply_concurrent(map, &mut oracle, op)
            .map_err(|m| describe_op("run_ops_concurrent", i, ops.len(), op, m))?;
    }
    Ok(())
}

/// A proptest strategy for adversarial keys: prefix chains (the empty key included), 0x00/0xFF
/// strings, short strings favouring 0x00, 0xFF and `a`/`b`, long shared prefixes with short
/// tails, 8-byte integers, and (rarely) 1–4 KiB keys. Shrinks towards short chain prefixes.
pub fn arb_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    use proptest::collection::vec;
    use proptest::prelude::{any, prop_oneof};
    use proptest::sample::select;

    let chains = (0..CHAINS.len(), 0usize..=26).prop_map(|(c, n)| {
        let chain = CHAINS[c];
        chain[..n.min(chain.len())].to_vec()
    });
    let zero_ff = vec(prop_oneof![Just(0x00u8), Just(0xffu8)], 0..=12);
    let bytes = vec(
        prop_oneof![
            Just(0x00u8),
            Just(0xffu8),
            Just(b'a'),
            Just(b'b'),
            any::<u8>()
        ],
        0..=12,
    );
    let shared =
        (0..SHARED_PREFIXES.len(), vec(select(TAIL_ALPHABET), 0..=3)).prop_map(|(p, tail)| {
            let mut key = SHARED_PREFIXES[p].to_vec();
            key.extend(tail);
            key
        });
    let ints = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..512, any::<u64>()]
        .prop_map(|x| x.to_be_bytes().to_vec());
    let long = (0u64..3, 1024usize..=4096, any::<u8>()).prop_map(|(base, len, last)| {
        let mut key: Vec<u8> = (0..len).map(|i| long_pattern(base, i)).collect();
        key.push(last);
        key
    });
    prop_oneof![
        3 => chains,
        3 => zero_ff,
        3 => bytes,
        2 => shared,
        2 => ints,
        1 => long,
    ]
}

/// A proptest strategy for 8-byte big-endian integer keys (edges, dense small values, random),
/// for integer-only maps.
pub fn arb_u64_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    use proptest::prelude::{any, prop_oneof};
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0u64..64,
        (u64::MAX - 64)..=u64::MAX,
        any::<u64>(),
    ]
    .prop_map(|x| x.to_be_bytes().to_vec())
}

/// A proptest strategy for operation sequences over [`arb_key`] keys; see [`arb_ops_with`].
pub fn arb_ops() -> impl Strategy<Value = Vec<MapOp>> {
    arb_ops_with(arb_key())
}

/// A proptest strategy for sequences of up to 128 operations whose keys come mostly from a
/// pool of up to 16 keys drawn from `key` (so operations hit the same keys), sometimes fresh
/// from `key`.
///
/// Every [`MapOp`] variant occurs, with writes most frequent and `Clear` rare. Operations name
/// pool keys by index and the pool is drawn separately (no `prop_flat_map`), so proptest first
/// deletes operations, then simplifies the rest and the keys: failures shrink to a few
/// operations within proptest's default shrink budget.
pub fn arb_ops_with<S>(key: S) -> impl Strategy<Value = Vec<MapOp>>
where
    S: Strategy<Value = Vec<u8>> + Clone + 'static,
{
    let templates = proptest::collection::vec(arb_op_template(key.clone().boxed()), 1..128);
    let pool = proptest::collection::vec(key, 1..16);
    (templates, pool)
        .prop_map(|(templates, pool)| templates.into_iter().map(|t| t.resolve(&pool)).collect())
}

/// A key of a generated operation: an index into the pool, or a fresh key.
#[derive(Clone, Debug)]
enum KeyPick {
    Pool(proptest::sample::Index),
    Fresh(Vec<u8>),
}

impl KeyPick {
    fn resolve(self, pool: &[Vec<u8>]) -> Vec<u8> {
        match self {
            KeyPick::Pool(i) => pool[i.index(pool.len())].clone(),
            KeyPick::Fresh(k) => k,
        }
    }
}

/// A [`MapOp`] whose keys are still [`KeyPick`]s.
#[derive(Clone, Debug)]
enum OpTemplate {
    Insert(KeyPick, u64),
    Remove(KeyPick),
    Get(KeyPick),
    ContainsKey(KeyPick),
    LowerBound(Bound<KeyPick>),
    UpperBound(Bound<KeyPick>),
    Range(Bound<KeyPick>, Bound<KeyPick>, Walk),
    Keyless(MapOp),
}

impl OpTemplate {
    fn resolve(self, pool: &[Vec<u8>]) -> MapOp {
        let bound = |b: Bound<KeyPick>| b.map(|k| k.resolve(pool));
        match self {
            OpTemplate::Insert(k, v) => MapOp::Insert(k.resolve(pool), v),
            OpTemplate::Remove(k) => MapOp::Remove(k.resolve(pool)),
            OpTemplate::Get(k) => MapOp::Get(k.resolve(pool)),
            OpTemplate::ContainsKey(k) => MapOp::ContainsKey(k.resolve(pool)),
            OpTemplate::LowerBound(b) => MapOp::LowerBound(bound(b)),
            OpTemplate::UpperBound(b) => MapOp::UpperBound(bound(b)),
            OpTemplate::Range(s, e, w) => MapOp::Range(bound(s), bound(e), w),
            OpTemplate::Keyless(op) => op,
        }
    }
}

fn arb_op_template(fresh: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<OpTemplate> {
    use proptest::prelude::{any, prop_oneof};
    use proptest::sample::Index;

    let key: BoxedStrategy<KeyPick> = prop_oneof![
        4 => any::<Index>().prop_map(KeyPick::Pool),
        1 => fresh.prop_map(KeyPick::Fresh),
    ]
    .boxed();
    let bound = prop_oneof![
        key.clone().prop_map(Bound::Included),
        key.clone().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
    .boxed();
    let limit = prop_oneof![Just(usize::MAX), 0usize..32];
    let walk = prop_oneof![
        limit.clone().prop_map(Walk::Forward),
        limit.clone().prop_map(Walk::Backward),
        (any::<u64>(), limit).prop_map(|(p, n)| Walk::Alternate(p, n)),
    ];
    let keyless = prop_oneof![
        4 => Just(MapOp::Len),
        4 => Just(MapOp::First),
        4 => Just(MapOp::Last),
        4 => Just(MapOp::Iter),
        1 => Just(MapOp::Clear),
        2 => Just(MapOp::MemoryUsage),
    ];
    prop_oneof![
        30 => (key.clone(), any::<u64>()).prop_map(|(k, v)| OpTemplate::Insert(k, v)),
        15 => key.clone().prop_map(OpTemplate::Remove),
        15 => key.clone().prop_map(OpTemplate::Get),
        5 => key.prop_map(OpTemplate::ContainsKey),
        10 => bound.clone().prop_map(OpTemplate::LowerBound),
        10 => bound.clone().prop_map(OpTemplate::UpperBound),
        20 => (bound.clone(), bound, walk).prop_map(|(s, e, w)| OpTemplate::Range(s, e, w)),
        19 => keyless.prop_map(OpTemplate::Keyless),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// The reference map
// ---------------------------------------------------------------------------------------------

/// A sorted-`Vec` map implementing [`OrderedMap`]: the reference implementation the driver's own
/// tests run, and a model for structures' tests.
///
/// It implements only the trait's required methods, so it exercises the default ones.
/// Operations cost O(log n) to find and O(n) to insert or remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelMap<V> {
    entries: Vec<(Vec<u8>, V)>,
}

impl<V> Default for ModelMap<V> {
    fn default() -> Self {
        ModelMap {
            entries: Vec::new(),
        }
    }
}

impl<V> ModelMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
    }

    /// Indices of the entries within `(start, end)`.
    fn index_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> core::ops::Range<usize> {
        if is_empty_range(start, end) {
            return 0..0;
        }
        let lo = match start {
            Bound::Included(s) => self.entries.partition_point(|(k, _)| k.as_slice() < s),
            Bound::Excluded(s) => self.entries.partition_point(|(k, _)| k.as_slice() <= s),
            Bound::Unbounded => 0,
        };
        let hi = match end {
            Bound::Included(e) => self.entries.partition_point(|(k, _)| k.as_slice() <= e),
            Bound::Excluded(e) => self.entries.partition_point(|(k, _)| k.as_slice() < e),
            Bound::Unbounded => self.entries.len(),
        };
        lo..hi.max(lo)
    }
}

/// Iterator over a range of a [`ModelMap`], from both ends.
#[derive(Clone, Debug)]
pub struct ModelRange<'a, V> {
    inner: core::slice::Iter<'a, (Vec<u8>, V)>,
}

impl<'a, V> Iterator for ModelRange<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k.as_slice(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for ModelRange<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k.as_slice(), v))
    }
}

impl<V> ExactSizeIterator for ModelRange<'_, V> {}

impl<V> core::iter::FusedIterator for ModelRange<'_, V> {}

impl<V> OrderedMap<V> for ModelMap<V> {
    type Key<'a>
        = &'a [u8]
    where
        V: 'a;

    type Range<'a>
        = ModelRange<'a, V>
    where
        V: 'a;

    fn get(&self, key: &[u8]) -> Option<&V> {
        self.search(key).ok().map(|i| &self.entries[i].1)
    }

    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        match self.search(key) {
            Ok(i) => Ok(Some(core::mem::replace(&mut self.entries[i].1, value))),
            Err(i) => {
                self.entries.insert(i, (key.to_vec(), value));
                Ok(None)
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.search(key).ok().map(|i| self.entries.remove(i).1)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        let indices = self.index_range(start, end);
        ModelRange {
            inner: self.entries[indices].iter(),
        }
    }

    /// The entry vector's capacity times the entry size, plus every key's capacity (values'
    /// own heap allocations are not counted).
    fn memory_usage(&self) -> usize {
        self.entries.capacity() * core::mem::size_of::<(Vec<u8>, V)>()
            + self
                .entries
                .iter()
                .map(|(k, _)| k.capacity())
                .sum::<usize>()
    }

    /// Removes every key and releases the entry vector.
    fn clear(&mut self) {
        self.entries = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{ProptestConfig, proptest};
    use proptest::test_runner::{
        Config, RngAlgorithm, TestCaseError, TestError, TestRng as PropRng, TestRunner,
    };
    use std::collections::BTreeSet;
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
    fn shapes_draw_adversarial_keys_from_small_universes() {
        let wanted_empty = [
            KeyShape::RandomBytes,
            KeyShape::PrefixChains,
            KeyShape::ZeroFf,
            KeyShape::Mixed,
        ];
        let all = KeyShape::ALL_BYTES.iter().chain([&KeyShape::U64]);
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
        for &shape in KeyShape::ALL_BYTES.iter().chain([&KeyShape::U64]) {
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
            for &shape in KeyShape::ALL_BYTES.iter().chain([&KeyShape::U64]) {
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
        for &shape in KeyShape::ALL_BYTES.iter().chain([&KeyShape::U64]) {
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
        fn range<R>(&self, range: R) -> Self::Cursor<'_>
        where
            R: KeyRange,
        {
            let (s, mut e) = range.key_bounds();
            if let (Some(StaticFault::IncludedEndAsExcluded), Bound::Included(k)) = (self.fault, e)
            {
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
        for &shape in KeyShape::ALL_BYTES.iter().chain([&KeyShape::U64]) {
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
        let outcome =
            panic::catch_unwind(|| check_builder_rejects(|| Lossy(VecBuilder::new(None))));
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
}
