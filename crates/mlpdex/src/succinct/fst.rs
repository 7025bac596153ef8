//! The Fast Succinct Trie (FST): a static ordered map from byte strings to `u64` in about ten
//! bits per trie node, as fast as pointer-based indexes (memory-efficient-search-trees.txt,
//! chapter 3).
//!
//! ```
//! use mlpdex::fst::Fst;
//!
//! // Build once from keys in increasing order; then query from any thread.
//! let fst = Fst::from_sorted([("apple", 1), ("banana", 2), ("cherry", 3)])?;
//! assert_eq!(fst.get(b"banana"), Some(2));
//! assert_eq!(fst.get(b"blueberry"), None);
//!
//! // Ranges are double-ended iterators of owned (key, value) pairs...
//! let hits: Vec<(Vec<u8>, u64)> = fst.range("b"..).collect();
//! assert_eq!(hits, [(b"banana".to_vec(), 2), (b"cherry".to_vec(), 3)]);
//! for (key, value) in fst.range("a".."c").rev() {
//!     println!("{} = {value}", String::from_utf8_lossy(&key));
//! }
//! // ...and cursors lend each key without copying it.
//! let mut c = fst.cursor(..);
//! while let Some((key, value)) = c.next() {
//!     assert_eq!(fst.get(key), Some(value));
//! }
//!
//! // Serialize, and load in place or by copy.
//! let loaded = Fst::from_bytes(&fst.to_bytes())?;
//! assert_eq!(loaded, fst);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! Read-only or rebuilt-in-bulk data (SSTable indexes, dictionaries, the static stage of a
//! hybrid index) where memory matters: a few bytes per key plus the values. Not for updates:
//! any change is a rebuild. [`crate::surf`] turns the same trie into a range filter.
//!
//! When not to use it: for lookups of long string keys whose speed matters more than memory
//! (on long paths and URLs the FST about matches a B-tree, which takes three to five times
//! the memory, and [`crate::mlp_index_bytes::MlpIndexBytes`] is faster than both; see the
//! long-key results below), or for data that changes.
//!
//! Measured speed and size against the `fst` crate and a sorted array, one by one and in
//! batches of 16, as the suite `bench/suites/fst.toml` wrote them:
//! [`docs/results/fst.md`](../../../../docs/results/fst.md).
//!
//! # What it is
//!
//! A trie cut at each key's unique prefix, encoded level by level in LOUDS-DS (§3.2–3.4): the
//! few, hot upper levels as 256-bit bitmaps per node (LOUDS-Dense, one bit test per level), the
//! many, cold lower levels as a byte per branch plus two bits (LOUDS-Sparse, 10 bits per
//! branch, close to the 9.44-bit information-theoretic bound). Navigation is rank and select
//! on those bit vectors, tuned as in §3.6 (single-level rank tables of 64- and 512-bit blocks,
//! select sampled every 64 ones, SIMD label search; see `substrate::rank` and
//! `substrate::labels`). Beyond §3.6, a sparse level's step to a child takes neither rank nor
//! select: a directory of 4 bytes per 64 branches, derived on load, says where the children
//! of each 64 branches start, and a walk reads its entry as it reaches a node, so that the
//! child's LOUDS bits load beside the node's labels instead of after them (see `raw::trie`).
//! The dense/sparse cut is the most levels whose dense size
//! times [`Config::dense_ratio`] (R, default 64) stays within the sparse size of the rest.
//!
//! Beyond the paper, LOUDS-Sparse is path-compressed: a run of nodes with a single branch (a
//! prefix many keys share, `/usr/share/doc/`) is stored once, as a chain of bytes in front of
//! the node it leads to, and checked with one comparison. A lookup then takes one level per
//! node where keys branch, not one per byte (long keys measured against the `fst` crate and a
//! B-tree: [`docs/results/long-keys.md`](../../../../docs/results/long-keys.md)). The chains
//! cost about a bit per sparse position, so a trie where they are rare (short random keys) is
//! left as the paper builds it (see `raw::compress`).
//!
//! By default each leaf also keeps the rest of its key after the unique prefix
//! ([`KeyStorage::Complete`]): the map holds every key exactly, `get` answers exactly, and
//! iteration yields whole keys. [`KeyStorage::UniquePrefixes`] drops those suffixes, for use
//! as an index whose records hold the full key: `get` then returns the value of the one key
//! that *can* match (compare it against your record), and cursors yield unique prefixes.
//!
//! Complete keys' suffixes are kept byte for byte or encoded ([`SuffixCoding`]). Below its
//! unique prefix a key is usually text over a small, skewed alphabet (a reviewer id and a
//! timestamp, the tail of a URL); an order-preserving Hu–Tucker code over the suffixes' own
//! byte frequencies (HOPE's single-char scheme, §6.1.3, inside the structure; see
//! `raw::suffix_code`) stores such text in five or six bits a byte. A lookup encodes the rest
//! of its key and compares it with the stored bytes, so encoded suffixes order and match
//! exactly as plain ones; only cursors decode. The default, [`SuffixCoding::Auto`], encodes
//! them when that makes the records below the trie (suffixes and their values) at least an
//! eighth smaller, as estimated from the suffixes' byte counts (of the bench datasets: URLs,
//! composite keys, reviewer ids and times yes; file paths and e-mail addresses, about a tenth
//! smaller coded, and random binary keys no); [`SuffixCoding::Coded`] encodes them whenever,
//! [`SuffixCoding::Plain`] never, saving the few nanoseconds a byte that lookups spend
//! encoding and the encoding pass of the build.
//!
//! # Contract
//!
//! - Built in one pass by [`FstBuilder`] from keys in strictly increasing order; out-of-order
//!   or duplicate input is [`Error::OutOfOrder`] / [`Error::DuplicateKey`] naming the key.
//!   Every key is legal: the empty key, prefixes of other keys, 0x00 and 0xFF bytes, long keys.
//! - Immutable after [`FstBuilder::finish`]; `Fst` is `Send + Sync`, any number of threads may
//!   query it.
//! - [`Fst::to_bytes`] / [`Fst::from_bytes`]: a versioned little-endian format (see
//!   `raw::format`); a corrupt or truncated buffer is an [`Error::Format`], never a panic, and
//!   an image that loads never answers inconsistently, even one forged with a valid checksum:
//!   loading checks every structural invariant a query relies on (listed in `raw::trie` and
//!   `raw::format`), so iteration is strictly increasing and the same both ways, and `get` and
//!   the seeks agree with it.
//!   [`Fst::from_shared`] loads in place from a buffer it keeps (a `Vec<u8>`, an `Arc<[u8]>`, a
//!   memory map): labels, bit vectors, suffixes and values are read where they lie and only the
//!   rank/select directories are allocated. Loading checks every byte either way, so it costs a
//!   pass over the image, in time linear in its size (`from_bytes` adds its copy).
//!
//! # Invariants
//!
//! 1. Leaf `i` of the trie (level order) owns value `i` and suffix `i` (stored together for
//!    complete keys, see `raw::suffix::FullSuffixes`).
//! 2. A LOUDS-Sparse node's labels strictly increase after an optional terminator (0xFF without
//!    a child, first in a node of two or more labels); see `raw::trie` for why a real 0xFF byte
//!    is never mistaken for it.
//! 3. The empty key is kept beside the trie, never in it: the root holds no prefix key (unless
//!    a chain leads to it: that prefix key is the chain).
//! 4. A prefix key's suffix is empty (its whole key is the path to its node).
//! 5. Encoded suffixes: an empty suffix is stored empty, any other as its encoding (codes, the
//!    end's code, zero bits to the end of the byte) and possibly zero bytes, under a code
//!    whose lengths are those of an alphabetic code tree.
//!
//! All are checked on load, with the trie's shape (`raw::trie`, invariants 1–7).

