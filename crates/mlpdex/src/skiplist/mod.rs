//! A lock-free skip list whose iterator prefetches ahead along the towers
//! (Xu, "Building Data Structures to Exploit Memory-Level Parallelism", §3;
//! `mlp-data-structures.txt`).
//!
//! ```
//! use mlpdex::skiplist::SkipList;
//!
//! let list = SkipList::new();
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let list = &list;
//!         s.spawn(move || {
//!             for i in 0..100u64 {
//!                 let key = format!("user{:03}", 2 * i + t);
//!                 list.insert(key.as_bytes(), i).unwrap();
//!             }
//!         });
//!     }
//! });
//!
//! let guard = mlpdex::epoch::pin(); // entries stay readable while it lives
//! assert_eq!(list.get(b"user007", &guard), Some(&3));
//! let keys: Vec<&[u8]> = list.range("user010".."user013", &guard).map(|(k, _)| k).collect();
//! assert_eq!(keys, [b"user010", b"user011", b"user012"]);
//! assert_eq!(list.iter(&guard).next_back(), Some((&b"user199"[..], &99)));
//! assert_eq!(list.remove(b"user007"), Some(3));
//! assert_eq!(list.len(), 199);
//! ```
//!
//! [`SkipList`] is a concurrent ordered map from byte-string keys to values of any type. Every
//! operation takes `&self`: insertion links a node with CAS, level 0 first (Herlihy and Shavit's
//! lock-free skip list); removal marks the key deleted with one CAS and then unlinks the node
//! from every level; memory is reclaimed with epochs (`crossbeam-epoch`, through
//! [`epoch::Guard`](crate::epoch::Guard)). Its methods have the same names and signatures as
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)'s.
//!
//! A plain range scan walks level 0, one dependent DRAM miss per entry: the next node's
//! address is only known once the current node arrives. This list's iterator uses the towers
//! to learn addresses early (§3.1): a queue of `(start, end, level)` prefetch tasks keeps about
//! `2^K` independent prefetches in flight, so a long scan costs a fraction of a round trip per
//! entry. `K` is [`Config::prefetch_depth`]; `0` gives the plain iterator. The iterator is an
//! ordinary [`Iterator`]: callers get the speed without knowing about the queue.
//!
//! # When to use it
//!
//! When many threads insert, remove and scan byte-string keys at once and scans are long
//! (tens of entries or more): the prefetching iterator is where this list beats other
//! concurrent maps, and writers never block each other or readers. Not for point-heavy
//! loads: a search descends every level of the towers, mostly dependent misses, where a
//! hashed trie ([`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)) needs two
//! or three round trips. Not for small keys where memory matters: each node takes at least a
//! cache line. Single-threaded maps are faster without the atomics and reclamation.
//!
//! Measured scans, point operations, memory, two threads and the prefetch-depth sweep,
//! against the plain iterator and crossbeam's `SkipMap`, as the suite
//! `bench/suites/skiplist.toml` wrote them:
//! [`docs/results/skiplist.md`](../../../../docs/results/skiplist.md); scans of 10 to 1000
//! keys beside the other ordered indexes:
//! [`docs/results/scans.md`](../../../../docs/results/scans.md).
//!
//! # Contract
//!
//! - [`get`](SkipList::get), [`insert`](SkipList::insert), [`remove`](SkipList::remove),
//!   [`lower_bound`](SkipList::lower_bound) and [`upper_bound`](SkipList::upper_bound) are
//!   linearizable and lock-free.
//! - An iteration ([`range`](SkipList::range), [`iter`](SkipList::iter)) is not a snapshot, but
//!   it yields keys in strictly increasing order (decreasing for
//!   [`next_back`](DoubleEndedIterator::next_back)), never yields a key removed before it
//!   started, never skips a key present throughout, and yields each key at most once.
//! - References handed out live as long as the [`Guard`] passed in (made by [`pin`], on the
//!   collector every list retires into; a guard of any other collector does not type-check):
//!   a removed or replaced entry stays readable until every guard pinned before its removal
//!   is dropped. Holding a guard for a long time delays reclamation for the whole process.
//! - Updates never change a value in place: [`insert`](SkipList::insert) of a present key
//!   installs a boxed replacement with one CAS (the first value lives inside the node, later
//!   ones in their own allocation), and returns a clone of the value it replaced. Every
//!   replaced value, the first one included, is dropped once the guards that could see it are
//!   gone; a removed key's value and node likewise.
//! - Backward iteration re-seeks from the head for every step (`O(log n)` dependent misses per
//!   entry), since the lists are singly linked; forward iteration is the fast direction.
//!
//! # Protocol
//!
//! Numbered rules (the code cites them):
//!
//! 1. A key is present while its node's value word lacks the deleted bit. Setting that bit is
//!    a removal's linearization point; the CAS linking a new node at level 0 is an insertion's;
//!    the CAS swapping the value word is an update's.
//! 2. A node is linked at level 0 first, then upward. A node's link at level `i` is marked
//!    only after its key was removed, and a marked link never changes, so nothing is linked
//!    after a dying node.
//! 3. Writers' searches unlink every removed node they meet; readers never write shared
//!    memory: they step over removed nodes and never take one as a predecessor.
//! 4. A removed node is retired once, by whichever of its inserter (done with the tower) and
//!    its remover (done unlinking) finishes second, after an unlinking search of its own.
//! 5. The first update of a node retires its inline value on its own (the node stays). The
//!    node's memory is then freed by whichever runs second of the inline value's deferred drop
//!    and the node's release (its retirement past the epoch, or the list's drop).
//! 6. The key count reads low, never high: an insertion counts after its linking CAS, a
//!    removal uncounts before its tagging CAS.
//!
//! Details and the arguments for rules 4–6 are in `raw::list`.
//!
//! # Layout
//!
//! - `raw::node`: one allocation per node, aligned to a cache line: value word, `next[0]`,
//!   key length, height, the inline value and the key come first, so a scan step reads one
//!   line for keys up to about 32 bytes; the upper tower follows. Links to nodes longer than a
//!   line carry a bit telling the prefetcher to fetch two lines (§2.3's adjacent-line
//!   observation: the second line comes nearly free once requested together).
//! - `raw::list`: the link protocol: writers' helping search, insert, remove, readers'
//!   descent.
//! - `raw::prefetch`: the prefetch task queue, fed by the seek while it descends so that its
//!   first phases overlap the seek's last round trips.
//! - this file: [`SkipList`], its [`Config`] and the [`Range`] iterator.

