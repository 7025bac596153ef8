//! The concurrent Cuckoo Trie's typed core: the current trie behind an epoch-protected pointer,
//! typed records, validated reads, committed writes, resizing and reclamation. Every `unsafe`
//! of the concurrent map lives here; its front end (`cuckoo_trie::concurrent`) only forwards.
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

use super::Padded;
use super::seqlock::Refused;
use super::table::{Ent, FrozenRead, ReadSession, Torn, WriteSession};
use super::trie::{Inserted, Lobby, Params, RawTrie, Retry, Scratch, Seek};
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
    /// Wraps a leaf (or a key entry: leaf-shaped, naming the same record) read in a read
    /// session under `_guard`.
    ///
    /// # Safety
    /// `leaf` was read in a session of a trie loaded under `_guard` that has validated (or will
    /// validate before the `Leaf` is used; an unvalidated one is discarded unused).
    #[inline(always)]
    unsafe fn new(leaf: Ent, _guard: &'g Guard) -> Self {
        Leaf {
            rec: leaf.rec(),
            key_len: leaf.key_len(),
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
    /// Writers' scratch memory, one slot per concurrent writer: a writer takes its thread's
    /// slot, or the next free one ([`scratch`](Self::scratch)).
    scratch: Box<[Padded<Mutex<Scratch>>]>,
    /// Held by whoever freezes the current table (a resize, `clear`, an audit): one at a
    /// time. Writers that find the table frozen wait on it.
    resizer: Mutex<()>,
    /// Where the running resize posts its copy for waiting writers to help with.
    lobby: Lobby,
    /// Bytes of records, including retired ones not yet reclaimed, as one counter per
    /// scratch slot: a thread adds to and retires through its home slot's counter, so writers
    /// do not contend for one cache line (an update allocates one record and retires another:
    /// with one shared counter, four read-modify-writes of one line, counting the `Arc`'s).
    /// Shared with the reclamation closures, which may run after the map is gone and on
    /// another thread; a counter may so wrap below zero, and only the sum counts.
    record_bytes: Box<[Arc<Padded<AtomicUsize>>]>,
    params: Params,
    _values: PhantomData<V>,
}

// SAFETY: the map owns its records; values move between threads (a value inserted on one
// thread is dropped by the reclamation on another): `V: Send`.
unsafe impl<V: Send + Sync> Send for SharedTrie<V> {}
// SAFETY: shared access hands out `&V` to many threads (`V: Sync`) and moves values in and
// out (`V: Send`); the trie itself is synchronized by the protocol of the concurrent map.
unsafe impl<V: Send + Sync> Sync for SharedTrie<V> {}

/// Scratch slots per map: twice the cores (writers beyond that share slots, waiting on each
/// other's), at most this many.
const MAX_SLOTS: usize = 64;

/// Which scratch slot this thread tries first: threads number themselves in order of their
/// first write to any map.
fn home_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static HOME: usize = NEXT.fetch_add(1, Relaxed);
    }
    HOME.with(|h| *h)
}

/// Waits a little after the `n`th failed commit in a row: spins at first, then lets other
/// threads (perhaps the conflicting writer, descheduled) run.
fn back_off(n: u32) {
    if n < 6 {
        for _ in 0..1u32 << n {
            core::hint::spin_loop();
        }
    } else {
        std::thread::yield_now();
    }
}

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

/// The first leaf within `bound` from below (`forward`) or the last from above (or, with the
/// key index, the key entry of an included bound's key).
#[inline]
fn seek_bound(t: &RawTrie, bound: Bound<&[u8]>, forward: bool) -> Result<Option<Ent>, Torn> {
    // With the key index, a present key answers `≥ key` and `≤ key` itself in one probe.
    if let Bound::Included(k) = bound
        && let Some(e) = t.seek_exact(k)
    {
        return Ok(Some(e));
    }
    let found = match (bound, forward) {
        (Bound::Included(k), true) => t.seek(k, Seek::Ge),
        (Bound::Excluded(k), true) => t.seek(k, Seek::Gt),
        (Bound::Unbounded, true) => t.first(),
        (Bound::Included(k), false) => t.seek(k, Seek::Le),
        (Bound::Excluded(k), false) => t.seek(k, Seek::Lt),
        (Bound::Unbounded, false) => t.last(),
    };
    Ok(found?.map(|(_, e)| e))
}

