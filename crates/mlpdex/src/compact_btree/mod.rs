//! The compact B-tree: a static ordered map from byte strings to `u64`, a B+tree with every
//! node full, no child pointers, and its keys stored in Elias–Fano leaves
//! (memory-efficient-search-trees.txt, chapter 2).
//!
//! ```
//! use mlpdex::compact_btree::CompactBTree;
//!
//! // Build once from keys in increasing order; then query from any thread.
//! let map = CompactBTree::from_sorted([("apple", 1), ("banana", 2), ("cherry", 3)])?;
//! assert_eq!(map.get(b"banana"), Some(2));
//! assert_eq!(map.get(b"blueberry"), None);
//!
//! // Ranges are double-ended iterators of owned (key, value) pairs...
//! let hits: Vec<(Vec<u8>, u64)> = map.range("b"..).collect();
//! assert_eq!(hits, [(b"banana".to_vec(), 2), (b"cherry".to_vec(), 3)]);
//! assert_eq!(map.range(..).next_back(), Some((b"cherry".to_vec(), 3)));
//! // ...and cursors lend each key without copying it.
//! let mut c = map.cursor("b"..="c");
//! while let Some((key, value)) = c.next() {
//!     assert_eq!(map.get(key), Some(value));
//! }
//!
//! // Serialize, and load in place or by copy.
//! let loaded = CompactBTree::from_bytes(&map.to_bytes())?;
//! assert_eq!(loaded, map);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! Read-mostly data that is rebuilt in bulk (the static stage of a hybrid index, an SSTable's
//! index, a snapshot) and is too big to keep in a `BTreeMap`: with their values it takes less
//! than half a `BTreeMap`'s memory, a few bytes a key above the entropy of the key set for
//! integers, and its lookups and seeks are faster (measured below). Keys of any length work; each leaf stores its keys'
//! common prefix once, compresses the next 8 bytes of each key and keeps the rest as it is.
//!
//! When not to use it: for data that changes (any change is a rebuild; put a hybrid index in
//! front), or when memory matters more than speed for string keys with long shared prefixes
//! ([`crate::fst`] stores every shared prefix once, not only each leaf's).
//!
//! Measured speed and size against `BTreeMap` and the other static maps:
//! [`docs/results/compact-btree.md`](../../../../docs/results/compact-btree.md).
//!
//! # What it is
//!
//! The thesis' Dynamic-to-Static rules applied to a B+tree:
//!
//! - **Compaction** (§2.2): every leaf holds exactly [`Config::leaf_keys`] keys, the last one
//!   excepted, so key `p` is in leaf `p / leaf_keys` and its value is `values[p]`, with no
//!   per-node counts and no slack.
//! - **Structural reduction** (§2.3): no child pointers. The inner nodes are a 16-ary search
//!   tree over the leaves' first 8 bytes, each level one array and a child's place computed,
//!   when those bytes tell the leaves apart (integer keys); the same tree over their first 16
//!   bytes when those nearly always do (e-mail addresses); otherwise, layers of the same
//!   leaves as the keys, each holding the first keys of the leaves below it, which strip
//!   shared prefixes as the leaves do. Every way, 10M keys in leaves of 256 need inner nodes
//!   small enough to stay in the cache.
//! - **Compression** (§2.4), lightweight instead of the thesis' Snappy, which cost it 18–34%
//!   of its throughput: a leaf strips its keys' common prefix and stores the next 8 bytes of
//!   each key, its *head*, as an Elias–Fano delta from the leaf's first head (about
//!   `2 + log2(2^64 / keys)` bits a head for random integers, 43 at 10M keys, 2 for
//!   consecutive integers), so reading a key takes two small bit-field reads and no
//!   decompression. Bytes past the head go whole to the leaf's tail bytes.
//!
//! Searching a node compares the prefix, finds the keys with the wanted head in the
//! Elias–Fano bucket of its upper bits (usually one key), and compares the tails of longer
//! keys among those. A lookup prefetches the lines of the low bits and of the value where the
//! head predicts them (integer keys, before the leaf arrives), and those of the bucket's low
//! bits, tail and value as soon as the upper bits name it, so their misses overlap.
//!
//! # Contract
//!
//! - Built in one pass by [`CompactBTreeBuilder`] from keys in strictly increasing order;
//!   out-of-order or duplicate input is [`Error::OutOfOrder`] / [`Error::DuplicateKey`] naming
//!   the key. Every key is legal: the empty key, prefixes of other keys, 0x00 and 0xFF bytes,
//!   long keys.
//! - Immutable once built; `CompactBTree` is `Send + Sync`, any number of threads may query it.
//! - [`CompactBTree::to_bytes`] / [`CompactBTree::from_bytes`]: a versioned little-endian
//!   format (see `raw::format`); a damaged or truncated buffer is an [`Error::Format`], never a
//!   panic, and an image that loads never answers inconsistently, even one forged with a
//!   valid checksum: loading checks every invariant a query relies on (`raw::leaf`), so keys
//!   iterate strictly increasing both ways and `get` and the seeks agree with them.
//!   [`CompactBTree::from_shared`] loads in place from a buffer it keeps (a `Vec<u8>`, an
//!   `Arc<[u8]>`, a memory map), allocating only the inner layers.
//!
//! # Invariants
//!
//! 1. Key `p` is key `p mod leaf_keys` of leaf `p / leaf_keys` of layer 0; in every layer,
//!    every leaf but the last is full.
//! 2. Key `i` of leaf `j` in layer `k + 1` is the first key of leaf `j * leaf_keys + i` in
//!    layer `k`; the top layer has one leaf.
//! 3. Each leaf satisfies the invariants of `raw::leaf` (widths, Elias–Fano shape, classes,
//!    prefix and tail bounds), and keys strictly increase from the first leaf to the last.

