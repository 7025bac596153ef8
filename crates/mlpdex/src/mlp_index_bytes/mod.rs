//! `MlpIndexBytes`: an ordered map for long byte-string keys whose searches probe many prefix
//! lengths at once, over sorted leaves that scans read in runs.
//!
//! ```
//! use mlpdex::mlp_index_bytes::MlpIndexBytes;
//!
//! let mut m = MlpIndexBytes::new();
//! m.insert(b"/usr/lib/libc.so.6", 1)?;
//! m.insert(b"/usr/lib/libm.so.6", 2)?;
//! m.insert(b"/usr/share/doc/README", 3)?;
//! assert_eq!(m.get(b"/usr/lib/libm.so.6"), Some(&2));
//!
//! // Everything under /usr/lib/, in order; no trait import, no turbofish.
//! let lib: Vec<(&[u8], &i32)> = m.range(&b"/usr/lib/"[..]..&b"/usr/lib0"[..]).collect();
//! assert_eq!(lib.len(), 2);
//! // The first key at or after a point, and the last one before it.
//! assert_eq!(m.lower_bound(std::ops::Bound::Included(b"/usr/m")).map(|e| *e.1), Some(3));
//! assert_eq!(m.iter().next_back().map(|e| *e.1), Some(3));
//!
//! // The entry API, as in `BTreeMap`.
//! *m.entry(b"/usr/lib/libc.so.6").or_insert(0) += 10;
//! assert_eq!(m[&b"/usr/lib/libc.so.6"[..]], 11);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # What it is
//!
//! The MLP paper's index for byte strings (its §4 names string keys as future work), built the
//! way Wormhole (Wu et al., EuroSys 2019) orders a hash table: keys live in sorted *leaves* of up
//! to 64, each leaf starting at an *anchor* (a short string that separates it from the leaf
//! before), and a hash table holds every prefix of every anchor. A search finds the longest
//! prefix of its key in that table, a search over prefix lengths since the set is closed under
//! taking prefixes; the node it lands on names the leaf. Where Wormhole probes one length at a
//! time, each round here probes up to 16 lengths with their hash buckets prefetched together
//! (memory-level parallelism), and the first round probes the lengths where recent searches
//! ended (a run of adjacent lengths around each mode: URLs end near the host or deep in the
//! path), so most searches take one round. The leaf is then one more round: it keeps
//! a one-byte hash tag per key for exact lookups and eight key bytes per key past the leaf's
//! common prefix for seeks, so only the key that matches is read from the leaf's key arena,
//! and its values inline, so a seek's prefetch of the leaf brings the value it lands on.
//!
//! # When to use it
//!
//! Large maps of long keys with long shared prefixes (file paths, URLs, composite keys,
//! e-mail addresses) that need both point lookups and ordered access: seeks and scans.
//! A lookup costs three to four DRAM round trips whatever the key's length; a scan reads each
//! leaf's values sequentially, a DRAM round trip per 32–64 entries, where a trie walks a
//! node per key.
//!
//! Measured against `BTreeMap`, the Cuckoo Trie (with and without its key index), the FST, the
//! `fst` crate and the skip list on five long-key datasets and `rand-8`, 4M keys, as the suite
//! `bench/suites/long-keys.toml` wrote them:
//! [`docs/results/long-keys.md`](../../../../docs/results/long-keys.md).
//!
//! When not: short fixed-width keys (8-byte integers), where [`MlpIndex`](crate::mlp_index)
//! and the [Cuckoo Trie](crate::cuckoo_trie) are smaller and faster; small maps that fit in
//! cache, where a `BTreeMap` is as fast. For readers on many threads, use its concurrent twin,
//! [`ConcurrentMlpIndexBytes`] (writers take turns).
//!
//! # Contract
//!
//! - [`MlpIndexBytes`] has the shape of `BTreeMap<Vec<u8>, V>` with `&[u8]` keys, as inherent
//!   methods, and implements [`OrderedMap`] by forwarding to them. Writes
//!   take `&mut self`; the map is `Send`/`Sync` when `V` is.
//! - Any byte string of up to [`MlpIndexBytes::MAX_KEY_LEN`] bytes (16 MiB) is a key: the empty
//!   key, keys with 0x00 and 0xFF bytes, keys that are prefixes of others. Insertion returns
//!   `Result` and refuses a longer key with [`Error::KeyTooLong`], the map unchanged; where
//!   std's shape has no room for one, the method panics instead and a `try_` twin returns the
//!   error: [`entry`](MlpIndexBytes::entry) / [`try_entry`](MlpIndexBytes::try_entry),
//!   `Extend` and `FromIterator` / [`try_extend`](MlpIndexBytes::try_extend).
//! - The table stores hashes of prefixes, not their bytes; a search confirms the leaf it
//!   reaches against the leaf's two fences before answering, and a collision (which a random
//!   per-map hash seed makes improbable) costs a slower search, never a wrong answer.
//! - Leaves are split when full; a leaf that removals leave a quarter full or less merges with
//!   a neighbour when the two fit in half a leaf (its anchor's prefixes leave the table), so
//!   memory follows the map down.
//! - Invariants, checked by [`check_invariants`](MlpIndexBytes::check_invariants): leaves in key
//!   order, each key between its leaf's fences, no empty leaf but the first, the table holding
//!   exactly the anchors' prefixes with their leaf links.

