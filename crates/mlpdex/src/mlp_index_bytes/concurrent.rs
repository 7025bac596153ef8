//! [`ConcurrentMlpIndexBytes`]: [`MlpIndexBytes`](super::MlpIndexBytes) shared between
//! threads, with the concurrent Cuckoo Trie's guard-based API.
//!
//! ```
//! use mlpdex::mlp_index_bytes::ConcurrentMlpIndexBytes;
//!
//! let map = ConcurrentMlpIndexBytes::new();
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let map = &map;
//!         s.spawn(move || {
//!             for i in 0..100u64 {
//!                 let key = format!("/srv/www/site-{t}/page-{i:03}.html");
//!                 map.insert(key.as_bytes(), i).unwrap();
//!             }
//!         });
//!     }
//! });
//!
//! let guard = mlpdex::epoch::pin(); // entries stay readable while it lives
//! assert_eq!(map.get(b"/srv/www/site-1/page-007.html", &guard), Some(&7));
//! let site0 = map.range(&b"/srv/www/site-0/"[..]..&b"/srv/www/site-0/page-003"[..], &guard);
//! assert_eq!(site0.map(|(_, v)| *v).collect::<Vec<_>>(), [0, 1, 2]);
//! assert_eq!(map.iter(&guard).next_back().map(|(_, v)| *v), Some(99));
//! assert_eq!(map.remove(b"/srv/www/site-1/page-007.html"), Some(7));
//! assert_eq!(map.len(), 199);
//! ```
//!
//! # When to use it
//!
//! Large maps of long keys with shared prefixes (paths, URLs, composite keys) read by many
//! threads, with point lookups, seeks and scans dominating: a lookup is the single-threaded
//! map's search (the probes of many prefix lengths in one round, then the leaf) plus the entry
//! and exit of a read section on a counter of the thread's own; it never writes a line another
//! thread writes. Scans read each leaf's entries in one go, as the single-threaded map does.
//!
//! Its methods and iterators have the names and signatures of
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)'s and the
//! [`SkipList`](crate::skiplist::SkipList)'s, under the same [`epoch::Guard`](crate::epoch),
//! so the same code runs on any of them.
//!
//! Measured on 1 and 2 threads against the concurrent Cuckoo Trie (with and without its key
//! index), scc's `TreeIndex` and crossbeam's `SkipMap`, read-only and half updates, on the
//! long-key datasets: [`docs/results/long-keys-concurrent.md`](../../../../docs/results/long-keys-concurrent.md)
//! (suite `bench/suites/long-keys-concurrent.toml`).
//!
//! When not: insert-heavy loads from many threads. Each write copies the leaf it changes (about
//! 2 KiB plus the leaf's keys), so it costs more than in the single-threaded map; writes to
//! different leaves run in parallel, but **splits and merges take turns** and stop readers
//! while they rewire the tables. For growing maps written by many threads, use the
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie); for one thread, the
//! single-threaded [`MlpIndexBytes`](super::MlpIndexBytes), which changes leaves in place.
//!
//! # Contract
//!
//! - [`get`](ConcurrentMlpIndexBytes::get), [`insert`](ConcurrentMlpIndexBytes::insert),
//!   [`remove`](ConcurrentMlpIndexBytes::remove),
//!   [`lower_bound`](ConcurrentMlpIndexBytes::lower_bound) and
//!   [`upper_bound`](ConcurrentMlpIndexBytes::upper_bound) are linearizable.
//! - A [`Range`] is not a snapshot: it reads one leaf version at a time (up to 64 successive
//!   entries of one state of the map), and moves to the next leaf from where the last one
//!   ended (past the last leaf, from the last key it yielded: keys appended meanwhile come
//!   too). So an iteration never yields a key removed before it started, never skips a key
//!   present throughout, yields each key at most once, and yields keys in strictly increasing
//!   order (decreasing from the back).
//! - References handed out live as long as the [`Guard`] passed in (see
//!   [`epoch`](crate::epoch)): a removed or replaced entry, and every leaf version a write
//!   replaced, stay readable until every guard pinned before the write is dropped. Values are
//!   never changed in place; a replaced or removed value is returned by clone and dropped when
//!   no guard can reach it.
//! - Keys are any byte strings up to [`MAX_KEY_LEN`](ConcurrentMlpIndexBytes::MAX_KEY_LEN);
//!   a longer one is refused with [`Error::KeyTooLong`], the map unchanged.
//! - `len` is exact when no write is in flight; `memory_usage` counts the leaf versions and
//!   values retired and not yet freed.
//!
//! # Protocol
//!
//! * **Leaves are copy-on-write.** A leaf in the leaf table is never changed: a write builds a
//!   copy of the leaf with its change (the values moved bit for bit, not cloned) and
//!   publishes it with one compare-and-swap in the leaf table; the version it replaced is
//!   retired to the epoch collector, to be freed (without its values, which the copy owns)
//!   once no guard pinned before the swap is left. A reader that loaded a leaf version keeps a
//!   consistent, unchanging leaf for as long as its guard lives.
//! * **Read sections.** The prefix table, the leaves' links and fences, and the leaf table's
//!   array are read only inside a *section* (`gate`): a reader announces the section on a
//!   counter of its own and checks that the gate is open. An insertion or removal that
//!   changes one leaf's entries and not its fences (nearly all of them) runs in a section of
//!   its own and publishes its copy there: a section sees the old version or the new one, and
//!   either agrees with the prefix table. A write that splits a leaf, drops one or merges two
//!   takes the write lock, closes the gate, waits for the sections under way to end (readers'
//!   and writers'), rewires the tables and the copies, and opens it; readers and writers
//!   arriving meanwhile wait for it. A search's leaf, found in a section, is read
//!   after it (the version is the reader's to keep).
//! * **Scans** hold a leaf version between sections. To move on, a section follows the
//!   version's link and checks that the leaf there still begins where the version ended (its
//!   lower fence equals the version's upper fence); if a split or merge changed that, it
//!   seeks the version's upper fence instead. Backwards likewise.
//! * **Growth.** The prefix table grows before a split that might not fit: the writer builds
//!   the larger copy while readers keep reading the current one, and only swaps it in with
//!   the gate closed. The leaf table's array grows with the gate closed (pointers only).
//! * **Writers** of one leaf race by compare-and-swap: the loser's copy was never seen by
//!   anyone; it takes its value back, forgets the rest (the winner's values) and copies the
//!   new version. Writes to different leaves do not wait for each other. Splits and merges
//!   take turns under the write lock, which also serializes the gate's closings.
//!
//! # Deviations
//!
//! Readers are not lock-free: they wait while a split or merge rewires the tables (one split
//! or merge's work; a leaf splits in two halves of 32 entries, so at most one insertion in 32
//! splits), never for other readers or for the other writes. Splits and merges take turns:
//! running two at once would need their copies of shared leaves and table nodes merged at
//! commit, as the Cuckoo Trie's write sessions do for its buckets.

