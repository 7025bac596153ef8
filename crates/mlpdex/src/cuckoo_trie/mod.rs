//! The Cuckoo Trie: an ordered map whose lookups read all trie levels in parallel
//! (Zeitak and Morrison, SOSP 2021; `cuckoo-trie.txt`).
//!
//! ```
//! use mlpdex::cuckoo_trie::CuckooTrie;
//!
//! let mut t = CuckooTrie::new();
//! t.insert(b"apple", 3)?;
//! t.insert(b"banana", 5)?;
//! t.insert(b"cherry", 7)?;
//! assert_eq!(t.get(b"banana"), Some(&5));
//!
//! // Keys in ["a", "c"), in order; no trait import, no turbofish.
//! let a_to_c: Vec<(&[u8], &i32)> = t.range("a".."c").collect();
//! assert_eq!(a_to_c, [(&b"apple"[..], &3), (&b"banana"[..], &5)]);
//!
//! // The entry API, as in `BTreeMap`.
//! *t.entry(b"cherry").or_insert(0) += 1;
//! *t.entry(b"damson").or_insert(0) += 1;
//! assert_eq!(t[b"cherry"], 8);
//! assert_eq!(t.len(), 4);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # What it is
//!
//! A path-compressed trie of unique key prefixes (§4) whose nodes live in a bucketized cuckoo
//! hash table keyed by node name. Because a lookup knows every prefix of its key up front, it
//! computes the hashes of the next `D` prefixes and prefetches their buckets while it verifies
//! the current node (§4.1): the DRAM reads of one search overlap instead of forming a chain.
//! Hash entries store no key: a 15-byte entry holds a 4-bit tag, the name's last symbol, a color
//! and its parent's color, which with a *peelable* hash identify the node exactly (§4.2).
//! Single-child chains become jump nodes (§4.3); each leaf points to a record holding the full
//! key and the value, and leaves form a sorted list through locators (§4.4).
//!
//! Beyond the paper's implementation: deletion with tail collapse and jump merging (§4.5),
//! automatic growth and shrinking, prefix keys and the empty key, reverse iteration, and
//! generic values.
//!
//! # When to use it
//!
//! For large maps (far beyond the last-level cache) of short to medium keys whose unique
//! prefixes are short: random or hashed ids, integers, user names. A lookup costs about two
//! DRAM round trips whatever the map's size: one for the trie levels, read in parallel, and one
//! for the record the leaf points to. When the keys come in groups (a multi-get, the probe
//! side of a join), [`get_batch`](CuckooTrie::get_batch) makes those two rounds once per 16
//! keys ([`docs/results/concurrent-batch.md`](../../../../docs/results/concurrent-batch.md)).
//!
//! Keys with long shared prefixes (file paths, URLs) put their leaves deep: a `paths` key's leaf
//! is about 84 symbols down, past some 40 nodes, and a descent costs about 10,000 instructions
//! (§4.7 admits the case). For point lookups on such keys, turn on
//! [`Config::key_index`]: one more entry per key, under a hash of the whole key, which `get`
//! probes instead of descending (measured in
//! [`docs/results/long-keys.md`](../../../../docs/results/long-keys.md)).
//!
//! When not: seeks to absent keys and scans over keys with long shared prefixes, which still
//! descend the trie; small maps that fit in cache, where a B-tree is as fast and simpler;
//! workloads dominated by long scans, where a B-tree's sorted leaves win; write-heavy
//! loads, where an insert costs more than a `BTreeMap`'s (the `load` rows of the measured
//! tables below).
//!
//! Measured against `BTreeMap`, `congee` and `crossbeam-skiplist` (lookups, loads, scans,
//! the concurrent map's scaling, the prefetch depth sweep), as the suite
//! `bench/suites/cuckoo-trie.toml` wrote them:
//! [`docs/results/cuckoo-trie.md`](../../../../docs/results/cuckoo-trie.md); at 50M keys:
//! [`docs/results/50m.md`](../../../../docs/results/50m.md).
//!
//! # Contract
//!
//! - [`CuckooTrie`] has the API of `BTreeMap<Vec<u8>, V>` with `&[u8]` keys, as inherent
//!   methods (entry API, ranges and iterators in both directions, `FromIterator`, `Extend`,
//!   `Index`, `Clone`, `PartialEq`, a `Debug` listing the entries), and implements
//!   [`OrderedMap`] by forwarding to them. `&mut self` for writes, so any number of readers or
//!   one writer, checked by the borrow checker. It is `Send`/`Sync` when `V` is.
//! - Insertion returns `Result`; where std's shape has no room for one, the method panics
//!   instead and a `try_` twin returns the error: [`entry`](CuckooTrie::entry) /
//!   [`try_entry`](CuckooTrie::try_entry), `Extend` and `FromIterator` /
//!   [`try_extend`](CuckooTrie::try_extend), [`reserve`](CuckooTrie::reserve) /
//!   [`try_reserve`](CuckooTrie::try_reserve).
//! - [`ConcurrentCuckooTrie`] implements [`ConcurrentOrderedMap`](crate::ConcurrentOrderedMap):
//!   every operation through `&self` from any number of threads, linearizable point
//!   operations and seeks, optimistic readers over per-bucket seqlocks, epoch-based
//!   reclamation of records (§5). Writers run in parallel: each commits the buckets it
//!   changed under their locks, taken in bucket order with compare-and-swap (no deadlock), and
//!   runs again when another writer changed what it read; a resize freezes the table, so
//!   writers wait for it while readers go on. Its
//!   range visits walk the prefetching cursor (forwards or backwards) in validated batches of
//!   32 keys. Contract and protocol: the docs of [`ConcurrentCuckooTrie`].
//! - Keys: any byte string up to [`CuckooTrie::MAX_KEY_LEN`] bytes (1 MiB − 1); longer keys
//!   are rejected with [`Error::KeyTooLong`]. Order is lexicographic, a proper prefix first.
//! - Growth never fails an insert short of the operating system refusing memory
//!   ([`Error::OutOfMemory`]) or the table passing 2³² hash values (about 700 million keys).
//! - `memory_usage` counts the struct, the table (its exact mapped bytes, or the allocated
//!   block of a table under 4 KiB), the records (requested bytes) and the writer's scratch
//!   buffers. An empty `CuckooTrie<u64>` owns 3584 bytes (a 2 KiB first table) and maps
//!   nothing. Scratch grows with the longest key written (megabytes for
//!   a `MAX_KEY_LEN` key) and is given back after about a dozen writes that need far less;
//!   up to 64 KiB of it is always kept.
//!
//! # Invariants
//!
//! Listed in `raw/trie.rs` (structure) and `raw/table.rs` (table), and checked by
//! [`CuckooTrie::check_invariants`], which the tests call throughout their random runs.
//!
//! # Layout
//!
//! - `raw::table`: 64-byte buckets of four 15-byte entries and a version word, with one file
//!   per concern under `raw/table/`: `entry` (the entry format), `hash` (the peelable hash),
//!   `session` (read sessions of shared tables), `search`, `insert` (cuckoo insertion by
//!   breadth-first search) and `update`.
//! - `raw::seqlock`: the bucket seqlock protocol (with its loom model).
//! - `raw::trie`: the trie's shared types, with one file per operation under `raw/trie/`:
//!   `search` (search with prefetching, predecessor search, seeks), `insert` (three cases),
//!   `remove`, `resize` (rebuild on growth and shrinking) and `audit`.
//! - `raw::cursor`: in-order walk for forward ranges, prefetching a window of children per
//!   node (the leaf list of §4.4 costs one dependent bucket read per key; the walk does not).
//! - `raw::typed`: the single-threaded map's typed layer: owns the records, hands out
//!   `&V`/`&mut V` under the borrow rules, and holds every `unsafe` of that map; also the
//!   range walker (cursor plus a lookahead of prefetched records) and the owned drain.
//! - `record`: records (value and key in one allocation).
//! - `concurrent`: the concurrent map, over `raw::shared` (its typed layer: the
//!   epoch-protected trie, typed records, validated reads, reclamation).
//! - `entry`: the entry API; `iter`: the iterators beyond [`Range`] and the
//!   `IntoIterator`/`FromIterator`/`Extend` impls.
//! - this file: the single-threaded map and its std traits.

