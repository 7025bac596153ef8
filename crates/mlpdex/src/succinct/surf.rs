//! SuRF, the Succinct Range Filter (memory-efficient-search-trees.txt, chapter 4): an
//! approximate-membership filter that answers point *and range* queries with one-sided errors,
//! built on the [`crate::fst`] trie.
//!
//! ```
//! use mlpdex::surf::{Surf, SurfKind};
//!
//! // Built once from sorted keys; keeps about 10 bits per key plus 8 real suffix bits.
//! let surf = Surf::from_sorted(SurfKind::Real(8), ["apple", "banana", "cherry"])?;
//! assert!(surf.may_contain(b"banana")); // never a false negative
//! assert!(!surf.may_contain(b"durian")); // "no" is certain
//! assert!(surf.may_contain_range("b".."c"));
//! assert!(!surf.may_contain_range("d"..));
//! // The stored entries (unique prefixes) of a range are an iterator too.
//! let prefixes: Vec<Vec<u8>> = surf.range("b"..).collect();
//! assert_eq!(prefixes, [b"b".to_vec(), b"c".to_vec()]);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! In front of storage that is expensive to probe (SSTables, remote shards) when queries
//! include ranges or prefixes: a Bloom filter cannot answer those. For point-only filtering a
//! cache-blocked Bloom filter is faster at the same bits per key (see the README's table).
//! Static: any change is a rebuild.
//!
//! Measured false-positive rates, query and build speeds of every variant, against Bloom
//! filters, on integer and string keys, as the suite `bench/suites/filters.toml` wrote them:
//! [`docs/results/filters.md`](../../../../docs/results/filters.md).
//!
//! # What it is
//!
//! The FST trie cut at each key's unique prefix, keeping per key a few suffix bits instead of
//! the rest of the key (§4.1):
//!
//! | kind | per key | point FPR | range FPR |
//! |---|---|---|---|
//! | [`SurfKind::Base`] | nothing | key set dependent (keys sharing long prefixes hurt) | same |
//! | [`SurfKind::Hash`]`(n)` | `n` bits of a hash of the key | about 2^-n of Base's | Base's |
//! | [`SurfKind::Real`]`(n)` | the `n` key bits after the unique prefix | lower | lower |
//! | [`SurfKind::Mixed`] | hash bits and real bits | lower | lower |
//!
//! A query walks the trie like an FST lookup; reaching a leaf means "a key with this unique
//! prefix exists", and the suffix bits refine that. Never a false negative: a stored key always
//! reaches its own leaf, its hash bits match, and its real bits order it consistently
//! (proofs beside each method).
//!
//! # Contract
//!
//! - Built in one pass by [`SurfBuilder`] from keys in strictly increasing order; bad input is
//!   [`Error::OutOfOrder`] / [`Error::DuplicateKey`]. Every byte string is a legal key.
//! - `may_contain*` returns `true` for every stored key or range holding one; a `true` may be
//!   false. `approx_count` counts the stored unique prefixes inside the range; it is exact for
//!   keys strictly inside and may count one key too many at each end.
//! - `Surf` is immutable and `Send + Sync`. [`Surf::to_bytes`] / [`Surf::from_bytes`] use the
//!   FST format (`succinct::raw::format`) with its own magic; corrupt buffers are errors, and
//!   loading checks every invariant the queries rely on (a loaded filter admits every key its
//!   cursor visits, and its cursor agrees in both directions), including zero real bits on
//!   prefix keys. The hash bits of a prefix key are never read (a lookup that ends at one has
//!   matched the whole key), so they need no check.
//!   [`Surf::from_shared`] loads in place, as [`Fst::from_shared`](crate::fst::Fst::from_shared)
//!   does.

use crate::KeyRange;
use core::cmp::Ordering;
use core::ops::Bound;

