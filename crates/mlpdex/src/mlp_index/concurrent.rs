//! [`ConcurrentMlpIndex`]: MlpIndex shared between threads, its lookups lock-free (the MLP
//! paper's future work, mlp-data-structures.txt §6).
//!
//! ```
//! use mlpdex::mlp_index::ConcurrentMlpIndex;
//!
//! let map = ConcurrentMlpIndex::new();
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let map = &map;
//!         s.spawn(move || {
//!             for i in 0..1000u64 {
//!                 map.insert(2 * i + t, i).unwrap();
//!             }
//!         });
//!     }
//! });
//!
//! assert_eq!(map.get(7), Some(3)); // no guard: values are copied out
//! assert_eq!(map.range(10..14).collect::<Vec<_>>(), [(10, 5), (11, 5), (12, 6), (13, 6)]);
//! assert_eq!(map.iter().next_back(), Some((1999, 999)));
//! assert_eq!(map.lower_bound(std::ops::Bound::Excluded(1990)), Some((1991, 995)));
//! assert_eq!(map.remove(7), Some(3));
//! assert_eq!(map.len(), 1999);
//! ```
//!
//! # When to use it
//!
//! Large maps of integer keys read by many threads at once, point lookups dominating: a
//! lookup is the single-threaded map's one round of parallel DRAM reads plus the check of a
//! few stripe versions that stay in cache; it never writes shared memory and never waits for
//! a lock (only, rarely, for a write to a bucket it read to finish).
//!
//! Not for write-heavy loads from many threads: **writers take turns** (one write lock), each
//! as fast as the single-threaded map's insert. Range scans and bounds read under the
//! lock's shared side, in batches of 64 entries: they wait for the write under way and make
//! writers wait at most one batch. For concurrent writers use
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie) (keys as 8 big-endian
//! bytes).
//!
//! Measured against the single-threaded map and the concurrent Cuckoo Trie:
//! [`docs/results/concurrent-mlp.md`](../../../../docs/results/concurrent-mlp.md) (suite
//! `bench/suites/concurrent-mlp.toml`); lookups while the table is rebuilt:
//! [`docs/results/concurrent-resize.md`](../../../../docs/results/concurrent-resize.md).
//!
//! # API
//!
//! The read methods of [`MlpIndex`](super::MlpIndex) (`get`, `contains_key`, `len`,
//! `lower_bound`/`upper_bound`, `first`/`last`, `range`/`iter` double-ended), and `insert`,
//! `remove`, `clear`, `reserve`/`try_reserve` and `shrink_to_fit`, all through `&self`. Keys and values come out by value, so there is
//! no guard to hold. It implements [`ConcurrentOrderedMap<u64>`](crate::ConcurrentOrderedMap)
//! with 8-byte big-endian keys, like `MlpIndex`'s [`OrderedMap`](crate::OrderedMap).
//!
//! # Contract
//!
//! - **Layout.** The bucketized table only ([`Layout::Bucketized`](super::Layout)); a config
//!   asking for the paper's layout is refused with [`Error::InvalidConfig`].
//! - **Lookups** (`get`, `contains_key`) are linearizable and lock-free with respect to other
//!   readers. A lookup hashes the key's index lengths in use, issues every bucket read at
//!   once (the paper's parallel probe), loads the versions of those buckets' stripes
//!   (`raw::stripes`: 4096 seqlock words, bucket `b` in stripe `b mod 4096`), searches, and
//!   checks the versions, the lengths in use and the table it read are unchanged; if not it
//!   reads again.
//! - **Writes** (`insert`, `remove`, `clear`) take the write lock, run the single-threaded
//!   operation, and lock the stripe of each bucket before their first store into it, holding
//!   every stripe until the operation is complete (two-phase): a lookup sees an operation
//!   whole or not at all. The lengths in use and a new table are published before the stripes
//!   are released.
//! - **Growth** does not stop lookups: a writer builds the grown table beside the current one,
//!   which lookups keep reading, publishes it with one pointer store, and retires the old one
//!   through the epoch collector ([`epoch`](crate::epoch)). An insertion grows the table
//!   *before* it changes anything when it might not fit; only a cuckoo placement that fails
//!   under the maximum load grows inside an operation, and then a lookup that meets one of
//!   the few stripes the operation holds waits for the copy.
//! - **Scans and bounds** are linearizable per batch of 64 entries (each batch is read under
//!   the lock's shared side); a whole scan is not a snapshot: it yields every key present for
//!   the whole scan, no key absent for the whole scan, each key at most once, in order.
//! - `len` and `memory_usage` are exact when no write is under way.
//!
//! # Deviations
//!
//! The issue asked for writers that lock only the buckets they touch, in parallel. Here they
//! take turns: the trie's operation changes the minima along the key's path, the node, the
//! leaf and cuckoo relocation chains in place, and the counts the growth decisions read, so
//! running two at once would need the Cuckoo Trie's copy-and-commit write sessions over this
//! table. That is left for later; lookups, the paper's target, do not wait for writers.

use core::fmt;
use core::ops::{Bound, ControlFlow, RangeBounds};
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicU32, AtomicUsize};
use std::sync::{Arc, PoisonError, RwLock};

