//! [`Range`]: the concurrent map's iterator, a leaf version at a time from either end.

use core::fmt;
use core::ops::Bound;

use super::{ConcurrentMlpIndexBytes, Found, found, hold};
use crate::KeyRange;
use crate::epoch::Guard;
use crate::key::{after_start, before_end};
use crate::mlp_index_bytes::raw::Leaf;

/// One end of a [`Range`].
struct End<'g, V> {
    /// The leaf version being read and a position in it: the next entry to yield from the
    /// front; from the back, the entry after the next one to yield.
    at: Option<(&'g Leaf<V>, usize)>,
    /// The last key yielded from this end.
    last: Option<&'g [u8]>,
    done: bool,
}

impl<V> End<'_, V> {
    fn new(done: bool) -> Self {
        End {
            at: None,
            last: None,
            done,
        }
    }
}

/// An iterator over a range of a [`ConcurrentMlpIndexBytes`], from both ends; see
/// [`ConcurrentMlpIndexBytes::range`] and the contract in the [module docs](super). Each end
/// reads one leaf version at a time: its entries need no section; moving to the next leaf
/// takes one.
pub struct Range<'g, V, R> {
    map: &'g ConcurrentMlpIndexBytes<V>,
    guard: &'g Guard,
    range: R,
    front: End<'g, V>,
    back: End<'g, V>,
}

impl<V, R> fmt::Debug for Range<'_, V, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("front_last", &self.front.last.map(crate::key::Escaped))
            .field("back_last", &self.back.last.map(crate::key::Escaped))
            .finish_non_exhaustive()
    }
}

impl<'g, V, R: KeyRange> Range<'g, V, R> {
    pub(super) fn new(
        map: &'g ConcurrentMlpIndexBytes<V>,
        range: R,
        guard: &'g Guard,
        done: bool,
    ) -> Self {
        Range {
            map,
            guard,
            range,
            front: End::new(done),
            back: End::new(done),
        }
    }

    /// Ties a position found in a section to the guard.
    fn hold(&self, at: Found<V>) -> (&'g Leaf<V>, usize) {
        // SAFETY: the range's guard was pinned before the range was made, so before every
        // section it runs.
        unsafe { hold(at, self.guard) }
    }

    /// The front's next entry: in the version it reads, or, past its end, the first entry
    /// from where that version ended.
    fn front_entry(&mut self) -> Option<(&'g Leaf<V>, usize)> {
        let (s, _) = self.range.key_bounds();
        // Where the front goes on from when it has no version to follow: after the last key
        // it yielded, or at the range's start.
        let from = match self.front.last {
            Some(k) => Bound::Excluded(k),
            None => s,
        };
        let at = match self.front.at {
            Some((l, i)) if i < l.len() => return Some((l, i)),
            Some((l, _)) => self.map.section(self.guard, |raw| {
                // Past the last leaf's version, what was appended since.
                let (n, j) = raw
                    .after_version(l)
                    .unwrap_or_else(|| raw.seek_bound(from, true));
                raw.forward_version(n, j).map(found)
            }),
            None => self.map.section(self.guard, |raw| {
                let (l, i) = raw.seek_bound(from, true);
                raw.forward_version(l, i).map(found)
            }),
        };
        at.map(|a| self.hold(a))
    }

    /// The back's next entry (see [`front_entry`](Self::front_entry)).
    fn back_entry(&mut self) -> Option<(&'g Leaf<V>, usize)> {
        let (_, e) = self.range.key_bounds();
        let from = match self.back.last {
            Some(k) => Bound::Excluded(k),
            None => e,
        };
        let at = match self.back.at {
            Some((l, i)) if i > 0 => return Some((l, i - 1)),
            Some((l, _)) => self.map.section(self.guard, |raw| {
                // Before the first leaf's version, what was put in front of it since.
                let (p, j) = raw
                    .before_version(l)
                    .unwrap_or_else(|| raw.seek_bound(from, false));
                raw.back_version(p, j).map(found)
            }),
            None => self.map.section(self.guard, |raw| {
                let (l, i) = raw.seek_bound(from, false);
                raw.back_version(l, i).map(found)
            }),
        };
        at.map(|a| self.hold(a))
    }
}

impl<'g, V, R: KeyRange> Iterator for Range<'g, V, R> {
    type Item = (&'g [u8], &'g V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.front.done {
            return None;
        }
        let Some((l, i)) = self.front_entry() else {
            self.front.done = true;
            return None;
        };
        let key = l.key(i);
        let (_, e) = self.range.key_bounds();
        if !before_end(key, e) || self.back.last.is_some_and(|b| key >= b) {
            self.front.done = true;
            return None;
        }
        self.front.at = Some((l, i + 1));
        self.front.last = Some(key);
        Some((key, l.val(i)))
    }
}

impl<V, R: KeyRange> DoubleEndedIterator for Range<'_, V, R> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.back.done {
            return None;
        }
        let Some((l, i)) = self.back_entry() else {
            self.back.done = true;
            return None;
        };
        let key = l.key(i);
        let (s, _) = self.range.key_bounds();
        if !after_start(key, s) || self.front.last.is_some_and(|f| key <= f) {
            self.back.done = true;
            return None;
        }
        self.back.at = Some((l, i));
        self.back.last = Some(key);
        Some((key, l.val(i)))
    }
}

impl<V, R: KeyRange> core::iter::FusedIterator for Range<'_, V, R> {}
