//! [`ConcurrentCuckooTrie`]: the Cuckoo Trie shared between threads (cuckoo-trie.txt §5).
//!
//! ```
//! use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
//!
//! let map = ConcurrentCuckooTrie::new();
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let map = &map;
//!         s.spawn(move || {
//!             for i in 0..100u64 {
//!                 let key = format!("user{:03}", 2 * i + t);
//!                 map.insert(key.as_bytes(), i).unwrap();
//!             }
//!         });
//!     }
//! });
//!
//! let guard = mlpdex::epoch::pin(); // entries stay readable while it lives
//! assert_eq!(map.get(b"user007", &guard), Some(&3));
//! let keys: Vec<&[u8]> = map.range("user010".."user013", &guard).map(|(k, _)| k).collect();
//! assert_eq!(keys, [b"user010", b"user011", b"user012"]);
//! assert_eq!(map.iter(&guard).next_back(), Some((&b"user199"[..], &99)));
//! assert_eq!(map.remove(b"user007"), Some(3));
//! assert_eq!(map.len(), 199);
//! ```
//!
//! # When to use it
//!
//! For large maps of short to medium keys read by many threads at once, with point reads and
//! seeks dominating: a lookup costs about two DRAM round trips whatever the map's size, readers
//! never write shared memory and never wait. Its methods and iterators have the same names and
//! signatures as the [`SkipList`](crate::skiplist::SkipList)'s, under the same
//! [`epoch::Guard`](crate::epoch::Guard), so the two are interchangeable: the same code,
//! with no trait and no generics, runs on either.
//!
//! ```
//! use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
//! use mlpdex::skiplist::SkipList;
//!
//! macro_rules! fruit_stand {
//!     ($map:expr) => {{
//!         let map = $map;
//!         map.insert(b"apple", 1).unwrap();
//!         map.insert(b"banana", 2).unwrap();
//!         map.insert(b"cherry", 3).unwrap();
//!         let g = mlpdex::epoch::pin();
//!         assert_eq!(map.get(b"apple", &g), Some(&1));
//!         let mut seen = Vec::new();
//!         for (k, v) in map.range("a".."c", &g) {
//!             seen.push((k, *v));
//!         }
//!         assert_eq!(seen, [(&b"apple"[..], 1), (&b"banana"[..], 2)]);
//!         assert_eq!(map.last(&g), Some((&b"cherry"[..], &3)));
//!         assert_eq!(map.range(..=b"b".as_slice(), &g).next_back(), Some((&b"apple"[..], &1)));
//!         assert_eq!(map.remove(b"apple"), Some(1));
//!         assert!(!map.contains_key(b"apple"));
//!     }};
//! }
//! fruit_stand!(SkipList::new());
//! fruit_stand!(ConcurrentCuckooTrie::new());
//! ```
//!
//! Keys with long shared prefixes (paths, URLs) put their leaves deep and a descent is long
//! (see [`cuckoo_trie`](super)); for point reads of such keys, turn on
//! [`Config::key_index`](super::Config::key_index), kept here as in the single-threaded map:
//! `get` then probes one hash of the whole key in its read session (measured on 1 and 2
//! threads against scc's `TreeIndex` and crossbeam's `SkipMap` in
//! [`docs/results/long-keys-concurrent.md`](../../../../docs/results/long-keys-concurrent.md)).
//!
//! When not: long scans, where the skip list's prefetching iterator is faster; seeks and scans
//! over keys with long shared prefixes; a single thread, where
//! [`CuckooTrie`](super::CuckooTrie) is faster without sessions (a read here costs about twice
//! its instructions: callgrind at 100k random keys counts about 2,000 against 1,050 per
//! lookup, a third more time while the map fits in the cache, hidden behind the DRAM reads of
//! a large map at one lookup at a time). Measured numbers, the
//! concurrent map's scaling on 1 and 2 threads included, are in
//! [`docs/results/cuckoo-trie.md`](../../../../docs/results/cuckoo-trie.md) and, against other
//! concurrent maps, [`docs/results/concurrent.md`](../../../../docs/results/concurrent.md);
//! lookups and writes while the table is copied:
//! [`docs/results/concurrent-resize.md`](../../../../docs/results/concurrent-resize.md);
//! batched lookups ([`get_batch`](ConcurrentCuckooTrie::get_batch)) against one at a time:
//! [`docs/results/concurrent-batch.md`](../../../../docs/results/concurrent-batch.md).
//!
//! # Contract
//!
//! - [`get`](ConcurrentCuckooTrie::get), [`insert`](ConcurrentCuckooTrie::insert),
//!   [`remove`](ConcurrentCuckooTrie::remove), [`lower_bound`](ConcurrentCuckooTrie::lower_bound)
//!   and [`upper_bound`](ConcurrentCuckooTrie::upper_bound) are linearizable.
//! - A [`Range`] is not a snapshot. It reads batches of up to 32 successive keys, each batch
//!   from one validated walk of the prefetching cursor (run in reverse for
//!   [`next_back`](DoubleEndedIterator::next_back)), so a batch is a run of consecutive keys
//!   of one committed state; each batch starts after the last key reported. So an iteration
//!   never yields a key removed before it started, never skips a key present throughout,
//!   yields each key at most once, and yields keys in strictly increasing order (decreasing
//!   from the back).
//! - References handed out live as long as the [`Guard`] passed in (made by
//!   [`epoch::pin`](crate::epoch::pin); see [`epoch`](crate::epoch)): a removed or replaced
//!   entry stays readable until every guard pinned before its removal is dropped. An iterator
//!   never re-pins: holding one for a long scan delays reclamation for the whole process.
//! - Values are never changed in place: an update installs a new record and retires the old
//!   one; a replaced or removed value is returned by clone and dropped when no guard can reach
//!   it.
//!
//! # Protocol
//!
//! * **Readers** are optimistic and never write shared memory. A read loads the current trie
//!   under the caller's guard and runs the single-threaded search algorithms inside a read
//!   session: every bucket is copied under its seqlock and its version recorded
//!   (`raw::seqlock`). At the end it re-checks all versions; if any bucket changed (or the
//!   copies showed an impossible state, such as a child bit without its child), it starts
//!   over. Only then does it touch the record the leaf names, which epoch-based reclamation
//!   keeps alive while the guard lives.
//! * **Writers** run in parallel (§5, "Updates"). A writer runs the single-threaded insert or
//!   remove inside a write session: it reads buckets as a reader does, logging their
//!   versions, and copies a bucket privately when it first changes it; its changes go to
//!   those copies. Then it commits: it locks the buckets it changed in increasing bucket
//!   order, each with a compare-and-swap that succeeds only if the bucket still has the
//!   version it copied, checks that every bucket it read is unchanged, stores its copies and
//!   unlocks. A failed lock or check releases everything and
//!   runs the operation again; a writer never waits while it holds a lock, so writers cannot
//!   deadlock (`raw::seqlock` has the argument). Readers see all of a commit or none of it:
//!   its buckets are all locked until all are written. New leaves, the entries a cuckoo path
//!   moves, the dirty state of §5: all are bucket changes of the one commit. The leaf list's
//!   head lives outside the table; a writer that changes it locks the root's bucket, which
//!   readers of the head validate.
//! * **Growth** (§5, "Resizing"; mark-before-copy as cited there, with one mark for the
//!   whole table): the writer that finds the table full freezes it (writers that lock after
//!   the freeze back out; the freezer waits for those that locked before), builds a complete
//!   copy in a larger table while readers keep using the frozen one, and publishes the copy
//!   with one pointer swap; the old table is unmapped when the last reader pinned before the
//!   swap leaves. Readers never wait for a growth: during one they read the frozen table, and
//!   after the swap the new one. Writers whose commit the freeze refused *help* with the copy:
//!   the trie's top levels are walked first, each subtree below them is a task, and helpers
//!   walk tasks of the old table into runs of entries (with their hashes in the new table)
//!   while the resizing writer inserts the runs, in key order, into the new table. Then they
//!   wait for the swap and continue in the new table. Shrinking after removals works the same
//!   way; `clear` swaps in an empty table.
//! * Each writer has working memory of its own: the map keeps one slot per concurrent writer
//!   (twice the cores), taken without contention by a writer of each thread.
//! * The code with proof obligations (the epoch-protected trie pointer, typed records,
//!   reclamation) is in `raw::shared`, whose lifetimes carry the guard: this file only
//!   forwards.
//!
//! # Deviations from the paper
//!
//! * The paper's writer locates the buckets it will write with a read-only search, locks
//!   them and checks their versions. Here the writer runs the ordinary single-threaded update
//!   against copies, so the set of buckets it locks is exactly the set it changed, for every
//!   case of insertion and deletion (leaf split, jump-node split, tail collapse, cuckoo
//!   relocation) without a separate locking plan per case. A commit is all or nothing, so the
//!   paper's dirty flag (for stale subtree-max and next pointers during an update) is not
//!   needed: readers never see a half-made update. Entry bit 19 stays unused.
//! * Resizing stops writers for the whole copy (readers go on); they help walk the old table,
//!   but one thread inserts into the new one, so a writer's wait is the copy's length, not a
//!   bounded step. The paper cites per-bucket marking (Maier et al.), which bounds it to one
//!   bucket's copy; here a bucket cannot move alone: every entry's hash, color and links
//!   change with the table, so the copy is a walk of the trie.