mod gate;
mod range;

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Bound, ControlFlow, RangeFull};
use core::ptr::NonNull;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicIsize, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gate::Gate;
pub use range::Range;

use super::raw::{BATCH, Leaf, RawMap, Superseded};
use super::{check_len, random_seed};
use crate::epoch::{Guard, pin};
use crate::key::is_empty_range;
use crate::{ConcurrentOrderedMap, Error, KeyRange};

/// [`MlpIndexBytes`](super::MlpIndexBytes) for many threads; see the [module docs](self) for
/// the contract and the protocol.
///
/// ```
/// use mlpdex::mlp_index_bytes::ConcurrentMlpIndexBytes;
///
/// let map = ConcurrentMlpIndexBytes::new();
/// map.insert(b"com.example/a", 1).unwrap();
/// map.insert(b"com.example/b", 2).unwrap();
/// let guard = mlpdex::epoch::pin();
/// let total: i32 = map.iter(&guard).map(|(_, v)| v).sum();
/// assert_eq!(total, 3);
/// ```
pub struct ConcurrentMlpIndexBytes<V> {
    /// Read through `&` by sections and by the writer; through `&mut` only by the writer with
    /// the gate closed.
    raw: UnsafeCell<RawMap<V>>,
    gate: Gate,
    writer: Mutex<()>,
    /// Keys stored: goes up once an insertion is visible and down before a removal is
    /// (so it never counts a key no reader can find; briefly below zero when two writers race
    /// to remove one key).
    len: AtomicIsize,
    /// Bytes of retired leaf versions and values not yet freed (the deferred frees count down).
    retired: Arc<AtomicUsize>,
}