use crate::KeyRange;
use core::ops::Bound;

use super::raw::build::LevelBuilder;
use super::raw::format::{self, FST_MAGIC};
use super::raw::suffix::{FullSuffixes, RecordAt, SuffixKind, encode_records, suffix_counts};
use super::raw::suffix_code::SuffixCode;
pub use super::raw::suffix_code::SuffixCoding;
pub use super::raw::trie::TrieStats;
use super::raw::trie::{Path, Trie, bound_key};
use crate::Error;
use crate::api::{Entries, StaticMapBuilder};
use crate::key::{after_start, before_end, is_empty_range};
use crate::substrate::FrozenBits;
use crate::substrate::frozen::{Frozen, Shared, StableDeref};

/// What an FST keeps of each key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyStorage {
    /// Every key whole: exact `get`, whole keys from cursors.
    #[default]
    Complete,
    /// Only each key's unique prefix (see the module docs).
    UniquePrefixes,
}

/// FST construction settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// R of §3.4: LOUDS-Dense may take at most 1/R of the LOUDS-Sparse size. Larger is
    /// smaller and slower; 0 encodes every level dense.
    pub dense_ratio: u32,
    /// What to keep of each key.
    pub keys: KeyStorage,
    /// How complete keys' suffixes are stored (ignored with [`KeyStorage::UniquePrefixes`]).
    pub suffix_coding: SuffixCoding,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dense_ratio: 64,
            keys: KeyStorage::Complete,
            suffix_coding: SuffixCoding::Auto,
        }
    }
}

