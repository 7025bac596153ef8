//! The hybrid index: a small dynamic stage for writes in front of a compact static stage that
//! holds the bulk of the keys, merged in batches (memory-efficient-search-trees.txt,
//! chapter 5).
//!
//! ```
//! use mlpdex::hybrid::{Config, Hybrid};
//!
//! // A Cuckoo Trie in front of a compact ART (the defaults), merging whenever the dynamic
//! // stage reaches a tenth of the static one.
//! let mut h = Hybrid::new();
//! for i in 0u64..100_000 {
//!     h.insert(&i.to_be_bytes(), i)?;
//! }
//! assert_eq!(h.get(&7u64.to_be_bytes()), Some(7));
//! assert_eq!(h.insert(&7u64.to_be_bytes(), 70)?, Some(7)); // an update
//! assert_eq!(h.remove(&8u64.to_be_bytes()), Some(8)); // a delete
//! assert_eq!(h.len(), 99_999);
//! assert!(h.stats().merges > 0);
//!
//! // Ranges merge both stages, from both ends.
//! let near: Vec<u64> = h.range(5u64.to_be_bytes()..10u64.to_be_bytes()).map(|(_, v)| *v).collect();
//! assert_eq!(near, [5, 6, 70, 9]);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! A writable ordered index whose memory matters: most of its keys live in a static map that
//! takes a fraction of a dynamic map's memory, so the whole index does too, while reads cost
//! about what the static map's cost and writes what the dynamic stage's cost plus merges.
//! Measured against the dynamic stage alone: [`docs/results/hybrid.md`](../../../../docs/results/hybrid.md)
//! (10M keys) and [`docs/results/hybrid-50m.md`](../../../../docs/results/hybrid-50m.md) (50M;
//! its rand-8 reads in three rounds:
//! [`docs/results/hybrid-50m-reads.md`](../../../../docs/results/hybrid-50m-reads.md));
//! merge time against size, with charts:
//! [`docs/results/hybrid-merge.md`](../../../../docs/results/hybrid-merge.md). For many
//! threads, and merges that no read or write waits for, see [`ConcurrentHybrid`].
//!
//! When not to use it: for write-heavy loads that cannot afford the merges (each merge
//! rebuilds the static stage, so every key is rewritten about `ratio + 1` times over its
//! life, the thesis' insert-only cost), or when every write must finish in bounded time
//! (a merge runs inside the write that triggers it: use [`ConcurrentHybrid`]).
//!
//! Which static stage (same tables): the compact ART, the default, reads fastest, string keys
//! above all; the compact B-tree takes the least memory on integer keys and merges fastest
//! when keys rise (it copies its leaves), but reads long keys sharing long prefixes (e-mail
//! addresses) more slowly than the Cuckoo Trie alone; the FST takes the least memory on such
//! keys and merges slowest (its build).
//!
//! # What it is
//!
//! - **Two stages** (§5.1): writes go to the dynamic stage `D`, any mlpdex ordered map (the
//!   [Cuckoo Trie](crate::cuckoo_trie) by default). The static stage `S` is an
//!   [`Fst`](crate::fst::Fst), a [`CompactBTree`](crate::compact_btree::CompactBTree) or a
//!   [`CompactArt`] (the default), or any [`StaticStage`].
//! - **Updates and deletes** of keys in the static stage are recorded in the dynamic stage, as
//!   a new value or a tombstone ([`Slot`]), and applied by the next merge; a read looks at the
//!   dynamic stage first, so it never returns a deleted or stale value.
//! - **A Bloom filter** over the dynamic stage's keys lets a point read whose key it rules
//!   out read the static stage only (§5.1, about 1% false positives at 10 bits a key).
//! - **A filter over the static stage's keys** (beyond the thesis): an insert of a key new to
//!   the dynamic stage must tell a new key from an update of a static one, and reading the
//!   static stage for that misses for every new key (a third of an insert on long string
//!   keys). The static stage's largest key rules out every key of a rising load, and a
//!   second Bloom filter, [`STATIC_FILTER_BITS`] (4) bits a key, about 85% of the others;
//!   [`Hybrid::set_static_filter_bits`] trades its memory against those reads (0: none). It
//!   is grown by the inserts and rebuilt from the static stage by the merge after it fills
//!   (at 60% growth steps), so it costs between a half and four fifths of a byte a key.
//! - **Merge-all with a ratio trigger** (§5.2.2): when the dynamic stage holds at least
//!   `1 / ratio` as many entries as the static one (and at least [`Config::min_merge`]), the
//!   write merges every entry into a new static stage, streaming both stages in key order
//!   into the static map's builder (§5.2.1); the compact ART instead merges as a trie,
//!   copying whole every subtree no new key reaches, and the compact B-tree copies whole
//!   every leaf whose keys keep their places (all but the last when keys only rise). The extra memory a merge needs is the
//!   new static stage while the old one still exists, plus the builder's working set (one
//!   open node per level) and, for the compact ART, a flat copy of the dynamic stage's keys
//!   (about a tenth of the index's keys at ratio 10); [`MergeStats`] reports both static
//!   stages' sizes.
//! - **Secondary indexes** (§5.3.5): [`Secondary`] maps a key to a set of values, each pair
//!   one hybrid key (the key escaped, a terminator, the value), so a key's values are one
//!   range and a trie stage stores the key once.
//!
//! # Contract
//!
//! - Keys are byte strings in lexicographic order, every key legal (empty, 0x00/0xFF bytes,
//!   prefixes of each other, long), as in each stage.
//! - `insert` and `remove` return the previous value, as `BTreeMap`'s do: an insert of a new
//!   key reads the static stage to tell a new key from an update (the thesis' uniqueness
//!   check), unless the static-key filter rules the key out.
//! - Single-threaded (`&mut self` writes); `Hybrid` is `Send + Sync` when its stages are.

