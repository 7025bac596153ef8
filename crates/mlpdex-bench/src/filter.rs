//! The `filter` subcommand: SuRF range filters against a Bloom filter, the microbenchmark of
//! memory-efficient-search-trees.txt §4.3 (false-positive rate, query speed and build time as
//! the filters' bits per key vary, Figures 4.4–4.6).
//!
//! # The workload (§4.3)
//!
//! 1. **Stored set**: a random half of the dataset's keys (deterministic from the seed), sorted.
//!    Every filter is built from it in one pass; the build is timed ([`Record`] workload
//!    `build`, throughput in million keys per second).
//! 2. **Query keys** `K`: drawn uniformly from the *whole* dataset, so about half are absent.
//!    (The thesis shows Zipf-distributed keys and reports that uniform ones look the same.)
//! 3. **Queries** ([`QueryKind`]):
//!    - `point`: `may_contain(K)`;
//!    - `range`: on integer datasets (8-byte big-endian keys) the closed range
//!      `[K + 2^37, K + 2^38]` (saturating at `u64::MAX`, see [`integer_range`]); on string
//!      datasets the half-open range `[K, K')`, `K'` being `K` with its last byte incremented
//!      (see [`string_range_end`]);
//!    - `mixed`: point and range queries alternating, point first.
//!
//!    The integer range width is the thesis', calibrated for its 50M stored keys, among which
//!    46% of the ranges hold a key; among fewer keys far fewer do (0.4% among 500k), so a range
//!    FPR here is measured on almost only negative queries. The share of positive answers of
//!    each workload is reported as a note.
//!
//!    Bloom filters answer point queries only: their `range` and `mixed` measurements are
//!    skipped with a note.
//! 4. **Ground truth**: a point query is negative when `K` is not stored, a range query when no
//!    stored key lies in its range (binary search in the sorted stored keys); computed once,
//!    outside any timed code. `FPR = false positives / negative queries` ([`Outcome`]). A false
//!    negative is a library bug: [`Prepared::serve`] fails, naming the first one, and the
//!    command fails with it.
//!
//! # Timing
//!
//! Queries are generated into flat arrays before anything is timed ([`QuerySet`]); the timed
//! loop runs them on one thread and counts the `true` answers. That count is passed through
//! [`black_box`] (so no call can be optimised away) and must equal the count of an untimed
//! checking pass over the same queries. Each filter lives in a child process of its own for a
//! round ([`crate::harness`]): with `--repeat R` it is built and queried in `R` fresh
//! processes, the filters' measurements interleaved and their order rotated (speed drifts on a
//! shared machine), and each figure is the median round by throughput with the rounds' spread.
//! False-positive rates do not depend on the round: the filters are deterministic.
//!
//! # Index names
//!
//! `surf-base`, `surf-hash-N`, `surf-real-N` (`N` suffix bits, 1–64), `surf-mixed-H-R` (`H`
//! hashed and `R` real bits, 1–32 each), `bloom-B` (a Bloom filter of `B` bits per key, 1–64,
//! with the optimal number of hash functions), and `bloom`: a Bloom filter of as many bits per
//! key as the nearest SuRF before it in the list has (10 when none does), to compare the two at
//! equal size.
//!
//! A SuRF name followed by `+<scheme>` (`surf-real-8+double-char`) puts a HOPE encoder in
//! front ([`mlpdex::hope::Hope`]): its dictionary is built from a 1% sample of the stored keys
//! (timed with the build), the SuRF stores encoded keys, and every query encodes its key(s) in
//! the timed loop. Its bits per key count the dictionary; its records carry the HOPE fields.

use std::fmt;
use std::hint::black_box;
use std::ops::Bound;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Result, bail, ensure};
use fastbloom::BloomFilter;
use mlpdex::RangeFilter;
use mlpdex::hope::{Encoder, Hope, Scheme};
use mlpdex::surf::{Surf, SurfBuilder, SurfKind};
use std::sync::Arc;

use crate::adapter::HopeFacts;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::exec::{Driver, Reply, Request};
use crate::harness::spec::FilterSpec;
use crate::keys::Keys;
use crate::random::below;
use crate::record::{FilterOp, FilterRecord, Measurement, Record};

/// Every filter name pattern with a one-line description, for `mlpdex-bench list`.
pub const FILTERS: &[(&str, &str)] = &[
    (
        "surf-base",
        "SuRF-Base: the trie of unique prefixes, no suffix bits",
    ),
    (
        "surf-hash-N",
        "SuRF-Hash: N hashed suffix bits per key (1-64)",
    ),
    (
        "surf-real-N",
        "SuRF-Real: N real suffix bits per key (1-64)",
    ),
    (
        "surf-mixed-H-R",
        "SuRF-Mixed: H hashed and R real suffix bits per key (1-32 each)",
    ),
    (
        "bloom-B",
        "Bloom filter (fastbloom) of B bits per key (1-64)",
    ),
    (
        "bloom",
        "Bloom filter as large per key as the SuRF before it in the list (10 bits if none)",
    ),
];

/// The default `--index` list: a sweep over suffix bits and Bloom sizes that draws every line of
/// Figure 4.4.
pub const DEFAULT_INDEXES: &str = "surf-base,surf-hash-2,surf-hash-4,surf-hash-8,surf-real-2,\
surf-real-4,surf-real-8,surf-mixed-1-1,surf-mixed-2-2,surf-mixed-4-4,bloom-10,bloom-14,bloom-18";

/// Bits per key of a `bloom` that no SuRF precedes.
pub const BLOOM_DEFAULT_BITS: f64 = 10.0;

/// What a filter name asks for. In records it is written as its parts
/// (`{"family":"surf-mixed","hash_bits":4,"real_bits":4}`), never as a name to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "FilterParts", from = "FilterParts")]
pub enum FilterKind {
    /// A SuRF of this kind.
    Surf(SurfKind),
    /// A Bloom filter of `Some(b)` bits per key, or (`None`) as many as the SuRF before it.
    Bloom(Option<u32>),
}