use core::fmt;
use core::ops::{Bound, ControlFlow, RangeFull};

use super::Config;
use super::raw::shared::{Leaf, SharedTrie};
use crate::epoch::{Guard, pin};
use crate::key::{after_start, before_end, is_empty_range};
use crate::{ConcurrentOrderedMap, Error, KeyRange};

/// The Cuckoo Trie for many threads; see the [module docs](self) for the contract and the
/// protocol, and [`cuckoo_trie`](super) for the structure.
///
/// ```
/// use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
///
/// let map = ConcurrentCuckooTrie::new();
/// map.insert(b"apple", 1).unwrap();
/// map.insert(b"cherry", 3).unwrap();
/// let guard = mlpdex::epoch::pin();
/// let mut total = 0;
/// for (key, value) in map.iter(&guard) {
///     println!("{}: {value}", String::from_utf8_lossy(key));
///     total += value;
/// }
/// assert_eq!(total, 4);
/// ```
pub struct ConcurrentCuckooTrie<V> {
    raw: SharedTrie<V>,
    config: Config,
}

/// Leaves an iterator reads per validated walk.
const BATCH: usize = 32;

impl<V: Send + Sync + 'static> ConcurrentCuckooTrie<V> {
    /// Longest key accepted, in bytes.
    pub const MAX_KEY_LEN: usize = super::raw::table::MAX_KEY_LEN;

    /// An empty map with the default [`Config`].
    ///
    /// # Panics
    ///
    /// If the operating system refuses the first 4 KiB table; use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("mapping the first table page")
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        config.validate()?;
        Ok(ConcurrentCuckooTrie {
            raw: SharedTrie::new(config.params::<V>())?,
            config,
        })
    }

    /// Stores `value` under `key`; returns a clone of the value it replaces. Fails with
    /// [`Error::KeyTooLong`] beyond [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes, or
    /// [`Error::OutOfMemory`] when the table cannot grow.
    pub fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        if key.len() > Self::MAX_KEY_LEN {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: Self::MAX_KEY_LEN,
            });
        }
        self.raw.insert(key, value, &pin())
    }

    /// Removes `key`; returns a clone of its value.
    pub fn remove(&self, key: &[u8]) -> Option<V>
    where
        V: Clone,
    {
        self.raw.remove(key, &pin())
    }

    /// Grows the table now, if needed, so that `additional` more keys fit without growing
    /// during inserts (the estimate of [`CuckooTrie::reserve`](super::CuckooTrie::reserve)).
    /// The copy is built beside the current table, which readers go on reading; writers wait
    /// for it and help walk the old table.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the table; [`try_reserve`](Self::try_reserve) returns
    /// [`Error::OutOfMemory`] instead.
    pub fn reserve(&self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            panic!("ConcurrentCuckooTrie::reserve: {e}");
        }
    }

    /// [`reserve`](Self::reserve), or [`Error::OutOfMemory`] with the map unchanged.
    pub fn try_reserve(&self, additional: usize) -> Result<(), Error> {
        self.raw
            .reserve(self.len().saturating_add(additional), &pin())
    }

    /// Shrinks the table to the size growth would give the keys present (entries at half the
    /// load limit), as removals do once the table is a quarter of that full; beside the
    /// current table, as [`reserve`](Self::reserve) grows it. Keeps the current table if it is
    /// no larger or the operating system refuses the memory.
    pub fn shrink_to_fit(&self) {
        self.raw.shrink_to_fit(&pin());
    }

    /// Removes every key. Readers running meanwhile see the map before or after the clear;
    /// the old table and the values are dropped once no reader can reach them.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] when the first table of the new, empty map cannot be mapped; the
    /// map is then unchanged.
    pub fn clear(&self) -> Result<(), Error> {
        self.raw.clear(&pin())
    }
}

