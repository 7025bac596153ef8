//! PI one query at a time, shaped like `BTreeMap<u64, u64>` (or for byte strings like a
//! byte map of this crate: keys as `&[u8]`, ranges over any [`KeyRange`]), and as an
//! [`OrderedMap`].
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

use super::key::{BytesRef, sealed::Key};
use super::{Batch, Config, Pi, PiKey, Query};
use crate::key::{Escaped, int_end, int_start, key_to_u64};
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
pub struct Range<K = u64> {
    entries: std::vec::IntoIter<(K, u64)>,
}

impl<K> Iterator for Range<K> {
    type Item = (K, u64);

    fn next(&mut self) -> Option<(K, u64)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<K> DoubleEndedIterator for Range<K> {
    fn next_back(&mut self) -> Option<(K, u64)> {
        self.entries.next_back()
    }
}

impl<K> ExactSizeIterator for Range<K> {}

/// A borrowed bound, as the executor takes it.
fn bound_ref<K: Key>(b: Bound<&K>) -> Bound<K::Ref<'_>> {
    match b {
        Bound::Included(k) => Bound::Included(k.key_ref()),
        Bound::Excluded(k) => Bound::Excluded(k.key_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A borrowed byte-string bound, as the executor takes it.
fn bytes_bound(b: Bound<&[u8]>) -> Bound<BytesRef<'_>> {
    match b {
        Bound::Included(k) => Bound::Included(BytesRef::new(k)),
        Bound::Excluded(k) => Bound::Excluded(BytesRef::new(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The parts every key type shares.
impl<K: PiKey> Pi<K> {
    /// Executes one query as a batch of one.
    fn one(&mut self, q: Query<K>) -> Option<u64> {
        let mut b = Batch::with_capacity(1);
        b.push(q);
        self.execute(&mut b);
        b.answers()[0].value()
    }

    /// The entry of largest key.
    pub fn last_key_value(&self) -> Option<(K, u64)> {
        // The list is singly linked: walk it, without collecting it.
        self.storage
            .iter()
            .filter(|n| !n.deleted.load(core::sync::atomic::Ordering::Relaxed))
            .last()
            .and_then(|n| n.live_value().map(|v| (K::owned(n.key()), v)))
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

    /// Inserts the entries in batches of [`EXTEND_BATCH`], in order.
    fn extend_entries(&mut self, iter: impl IntoIterator<Item = (K, u64)>) {
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

/// One query at a time on `u64` keys.
impl Pi<u64> {
    /// The value of `key`, looked up on the calling thread without a batch: one walk down
    /// the index layer and along the list (no batch can run meanwhile: `execute` needs
    /// `&mut self`). For many keys, a batch of [`Query::Get`] overlaps their misses.
    pub fn get(&self, key: u64) -> Option<u64> {
        self.get_ref(key)
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
        let entries =
            self.collect_range(bound_ref(range.start_bound()), bound_ref(range.end_bound()));
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
        self.scan_one(0, false)
    }
}

impl fmt::Debug for Pi<u64> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Extend<(u64, u64)> for Pi<u64> {
    /// Inserts the entries in batches of [`EXTEND_BATCH`], in order (a later entry of a key
    /// wins, as in a `BTreeMap`).
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, iter: I) {
        self.extend_entries(iter);
    }
}

impl FromIterator<(u64, u64)> for Pi<u64> {
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

impl IntoIterator for &Pi<u64> {
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
/// let mut m: Pi = Pi::new();
/// OrderedMap::insert(&mut m, &5u64.to_be_bytes(), 50).unwrap();
/// assert!(OrderedMap::insert(&mut m, b"short", 1).is_err());
/// assert_eq!(OrderedMap::get(&m, &5u64.to_be_bytes()).map(|v| *v), Some(50));
/// ```
impl OrderedMap<u64> for Pi<u64> {
    type Key<'a> = [u8; 8];
    type Value<'a> = ByValue<u64>;
    type Range<'a> = RangeBytes;

    fn get(&self, key: &[u8]) -> Option<ByValue<u64>> {
        Pi::<u64>::get(self, key_to_u64(key)?).map(ByValue)
    }

    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        let k = key_to_u64(key).ok_or(Error::KeyWidth {
            len: key.len(),
            expected: 8,
        })?;
        Ok(Pi::<u64>::insert(self, k, value))
    }

    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        Pi::<u64>::remove(self, key_to_u64(key)?)
    }

    fn len(&self) -> usize {
        Pi::<u64>::len(self)
    }

    fn range<R: KeyRange>(&self, range: R) -> RangeBytes {
        let (start, end) = range.key_bounds();
        RangeBytes(Pi::<u64>::range(self, (int_start(start), int_end(end))))
    }

    fn memory_usage(&self) -> usize {
        Pi::<u64>::memory_usage(self)
    }

    fn clear(&mut self) {
        Pi::<u64>::clear(self);
    }

    fn first(&self) -> Option<([u8; 8], ByValue<u64>)> {
        self.first_key_value()
            .map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<([u8; 8], ByValue<u64>)> {
        let found = match int_start(bound) {
            Bound::Unbounded => self.scan_one(0, false),
            Bound::Included(k) => self.scan_one(k, false),
            Bound::Excluded(k) => self.scan_one(k, true),
        };
        found.map(|(k, v)| (k.to_be_bytes(), ByValue(v)))
    }
}

/// One query at a time on byte-string keys, shaped like this crate's byte maps (keys as
/// `&[u8]`, ranges over any [`KeyRange`]).
///
/// ```
/// use mlpdex::pi::Pi;
///
/// let mut m: Pi<Vec<u8>> = Pi::new();
/// m.insert(b"apple", 1);
/// m.insert(b"apricot", 2);
/// m.insert(b"", 0);
/// assert_eq!(m.get(b"apple"), Some(1));
/// assert_eq!(m.range(b"ap".as_slice()..b"aq").count(), 2);
/// assert_eq!(m.first_key_value(), Some((Vec::new(), 0)));
/// ```
impl Pi<Vec<u8>> {
    /// The value of `key`, looked up on the calling thread without a batch (see
    /// [`Pi::<u64>::get`](Pi::get)).
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        self.get_ref(BytesRef::new(key))
    }

    /// Stores `value` under `key`; returns the value it replaces (a batch of one).
    pub fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.one(Query::Insert(key.to_vec(), value))
    }

    /// Removes `key`; returns its value (a batch of one).
    pub fn remove(&mut self, key: &[u8]) -> Option<u64> {
        self.one(Query::Remove(key.to_vec()))
    }

    /// Whether `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// The entries with keys in `range`, in key order, from both ends (empty for an empty or
    /// inverted range).
    pub fn range<R: KeyRange>(&self, range: R) -> Range<Vec<u8>> {
        let (lo, hi) = range.key_bounds();
        Range {
            entries: self
                .collect_range(bytes_bound(lo), bytes_bound(hi))
                .into_iter(),
        }
    }

    /// Every entry in key order.
    pub fn iter(&self) -> Range<Vec<u8>> {
        self.range(..)
    }

    /// The entry of smallest key.
    pub fn first_key_value(&self) -> Option<(Vec<u8>, u64)> {
        self.scan_one(BytesRef::new(&[]), false)
    }
}

impl fmt::Debug for Pi<Vec<u8>> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries = self.iter().collect::<Vec<_>>();
        f.debug_map()
            .entries(entries.iter().map(|(k, v)| (Escaped(k), v)))
            .finish()
    }
}

impl Extend<(Vec<u8>, u64)> for Pi<Vec<u8>> {
    /// Inserts the entries in batches of [`EXTEND_BATCH`], in order (a later entry of a key
    /// wins).
    fn extend<I: IntoIterator<Item = (Vec<u8>, u64)>>(&mut self, iter: I) {
        self.extend_entries(iter);
    }
}

impl<'a> Extend<(&'a [u8], u64)> for Pi<Vec<u8>> {
    /// As for owned keys.
    fn extend<I: IntoIterator<Item = (&'a [u8], u64)>>(&mut self, iter: I) {
        self.extend_entries(iter.into_iter().map(|(k, v)| (k.to_vec(), v)));
    }
}

impl FromIterator<(Vec<u8>, u64)> for Pi<Vec<u8>> {
    /// A map with the default [`Config`], filled as by [`Extend`].
    ///
    /// # Panics
    /// As [`Pi::new`], if the worker threads cannot be started.
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, u64)>>(iter: I) -> Self {
        let mut m = Pi::new();
        m.extend(iter);
        m
    }
}

impl IntoIterator for &Pi<Vec<u8>> {
    type Item = (Vec<u8>, u64);
    type IntoIter = Range<Vec<u8>>;

    fn into_iter(self) -> Range<Vec<u8>> {
        self.iter()
    }
}

/// The [`OrderedMap`] form of a byte-string [`Range`]: values as [`ByValue`].
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::pi::Pi;
///
/// let m: Pi<Vec<u8>> = [(b"b".to_vec(), 2u64), (b"a".to_vec(), 1)].into_iter().collect();
/// let (k, v) = OrderedMap::range(&m, b"a".as_slice()..).next_back().unwrap();
/// assert_eq!((k, *v), (b"b".to_vec(), 2));
/// ```
#[derive(Clone, Debug)]
pub struct RangeByteStrings(Range<Vec<u8>>);

impl Iterator for RangeByteStrings {
    type Item = (Vec<u8>, ByValue<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, ByValue(v)))
    }
}

impl DoubleEndedIterator for RangeByteStrings {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, ByValue(v)))
    }
}