use crate::Error;
use crate::api::RangeFilter;
use crate::fst::TrieStats;
use crate::key::{after_start, before_end, is_empty_range};
use crate::substrate::frozen::{Shared, StableDeref};
use crate::substrate::{BitVec, FrozenBits};
use crate::succinct::raw::build::LevelBuilder;
use crate::succinct::raw::format::{self, SURF_MAGIC};
use crate::succinct::raw::suffix::{FixedSuffixes, SuffixKind};
use crate::succinct::raw::suffix_code::SuffixCoding;
use crate::succinct::raw::trie::{Path, Trie, bound_key};

/// A range of keys as a start and an end bound, for [`Surf::may_contain_range_batch`].
pub type ByteRange<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// Which suffix bits a SuRF keeps per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SurfKind {
    /// SuRF-Base: the trie of unique prefixes alone.
    Base,
    /// SuRF-Hash: `n` hashed bits (1..=64).
    Hash(u8),
    /// SuRF-Real: `n` real bits (1..=64).
    Real(u8),
    /// SuRF-Mixed: `hash` hashed and `real` real bits (1..=32 each).
    Mixed {
        /// Hashed bits.
        hash: u8,
        /// Real bits.
        real: u8,
    },
}

impl SurfKind {
    /// Checks the bit counts: [`Error::InvalidConfig`] unless each is 1..=64 (1..=32 for
    /// mixed).
    pub fn validate(self) -> Result<(), Error> {
        self.suffix().validate()
    }

    pub(crate) fn suffix(self) -> SuffixKind {
        match self {
            SurfKind::Base => SuffixKind::None,
            SurfKind::Hash(n) => SuffixKind::Hash(n),
            SurfKind::Real(n) => SuffixKind::Real(n),
            SurfKind::Mixed { hash, real } => SuffixKind::Mixed { hash, real },
        }
    }

    fn from_suffix(kind: SuffixKind) -> Option<SurfKind> {
        Some(match kind {
            SuffixKind::None => SurfKind::Base,
            SuffixKind::Hash(n) => SurfKind::Hash(n),
            SuffixKind::Real(n) => SurfKind::Real(n),
            SuffixKind::Mixed { hash, real } => SurfKind::Mixed { hash, real },
            SuffixKind::Full => return None,
        })
    }
}

/// Builds a [`Surf`] from keys in strictly increasing order.
pub struct SurfBuilder {
    levels: LevelBuilder,
    kind: SurfKind,
    ratio: u32,
}

impl core::fmt::Debug for SurfBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SurfBuilder")
            .field("kind", &self.kind)
            .field("keys", &self.levels.keys)
            .finish_non_exhaustive()
    }
}

impl SurfBuilder {
    /// A builder of `kind` with the default dense ratio (64); [`Error::InvalidConfig`] for bit
    /// counts out of range.
    pub fn new(kind: SurfKind) -> Result<Self, Error> {
        Self::with_dense_ratio(kind, 64)
    }

    /// A builder with dense ratio `ratio` (see [`crate::fst::Config::dense_ratio`]).
    pub fn with_dense_ratio(kind: SurfKind, ratio: u32) -> Result<Self, Error> {
        kind.suffix().validate()?;
        Ok(SurfBuilder {
            levels: LevelBuilder::new(kind.suffix()),
            kind,
            ratio,
        })
    }

    /// Appends `key`; fails (changing nothing) unless it sorts strictly after the previous key.
    pub fn push(&mut self, key: &[u8]) -> Result<(), Error> {
        self.levels.push(key, 0)
    }

    /// Finishes the filter.
    pub fn finish(mut self) -> Result<Surf, Error> {
        let trie = self.levels.finish_trie(self.ratio)?;
        let fixed = match self.kind {
            SurfKind::Base => None,
            _ => {
                let mut entries = Vec::with_capacity(trie.leaves());
                for lv in &mut self.levels.levels {
                    entries.append(&mut lv.fixed);
                }
                Some(FixedSuffixes::new(self.kind.suffix(), &entries))
            }
        };
        Ok(Surf {
            trie,
            fixed,
            has_empty: self.levels.empty.is_some(),
            len: self.levels.keys,
            kind: self.kind,
            ratio: self.ratio,
            degraded: None,
        })
    }
}