use crossbeam_epoch::{Atomic, Owned};

use super::raw::hash::{Geo, MIN_LEN, prefix};
use super::raw::stripes::Stripes;
use super::raw::table::{Bucket, Probe, Table, View};
use super::raw::trie::{Cursor, RawIndex};
use super::{Config, Layout, first_key_in, key_span, last_key_in};
use crate::key::{int_end, int_start, key_to_u64};
use crate::{ConcurrentOrderedMap, Error, KeyRange};

/// Entries a scan reads per visit of the lock's shared side.
const BATCH: usize = 64;

/// Slots an insertion may place at most: a leaf, and a node of up to three entries that it
/// splits off or moves because it grew (see [`RawIndex::make_room`]).
const INSERT_SLOTS: usize = 8;

/// MlpIndex shared between threads: lock-free lookups, writers taking turns. See the
/// [module docs](self).
///
/// ```
/// use mlpdex::mlp_index::ConcurrentMlpIndex;
///
/// let map = ConcurrentMlpIndex::new();
/// std::thread::scope(|s| {
///     s.spawn(|| map.insert(1, 10).unwrap());
///     s.spawn(|| map.insert(2, 20).unwrap());
/// });
/// assert_eq!(map.get(2), Some(20));
/// assert_eq!(map.iter().map(|(_, v)| v).sum::<u64>(), 30);
/// ```
pub struct ConcurrentMlpIndex {
    /// The table lookups read; null until the first insertion.
    current: Atomic<Current>,
    /// Bit `len` is set when items of index length `len` exist.
    lengths: AtomicU32,
    stripes: Arc<Stripes>,
    writer: RwLock<Writer>,
    len: AtomicUsize,
    bytes: AtomicUsize,
    config: Config,
    /// Test hook: see [`set_lookup_delay`](Self::set_lookup_delay).
    #[cfg(feature = "testing")]
    lookup_delay: AtomicU32,
}

/// Where the buckets of the current table are.
struct Current {
    base: core::ptr::NonNull<Bucket>,
    geo: Geo,
}

// SAFETY: `Current` is an address and a size; the buckets it names are read through atomics.
unsafe impl Send for Current {}
// SAFETY: as above.
unsafe impl Sync for Current {}

/// The writers' side.
struct Writer {
    /// The map core; `None` until the first insertion, and after `clear`.
    raw: Option<RawIndex<Table>>,
}

