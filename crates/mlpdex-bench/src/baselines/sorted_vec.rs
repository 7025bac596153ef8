//! `sorted-vec`: the static baseline: keys sorted in one array, binary search.
//!
//! Built once from the load set (the timed `load` includes sorting, as a user would pay it).
//! Integer keys live in a plain `Vec<u64>`; byte keys in one flat buffer with an offset array.
//! Values sit in a parallel array so the binary search touches only keys.

use super::u64_key;
use crate::adapter::{BenchIndex, Caps, fold, value_of};
use crate::keys::Keys;

/// Sorted keys (as integers or flat bytes) and their values.
#[derive(Debug)]
pub enum SortedVec {
    /// 8-byte datasets.
    U64 {
        /// Sorted keys.
        keys: Vec<u64>,
        /// `values[i]` belongs to `keys[i]`.
        values: Vec<u64>,
    },
    /// Other datasets.
    Bytes {
        /// Sorted keys, back to back.
        bytes: Vec<u8>,
        /// Key `i` is `bytes[starts[i]..starts[i + 1]]`.
        starts: Vec<u64>,
        /// `values[i]` belongs to key `i`.
        values: Vec<u64>,
    },
}

impl SortedVec {
    /// Index of the first key `≥ key`.
    #[inline]
    fn seek(&self, key: &[u8]) -> usize {
        match self {
            SortedVec::U64 { keys, .. } => {
                let k = u64_key(key);
                keys.partition_point(|&x| x < k)
            }
            SortedVec::Bytes { bytes, starts, .. } => {
                let n = starts.len() - 1;
                let (mut lo, mut hi) = (0, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let k = &bytes[starts[mid] as usize..starts[mid + 1] as usize];
                    if k < key {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        }
    }

    #[inline]
    fn key_eq(&self, i: usize, key: &[u8]) -> bool {
        match self {
            SortedVec::U64 { keys, .. } => keys.get(i) == Some(&u64_key(key)),
            SortedVec::Bytes { bytes, starts, .. } => {
                i + 1 < starts.len() && &bytes[starts[i] as usize..starts[i + 1] as usize] == key
            }
        }
    }

    #[inline]
    fn values(&self) -> &[u64] {
        match self {
            SortedVec::U64 { values, .. } | SortedVec::Bytes { values, .. } => values,
        }
    }
}

impl BenchIndex for SortedVec {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        let n = load_set.len();
        if load_set.fixed_width() == Some(8) {
            let mut pairs: Vec<(u64, u64)> = (0..n)
                .map(|i| (u64_key(load_set.get(i)), value_of(i)))
                .collect();
            pairs.sort_unstable_by_key(|p| p.0);
            let (keys, values) = pairs.into_iter().unzip();
            return Ok(SortedVec::U64 { keys, values });
        }
        let order = super::sorted_order(load_set);
        let mut bytes = Vec::with_capacity(load_set.total_key_bytes());
        let mut starts = Vec::with_capacity(n + 1);
        let mut values = Vec::with_capacity(n);
        starts.push(0);
        for &i in &order {
            bytes.extend_from_slice(load_set.get(i as usize));
            starts.push(bytes.len() as u64);
            values.push(value_of(i as usize));
        }
        Ok(SortedVec::Bytes {
            bytes,
            starts,
            values,
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let i = self.seek(key);
        self.key_eq(i, key).then(|| self.values()[i])
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.values().get(self.seek(key)).copied()
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let i = self.seek(start);
        let values = self.values();
        values[i.min(values.len())..(i + n).min(values.len())]
            .iter()
            .copied()
            .reduce(fold)
    }
}
