//! A vector of at most `N` values stored inline, for node layouts whose values must sit at a
//! fixed offset from the node (so one prefetch of the node brings them, with no pointer to
//! chase first).
//!
//! The values live in an [`UnsafeCell`]: [`InlineVec::ptr`] hands out a pointer through a
//! shared reference, so a mutable iterator can lend out `&mut` values of a node while it still
//! reads the node's other fields through `&` (a shared reference to a struct does not assert
//! that its interior-mutable parts are unchanging). Every other mutation takes `&mut self`.
//!
//! Invariant: `vals[..len]` are initialized, `vals[len..]` are not; `len <= N`.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;

/// Up to `N` values inline. See the module docs.
#[repr(C)]
pub(crate) struct InlineVec<T, const N: usize> {
    len: usize,
    vals: UnsafeCell<[MaybeUninit<T>; N]>,
}

// SAFETY: an `InlineVec` owns its values as a `Vec` does; sending it sends them (`T: Send`).
unsafe impl<T: Send, const N: usize> Send for InlineVec<T, N> {}
// SAFETY: through `&InlineVec`, the safe methods only read the values (`get`, `as_slice`,
// `iter`); `ptr`'s pointer may be written only by a caller that holds exclusive access to the
// vector by other means (its contract), so shared references on several threads see no
// unsynchronized write, as with `&Vec<T>` (`T: Sync`).
unsafe impl<T: Sync, const N: usize> Sync for InlineVec<T, N> {}

impl<T, const N: usize> InlineVec<T, N> {
    /// An empty vector.
    pub(crate) fn new() -> Self {
        InlineVec {
            len: 0,
            // An array of `MaybeUninit` needs no initialization.
            vals: UnsafeCell::new([const { MaybeUninit::uninit() }; N]),
        }
    }

    /// Values held.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A pointer to slot `i` (`i <= N`; one past the last slot is allowed), valid for reads
    /// of an initialized slot and for writes as long as the vector lives and does not move.
    /// Writing through it, or making a `&mut` from it, is the caller's to justify: it needs
    /// exclusive access to that slot (for example a `&mut` to the structure holding the vector,
    /// from which the caller hands out each slot once).
    #[inline(always)]
    pub(crate) fn ptr(&self, i: usize) -> *mut T {
        debug_assert!(i <= N);
        self.vals.get().cast::<T>().wrapping_add(i)
    }