impl ConcurrentMlpIndex {
    /// An empty map. Allocates nothing until the first insertion.
    pub fn new() -> ConcurrentMlpIndex {
        Self::with_config(Config::default()).expect("the default config is valid")
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting (the
    /// layout must be [`Layout::Bucketized`]).
    pub fn with_config(config: Config) -> Result<ConcurrentMlpIndex, Error> {
        if config.layout != Layout::Bucketized {
            return Err(Error::InvalidConfig {
                what: "ConcurrentMlpIndex has the bucketized layout only",
            });
        }
        config.validate()?;
        Ok(ConcurrentMlpIndex {
            current: Atomic::null(),
            lengths: AtomicU32::new(0),
            bytes: AtomicUsize::new(Self::FIXED_BYTES),
            stripes: Arc::new(Stripes::new()),
            writer: RwLock::new(Writer { raw: None }),
            len: AtomicUsize::new(0),
            config,
            #[cfg(feature = "testing")]
            lookup_delay: AtomicU32::new(0),
        })
    }

    /// Bytes owned whatever the contents: the map and its stripe versions.
    const FIXED_BYTES: usize = size_of::<Self>() + Stripes::BYTES;

    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let guard = crossbeam_epoch::pin();
        loop {
            let cur = self.current.load(Acquire, &guard);
            // SAFETY: a published `Current` is retired only after it is replaced, so it
            // outlives every guard pinned while it was current.
            let c = (unsafe { cur.as_ref() })?;
            // SAFETY: the table's buckets are retired with (after) the `Current` naming them.
            let view = unsafe { View::new(c.base, c.geo) };
            let lengths = self.lengths.load(Acquire);
            let mut pr = [Probe::default(); 9];
            for len in MIN_LEN..=8 {
                if lengths & 1 << len != 0 {
                    let p = view.probe(prefix(key, len), len);
                    view.prefetch(&p);
                    pr[len as usize] = p;
                }
            }
            let mut ver = [(0u64, 0u64); 9];
            let mut held = 0;
            for len in MIN_LEN..=8 {
                if lengths & 1 << len != 0 {
                    let p = &pr[len as usize];
                    let v = (self.stripes.begin(p.b1), self.stripes.begin(p.b2));
                    held |= v.0 | v.1;
                    ver[len as usize] = v;
                }
            }
            if held & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let mut found = None;
            for len in (MIN_LEN..=8).rev() {
                if lengths & 1 << len != 0
                    && let Some(l) = view.find(&pr[len as usize])
                {
                    #[cfg(feature = "testing")]
                    self.delay_lookup();
                    let (leaf, w0) = view.word(l);
                    found = (leaf && view.leaf_suffix_is(l, key)).then_some(w0);
                    break;
                }
            }
            Stripes::settle();
            let mut same =
                self.lengths.load(Relaxed) == lengths && self.current.load(Relaxed, &guard) == cur;
            for len in MIN_LEN..=8 {
                if lengths & 1 << len != 0 {
                    let (p, v) = (&pr[len as usize], ver[len as usize]);
                    same &= self.stripes.check(p.b1, v.0) & self.stripes.check(p.b2, v.1);
                }
            }
            if same {
                return found;
            }
        }
    }

    /// Test hook (`testing` feature only, hidden): makes every [`get`](Self::get) of this map
    /// yield its thread `yields` times (0, the default: not at all) between finding the entry
    /// of the key in its bucket and reading that entry, which widens the window in which a
    /// writer can move or replace the entry (a cuckoo relocation, an insertion, a removal)
    /// under a lookup that has already loaded the stripe versions. Only the lookup's final
    /// re-check of the versions catches such a torn read; the integration tests use this to
    /// check that it does.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn set_lookup_delay(&self, yields: u32) {
        self.lookup_delay.store(yields, Relaxed);
    }

    /// The pause [`set_lookup_delay`](Self::set_lookup_delay) asks for.
    #[cfg(feature = "testing")]
    #[inline(always)]
    fn delay_lookup(&self) {
        for _ in 0..self.lookup_delay.load(Relaxed) {
            std::thread::yield_now();
        }
    }

