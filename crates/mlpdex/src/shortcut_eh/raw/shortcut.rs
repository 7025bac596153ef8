//! The shortcut directory (vm-shortcuts-extendible-hashing.txt §2.1, §4.1): an area of
//! virtual pages, one a directory slot, each mapped onto its bucket's page of the pool file,
//! so that the page walk of the CPU resolves the directory; and the mapper thread that keeps
//! it in step with the traditional directory.
//!
//! # Requests and versions
//!
//! The writer changes the traditional directory synchronously and raises its version by one
//! for each change (a doubling, a split, a merge); then it sends the mapper a [`Request`]
//! carrying that version: a whole new area after a doubling (`Create`, the page of every
//! slot), or slots to remap in the current area after a split or a merge (`Update`). The
//! mapper applies them in order (a `Create` makes the requests queued before it moot), maps
//! every page with `MAP_POPULATE` so that no lookup takes a page fault, and only then stores
//! the request's version as the shortcut's ([`Shortcut::version`]).
//!
//! A lookup takes the shortcut only when its version equals the traditional directory's, so
//! only when every change of the directory has been mapped: a reader never reads through a
//! slot the writer has changed and the mapper not yet remapped. A remap of the current area
//! in place is bracketed by [`BUSY`] stored in the shortcut's version, and a reader checks
//! the version again after its read; besides, a page's own seqlock version carries the page
//! number, so a read torn between two pages by a remap fails its validation either way.
//! Readers that check while the writer is changing the directory again read a bucket through
//! a mapping of the last synchronized state: the bucket's own range check sends them back to
//! the directory when that bucket has split or merged since.
//!
//! A new area replaces the old one by an epoch-protected pointer; the old one is unmapped
//! once no reader can still be reading through it, by the mapper thread and in steps of
//! [`UNMAP_STEP`] slots: unmapping a large area at once holds the process's address-space
//! lock for a long time (a million mappings took a few tenths of a second at 100M keys), and
//! whichever thread ran the epoch's deferred drop, the writer included, paid for it.
//!
//! # Failures
//!
//! Each mapping of a run of slots onto consecutive pool pages is one `mmap` call and one
//! kernel memory area; slots of one bucket (neighbours when its local depth is below the
//! global one) map the same page and take one call each. Linux allows
//! `/proc/sys/vm/max_map_count` areas a process (65,530 by default), so a large directory can
//! exceed it: the kernel refuses the mapping, the mapper records the error
//! ([`Shortcut::error`]), unmaps its partial area and stops, and lookups use the traditional
//! directory from then on.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_epoch::{self as epoch, Atomic, Owned};

use super::page::{PAGE, Page};
use super::pool::View;
use crate::Error;

/// The shortcut's version while the mapper remaps slots of the current area.
pub(crate) const BUSY: u64 = u64::MAX;
/// The shortcut's version once it failed: never a directory's.
pub(crate) const FAILED: u64 = u64::MAX - 1;

/// A change of the traditional directory for the mapper to replay.
#[derive(Debug)]
pub(crate) enum Request {
    /// A new area of `1 << depth` slots, slot `i` mapped to page `pages[i]`.
    Create {
        depth: u32,
        pages: Vec<u32>,
        version: u64,
    },
    /// Slots of the current area to remap: `(slot, page)`.
    Update {
        slots: Vec<(u32, u32)>,
        version: u64,
    },
    /// The map is going away.
    Stop,
}

/// One area of slot pages.
#[derive(Debug)]
pub(crate) struct Area {
    base: *mut u8,
    pub(crate) depth: u32,
}

// SAFETY: an area is an address range; its pages are accessed through atomics only.
unsafe impl Send for Area {}
// SAFETY: as above.
unsafe impl Sync for Area {}

impl Area {
    fn bytes(&self) -> usize {
        PAGE << self.depth
    }

