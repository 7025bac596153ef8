//! A batch of queries for [`Pi::execute`](super::Pi::execute) and their answers.

use core::ops::{Bound, RangeBounds};

/// One query of a [`Batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// The key's value ([`Answer::Value`]).
    Get(u64),
    /// Sets the key's value; answers the old one ([`Answer::Value`]), like
    /// `BTreeMap::insert`.
    Insert(u64, u64),
    /// Removes the key; answers its value ([`Answer::Value`]), like `BTreeMap::remove`.
    Remove(u64),
    /// The entries with keys in `(start, end)`, in key order ([`Answer::Entries`]).
    Range(Bound<u64>, Bound<u64>),
    /// The first `count` entries with keys at least the key, in key order
    /// ([`Answer::Entries`]): `map.range(key..).take(count)`, the scan of YCSB's workload E.
    Scan(u64, usize),
}

impl Query {
    /// A range query over any `RangeBounds<u64>` (`3..7`, `..=9`, `..`).
    pub fn range(r: impl RangeBounds<u64>) -> Query {
        Query::Range(r.start_bound().cloned(), r.end_bound().cloned())
    }

    /// The key the query is ordered by, and for a range or scan its last possible key;
    /// `None` for a range or scan that holds no key.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        match *self {
            Query::Get(k) | Query::Insert(k, _) | Query::Remove(k) => Some((k, k)),
            Query::Scan(k, count) => (count > 0).then_some((k, u64::MAX)),
            Query::Range(start, end) => {
                let lo = match start {
                    Bound::Included(k) => k,
                    Bound::Excluded(k) => k.checked_add(1)?,
                    Bound::Unbounded => 0,
                };
                let hi = match end {
                    Bound::Included(k) => k,
                    Bound::Excluded(k) => k.checked_sub(1)?,
                    Bound::Unbounded => u64::MAX,
                };
                (lo <= hi).then_some((lo, hi))
            }
        }
    }
}

/// The answer to one [`Query`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// To `Get`, `Insert` and `Remove`: the value found (before the change, for writes).
    Value(Option<u64>),
    /// To `Range` and `Scan`: the entries in key order.
    Entries(Vec<(u64, u64)>),
}

impl Answer {
    /// The value of a point query's answer (`None` for a range's or scan's).
    pub fn value(&self) -> Option<u64> {
        match self {
            Answer::Value(v) => *v,
            Answer::Entries(_) => None,
        }
    }

    /// The entries of a range's or scan's answer (empty for a point query's).
    pub fn entries(&self) -> &[(u64, u64)] {
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub(crate) queries: Vec<Query>,
    pub(crate) answers: Vec<Answer>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// An empty batch with room for `n` queries.
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            queries: Vec::with_capacity(n),
            answers: Vec::with_capacity(n),
        }
    }

    /// Appends a query (and forgets the answers of an earlier execution).
    pub fn push(&mut self, q: Query) {
        self.answers.clear();
        self.queries.push(q);
    }

    /// The queries, in the order pushed.
    pub fn queries(&self) -> &[Query] {
        &self.queries
    }

    /// The answers of the last execution, one per query in the same order (empty before).
    pub fn answers(&self) -> &[Answer] {
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

impl Extend<Query> for Batch {
    fn extend<I: IntoIterator<Item = Query>>(&mut self, iter: I) {
        self.answers.clear();
        self.queries.extend(iter);
    }
}

impl FromIterator<Query> for Batch {
    fn from_iter<I: IntoIterator<Item = Query>>(iter: I) -> Batch {
        Batch {
            queries: iter.into_iter().collect(),
            answers: Vec::new(),
        }
    }
}