// The entry API holds no unsafe code; the map's core only in its leaf table and the leaves'
// copy-on-write versions (`raw::leaves`, `Leaf::cow_copy`, for the concurrent map); the
// mutable iterator, which hands out values while it walks the leaves, does.
pub mod concurrent;
#[forbid(unsafe_code)]
mod entry;
mod iter;
#[deny(unsafe_code)]
mod raw;

use core::fmt;
use core::ops::Bound;

pub use concurrent::ConcurrentMlpIndexBytes;
pub use entry::{Entry, OccupiedEntry, VacantEntry};
use iter::Cursor;
pub use iter::{IntoIter, IterMut, Range};
use raw::{Pos, RawMap};

use crate::key::{KeyRange, is_empty_range};
use crate::{Error, OrderedMap};

/// An ordered map from byte strings to `V`. See the [module docs](self).
pub struct MlpIndexBytes<V> {
    raw: RawMap<V>,
}

/// A fresh random seed for the prefix hashes.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x6D6C_7064_6578);
    h.finish()
}

/// `Err(KeyTooLong)` for a key over the limit.
fn check_len(key: &[u8]) -> Result<(), Error> {
    if key.len() > MlpIndexBytes::<()>::MAX_KEY_LEN {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: MlpIndexBytes::<()>::MAX_KEY_LEN,
        });
    }
    Ok(())
}

impl<V> MlpIndexBytes<V> {
    /// The longest key accepted, 16 MiB (a leaf's keys share one arena with 32-bit offsets).
    pub const MAX_KEY_LEN: usize = 16 << 20;

    /// An empty map.
    pub fn new() -> Self {
        MlpIndexBytes {
            raw: RawMap::new(random_seed()),
        }
    }