pub mod concurrent;
mod entry;
mod iter;
mod raw;
mod record;

// The prefix hash and the key-to-symbol reader of the search, for `testing::internals` (the
// micro-benchmarks).
#[cfg(any(test, feature = "testing"))]
pub(crate) use raw::{table::Hasher, trie::Syms};

pub use concurrent::ConcurrentCuckooTrie;
pub use entry::{Entry, OccupiedEntry, VacantEntry};
pub use iter::{IntoIter, IntoKeys, IntoValues, IterMut, Keys, Values, ValuesMut};

use crate::KeyRange;
use core::fmt;
use core::ops::{Bound, Index};

use raw::trie::Params;
use raw::typed::{Leaf, TypedTrie, Walk};

use crate::key::Escaped;
use crate::{Error, OrderedMap};

/// Construction settings; [`Config::default`] holds the measured defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Bits per trie symbol, 1..=5 (default 5, as in the paper). Smaller symbols make deeper
    /// tries with smaller nodes.
    pub symbol_bits: u32,
    /// How many prefixes ahead a search prefetches (`D` in §4.1), 1..=16. Default 8, from
    /// the sweep in the module docs: flat from 4 to 10 on random 8-byte keys, best at 8–10 on
    /// email addresses, whose jump nodes (up to 9 symbols) outrun a shorter pipeline.
    pub prefetch_depth: usize,
    /// Largest fraction of table slots in use before the table grows, 0.5..=0.95.
    pub max_load_factor: f64,
    /// Buckets of the first table, ≥ 1 (default 32: 2 KiB, so an empty map owns under
    /// 4 KiB). A table under 4 KiB comes from the allocator at its exact size; larger ones
    /// are mapped in whole 4 KiB pages of 64-byte buckets. The table never shrinks below it.
    pub initial_buckets: usize,
    /// Whether tables of 2 MiB and more ask for transparent huge pages; default
    /// [`HugePages::Auto`](crate::HugePages::Auto).
    pub huge_pages: crate::HugePages,
    /// Keep a second table entry per key, stored under a hash of the whole key, so that
    /// point lookups ([`get`](CuckooTrie::get), [`contains_key`](CuckooTrie::contains_key),
    /// [`get_mut`](CuckooTrie::get_mut), [`get_batch`](CuckooTrie::get_batch)) probe it once
    /// instead of descending the trie: their cost stops growing with the depth of the key's
    /// leaf, which on keys with long shared prefixes (paths, URLs) is most of it. Costs one
    /// more 15-byte entry per key and its upkeep on every insert and remove. Seeks probe it
    /// too when their bound is an included key the map holds
    /// ([`lower_bound`](CuckooTrie::lower_bound) and
    /// [`upper_bound`](CuckooTrie::upper_bound) of `Included(k)`: `k` answers itself), and
    /// otherwise descend as before, a few hundred instructions later; ranges and scans are
    /// unchanged. Default `false`. [`ConcurrentCuckooTrie`] keeps it the same way: its `get`
    /// and seeks probe the index in one read session.
    pub key_index: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            symbol_bits: 5,
            prefetch_depth: 8,
            max_load_factor: 0.85,
            initial_buckets: 32,
            huge_pages: crate::HugePages::Auto,
            key_index: false,
        }
    }
}

