//! The core of shortcut extendible hashing: the state readers share ([`Shared`]: the pool's
//! view, the traditional directory, the shortcut) and the writer's side ([`Core`]: the pool's
//! sizes and free pages, counts, the mapper's queue), and the operations, one file each.
//!
//! - `page`: one bucket page, its layout, probes and seqlock;
//! - `pool`: the main-memory file of pages and its linear view;
//! - `shortcut`: the slot-page area and the mapper thread;
//! - `read`: lookups, through the shortcut or the directory;
//! - `write`: inserts, removes, splits, merges, doublings.
//!
//! # The traditional directory
//!
//! `1 << depth` slots of page numbers, one array behind an epoch-protected pointer: a
//! doubling publishes a new array (each slot twice) and retires the old; splits and merges
//! store slots of the current array in place (release), then raise the directory version. A
//! bucket of local depth `l` and prefix `p` owns the slots `p << (depth - l)` up to
//! `(p + 1) << (depth - l)`.

mod page;
mod pool;
mod read;
mod shortcut;
mod write;

use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::mpsc::Sender;

use crossbeam_epoch::{self as epoch, Atomic, Owned};

pub(crate) use page::{Hashed, MERGE_AT, PAGE, SLOTS};
use pool::{Pool, View};
use shortcut::{Request, Shortcut};

use crate::Error;
use crate::substrate::hash::hash_u64;

/// The hash of every table of this module and of its benchmark baselines: the splitmix64
/// finaliser, two multiplies (the paper's "lightweight multiplicative hash").
#[inline(always)]
pub(crate) fn hash(key: u64) -> Hashed {
    Hashed(hash_u64(key, 0))
}

/// The traditional directory.
#[derive(Debug)]
pub(crate) struct Dir {
    pub(crate) depth: u32,
    pub(crate) slots: Box<[AtomicU32]>,
}

impl Dir {
    fn new(depth: u32, page: impl Fn(usize) -> u32) -> Dir {
        Dir {
            depth,
            slots: (0..1usize << depth)
                .map(|s| AtomicU32::new(page(s)))
                .collect(),
        }
    }

    /// The slots of a bucket of local depth `l` and prefix `p`.
    pub(crate) fn range(&self, l: u32, p: u64) -> core::ops::Range<usize> {
        let shift = self.depth - l;
        (p << shift) as usize..((p + 1) << shift) as usize
    }

    /// The page of slot `s` (the writer's view, or a reader's: acquire).
    #[inline(always)]
    pub(crate) fn page_of(&self, s: usize) -> u32 {
        self.slots[s].load(Acquire)
    }
}

/// What readers share with the writer and the mapper.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) view: View,
    pub(crate) dir: Atomic<Dir>,
    /// The traditional directory's version: one more for each change.
    pub(crate) version: AtomicU64,
    pub(crate) shortcut: Shortcut,
    /// Whether lookups should take the shortcut when it is in sync: the map wants one and the
    /// average fan-in is at most the threshold.
    pub(crate) wanted: AtomicBool,
}

impl shortcut::Target for Shared {
    fn view(&self) -> &View {
        &self.view
    }
    fn shortcut(&self) -> &Shortcut {
        &self.shortcut
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the last owner is going; no reader or mapper remains.
        unsafe {
            let g = epoch::unprotected();
            let d = self.dir.swap(epoch::Shared::null(), Relaxed, g);
            if !d.is_null() {
                drop(d.into_owned());
            }
            let a = self.shortcut.area.swap(epoch::Shared::null(), Relaxed, g);
            if !a.is_null() {
                drop(a.into_owned());
            }
        }
    }
}

/// Settings of the core (the front end's `Config`, checked).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(crate) shortcut: bool,
    pub(crate) fan_in: f64,
    pub(crate) max_pages: usize,
    /// The directory's initial depth.
    pub(crate) depth: u32,
}

/// A pool shrink waiting for readers to move on.
#[derive(Debug)]
struct Shrink {
    /// The pool's size after it.
    to: usize,
    /// The pages past `to`, out of the free stack meanwhile.
    quarantine: Vec<u32>,
    /// Set once every reader pinned before the shrink was planned has unpinned.
    grace: Arc<AtomicBool>,
}

