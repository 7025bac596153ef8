//! Baselines: the best existing indexes, behind the same adapter as mlpdex's own.
//!
//! | name | index | keys | serves |
//! |---|---|---|---|
//! | `btreemap` | `std::collections::BTreeMap` | any | everything, one thread |
//! | `skipmap` | `crossbeam_skiplist::SkipMap` (lock-free skip list) | any | everything, many threads |
//! | `congee` | `congee::Congee` (concurrent ART, optimistic lock coupling) | 8 bytes only | everything, many threads |
//! | `hashmap` | `hashbrown::HashMap` (SwissTable, foldhash) | any | point operations, one thread |
//! | `ht`, `hti`, `ch` | the hash tables of the shortcut-EH paper (§4.2): linear probing doubled whole or incrementally, chaining | 8 bytes only | gets and inserts, one thread |
//! | `sorted-vec` | sorted arrays + binary search, built once | any | reads and seeks, one thread |
//! | `fst-crate` | `fst::Map` (the fst crate's FST), built once | any | reads and seeks, one thread |
//!
//! Measured honestly against the best: when every key of the dataset is 8 bytes long, the
//! baselines store them as `u64` (big-endian order, so `BTreeMap<u64, u64>` and friends, as a
//! user with integer keys would), and otherwise as `Box<[u8]>`. [`Repr`] is that choice.

use core::borrow::Borrow;
use core::hash::Hash;

use mlpdex::key::key_to_u64;

pub mod btree;
pub mod congee;
pub mod fst;
pub mod hash;
pub mod hash_tables;
pub mod scc_tree;
pub mod skipmap;
pub mod sorted_vec;

/// How a baseline stores keys: `u64` for 8-byte datasets, `Box<[u8]>` otherwise.
pub trait Repr: Ord + Hash + Clone + Send + Sync + 'static + Borrow<Self::Query> {
    /// The borrowed form used for lookups (`u64` or `[u8]`).
    type Query: ?Sized + Ord + Hash;
    /// Whether keys of this width can be stored in this representation.
    fn accepts(width: Option<usize>) -> bool;
    /// The stored form of `key`.
    fn owned(key: &[u8]) -> Self;
    /// Runs `f` on the lookup form of `key` (no allocation).
    fn with_query<R>(key: &[u8], f: impl FnOnce(&Self::Query) -> R) -> R;
}

impl Repr for u64 {
    type Query = u64;
    fn accepts(width: Option<usize>) -> bool {
        width == Some(8)
    }
    #[inline]
    fn owned(key: &[u8]) -> Self {
        u64_key(key)
    }
    #[inline]
    fn with_query<R>(key: &[u8], f: impl FnOnce(&u64) -> R) -> R {
        f(&u64_key(key))
    }
}

impl Repr for Box<[u8]> {
    type Query = [u8];
    fn accepts(_width: Option<usize>) -> bool {
        true
    }
    #[inline]
    fn owned(key: &[u8]) -> Self {
        key.into()
    }
    #[inline]
    fn with_query<R>(key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        f(key)
    }
}

/// The integer of an 8-byte key. Datasets are checked to be 8 bytes wide before an integer
/// representation is chosen (see [`Repr::accepts`]), so any other width is a harness bug.
#[inline]
pub fn u64_key(key: &[u8]) -> u64 {
    match key_to_u64(key) {
        Some(x) => x,
        None => width_bug(key.len()),
    }
}

#[cold]
#[inline(never)]
fn width_bug(len: usize) -> ! {
    panic!("internal error: a {len}-byte key reached an integer-keyed index")
}

/// Fails unless the load set's width suits representation `R`.
pub fn check_width<R: Repr>(load_set: &crate::keys::Keys, index: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        R::accepts(load_set.fixed_width()),
        "{index} takes only 8-byte keys; this dataset's keys are {}",
        match load_set.fixed_width() {
            Some(w) => format!("{w} bytes long"),
            None => "of varying length".to_string(),
        }
    );
    Ok(())
}

/// Positions of `keys` in ascending key order.
///
/// Sorts (8-byte big-endian prefix, position) pairs, comparing whole keys only on equal
/// prefixes: the prefix (zero-padded) orders keys exactly as their bytes do, and comparing it
/// avoids a random access into the key store per comparison, which made building the static
/// baselines several times slower.
pub fn sorted_order(keys: &crate::keys::Keys) -> Vec<u32> {
    let mut v: Vec<(u64, u32)> = (0..keys.len())
        .map(|i| (prefix8(keys.get(i)), i as u32))
        .collect();
    v.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| keys.get(a.1 as usize).cmp(keys.get(b.1 as usize)))
    });
    v.into_iter().map(|(_, i)| i).collect()
}

/// The first 8 bytes of `key` as a big-endian integer, zero-padded.
#[inline]
fn prefix8(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Keys;

    #[test]
    fn sorted_order_matches_byte_order() {
        let raw: Vec<&[u8]> = vec![
            b"ab",
            b"a",
            b"",
            b"a\0",
            b"abcdefghij",
            b"abcdefghi",
            b"abcdefgh\xff",
            b"\xff",
            b"abcdefgh",
            b"b",
            b"a\0\0",
        ];
        let keys: Keys = raw.iter().copied().collect();
        let order = sorted_order(&keys);
        let got: Vec<&[u8]> = order.iter().map(|&i| keys.get(i as usize)).collect();
        let mut want = raw.clone();
        want.sort();
        assert_eq!(got, want);
    }
}
