//! `ModelMap`, the sorted-`Vec` reference implementation of `OrderedMap`: the driver's own tests
//! run it (and broken variants of it) to show that the driver passes a correct map and catches
//! wrong ones, and a structure's tests may use it as a model.

use crate::KeyRange;
use core::ops::Bound;

use crate::Error;
use crate::api::OrderedMap;
use crate::key::is_empty_range;

/// A sorted-`Vec` map implementing [`OrderedMap`]: the reference implementation the driver's own
/// tests run, and a model for structures' tests.
///
/// It implements only the trait's required methods, so it exercises the default ones.
/// Operations cost O(log n) to find and O(n) to insert or remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelMap<V> {
    pub(super) entries: Vec<(Vec<u8>, V)>,
}

impl<V> Default for ModelMap<V> {
    fn default() -> Self {
        ModelMap {
            entries: Vec::new(),
        }
    }
}

impl<V> ModelMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
    }

    /// Indices of the entries within `(start, end)`.
    pub(super) fn index_range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> core::ops::Range<usize> {
        if is_empty_range(start, end) {
            return 0..0;
        }
        let lo = match start {
            Bound::Included(s) => self.entries.partition_point(|(k, _)| k.as_slice() < s),
            Bound::Excluded(s) => self.entries.partition_point(|(k, _)| k.as_slice() <= s),
            Bound::Unbounded => 0,
        };
        let hi = match end {
            Bound::Included(e) => self.entries.partition_point(|(k, _)| k.as_slice() <= e),
            Bound::Excluded(e) => self.entries.partition_point(|(k, _)| k.as_slice() < e),
            Bound::Unbounded => self.entries.len(),
        };
        lo..hi.max(lo)
    }
}

/// Iterator over a range of a [`ModelMap`], from both ends.
#[derive(Clone, Debug)]
pub struct ModelRange<'a, V> {
    inner: core::slice::Iter<'a, (Vec<u8>, V)>,
}

impl<'a, V> Iterator for ModelRange<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k.as_slice(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for ModelRange<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k.as_slice(), v))
    }
}

impl<V> ExactSizeIterator for ModelRange<'_, V> {}

impl<V> core::iter::FusedIterator for ModelRange<'_, V> {}

impl<V: core::fmt::Debug> OrderedMap<V> for ModelMap<V> {
    type Key<'a>
        = &'a [u8]
    where
        V: 'a;

    type Value<'a>
        = &'a V
    where
        V: 'a;

    type Range<'a>
        = ModelRange<'a, V>
    where
        V: 'a;

    fn get(&self, key: &[u8]) -> Option<&V> {
        self.search(key).ok().map(|i| &self.entries[i].1)
    }

    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        match self.search(key) {
            Ok(i) => Ok(Some(core::mem::replace(&mut self.entries[i].1, value))),
            Err(i) => {
                self.entries.insert(i, (key.to_vec(), value));
                Ok(None)
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.search(key).ok().map(|i| self.entries.remove(i).1)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        let indices = self.index_range(start, end);
        ModelRange {
            inner: self.entries[indices].iter(),
        }
    }

    /// The entry vector's capacity times the entry size, plus every key's capacity (values'
    /// own heap allocations are not counted).
    fn memory_usage(&self) -> usize {
        self.entries.capacity() * core::mem::size_of::<(Vec<u8>, V)>()
            + self
                .entries
                .iter()
                .map(|(k, _)| k.capacity())
                .sum::<usize>()
    }

    /// Removes every key and releases the entry vector.
    fn clear(&mut self) {
        self.entries = Vec::new();
    }
}