#[forbid(unsafe_code)]
mod bloom;
pub mod concurrent;
mod cursor;
mod secondary;
mod stage;
mod static_filter;

use core::fmt;
use core::ops::Bound;
use std::time::{Duration, Instant};

pub use concurrent::ConcurrentHybrid;
pub use cursor::{Cursor, Range};
pub use secondary::{Pairs, Secondary, Values};
pub use stage::{DynamicStage, StaticStage};

use crate::Error;
use crate::KeyRange;
use crate::api::{ByValue, OrderedMap, RangeCursor};
use crate::compact_art::CompactArt;
use crate::cuckoo_trie::CuckooTrie;
use crate::key::is_empty_range;
use bloom::Bloom;
use static_filter::StaticFilter;

/// What the dynamic stage holds for a key: its value, or a tombstone that hides the static
/// stage's entry until the next merge removes both.
///
/// ```
/// use mlpdex::hybrid::{Hybrid, Slot};
///
/// let mut h = Hybrid::new();
/// h.insert(b"k", 1)?;
/// h.merge()?;
/// h.remove(b"k");
/// assert_eq!(h.dynamic().get(b"k"), Some(&Slot::Deleted));
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The key's current value.
    Value(u64),
    /// The key is deleted.
    Deleted,
}

impl Slot {
    /// The slot as a merge's update: the value to store, or `None` to remove the key.
    #[inline]
    pub(crate) fn update(self) -> Option<u64> {
        match self {
            Slot::Value(v) => Some(v),
            Slot::Deleted => None,
        }
    }
}

/// When a [`Hybrid`] merges.
///
/// ```
/// use mlpdex::hybrid::{Config, Hybrid};
///
/// let mut h: Hybrid = Hybrid::with_config(Config { ratio: 4, min_merge: 16 })?;
/// for i in 0u64..100 {
///     h.insert(&i.to_be_bytes(), i)?;
/// }
/// assert!(h.stats().merges >= 3);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Merge when the dynamic stage holds at least `1 / ratio` as many entries as the static
    /// stage (the thesis' `R`, default 10; at least 1). Larger ratios keep the dynamic stage
    /// smaller (reads faster, memory lower) and merge more often (writes slower).
    pub ratio: u32,
    /// Never merge a dynamic stage of fewer entries than this (default 4,096; at least 1), so
    /// a small index does not rebuild its static stage on every write.
    pub min_merge: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ratio: 10,
            min_merge: 4096,
        }
    }
}

impl Config {
    /// [`Error::InvalidConfig`] when `ratio` or `min_merge` is 0.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.ratio == 0 || self.min_merge == 0 {
            return Err(Error::InvalidConfig {
                what: "ratio and min_merge must be at least 1",
            });
        }
        Ok(())
    }
}

