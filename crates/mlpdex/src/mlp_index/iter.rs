//! The map's iterators: borrowed ranges (by value, as bytes, keys, values), in-place values,
//! and owned ones.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;
use core::ops::Bound;

use super::raw::trie::Cursor;
use super::{Inner, MlpIndex, key_span, with_raw};

/// Where a walk over `lo..=hi` stands: keys not yet yielded from either end lie in
/// `lo..=hi` (when not `done`); each end keeps its own cursor, made at its first step.
#[derive(Clone)]
struct Walk {
    front: Option<Cursor>,
    back: Option<Cursor>,
    lo: u64,
    hi: u64,
    done: bool,
}

impl Walk {
    fn new(start: Bound<u64>, end: Bound<u64>) -> Walk {
        let (lo, hi, done) = match key_span(start, end) {
            Some((lo, hi)) => (lo, hi, false),
            None => (0, 0, true),
        };
        Walk {
            front: None,
            back: None,
            lo,
            hi,
            done,
        }
    }

    fn next<'a>(&mut self, map: &'a MlpIndex) -> Option<(u64, &'a u64)> {
        if self.done {
            return None;
        }
        let lo = self.lo;
        let next = with_raw!(&map.raw, r => {
            let c = self.front.get_or_insert_with(|| Cursor::seek(r, lo, false));
            c.step(r).map(|(k, l)| (k, r.value(l)))
        }, empty => None);
        let Some((k, v)) = next.filter(|&(k, _)| k <= self.hi) else {
            self.done = true;
            return None;
        };
        if k == self.hi {
            self.done = true;
        } else {
            self.lo = k + 1;
        }
        Some((k, v))
    }

    fn next_back<'a>(&mut self, map: &'a MlpIndex) -> Option<(u64, &'a u64)> {
        if self.done {
            return None;
        }
        let hi = self.hi;
        let next = with_raw!(&map.raw, r => {
            let c = self.back.get_or_insert_with(|| Cursor::seek(r, hi, true));
            c.step(r).map(|(k, l)| (k, r.value(l)))
        }, empty => None);
        let Some((k, v)) = next.filter(|&(k, _)| k >= self.lo) else {
            self.done = true;
            return None;
        };
        if k == self.lo {
            self.done = true;
        } else {
            self.hi = k - 1;
        }
        Some((k, v))
    }

    /// At most `len` keys remain; none when done.
    fn size_hint(&self, len: usize) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            let span = (self.hi - self.lo).saturating_add(1);
            (
                0,
                Some(len.min(usize::try_from(span).unwrap_or(usize::MAX))),
            )
        }
    }
}

impl fmt::Debug for Walk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Walk")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .field("done", &self.done)
            .finish()
    }
}

/// Iterator over a key range of an [`MlpIndex`] (or all of it), from both ends, yielding
/// `(key, value)` by value; made by [`MlpIndex::range`] and [`MlpIndex::iter`].
#[derive(Clone, Debug)]
pub struct Range<'a> {
    map: &'a MlpIndex,
    walk: Walk,
}