    /// The values, in order.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `vals[..len]` are initialized (invariant); `MaybeUninit<T>` has `T`'s layout,
        // so the first `len` slots are `len` consecutive `T`s. Nothing writes them while `&self`
        // lives: safe writers take `&mut self`, and `ptr`'s users write only under exclusive
        // access (its contract).
        unsafe { core::slice::from_raw_parts(self.ptr(0), self.len) }
    }

    /// The values, in order, mutably.
    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; `&mut self` excludes every other access.
        unsafe { core::slice::from_raw_parts_mut(self.ptr(0), self.len) }
    }

    /// Value `i`. Panics unless `i < len()`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> &T {
        &self.as_slice()[i]
    }

    /// Value `i`, mutably. Panics unless `i < len()`.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.as_mut_slice()[i]
    }

    /// Inserts `v` at `i`, shifting the values after it. Panics when full or `i > len()`.
    pub(crate) fn insert(&mut self, i: usize, v: T) {
        let n = self.len;
        assert!(n < N && i <= n, "insert at {i} of {n} (capacity {N})");
        // SAFETY: `i <= n < N`, so slots `i..n` and `i + 1..n + 1` are in bounds; the copy
        // moves the initialized `i..n` up by one (`ptr::copy` allows overlap), and slot `i`,
        // whose old value now lives at `i + 1`, is overwritten without a drop. Afterwards
        // `..n + 1` are initialized, which the new `len` records.
        unsafe {
            let p = self.ptr(i);
            core::ptr::copy(p, p.add(1), n - i);
            p.write(v);
        }
        self.len = n + 1;
    }

    /// Removes and returns value `i`, shifting the values after it. Panics unless `i < len()`.
    pub(crate) fn remove(&mut self, i: usize) -> T {
        let n = self.len;
        assert!(i < n, "remove at {i} of {n}");
        // SAFETY: `i < n <= N`: slot `i` is initialized and is read out (moved) once; the
        // initialized `i + 1..n` move down over it, leaving `..n - 1` initialized, which the
        // new `len` records (slot `n - 1`'s old bits are now a stale duplicate, outside `len`).
        unsafe {
            let p = self.ptr(i);
            let v = p.read();
            core::ptr::copy(p.add(1), p, n - i - 1);
            self.len = n - 1;
            v
        }
    }

    /// Moves values `at..` to the end of `dst` (in order). Panics if `at > len()` or `dst`
    /// lacks room.
    pub(crate) fn move_tail_to(&mut self, at: usize, dst: &mut Self) {
        let (n, m) = (self.len, dst.len);
        assert!(at <= n && m + (n - at) <= N, "move {at}..{n} after {m}");
        // SAFETY: `self`'s slots `at..n` are initialized and `dst`'s `m..m + n - at` are in
        // bounds and uninitialized; the two vectors are distinct (`&mut` both), so the ranges
        // do not overlap. The values are moved bit for bit: `self.len = at` forgets them here
        // and `dst.len` takes them there, so each is dropped once.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr(at), dst.ptr(m), n - at);
        }
        self.len = at;
        dst.len = m + (n - at);
    }

    /// A second vector holding the same values, bit for bit (not cloned): both then claim
    /// them, so the pair must be resolved before either could drop or move out a value.
    ///
    /// # Safety
    ///
    /// Afterwards, at most one of the two may ever drop its values or move them out; the
    /// other must be read only (by value it holds nothing) and emptied with
    /// [`forget_all`](Self::forget_all) before it is dropped. A copy-on-write map uses this to
    /// give a new version of a node the values of the version readers may still be reading.
    pub(crate) unsafe fn bitwise_copy(&self) -> Self {
        let mut copy = InlineVec::new();
        // SAFETY: slots `..len` of `self` are initialized and `copy`'s are in bounds and
        // distinct; copying bits is a read of `self`, which `&self` allows. Who owns the
        // values afterwards is the caller's contract.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr(0), copy.ptr(0), self.len);
        }
        copy.len = self.len;
        copy
    }

    /// Empties the vector without dropping its values (leaking them, unless another vector
    /// owns their bits: see [`bitwise_copy`](Self::bitwise_copy)).
    pub(crate) fn forget_all(&mut self) {
        self.len = 0;
    }

    /// Removes every value; returns them in order.
    pub(crate) fn take_all(&mut self) -> Vec<T> {
        let n = self.len;
        let mut out = Vec::with_capacity(n);
        self.len = 0;
        // SAFETY: slots `..n` were initialized and are now outside `len`, so this vector no
        // longer owns them; they move into `out`'s `n` reserved slots (distinct allocations),
        // which `set_len` then claims.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr(0), out.as_mut_ptr(), n);
            out.set_len(n);
        }
        out
    }
}

