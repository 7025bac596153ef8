//! The top of the trie as a flat bitmap (paper §4.3, "Flat Bitmap For Top Layers"): one bit
//! per 3-byte prefix (2 MiB), saying whether some key starts with it, plus two summary levels
//! (one bit per 256-bit block, one bit per summary word) so that ordered searches skip empty
//! stretches in a few word reads.

use crate::Error;
use crate::substrate::region::{HugePages, Region};

/// Number of 3-byte prefixes.
pub(crate) const TOP: u32 = 1 << 24;
const L3_WORDS: usize = (TOP / 64) as usize;
const L2_WORDS: usize = (TOP / 256 / 64) as usize;
const L1_WORDS: usize = L2_WORDS / 64;

/// The bitmap. Invariant: an `l2` bit is set iff its 256-bit block of `l3` has a set bit, and
/// an `l1` bit iff its `l2` word is non-zero.
pub(crate) struct Top {
    l3: Region,
    l2: Box<[u64; L2_WORDS]>,
    l1: [u64; L1_WORDS],
}

impl Top {
    pub(crate) fn new(huge: HugePages) -> Result<Top, Error> {
        Ok(Top {
            l3: Region::new_zeroed(L3_WORDS * 8, huge)?,
            l2: Box::new([0; L2_WORDS]),
            l1: [0; L1_WORDS],
        })
    }

    /// A copy (the l3 words through the summaries, so only non-empty blocks are read), mapped
    /// on pages as `huge` asks.
    pub(crate) fn try_clone(&self, huge: HugePages) -> Result<Top, Error> {
        let mut t = Top::new(huge)?;
        let mut blk = self.next_block(0);
        while let Some(b) = blk {
            for i in 0..4 {
                *t.word_mut(b as usize * 4 + i) = self.word(b as usize * 4 + i);
            }
            blk = self.next_block(b + 1);
        }
        t.l2.copy_from_slice(&self.l2[..]);
        t.l1 = self.l1;
        Ok(t)
    }