    /// Whether `key` is stored.
    #[inline]
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Stores `value` under `key`; returns the value it replaces. Fails only with
    /// [`Error::OutOfMemory`], after which the map is empty.
    pub fn insert(&self, key: u64, value: u64) -> Result<Option<u64>, Error> {
        let mut w = self.write_lock();
        let raw = self.core(&mut w)?;
        let r = raw
            .make_room(INSERT_SLOTS)
            .and_then(|()| raw.insert(key, value));
        self.finish(raw);
        r
    }

    /// Removes `key`; returns its value.
    pub fn remove(&self, key: u64) -> Option<u64> {
        let mut w = self.write_lock();
        let raw = w.raw.as_mut()?;
        let r = raw.remove(key);
        self.finish(raw);
        r
    }

    /// Grows the table, if needed, so that `additional` more keys fit without growing again
    /// (an estimate, as for [`MlpIndex::reserve`](super::MlpIndex::reserve)). The grown
    /// table is built beside the current one, which lookups go on reading; writers wait.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory; [`try_reserve`](Self::try_reserve) returns
    /// the error instead.
    pub fn reserve(&self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            super::out_of_memory(e);
        }
    }

    /// [`reserve`](Self::reserve), returning [`Error::OutOfMemory`] instead of panicking (the
    /// map is then unchanged).
    pub fn try_reserve(&self, additional: usize) -> Result<(), Error> {
        let mut w = self.write_lock();
        let raw = self.core(&mut w)?;
        let r = raw.reserve(additional);
        self.finish(raw);
        r
    }

    /// Shrinks the table to the size growth would give it for the keys present, as
    /// [`reserve`](Self::reserve) grows it: beside the current table, lookups going on. Keeps
    /// the current table if the operating system refuses the memory.
    pub fn shrink_to_fit(&self) {
        let mut w = self.write_lock();
        if let Some(raw) = w.raw.as_mut() {
            // A refused allocation leaves the current table, as documented.
            let _ = raw.shrink_to_fit();
            self.finish(raw);
        }
    }

    /// Removes every key and gives the table and the top bitmap back (once no lookup reads
    /// them).
    pub fn clear(&self) {
        let mut w = self.write_lock();
        if let Some(raw) = w.raw.take() {
            let guard = crossbeam_epoch::pin();
            self.lengths.store(0, Relaxed);
            let old = self
                .current
                .swap(crossbeam_epoch::Shared::null(), Release, &guard);
            // SAFETY: `old` is unreachable for lookups that start now; those under way hold
            // guards that keep it (and the table, retired with it) alive.
            unsafe { retire(&guard, old, raw) };
            self.len.store(0, Relaxed);
            self.bytes.store(Self::FIXED_BYTES, Relaxed);
        }
    }

    /// Number of keys; exact when no write is under way.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the map owns (table, top bitmap, stripe versions); exact when no write is under
    /// way. Tables replaced by growth are not counted once replaced, though the epoch
    /// collector frees them a little later.
    pub fn memory_usage(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// The first entry within `bound` from below: the smallest key `≥` (`Included`) or `>`
    /// (`Excluded`) it, or the first entry (`Unbounded`).
    pub fn lower_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        self.bound(first_key_in(bound)?, false)
    }

    /// The last entry within `bound` from above.
    pub fn upper_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        self.bound(last_key_in(bound)?, true)
    }

    /// The entry of the smallest key.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.lower_bound(Bound::Unbounded)
    }

    /// The entry of the largest key.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.upper_bound(Bound::Unbounded)
    }

    /// The entries with keys in `range`, in ascending order (or descending, from the back),
    /// read in batches of 64 (see the module docs for what a scan sees). An empty or inverted
    /// range yields nothing.
    pub fn range<R: RangeBounds<u64>>(&self, range: R) -> Range<'_> {
        Range::new(
            self,
            range.start_bound().cloned(),
            range.end_bound().cloned(),
        )
    }

    /// Every entry, in ascending order.
    pub fn iter(&self) -> Range<'_> {
        self.range(..)
    }

    /// Checks the structure's invariants (for tests); takes the write lock.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let w = self.write_lock();
        let Some(raw) = &w.raw else {
            return Ok(());
        };
        raw.audit()?;
        if raw.lengths() != self.lengths.load(Relaxed) {
            return Err("published lengths differ from the counts".into());
        }
        if raw.len() != self.len() {
            return Err(format!("len {} but {} keys", self.len(), raw.len()));
        }
        let guard = crossbeam_epoch::pin();
        // SAFETY: under the write lock the current table cannot be replaced.
        let cur = unsafe { self.current.load(Acquire, &guard).as_ref() };
        if cur.map(|c| c.base) != Some(raw.table.view().base()) {
            return Err("the published table is not the writer's".into());
        }
        Ok(())
    }

    /// The map core, made (with the smallest table) if there is none yet.
    fn core<'w>(&self, w: &'w mut Writer) -> Result<&'w mut RawIndex<Table>, Error> {
        Ok(match &mut w.raw {
            Some(raw) => raw,
            empty => {
                let max_load = self.config.effective_max_load_factor();
                let mut raw = RawIndex::<Table>::new(max_load, self.config.huge_pages)?;
                raw.table.share(Arc::clone(&self.stripes));
                empty.insert(raw)
            }
        })
    }

    fn write_lock(&self) -> std::sync::RwLockWriteGuard<'_, Writer> {
        // A panicking writer leaves the core as it was between its stores; the map stays
        // usable (as std's maps do after a panic in a user callback).
        self.writer.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, Writer> {
        self.writer.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends a write: publishes the lengths in use and, if the table was replaced, the new
    /// one (retiring the old), then releases the stripes the write locked.
    fn finish(&self, raw: &mut RawIndex<Table>) {
        let lengths = raw.lengths();
        if lengths != self.lengths.load(Relaxed) {
            self.lengths.store(lengths, Relaxed);
        }
        let retired = raw.table.take_retired();
        let guard = crossbeam_epoch::pin();
        let view = raw.table.view();
        // SAFETY: under the write lock the current table cannot be replaced by anyone else.
        let cur = unsafe { self.current.load(Acquire, &guard).as_ref() };
        if cur.map(|c| c.base) != Some(view.base()) {
            let new = Owned::new(Current {
                base: view.base(),
                geo: view.geo,
            });
            let old = self.current.swap(new, Release, &guard);
            // SAFETY: as in `clear`.
            unsafe { retire(&guard, old, retired) };
        } else {
            debug_assert!(retired.is_empty(), "a replaced table is always republished");
        }
        raw.table.unlock();
        self.len.store(raw.len(), Relaxed);
        self.bytes.store(Self::FIXED_BYTES + raw.bytes(), Relaxed);
    }

    /// The first entry from `from` upward (`rev`: downward), under the shared lock.
    fn bound(&self, from: u64, rev: bool) -> Option<(u64, u64)> {
        let r = self.read_lock();
        let raw = r.raw.as_ref()?;
        let (k, l) = if rev {
            raw.upper_bound(from)?
        } else {
            raw.lower_bound(from)?
        };
        Some((k, *raw.value(l)))
    }

    /// Up to [`BATCH`] entries with keys in `lo..=hi`, from `lo` up (`rev`: from `hi` down),
    /// read under the shared lock, into `out`.
    fn batch(&self, lo: u64, hi: u64, rev: bool, out: &mut Vec<(u64, u64)>) {
        let r = self.read_lock();
        let Some(raw) = r.raw.as_ref() else {
            return;
        };
        let mut c = Cursor::seek(raw, if rev { hi } else { lo }, rev);
        while out.len() < BATCH {
            let Some((k, l)) = c.step(raw) else {
                break;
            };
            if k < lo || k > hi {
                break;
            }
            out.push((k, *raw.value(l)));
        }
    }
}