    /// Reserves an area of `1 << depth` slots (no page mapped yet).
    fn reserve(depth: u32) -> Result<Area, Error> {
        let bytes = PAGE
            .checked_shl(depth)
            .filter(|b| b >> depth == PAGE)
            .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        // SAFETY: a fresh anonymous reservation without access rights.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::OutOfMemory { bytes });
        }
        Ok(Area {
            base: p.cast(),
            depth,
        })
    }

    /// Maps slots `first..first + n` onto the pool's pages `page..page + n` (one call),
    /// faulting them in.
    fn map_run(&self, view: &View, first: u32, page: u32, n: u32) -> Result<(), Error> {
        debug_assert!(u64::from(first) + u64::from(n) <= 1 << self.depth);
        let bytes = n as usize * PAGE;
        // SAFETY: the slots lie inside this area's reservation; MAP_FIXED replaces whatever
        // was mapped there (reserve, or an older mapping of these slots), which readers only
        // reach under the version protocol of the module docs.
        let p = unsafe {
            libc::mmap(
                self.base.add(first as usize * PAGE).cast(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE,
                view.fd(),
                (page as usize * PAGE) as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::OutOfMemory { bytes });
        }
        Ok(())
    }

    /// The page of slot `slot`.
    ///
    /// # Safety
    ///
    /// `slot < 1 << depth` and the slot is mapped: the area was published by the mapper
    /// (every slot mapped) and is alive for the caller (epoch guard, or no `Create` can be
    /// applied while the caller reads: the writer is the caller).
    #[inline(always)]
    pub(crate) unsafe fn page(&self, slot: usize) -> &Page {
        debug_assert!(slot < 1 << self.depth);
        // SAFETY: the caller's contract; the mapping is a pool page, 4 KiB-aligned.
        unsafe { &*self.base.add(slot * PAGE).cast::<Page>() }
    }
}

/// Slots an `munmap` call of a retired area covers at most (16 MiB of address space): the
/// writer's own mappings and page faults wait for one step at most.
const UNMAP_STEP: usize = 4096;

impl Drop for Area {
    fn drop(&mut self) {
        let (total, step) = (self.bytes(), UNMAP_STEP * PAGE);
        for at in (0..total).step_by(step) {
            // SAFETY: a part of the area's reservation, each released once; no reader holds a
            // page of it (it is dropped after the epoch scheme said so, or by the mapper
            // before publishing it).
            unsafe { libc::munmap(self.base.add(at).cast(), step.min(total - at)) };
        }
    }
}

/// The shortcut's state shared by the writer, the mapper and readers.
#[derive(Debug, Default)]
pub(crate) struct Shortcut {
    /// The published area (null until the first `Create` is applied).
    pub(crate) area: Atomic<Area>,
    /// The directory version the area reflects, [`BUSY`] or [`FAILED`].
    pub(crate) version: AtomicU64,
    /// Mapping calls of the published area (each one kernel memory area at most).
    pub(crate) runs: AtomicUsize,
    /// Why the mapper stopped, if it did.
    error: Mutex<Option<Error>>,
}

impl Shortcut {
    /// Why the shortcut was given up, if it was.
    pub(crate) fn error(&self) -> Option<Error> {
        self.error.lock().map_or(None, |e| e.clone())
    }

    fn fail(&self, e: Error) {
        self.version.store(FAILED, SeqCst);
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }
}

/// The mapper's view of what it needs: the pool view and the shared shortcut state.
pub(crate) trait Target: Send + Sync + 'static {
    fn view(&self) -> &View;
    fn shortcut(&self) -> &Shortcut;
}

/// Starts the mapper thread over `target`; requests go through the returned sender.
pub(crate) fn spawn<T: Target>(
    target: std::sync::Arc<T>,
) -> Result<(Sender<Request>, std::thread::JoinHandle<()>), Error> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("mlpdex-eh-mapper".into())
        .spawn(move || run(&*target, rx))
        .map_err(|_| Error::InvalidConfig {
            what: "the shortcut's mapper thread could not be started",
        })?;
    Ok((tx, handle))
}

/// The mapper's loop: waits for requests, takes every one queued, applies the last
/// `Create` among them and the updates after it.
fn run<T: Target>(target: &T, rx: Receiver<Request>) {
    let sc = target.shortcut();
    let mut retired = Retired::default();
    loop {
        // With areas waiting to be unmapped, look at them now and then.
        let first = if retired.0.is_empty() {
            rx.recv().map_err(|_| ())
        } else {
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(r) => Ok(r),
                Err(RecvTimeoutError::Timeout) => {
                    retired.unmap_safe();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => Err(()),
            }
        };
        let Ok(first) = first else { return };
        let mut batch = vec![first];
        loop {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => break,
            }
        }
        if batch.iter().any(|r| matches!(r, Request::Stop)) {
            return;
        }
        if sc.version.load(Relaxed) == FAILED {
            continue;
        }
        let start = batch
            .iter()
            .rposition(|r| matches!(r, Request::Create { .. }))
            .unwrap_or(0);
        for r in batch.drain(..).skip(start) {
            let done = match r {
                Request::Create {
                    depth,
                    pages,
                    version,
                } => create(target, depth, &pages, &mut retired).map(|()| version),
                Request::Update { slots, version } => update(target, &slots).map(|()| version),
                Request::Stop => return,
            };
            match done {
                Ok(version) => sc.version.store(version, Release),
                Err(e) => {
                    sc.fail(e);
                    break;
                }
            }
        }
        // Requests may come without a pause for long (a load): unmap between batches too.
        retired.unmap_safe();
    }
}

