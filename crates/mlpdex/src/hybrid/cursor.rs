//! Walking a range of a [`Hybrid`] from both ends: the two stages' ranges merged in key order
//! ([`Overlay`], which the [`ConcurrentHybrid`](super::ConcurrentHybrid)'s cursor uses too).

use core::cmp::Ordering;
use core::ops::{Bound, Deref};

use super::{Hybrid, Slot, StaticStage};
use crate::api::{ByValue, Entries, OrderedMap, RangeCursor};

/// A lending cursor over a range of a [`Hybrid`], from both ends; keys borrow the cursor until
/// its next step.
///
/// ```
/// use mlpdex::hybrid::Hybrid;
///
/// let mut h = Hybrid::new();
/// for (i, k) in ["ant", "bee", "cat"].iter().enumerate() {
///     h.insert(k.as_bytes(), i as u64)?;
/// }
/// h.merge()?; // "ant", "bee" and "cat" move to the static stage...
/// h.insert(b"bat", 9)?; // ...and "bat" sits in the dynamic stage.
/// let mut c = h.cursor("b"..);
/// assert_eq!(c.next(), Some((&b"bat"[..], 9)));
/// assert_eq!(c.next_back(), Some((&b"cat"[..], 2)));
/// assert_eq!(c.next(), Some((&b"bee"[..], 1)));
/// assert_eq!(c.next(), None);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Cursor<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a>(
    Overlay<D::Key<'a>, D::Value<'a>, D::Range<'a>, S::Cursor<'a>>,
);

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> Cursor<'a, D, S> {
    pub(super) fn new(map: &'a Hybrid<D, S>, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        Cursor(Overlay::new(
            map.dynamic.range((start, end)),
            map.stat.cursor((start, end)),
        ))
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

/// A range of dynamic entries (values and tombstones, from an iterator over both ends) laid
/// over a range of static entries (from a lending cursor): the merge behind every hybrid
/// cursor. Each side is read from both ends with one entry looked ahead at each end; a
/// dynamic entry hides the static entry with its key (its value replaces the static one, a
/// tombstone hides both). When one end of a side runs dry, the entry looked ahead at its
/// other end is the last one left, so it moves over: that is how the two ends meet without
/// returning an entry twice.
pub(crate) struct Overlay<K, V, I, C> {
    dynamic: I,
    stat: C,
    d_front: Option<(K, V)>,
    d_back: Option<(K, V)>,
    /// Static entries looked ahead: the value, and the key in its own buffer.
    s_front: Option<u64>,
    s_front_key: Vec<u8>,
    s_back: Option<u64>,
    s_back_key: Vec<u8>,
    /// The key returned last.
    out: Vec<u8>,
}