impl Config {
    /// The raw trie's settings for values of type `V`.
    fn params<V>(&self) -> Params {
        Params {
            symbol_bits: self.symbol_bits,
            prefetch_depth: self.prefetch_depth,
            max_load_factor: self.max_load_factor,
            initial_buckets: self.initial_buckets,
            val_size: core::mem::size_of::<V>(),
            huge_pages: self.huge_pages,
            key_index: self.key_index,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        let what = if !(1..=5).contains(&self.symbol_bits) {
            "symbol_bits must be 1..=5"
        } else if !(1..=raw::MAX_PREFETCH).contains(&self.prefetch_depth) {
            "prefetch_depth must be 1..=16"
        } else if !(0.5..=0.95).contains(&self.max_load_factor) {
            "max_load_factor must be 0.5..=0.95"
        } else if self.initial_buckets == 0 {
            "initial_buckets must be at least 1"
        } else {
            return Ok(());
        };
        Err(Error::InvalidConfig { what })
    }
}

/// The Cuckoo Trie ordered map; see the [module docs](self).
///
/// Every operation is an inherent method, so no trait import is needed;
/// [`OrderedMap`] forwards to them for generic code.
///
/// ```
/// use mlpdex::cuckoo_trie::CuckooTrie;
///
/// let mut t = CuckooTrie::new();
/// assert_eq!(t.insert(b"apple", 1).unwrap(), None);
/// t.insert(b"banana", 2).unwrap();
/// assert_eq!(t.insert(b"apple", 3).unwrap(), Some(1));
/// assert_eq!(t.get(b"apple"), Some(&3));
/// assert_eq!(t.len(), 2);
/// assert_eq!(t.first(), Some((&b"apple"[..], &3)));
/// assert_eq!(t.range(..).count(), 2);
/// assert_eq!(t.remove(b"banana"), Some(2));
/// assert!(!t.contains_key(b"banana"));
/// ```
///
/// It has the rest of `BTreeMap<Vec<u8>, V>`'s API too:
///
/// ```
/// use mlpdex::cuckoo_trie::CuckooTrie;
///
/// let pairs = [(b"b".to_vec(), 2), (b"a".to_vec(), 1), (b"c\xff".to_vec(), 3)];
/// let mut t: CuckooTrie<u32> = pairs.into_iter().collect();
/// assert_eq!(format!("{t:?}"), r#"{"a": 1, "b": 2, "c\xff": 3}"#);
/// assert_eq!(t["b"], 2);
/// for (_, v) in t.iter_mut() {
///     *v *= 10;
/// }
/// t.retain(|k, _| k != b"b");
/// let copy = t.clone();
/// assert_eq!(t.pop_first(), Some((b"a".to_vec(), 10)));
/// assert_ne!(t, copy);
/// t.extend([(b"d".as_slice(), 40)]);
/// let owned: Vec<(Vec<u8>, u32)> = t.into_iter().collect();
/// assert_eq!(owned, [(b"c\xff".to_vec(), 30), (b"d".to_vec(), 40)]);
/// ```
pub struct CuckooTrie<V> {
    raw: TypedTrie<V>,
    config: Config,
}

impl<V> CuckooTrie<V> {
    /// Longest key accepted, in bytes.
    pub const MAX_KEY_LEN: usize = raw::table::MAX_KEY_LEN;

