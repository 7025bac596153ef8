//! `congee`: a concurrent adaptive radix tree with optimistic lock coupling (8-byte keys only).
//!
//! Quirk: congee's range scan is half-open `[start, end)` over `usize`, so a scan or seek can
//! never return the key `u64::MAX`; on the harness's datasets that key occurs with negligible
//! probability.

use std::cell::RefCell;

use congee::Congee;

use super::u64_key;
use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// `congee::Congee<usize, usize>` over big-endian 8-byte keys.
pub struct Art(Congee<usize, usize>);

impl std::fmt::Debug for Art {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Art")
    }
}

thread_local! {
    // Scan output buffer, reused so scans do not allocate.
    static SCRATCH: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

impl Art {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        let guard = self.0.pin();
        match self.0.insert(u64_key(key) as usize, value as usize, &guard) {
            Ok(prev) => prev.map(|v| v as u64),
            Err(_) => oom(),
        }
    }
}

#[cold]
#[inline(never)]
fn oom() -> ! {
    panic!("congee could not allocate a node")
}

impl BenchIndex for Art {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        super::check_width::<u64>(load_set, "congee")?;
        Ok(Art(Congee::default()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let guard = self.0.pin();
        self.0
            .get(&(u64_key(key) as usize), &guard)
            .map(|v| v as u64)
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
        let guard = self.0.pin();
        let mut out = [(0usize, 0usize); 1];
        let start = u64_key(key) as usize;
        let n = self.0.range(&start, &usize::MAX, &mut out, &guard);
        (n == 1).then_some(out[0].1 as u64)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let start = u64_key(start) as usize;
        SCRATCH.with_borrow_mut(|buf| {
            if buf.len() < n {
                buf.resize(n, (0, 0));
            }
            let guard = self.0.pin();
            let got = self.0.range(&start, &usize::MAX, &mut buf[..n], &guard);
            buf[..got].iter().map(|&(_, v)| v as u64).reduce(fold)
        })
    }
}
