//! The page pool (vm-shortcuts-extendible-hashing.txt §2.1): physical pages as one
//! main-memory file, and one linear view of it.
//!
//! The file (`memfd_create`) holds every bucket page; its offsets are what a shortcut maps a
//! directory slot to. It grows with `ftruncate` in steps of an eighth of its size, at least
//! [`MIN_STEP`] and at most [`MAX_STEP`] pages, and each step is mapped into the view and
//! faulted in at once (`MAP_POPULATE`), so no insert pays a page fault, and the insert that
//! takes a step pays for at most [`MAX_STEP`] pages, whatever the pool's size. The view is a reservation of address
//! space made once, as large as the pool may ever grow ([`Pool::new`]'s `max_pages`): the
//! file's pages are mapped into its front, so a page's address never changes and readers
//! need no lock to follow a page number. Freed pages wait on a stack for reuse; when the
//! pages at the end of the file are all free the pool can shrink ([`Pool::shrink`]): their
//! part of the view goes back to inaccessible reserve and the file is truncated. The map
//! calls it only when no reader and no shortcut can still reach those pages.
//!
//! A kernel refusal (the file, a mapping, a resize) is an [`Error`]; the pool is then as it
//! was. `max_pages` also serves as a size limit for tests of the out-of-memory paths.
//!
//! Thread safety: the [`View`] (file and mapping) is shared, immutable; the [`Pool`] (sizes,
//! free pages) belongs to the one writer.

use super::page::{PAGE, Page};
use crate::Error;

/// The file and the view: what readers and the shortcut's mapper share.
#[derive(Debug)]
pub(crate) struct View {
    fd: libc::c_int,
    base: *mut u8,
    /// Pages reserved in the view.
    reserved: usize,
}

// SAFETY: the view is an address range and a file descriptor, neither tied to a thread; the
// pages are accessed through atomics only (`Page`).
unsafe impl Send for View {}
// SAFETY: as above; `&View` only hands out page addresses and the descriptor.
unsafe impl Sync for View {}

impl View {
    /// The page numbered `n` (`n` below the pool's size when the caller got `n` from the
    /// directory it loaded).
    ///
    /// # Safety
    ///
    /// `n` is below the number of pages the pool held at some point since the caller's read
    /// session began (the map's epoch guard, or the writer's own `&mut`), so the page is
    /// mapped: pages are unmapped only after every such session ended.
    #[inline(always)]
    pub(crate) unsafe fn page(&self, n: u32) -> &Page {
        debug_assert!((n as usize) < self.reserved);
        // SAFETY: the caller's contract keeps page `n` mapped, readable and writable, inside
        // the reservation; pages are 4 KiB-aligned as `Page` requires, and every access goes
        // through its atomics.
        unsafe { &*self.base.add(n as usize * PAGE).cast::<Page>() }
    }

    /// The file descriptor, for mappings of the file's pages elsewhere (the shortcut).
    pub(crate) fn fd(&self) -> libc::c_int {
        self.fd
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // SAFETY: the reservation and the descriptor were made by `Pool::new` and are
        // released once, here; no page reference outlives the view (they borrow it).
        unsafe {
            libc::munmap(self.base.cast(), self.reserved * PAGE);
            libc::close(self.fd);
        }
    }
}

/// The writer's side: sizes and free pages (see the module docs).
#[derive(Debug)]
pub(crate) struct Pool {
    pages: usize,
    free: Vec<u32>,
    /// One bit a page: free.
    is_free: Vec<u64>,
}

/// Pages the pool grows by at least.
const MIN_STEP: usize = 64;
/// Pages the pool grows by at most (4 MiB): the slowest insert pays for faulting in one
/// step. Uncapped, an eighth of a 4 GiB pool took the slowest of 100M inserts 0.3 s
/// (suite `shortcut-eh` at 0640fa0); the steps are adjoining mappings of adjoining file
/// offsets, which the kernel merges into one area.
const MAX_STEP: usize = 1024;

