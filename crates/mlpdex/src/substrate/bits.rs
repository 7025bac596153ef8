//! A growable bit vector over 64-bit words, the storage of the succinct structures (LOUDS levels,
//! bitmaps, suffix bits). Rank and select directories are built on top of its [`BitVec::words`]
//! by the structures that need them.
//!
//! Bit `i` lives in word `i / 64` at bit position `i % 64` (least significant first), so a word
//! read plus `trailing_zeros`/`count_ones` answers the common queries. Bits past `len` in the last
//! word are always zero (invariant used by [`BitVec::count_ones`] and by rank directories).
//!
//! [`FrozenBits`] is the finished, read-only form the static structures keep: its words are a
//! [`Frozen`] array, owned or borrowed from a loaded image.

use super::frozen::Frozen;

/// A growable vector of bits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitVec {
    words: Vec<u64>,
    len: usize,
}

impl BitVec {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// `len` zero bits.
    ///
    /// Allocates `len.div_ceil(64)` words like `vec!`: aborts if the allocator refuses them.
    pub fn zeros(len: usize) -> Self {
        BitVec {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The vector of the first `len` bits of `words`; `None` unless `words` has exactly
    /// `len.div_ceil(64)` words and the bits past `len` are zero.
    #[cfg(test)]
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        holds_exactly(&words, len).then_some(BitVec { words, len })
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bit `i`, or `None` when `i >= len`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<bool> {
        (i < self.len).then(|| self.words[i / 64] >> (i % 64) & 1 == 1)
    }

    /// Bit `i`, false past the end: one word read, no `Option` (the hot-path form of
    /// [`get`](Self::get)).
    #[cfg(test)]
    #[inline]
    pub fn bit(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Sets bit `i` to `value`; returns false (and changes nothing) when `i >= len`.
    #[inline]
    pub fn set(&mut self, i: usize, value: bool) -> bool {
        if i >= self.len {
            return false;
        }
        let w = &mut self.words[i / 64];
        let m = 1u64 << (i % 64);
        if value {
            *w |= m;
        } else {
            *w &= !m;
        }
        true
    }

    /// Appends one bit.
    #[inline]
    pub fn push(&mut self, value: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if value {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len = grown(self.len, 1);
    }

    /// Appends the low `n` bits of `bits` (`n ≤ 64`), least significant first.
    pub fn push_bits(&mut self, bits: u64, n: u32) {
        assert!(n <= 64, "push_bits takes at most 64 bits");
        if n == 0 {
            return;
        }
        let bits = if n == 64 { bits } else { bits & ((1 << n) - 1) };
        let offset = (self.len % 64) as u32;
        if offset == 0 {
            self.words.push(bits);
        } else {
            let last = self.words.len() - 1;
            self.words[last] |= bits << offset;
            if offset + n > 64 {
                self.words.push(bits >> (64 - offset));
            }
        }
        self.len = grown(self.len, n as usize);
        debug_assert_eq!(self.words.len(), self.len.div_ceil(64));
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Positions of the set bits, ascending.
    #[cfg(test)]
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        iter_ones(&self.words)
    }

    /// The backing words; bits past `len` in the last word are zero.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Bytes of heap memory owned (allocated capacity).
    #[cfg(test)]
    pub fn memory_usage(&self) -> usize {
        self.words.capacity() * 8
    }

    /// Makes room for `additional` more bits.
    pub fn reserve(&mut self, additional: usize) {
        let words = (self.len + additional).div_ceil(64);
        self.words.reserve(words.saturating_sub(self.words.len()));
    }

    /// Releases spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.words.shrink_to_fit();
    }
}

/// A finished, read-only bit vector whose words are [`Frozen`]: owned, or borrowed from a
/// loaded image. Same layout and tail invariant as [`BitVec`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrozenBits {
    words: Frozen<u64>,
    len: usize,
}

impl From<BitVec> for FrozenBits {
    fn from(mut b: BitVec) -> Self {
        b.shrink_to_fit();
        let len = b.len;
        FrozenBits {
            words: Frozen::from(b.words),
            len,
        }
    }
}

impl FrozenBits {
    /// The first `len` bits of `words`; `None` unless `words` has exactly `len.div_ceil(64)`
    /// words and the bits past `len` are zero.
    pub fn new(words: Frozen<u64>, len: usize) -> Option<Self> {
        holds_exactly(&words, len).then_some(FrozenBits { words, len })
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the vector holds no bit.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i`, false past the end.
    #[inline]
    pub fn bit(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// The words; bits past `len` in the last word are zero.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Positions of the set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        iter_ones(&self.words)
    }

    /// Bytes the words occupy (owned or borrowed).
    pub fn memory_usage(&self) -> usize {
        self.words.bytes()
    }

    /// True when the words live in a loaded image.
    pub fn is_borrowed(&self) -> bool {
        self.words.is_borrowed()
    }
}

/// `len + n` for a growing vector. The bit count can pass `usize::MAX` only on a 32-bit target
/// (64 bits per word of at most `isize::MAX` bytes): there it panics, as `Vec` does when its
/// capacity would overflow, rather than wrap to a short length.
#[inline]
fn grown(len: usize, n: usize) -> usize {
    len.checked_add(n).expect("BitVec length overflows usize")
}

/// Whether `words` are exactly the words of a `len`-bit vector: `len.div_ceil(64)` of them,
/// with the bits past `len` zero.
fn holds_exactly(words: &[u64], len: usize) -> bool {
    words.len() == len.div_ceil(64)
        && (len.is_multiple_of(64) || words[words.len() - 1] >> (len % 64) == 0)
}

fn iter_ones(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(wi, &w)| {
        let mut w = w;
        core::iter::from_fn(move || {
            (w != 0).then(|| {
                let t = w.trailing_zeros() as usize;
                w &= w - 1;
                wi * 64 + t
            })
        })
    })
}

/// The low `width` bits (`width ≤ 64`) of a mask.
#[inline(always)]
pub fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The `width`-bit field (`width ≤ 64`) whose least significant bit is bit `bit` of `words`
/// (the packed arrays of the compact B-tree: field `i` of width `w` starts at bit `i * w`).
/// Bits past the end of `words` read as zero, so a field never panics.
#[inline]
pub fn field(words: &[u64], bit: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let (at, shift) = (bit / 64, (bit % 64) as u32);
    let lo = words.get(at).copied().unwrap_or(0) >> shift;
    let v = if shift + width > 64 {
        lo | words.get(at + 1).copied().unwrap_or(0) << (64 - shift)
    } else {
        lo
    };
    v & low_mask(width)
}

/// Writes the low `width` bits of `value` as the field at bit `bit` of `words` (see [`field`]),
/// over zero bits: the caller writes each field once into zeroed words.
///
/// # Panics
///
/// When the field runs past the end of `words`.
pub fn put_field(words: &mut [u64], bit: usize, width: u32, value: u64) {
    if width == 0 {
        return;
    }
    let value = value & low_mask(width);
    let (at, shift) = (bit / 64, (bit % 64) as u32);
    words[at] |= value << shift;
    if shift + width > 64 {
        words[at + 1] |= value >> (64 - shift);
    }
}

impl FromIterator<bool> for BitVec {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        let mut v = BitVec::new();
        for b in iter {
            v.push(b);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::substrate::proptest_config())]
        #[test]
        fn fields_read_back_what_was_put(width in 0u32..=64, values in proptest::collection::vec(any::<u64>(), 0..40)) {
            let mut words = vec![0u64; (values.len() * width as usize).div_ceil(64)];
            for (i, &v) in values.iter().enumerate() {
                put_field(&mut words, i * width as usize, width, v);
            }
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(field(&words, i * width as usize, width), v & low_mask(width));
            }
            // Past the end reads zeros instead of panicking.
            prop_assert_eq!(field(&words, words.len() * 64 + 3, width), 0);
        }
    }

    proptest! {
        #![proptest_config(crate::substrate::proptest_config())]
        #[test]
        fn matches_vec_of_bool(bits in proptest::collection::vec(any::<bool>(), 0..700),
                               flips in proptest::collection::vec(any::<usize>(), 0..50)) {
            let mut v: BitVec = bits.iter().copied().collect();
            let mut model = bits.clone();
            for f in flips {
                let i = f % (model.len() + 1);
                let ok = v.set(i, i % 3 == 0);
                prop_assert_eq!(ok, i < model.len());
                if i < model.len() { model[i] = i % 3 == 0; }
            }
            prop_assert_eq!(v.len(), model.len());
            for (i, &b) in model.iter().enumerate() {
                prop_assert_eq!(v.get(i), Some(b));
            }
            prop_assert_eq!(v.get(model.len()), None);
            prop_assert_eq!(v.count_ones(), model.iter().filter(|&&b| b).count());
            let ones: Vec<usize> = v.iter_ones().collect();
            let model_ones: Vec<usize> = (0..model.len()).filter(|&i| model[i]).collect();
            prop_assert_eq!(ones, model_ones);
        }

        #[test]
        fn push_bits_equals_pushes(chunks in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..40)) {
            let mut a = BitVec::new();
            let mut b = BitVec::new();
            for &(bits, n) in &chunks {
                a.push_bits(bits, n);
                for j in 0..n { b.push(bits >> j & 1 == 1); }
            }
            prop_assert_eq!(a, b);
        }
    }

    /// Positions and lengths at and near `usize::MAX` (issue 16's overflow audit): every query
    /// answers "absent", and construction from words refuses a length they cannot hold.
    #[test]
    fn extreme_positions_and_lengths() {
        let v: BitVec = [true, false, true].into_iter().collect();
        let f = FrozenBits::from(v.clone());
        for i in [
            3,
            64,
            usize::MAX - 64,
            usize::MAX - 63,
            usize::MAX - 1,
            usize::MAX,
        ] {
            assert_eq!(v.get(i), None, "get({i})");
            assert!(!v.bit(i), "bit({i})");
            assert!(!f.bit(i), "frozen bit({i})");
            assert!(!v.clone().set(i, true), "set({i})");
        }
        for len in [usize::MAX, usize::MAX - 63, usize::MAX - 64, 1 << 63, 65] {
            assert_eq!(
                BitVec::from_words(vec![1], len),
                None,
                "from_words(len {len})"
            );
            assert_eq!(
                FrozenBits::new(Frozen::from(vec![1u64]), len),
                None,
                "FrozenBits::new(len {len})"
            );
        }
        assert_eq!(BitVec::from_words(vec![], usize::MAX), None);
        assert_eq!(BitVec::from_words(vec![0b101], 3), Some(v));
    }

    #[test]
    fn tail_bits_stay_zero() {
        let mut v = BitVec::zeros(70);
        v.set(69, true);
        v.push_bits(u64::MAX, 3);
        assert_eq!(v.len(), 73);
        assert_eq!(v.words()[1] >> 9, 0);
        assert_eq!(v.count_ones(), 4);
        assert_eq!(v.memory_usage(), v.words().len() * 8);
    }
}