    /// Number of keys stored.
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True when no key is stored.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw.len() == 0
    }

    /// The value stored under `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.raw.find(key).map(|p| self.raw.entry(p).1)
    }

    /// The stored key equal to `key`, with its value.
    #[inline]
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        self.raw.find(key).map(|p| self.raw.entry(p))
    }

    /// The value stored under `key`, mutably.
    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let p = self.raw.find(key)?;
        Some(self.raw.val_mut(p))
    }

    /// Looks up every key of `keys`, `out[i]` receiving the value of `keys[i]`, with the leaf
    /// reads of neighbouring lookups overlapped: the searches of a group of keys run and
    /// prefetch their leaves before any leaf is read. Same answers as one-by-one
    /// [`get`](Self::get)s.
    ///
    /// The Cuckoo Trie's batched lookup, for code written against both maps. Here it has not
    /// measured reliably faster than a loop of `get` (file paths, batches of 64): each search
    /// round already keeps up to 16 buckets in flight.
    ///
    /// ```
    /// use mlpdex::mlp_index_bytes::MlpIndexBytes;
    ///
    /// let mut m = MlpIndexBytes::new();
    /// m.insert(b"apple", 3)?;
    /// m.insert(b"cherry", 7)?;
    /// let keys: [&[u8]; 3] = [b"cherry", b"banana", b"apple"];
    /// let mut out = [None; 3];
    /// m.get_batch(&keys, &mut out);
    /// assert_eq!(out, [Some(&7), None, Some(&3)]);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn get_batch<'a>(&'a self, keys: &[&[u8]], out: &mut [Option<&'a V>]) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        let mut pos = [None; raw::BATCH];
        // `out[keys.len()..]` is left alone.
        let out = &mut out[..keys.len()];
        for (ks, os) in keys.chunks(raw::BATCH).zip(out.chunks_mut(raw::BATCH)) {
            self.raw.find_batch(ks, &mut pos[..ks.len()]);
            for (o, p) in os.iter_mut().zip(pos) {
                *o = p.map(|p| self.raw.entry(p).1);
            }
        }
    }

    /// An empty map with room for `keys` keys before its prefix table grows (see
    /// [`reserve`](Self::reserve)).
    ///
    /// # Panics
    ///
    /// If the allocator refuses the memory; [`try_reserve`](Self::try_reserve) returns
    /// [`Error::OutOfMemory`] instead.
    pub fn with_capacity(keys: usize) -> Self {
        let mut m = Self::new();
        m.reserve(keys);
        m
    }

    /// Makes room now for `additional` more keys in the prefix table and the leaf directory, so
    /// that inserting them does not rehash the table. An estimate: leaves fill to about two
    /// thirds, and each adds a quarter more prefixes to the table than the present ones did
    /// on average (4 while the map has few leaves: file paths measured up to 3.6, URLs 2.4,
    /// fixed-width integers 1). Leaves are still allocated one at a time as they split.
    ///
    /// # Panics
    ///
    /// If the allocator refuses the memory; [`try_reserve`](Self::try_reserve) returns
    /// [`Error::OutOfMemory`] instead.
    pub fn reserve(&mut self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            panic!("MlpIndexBytes::reserve: {e}");
        }
    }

    /// [`reserve`](Self::reserve), or [`Error::OutOfMemory`] with the map unchanged.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), Error> {
        self.raw.try_reserve(additional)
    }

    /// Gives back spare capacity: the prefix table shrinks to the size growth would give it
    /// (removals never shrink it), and each leaf drops its removed keys' bytes and its key
    /// arena's slack. (A leaf's slots for 64 values are part of the leaf, used or not.)
    pub fn shrink_to_fit(&mut self) {
        self.raw.shrink_to_fit();
    }

    /// True when `key` is stored.
    #[inline]
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.raw.find(key).is_some()
    }

    /// Stores `value` under `key`; returns the value it replaces, or
    /// [`Error::KeyTooLong`] for a key over [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes (the map is
    /// then unchanged).
    #[inline]
    pub fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        check_len(key)?;
        Ok(self.raw.insert(key, value).1)
    }

    /// Inserts every pair; stops at the first key over [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes
    /// with [`Error::KeyTooLong`] (the pairs before it stay inserted).
    pub fn try_extend<K: AsRef<[u8]>, I: IntoIterator<Item = (K, V)>>(
        &mut self,
        iter: I,
    ) -> Result<(), Error> {
        for (k, v) in iter {
            self.insert(k.as_ref(), v)?;
        }
        Ok(())
    }

    /// Removes `key`; returns its value.
    #[inline]
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.remove_entry(key).map(|(_, v)| v)
    }

    /// Removes `key`; returns the stored key and its value.
    pub fn remove_entry(&mut self, key: &[u8]) -> Option<(Vec<u8>, V)> {
        let p = self.raw.find(key)?;
        Some(self.raw.remove_at(p))
    }

    /// Removes and returns the entry with the smallest key.
    pub fn pop_first(&mut self) -> Option<(Vec<u8>, V)> {
        let p = self.raw.settle_forward(self.raw.start())?;
        Some(self.raw.remove_at(p))
    }

    /// Removes and returns the entry with the largest key.
    pub fn pop_last(&mut self) -> Option<(Vec<u8>, V)> {
        let p = self.raw.before(self.raw.end())?;
        Some(self.raw.remove_at(p))
    }

    /// Entries whose keys lie in `range`, in key order (and backwards with `.rev()`); empty for
    /// an empty or inverted range.
    pub fn range<R: KeyRange>(&self, range: R) -> Range<'_, V> {
        Range::new(&self.raw, self.cursor(range))
    }

    /// Every entry in key order.
    pub fn iter(&self) -> Range<'_, V> {
        Range::new(&self.raw, Cursor::new(self.raw.start(), self.raw.end()))
    }

    /// The walk over `range`'s entries.
    fn cursor<R: KeyRange>(&self, range: R) -> Cursor {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return Cursor::empty(&self.raw);
        }
        let front = match start {
            Bound::Included(k) => self.raw.seek(k, true),
            Bound::Excluded(k) => self.raw.seek(k, false),
            Bound::Unbounded => self.raw.start(),
        };
        let back = match end {
            Bound::Included(k) => self.raw.seek(k, false),
            Bound::Excluded(k) => self.raw.seek(k, true),
            Bound::Unbounded => self.raw.end(),
        };
        Cursor::new(front, back)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The entry with the smallest key (as [`first_key_value`](Self::first_key_value)).
    pub fn first(&self) -> Option<(&[u8], &V)> {
        self.first_key_value()
    }

    /// The entry with the largest key (as [`last_key_value`](Self::last_key_value)).
    pub fn last(&self) -> Option<(&[u8], &V)> {
        self.last_key_value()
    }

    /// The entry with the smallest key.
    pub fn first_key_value(&self) -> Option<(&[u8], &V)> {
        self.raw
            .settle_forward(self.raw.start())
            .map(|p| self.raw.entry(p))
    }

    /// The entry with the largest key.
    pub fn last_key_value(&self) -> Option<(&[u8], &V)> {
        self.raw.before(self.raw.end()).map(|p| self.raw.entry(p))
    }

    /// The first entry after `bound`: the smallest key `>= k` (`Included(k)`), `> k`
    /// (`Excluded(k)`), or the first entry (`Unbounded`).
    #[inline]
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        let p = match bound {
            Bound::Included(k) => self.raw.seek(k, true),
            Bound::Excluded(k) => self.raw.seek(k, false),
            Bound::Unbounded => self.raw.start(),
        };
        self.raw.settle_forward(p).map(|p| self.raw.entry(p))
    }

    /// The last entry before `bound`: the largest key `<= k` (`Included(k)`), `< k`
    /// (`Excluded(k)`), or the last entry (`Unbounded`).
    #[inline]
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        let p = match bound {
            Bound::Included(k) => self.raw.seek(k, false),
            Bound::Excluded(k) => self.raw.seek(k, true),
            Bound::Unbounded => self.raw.end(),
        };
        self.raw.before(p).map(|p| self.raw.entry(p))
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain<F: FnMut(&[u8], &mut V) -> bool>(&mut self, mut keep: F) {
        let mut p = self.raw.settle_forward(self.raw.start());
        while let Some(at) = p {
            let key = self.raw.entry(at).0.to_vec();
            if keep(&key, self.raw.val_mut(at)) {
                p = self.raw.settle_forward(Pos { i: at.i + 1, ..at });
            } else {
                self.raw.remove_at(at);
                // The entries after it moved up, or its leaf went away.
                p = self.raw.settle_forward(self.raw.seek(&key, false));
            }
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.raw.clear();
    }

    /// Bytes the map owns: leaves (keys and values included) and the prefix table.
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() + self.raw.heap_bytes()
    }

    /// Checks the structure's invariants (see the module docs); for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.raw.audit()
    }
}