/// Builds an [`Fst`] from keys in strictly increasing order.
pub struct FstBuilder {
    levels: LevelBuilder,
    config: Config,
}

impl Default for FstBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl FstBuilder {
    /// A builder with the default [`Config`].
    pub fn new() -> Self {
        Self::with_config(Config::default())
    }

    /// A builder with `config`.
    pub fn with_config(config: Config) -> Self {
        let kind = match config.keys {
            KeyStorage::Complete => SuffixKind::Full,
            KeyStorage::UniquePrefixes => SuffixKind::None,
        };
        FstBuilder {
            levels: LevelBuilder::new(kind),
            config,
        }
    }

    /// Appends `key` with `value`; see [`StaticMapBuilder::push`].
    pub fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        self.levels.push(key, value)
    }

    /// Makes room for a map shaped like `map` with `extra` more keys (a merge into it), so
    /// that the builder's levels do not grow step by step.
    pub(crate) fn reserve_like(&mut self, map: &Fst, extra: usize) {
        let shape = map.trie.level_shape();
        let keys: usize = shape.iter().map(|&(leaves, _)| leaves).sum();
        // Each level grows as the whole map does; room no key uses is never touched.
        let grow = |n: usize| n + n.saturating_mul(extra) / keys.max(1) + 64;
        let mut before = 0;
        let levels: Vec<_> = shape
            .iter()
            .map(|&(leaves, children)| {
                let records = map.suffixes.as_ref().map_or(0, |s| {
                    s.record_bytes_before(before + leaves) - s.record_bytes_before(before)
                });
                before += leaves;
                (grow(leaves + children), grow(leaves), grow(records))
            })
            .collect();
        self.levels.reserve(&levels);
    }

    /// Finishes the map.
    pub fn finish(mut self) -> Result<Fst, Error> {
        let trie = self.levels.finish_trie(self.config.dense_ratio)?;
        // Exact sizes up front: no growth by copies, no shrinking copy at the end.
        let lvs = &self.levels.levels;
        let mut values = Vec::with_capacity(lvs.iter().map(|lv| lv.values.len()).sum());
        let mut bytes = Vec::with_capacity(lvs.iter().map(|lv| lv.suffix_bytes.len()).sum());
        let mut ends = crate::substrate::BitVec::new();
        ends.reserve(lvs.iter().map(|lv| lv.suffix_ends.len()).sum());
        for lv in &mut self.levels.levels {
            values.append(&mut lv.values);
            bytes.append(&mut lv.suffix_bytes);
            let mut left = lv.suffix_ends.len();
            for &w in lv.suffix_ends.words() {
                let n = left.min(64) as u32;
                ends.push_bits(w, n);
                left -= n as usize;
            }
            lv.suffix_ends = Default::default();
        }
        self.levels.levels = Vec::new();
        let suffixes = match self.config.keys {
            KeyStorage::Complete => {
                let per_level = trie.leaves_per_level();
                let coding = self.config.suffix_coding;
                let mut s = Self::suffixes(bytes, ends.into(), &per_level, coding)?;
                s.index_levels(&per_level);
                Some(s)
            }
            KeyStorage::UniquePrefixes => None,
        };
        Ok(Fst {
            trie,
            values: values.into(),
            empty: self.levels.empty,
            len: self.levels.keys,
            config: self.config,
            suffixes,
        })
    }
}

impl FstBuilder {
    /// The suffix store of plain records `bytes` with end markers `ends` (`per_level` leaves
    /// on each trie level), encoded as `coding` asks.
    fn suffixes(
        bytes: Vec<u8>,
        ends: FrozenBits,
        per_level: &[usize],
        coding: SuffixCoding,
    ) -> Result<FullSuffixes, Error> {
        if coding != SuffixCoding::Plain {
            let counts = suffix_counts(&bytes, &ends);
            let code = SuffixCode::optimal(&counts);
            // `Auto` decides before encoding anything, on an estimate: the code's bits, half a
            // byte of padding per suffix, the end markers, the code itself. Records hold a
            // value and a suffix, markers a bit per suffix byte and one per leaf.
            let leaves: usize = per_level.iter().sum();
            let plain_suffix = ends.len() - leaves;
            let plain_size = bytes.len() + ends.len() / 8;
            let coded_suffix = (code.bits_for(&counts) / 8 + counts[0] / 2) as usize;
            let coded_size = bytes.len() - plain_suffix
                + coded_suffix
                + (coded_suffix + leaves) / 8
                + code.memory_usage();
            if coding == SuffixCoding::Coded || coded_size * 8 <= plain_size * 7 {
                let (coded, coded_ends) = encode_records(&bytes, &ends, per_level, &code);
                let s = FullSuffixes::new(coded.into(), coded_ends.into())?;
                return Ok(s.coded_by(code));
            }
        }
        FullSuffixes::new(bytes.into(), ends)
    }
}

