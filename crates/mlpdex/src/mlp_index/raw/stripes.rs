//! Stripe versions: the seqlock words that let the lookups of a `ConcurrentMlpIndex` run
//! beside its writer without locks.
//!
//! Bucket `b` of a table belongs to stripe `b mod STRIPES`; a stripe's version is even while
//! it is free and odd while the writer holds it. There is one writer at a time (the map's
//! write lock); a stripe covers the same bucket indexes in every table the map grows into.
//!
//! - **Writer.** Before its first store into a bucket during an operation it locks the
//!   bucket's stripe ([`lock`](Stripes::lock): version + 1, then a release fence, so no
//!   store of the bucket becomes visible before the odd version). It keeps every stripe it
//!   locked until the operation is complete, including the publication of a grown table and
//!   of the index lengths in use, and only then unlocks them ([`unlock`](Stripes::unlock):
//!   version + 1 as a release store). Locking grows and then shrinks (two-phase locking), so
//!   an operation is atomic to a reader that validates every stripe it read.
//! - **Reader.** It loads the versions of the stripes of the buckets it will read
//!   ([`begin`](Stripes::begin), acquire), reads those buckets with relaxed loads, then
//!   [`settle`](Stripes::settle)s (an acquire fence) and loads the versions again
//!   ([`check`](Stripes::check)). The same even versions mean no operation wrote those
//!   buckets in between: what it read is the state between two operations. An odd version
//!   or a changed one means it reads again.
//!
//! Why the fences suffice: a reader that read any word an operation stored has, through the
//! writer's release fence after the lock and its own acquire fence before re-checking,
//! seen the odd version or a later one on re-checking; one whose first load saw an unlock
//! reads after everything the operation stored. `loom_model` checks both with an operation
//! over two stripes.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::sync::{AtomicU64, Word};

/// Stripes per map: 32 KiB of versions, which stay in cache; two writes contend for a stripe
/// only through the single writer, so the count only sets how often an unrelated write makes
/// a lookup read again (about one in 340 per bucket a write touches).
pub(crate) const STRIPES: usize = 4096;

/// The version words.
pub(crate) struct Stripes {
    v: Box<[AtomicU64]>,
}

impl Stripes {
    pub(crate) fn new() -> Stripes {
        Stripes {
            v: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The stripe of bucket `b`.
    #[inline(always)]
    pub(crate) fn of(b: usize) -> usize {
        b % STRIPES
    }

    /// Reader: the version of bucket `b`'s stripe, odd while the writer holds it.
    #[inline(always)]
    pub(crate) fn begin(&self, b: usize) -> u64 {
        self.v[Self::of(b)].load(Acquire)
    }

    /// Reader: orders the bucket reads before the [`check`](Self::check)s that follow.
    #[inline(always)]
    pub(crate) fn settle() {
        <AtomicU64 as Word>::fence_acquire();
    }

    /// Reader: whether bucket `b`'s stripe still has version `v` (after [`settle`](Self::settle)).
    #[inline(always)]
    pub(crate) fn check(&self, b: usize, v: u64) -> bool {
        self.v[Self::of(b)].load(Relaxed) == v
    }

    /// Writer: locks bucket `b`'s stripe before a store into the bucket; false if the writer
    /// holds it already.
    #[inline(always)]
    pub(crate) fn lock(&self, b: usize) -> bool {
        let w = &self.v[Self::of(b)];
        let v = w.load(Relaxed);
        if v & 1 == 1 {
            return false;
        }
        w.store(v + 1, Relaxed);
        <AtomicU64 as Word>::fence_release();
        true
    }

    /// Writer: unlocks stripe `i` (a [`Stripes::of`]), publishing the stores made under it.
    #[inline(always)]
    pub(crate) fn unlock(&self, i: usize) {
        let w = &self.v[i];
        debug_assert!(w.load(Relaxed) & 1 == 1, "unlocking a free stripe");
        w.store(w.load(Relaxed) + 1, Release);
    }

    /// Bytes owned.
    pub(crate) fn bytes(&self) -> usize {
        self.v.len() * size_of::<AtomicU64>()
    }
}
