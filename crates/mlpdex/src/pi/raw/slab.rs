//! Where the storage layer's nodes live: slots in chunks, the big chunks on 2 MiB huge pages.
//!
//! Why: a worker's walk from an interception is a chain of dependent node reads at random
//! addresses (pi-parallel-skiplist.txt §3.2.2). With nodes from the global allocator every
//! such read also misses the TLB (16M nodes span about 0.5 GiB of 4 KiB pages), and each
//! miss is a page walk of its own; on huge pages the walk's entries stay cached. Slots also
//! cost no allocator header (a 32-byte `u64` node takes 48 bytes from glibc's malloc).
//!
//! How: a [`Slab`] owns every chunk; chunks grow geometrically from 4 KiB up to
//! [`HUGE_PAGE`], so a small map stays small, and come from the global allocator as
//! [`HugeBlock`]s: those of a huge page are aligned to one and advised onto huge pages as
//! [`HugePages`] asks. Each worker allocates through its own [`Alloc`], a cursor that bumps
//! through a chunk of its own and keeps a few freed slots, so the shared lock is taken once
//! a chunk (or once per [`REFILL`] reused slots), never a node. Freed slots, and the unused
//! slots of a cursor whose worker is gone ([`Slab::retire`]), go to the slab's free list and
//! are handed out again before any new chunk.
//!
//! Invariants:
//! 1. A chunk lives as long as its slab; slots are never moved.
//! 2. A slot is in at most one place: a cursor's unused range, a cursor's spares, the
//!    slab's free list, or holding a node (which its storage owns).
//! 3. Slots in a cursor's range, its spares or the free list hold no value (nothing to drop).

use core::mem::size_of;
use core::ptr::NonNull;
use std::sync::Mutex;

use super::node::Node;
use crate::HugePages;
use crate::pi::key::sealed::Key;
use crate::substrate::region::{HUGE_PAGE, HugeBlock};

/// Freed slots a cursor takes from the slab's free list at once.
pub(crate) const REFILL: usize = 1024;

/// The first chunk's size; each new chunk is as large as all before it, up to a huge page.
const FIRST_CHUNK: usize = 4096;

/// A slot for one node.
struct Slot<K: Key>(NonNull<Node<K>>);

// SAFETY: a slot is a claim on memory that holds no value (invariant 3), owned by whichever
// structure lists it; moving the claim between threads moves nothing else.
unsafe impl<K: Key> Send for Slot<K> {}

/// The chunks and the freed slots of one storage.
pub(crate) struct Slab<K: Key> {
    shared: Mutex<Shared<K>>,
    huge: HugePages,
}

struct Shared<K: Key> {
    chunks: Vec<HugeBlock>,
    free: Vec<Slot<K>>,
}

impl<K: Key> Shared<K> {
    /// Bytes of every chunk, used or not.
    fn bytes(&self) -> usize {
        self.chunks.iter().map(HugeBlock::len).sum()
    }
}

impl<K: Key> core::fmt::Debug for Slab<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.lock();
        f.debug_struct("Slab")
            .field("chunks", &s.chunks.len())
            .field("bytes", &s.bytes())
            .field("free", &s.free.len())
            .finish()
    }
}

/// A worker's cursor into its slab: the unused rest of a chunk and some freed slots.
pub(crate) struct Alloc<K: Key> {
    next: *mut Node<K>,
    end: *mut Node<K>,
    spares: Vec<Slot<K>>,
}

// SAFETY: the cursor's pointers are claims on unused slots (invariants 2 and 3), as `Slot`.
unsafe impl<K: Key> Send for Alloc<K> {}
// SAFETY: a shared cursor gives no access to anything: every use takes `&mut Alloc`.
unsafe impl<K: Key> Sync for Alloc<K> {}

impl<K: Key> Default for Alloc<K> {
    fn default() -> Self {
        Alloc {
            next: core::ptr::null_mut(),
            end: core::ptr::null_mut(),
            spares: Vec::new(),
        }
    }
}

impl<K: Key> core::fmt::Debug for Alloc<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Alloc")
            .field("spares", &self.spares.len())
            .finish_non_exhaustive()
    }
}