impl core::fmt::Debug for FstBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FstBuilder")
            .field("keys", &self.levels.keys)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl StaticMapBuilder for FstBuilder {
    type Map = Fst;

    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        FstBuilder::push(self, key, value)
    }

    fn finish(self) -> Result<Fst, Error> {
        FstBuilder::finish(self)
    }
}

/// A static ordered map from byte strings to `u64` (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fst {
    trie: Trie,
    values: Frozen<u64>,
    suffixes: Option<FullSuffixes>,
    empty: Option<u64>,
    len: usize,
    config: Config,
}

impl Fst {
    /// Builds a map from pairs in strictly increasing key order.
    pub fn from_sorted<K: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, u64)>,
    ) -> Result<Fst, Error> {
        let mut b = FstBuilder::new();
        for (k, v) in pairs {
            b.push(k.as_ref(), v)?;
        }
        b.finish()
    }

    /// The configuration the map was built with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The value of `key`. With [`KeyStorage::UniquePrefixes`], the value of the only key that
    /// can equal `key` (it may not: compare against the full key you keep).
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        if key.is_empty() {
            return self.empty;
        }
        let hit = self.trie.lookup(key)?;
        match &self.suffixes {
            Some(s) => {
                let (value, suffix) = s.get_at(hit.level, hit.leaf);
                s.matches(suffix, &key[hit.depth..]).then_some(value)
            }
            None => self.values.get(hit.leaf).copied(),
        }
    }

    /// [`get`](Self::get) for many keys: `out[i]` answers `keys[i]`.
    ///
    /// The lookups are interleaved, 16 in flight, each step prefetching what that query reads
    /// next, so their cache misses overlap; then the suffix records of the hits are fetched
    /// together. Same answers as one-by-one calls, several times the throughput on maps larger
    /// than the cache.
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        const CHUNK: usize = 64;
        let mut hits = [None; CHUNK];
        let mut direct = [false; CHUNK];
        for (ks, os) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let hits = &mut hits[..ks.len()];
            self.trie.lookup_batch(ks, hits);
            if let Some(s) = &self.suffixes {
                for (h, d) in hits.iter().zip(direct.iter_mut()) {
                    *d = h.is_some_and(|h| s.prefetch_at(h.level, h.leaf));
                }
                for (h, &d) in hits.iter().zip(direct.iter()) {
                    if let (Some(h), false) = (h, d) {
                        s.prefetch_record(h.leaf);
                    }
                }
            }
            for ((k, h), o) in ks.iter().zip(hits.iter()).zip(os.iter_mut()) {
                *o = match h {
                    _ if k.is_empty() => self.empty,
                    None => None,
                    Some(h) => match &self.suffixes {
                        Some(s) => {
                            let (value, suffix) = s.get_at(h.level, h.leaf);
                            s.matches(suffix, &k[h.depth..]).then_some(value)
                        }
                        None => self.values.get(h.leaf).copied(),
                    },
                };
            }
        }
    }

    /// True when `key` is stored (see [`get`](Self::get) for unique-prefix maps).
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries within `range` in key order, as an [`Iterator`] and
    /// [`DoubleEndedIterator`] of owned `(key, value)` pairs; empty for an empty or inverted
    /// range.
    ///
    /// ```
    /// use mlpdex::fst::Fst;
    ///
    /// let fst = Fst::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// for (key, value) in fst.range("a".."c") {
    ///     println!("{key:?} = {value}");
    /// }
    /// let all: Vec<(Vec<u8>, u64)> = fst.range(..).collect();
    /// assert_eq!(all.len(), 3);
    /// assert_eq!(fst.range("b"..).next_back(), Some((b"cat".to_vec(), 3)));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    ///
    /// The trie stores no key whole, so each key is rebuilt and copied out; for zero-copy
    /// scans use [`cursor`](Self::cursor), whose keys borrow its buffer.
    pub fn range<R>(&self, range: R) -> Range<'_>
    where
        R: KeyRange,
    {
        self.cursor(range).into_entries()
    }

    /// Every entry in key order (see [`range`](Self::range)).
    pub fn iter(&self) -> Range<'_> {
        self.range(..)
    }

    /// A lending cursor over the entries within `range`, from both ends: each key borrows the
    /// cursor until its next step, so a scan copies nothing.
    ///
    /// ```
    /// use mlpdex::fst::Fst;
    ///
    /// let fst = Fst::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// let mut c = fst.cursor("b"..);
    /// let mut total = 0;
    /// while let Some((key, value)) = c.next() {
    ///     assert!(key >= &b"b"[..]);
    ///     total += value;
    /// }
    /// assert_eq!(total, 5);
    /// assert_eq!(fst.cursor(..).collect_keys(), [b"ant", b"bee", b"cat"]);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn cursor<R>(&self, range: R) -> Cursor<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        Cursor::new(self, start, end)
    }

    /// The first key within `bound` from below and its value (`≥ k`, `> k`, or the first key).
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        if let Some(v) = self.empty.filter(|_| after_start(b"", bound)) {
            return Some((Vec::new(), v));
        }
        // This thread's spare path, not a cursor's own: a seek allocates nothing but the key
        // it returns.
        let mut p = Path::spare();
        let found = self.seek_front(&mut p, bound).then(|| {
            let mut key = Vec::new();
            let value = self.entry_at(&p, &mut key);
            (key, value)
        });
        p.recycle();
        found
    }

    /// The value of the first key within `bound` from below, without building the key.
    #[inline]
    pub fn lower_bound_value(&self, bound: Bound<&[u8]>) -> Option<u64> {
        if self.empty.is_some() && after_start(b"", bound) {
            return self.empty;
        }
        let mut p = Path::spare_keyless();
        let found = self.seek_front(&mut p, bound).then(|| self.value(&p));
        p.recycle();
        found
    }

    /// [`lower_bound_value`](Self::lower_bound_value) for many bounds: `out[i]` answers
    /// `bounds[i]`. The seeks are interleaved, 16 in flight, each step prefetching what that
    /// seek reads next, so their cache misses overlap. Same answers as one-by-one calls.
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `bounds`.
    pub fn lower_bound_value_batch(&self, bounds: &[Bound<&[u8]>], out: &mut [Option<u64>]) {
        assert!(out.len() >= bounds.len(), "output shorter than the batch");
        let cmp = |key: &[u8], level, depth, pos| self.leaf_cmp(key, level, depth, pos);
        self.trie.seek_ge_many(
            bounds.len(),
            |i| bounds[i],
            true,
            &cmp,
            |i, path, found| {
                out[i] = if self.empty.is_some() && after_start(b"", bounds[i]) {
                    self.empty
                } else {
                    found.then(|| self.value(path))
                };
            },
        );
    }

    /// The last key within `bound` from above and its value (`≤ k`, `< k`, or the last key).
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        let mut c = Cursor::new(self, Bound::Unbounded, bound);
        c.next_back().map(|(k, v)| (k.to_vec(), v))
    }

    /// Bytes of memory owned: trie, values and suffixes.
    pub fn memory_usage(&self) -> usize {
        self.trie.memory_usage() + self.values.bytes() + self.suffix_bytes()
    }

    /// Bytes of the structure alone: trie and suffixes, values excluded.
    pub fn structure_bytes(&self) -> usize {
        let values = match &self.suffixes {
            Some(s) => s.len() * 8,
            None => self.values.bytes(),
        };
        self.memory_usage() - values
    }

    fn suffix_bytes(&self) -> usize {
        self.suffixes.as_ref().map_or(0, FullSuffixes::memory_usage)
    }

    /// True when the suffixes below the trie are stored encoded (see [`SuffixCoding`]).
    pub fn suffixes_coded(&self) -> bool {
        self.suffixes.as_ref().is_some_and(|s| s.code().is_some())
    }

    /// Sizes of the trie's parts.
    pub fn stats(&self) -> TrieStats {
        self.trie.stats()
    }

    /// Serializes the map (format in the `raw::format` module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        format::write(
            FST_MAGIC,
            self.kind(),
            self.config.dense_ratio,
            self.len as u64,
            self.empty,
            &self.trie,
            &self.values,
            self.suffixes.as_ref(),
            None,
            self.config.suffix_coding,
        )
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) from a copy of `buf`; checks
    /// everything (see `raw::format`), so a corrupt buffer is an error, never a panic.
    pub fn from_bytes(buf: &[u8]) -> Result<Fst, Error> {
        Self::load(&Shared::copy_of(buf))
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) in place: the map keeps `buf` (a
    /// `Vec<u8>`, an `Arc<[u8]>`, a `&'static [u8]`, or a memory map such as `memmap2::Mmap`
    /// with that crate's `stable_deref_trait` feature) and reads its labels, bit vectors,
    /// suffixes and values where they lie, allocating only the rank and select directories.
    /// That needs `buf` to start at an 8-aligned address (allocations and maps do); sections
    /// that are not aligned are copied. Checks exactly what [`from_bytes`](Self::from_bytes)
    /// checks.
    ///
    /// ```
    /// use mlpdex::fst::Fst;
    /// use std::sync::Arc;
    ///
    /// let map = Fst::from_sorted([(&b"ant"[..], 1), (b"bee", 2)])?;
    /// let image: Arc<[u8]> = map.to_bytes().into();
    /// let loaded = Fst::from_shared(Arc::clone(&image))?;
    /// assert_eq!(loaded.get(b"bee"), Some(2));
    /// assert!(loaded.is_zero_copy());
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn from_shared<B>(buf: B) -> Result<Fst, Error>
    where
        B: StableDeref<Target = [u8]> + Send + Sync + 'static,
    {
        Self::load(&Shared::new(buf))
    }

    /// True when the map's bulk (labels, bit vectors, suffixes, values) lies in a buffer it was
    /// loaded from rather than in memory of its own.
    pub fn is_zero_copy(&self) -> bool {
        self.trie.is_borrowed()
    }

    fn load(shared: &Shared) -> Result<Fst, Error> {
        let img = format::read(shared, FST_MAGIC)?;
        let keys = match img.kind {
            SuffixKind::Full => KeyStorage::Complete,
            SuffixKind::None => KeyStorage::UniquePrefixes,
            _ => {
                return Err(Error::Format {
                    what: "an FST stores full suffixes or none",
                    offset: 12,
                });
            }
        };
        let mut suffixes = img.full;
        if let Some(s) = &mut suffixes {
            s.index_levels(&img.trie.leaves_per_level());
        }
        Ok(Fst {
            trie: img.trie,
            values: img.values,
            empty: img.empty,
            len: img.keys as usize,
            config: Config {
                dense_ratio: img.ratio,
                keys,
                suffix_coding: img.coding,
            },
            suffixes,
        })
    }

    /// The value of leaf `leaf`.
    #[inline]
    fn value(&self, p: &Path) -> u64 {
        let leaf = p.leaf(&self.trie);
        match &self.suffixes {
            Some(s) => s.get_at(p.level(), leaf).0,
            None => self.values.get(leaf).copied().unwrap_or(0),
        }
    }

    fn kind(&self) -> SuffixKind {
        match self.config.keys {
            KeyStorage::Complete => SuffixKind::Full,
            KeyStorage::UniquePrefixes => SuffixKind::None,
        }
    }

    /// Orders the key of the leaf at `pos` on `level` against `key`, whose first `depth` bytes
    /// the trie matched (see `raw::trie::LeafCmp`).
    #[inline]
    fn leaf_cmp(
        &self,
        key: &[u8],
        level: usize,
        depth: usize,
        pos: usize,
    ) -> Option<core::cmp::Ordering> {
        let s = self.suffixes.as_ref()?;
        let suffix = s.get_at(level, self.trie.leaf(level, pos)).1;
        Some(s.cmp_rest(suffix, key.get(depth..).unwrap_or(&[])))
    }

    /// Positions `p` at the first trie key within `bound` from below.
    fn seek_front(&self, p: &mut Path, bound: Bound<&[u8]>) -> bool {
        let Some((k, strict)) = bound_key(bound) else {
            return p.first(&self.trie);
        };
        let cmp = |level, depth, pos| self.leaf_cmp(k, level, depth, pos);
        p.seek_ge(&self.trie, k, strict, &cmp)
    }

    /// Positions `p` at the last trie key within `bound` from above.
    fn seek_back(&self, p: &mut Path, bound: Bound<&[u8]>) -> bool {
        let Some((k, strict)) = bound_key(bound) else {
            return p.last(&self.trie);
        };
        let cmp = |level, depth, pos| self.leaf_cmp(k, level, depth, pos);
        p.seek_le(&self.trie, k, strict, &cmp)
    }

    /// Writes the key at `p` into `out` and answers its value: one leaf rank and one suffix
    /// record read for both (a cursor step used to find each twice).
    fn entry_at(&self, p: &Path, out: &mut Vec<u8>) -> u64 {
        out.clear();
        out.extend_from_slice(p.key());
        let leaf = p.leaf(&self.trie);
        match &self.suffixes {
            Some(s) => {
                let (value, suffix) = s.get_at(p.level(), leaf);
                s.extend_key(suffix, out);
                value
            }
            None => self.values.get(leaf).copied().unwrap_or(0),
        }
    }
}

