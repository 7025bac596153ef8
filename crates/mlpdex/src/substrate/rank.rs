//! Rank and select over a [`BitVec`], tuned as in memory-efficient-search-trees.txt §3.6.
//!
//! - [`RankBits`]: a rank directory, one `u32` per basic block holding the number of ones
//!   before the block, where the block is `W` 64-bit words: `W = 1` (64-bit blocks, 50%
//!   overhead) for the LOUDS-Dense bitmaps, `W = 8` (512-bit blocks) for LOUDS-Sparse. The
//!   512-bit blocks also keep the ones before each of their words in 9-bit fields of one `u64`
//!   (as Vigna's rank9 does), stored beside the block's count in 16 bytes (25% overhead in
//!   all, against 6.25% with the paper's popcount loop), so `rank1(i)` is one popcount after
//!   one directory read (64-bit blocks) or two from one cache line: on `paths` the loop over
//!   up to seven words was an eighth of an FST `get`'s instructions, and the count and the
//!   word fields in two arrays were two cache misses where one does.
//! - [`SelectBits`]: sampled select, the position of every 64th one stored as a `u32`;
//!   `select1(k)` starts at the sample and popcounts forward, finishing inside a word with
//!   PDEP or a branch-free broadword select ([`select_in_word`]).
//!
//! Popcounts run on the POPCNT instruction and selects in a word on PDEP where the CPU has
//! them, detected at run time (see [`super::popcount`]): one check per `rank1` or `select1`
//! call (or per query, for callers that pass the token down), none per word.
//!
//! Both are built once over a finished bit vector (the succinct structures are static) and
//! hold positions as `u32`: a vector of 2^32 bits or more is refused at build time.

#[cfg(test)]
use super::bits::BitVec;
use super::bits::FrozenBits;
use super::popcount::{Popcount, dispatch};

/// Most bits a rank or select directory indexes (positions are stored as `u32`).
pub const MAX_BITS: usize = u32::MAX as usize;

/// A bit vector with a rank directory of `W`-word blocks (`W` = 1 or 8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankBits<const W: usize> {
    bits: FrozenBits,
    /// With 1-word blocks, `lut[b]` = ones in blocks `0..b`, and one entry past the last
    /// block; with 8-word blocks only that last entry (the blocks' counts are in `sub`).
    lut: Vec<u32>,
    /// With 8-word blocks, two words per block `b`, side by side so that a rank reads one
    /// cache line of directory: `sub[2b]` = `lut[b]`, and `sub[2b + 1]` holds in bits
    /// `9(k - 1)..9k` the ones in words `0..k` of the block, for `k` in `1..8` (at most 448, so
    /// 9 bits each): a rank reads it instead of popcounting up to seven whole words. Empty
    /// with 1-word blocks.
    sub: Vec<u64>,
}

impl<const W: usize> RankBits<W> {
    const BLOCK_BITS: usize = 64 * W;

    /// The rank directory over `bits`; `None` when `bits` holds more than [`MAX_BITS`] bits.
    #[cfg(test)]
    pub fn new(bits: BitVec) -> Option<Self> {
        Self::over(FrozenBits::from(bits))
    }

    /// The rank directory over finished (possibly borrowed) bits; `None` when they hold more
    /// than [`MAX_BITS`] bits.
    pub fn over(bits: FrozenBits) -> Option<Self> {
        const { assert!(W == 1 || W == 8, "rank blocks are 64 or 512 bits") };
        if bits.len() > MAX_BITS {
            return None;
        }
        let words = bits.words();
        let blocks = words.len().div_ceil(W);
        let mut lut = Vec::with_capacity(if W == 1 { blocks + 1 } else { 1 });
        let mut sub = Vec::with_capacity(if W == 8 { 2 * blocks } else { 0 });
        let mut ones = 0u32;
        for b in 0..blocks {
            if W == 1 {
                lut.push(ones);
            }
            // Ones before word k of the block, for k in 1..W; words past the end (a partial
            // last block) hold none.
            let mut packed = 0u64;
            let mut in_block = 0u64;
            for k in 0..W {
                if k > 0 {
                    packed |= in_block << (9 * (k - 1));
                }
                in_block += words
                    .get(b * W + k)
                    .map_or(0, |w| u64::from(w.count_ones()));
            }
            if W == 8 {
                sub.push(u64::from(ones));
                sub.push(packed);
            }
            ones += in_block as u32;
        }
        lut.push(ones);
        Some(RankBits { bits, lut, sub })
    }

