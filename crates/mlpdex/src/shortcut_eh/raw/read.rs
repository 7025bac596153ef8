//! Lookups (vm-shortcuts-extendible-hashing.txt §4.1): through the shortcut when it is in
//! sync and wanted, else through the traditional directory; either way the bucket's seqlock
//! and range check decide whether the read stands (`page`), and a read that does not stand
//! starts over from the traditional directory.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::atomic::fence;

use crossbeam_epoch::Guard;

use super::{Hashed, Shared, hash};

impl Shared {
    /// The value of `key`.
    ///
    /// # Safety
    ///
    /// `guard` pins the calling thread, or the caller is the writer (no directory or
    /// shortcut area it could load is retired while it runs: retiring either takes a write,
    /// and a new area is published only after every change queued before it is mapped).
    #[inline]
    pub(crate) unsafe fn get(&self, key: u64, guard: &Guard) -> Option<u64> {
        let h = hash(key);
        if self.wanted.load(Relaxed) {
            let v = self.shortcut.version.load(Acquire);
            if v == self.version.load(Acquire) {
                // SAFETY: the area, once published, stays mapped while `guard` pins us (or
                // while the writer reads, per the caller's contract).
                if let Some(area) = unsafe { self.shortcut.area.load(Acquire, guard).as_ref() } {
                    // SAFETY: a published area maps every one of its slots; the slot is the
                    // hash's top `area.depth` bits.
                    let page = unsafe { area.page(h.slot(area.depth)) };
                    if let Some(found) = page.read(key, h) {
                        // The read stands only if no remap of the area began meanwhile.
                        fence(Acquire);
                        if self.shortcut.version.load(Relaxed) == v {
                            return found;
                        }
                    }
                }
            }
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.get_by_directory(key, h, guard) }
    }

    /// The lookup through the traditional directory, until a read stands.
    ///
    /// # Safety
    ///
    /// As for [`get`](Self::get).
    #[inline]
    pub(crate) unsafe fn get_by_directory(
        &self,
        key: u64,
        h: Hashed,
        guard: &Guard,
    ) -> Option<u64> {
        loop {
            // SAFETY: the directory is never null, and stays alive while `guard` pins us (or
            // the writer reads).
            let dir = unsafe { self.dir.load(Acquire, guard).deref() };
            let n = dir.page_of(h.slot(dir.depth));
            // SAFETY: a page number loaded from a directory alive for us names a page that
            // stays mapped until every session that could load it ended (pool shrinks wait
            // for that).
            let page = unsafe { self.view.page(n) };
            if let Some(found) = page.read(key, h) {
                return found;
            }
            core::hint::spin_loop();
        }
    }
}