impl Pool {
    /// An empty pool that may grow to `max_pages`, and its view.
    pub(crate) fn new(max_pages: usize) -> Result<(Pool, View), Error> {
        let max_pages = max_pages.clamp(1, u32::MAX as usize);
        let bytes = max_pages
            .checked_mul(PAGE)
            .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        // SAFETY: the name is a valid C string; flags are plain.
        let fd = unsafe { libc::memfd_create(c"mlpdex-eh-pool".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::OutOfMemory { bytes: 0 });
        }
        // SAFETY: a fresh anonymous reservation, no access rights, no backing store.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            // SAFETY: the descriptor is ours and used nowhere else.
            unsafe { libc::close(fd) };
            return Err(Error::OutOfMemory { bytes });
        }
        let view = View {
            fd,
            base: base.cast(),
            reserved: max_pages,
        };
        Ok((
            Pool {
                pages: 0,
                free: Vec::new(),
                is_free: Vec::new(),
            },
            view,
        ))
    }

    /// Pages in the file.
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// A page for a new bucket: a free one, else one from growing the file. Its words are
    /// those its last bucket left (a page new to the file is zero).
    pub(crate) fn alloc(&mut self, view: &View) -> Result<u32, Error> {
        if self.free.is_empty() {
            self.grow(view)?;
        }
        let n = self.free.pop().ok_or(Error::OutOfMemory { bytes: PAGE })?;
        self.is_free[n as usize / 64] &= !(1 << (n % 64));
        Ok(n)
    }

    /// Gives page `n` back (its bucket retired first).
    pub(crate) fn free(&mut self, n: u32) {
        debug_assert!(!self.is_free_page(n as usize), "page {n} freed twice");
        self.free.push(n);
        self.is_free[n as usize / 64] |= 1 << (n % 64);
    }

    fn is_free_page(&self, n: usize) -> bool {
        self.is_free
            .get(n / 64)
            .is_some_and(|w| w >> (n % 64) & 1 == 1)
    }

    /// Grows the file by a step, maps the new pages into the view and faults them in.
    fn grow(&mut self, view: &View) -> Result<(), Error> {
        let want = (self.pages / 8).clamp(MIN_STEP, MAX_STEP);
        let to = (self.pages + want).min(view.reserved);
        if to <= self.pages {
            return Err(Error::OutOfMemory {
                bytes: (self.pages + 1) * PAGE,
            });
        }
        let (from_b, to_b) = (self.pages * PAGE, to * PAGE);
        // SAFETY: the descriptor is the pool's file.
        if unsafe { libc::ftruncate(view.fd, to_b as libc::off_t) } != 0 {
            return Err(Error::OutOfMemory { bytes: to_b });
        }
        // SAFETY: `[from_b, to_b)` lies inside the view's reservation (`to ≤ reserved`) and
        // holds no mapping any reference can reach (pages at or past `self.pages` are never
        // handed out); MAP_FIXED replaces the reserve there with the file's new pages.
        let p = unsafe {
            libc::mmap(
                view.base.add(from_b).cast(),
                to_b - from_b,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE,
                view.fd,
                from_b as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            // SAFETY: shrinking back to the old size, as above.
            unsafe { libc::ftruncate(view.fd, from_b as libc::off_t) };
            return Err(Error::OutOfMemory { bytes: to_b });
        }
        self.is_free.resize(to.div_ceil(64), 0);
        // Hand out low pages first: the stack's top is the lowest new page.
        for n in (self.pages..to).rev() {
            self.free.push(n as u32);
            self.is_free[n / 64] |= 1 << (n % 64);
        }
        self.pages = to;
        Ok(())
    }

    /// The size the pool would shrink to: the file's pages less the free run at its end,
    /// when that run is at least an eighth of the file (and [`MIN_STEP`] pages).
    pub(crate) fn shrink_target(&self) -> Option<usize> {
        let mut to = self.pages;
        while to > 0 && self.is_free_page(to - 1) {
            to -= 1;
        }
        let cut = self.pages - to;
        (cut >= MIN_STEP && cut >= self.pages / 8).then_some(to)
    }

    /// Takes the free pages numbered `to` or more off the free stack, for a shrink to `to`
    /// pages (from [`shrink_target`](Self::shrink_target)); they stay free and in the file
    /// until [`truncate`](Self::truncate), or go back with [`release`](Self::release).
    pub(crate) fn quarantine(&mut self, to: usize) -> Vec<u32> {
        let mut out = Vec::new();
        self.free.retain(|&n| {
            let keep = (n as usize) < to;
            if !keep {
                out.push(n);
            }
            keep
        });
        out
    }

    /// Puts quarantined pages back on the free stack (a shrink given up).
    pub(crate) fn release(&mut self, pages: Vec<u32>) {
        self.free.extend(pages);
    }

    /// Shrinks the pool to `to` pages, all pages past it quarantined: their part of the view
    /// goes back to reserve and the file is truncated. If the kernel refuses, the pages stay,
    /// as free pages.
    ///
    /// # Safety
    ///
    /// No reference to a page numbered `to` or more is alive or can still be made: no reader
    /// session that might have loaded such a page number is running, and no shortcut maps
    /// such a page (a shortcut mapping of a truncated page would fault on access).
    pub(crate) unsafe fn truncate(&mut self, view: &View, to: usize) {
        debug_assert!((to..self.pages).all(|n| self.is_free_page(n)));
        debug_assert!(self.free.iter().all(|&n| (n as usize) < to));
        let (to_b, end_b) = (to * PAGE, self.pages * PAGE);
        // SAFETY: `[to_b, end_b)` is the view's mapping of the pages being dropped, which no
        // one can reach (the caller's contract); an anonymous inaccessible mapping takes
        // their place, so the reservation stays whole.
        let p = unsafe {
            libc::mmap(
                view.base.add(to_b).cast(),
                end_b - to_b,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            self.release((to..self.pages).rev().map(|n| n as u32).collect());
            return;
        }
        // SAFETY: the file is the pool's; its pages past `to` are mapped nowhere now.
        unsafe { libc::ftruncate(view.fd, to_b as libc::off_t) };
        for n in to..self.pages {
            self.is_free[n / 64] &= !(1 << (n % 64));
        }
        self.pages = to;
        self.is_free.truncate(to.div_ceil(64));
    }

    /// Whether no page is on the free stack.
    pub(crate) fn exhausted(&self) -> bool {
        self.free.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Growth steps are an eighth of the pool, never below `MIN_STEP` pages and never above
    /// `MAX_STEP`, so the insert that takes one faults in a bounded number of pages.
    #[test]
    fn growth_steps_are_an_eighth_of_the_pool_and_capped() {
        let limit = 12 * MAX_STEP;
        let (mut pool, view) = Pool::new(limit).unwrap();
        let mut steps = Vec::new();
        let mut before = pool.pages();
        while pool.alloc(&view).is_ok() {
            if pool.pages() != before {
                steps.push((before, pool.pages() - before));
                before = pool.pages();
            }
        }
        assert_eq!(pool.pages(), limit);
        let (last_from, _) = *steps.last().unwrap();
        for &(from, step) in &steps {
            // The last step may be cut short by the limit.
            let want = (from / 8).clamp(MIN_STEP, MAX_STEP);
            if from == last_from {
                assert_eq!(step, want.min(limit - from));
            } else {
                assert_eq!(step, want, "the step from {from} pages");
            }
        }
        assert!(steps.iter().any(|&(_, s)| s == MAX_STEP));
        assert!(steps.iter().all(|&(_, s)| s <= MAX_STEP));
    }

    /// Pages come from growth in steps, are reused after a free, are zero when new, keep
    /// their contents at their numbers, and the pool refuses to grow past its limit.
    #[test]
    fn pages_grow_reuse_shrink_and_stop_at_the_limit() {
        let (mut pool, view) = Pool::new(200).unwrap();
        let a = pool.alloc(&view).unwrap();
        assert_eq!(pool.pages(), MIN_STEP);
        // SAFETY: `a` is allocated from this pool, which holds it.
        let pa = unsafe { view.page(a) };
        assert!(
            pa.w.iter()
                .all(|w| w.load(core::sync::atomic::Ordering::Relaxed) == 0)
        );
        pa.w[5].store(42, core::sync::atomic::Ordering::Relaxed);
        let mut got = vec![a];
        while let Ok(n) = pool.alloc(&view) {
            got.push(n);
        }
        assert_eq!(got.len(), 200, "every page up to the limit, then an error");
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 200);
        // SAFETY: as above.
        let pa = unsafe { view.page(a) };
        assert_eq!(pa.w[5].load(core::sync::atomic::Ordering::Relaxed), 42);
        for &n in &got[100..] {
            pool.free(n);
        }
        let to = pool.shrink_target().expect("a free run at the end");
        let q = pool.quarantine(to);
        assert_eq!(q.len(), 200 - to);
        // SAFETY: no reference to the freed pages is alive.
        unsafe { pool.truncate(&view, to) };
        assert_eq!(pool.pages(), to);
        let n = pool.alloc(&view).unwrap();
        assert!((n as usize) < 200);
    }
}