    /// The underlying bits.
    #[inline]
    pub fn bits(&self) -> &FrozenBits {
        &self.bits
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// Bit `i`; false past the end.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.bits.bit(i)
    }

    /// Number of ones in positions `0..i`, for `i ≤ len` (clamped to `len` beyond).
    // `inline(always)`, measured: with the dispatch, LLVM stopped inlining `rank1` (the release
    // bench's disassembly had 106 out-of-line calls to it, against none when built for
    // x86-64-v2 with plain `count_ones`); forced, it is inlined into the FST's walks again.
    #[inline(always)]
    pub fn rank1(&self, i: usize) -> usize {
        dispatch!(p => self.rank1_with(p, i))
    }

    /// [`rank1`](Self::rank1) with the popcount chosen by the caller (a query that dispatches
    /// once for its whole walk).
    #[inline(always)]
    pub(crate) fn rank1_with<P: Popcount>(&self, p: P, i: usize) -> usize {
        let i = i.min(self.bits.len());
        let block = i / Self::BLOCK_BITS;
        let words = self.bits.words();
        let wi = i / 64;
        let mut r;
        if W == 8 {
            // The last block's entry is past the vector when `i` is its length and a multiple
            // of 512: then `lut` has it.
            let Some(&[before, packed]) = self.sub.get(2 * block..2 * block + 2) else {
                return self.lut[self.lut.len() - 1] as usize;
            };
            r = before as usize;
            let k = wi % 8;
            if k > 0 {
                r += (packed >> (9 * (k - 1)) & 0x1FF) as usize;
            }
        } else {
            r = self.lut[block] as usize;
            for &w in &words[block * W..wi] {
                r += p.count(w) as usize;
            }
        }
        let rem = i % 64;
        if rem != 0 {
            r += p.count(words[wi] & ((1u64 << rem) - 1)) as usize;
        }
        r
    }

    /// Number of ones in the whole vector.
    #[inline]
    pub fn count_ones(&self) -> usize {
        self.lut[self.lut.len() - 1] as usize
    }

    /// Prefetches what `get(i)` and `rank1(i + 1)` read: the word of bit `i` and its block's
    /// directory entry.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        use super::prefetch::prefetch_read;
        prefetch_read(self.bits.words().as_ptr().wrapping_add(i / 64));
        if W == 8 {
            prefetch_read(self.sub.as_ptr().wrapping_add(2 * (i / Self::BLOCK_BITS)));
        } else {
            prefetch_read(self.lut.as_ptr().wrapping_add(i / Self::BLOCK_BITS));
        }
    }

    /// Bytes of heap memory owned: bits and directory.
    pub fn memory_usage(&self) -> usize {
        self.bits.memory_usage() + self.lut.capacity() * 4 + self.sub.capacity() * 8
    }
}

/// Ones between samples of a [`SelectBits`].
pub const SELECT_SAMPLE: usize = 64;

/// A bit vector with a sampled select directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectBits {
    bits: FrozenBits,
    /// `samples[j]` = position of the one numbered `j * SELECT_SAMPLE` (0-based).
    samples: Vec<u32>,
    ones: usize,
}

impl SelectBits {
    /// The select directory over `bits`; `None` when `bits` holds more than [`MAX_BITS`] bits.
    #[cfg(test)]
    pub fn new(bits: BitVec) -> Option<Self> {
        Self::over(FrozenBits::from(bits))
    }