impl<V> ConcurrentCuckooTrie<V> {
    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The value stored under `key`, readable while `guard` lives.
    #[inline]
    pub fn get<'g>(&'g self, key: &[u8], guard: &'g Guard) -> Option<&'g V> {
        self.raw.get(key, guard)
    }

    /// [`get`](Self::get) for many keys: `out[i]` answers `keys[i]`.
    ///
    /// The searches of 16 keys at a time overlap their DRAM reads: the first buckets of every
    /// search are prefetched before any search runs, and the records of all leaves found
    /// before any key is compared. Each answer is linearizable on its own (it validates in a
    /// read session of its own); the batch is not one snapshot.
    ///
    /// ```
    /// use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
    ///
    /// let t = ConcurrentCuckooTrie::new();
    /// t.insert(b"apple", 3)?;
    /// t.insert(b"cherry", 7)?;
    /// let guard = mlpdex::epoch::pin();
    /// let keys: [&[u8]; 3] = [b"cherry", b"banana", b"apple"];
    /// let mut out = [None; 3];
    /// t.get_batch(&keys, &mut out, &guard);
    /// assert_eq!(out, [Some(&7), None, Some(&3)]);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn get_batch<'g>(&'g self, keys: &[&[u8]], out: &mut [Option<&'g V>], guard: &'g Guard) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        self.raw.get_batch(keys, out, guard);
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key, &pin()).is_some()
    }

    /// Number of keys stored; exact when no write is in flight.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the map owns: the table's mapping, the records (including removed ones
    /// awaiting reclamation) and the writers' scratch buffers (one slot per concurrent writer).
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.raw.table_bytes()
            + self.raw.scratch_bytes()
            + self.raw.record_bytes()
    }

    /// Bytes of the current hash table's mapping (see
    /// [`CuckooTrie::mapped_bytes`](super::CuckooTrie::mapped_bytes)).
    pub fn mapped_bytes(&self) -> usize {
        self.raw.table_bytes()
    }

    /// The first entry within `bound` from below: `≥ k`, `> k`, or the first entry.
    #[inline]
    pub fn lower_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        self.raw.seek(bound, true, guard).map(Leaf::entry)
    }

    /// The last entry within `bound` from above: `≤ k`, `< k`, or the last entry.
    #[inline]
    pub fn upper_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        self.raw.seek(bound, false, guard).map(Leaf::entry)
    }

    /// The smallest key and its value.
    pub fn first<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.lower_bound(Bound::Unbounded, guard)
    }

    /// The largest key and its value.
    pub fn last<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.upper_bound(Bound::Unbounded, guard)
    }

    /// The entries within `range`, in order from either end, readable while `guard` lives;
    /// empty for an empty or inverted range.
    pub fn range<'g, R>(&'g self, range: R, guard: &'g Guard) -> Range<'g, V, R>
    where
        R: KeyRange,
    {
        let (s, e) = range.key_bounds();
        let done = is_empty_range(s, e);
        Range {
            raw: &self.raw,
            guard,
            range,
            front: Side::new(done),
            back: Side::new(done),
        }
    }

    /// Every entry in order, readable while `guard` lives.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Range<'g, V, RangeFull> {
        self.range(.., guard)
    }

    /// Audits every structural invariant of the current trie (slow; holds the writer lock).
    /// For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.raw.audit()
    }
}