mod raw;

use core::fmt;
use core::ops::{Bound, ControlFlow};
use core::sync::atomic::Ordering::Relaxed;
use std::cell::Cell;
use std::sync::atomic::AtomicUsize;

use self::raw::list::RawList;
use self::raw::node::MAX_HEIGHT;
use self::raw::prefetch::MAX_DEPTH;
use self::raw::read::{Entry, Walk};
use self::raw::reclaim::EpochRetire;
use crate::epoch::{Guard, pin};
use crate::key::{after_start, before_end, is_empty_range};
use crate::{ConcurrentOrderedMap, Error, KeyRange};

/// Settings of a [`SkipList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The prefetcher's tower level `K`: an iterator keeps about `2^K` prefetches in flight.
    /// `0` gives the plain iterator; at most 6. Default 3.
    pub prefetch_depth: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { prefetch_depth: 3 }
    }
}

/// The lock-free skip list map; see the [module docs](self).
pub struct SkipList<V> {
    raw: RawList<V>,
    config: Config,
}

thread_local! {
    static HEIGHT_RNG: Cell<u64> = Cell::new(seed());
}

/// A distinct odd seed per thread.
fn seed() -> u64 {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, Relaxed) as u64;
    crate::substrate::hash::hash_u64(n, 0x5eed) | 1
}

/// A tower height: `h` with probability `2^-h` (capped at [`MAX_HEIGHT`]).
fn random_height() -> usize {
    HEIGHT_RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        1 + (x | 1 << (MAX_HEIGHT - 1)).trailing_zeros() as usize
    })
}