impl FilterKind {
    /// The family a chart draws as one line: `SuRF-Base`, `SuRF-Hash`, `SuRF-Real`,
    /// `SuRF-Mixed` or `Bloom`.
    pub fn family(self) -> &'static str {
        match self {
            FilterKind::Surf(SurfKind::Base) => "SuRF-Base",
            FilterKind::Surf(SurfKind::Hash(_)) => "SuRF-Hash",
            FilterKind::Surf(SurfKind::Real(_)) => "SuRF-Real",
            FilterKind::Surf(SurfKind::Mixed { .. }) => "SuRF-Mixed",
            FilterKind::Bloom(_) => "Bloom",
        }
    }

    /// A short label of the configuration within its family: suffix bits (`8`, `4+4` for
    /// hashed + real) or Bloom bits per key (`10`); empty for SuRF-Base and a matched `bloom`.
    pub fn label(self) -> String {
        match self {
            FilterKind::Surf(SurfKind::Base) | FilterKind::Bloom(None) => String::new(),
            FilterKind::Surf(SurfKind::Hash(n) | SurfKind::Real(n)) => n.to_string(),
            FilterKind::Surf(SurfKind::Mixed { hash, real }) => format!("{hash}+{real}"),
            FilterKind::Bloom(Some(b)) => b.to_string(),
        }
    }
}

/// The serialized form of a [`FilterKind`]: its family and its bits, as fields.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
#[serde(tag = "family", rename_all = "kebab-case")]
enum FilterParts {
    SurfBase,
    SurfHash { bits: u8 },
    SurfReal { bits: u8 },
    SurfMixed { hash_bits: u8, real_bits: u8 },
    Bloom { bits: Option<u32> },
}

impl From<FilterKind> for FilterParts {
    fn from(k: FilterKind) -> FilterParts {
        match k {
            FilterKind::Surf(SurfKind::Base) => FilterParts::SurfBase,
            FilterKind::Surf(SurfKind::Hash(bits)) => FilterParts::SurfHash { bits },
            FilterKind::Surf(SurfKind::Real(bits)) => FilterParts::SurfReal { bits },
            FilterKind::Surf(SurfKind::Mixed { hash, real }) => FilterParts::SurfMixed {
                hash_bits: hash,
                real_bits: real,
            },
            FilterKind::Bloom(bits) => FilterParts::Bloom { bits },
        }
    }
}

impl From<FilterParts> for FilterKind {
    fn from(p: FilterParts) -> FilterKind {
        match p {
            FilterParts::SurfBase => FilterKind::Surf(SurfKind::Base),
            FilterParts::SurfHash { bits } => FilterKind::Surf(SurfKind::Hash(bits)),
            FilterParts::SurfReal { bits } => FilterKind::Surf(SurfKind::Real(bits)),
            FilterParts::SurfMixed {
                hash_bits,
                real_bits,
            } => FilterKind::Surf(SurfKind::Mixed {
                hash: hash_bits,
                real: real_bits,
            }),
            FilterParts::Bloom { bits } => FilterKind::Bloom(bits),
        }
    }
}

/// Parses `digits` as a number in `1..=max` written without sign or leading zeros.
fn bits_in(name: &str, digits: &str, max: u32) -> Result<u32, String> {
    let n: u32 = digits
        .parse()
        .ok()
        .filter(|n: &u32| n.to_string() == digits)
        .ok_or_else(|| format!("filter `{name}`: `{digits}` is not a number of bits"))?;
    if !(1..=max).contains(&n) {
        return Err(format!(
            "filter `{name}`: {n} bits is out of range (1 to {max})"
        ));
    }
    Ok(n)
}

impl FromStr for FilterKind {
    type Err = String;

    fn from_str(name: &str) -> Result<FilterKind, String> {
        let bits = |digits, max| bits_in(name, digits, max);
        let kind = if name == "surf-base" {
            FilterKind::Surf(SurfKind::Base)
        } else if name == "bloom" {
            FilterKind::Bloom(None)
        } else if let Some(n) = name.strip_prefix("surf-hash-") {
            FilterKind::Surf(SurfKind::Hash(bits(n, 64)? as u8))
        } else if let Some(n) = name.strip_prefix("surf-real-") {
            FilterKind::Surf(SurfKind::Real(bits(n, 64)? as u8))
        } else if let Some(hr) = name.strip_prefix("surf-mixed-") {
            let (h, r) = hr.split_once('-').ok_or_else(|| {
                format!("filter `{name}`: write surf-mixed-H-R (hashed and real bits)")
            })?;
            FilterKind::Surf(SurfKind::Mixed {
                hash: bits(h, 32)? as u8,
                real: bits(r, 32)? as u8,
            })
        } else if let Some(b) = name.strip_prefix("bloom-") {
            FilterKind::Bloom(Some(bits(b, 64)?))
        } else {
            let known: Vec<&str> = FILTERS.iter().map(|(n, _)| *n).collect();
            let suggestion = crate::names::suggest(name, &known);
            return Err(crate::names::unknown("filter", name, suggestion.as_deref()));
        };
        Ok(kind)
    }
}

/// A filter to measure: its name as given and what it asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterIndex {
    /// The name, e.g. `surf-hash-8`; the `index` of its records.
    pub name: String,
    /// The parsed name.
    pub kind: FilterKind,
    /// Named with `-batched`: queries go through SuRF's batch interface
    /// (`may_contain_batch`, `may_contain_range_batch`), 64 a call.
    pub batched: bool,
    /// Named with `+<scheme>`: a HOPE encoder in front of the SuRF.
    pub scheme: Option<Scheme>,
}

/// Parses a comma-separated list of filter names; an empty list or a name listed twice is an
/// error.
pub fn parse_indexes(list: &str) -> Result<Vec<FilterIndex>, String> {
    let mut out: Vec<FilterIndex> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if out.iter().any(|f| f.name == name) {
            return Err(format!("filter `{name}` is listed twice"));
        }
        let (plain, scheme) = match name.split_once('+') {
            Some((p, s)) => (
                p,
                Some(
                    Scheme::from_name(s)
                        .ok_or_else(|| format!("filter `{name}`: unknown HOPE scheme `{s}`"))?,
                ),
            ),
            None => (name, None),
        };
        let (base, batched) = match plain.strip_suffix("-batched") {
            Some(base) => (base, true),
            None => (plain, false),
        };
        let kind: FilterKind = base.parse()?;
        if scheme.is_some() && (batched || matches!(kind, FilterKind::Bloom(_))) {
            return Err(format!(
                "filter `{name}`: a HOPE encoder goes in front of a one-query-per-call SuRF only"
            ));
        }
        if batched && matches!(kind, FilterKind::Bloom(_)) {
            return Err(format!(
                "filter `{name}`: only SuRF filters have a batched query interface"
            ));
        }
        out.push(FilterIndex {
            name: name.to_string(),
            kind,
            batched,
            scheme,
        });
    }
    if out.is_empty() {
        return Err("--index needs at least one filter".into());
    }
    Ok(out)
}