impl<K: Key> Slab<K> {
    pub(crate) fn new(huge: HugePages) -> Self {
        Slab {
            shared: Mutex::new(Shared {
                chunks: Vec::new(),
                free: Vec::new(),
            }),
            huge,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared<K>> {
        // A panic while the lock is held leaves the lists consistent (each change is one
        // push or pop), so a poisoned lock is still usable.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of every chunk, used or not.
    pub(crate) fn memory_usage(&self) -> usize {
        self.lock().bytes()
    }

    /// A slot for a node, from `alloc`.
    ///
    /// `alloc` must be a cursor of this slab (made by `Alloc::default` and used with no
    /// other slab).
    #[inline]
    pub(crate) fn take(&self, alloc: &mut Alloc<K>) -> NonNull<Node<K>> {
        if let Some(s) = alloc.spares.pop() {
            return s.0;
        }
        if alloc.next != alloc.end {
            let p = alloc.next;
            // SAFETY: `next < end` within one chunk: the successor is in it or its end.
            alloc.next = unsafe { p.add(1) };
            // SAFETY: a slot pointer of a live chunk is not null.
            return unsafe { NonNull::new_unchecked(p) };
        }
        self.refill(alloc)
    }

    /// Refills an empty cursor with freed slots, or else a new chunk, and takes one slot.
    #[cold]
    fn refill(&self, alloc: &mut Alloc<K>) -> NonNull<Node<K>> {
        let mut s = self.lock();
        if !s.free.is_empty() {
            let at = s.free.len().saturating_sub(REFILL);
            alloc.spares.extend(s.free.drain(at..));
            return alloc.spares.pop().expect("a spare slot").0;
        }
        let bytes = s.bytes().clamp(FIRST_CHUNK, HUGE_PAGE);
        let slots = (bytes / size_of::<Node<K>>()).max(1);
        let bytes = bytes.max(size_of::<Node<K>>());
        let Some(chunk) = HugeBlock::new(bytes, align_of::<Node<K>>(), self.huge) else {
            std::alloc::handle_alloc_error(
                core::alloc::Layout::from_size_align(bytes, align_of::<Node<K>>())
                    .expect("a chunk's layout"),
            );
        };
        let start = NonNull::new(chunk.as_ptr().cast::<Node<K>>()).expect("an allocation");
        s.chunks.push(chunk);
        drop(s);
        // SAFETY: the chunk holds `slots >= 1` slots from `start` (invariant 1 keeps them).
        alloc.next = unsafe { start.as_ptr().add(1) };
        // SAFETY: as above: one past the last slot of the chunk.
        alloc.end = unsafe { start.as_ptr().add(slots) };
        start
    }

    /// Takes back the unused slots of a cursor no worker will use again (its spares and the
    /// rest of its chunk), for the other cursors.
    ///
    /// `alloc` is a cursor of this slab.
    pub(crate) fn retire(&self, alloc: Alloc<K>) {
        let mut s = self.lock();
        s.free.extend(alloc.spares);
        let mut p = alloc.next;
        while p != alloc.end {
            // SAFETY: `next..end` are unused slots of one live chunk (invariant 1), and
            // `next` is not null there.
            s.free.push(Slot(unsafe { NonNull::new_unchecked(p) }));
            // SAFETY: `p < end` within the chunk: the successor is in it or its end.
            p = unsafe { p.add(1) };
        }
    }

    /// Returns slots whose nodes were dropped to the free list.
    ///
    /// # Safety
    /// Each slot is of this slab, holds no value (its node was dropped in place) and nothing
    /// refers to it.
    pub(crate) unsafe fn give_back(&self, slots: impl IntoIterator<Item = NonNull<Node<K>>>) {
        self.lock().free.extend(slots.into_iter().map(Slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Slots are distinct, aligned, reused after they are given back, and chunks grow.
    #[test]
    fn slots_are_distinct_and_reused() {
        let slab = Slab::<u64>::new(HugePages::Never);
        let mut a = Alloc::default();
        let mut b = Alloc::default();
        let n = if cfg!(miri) { 300 } else { 20_000 };
        let mut seen = HashSet::new();
        let mut taken = Vec::new();
        for i in 0..n {
            let alloc = if i % 3 == 0 { &mut a } else { &mut b };
            let p = slab.take(alloc);
            assert!((p.as_ptr() as usize).is_multiple_of(align_of::<Node<u64>>()));
            assert!(seen.insert(p.as_ptr() as usize), "slot handed out twice");
            taken.push(p);
        }
        let bytes = slab.memory_usage();
        assert!(bytes >= n * size_of::<Node<u64>>());
        // SAFETY: the slots hold no value and nothing refers to them.
        unsafe { slab.give_back(taken.drain(..n / 2)) };
        let mut c = Alloc::default();
        for _ in 0..n / 2 {
            let p = slab.take(&mut c);
            assert!(
                seen.contains(&(p.as_ptr() as usize)),
                "a fresh slot before reuse"
            );
        }
        assert_eq!(slab.memory_usage(), bytes, "reuse takes no new chunk");
    }

    /// A retired cursor's unused slots go to other cursors before any new chunk.
    #[test]
    fn retired_cursors_give_their_slots_back() {
        let slab = Slab::<u64>::new(HugePages::Never);
        let mut a = Alloc::default();
        let first = slab.take(&mut a);
        let bytes = slab.memory_usage();
        let slots = bytes / size_of::<Node<u64>>();
        assert!(slots > 1);
        slab.retire(a);
        let mut b = Alloc::default();
        let mut seen = HashSet::from([first.as_ptr() as usize]);
        for _ in 1..slots {
            assert!(seen.insert(slab.take(&mut b).as_ptr() as usize));
        }
        assert_eq!(
            slab.memory_usage(),
            bytes,
            "a new chunk while retired slots were free"
        );
    }
}
