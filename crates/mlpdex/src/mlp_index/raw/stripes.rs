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

/// Stripes per map: 32 KiB of versions, which stay in cache. With one writer at a time the
/// count only sets how often an unrelated write makes a lookup read again (a lookup of 3
/// index lengths reads 6 buckets: a write storing into 4 buckets hits one of their stripes
/// about once in 170 lookups).
#[cfg(not(all(test, mlpdex_loom)))]
pub(crate) const STRIPES: usize = 4096;
/// In the loom models: a few, so that each explored execution stays small.
#[cfg(all(test, mlpdex_loom))]
pub(crate) const STRIPES: usize = 4;

/// The version words (an array of the fixed size, so that indexing by [`Stripes::of`] needs
/// no bounds check on the lookups' path).
pub(crate) struct Stripes {
    v: Box<[AtomicU64; STRIPES]>,
}

impl Stripes {
    /// Bytes a `Stripes` owns.
    pub(crate) const BYTES: usize = size_of::<[AtomicU64; STRIPES]>();

    pub(crate) fn new() -> Stripes {
        Stripes {
            v: Box::new(core::array::from_fn(|_| AtomicU64::new(0))),
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
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release loom_model`.
    use super::*;
    use crate::sync::loom::{
        self,
        sync::{Arc, atomic::AtomicU64 as Data},
    };

    /// Two buckets' words (in stripes 0 and 1), the published table and the stripes.
    struct World {
        stripes: Stripes,
        data: [Data; 2],
        table: Data,
    }

    /// Explores `f` with at most three preemptions per execution (the lookup's retry loop
    /// makes unbounded exploration slow; the races here need at most a preemption per phase
    /// of the writer).
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }

    fn world() -> Arc<World> {
        Arc::new(World {
            stripes: Stripes::new(),
            data: [Data::new(0), Data::new(0)],
            table: Data::new(0),
        })
    }

    /// One operation as the writer makes it: lock each bucket's stripe before storing into
    /// it, publish the table if asked, release every stripe at the end.
    fn operation(w: &World, value: u64, publish: bool) {
        for b in 0..2 {
            let newly = w.stripes.lock(b);
            assert!(newly);
            w.data[b].store(value, Relaxed);
        }
        if publish {
            w.table.store(value, Release);
        }
        for b in 0..2 {
            w.stripes.unlock(Stripes::of(b));
        }
    }

    /// A lookup: reads both buckets and the table until the versions validate.
    fn lookup(w: &World) -> (u64, u64, u64) {
        loop {
            let table = w.table.load(Acquire);
            let v = [w.stripes.begin(0), w.stripes.begin(1)];
            if (v[0] | v[1]) & 1 == 1 {
                loom::thread::yield_now();
                continue;
            }
            let d = [w.data[0].load(Relaxed), w.data[1].load(Relaxed)];
            Stripes::settle();
            if w.stripes.check(0, v[0])
                && w.stripes.check(1, v[1])
                && w.table.load(Relaxed) == table
            {
                return (d[0], d[1], table);
            }
            loom::thread::yield_now();
        }
    }

    /// Two operations over two stripes each: a validated lookup sees the state before, between
    /// or after them, never half of one.
    #[test]
    fn operations_are_atomic_to_validating_lookups() {
        model(|| {
            let w = world();
            let writer = {
                let w = Arc::clone(&w);
                loom::thread::spawn(move || {
                    operation(&w, 1, false);
                    operation(&w, 2, false);
                })
            };
            let (a, b, _) = lookup(&w);
            assert_eq!(a, b, "a lookup saw half an operation");
            writer.join().unwrap();
            assert_eq!(lookup(&w), (2, 2, 0));
        });
    }

    /// An operation that publishes a new table before releasing its stripes: a lookup that
    /// read its stores also read the new table (so it never mixes an old table's address
    /// with a new state, and one that read the old table re-reads).
    #[test]
    fn a_lookup_that_sees_an_operation_sees_its_table() {
        model(|| {
            let w = world();
            let writer = {
                let w = Arc::clone(&w);
                loom::thread::spawn(move || operation(&w, 1, true))
            };
            let (a, b, table) = lookup(&w);
            assert_eq!(a, b);
            assert_eq!(a, table, "stores of the operation with the table before it");
            writer.join().unwrap();
        });
    }
}