/// The writer's side (see the module docs).
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) shared: Arc<Shared>,
    pool: Pool,
    len: usize,
    buckets: usize,
    mapper: Option<(Sender<Request>, std::thread::JoinHandle<()>)>,
    settings: Settings,
    scratch: Vec<(u64, u64)>,
    shrink: Option<Shrink>,
}

impl Core {
    /// An empty table: one bucket, directory depth 0, and its mapper when `settings` want a
    /// shortcut.
    pub(crate) fn new(settings: Settings) -> Result<Core, Error> {
        let (mut pool, view) = Pool::new(settings.max_pages)?;
        let first = pool.alloc(&view)?;
        // SAFETY: `first` was just allocated from this pool.
        let p = unsafe { view.page(first) };
        p.init(first, 0, 0);
        p.unlock();
        let shared = Arc::new(Shared {
            view,
            dir: Atomic::new(Dir::new(settings.depth, |_| first)),
            version: AtomicU64::new(1),
            shortcut: Shortcut::default(),
            wanted: AtomicBool::new(false),
        });
        let mut core = Core {
            shared,
            pool,
            len: 0,
            buckets: 1,
            mapper: None,
            settings,
            scratch: Vec::with_capacity(SLOTS * 2),
            shrink: None,
        };
        if settings.shortcut {
            let (tx, handle) = shortcut::spawn(Arc::clone(&core.shared))?;
            core.mapper = Some((tx, handle));
            core.send(Request::Create {
                depth: settings.depth,
                pages: vec![first; 1 << settings.depth],
                version: 1,
            });
            core.update_wanted();
        }
        Ok(core)
    }

    /// The current directory (the writer's view: only the writer replaces it).
    #[inline(always)]
    pub(crate) fn dir(&self) -> &Dir {
        // SAFETY: the directory is never null after `new`, and only the writer (`&self`
        // here or `&mut self` in the callers that replace it) retires it.
        unsafe { self.shared.dir.load(Acquire, epoch::unprotected()).deref() }
    }