crate::api::static_map_impls!(Fst);

/// Every entry of an [`Fst`] in key order, for merges, which read a whole map: the trie's
/// per-level cursors give each leaf, and per-level counters its number and where its record
/// starts, so a step takes no rank and no select (a [`Cursor`] ranks each leaf and selects
/// its record: 28% of a merge's instructions on e-mail keys, callgrind).
///
/// Leaves are numbered level by level, each level's in key order, and records follow leaf
/// numbers: so the next leaf on a level is the one after the last one met there, and its
/// record the one after that leaf's.
pub(crate) struct Scan<'a> {
    fst: &'a Fst,
    path: Path,
    /// Per trie level: the number of its next leaf, and where that leaf's record starts.
    levels: Vec<(usize, RecordAt)>,
    key: Vec<u8>,
    state: ScanState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScanState {
    /// The empty key (when stored) comes first.
    Empty,
    First,
    Next,
    Done,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(fst: &'a Fst) -> Scan<'a> {
        let mut first = 0;
        let levels = fst
            .trie
            .leaves_per_level()
            .into_iter()
            .enumerate()
            .map(|(level, n)| {
                let at = fst
                    .suffixes
                    .as_ref()
                    .map_or_else(RecordAt::default, |s| s.record_at(level, first));
                let level = (first, at);
                first += n;
                level
            })
            .collect();
        Scan {
            fst,
            path: Path::new(),
            levels,
            key: Vec::new(),
            state: ScanState::Empty,
        }
    }

    /// The next entry; `None` after the last.
    pub(crate) fn next(&mut self) -> Option<(&[u8], u64)> {
        let t = &self.fst.trie;
        let moved = match self.state {
            ScanState::Empty => {
                self.state = ScanState::First;
                if let Some(v) = self.fst.empty {
                    return Some((&[], v));
                }
                self.path.first(t)
            }
            ScanState::First => self.path.first(t),
            ScanState::Next => self.path.next(t),
            ScanState::Done => false,
        };
        if !moved {
            self.state = ScanState::Done;
            return None;
        }
        self.state = ScanState::Next;
        let Some((leaf, at)) = self.levels.get_mut(self.path.level()) else {
            // A trie's leaves lie on its levels.
            self.state = ScanState::Done;
            return None;
        };
        debug_assert_eq!(
            *leaf,
            self.path.leaf(t),
            "per-level leaf counter out of step"
        );
        self.key.clear();
        self.key.extend_from_slice(self.path.key());
        let value = match &self.fst.suffixes {
            Some(s) => {
                let (value, suffix) = s.read_at(at);
                s.extend_key(suffix, &mut self.key);
                value
            }
            None => self.fst.values.get(*leaf).copied().unwrap_or(0),
        };
        *leaf += 1;
        Some((&self.key, value))
    }
}

/// The iterator of [`Fst::range`] and [`Fst::iter`]: a [`Cursor`] whose keys are copied out.
pub type Range<'a> = Entries<Cursor<'a>>;

/// One end of a cursor.
#[derive(Clone, Debug, Default)]
struct End {
    path: Path,
    key: Vec<u8>,
    /// The value at `path`.
    value: u64,
}

/// A cursor over a range of an [`Fst`], from both ends (a lending iterator: each key borrows the
/// cursor, which rebuilds keys from the trie's per-level positions).
///
/// The front is positioned when the cursor is made; the back on the first `next_back`. Each
/// step moves one per-level cursor along its level and descends with one rank and one select
/// per level; an entry costs a few cache misses at most.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    fst: &'a Fst,
    front: End,
    back: End,
    /// Whether the back end is positioned (done by the first `next_back`, from `end`).
    back_ready: bool,
    end: Bound<Vec<u8>>,
    /// The empty key is in range and not yet yielded.
    empty_pending: bool,
    /// No trie key remains.
    trie_done: bool,
    out: Vec<u8>,
}

