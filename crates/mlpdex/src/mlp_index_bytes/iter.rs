//! Iteration: a range is two positions in the leaf list, walked towards each other; mutable
//! and owning iterators, and the `IntoIterator` impls.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;
use core::ptr::NonNull;

use super::MlpIndexBytes;
use super::raw::{HEAD, Leaf, NONE, Pos, RawMap};
use crate::KeyRange;

/// The walk shared by the iterators: two positions in the leaf list moving towards each other.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
    /// The next entry from the front, as a gap position (entry `front.i` of its leaf, or past it).
    front: Pos,
    /// The gap after the next entry from the back.
    back: Pos,
}

impl Cursor {
    pub(super) fn new(front: Pos, back: Pos) -> Self {
        Cursor { front, back }
    }

    pub(super) fn empty<V>(map: &RawMap<V>) -> Self {
        Cursor::new(map.start(), map.start())
    }

    /// Whether the ends met: nothing is left between them (neither end moves afterwards).
    #[inline(always)]
    fn met(&self) -> bool {
        self.front.leaf == self.back.leaf && self.front.i >= self.back.i
    }

    /// The next entry from the front.
    #[inline]
    fn next<V>(&mut self, map: &RawMap<V>) -> Option<Pos> {
        loop {
            if self.met() {
                return None;
            }
            if self.front.leaf == self.back.leaf {
                break;
            }
            let l = map.leaf(self.front.leaf);
            if self.front.i < l.len() {
                // A leaf ahead: its header when entering this leaf, what the scan reads of
                // its entries halfway through (by then the header has arrived).
                if l.next != NONE {
                    if self.front.i == 0 {
                        map.leaf(l.next).prefetch_header();
                    } else if self.front.i == l.len() / 2 {
                        map.leaf(l.next).prefetch_scan();
                    }
                }
                break;
            }
            self.front = Pos { leaf: l.next, i: 0 };
        }
        let p = self.front;
        self.front.i += 1;
        Some(p)
    }

    /// The next entry from the back.
    #[inline]
    fn next_back<V>(&mut self, map: &RawMap<V>) -> Option<Pos> {
        loop {
            if self.met() {
                return None;
            }
            if self.front.leaf == self.back.leaf || self.back.i > 0 {
                break;
            }
            let prev = map.leaf(self.back.leaf).prev;
            self.back = Pos {
                leaf: prev,
                i: map.leaf(prev).len(),
            };
        }
        self.back.i -= 1;
        Some(self.back)
    }
}

/// Entries of a key range in key order, from both ends; made by
/// [`MlpIndexBytes::range`](super::MlpIndexBytes::range) and
/// [`iter`](super::MlpIndexBytes::iter).
pub struct Range<'a, V> {
    map: &'a RawMap<V>,
    at: Cursor,
}

impl<'a, V> Range<'a, V> {
    pub(super) fn new(map: &'a RawMap<V>, at: Cursor) -> Self {
        Range { map, at }
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.at.next(self.map).map(|p| self.map.entry(p))
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.at.next_back(self.map).map(|p| self.map.entry(p))
    }
}

impl<V> FusedIterator for Range<'_, V> {}

impl<V> Clone for Range<'_, V> {
    fn clone(&self) -> Self {
        Range { ..*self }
    }
}

impl<V: fmt::Debug> fmt::Debug for Range<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.clone().map(|(k, v)| (crate::key::Escaped(k), v)))
            .finish()
    }
}

impl<V> MlpIndexBytes<V> {
    /// Every entry in key order, values mutable (and backwards with `.rev()`).
    pub fn iter_mut(&mut self) -> IterMut<'_, V> {
        let at = Cursor::new(self.raw.start(), self.raw.end());
        IterMut::new(&mut self.raw, at)
    }

    /// Entries whose keys lie in `range`, in key order, values mutable; empty for an empty or
    /// inverted range.
    pub fn range_mut<R: KeyRange>(&mut self, range: R) -> IterMut<'_, V> {
        let at = self.cursor(range);
        IterMut::new(&mut self.raw, at)
    }

    /// The values in key order, mutable.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + '_ {
        self.iter_mut().map(|(_, v)| v)
    }

    /// The keys in order, owned (the map is consumed).
    pub fn into_keys(self) -> impl DoubleEndedIterator<Item = Vec<u8>> + ExactSizeIterator {
        self.into_iter().map(|(k, _)| k)
    }

    /// The values in key order (the map is consumed).
    pub fn into_values(self) -> impl DoubleEndedIterator<Item = V> + ExactSizeIterator {
        self.into_iter().map(|(_, v)| v)
    }
}

