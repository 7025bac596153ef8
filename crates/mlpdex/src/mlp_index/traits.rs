//! The std traits a `BTreeMap<u64, u64>` has, and [`OrderedMap`] over 8-byte big-endian keys.
//!
//! `Extend`, `FromIterator`, `From<[_; N]>` and `Clone` have no `Result` in their std shape:
//! they panic if the operating system refuses memory, as std's collections fail on allocation
//! failure ([`MlpIndex::insert`] and [`MlpIndex::try_clone`] return the error instead).

use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::{Bound, Index};

use super::{IntoIter, IterMut, MlpIndex, Range, RangeBytes, out_of_memory};
use crate::key::{int_end, int_start, key_to_u64};
use crate::{Error, KeyRange, OrderedMap};

impl Default for MlpIndex {
    /// An empty map with the default [`Config`](super::Config); allocates nothing.
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for MlpIndex {
    /// A copy, with a table as large as this one's.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory; see [`MlpIndex::try_clone`].
    fn clone(&self) -> Self {
        self.try_clone().unwrap_or_else(|e| out_of_memory(e))
    }
}

/// Equal when the entries are (the configurations may differ), as for `BTreeMap`.
impl PartialEq for MlpIndex {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for MlpIndex {}

/// Lexicographic over the entries in key order, as for `BTreeMap`.
impl PartialOrd for MlpIndex {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MlpIndex {
    fn cmp(&self, other: &Self) -> Ordering {
        self.iter().cmp(other.iter())
    }
}

/// Hashes the length and then the entries in key order, as `BTreeMap` does.
impl Hash for MlpIndex {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for e in self {
            e.hash(state);
        }
    }
}

/// Prints the entries as std's maps do: `{1: 10, 2: 20}` (`{:#?}` one per line).
impl fmt::Debug for MlpIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Index<u64> for MlpIndex {
    type Output = u64;

    /// The value of `key`.
    ///
    /// # Panics
    ///
    /// If `key` is absent, as `BTreeMap`'s `map[&key]` does; [`MlpIndex::get`] returns an
    /// `Option` instead.
    fn index(&self, key: u64) -> &u64 {
        self.get_ref(key).expect("key not in the MlpIndex")
    }
}

impl Index<&u64> for MlpIndex {
    type Output = u64;

    /// The value of `key`, as `BTreeMap`'s `map[&key]`.
    ///
    /// # Panics
    ///
    /// If `key` is absent.
    fn index(&self, key: &u64) -> &u64 {
        &self[*key]
    }
}

impl Extend<(u64, u64)> for MlpIndex {
    /// Inserts every pair, later pairs replacing earlier values of the same key.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, iter: I) {
        for (k, v) in iter {
            if let Err(e) = self.insert(k, v) {
                out_of_memory(e)
            }
        }
    }
}

impl<'a> Extend<(&'a u64, &'a u64)> for MlpIndex {
    /// Inserts every pair (copied), as [`Extend<(u64, u64)>`](#impl-Extend<(u64,+u64)>-for-MlpIndex).
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    fn extend<I: IntoIterator<Item = (&'a u64, &'a u64)>>(&mut self, iter: I) {
        self.extend(iter.into_iter().map(|(&k, &v)| (k, v)));
    }
}

impl FromIterator<(u64, u64)> for MlpIndex {
    /// A map of the pairs (later pairs win for a repeated key), with the default config.
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory.
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(iter: I) -> Self {
        let mut m = MlpIndex::new();
        m.extend(iter);
        m
    }
}