    /// The page numbered `n` (a number the writer got from its directory).
    #[inline(always)]
    pub(crate) fn page(&self, n: u32) -> &page::Page {
        // SAFETY: the writer's page numbers come from its current directory, whose pages are
        // allocated and mapped while the writer borrows the core.
        unsafe { self.shared.view.page(n) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Buckets (pages in use).
    pub(crate) fn buckets(&self) -> usize {
        self.buckets
    }

    /// Pages in the pool's file.
    pub(crate) fn pool_pages(&self) -> usize {
        self.pool.pages()
    }

    /// Sends a request to the mapper (nothing without one; a mapper gone is a shortcut
    /// given up, which lookups notice by its version).
    fn send(&self, r: Request) {
        if let Some((tx, _)) = &self.mapper {
            let _ = tx.send(r);
        }
    }

    /// Raises the directory version after a change and returns it.
    fn bump(&self) -> u64 {
        self.shared.version.fetch_add(1, Release) + 1
    }

    /// Recomputes whether lookups should take the shortcut (fan-in at most the threshold).
    fn update_wanted(&self) {
        let fan_in = (1usize << self.dir().depth) as f64 / self.buckets.max(1) as f64;
        let want = self.mapper.is_some() && fan_in <= self.settings.fan_in;
        self.shared.wanted.store(want, Relaxed);
    }

    /// Whether the shortcut reflects the current directory.
    pub(crate) fn in_sync(&self) -> bool {
        self.shared.shortcut.version.load(Acquire) == self.shared.version.load(Acquire)
    }

    /// Waits until the shortcut reflects the current directory (or was given up); false if
    /// the map has no shortcut or it failed.
    pub(crate) fn wait_for_shortcut(&self) -> bool {
        if self.mapper.is_none() {
            return false;
        }
        loop {
            let v = self.shared.shortcut.version.load(Acquire);
            if v == shortcut::FAILED {
                return false;
            }
            if v == self.shared.version.load(Acquire) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Why the shortcut was given up, if it was.
    pub(crate) fn shortcut_error(&self) -> Option<Error> {
        self.shared.shortcut.error()
    }

    /// Bytes the map owns: the pool's file, the directory, and an estimate of the shortcut's
    /// page-table entries (8 bytes a slot) and kernel memory areas (about 200 bytes each).
    pub(crate) fn memory_usage(&self) -> usize {
        let slots = 1usize << self.dir().depth;
        let shortcut = if self.mapper.is_some() {
            slots * 8 + self.shared.shortcut.runs.load(Relaxed) * 200
        } else {
            0
        };
        self.pool.pages() * PAGE + slots * 4 + shortcut
    }

    /// Every entry, bucket by bucket (the writer's view).
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, u64)) {
        let dir = self.dir();
        let mut s = 0;
        while s < dir.slots.len() {
            let page = self.page(dir.page_of(s));
            let m = page.meta();
            page.for_each(&mut f);
            s = dir.range(m.depth, m.prefix).end;
        }
    }

    /// The global depth, buckets and whether the shortcut is in use, for stats.
    pub(crate) fn depth(&self) -> u32 {
        self.dir().depth
    }

    /// Mapping calls of the shortcut's area.
    pub(crate) fn shortcut_runs(&self) -> usize {
        self.shared.shortcut.runs.load(Relaxed)
    }

    /// The traditional directory's version.
    pub(crate) fn directory_version(&self) -> u64 {
        self.shared.version.load(Acquire)
    }

    /// The version the shortcut reflects, if there is a working shortcut not being remapped.
    pub(crate) fn shortcut_version(&self) -> Option<u64> {
        let v = self.shared.shortcut.version.load(Acquire);
        (self.mapper.is_some() && v != shortcut::FAILED && v != shortcut::BUSY).then_some(v)
    }

    /// Whether lookups take the shortcut now.
    pub(crate) fn shortcut_active(&self) -> bool {
        self.shared.wanted.load(Relaxed) && self.in_sync()
    }

    /// Checks the structure (tests): every bucket's invariants, the directory's slots against
    /// the buckets' ranges, the counts, and, when the shortcut is in sync, that every slot of
    /// it maps the page the directory names (the pages' versions carry their numbers).
    pub(crate) fn audit(&self) -> Result<(), String> {
        let dir = self.dir();
        let (mut s, mut buckets, mut len) = (0, 0, 0);
        while s < dir.slots.len() {
            let n = dir.page_of(s);
            let page = self.page(n);
            if !page.holds_bucket() {
                return Err(format!("slot {s} names page {n}, which holds no bucket"));
            }
            let m = page.meta();
            if m.depth > dir.depth {
                return Err(format!("bucket {n} deeper than the directory"));
            }
            let r = dir.range(m.depth, m.prefix);
            if r.start != s {
                return Err(format!(
                    "slot {s}: bucket {n}'s range starts at {}",
                    r.start
                ));
            }
            if let Some(bad) = r.clone().find(|&t| dir.page_of(t) != n) {
                return Err(format!(
                    "slot {bad} in bucket {n}'s range names another page"
                ));
            }
            page.check(hash).map_err(|e| format!("bucket {n}: {e}"))?;
            len += m.live;
            buckets += 1;
            s = r.end;
        }
        if (len, buckets) != (self.len, self.buckets) {
            return Err(format!(
                "{len} keys in {buckets} buckets, counted {} in {}",
                self.len, self.buckets
            ));
        }
        if self.mapper.is_some() && self.in_sync() {
            // SAFETY: the writer reads; only a `Create` retires the area, and none is queued
            // while the shortcut is in sync.
            let area = unsafe {
                self.shared
                    .shortcut
                    .area
                    .load(Acquire, epoch::unprotected())
                    .as_ref()
            };
            let area = area.ok_or("in sync without an area")?;
            if area.depth != dir.depth {
                return Err(format!(
                    "shortcut depth {} for directory depth {}",
                    area.depth, dir.depth
                ));
            }
            for t in 0..dir.slots.len() {
                // SAFETY: a published area maps each of its slots.
                let via = unsafe { area.page(t) };
                if via.version() != self.page(dir.page_of(t)).version() {
                    return Err(format!("shortcut slot {t} maps another page"));
                }
            }
        }
        Ok(())
    }

    /// Publishes a new directory and retires the old one.
    fn publish_dir(&self, dir: Dir) {
        let guard = epoch::pin();
        let old = self.shared.dir.swap(Owned::new(dir), Release, &guard);
        // SAFETY: the old directory is unpublished; readers that loaded it are pinned and the
        // epoch scheme drops it only after they unpinned.
        unsafe { guard.defer_destroy(old) };
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.mapper.take() {
            let _ = tx.send(Request::Stop);
            let _ = handle.join();
        }
    }
}
