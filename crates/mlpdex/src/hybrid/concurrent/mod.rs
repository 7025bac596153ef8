//! [`ConcurrentHybrid`]: the hybrid index shared between threads, merging in the background
//! (beyond the thesis: its chapter 8 proposes the non-blocking merge as future work).
//!
//! ```
//! use mlpdex::hybrid::{Config, ConcurrentHybrid};
//!
//! let h: ConcurrentHybrid = ConcurrentHybrid::with_config(Config { ratio: 10, min_merge: 1000 })?;
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let h = &h;
//!         s.spawn(move || {
//!             for i in (t..20_000).step_by(2) {
//!                 h.insert(&i.to_be_bytes(), i).unwrap();
//!             }
//!         });
//!     }
//! });
//! h.wait_for_merges(); // merges run on their own thread; this waits for them to finish
//! assert!(h.stats().merges > 0);
//!
//! let guard = mlpdex::epoch::pin();
//! assert_eq!(h.get(&7u64.to_be_bytes(), &guard), Some(7));
//! let near: Vec<u64> = h.range(5u64.to_be_bytes()..9u64.to_be_bytes(), &guard).map(|(_, v)| v).collect();
//! assert_eq!(near, [5, 6, 7, 8]);
//! assert_eq!(h.remove(&7u64.to_be_bytes()), Some(7));
//! assert_eq!(h.len(), 19_999);
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! Where a [`Hybrid`](super::Hybrid) fits (most keys in a compact static stage, a fraction of
//! a dynamic index's memory) but many threads read it, or a write must never stall for a
//! merge: a merge runs on its own thread while reads and writes go on. The methods and
//! iterators have the names and signatures of
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)'s, under the same
//! [`epoch::Guard`](crate::epoch::Guard), except that values come out by value (a static
//! stage stores them encoded, not as `u64`s one could borrow) and keys of ranges and seeks
//! are owned (a static stage rebuilds them); it implements
//! [`ConcurrentOrderedMap<u64>`](crate::ConcurrentOrderedMap).
//!
//! Measured, p99.9 of reads with and without a merge under way included:
//! [`docs/results/hybrid-concurrent.md`](../../../../docs/results/hybrid-concurrent.md).
//!
//! When not: for a single thread, the [`Hybrid`](super::Hybrid) is simpler and merges in
//! the write that triggers it; for write-heavy loads (writers are serialized, as in the
//! concurrent Cuckoo Trie, and every key is rewritten by about `ratio + 1` merges).
//!
//! # Contract
//!
//! - [`get`](ConcurrentHybrid::get), [`insert`](ConcurrentHybrid::insert),
//!   [`remove`](ConcurrentHybrid::remove), [`lower_bound`](ConcurrentHybrid::lower_bound) and
//!   [`upper_bound`](ConcurrentHybrid::upper_bound) are linearizable, merges or not: a merge
//!   moves entries between stages without changing what any read returns, so no reader ever
//!   sees a key disappear and reappear, or an older value after a newer one.
//! - Readers never wait: not for writers, not for merges. Writers never wait for a merge
//!   either: a merge holds the writers' lock only to publish new stages (two pointer swaps
//!   per merge). [`merge`](ConcurrentHybrid::merge), [`clear`](ConcurrentHybrid::clear),
//!   [`wait_for_merges`](ConcurrentHybrid::wait_for_merges) and dropping the map wait for a
//!   merge under way.
//! - A [`Range`] or [`Cursor`] reads the stages published when it was made: its entries
//!   come from the dynamic stage as it changes (the Cuckoo Trie's range contract) laid over
//!   the frozen and static stages as they were. So it yields keys in strictly increasing
//!   order (decreasing from the back), each at most once, never one removed before it
//!   started, and never skips one present throughout.
//! - Entries read are copied out; stages replaced by a merge stay readable until every
//!   guard pinned before the replacement is dropped, and the merge thread frees them
//!   (a reader never pays for freeing a stage).
//! - `insert` fails with [`Error::KeyTooLong`] for keys the dynamic stage cannot hold
//!   ([`ConcurrentCuckooTrie::MAX_KEY_LEN`](crate::cuckoo_trie::ConcurrentCuckooTrie::MAX_KEY_LEN))
//!   or [`Error::OutOfMemory`], the map unchanged. A merge that fails leaves every entry
//!   where it was (readable) and is retried by the next write; [`stats`](ConcurrentHybrid::stats)
//!   counts the failures and [`last_merge_error`](ConcurrentHybrid::last_merge_error) keeps
//!   the latest error.
//!
//! # Protocol
//!
//! * **Stages.** The published stages (`stages.rs`) are three: the dynamic stage `D`
//!   (a [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie) of values and
//!   tombstones, and a Bloom filter of its keys), during a merge the frozen stage `F` (the
//!   previous `D`, read-only), and the static stage `S`. A key's entry is the first found in
//!   `D`, `F`, `S`. They are published together through one epoch-protected pointer, so a
//!   reader loads one consistent set and reads it without a lock.
//! * **Writers** take the writers' lock (one at a time, as in the concurrent Cuckoo Trie),
//!   load the stages, and write `D` (filter bits first); the previous value is `D`'s entry or,
//!   when `D` has none, `F`'s or `S`'s, which no one changes. A remove of a key in `F` or `S`
//!   writes a tombstone; of a key only in `D`, removes it from `D`.
//! * **A merge** (on the merge thread, once `D` reaches `max(|S| / ratio, min_merge)`
//!   entries): (1) *freeze*: under the writers' lock, publish `{D' = new, F = D, S}`; writers
//!   from then on write `D'`, and `D` has no writer left (each wrote under the lock before the
//!   publish); (2) *build*, without a lock: copy `F`'s entries out (re-pinning every few
//!   thousand) and make `S' = S.merged(F)`; (3) *swap*: under the writers' lock, publish
//!   `{D', S'}`. `S'` holds exactly `F` over `S`, so the swap changes no read's answer; `F`
//!   and `S` are freed by the merge thread once no guard can reach them.
//! * **Why reads are linearizable.** `F` and `S` never change while published, and `D` is a
//!   linearizable map. A read that finds the key's entry in `D` takes effect when it reads
//!   `D`; one that does not, when it read `D` (or found a filter bit clear: the writer sets
//!   them before writing `D`), with the lower stages as they were then. A reader still
//!   holding the stages published before a freeze reads the old `D` as `F`: as it was at the
//!   freeze, the moment its read takes effect (after its load, before its read of `D`).
//!
//! [`Error::KeyTooLong`]: crate::Error::KeyTooLong
//! [`Error::OutOfMemory`]: crate::Error::OutOfMemory