impl<V> SharedTrie<V> {
    /// An empty map whose tries use `params`.
    pub(crate) fn new(params: Params) -> Result<Self, Error> {
        let mut raw = RawTrie::new(params)?;
        raw.set_shared();
        Ok(SharedTrie {
            current: Atomic::new(raw),
            scratch: (0..slots())
                .map(|_| Padded(Mutex::new(Scratch::default())))
                .collect(),
            resizer: Mutex::new(()),
            lobby: Lobby::default(),
            record_bytes: (0..slots())
                .map(|_| Arc::new(Padded(AtomicUsize::new(0))))
                .collect(),
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

    /// The values of `keys` into `out` (`RawTrie::get_batch`), each searched in a read
    /// session of its own: every answer is linearizable, the batch is not one snapshot.
    pub(crate) fn get_batch<'g>(
        &self,
        keys: &[&[u8]],
        out: &mut [Option<&'g V>],
        guard: &'g Guard,
    ) {
        let leaf = |k: &[u8]| self.read(guard, |t| t.leaf_for(k));
        let answer = |i: usize, rec: Option<*mut u8>| {
            // SAFETY: as in `get`.
            out[i] = rec.map(|p| unsafe { record::value::<V>(p) });
        };
        // SAFETY: every leaf comes from a validated session under `guard`, so its record is
        // freed only after `guard` is dropped (rule 2); every trie of this map shares the
        // records and their layout, so the trie current at the start may compare them.
        unsafe { self.trie(guard).get_batch(keys, leaf, answer) };
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
                out.push(unsafe { Leaf::new(l.1, guard) });
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
        self.record_bytes
            .iter()
            .fold(0, |sum, c| sum.wrapping_add(c.load(Relaxed)))
    }

    /// This thread's record-bytes counter.
    fn bytes(&self) -> &Arc<Padded<AtomicUsize>> {
        &self.record_bytes[home_slot() % self.record_bytes.len()]
    }

    /// Bytes of the writers' scratch memory (waits for running writers).
    pub(crate) fn scratch_bytes(&self) -> usize {
        self.scratch.iter().map(|s| lock(&s.0).memory_usage()).sum()
    }

    /// Audits the current trie, frozen meanwhile (writers wait; readers go on).
    pub(crate) fn audit(&self) -> Result<(), String> {
        let _r = lock(&self.resizer);
        let guard = crate::epoch::pin();
        let trie = self.trie(&guard);
        trie.table.freeze();
        let report = {
            let _frozen = FrozenRead::begin();
            trie.audit()
        };
        trie.table.thaw();
        report
    }

    /// A scratch slot for a write: this thread's, or the next one free, or (all taken) this
    /// thread's once its holder is done.
    fn scratch(&self) -> MutexGuard<'_, Scratch> {
        let n = self.scratch.len();
        let home = home_slot() % n;
        for k in 0..n {
            match self.scratch[(home + k) % n].0.try_lock() {
                Ok(w) => return w,
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Poisoned(_)) => poisoned(),
            }
        }
        lock(&self.scratch[home].0)
    }

    /// Runs `resize` on `trie` and publishes its result, unless `trie` is no longer current
    /// (another thread resized it meanwhile). The table is frozen while `resize` copies it:
    /// readers go on with it, writers wait ([`wait_for_resize`](Self::wait_for_resize)).
    fn resize(
        &self,
        trie: &RawTrie,
        guard: &Guard,
        resize: impl FnOnce(&RawTrie) -> Result<RawTrie, Error>,
    ) -> Result<(), Error> {
        let _r = match self.resizer.try_lock() {
            Ok(r) => r,
            Err(TryLockError::WouldBlock) => {
                // Another writer resizes already: help it copy, then wait for it.
                self.help_resize(trie, guard);
                lock(&self.resizer)
            }
            Err(TryLockError::Poisoned(_)) => poisoned(),
        };
        if !core::ptr::eq(self.trie(guard), trie) {
            return Ok(());
        }
        self.replace(trie, guard, resize)
    }

    /// Freezes `trie` (the current one; the caller holds the resizer lock), runs `resize` on
    /// it and publishes the copy, or thaws it if `resize` fails.
    fn replace(
        &self,
        trie: &RawTrie,
        guard: &Guard,
        resize: impl FnOnce(&RawTrie) -> Result<RawTrie, Error>,
    ) -> Result<(), Error> {
        trie.table.freeze();
        match resize(trie) {
            Ok(new) => {
                self.publish(new, guard);
                Ok(())
            }
            Err(e) => {
                trie.table.thaw();
                Err(e)
            }
        }
    }

    /// Grows the table, if needed, so that `keys` keys fit without growing (the estimate of
    /// `RawTrie::buckets_for`). Writers wait meanwhile, helping with the copy; readers go on.
    pub(crate) fn reserve(&self, keys: usize, guard: &Guard) -> Result<(), Error> {
        let _r = lock(&self.resizer);
        let trie = self.trie(guard);
        match trie.buckets_for(keys)? {
            Some(b) => self.replace(trie, guard, |t| t.resized(b, Some(&self.lobby))),
            None => Ok(()),
        }
    }

    /// Shrinks the table to the size growth would give the keys present, unless it is that
    /// small already; keeps it if the memory is refused.
    pub(crate) fn shrink_to_fit(&self, guard: &Guard) {
        let _r = lock(&self.resizer);
        let trie = self.trie(guard);
        let b = trie.fit_buckets();
        if b < trie.table.buckets() {
            // A refused allocation leaves the current table, as documented.
            let _ = self.replace(trie, guard, |t| t.resized(b, Some(&self.lobby)));
        }
    }

    /// Makes `new` the current trie and retires the old one.
    fn publish(&self, new: RawTrie, guard: &Guard) {
        let g = guard.crossbeam();
        let old = self.current.swap(Owned::new(new), AcqRel, g);
        // SAFETY: `old` is unreachable from now on (every thread loads the current trie under
        // a guard); threads pinned before the swap keep it alive.
        unsafe { g.defer_destroy(old) };
        // Hand the old table to the global queue now rather than after 64 more retirements.
        g.flush();
    }

    /// Waits until no resize (or audit, or clear) holds `trie`'s table frozen, helping a
    /// resize copy it meanwhile: until the resize posts its copy (after walking the trie's top
    /// levels) this spins and yields, then it walks subtrees for it, then it sleeps on the
    /// resize's lock. A writer that only waited would leave its core idle for the whole copy.
    fn help_resize(&self, trie: &RawTrie, guard: &Guard) {
        let mut n = 0u32;
        while !self.lobby.help(trie) {
            if !core::ptr::eq(self.trie(guard), trie) {
                return;
            }
            match self.resizer.try_lock() {
                // Nothing holds the table frozen any more (or a resize failed and thawed it).
                Ok(_) => return,
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Poisoned(_)) => poisoned(),
            }
            back_off(n);
            n += 1;
        }
        drop(lock(&self.resizer));
    }
}

