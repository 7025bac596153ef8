//! The compact ART: a static ordered map from byte strings to `u64`, an adaptive radix tree
//! with every node exactly as large as its children need, prefixes compressed, and leaves
//! stored inside their parents' records (memory-efficient-search-trees.txt, chapter 2).
//!
//! ```
//! use mlpdex::compact_art::CompactArt;
//!
//! // Build once from keys in increasing order; then query from any thread.
//! let map = CompactArt::from_sorted([("apple", 1), ("apricot", 2), ("banana", 3)])?;
//! assert_eq!(map.get(b"apricot"), Some(2));
//! assert_eq!(map.get(b"ap"), None);
//!
//! // Ranges are double-ended iterators of owned (key, value) pairs...
//! let hits: Vec<(Vec<u8>, u64)> = map.range("ap".."b").collect();
//! assert_eq!(hits, [(b"apple".to_vec(), 1), (b"apricot".to_vec(), 2)]);
//! assert_eq!(map.iter().next_back(), Some((b"banana".to_vec(), 3)));
//! // ...and cursors lend each key without copying it.
//! let mut c = map.cursor("apr"..);
//! while let Some((key, value)) = c.next() {
//!     assert_eq!(map.get(key), Some(value));
//! }
//!
//! // Serialize, and load in place or by copy.
//! let loaded = CompactArt::from_bytes(&map.to_bytes())?;
//! assert_eq!(loaded, map);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! Read-mostly data rebuilt in bulk (the static stage of a hybrid index, a snapshot) that you
//! would otherwise keep in a radix tree: it answers lookups, seeks and scans like ART does,
//! byte by byte, in a fraction of ART's memory, and like every trie it stores a prefix shared
//! by many keys once. Measured speed and size against `congee` (an ART), the Cuckoo Trie and
//! the other static maps: [`docs/results/compact-art.md`](../../../../docs/results/compact-art.md).
//!
//! When not to use it: for data that changes (any change is a rebuild; put a hybrid index in
//! front); when memory matters most ([`crate::fst`] and [`crate::compact_btree`] are smaller);
//! for dense integer keys, where the compact B-tree is both smaller and faster.
//!
//! # What it is
//!
//! The thesis' Dynamic-to-Static rules applied to ART:
//!
//! - **Compaction** (§2.2): a node has exactly one record per child, no spare slots. Its
//!   children are found, by the rule that makes the node smallest, through a list of their
//!   bytes (up to 24 children: the thesis' Layout 1), a 256-bit set of them and a rank (up to
//!   255), or directly by byte (256 children: Layout 3).
//! - **Structural reduction** (§2.3): no node headers and no parent pointers. A child's
//!   reference (64 bits) carries its layout, child count, record width, value flag and prefix
//!   length, so where each part of a node lies is computed before the node is read, and a
//!   lookup prefetches the line it needs next (for a 256-bit set, where the child's record
//!   would be if the children were spread evenly) together with the node's first line.
//! - Leaves are **inline** where that is smaller: a node's records are as wide as makes the
//!   node and its leaves smallest (8 to 64 bytes), and a leaf whose rest of key fits its record
//!   (value, length, bytes) lives there, so most lookups end in the record that led to them
//!   rather than one miss further. Longer leaves lie next to their parent.
//! - **Path compression**: a node stores the bytes all keys below it share, so a chain of
//!   single-child nodes never exists; a key that is the prefix of others is its node's value.
//!
//! # Contract
//!
//! - Built in one pass by [`CompactArtBuilder`] from keys in strictly increasing order, with
//!   memory for the open nodes of one path besides the map itself; out-of-order or duplicate
//!   input is [`Error::OutOfOrder`] / [`Error::DuplicateKey`] naming the key. Every key up to
//!   16 MiB is legal: the empty key, prefixes of other keys, 0x00 and 0xFF bytes.
//! - Immutable once built; `CompactArt` is `Send + Sync`, any number of threads may query it.
//! - [`CompactArt::to_bytes`] / [`CompactArt::from_bytes`] / [`CompactArt::from_shared`]: a
//!   versioned little-endian format (see `raw::format`); a damaged or truncated buffer is an
//!   [`Error::Format`], never a panic, and an image that loads has passed the same checks a
//!   built tree satisfies (`raw::audit`), so it answers consistently even when forged with a
//!   valid checksum.
//!
//! # Invariants
//!
//! 1. The arena holds the nodes and out-of-line leaves in post-order: a node's child
//!    subtrees in child order, then its out-of-line leaves, then the node.
//! 2. A node's child bytes strictly increase; a Linear node has at most 24 children, a
//!    Bitmap node as many as bits set, a Full node 256.
//! 3. A key is the concatenation, from the root, of each node's prefix and the byte to the
//!    next child, ending with a leaf's suffix or at a node with a value.

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
use raw::build::Builder;
use raw::path::Path;