impl<V> Default for MlpIndexBytes<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for MlpIndexBytes<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (crate::key::Escaped(k), v)))
            .finish()
    }
}

impl<V: Clone> Clone for MlpIndexBytes<V> {
    fn clone(&self) -> Self {
        let mut m = MlpIndexBytes::new();
        m.extend(self.iter().map(|(k, v)| (k, v.clone())));
        m
    }
}

impl<V: PartialEq> PartialEq for MlpIndexBytes<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<V: Eq> Eq for MlpIndexBytes<V> {}

impl<K: AsRef<[u8]>, V> Extend<(K, V)> for MlpIndexBytes<V> {
    /// # Panics
    /// On a key over [`MlpIndexBytes::MAX_KEY_LEN`] bytes; [`MlpIndexBytes::try_extend`]
    /// returns the error instead.
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        if let Err(e) = self.try_extend(iter) {
            panic!("MlpIndexBytes::extend: {e}");
        }
    }
}

impl<K: AsRef<[u8]>, V> FromIterator<(K, V)> for MlpIndexBytes<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = MlpIndexBytes::new();
        m.extend(iter);
        m
    }
}

impl<V> core::ops::Index<&[u8]> for MlpIndexBytes<V> {
    type Output = V;
    /// # Panics
    /// When `key` is not stored, as `BTreeMap` does.
    fn index(&self, key: &[u8]) -> &V {
        self.get(key).expect("key not in the map")
    }
}

impl<V: fmt::Debug> OrderedMap<V> for MlpIndexBytes<V> {
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

    fn get(&self, key: &[u8]) -> Option<&V> {
        MlpIndexBytes::get(self, key)
    }
    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        MlpIndexBytes::insert(self, key, value)
    }
    fn remove(&mut self, key: &[u8]) -> Option<V> {
        MlpIndexBytes::remove(self, key)
    }
    fn len(&self) -> usize {
        MlpIndexBytes::len(self)
    }
    fn range<R: KeyRange>(&self, range: R) -> Range<'_, V> {
        MlpIndexBytes::range(self, range)
    }
    fn memory_usage(&self) -> usize {
        MlpIndexBytes::memory_usage(self)
    }
    fn clear(&mut self) {
        MlpIndexBytes::clear(self)
    }
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        MlpIndexBytes::lower_bound(self, bound)
    }
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        MlpIndexBytes::upper_bound(self, bound)
    }
}