    /// The select directory over finished (possibly borrowed) bits; `None` when they hold more
    /// than [`MAX_BITS`] bits.
    pub fn over(bits: FrozenBits) -> Option<Self> {
        if bits.len() > MAX_BITS {
            return None;
        }
        let mut samples = Vec::new();
        let mut ones = 0usize;
        for p in bits.iter_ones() {
            if ones.is_multiple_of(SELECT_SAMPLE) {
                samples.push(p as u32);
            }
            ones += 1;
        }
        samples.shrink_to_fit();
        Some(SelectBits {
            bits,
            samples,
            ones,
        })
    }

    /// The underlying bits.
    #[inline]
    pub fn bits(&self) -> &FrozenBits {
        &self.bits
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// True when there are no bits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// Number of ones.
    #[inline]
    pub fn count_ones(&self) -> usize {
        self.ones
    }

    /// Bit `i`; false past the end.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.bits.bit(i)
    }

    /// Position of the one numbered `k` (0-based), or `None` when there are at most `k` ones.
    #[inline]
    pub fn select1(&self, k: usize) -> Option<usize> {
        dispatch!(p => self.select1_with(p, k))
    }

    /// [`select1`](Self::select1) with the popcount chosen by the caller.
    #[inline(always)]
    pub(crate) fn select1_with<P: Popcount>(&self, p: P, k: usize) -> Option<usize> {
        if k >= self.ones {
            return None;
        }
        // The sampled one itself is the one numbered 0 from the sample.
        let start = self.samples[k / SELECT_SAMPLE] as usize;
        Some(self.select_from_with(p, start, k % SELECT_SAMPLE))
    }

    /// Position of the one numbered `r` (0-based) among those at positions `≥ from`, or
    /// `len` when there are not that many.
    #[inline(always)]
    pub(crate) fn select_from_with<P: Popcount>(&self, p: P, from: usize, r: usize) -> usize {
        let words = self.bits.words();
        let mut wi = from / 64;
        let Some(&first) = words.get(wi) else {
            return self.len();
        };
        let mut r = r;
        let mut w = first & (u64::MAX << (from % 64));
        loop {
            let c = p.count(w) as usize;
            if r < c {
                return (wi * 64 + select_in_word_with(p, w, r as u32) as usize).min(self.len());
            }
            r -= c;
            wi += 1;
            let Some(&next) = words.get(wi) else {
                return self.len();
            };
            w = next;
        }
    }

    /// Prefetches the word of bit `i` and the next cache line.
    #[inline]
    pub fn prefetch_at(&self, i: usize) {
        let w = self.bits.words().as_ptr().wrapping_add(i / 64);
        super::prefetch::prefetch_read(w);
        super::prefetch::prefetch_read(w.wrapping_add(8));
    }

    /// The first one at a position `≥ from`.
    #[inline]
    pub fn next_one(&self, from: usize) -> Option<usize> {
        next_one(self.bits.words(), from)
    }

    /// Prefetches the word where `select1(k)` starts scanning (the sample is read, so this
    /// costs a cache hit on the small sample array).
    #[inline]
    pub fn prefetch_select(&self, k: usize) {
        if let Some(&s) = self.samples.get(k / SELECT_SAMPLE) {
            self.prefetch_at(s as usize);
        }
    }

    /// The last one at a position `≤ at`.
    #[inline]
    pub fn prev_one(&self, at: usize) -> Option<usize> {
        prev_one(self.bits.words(), at)
    }

    /// Bytes of heap memory owned: bits and samples.
    pub fn memory_usage(&self) -> usize {
        self.bits.memory_usage() + self.samples.capacity() * 4
    }
}

/// The first set bit at a position `≥ from` in `words`.
#[inline]
pub fn next_one(words: &[u64], from: usize) -> Option<usize> {
    let mut wi = from / 64;
    let mut w = *words.get(wi)? & (u64::MAX << (from % 64));
    loop {
        if w != 0 {
            return Some(wi * 64 + w.trailing_zeros() as usize);
        }
        wi += 1;
        w = *words.get(wi)?;
    }
}