impl<V: Send + Sync + 'static> Default for ConcurrentCuckooTrie<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> fmt::Debug for ConcurrentCuckooTrie<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrentCuckooTrie")
            .field("len", &self.len())
            .field("config", &self.config)
            .finish()
    }
}

/// One end of a [`Range`]: the batch it is reading, and the last key it yielded.
struct Side<'g, V> {
    batch: Vec<Leaf<'g, V>>,
    /// Next leaf of `batch` to yield.
    pos: usize,
    /// The walk that filled `batch` reached the end of the trie.
    complete: bool,
    /// The last key yielded from this end: the next batch starts after it.
    last: Option<&'g [u8]>,
    done: bool,
}

impl<V> Side<'_, V> {
    fn new(done: bool) -> Self {
        Side {
            batch: Vec::new(),
            pos: 0,
            complete: false,
            last: None,
            done,
        }
    }
}

/// An iterator over a range of a [`ConcurrentCuckooTrie`], from both ends; see
/// [`ConcurrentCuckooTrie::range`] and the contract in the [module docs](self). Each end reads
/// validated batches of up to 32 successive leaves.
pub struct Range<'g, V, R> {
    raw: &'g SharedTrie<V>,
    guard: &'g Guard,
    range: R,
    front: Side<'g, V>,
    back: Side<'g, V>,
}

