//! The crate's one switch between the standard atomics and loom's, so that the loom models
//! check the very code that ships.
//!
//! Code whose interleavings a loom model explores takes its atomics from here, never from
//! `core::sync::atomic` directly. In the crate's unit tests built with `--cfg mlpdex_loom` (a
//! cfg of this crate's own name, so that turning loom on for a dependent build does not switch
//! this crate too) they are loom's instrumented types; everywhere else, the plain library
//! included, they are the standard ones. The models themselves reach loom through `loom`,
//! re-exported here under the same cfg, so that this file is the only one naming the loom
//! crate. Run the models with
//!
//! ```sh
//! RUSTFLAGS="--cfg mlpdex_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p mlpdex --lib --release loom_model
//! ```
//!
//! `Ordering` is shared by both (loom re-exports the standard one), and `UnsafeCell` is not
//! swapped: loom's has a closure-based API, and the models check atomics' orderings, not cell
//! accesses.

#[cfg(not(all(test, mlpdex_loom)))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(all(test, mlpdex_loom))]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
};

/// The loom crate, for the models (`loom::model`, `loom::thread`, `loom::sync`).
#[cfg(all(test, mlpdex_loom))]
pub(crate) use loom;

use core::sync::atomic::Ordering::{self, Acquire, Relaxed, Release, SeqCst};

/// An atomic 64-bit word and the fences a seqlock protocol needs (the Cuckoo Trie's bucket
/// seqlock, shortcut extendible hashing's bucket pages), so that the loom models check the
/// very protocol code: it is implemented for the standard `AtomicU64` and, in the models, for
/// loom's.
///
/// The two writer-side read-modify-writes need not be atomic (only the thread holding the
/// word's lock writes it; others at most attempt a [`cas`](Word::cas), which fails while it is
/// held), and for real words they are a load and a store. Loom's model implements them as
/// single atomic operations: its exploration misses races on a location the racing thread
/// loaded just before storing to it.
pub(crate) trait Word {
    fn load(&self, o: Ordering) -> u64;
    /// A sequentially consistent load. Loom models such loads as acquire loads only, which
    /// would report false races in the store-then-load patterns (Dekker's) that need them;
    /// its version puts a sequentially consistent fence before the load, which gives those
    /// patterns the same guarantee.
    fn load_sc(&self) -> u64;
    fn store(&self, v: u64, o: Ordering);
    /// Replaces `current` by `new` if the word holds `current` (sequentially consistent);
    /// true when it did.
    fn cas(&self, current: u64, new: u64) -> bool;
    /// Adds `x` (wrapping); the store has ordering `o`.
    fn add(&self, x: u64, o: Ordering);
    /// Clears the bits of `clear`, then sets those of `set` (relaxed).
    fn clear_set(&self, clear: u64, set: u64);
    fn fence_acquire();
    fn fence_release();
}

impl Word for core::sync::atomic::AtomicU64 {
    #[inline(always)]
    fn load(&self, o: Ordering) -> u64 {
        core::sync::atomic::AtomicU64::load(self, o)
    }
    #[inline(always)]
    fn load_sc(&self) -> u64 {
        core::sync::atomic::AtomicU64::load(self, SeqCst)
    }
    #[inline(always)]
    fn store(&self, v: u64, o: Ordering) {
        core::sync::atomic::AtomicU64::store(self, v, o);
    }
    #[inline(always)]
    fn cas(&self, current: u64, new: u64) -> bool {
        self.compare_exchange(current, new, SeqCst, Relaxed).is_ok()
    }
    #[inline(always)]
    fn add(&self, x: u64, o: Ordering) {
        let v = core::sync::atomic::AtomicU64::load(self, Relaxed);
        self.store(v.wrapping_add(x), o);
    }
    #[inline(always)]
    fn clear_set(&self, clear: u64, set: u64) {
        let v = core::sync::atomic::AtomicU64::load(self, Relaxed);
        self.store((v & !clear) | set, Relaxed);
    }
    #[inline(always)]
    fn fence_acquire() {
        core::sync::atomic::fence(Acquire);
    }
    #[inline(always)]
    fn fence_release() {
        core::sync::atomic::fence(Release);
    }
}

#[cfg(all(test, mlpdex_loom))]
impl Word for loom::sync::atomic::AtomicU64 {
    fn load(&self, o: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::load(self, o)
    }
    fn load_sc(&self) -> u64 {
        loom::sync::atomic::fence(Ordering::SeqCst);
        loom::sync::atomic::AtomicU64::load(self, Ordering::SeqCst)
    }
    fn store(&self, v: u64, o: Ordering) {
        loom::sync::atomic::AtomicU64::store(self, v, o);
    }
    fn cas(&self, current: u64, new: u64) -> bool {
        self.compare_exchange(current, new, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }
    fn add(&self, x: u64, o: Ordering) {
        self.fetch_add(x, o);
    }
    fn clear_set(&self, clear: u64, set: u64) {
        self.fetch_and(!clear, Ordering::Relaxed);
        self.fetch_or(set, Ordering::Relaxed);
    }
    fn fence_acquire() {
        loom::sync::atomic::fence(Ordering::Acquire);
    }
    fn fence_release() {
        loom::sync::atomic::fence(Ordering::Release);
    }
}