// SAFETY: the map owns its leaves and values (`V: Send` to move or free them on another
// thread, `V: Sync` to lend `&V` to several). The `UnsafeCell` is shared under the protocol of
// the module docs: `&mut RawMap` exists only on a writer holding the write lock with the gate
// closed and no section under way; otherwise every thread holds at most `&RawMap`, and the
// writers' changes through it are atomic (leaf table entries, the entry count).
unsafe impl<V: Send + Sync> Send for ConcurrentMlpIndexBytes<V> {}
// SAFETY: see `Send`.
unsafe impl<V: Send + Sync> Sync for ConcurrentMlpIndexBytes<V> {}

/// A leaf version found in a section and an index in it, before it is tied to a guard.
type Found<V> = (NonNull<Leaf<V>>, usize);

fn found<V>((l, i): (&Leaf<V>, usize)) -> Found<V> {
    (NonNull::from(l), i)
}

/// Ties a leaf version found in a section to the guard the reader was pinned with.
///
/// # Safety
///
/// `guard` must have been pinned before the section that loaded the version began.
unsafe fn hold<V>((l, i): Found<V>, _guard: &Guard) -> (&Leaf<V>, usize) {
    // SAFETY: the version was in the leaf table during the section, after the pin; a version
    // leaves the table before it is retired, and the collector frees it only once every guard
    // pinned before its retirement is dropped: not while `guard` lives.
    (unsafe { l.as_ref() }, i)
}

/// This thread's section counter.
fn slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local!(static SLOT: usize = NEXT.fetch_add(1, Relaxed));
    SLOT.with(|s| *s)
}

/// Ends a section when dropped.
struct Section<'a> {
    gate: &'a Gate,
    slot: usize,
}

impl Drop for Section<'_> {
    fn drop(&mut self) {
        self.gate.leave(self.slot);
    }
}