/// Retires `old` and `tables` into the epoch collector.
///
/// # Safety
///
/// `old` must be unreachable for lookups that pin after this call.
unsafe fn retire<T: Send + 'static>(
    guard: &crossbeam_epoch::Guard,
    old: crossbeam_epoch::Shared<'_, Current>,
    tables: T,
) {
    if !old.is_null() {
        // SAFETY: the caller's contract; `old` came from `Owned::new` and is retired once.
        unsafe { guard.defer_destroy(old) };
    }
    guard.defer(move || drop(tables));
    guard.flush();
}

impl Default for ConcurrentMlpIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ConcurrentMlpIndex {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no lookup runs; the `Current` was made by `Owned::new`.
        unsafe {
            let g = crossbeam_epoch::unprotected();
            let cur = self.current.load(Relaxed, g);
            if !cur.is_null() {
                drop(cur.into_owned());
            }
        }
    }
}

impl fmt::Debug for ConcurrentMlpIndex {
    /// The entries, as a map (read in batches, so not a snapshot under concurrent writes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(u64, u64)> for ConcurrentMlpIndex {
    /// # Panics
    ///
    /// If the operating system refuses memory.
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(iter: I) -> Self {
        let map = ConcurrentMlpIndex::new();
        map.extend_from(iter);
        map
    }
}