/// Calls `f(first_slot, first_page, n)` for each run of consecutive slots mapped to
/// consecutive pages in `slots` (sorted by slot).
fn runs(
    slots: impl Iterator<Item = (u32, u32)>,
    mut f: impl FnMut(u32, u32, u32) -> Result<(), Error>,
) -> Result<usize, Error> {
    let mut count = 0;
    let mut cur: Option<(u32, u32, u32)> = None;
    for (s, p) in slots {
        match cur {
            Some((s0, p0, n)) if s == s0 + n && p == p0.wrapping_add(n) => {
                cur = Some((s0, p0, n + 1))
            }
            _ => {
                if let Some((s0, p0, n)) = cur {
                    f(s0, p0, n)?;
                    count += 1;
                }
                cur = Some((s, p, 1));
            }
        }
    }
    if let Some((s0, p0, n)) = cur {
        f(s0, p0, n)?;
        count += 1;
    }
    Ok(count)
}

/// Areas replaced by newer ones, each with the flag the epoch scheme sets once no reader
/// can still use it; the mapper unmaps them ([`Retired::unmap_safe`]). Any left when the
/// mapper stops go back to the epoch scheme.
#[derive(Default)]
struct Retired(Vec<(*mut Area, Arc<AtomicBool>)>);

impl Retired {
    /// Retires `old`, unpublished under `guard`.
    fn push(&mut self, old: *mut Area, guard: &epoch::Guard) {
        let safe = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&safe);
        guard.defer(move || flag.store(true, Release));
        self.0.push((old, safe));
    }

    /// Unmaps the retired areas no reader can use any more, here on the mapper's thread.
    fn unmap_safe(&mut self) {
        if self.0.is_empty() {
            return;
        }
        epoch::pin().flush();
        self.0.retain(|(area, safe)| {
            if !safe.load(Acquire) {
                return true;
            }
            // SAFETY: the area came from `Owned::new` and was unpublished; the epoch scheme
            // ran its flag's closure, so every reader pinned when it was unpublished has
            // unpinned, and nothing else points to it.
            drop(unsafe { Owned::from_raw(*area) });
            false
        });
    }
}

impl Drop for Retired {
    fn drop(&mut self) {
        let guard = epoch::pin();
        for (area, _) in self.0.drain(..) {
            // SAFETY: as in `unmap_safe`, except that readers may still be pinned: the epoch
            // scheme drops the area once they all unpinned.
            unsafe { guard.defer_destroy(epoch::Shared::from(area.cast_const())) };
        }
    }
}

/// Builds and publishes a new area; the mapper unmaps the old one once no reader can use it.
fn create<T: Target>(
    target: &T,
    depth: u32,
    pages: &[u32],
    retired: &mut Retired,
) -> Result<(), Error> {
    let area = Area::reserve(depth)?;
    let view = target.view();
    let n = runs(
        pages.iter().enumerate().map(|(s, &p)| (s as u32, p)),
        |s, p, n| area.map_run(view, s, p, n),
    )?;
    let sc = target.shortcut();
    let guard = epoch::pin();
    let old = sc.area.swap(Owned::new(area), Release, &guard);
    sc.runs.store(n, Relaxed);
    if !old.is_null() {
        // The old area is unpublished; readers that loaded it are pinned, and it is unmapped
        // only after they all unpinned.
        retired.push(old.as_raw().cast_mut(), &guard);
    }
    guard.flush();
    Ok(())
}

/// Remaps slots of the current area, with the version [`BUSY`] meanwhile.
fn update<T: Target>(target: &T, slots: &[(u32, u32)]) -> Result<(), Error> {
    let sc = target.shortcut();
    // SAFETY: only this thread replaces the area, so it stays alive while this runs.
    let area = unsafe { sc.area.load(Acquire, epoch::unprotected()).as_ref() };
    let Some(area) = area else { return Ok(()) };
    sc.version.store(BUSY, SeqCst);
    let mut sorted = slots.to_vec();
    sorted.sort_unstable();
    let n = runs(sorted.into_iter(), |s, p, n| {
        area.map_run(target.view(), s, p, n)
    })?;
    sc.runs.fetch_add(n, Relaxed);
    Ok(())
}
