//! The Bloom filter over the dynamic stage's keys (thesis §5.1): a point lookup whose key it
//! rules out skips the dynamic stage and reads only the static one.
//!
//! Blocked: every key sets and tests [`PROBES`] bits of one 64-byte block, so a test costs
//! one cache line (and one hash of the key) however many probes it makes. At 10 bits a key
//! the false-positive rate is about 1%. The filter only grows: keys leaving the dynamic stage
//! (a remove) stay set until the next merge empties the stage and the filter with it.
//!
//! The bits are atomic words so that the [`ConcurrentHybrid`](super::ConcurrentHybrid) can set
//! them through `&self` while readers test them ([`insert_shared`](Bloom::insert_shared));
//! the single-threaded [`Hybrid`](super::Hybrid) sets them through `&mut self` with plain
//! stores ([`insert`](Bloom::insert)), and a test is a plain load either way.

use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::{Acquire, Release};

use crate::substrate::hash::{hash_bytes, hash_u64};

/// Bits of filter per key of capacity (of the filter over the dynamic stage).
pub(crate) const BITS_PER_KEY: usize = 10;
/// The most bits a key can test: each takes 9 bits of one 64-bit hash.
const MAX_PROBES: u32 = 7;

/// One cache line of bits.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Block([AtomicU64; 8]);

const _: () = assert!(size_of::<Block>() == 64 && align_of::<Block>() == 64);

/// A blocked Bloom filter sized for a number of keys.
#[derive(Debug)]
pub(crate) struct Bloom {
    blocks: Box<[Block]>,
    /// Bits each key sets and tests.
    probes: u32,
}

impl Bloom {
    /// An empty filter for about `keys` keys at [`BITS_PER_KEY`].
    pub(crate) fn with_capacity(keys: usize) -> Bloom {
        Bloom::with_bits(keys, BITS_PER_KEY)
    }

    /// An empty filter of `bits` (at least 1) per key for about `keys` keys, testing about
    /// 0.6 bits per bit of key (6 at 10 bits a key, 2 at 4: a blocked filter's best counts).
    pub(crate) fn with_bits(keys: usize, bits: usize) -> Bloom {
        debug_assert!(bits > 0);
        let blocks = (keys.max(1) * bits).div_ceil(512);
        Bloom {
            blocks: (0..blocks).map(|_| Block::default()).collect(),
            probes: ((bits * 6 + 5) / 10).clamp(1, MAX_PROBES as usize) as u32,
        }
    }

    /// The one-bits `key` sets in each word of its block, and the block.
    #[inline(always)]
    fn masks(&self, key: &[u8]) -> (usize, [u64; 8]) {
        let (b, bits) = self.locate(key);
        (b, self.masks_of(bits))
    }

    /// The one-bits a key whose bit-picking hash is `bits` sets in each word of its block.
    #[inline(always)]
    fn masks_of(&self, mut bits: u64) -> [u64; 8] {
        let mut masks = [0u64; 8];
        for _ in 0..self.probes {
            let bit = (bits & 511) as usize;
            masks[bit / 64] |= 1 << (bit % 64);
            bits >>= 9;
        }
        masks
    }

    /// The block of `key` and the hash that picks its bits.
    #[inline(always)]
    fn locate(&self, key: &[u8]) -> (usize, u64) {
        let h = hash_bytes(key, 0x6879_6272_6964);
        let block = ((h as u128 * self.blocks.len() as u128) >> 64) as usize;
        (block, hash_u64(h, 1))
    }

    /// Records `key` (plain stores: no other thread can see the filter).
    pub(crate) fn insert(&mut self, key: &[u8]) {
        let (b, masks) = self.masks(key);
        for (word, mask) in self.blocks[b].0.iter_mut().zip(masks) {
            *word.get_mut() |= mask;
        }
    }

    /// Records `key` while other threads test the filter. The writer calls it before it puts
    /// `key` in the stage the filter guards, so a reader that finds one of the key's bits
    /// clear tested before that put took effect, and may skip the stage.
    pub(crate) fn insert_shared(&self, key: &[u8]) {
        let (b, masks) = self.masks(key);
        for (word, mask) in self.blocks[b].0.iter().zip(masks) {
            if mask != 0 && word.load(Acquire) & mask != mask {
                word.fetch_or(mask, Release);
            }
        }
    }

