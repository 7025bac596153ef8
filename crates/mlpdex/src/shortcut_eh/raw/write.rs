//! The writer's operations (vm-shortcuts-extendible-hashing.txt §4, after Fagin et al.):
//! inserts and updates, removes, bucket splits and directory doublings, merges of buddy
//! buckets, and pool shrinks.
//!
//! Every change a reader could see is made in an order that keeps each lookup's answer right
//! (see `page` for the reader's side):
//!
//! - **Split** of bucket `B` (depth `l`, prefix `p`): a new page is filled, locked, with the
//!   entries of the upper half (prefix `2p + 1`) and unlocked; the directory slots of that
//!   half are pointed at it and the directory version raised; only then is `B` rebuilt, under
//!   its lock, as the lower half. A reader that reaches `B` afterwards for an upper-half key
//!   finds `B` no longer covers its hash and starts over from the directory, which already
//!   names the new page.
//! - **Merge** of buddies `T` (even prefix) and `O`: `T` is rebuilt under its lock with both
//!   buckets' entries and one bit less of depth; then `O`'s slots are pointed at `T`, the
//!   version raised, and `O` retired under its lock before its page is freed. Until the slots
//!   move, `O` still answers for its keys.
//! - **Doubling**: a new directory, each slot twice, is published and the old one retired
//!   through the epoch scheme; the pages do not change.
//! - **Pool shrink**: when the pages at the end of the pool are free, they are taken off the
//!   free stack, and the file is truncated only once every reader pinned before has unpinned
//!   and the shortcut maps the current directory (so no area maps them); an allocation that
//!   needs them first gives the shrink up.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Release};

use crossbeam_epoch as epoch;

use super::page::MAX_USED;
use super::shortcut::{FAILED, Request};
use super::{Core, Dir, MERGE_AT, Shrink, hash};
use crate::Error;

/// The deepest directory: `1 << MAX_DEPTH` slots.
pub(crate) const MAX_DEPTH: u32 = 32;