/// The first clear bit at a position `≥ from` in `words`; bits past the words count as clear.
#[inline]
pub fn next_zero(words: &[u64], from: usize) -> usize {
    let mut wi = from / 64;
    let Some(&w) = words.get(wi) else {
        return from;
    };
    let mut w = !w & (u64::MAX << (from % 64));
    loop {
        if w != 0 {
            return wi * 64 + w.trailing_zeros() as usize;
        }
        wi += 1;
        match words.get(wi) {
            Some(&x) => w = !x,
            None => return wi * 64,
        }
    }
}

/// The last set bit at a position `≤ at` in `words` (`at` may lie past the end).
#[inline]
pub fn prev_one(words: &[u64], at: usize) -> Option<usize> {
    if words.is_empty() {
        return None;
    }
    let (mut wi, mut w) = if at / 64 >= words.len() {
        (words.len() - 1, words[words.len() - 1])
    } else {
        let sh = 63 - at % 64;
        (at / 64, words[at / 64] << sh >> sh)
    };
    loop {
        if w != 0 {
            return Some(wi * 64 + 63 - w.leading_zeros() as usize);
        }
        if wi == 0 {
            return None;
        }
        wi -= 1;
        w = words[wi];
    }
}

const ONES_STEP_8: u64 = 0x0101_0101_0101_0101;
const MSBS_STEP_8: u64 = 0x8080_8080_8080_8080;