impl Extend<(u64, u64)> for ConcurrentMlpIndex {
    /// # Panics
    ///
    /// If the operating system refuses memory.
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, iter: I) {
        self.extend_from(iter);
    }
}

impl ConcurrentMlpIndex {
    fn extend_from<I: IntoIterator<Item = (u64, u64)>>(&self, iter: I) {
        for (k, v) in iter {
            if let Err(e) = self.insert(k, v) {
                super::out_of_memory(e);
            }
        }
    }
}

impl<'a> IntoIterator for &'a ConcurrentMlpIndex {
    type Item = (u64, u64);
    type IntoIter = Range<'a>;

    fn into_iter(self) -> Range<'a> {
        self.iter()
    }
}

/// The entries of a key range, in batches read under the shared lock; made by
/// [`ConcurrentMlpIndex::range`] and [`iter`](ConcurrentMlpIndex::iter).
///
/// ```
/// use mlpdex::mlp_index::ConcurrentMlpIndex;
///
/// let map: ConcurrentMlpIndex = (0..100u64).map(|k| (k, k * k)).collect();
/// let mut r = map.range(10..20);
/// assert_eq!(r.next(), Some((10, 100)));
/// assert_eq!(r.next_back(), Some((19, 361)));
/// assert_eq!(r.count(), 8);
/// ```
pub struct Range<'m> {
    map: &'m ConcurrentMlpIndex,
    /// Keys not yet read by either end: `lo..=hi`; `None` when none are left.
    left: Option<(u64, u64)>,
    front: Vec<(u64, u64)>,
    /// Next entry of `front` to yield.
    at: usize,
    /// Read from the top down: yielded from its start.
    back: Vec<(u64, u64)>,
    back_at: usize,
}

impl<'m> Range<'m> {
    fn new(map: &'m ConcurrentMlpIndex, start: Bound<u64>, end: Bound<u64>) -> Range<'m> {
        Range {
            map,
            left: key_span(start, end),
            front: Vec::new(),
            at: 0,
            back: Vec::new(),
            back_at: 0,
        }
    }

    /// Reads the next batch from the low end (`rev`: the high end) of the keys left.
    fn refill(&mut self, rev: bool) {
        let Some((lo, hi)) = self.left else {
            return;
        };
        let buf = if rev { &mut self.back } else { &mut self.front };
        buf.clear();
        self.map.batch(lo, hi, rev, buf);
        if rev {
            self.back_at = 0;
        } else {
            self.at = 0;
        }
        let buf = if rev { &self.back } else { &self.front };
        self.left = match buf.last() {
            // Fewer than a batch: the range is exhausted from this end.
            _ if buf.len() < BATCH => None,
            Some(&(k, _)) if rev => k.checked_sub(1).filter(|&h| h >= lo).map(|h| (lo, h)),
            Some(&(k, _)) => k.checked_add(1).filter(|&l| l <= hi).map(|l| (l, hi)),
            None => None,
        };
    }
}

impl Iterator for Range<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.at == self.front.len() {
            self.refill(false);
        }
        if let Some(&e) = self.front.get(self.at) {
            self.at += 1;
            return Some(e);
        }
        // The keys left were read by the back end: yield them from its lowest.
        if self.back_at < self.back.len() {
            return self.back.pop();
        }
        None
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<(u64, u64)> {
        if self.back_at == self.back.len() {
            self.refill(true);
        }
        if let Some(&e) = self.back.get(self.back_at) {
            self.back_at += 1;
            return Some(e);
        }
        if self.at < self.front.len() {
            return self.front.pop();
        }
        None
    }
}