/// The Succinct Range Filter (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Surf {
    trie: Trie,
    fixed: Option<FixedSuffixes>,
    has_empty: bool,
    len: usize,
    kind: SurfKind,
    ratio: u32,
    /// Leaves whose suffix bits no longer describe every key they stand for, which therefore
    /// answer as SuRF-Base leaves (no bit check, order unknown): set only by
    /// [`dynamic_surf`](crate::dynamic_surf), which owns it and never hands such a filter
    /// out; `None` for every filter built or loaded here (`to_bytes` does not write it).
    degraded: Option<FrozenBits>,
}

impl Surf {
    /// A filter of `kind` over keys in strictly increasing order.
    pub fn from_sorted<K: AsRef<[u8]>>(
        kind: SurfKind,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<Surf, Error> {
        let mut b = SurfBuilder::new(kind)?;
        for k in keys {
            b.push(k.as_ref())?;
        }
        b.finish()
    }

    /// The kind of suffix bits kept.
    pub fn kind(&self) -> SurfKind {
        self.kind
    }

    /// Number of keys the filter was built from.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when built from no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sizes of the trie's parts.
    pub fn stats(&self) -> TrieStats {
        self.trie.stats()
    }

    /// Bits of memory per key (trie, directories and suffix bits).
    pub fn bits_per_key(&self) -> f64 {
        self.memory_usage() as f64 * 8.0 / self.len.max(1) as f64
    }

    /// False only when `key` is certainly absent.
    ///
    /// No false negative: a stored key's walk follows its own path to its own leaf (its unique
    /// prefix is a prefix of it, or it is the prefix key there), and that leaf's hash and real
    /// bits were computed from the same key at the same depth.
    #[inline]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        if key.is_empty() {
            return self.has_empty;
        }
        match self.trie.lookup(key) {
            None => false,
            Some(h) => self.leaf_may_match(h.leaf, key, h.depth, h.term),
        }
    }

    /// [`may_contain`](Self::may_contain) for many keys: `out[i]` answers `keys[i]`.
    ///
    /// The lookups are interleaved, 16 in flight, each step prefetching what the next step of
    /// that query reads, so their cache misses overlap (several times the throughput of
    /// one-by-one calls on tries larger than the cache; same answers).
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn may_contain_batch(&self, keys: &[&[u8]], out: &mut [bool]) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        const CHUNK: usize = 64;
        let mut hits = [None; CHUNK];
        for (ks, os) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let hits = &mut hits[..ks.len()];
            self.trie.lookup_batch(ks, hits);
            if let Some(f) = &self.fixed {
                for h in hits.iter().flatten() {
                    f.prefetch(h.leaf);
                }
            }
            for ((k, h), o) in ks.iter().zip(hits.iter()).zip(os.iter_mut()) {
                *o = match h {
                    _ if k.is_empty() => self.has_empty,
                    None => false,
                    Some(h) => self.leaf_may_match(h.leaf, k, h.depth, h.term),
                };
            }
        }
    }

    /// [`may_contain_range`](Self::may_contain_range) for many ranges: `out[i]` answers
    /// `ranges[i]` (start and end bounds).
    ///
    /// The seeks to the start bounds are interleaved, 16 in flight, each step prefetching what
    /// that seek reads next (as in [`may_contain_batch`](Self::may_contain_batch)), so their
    /// cache misses overlap. Same answers as one-by-one calls.
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `ranges`.
    pub fn may_contain_range_batch(&self, ranges: &[ByteRange<'_>], out: &mut [bool]) {
        assert!(out.len() >= ranges.len(), "output shorter than the batch");
        let cmp = |key: &[u8], level, depth, pos| self.leaf_cmp(key, level, depth, pos);
        self.trie.seek_ge_many(
            ranges.len(),
            |i| ranges[i].0,
            false,
            &cmp,
            |i, path, found| {
                let (start, end) = ranges[i];
                out[i] = if is_empty_range(start, end) {
                    false
                } else if self.has_empty && after_start(b"", start) && before_end(b"", end) {
                    true
                } else if !found {
                    false
                } else {
                    let c = SurfCursor {
                        surf: self,
                        path: core::mem::take(path),
                        maybe_fp: false,
                    };
                    let yes = c.smallest_before_end(end);
                    *path = c.path;
                    yes
                };
            },
        );
    }

    /// False only when no stored key lies within `range`.
    ///
    /// Seeks the first leaf that may hold a key within the start bound (a leaf whose order
    /// against the bound is unknown is kept), then asks whether the smallest key that leaf can
    /// hold (its unique prefix, extended by its real bits with trailing zero bytes dropped)
    /// lies within the end bound. No false negative: a stored key `k` in range is `≥ start`,
    /// so the seek stops at `k`'s leaf or an earlier one, whose smallest possible key is `≤ k`.
    pub fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return false;
        }
        if self.has_empty && after_start(b"", start) && before_end(b"", end) {
            return true;
        }
        let mut c = SurfCursor {
            surf: self,
            path: Path::spare(),
            maybe_fp: false,
        };
        let found = c.seek(start) && c.smallest_before_end(end);
        c.path.recycle();
        found
    }

    /// About how many stored keys lie within `range` (see the module docs for the error).
    pub fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return 0;
        }
        let empty = (self.has_empty && after_start(b"", start) && before_end(b"", end)) as u64;
        let mut front = self.cursor();
        if !front.seek(start) {
            return empty;
        }
        let mut back = self.cursor();
        if !back.seek_back(end) {
            return empty;
        }
        empty + self.trie.count_between(&front.path, &back.path) as u64
    }

    /// A cursor over the stored unique prefixes, for the iterator operations a storage engine
    /// needs (seek, next, prev, the prefix, whether it may be a false positive).
    pub fn cursor(&self) -> SurfCursor<'_> {
        SurfCursor {
            surf: self,
            path: Path::default(),
            maybe_fp: false,
        }
    }

    /// The stored entries that may lie within `range`, as an [`Iterator`] and
    /// [`DoubleEndedIterator`] of their unique prefixes (a SuRF keeps no more of a key; the
    /// empty key comes first when stored and in range).
    ///
    /// From the front the walk starts where [`SurfCursor::seek`] lands for the start bound,
    /// from the back where [`SurfCursor::seek_back`] lands for the end bound, and the two ends
    /// meet without passing each other. Like every SuRF answer it errs one way only: every
    /// stored key within `range` has its prefix yielded, and a yielded prefix may belong to a
    /// key just outside the range (the suffix bits could not tell).
    ///
    /// ```
    /// use mlpdex::surf::{Surf, SurfKind};
    ///
    /// let surf = Surf::from_sorted(SurfKind::Base, ["apple", "banana", "cherry"])?;
    /// let prefixes: Vec<Vec<u8>> = surf.range("b"..).collect();
    /// assert_eq!(prefixes, [b"b".to_vec(), b"c".to_vec()]);
    /// for prefix in surf.range(..).rev() {
    ///     assert_eq!(prefix.len(), 1);
    /// }
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn range<R>(&self, range: R) -> Range<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        let mut r = Range {
            front: self.cursor(),
            back: self.cursor(),
            back_ready: false,
            end: end.map(<[u8]>::to_vec),
            empty_pending: false,
            done: true,
        };
        if is_empty_range(start, end) {
            return r;
        }
        r.empty_pending = self.has_empty && after_start(b"", start) && before_end(b"", end);
        r.done = !r.front.seek(start);
        r
    }

    /// Every stored unique prefix in order (see [`range`](Self::range)).
    pub fn iter(&self) -> Range<'_> {
        self.range(..)
    }

    /// Bytes of memory owned: trie, directories and suffix bits.
    pub fn memory_usage(&self) -> usize {
        self.trie.memory_usage()
            + self.fixed.as_ref().map_or(0, FixedSuffixes::memory_usage)
            + self.degraded.as_ref().map_or(0, FrozenBits::memory_usage)
    }

    /// Serializes the filter (the FST format with magic `MLPDSURF`).
    pub fn to_bytes(&self) -> Vec<u8> {
        format::write(
            SURF_MAGIC,
            self.kind.suffix(),
            self.ratio,
            self.len as u64,
            self.has_empty.then_some(0),
            &self.trie,
            &[],
            None,
            self.fixed.as_ref(),
            SuffixCoding::Auto,
        )
    }

    /// Loads a filter written by [`to_bytes`](Self::to_bytes) from a copy of `buf`, checking
    /// everything.
    pub fn from_bytes(buf: &[u8]) -> Result<Surf, Error> {
        Self::load(&Shared::copy_of(buf))
    }

    /// Loads a filter in place, keeping `buf` and reading the trie and suffix bits where they
    /// lie; see [`Fst::from_shared`](crate::fst::Fst::from_shared) for which buffers qualify.
    pub fn from_shared<B>(buf: B) -> Result<Surf, Error>
    where
        B: StableDeref<Target = [u8]> + Send + Sync + 'static,
    {
        Self::load(&Shared::new(buf))
    }

    /// True when the filter's bulk lies in the buffer it was loaded from.
    pub fn is_zero_copy(&self) -> bool {
        self.trie.is_borrowed()
    }

    fn load(shared: &Shared) -> Result<Surf, Error> {
        let img = format::read(shared, SURF_MAGIC)?;
        let kind = SurfKind::from_suffix(img.kind).ok_or(Error::Format {
            what: "a SuRF stores no full suffixes",
            offset: 12,
        })?;
        Ok(Surf {
            trie: img.trie,
            fixed: img.fixed,
            has_empty: img.empty.is_some(),
            len: img.keys as usize,
            kind,
            ratio: img.ratio,
            degraded: None,
        })
    }

    /// Whether the leaf a lookup of `key` reached (`depth` bytes consumed) may hold it. A
    /// lookup that ended at a prefix key (`term`) matched the whole of `key`: a match without
    /// reading the leaf's bits (a valid image stores exactly the hash and real bits of that
    /// key there, so this changes no answer, and a damaged image cannot make the filter deny a
    /// key its cursor visits).
    #[inline]
    fn leaf_may_match(&self, leaf: usize, key: &[u8], depth: usize, term: bool) -> bool {
        term || self
            .fixed
            .as_ref()
            .is_none_or(|f| f.may_match(leaf, key, depth))
            || self.is_degraded(leaf)
    }

    /// Whether leaf `leaf` answers as a SuRF-Base leaf (see the `degraded` field).
    #[inline]
    fn is_degraded(&self, leaf: usize) -> bool {
        self.degraded.as_ref().is_some_and(|d| d.bit(leaf))
    }

    /// Orders the key of the leaf at `pos` on `level` against `key` by real bits, when the trie
    /// matched `key`'s first `depth` bytes (see `succinct::raw::trie::LeafCmp`).
    #[inline]
    fn leaf_cmp(&self, key: &[u8], level: usize, depth: usize, pos: usize) -> Option<Ordering> {
        let f = self.fixed.as_ref().filter(|f| f.has_real())?;
        let leaf = self.trie.leaf(level, pos);
        if self.is_degraded(leaf) {
            return None;
        }
        f.cmp_real(leaf, key, depth)
    }
}