/// Opens the gate when dropped.
struct Closed<'a>(&'a Gate);

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl<V: Send + Sync + 'static> ConcurrentMlpIndexBytes<V> {
    /// The longest key accepted, 16 MiB (as in [`MlpIndexBytes`](super::MlpIndexBytes)).
    pub const MAX_KEY_LEN: usize = super::MlpIndexBytes::<()>::MAX_KEY_LEN;

    /// An empty map.
    pub fn new() -> Self {
        ConcurrentMlpIndexBytes {
            raw: UnsafeCell::new(RawMap::new_cow(random_seed())),
            gate: Gate::new(),
            writer: Mutex::new(()),
            len: AtomicIsize::new(0),
            retired: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Stores `value` under `key`; returns a clone of the value it replaces. Fails with
    /// [`Error::KeyTooLong`] beyond [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes, or
    /// [`Error::OutOfMemory`] when the prefix table cannot grow (the map unchanged).
    pub fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        check_len(key)?;
        let guard = pin();
        let (old, version, retired) =
            match self.section(&guard, |raw| raw.insert_published(key, value, &self.len)) {
                Ok((old, version)) => (old, Some(version), Vec::new()),
                Err(value) => {
                    // A split: grow the prefix table first, beside the one readers read.
                    let _w = self.write_lock();
                    let grown = self.shared().grown_slots_for(key)?;
                    let closed = self.close();
                    // SAFETY: the write lock is held, the gate closed and every section (readers'
                    // and single-leaf writers') ended.
                    let raw = unsafe { &mut *self.raw.get() };
                    if let Some(slots) = grown {
                        raw.install_slots(slots);
                    }
                    let (_, old) = raw.insert(key, value);
                    if old.is_none() {
                        self.len.fetch_add(1, Relaxed);
                    }
                    let retired = raw.end_operation();
                    drop(closed);
                    (old, None, retired)
                }
            };
        let out = old.clone();
        self.retire(&guard, version, retired, old);
        Ok(out)
    }

    /// Removes `key`; returns a clone of its value.
    pub fn remove(&self, key: &[u8]) -> Option<V>
    where
        V: Clone,
    {
        let guard = pin();
        let (old, version, retired) =
            match self.section(&guard, |raw| raw.remove_published(key, &self.len)) {
                Ok(None) => return None,
                Ok(Some((old, version))) => (old, Some(version), Vec::new()),
                Err(()) => {
                    let _w = self.write_lock();
                    let closed = self.close();
                    // SAFETY: as in `insert`.
                    let raw = unsafe { &mut *self.raw.get() };
                    // Another writer may have removed it since the section.
                    let at = raw.find(key)?;
                    let (_, old) = raw.remove_at(at);
                    self.len.fetch_sub(1, Relaxed);
                    let retired = raw.end_operation();
                    drop(closed);
                    (old, None, retired)
                }
            };
        let out = old.clone();
        self.retire(&guard, version, retired, Some(old));
        Some(out)
    }

    /// Makes room for `additional` more keys: prefix-table slots and leaf ids, so that
    /// inserting them grows neither. The table is rebuilt beside the current one, which
    /// readers go on reading; they wait only for the swap.
    ///
    /// # Panics
    ///
    /// If the memory is refused; [`try_reserve`](Self::try_reserve) returns
    /// [`Error::OutOfMemory`] instead.
    pub fn reserve(&self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            panic!("ConcurrentMlpIndexBytes::reserve: {e}");
        }
    }

    /// [`reserve`](Self::reserve), or [`Error::OutOfMemory`] with the map unchanged.
    pub fn try_reserve(&self, additional: usize) -> Result<(), Error> {
        let _w = self.write_lock();
        let grown = self.shared().grown_slots_reserving(additional)?;
        let _closed = self.close();
        // SAFETY: as in `insert`.
        let raw = unsafe { &mut *self.raw.get() };
        if let Some(slots) = grown {
            raw.install_slots(slots);
        }
        raw.try_reserve(additional)
    }

    /// Gives back the prefix table's spare slots and unused leaf ids (leaves have no slack to
    /// give: each write copies its leaf to size). Readers wait while the table is rebuilt.
    pub fn shrink_to_fit(&self) {
        let _w = self.write_lock();
        let _closed = self.close();
        // SAFETY: as in `insert`.
        unsafe { &mut *self.raw.get() }.shrink_to_fit();
    }

    /// Removes every key. Readers running meanwhile see the map before or after the clear; the
    /// old leaves and their values are dropped once no guard can reach them.
    pub fn clear(&self) {
        let _w = self.write_lock();
        let guard = pin();
        let closed = self.close();
        // SAFETY: as in `insert`.
        let raw = unsafe { &mut *self.raw.get() };
        let seed = raw.seed();
        let old = core::mem::replace(raw, RawMap::new_cow(seed));
        self.len.store(0, Relaxed);
        drop(closed);
        let bytes = old.heap_bytes();
        self.retired.fetch_add(bytes, Relaxed);
        let retired = Arc::clone(&self.retired);
        guard.crossbeam().defer(move || {
            drop(old);
            retired.fetch_sub(bytes, Relaxed);
        });
    }

    /// The write lock (a panicking writer leaves the map as its last completed step did).
    fn write_lock(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands leaf versions a write replaced (`version` from a single-leaf write, `versions`
    /// from a split or merge: no allocation on the common path), and the value it replaced or
    /// removed, to the collector: freed once every guard pinned before now is dropped.
    fn retire(
        &self,
        guard: &Guard,
        version: Option<Superseded<V>>,
        versions: Vec<Superseded<V>>,
        value: Option<V>,
    ) {
        let bytes = version
            .iter()
            .chain(&versions)
            .map(Superseded::heap_bytes)
            .sum::<usize>()
            + value.as_ref().map_or(0, |_| core::mem::size_of::<V>());
        self.retired.fetch_add(bytes, Relaxed);
        let retired = Arc::clone(&self.retired);
        guard.crossbeam().defer(move || {
            drop(version);
            drop(versions);
            drop(value);
            retired.fetch_sub(bytes, Relaxed);
        });
    }
}

impl<V> ConcurrentMlpIndexBytes<V> {
    /// Closes the gate until the result drops. The write lock must be held.
    fn close(&self) -> Closed<'_> {
        self.gate.close();
        Closed(&self.gate)
    }

    /// The map through `&`: for sections, and for the write lock's holder.
    fn shared(&self) -> &RawMap<V> {
        // SAFETY: `&mut RawMap` exists only while the gate is closed with no section under
        // way and the write lock held (module docs); callers are sections or the lock's holder
        // outside those windows.
        unsafe { &*self.raw.get() }
    }

    /// Runs `f` in a read section (see the module docs). The thread must be pinned
    /// (`_guard`): the leaf versions `f` reads may be retired meanwhile.
    #[inline]
    fn section<R>(&self, _guard: &Guard, f: impl FnOnce(&RawMap<V>) -> R) -> R {
        let slot = slot();
        self.gate.enter(slot);
        let _section = Section {
            gate: &self.gate,
            slot,
        };
        f(self.shared())
    }

    /// The value stored under `key`, readable while `guard` lives.
    #[inline]
    pub fn get<'g>(&'g self, key: &[u8], guard: &'g Guard) -> Option<&'g V> {
        let at = self.section(guard, |raw| raw.find_version(key).map(found))?;
        // SAFETY: `guard` was pinned before the section (it is the caller's, made earlier).
        let (l, i) = unsafe { hold(at, guard) };
        Some(l.val(i))
    }

    /// The key and value stored under `key`.
    pub fn get_key_value<'g>(&'g self, key: &[u8], guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        let at = self.section(guard, |raw| raw.find_version(key).map(found))?;
        // SAFETY: as in `get`.
        let (l, i) = unsafe { hold(at, guard) };
        Some((l.key(i), l.val(i)))
    }

    /// [`get`](Self::get) for many keys: `out[i]` answers `keys[i]`. The searches of 8 keys at
    /// a time overlap their DRAM reads (as in
    /// [`MlpIndexBytes::get_batch`](super::MlpIndexBytes::get_batch)), in one section; each
    /// answer is linearizable on its own.
    ///
    /// # Panics
    ///
    /// When `out` is shorter than `keys`.
    pub fn get_batch<'g>(&'g self, keys: &[&[u8]], out: &mut [Option<&'g V>], guard: &'g Guard) {
        assert!(out.len() >= keys.len(), "output shorter than the batch");
        // `out[keys.len()..]` is left alone.
        let out = &mut out[..keys.len()];
        for (ks, os) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let mut at: [Option<Found<V>>; BATCH] = [None; BATCH];
            self.section(guard, |raw| {
                let mut routed = [(0, 0, 0); BATCH];
                for (r, k) in routed.iter_mut().zip(ks) {
                    *r = raw.find_start(k);
                }
                for ((a, k), r) in at.iter_mut().zip(ks).zip(routed) {
                    *a = raw.find_end(k, r).map(|(_, l, i)| found((l, i)));
                }
            });
            for (o, a) in os.iter_mut().zip(at) {
                *o = a.map(|a| {
                    // SAFETY: as in `get`.
                    let (l, i) = unsafe { hold(a, guard) };
                    l.val(i)
                });
            }
        }
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.section(&pin(), |raw| raw.find_version(key).is_some())
    }

    /// Number of keys stored; exact when no write is in flight.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed).max(0) as usize
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the map owns: leaves, prefix table, and the leaf versions and values
    /// retired and not yet freed. Walks every leaf in one section (writers that split or merge
    /// wait for it).
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.section(&pin(), |raw| raw.heap_bytes())
            + self.retired.load(Relaxed)
    }

    /// The first entry within `bound` from below: `≥ k`, `> k`, or the first entry.
    #[inline]
    pub fn lower_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        let at = self.section(guard, |raw| {
            let (l, i) = raw.seek_bound(bound, true);
            raw.forward_version(l, i).map(found)
        })?;
        // SAFETY: as in `get`.
        let (l, i) = unsafe { hold(at, guard) };
        Some((l.key(i), l.val(i)))
    }

    /// The last entry within `bound` from above: `≤ k`, `< k`, or the last entry.
    #[inline]
    pub fn upper_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        let at = self.section(guard, |raw| {
            let (l, i) = raw.seek_bound(bound, false);
            raw.back_version(l, i).map(found)
        })?;
        // SAFETY: as in `get`.
        let (l, i) = unsafe { hold(at, guard) };
        Some((l.key(i), l.val(i)))
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
        Range::new(self, range, guard, done)
    }

    /// Every entry in order, readable while `guard` lives.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Range<'g, V, RangeFull> {
        self.range(.., guard)
    }

    /// Audits every structural invariant (slow; holds the write lock and keeps readers and
    /// writers out). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let _closed = self.close();
        let raw = self.shared();
        raw.audit()?;
        if raw.len() != self.len() {
            return Err(format!(
                "len {} against the core's {}",
                self.len(),
                raw.len()
            ));
        }
        Ok(())
    }
}