    /// An empty map with the default [`Config`]; it owns under 4 KiB until keys arrive.
    ///
    /// ```
    /// use mlpdex::cuckoo_trie::CuckooTrie;
    ///
    /// let t: CuckooTrie<u64> = CuckooTrie::new();
    /// assert!(t.memory_usage() <= 4096);
    /// ```
    ///
    /// # Panics
    ///
    /// If the allocator refuses the first table (2 KiB); use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("allocating the first table")
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let raw = TypedTrie::new(config.params::<V>())?;
        Ok(CuckooTrie { raw, config })
    }

    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Bytes mapped directly from the operating system (the hash table once it reaches a
    /// 4 KiB page), a part of [`memory_usage`](Self::memory_usage); the rest (records, a
    /// table under a page) comes from the global allocator.
    pub fn mapped_bytes(&self) -> usize {
        self.raw.mapped_bytes()
    }

    /// Audits every structural invariant (slow: reads the whole table). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.raw.audit()
    }

    /// The value stored under `key`, mutably.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.raw.get_mut(key)
    }

    /// The value stored under `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.raw.get(key)
    }

    /// [`get`](Self::get) for many keys: `out[i]` answers `keys[i]`.
    ///
    /// A lookup makes two dependent rounds of DRAM reads: the trie's buckets (read in
    /// parallel) and then the leaf's record. A batch makes them once per 16 keys: the first
    /// buckets of every search are prefetched before any search runs, and the records of all
    /// leaves found before any key is compared. Same answers as one-by-one calls.
    ///
    /// ```
    /// use mlpdex::cuckoo_trie::CuckooTrie;
    ///
    /// let mut t = CuckooTrie::new();
    /// t.insert(b"apple", 3)?;
    /// t.insert(b"cherry", 7)?;
    /// let keys: [&[u8]; 3] = [b"cherry", b"banana", b"apple"];
    /// let mut out = [None; 3];
    /// t.get_batch(&keys, &mut out);
    /// assert_eq!(out, [Some(&7), None, Some(&3)]);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn get_batch<'a>(&'a self, keys: &[&[u8]], out: &mut [Option<&'a V>]) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        self.raw.get_batch(keys, out);
    }

    /// Stores `value` under `key`, returning the value it replaces; [`Error::KeyTooLong`] for a
    /// key over [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes (the map is then unchanged),
    /// [`Error::OutOfMemory`] if the table cannot grow.
    pub fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        check_len(key)?;
        Ok(self.raw.insert(key, value)?.1)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.raw.remove(key)
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// A double-ended iterator over the entries with keys in `range`, in key order: `..`,
    /// `"a".."c"`, `b"a".as_slice()..=b"c"` or a pair of [`Bound`]s (see [`KeyRange`]).
    /// An empty or inverted range yields nothing (where `BTreeMap::range` would panic).
    ///
    /// ```
    /// use mlpdex::cuckoo_trie::CuckooTrie;
    /// use std::ops::Bound;
    ///
    /// let t: CuckooTrie<u32> = [("a", 1), ("b", 2), ("cc", 3)].into_iter().collect();
    /// assert_eq!(t.range(..).count(), 3);
    /// assert_eq!(t.range("a".."c").count(), 2);
    /// assert_eq!(t.range(b"a".as_slice()..b"cc").count(), 2);
    /// let k: &[u8] = b"a";
    /// let after_a: Vec<_> = t.range((Bound::Excluded(k), Bound::Unbounded)).rev().collect();
    /// assert_eq!(after_a, [(&b"cc"[..], &3), (&b"b"[..], &2)]);
    /// ```
    pub fn range<R>(&self, range: R) -> Range<'_, V>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        Range {
            walk: self.raw.walk(start, end),
        }
    }

    /// Bytes the map owns: the table, the records (keys and values) and the writer's scratch
    /// buffers.
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() + self.raw.heap_bytes()
    }

    /// Removes every key, dropping the values, and shrinks the table back to its first size.
    pub fn clear(&mut self) {
        self.raw.clear();
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(&[u8], &V)> {
        self.raw.first().map(Leaf::item)
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Option<(&[u8], &V)> {
        self.raw.last().map(Leaf::item)
    }

    /// The first entry whose key is `>= k` for `Included(k)`, `> k` for `Excluded(k)`; the
    /// first entry for `Unbounded`.
    #[inline]
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        // With the key index, a present key answers itself in one probe.
        if let Bound::Included(k) = bound
            && let Some(hit) = self.raw.seek_exact(k)
        {
            return Some(hit);
        }
        self.raw.lower_bound(bound).map(Leaf::item)
    }

    /// The last entry whose key is `<= k` for `Included(k)`, `< k` for `Excluded(k)`; the
    /// last entry for `Unbounded`.
    #[inline]
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        if let Bound::Included(k) = bound
            && let Some(hit) = self.raw.seek_exact(k)
        {
            return Some(hit);
        }
        self.raw.upper_bound(bound).map(Leaf::item)
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// A double-ended iterator over every entry, in key order.
    pub fn iter(&self) -> Range<'_, V> {
        self.range(..)
    }

    /// An empty map (default [`Config`]) whose table holds `keys` keys without growing.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the table; use [`with_config`](Self::with_config)
    /// and [`try_reserve`](Self::try_reserve) to handle that as an error.
    pub fn with_capacity(keys: usize) -> Self {
        let mut t = Self::new();
        t.reserve(keys);
        t
    }

    /// Grows the table now, if needed, so that `additional` more keys fit without growing
    /// during inserts. The size is an estimate (1.5 table entries per key, enough for random
    /// keys; keys with long shared prefixes take more nodes, and the map still grows then).
    /// Removals may later shrink the table back, as they do without a reservation.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the table; [`try_reserve`](Self::try_reserve) returns
    /// [`Error::OutOfMemory`] instead.
    pub fn reserve(&mut self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            panic!("CuckooTrie::reserve: {e}");
        }
    }

    /// [`reserve`](Self::reserve), or [`Error::OutOfMemory`] with the map unchanged.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), Error> {
        self.raw.reserve(self.len().saturating_add(additional))
    }

    /// Shrinks the table to the size growth would give the keys present (entries at half the
    /// load limit), as removals do once the table is a quarter of that full. Keeps the current
    /// table if it is no larger or the operating system refuses the memory.
    pub fn shrink_to_fit(&mut self) {
        self.raw.shrink_to_fit();
    }

    /// The stored key equal to `key` and its value.
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        self.raw.get_key_value(key)
    }

    /// The entry with the smallest key (as [`first`](Self::first), named as in `BTreeMap`).
    pub fn first_key_value(&self) -> Option<(&[u8], &V)> {
        self.first()
    }

    /// The entry with the largest key (as [`last`](Self::last), named as in `BTreeMap`).
    pub fn last_key_value(&self) -> Option<(&[u8], &V)> {
        self.last()
    }

    /// Removes `key`, returning the stored key and its value.
    pub fn remove_entry(&mut self, key: &[u8]) -> Option<(Vec<u8>, V)> {
        let v = self.remove(key)?;
        Some((key.to_vec(), v))
    }

    /// Removes and returns the entry with the smallest key.
    pub fn pop_first(&mut self) -> Option<(Vec<u8>, V)> {
        let key = self.first()?.0.to_vec();
        let v = self.remove(&key)?;
        Some((key, v))
    }

    /// Removes and returns the entry with the largest key.
    pub fn pop_last(&mut self) -> Option<(Vec<u8>, V)> {
        let key = self.last()?.0.to_vec();
        let v = self.remove(&key)?;
        Some((key, v))
    }

    /// Keeps only the entries for which `keep` returns true, visiting them in key order.
    pub fn retain<F>(&mut self, mut keep: F)
    where
        F: FnMut(&[u8], &mut V) -> bool,
    {
        let doomed: Vec<Vec<u8>> = self
            .iter_mut()
            .filter_map(|(k, v)| (!keep(k, v)).then(|| k.to_vec()))
            .collect();
        for k in doomed {
            self.remove(&k);
        }
    }
}

