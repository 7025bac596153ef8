//! The storage layer (pi-parallel-skiplist.txt §3.1): a sorted singly linked list of data
//! nodes (key, value, height, deleted flag) behind a head node that stands for minus
//! infinity.
//!
//! Ownership: the [`Storage`] owns every node, in the slots of its [`Slab`] (`slab.rs`:
//! chunks on huge pages, a cursor a worker). A node is dropped only when the storage drops,
//! or through [`Storage::free`] after [`Storage::unlink_after`] took it out of the list;
//! `free`'s contract is that no reference to the node exists or will be made. So every node
//! reachable from the head is alive, and a node reached while a `&Storage` lives stays alive
//! for as long as the unlinker keeps that contract (`Pi` unlinks only in an internal batch
//! right after a rebuild ended, and frees only once that batch's workers are all done).
//!
//! During a batch each worker changes only the nodes of its own segment (the executor's
//! partition, `execute.rs`), and a background rebuild may read the whole list at the same
//! time. Every field that changes is therefore atomic: values and flags with relaxed
//! ordering (what a worker writes is published to the next batch by the pool's join), links
//! with release stores and acquire loads so that a concurrent reader that sees a new node
//! sees its key and link. On x86 these are plain loads and stores; a partition bug would show
//! as a wrong answer, never as undefined behaviour.

use core::cmp::Ordering::{Greater, Less};
use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering;

use super::slab::{Alloc, Slab};
use crate::HugePages;
use crate::pi::key::sealed::Key;

use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};

/// Tallest tower a node gets (level 1 of the index layer holds nodes of height 2 and up).
pub(crate) const MAX_HEIGHT: usize = 24;

/// The `indexed` stamp of a node unlinked (and not yet freed): a walk found ahead that stands
/// on one must start again from a node still linked.
pub(crate) const UNLINKED: u32 = u32::MAX;

/// One key of the storage layer.
#[derive(Debug)]
pub(crate) struct Node<K: Key> {
    pub(crate) key: K::Stored,
    pub(crate) value: AtomicU64,
    next: AtomicPtr<Node<K>>,
    /// Tower height, `1..=MAX_HEIGHT` (the head: `MAX_HEIGHT + 1`).
    pub(crate) height: u8,
    /// Removed from the map; the node stays linked until it is unlinked after a rebuild.
    pub(crate) deleted: AtomicBool,
    /// The generation of the last index layer built with this node in it (0: none); a
    /// deleted node the current index names must stay linked.
    pub(crate) indexed: AtomicU32,
}

impl<K: Key> Node<K> {
    fn new(key: K::Stored, value: u64, height: u8, next: *mut Node<K>) -> Node<K> {
        Node {
            key,
            value: AtomicU64::new(value),
            next: AtomicPtr::new(next),
            height,
            deleted: AtomicBool::new(false),
            indexed: AtomicU32::new(0),
        }
    }

    /// The next node, if any.
    #[inline(always)]
    pub(crate) fn next(&self) -> Option<&Node<K>> {
        let p = self.next.load(Ordering::Acquire);
        // SAFETY: a link is null or points to a node of the same storage. Nodes are freed
        // when the storage drops (no borrow of it is left then) or through `Unlinked::free`,
        // whose contract forbids any reference to the node to exist or be made, which
        // includes reaching it through this link; so the node outlives the returned borrow.
        unsafe { p.as_ref() }
    }

    /// The value, unless the node is deleted.
    #[inline(always)]
    pub(crate) fn live_value(&self) -> Option<u64> {
        (!self.deleted.load(Ordering::Relaxed)).then(|| self.value.load(Ordering::Relaxed))
    }

    /// The key, borrowed.
    #[inline(always)]
    pub(crate) fn key(&self) -> K::Ref<'_> {
        K::stored_ref(&self.key)
    }
}

/// The list: the head node and everything linked from it, and the slots of its nodes.
#[derive(Debug)]
pub(crate) struct Storage<K: Key> {
    head: Box<Node<K>>,
    slab: Slab<K>,
}

impl<K: Key> Default for Storage<K> {
    fn default() -> Self {
        Storage::new(HugePages::Auto)
    }
}