impl<V: Send + Sync + 'static> Default for ConcurrentMlpIndexBytes<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for ConcurrentMlpIndexBytes<V> {
    /// The entries, as a map (`{key: value, ...}`, keys escaped as byte strings), read as an
    /// iteration reads them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let guard = pin();
        let mut m = f.debug_map();
        let mut it = Range::new(self, .., &guard, false);
        for (k, v) in &mut it {
            m.entry(&crate::key::Escaped(k), v);
        }
        m.finish()
    }
}

impl<K: AsRef<[u8]>, V: Clone + Send + Sync + 'static> Extend<(K, V)>
    for ConcurrentMlpIndexBytes<V>
{
    /// Inserts every pair; panics on a key over [`MAX_KEY_LEN`](Self::MAX_KEY_LEN).
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            if let Err(e) = self.insert(k.as_ref(), v) {
                panic!("ConcurrentMlpIndexBytes::extend: {e}");
            }
        }
    }
}

impl<K: AsRef<[u8]>, V: Clone + Send + Sync + 'static> FromIterator<(K, V)>
    for ConcurrentMlpIndexBytes<V>
{
    /// A map of the pairs (a later pair's value wins); panics on a key over
    /// [`MAX_KEY_LEN`](Self::MAX_KEY_LEN).
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::new();
        m.extend(iter);
        m
    }
}

