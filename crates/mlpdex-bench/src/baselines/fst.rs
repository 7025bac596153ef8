//! `fst-crate`: the fst crate's `Map`, a minimal acyclic finite-state transducer built once from
//! sorted keys (the timed `load` includes sorting). `fst-crate-set`: its `Set` of the same keys,
//! whose size is the structure without values.

use fst::{IntoStreamer, Map, MapBuilder, Set, SetBuilder, Streamer};

use crate::adapter::{BenchIndex, Caps, fold, value_of};
use crate::keys::Keys;

/// `fst::Map` over an owned byte buffer.
#[derive(Debug)]
pub struct FstMap(Map<Vec<u8>>);

impl BenchIndex for FstMap {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        let order = super::sorted_order(load_set);
        let mut b = MapBuilder::memory();
        for &i in &order {
            b.insert(load_set.get(i as usize), value_of(i as usize))?;
        }
        Ok(FstMap(b.into_map()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        vec![fst_size_note(self.0.as_fst().as_bytes().len(), keys)]
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0.range().ge(key).into_stream().next().map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let mut s = self.0.range().ge(start).into_stream();
        let mut acc = None;
        for _ in 0..n {
            match s.next() {
                Some((_, v)) => acc = Some(acc.map_or(v, |a| fold(a, v))),
                None => break,
            }
        }
        acc
    }
}

/// `fst::Set` over an owned byte buffer: lookups answer the key's rank-free presence as 1.
#[derive(Debug)]
pub struct FstSet(Set<Vec<u8>>);

impl BenchIndex for FstSet {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: false,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        let order = super::sorted_order(load_set);
        let mut b = SetBuilder::memory();
        for &i in &order {
            b.insert(load_set.get(i as usize))?;
        }
        Ok(FstSet(b.into_set()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.contains(key).then_some(1)
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        vec![fst_size_note(self.0.as_fst().as_bytes().len(), keys)]
    }
}

/// The automaton's own size (the measured bytes per key also count its buffer's spare
/// capacity).
fn fst_size_note(bytes: usize, keys: usize) -> String {
    format!(
        "automaton {bytes} bytes, {:.1} bits/key",
        bytes as f64 * 8.0 / keys.max(1) as f64
    )
}
