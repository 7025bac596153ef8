//! The leaves by id: a table of pointers that readers on other threads may load while writers
//! replace entries (the concurrent map's copy-on-write leaves), and the leaf versions a
//! replacement leaves behind.
//!
//! The table owns the leaf each entry points to, values included. A copy-on-write writer
//! gives a leaf's new version the old one's values bit for bit ([`Leaf::cow_copy`]), puts it
//! in the table with [`Leaves::publish_if`] (or [`Leaves::swap`]), and gets the old version back
//! as a [`Superseded`]: memory that readers may still be reading, to be freed when they are
//! done (the concurrent map defers it to the epoch collector), without dropping the values,
//! which belong to the new version.

#![allow(unsafe_code)]

use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::AtomicPtr;
use core::sync::atomic::Ordering::{AcqRel, Acquire};

use super::leaf::Leaf;

/// Leaves by id; a null entry is a free id. See the module docs.
pub(crate) struct Leaves<V> {
    slots: Vec<AtomicPtr<Leaf<V>>>,
    /// The table owns its leaves.
    _own: PhantomData<Box<Leaf<V>>>,
}

// SAFETY: the table owns its leaves as a `Vec<Option<Box<Leaf<V>>>>` would (the pointers are
// to boxes only it frees), so it may move to another thread with them (`V: Send`), and
// sharing it shares `&Leaf<V>`s (`V: Sync`; a leaf's own fields are plain data).
unsafe impl<V: Send> Send for Leaves<V> {}
// SAFETY: see `Send`; through `&Leaves` the only write is `publish_if`'s compare-and-swap.
unsafe impl<V: Sync> Sync for Leaves<V> {}

/// A leaf version that a newer one replaced: it holds bit copies of values the newer version
/// owns. Dropping it frees its memory and leaves its values alone; a concurrent map drops it
/// only once no reader can hold a reference into it.
pub(crate) struct Superseded<V>(NonNull<Leaf<V>>);

// SAFETY: a `Superseded` is the sole owner of the leaf's memory (the table no longer points to
// it) and drops no value, so sending it sends bytes and the leaf's own heap buffers; `V: Send`
// because its values' bits are in the memory it frees.
unsafe impl<V: Send> Send for Superseded<V> {}
// SAFETY: through `&Superseded` the leaf is only read (`heap_bytes`).
unsafe impl<V: Sync> Sync for Superseded<V> {}

impl<V> Superseded<V> {
    /// Bytes it will free.
    pub(crate) fn heap_bytes(&self) -> usize {
        // SAFETY: the leaf is alive until this `Superseded` drops, and nothing writes it.
        unsafe { self.0.as_ref() }.heap_bytes()
    }
}

impl<V> Drop for Superseded<V> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::into_raw` and is owned by `self` alone (taken out
        // of the table); its user dropped it only after every reader of the leaf was done.
        let mut leaf = unsafe { Box::from_raw(self.0.as_ptr()) };
        leaf.forget_values();
    }
}

impl<V> Leaves<V> {
    pub(crate) fn new() -> Self {
        Leaves {
            slots: Vec::new(),
            _own: PhantomData,
        }
    }

    /// Ids in use or free.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    pub(crate) fn try_reserve(
        &mut self,
        more: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        self.slots.try_reserve(more)
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.slots.shrink_to_fit();
    }

    /// Leaf `id`, when the id is in use.
    #[inline(always)]
    pub(crate) fn get(&self, id: u32) -> Option<&Leaf<V>> {
        let p = self.slots.get(id as usize)?.load(Acquire);
        // SAFETY: a non-null entry points to a live leaf the table owns; it is freed only after
        // leaving the table (`swap`, `replace`, `publish` hand it out as a `Superseded` or a
        // `Box` through `&mut self` or to a caller who defers the free past every reader), so
        // it outlives this borrow of the table.
        unsafe { p.as_ref() }
    }

    /// Leaf `id`, mutably, when the id is in use.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Leaf<V>> {
        let p = *self.slots.get_mut(id as usize)?.get_mut();
        // SAFETY: as in `get`; `&mut self` excludes every other user of the table, and the
        // copy-on-write writer never asks for a leaf that readers may hold (it replaces it
        // with its copy first).
        unsafe { p.as_mut() }
    }

    /// Makes `leaf` id `id` (a free id, or the next new one when `id == len()`).
    pub(crate) fn put(&mut self, id: u32, leaf: Box<Leaf<V>>) {
        let p = Box::into_raw(leaf);
        if id as usize == self.slots.len() {
            self.slots.push(AtomicPtr::new(p));
        } else {
            let slot = self.slots[id as usize].get_mut();
            debug_assert!(slot.is_null(), "leaf id {id} is in use");
            *slot = p;
        }
    }

    /// Takes leaf `id` out of the table (its id becomes free).
    pub(crate) fn take(&mut self, id: u32) -> Option<Box<Leaf<V>>> {
        let p = core::mem::replace(self.slots[id as usize].get_mut(), core::ptr::null_mut());
        // SAFETY: a non-null entry came from `Box::into_raw`, and the table no longer holds it.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }

    /// Takes leaf `id`, which readers may still hold, out of the table (its id becomes free);
    /// it must hold no value of its own (empty, or its values moved to a newer version).
    pub(crate) fn retire(&mut self, id: u32) -> Superseded<V> {
        let p = core::mem::replace(self.slots[id as usize].get_mut(), core::ptr::null_mut());
        Superseded(NonNull::new(p).expect("a live leaf"))
    }

    /// Replaces leaf `id` with `leaf`, a new version of it that owns the old one's values;
    /// the old version, which readers may still hold.
    pub(crate) fn swap(&mut self, id: u32, leaf: Box<Leaf<V>>) -> Superseded<V> {
        let old = core::mem::replace(self.slots[id as usize].get_mut(), Box::into_raw(leaf));
        Superseded(NonNull::new(old).expect("a live leaf"))
    }

    /// [`swap`](Self::swap) while readers load the table and other writers race for the same
    /// entry: replaces leaf `id` with `leaf` if it is still `expected` (compare-and-swap; the
    /// new version becomes visible to every load that follows, with its contents); the
    /// version replaced, or `Err(leaf)` when another writer replaced `expected` first (`leaf`
    /// was never visible to anyone).
    pub(crate) fn publish_if(
        &self,
        id: u32,
        expected: &Leaf<V>,
        leaf: Box<Leaf<V>>,
    ) -> Result<Superseded<V>, Box<Leaf<V>>> {
        let new = Box::into_raw(leaf);
        let want = core::ptr::from_ref(expected).cast_mut();
        match self.slots[id as usize].compare_exchange(want, new, AcqRel, Acquire) {
            Ok(old) => Ok(Superseded(NonNull::new(old).expect("a live leaf"))),
            // SAFETY: `new` came from `Box::into_raw` above and was not stored.
            Err(_) => Err(unsafe { Box::from_raw(new) }),
        }
    }

    /// The leaves in use, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &Leaf<V>)> + '_ {
        (0..self.slots.len() as u32).filter_map(|id| self.get(id).map(|l| (id, l)))
    }

    /// The leaves as owned boxes, by id (`None`: a free id).
    pub(crate) fn into_boxes(mut self) -> Vec<Option<Box<Leaf<V>>>> {
        (0..self.slots.len() as u32)
            .map(|id| self.take(id))
            .collect()
    }
}

impl<V> Drop for Leaves<V> {
    fn drop(&mut self) {
        for id in 0..self.slots.len() as u32 {
            drop(self.take(id));
        }
    }
}