/// `SELECT_IN_BYTE[b][r]`: position of the `r`-th set bit of byte `b` (8 when absent).
static SELECT_IN_BYTE: [[u8; 8]; 256] = {
    let mut t = [[8u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut r = 0;
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 == 1 {
                t[b][r] = i as u8;
                r += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// Position of the set bit numbered `r` (0-based, from the least significant) in `w`, or 64
/// when `w` has at most `r` set bits (as `trailing_zeros` answers 64 for no set bit).
///
/// Broadword: byte popcounts summed into prefix counts by one multiplication, the target byte
/// found by a parallel compare, the bit inside it by table.
#[cfg(test)]
pub fn select_in_word(w: u64, r: u32) -> u32 {
    dispatch!(p => select_in_word_with(p, w, r))
}

/// [`select_in_word`] with the popcount (and select) of `p`.
#[inline(always)]
pub(crate) fn select_in_word_with<P: Popcount>(p: P, w: u64, r: u32) -> u32 {
    p.select(w, r)
}

/// The broadword [`select_in_word`], for tokens without a select instruction.
#[inline(always)]
pub(crate) fn select_broadword<P: Popcount>(p: P, w: u64, r: u32) -> u32 {
    let mut s = w - ((w >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // Byte i of `prefix`: ones in bytes 0..=i (at most 64, so the top bit of each byte is free).
    let prefix = s.wrapping_mul(ONES_STEP_8);
    // The top byte counts every one. Past it, `r * ONES_STEP_8` would overflow and the byte
    // search would run off the word (issue 16's overflow audit).
    if r >= (prefix >> 56) as u32 {
        return 64;
    }
    debug_assert!(r < p.count(w));
    let rr = r as u64 * ONES_STEP_8;
    // High bit of byte i set when prefix_i <= r, i.e. byte i ends before the target one.
    let le = ((rr | MSBS_STEP_8) - prefix) & MSBS_STEP_8;
    let byte = p.count(le);
    debug_assert!(byte < 8);
    let before = if byte == 0 {
        0
    } else {
        (prefix >> (byte * 8 - 8)) as u32 & 0xFF
    };
    let in_byte = (w >> (byte * 8)) as u8;
    byte * 8 + SELECT_IN_BYTE[in_byte as usize][(r - before) as usize] as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_select(bits: &[bool], k: usize) -> Option<usize> {
        bits.iter()
            .enumerate()
            .filter(|&(_, &b)| b)
            .nth(k)
            .map(|(i, _)| i)
    }

    fn check(bits: &[bool]) {
        let bv: BitVec = bits.iter().copied().collect();
        let r1 = RankBits::<1>::new(bv.clone()).unwrap();
        let r8 = RankBits::<8>::new(bv.clone()).unwrap();
        let sel = SelectBits::new(bv).unwrap();
        let mut ones = 0;
        for i in 0..=bits.len() {
            assert_eq!(r1.rank1(i), ones, "rank64({i})");
            assert_eq!(r8.rank1(i), ones, "rank512({i})");
            if i < bits.len() {
                assert_eq!(r1.get(i), bits[i]);
                let next = (i..bits.len()).find(|&j| bits[j]);
                assert_eq!(sel.next_one(i), next, "next_one({i})");
                let prev = (0..=i).rev().find(|&j| bits[j]);
                assert_eq!(sel.prev_one(i), prev, "prev_one({i})");
                let zero = (i..bits.len()).find(|&j| !bits[j]).unwrap_or(bits.len());
                let words = sel.bits().words();
                assert_eq!(next_zero(words, i), zero, "next_zero({i})");
                ones += bits[i] as usize;
            }
        }
        assert_eq!(r1.count_ones(), ones);
        assert_eq!(r8.count_ones(), ones);
        assert_eq!(sel.count_ones(), ones);
        for k in 0..=ones {
            assert_eq!(sel.select1(k), naive_select(bits, k), "select1({k})");
        }
        // select_from: the one numbered r at or after `from`, `len` when there is none.
        let positions: Vec<usize> = (0..bits.len()).filter(|&i| bits[i]).collect();
        for from in (0..=bits.len() + 70).step_by(if bits.len() > 500 { 7 } else { 1 }) {
            let first = positions.partition_point(|&p| p < from);
            let left = positions.len() - first;
            for r in [0, 1, 2, 5, 63, 64, left.saturating_sub(1), left, left + 1] {
                let want = positions.get(first + r).copied().unwrap_or(bits.len());
                assert_eq!(
                    dispatch!(p => sel.select_from_with(p, from, r)),
                    want,
                    "select_from({from}, {r})"
                );
            }
        }
        assert_eq!(
            sel.prev_one(bits.len() + 1000),
            naive_select(bits, ones.wrapping_sub(1))
        );
        assert_eq!(sel.next_one(bits.len()), None);
    }

    #[test]
    fn select_in_word_every_position_of_patterns() {
        let patterns = [
            u64::MAX,
            1,
            1 << 63,
            0x8000_0000_0000_0001,
            0x5555_5555_5555_5555,
            0xAAAA_AAAA_AAAA_AAAA,
            0x00FF_00FF_00FF_00FF,
            0xFF00_0000_0000_00FF,
            0x0123_4567_89AB_CDEF,
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut words = patterns.to_vec();
        // Fewer random words under miri (this module has no unsafe code).
        for _ in 0..if cfg!(miri) { 50 } else { 2000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            words.push(x);
            words.push(x & x.rotate_left(17) & x.rotate_left(31));
        }
        for w in words {
            let positions: Vec<u32> = (0..64).filter(|&i| w >> i & 1 == 1).collect();
            for (r, &p) in positions.iter().enumerate() {
                assert_eq!(select_in_word(w, r as u32), p, "w={w:#x} r={r}");
            }
        }
    }

    /// Regression (issue 16's overflow audit): a rank `r` past the word's ones once computed
    /// `r * 0x0101..01`, which overflows from `r = 256` on (a panic with overflow checks, a
    /// wrong position without), and for `r` in `count..256` answered a position that is no set
    /// bit (64 and more, from a shift by 64). Now every such `r` answers 64.
    #[test]
    fn select_in_word_past_the_last_one_is_64() {
        for w in [0, 1, 1 << 63, 0x00FF_00FF_00FF_00FF, u64::MAX] {
            let ones = w.count_ones();
            for r in [ones, ones + 1, 64, 255, 256, 257, u32::MAX - 1, u32::MAX] {
                if r >= ones {
                    assert_eq!(select_in_word(w, r), 64, "w={w:#x} r={r}");
                }
            }
        }
    }

    /// Positions, ranks and sample numbers at and near `usize::MAX`: answers as past the end.
    #[test]
    fn extreme_positions_and_ranks() {
        let bits: Vec<bool> = (0..1000).map(|i| i % 3 == 0).collect();
        let bv: BitVec = bits.iter().copied().collect();
        let ones = bits.iter().filter(|&&b| b).count();
        let r1 = RankBits::<1>::new(bv.clone()).unwrap();
        let r8 = RankBits::<8>::new(bv.clone()).unwrap();
        let sel = SelectBits::new(bv.clone()).unwrap();
        let last = naive_select(&bits, ones - 1);
        for i in [
            1000,
            1 << 40,
            usize::MAX - 64,
            usize::MAX - 63,
            usize::MAX - 1,
            usize::MAX,
        ] {
            assert_eq!(r1.rank1(i), ones, "rank64({i})");
            assert_eq!(r8.rank1(i), ones, "rank512({i})");
            assert!(!r1.get(i) && !r8.get(i) && !sel.get(i), "get({i})");
            assert_eq!(sel.select1(i), None, "select1({i})");
            assert_eq!(sel.next_one(i), None, "next_one({i})");
            assert_eq!(next_one(bv.words(), i), None, "free next_one({i})");
            assert_eq!(sel.prev_one(i), last, "prev_one({i})");
            assert_eq!(prev_one(bv.words(), i), last, "free prev_one({i})");
            r1.prefetch(i);
            r8.prefetch(i);
            sel.prefetch_select(i);
        }
        assert_eq!(sel.select1(ones), None);
        assert_eq!(next_one(&[], usize::MAX), None);
        assert_eq!(prev_one(&[], usize::MAX), None);
    }

    #[test]
    fn exhaustive_small_vectors() {
        // Every bit pattern of up to 12 bits (6 under miri: `check` is quadratic).
        for len in 0..=if cfg!(miri) { 6 } else { 12 } {
            for pat in 0u32..(1 << len) {
                let bits: Vec<bool> = (0..len).map(|i| pat >> i & 1 == 1).collect();
                check(&bits);
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a big-data sweep (quadratic checks of vectors up to 9000 bits); rank has no unsafe code"
    )]
    fn block_and_sample_boundaries() {
        for len in [63, 64, 65, 511, 512, 513, 1024, 4095, 4096, 4097, 9000] {
            check(&vec![true; len]);
            check(&vec![false; len]);
            check(&(0..len).map(|i| i % 64 == 63).collect::<Vec<_>>());
            check(&(0..len).map(|i| i % 513 == 0).collect::<Vec<_>>());
            check(&(0..len).map(|i| i % 7 < 3).collect::<Vec<_>>());
        }
    }

    proptest! {
        #![proptest_config(crate::substrate::proptest_config())]
        #[test]
        fn random_vectors_match_naive(
            // Shorter under miri: `check` is quadratic.
            bits in proptest::collection::vec(any::<bool>(), 0..if cfg!(miri) { 300 } else { 3000 }),
        ) {
            check(&bits);
        }

        #[test]
        fn sparse_random_vectors_match_naive(
            ones in proptest::collection::vec(
                0usize..if cfg!(miri) { 600 } else { 20_000 },
                0..if cfg!(miri) { 20 } else { 200 },
            ),
        ) {
            let len = ones.iter().max().map_or(0, |m| m + 1 + ones.len());
            let mut bits = vec![false; len];
            for o in ones { bits[o] = true; }
            check(&bits);
        }
    }
}