mod cursor;
pub(crate) mod raw;

use core::ops::Bound;

pub use cursor::{Cursor, Range};

use crate::Error;
use crate::KeyRange;
use crate::api::StaticMapBuilder;
use crate::key::is_empty_range;
use crate::substrate::frozen::{Shared, StableDeref};
use raw::Tree;
use raw::build::TreeBuilder;

/// Compact B-tree settings.
///
/// ```
/// use mlpdex::compact_btree::{CompactBTreeBuilder, Config};
///
/// let mut b = CompactBTreeBuilder::with_config(Config { leaf_keys: 64 })?;
/// b.push(b"k", 1)?;
/// assert_eq!(b.finish()?.config().leaf_keys, 64);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Keys per leaf (and per inner node): a power of two from 8 to 65,536. Larger leaves
    /// spend fewer bytes on headers and inner layers and share less of their keys' prefixes;
    /// smaller ones scan shorter buckets. Default 256.
    pub leaf_keys: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { leaf_keys: 256 }
    }
}

impl Config {
    /// log2 of `leaf_keys`, or an error when it is not a power of two in range.
    fn shift(&self) -> Result<u32, Error> {
        let shift = self.leaf_keys.trailing_zeros();
        if self.leaf_keys.is_power_of_two() && raw::SHIFTS.contains(&shift) {
            Ok(shift)
        } else {
            Err(Error::InvalidConfig {
                what: "leaf_keys must be a power of two from 8 to 65536",
            })
        }
    }
}

/// Builds a [`CompactBTree`] from keys in strictly increasing order.
///
/// ```
/// use mlpdex::Error;
/// use mlpdex::compact_btree::CompactBTreeBuilder;
///
/// let mut b = CompactBTreeBuilder::new();
/// b.push(b"apple", 1)?;
/// b.push(b"cherry", 3)?;
/// // A key out of order is refused, and the builder keeps what it had.
/// assert!(matches!(b.push(b"banana", 2), Err(Error::OutOfOrder { .. })));
/// let map = b.finish()?;
/// assert_eq!((map.len(), map.get(b"cherry")), (2, Some(3)));
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Debug)]
pub struct CompactBTreeBuilder {
    tree: TreeBuilder,
}

impl Default for CompactBTreeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl CompactBTreeBuilder {
    /// A builder with the default [`Config`].
    pub fn new() -> Self {
        CompactBTreeBuilder {
            tree: TreeBuilder::new(8),
        }
    }

    /// A builder with `config`; [`Error::InvalidConfig`] when `leaf_keys` is out of range.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        Ok(CompactBTreeBuilder {
            tree: TreeBuilder::new(config.shift()?),
        })
    }

    /// Appends `key` with `value`; see [`StaticMapBuilder::push`].
    pub fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        self.tree.push(key, value)
    }

    /// Keys pushed so far.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// True when no key was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.tree.len() == 0
    }

    /// Finishes the map.
    pub fn finish(self) -> Result<CompactBTree, Error> {
        Ok(CompactBTree {
            tree: self.tree.finish(),
        })
    }
}