mod cursor;
mod merge;
mod stages;

use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use cursor::{Cursor, Range};

use super::{Config, MergeStats, Slot, StaticStage};
use crate::compact_art::CompactArt;
use crate::epoch::{Guard, pin};
use crate::{ConcurrentOrderedMap, Error, KeyRange};
use merge::Merger;
use stages::{Current, Dynamic, Stages};

/// The hybrid index for many threads, with merges in the background; see the
/// [module docs](self) for the contract and the protocol.
///
/// ```
/// use mlpdex::hybrid::ConcurrentHybrid;
///
/// let h = ConcurrentHybrid::new();
/// h.insert(b"apple", 1)?;
/// h.insert(b"cherry", 3)?;
/// h.merge()?; // both move to the static stage now
/// assert_eq!(h.insert(b"apple", 10)?, Some(1));
/// let guard = mlpdex::epoch::pin();
/// let all: Vec<(Vec<u8>, u64)> = h.iter(&guard).collect();
/// assert_eq!(all, [(b"apple".to_vec(), 10), (b"cherry".to_vec(), 3)]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct ConcurrentHybrid<S: StaticStage + Send + Sync + 'static = CompactArt> {
    inner: Arc<Inner<S>>,
}

/// What the map and its merge thread share.
pub(crate) struct Inner<S: StaticStage> {
    current: Current<S>,
    /// Held by every write, and by a merge while it publishes.
    writer: Mutex<()>,
    /// Held by a whole merge, and by `clear`.
    merging: Mutex<()>,
    /// Live keys.
    len: AtomicUsize,
    config: Config,
    merger: Merger,
}