/// PI over byte strings as an [`OrderedMap`]: every key is legal.
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::pi::Pi;
///
/// let mut m: Pi<Vec<u8>> = Pi::new();
/// OrderedMap::insert(&mut m, b"k", 1).unwrap();
/// assert_eq!(OrderedMap::get(&m, b"k").map(|v| *v), Some(1));
/// ```
impl OrderedMap<u64> for Pi<Vec<u8>> {
    type Key<'a> = Vec<u8>;
    type Value<'a> = ByValue<u64>;
    type Range<'a> = RangeByteStrings;

    fn get(&self, key: &[u8]) -> Option<ByValue<u64>> {
        Pi::<Vec<u8>>::get(self, key).map(ByValue)
    }

    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        Ok(Pi::<Vec<u8>>::insert(self, key, value))
    }

    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        Pi::<Vec<u8>>::remove(self, key)
    }

    fn len(&self) -> usize {
        Pi::<Vec<u8>>::len(self)
    }

    fn range<R: KeyRange>(&self, range: R) -> RangeByteStrings {
        RangeByteStrings(Pi::<Vec<u8>>::range(self, range))
    }

    fn memory_usage(&self) -> usize {
        Pi::<Vec<u8>>::memory_usage(self)
    }

    fn clear(&mut self) {
        Pi::<Vec<u8>>::clear(self);
    }

    fn first(&self) -> Option<(Vec<u8>, ByValue<u64>)> {
        self.first_key_value().map(|(k, v)| (k, ByValue(v)))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, ByValue<u64>)> {
        let found = match bound {
            Bound::Unbounded => self.first_key_value(),
            Bound::Included(k) => self.scan_one(BytesRef::new(k), false),
            Bound::Excluded(k) => self.scan_one(BytesRef::new(k), true),
        };
        found.map(|(k, v)| (k, ByValue(v)))
    }
}