/// The value of a key; `t[b"k"]`, `t["k"]`, `t[&vec]`.
///
/// # Panics
///
/// If the key is absent, as `BTreeMap`'s `Index` does; [`CuckooTrie::get`] returns an
/// `Option`.
impl<V, K: AsRef<[u8]> + ?Sized> Index<&K> for CuckooTrie<V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key.as_ref())
            .expect("CuckooTrie: no entry for the key")
    }
}

/// A map with the same config and entries (the table is sized for them up front).
impl<V: Clone> Clone for CuckooTrie<V> {
    fn clone(&self) -> Self {
        let mut t = CuckooTrie::with_config(self.config.clone())
            .and_then(|mut t| t.try_reserve(self.len()).map(|()| t))
            .expect("CuckooTrie::clone: the operating system refused the table");
        for (k, v) in self {
            t.insert(k, v.clone())
                .expect("CuckooTrie::clone: a stored key fits, and the table was reserved");
        }
        t
    }
}

/// Equal when both hold the same keys with equal values (configs are not compared).
impl<V: PartialEq> PartialEq for CuckooTrie<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<V: Eq> Eq for CuckooTrie<V> {}

/// [`Error::KeyTooLong`] unless `key` fits.
fn check_len(key: &[u8]) -> Result<(), Error> {
    if key.len() > raw::table::MAX_KEY_LEN {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: raw::table::MAX_KEY_LEN,
        });
    }
    Ok(())
}