/// Locks `m`, ignoring poisoning: every critical section here leaves the map consistent at
/// each step (a panicking writer has either written its entry or not).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ConcurrentHybrid {
    /// An empty map with the compact ART static stage and the default [`Config`].
    ///
    /// # Panics
    ///
    /// If the operating system refuses the dynamic stage's first table page; use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("the first table page")
    }
}

impl Default for ConcurrentHybrid {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: StaticStage + Send + Sync + 'static> ConcurrentHybrid<S> {
    /// An empty map with static stage `S` and `config`; [`Error::InvalidConfig`] when `ratio`
    /// or `min_merge` is 0.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let stages = Stages {
            dynamic: Arc::new(Dynamic::new(config.min_merge)?),
            frozen: None,
            stat: Arc::new(S::empty()?),
        };
        Ok(ConcurrentHybrid {
            inner: Arc::new(Inner {
                current: Current::new(stages),
                writer: Mutex::new(()),
                merging: Mutex::new(()),
                len: AtomicUsize::new(0),
                config,
                merger: Merger::default(),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.inner.config
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8], guard: &Guard) -> Option<u64> {
        self.inner.current.load(guard).get(key, guard)
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key, &pin()).is_some()
    }

    /// Number of keys; exact when no write is in flight.
    pub fn len(&self) -> usize {
        self.inner.len.load(Relaxed)
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `value` under `key`, returning the value it replaces; may start a merge on the
    /// merge thread (it does not wait for it).
    pub fn insert(&self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        let guard = pin();
        let (old, merge) = {
            let _w = lock(&self.inner.writer);
            let stages = self.inner.current.load(&guard);
            let old = match stages.dynamic.put(key, Slot::Value(value))? {
                Some(Slot::Value(old)) => Some(old),
                Some(Slot::Deleted) => None,
                None => stages.lower_get(key, &guard),
            };
            if old.is_none() {
                self.inner.len.fetch_add(1, Relaxed);
            }
            (old, self.inner.wants_merge(stages))
        };
        if merge {
            self.inner.merger.request(&self.inner);
        }
        Ok(old)
    }

    /// Removes `key`, returning its value. A key of the frozen or static stage is hidden by
    /// a tombstone until a merge removes both; if the dynamic stage cannot get memory for
    /// the tombstone, the key stays and `None` is returned.
    pub fn remove(&self, key: &[u8]) -> Option<u64> {
        let guard = pin();
        let (old, merge) = {
            let _w = lock(&self.inner.writer);
            let stages = self.inner.current.load(&guard);
            let old = match stages.dynamic.slot(key, &guard) {
                Some(Slot::Deleted) => return None,
                Some(Slot::Value(v)) => {
                    if stages.lower_get(key, &guard).is_some() {
                        stages.dynamic.put(key, Slot::Deleted).ok()?;
                    } else {
                        stages.dynamic.trie.remove(key);
                    }
                    v
                }
                None => {
                    let v = stages.lower_get(key, &guard)?;
                    stages.dynamic.put(key, Slot::Deleted).ok()?;
                    v
                }
            };
            self.inner.len.fetch_sub(1, Relaxed);
            (old, self.inner.wants_merge(stages))
        };
        if merge {
            self.inner.merger.request(&self.inner);
        }
        Some(old)
    }

    /// Removes every key. Waits for a merge under way (whose result it would discard);
    /// readers meanwhile see the map before or after the clear.
    pub fn clear(&self) -> Result<(), Error> {
        let _m = lock(&self.inner.merging);
        let fresh = Stages {
            dynamic: Arc::new(Dynamic::new(self.inner.config.min_merge)?),
            frozen: None,
            stat: Arc::new(S::empty()?),
        };
        let _w = lock(&self.inner.writer);
        self.inner.current.publish(fresh, &pin());
        self.inner.len.store(0, Relaxed);
        Ok(())
    }

    /// Merges every entry of the dynamic stage into a new static stage now, on this thread,
    /// whatever the ratio (after waiting for a merge under way). Reads and writes go on
    /// meanwhile; writes made during the merge stay in the new dynamic stage.
    pub fn merge(&self) -> Result<(), Error> {
        let _m = lock(&self.inner.merging);
        self.inner.merge_once().map(|_| ())
    }

    /// Waits until no merge is under way or requested.
    pub fn wait_for_merges(&self) {
        self.inner.merger.wait_idle();
    }

    /// True while a merge is under way or requested.
    pub fn is_merging(&self) -> bool {
        self.inner.merger.busy()
    }

    /// What the merges did so far.
    pub fn stats(&self) -> MergeStats {
        self.inner.merger.stats()
    }

    /// The error of the latest failed merge, if any merge failed.
    pub fn last_merge_error(&self) -> Option<Error> {
        self.inner.merger.last_error()
    }

    /// Entries in the dynamic stage (values and tombstones), the frozen one included while
    /// a merge is under way.
    pub fn dynamic_len(&self) -> usize {
        let guard = pin();
        let stages = self.inner.current.load(&guard);
        stages.dynamic.trie.len() + stages.frozen.as_ref().map_or(0, |f| f.trie.len())
    }

    /// Entries in the static stage (some may be hidden by the dynamic stage).
    pub fn static_len(&self) -> usize {
        self.inner.current.load(&pin()).stat.len()
    }

    /// The first entry within `bound` from below (`≥ k`, `> k`, or the first entry).
    pub fn lower_bound(&self, bound: Bound<&[u8]>, guard: &Guard) -> Option<(Vec<u8>, u64)> {
        let mut c = self.cursor((bound, Bound::Unbounded), guard);
        c.next().map(|(k, v)| (k.to_vec(), v))
    }

    /// The last entry within `bound` from above (`≤ k`, `< k`, or the last entry).
    pub fn upper_bound(&self, bound: Bound<&[u8]>, guard: &Guard) -> Option<(Vec<u8>, u64)> {
        let mut c = self.cursor((Bound::Unbounded, bound), guard);
        c.next_back().map(|(k, v)| (k.to_vec(), v))
    }

    /// The smallest key and its value.
    pub fn first(&self, guard: &Guard) -> Option<(Vec<u8>, u64)> {
        self.lower_bound(Bound::Unbounded, guard)
    }

    /// The largest key and its value.
    pub fn last(&self, guard: &Guard) -> Option<(Vec<u8>, u64)> {
        self.upper_bound(Bound::Unbounded, guard)
    }

    /// A lending cursor over the entries within `range`, from both ends, over the stages
    /// published now; empty for an empty or inverted range.
    pub fn cursor<'g, R: KeyRange>(&'g self, range: R, guard: &'g Guard) -> Cursor<'g, S> {
        Cursor::new(self.inner.current.load(guard), range, guard)
    }

    /// The entries within `range` in key order, from both ends; keys are owned. For scans
    /// that copy nothing use [`cursor`](Self::cursor).
    pub fn range<'g, R: KeyRange>(&'g self, range: R, guard: &'g Guard) -> Range<'g, S> {
        Range::new(self.cursor(range, guard))
    }

    /// Every entry in key order.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Range<'g, S> {
        self.range(.., guard)
    }

    /// Bytes of the dynamic stages' table mappings (see
    /// [`ConcurrentCuckooTrie::mapped_bytes`](crate::cuckoo_trie::ConcurrentCuckooTrie::mapped_bytes));
    /// part of [`memory_usage`](Self::memory_usage).
    pub fn mapped_bytes(&self) -> usize {
        let guard = pin();
        let stages = self.inner.current.load(&guard);
        stages.dynamic.trie.mapped_bytes()
            + stages.frozen.as_ref().map_or(0, |f| f.trie.mapped_bytes())
    }

    /// Bytes of memory owned: the stages published now (while a merge builds, the new
    /// static stage is not counted until it is swapped in) and the filters.
    pub fn memory_usage(&self) -> usize {
        let guard = pin();
        let stages = self.inner.current.load(&guard);
        size_of::<Self>()
            + size_of::<Inner<S>>()
            + stages.dynamic.memory_usage()
            + stages.frozen.as_ref().map_or(0, |f| f.memory_usage())
            + stages.stat.memory_usage()
    }

    /// Audits the stages (slow; for tests, with no write in flight): each dynamic stage's
    /// trie invariants, and `len()` equal to the entries a scan finds, both ways.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let guard = pin();
        let stages = self.inner.current.load(&guard);
        stages.dynamic.trie.check_invariants()?;
        if let Some(f) = &stages.frozen {
            f.trie
                .check_invariants()
                .map_err(|e| format!("frozen stage: {e}"))?;
        }
        let forward = self.iter(&guard).count();
        let backward = self.iter(&guard).rev().count();
        if forward != self.len() || backward != self.len() {
            return Err(format!(
                "len() is {} but a scan finds {forward} entries forward, {backward} backward",
                self.len()
            ));
        }
        Ok(())
    }
}