impl StaticMapBuilder for CompactBTreeBuilder {
    type Map = CompactBTree;

    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        CompactBTreeBuilder::push(self, key, value)
    }

    fn finish(self) -> Result<CompactBTree, Error> {
        CompactBTreeBuilder::finish(self)
    }
}

/// A static ordered map from byte strings to `u64` (see the module docs).
///
/// ```
/// use core::ops::Bound;
/// use mlpdex::compact_btree::CompactBTree;
///
/// let map = CompactBTree::from_sorted((0u64..1000).map(|i| (i.to_be_bytes(), i * 10)))?;
/// assert_eq!(map.get(&7u64.to_be_bytes()), Some(70));
/// let next = map.lower_bound(Bound::Excluded(&7u64.to_be_bytes()));
/// assert_eq!(next, Some((8u64.to_be_bytes().to_vec(), 80)));
/// assert!(map.memory_usage() < 1000 * 16);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CompactBTree {
    tree: Tree,
}

impl CompactBTree {
    /// Builds a map from pairs in strictly increasing key order.
    pub fn from_sorted<K: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, u64)>,
    ) -> Result<CompactBTree, Error> {
        let mut b = CompactBTreeBuilder::new();
        for (k, v) in pairs {
            b.push(k.as_ref(), v)?;
        }
        b.finish()
    }

    /// The configuration the map was built with.
    pub fn config(&self) -> Config {
        Config {
            leaf_keys: 1 << self.tree.shift,
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        let (at, found) = self.tree.search(key, false);
        found.then(|| self.tree.value_at(at))
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.tree.search(key, false).1
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.tree.len() == 0
    }

    /// The entries within `range` in key order, as an [`Iterator`] and
    /// [`DoubleEndedIterator`] of owned `(key, value)` pairs; empty for an empty or inverted
    /// range.
    ///
    /// ```
    /// use mlpdex::compact_btree::CompactBTree;
    ///
    /// let map = CompactBTree::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// let all: Vec<(Vec<u8>, u64)> = map.range(..).collect();
    /// assert_eq!(all.len(), 3);
    /// assert_eq!(map.range("b"..).rev().next(), Some((b"cat".to_vec(), 3)));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    ///
    /// Keys are decoded from their leaves and copied out; for zero-copy scans use
    /// [`cursor`](Self::cursor), whose keys borrow its buffer.
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
    /// use mlpdex::compact_btree::CompactBTree;
    ///
    /// let map = CompactBTree::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// let mut c = map.cursor("b"..);
    /// let mut total = 0;
    /// while let Some((key, value)) = c.next() {
    ///     assert!(key >= &b"b"[..]);
    ///     total += value;
    /// }
    /// assert_eq!(total, 5);
    /// assert_eq!(map.cursor(..).collect_keys(), [b"ant", b"bee", b"cat"]);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn cursor<R>(&self, range: R) -> Cursor<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return Cursor::new(self, 0, 0);
        }
        Cursor::new(self, self.start_of(start), self.end_of(end))
    }

    /// A new map with a sorted batch of updates applied: `(key, Some(v))` stores `v` under
    /// `key`, `(key, None)` removes `key`; keys strictly increasing, else
    /// [`Error::OutOfOrder`] / [`Error::DuplicateKey`]. This map is left as it was, and the
    /// new one has its [`Config`].
    ///
    /// A streaming merge (thesis §5.2.1) that copies whole every leaf it can (those before the
    /// first update, and all but the last when updates only append rising keys) and
    /// re-encodes the others. It is how a [`Hybrid`](crate::hybrid::Hybrid) over a compact
    /// B-tree merges.
    ///
    /// ```
    /// use mlpdex::compact_btree::CompactBTree;
    ///
    /// let map = CompactBTree::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// let next = map.merged([("bee", None), ("cow", Some(4))])?;
    /// assert_eq!(next.iter().collect::<Vec<_>>(), [
    ///     (b"ant".to_vec(), 1), (b"cat".to_vec(), 3), (b"cow".to_vec(), 4),
    /// ]);
    /// assert_eq!(map.len(), 3);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<CompactBTree, Error> {
        Ok(CompactBTree {
            tree: raw::merge::merged(&self.tree, updates)?,
        })
    }

    /// The first entry within `bound` from below (`≥ k`, `> k`, or the first entry).
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        self.entry(self.start_of(bound))
    }

    /// The value of the first entry within `bound` from below, without building its key.
    #[inline]
    pub fn lower_bound_value(&self, bound: Bound<&[u8]>) -> Option<u64> {
        let at = self.start_of(bound);
        (at < self.tree.len()).then(|| self.tree.value_at(at))
    }

    /// The last entry within `bound` from above (`≤ k`, `< k`, or the last entry).
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        self.entry(self.end_of(bound).checked_sub(1)?)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(Vec<u8>, u64)> {
        self.entry(0)
    }

    /// The largest key and its value.
    pub fn last(&self) -> Option<(Vec<u8>, u64)> {
        self.entry(self.tree.len().checked_sub(1)?)
    }

    /// Bytes of memory owned: leaves, tails, values and inner layers.
    pub fn memory_usage(&self) -> usize {
        self.tree.memory_usage()
    }

    /// Bytes of the structure alone: everything but the 8-byte values.
    pub fn structure_bytes(&self) -> usize {
        self.memory_usage() - self.tree.values.bytes()
    }

    /// Serializes the map (format in the `raw::format` module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        raw::format::write(&self.tree)
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) from a copy of `buf`; checks
    /// everything (see `raw::format`), so a damaged buffer is an error, never a panic.
    pub fn from_bytes(buf: &[u8]) -> Result<CompactBTree, Error> {
        Self::load(&Shared::copy_of(buf))
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) in place: the map keeps `buf` (a
    /// `Vec<u8>`, an `Arc<[u8]>`, a `&'static [u8]`, or a memory map such as `memmap2::Mmap`
    /// with that crate's `stable_deref_trait` feature) and reads its leaves, tails and values
    /// where they lie, allocating only the inner layers. That needs `buf` to start at an
    /// 8-aligned address (allocations and maps do); sections that are not aligned are copied.
    /// Checks exactly what [`from_bytes`](Self::from_bytes) checks.
    ///
    /// ```
    /// use mlpdex::compact_btree::CompactBTree;
    /// use std::sync::Arc;
    ///
    /// let map = CompactBTree::from_sorted([(&b"ant"[..], 1), (b"bee", 2)])?;
    /// let image: Arc<[u8]> = map.to_bytes().into();
    /// let loaded = CompactBTree::from_shared(Arc::clone(&image))?;
    /// assert_eq!(loaded.get(b"bee"), Some(2));
    /// assert!(loaded.is_zero_copy());
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn from_shared<B>(buf: B) -> Result<CompactBTree, Error>
    where
        B: StableDeref<Target = [u8]> + Send + Sync + 'static,
    {
        Self::load(&Shared::new(buf))
    }

    /// True when the map's bulk (leaves, tails, values) lies in a buffer it was loaded from
    /// rather than in memory of its own.
    pub fn is_zero_copy(&self) -> bool {
        self.tree.values.is_borrowed()
    }

    fn load(shared: &Shared) -> Result<CompactBTree, Error> {
        Ok(CompactBTree {
            tree: raw::format::read(shared)?,
        })
    }

    /// Position of the first key within `bound` from below.
    #[inline]
    fn start_of(&self, bound: Bound<&[u8]>) -> usize {
        match bound {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.tree.search(k, false).0,
            Bound::Excluded(k) => self.tree.search(k, true).0,
        }
    }

    /// One past the position of the last key within `bound` from above.
    #[inline]
    fn end_of(&self, bound: Bound<&[u8]>) -> usize {
        match bound {
            Bound::Unbounded => self.tree.len(),
            Bound::Included(k) => self.tree.search(k, true).0,
            Bound::Excluded(k) => self.tree.search(k, false).0,
        }
    }

    /// The entry at position `at`, `None` past the end.
    fn entry(&self, at: usize) -> Option<(Vec<u8>, u64)> {
        (at < self.tree.len()).then(|| {
            let mut key = Vec::new();
            self.tree.key_at(at, &mut key);
            (key, self.tree.value_at(at))
        })
    }
}

crate::api::static_map_impls!(CompactBTree, debug);
