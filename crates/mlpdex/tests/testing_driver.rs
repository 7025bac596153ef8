//! The differential-test driver used from outside the crate, as a structure's integration tests
//! or a downstream crate would use it (`cargo test -p mlpdex --test testing_driver`).
//!
//! The map under test here wraps `std::collections::BTreeMap`, an implementation independent of
//! the driver's own `ModelMap`, so these tests also cross-check the driver's oracle handling
//! (empty and inverted ranges in particular) against a second implementation.

use mlpdex::KeyRange;
use std::collections::{BTreeMap, btree_map};
use std::ops::Bound;

use mlpdex::key::is_empty_range;
use mlpdex::testing::{KeyShape, arb_ops, differential_ordered, run_ops, try_differential_ordered};
use mlpdex::{Error, OrderedMap};
use proptest::prelude::*;

/// An `OrderedMap` over `BTreeMap`; `off_by_one_upper` makes `upper_bound(Excluded(k))` behave
/// like `Included(k)`, a bug the driver must catch.
#[derive(Default)]
struct StdMap {
    map: BTreeMap<Vec<u8>, u64>,
    off_by_one_upper: bool,
}

/// A `BTreeMap` range, or nothing for an empty or inverted range (where `BTreeMap` panics).
struct StdRange<'a>(Option<btree_map::Range<'a, Vec<u8>, u64>>);

impl<'a> Iterator for StdRange<'a> {
    type Item = (&'a [u8], &'a u64);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.as_mut()?.next().map(|(k, v)| (k.as_slice(), v))
    }
}

impl DoubleEndedIterator for StdRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.as_mut()?.next_back().map(|(k, v)| (k.as_slice(), v))
    }
}

impl OrderedMap<u64> for StdMap {
    type Key<'a> = &'a [u8];
    type Value<'a> = &'a u64;
    type Range<'a> = StdRange<'a>;

    fn get(&self, key: &[u8]) -> Option<&u64> {
        self.map.get(key)
    }
    fn insert(&mut self, key: &[u8], value: u64) -> Result<Option<u64>, Error> {
        Ok(self.map.insert(key.to_vec(), value))
    }
    fn remove(&mut self, key: &[u8]) -> Option<u64> {
        self.map.remove(key)
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn range<R>(&self, range: R) -> StdRange<'_>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return StdRange(None);
        }
        StdRange(Some(self.map.range::<[u8], _>((start, end))))
    }
    fn memory_usage(&self) -> usize {
        self.map.keys().map(|k| k.capacity() + 8).sum::<usize>() + 64
    }
    fn clear(&mut self) {
        self.map.clear();
    }
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &u64)> {
        let bound = match bound {
            Bound::Excluded(k) if self.off_by_one_upper => Bound::Included(k),
            b => b,
        };
        self.range((Bound::Unbounded, bound)).next_back()
    }
}

#[test]
fn a_btreemap_wrapper_passes_every_shape() {
    for &shape in KeyShape::ALL.iter() {
        differential_ordered(StdMap::default, shape, 2024, 5_000);
    }
}

#[test]
fn an_overridden_default_method_with_a_bug_is_caught() {
    let broken = || StdMap {
        off_by_one_upper: true,
        ..StdMap::default()
    };
    for &shape in KeyShape::ALL_BYTES {
        let d = try_differential_ordered(broken, shape, 8, 5_000)
            .expect_err("the off-by-one upper_bound was not caught");
        assert!(d.op.starts_with("upper_bound(Excluded("), "{d}");
        assert!(d.to_string().contains("seed=8 "), "{d}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_btreemap_wrapper_passes_arb_ops(ops in arb_ops()) {
        run_ops(&mut StdMap::default(), &ops).map_err(TestCaseError::fail)?;
    }
}