impl Core {
    /// The value of `key` (the writer's lookup: no read session needed, see
    /// `Shared::get`).
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        // SAFETY: the caller is the writer (`&self` of the owner), so no directory or area it
        // loads is retired while it reads.
        unsafe { self.shared.get(key, epoch::unprotected()) }
    }

    /// The page of `key`'s bucket, and `key`'s hash.
    #[inline]
    fn locate(&self, key: u64) -> (u32, super::Hashed) {
        let h = hash(key);
        let dir = self.dir();
        (dir.page_of(h.slot(dir.depth)), h)
    }

    /// Stores `value` under `key`, returning the value it replaces. An error (the pool or
    /// the directory could not grow) leaves the map unchanged.
    pub(crate) fn insert(&mut self, key: u64, value: u64) -> Result<Option<u64>, Error> {
        loop {
            let (n, h) = self.locate(key);
            let page = self.page(n);
            if let Some(at) = page.find(key, h) {
                let old = page.value_at(at);
                page.lock();
                page.set_value(at, value);
                page.unlock();
                return Ok(Some(old));
            }
            let m = page.meta();
            if m.used < MAX_USED {
                page.lock();
                let stored = page.put(key, h, value);
                page.unlock();
                debug_assert!(stored, "a bucket below its limit has a free slot");
                self.len += 1;
                return Ok(None);
            }
            if m.live * 4 < m.used * 3 {
                // A quarter of the slots are tombstones: rebuild in place, no split needed.
                self.compact(n);
            } else {
                self.split(n)?;
            }
        }
    }

    /// Removes `key`, returning its value; merges its bucket with its buddy while they fit
    /// in one, and shrinks the pool when its end is free.
    pub(crate) fn remove(&mut self, key: u64) -> Option<u64> {
        let (n, h) = self.locate(key);
        let page = self.page(n);
        let at = page.find(key, h)?;
        let old = page.value_at(at);
        page.lock();
        page.remove_at(at);
        page.unlock();
        self.len -= 1;
        self.merge_from(n);
        self.maybe_shrink();
        Some(old)
    }

    /// Rebuilds bucket `n` without its tombstones.
    fn compact(&mut self, n: u32) {
        let mut e = core::mem::take(&mut self.scratch);
        let page = self.page(n);
        let m = page.meta();
        page.entries(&mut e);
        page.lock();
        let ok = page.rebuild(m.depth, m.prefix, &e, hash);
        page.unlock();
        debug_assert!(ok);
        self.scratch = e;
    }

    /// A page for a new bucket; gives a pending shrink up rather than grow the pool.
    fn alloc(&mut self) -> Result<u32, Error> {
        if self.pool.exhausted()
            && let Some(s) = self.shrink.take()
        {
            self.pool.release(s.quarantine);
        }
        self.pool.alloc(&self.shared.view)
    }

    /// Splits bucket `n` in two, doubling the directory first when its depth is the global
    /// one. An error leaves the map as it was.
    fn split(&mut self, n: u32) -> Result<(), Error> {
        let m = self.page(n).meta();
        if m.depth == self.dir().depth {
            self.double()?;
        }
        let n1 = self.alloc()?;
        let (l, p0, p1) = (m.depth + 1, m.prefix << 1, m.prefix << 1 | 1);
        let upper = |k: u64| hash(k).slot(l) & 1 == 1;
        let mut e = core::mem::take(&mut self.scratch);
        let old = self.page(n);
        old.entries(&mut e);
        let new = self.page(n1);
        new.init(n1, l, p1);
        for &(k, v) in e.iter().filter(|(k, _)| upper(*k)) {
            new.put(k, hash(k), v);
        }
        new.unlock();
        let dir = self.dir();
        let range = dir.range(l, p1);
        for s in range.clone() {
            dir.slots[s].store(n1, Release);
        }
        let version = self.bump();
        e.retain(|(k, _)| !upper(*k));
        old.lock();
        let ok = old.rebuild(l, p0, &e, hash);
        old.unlock();
        debug_assert!(ok);
        self.scratch = e;
        self.buckets += 1;
        self.send(Request::Update {
            slots: range.map(|s| (s as u32, n1)).collect(),
            version,
        });
        self.update_wanted();
        Ok(())
    }

    /// Doubles the directory; an error (its memory refused, or the deepest directory
    /// reached) leaves it as it was.
    fn double(&mut self) -> Result<(), Error> {
        let old = self.dir();
        let depth = old.depth + 1;
        if depth > MAX_DEPTH {
            return Err(Error::Capacity {
                what: "the directory would exceed 2^32 slots",
            });
        }
        let slots = 1usize << depth;
        let mut v: Vec<AtomicU32> = Vec::new();
        v.try_reserve_exact(slots)
            .map_err(|_| Error::OutOfMemory { bytes: slots * 4 })?;
        v.extend((0..slots).map(|s| AtomicU32::new(old.page_of(s >> 1))));
        let pages = match self.mapper.is_some() {
            true => {
                let mut p: Vec<u32> = Vec::new();
                p.try_reserve_exact(slots)
                    .map_err(|_| Error::OutOfMemory { bytes: slots * 4 })?;
                p.extend((0..slots).map(|s| old.page_of(s >> 1)));
                Some(p)
            }
            false => None,
        };
        self.publish_dir(Dir {
            depth,
            slots: v.into_boxed_slice(),
        });
        let version = self.bump();
        if let Some(pages) = pages {
            self.send(Request::Create {
                depth,
                pages,
                version,
            });
        }
        self.update_wanted();
        Ok(())
    }

    /// Merges bucket `n` with its buddy, and the result with its own, while they fit.
    fn merge_from(&mut self, mut n: u32) {
        loop {
            let m = self.page(n).meta();
            if m.depth == 0 {
                return;
            }
            let dir = self.dir();
            let nb = dir.page_of(dir.range(m.depth, m.prefix ^ 1).start);
            let mb = self.page(nb).meta();
            if mb.depth != m.depth || m.live + mb.live > MERGE_AT {
                return;
            }
            let (t, o, mo) = if m.prefix & 1 == 0 {
                (n, nb, mb)
            } else {
                (nb, n, m)
            };
            let mut e = core::mem::take(&mut self.scratch);
            self.page(t).entries(&mut e);
            self.page(o).for_each(|k, v| e.push((k, v)));
            let target = self.page(t);
            target.lock();
            let ok = target.rebuild(m.depth - 1, m.prefix >> 1, &e, hash);
            target.unlock();
            debug_assert!(ok);
            self.scratch = e;
            let dir = self.dir();
            let range = dir.range(mo.depth, mo.prefix);
            for s in range.clone() {
                dir.slots[s].store(t, Release);
            }
            let version = self.bump();
            let other = self.page(o);
            other.lock();
            other.retire();
            other.unlock();
            self.pool.free(o);
            self.buckets -= 1;
            self.send(Request::Update {
                slots: range.map(|s| (s as u32, t)).collect(),
                version,
            });
            self.update_wanted();
            n = t;
        }
    }

    /// Truncates the pool once a planned shrink's grace has passed and the shortcut maps
    /// the current directory; plans one when the pool's end is free.
    fn maybe_shrink(&mut self) {
        if let Some(s) = &self.shrink {
            let sc = self.shared.shortcut.version.load(Acquire);
            let mapped = self.mapper.is_none() || sc == FAILED || self.in_sync();
            if s.grace.load(Acquire) && mapped {
                let to = s.to;
                self.shrink = None;
                // SAFETY: every reader pinned when the shrink was planned has unpinned (the
                // grace), later ones cannot have loaded a quarantined page number (free
                // pages are named by no directory slot, and quarantined ones are handed out
                // to no bucket), and the shortcut maps only the current directory's pages.
                unsafe { self.pool.truncate(&self.shared.view, to) };
            } else {
                // Let the epoch move on: deferred work runs when threads pin.
                epoch::pin().flush();
            }
            return;
        }
        if let Some(to) = self.pool.shrink_target() {
            let quarantine = self.pool.quarantine(to);
            let grace = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&grace);
            let guard = epoch::pin();
            guard.defer(move || flag.store(true, Release));
            guard.flush();
            self.shrink = Some(Shrink {
                to,
                quarantine,
                grace,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Settings, hash};
    use super::*;

    fn core(shortcut: bool) -> Core {
        Core::new(Settings {
            shortcut,
            fan_in: 8.0,
            max_pages: 1 << 16,
            depth: 0,
        })
        .unwrap()
    }

    /// A reader that chose its page before a split, a merge or a compaction reads it after:
    /// the page no longer holds the key's bucket (or holds a different one), and the read
    /// does not stand, so the reader starts over and finds the key where it went.
    #[test]
    fn a_reader_holding_a_page_from_before_a_change_starts_over() {
        let mut c = core(false);
        let n = if cfg!(miri) { 400 } else { 4000 };
        for k in 0..n {
            c.insert(k, k + 1).unwrap();
            // Before each insert, note every key's page; after it, a key whose page changed
            // must be refused by its old page and found by a fresh lookup.
        }
        let stale: Vec<(u64, u32)> = (0..n).map(|k| (k, c.locate(k).0)).collect();
        for k in n..3 * n {
            c.insert(k, k + 1).unwrap();
        }
        let mut moved = 0;
        for &(k, page) in &stale {
            let now = c.locate(k).0;
            let read = c.page(page).read(k, hash(k));
            if now != page {
                moved += 1;
                assert_ne!(read, Some(None), "key {k}: its old page answers absent");
            }
            if let Some(found) = read {
                assert_eq!(found, Some(k + 1), "key {k}: a standing read is right");
            }
            assert_eq!(c.get(k), Some(k + 1));
        }
        assert!(moved > n / 4, "splits moved keys ({moved})");
        // Merges: empty the table but for a few keys, with stale pages noted before, by a
        // pinned reader: the pool may not truncate pages it could still read.
        let guard = epoch::pin();
        let stale: Vec<(u64, u32)> = (0..3 * n).map(|k| (k, c.locate(k).0)).collect();
        for k in 10..3 * n {
            c.remove(k);
        }
        for &(k, page) in &stale[..10] {
            let read = c.page(page).read(k, hash(k));
            assert_ne!(
                read,
                Some(None),
                "key {k}: a merged-away page answers absent"
            );
            assert_eq!(c.get(k), Some(k + 1));
        }
        drop(guard);
        c.audit().unwrap();
    }
}
