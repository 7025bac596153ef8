//! Walking a range of a [`ConcurrentHybrid`] from both ends: the dynamic stage laid over the
//! frozen one ([`Layered`]), and both over the static stage ([`Overlay`]).

use core::cmp::Ordering;
use core::fmt;
use core::ops::Bound;
use std::rc::Rc;

#[cfg(doc)]
use super::ConcurrentHybrid;
use super::stages::Stages;
use crate::api::{Entries, RangeCursor};
use crate::cuckoo_trie::concurrent::Range as TrieRange;
use crate::epoch::Guard;
use crate::hybrid::cursor::Overlay;
use crate::hybrid::{Slot, StaticStage};
use crate::key::{KeyRange, is_empty_range};

/// A range's bounds, owned.
type OwnedBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The bounds of a range, owned and shared by the ranges of both dynamic stages.
#[derive(Clone)]
pub(crate) struct SharedBounds(Rc<OwnedBounds>);

impl KeyRange for SharedBounds {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (
            self.0.0.as_ref().map(Vec::as_slice),
            self.0.1.as_ref().map(Vec::as_slice),
        )
    }
}

/// A dynamic stage's entry.
type Entry<'g> = (&'g [u8], &'g Slot);

/// The dynamic stage's range laid over the frozen stage's (when there is one): an entry of
/// the dynamic stage hides the frozen entry with its key, tombstones included (they hide
/// the static stage's entry too, so they go on to the [`Overlay`]). Read from both ends with
/// one entry looked ahead at each, the ends meeting as in [`Overlay`].
pub(crate) struct Layered<'g> {
    top: TrieRange<'g, Slot, SharedBounds>,
    below: Option<TrieRange<'g, Slot, SharedBounds>>,
    top_front: Option<Entry<'g>>,
    top_back: Option<Entry<'g>>,
    below_front: Option<Entry<'g>>,
    below_back: Option<Entry<'g>>,
}

impl<'g> Layered<'g> {
    fn fill_front(&mut self) {
        if self.top_front.is_none() {
            self.top_front = self.top.next().or_else(|| self.top_back.take());
        }
        if self.below_front.is_none()
            && let Some(below) = &mut self.below
        {
            self.below_front = below.next().or_else(|| self.below_back.take());
        }
    }

    fn fill_back(&mut self) {
        if self.top_back.is_none() {
            self.top_back = self.top.next_back().or_else(|| self.top_front.take());
        }
        if self.below_back.is_none()
            && let Some(below) = &mut self.below
        {
            self.below_back = below.next_back().or_else(|| self.below_front.take());
        }
    }
}

impl<'g> Iterator for Layered<'g> {
    type Item = Entry<'g>;

    fn next(&mut self) -> Option<Entry<'g>> {
        self.fill_front();
        match (self.top_front, self.below_front) {
            (None, None) => None,
            (Some(_), None) => self.top_front.take(),
            (None, Some(_)) => self.below_front.take(),
            (Some((t, _)), Some((b, _))) => match t.cmp(b) {
                Ordering::Less => self.top_front.take(),
                Ordering::Greater => self.below_front.take(),
                Ordering::Equal => {
                    self.below_front = None;
                    self.top_front.take()
                }
            },
        }
    }
}

impl<'g> DoubleEndedIterator for Layered<'g> {
    fn next_back(&mut self) -> Option<Entry<'g>> {
        self.fill_back();
        match (self.top_back, self.below_back) {
            (None, None) => None,
            (Some(_), None) => self.top_back.take(),
            (None, Some(_)) => self.below_back.take(),
            (Some((t, _)), Some((b, _))) => match t.cmp(b) {
                Ordering::Greater => self.top_back.take(),
                Ordering::Less => self.below_back.take(),
                Ordering::Equal => {
                    self.below_back = None;
                    self.top_back.take()
                }
            },
        }
    }
}

