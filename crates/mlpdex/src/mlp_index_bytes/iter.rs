//! Iteration: a range is two positions in the leaf list, walked towards each other.

use core::fmt;
use core::iter::FusedIterator;

use super::raw::{Pos, RawMap};

/// Entries of a key range in key order, from both ends; made by
/// [`MlpIndexBytes::range`](super::MlpIndexBytes::range) and
/// [`iter`](super::MlpIndexBytes::iter).
pub struct Range<'a, V> {
    pub(super) map: &'a RawMap<V>,
    /// The next entry from the front, as a gap position (entry `front.i` of its leaf, or past it).
    pub(super) front: Pos,
    /// The gap after the next entry from the back.
    pub(super) back: Pos,
}

impl<'a, V> Range<'a, V> {
    pub(super) fn new(map: &'a RawMap<V>, front: Pos, back: Pos) -> Self {
        Range { map, front, back }
    }

    /// Whether the ends met: nothing is left between them (neither end moves afterwards).
    #[inline(always)]
    fn met(&self) -> bool {
        self.front.leaf == self.back.leaf && self.front.i >= self.back.i
    }

    pub(super) fn empty(map: &'a RawMap<V>) -> Self {
        let p = map.start();
        Range {
            map,
            front: p,
            back: p,
        }
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.met() {
                return None;
            }
            if self.front.leaf == self.back.leaf {
                break;
            }
            let l = self.map.leaf(self.front.leaf);
            if self.front.i < l.len() {
                // A leaf ahead: its header when entering this leaf, what the scan reads of
                // its entries halfway through (by then the header has arrived).
                if l.next != super::raw::NONE {
                    if self.front.i == 0 {
                        self.map.leaf(l.next).prefetch_header();
                    } else if self.front.i == l.len() / 2 {
                        self.map.leaf(l.next).prefetch_scan();
                    }
                }
                break;
            }
            self.front = Pos { leaf: l.next, i: 0 };
        }
        let item = self.map.entry(self.front);
        self.front.i += 1;
        Some(item)
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if self.met() {
                return None;
            }
            if self.front.leaf == self.back.leaf {
                break;
            }
            if self.back.i > 0 {
                break;
            }
            let prev = self.map.leaf(self.back.leaf).prev;
            self.back = Pos {
                leaf: prev,
                i: self.map.leaf(prev).len(),
            };
        }
        self.back.i -= 1;
        Some(self.map.entry(self.back))
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