/// What the merges of a [`Hybrid`] did so far.
///
/// ```
/// use mlpdex::hybrid::Hybrid;
///
/// let mut h = Hybrid::new();
/// h.insert(b"a", 1)?;
/// h.merge()?;
/// let s = h.stats();
/// assert_eq!((s.merges, s.last_entries), (1, 1));
/// assert!(s.last_new_bytes > 0);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Merges run.
    pub merges: u64,
    /// Time spent merging, in all (filter rebuilds included).
    pub total: Duration,
    /// The last merge's time (its filter rebuild excluded).
    pub last: Duration,
    /// The time the write that ran the last merge then spent rebuilding the filter over the
    /// static stage's keys (zero when the filter had room left; see
    /// [`Hybrid::set_static_filter_bits`]). Rebuilds come at steps of 60% growth, so they
    /// would make the merge times a staircase rather than a line: they are counted apart.
    pub last_filter: Duration,
    /// Entries the last merge wrote to the new static stage.
    pub last_entries: usize,
    /// Bytes of the static stage before and after the last merge: during a merge both exist,
    /// so `last_old_bytes + last_new_bytes` is the static stages' peak.
    pub last_old_bytes: usize,
    /// See `last_old_bytes`.
    pub last_new_bytes: usize,
    /// Merges that failed (the entries stay where they were, readable, and a later write
    /// tries again).
    pub failures: u64,
}

/// Bits per key of a [`Hybrid`]'s filter over its static stage's keys, by default.
pub const STATIC_FILTER_BITS: usize = 4;

/// A hybrid index (see the module docs): dynamic stage `D`, static stage `S`.
///
/// ```
/// use mlpdex::compact_btree::CompactBTree;
/// use mlpdex::cuckoo_trie::CuckooTrie;
/// use mlpdex::hybrid::{Config, Hybrid, Slot};
///
/// // Another static stage than the default compact ART.
/// let mut h: Hybrid<CuckooTrie<Slot>, CompactBTree> = Hybrid::with_config(Config::default())?;
/// h.insert(b"x", 7)?;
/// assert_eq!(h.get(b"x"), Some(7));
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Hybrid<D = CuckooTrie<Slot>, S = CompactArt> {
    dynamic: D,
    stat: S,
    bloom: Bloom,
    /// What inserts know of the static stage's keys without reading it.
    known: StaticFilter,
    /// Live keys.
    len: usize,
    config: Config,
    stats: MergeStats,
}

impl Hybrid {
    /// An empty index with the default stages and [`Config`].
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("the default configuration is valid")
    }
}

impl Default for Hybrid {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: DynamicStage, S: StaticStage> Hybrid<D, S> {
    /// An empty index with these stage types and `config`; [`Error::InvalidConfig`] when
    /// `ratio` or `min_merge` is 0.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let mut h = Hybrid {
            dynamic: D::default(),
            stat: S::empty()?,
            bloom: Bloom::with_capacity(config.min_merge),
            known: StaticFilter::new(STATIC_FILTER_BITS),
            len: 0,
            config,
            stats: MergeStats::default(),
        };
        h.known.rebuild(&h.stat, &h.dynamic);
        Ok(h)
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Bits per key of the filter over the static stage's keys ([`STATIC_FILTER_BITS`] unless
    /// set; 0 when there is none).
    pub fn static_filter_bits(&self) -> usize {
        self.known.bits()
    }

    /// Sets the bits per key of the filter over the static stage's keys, and builds it anew
    /// now (one pass over both stages); 0 drops it. The filter lets an insert of a new key
    /// skip reading the static stage to tell it from an update (see the module docs): at
    /// 4 bits (the default) it rules out about 85% of new keys, at 8 about 97%, for a half
    /// and a whole byte a key. [`Error::InvalidConfig`] above 32 bits.
    ///
    /// ```
    /// use mlpdex::hybrid::Hybrid;
    ///
    /// let mut h = Hybrid::new();
    /// h.insert(b"k", 1)?;
    /// h.merge()?; // builds the filter over the static stage's keys
    /// let with = h.memory_usage();
    /// h.set_static_filter_bits(0)?; // the least memory; inserts of new keys read the static stage
    /// assert!(h.memory_usage() < with);
    /// assert_eq!(h.insert(b"k", 2)?, Some(1));
    /// assert!(h.set_static_filter_bits(33).is_err());
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn set_static_filter_bits(&mut self, bits: usize) -> Result<(), Error> {
        if bits > 32 {
            return Err(Error::InvalidConfig {
                what: "a static-stage filter takes at most 32 bits a key",
            });
        }
        self.known.set_bits(bits, &self.stat, &self.dynamic);
        Ok(())
    }

    /// What the merges did so far.
    pub fn stats(&self) -> MergeStats {
        self.stats
    }

    /// The dynamic stage: values and tombstones of the keys written since the last merge.
    pub fn dynamic(&self) -> &D {
        &self.dynamic
    }

    /// The static stage: every key as of the last merge.
    pub fn static_stage(&self) -> &S {
        &self.stat
    }

