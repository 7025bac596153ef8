//! The concurrent Cuckoo Trie's typed core: the current trie behind an epoch-protected pointer,
//! the writer lock, typed records, validated reads and reclamation. Every `unsafe` of the
//! concurrent map lives here; its front end (`cuckoo_trie::concurrent`) only forwards.
//!
//! Liveness is carried by lifetimes: every read takes an [`epoch::Guard`](crate::epoch::Guard)
//! `&'g`, and what it returns borrows `'g`. That is sound because
//!
//! 1. a trie is destroyed only after it was replaced (by growth, shrinking or `clear`), through
//!    the epoch, so it outlives every guard pinned while it was current;
//! 2. a record is freed only after it was unlinked (by an update, a removal or `clear`),
//!    through the epoch, so a record named by a leaf that a reader saw in a validated state
//!    outlives the reader's guard;
//! 3. a [`Leaf`] is made only from a leaf of a validated read session under the guard whose
//!    lifetime it carries, so its record is live for that lifetime (rule 2);
//! 4. guards are [`crate::epoch::Guard`]s, which pin the default collector, the one this file
//!    retires into.
//!
//! Records are `[V][key bytes]` (`cuckoo_trie::record`); the raw trie knows them only as
//! addresses and key lengths.

use core::marker::PhantomData;
use core::ops::Bound;
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crossbeam_epoch::{self as cb, Atomic, Owned};

use super::table::{ReadSession, Torn};
use super::trie::{Inserted, LeafRef, NeedsGrowth, Params, RawTrie, Scratch, Seek};
use crate::Error;
use crate::cuckoo_trie::record;
use crate::epoch::Guard;

/// A leaf of a validated read under a guard that lives for `'g`: its record, and so its key
/// and value, stay readable for `'g` (rule 3 of the module docs).
pub(crate) struct Leaf<'g, V> {
    rec: *const u8,
    key_len: usize,
    _live: PhantomData<(&'g Guard, &'g V)>,
}

impl<V> Clone for Leaf<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Leaf<'_, V> {}

impl<'g, V> Leaf<'g, V> {
    /// Wraps a leaf read in a read session under `_guard`.
    ///
    /// # Safety
    /// `leaf` was read in a session of a trie loaded under `_guard` that has validated (or will
    /// validate before the `Leaf` is used; an unvalidated one is discarded unused).
    #[inline(always)]
    unsafe fn new(leaf: LeafRef, _guard: &'g Guard) -> Self {
        Leaf {
            rec: leaf.1.rec(),
            key_len: leaf.1.key_len(),
            _live: PhantomData,
        }
    }

    /// The leaf's key.
    #[inline(always)]
    pub(crate) fn key(self) -> &'g [u8] {
        // SAFETY: the record is live for 'g (type invariant), made by `record::alloc` for a
        // `key_len`-byte key; keys are never changed.
        unsafe { record::key::<V>(self.rec as *mut u8, self.key_len) }
    }

    /// The leaf's value.
    #[inline(always)]
    pub(crate) fn value(self) -> &'g V {
        // SAFETY: the record is live for 'g (type invariant); values are never changed in
        // place, so no `&mut` to it exists.
        unsafe { record::value::<V>(self.rec as *mut u8) }
    }

    /// Key and value.
    #[inline(always)]
    pub(crate) fn entry(self) -> (&'g [u8], &'g V) {
        (self.key(), self.value())
    }
}

/// The concurrent map's state; see the module docs for the liveness rules.
pub(crate) struct SharedTrie<V> {
    /// The current trie; replaced whole by growth, shrinking and `clear`. Never null.
    current: Atomic<RawTrie>,
    /// The writer's scratch memory: holding it is what makes a thread the writer.
    writer: Mutex<Scratch>,
    /// Bytes of records, including retired ones not yet reclaimed (shared with the
    /// reclamation closures, which may run after the map is gone).
    record_bytes: Arc<AtomicUsize>,
    params: Params,
    _values: PhantomData<V>,
}

// SAFETY: the map owns its records; values move between threads (a value inserted on one
// thread is dropped by the reclamation on another): `V: Send`.
unsafe impl<V: Send + Sync> Send for SharedTrie<V> {}
// SAFETY: shared access hands out `&V` to many threads (`V: Sync`) and moves values in and
// out (`V: Send`); the trie itself is synchronized by the protocol of the concurrent map.
unsafe impl<V: Send + Sync> Sync for SharedTrie<V> {}