impl<K: Key> Storage<K> {
    /// An empty list whose node chunks ask for huge pages as `huge` says.
    pub(crate) fn new(huge: HugePages) -> Self {
        Storage {
            head: Box::new(Node::new(
                K::Stored::default(),
                0,
                MAX_HEIGHT as u8 + 1,
                ptr::null_mut(),
            )),
            slab: Slab::new(huge),
        }
    }

    /// Takes back the unused slots of a cursor of this storage no worker will use again.
    pub(crate) fn retire(&self, alloc: Alloc<K>) {
        self.slab.retire(alloc);
    }

    /// Bytes of the node chunks (used slots or not; keys' own heap bytes aside).
    pub(crate) fn memory_usage(&self) -> usize {
        self.slab.memory_usage()
    }

    /// The head node (no key; smaller than every key).
    #[inline(always)]
    pub(crate) fn head(&self) -> &Node<K> {
        &self.head
    }

    /// Whether `n` is the head.
    #[inline(always)]
    pub(crate) fn is_head(&self, n: &Node<K>) -> bool {
        ptr::eq(n, &*self.head)
    }

    /// Links a new node after `pred`, before `pred`'s successor, and returns it; its slot
    /// comes from `alloc`, a cursor of this storage. The caller keeps the list sorted
    /// (`pred.key < key < successor's key`) and is the only writer of `pred`'s link (the
    /// executor's partition).
    pub(crate) fn insert_after<'s>(
        &'s self,
        alloc: &mut Alloc<K>,
        pred: &'s Node<K>,
        key: K::Ref<'_>,
        value: u64,
        height: u8,
    ) -> &'s Node<K> {
        let next = pred.next.load(Ordering::Relaxed);
        debug_assert!(self.is_head(pred) || K::order(pred.key(), key) == Less);
        // SAFETY: as in `Node::next`: a non-null link points to a live node of this storage.
        debug_assert!(unsafe { next.as_ref() }.is_none_or(|n| K::order(n.key(), key) == Greater));
        let node = self.slab.take(alloc).as_ptr();
        // SAFETY: a slot of this storage's slab, holding no value and referred to by nothing
        // (slab.rs, invariants 2 and 3); it is the node's from now on.
        unsafe { node.write(Node::new(K::store(key), value, height, next)) };
        // Release: a reader that loads the new link sees the node's fields and link.
        pred.next.store(node, Ordering::Release);
        // SAFETY: just written and now owned by the list; dropped only when the list drops or
        // through `Storage::free`, whose contract covers this borrow (see `Node::next`).
        unsafe { &*node }
    }

    /// The node of `handle` (its exposed address), borrowed from the storage.
    ///
    /// # Safety
    /// `handle` is the address of a node of this storage not freed yet (nor while the
    /// borrow lasts).
    pub(crate) unsafe fn node_at(&self, handle: u64) -> &Node<K> {
        // SAFETY: by the caller's contract the address is of a live node of this storage.
        unsafe { &*ptr::with_exposed_provenance::<Node<K>>(handle as usize) }
    }

    /// Every node after the head, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Node<K>> {
        core::iter::successors(self.head.next(), |n| n.next())
    }

    /// Unlinks `node`, the successor of `pred`, and hands it back to be freed once nothing
    /// can reach it. The caller is the only writer of `pred`'s link (the executor's
    /// partition) and checked that `node` follows `pred`.
    pub(crate) fn unlink_after(&self, pred: &Node<K>, node: &Node<K>) -> Unlinked<K> {
        // The link's pointer, not one made from `&Node`: it carries the slot's own
        // permissions (from its chunk), which dropping the node needs.
        let raw = pred.next.load(Ordering::Relaxed);
        assert!(ptr::eq(raw, node), "unlink_after: not the successor");
        debug_assert!(pred.indexed.load(Ordering::Relaxed) != UNLINKED);
        pred.next
            .store(node.next.load(Ordering::Relaxed), Ordering::Release);
        node.indexed.store(UNLINKED, Ordering::Relaxed);
        Unlinked(NonNull::new(raw).expect("a successor"))
    }
}