impl<V, R> fmt::Debug for Range<'_, V, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("front_last", &self.front.last.map(crate::key::Escaped))
            .field("back_last", &self.back.last.map(crate::key::Escaped))
            .finish_non_exhaustive()
    }
}

impl<'g, V, R: KeyRange> Range<'g, V, R> {
    /// The next leaf from one end (`rev`: the back), refilling its batch when it runs out.
    #[inline]
    fn step(&mut self, rev: bool) -> Option<Leaf<'g, V>> {
        let side = if rev { &mut self.back } else { &mut self.front };
        if side.done {
            return None;
        }
        if side.pos == side.batch.len() {
            if side.complete {
                side.done = true;
                return None;
            }
            let (s, e) = self.range.key_bounds();
            let from = match side.last {
                Some(k) => Bound::Excluded(k),
                None if rev => e,
                None => s,
            };
            if side.batch.capacity() == 0 {
                side.batch.reserve_exact(BATCH);
            }
            side.complete = self
                .raw
                .batch(from, rev, BATCH, &mut side.batch, self.guard);
            side.pos = 0;
            if side.batch.is_empty() {
                side.done = true;
                return None;
            }
        }
        let leaf = side.batch[side.pos];
        side.pos += 1;
        Some(leaf)
    }
}

impl<'g, V, R: KeyRange> Iterator for Range<'g, V, R> {
    type Item = (&'g [u8], &'g V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let leaf = self.step(false)?;
        let key = leaf.key();
        let (_, e) = self.range.key_bounds();
        if !before_end(key, e) || self.back.last.is_some_and(|b| key >= b) {
            self.front.done = true;
            return None;
        }
        self.front.last = Some(key);
        Some((key, leaf.value()))
    }
}

impl<V, R: KeyRange> DoubleEndedIterator for Range<'_, V, R> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let leaf = self.step(true)?;
        let key = leaf.key();
        let (s, _) = self.range.key_bounds();
        if !after_start(key, s) || self.front.last.is_some_and(|f| key <= f) {
            self.back.done = true;
            return None;
        }
        self.back.last = Some(key);
        Some((key, leaf.value()))
    }
}

