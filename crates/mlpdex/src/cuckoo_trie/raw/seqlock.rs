//! The bucket seqlock of cuckoo-trie.txt §5: one 64-byte bucket as eight 64-bit words whose
//! last word's high half is a version.
//!
//! # Protocol
//!
//! * **Writers** are serialized by the front end (one writer at a time per map). Before its
//!   first store to a bucket, a writer makes the version odd ([`Bucket::lock`]); it keeps the
//!   bucket locked until its whole operation is done and then makes the version even again
//!   ([`Bucket::unlock`]). So a reader never sees part of an operation: at any instant, the
//!   buckets an operation has touched are all locked until all of them are released.
//! * **Readers** never write. They copy a bucket between two reads of its version
//!   ([`Bucket::try_snapshot`]) and keep the `(bucket, version)` pair; at the end of the
//!   operation they re-read every version they kept ([`Bucket::validate`], after one
//!   [`Word::fence_acquire`]). If all match, every copy still held at that instant, and since a
//!   bucket is never unlocked halfway through a write, the copies together are one committed
//!   state of the table: the operation linearizes at that instant. Otherwise it restarts.
//!
//! Versions count in steps of `1 << 32` in the last word and wrap after 2³¹ writes to one
//! bucket; a reader would be fooled only if exactly that many writes hit one bucket during
//! one of its operations.
//!
//! Every access is atomic (relaxed for data), so racing readers and writers are not data races.
//! The protocol is generic over [`Word`] so the loom model in this module's tests checks this
//! very code.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Words per bucket.
pub(crate) const WORDS: usize = 8;
/// The version's unit in the last word.
const ONE: u64 = 1 << 32;

pub(crate) use crate::sync::Word;

/// One bucket: words 0..8, the version in the high half of word 7.
#[repr(C, align(64))]
pub(crate) struct Bucket<W = core::sync::atomic::AtomicU64> {
    pub(crate) w: [W; WORDS],
}

const _: () = assert!(core::mem::size_of::<Bucket>() == 64);
const _: () = assert!(core::mem::align_of::<Bucket>() == 64);

impl<W: Word> Bucket<W> {
    /// Data word `i`, relaxed (for the writer, or for a reader that validates later).
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> u64 {
        self.w[i].load(Relaxed)
    }

    /// Stores the bits of `v` under `mask` into word `i` (the writer holds the bucket, or the
    /// table is not shared). The version bits are outside every entry's mask.
    #[inline(always)]
    pub(crate) fn store_masked(&self, i: usize, v: u64, mask: u64) {
        debug_assert!(
            i < WORDS - 1 || mask >> 32 == 0,
            "entry bits overlap the version"
        );
        self.w[i].clear_set(mask, v & mask);
    }

    /// The current version, ordered after this thread's earlier data reads only if a
    /// [`Word::fence_acquire`] came between (see [`validate`](Self::validate)).
    #[inline(always)]
    pub(crate) fn version(&self) -> u32 {
        (self.w[WORDS - 1].load(Relaxed) >> 32) as u32
    }

    /// A copy of the bucket and the even version it was taken at, or `None` when a writer
    /// holds the bucket or changed it during the copy.
    #[inline(always)]
    pub(crate) fn try_snapshot(&self) -> Option<([u64; WORDS], u32)> {
        let last = self.w[WORDS - 1].load(Acquire);
        if last & ONE != 0 {
            return None;
        }
        let mut out = [0u64; WORDS];
        for (o, w) in out.iter_mut().zip(&self.w[..WORDS - 1]) {
            *o = w.load(Relaxed);
        }
        out[WORDS - 1] = last;
        W::fence_acquire();
        let again = self.w[WORDS - 1].load(Relaxed);
        (again >> 32 == last >> 32).then_some((out, (last >> 32) as u32))
    }

    /// True when the version is still `v`. Call [`Word::fence_acquire`] once after the last
    /// data read and before a run of validations.
    #[inline(always)]
    pub(crate) fn validate(&self, v: u32) -> bool {
        self.version() == v
    }

    /// Whether a writer holds the bucket (for the writer itself: was it locked already?).
    #[inline(always)]
    pub(crate) fn is_locked(&self) -> bool {
        self.w[WORDS - 1].load(Relaxed) & ONE != 0
    }

    /// Makes the version odd before the writer's first store to an unlocked bucket.
    #[inline(always)]
    pub(crate) fn lock(&self) {
        debug_assert!(!self.is_locked(), "locking a bucket twice");
        self.w[WORDS - 1].add(ONE, Relaxed);
        // Orders the odd version before the data stores that follow: a reader that sees one
        // of them sees the odd version (or a later one) when it validates.
        W::fence_release();
    }

    /// Makes the version even again, publishing the writer's stores.
    #[inline(always)]
    pub(crate) fn unlock(&self) {
        debug_assert!(self.is_locked(), "unlocking a bucket that is not locked");
        self.w[WORDS - 1].add(ONE, Release);
    }
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release loom_model`.
    use super::*;
    use crate::sync::loom::{
        self,
        sync::{Arc, atomic::AtomicU64},
    };

    fn bucket() -> Bucket<AtomicU64> {
        Bucket {
            w: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// A writer rewrites an "entry" spanning words 0, 6 and the low half of 7 (like slot 3,
    /// which shares the version's word); a reader's accepted snapshots are never torn.
    #[test]
    fn snapshot_is_never_torn() {
        loom::model(|| {
            let b = Arc::new(bucket());
            let w = b.clone();
            let writer = loom::thread::spawn(move || {
                for x in 1..=2u64 {
                    w.lock();
                    w.store_masked(0, x, u64::MAX);
                    w.store_masked(6, x, u64::MAX);
                    w.store_masked(7, x, 0xFFFF_FFFF);
                    w.unlock();
                }
            });
            if let Some((s, v)) = b.try_snapshot() {
                assert_eq!(v % 2, 0);
                assert_eq!(s[0], s[6]);
                assert_eq!(s[0], s[7] & 0xFFFF_FFFF);
                assert_eq!(u64::from(v), 2 * s[0], "version matches the data it guards");
            }
            writer.join().unwrap();
        });
    }

    /// A writer moves a token from bucket A to bucket B in one operation (both locked until
    /// both are written, as a cuckoo relocation does); a reader that copies A then B and
    /// validates both sees the token exactly once.
    #[test]
    fn two_bucket_operation_is_atomic_to_validating_readers() {
        loom::model(|| {
            let a = Arc::new(bucket());
            let b = Arc::new(bucket());
            a.store_masked(0, 1, u64::MAX);
            let (wa, wb) = (a.clone(), b.clone());
            let writer = loom::thread::spawn(move || {
                wa.lock();
                wa.store_masked(0, 0, u64::MAX);
                wb.lock();
                wb.store_masked(0, 1, u64::MAX);
                wa.unlock();
                wb.unlock();
            });
            let sa = a.try_snapshot();
            let sb = b.try_snapshot();
            if let (Some((ca, va)), Some((cb, vb))) = (sa, sb) {
                AtomicU64::fence_acquire();
                if a.validate(va) && b.validate(vb) {
                    assert_eq!(ca[0] + cb[0], 1, "token seen once");
                }
            }
            writer.join().unwrap();
        });
    }
}