/// A node unlinked from its list, not yet freed ([`Storage::free`]).
#[derive(Debug)]
pub(crate) struct Unlinked<K: Key>(NonNull<Node<K>>);

// SAFETY: an `Unlinked` is a unique claim on a node no list reaches any more (its fields are
// atomics or immutable); moving the claim to another thread moves nothing else.
unsafe impl<K: Key> Send for Unlinked<K> {}

impl<K: Key> Storage<K> {
    /// Drops the unlinked nodes and gives their slots back for reuse; returns the heap bytes
    /// their keys owned.
    ///
    /// # Safety
    /// Each node was unlinked from this storage, and no reference to it may be alive or made
    /// later: no walk may stand on it or reach it through the link of another unlinked node
    /// still in use, and no index may name it.
    pub(crate) unsafe fn free(&self, nodes: Vec<Unlinked<K>>) -> usize {
        let mut bytes = 0;
        for n in &nodes {
            // SAFETY: the node is unlinked and, by the caller's contract, unreachable, so
            // this is its only drop; the slot stays allocated (its chunk lives on).
            bytes += K::heap_bytes(unsafe { &n.0.as_ref().key });
            // SAFETY: as above.
            unsafe { ptr::drop_in_place(n.0.as_ptr()) };
        }
        // SAFETY: the slots are of this storage's slab (`insert_after`), their nodes were
        // just dropped, and nothing refers to them (the caller's contract).
        unsafe { self.slab.give_back(nodes.into_iter().map(|n| n.0)) };
        bytes
    }
}

impl<K: Key> Drop for Storage<K> {
    fn drop(&mut self) {
        let mut cur = self.head.next.load(Ordering::Relaxed);
        while !cur.is_null() {
            // SAFETY: every non-null link is a node written into a slot by `insert_after`,
            // dropped once: here, walking the list that owns it, with nothing else borrowing
            // it (unlinked nodes were dropped by `free` or stay leaked, never linked). The
            // slots go with the slab, after this.
            unsafe {
                let next = (*cur).next.load(Ordering::Relaxed);
                ptr::drop_in_place(cur);
                cur = next;
            }
        }
    }
}

/// A source of tower heights: geometric with p = 1/4 (§5), capped at [`MAX_HEIGHT`].
#[derive(Clone, Debug)]
pub(crate) struct Heights(u64);

