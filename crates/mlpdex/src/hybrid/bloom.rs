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

/// Bits tested per key.
const PROBES: u32 = 6;
/// Bits of filter per key of capacity.
pub(crate) const BITS_PER_KEY: usize = 10;

/// One cache line of bits.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Block([AtomicU64; 8]);

const _: () = assert!(size_of::<Block>() == 64 && align_of::<Block>() == 64);

/// A blocked Bloom filter sized for a number of keys.
#[derive(Debug)]
pub(crate) struct Bloom {
    blocks: Box<[Block]>,
}

impl Bloom {
    /// An empty filter for about `keys` keys.
    pub(crate) fn with_capacity(keys: usize) -> Bloom {
        let blocks = (keys.max(1) * BITS_PER_KEY).div_ceil(512);
        Bloom {
            blocks: (0..blocks).map(|_| Block::default()).collect(),
        }
    }

    /// The one-bits `key` sets in each word of its block, and the block.
    #[inline(always)]
    fn masks(&self, key: &[u8]) -> (usize, [u64; 8]) {
        let (b, mut bits) = self.locate(key);
        let mut masks = [0u64; 8];
        for _ in 0..PROBES {
            let bit = (bits & 511) as usize;
            masks[bit / 64] |= 1 << (bit % 64);
            bits >>= 9;
        }
        (b, masks)
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
}