/// A kind of query workload (ordered as the thesis shows them: point, range, mixed).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum QueryKind {
    /// `may_contain(K)`.
    Point,
    /// `may_contain_range` over the range built from `K`.
    Range,
    /// Point and range queries alternating (point first), half each.
    Mixed,
}

impl QueryKind {
    /// Every kind, in the order the thesis shows them.
    pub const ALL: [QueryKind; 3] = [QueryKind::Point, QueryKind::Range, QueryKind::Mixed];

    /// `point`, `range` or `mixed`.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::Point => "point",
            QueryKind::Range => "range",
            QueryKind::Mixed => "mixed",
        }
    }

    /// The workload name of its records: `filter-point`, `filter-range`, `filter-mixed`.
    pub fn workload(self) -> &'static str {
        match self {
            QueryKind::Point => "filter-point",
            QueryKind::Range => "filter-range",
            QueryKind::Mixed => "filter-mixed",
        }
    }

    /// The kind of records of workload `w`, if `w` is a filter query workload.
    pub fn from_workload(w: &str) -> Option<QueryKind> {
        QueryKind::ALL.into_iter().find(|k| k.workload() == w)
    }
}

impl fmt::Display for QueryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for QueryKind {
    type Err = String;

    fn from_str(s: &str) -> Result<QueryKind, String> {
        QueryKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown query kind `{s}` (known: point, range, mixed)"))
    }
}

/// The range query of integer key `k`: `[k + 2^37, k + 2^38]`, both ends saturating at
/// `u64::MAX` (so the range never wraps around and is never inverted).
pub fn integer_range(k: u64) -> (u64, u64) {
    (k.saturating_add(1 << 37), k.saturating_add(1 << 38))
}

/// The exclusive end `K'` of the string range query `[K, K')`: `K` with its last byte
/// incremented. A last byte of `0xFF` cannot be incremented, so trailing `0xFF` bytes are
/// dropped first and the new last byte incremented (`ab\xFF` gives `ac`: the smallest string
/// above every extension of `ab\xFF`). `None` (unbounded above) when nothing is left: `K` is
/// empty or all `0xFF`.
pub fn string_range_end(k: &[u8]) -> Option<Vec<u8>> {
    let keep = k.iter().rposition(|&b| b != 0xFF)?;
    let mut end = k[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

/// One query, borrowing its keys from a [`QuerySet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query<'a> {
    /// Is `K` stored?
    Point(&'a [u8]),
    /// Is any stored key in `[start, end)` / `[start, end]` / `[start, ∞)`?
    Range {
        /// The included lower end.
        start: &'a [u8],
        /// The upper end.
        end: Bound<&'a [u8]>,
    },
}

/// How a query's upper end is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Point,
    /// Closed range: the end is the next key of `hi`.
    RangeIncluded,
    /// Half-open range: the end is the next key of `hi`.
    RangeExcluded,
    /// No upper end (takes no key of `hi`).
    RangeUnbounded,
}

/// Queries generated ahead of the timed loop, their keys back to back in query order so the
/// loop streams through them.
#[derive(Clone, Debug, Default)]
pub struct QuerySet {
    ops: Vec<Op>,
    /// The key of each point query, the start of each range query: one per query.
    lo: Keys,
    /// The upper ends of bounded range queries, in order.
    hi: Keys,
}

impl QuerySet {
    /// `ops` queries of `kind` whose keys are drawn uniformly from `keys` (the whole dataset),
    /// deterministic from `seed`. Every kind draws the same key sequence, so `mixed` asks the
    /// even-numbered point queries and the odd-numbered range queries. Range queries are
    /// integer ranges when `keys` are 8 bytes wide, string ranges otherwise.
    pub fn generate(keys: &Keys, kind: QueryKind, ops: usize, seed: u64) -> QuerySet {
        assert!(!keys.is_empty(), "queries need keys to draw from");
        let integer = keys.fixed_width() == Some(8);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed_f11e_0000_0001);
        let mut qs = QuerySet::default();
        for i in 0..ops {
            let k = keys.get(below(&mut rng, keys.len() as u64) as usize);
            let range = match kind {
                QueryKind::Point => false,
                QueryKind::Range => true,
                QueryKind::Mixed => i % 2 == 1,
            };
            if !range {
                qs.ops.push(Op::Point);
                qs.lo.push(k);
            } else if integer {
                let v = u64::from_be_bytes(k.try_into().expect("8-byte key"));
                let (lo, hi) = integer_range(v);
                qs.ops.push(Op::RangeIncluded);
                qs.lo.push(&lo.to_be_bytes());
                qs.hi.push(&hi.to_be_bytes());
            } else {
                qs.lo.push(k);
                match string_range_end(k) {
                    Some(end) => {
                        qs.ops.push(Op::RangeExcluded);
                        qs.hi.push(&end);
                    }
                    None => qs.ops.push(Op::RangeUnbounded),
                }
            }
        }
        qs
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when there is no query.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The queries in order.
    #[inline]
    pub fn iter(&self) -> QueryIter<'_> {
        QueryIter {
            set: self,
            next: 0,
            next_hi: 0,
        }
    }
}

/// Iterator over a [`QuerySet`]'s queries.
#[derive(Clone, Debug)]
pub struct QueryIter<'a> {
    set: &'a QuerySet,
    next: usize,
    next_hi: usize,
}

impl<'a> Iterator for QueryIter<'a> {
    type Item = Query<'a>;

