//! PI one query at a time, shaped like `BTreeMap<u64, u64>`, and as an [`OrderedMap`].
//!
//! Reads (`get`, `range`, `iter`, `first_key_value`, …) take `&self` and run on the calling
//! thread: one walk down the index layer and along the list, no batch. Writes take
//! `&mut self` and run as a batch of one on the pool (`extend` and `from_iter` gather
//! batches of [`EXTEND_BATCH`]). A batch of many queries is the fast way: it overlaps their
//! cache misses and spreads them over the workers.
//!
//! A range collects its entries when it is made (the storage layer is singly linked, so
//! it cannot walk back), then iterates them from both ends.

use core::fmt;
use core::ops::{Bound, RangeBounds};

use super::{Batch, Config, Pi, Query};
use crate::key::{int_end, int_start, key_to_u64};
use crate::{ByValue, Error, KeyRange, OrderedMap};

/// Queries in each batch that [`Extend`] and [`FromIterator`] execute.
pub const EXTEND_BATCH: usize = 8192;

/// The entries of a range of a [`Pi`], in key order, from both ends (collected when made).
///
/// ```
/// use mlpdex::pi::Pi;
///
/// let m: Pi = (1..=5u64).map(|k| (k, k * 10)).collect();
/// assert!(m.range(2..4).eq([(2, 20), (3, 30)]));
/// assert_eq!(m.range(..).next_back(), Some((5, 50)));
/// ```
#[derive(Clone, Debug)]
pub struct Range {
    entries: std::vec::IntoIter<(u64, u64)>,
}

impl Iterator for Range {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<(u64, u64)> {
        self.entries.next_back()
    }
}

impl ExactSizeIterator for Range {}

impl Pi {
    /// Executes one query as a batch of one.
    fn one(&mut self, q: Query) -> Option<u64> {
        let mut b = Batch::with_capacity(1);
        b.push(q);
        self.execute(&mut b);
        b.answers()[0].value()
    }

    /// Stores `value` under `key`; returns the value it replaces (a batch of one).
    pub fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        self.one(Query::Insert(key, value))
    }

    /// Removes `key`; returns its value (a batch of one).
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        self.one(Query::Remove(key))
    }

    /// Whether `key` is stored.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// The entries with keys in `range`, in key order, from both ends (empty for an empty or
    /// inverted range).
    pub fn range(&self, range: impl RangeBounds<u64>) -> Range {
        let entries = match Query::range(range).span() {
            Some((lo, hi)) => self.collect_range(lo, hi),
            None => Vec::new(),
        };
        Range {
            entries: entries.into_iter(),
        }
    }

    /// Every entry in key order.
    pub fn iter(&self) -> Range {
        self.range(..)
    }

    /// The entry of smallest key.
    pub fn first_key_value(&self) -> Option<(u64, u64)> {
        self.scan_one(0)
    }

    /// The entry of largest key.
    pub fn last_key_value(&self) -> Option<(u64, u64)> {
        // The list is singly linked: walk it, without collecting it.
        self.storage
            .iter()
            .filter_map(|n| n.live_value().map(|v| (n.key, v)))
            .last()
    }

    /// Removes every key (the pool is kept).
    pub fn clear(&mut self) {
        let pool = self.pool.take();
        let config = self.config;
        // One worker starts no thread, so this cannot fail for a valid configuration.
        let one = Config {
            threads: 1,
            ..config
        };
        *self = Pi::with_config(one).expect("a valid configuration with one worker");
        self.pool = pool;
        self.config = config;
    }
}

impl fmt::Debug for Pi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Extend<(u64, u64)> for Pi {
    /// Inserts the entries in batches of [`EXTEND_BATCH`], in order (a later entry of a key
    /// wins, as in a `BTreeMap`).
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, iter: I) {
        let mut iter = iter.into_iter();
        let mut b = Batch::with_capacity(EXTEND_BATCH);
        loop {
            b.clear();
            b.extend(
                iter.by_ref()
                    .take(EXTEND_BATCH)
                    .map(|(k, v)| Query::Insert(k, v)),
            );
            if b.is_empty() {
                return;
            }
            self.execute(&mut b);
        }
    }
}

impl FromIterator<(u64, u64)> for Pi {
    /// A map with the default [`Config`], filled as by [`Extend`].
    ///
    /// # Panics
    /// As [`Pi::new`], if the worker threads cannot be started.
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(iter: I) -> Pi {
        let mut m = Pi::new();
        m.extend(iter);
        m
    }
}

impl IntoIterator for &Pi {
    type Item = (u64, u64);
    type IntoIter = Range;

    fn into_iter(self) -> Range {
        self.iter()
    }
}

/// The byte-key form of a [`Range`] for [`OrderedMap`]: 8-byte big-endian keys.
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::pi::Pi;
///
/// let m: Pi = [(1u64, 10u64), (2, 20)].into_iter().collect();
/// let (k, v) = OrderedMap::iter(&m).next_back().unwrap();
/// assert_eq!((u64::from_be_bytes(k), *v), (2, 20));
/// ```
#[derive(Clone, Debug)]
pub struct RangeBytes(Range);

impl Iterator for RangeBytes {
    type Item = ([u8; 8], ByValue<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }
}

impl DoubleEndedIterator for RangeBytes {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0
            .next_back()
            .map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }
}

/// PI as a byte-keyed map: its keys are the 8-byte big-endian forms of its `u64`s, as for
/// [`MlpIndex`](crate::mlp_index::MlpIndex). `insert` of a key of another width fails with
/// [`Error::KeyWidth`]; reads and `remove` of one find nothing.
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::pi::Pi;
///
/// let mut m = Pi::new();
/// OrderedMap::insert(&mut m, &5u64.to_be_bytes(), 50).unwrap();
/// assert!(OrderedMap::insert(&mut m, b"short", 1).is_err());
/// assert_eq!(OrderedMap::get(&m, &5u64.to_be_bytes()).map(|v| *v), Some(50));
/// ```
impl OrderedMap<u64> for Pi {
    type Key<'a> = [u8; 8];
    type Value<'a> = ByValue<u64>;
    type Range<'a> = RangeBytes;

    fn get(&self, key: &[u8]) -> Option<ByValue<u64>> {
        Pi::get(self, key_to_u64(key)?).map(ByValue)
    }

    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        let k = key_to_u64(key).ok_or(Error::KeyWidth {
            len: key.len(),
            expected: 8,
        })?;
        Ok(Pi::insert(self, k, value))
    }

    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        Pi::remove(self, key_to_u64(key)?)
    }

    fn len(&self) -> usize {
        Pi::len(self)
    }

    fn range<R: KeyRange>(&self, range: R) -> RangeBytes {
        let (start, end) = range.key_bounds();
        RangeBytes(Pi::range(self, (int_start(start), int_end(end))))
    }

    fn memory_usage(&self) -> usize {
        Pi::memory_usage(self)
    }

    fn clear(&mut self) {
        Pi::clear(self);
    }

    fn first(&self) -> Option<([u8; 8], ByValue<u64>)> {
        self.first_key_value()
            .map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<([u8; 8], ByValue<u64>)> {
        let lo = match int_start(bound) {
            Bound::Unbounded => 0,
            Bound::Included(k) => k,
            Bound::Excluded(k) => k.checked_add(1)?,
        };
        self.scan_one(lo)
            .map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }
}