/// Builds a [`CompactArt`] from keys in strictly increasing order.
///
/// ```
/// use mlpdex::Error;
/// use mlpdex::compact_art::CompactArtBuilder;
///
/// let mut b = CompactArtBuilder::new();
/// b.push(b"apple", 1)?;
/// b.push(b"cherry", 3)?;
/// // A key out of order is refused, and the builder keeps what it had.
/// assert!(matches!(b.push(b"banana", 2), Err(Error::OutOfOrder { .. })));
/// let map = b.finish()?;
/// assert_eq!((map.len(), map.get(b"cherry")), (2, Some(3)));
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct CompactArtBuilder {
    tree: Builder,
}

impl CompactArtBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
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
    pub fn finish(self) -> Result<CompactArt, Error> {
        Ok(CompactArt {
            tree: self.tree.finish()?,
        })
    }
}

impl StaticMapBuilder for CompactArtBuilder {
    type Map = CompactArt;

    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        CompactArtBuilder::push(self, key, value)
    }

    fn finish(self) -> Result<CompactArt, Error> {
        CompactArtBuilder::finish(self)
    }
}

/// A static ordered map from byte strings to `u64` (see the module docs).
///
/// ```
/// use core::ops::Bound;
/// use mlpdex::compact_art::CompactArt;
///
/// let map = CompactArt::from_sorted((0u64..1000).map(|i| (i.to_be_bytes(), i * 10)))?;
/// assert_eq!(map.get(&7u64.to_be_bytes()), Some(70));
/// let next = map.lower_bound(Bound::Excluded(&7u64.to_be_bytes()));
/// assert_eq!(next, Some((8u64.to_be_bytes().to_vec(), 80)));
/// assert!(map.memory_usage() < 1000 * 32);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CompactArt {
    tree: Tree,
}

