//! Walking a range of a [`CompactArt`] from both ends.
//!
//! Each end is a path from the root to its next entry, found by a seek when the cursor is
//! made; a step moves it to the neighbouring entry. The ends know they have met when their
//! entries are the same (each entry's value has its own place in the arena), so a walk never
//! compares keys after the first seek.

use core::ops::Bound;

use super::CompactArt;
use super::raw::path::Path;
use crate::api::Entries;

/// The iterator of [`CompactArt::range`] and [`CompactArt::iter`]: a [`Cursor`] whose keys
/// are copied out.
pub type Range<'a> = Entries<Cursor<'a>>;

/// A cursor over a range of a [`CompactArt`], from both ends: a lending iterator whose keys
/// borrow it until its next step.
///
/// ```
/// use mlpdex::compact_art::CompactArt;
///
/// let map = CompactArt::from_sorted([("a", 1), ("b", 2), ("c", 3)])?;
/// let mut c = map.cursor(..);
/// assert_eq!(c.next(), Some((&b"a"[..], 1)));
/// assert_eq!(c.next_back(), Some((&b"c"[..], 3)));
/// assert_eq!(c.next(), Some((&b"b"[..], 2)));
/// assert_eq!(c.next_back(), None);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    map: &'a CompactArt,
    /// The path to the front's next entry, or to the one it returned last when `front_used`.
    front: Path,
    back: Path,
    front_used: bool,
    back_used: bool,
    done: bool,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(map: &'a CompactArt, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let tree = &map.tree;
        let mut front = Path::default();
        let mut back = Path::default();
        let found = |p: &mut Path, bound: Bound<&[u8]>, back: bool| match (bound, back) {
            (Bound::Unbounded, _) => {
                p.edge(tree, back);
                p.at.is_some()
            }
            (Bound::Included(k), false) => p.seek_ge(tree, k, false),
            (Bound::Excluded(k), false) => p.seek_ge(tree, k, true),
            (Bound::Included(k), true) => p.seek_le(tree, k, false),
            (Bound::Excluded(k), true) => p.seek_le(tree, k, true),
        };
        let both = found(&mut front, start, false) && found(&mut back, end, true);
        let done = !both || front.key > back.key;
        Cursor {
            map,
            front,
            back,
            front_used: false,
            back_used: false,
            done,
        }
    }

    /// The next entry from the front.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Option<(&[u8], u64)> {
        if self.done {
            return None;
        }
        if self.front_used && !self.front.step(&self.map.tree) {
            self.done = true;
            return None;
        }
        let (f, b) = (self.front.at?, self.back.at?);
        if f.id == b.id {
            // The ends meet: this entry is the last, unless the back returned it already.
            self.done = true;
            if self.back_used {
                return None;
            }
        }
        self.front_used = true;
        Some((&self.front.key, f.value))
    }

    /// The next entry from the back.
    #[inline]
    pub fn next_back(&mut self) -> Option<(&[u8], u64)> {
        if self.done {
            return None;
        }
        if self.back_used && !self.back.step_back(&self.map.tree) {
            self.done = true;
            return None;
        }
        let (f, b) = (self.front.at?, self.back.at?);
        if f.id == b.id {
            self.done = true;
            if self.front_used {
                return None;
            }
        }
        self.back_used = true;
        Some((&self.back.key, b.value))
    }
}

crate::api::lending_cursor!(Cursor, "CompactArt");