impl<V: Send + Sync + 'static> SkipList<V> {
    /// An empty list with the default [`Config`].
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("allocating the head node")
    }

    /// An empty list; [`Error::InvalidConfig`] when `prefetch_depth` exceeds 6.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        if config.prefetch_depth > MAX_DEPTH {
            return Err(Error::InvalidConfig {
                what: "prefetch_depth must be 0..=6",
            });
        }
        Ok(SkipList {
            raw: RawList::new()?,
            config,
        })
    }

    /// Stores `value` under `key`; returns a clone of the value it replaces. Fails only with
    /// [`Error::KeyTooLong`] (keys up to `u32::MAX` bytes) or [`Error::OutOfMemory`].
    pub fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        let guard = pin();
        let retire = EpochRetire::new(&guard, &self.raw.bytes);
        self.raw.insert(key, value, random_height(), &retire)
    }

    /// Removes `key`; returns a clone of its value.
    pub fn remove(&self, key: &[u8]) -> Option<V>
    where
        V: Clone,
    {
        let guard = pin();
        self.raw
            .remove(key, &EpochRetire::new(&guard, &self.raw.bytes))
    }
}

impl<V> SkipList<V> {
    /// The settings the list was made with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Number of keys present.
    ///
    /// Exact when no write is in flight. While other threads insert and remove, it never
    /// counts more keys than are present, and fewer by at most the number of writes in flight
    /// (an insertion counts itself just after its linearization point, a removal just before
    /// its own). So `len() <= n` holds whenever at most `n` distinct keys were ever stored, and
    /// `is_empty()` is true whenever the list is empty.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True when no key is present.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of nodes and values the list owns, including removed ones awaiting reclamation.
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() + self.raw.bytes.load(Relaxed)
    }

    /// The value stored under `key`, readable while `guard` lives.
    #[inline]
    pub fn get<'g>(&'g self, key: &[u8], guard: &'g Guard) -> Option<&'g V> {
        self.raw.get(key, guard)
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key, &pin()).is_some()
    }

    /// The smallest key and its value.
    pub fn first<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.lower_bound(Bound::Unbounded, guard)
    }

    /// The largest key and its value.
    pub fn last<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.upper_bound(Bound::Unbounded, guard)
    }

    /// The first entry within `bound` from below: `≥ k`, `> k`, or the first entry.
    #[inline]
    pub fn lower_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        self.raw.lower_bound(bound, guard).map(Entry::pair)
    }

    /// The last entry within `bound` from above: `≤ k`, `< k`, or the last entry.
    pub fn upper_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        self.raw.upper_bound(bound, guard).map(Entry::pair)
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
            list: self,
            guard,
            range,
            walk: None,
            front_done: done,
            front_last: None,
            back_last: None,
            back_done: done,
        }
    }

    /// Every entry in order, readable while `guard` lives.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Range<'g, V, core::ops::RangeFull> {
        self.range(.., guard)
    }

    /// Checks the structure: every level sorted and holding only present nodes that are also
    /// on the level below, heights within the top, `len` and the byte count right. Only
    /// meaningful when no write is in flight; panics with a description otherwise.
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        self.raw.audit(&pin());
    }
}

impl<V: Send + Sync + 'static> Default for SkipList<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> fmt::Debug for SkipList<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.raw.len())
            .field("config", &self.config)
            .finish()
    }
}

/// An iterator over a range of a [`SkipList`], from both ends; see
/// [`SkipList::range`]. Forward steps use the prefetcher; backward steps re-seek.
pub struct Range<'g, V, R> {
    list: &'g SkipList<V>,
    guard: &'g Guard,
    range: R,
    /// The forward walk, started by the first `next` (the Prefetcher inside is large, kept
    /// inline rather than boxed: no allocation per range).
    walk: Option<Walk<'g, V>>,
    front_done: bool,
    front_last: Option<&'g [u8]>,
    back_last: Option<&'g [u8]>,
    back_done: bool,
}