impl CompactArt {
    /// Builds a map from pairs in strictly increasing key order.
    pub fn from_sorted<K: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, u64)>,
    ) -> Result<CompactArt, Error> {
        let mut b = CompactArtBuilder::new();
        for (k, v) in pairs {
            b.push(k.as_ref(), v)?;
        }
        b.finish()
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        self.tree.get(key)
    }

    /// Nodes at the top of a tree a lookup reads before [`prefetch_lookup`](Self::prefetch_lookup)
    /// prefetches: on a tree of millions of keys the first two levels stay in cache.
    const PREFETCH_LEVELS: usize = 2;

    /// Starts loading the first lines a [`get`](Self::get) of `key` is likely to miss on
    /// (the third node of its path), without waiting: a caller with other work before its
    /// lookup overlaps the miss with that work. Changes nothing observable.
    ///
    /// ```
    /// use mlpdex::compact_art::CompactArt;
    ///
    /// let m = CompactArt::from_sorted([(&b"ab"[..], 1), (b"cd", 2)])?;
    /// m.prefetch_lookup(b"cd");
    /// // ... other work ...
    /// assert_eq!(m.get(b"cd"), Some(2));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    #[inline]
    pub fn prefetch_lookup(&self, key: &[u8]) {
        self.tree.prefetch(key, Self::PREFETCH_LEVELS);
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.tree.get(key).is_some()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.tree.len
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.tree.len == 0
    }

    /// The entries within `range` in key order, as an [`Iterator`] and
    /// [`DoubleEndedIterator`] of owned `(key, value)` pairs; empty for an empty or inverted
    /// range. For zero-copy scans use [`cursor`](Self::cursor).
    ///
    /// ```
    /// use mlpdex::compact_art::CompactArt;
    ///
    /// let map = CompactArt::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
    /// let all: Vec<(Vec<u8>, u64)> = map.range(..).collect();
    /// assert_eq!(all.len(), 3);
    /// assert_eq!(map.range("b"..).rev().next(), Some((b"cat".to_vec(), 3)));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
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
    /// use mlpdex::compact_art::CompactArt;
    ///
    /// let map = CompactArt::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
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
            return Cursor::new(self, Bound::Excluded(&[]), Bound::Excluded(&[]));
        }
        Cursor::new(self, start, end)
    }

    /// The first entry within `bound` from below (`≥ k`, `> k`, or the first entry).
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        let mut p = Path::default();
        self.seek(&mut p, bound, false);
        p.at.map(|e| (p.key, e.value))
    }

    /// The value of the first entry within `bound` from below, without returning its key.
    #[inline]
    pub fn lower_bound_value(&self, bound: Bound<&[u8]>) -> Option<u64> {
        match bound {
            Bound::Included(k) => self.tree.lower_bound_value(k, false),
            Bound::Excluded(k) => self.tree.lower_bound_value(k, true),
            Bound::Unbounded => self.tree.lower_bound_value(&[], false),
        }
    }

    /// The last entry within `bound` from above (`≤ k`, `< k`, or the last entry).
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        let mut p = Path::default();
        self.seek(&mut p, bound, true);
        p.at.map(|e| (p.key, e.value))
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(Vec<u8>, u64)> {
        self.lower_bound(Bound::Unbounded)
    }

    /// The largest key and its value.
    pub fn last(&self) -> Option<(Vec<u8>, u64)> {
        self.upper_bound(Bound::Unbounded)
    }

    /// Moves `p` to the first entry within `bound` from below (`back`: the last from above).
    fn seek(&self, p: &mut Path, bound: Bound<&[u8]>, back: bool) {
        let tree = &self.tree;
        match (bound, back) {
            (Bound::Unbounded, _) => p.edge(tree, back),
            (Bound::Included(k), false) => _ = p.seek_ge(tree, k, false),
            (Bound::Excluded(k), false) => _ = p.seek_ge(tree, k, true),
            (Bound::Included(k), true) => _ = p.seek_le(tree, k, false),
            (Bound::Excluded(k), true) => _ = p.seek_le(tree, k, true),
        }
    }

    /// A new map with a sorted batch of updates applied: `(key, Some(v))` stores `v` under
    /// `key`, `(key, None)` removes `key`; keys strictly increasing, else
    /// [`Error::OutOfOrder`] / [`Error::DuplicateKey`]. This map is left as it was.
    ///
    /// A trie merge (thesis §5.2.1): subtrees no update reaches are copied whole, so a batch
    /// costs about a copy of the map plus work for each update, rather than a rebuild from
    /// every key. It is how a [`Hybrid`](crate::hybrid::Hybrid) over a compact ART merges.
    ///
    /// ```
    /// use mlpdex::compact_art::CompactArt;
    ///
    /// let map = CompactArt::from_sorted([("ant", 1), ("bee", 2), ("cat", 3)])?;
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
    ) -> Result<CompactArt, Error> {
        Ok(CompactArt {
            tree: self.tree.merged(updates)?,
        })
    }

    /// Bytes of memory owned: the arena of nodes and leaves (values included).
    pub fn memory_usage(&self) -> usize {
        self.tree.memory_usage()
    }

    /// Bytes of the structure alone: everything but the 8-byte values.
    pub fn structure_bytes(&self) -> usize {
        self.memory_usage() - 8 * self.tree.len
    }

    /// Serializes the map (format in the `raw::format` module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        raw::format::write(&self.tree)
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) from a copy of `buf`; checks
    /// everything (see `raw::format`), so a damaged buffer is an error, never a panic.
    pub fn from_bytes(buf: &[u8]) -> Result<CompactArt, Error> {
        Self::load(&Shared::copy_of(buf))
    }

    /// Loads a map written by [`to_bytes`](Self::to_bytes) in place: the map keeps `buf` (a
    /// `Vec<u8>`, an `Arc<[u8]>`, a `&'static [u8]`, or a memory map such as `memmap2::Mmap`
    /// with that crate's `stable_deref_trait` feature) and reads its nodes where they lie.
    /// Checks exactly what [`from_bytes`](Self::from_bytes) checks.
    ///
    /// ```
    /// use mlpdex::compact_art::CompactArt;
    /// use std::sync::Arc;
    ///
    /// let map = CompactArt::from_sorted([(&b"ant"[..], 1), (b"bee", 2)])?;
    /// let image: Arc<[u8]> = map.to_bytes().into();
    /// let loaded = CompactArt::from_shared(Arc::clone(&image))?;
    /// assert_eq!(loaded.get(b"bee"), Some(2));
    /// assert!(loaded.is_zero_copy());
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn from_shared<B>(buf: B) -> Result<CompactArt, Error>
    where
        B: StableDeref<Target = [u8]> + Send + Sync + 'static,
    {
        Self::load(&Shared::new(buf))
    }

    /// True when the map's nodes lie in a buffer it was loaded from rather than in memory of
    /// its own.
    pub fn is_zero_copy(&self) -> bool {
        self.tree.arena.is_borrowed()
    }

    fn load(shared: &Shared) -> Result<CompactArt, Error> {
        Ok(CompactArt {
            tree: raw::format::read(shared)?,
        })
    }
}

crate::api::static_map_impls!(CompactArt, debug);