impl<'a> Cursor<'a> {
    fn new(fst: &'a Fst, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let mut c = Cursor {
            fst,
            front: End::default(),
            back: End::default(),
            back_ready: false,
            end: end.map(<[u8]>::to_vec),
            empty_pending: false,
            trie_done: true,
            out: Vec::new(),
        };
        if is_empty_range(start, end) {
            return c;
        }
        c.empty_pending = fst.empty.is_some() && after_start(b"", start) && before_end(b"", end);
        c.trie_done = !fst.seek_front(&mut c.front.path, start);
        if !c.trie_done {
            c.front.value = fst.entry_at(&c.front.path, &mut c.front.key);
        }
        c
    }

    /// The next entry from the front.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(&[u8], u64)> {
        if self.empty_pending {
            self.empty_pending = false;
            return Some((&[], self.fst.empty.unwrap_or(0)));
        }
        if self.trie_done {
            return None;
        }
        let f = &mut self.front;
        if !before_end(&f.key, self.end.as_ref().map(Vec::as_slice)) {
            self.trie_done = true;
            return None;
        }
        if self.back_ready {
            match f.key.cmp(&self.back.key) {
                core::cmp::Ordering::Greater => {
                    self.trie_done = true;
                    return None;
                }
                core::cmp::Ordering::Equal => self.trie_done = true,
                core::cmp::Ordering::Less => {}
            }
        }
        let t = &self.fst.trie;
        let value = f.value;
        core::mem::swap(&mut self.out, &mut f.key);
        if f.path.next(t) {
            f.value = self.fst.entry_at(&f.path, &mut f.key);
        } else {
            self.trie_done = true;
        }
        Some((&self.out, value))
    }

    /// The next entry from the back.
    pub fn next_back(&mut self) -> Option<(&[u8], u64)> {
        if !self.trie_done {
            let t = &self.fst.trie;
            if !self.back_ready {
                self.back_ready = true;
                let end = self.end.as_ref().map(Vec::as_slice);
                if self.fst.seek_back(&mut self.back.path, end) {
                    self.back.value = self.fst.entry_at(&self.back.path, &mut self.back.key);
                } else {
                    self.trie_done = true;
                }
            }
            if !self.trie_done {
                let b = &mut self.back;
                match b.key.cmp(&self.front.key) {
                    core::cmp::Ordering::Less => self.trie_done = true,
                    core::cmp::Ordering::Equal => self.trie_done = true,
                    core::cmp::Ordering::Greater => {}
                }
                if b.key >= self.front.key {
                    let value = b.value;
                    core::mem::swap(&mut self.out, &mut b.key);
                    if b.path.prev(t) {
                        b.value = self.fst.entry_at(&b.path, &mut b.key);
                    } else {
                        self.trie_done = true;
                    }
                    return Some((&self.out, value));
                }
            }
        }
        if self.empty_pending {
            self.empty_pending = false;
            return Some((&[], self.fst.empty.unwrap_or(0)));
        }
        None
    }
}

