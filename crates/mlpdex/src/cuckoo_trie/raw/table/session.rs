//! Read sessions of shared tables (§5): bucket copies taken under their seqlock, with their
//! versions logged per thread for validation at the end of a read.

use core::cell::{Cell, RefCell};

use super::super::seqlock::{WORDS, Word};
use super::entry::ENTRY_MASK;
use super::{ENTRY_BYTES, Ent, Table};

/// What a reader of a shared table copied: `(bucket, version)` pairs, validated at the end of
/// its operation ([`ReadSession`]). Thread-local, so the table's read methods need no extra
/// argument; outside a session (single-threaded maps, the writer) nothing is recorded.
struct ReadLog {
    active: Cell<bool>,
    reads: RefCell<Vec<(usize, u32)>>,
}

thread_local! {
    static LOG: ReadLog = const {
        ReadLog {
            active: Cell::new(false),
            reads: RefCell::new(Vec::new()),
        }
    };
}

/// One optimistic read of a shared table (§5): while it lives, the table's read methods copy
/// buckets under their seqlock and record their versions; [`validate`](Self::validate) tells
/// whether all of them still hold.
pub(crate) struct ReadSession(());

impl ReadSession {
    /// Starts recording on this thread.
    pub(crate) fn begin() -> ReadSession {
        LOG.with(|l| {
            debug_assert!(!l.active.get(), "nested read sessions");
            l.active.set(true);
            l.reads.borrow_mut().clear();
        });
        ReadSession(())
    }

    /// True when no bucket read since [`begin`](Self::begin) (or the last `validate`) has
    /// changed: the reads form one committed state of `t`. Clears the record.
    pub(crate) fn validate(&self, t: &Table) -> bool {
        <core::sync::atomic::AtomicU64 as Word>::fence_acquire();
        LOG.with(|l| {
            let mut reads = l.reads.borrow_mut();
            let ok = reads.iter().all(|&(b, v)| t.bucket(b).validate(v));
            reads.clear();
            ok
        })
    }
}

impl Drop for ReadSession {
    fn drop(&mut self) {
        LOG.with(|l| l.active.set(false));
    }
}

/// Whether this thread is inside a [`ReadSession`].
#[inline(always)]
pub(super) fn reading() -> bool {
    LOG.with(|l| l.active.get())
}

/// A consistent copy of bucket `b`, waiting out a writer that holds it; recorded in the log.
#[inline]
pub(super) fn snapshot(t: &Table, b: usize) -> [u64; WORDS] {
    let bucket = t.bucket(b);
    let mut spins = 0u32;
    loop {
        if let Some((words, v)) = bucket.try_snapshot() {
            LOG.with(|l| {
                let mut reads = l.reads.borrow_mut();
                if reads.last() != Some(&(b, v)) {
                    reads.push((b, v));
                }
            });
            return words;
        }
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            // The writer may be descheduled (more threads than cores): let it run.
            std::thread::yield_now();
        }
    }
}

/// Entry `idx` of a bucket whose words `word` reads. Slot `idx` starts at byte `15·idx`:
/// words 0–1 for slot 0, three words for the others; the version bits fall outside the mask.
#[inline(always)]
pub(super) fn decode(idx: usize, word: impl Fn(usize) -> u64) -> Ent {
    let off = idx * ENTRY_BYTES;
    let (w0, sh) = (off / 8, (off % 8) * 8);
    let lo = u128::from(word(w0)) | (u128::from(word(w0 + 1)) << 64);
    let v = if sh == 0 {
        lo
    } else {
        (lo >> sh) | (u128::from(word(w0 + 2)) << (128 - sh))
    };
    Ent(v & ENTRY_MASK)
}

/// First byte (kind, side, tag) of entry `idx`.
#[inline(always)]
pub(super) fn first_byte(idx: usize, word: impl Fn(usize) -> u64) -> u8 {
    let off = idx * ENTRY_BYTES;
    (word(off / 8) >> ((off % 8) * 8)) as u8
}