// Entry points for `dynamic_surf`, which rebuilds a SuRF from the entries of another (the only
// other reader of these items; no existing answer changes).
impl SurfBuilder {
    /// A builder whose [`push_carried`](Self::push_carried) takes each item's hash bits from
    /// the caller (kinds without hash bits ignore them).
    pub(crate) fn carrying(kind: SurfKind, ratio: u32) -> Result<Self, Error> {
        let mut b = Self::with_dense_ratio(kind, ratio)?;
        b.levels.given_hash = true;
        Ok(b)
    }

    /// Appends `item` with `hash` as its hash bits (real bits are computed from `item` at
    /// the depth its leaf gets); errors as [`push`](Self::push). Only on a builder made by
    /// [`carrying`](Self::carrying), whose plain `push` would store hash bits 0.
    pub(crate) fn push_carried(&mut self, item: &[u8], hash: u64) -> Result<(), Error> {
        debug_assert!(self.levels.given_hash);
        self.levels.push(item, hash)
    }
}

impl Surf {
    /// The dense ratio the filter was built with.
    pub(crate) fn dense_ratio(&self) -> u32 {
        self.ratio
    }

    /// Marks the leaves set in `leaves` (one bit per leaf) degraded: they answer as SuRF-Base
    /// leaves from now on. `None` clears the marks.
    pub(crate) fn set_degraded(&mut self, leaves: Option<BitVec>) {
        debug_assert!(
            leaves
                .as_ref()
                .is_none_or(|b| b.len() == self.trie.leaves())
        );
        self.degraded = leaves.filter(|b| b.count_ones() > 0).map(FrozenBits::from);
    }