    /// A writer that records keys a group at a time (see [`Grouped`]).
    pub(crate) fn grouped(&mut self) -> Grouped<'_> {
        Grouped {
            filter: self,
            group: [(0, 0); GROUP],
            n: 0,
        }
    }

    /// Records `key`, returning whether it may have been recorded before (every one of its
    /// bits was set already): a test and an insert for one hash and one cache line.
    pub(crate) fn insert_test(&mut self, key: &[u8]) -> bool {
        let (b, masks) = self.masks(key);
        let mut all = true;
        for (word, mask) in self.blocks[b].0.iter_mut().zip(masks) {
            let w = word.get_mut();
            all &= *w & mask == mask;
            *w |= mask;
        }
        all
    }

    /// Starts loading the cache line `key` tests.
    #[inline]
    pub(crate) fn prefetch(&self, key: &[u8]) {
        let (b, _) = self.locate(key);
        crate::substrate::prefetch::prefetch_write(self.blocks[b].0.as_ptr());
    }

    /// False when `key` was certainly never inserted.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (b, masks) = self.masks(key);
        let block = &self.blocks[b].0;
        let mut all = true;
        for (word, mask) in block.iter().zip(masks) {
            all &= word.load(Acquire) & mask == mask;
        }
        all
    }

    /// Bytes the filter takes.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * size_of::<Block>()
    }
}

/// Keys a [`Grouped`] writer hashes before it sets any of their bits.
const GROUP: usize = 32;

/// Records keys into a [`Bloom`] a group at a time: each key is hashed and its block
/// prefetched when it is pushed, and its bits set once the group is full (or at the end), so
/// that the group's cache misses overlap instead of each stalling the next. A rebuild from a
/// static stage of millions of keys writes a filter far larger than the caches.
pub(crate) struct Grouped<'a> {
    filter: &'a mut Bloom,
    group: [(usize, u64); GROUP],
    n: usize,
}

impl Grouped<'_> {
    /// Records `key` (by the end of the group, or the writer's drop).
    #[inline]
    pub(crate) fn push(&mut self, key: &[u8]) {
        let (b, bits) = self.filter.locate(key);
        crate::substrate::prefetch::prefetch_write(self.filter.blocks[b].0.as_ptr());
        self.group[self.n] = (b, bits);
        self.n += 1;
        if self.n == GROUP {
            self.flush();
        }
    }

    /// Sets the bits of the keys pushed so far.
    fn flush(&mut self) {
        for &(b, bits) in &self.group[..self.n] {
            let masks = self.filter.masks_of(bits);
            for (word, mask) in self.filter.blocks[b].0.iter_mut().zip(masks) {
                *word.get_mut() |= mask;
            }
        }
        self.n = 0;
    }
}

impl Drop for Grouped<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        // Smaller under miri, where each hash takes milliseconds (no unsafe code here).
        let n: u64 = if cfg!(miri) { 500 } else { 20_000 };
        let mut f = Bloom::with_capacity(n as usize);
        for i in 0..n {
            f.insert(&i.to_be_bytes());
        }
        assert!((0..n).all(|i| f.may_contain(&i.to_be_bytes())));
        let fp = (n..11 * n)
            .filter(|i| f.may_contain(&i.to_be_bytes()))
            .count();
        let rate = fp as f64 / (10 * n) as f64;
        assert!(rate < 0.03, "false-positive rate {rate}");
        assert_eq!(f.bytes(), (n as usize * BITS_PER_KEY).div_ceil(512) * 64);
    }

    #[test]
    fn grouped_inserts_set_what_single_inserts_set_and_few_bits_still_filter() {
        let n: u64 = if cfg!(miri) { 300 } else { 20_000 };
        for bits in [1, 4, 8] {
            let mut one = Bloom::with_bits(n as usize, bits);
            let mut grouped = Bloom::with_bits(n as usize, bits);
            for i in 0..n {
                one.insert(&i.to_be_bytes());
            }
            let mut g = grouped.grouped();
            for i in 0..n {
                g.push(&i.to_be_bytes());
            }
            drop(g);
            let words = |f: &Bloom| -> Vec<u64> {
                f.blocks
                    .iter()
                    .flat_map(|b| b.0.iter().map(|w| w.load(Acquire)))
                    .collect()
            };
            assert_eq!(words(&one), words(&grouped), "{bits} bits");
            assert!((0..n).all(|i| grouped.may_contain(&i.to_be_bytes())));
            let fp = (n..5 * n)
                .filter(|i| one.may_contain(&i.to_be_bytes()))
                .count();
            let rate = fp as f64 / (4 * n) as f64;
            let most = [0.0, 0.7, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.05][bits];
            assert!(rate < most, "{bits} bits: false-positive rate {rate}");
        }
    }
}