    /// Entries in the dynamic stage (values and tombstones).
    pub fn dynamic_len(&self) -> usize {
        self.dynamic.len()
    }

    /// Entries in the static stage (some may be hidden by the dynamic stage).
    pub fn static_len(&self) -> usize {
        self.stat.len()
    }

    /// The dynamic stage entry of `key`, skipping the stage when the filter rules `key` out.
    #[inline]
    fn slot(&self, key: &[u8]) -> Option<Slot> {
        if !self.bloom.may_contain(key) {
            return None;
        }
        self.dynamic.get(key).map(|s| *s)
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        match self.slot(key) {
            Some(Slot::Value(v)) => Some(v),
            Some(Slot::Deleted) => None,
            None => self.stat.get(key),
        }
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `value` under `key`, returning the value it replaces; may merge (see the module
    /// docs). An error from the dynamic stage (out of memory) leaves the index unchanged; an
    /// error from a merge leaves the write done and the merge not.
    pub fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        // A new key's insert reads the static stage after writing the dynamic one: start
        // that read's first miss now, to overlap the write's.
        self.stat.prefetch(key);
        self.known.prefetch(key);
        let old = match self.dynamic.insert(key, Slot::Value(value))? {
            Some(Slot::Value(old)) => Some(old),
            Some(Slot::Deleted) => None,
            None => {
                self.bloom.insert(key);
                if self.known.record(key) {
                    self.stat.get(key)
                } else {
                    None
                }
            }
        };
        if old.is_none() {
            self.len += 1;
        }
        self.maybe_merge()?;
        Ok(old)
    }

    /// Removes `key`, returning its value. A key of the static stage is hidden by a
    /// tombstone until the next merge (which this call may run; if that merge fails, the
    /// remove stands and the merge is retried by the next write).
    pub fn remove(&mut self, key: &[u8]) -> Option<u64> {
        let old = match self.slot(key) {
            Some(Slot::Deleted) => return None,
            Some(Slot::Value(v)) => {
                if self.known.may_contain(key) && self.stat.get(key).is_some() {
                    self.dynamic.insert(key, Slot::Deleted).ok()?;
                } else {
                    self.dynamic.remove(key);
                }
                v
            }
            None => {
                let v = self.stat.get(key)?;
                self.dynamic.insert(key, Slot::Deleted).ok()?;
                self.bloom.insert(key);
                v
            }
        };
        self.len -= 1;
        let _ = self.maybe_merge();
        Some(old)
    }

    /// Removes every key, keeping the configuration.
    pub fn clear(&mut self) {
        self.dynamic.clear();
        if let Ok(empty) = S::empty() {
            self.stat = empty;
        }
        self.bloom = Bloom::with_capacity(self.config.min_merge);
        self.known.rebuild(&self.stat, &self.dynamic);
        self.len = 0;
    }

    /// The number of dynamic entries at which the next merge runs.
    fn threshold(&self) -> usize {
        (self.stat.len() / self.config.ratio as usize).max(self.config.min_merge)
    }

    fn maybe_merge(&mut self) -> Result<(), Error> {
        if self.dynamic.len() >= self.threshold() {
            self.merge()?;
        }
        Ok(())
    }

    /// Merges the dynamic stage into a new static stage now (merge-all), whatever the ratio:
    /// afterwards the dynamic stage is empty and every key is in the static stage. Nothing
    /// happens (and no merge is counted) when the dynamic stage is empty.
    pub fn merge(&mut self) -> Result<(), Error> {
        if self.dynamic.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let old_bytes = self.stat.memory_usage();
        // `take` bounds the iterator's size hint, which the static stage may reserve by.
        let updates =
            (self.dynamic.iter().take(self.dynamic.len())).map(|(k, slot)| (k, slot.update()));
        let new = match self.stat.merged(updates) {
            Ok(new) => new,
            Err(e) => {
                self.stats.failures += 1;
                return Err(e);
            }
        };
        debug_assert_eq!(new.len(), self.len);
        let new_bytes = new.memory_usage();
        self.stat = new;
        self.dynamic.clear();
        // Half the next merge's entries: refilling from an empty table grew it six or seven
        // times per merge (0.65x the Cuckoo Trie's load on rand-8, 10M keys), a table for
        // them all costs 1.7 bytes a key of memory (0.55x its memory); half: 0.73x and 0.51x.
        self.dynamic.reserve(self.threshold() / 2);
        self.bloom = Bloom::with_capacity(self.threshold());
        let full = self.known.note_static(&self.stat);
        let took = start.elapsed();
        let mut filter = Duration::ZERO;
        if full {
            self.known.rebuild(&self.stat, &self.dynamic);
            filter = start.elapsed() - took;
        }
        self.stats = MergeStats {
            merges: self.stats.merges + 1,
            total: self.stats.total + took + filter,
            last: took,
            last_filter: filter,
            last_entries: self.len,
            last_old_bytes: old_bytes,
            last_new_bytes: new_bytes,
            failures: self.stats.failures,
        };
        Ok(())
    }

    /// The entries within `range` in key order, both stages merged, from both ends; empty for
    /// an empty or inverted range. Keys are owned; for scans that copy nothing use
    /// [`cursor`](Self::cursor).
    pub fn range<R: KeyRange>(&self, range: R) -> Range<'_, D, S> {
        Range::new(self.cursor(range))
    }