    #[inline]
    fn next(&mut self) -> Option<Query<'a>> {
        let op = *self.set.ops.get(self.next)?;
        let lo = self.set.lo.get(self.next);
        self.next += 1;
        let mut hi = || {
            self.next_hi += 1;
            self.set.hi.get(self.next_hi - 1)
        };
        Some(match op {
            Op::Point => Query::Point(lo),
            Op::RangeIncluded => Query::Range {
                start: lo,
                end: Bound::Included(hi()),
            },
            Op::RangeExcluded => Query::Range {
                start: lo,
                end: Bound::Excluded(hi()),
            },
            Op::RangeUnbounded => Query::Range {
                start: lo,
                end: Bound::Unbounded,
            },
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.set.ops.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for QueryIter<'_> {}

/// The stored set: `keys.len() / 2` keys chosen at random (a partial Fisher–Yates shuffle,
/// deterministic from `seed`), sorted by bytes, as the filters are built from them.
pub fn choose_stored(keys: &Keys, seed: u64) -> Keys {
    let n = keys.len();
    let mut idx: Vec<usize> = (0..n).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed_f11e_0000_0002);
    let half = n / 2;
    for i in 0..half {
        let j = i + below(&mut rng, (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(half);
    idx.sort_unstable_by(|&a, &b| keys.get(a).cmp(keys.get(b)));
    keys.gather(idx)
}

/// The position of the first key of `sorted` that is `>= key`.
pub fn lower_bound(sorted: &Keys, key: &[u8]) -> usize {
    let (mut lo, mut hi) = (0, sorted.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if sorted.get(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The true answer to `q` over the stored keys `sorted` (in strictly increasing order).
pub fn truth(sorted: &Keys, q: Query<'_>) -> bool {
    match q {
        Query::Point(k) => {
            let i = lower_bound(sorted, k);
            i < sorted.len() && sorted.get(i) == k
        }
        Query::Range { start, end } => {
            let i = lower_bound(sorted, start);
            i < sorted.len()
                && match end {
                    Bound::Included(e) => sorted.get(i) <= e,
                    Bound::Excluded(e) => sorted.get(i) < e,
                    Bound::Unbounded => true,
                }
        }
    }
}

/// The true answers to all of `qs`.
pub fn truths(sorted: &Keys, qs: &QuerySet) -> Vec<bool> {
    qs.iter().map(|q| truth(sorted, q)).collect()
}

/// A filter's answers tallied against the truth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Queries answered.
    pub queries: u64,
    /// Queries answered `true` (maybe present).
    pub positives: u64,
    /// Queries whose true answer is negative.
    pub negatives: u64,
    /// Queries answered `true` whose true answer is negative.
    pub false_positives: u64,
    /// Queries answered `false` whose true answer is positive: must be zero.
    pub false_negatives: u64,
    /// The position of the first false negative.
    pub first_false_negative: Option<usize>,
}

impl Outcome {
    /// Tallies `answers` against `truths`, position by position.
    pub fn tally(answers: impl IntoIterator<Item = bool>, truths: &[bool]) -> Outcome {
        let mut o = Outcome::default();
        for (i, (answer, &truth)) in answers.into_iter().zip(truths).enumerate() {
            o.queries += 1;
            o.positives += u64::from(answer);
            if !truth {
                o.negatives += 1;
                o.false_positives += u64::from(answer);
            } else if !answer {
                o.false_negatives += 1;
                o.first_false_negative.get_or_insert(i);
            }
        }
        o
    }

    /// False positives over negative queries, in `[0, 1]`; `None` without negative queries.
    pub fn fpr(&self) -> Option<f64> {
        (self.negatives > 0).then(|| self.false_positives as f64 / self.negatives as f64)
    }
}

/// What the measurement asks of a filter.
pub trait QueryFilter {
    /// Whether [`range`](Self::range) means anything (a Bloom filter's does not).
    fn answers_ranges(&self) -> bool;
    /// False only when `key` is certainly not stored.
    fn point(&self, key: &[u8]) -> bool;
    /// False only when no stored key lies in `[start, end)`.
    fn range(&self, start: &[u8], end: Bound<&[u8]>) -> bool;
    /// Memory in bits per stored key.
    fn bits_per_key(&self) -> f64;

    /// The answer to `q`.
    #[inline]
    fn answer(&self, q: Query<'_>) -> bool {
        match q {
            Query::Point(k) => self.point(k),
            Query::Range { start, end } => self.range(start, end),
        }
    }
}

/// The size of a SuRF-backed filter, for the blanket [`QueryFilter`] impl below.
trait StoredBits {
    /// Memory in bits per stored key.
    fn stored_bits_per_key(&self) -> f64;
}

impl StoredBits for Surf {
    fn stored_bits_per_key(&self) -> f64 {
        Surf::bits_per_key(self)
    }
}

impl StoredBits for Hope<Surf> {
    /// The SuRF's bits and the dictionary's, per stored key.
    fn stored_bits_per_key(&self) -> f64 {
        let keys = self.inner().len().max(1) as f64;
        self.inner().bits_per_key() + self.encoder().dictionary_bytes() as f64 * 8.0 / keys
    }
}

/// Any range filter (a SuRF, with or without a HOPE encoder in front).
impl<F: RangeFilter + StoredBits> QueryFilter for F {
    fn answers_ranges(&self) -> bool {
        true
    }

    #[inline]
    fn point(&self, key: &[u8]) -> bool {
        self.may_contain(key)
    }

    #[inline]
    fn range(&self, start: &[u8], end: Bound<&[u8]>) -> bool {
        // `K` cannot be inferred from a pair of bounds (std implements `RangeBounds` for both
        // `(Bound<T>, Bound<T>)` and `(Bound<&T>, Bound<&T>)`): name it.
        self.may_contain_range((Bound::Included(start), end))
    }

    fn bits_per_key(&self) -> f64 {
        self.stored_bits_per_key()
    }
}

/// A Bloom filter (the `fastbloom` crate, SipHash-1-3 seeded from `--seed`, the optimal number
/// of hash functions for its size) over the stored keys.
#[derive(Clone, Debug)]
pub struct Bloom {
    filter: BloomFilter,
    keys: usize,
}

impl Bloom {
    /// A Bloom filter of about `bits_per_key` bits per key (whole 64-bit words, at least one)
    /// holding `keys`.
    pub fn build<'a>(
        bits_per_key: f64,
        keys: impl ExactSizeIterator<Item = &'a [u8]>,
        seed: u64,
    ) -> Bloom {
        let n = keys.len();
        let bits = (bits_per_key * n as f64).round().max(64.0) as usize;
        let mut filter = BloomFilter::with_num_bits(bits)
            .seed(&u128::from(seed))
            .expected_items(n);
        for k in keys {
            filter.insert(k);
        }
        Bloom { filter, keys: n }
    }
}

impl QueryFilter for Bloom {
    fn answers_ranges(&self) -> bool {
        false
    }

    #[inline]
    fn point(&self, key: &[u8]) -> bool {
        self.filter.contains(key)
    }

    /// A Bloom filter cannot rule a range out: always `true` (never asked by [`Prepared`]).
    fn range(&self, _start: &[u8], _end: Bound<&[u8]>) -> bool {
        true
    }

    fn bits_per_key(&self) -> f64 {
        self.filter.num_bits() as f64 / self.keys.max(1) as f64
    }
}

/// A built filter of either kind.
#[derive(Debug)]
enum Built {
    Surf(Box<Surf>),
    Bloom(Bloom),
    Encoded(Box<Hope<Surf>>, HopeFacts),
}

impl Built {
    fn build(
        kind: FilterKind,
        scheme: Option<Scheme>,
        stored: &Keys,
        bloom_bits: f64,
        seed: u64,
    ) -> Result<Built> {
        if let (Some(scheme), FilterKind::Surf(k)) = (scheme, kind) {
            let sample = crate::ours::hope::sample(stored);
            let enc = Encoder::build(scheme, sample.iter().copied())?;
            let mut b = SurfBuilder::new(k)?;
            let mut buf = Vec::new();
            for key in stored.iter() {
                buf.clear();
                enc.encode_into(key, &mut buf);
                b.push(&buf)?;
            }
            let surf = b.finish()?;
            // The encoder's figures are measured after the timed build (see `measure`).
            let facts = HopeFacts {
                compression_rate: f64::NAN,
                encode_ns_per_byte: f64::NAN,
                dictionary_bytes: enc.dictionary_bytes() as u64,
            };
            return Ok(Built::Encoded(
                Box::new(Hope::new(Arc::new(enc), surf)),
                facts,
            ));
        }
        Ok(match kind {
            FilterKind::Surf(k) => {
                let mut b = SurfBuilder::new(k)?;
                for key in stored.iter() {
                    b.push(key)?;
                }
                Built::Surf(Box::new(b.finish()?))
            }
            FilterKind::Bloom(_) => Built::Bloom(Bloom::build(bloom_bits, stored.iter(), seed)),
        })
    }

    fn filter(&self) -> &dyn QueryFilter {
        match self {
            Built::Surf(s) => s.as_ref(),
            Built::Bloom(b) => b,
            Built::Encoded(h, _) => h.as_ref(),
        }
    }

    fn hope_facts(&self) -> Option<HopeFacts> {
        match self {
            Built::Encoded(_, f) => Some(*f),
            _ => None,
        }
    }

    /// The timed loop, monomorphised per filter type.
    fn time(&self, qs: &QuerySet, batched: bool) -> (f64, u64) {
        match self {
            Built::Surf(s) if batched => timed_batch(s.as_ref(), qs),
            Built::Surf(s) => timed_loop(s.as_ref(), qs),
            Built::Bloom(b) => timed_loop(b, qs),
            Built::Encoded(h, _) => timed_loop(h.as_ref(), qs),
        }
    }
}

/// Runs every query of `qs` on `filter`; returns the seconds taken and the number of `true`
/// answers.
#[inline(never)]
fn timed_loop<F: QueryFilter>(filter: &F, qs: &QuerySet) -> (f64, u64) {
    let filter = black_box(filter);
    let start = Instant::now();
    let mut positives = 0u64;
    for q in qs.iter() {
        positives += u64::from(filter.answer(q));
    }
    let secs = start.elapsed().as_secs_f64();
    (secs, black_box(positives))
}

/// Like [`timed_loop`], but through SuRF's batch interface: point queries go to
/// `Surf::may_contain_batch` and range queries to `Surf::may_contain_range_batch`, 64 a call
/// (queries are split by kind and gathered before the clock starts).
#[inline(never)]
fn timed_batch(filter: &Surf, qs: &QuerySet) -> (f64, u64) {
    let mut points = Vec::new();
    let mut ranges = Vec::new();
    for q in qs.iter() {
        match q {
            Query::Point(k) => points.push(k),
            Query::Range { start, end } => ranges.push((Bound::Included(start), end)),
        }
    }
    let filter = black_box(filter);
    let mut out = [false; 64];
    let start = Instant::now();
    let mut positives = 0u64;
    for chunk in points.chunks(64) {
        let out = &mut out[..chunk.len()];
        filter.may_contain_batch(chunk, out);
        positives += out.iter().map(|&b| u64::from(b)).sum::<u64>();
    }
    for chunk in ranges.chunks(64) {
        let out = &mut out[..chunk.len()];
        filter.may_contain_range_batch(chunk, out);
        positives += out.iter().map(|&b| u64::from(b)).sum::<u64>();
    }
    let secs = start.elapsed().as_secs_f64();
    (secs, black_box(positives))
}

/// One filter of a [`FilterSpec`], ready in a child process: the dataset's stored half, every
/// query set with its ground truth, and the filter to build on `load`.
#[derive(Debug)]
pub struct Prepared {
    /// Seed of the Bloom filters' hashing.
    seed: u64,
    /// This child's filter.
    filter: FilterIndex,
    /// Bits per key of a Bloom filter (its own, or the SuRF's before it for `bloom`).
    bloom_bits: f64,
    /// Notes for the parent: query shares, the matched Bloom size.
    notes: Vec<String>,
    dataset: String,
    stored: Keys,
    workloads: Vec<(QueryKind, QuerySet, Vec<bool>)>,
    built: Option<Built>,
    /// Per query kind: the checked outcome, from the first time it ran.
    outcomes: Vec<Option<Outcome>>,
}

impl Prepared {
    /// Loads the dataset, chooses the stored half and prepares the queries and their truths
    /// for filter `name` of `spec`. A `bloom` also builds the SuRF before it in the list, untimed,
    /// to take its size.
    pub fn new(spec: &FilterSpec, name: &str) -> Result<Prepared> {
        let filters = parse_indexes(&spec.indexes.join(",")).map_err(anyhow::Error::msg)?;
        let at = filters
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| anyhow::anyhow!("filter {name:?} is not in the experiment"))?;
        let t = Instant::now();
        let ds = crate::dataset::load(&spec.dataset, spec.keys, spec.seed)?;
        ensure!(
            ds.keys.len() >= 2,
            "the filter benchmark stores half of the keys: --keys must be at least 2"
        );
        let stored = choose_stored(&ds.keys, spec.seed);
        let mut notes = Vec::new();
        let workloads: Vec<(QueryKind, QuerySet, Vec<bool>)> = spec
            .queries
            .iter()
            .map(|&kind| {
                let qs = QuerySet::generate(&ds.keys, kind, spec.ops, spec.seed);
                let truth = truths(&stored, &qs);
                // The share of positive ranges depends on the key density: the thesis' integer
                // ranges hold a key 46% of the time among 50M stored keys, far less among fewer.
                let pos = truth.iter().filter(|&&t| t).count();
                notes.push(format!(
                    "{kind}: {:.1}% of the queries have a positive answer",
                    100.0 * pos as f64 / truth.len().max(1) as f64
                ));
                (kind, qs, truth)
            })
            .collect();
        let filter = filters[at].clone();
        let bloom_bits = match filter.kind {
            FilterKind::Bloom(Some(b)) => f64::from(b),
            FilterKind::Bloom(None) => {
                let before = filters[..at]
                    .iter()
                    .rev()
                    .find(|f| matches!(f.kind, FilterKind::Surf(_)));
                match before {
                    Some(s) => {
                        let surf = Built::build(s.kind, s.scheme, &stored, 0.0, spec.seed)?;
                        let bits = surf.filter().bits_per_key();
                        notes.push(format!(
                            "{name}: {bits:.2} bits per key, the size of {} before it",
                            s.name
                        ));
                        bits
                    }
                    None => {
                        notes.push(format!(
                            "{name}: {BLOOM_DEFAULT_BITS:.2} bits per key (no SuRF before it \
                             to match)"
                        ));
                        BLOOM_DEFAULT_BITS
                    }
                }
            }
            FilterKind::Surf(_) => 0.0,
        };
        eprintln!(
            "{name}: {} of {} keys of {} stored; {} queries per kind; prepared in {:.1} s",
            stored.len(),
            ds.keys.len(),
            ds.name,
            spec.ops,
            t.elapsed().as_secs_f64()
        );
        Ok(Prepared {
            seed: spec.seed,
            outcomes: vec![None; workloads.len()],
            filter,
            bloom_bits,
            notes,
            dataset: ds.name.clone(),
            stored,
            workloads,
            built: None,
        })
    }

    /// Answers `driver`'s requests: `load` builds the filter (timed: the `build` record), `run`
    /// times query kind number `run` (its record carries the FPR). A false negative is an error
    /// naming the query: a filter must never deny a stored key.
    pub fn serve(mut self, driver: &mut dyn Driver) -> Result<()> {
        while let Some(request) = driver.next()? {
            match request {
                Request::Load => {
                    self.built = None;
                    let t = Instant::now();
                    let mut built = Built::build(
                        self.filter.kind,
                        self.filter.scheme,
                        &self.stored,
                        self.bloom_bits,
                        self.seed,
                    )
                    .map_err(|e| anyhow::anyhow!("building {}: {e}", self.filter.name))?;
                    let secs = t.elapsed().as_secs_f64();
                    if let Built::Encoded(h, facts) = &mut built {
                        *facts = crate::ours::hope::measure(h.encoder(), &self.stored).1;
                    }
                    let n = self.stored.len();
                    let r = self.record(&built, FilterOp::Build, n, secs, None);
                    let mut notes = std::mem::take(&mut self.notes);
                    notes.push(format!(
                        "{}: built from {n} keys in {secs:.2} s, {:.2} bits per key",
                        self.filter.name,
                        built.filter().bits_per_key()
                    ));
                    self.built = Some(built);
                    driver.loaded(Some(Record::Filter(r)), notes)?;
                }
                Request::Run { run, .. } => {
                    let reply = self.run(run)?;
                    driver.reply(reply)?;
                }
            }
        }
        Ok(())
    }

    fn run(&mut self, run: usize) -> Result<Reply> {
        let name = &self.filter.name;
        let built = self
            .built
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{name}: asked to query before it was built"))?;
        let (kind, qs, truth) = self
            .workloads
            .get(run)
            .ok_or_else(|| anyhow::anyhow!("{name}: no query workload #{run}"))?;
        if *kind != QueryKind::Point && !built.filter().answers_ranges() {
            return Ok(Reply::Skipped(format!(
                "{name}: {kind} queries skipped: a Bloom filter answers point queries only"
            )));
        }
        let outcome = match self.outcomes[run] {
            Some(o) => o,
            None => {
                let f = built.filter();
                let o = Outcome::tally(qs.iter().map(|q| f.answer(q)), truth);
                if let Some(at) = o.first_false_negative {
                    let q = qs.iter().nth(at).expect("query exists");
                    bail!(
                        "{name} gave {} false negative(s) on {} {kind} queries over {} (the \
                         first: query #{at}, {}): a filter must never deny a stored key; this \
                         is a bug in the library",
                        o.false_negatives,
                        o.queries,
                        self.dataset,
                        describe(q)
                    );
                }
                self.outcomes[run] = Some(o);
                o
            }
        };
        let (secs, positives) = built.time(qs, self.filter.batched);
        ensure!(
            positives == outcome.positives,
            "{name}: {positives} positive answers in the timed loop, {} in the checking pass over \
             the same {kind} queries: the filter is not deterministic",
            outcome.positives
        );
        let r = self.record(built, FilterOp::Query(*kind), qs.len(), secs, outcome.fpr());
        Ok(Reply::Record(Record::Filter(r)))
    }

    /// A record of this filter. `bytes_per_key` is implied by `bits_per_key`: a filter keeps no
    /// keys, so nothing is overhead over raw keys.
    fn record(
        &self,
        built: &Built,
        op: FilterOp,
        ops: usize,
        secs: f64,
        fpr: Option<f64>,
    ) -> FilterRecord {
        let secs = secs.max(1e-9);
        FilterRecord {
            m: Measurement {
                index: self.filter.name.clone(),
                dataset: self.dataset.clone(),
                keys: self.stored.len() as u64,
                ops: ops as u64,
                seconds: secs,
                mops: ops as f64 / secs / 1e6,
                ns_per_op: secs * 1e9 / ops.max(1) as f64,
                ..Measurement::default()
            },
            filter: self.filter.kind,
            batched: self.filter.batched,
            scheme: self.filter.scheme,
            op,
            fpr,
            bits_per_key: built.filter().bits_per_key(),
            hope: built.hope_facts(),
        }
    }
}

/// A query for an error message, keys in hex.
fn describe(q: Query<'_>) -> String {
    let hex = |k: &[u8]| k.iter().map(|b| format!("{b:02x}")).collect::<String>();
    match q {
        Query::Point(k) => format!("point {}", hex(k)),
        Query::Range { start, end } => match end {
            Bound::Included(e) => format!("range [{}, {}]", hex(start), hex(e)),
            Bound::Excluded(e) => format!("range [{}, {})", hex(start), hex(e)),
            Bound::Unbounded => format!("range [{}, ∞)", hex(start)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ranges_saturate() {
        assert_eq!(integer_range(0), (1 << 37, 1 << 38));
        assert_eq!(integer_range(u64::MAX - (1 << 37)), (u64::MAX, u64::MAX));
        assert_eq!(
            integer_range(u64::MAX - (1 << 37) - 5),
            (u64::MAX - 5, u64::MAX)
        );
        assert_eq!(integer_range(u64::MAX), (u64::MAX, u64::MAX));
        let (lo, hi) = integer_range(u64::MAX - (1 << 38) + 1);
        assert!(lo <= hi && hi == u64::MAX);
    }

    #[test]
    fn string_range_ends() {
        assert_eq!(
            string_range_end(b"org.acm@sigmod"),
            Some(b"org.acm@sigmoe".to_vec())
        );
        // The 0xFF carry: trailing 0xFF bytes go, the byte before them is incremented.
        assert_eq!(string_range_end(b"ab\xFF"), Some(b"ac".to_vec()));
        assert_eq!(string_range_end(b"a\x00\xFF\xFF"), Some(b"a\x01".to_vec()));
        assert_eq!(string_range_end(b"\xFEz\xFF"), Some(b"\xFE{".to_vec()));
        // Nothing left to increment: unbounded above.
        assert_eq!(string_range_end(b"\xFF\xFF\xFF"), None);
        assert_eq!(string_range_end(b""), None);
    }

    #[test]
    fn string_range_is_every_extension_of_the_key() {
        // [K, K') holds K and everything that starts with K, and nothing else nearby.
        let k = b"ab\xFF";
        let end = string_range_end(k).unwrap();
        for inside in [&b"ab\xFF"[..], b"ab\xFF\x00", b"ab\xFF\xFF\xFF"] {
            assert!(inside >= &k[..] && inside < &end[..], "{inside:?}");
        }
        for outside in [&b"ab\xFE"[..], b"ac", b"ac\x00"] {
            assert!(!(outside >= &k[..] && outside < &end[..]), "{outside:?}");
        }
    }

    #[test]
    fn names_parse() {
        let p = |s: &str| s.parse::<FilterKind>();
        assert_eq!(p("surf-base"), Ok(FilterKind::Surf(SurfKind::Base)));
        assert_eq!(p("surf-hash-8"), Ok(FilterKind::Surf(SurfKind::Hash(8))));
        assert_eq!(p("surf-hash-64"), Ok(FilterKind::Surf(SurfKind::Hash(64))));
        assert_eq!(p("surf-real-1"), Ok(FilterKind::Surf(SurfKind::Real(1))));
        assert_eq!(
            p("surf-mixed-4-2"),
            Ok(FilterKind::Surf(SurfKind::Mixed { hash: 4, real: 2 }))
        );
        assert_eq!(p("bloom"), Ok(FilterKind::Bloom(None)));
        assert_eq!(p("bloom-14"), Ok(FilterKind::Bloom(Some(14))));
        for bad in [
            "surf-hash-0",
            "surf-hash-65",
            "surf-real-0",
            "surf-real-65",
            "surf-hash-",
            "surf-hash-x",
            "surf-hash-+8",
            "surf-hash-08",
            "surf-mixed-4",
            "surf-mixed-0-4",
            "surf-mixed-33-1",
            "bloom-0",
            "bloom-65",
            "surf",
            "surf-hash",
            "btreemap",
            "",
        ] {
            assert!(p(bad).is_err(), "{bad} accepted");
        }
        let e = p("cuckoo").unwrap_err();
        assert!(e.contains(r#"unknown filter "cuckoo""#), "{e}");
        let e = p("surf-hsh-8").unwrap_err();
        assert!(e.contains(r#"did you mean "surf-hash-8"?"#), "{e}");
        assert!(p("surf-hash-65").unwrap_err().contains("1 to 64"));
    }

    #[test]
    fn lists_parse() {
        let l = parse_indexes("surf-base, bloom ,surf-mixed-2-2").unwrap();
        let names: Vec<&str> = l.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["surf-base", "bloom", "surf-mixed-2-2"]);
        assert!(parse_indexes("surf-base,surf-base").is_err());
        assert!(parse_indexes(" , ").is_err());
        assert!(parse_indexes("surf-base,nope").is_err());
        assert!(parse_indexes(DEFAULT_INDEXES).is_ok());
        assert_eq!("range".parse::<QueryKind>(), Ok(QueryKind::Range));
        assert!("count".parse::<QueryKind>().is_err());
        for k in QueryKind::ALL {
            assert_eq!(QueryKind::from_workload(k.workload()), Some(k));
        }
        assert_eq!(QueryKind::from_workload("build"), None);
    }

    fn store(keys: &[&[u8]]) -> Keys {
        keys.iter().copied().collect()
    }

    #[test]
    fn ground_truth_and_fpr_on_a_tiny_set() {
        let stored = store(&[b"b", b"d", b"da", b"f"]);
        let t = |q| truth(&stored, q);
        assert!(t(Query::Point(b"d")));
        assert!(!t(Query::Point(b"c")));
        assert!(!t(Query::Point(b"g")));
        assert!(!t(Query::Point(b"")));
        let range = |start: &'static [u8], end| Query::Range { start, end };
        assert!(t(range(b"c", Bound::Excluded(b"e"))));
        assert!(!t(range(b"db", Bound::Excluded(b"f"))), "end excluded");
        assert!(t(range(b"db", Bound::Included(b"f"))), "end included");
        assert!(!t(range(b"g", Bound::Unbounded)));
        assert!(t(range(b"e", Bound::Unbounded)));
        assert!(!t(range(b"c", Bound::Excluded(b"c\x00"))));

        // Truths: + - + - - ; answers: + + + - + -> 2 false positives of 3 negatives.
        let truths = [true, false, true, false, false];
        let o = Outcome::tally([true, true, true, false, true], &truths);
        assert_eq!(
            (o.queries, o.positives, o.negatives, o.false_positives),
            (5, 4, 3, 2)
        );
        assert_eq!(o.false_negatives, 0);
        assert_eq!(o.fpr(), Some(2.0 / 3.0));
        // A denied positive is a false negative, and the first one is remembered.
        let o = Outcome::tally([true, false, false, false, false], &truths);
        assert_eq!((o.false_negatives, o.first_false_negative), (1, Some(2)));
        assert_eq!(o.fpr(), Some(0.0));
        assert_eq!(Outcome::tally([true], &[true]).fpr(), None);
    }

    #[test]
    fn query_sets_are_deterministic_and_shaped_by_kind() {
        let ds = crate::dataset::load("rand-8", 1000, 3).unwrap();
        let a = QuerySet::generate(&ds.keys, QueryKind::Mixed, 100, 9);
        let b = QuerySet::generate(&ds.keys, QueryKind::Mixed, 100, 9);
        let p = QuerySet::generate(&ds.keys, QueryKind::Point, 100, 9);
        assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        assert_eq!(a.len(), 100);
        for (i, (m, pt)) in a.iter().zip(p.iter()).enumerate() {
            match m {
                Query::Point(k) => {
                    assert_eq!(i % 2, 0);
                    assert_eq!(Query::Point(k), pt, "same key sequence");
                }
                Query::Range { start, end } => {
                    assert_eq!(i % 2, 1);
                    let Query::Point(k) = pt else { panic!() };
                    let k = u64::from_be_bytes(k.try_into().unwrap());
                    let (lo, hi) = integer_range(k);
                    assert_eq!(start, lo.to_be_bytes());
                    assert_eq!(end, Bound::Included(&hi.to_be_bytes()[..]));
                }
            }
        }
        let stored = choose_stored(&ds.keys, 9);
        assert_eq!(stored.len(), 500);
        assert!(stored.iter().zip(stored.iter().skip(1)).all(|(a, b)| a < b));
        assert_eq!(stored, choose_stored(&ds.keys, 9));
        assert_ne!(stored, choose_stored(&ds.keys, 10));
    }

    /// Serves every filter of `spec` in this process, as children would: load, then each
    /// query kind.
    fn serve_all(spec: &FilterSpec) -> crate::exec::RunAll {
        let mut all = crate::exec::RunAll::default();
        for name in &spec.indexes {
            let mut requests = vec![Request::Load];
            requests.extend((0..spec.queries.len()).map(|run| Request::Run { run, threads: 1 }));
            let mut driver = crate::exec::RunAll::with_requests(requests);
            Prepared::new(spec, name)
                .unwrap()
                .serve(&mut driver)
                .unwrap();
            all.records.extend(driver.records);
            all.notes.extend(driver.notes);
        }
        all
    }

    #[test]
    fn end_to_end_has_no_false_negatives() {
        for dataset in ["rand-8", "email"] {
            let spec = FilterSpec {
                indexes: ["surf-base", "surf-hash-8", "surf-real-8", "bloom"]
                    .map(String::from)
                    .to_vec(),
                dataset: dataset.into(),
                keys: 4000,
                queries: QueryKind::ALL.to_vec(),
                ops: 3000,
                seed: 7,
                rounds: 1,
            };
            let res = serve_all(&spec);
            let rows = |w: &str| {
                res.records
                    .iter()
                    .filter(|r| r.workload_name() == w)
                    .count()
            };
            assert_eq!(rows("build"), 4);
            assert_eq!(rows("filter-point"), 4);
            assert_eq!(rows("filter-range"), 3, "{dataset}: Bloom skips ranges");
            assert_eq!(rows("filter-mixed"), 3);
            for r in &res.records {
                let f = r.as_filter().unwrap();
                assert_eq!(f.m.keys, 2000);
                assert!(f.bits_per_key > 0.0 && f.bits_per_key.is_finite(), "{r:?}");
                if f.op == FilterOp::Build {
                    assert!(f.fpr.is_none());
                } else {
                    assert_eq!(f.m.ops, 3000);
                    let fpr = f.fpr.expect("negative queries exist");
                    assert!((0.0..=1.0).contains(&fpr), "{r:?}");
                }
            }
            // The matched Bloom filter has the size of surf-real-8 before it.
            let bpk = |index: &str| {
                res.records
                    .iter()
                    .filter_map(Record::as_filter)
                    .find(|r| r.m.index == index && r.op == FilterOp::Build)
                    .unwrap()
                    .bits_per_key
            };
            assert!((bpk("bloom") - bpk("surf-real-8")).abs() < 0.1);
            assert!(res.notes.iter().any(|n| n.contains("skipped")));
            assert!(
                res.notes
                    .iter()
                    .any(|n| n.contains("the size of surf-real-8"))
            );
        }
    }

    #[test]
    fn bloom_has_its_size_and_no_false_negative() {
        let ds = crate::dataset::load("email", 2000, 1).unwrap();
        let stored = choose_stored(&ds.keys, 1);
        let b = Bloom::build(12.0, stored.iter(), 1);
        assert!((b.bits_per_key() - 12.0).abs() < 0.1);
        assert!(stored.iter().all(|k| b.point(k)));
        assert!(!b.answers_ranges());
    }
}