/// Drops the value in record `p` and frees it, taking its size off `bytes`.
///
/// # Safety
/// As for [`record::free`]: `p` holds a `key_len`-byte key, is unreachable, and is freed once.
unsafe fn drop_record<V>(p: *mut u8, key_len: usize, bytes: &AtomicUsize) {
    // SAFETY: per the contract.
    let (v, size) = unsafe { record::free::<V>(p, key_len) };
    drop(v);
    bytes.fetch_sub(size, Relaxed);
}

/// The first leaf within `bound` from below (`forward`) or the last from above.
#[inline]
fn seek_bound(t: &RawTrie, bound: Bound<&[u8]>, forward: bool) -> Result<Option<LeafRef>, Torn> {
    match (bound, forward) {
        (Bound::Included(k), true) => t.seek(k, Seek::Ge),
        (Bound::Excluded(k), true) => t.seek(k, Seek::Gt),
        (Bound::Unbounded, true) => t.first(),
        (Bound::Included(k), false) => t.seek(k, Seek::Le),
        (Bound::Excluded(k), false) => t.seek(k, Seek::Lt),
        (Bound::Unbounded, false) => t.last(),
    }
}

impl<V> SharedTrie<V> {
    /// An empty map whose tries use `params`.
    pub(crate) fn new(params: Params) -> Result<Self, Error> {
        let mut raw = RawTrie::new(params)?;
        raw.set_shared();
        Ok(SharedTrie {
            current: Atomic::new(raw),
            writer: Mutex::new(Scratch::default()),
            record_bytes: Arc::new(AtomicUsize::new(0)),
            params,
            _values: PhantomData,
        })
    }

