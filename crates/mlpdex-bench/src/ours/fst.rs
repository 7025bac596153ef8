//! `fst`: [`mlpdex::fst::Fst`] with complete keys, built once from the sorted load set (the
//! timed `load` includes sorting, as for the other static indexes); `fst-plain` keeps the
//! suffixes byte for byte ([`SuffixCoding::Plain`]), to measure what their coding costs.

use std::ops::Bound;

use mlpdex::fst::{Config, Fst, FstBuilder, SuffixCoding};

use crate::adapter::{BenchIndex, Caps};
use crate::keys::Keys;

/// The FST with the default configuration, or with plain suffixes when `PLAIN`.
#[derive(Debug)]
pub struct FstIndex<const PLAIN: bool = false>(Fst);

impl<const PLAIN: bool> BenchIndex for FstIndex<PLAIN> {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        let config = Config {
            suffix_coding: if PLAIN {
                SuffixCoding::Plain
            } else {
                SuffixCoding::Auto
            },
            ..Config::default()
        };
        let builder = FstBuilder::with_config(config);
        Ok(FstIndex(super::build_sorted(load_set, builder)?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0.lower_bound_value(Bound::Included(key))
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        self.0.get_batch(keys, out);
    }

    fn lower_bound_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        // Bounds built on the stack, 64 at a time: no allocation while timing.
        let mut bounds = [Bound::Unbounded; 64];
        for (ks, os) in keys.chunks(64).zip(out.chunks_mut(64)) {
            for (b, k) in bounds.iter_mut().zip(ks) {
                *b = Bound::Included(*k);
            }
            self.0.lower_bound_value_batch(&bounds[..ks.len()], os);
        }
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        super::scan_cursor(self.0.cursor((Bound::Included(start), Bound::Unbounded)), n)
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        let s = self.0.stats();
        let n = keys.max(1) as f64;
        vec![format!(
            "structure {:.1} bits/key without values (trie {:.1}, suffixes {:.1}, {}); {} of {} levels dense; LOUDS-Sparse {:.2} bits/node",
            self.0.structure_bytes() as f64 * 8.0 / n,
            (s.dense_bits + s.sparse_bits) as f64 / n,
            (self.0.structure_bytes() * 8 - s.dense_bits - s.sparse_bits) as f64 / n,
            if self.0.suffixes_coded() {
                "coded"
            } else {
                "plain"
            },
            s.dense_levels,
            s.levels,
            s.sparse_bits_per_node(),
        )]
    }
}