/// Entries of a key range in key order, from both ends, values mutable; made by
/// [`MlpIndexBytes::range_mut`] and [`iter_mut`](MlpIndexBytes::iter_mut).
///
/// ```
/// use mlpdex::mlp_index_bytes::MlpIndexBytes;
///
/// let mut m: MlpIndexBytes<u32> = [("a/1", 1), ("a/2", 2), ("b/1", 3)].into_iter().collect();
/// for (_, v) in m.range_mut(&b"a/"[..]..&b"b"[..]) {
///     *v *= 10;
/// }
/// assert_eq!(m.values().copied().collect::<Vec<_>>(), [10, 20, 3]);
/// ```
pub struct IterMut<'a, V> {
    /// The map, borrowed mutably for `'a` (see [`PhantomData`] below). Kept as a pointer
    /// because the iterator hands out `&'a mut` values while it still reads the leaf list.
    map: NonNull<RawMap<V>>,
    at: Cursor,
    _map: PhantomData<&'a mut RawMap<V>>,
}

// SAFETY: an `IterMut` is a `&mut RawMap<V>` in all but name (it is made from one and reaches
// the map only through it), and `&mut T` is `Send` when `T` is and `Sync` when `T` is.
unsafe impl<V: Send> Send for IterMut<'_, V> {}
// SAFETY: as above.
unsafe impl<V: Sync> Sync for IterMut<'_, V> {}

impl<'a, V> IterMut<'a, V> {
    fn new(map: &'a mut RawMap<V>, at: Cursor) -> Self {
        IterMut {
            map: NonNull::from(map),
            at,
            _map: PhantomData,
        }
    }

    /// The entry at `p`, which the cursor just handed out (so no other call returns it).
    fn entry(&mut self, p: Pos) -> (&'a [u8], &'a mut V) {
        // SAFETY: the map is borrowed mutably for 'a by this iterator, and nothing else writes
        // it meanwhile; this shared borrow lasts for the call. The leaf list does not change
        // while the map is borrowed, so the key (in the leaf's key arena, a heap block no value
        // reference covers) stays put for 'a.
        let map = unsafe { self.map.as_ref() };
        let key = map.leaf(p.leaf).key(p.i);
        // SAFETY: the pointer is to value `p.i` of leaf `p.leaf`, in bounds (the cursor stays
        // within the leaf's length), and writable: it comes from the map's `&mut` (through
        // `NonNull::from`) and the values are interior-mutable, so the shared borrows this
        // iterator makes of leaves (here and in the cursor) assert nothing about them. The
        // cursor hands each position out once (its two ends walk towards each other and stop
        // where they meet), and nothing else reads values while the map is borrowed mutably,
        // so this `&'a mut` is the only reference to that value.
        let val = unsafe { &mut *map.val_ptr(p) };
        (key, val)
    }
}

impl<'a, V> Iterator for IterMut<'a, V> {
    type Item = (&'a [u8], &'a mut V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: a shared borrow for this call only, while no `&mut` into the map's or its
        // leaves' fields is alive (see `entry`).
        let p = self.at.next(unsafe { self.map.as_ref() })?;
        Some(self.entry(p))
    }
}

impl<V> DoubleEndedIterator for IterMut<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        // SAFETY: as in `next`.
        let p = self.at.next_back(unsafe { self.map.as_ref() })?;
        Some(self.entry(p))
    }
}

impl<V> FusedIterator for IterMut<'_, V> {}

impl<V: fmt::Debug> fmt::Debug for IterMut<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: a shared borrow for this call only (see `next`).
        let map = unsafe { self.map.as_ref() };
        let mut at = self.at;
        let mut list = f.debug_list();
        while let Some(p) = at.next(map) {
            let l = map.leaf(p.leaf);
            // SAFETY: value `p.i` of the leaf is in bounds (the cursor stays within the leaf's
            // length) and still to come, so no `&mut` to it was handed out; the pointer borrows
            // no value (a slice of all the leaf's values would overlap those handed out).
            let v = unsafe { &*l.val_ptr(p.i) };
            list.entry(&(crate::key::Escaped(l.key(p.i)), v));
        }
        list.finish()
    }
}

/// The entries in key order, owned, from both ends; made by the map's `into_iter`.
///
/// ```
/// use mlpdex::mlp_index_bytes::MlpIndexBytes;
///
/// let m: MlpIndexBytes<u32> = [("b", 2), ("a", 1), ("c", 3)].into_iter().collect();
/// let mut it = m.into_iter();
/// assert_eq!(it.next_back(), Some((b"c".to_vec(), 3)));
/// assert_eq!(it.len(), 2);
/// assert_eq!(it.next(), Some((b"a".to_vec(), 1)));
/// ```
pub struct IntoIter<V> {
    leaves: Vec<Option<Box<Leaf<V>>>>,
    /// The next leaf the front takes and the next the back takes ([`NONE`]: past the end).
    /// A leaf taken by one end is `None` in `leaves`, which tells the other end to finish
    /// with that end's buffer.
    ahead: u32,
    behind: u32,
    front: std::vec::IntoIter<(Vec<u8>, V)>,
    back: std::vec::IntoIter<(Vec<u8>, V)>,
    left: usize,
}