/// Locks `m`. A poisoned lock means a thread panicked inside the map (a bug) and may have left
/// it inconsistent: continuing could hang readers or corrupt the trie.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|_| poisoned())
}

#[cold]
fn poisoned() -> ! {
    panic!("a writer of this map panicked; the map is unusable")
}

/// Scratch slots for a new map.
fn slots() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).clamp(2, MAX_SLOTS)
}

impl<V: Send + Sync + 'static> SharedTrie<V> {
    /// Stores `value` under `key`; returns a clone of the value it replaces. The caller has
    /// checked the key length.
    ///
    /// Runs the single-threaded insert in a write session and commits it (`seqlock`); a
    /// refused commit runs it again. A table that looks full is grown only if the reads that
    /// showed it hold, so torn copies never cause a growth.
    pub(crate) fn insert(&self, key: &[u8], value: V, guard: &Guard) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        let mut w = self.scratch();
        let mut slot = Some(value);
        let mut made: Option<*mut u8> = None;
        let mut refusals = 0u32;
        loop {
            let trie = self.trie(guard);
            let bytes = self.bytes();
            let mut make = || {
                *made.get_or_insert_with(|| {
                    let (p, size) = record::alloc(key, slot.take().expect("made once"));
                    bytes.fetch_add(size, Relaxed);
                    p
                })
            };
            let session = WriteSession::begin();
            let replaced = match trie.insert(&mut w, key, &mut make) {
                Ok(Inserted::New) => None,
                Ok(Inserted::Existing { loc, rec: old }) => {
                    let new = make();
                    match trie.set_record(loc, key, old, new) {
                        Ok(()) => Some(old),
                        Err(Torn) => {
                            trie.forget(&mut w);
                            continue;
                        }
                    }
                }
                Err(Retry::Torn) => {
                    trie.forget(&mut w);
                    continue;
                }
                Err(Retry::Grow) => {
                    let full = session.reads_hold(&trie.table);
                    drop(session);
                    trie.forget(&mut w);
                    if full && let Err(e) = self.resize(trie, guard, |t| t.grown(Some(&self.lobby)))
                    {
                        if let Some(p) = made {
                            // SAFETY: made for this key and never committed.
                            unsafe { drop_record::<V>(p, key.len(), self.bytes()) };
                        }
                        return Err(e);
                    }
                    continue;
                }
            };
            match session.commit(&trie.table, || trie.apply(&mut w)) {
                Ok(()) => {
                    drop(session);
                    drop(w);
                    let Some(old) = replaced else {
                        return Ok(None);
                    };
                    // SAFETY: `old` was the key's record until the commit; reclamation of it
                    // (below) waits for `guard`.
                    let prev = unsafe { record::value::<V>(old) }.clone();
                    self.retire(guard, old, key.len());
                    return Ok(Some(prev));
                }
                Err(refused) => {
                    trie.forget(&mut w);
                    drop(session);
                    self.refused(refused, &mut refusals, trie, guard);
                }
            }
        }
    }

    /// Removes `key`; returns a clone of its value.
    pub(crate) fn remove(&self, key: &[u8], guard: &Guard) -> Option<V>
    where
        V: Clone,
    {
        let mut w = self.scratch();
        let mut refusals = 0u32;
        loop {
            let trie = self.trie(guard);
            let session = WriteSession::begin();
            let p = match trie.remove(&mut w, key) {
                Ok(Some(p)) => p,
                Ok(None) => {
                    // Nothing to change: a read, linearizable if its copies hold.
                    if session.reads_hold(&trie.table) {
                        return None;
                    }
                    continue;
                }
                Err(Torn) => {
                    trie.forget(&mut w);
                    continue;
                }
            };
            match session.commit(&trie.table, || trie.apply(&mut w)) {
                Ok(()) => {
                    drop(session);
                    drop(w);
                    if trie.wants_shrink() {
                        self.shrink(trie, guard);
                    }
                    // SAFETY: the key's record until the commit; its reclamation waits for
                    // `guard`.
                    let v = unsafe { record::value::<V>(p) }.clone();
                    self.retire(guard, p, key.len());
                    return Some(v);
                }
                Err(refused) => {
                    trie.forget(&mut w);
                    drop(session);
                    self.refused(refused, &mut refusals, trie, guard);
                }
            }
        }
    }

    /// After a refused commit to `trie`: helps the resize that froze the table and waits for
    /// it, or backs off after a conflict with another writer.
    fn refused(&self, why: Refused, refusals: &mut u32, trie: &RawTrie, guard: &Guard) {
        match why {
            Refused::Frozen => self.help_resize(trie, guard),
            Refused::Conflict => {
                back_off(*refusals);
                *refusals += 1;
            }
        }
    }

    /// Replaces `trie` by a smaller copy, unless a resize is running already (shrinking only
    /// returns memory; if it fails the trie stays as it is).
    fn shrink(&self, trie: &RawTrie, guard: &Guard) {
        let Ok(_r) = self.resizer.try_lock() else {
            return;
        };
        if !core::ptr::eq(self.trie(guard), trie) || !trie.wants_shrink() {
            return;
        }
        // A refused allocation leaves the current table: shrinking only returns memory.
        let _ = self.replace(trie, guard, |t| t.shrunk(Some(&self.lobby)));
    }

    /// Replaces the trie with an empty one; the old table and the records are dropped once no
    /// reader can reach them. [`Error::OutOfMemory`] (map unchanged) when the new table
    /// cannot be mapped.
    pub(crate) fn clear(&self, guard: &Guard) -> Result<(), Error> {
        let _r = lock(&self.resizer);
        let old = self.trie(guard);
        let mut fresh = RawTrie::new(self.params)?;
        fresh.set_shared();
        old.table.freeze();
        let mut recs: Vec<(usize, usize)> = Vec::with_capacity(old.len());
        {
            let _frozen = FrozenRead::begin();
            old.for_each_leaf(|e| recs.push((e.rec() as usize, e.key_len())));
        }
        self.publish(fresh, guard);
        let bytes = Arc::clone(self.bytes());
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

    /// Drops the record `p` (a `key_len`-byte key) once no reader can reach it.
    fn retire(&self, guard: &Guard, p: *mut u8, key_len: usize) {
        let bytes = Arc::clone(self.bytes());
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
