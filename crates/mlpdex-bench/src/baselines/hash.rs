//! `hashmap`: `hashbrown::HashMap` (SwissTable with its default foldhash hasher), the point-query
//! speed reference: an ordered index that approaches it is doing well.

use super::Repr;
use crate::adapter::{BenchIndex, Caps};
use crate::keys::Keys;

/// `hashbrown::HashMap<R, u64>`.
#[derive(Debug)]
pub struct Hash<R: Repr>(hashbrown::HashMap<R, u64>);

impl<R: Repr> BenchIndex for Hash<R> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: false,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        super::check_width::<R>(load_set, "hashmap")?;
        Ok(Hash(hashbrown::HashMap::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        R::with_query(key, |q| self.0.get(q).copied())
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert(R::owned(key), value)
    }
}