impl<V> IntoIter<V> {
    /// Takes leaf `x` out of the list, if no end has taken it.
    fn take(&mut self, x: u32) -> Option<Box<Leaf<V>>> {
        if x == NONE {
            return None;
        }
        self.leaves[x as usize].take()
    }
}

impl<V> Iterator for IntoIter<V> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.front.next() {
                self.left -= 1;
                return Some(e);
            }
            match self.take(self.ahead) {
                Some(l) => {
                    self.ahead = l.next;
                    self.front = l.into_entries();
                }
                None => {
                    // The back end holds what is left.
                    let e = self.back.next();
                    self.left -= usize::from(e.is_some());
                    return e;
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<V> DoubleEndedIterator for IntoIter<V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.back.next_back() {
                self.left -= 1;
                return Some(e);
            }
            match self.take(self.behind) {
                Some(l) => {
                    self.behind = l.prev;
                    self.back = l.into_entries();
                }
                None => {
                    let e = self.front.next_back();
                    self.left -= usize::from(e.is_some());
                    return e;
                }
            }
        }
    }
}

impl<V> ExactSizeIterator for IntoIter<V> {}
impl<V> FusedIterator for IntoIter<V> {}

impl<V: fmt::Debug> fmt::Debug for IntoIter<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter")
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl<V> IntoIterator for MlpIndexBytes<V> {
    type Item = (Vec<u8>, V);
    type IntoIter = IntoIter<V>;
    fn into_iter(self) -> IntoIter<V> {
        let left = self.len();
        let (leaves, tail) = self.raw.into_leaves();
        IntoIter {
            leaves,
            ahead: HEAD,
            behind: tail,
            front: Vec::new().into_iter(),
            back: Vec::new().into_iter(),
            left,
        }
    }
}

impl<'a, V> IntoIterator for &'a MlpIndexBytes<V> {
    type Item = (&'a [u8], &'a V);
    type IntoIter = Range<'a, V>;
    fn into_iter(self) -> Range<'a, V> {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &'a mut MlpIndexBytes<V> {
    type Item = (&'a [u8], &'a mut V);
    type IntoIter = IterMut<'a, V>;
    fn into_iter(self) -> IterMut<'a, V> {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::MlpIndexBytes;

    /// A few leaves' worth of keys (small enough for miri).
    fn map() -> MlpIndexBytes<u64> {
        let mut m = MlpIndexBytes::new();
        for i in 0..200u64 {
            let k = format!("/srv/{}/item{:03}", i % 7, i);
            m.insert(k.as_bytes(), i).unwrap();
        }
        m
    }

    #[test]
    fn mutable_values_are_disjoint_while_all_are_held() {
        let mut m = map();
        // Every entry borrowed at once, from both ends, then every value written and every key
        // read: each `&mut` is the only one to its value (miri checks the borrows).
        let mut it = m.iter_mut();
        let mut front = Vec::new();
        let mut back = Vec::new();
        for _ in 0..10 {
            front.extend(it.next());
            back.extend(it.next_back());
        }
        // The entries still to come, printed while those handed out are held.
        let rest = format!("{it:?}");
        assert_eq!(rest.matches("/srv/").count(), 180);
        while let Some(e) = it.next() {
            front.push(e);
            back.extend(it.next_back());
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front.len(), 200);
        assert!(front.windows(2).all(|w| w[0].0 < w[1].0));
        for (k, v) in front {
            *v += 1_000 + k.len() as u64;
        }
        assert!(m.values().all(|&v| v >= 1_000));
        let mut zeroed = 0;
        for (k, v) in m.range_mut(&b"/srv/3"[..]..&b"/srv/5"[..]) {
            assert!(k.starts_with(b"/srv/3/") || k.starts_with(b"/srv/4/"));
            *v = 0;
            zeroed += 1;
        }
        assert_eq!(
            zeroed,
            (0..200).filter(|i| i % 7 == 3 || i % 7 == 4).count()
        );
        assert_eq!(m.values().filter(|&&v| v == 0).count(), zeroed);
        m.check_invariants().unwrap();
    }

    #[test]
    fn owning_iteration_meets_in_the_middle() {
        let m = map();
        let want: Vec<(Vec<u8>, u64)> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        let mut it = m.into_iter();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while let Some(e) = it.next() {
            front.push(e);
            if let Some(e) = it.next_back() {
                back.push(e);
            }
            if let Some(e) = it.next_back() {
                back.push(e);
            }
        }
        assert_eq!(it.len(), 0);
        back.reverse();
        front.extend(back);
        assert_eq!(front, want);
    }
}