impl<'a> Range<'a> {
    pub(super) fn new(map: &'a MlpIndex, start: Bound<u64>, end: Bound<u64>) -> Range<'a> {
        Range {
            map,
            walk: Walk::new(start, end),
        }
    }
}

impl Iterator for Range<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        self.walk.next(self.map).map(|(k, v)| (k, *v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.walk.size_hint(self.map.len())
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<(u64, u64)> {
        self.walk.next_back(self.map).map(|(k, v)| (k, *v))
    }
}

impl FusedIterator for Range<'_> {}

/// Iterator over a key range of an [`MlpIndex`] with keys as big-endian bytes and values
/// borrowed in place: the [`OrderedMap`](crate::OrderedMap) view of the map.
#[derive(Clone, Debug)]
pub struct RangeBytes<'a> {
    map: &'a MlpIndex,
    walk: Walk,
}

impl<'a> RangeBytes<'a> {
    pub(super) fn new(map: &'a MlpIndex, start: Bound<u64>, end: Bound<u64>) -> RangeBytes<'a> {
        RangeBytes {
            map,
            walk: Walk::new(start, end),
        }
    }
}

impl<'a> Iterator for RangeBytes<'a> {
    type Item = ([u8; 8], &'a u64);

    fn next(&mut self) -> Option<([u8; 8], &'a u64)> {
        self.walk.next(self.map).map(|(k, v)| (k.to_be_bytes(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.walk.size_hint(self.map.len())
    }
}

impl<'a> DoubleEndedIterator for RangeBytes<'a> {
    fn next_back(&mut self) -> Option<([u8; 8], &'a u64)> {
        self.walk
            .next_back(self.map)
            .map(|(k, v)| (k.to_be_bytes(), v))
    }
}

impl FusedIterator for RangeBytes<'_> {}

/// The entries of an [`MlpIndex`] in order, from both ends, consuming it; made by
/// `into_iter()`.
#[derive(Debug)]
pub struct IntoIter {
    map: MlpIndex,
    walk: Walk,
}

impl IntoIter {
    pub(super) fn new(map: MlpIndex) -> IntoIter {
        IntoIter {
            map,
            walk: Walk::new(Bound::Unbounded, Bound::Unbounded),
        }
    }
}

impl Iterator for IntoIter {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        self.walk.next(&self.map).map(|(k, v)| (k, *v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.walk.size_hint(self.map.len())
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<(u64, u64)> {
        self.walk.next_back(&self.map).map(|(k, v)| (k, *v))
    }
}

impl FusedIterator for IntoIter {}

/// Defines a projection of a pair iterator: its keys or its values, from both ends.
macro_rules! project {
    ($(#[$m:meta])* $name:ident $(<$lt:lifetime>)?, $inner:ty, $item:ty, |$k:pat_param, $v:pat_param| $e:expr) => {
        $(#[$m])*
        #[derive(Debug)]
        pub struct $name $(<$lt>)? (pub(super) $inner);

        impl $(<$lt>)? Iterator for $name $(<$lt>)? {
            type Item = $item;

            fn next(&mut self) -> Option<$item> {
                self.0.next().map(|($k, $v)| $e)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
        }

        impl $(<$lt>)? DoubleEndedIterator for $name $(<$lt>)? {
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|($k, $v)| $e)
            }
        }

        impl $(<$lt>)? FusedIterator for $name $(<$lt>)? {}
    };
}

project!(
    /// The keys of an [`MlpIndex`] in order, from both ends; made by [`MlpIndex::keys`].
    Keys<'a>, Range<'a>, u64, |k, _v| k
);
project!(
    /// The values of an [`MlpIndex`] in key order, from both ends; made by
    /// [`MlpIndex::values`].
    Values<'a>, Range<'a>, u64, |_k, v| v
);
project!(
    /// The keys of an [`MlpIndex`] in order, consuming it; made by [`MlpIndex::into_keys`].
    IntoKeys, IntoIter, u64, |k, _v| k
);
project!(
    /// The values of an [`MlpIndex`] in key order, consuming it; made by
    /// [`MlpIndex::into_values`].
    IntoValues, IntoIter, u64, |_k, v| v
);
project!(
    /// The values of an [`MlpIndex`] in key order, borrowed for changing; made by
    /// [`MlpIndex::values_mut`].
    ValuesMut<'a>, IterMut<'a>, &'a mut u64, |_k, v| v
);

/// The entries of an [`MlpIndex`] in order, from both ends, each value borrowed for changing
/// in place; made by [`MlpIndex::iter_mut`].
pub struct IterMut<'a> {
    /// Each key and the address of its value, in key order.
    items: std::vec::IntoIter<(u64, *mut u64)>,
    /// The map, borrowed exclusively for as long as any value is.
    _map: PhantomData<&'a mut MlpIndex>,
}

// SAFETY: an `IterMut` is a set of `&'a mut u64` into a map it borrows exclusively, and
// `&mut u64` is `Send` and `Sync`; the raw pointers only stand in for those references.
unsafe impl Send for IterMut<'_> {}
// SAFETY: as for `Send`: `&IterMut` gives no access to the values at all.
unsafe impl Sync for IterMut<'_> {}

impl IterMut<'_> {
    /// `items` must be the addresses of distinct values of a map borrowed exclusively for
    /// the iterator's lifetime, computed without borrowing them (`Store::value_ptr`).
    pub(super) fn new<'a>(items: Vec<(u64, *mut u64)>) -> IterMut<'a> {
        IterMut {
            items: items.into_iter(),
            _map: PhantomData,
        }
    }
}

impl<'a> Iterator for IterMut<'a> {
    type Item = (u64, &'a mut u64);

    fn next(&mut self) -> Option<(u64, &'a mut u64)> {
        let (k, p) = self.items.next()?;
        // SAFETY: `p` is the address of a live value of the map `'a` borrows exclusively
        // (nothing else reads or writes the table while `self` borrows it); each address is
        // yielded once and addresses are distinct, so no two `&mut` alias; it is aligned
        // and initialised (a slot's first word).
        Some((k, unsafe { &mut *p }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl<'a> DoubleEndedIterator for IterMut<'a> {
    fn next_back(&mut self) -> Option<(u64, &'a mut u64)> {
        let (k, p) = self.items.next_back()?;
        // SAFETY: as in `next`.
        Some((k, unsafe { &mut *p }))
    }
}

impl ExactSizeIterator for IterMut<'_> {}
impl FusedIterator for IterMut<'_> {}

impl fmt::Debug for IterMut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IterMut")
            .field("remaining", &self.items.len())
            .finish()
    }
}