impl fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

/// With 8-byte big-endian keys (other widths are absent; inserting one fails with
/// [`Error::KeyWidth`]).
impl ConcurrentOrderedMap<u64> for ConcurrentMlpIndex {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&u64) -> R) -> Option<R> {
        self.get(key_to_u64(key)?).map(|v| f(&v))
    }

    fn insert(&self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        let k = key_to_u64(key).ok_or(Error::KeyWidth {
            len: key.len(),
            expected: 8,
        })?;
        ConcurrentMlpIndex::insert(self, k, value)
    }

    fn remove(&self, key: &[u8]) -> Option<u64> {
        ConcurrentMlpIndex::remove(self, key_to_u64(key)?)
    }

    fn len(&self) -> usize {
        ConcurrentMlpIndex::len(self)
    }

    fn memory_usage(&self) -> usize {
        ConcurrentMlpIndex::memory_usage(self)
    }

    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        let (k, v) = ConcurrentMlpIndex::lower_bound(self, int_start(bound))?;
        Some(f(&k.to_be_bytes(), &v))
    }

    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &u64) -> R,
    ) -> Option<R> {
        let (k, v) = ConcurrentMlpIndex::upper_bound(self, int_end(bound))?;
        Some(f(&k.to_be_bytes(), &v))
    }

    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let (start, end) = range.key_bounds();
        for (k, v) in Range::new(self, int_start(start), int_end(end)) {
            if f(&k.to_be_bytes(), &v).is_break() {
                return;
            }
        }
    }

    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &u64) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let (start, end) = range.key_bounds();
        for (k, v) in Range::new(self, int_start(start), int_end(end)).rev() {
            if f(&k.to_be_bytes(), &v).is_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The unsafe parts (views of published tables, their retirement, values read in place
    //! under the shared lock) beside a writer that grows and shrinks the table; small enough
    //! for miri, which checks the accesses for data races.
    use super::*;
    use core::sync::atomic::AtomicBool;

    #[test]
    fn lookups_and_scans_beside_a_growing_writer() {
        // Under miri, enough inserts to grow the table once (it grows at the 176th): the
        // reader interleaves with every step of the writer, so this sets the test's time.
        let more: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let map = ConcurrentMlpIndex::new();
        for i in 0..40u64 {
            map.insert(i * 3, i).unwrap();
        }
        let before = map.memory_usage();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (map, done) = (&map, &done);
            s.spawn(move || {
                let mut i = 0;
                while !done.load(Acquire) {
                    assert_eq!(map.get(i * 3), Some(i));
                    i = (i + 1) % 40;
                    if i == 0 {
                        let fixed = map.range(..).filter(|(k, _)| k % 3 == 0).count();
                        assert_eq!(fixed, 40);
                    }
                }
            });
            // Stops the reader however the writer ends.
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Release);
                }
            }
            let _stop = Stop(done);
            for j in 0..more {
                map.insert(j * 3 + 1, j).unwrap();
            }
            assert!(map.memory_usage() > before, "the table did not grow");
            for j in 0..more {
                assert_eq!(map.remove(j * 3 + 1), Some(j));
            }
        });
        map.check_invariants().unwrap();
        assert_eq!(map.len(), 40);
        map.clear();
        assert_eq!(map.get(3), None);
    }
}