impl<S: StaticStage> Inner<S> {
    /// The number of dynamic entries at which a merge into a static stage of `static_len`
    /// entries starts.
    fn threshold(&self, static_len: usize) -> usize {
        (static_len / self.config.ratio as usize).max(self.config.min_merge)
    }

    /// True when `stages` call for a merge: no merge under way, and the dynamic stage at its
    /// threshold.
    fn wants_merge(&self, stages: &Stages<S>) -> bool {
        stages.frozen.is_none() && stages.dynamic.trie.len() >= self.threshold(stages.stat.len())
    }
}

impl<S: StaticStage + Send + Sync + 'static> Drop for ConcurrentHybrid<S> {
    /// Waits for a merge under way, then stops the merge thread.
    fn drop(&mut self) {
        self.inner.merger.shut_down();
    }
}

impl<S: StaticStage + Send + Sync + 'static> fmt::Debug for ConcurrentHybrid<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrentHybrid")
            .field("len", &self.len())
            .field("dynamic_len", &self.dynamic_len())
            .field("static_len", &self.static_len())
            .field("merging", &self.is_merging())
            .finish()
    }
}

impl<S: StaticStage + Send + Sync + 'static> ConcurrentOrderedMap<u64> for ConcurrentHybrid<S> {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&u64) -> R) -> Option<R> {
        self.get(key, &pin()).map(|v| f(&v))
    }

    fn insert(&self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        ConcurrentHybrid::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<u64> {
        ConcurrentHybrid::remove(self, key)
    }

    fn len(&self) -> usize {
        ConcurrentHybrid::len(self)
    }

    fn memory_usage(&self) -> usize {
        ConcurrentHybrid::memory_usage(self)
    }

    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        let guard = pin();
        let mut c = self.cursor((bound, Bound::Unbounded), &guard);
        c.next().map(|(k, v)| f(k, &v))
    }

    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        let guard = pin();
        let mut c = self.cursor((Bound::Unbounded, bound), &guard);
        c.next_back().map(|(k, v)| f(k, &v))
    }

    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        let mut c = self.cursor(range, &guard);
        while let Some((k, v)) = c.next() {
            if f(k, &v).is_break() {
                return;
            }
        }
    }

    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        let mut c = self.cursor(range, &guard);
        while let Some((k, v)) = c.next_back() {
            if f(k, &v).is_break() {
                return;
            }
        }
    }
}