impl Heights {
    pub(crate) fn new(seed: u64) -> Self {
        Heights(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u8 {
        // xorshift64*: good enough for coin flips, one multiply a node.
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // Two fair bits a level: the height grows with probability 1/4.
        (1 + (r.trailing_zeros() / 2) as usize).min(MAX_HEIGHT) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_iterate_and_unlink() {
        let s = Storage::<u64>::default();
        let mut al = Alloc::default();
        let a = s.insert_after(&mut al, s.head(), 10, 1, 1);
        let c = s.insert_after(&mut al, a, 30, 3, 2);
        let b = s.insert_after(&mut al, a, 20, 2, 1);
        s.insert_after(&mut al, c, 40, 4, 1);
        let keys: Vec<u64> = s.iter().map(|n| n.key).collect();
        assert_eq!(keys, [10, 20, 30, 40]);
        b.deleted.store(true, Ordering::Relaxed);
        assert_eq!(b.live_value(), None);
        let gone = s.unlink_after(a, b);
        // SAFETY: nothing refers to the node any more (`b` is not used again).
        unsafe { s.free(vec![gone]) };
        let first = s.head().next().expect("a node");
        let gone = s.unlink_after(s.head(), first);
        // SAFETY: as above.
        unsafe { s.free(vec![gone]) };
        // The two slots are handed out again before any other.
        let before = s.memory_usage();
        let mut fresh = Alloc::default();
        let last = s.iter().last().expect("a node");
        let x = s.insert_after(&mut fresh, last, 50, 5, 1);
        let y = s.insert_after(&mut fresh, x, 60, 6, 1);
        assert_eq!(s.memory_usage(), before);
        let keys: Vec<u64> = s.iter().map(|n| n.key).collect();
        assert_eq!(keys, [30, 40, 50, 60]);
        let gone = s.unlink_after(x, y);
        // SAFETY: as above.
        unsafe { s.free(vec![gone]) };
        let keys: Vec<(u64, Option<u64>)> = s.iter().map(|n| (n.key, n.live_value())).collect();
        assert_eq!(keys, [(30, Some(3)), (40, Some(4)), (50, Some(5))]);
        assert!(s.is_head(s.head()));
    }

    #[test]
    fn heights_are_geometric() {
        let mut h = Heights::new(7);
        let mut counts = [0usize; MAX_HEIGHT + 1];
        let n = if cfg!(miri) { 10_000 } else { 100_000 };
        for _ in 0..n {
            counts[h.next() as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        // About 3/4 of height 1, 3/16 of height 2 (fixed seed: a deterministic check).
        assert!(
            (n * 70 / 100..n * 80 / 100).contains(&counts[1]),
            "{counts:?}"
        );
        assert!(
            (n * 16 / 100..n * 215 / 1000).contains(&counts[2]),
            "{counts:?}"
        );
    }
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release loom_model`.
    //!
    //! The one race PI allows: a background rebuild scans the list while the workers of a
    //! batch link new nodes and mark or revive nodes in their own segments. Two workers
    //! (disjoint segments, as the partition guarantees) write while a third thread scans as
    //! the rebuild does. Every scan must see the keys in order, every node that was linked
    //! before the race, and each new node only with the fields it was linked with (loom
    //! reports a load of an atomic its creation does not happen before, so a link published
    //! without release, or loaded without acquire, fails the model).
    use super::*;
    use crate::sync::loom::{self, sync::Arc};

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }

    /// The list `10 -> 20 -> 30` (heights 2, 1, 2).
    fn list() -> Arc<Storage<u64>> {
        let s = Storage::default();
        let mut al = Alloc::default();
        let n10 = s.insert_after(&mut al, s.head(), 10, 100, 2);
        let n20 = s.insert_after(&mut al, n10, 20, 200, 1);
        s.insert_after(&mut al, n20, 30, 300, 2);
        Arc::new(s)
    }

    fn node(s: &Storage<u64>, key: u64) -> &Node<u64> {
        s.iter()
            .find(|n| n.key == key)
            .expect("linked before the race")
    }

    #[test]
    fn loom_model_rebuild_scan_beside_two_workers() {
        model(|| {
            let s = list();
            // Worker 1 owns the segment from 10: links 15 after 10, marks 20 deleted.
            let w1 = {
                let s = s.clone();
                loom::thread::spawn(move || {
                    let n10 = node(&s, 10);
                    s.insert_after(&mut Alloc::default(), n10, 15, 150, 3);
                    node(&s, 20).deleted.store(true, Ordering::Relaxed);
                })
            };
            // Worker 2 owns the segment from 30: links 35 after it, then 33 between them.
            let w2 = {
                let s = s.clone();
                loom::thread::spawn(move || {
                    let n30 = node(&s, 30);
                    let mut al = Alloc::default();
                    s.insert_after(&mut al, n30, 35, 350, 1);
                    s.insert_after(&mut al, n30, 33, 330, 2);
                })
            };
            // The rebuild's scan, as `build_index` reads the list.
            let seen: Vec<(u64, u64, u8)> = s
                .iter()
                .map(|n| (n.key, n.value.load(Ordering::Relaxed), n.height))
                .collect();
            w1.join().unwrap();
            w2.join().unwrap();
            assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
            for k in [10, 20, 30] {
                assert!(seen.iter().any(|n| n.0 == k), "{k} lost: {seen:?}");
            }
            for &(k, v, h) in &seen {
                let want = match k {
                    10 => (100, 2),
                    15 => (150, 3),
                    20 => (200, 1),
                    30 => (300, 2),
                    33 => (330, 2),
                    35 => (350, 1),
                    _ => panic!("key {k} never linked"),
                };
                assert_eq!((v, h), want, "fields of {k}");
            }
            // After the batch (the pool's join), the writes are all visible.
            let keys: Vec<u64> = s.iter().map(|n| n.key).collect();
            assert_eq!(keys, [10, 15, 20, 30, 33, 35]);
            assert!(node(&s, 20).live_value().is_none());
        });
    }
}