    /// The degraded-leaf marks, when any.
    pub(crate) fn degraded(&self) -> Option<&FrozenBits> {
        self.degraded.as_ref()
    }

    /// Number of leaves in the trie (stored keys but the empty one).
    pub(crate) fn leaves(&self) -> usize {
        self.trie.leaves()
    }
}

impl SurfCursor<'_> {
    /// Leaf number of the current entry (the index of its suffix bits). Requires a valid
    /// cursor.
    pub(crate) fn leaf(&self) -> usize {
        self.path.leaf(&self.surf.trie)
    }

    /// True when the current entry is a prefix key: it stands for exactly the key
    /// [`prefix`](Self::prefix), a proper prefix of the next entry's.
    pub(crate) fn is_prefix_key(&self) -> bool {
        self.path.is_term()
    }

    /// True when the current entry is degraded (answers as a SuRF-Base leaf).
    pub(crate) fn is_degraded(&self) -> bool {
        self.path.is_valid() && self.surf.is_degraded(self.leaf())
    }

    /// The hash bits stored for the current entry (0 without hash bits or when not valid).
    pub(crate) fn hash_suffix(&self) -> u64 {
        match (&self.surf.fixed, self.path.is_valid()) {
            (Some(f), true) => f.hash(self.leaf()),
            _ => 0,
        }
    }

    /// Whether the current entry admits `key`, which starts with its
    /// [`prefix`](Self::prefix): what [`Surf::may_contain`] answers for `key` when its walk
    /// ends here (a prefix key admits only itself).
    pub(crate) fn admits(&self, key: &[u8]) -> bool {
        let prefix = self.prefix();
        debug_assert!(key.starts_with(prefix));
        if self.is_prefix_key() {
            return key == prefix;
        }
        self.surf
            .leaf_may_match(self.leaf(), key, prefix.len(), false)
    }
}

