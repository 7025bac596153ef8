//! The epoch guard both concurrent maps read under: [`pin`] makes a [`Guard`], and
//! [`SkipList`](crate::skiplist::SkipList) and
//! [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie) lend entries for as long
//! as it lives.
//!
//! ```
//! use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
//! use mlpdex::skiplist::SkipList;
//!
//! let list = SkipList::new();
//! let trie = ConcurrentCuckooTrie::new();
//! list.insert(b"key", String::from("in the list")).unwrap();
//! trie.insert(b"key", String::from("in the trie")).unwrap();
//!
//! let guard = mlpdex::epoch::pin(); // one guard serves every map
//! let a = list.get(b"key", &guard).unwrap();
//! let b = trie.get(b"key", &guard).unwrap();
//! list.remove(b"key");
//! trie.remove(b"key");
//! // Still readable: removed entries are freed only once every guard that could see them
//! // is dropped.
//! assert_eq!((a.as_str(), b.as_str()), ("in the list", "in the trie"));
//! ```
//!
//! # Contract
//!
//! Both maps retire removed nodes, records, replaced values and old tables into
//! crossbeam-epoch's process-wide collector, and a [`Guard`] can only be made by pinning that
//! collector. A guard of another collector (or crossbeam's `unprotected()`), which would
//! protect nothing, is rejected when the program is compiled:
//!
//! ```compile_fail,E0308
//! let list = mlpdex::skiplist::SkipList::<u64>::new();
//! let collector = crossbeam_epoch::Collector::new();
//! let handle = collector.register();
//! let foreign = handle.pin();
//! let _ = list.get(b"key", &foreign); // expected `&epoch::Guard`
//! ```
//!
//! ```compile_fail,E0308
//! let trie = mlpdex::cuckoo_trie::ConcurrentCuckooTrie::<u64>::new();
//! let collector = crossbeam_epoch::Collector::new();
//! let handle = collector.register();
//! let foreign = handle.pin();
//! let _ = trie.get(b"key", &foreign); // expected `&epoch::Guard`
//! ```
//!
//! Holding a guard delays the reclamation of everything retired after it was pinned, by every
//! structure in the process; keep guards short, or [`repin`](Guard::repin) between batches of
//! work. A guard is not `Send`: it belongs to the thread that pinned.

use core::fmt;

/// Pins the current thread's epoch: references obtained under the returned [`Guard`] stay
/// valid until it is dropped. Pinning is cheap (a thread-local counter and a fence) and
/// reentrant.
pub fn pin() -> Guard {
    Guard(crossbeam_epoch::pin())
}

/// A pinned epoch: entries read under it stay readable until it is dropped, even if they are
/// removed or replaced meanwhile. Made by [`pin`]; see the [module docs](self).
///
/// ```
/// use mlpdex::skiplist::SkipList;
///
/// let list = SkipList::new();
/// list.insert(b"key", String::from("value")).unwrap();
/// let guard = mlpdex::epoch::pin();
/// let value = list.get(b"key", &guard).unwrap();
/// list.remove(b"key");
/// assert_eq!(value, "value"); // still readable: `guard` holds its epoch
/// # // The compile_fail examples fail only for their guard's type: crossbeam_epoch is in scope.
/// # let _other = crossbeam_epoch::Collector::new().register();
/// ```
pub struct Guard(crossbeam_epoch::Guard);

impl Guard {
    /// Unpins and pins again, letting reclamation move past this guard. Takes `&mut self`, so
    /// no reference read under the old pin can survive it.
    pub fn repin(&mut self) {
        self.0.repin();
    }

    /// Hands this thread's deferred frees to the collector and runs those whose epoch has
    /// passed.
    pub fn flush(&self) {
        self.0.flush();
    }

    /// The crossbeam guard inside, for the maps' raw cores to load and retire under. Pinned on
    /// the default collector, the one every map retires into.
    #[inline(always)]
    pub(crate) fn crossbeam(&self) -> &crossbeam_epoch::Guard {
        &self.0
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guard { .. }")
    }
}