    /// The current trie.
    #[inline(always)]
    fn trie<'g>(&self, guard: &'g Guard) -> &'g RawTrie {
        // SAFETY: `current` is never null, and a trie is destroyed only through
        // `defer_destroy` after it was replaced, so it outlives every guard pinned while it was
        // reachable, `guard` included (rule 1).
        unsafe { self.current.load(Acquire, guard.crossbeam()).deref() }
    }

    /// Runs the read `op` until it completes on one committed state: every bucket it copied
    /// still has the version it had (`raw::seqlock`).
    #[inline]
    fn read<'g, R>(
        &self,
        guard: &'g Guard,
        mut op: impl FnMut(&'g RawTrie) -> Result<R, Torn>,
    ) -> R {
        let mut tries = 0u32;
        loop {
            let trie = self.trie(guard);
            let session = ReadSession::begin();
            if let Ok(r) = op(trie)
                && session.validate(&trie.table)
            {
                return r;
            }
            drop(session);
            tries += 1;
            if tries.is_multiple_of(16) {
                // Writers hold buckets for a whole operation; with more threads than cores the
                // writer may need this core to finish.
                std::thread::yield_now();
            }
        }
    }

    /// The value stored under `key`, live while `guard` is.
    #[inline]
    pub(crate) fn get<'g>(&self, key: &[u8], guard: &'g Guard) -> Option<&'g V> {
        let rec = self.read(guard, |t| t.get(key))?;
        // SAFETY: a record of the validated state read under `guard` (rule 2); values are
        // never changed in place.
        Some(unsafe { record::value::<V>(rec) })
    }

    /// The first leaf within `bound` from below (`forward`) or the last from above.
    #[inline]
    pub(crate) fn seek<'g>(
        &self,
        bound: Bound<&[u8]>,
        forward: bool,
        guard: &'g Guard,
    ) -> Option<Leaf<'g, V>> {
        let leaf = self.read(guard, |t| seek_bound(t, bound, forward))?;
        // SAFETY: read in a session that validated, under `guard`.
        Some(unsafe { Leaf::new(leaf, guard) })
    }

    /// Fills `out` with up to `max` successive leaves from `from` (in descending order when
    /// `rev`), all from one validated walk of the prefetching cursor: consecutive keys of one
    /// committed state. Returns true when the walk reached the end of the trie, so that no
    /// leaf follows the last one in `out`.
    pub(crate) fn batch<'g>(
        &self,
        from: Bound<&[u8]>,
        rev: bool,
        max: usize,
        out: &mut Vec<Leaf<'g, V>>,
        guard: &'g Guard,
    ) -> bool {
        debug_assert!(max > 0);
        self.read(guard, |t| {
            out.clear();
            let (mut cur, mut leaf) = match from {
                Bound::Included(k) => t.cursor_seek(k, false, rev)?,
                Bound::Excluded(k) => t.cursor_seek(k, true, rev)?,
                Bound::Unbounded => t.cursor_first(rev)?,
            };
            while let Some(l) = leaf {
                // SAFETY: read under `guard`; if this session fails to validate, `read`
                // runs the closure again, which clears `out` first, so only leaves of the
                // validated session are left.
                out.push(unsafe { Leaf::new(l, guard) });
                if out.len() == max {
                    return Ok(false);
                }
                leaf = t.cursor_next(&mut cur)?;
            }
            Ok(true)
        })
    }

    /// Keys stored in the current trie.
    pub(crate) fn len(&self) -> usize {
        self.trie(&crate::epoch::pin()).len()
    }

    /// Bytes of the current table's mapping.
    pub(crate) fn table_bytes(&self) -> usize {
        self.trie(&crate::epoch::pin()).table_bytes()
    }

    /// Bytes of records, retired ones included until reclaimed.
    pub(crate) fn record_bytes(&self) -> usize {
        self.record_bytes.load(Relaxed)
    }

    /// Bytes of the writer's scratch memory (waits for a running writer).
    pub(crate) fn scratch_bytes(&self) -> usize {
        self.lock_writer().memory_usage()
    }

    /// Audits the current trie (holds the writer lock).
    pub(crate) fn audit(&self) -> Result<(), String> {
        let _w = self.lock_writer();
        self.trie(&crate::epoch::pin()).audit()
    }

    /// The writer lock for a write of `key`. When another writer holds it, reads the key's
    /// path meanwhile ([`warm`](Self::warm)).
    fn lock_writer_for(&self, guard: &Guard, key: &[u8]) -> MutexGuard<'_, Scratch> {
        match self.writer.try_lock() {
            Ok(w) => w,
            Err(TryLockError::WouldBlock) => {
                self.warm(guard, key);
                self.lock_writer()
            }
            Err(TryLockError::Poisoned(_)) => {
                panic!("a writer of this map panicked; the map is unusable")
            }
        }
    }

    fn lock_writer(&self) -> MutexGuard<'_, Scratch> {
        // A poisoned mutex means a writer panicked inside the map (a bug) and may have left
        // buckets locked: continuing could hang readers or corrupt the trie.
        self.writer
            .lock()
            .expect("a writer of this map panicked; the map is unusable")
    }

    /// Reads what a write of `key` will read (its search path and the record of the leaf it
    /// reaches) before the writer lock is taken: the writer then finds it in cache, so the
    /// lock is held for the changes rather than for DRAM round trips, and concurrent writers'
    /// misses overlap. The result is not validated and not used.
    fn warm(&self, guard: &Guard, key: &[u8]) {
        let trie = self.trie(guard);
        let _session = ReadSession::begin();
        // Torn or not, the reads were made; the answer does not matter.
        let _ = trie.get(key);
    }
}