impl RangeFilter for Surf {
    fn may_contain(&self, key: &[u8]) -> bool {
        Surf::may_contain(self, key)
    }

    fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        Surf::may_contain_range(self, range)
    }

    fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        Surf::approx_count(self, range)
    }

    fn memory_usage(&self) -> usize {
        Surf::memory_usage(self)
    }
}

/// The iterator of [`Surf::range`]: the unique prefixes of the stored entries that may lie
/// within a range, from both ends.
#[derive(Clone, Debug)]
pub struct Range<'a> {
    front: SurfCursor<'a>,
    back: SurfCursor<'a>,
    /// Whether the back end is positioned (done by the first `next_back`, from `end`).
    back_ready: bool,
    end: Bound<Vec<u8>>,
    /// The empty key is stored, in range, and not yet yielded.
    empty_pending: bool,
    /// No trie entry remains.
    done: bool,
}

impl Range<'_> {
    /// Positions the back end at the last entry that may lie within the end bound, the first
    /// time it is needed.
    fn ready_back(&mut self) {
        if !self.back_ready {
            self.back_ready = true;
            let end = self.end.as_ref().map(Vec::as_slice);
            if !self.back.seek_back(end) {
                self.done = true;
            }
        }
    }

    /// Whether the two ends stand on the same entry (prefixes are distinct and ordered).
    fn ends_met(&self) -> bool {
        self.back_ready && self.front.prefix() >= self.back.prefix()
    }
}