impl<V, R> fmt::Debug for Range<'_, V, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("prefetch_depth", &self.list.config.prefetch_depth)
            .field("front_last", &self.front_last.map(crate::key::Escaped))
            .field("back_last", &self.back_last.map(crate::key::Escaped))
            .finish_non_exhaustive()
    }
}

impl<'g, V, R> Iterator for Range<'g, V, R>
where
    R: KeyRange,
{
    type Item = (&'g [u8], &'g V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.front_done {
            return None;
        }
        let walk = self.walk.get_or_insert_with(|| {
            let (s, _) = self.range.key_bounds();
            let depth = self.list.config.prefetch_depth;
            self.list.raw.walk(s, depth, self.guard)
        });
        let Some(entry) = walk.next() else {
            self.front_done = true;
            return None;
        };
        let key = entry.key();
        let (_, e) = self.range.key_bounds();
        if !before_end(key, e) || self.back_last.is_some_and(|b| key >= b) {
            self.front_done = true;
            return None;
        }
        self.front_last = Some(key);
        Some((key, entry.value()))
    }
}

impl<'g, V, R> DoubleEndedIterator for Range<'g, V, R>
where
    R: KeyRange,
{
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.back_done {
            return None;
        }
        let (s, e) = self.range.key_bounds();
        let bound = match self.back_last {
            Some(k) => Bound::Excluded(k),
            None => e,
        };
        let Some(entry) = self.list.raw.upper_bound(bound, self.guard) else {
            self.back_done = true;
            return None;
        };
        let key = entry.key();
        if !after_start(key, s) || self.front_last.is_some_and(|f| key <= f) {
            self.back_done = true;
            return None;
        }
        self.back_last = Some(key);
        Some((key, entry.value()))
    }
}

impl<V: Clone + Send + Sync + 'static> ConcurrentOrderedMap<V> for SkipList<V> {
    fn get_with<T>(&self, key: &[u8], f: impl FnOnce(&V) -> T) -> Option<T> {
        let guard = pin();
        self.get(key, &guard).map(f)
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        SkipList::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        SkipList::remove(self, key)
    }

    fn len(&self) -> usize {
        SkipList::len(self)
    }

    fn memory_usage(&self) -> usize {
        SkipList::memory_usage(self)
    }

    fn lower_bound_with<T>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> T,
    ) -> Option<T> {
        let guard = pin();
        self.lower_bound(bound, &guard).map(|(k, v)| f(k, v))
    }

    fn upper_bound_with<T>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> T,
    ) -> Option<T> {
        let guard = pin();
        self.upper_bound(bound, &guard).map(|(k, v)| f(k, v))
    }

    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        for (k, v) in self.range(range, &guard) {
            if f(k, v).is_break() {
                return;
            }
        }
    }

    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        for (k, v) in self.range(range, &guard).rev() {
            if f(k, v).is_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Small tests of the raw core through the front end, sized for miri.
    use super::*;

    /// Issue 16, defect 1: an entry read under a guard stays readable after it is removed and
    /// the collector is flushed many times (miri flags the read if the node was freed; with a
    /// guard of another collector, which no longer type-checks, it was).
    #[test]
    fn a_guard_keeps_removed_and_replaced_entries_readable() {
        let list = SkipList::<Box<u64>>::new();
        list.insert(b"key", Box::new(7)).unwrap();
        list.insert(b"other", Box::new(8)).unwrap();
        let guard = pin();
        let removed = list.get(b"key", &guard).unwrap();
        let (k, replaced) = list.lower_bound(Bound::Excluded(b"key"), &guard).unwrap();
        assert_eq!(list.remove(b"key").as_deref(), Some(&7));
        assert_eq!(
            list.insert(b"other", Box::new(9)).unwrap().as_deref(),
            Some(&8)
        );
        for _ in 0..256 {
            pin().flush();
        }
        assert_eq!((**removed, k, **replaced), (7, &b"other"[..], 8));
        drop(guard);
        assert_eq!(list.len(), 1);
        list.check_invariants();
    }
}