impl<K, V, I, C> Overlay<K, V, I, C>
where
    K: AsRef<[u8]>,
    V: Deref<Target = Slot>,
    I: DoubleEndedIterator<Item = (K, V)>,
    C: RangeCursor,
{
    pub(crate) fn new(dynamic: I, stat: C) -> Self {
        Overlay {
            dynamic,
            stat,
            d_front: None,
            d_back: None,
            s_front: None,
            s_front_key: Vec::new(),
            s_back: None,
            s_back_key: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Looks one entry ahead at the front of both sides.
    fn fill_front(&mut self) {
        if self.d_front.is_none() {
            self.d_front = self.dynamic.next().or_else(|| self.d_back.take());
        }
        if self.s_front.is_none() {
            match self.stat.next() {
                Some((k, v)) => {
                    self.s_front_key.clear();
                    self.s_front_key.extend_from_slice(k);
                    self.s_front = Some(v);
                }
                None => {
                    if let Some(v) = self.s_back.take() {
                        core::mem::swap(&mut self.s_front_key, &mut self.s_back_key);
                        self.s_front = Some(v);
                    }
                }
            }
        }
    }

    /// Looks one entry ahead at the back of both sides.
    fn fill_back(&mut self) {
        if self.d_back.is_none() {
            self.d_back = self.dynamic.next_back().or_else(|| self.d_front.take());
        }
        if self.s_back.is_none() {
            match self.stat.next_back() {
                Some((k, v)) => {
                    self.s_back_key.clear();
                    self.s_back_key.extend_from_slice(k);
                    self.s_back = Some(v);
                }
                None => {
                    if let Some(v) = self.s_front.take() {
                        core::mem::swap(&mut self.s_front_key, &mut self.s_back_key);
                        self.s_back = Some(v);
                    }
                }
            }
        }
    }

    /// The next entry from the front.
    pub(crate) fn next(&mut self) -> Option<(&[u8], u64)> {
        loop {
            self.fill_front();
            let take_dynamic = match (&self.d_front, self.s_front) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((k, _)), Some(_)) => match k.as_ref().cmp(&self.s_front_key[..]) {
                    Ordering::Less => true,
                    Ordering::Greater => false,
                    Ordering::Equal => {
                        // The dynamic entry hides the static one.
                        self.s_front = None;
                        true
                    }
                },
            };
            if take_dynamic {
                let (k, v) = self.d_front.take().expect("looked ahead");
                if let Slot::Value(v) = *v {
                    self.out.clear();
                    self.out.extend_from_slice(k.as_ref());
                    return Some((&self.out, v));
                }
            } else {
                let v = self.s_front.take().expect("looked ahead");
                core::mem::swap(&mut self.out, &mut self.s_front_key);
                return Some((&self.out, v));
            }
        }
    }

    /// The next entry from the back.
    pub(crate) fn next_back(&mut self) -> Option<(&[u8], u64)> {
        loop {
            self.fill_back();
            let take_dynamic = match (&self.d_back, self.s_back) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((k, _)), Some(_)) => match k.as_ref().cmp(&self.s_back_key[..]) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal => {
                        self.s_back = None;
                        true
                    }
                },
            };
            if take_dynamic {
                let (k, v) = self.d_back.take().expect("looked ahead");
                if let Slot::Value(v) = *v {
                    self.out.clear();
                    self.out.extend_from_slice(k.as_ref());
                    return Some((&self.out, v));
                }
            } else {
                let v = self.s_back.take().expect("looked ahead");
                core::mem::swap(&mut self.out, &mut self.s_back_key);
                return Some((&self.out, v));
            }
        }
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> core::fmt::Debug for Cursor<'a, D, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cursor").finish_non_exhaustive()
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> core::fmt::Debug for Range<'a, D, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Range").finish_non_exhaustive()
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> RangeCursor for Cursor<'a, D, S> {
    fn next(&mut self) -> Option<(&[u8], u64)> {
        self.0.next()
    }

    fn next_back(&mut self) -> Option<(&[u8], u64)> {
        self.0.next_back()
    }
}

/// The iterator of [`Hybrid::range`] and [`Hybrid::iter`]: owned keys, values by value.
///
/// ```
/// use mlpdex::hybrid::Hybrid;
///
/// let mut h = Hybrid::new();
/// h.insert(b"a", 1)?;
/// h.insert(b"b", 2)?;
/// let back: Vec<u64> = h.range(..).rev().map(|(_, v)| *v).collect();
/// assert_eq!(back, [2, 1]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Range<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a>(Entries<Cursor<'a, D, S>>);

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> Range<'a, D, S> {
    pub(super) fn new(cursor: Cursor<'a, D, S>) -> Self {
        Range(cursor.into_entries())
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> Iterator for Range<'a, D, S> {
    type Item = (Vec<u8>, ByValue<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, ByValue(v)))
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> DoubleEndedIterator for Range<'a, D, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, ByValue(v)))
    }
}

impl<'a, D: OrderedMap<Slot> + 'a, S: StaticStage + 'a> core::iter::FusedIterator
    for Range<'a, D, S>
{
}