impl Iterator for Range<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.empty_pending {
            self.empty_pending = false;
            return Some(Vec::new());
        }
        if self.done {
            return None;
        }
        if self.back_ready && self.front.prefix() > self.back.prefix() {
            self.done = true;
            return None;
        }
        if !self
            .front
            .smallest_before_end(self.end.as_ref().map(Vec::as_slice))
        {
            self.done = true;
            return None;
        }
        let out = self.front.prefix().to_vec();
        if self.ends_met() || !self.front.next() {
            self.done = true;
        }
        Some(out)
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Vec<u8>> {
        if !self.done {
            self.ready_back();
        }
        if !self.done {
            if self.front.prefix() > self.back.prefix() {
                self.done = true;
            } else {
                let out = self.back.prefix().to_vec();
                if self.ends_met() || !self.back.prev() {
                    self.done = true;
                }
                return Some(out);
            }
        }
        if self.empty_pending {
            self.empty_pending = false;
            return Some(Vec::new());
        }
        None
    }
}

impl core::iter::FusedIterator for Range<'_> {}

/// A position among a SuRF's stored keys (their unique prefixes, in order). The empty key, if
/// stored, is not visited: [`Surf::may_contain`] answers it.
///
/// For walking a range, use [`Surf::range`], an [`Iterator`] like the FST's. This cursor is
/// the storage-engine seek protocol of the thesis (§4.2: seek, then step and inspect), and it
/// differs from [`fst::Cursor`](crate::fst::Cursor) on purpose: a seek's answer is approximate
/// (the entry found may lie below the bound, [`maybe_false_positive`](Self::maybe_false_positive)),
/// and what a caller does next depends on the entry it stands on (its prefix, its
/// [`real_suffix`](Self::real_suffix), its [`smallest_key`](Self::smallest_key)). So the cursor
/// is positional: [`seek`](Self::seek) / [`next`](Self::next) / [`prev`](Self::prev) move it and
/// say whether it stands on an entry, and the accessors read that entry. `fst::Cursor` needs
/// no position (its answers are exact), so it yields entries instead.
#[derive(Clone, Debug)]
pub struct SurfCursor<'a> {
    surf: &'a Surf,
    path: Path,
    maybe_fp: bool,
}