impl<V: Send + Sync + 'static> SharedTrie<V> {
    /// Stores `value` under `key`; returns a clone of the value it replaces. The caller has
    /// checked the key length.
    pub(crate) fn insert(&self, key: &[u8], value: V, guard: &Guard) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        let mut w = self.lock_writer_for(guard, key);
        let mut slot = Some(value);
        let mut made: Option<*mut u8> = None;
        loop {
            let trie = self.trie(guard);
            let bytes = &self.record_bytes;
            let mut make = || {
                *made.get_or_insert_with(|| {
                    let (p, size) = record::alloc(key, slot.take().expect("made once"));
                    bytes.fetch_add(size, Relaxed);
                    p
                })
            };
            match trie.insert(&mut w, key, &mut make) {
                Ok(Inserted::New) => {
                    trie.table.unlock_all(&mut w.locks);
                    return Ok(None);
                }
                Ok(Inserted::Existing { loc, rec: old }) => {
                    let new = make();
                    trie.set_record(&mut w, loc, new);
                    trie.table.unlock_all(&mut w.locks);
                    drop(w);
                    // SAFETY: `old` was the key's record until just now; reclamation of it
                    // (below) waits for `guard`.
                    let prev = unsafe { record::value::<V>(old) }.clone();
                    self.retire(guard, old, key.len());
                    return Ok(Some(prev));
                }
                Err(NeedsGrowth) => {
                    trie.table.unlock_all(&mut w.locks);
                    match trie.grown() {
                        Ok(bigger) => self.publish(bigger, guard),
                        Err(e) => {
                            if let Some(p) = made {
                                // SAFETY: made for this key and never linked (rolled back).
                                unsafe { drop_record::<V>(p, key.len(), &self.record_bytes) };
                            }
                            return Err(e);
                        }
                    }
                }
            }
        }
    }

    /// Removes `key`; returns a clone of its value.
    pub(crate) fn remove(&self, key: &[u8], guard: &Guard) -> Option<V>
    where
        V: Clone,
    {
        let mut w = self.lock_writer_for(guard, key);
        let trie = self.trie(guard);
        let found = trie.remove(&mut w, key);
        trie.table.unlock_all(&mut w.locks);
        let p = found?;
        if trie.wants_shrink() {
            // Shrinking only returns memory; if it fails the trie stays as it is.
            if let Ok(smaller) = trie.shrunk() {
                self.publish(smaller, guard);
            }
        }
        drop(w);
        // SAFETY: the key's record until just now; its reclamation waits for `guard`.
        let v = unsafe { record::value::<V>(p) }.clone();
        self.retire(guard, p, key.len());
        Some(v)
    }

    /// Replaces the trie with an empty one; the old table and the records are dropped once no
    /// reader can reach them. [`Error::OutOfMemory`] (map unchanged) when the new table
    /// cannot be mapped.
    pub(crate) fn clear(&self, guard: &Guard) -> Result<(), Error> {
        let _w = self.lock_writer();
        let old = self.trie(guard);
        let mut fresh = RawTrie::new(self.params)?;
        fresh.set_shared();
        let mut recs: Vec<(usize, usize)> = Vec::with_capacity(old.len());
        old.for_each_leaf(|e| recs.push((e.rec() as usize, e.key_len())));
        self.publish(fresh, guard);
        let bytes = Arc::clone(&self.record_bytes);
        let free_all = move || {
            for (p, len) in recs {
                // SAFETY: as in `retire`: unreachable since the publish, each freed once.
                unsafe { drop_record::<V>(p as *mut u8, len, &bytes) };
            }
        };
        // SAFETY: as in `retire`: the closure owns what it uses.
        unsafe { guard.crossbeam().defer_unchecked(free_all) };
        Ok(())
    }

    /// Makes `new` the current trie and retires the old one.
    fn publish(&self, new: RawTrie, guard: &Guard) {
        let g = guard.crossbeam();
        let old = self.current.swap(Owned::new(new), AcqRel, g);
        // SAFETY: `old` is unreachable from now on (only the writer, which we are, loads it
        // outside a guard's protection); readers pinned before the swap keep it alive.
        unsafe { g.defer_destroy(old) };
        // Hand the old table to the global queue now rather than after 64 more retirements.
        g.flush();
    }

    /// Drops the record `p` (a `key_len`-byte key) once no reader can reach it.
    fn retire(&self, guard: &Guard, p: *mut u8, key_len: usize) {
        let bytes = Arc::clone(&self.record_bytes);
        let addr = p as usize;
        let free = move || {
            // SAFETY: the record was unlinked before it was retired, and the epoch has moved
            // past every reader that could have read its leaf; it is freed once.
            unsafe { drop_record::<V>(addr as *mut u8, key_len, &bytes) };
        };
        // SAFETY: the closure owns what it uses (`V: Send + 'static`, the record, the counter)
        // and may run on any thread at any later time.
        unsafe { guard.crossbeam().defer_unchecked(free) };
    }
}

impl<V> Drop for SharedTrie<V> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread uses the map, so nothing is pinned on it.
        let guard = unsafe { cb::unprotected() };
        let cur = self.current.swap(cb::Shared::null(), Relaxed, guard);
        // SAFETY: non-null (set at construction, only ever swapped for another trie).
        let trie = unsafe { cur.into_owned() }.into_box();
        let mut recs: Vec<(usize, usize)> = Vec::with_capacity(trie.len());
        trie.for_each_leaf(|e| recs.push((e.rec() as usize, e.key_len())));
        for (p, len) in recs {
            // SAFETY: each live record once; retired records are owned by their closures.
            drop(unsafe { record::free::<V>(p as *mut u8, len) });
        }
    }
}