    /// Bytes mapped from the operating system (the 3-byte level).
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.l3.memory_usage()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.l3.memory_usage() + size_of::<[u64; L2_WORDS]>() + size_of::<Self>()
    }

    #[inline(always)]
    fn word(&self, w: usize) -> u64 {
        debug_assert!(w < L3_WORDS);
        // SAFETY: the region holds `L3_WORDS` zero-initialised, 8-byte aligned words.
        unsafe { *self.l3.as_ptr().cast::<u64>().add(w) }
    }

    #[inline(always)]
    fn word_mut(&mut self, w: usize) -> &mut u64 {
        debug_assert!(w < L3_WORDS);
        // SAFETY: as in `word`; `&mut self` makes the reference unique.
        unsafe { &mut *self.l3.as_ptr().cast::<u64>().add(w) }
    }

    #[inline]
    pub(crate) fn get(&self, p: u32) -> bool {
        self.word((p >> 6) as usize) >> (p & 63) & 1 != 0
    }

    pub(crate) fn set(&mut self, p: u32) {
        *self.word_mut((p >> 6) as usize) |= 1 << (p & 63);
        let blk = p >> 8;
        self.l2[(blk >> 6) as usize] |= 1 << (blk & 63);
        self.l1[(blk >> 12) as usize] |= 1 << ((blk >> 6) & 63);
    }

    pub(crate) fn clear(&mut self, p: u32) {
        *self.word_mut((p >> 6) as usize) &= !(1 << (p & 63));
        let blk = p >> 8;
        let w = (blk as usize) * 4;
        if (0..4).all(|i| self.word(w + i) == 0) {
            self.l2[(blk >> 6) as usize] &= !(1 << (blk & 63));
            if self.l2[(blk >> 6) as usize] == 0 {
                self.l1[(blk >> 12) as usize] &= !(1 << ((blk >> 6) & 63));
            }
        }
    }

    /// Zeroes every bit (the l3 words through the summaries, so only touched blocks are
    /// written).
    pub(crate) fn clear_all(&mut self) {
        let mut blk = self.next_block(0);
        while let Some(b) = blk {
            for i in 0..4 {
                *self.word_mut(b as usize * 4 + i) = 0;
            }
            blk = self.next_block(b + 1);
        }
        self.l2.fill(0);
        self.l1 = [0; L1_WORDS];
    }

    /// First non-empty block `≥ blk`.
    fn next_block(&self, blk: u32) -> Option<u32> {
        if blk >= TOP >> 8 {
            return None;
        }
        let mut w = (blk >> 6) as usize;
        let bits = self.l2[w] & (!0u64 << (blk & 63));
        if bits != 0 {
            return Some((w as u32) << 6 | bits.trailing_zeros());
        }
        // The next non-zero l2 word after `w`, through l1.
        w += 1;
        let mut s = w >> 6;
        if s >= L1_WORDS {
            return None;
        }
        let mut sb = self.l1[s] & (!0u64).checked_shl((w & 63) as u32).unwrap_or(0);
        loop {
            if sb != 0 {
                let w = (s << 6) | sb.trailing_zeros() as usize;
                return Some((w as u32) << 6 | self.l2[w].trailing_zeros());
            }
            s += 1;
            if s == L1_WORDS {
                return None;
            }
            sb = self.l1[s];
        }
    }

    /// Last non-empty block `≤ blk`.
    fn prev_block(&self, blk: u32) -> Option<u32> {
        let blk = blk.min((TOP >> 8) - 1);
        let w = (blk >> 6) as usize;
        let bits = self.l2[w] & (!0u64 >> (63 - (blk & 63)));
        if bits != 0 {
            return Some((w as u32) << 6 | (63 - bits.leading_zeros()));
        }
        if w == 0 {
            return None;
        }
        let w = w - 1;
        let mut s = w >> 6;
        let mut sb = self.l1[s] & (!0u64 >> (63 - (w & 63)));
        loop {
            if sb != 0 {
                let w = (s << 6) | (63 - sb.leading_zeros()) as usize;
                return Some((w as u32) << 6 | (63 - self.l2[w].leading_zeros()));
            }
            if s == 0 {
                return None;
            }
            s -= 1;
            sb = self.l1[s];
        }
    }

    /// First set prefix `≥ p`.
    pub(crate) fn next(&self, p: u32) -> Option<u32> {
        if p >= TOP {
            return None;
        }
        let blk = p >> 8;
        for i in ((p >> 6) & 3)..4 {
            let mut bits = self.word((blk * 4 + i) as usize);
            if i == (p >> 6) & 3 {
                bits &= !0u64 << (p & 63);
            }
            if bits != 0 {
                return Some(blk << 8 | i << 6 | bits.trailing_zeros());
            }
        }
        let b = self.next_block(blk + 1)?;
        (0..4)
            .find_map(|i| {
                let bits = self.word((b * 4 + i) as usize);
                (bits != 0).then(|| b << 8 | i << 6 | bits.trailing_zeros())
            })
            .or_else(|| unreachable!("a summary bit names an empty block"))
    }

    /// Last set prefix `≤ p` (any `p`, clamped to the last prefix).
    pub(crate) fn prev(&self, p: u32) -> Option<u32> {
        let p = p.min(TOP - 1);
        let blk = p >> 8;
        for i in (0..=((p >> 6) & 3)).rev() {
            let mut bits = self.word((blk * 4 + i) as usize);
            if i == (p >> 6) & 3 {
                bits &= !0u64 >> (63 - (p & 63));
            }
            if bits != 0 {
                return Some(blk << 8 | i << 6 | (63 - bits.leading_zeros()));
            }
        }
        let b = self.prev_block(blk.checked_sub(1)?)?;
        (0..4)
            .rev()
            .find_map(|i| {
                let bits = self.word((b * 4 + i) as usize);
                (bits != 0).then(|| b << 8 | i << 6 | (63 - bits.leading_zeros()))
            })
            .or_else(|| unreachable!("a summary bit names an empty block"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn next_and_prev_match_a_set() {
        let mut t = Top::new(HugePages::Auto).unwrap();
        let mut s = BTreeSet::new();
        let mut x = 7u64;
        // Fewer operations under miri, which interprets every bitmap word.
        let ops = if cfg!(miri) { 200 } else { 3000 };
        for i in 0..ops {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let p = match i % 4 {
                0 => (x >> 40) as u32,
                1 => (x >> 56) as u32,
                2 => TOP - 1 - (x >> 58) as u32,
                _ => ((x >> 40) as u32) & 0xFF_0FFF,
            };
            if x >> 63 == 0 || i < ops / 2 {
                t.set(p);
                s.insert(p);
            } else {
                t.clear(p);
                s.remove(&p);
            }
            let q = ((x >> 20) as u32) % TOP;
            for q in [q, p, 0, TOP - 1, p.saturating_sub(1), (p + 1) % TOP] {
                assert_eq!(t.next(q), s.range(q..).next().copied(), "next({q})");
                assert_eq!(t.prev(q), s.range(..=q).next_back().copied(), "prev({q})");
                assert_eq!(t.get(q), s.contains(&q));
            }
        }
        t.clear_all();
        assert_eq!(t.next(0), None);
        assert_eq!(t.prev(TOP - 1), None);
    }
}