impl<T, const N: usize> Drop for InlineVec<T, N> {
    fn drop(&mut self) {
        let n = self.len;
        self.len = 0;
        // SAFETY: slots `..n` are initialized and owned; each is dropped once (`len` is zero
        // first, so a panicking destructor leaks the rest rather than dropping any twice).
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(self.ptr(0), n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// Values whose drops are counted (through the `Rc`'s strong count).
    fn counted(n: usize) -> (Rc<()>, Vec<Rc<()>>) {
        let c = Rc::new(());
        let v = (0..n).map(|_| Rc::clone(&c)).collect();
        (c, v)
    }

    #[test]
    fn matches_a_vec_and_drops_each_value_once() {
        let (c, vals) = counted(40);
        let mut v: InlineVec<(u32, Rc<()>), 8> = InlineVec::new();
        let mut model: Vec<u32> = Vec::new();
        let mut x = 7u32;
        for (k, r) in vals.into_iter().enumerate() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if v.len() == 8 || (x >> 16).is_multiple_of(3) && v.len() > 0 {
                let i = (x >> 8) as usize % v.len();
                assert_eq!(v.remove(i).0, model.remove(i));
            }
            let i = (x >> 20) as usize % (v.len() + 1);
            v.insert(i, (k as u32, r));
            model.insert(i, k as u32);
            assert_eq!(v.as_slice().iter().map(|e| e.0).collect::<Vec<_>>(), model);
        }
        *v.get_mut(0) = (99, Rc::clone(&c));
        model[0] = 99;
        assert_eq!(v.get(0).0, 99);
        assert_eq!(Rc::strong_count(&c), 1 + v.len());
        drop(v);
        assert_eq!(Rc::strong_count(&c), 1);
    }

    #[test]
    fn tails_move_and_everything_can_be_taken() {
        let (c, vals) = counted(6);
        let mut a: InlineVec<Rc<()>, 8> = InlineVec::new();
        let mut b: InlineVec<Rc<()>, 8> = InlineVec::new();
        for (i, r) in vals.into_iter().enumerate() {
            a.insert(i, r);
        }
        b.insert(0, Rc::clone(&c));
        a.move_tail_to(4, &mut b);
        assert_eq!((a.len(), b.len()), (4, 3));
        a.move_tail_to(4, &mut b);
        assert_eq!((a.len(), b.len()), (4, 3));
        let all = a.take_all();
        assert_eq!((all.len(), a.len()), (4, 0));
        assert_eq!(Rc::strong_count(&c), 8);
        drop((all, a, b));
        assert_eq!(Rc::strong_count(&c), 1);
    }

    #[test]
    fn values_lent_through_pointers_survive_shared_reads() {
        // A mutable iterator's pattern: `&mut` values from `ptr` while the vector (and the
        // struct around it) is read through shared references.
        struct Node {
            next: u32,
            vals: InlineVec<u64, 4>,
        }
        let mut node = Node {
            next: 5,
            vals: InlineVec::new(),
        };
        for i in 0..4 {
            node.vals.insert(i, i as u64);
        }
        let shared: &Node = &node;
        let p0 = shared.vals.ptr(0);
        // SAFETY: `node` is not otherwise used while these live, each slot is lent once,
        // and no other reference reads slots 0 or 2.
        let (a, b) = unsafe { (&mut *p0, &mut *shared.vals.ptr(2)) };
        *a += 10;
        assert_eq!(shared.next + shared.vals.len() as u32, 9);
        *b += 20;
        *a += 1;
        assert_eq!(node.vals.as_slice(), &[11, 1, 22, 3]);
    }

    #[test]
    fn bitwise_copies_share_values_until_one_is_forgotten() {
        let (probe, vals) = counted(5);
        let mut v: InlineVec<Rc<()>, 8> = InlineVec::new();
        for (i, x) in vals.into_iter().enumerate() {
            v.insert(i, x);
        }
        // SAFETY: `v` is only read from here on and forgets its values before it drops.
        let mut copy = unsafe { v.bitwise_copy() };
        assert_eq!(Rc::strong_count(&probe), 6, "no clone was made");
        let taken = copy.remove(0);
        copy.insert(4, taken);
        v.forget_all();
        drop(v);
        assert_eq!(Rc::strong_count(&probe), 6, "forgetting drops nothing");
        drop(copy);
        assert_eq!(
            Rc::strong_count(&probe),
            1,
            "the copy dropped each value once"
        );
    }

    #[test]
    #[should_panic(expected = "insert at 3")]
    fn inserting_past_the_end_panics() {
        let mut v: InlineVec<u8, 4> = InlineVec::new();
        v.insert(3, 1);
    }
}