impl<V: Clone + Send + Sync + 'static> ConcurrentOrderedMap<V> for ConcurrentCuckooTrie<V> {
    #[inline]
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        self.get(key, &pin()).map(f)
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        ConcurrentCuckooTrie::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        ConcurrentCuckooTrie::remove(self, key)
    }

    fn len(&self) -> usize {
        ConcurrentCuckooTrie::len(self)
    }

    fn memory_usage(&self) -> usize {
        ConcurrentCuckooTrie::memory_usage(self)
    }

    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        self.lower_bound(bound, &pin()).map(|(k, v)| f(k, v))
    }

    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        self.upper_bound(bound, &pin()).map(|(k, v)| f(k, v))
    }

    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        for (k, v) in self.range(range, &pin()) {
            if f(k, v).is_break() {
                return;
            }
        }
    }

    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        for (k, v) in self.range(range, &pin()).rev() {
            if f(k, v).is_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Unit tests of the concurrent front end's own state; the differential and stress suites
    //! are in `tests/concurrent_cuckoo_trie.rs`.
    use super::*;

    /// A writer and a reader racing on a small map, sized for miri: the seqlocked bucket copies,
    /// read validation, retirement of replaced values and the publication of a grown table all
    /// run with another thread inside them. The reader only ever sees a key with one of the
    /// values the writer gave it, one key at a time and in batches.
    #[test]
    fn writer_and_reader_race_on_a_small_map() {
        race_on_a_small_map(false);
    }

    /// The same with the key index: the reader's `get` compares its key with the records key
    /// entries name inside its read session, while the writer adds, repoints and removes
    /// those entries (and, natively, rebuilds them in the grown table).
    #[test]
    fn writer_and_reader_race_on_a_small_map_with_key_index() {
        race_on_a_small_map(true);
    }

    fn race_on_a_small_map(key_index: bool) {
        // 114 keys outgrow the first table; miri, which interprets every probe, runs 20 keys
        // (minutes for 120), so there the table does not grow.
        let n: u64 = if cfg!(miri) { 20 } else { 2000 };
        let rounds = if cfg!(miri) { 1 } else { 3 };
        // The smallest table (one 4 KiB page), so the writer also grows it.
        let map = ConcurrentCuckooTrie::<u64>::with_config(Config {
            initial_buckets: 1,
            max_load_factor: 0.5,
            key_index,
            ..Config::default()
        })
        .unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    assert_eq!(map.insert(&i.to_be_bytes(), i), Ok(None));
                }
                for i in (0..n).step_by(3) {
                    assert_eq!(map.insert(&i.to_be_bytes(), i + n), Ok(Some(i)));
                }
                for i in (1..n).step_by(3) {
                    assert_eq!(map.remove(&i.to_be_bytes()), Some(i));
                }
            });
            s.spawn(|| {
                for round in 0..rounds {
                    let guard = pin();
                    for i in 0..n {
                        if let Some(&v) = map.get(&i.to_be_bytes(), &guard) {
                            assert!(v == i || v == i + n, "round {round}: key {i} has {v}");
                        }
                    }
                    // The same through batched lookups, whose records are compared after
                    // their sessions validate.
                    let keys: Vec<[u8; 8]> = (0..n).map(u64::to_be_bytes).collect();
                    let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                    let mut out = vec![None; keys.len()];
                    map.get_batch(&keys, &mut out, &guard);
                    for (i, v) in (0..n).zip(&out) {
                        if let Some(&v) = *v {
                            assert!(v == i || v == i + n, "round {round}: batched {i} has {v}");
                        }
                    }
                    let mut prev = None;
                    for (k, _) in map.iter(&guard) {
                        assert!(prev < Some(k), "range out of order");
                        prev = Some(k);
                    }
                    let mut prev = None;
                    for (k, _) in map.iter(&guard).rev() {
                        assert!(prev.is_none_or(|p| k < p), "reverse range out of order");
                        prev = Some(k);
                    }
                }
            });
        });
        map.check_invariants().unwrap();
        assert!(
            cfg!(miri) || map.mapped_bytes() > 4096,
            "the table never grew"
        );
        let want = (0..n).filter(|i| i % 3 != 1).count();
        assert_eq!(map.len(), want);
        for i in 0..n {
            let expect = match i % 3 {
                0 => Some(i + n),
                1 => None,
                _ => Some(i),
            };
            assert_eq!(map.get_cloned(&i.to_be_bytes()), expect, "key {i}");
        }
    }

    /// Regression (issue 16, defect 5), as `scratch_shrinks_after_huge_keys_are_removed` in
    /// `tests/cuckoo_trie.rs`: the writer's scratch kept the size two `MAX_KEY_LEN` keys
    /// sharing all but their last byte had needed after they were removed.
    #[test]
    #[cfg_attr(miri, ignore = "1 MiB keys: millions of table operations")]
    fn scratch_shrinks_after_huge_keys_are_removed() {
        const SCRATCH_SLACK: usize = 64 * 1024;
        let small_ops = |map: &ConcurrentCuckooTrie<u64>| {
            for i in 0..64u64 {
                assert_eq!(map.insert(&i.to_be_bytes(), i), Ok(None));
            }
            for i in 0..64u64 {
                assert_eq!(map.remove(&i.to_be_bytes()), Some(i));
            }
        };
        let small_only = ConcurrentCuckooTrie::<u64>::new();
        small_ops(&small_only);
        let baseline = small_only.memory_usage();

        let n = ConcurrentCuckooTrie::<u64>::MAX_KEY_LEN;
        let a = vec![0x5au8; n];
        let mut b = a.clone();
        b[n - 1] ^= 0xff;
        let map = ConcurrentCuckooTrie::<u64>::new();
        assert_eq!(map.insert(&a, 1), Ok(None));
        assert_eq!(map.insert(&b, 2), Ok(None));
        let peak = map.memory_usage();
        assert_eq!(map.remove(&a), Some(1));
        assert_eq!(map.remove(&b), Some(2));
        small_ops(&map);
        map.check_invariants().unwrap();
        // Removed records are freed once no reader can reach them: let reclamation run, so
        // that only the scratch can make up the difference.
        for _ in 0..256 {
            pin().flush();
        }
        let after = map.memory_usage();
        assert!(
            after <= baseline + SCRATCH_SLACK,
            "memory_usage() is {after} bytes after inserting and removing two {n}-byte keys \
             (peak {peak}) and 64 small keys; a map that saw only the small keys uses \
             {baseline} (limit {baseline} + {SCRATCH_SLACK})"
        );
    }
}