impl<V: Clone + Send + Sync + 'static> ConcurrentOrderedMap<V> for ConcurrentMlpIndexBytes<V> {
    #[inline]
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        self.get(key, &pin()).map(f)
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        ConcurrentMlpIndexBytes::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        ConcurrentMlpIndexBytes::remove(self, key)
    }

    fn len(&self) -> usize {
        ConcurrentMlpIndexBytes::len(self)
    }

    fn memory_usage(&self) -> usize {
        ConcurrentMlpIndexBytes::memory_usage(self)
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
    //! Unit tests of the front end's protocol, sized for miri; the differential and stress
    //! suites are in `tests/concurrent_mlp_index_bytes.rs`.
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("/data/{:02}/item-{i:05}", i % 7).into_bytes()
    }

    /// A writer and a reader racing on a small map: leaves split and merge (64 keys a leaf)
    /// while the reader looks keys up, seeks and scans both ways. Values are `i * 1000 +
    /// round`: a reader sees a key only with a value the writer gave that key.
    #[test]
    fn writer_and_reader_race_on_a_small_map() {
        let n: u32 = if cfg!(miri) { 150 } else { 2_000 };
        let rounds = if cfg!(miri) { 2 } else { 6 };
        let map = ConcurrentMlpIndexBytes::new();
        let done = core::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 0..rounds {
                    for i in 0..n {
                        map.insert(&key(i), u64::from(i) * 1000 + round).unwrap();
                    }
                    for i in (0..n).filter(|i| i % 3 != 0) {
                        assert!(map.remove(&key(i)).is_some());
                    }
                }
                done.store(true, Relaxed);
            });
            s.spawn(|| {
                let mut i = 0u32;
                while !done.load(Relaxed) {
                    let g = pin();
                    let k = key(i % n);
                    if let Some(v) = map.get(&k, &g) {
                        assert_eq!(v / 1000, u64::from(i % n), "a value of another key");
                    }
                    if let Some((found, v)) = map.lower_bound(Bound::Included(&k), &g) {
                        assert!(found >= &k[..]);
                        let j = (v / 1000) as u32;
                        assert_eq!(found, &key(j)[..]);
                    }
                    let mut last: Option<&[u8]> = None;
                    for (k, v) in map.range(&key(i % n)[..].., &g).take(100) {
                        assert!(last.is_none_or(|l| l < k), "out of order");
                        assert_eq!(k, &key((v / 1000) as u32)[..]);
                        last = Some(k);
                    }
                    let mut last: Option<&[u8]> = None;
                    for (k, _) in map.range(..&key(i % n)[..], &g).rev().take(100) {
                        assert!(last.is_none_or(|l| l > k), "out of order backwards");
                        last = Some(k);
                    }
                    i = i.wrapping_add(7);
                }
            });
        });
        map.check_invariants().unwrap();
        let g = pin();
        let want: Vec<Vec<u8>> = {
            let mut v: Vec<Vec<u8>> = (0..n).filter(|i| i % 3 == 0).map(key).collect();
            v.sort();
            v
        };
        let got: Vec<Vec<u8>> = map.iter(&g).map(|(k, _)| k.to_vec()).collect();
        assert_eq!(got, want);
        assert_eq!(map.len(), want.len());
    }

    /// An iteration that holds a leaf version while the leaves around it split and merge
    /// moves on from where that version ended: each key present throughout comes once, in
    /// order, from either end.
    #[test]
    fn iterations_continue_across_splits_and_merges() {
        let n: u32 = if cfg!(miri) { 140 } else { 3_000 };
        let map = ConcurrentMlpIndexBytes::new();
        // Even keys stay throughout; odd ones come and go.
        for i in (0..n).step_by(2) {
            map.insert(&key(i), u64::from(i)).unwrap();
        }
        let g = pin();
        let mut stays: Vec<Vec<u8>> = (0..n).step_by(2).map(key).collect();
        stays.sort();
        for rev in [false, true] {
            let mut it = map.iter(&g);
            let mut seen: Vec<Vec<u8>> = Vec::new();
            let mut step = 0u32;
            loop {
                let e = if rev { it.next_back() } else { it.next() };
                let Some((k, _)) = e else { break };
                seen.push(k.to_vec());
                step += 1;
                // Every 10 entries: a burst of inserts (splits), then of removals (merges).
                if step.is_multiple_of(10) {
                    let phase = step / 10;
                    for i in (1..n).step_by(2) {
                        if phase % 2 == 1 {
                            map.insert(&key(i), 0).unwrap();
                        } else {
                            map.remove(&key(i));
                        }
                    }
                }
            }
            if rev {
                seen.reverse();
            }
            let kept: Vec<Vec<u8>> = seen
                .iter()
                .filter(|k| stays.binary_search(k).is_ok())
                .cloned()
                .collect();
            assert_eq!(kept, stays, "rev = {rev}");
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "rev = {rev}: order");
        }
        map.check_invariants().unwrap();
    }

    /// Both ends of one iteration meet without a key twice or a key missed.
    #[test]
    fn ends_meet_in_the_middle() {
        let map: ConcurrentMlpIndexBytes<u32> = (0..500u32).map(|i| (key(i), i)).collect();
        let g = pin();
        let mut it = map.iter(&g);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while let Some((k, _)) = it.next() {
            front.push(k.to_vec());
            match it.next_back() {
                Some((k, _)) => back.push(k.to_vec()),
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        let mut want: Vec<Vec<u8>> = (0..500).map(key).collect();
        want.sort();
        assert_eq!(front, want);
    }

    /// Replaced and removed values and replaced leaf versions are freed by the collector,
    /// and the map's memory count follows them back down.
    #[test]
    fn retired_memory_is_freed() {
        let map = ConcurrentMlpIndexBytes::new();
        // Under miri, just over two leaves' worth.
        let n = if cfg!(miri) { 140 } else { 300 };
        for round in 0..3u64 {
            for i in 0..n {
                map.insert(&key(i), vec![round; 4]).unwrap();
            }
        }
        for i in 0..n {
            assert_eq!(map.remove(&key(i)), Some(vec![2; 4]));
        }
        assert!(map.retired.load(Relaxed) > 0);
        // Other tests of this binary may hold guards for a while (which holds the collector
        // back for every thread): keep flushing until they are done.
        for _ in 0..10_000_000 {
            if map.retired.load(Relaxed) == 0 {
                break;
            }
            pin().flush();
            std::thread::yield_now();
        }
        assert_eq!(map.retired.load(Relaxed), 0, "retired bytes never freed");
        assert!(map.is_empty());
        map.check_invariants().unwrap();
    }

    #[test]
    fn debug_lists_the_entries() {
        let map = ConcurrentMlpIndexBytes::new();
        map.insert(b"b\xff", 2).unwrap();
        map.insert(b"a", 1).unwrap();
        assert_eq!(format!("{map:?}"), r#"{"a": 1, "b\xff": 2}"#);
        map.clear();
        assert_eq!(format!("{map:?}"), "{}");
        let g = pin();
        assert!(map.first(&g).is_none() && map.last(&g).is_none());
    }
}