/// A lending cursor over a range of a [`ConcurrentHybrid`], from both ends; keys borrow the
/// cursor until its next step. Made by [`ConcurrentHybrid::cursor`]; the stages it reads
/// are the ones published when it was made (see the [contract](ConcurrentHybrid#contract)).
///
/// ```
/// use mlpdex::hybrid::ConcurrentHybrid;
///
/// let h = ConcurrentHybrid::new();
/// for (i, k) in ["ant", "bee", "cat"].iter().enumerate() {
///     h.insert(k.as_bytes(), i as u64)?;
/// }
/// let guard = mlpdex::epoch::pin();
/// let mut c = h.cursor("b".., &guard);
/// assert_eq!(c.next(), Some((&b"bee"[..], 1)));
/// assert_eq!(c.next_back(), Some((&b"cat"[..], 2)));
/// assert_eq!(c.next(), None);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Cursor<'g, S: StaticStage + 'g>(Overlay<&'g [u8], &'g Slot, Layered<'g>, S::Cursor<'g>>);

impl<'g, S: StaticStage + 'g> Cursor<'g, S> {
    pub(super) fn new<R: KeyRange>(stages: &'g Stages<S>, range: R, guard: &'g Guard) -> Self {
        let (start, end) = range.key_bounds();
        let (start, end) = if is_empty_range(start, end) {
            (Bound::Excluded(&[][..]), Bound::Excluded(&[][..]))
        } else {
            (start, end)
        };
        let bounds = SharedBounds(Rc::new((
            start.map(<[u8]>::to_vec),
            end.map(<[u8]>::to_vec),
        )));
        let layered = Layered {
            top: stages.dynamic.trie.range(bounds.clone(), guard),
            below: stages
                .frozen
                .as_ref()
                .map(|f| f.trie.range(bounds.clone(), guard)),
            top_front: None,
            top_back: None,
            below_front: None,
            below_back: None,
        };
        Cursor(Overlay::new(layered, stages.stat.cursor((start, end))))
    }

    /// The next entry from the front.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(&[u8], u64)> {
        self.0.next()
    }

    /// The next entry from the back.
    pub fn next_back(&mut self) -> Option<(&[u8], u64)> {
        self.0.next_back()
    }

    /// Calls `f` on every remaining entry, front to back, without copying keys.
    pub fn for_each(&mut self, f: impl FnMut(&[u8], u64)) {
        RangeCursor::for_each(self, f);
    }

    /// The remaining keys, front to back.
    pub fn collect_keys(&mut self) -> Vec<Vec<u8>> {
        RangeCursor::collect_keys(self)
    }
}

impl<'g, S: StaticStage + 'g> RangeCursor for Cursor<'g, S> {
    fn next(&mut self) -> Option<(&[u8], u64)> {
        self.0.next()
    }

    fn next_back(&mut self) -> Option<(&[u8], u64)> {
        self.0.next_back()
    }
}

impl<'g, S: StaticStage + 'g> fmt::Debug for Cursor<'g, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor").finish_non_exhaustive()
    }
}

/// The iterator of [`ConcurrentHybrid::range`] and [`ConcurrentHybrid::iter`]: owned keys,
/// values by value, from both ends.
///
/// ```
/// use mlpdex::hybrid::ConcurrentHybrid;
///
/// let h = ConcurrentHybrid::new();
/// h.insert(b"a", 1)?;
/// h.insert(b"b", 2)?;
/// let guard = mlpdex::epoch::pin();
/// let back: Vec<u64> = h.iter(&guard).rev().map(|(_, v)| v).collect();
/// assert_eq!(back, [2, 1]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Range<'g, S: StaticStage + 'g>(Entries<Cursor<'g, S>>);

impl<'g, S: StaticStage + 'g> Range<'g, S> {
    pub(super) fn new(cursor: Cursor<'g, S>) -> Self {
        Range(cursor.into_entries())
    }
}

impl<'g, S: StaticStage + 'g> Iterator for Range<'g, S> {
    type Item = (Vec<u8>, u64);

    fn next(&mut self) -> Option<(Vec<u8>, u64)> {
        self.0.next()
    }
}

impl<'g, S: StaticStage + 'g> DoubleEndedIterator for Range<'g, S> {
    fn next_back(&mut self) -> Option<(Vec<u8>, u64)> {
        self.0.next_back()
    }
}

impl<'g, S: StaticStage + 'g> core::iter::FusedIterator for Range<'g, S> {}

impl<'g, S: StaticStage + 'g> fmt::Debug for Range<'g, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range").finish_non_exhaustive()
    }
}