impl<V> Default for CuckooTrie<V> {
    fn default() -> Self {
        Self::new()
    }
}

/// The entries in key order, as std's maps print them: `{"a": 1, "b\x00": 2}`. Keys print
/// as quoted strings with `"`, `\\` and bytes outside printable ASCII escaped (`\xff`); a key
/// over 64 bytes prints its first 48 and last 8 bytes and its length.
impl<V: fmt::Debug> fmt::Debug for CuckooTrie<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (Escaped(k), v)))
            .finish()
    }
}

/// A double-ended iterator over a key range of a [`CuckooTrie`], in key order.
///
/// Going forward walks the trie in order, prefetching the buckets of the next several children
/// of each node together (see `raw/cursor.rs`) and each record a few steps ahead; going
/// backward runs the same walk in reverse (started by one predecessor search), prefetching
/// each record one step ahead.
pub struct Range<'a, V> {
    walk: Walk<'a, V>,
}

impl<V> fmt::Debug for Range<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (front, back) = self.walk.ends();
        f.debug_struct("Range")
            .field("front", &front.map(Escaped))
            .field("back", &back.map(Escaped))
            .finish()
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.walk.next().map(Leaf::item)
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.walk.next_back().map(Leaf::item)
    }
}

/// Forwards to the inherent methods of [`CuckooTrie`]. (`V: Debug` because
/// [`OrderedMap::Value`], here `&V`, is.)
impl<V: fmt::Debug> OrderedMap<V> for CuckooTrie<V> {
    type Key<'a>
        = &'a [u8]
    where
        V: 'a;

    type Value<'a>
        = &'a V
    where
        V: 'a;

    type Range<'a>
        = Range<'a, V>
    where
        V: 'a;

    #[inline]
    fn get(&self, key: &[u8]) -> Option<&V> {
        CuckooTrie::get(self, key)
    }
    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        CuckooTrie::insert(self, key, value)
    }
    fn remove(&mut self, key: &[u8]) -> Option<V> {
        CuckooTrie::remove(self, key)
    }
    fn len(&self) -> usize {
        CuckooTrie::len(self)
    }
    fn range<R>(&self, range: R) -> Range<'_, V>
    where
        R: KeyRange,
    {
        CuckooTrie::range(self, range)
    }
    fn memory_usage(&self) -> usize {
        CuckooTrie::memory_usage(self)
    }
    fn clear(&mut self) {
        CuckooTrie::clear(self)
    }
    fn is_empty(&self) -> bool {
        CuckooTrie::is_empty(self)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        CuckooTrie::contains_key(self, key)
    }
    fn iter(&self) -> Range<'_, V> {
        CuckooTrie::iter(self)
    }
    fn first(&self) -> Option<(&[u8], &V)> {
        CuckooTrie::first(self)
    }
    fn last(&self) -> Option<(&[u8], &V)> {
        CuckooTrie::last(self)
    }
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        CuckooTrie::lower_bound(self, bound)
    }
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        CuckooTrie::upper_bound(self, bound)
    }
}

