//! `mlp-index-bytes`: [`mlpdex::mlp_index_bytes::MlpIndexBytes`] with `u64` values;
//! `mlp-index-bytes-concurrent`: [`mlpdex::mlp_index_bytes::ConcurrentMlpIndexBytes`].

use std::ops::Bound;
use std::sync::Arc;

use mlpdex::epoch::pin;
use mlpdex::mlp_index_bytes::{ConcurrentMlpIndexBytes, MlpIndexBytes};

use super::copied;
use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// The string MlpIndex; loads insert one key at a time.
#[derive(Debug)]
pub struct MlpBytes(MlpIndexBytes<u64>);

impl BenchIndex for MlpBytes {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        Ok(MlpBytes(MlpIndexBytes::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        copied(keys, out, |ks, refs| self.0.get_batch(ks, refs));
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0.lower_bound(Bound::Included(key)).map(|(_, &v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        self.0
            .range((Bound::Included(start), Bound::Unbounded))
            .take(n)
            .map(|(_, &v)| v)
            .reduce(fold)
    }
}

/// The string MlpIndex for many threads; shared by the run's threads.
#[derive(Debug, Clone)]
pub struct MlpBytesConcurrent(Arc<ConcurrentMlpIndexBytes<u64>>);

impl MlpBytesConcurrent {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }
}

impl BenchIndex for MlpBytesConcurrent {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        Ok(MlpBytesConcurrent(Arc::new(ConcurrentMlpIndexBytes::new())))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key, &pin()).copied()
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        let guard = pin();
        copied(keys, out, |ks, refs| self.0.get_batch(ks, refs, &guard));
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.put(key, value)
    }

    #[inline]
    fn insert_shared(&self, key: &[u8], value: u64) -> Option<u64> {
        self.put(key, value)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0
            .lower_bound(Bound::Included(key), &pin())
            .map(|(_, &v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let guard = pin();
        self.0
            .range((Bound::Included(start), Bound::Unbounded), &guard)
            .take(n)
            .map(|(_, &v)| v)
            .reduce(fold)
    }
}