crate::api::lending_cursor!(Cursor, "Fst");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{KeyShape, TestRng};

    /// A scan yields what a cursor over the whole map yields, on every key shape (the empty
    /// key, prefix keys, 0x00/0xFF runs, long keys), dense and sparse levels, both key
    /// storages, plain and encoded suffixes.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "over 15 minutes under miri even on 24-key sets; the FST has no unsafe code"
    )]
    fn scans_answer_like_cursors() {
        let sizes = [0, 1, 7, 300, 3000];
        let ratios = [0, 1, 64, u32::MAX];
        for &shape in KeyShape::ALL {
            for (seed, &n) in sizes.iter().enumerate() {
                let mut rng = TestRng::new(seed as u64 * 97 + 5);
                let mut keys: Vec<Vec<u8>> = (0..n).map(|_| shape.gen_key(&mut rng)).collect();
                keys.sort();
                keys.dedup();
                for dense_ratio in ratios {
                    for (storage, suffix_coding) in [
                        (KeyStorage::Complete, SuffixCoding::Plain),
                        (KeyStorage::Complete, SuffixCoding::Coded),
                        (KeyStorage::UniquePrefixes, SuffixCoding::Auto),
                    ] {
                        let config = Config {
                            dense_ratio,
                            keys: storage,
                            suffix_coding,
                        };
                        let mut b = FstBuilder::with_config(config);
                        for (i, k) in keys.iter().enumerate() {
                            b.push(k, i as u64 * 3 + 1).unwrap();
                        }
                        let fst = b.finish().unwrap();
                        let mut want = Vec::new();
                        fst.cursor(..).collect_into(&mut want);
                        let mut got = Vec::new();
                        let mut scan = Scan::new(&fst);
                        while let Some((k, v)) = scan.next() {
                            got.push((k.to_vec(), v));
                        }
                        assert_eq!(scan.next(), None, "a finished scan stays finished");
                        assert_eq!(got, want, "{shape:?} n {n} {config:?}");
                    }
                }
            }
        }
    }
}