    /// Every entry in key order.
    pub fn iter(&self) -> Range<'_, D, S> {
        self.range(..)
    }

    /// A lending cursor over the entries within `range`, from both ends.
    pub fn cursor<R: KeyRange>(&self, range: R) -> Cursor<'_, D, S> {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            let none = Bound::Excluded(&[][..]);
            return Cursor::new(self, none, none);
        }
        Cursor::new(self, start, end)
    }

    /// The first entry within `bound` from below (`≥ k`, `> k`, or the first entry).
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        let mut c = self.cursor((bound, Bound::Unbounded));
        c.next().map(|(k, v)| (k.to_vec(), v))
    }

    /// The last entry within `bound` from above (`≤ k`, `< k`, or the last entry).
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        let mut c = self.cursor((Bound::Unbounded, bound));
        c.next_back().map(|(k, v)| (k.to_vec(), v))
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(Vec<u8>, u64)> {
        self.lower_bound(Bound::Unbounded)
    }

    /// The largest key and its value.
    pub fn last(&self) -> Option<(Vec<u8>, u64)> {
        self.upper_bound(Bound::Unbounded)
    }

    /// Bytes of memory owned: both stages and both filters.
    pub fn memory_usage(&self) -> usize {
        size_of::<Self>()
            + self.dynamic.memory_usage()
            + self.stat.memory_usage()
            + self.bloom.bytes()
            + self.known.bytes()
    }
}

impl<D: DynamicStage, S: StaticStage> fmt::Debug for Hybrid<D, S> {
    /// The entries, as `BTreeMap` prints them (non-printable key bytes as `\xNN`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        let mut c = self.cursor(..);
        while let Some((k, v)) = RangeCursor::next(&mut c) {
            m.entry(&crate::key::Escaped(k), &v);
        }
        m.finish()
    }
}

impl<D: DynamicStage, S: StaticStage> OrderedMap<u64> for Hybrid<D, S> {
    type Key<'a>
        = Vec<u8>
    where
        Self: 'a;
    type Value<'a>
        = ByValue<u64>
    where
        Self: 'a;
    type Range<'a>
        = Range<'a, D, S>
    where
        Self: 'a;

    fn get(&self, key: &[u8]) -> Option<ByValue<u64>> {
        Hybrid::get(self, key).map(ByValue)
    }

    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        Hybrid::insert(self, key, value)
    }

    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        Hybrid::remove(self, key)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn range<R: KeyRange>(&self, range: R) -> Range<'_, D, S> {
        Hybrid::range(self, range)
    }

    fn memory_usage(&self) -> usize {
        Hybrid::memory_usage(self)
    }

    fn clear(&mut self) {
        Hybrid::clear(self)
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, ByValue<u64>)> {
        Hybrid::lower_bound(self, bound).map(|(k, v)| (k, ByValue(v)))
    }

    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, ByValue<u64>)> {
        Hybrid::upper_bound(self, bound).map(|(k, v)| (k, ByValue(v)))
    }
}

impl<D: DynamicStage, S: StaticStage> Extend<(Vec<u8>, u64)> for Hybrid<D, S> {
    /// Inserts every pair; panics only if the dynamic stage cannot get memory.
    fn extend<I: IntoIterator<Item = (Vec<u8>, u64)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(&k, v).expect("hybrid insert");
        }
    }
}

impl FromIterator<(Vec<u8>, u64)> for Hybrid {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, u64)>>(iter: I) -> Self {
        let mut h = Hybrid::new();
        h.extend(iter);
        h
    }
}

impl<'a, D: DynamicStage, S: StaticStage> IntoIterator for &'a Hybrid<D, S> {
    type Item = (Vec<u8>, ByValue<u64>);
    type IntoIter = Range<'a, D, S>;

    fn into_iter(self) -> Range<'a, D, S> {
        self.iter()
    }
}
