//! The stages a [`ConcurrentHybrid`](super::ConcurrentHybrid) reads, published together as
//! one epoch-protected pointer.
//!
//! A [`Stages`] value is immutable once published: a freeze or a swap publishes a new one.
//! The stages themselves are shared between consecutive values through `Arc`s (the dynamic
//! stage of one is the frozen stage of the next, the static stage survives a freeze), so a
//! publish copies three pointers. The only mutable part is the dynamic stage's content,
//! which its Cuckoo Trie synchronizes.

use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::Arc;

use crossbeam_epoch::{self as cb, Atomic, Owned};

use crate::Error;
use crate::cuckoo_trie::{ConcurrentCuckooTrie, Config as TrieConfig};
use crate::epoch::Guard;
use crate::hybrid::bloom::Bloom;
use crate::hybrid::{Slot, StaticStage};

/// A dynamic stage: a concurrent Cuckoo Trie of values and tombstones, with the Bloom filter
/// of every key ever put in it.
pub(crate) struct Dynamic {
    pub(crate) trie: ConcurrentCuckooTrie<Slot>,
    pub(crate) bloom: Bloom,
}

impl Dynamic {
    /// An empty stage whose filter is sized for `capacity` keys (more keys only raise its
    /// false-positive rate).
    pub(crate) fn new(capacity: usize) -> Result<Dynamic, Error> {
        Ok(Dynamic {
            trie: ConcurrentCuckooTrie::with_config(TrieConfig::default())?,
            bloom: Bloom::with_capacity(capacity),
        })
    }

    /// The stage's entry of `key`, skipping the trie when the filter rules `key` out.
    #[inline]
    pub(crate) fn slot(&self, key: &[u8], guard: &Guard) -> Option<Slot> {
        if !self.bloom.may_contain(key) {
            return None;
        }
        self.trie.get(key, guard).copied()
    }

    /// Puts `slot` under `key` (the filter first, see [`Bloom::insert_shared`]); returns the
    /// entry it replaces.
    pub(crate) fn put(&self, key: &[u8], slot: Slot) -> Result<Option<Slot>, Error> {
        self.bloom.insert_shared(key);
        self.trie.insert(key, slot)
    }

    /// Bytes owned: the trie and the filter.
    pub(crate) fn memory_usage(&self) -> usize {
        self.trie.memory_usage() + self.bloom.bytes()
    }
}

/// One consistent set of stages: writes go to `dynamic`; `frozen`, when a merge is under
/// way, is the previous dynamic stage, read-only, being merged into the next static stage;
/// `stat` is the static stage. A key's entry is the first one found in that order.
pub(crate) struct Stages<S> {
    pub(crate) dynamic: Arc<Dynamic>,
    pub(crate) frozen: Option<Arc<Dynamic>>,
    pub(crate) stat: Arc<S>,
}

impl<S: StaticStage> Stages<S> {
    /// The value of `key` in the stages below the dynamic one.
    #[inline]
    pub(crate) fn lower_get(&self, key: &[u8], guard: &Guard) -> Option<u64> {
        if let Some(frozen) = &self.frozen {
            match frozen.slot(key, guard) {
                Some(Slot::Value(v)) => return Some(v),
                Some(Slot::Deleted) => return None,
                None => {}
            }
        }
        self.stat.get(key)
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8], guard: &Guard) -> Option<u64> {
        match self.dynamic.slot(key, guard) {
            Some(Slot::Value(v)) => Some(v),
            Some(Slot::Deleted) => None,
            None => self.lower_get(key, guard),
        }
    }
}

/// The published [`Stages`]: never null; a replaced value is destroyed once no guard pinned
/// before the replacement remains.
pub(crate) struct Current<S> {
    ptr: Atomic<Stages<S>>,
}

impl<S: StaticStage> Current<S> {
    pub(crate) fn new(stages: Stages<S>) -> Self {
        Current {
            ptr: Atomic::new(stages),
        }
    }

    /// The stages as of now, readable while `guard` lives.
    #[inline(always)]
    pub(crate) fn load<'g>(&self, guard: &'g Guard) -> &'g Stages<S> {
        // SAFETY: `ptr` is never null (set at construction, only ever swapped for another
        // value), and a replaced value is destroyed only through `defer_destroy` in
        // `publish`, after every guard pinned while it was reachable, `guard` included.
        unsafe { self.ptr.load(Acquire, guard.crossbeam()).deref() }
    }

    /// Makes `new` the current stages; the old value is destroyed once no reader can hold
    /// it. Callers serialize their publishes (the writer lock), so that each publish starts
    /// from the value the previous one made.
    pub(crate) fn publish(&self, new: Stages<S>, guard: &Guard) {
        let g = guard.crossbeam();
        let old = self.ptr.swap(Owned::new(new), AcqRel, g);
        // SAFETY: `old` is unreachable from now on for any guard pinned after the swap;
        // guards pinned before keep it alive until they are dropped. Destroying it only
        // drops three `Arc`s: the stages themselves are freed by whoever holds the last one
        // (the merge, see `merge.rs`).
        unsafe { g.defer_destroy(old) };
        g.flush();
    }
}

impl<S> Drop for Current<S> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no thread can load the pointer any more, and guards still
        // pinned on earlier values own those through their deferred destruction.
        let guard = unsafe { cb::unprotected() };
        let cur = self.ptr.swap(cb::Shared::null(), Relaxed, guard);
        // SAFETY: non-null (see `load`), and owned by this value alone.
        drop(unsafe { cur.into_owned() });
    }
}