impl SurfCursor<'_> {
    /// Moves to the first stored key that may lie within `bound` from below (`≥ k`, `> k`, or
    /// the first key); false when none can. [`maybe_false_positive`](Self::maybe_false_positive)
    /// then tells whether the key found may in fact lie below the bound.
    pub fn seek(&mut self, bound: Bound<&[u8]>) -> bool {
        self.seek_toward(bound, true)
    }

    /// Moves to the last stored key that may lie within `bound` from above; false when none.
    pub fn seek_back(&mut self, bound: Bound<&[u8]>) -> bool {
        self.seek_toward(bound, false)
    }

    /// [`seek`](Self::seek) (`forward`) or [`seek_back`](Self::seek_back).
    fn seek_toward(&mut self, bound: Bound<&[u8]>, forward: bool) -> bool {
        let t = &self.surf.trie;
        self.maybe_fp = false;
        let Some((k, strict)) = bound_key(bound) else {
            return if forward {
                self.path.first(t)
            } else {
                self.path.last(t)
            };
        };
        let unknown = core::cell::Cell::new(false);
        let cmp = |level, depth, pos| {
            let o = self.surf.leaf_cmp(k, level, depth, pos);
            unknown.set(o.is_none());
            o
        };
        let found = if forward {
            self.path.seek_ge(t, k, strict, &cmp)
        } else {
            self.path.seek_le(t, k, strict, &cmp)
        };
        // Unknown order only matters if the seek stopped at that very leaf, which extends the
        // bound's prefix.
        self.maybe_fp = found && unknown.get() && k.starts_with(self.path.key());
        found
    }

    /// Moves to the next stored key; false past the last.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> bool {
        self.maybe_fp = false;
        self.path.next(&self.surf.trie)
    }

    /// Moves to the previous stored key; false before the first.
    pub fn prev(&mut self) -> bool {
        self.maybe_fp = false;
        self.path.prev(&self.surf.trie)
    }

    /// True while the cursor is at a key.
    pub fn is_valid(&self) -> bool {
        self.path.is_valid()
    }

    /// The unique prefix of the current key (empty when not valid).
    pub fn prefix(&self) -> &[u8] {
        self.path.key()
    }

    /// The real suffix bits stored for the current key and their count (`(0, 0)` without real
    /// bits or when not valid).
    pub fn real_suffix(&self) -> (u64, u32) {
        match (&self.surf.fixed, self.path.is_valid()) {
            (Some(f), true) => {
                let leaf = self.path.leaf(&self.surf.trie);
                if self.surf.is_degraded(leaf) {
                    (0, 0)
                } else {
                    f.real(leaf)
                }
            }
            _ => (0, 0),
        }
    }

    /// True when the last seek stopped at a key whose order against the bound is unknown: the
    /// key shares the bound's prefix and the stored bits cannot tell the rest.
    pub fn maybe_false_positive(&self) -> bool {
        self.maybe_fp
    }

    /// The real suffix bits of the current entry as bytes, trailing zero bytes dropped, and how
    /// many of the 8 bytes that leaves.
    fn real_tail(&self) -> ([u8; 8], usize) {
        let (bits, n) = self.real_suffix();
        if n == 0 {
            return ([0; 8], 0);
        }
        let bytes = (bits << (64 - n)).to_be_bytes();
        let mut take = (n as usize).div_ceil(8);
        while take > 0 && bytes[take - 1] == 0 {
            take -= 1;
        }
        (bytes, take)
    }

    /// Writes the smallest key the current entry can stand for: the unique prefix and the real
    /// suffix bits, trailing zero bytes of the bits dropped.
    pub fn smallest_key(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.prefix());
        let (tail, n) = self.real_tail();
        out.extend_from_slice(&tail[..n]);
    }

    /// Whether the smallest key the current entry can stand for lies within `end` (no
    /// allocation: the prefix and the real bits are compared in place).
    fn smallest_before_end(&self, end: Bound<&[u8]>) -> bool {
        let e = match end {
            Bound::Unbounded => return true,
            Bound::Included(e) | Bound::Excluded(e) => e,
        };
        let (tail, n) = self.real_tail();
        let prefix = self.prefix();
        let k = prefix.len().min(e.len());
        let order = match prefix[..k].cmp(&e[..k]) {
            Ordering::Equal if prefix.len() > e.len() => Ordering::Greater,
            Ordering::Equal => tail[..n].cmp(&e[prefix.len()..]),
            o => o,
        };
        match end {
            Bound::Included(_) => order != Ordering::Greater,
            _ => order == Ordering::Less,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_end_check_agrees_with_the_built_key() {
        let keys: Vec<Vec<u8>> = (0u32..3000)
            .map(|i| {
                let x = i.wrapping_mul(2_654_435_761);
                let mut k = x.to_be_bytes()[..(1 + i as usize % 4)].to_vec();
                k.push((i % 7) as u8 * 40);
                k
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for kind in [
            SurfKind::Base,
            SurfKind::Real(3),
            SurfKind::Real(12),
            SurfKind::Mixed { hash: 2, real: 17 },
        ] {
            let s = Surf::from_sorted(kind, &keys).unwrap();
            let mut c = s.cursor();
            let mut ok = c.seek(Bound::Unbounded);
            let mut built = Vec::new();
            let probes: Vec<&[u8]> = keys.iter().step_by(97).map(Vec::as_slice).collect();
            while ok {
                c.smallest_key(&mut built);
                for e in &probes {
                    for end in [Bound::Included(*e), Bound::Excluded(*e)] {
                        assert_eq!(c.smallest_before_end(end), before_end(&built, end));
                    }
                }
                ok = c.next();
            }
        }
    }
}
