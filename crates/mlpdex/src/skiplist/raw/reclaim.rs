//! Epoch reclamation of what the link protocol retires: [`EpochRetire`] implements
//! [`Retire`] by deferring each free past every guard pinned when it was retired, on the
//! collector [`crate::epoch::Guard`] pins (crossbeam-epoch's default one).

use core::marker::PhantomData;
use core::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::list::Retire;
use super::node;
use crate::epoch::Guard;

/// Defers destruction of unlinked nodes and replaced values past every pinned guard, and takes
/// the bytes freed off the list's count.
pub(crate) struct EpochRetire<'g, V> {
    guard: &'g Guard,
    bytes: &'g Arc<AtomicUsize>,
    _values: PhantomData<V>,
}

impl<'g, V> EpochRetire<'g, V> {
    /// Retires under `guard` (the writer's own pin), counting frees off `bytes`.
    pub(crate) fn new(guard: &'g Guard, bytes: &'g Arc<AtomicUsize>) -> Self {
        EpochRetire {
            guard,
            bytes,
            _values: PhantomData,
        }
    }
}

impl<V: Send + Sync + 'static> EpochRetire<'_, V> {
    /// Runs `free` once every guard pinned now is gone, and takes the bytes it reports freeing
    /// off the list's count.
    ///
    /// # Safety
    /// `free` may run on any thread after the epoch has moved past every current guard, and
    /// only then is it sound: what it frees is unreachable for guards pinned later.
    unsafe fn defer(&self, free: impl FnOnce() -> usize + 'static) {
        let bytes = Arc::clone(self.bytes);
        // SAFETY: the closure owns what it touches (an address of ours, a counter handle; V
        // is Send); the caller vouches that running it past the epoch is sound.
        unsafe {
            self.guard
                .crossbeam()
                .defer_unchecked(move || bytes.fetch_sub(free(), Relaxed))
        };
    }
}

impl<V: Send + Sync + 'static> Retire<V> for EpochRetire<'_, V> {
    unsafe fn retire_node(&self, link: usize) {
        // SAFETY: rule 4 (the caller's contract): the node is unreachable and retired once;
        // by the time this runs the epoch has moved past every guard that could hold it.
        unsafe { self.defer(move || node::release::<V>(link)) };
    }

    unsafe fn retire_value(&self, word: usize) {
        // SAFETY: the box stopped being current before it was retired, is retired once (the
        // caller's contract), and no guard that could read it is left when this runs.
        unsafe { self.defer(move || node::drop_box::<V>(word)) };
    }

    unsafe fn retire_inline(&self, link: usize) {
        // SAFETY: rule 5: the update that replaced the inline value retired it once; no
        // guard that could hold a reference to it is left when this runs, and the node is
        // freed only by the second of this drop and the node's release.
        unsafe { self.defer(move || node::drop_replaced_inline::<V>(link)) };
    }
}
