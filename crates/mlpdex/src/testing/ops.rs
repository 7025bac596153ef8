//! The operations the drivers play (`MapOp`, with the `Walk` a range is read in), and how they
//! print in a divergence message.

use core::fmt;
use core::ops::Bound;

use crate::key::Escaped;

/// How a range is walked: which ends are pulled, and how many entries at most.
///
/// A walk stops after `limit` entries, or when an end reports exhaustion, in which case the
/// other end must report exhaustion too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// `next` only, at most this many entries.
    Forward(usize),
    /// `next_back` only, at most this many entries.
    Backward(usize),
    /// `next` or `next_back` as a [`TestRng`] seeded with the first field chooses, at most the
    /// second field entries. For visitors, a forward and a reverse visit.
    ///
    /// [`TestRng`]: super::TestRng
    Alternate(u64, usize),
}

impl Walk {
    /// The most entries the walk takes (`usize::MAX`: the whole range).
    pub fn limit(&self) -> usize {
        match *self {
            Walk::Forward(n) | Walk::Backward(n) | Walk::Alternate(_, n) => n,
        }
    }
}

/// One operation of a differential test, with its arguments; see [`run_ops`](super::run_ops).
///
/// `Debug` prints keys readably (as [`Escaped`]), so proptest's minimal failing cases read well.
#[derive(Clone, PartialEq, Eq)]
pub enum MapOp {
    /// `insert(key, value)`, then `get(key)` and `len()`.
    Insert(Vec<u8>, u64),
    /// `remove(key)`, then `get(key)` and `len()`.
    Remove(Vec<u8>),
    /// `get(key)`.
    Get(Vec<u8>),
    /// `contains_key(key)`.
    ContainsKey(Vec<u8>),
    /// `len()` and `is_empty()`.
    Len,
    /// The smallest entry.
    First,
    /// The largest entry.
    Last,
    /// The first entry within the bound from below (`lower_bound`).
    LowerBound(Bound<Vec<u8>>),
    /// The last entry within the bound from above (`upper_bound`).
    UpperBound(Bound<Vec<u8>>),
    /// A range from the first bound to the second, walked as the [`Walk`] says.
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Walk),
    /// The whole map forward and backward, with `len()`.
    Iter,
    /// `clear()`; for a concurrent map, `remove` of every key.
    Clear,
    /// `memory_usage() > 0` unless the map is empty.
    MemoryUsage,
}

pub(super) fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

pub(super) struct ShowBound<'a>(Bound<&'a [u8]>);

impl fmt::Display for ShowBound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Bound::Included(k) => write!(f, "Included({})", Escaped(k)),
            Bound::Excluded(k) => write!(f, "Excluded({})", Escaped(k)),
            Bound::Unbounded => f.write_str("Unbounded"),
        }
    }
}

impl fmt::Display for MapOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapOp::Insert(k, v) => write!(f, "insert({}, {v})", Escaped(k)),
            MapOp::Remove(k) => write!(f, "remove({})", Escaped(k)),
            MapOp::Get(k) => write!(f, "get({})", Escaped(k)),
            MapOp::ContainsKey(k) => write!(f, "contains_key({})", Escaped(k)),
            MapOp::Len => f.write_str("len()"),
            MapOp::First => f.write_str("first()"),
            MapOp::Last => f.write_str("last()"),
            MapOp::LowerBound(b) => write!(f, "lower_bound({})", ShowBound(as_slice_bound(b))),
            MapOp::UpperBound(b) => write!(f, "upper_bound({})", ShowBound(as_slice_bound(b))),
            MapOp::Range(s, e, walk) => write!(
                f,
                "range({}, {}) walked {walk:?}",
                ShowBound(as_slice_bound(s)),
                ShowBound(as_slice_bound(e))
            ),
            MapOp::Iter => f.write_str("iter() forward and backward"),
            MapOp::Clear => f.write_str("clear()"),
            MapOp::MemoryUsage => f.write_str("memory_usage()"),
        }
    }
}

impl fmt::Debug for MapOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