#[cfg(test)]
mod tests {
    //! Small-size unit tests (also the ones to run under miri); the long differential and
    //! property suites are in `tests/cuckoo_trie.rs`.
    use super::*;
    use crate::testing::{KeyShape, TestRng, differential_ordered};
    use std::collections::BTreeMap;

    fn audited_run(cfg: Config, shape: KeyShape, seed: u64, steps: usize) {
        let mut m: CuckooTrie<u64> = CuckooTrie::with_config(cfg).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = TestRng::new(seed);
        for step in 0..steps {
            let k = shape.gen_key(&mut rng);
            if rng.chance(0.6) {
                let v = rng.next_u64();
                assert_eq!(
                    m.insert(&k, v).unwrap(),
                    model.insert(k.clone(), v),
                    "step {step}"
                );
            } else {
                assert_eq!(m.remove(&k), model.remove(&k), "step {step}");
            }
            let probe = shape.gen_key(&mut rng);
            assert_eq!(m.get(&probe), model.get(&probe), "step {step}");
            assert_eq!(m.get(&k), model.get(&k), "step {step}");
            if step % 7 == 0
                && let Err(e) = m.check_invariants()
            {
                panic!("seed {seed} step {step} ({shape:?}): {e}");
            }
        }
        let got: Vec<_> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, want);
        let got: Vec<_> = m.iter().rev().map(|(k, v)| (k.to_vec(), *v)).collect();
        let want: Vec<_> = model.iter().rev().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, want);
    }

    /// Steps of the runs below: short under miri, which interprets every table probe.
    const fn steps(long_keys: bool) -> usize {
        match (cfg!(miri), long_keys) {
            (false, false) => 300,
            (false, true) => 60,
            (true, _) => 24,
        }
    }

    /// The key shapes of the runs below. Under miri, not [`KeyShape::Long`] nor
    /// [`KeyShape::Mixed`] (which draws some long keys): a 1–8 KiB key is thousands of jump
    /// nodes, more interpretation than all the short keys together; nor [`KeyShape::Paths`],
    /// whose 100–350-byte keys cost the same way. The short shapes already reach every kind
    /// of node and split.
    fn shapes() -> impl Iterator<Item = KeyShape> {
        KeyShape::ALL_BYTES
            .iter()
            .copied()
            .chain([KeyShape::U64])
            .filter(|&s| {
                !(cfg!(miri) && matches!(s, KeyShape::Long | KeyShape::Mixed | KeyShape::Paths))
            })
    }

    #[test]
    fn audited_small_runs() {
        // Under miri, the two ends only.
        let all_bits: &[u32] = if cfg!(miri) { &[1, 5] } else { &[1, 3, 5] };
        for shape in shapes() {
            for &bits in all_bits {
                let cfg = Config {
                    symbol_bits: bits,
                    ..Config::default()
                };
                let steps = steps(shape == KeyShape::Long);
                audited_run(cfg, shape, 7 + u64::from(bits), steps);
            }
        }
    }

    #[test]
    fn audited_small_runs_with_key_index() {
        // A one-bucket table, so the index is rebuilt by resizes too. Under miri, two shapes:
        // the index's unsafe reads are the records' keys, which every shape reaches alike.
        let under_miri = [KeyShape::RandomBytes, KeyShape::PrefixChains];
        for shape in shapes().filter(|s| !cfg!(miri) || under_miri.contains(s)) {
            let cfg = Config {
                key_index: true,
                initial_buckets: 1,
                ..Config::default()
            };
            audited_run(cfg, shape, 91, steps(shape == KeyShape::Long));
        }
    }

    #[test]
    fn differential_default() {
        for shape in shapes() {
            let steps = if cfg!(miri) { steps(false) } else { 2000 };
            differential_ordered(CuckooTrie::<u64>::new, shape, 1, steps);
        }
    }

    /// The typed layer's unsafe paths (shared and unique value references, owned drains,
    /// entries) with heap-owning values: small enough for miri, which checks the aliasing.
    #[test]
    fn std_api_with_owning_values() {
        let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"b\x00", b"b\xff", b"c"];
        let mut t: CuckooTrie<String> = keys.iter().map(|k| (k, format!("{k:?}"))).collect();
        let mut model: BTreeMap<Vec<u8>, String> = keys
            .iter()
            .map(|k| (k.to_vec(), format!("{k:?}")))
            .collect();
        let (mut a, mut b) = (t.iter_mut(), model.iter_mut());
        while let (Some((ka, va)), Some((kb, vb))) = (a.next_back(), b.next_back()) {
            assert_eq!(ka, kb.as_slice());
            va.push('!');
            vb.push('!');
            if let (Some((_, va)), Some((_, vb))) = (a.next(), b.next()) {
                va.push('?');
                vb.push('?');
            }
        }
        t.entry(b"ab").or_default().push('+');
        model.entry(b"ab".to_vec()).or_default().push('+');
        t.entry(b"new").or_insert_with(|| "x".into()).push('n');
        model.entry(b"new".to_vec()).or_insert("x".into()).push('n');
        if let Entry::Occupied(o) = t.entry(b"a") {
            assert_eq!(o.remove(), model.remove(b"a".as_slice()).unwrap());
        }
        t.retain(|k, v| {
            v.push('r');
            k.len() != 1
        });
        model.retain(|k, v| {
            v.push('r');
            k.len() != 1
        });
        assert_eq!(t.pop_last(), model.pop_last());
        let mut owned = t.clone().into_iter();
        let mut want = model.clone().into_iter();
        assert_eq!(owned.next_back(), want.next_back());
        assert_eq!(owned.next(), want.next());
        drop(owned);
        let got: Vec<(Vec<u8>, String)> = t.into_iter().collect();
        assert_eq!(got, model.into_iter().collect::<Vec<_>>());
    }

    /// `get_batch` against `get` on prefix keys, the empty key, 0x00/0xFF bytes and absent
    /// keys, in batches that end inside, at and past the 16-key chunks (sized for miri: the
    /// batched search reads records through raw pointers).
    #[test]
    fn get_batch_answers_as_get_does() {
        let mut t = CuckooTrie::new();
        let mut keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![0xff; 3]];
        keys.extend((0u8..30).map(|i| vec![b'k', i, 0xff]));
        keys.extend((0u8..5).map(|i| vec![b'k'; usize::from(i) + 1]));
        for (i, k) in keys.iter().enumerate().step_by(2) {
            t.insert(k, i).unwrap();
        }
        let probes: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        for len in [0, 1, 16, 17, probes.len()] {
            let mut out = vec![None; len + 3];
            t.get_batch(&probes[..len], &mut out);
            for (k, got) in probes[..len].iter().zip(&out) {
                assert_eq!(*got, t.get(k), "key {k:?} in a batch of {len}");
            }
            assert!(
                out[len..].iter().all(Option::is_none),
                "wrote past the batch"
            );
        }
    }

    #[test]
    fn symbol_groups_read_as_single_symbols_do() {
        // Every symbol width, key lengths around every group and load boundary, bytes that
        // set every bit pattern; groups past the end hold end symbols.
        let mut rng = TestRng::new(7);
        // Under miri (no unsafe code here, but its callers' reads depend on it): the lengths
        // around the first two groups of every width.
        let lens = if cfg!(miri) { 0..12 } else { 0..24 };
        for bits in 1..=5 {
            let syms = raw::trie::Syms::new(bits);
            for len in lens.clone() {
                let key: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                for key in [key.clone(), vec![0; len], vec![0xFF; len]] {
                    for j in 0..syms.count(len).div_ceil(8) + 2 {
                        let g = syms.group(&key, j).to_le_bytes();
                        for (k, &sym) in g.iter().enumerate() {
                            assert_eq!(
                                u32::from(sym),
                                syms.at(&key, 8 * j + k),
                                "{bits} {key:?} {j}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn zero_sized_values_and_empty_key() {
        let mut m: CuckooTrie<()> = CuckooTrie::new();
        assert_eq!(m.insert(b"", ()).unwrap(), None);
        assert_eq!(m.insert(b"", ()).unwrap(), Some(()));
        assert_eq!(m.insert(b"a", ()).unwrap(), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.first().map(|(k, _)| k.to_vec()), Some(vec![]));
        assert_eq!(m.remove(b""), Some(()));
        m.check_invariants().unwrap();
    }
}