impl<const N: usize> From<[(u64, u64); N]> for MlpIndex {
    /// A map of the pairs (later pairs win for a repeated key).
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory.
    fn from(pairs: [(u64, u64); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl IntoIterator for MlpIndex {
    type Item = (u64, u64);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter::new(self)
    }
}

impl<'a> IntoIterator for &'a MlpIndex {
    type Item = (u64, u64);
    type IntoIter = Range<'a>;

    fn into_iter(self) -> Range<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut MlpIndex {
    type Item = (u64, &'a mut u64);
    type IntoIter = IterMut<'a>;

    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

/// `MlpIndex` as a byte-keyed map: its keys are the 8-byte big-endian forms of its `u64`s
/// (so byte order is integer order). `insert` of a key of another width fails with
/// [`Error::KeyWidth`]; `get`, `contains_key` and `remove` of one find nothing. Range bounds
/// of any width select the 8-byte keys they would in a byte-string map.
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::mlp_index::MlpIndex;
///
/// let mut m = MlpIndex::new();
/// OrderedMap::insert(&mut m, &5u64.to_be_bytes(), 50).unwrap();
/// assert!(OrderedMap::insert(&mut m, b"short", 1).is_err());
/// assert_eq!(OrderedMap::get(&m, &5u64.to_be_bytes()), Some(&50));
/// let (k, v) = OrderedMap::first(&m).unwrap();
/// assert_eq!((u64::from_be_bytes(k), *v), (5, 50));
/// ```
impl OrderedMap<u64> for MlpIndex {
    type Key<'a> = [u8; 8];
    type Value<'a> = &'a u64;
    type Range<'a> = RangeBytes<'a>;

    fn get(&self, key: &[u8]) -> Option<&u64> {
        self.get_ref(key_to_u64(key)?)
    }

    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        let k = key_to_u64(key).ok_or(Error::KeyWidth {
            len: key.len(),
            expected: 8,
        })?;
        MlpIndex::insert(self, k, value)
    }

    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        MlpIndex::remove(self, key_to_u64(key)?)
    }

    fn len(&self) -> usize {
        MlpIndex::len(self)
    }

    fn range<R>(&self, range: R) -> RangeBytes<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        RangeBytes::new(self, int_start(start), int_end(end))
    }

    fn memory_usage(&self) -> usize {
        MlpIndex::memory_usage(self)
    }

    fn clear(&mut self) {
        MlpIndex::clear(self);
    }

    fn contains_key(&self, key: &[u8]) -> bool {
        key_to_u64(key).is_some_and(|k| MlpIndex::contains_key(self, k))
    }

    fn first(&self) -> Option<([u8; 8], &u64)> {
        self.seek_ge(Bound::Unbounded)
            .map(|(k, v)| (k.to_be_bytes(), v))
    }

    fn last(&self) -> Option<([u8; 8], &u64)> {
        self.seek_le(Bound::Unbounded)
            .map(|(k, v)| (k.to_be_bytes(), v))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<([u8; 8], &u64)> {
        self.seek_ge(int_start(bound))
            .map(|(k, v)| (k.to_be_bytes(), v))
    }

    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<([u8; 8], &u64)> {
        self.seek_le(int_end(bound))
            .map(|(k, v)| (k.to_be_bytes(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer bounds select exactly the 8-byte keys the byte bounds select.
    #[test]
    fn byte_bounds_select_the_same_keys() {
        let keys: Vec<[u8; 8]> = [
            0u64,
            1,
            0x0100,
            0x61_62_00_00_00_00_00_00,
            0x61_62_00_00_00_00_00_01,
        ]
        .iter()
        .chain(&[
            0x61_61_ff_ff_ff_ff_ff_ff,
            0x61_62_63_64_65_66_67_68,
            u64::MAX,
        ])
        .map(|k| k.to_be_bytes())
        .collect();
        let bounds: [&[u8]; 7] = [
            b"",
            b"ab",
            b"aa\xff",
            b"abcdefgh",
            b"abcdefgh\x00",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for b in bounds {
            for kind in 0..2 {
                let bb = if kind == 0 {
                    Bound::Included(b)
                } else {
                    Bound::Excluded(b)
                };
                for k in &keys {
                    let ki = u64::from_be_bytes(*k);
                    let want_lo = match bb {
                        Bound::Included(b) => k.as_slice() >= b,
                        Bound::Excluded(b) => k.as_slice() > b,
                        Bound::Unbounded => true,
                    };
                    let got_lo = match int_start(bb) {
                        Bound::Included(x) => ki >= x,
                        Bound::Excluded(x) => ki > x,
                        Bound::Unbounded => true,
                    };
                    assert_eq!(want_lo, got_lo, "start {bb:?}, key {k:?}");
                    let want_hi = match bb {
                        Bound::Included(b) => k.as_slice() <= b,
                        Bound::Excluded(b) => k.as_slice() < b,
                        Bound::Unbounded => true,
                    };
                    let got_hi = match int_end(bb) {
                        Bound::Included(x) => ki <= x,
                        Bound::Excluded(x) => ki < x,
                        Bound::Unbounded => true,
                    };
                    assert_eq!(want_hi, got_hi, "end {bb:?}, key {k:?}");
                }
            }
        }
    }
}
