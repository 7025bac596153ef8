//! A batch of queries for [`Pi::execute`](super::Pi::execute) and their answers.

use core::ops::{Bound, RangeBounds};

/// One query of a [`Batch`], on keys `K` (`u64`, or `Vec<u8>` for byte strings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query<K = u64> {
    /// The key's value ([`Answer::Value`]).
    Get(K),
    /// Sets the key's value; answers the old one ([`Answer::Value`]), like
    /// `BTreeMap::insert`.
    Insert(K, u64),
    /// Removes the key; answers its value ([`Answer::Value`]), like `BTreeMap::remove`.
    Remove(K),
    /// The entries with keys in `(start, end)`, in key order ([`Answer::Entries`]).
    Range(Bound<K>, Bound<K>),
    /// The first `count` entries with keys at least the key, in key order
    /// ([`Answer::Entries`]): `map.range(key..).take(count)`, the scan of YCSB's workload E.
    Scan(K, usize),
}

impl<K: Clone> Query<K> {
    /// A range query over any `RangeBounds` of keys (`3..7`, `..=9`, `..`).
    pub fn range(r: impl RangeBounds<K>) -> Query<K> {
        Query::Range(r.start_bound().cloned(), r.end_bound().cloned())
    }
}

/// The answer to one [`Query`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer<K = u64> {
    /// To `Get`, `Insert` and `Remove`: the value found (before the change, for writes).
    Value(Option<u64>),
    /// To `Range` and `Scan`: the entries in key order.
    Entries(Vec<(K, u64)>),
}

impl<K> Answer<K> {
    /// The value of a point query's answer (`None` for a range's or scan's).
    pub fn value(&self) -> Option<u64> {
        match self {
            Answer::Value(v) => *v,
            Answer::Entries(_) => None,
        }
    }

    /// The entries of a range's or scan's answer (empty for a point query's).
    pub fn entries(&self) -> &[(K, u64)] {
        match self {
            Answer::Value(_) => &[],
            Answer::Entries(e) => e,
        }
    }
}

/// Queries in any order, and after [`Pi::execute`](super::Pi::execute) their answers, one per
/// query in the same order.
///
/// ```
/// use mlpdex::pi::{Answer, Batch, Query};
///
/// let mut b = Batch::new();
/// b.push(Query::Insert(7, 70));
/// b.push(Query::Get(7));
/// b.push(Query::range(5..10));
/// assert_eq!(b.len(), 3);
/// assert!(b.answers().is_empty()); // until executed
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch<K = u64> {
    pub(crate) queries: Vec<Query<K>>,
    pub(crate) answers: Vec<Answer<K>>,
}

impl<K> Default for Batch<K> {
    fn default() -> Self {
        Batch {
            queries: Vec::new(),
            answers: Vec::new(),
        }
    }
}

impl<K> Batch<K> {
    /// An empty batch.
    pub fn new() -> Batch<K> {
        Batch::default()
    }

    /// An empty batch with room for `n` queries.
    pub fn with_capacity(n: usize) -> Batch<K> {
        Batch {
            queries: Vec::with_capacity(n),
            answers: Vec::with_capacity(n),
        }
    }

    /// Appends a query (and forgets the answers of an earlier execution).
    pub fn push(&mut self, q: Query<K>) {
        self.answers.clear();
        self.queries.push(q);
    }

    /// The queries, in the order pushed.
    pub fn queries(&self) -> &[Query<K>] {
        &self.queries
    }

    /// The answers of the last execution, one per query in the same order (empty before).
    pub fn answers(&self) -> &[Answer<K>] {
        &self.answers
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether there is no query.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// Removes every query and answer, keeping the room.
    pub fn clear(&mut self) {
        self.queries.clear();
        self.answers.clear();
    }
}

impl<K> Extend<Query<K>> for Batch<K> {
    fn extend<I: IntoIterator<Item = Query<K>>>(&mut self, iter: I) {
        self.answers.clear();
        self.queries.extend(iter);
    }
}

impl<K> FromIterator<Query<K>> for Batch<K> {
    fn from_iter<I: IntoIterator<Item = Query<K>>>(iter: I) -> Batch<K> {
        Batch {
            queries: iter.into_iter().collect(),
            answers: Vec::new(),
        }
    }
}
