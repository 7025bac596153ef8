//! One leaf of a compact B-tree: up to `2^shift` consecutive keys, encoded in a run of words.
//!
//! A leaf keeps its keys' longest common prefix once, as its *prefix*, and encodes what
//! follows it in each key (the key's *rest*; all of a key when the prefix is empty). A rest is
//! split into its *head*, its first 8 bytes as a big-endian `u64` (zero-padded when
//! shorter), and its *rest*: a *class*, the key's length when it is at most 8 bytes and 9
//! otherwise, and a *tail*, the bytes after the eighth (empty unless the class is 9). Keys then
//! order as `(head, class, tail)` do: equal padded heads mean the shorter key is a prefix of
//! the longer one (its padding bytes are zeros the longer one shares), and two keys longer than
//! 8 bytes with equal heads differ first in their tails. So a leaf's heads never decrease, and a
//! search compares the prefix, then heads, then the rest of a rest only among equal heads.
//! Stripping the prefix is what makes heads tell keys apart when keys share long prefixes
//! (e-mail addresses, URLs, composite keys): the heads of a leaf of host-reversed e-mails are
//! the 8 bytes after its common `com.gmail@jo`, not that common prefix.
//!
//! # Layout
//!
//! Words numbered from the leaf's start; bit `b` of a section is bit `b % 64` of its word
//! `b / 64`; sections are padded with zero bits to whole words.
//!
//! ```text
//! word 0  header: bits 0..6   l, the width of the low parts
//!                 bits 6..12  z, the trailing zero bits every delta shares (dropped)
//!                 bits 12..15 ws, the width of the short codes (at most 4)
//!                 bits 15..22 wt, the width of the tail ends (at most 64)
//!                 bits 22..26 sb, the short base (at most 8)
//!                 bits 26..32 reserved, 0
//!                 bits 32..64 top, the largest upper part
//! word 1  the byte offset of the leaf's tails in its layer's tail bytes
//! word 2  s, the prefix length
//! word 3  the base: the head of key 0
//! prefix  s bytes, 8 to a word, least significant byte first, zero-padded
//! high    n + top + 1 bits: Elias–Fano upper parts, key i sets bit (e_i >> l) + i
//! low     n fields of l bits: e_i mod 2^l
//! short   n fields of ws bits: 8 - length - sb for a rest of at most 8 bytes, 0 for a longer one
//! ends    n fields of wt bits: where key i's tail ends, in bytes after the leaf's offset
//! ```
//!
//! The prefix sits with the header so that the first line a search reads holds both.
//!
//! where `e_i = d_i >> z` and `d_i` is key i's head minus key 0's (the *base*). Dropping the
//! shared trailing zeros matters for rests shorter than 8 bytes, whose heads end in zero
//! padding: consecutive integers under a 6-byte prefix differ by multiples of 2^48 in their
//! heads, and by 1 once shifted. Elias–Fano (Elias 1974, Fano 1971) stores the `n`
//! non-decreasing deltas of a universe `u` in `n (2 + log2(u / n))` bits: on 10M random 8-byte
//! keys that is 42.7 bits a key, within 3 bits of the information-theoretic bound for the
//! set, where plain 64-bit keys take 64. Keys of 8 bytes leave `short` and `ends` zero bits
//! wide, so integer keys cost only their Elias–Fano bits.
//!
//! # Invariants (checked on load by `super::audit`)
//!
//! 1. The header's widths are in range, its reserved bits zero, and the sections fill exactly
//!    the words between this leaf's offset and the next one's; the prefix's padding is zero.
//! 2. `high` has exactly `n` ones among its `n + top + 1` bits, its last bit is a zero, and its
//!    padding is zero; so every upper part is at most `top`, and the zero numbered `k` ends
//!    the bucket of upper part `k`.
//! 3. Key 0's delta is 0; heads never decrease and never overflow (`base + d_i` fits in 64
//!    bits); equal upper parts come with non-decreasing low parts.
//! 4. A short code plus the short base is at most 8; a key with a non-empty tail has short code
//!    0; a rest of class `c ≤ 8` has zero head bytes past its first `c`.
//! 5. Tail ends never decrease and stay within the tail bytes; each leaf's bytes start where
//!    the previous leaf's end, and the last leaf's end with the tail bytes.
//! 6. Keys strictly increase, within the leaf and from each leaf to the next.

use core::cmp::Ordering;

use crate::substrate::bits::{field, low_mask, put_field};
use crate::substrate::popcount::Popcount;
use crate::substrate::rank::select_in_word_with;

/// Words of a leaf header (the fields, the tail offset, the prefix length, the base).
pub(crate) const HEADER_WORDS: usize = 4;
/// The class of keys longer than 8 bytes.
pub(crate) const LONG: u32 = 9;

/// A key cut into head, class and tail (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split<'k> {
    pub(crate) head: u64,
    pub(crate) class: u32,
    pub(crate) tail: &'k [u8],
}

impl<'k> Split<'k> {
    #[inline]
    pub(crate) fn of(key: &'k [u8]) -> Self {
        Split::at(key, 0)
    }

    /// The split of `key[skip..]` (`skip ≤ key.len()`), reading its head without a variable-
    /// length copy when the key has 8 bytes to read: the head of a rest `r < 8` bytes long is
    /// then the key's last 8 bytes shifted up by the `8 - r` that precede the rest.
    #[inline]
    pub(crate) fn at(key: &'k [u8], skip: usize) -> Self {
        let rest = key.get(skip..).unwrap_or(&[]);
        let head = if let Some(b) = rest.first_chunk::<8>() {
            u64::from_be_bytes(*b)
        } else if let Some(b) = key.last_chunk::<8>() {
            u64::from_be_bytes(*b)
                .checked_shl(8 * (8 - rest.len()) as u32)
                .unwrap_or(0)
        } else {
            rest.iter()
                .enumerate()
                .fold(0, |h, (i, &b)| h | (b as u64) << (56 - 8 * i))
        };
        Split {
            head,
            class: if rest.len() > 8 {
                LONG
            } else {
                rest.len() as u32
            },
            tail: rest.get(8..).unwrap_or(&[]),
        }
    }

    /// Orders two splits as their keys order (what the leaf layout relies on; tested).
    #[cfg(test)]
    pub(crate) fn cmp(&self, other: &Split<'_>) -> Ordering {
        self.head
            .cmp(&other.head)
            .then(self.class.cmp(&other.class))
            .then_with(|| self.tail.cmp(other.tail))
    }

    /// Appends the key's bytes to `out`.
    #[inline]
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let h = self.head.to_be_bytes();
        out.extend_from_slice(&h[..(self.class as usize).min(8)]);
        out.extend_from_slice(self.tail);
    }
}

/// The decoded header of a leaf.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) low: u32,
    pub(crate) zeros: u32,
    pub(crate) short: u32,
    pub(crate) ends: u32,
    pub(crate) short_base: u32,
    pub(crate) top: usize,
}

impl Header {
    pub(crate) fn encode(&self) -> u64 {
        self.low as u64
            | (self.zeros as u64) << 6
            | (self.short as u64) << 12
            | (self.ends as u64) << 15
            | (self.short_base as u64) << 22
            | (self.top as u64) << 32
    }

    /// The header in `w`, or `None` when a width is out of range or a reserved bit is set.
    pub(crate) fn decode(w: u64) -> Option<Header> {
        let h = Header {
            low: (w & 0x3F) as u32,
            zeros: (w >> 6 & 0x3F) as u32,
            short: (w >> 12 & 0x7) as u32,
            ends: (w >> 15 & 0x7F) as u32,
            short_base: (w >> 22 & 0xF) as u32,
            top: (w >> 32) as usize,
        };
        let ok = h.short <= 4 && h.ends <= 64 && h.short_base <= 8 && h.low + h.zeros <= 63;
        (ok && w >> 26 & 0x3F == 0).then_some(h)
    }

    /// Words of a leaf of `n` keys with this header and a prefix of `skip` bytes, the header
    /// included.
    pub(crate) fn words(&self, n: usize, skip: usize) -> usize {
        HEADER_WORDS
            + skip.div_ceil(8)
            + (n + self.top + 1).div_ceil(64)
            + (n * self.low as usize).div_ceil(64)
            + (n * self.short as usize).div_ceil(64)
            + (n * self.ends as usize).div_ceil(64)
    }
}

/// A read-only view of one leaf; the default is an empty leaf.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Leaf<'a> {
    /// Head of key 0.
    pub(crate) base: u64,
    /// Keys in the leaf.
    pub(crate) n: usize,
    pub(crate) header: Header,
    /// Byte offset of the leaf's tails in its layer's tail bytes.
    pub(crate) tail_at: usize,
    /// Length of the prefix.
    pub(crate) skip: usize,
    /// The prefix, 8 bytes a word.
    pre: &'a [u64],
    high: &'a [u64],
    lows: &'a [u64],
    shorts: &'a [u64],
    ends: &'a [u64],
}

impl<'a> Leaf<'a> {
    /// The leaf of `n` keys whose words are `words` (exactly: header and sections); `None`
    /// when the words do not match the header (invariant 1). `inline(always)`: see
    /// `Layer::leaf`.
    #[inline(always)]
    pub(crate) fn new(words: &'a [u64], n: usize) -> Option<Leaf<'a>> {
        let &[h, tail_at, skip, base] = words.first_chunk::<HEADER_WORDS>()?;
        let header = Header::decode(h)?;
        let (tail_at, skip) = (usize::try_from(tail_at).ok()?, usize::try_from(skip).ok()?);
        // Only the prefix length is unbounded (the other sizes follow from fields of at most
        // 32 bits and from n ≤ 2^16): bound it first, so no sum below can overflow.
        let pre_words = skip.div_ceil(8);
        if pre_words > words.len() {
            return None;
        }
        let o1 = HEADER_WORDS + pre_words;
        let o2 = o1 + (n + header.top + 1).div_ceil(64);
        let o3 = o2 + (n * header.low as usize).div_ceil(64);
        let o4 = o3 + (n * header.short as usize).div_ceil(64);
        let o5 = o4 + (n * header.ends as usize).div_ceil(64);
        if words.len() != o5 {
            return None;
        }
        Some(Leaf {
            base,
            n,
            header,
            tail_at,
            skip,
            pre: &words[HEADER_WORDS..o1],
            high: &words[o1..o2],
            lows: &words[o2..o3],
            shorts: &words[o3..o4],
            ends: &words[o4..o5],
        })
    }

    /// An empty leaf, read in place of one that does not decode (never, once a tree is built or
    /// audited), so that a broken invariant gives wrong answers rather than a panic.
    #[cold]
    pub(crate) fn broken<'b>() -> Leaf<'b> {
        Leaf::default()
    }

    /// Orders `key` against the keys' prefix: `Equal` when `key` starts with it, `Less` when
    /// it sorts before (a proper prefix of the prefix included), `Greater` after.
    #[inline]
    pub(crate) fn prefix_order(&self, key: &[u8]) -> Ordering {
        // Word by word as big-endian integers: the prefix's padding and a short key's missing
        // bytes both read as zeros, and a key that ties with the prefix but is shorter sorts
        // before it.
        for (k, &w) in self.pre.iter().enumerate() {
            let at = 8 * k;
            let keep = !low_mask(64 - 8 * (self.skip - at).min(8) as u32);
            let kv = match key.get(at..).and_then(|b| b.first_chunk::<8>()) {
                Some(b) => u64::from_be_bytes(*b),
                None => Split::at(key, at.min(key.len())).head,
            } & keep;
            match kv.cmp(&w.swap_bytes()) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        if key.len() < self.skip {
            Ordering::Less
        } else {
            Ordering::Equal
        }
    }

    /// Appends the keys' prefix to `out`.
    #[inline]
    pub(crate) fn write_prefix(&self, out: &mut Vec<u8>) {
        let mut left = self.skip;
        for w in self.pre {
            let take = left.min(8);
            out.extend_from_slice(&w.to_le_bytes()[..take]);
            left -= take;
        }
    }

    /// The prefix's words, for the audit.
    pub(crate) fn prefix_words(&self) -> &'a [u64] {
        self.pre
    }

    /// The words of `high`, for the audit.
    pub(crate) fn high_words(&self) -> &'a [u64] {
        self.high
    }

    /// Position in `high` of the one of key `i` (`i < n`).
    #[inline]
    pub(crate) fn select1<P: Popcount>(&self, p: P, i: usize) -> usize {
        let mut r = i as u32;
        for (at, &w) in self.high.iter().enumerate() {
            let c = p.count(w);
            if r < c {
                return at * 64 + select_in_word_with(p, w, r) as usize;
            }
            r -= c;
        }
        self.high.len() * 64
    }

    /// Position in `high` of the zero numbered `k` (`k ≤ top`).
    #[inline]
    fn select0<P: Popcount>(&self, p: P, k: usize) -> usize {
        let mut r = k as u32;
        for (at, &w) in self.high.iter().enumerate() {
            let c = 64 - p.count(w);
            if r < c {
                return at * 64 + select_in_word_with(p, !w, r) as usize;
            }
            r -= c;
        }
        self.high.len() * 64
    }

    /// Position of the first zero in `high` at or after `from`.
    #[inline]
    fn next_zero(&self, from: usize) -> usize {
        let mut at = from / 64;
        let mut w = match self.high.get(at) {
            Some(&w) => !w & (u64::MAX << (from % 64)),
            None => return from,
        };
        loop {
            if w != 0 {
                return at * 64 + w.trailing_zeros() as usize;
            }
            at += 1;
            match self.high.get(at) {
                Some(&x) => w = !x,
                None => return at * 64,
            }
        }
    }

    /// Prefetches the line of key `i`'s low part.
    #[inline]
    pub(crate) fn prefetch_low(&self, i: usize) {
        let bit = i * self.header.low as usize;
        crate::substrate::prefetch::prefetch_read(self.lows.as_ptr().wrapping_add(bit / 64));
    }

    /// Prefetches the line of key `i`'s tail end and, given `per_key`, the tail bytes a key
    /// of this layer averages, the line where key `i`'s tail is likely to start in `tails`.
    #[inline]
    pub(crate) fn prefetch_tail(&self, i: usize, tails: &[u8], per_key: usize) {
        if self.header.ends == 0 {
            return;
        }
        let bit = i * self.header.ends as usize;
        crate::substrate::prefetch::prefetch_read(self.ends.as_ptr().wrapping_add(bit / 64));
        let at = self.tail_at.wrapping_add(i.wrapping_mul(per_key));
        crate::substrate::prefetch::prefetch_read(tails.as_ptr().wrapping_add(at));
    }

    /// Low part of key `i`.
    #[inline]
    fn low(&self, i: usize) -> u64 {
        let l = self.header.low;
        field(self.lows, i * l as usize, l)
    }

    /// Head of key `i` (`i < n`); what the tests read (searches and cursors step with
    /// [`head_at`](Self::head_at) and a position they already have).
    #[cfg(test)]
    pub(crate) fn head<P: Popcount>(&self, p: P, i: usize) -> u64 {
        self.head_at(i, self.select1(p, i))
    }

    /// Head of key `i`, given `one`, the position of its one in `high`.
    #[inline]
    fn head_at(&self, i: usize, one: usize) -> u64 {
        let upper = one.wrapping_sub(i) as u64;
        let e = upper.wrapping_shl(self.header.low) | self.low(i);
        self.base.wrapping_add(e.wrapping_shl(self.header.zeros))
    }

    /// Head delta of key `i` from key 0, or `None` when it overflows a `u64`.
    pub(crate) fn delta<P: Popcount>(&self, p: P, i: usize) -> Option<u64> {
        let upper = (self.select1(p, i) - i) as u64;
        let shift = self.header.low + self.header.zeros;
        let shifted = upper.checked_shl(shift).filter(|s| s >> shift == upper)?;
        Some(shifted | self.low(i) << self.header.zeros)
    }

    /// Stored short code of key `i`: 8 minus its rest's length minus the short base when the
    /// rest is at most 8 bytes, else 0.
    #[inline]
    pub(crate) fn short(&self, i: usize) -> u64 {
        let w = self.header.short;
        field(self.shorts, i * w as usize, w)
    }

    /// Tail end of key `i`, in bytes after the leaf's prefix.
    #[inline]
    pub(crate) fn end(&self, i: usize) -> usize {
        let w = self.header.ends;
        field(self.ends, i * w as usize, w) as usize
    }

    /// The byte range of key `i`'s tail in the layer's tail bytes.
    #[inline]
    pub(crate) fn tail_range(&self, i: usize) -> (usize, usize) {
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        (self.tail_at + start, self.tail_at + self.end(i))
    }

    /// Class and tail of the rest of key `i`.
    #[inline(always)]
    pub(crate) fn rest<'t>(&self, i: usize, tails: &'t [u8]) -> (u32, &'t [u8]) {
        let base = self.header.short_base;
        if self.header.short == 0 && self.header.ends == 0 {
            return (8u32.saturating_sub(base), &[]);
        }
        let (a, b) = self.tail_range(i);
        if b > a {
            (LONG, tails.get(a..b).unwrap_or(&[]))
        } else {
            (8u32.saturating_sub(base + self.short(i) as u32), &[])
        }
    }

    /// Position of the one of key `i + 1` in `high`, given `one`, key `i`'s.
    #[inline]
    pub(crate) fn next_one(&self, one: usize) -> usize {
        crate::substrate::rank::next_one(self.high, one + 1).unwrap_or(self.high.len() * 64)
    }

    /// Position of the one of key `i - 1` in `high`, given `one`, key `i`'s (`i > 0`).
    #[inline]
    pub(crate) fn prev_one(&self, one: usize) -> usize {
        one.checked_sub(1)
            .and_then(|at| crate::substrate::rank::prev_one(self.high, at))
            .unwrap_or(0)
    }

    /// Writes key `i` (`i < n`) into `out`, given `one`, the position of its one in `high`
    /// (what [`select1`](Self::select1) answers; a cursor steps it along instead).
    #[inline]
    pub(crate) fn write_key_at(&self, i: usize, one: usize, tails: &[u8], out: &mut Vec<u8>) {
        self.write_prefix(out);
        self.write_rest_at(i, one, tails, out);
    }

    /// Writes what follows the prefix in key `i` (`i < n`) into `out`, given `one` as for
    /// [`write_key_at`](Self::write_key_at): a merge keeps the prefix in its buffer and
    /// rewrites only this.
    #[inline]
    pub(crate) fn write_rest_at(&self, i: usize, one: usize, tails: &[u8], out: &mut Vec<u8>) {
        let head = self.head_at(i, one);
        let (class, tail) = self.rest(i, tails);
        Split { head, class, tail }.write(out);
    }

    /// Writes key `i` (`i < n`) into `out`.
    #[inline]
    pub(crate) fn write_key<P: Popcount>(&self, p: P, i: usize, tails: &[u8], out: &mut Vec<u8>) {
        self.write_key_at(i, self.select1(p, i), tails, out);
    }

    /// The position of the first key of the leaf at least `key` (`strict`: greater than
    /// `key`), and whether the key there equals `key`.
    #[inline]
    pub(crate) fn rank<P: Popcount>(
        &self,
        p: P,
        key: &[u8],
        tails: &[u8],
        strict: bool,
    ) -> (usize, bool) {
        self.rank_with(p, key, tails, strict, |_| {})
    }

    /// [`rank`](Self::rank), calling `bucket` with the first position whose upper part is
    /// the key's, as soon as the upper parts tell it: before the low parts, ends and tails
    /// of the keys there are read, so the caller can prefetch them (and their values).
    #[inline]
    pub(crate) fn rank_with<P: Popcount>(
        &self,
        p: P,
        key: &[u8],
        tails: &[u8],
        strict: bool,
        bucket: impl FnOnce(usize),
    ) -> (usize, bool) {
        match self.prefix_order(key) {
            Ordering::Less => return (0, false),
            Ordering::Greater => return (self.n, false),
            Ordering::Equal => {}
        }
        let q = Split::at(key, self.skip);
        let (a, b) = self.head_range_with(p, q.head, bucket);
        let at = self.rest_bound(a, b, q.class, q.tail, tails, false);
        let equal = at < b && {
            let (class, tail) = self.rest(at, tails);
            class == q.class && (class != LONG || tail == q.tail)
        };
        (at + (strict && equal) as usize, equal)
    }

    /// The positions `[a, b)` of the keys whose head is `head`: `a` keys have a smaller head,
    /// `b` keys a head at most `head`.
    #[cfg(test)]
    pub(crate) fn head_range<P: Popcount>(&self, p: P, head: u64) -> (usize, usize) {
        self.head_range_with(p, head, |_| {})
    }

    /// [`head_range`](Self::head_range), calling `bucket` with the first position of the
    /// head's bucket (its upper part's keys) before reading their low parts.
    #[inline]
    fn head_range_with<P: Popcount>(
        &self,
        p: P,
        head: u64,
        bucket: impl FnOnce(usize),
    ) -> (usize, usize) {
        let Some(d) = head.checked_sub(self.base) else {
            return (0, 0);
        };
        let z = self.header.zeros;
        // A head with bits where every stored one has zeros lies strictly between two.
        let exact = d & low_mask(z) == 0;
        let e = d >> z;
        let l = self.header.low;
        let upper = (e >> l) as usize;
        if upper > self.header.top {
            return (self.n, self.n);
        }
        // Keys of upper part < `upper` end at zero `upper - 1`; those ≤ `upper` at zero `upper`.
        let (start, end) = if upper == 0 {
            (0, self.select0(p, 0))
        } else {
            let z = self.select0(p, upper - 1);
            (z + 1 - upper, self.next_zero(z + 1) - upper)
        };
        let end = end.min(self.n);
        bucket(start.min(self.n.saturating_sub(1)));
        let want = e & low_mask(l);
        let a = partition(start, end, |i| self.low(i) < want);
        let b = partition(a, end, |i| self.low(i) <= want);
        if exact { (a, b) } else { (b, b) }
    }

    /// The first position in `[a, b)` (keys of one head) whose rest is at least (`strict`:
    /// greater than) `class, tail`; `b` when none is.
    #[inline]
    pub(crate) fn rest_bound(
        &self,
        a: usize,
        b: usize,
        class: u32,
        tail: &[u8],
        tails: &[u8],
        strict: bool,
    ) -> usize {
        partition(a, b, |i| {
            let (c, t) = self.rest(i, tails);
            let order = match c.cmp(&class) {
                Ordering::Equal if c == LONG => t.cmp(tail),
                o => o,
            };
            match order {
                Ordering::Less => true,
                Ordering::Equal => strict,
                Ordering::Greater => false,
            }
        })
    }
}

/// The first `i` in `[lo, hi)` for which `below(i)` is false, `below` being true on a prefix of
/// the range and false after it.
#[inline]
fn partition(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Encodes a leaf of the keys `keys` (strictly increasing, at least one), appending its words
/// to `out` and its prefix and tails to `tails`.
pub(crate) fn encode<'k>(
    keys: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
    out: &mut Vec<u64>,
    tails: &mut Vec<u8>,
    scratch: &mut Scratch,
) {
    let n = keys.len();
    let mut it = keys.clone();
    let (Some(first), last) = (it.next(), it.last()) else {
        return;
    };
    let last = last.unwrap_or(first);
    let skip = first.iter().zip(last).take_while(|(a, b)| a == b).count();
    let tail_at = tails.len() as u64;
    let after = tails.len();
    scratch.clear();
    for k in keys {
        let s = Split::of(&k[skip..]);
        scratch.heads.push(s.head);
        scratch.codes.push(if s.class == LONG {
            None
        } else {
            Some(8 - s.class as u8)
        });
        tails.extend_from_slice(s.tail);
        scratch.ends.push((tails.len() - after) as u64);
    }
    let heads = &scratch.heads;
    debug_assert!(heads.windows(2).all(|w| w[0] <= w[1]));
    let base = heads[0];
    let zeros = heads
        .iter()
        .fold(0, |acc, &h| acc | (h - base))
        .trailing_zeros()
        % 64;
    let dmax = (heads[n - 1] - base) >> zeros;
    let per = dmax / n as u64;
    let low = if per == 0 {
        0
    } else {
        63 - per.leading_zeros()
    };
    let bits = |x: u64| 64 - x.leading_zeros();
    let short_base = scratch.codes.iter().flatten().copied().min().unwrap_or(0);
    let stored = |c: Option<u8>| c.map_or(0, |c| (c - short_base) as u64);
    let max_stored = scratch.codes.iter().map(|&c| stored(c)).max().unwrap_or(0);
    let header = Header {
        low,
        zeros,
        short: bits(max_stored),
        ends: bits(scratch.ends[n - 1]),
        short_base: short_base as u32,
        top: (dmax >> low) as usize,
    };
    let start = out.len();
    out.extend_from_slice(&[header.encode(), tail_at, skip as u64, base]);
    for chunk in first[..skip].chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        out.push(u64::from_le_bytes(w));
    }
    out.resize(start + header.words(n, skip), 0);
    let words = &mut out[start + HEADER_WORDS + skip.div_ceil(8)..];
    let (high, rest) = words.split_at_mut((n + header.top + 1).div_ceil(64));
    let (lows, rest) = rest.split_at_mut((n * low as usize).div_ceil(64));
    let (short_words, end_words) = rest.split_at_mut((n * header.short as usize).div_ceil(64));
    for (i, &h) in heads.iter().enumerate() {
        let d = (h - base) >> zeros;
        put_field(high, (d >> low) as usize + i, 1, 1);
        put_field(lows, i * low as usize, low, d);
        put_field(
            short_words,
            i * header.short as usize,
            header.short,
            stored(scratch.codes[i]),
        );
        put_field(
            end_words,
            i * header.ends as usize,
            header.ends,
            scratch.ends[i],
        );
    }
}

/// Buffers [`encode`] reuses from leaf to leaf.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    heads: Vec<u64>,
    codes: Vec<Option<u8>>,
    ends: Vec<u64>,
}

impl Scratch {
    fn clear(&mut self) {
        self.heads.clear();
        self.codes.clear();
        self.ends.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::substrate::popcount::Portable;

    fn leaf_of(keys: &[&[u8]]) -> (Vec<u64>, Vec<u8>) {
        let mut words = Vec::new();
        let mut tails = vec![7, 7];
        encode(
            keys.iter().copied(),
            &mut words,
            &mut tails,
            &mut Scratch::default(),
        );
        (words, tails)
    }

    fn key(leaf: &Leaf<'_>, i: usize, tails: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        leaf.write_key(Portable, i, tails, &mut out);
        out
    }

    #[test]
    fn splits_order_as_their_keys() {
        let keys: [&[u8]; 9] = [
            b"",
            b"\0",
            b"ab",
            b"ab\0",
            b"ab\0\0\0\0\0\0",
            b"ab\0\0\0\0\0\0\0",
            b"ab\0\0\0\0\0\0x",
            b"abcdefgh",
            b"abcdefghi",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(Split::of(a).cmp(&Split::of(b)), a.cmp(b), "{a:?} {b:?}");
            }
            let mut out = Vec::new();
            Split::of(a).write(&mut out);
            assert_eq!(out, a);
        }
    }

    #[test]
    fn splits_at_an_offset_read_the_rest_alone() {
        let key: Vec<u8> = (1..=20).collect();
        for len in 0..=key.len() {
            let k = &key[..len];
            for skip in 0..=len {
                let rest = &k[skip..];
                let mut h = [0u8; 8];
                h[..rest.len().min(8)].copy_from_slice(&rest[..rest.len().min(8)]);
                let s = Split::at(k, skip);
                assert_eq!(s.head, u64::from_be_bytes(h), "len {len} skip {skip}");
                assert_eq!(
                    s.class,
                    if rest.len() > 8 {
                        LONG
                    } else {
                        rest.len() as u32
                    }
                );
                assert_eq!(s.tail, rest.get(8..).unwrap_or(&[]));
            }
        }
    }

    #[test]
    fn a_leaf_decodes_and_ranks_its_keys() {
        let sets: [&[&[u8]]; 3] = [
            &[
                b"",
                b"a",
                b"a\0",
                b"abcdefgh",
                b"abcdefgh\0",
                b"abcdefghzz",
                b"b",
                b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            ],
            // A shared prefix of 10 bytes, then rests of every class.
            &[
                b"com.gmail@",
                b"com.gmail@a",
                b"com.gmail@ab\0",
                b"com.gmail@abcdefghij",
                b"com.gmail@b",
            ],
            &[b"prefix-only-one-key"],
        ];
        for keys in sets {
            let (words, tails) = leaf_of(keys);
            let leaf = Leaf::new(&words, keys.len()).unwrap();
            assert_eq!(leaf.tail_at, 2);
            let mut prefix = Vec::new();
            leaf.write_prefix(&mut prefix);
            assert!(keys.iter().all(|k| k.starts_with(&prefix)));
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(key(&leaf, i, &tails), *k, "key {i}");
                assert_eq!(leaf.rank(Portable, k, &tails, false), (i, true));
                assert_eq!(leaf.rank(Portable, k, &tails, true), (i + 1, true));
                let mut above = k.to_vec();
                above.push(0);
                let next = keys.get(i + 1).is_some_and(|n| *n == above.as_slice());
                assert_eq!(leaf.rank(Portable, &above, &tails, false), (i + 1, next));
            }
            assert_eq!(
                leaf.rank(
                    Portable,
                    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                    &tails,
                    false
                )
                .0,
                keys.len()
            );
            // Words must match the header exactly.
            assert!(Leaf::new(&words[..words.len() - 1], keys.len()).is_none());
        }
    }

    #[test]
    fn elias_fano_widths_follow_the_spread() {
        // Dense consecutive integers: no low bits, two high bits a key, no short codes.
        let keys: Vec<[u8; 8]> = (1000u64..1256).map(u64::to_be_bytes).collect();
        let (words, tails) = leaf_of(&keys.iter().map(|k| &k[..]).collect::<Vec<_>>());
        let h = Header::decode(words[0]).unwrap();
        assert_eq!((h.low, h.zeros, h.short, h.ends, h.top), (0, 48, 0, 0, 255));
        assert_eq!(h.short_base, 6);
        assert_eq!(words.len(), HEADER_WORDS + 1 + 8);
        let leaf = Leaf::new(&words, 256).unwrap();
        assert_eq!(leaf.skip, 6);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(key(&leaf, i, &tails), k);
            assert_eq!(
                leaf.head_range(Portable, leaf.head(Portable, i)),
                (i, i + 1)
            );
        }
        // Spread over the whole u64 range: the largest low width.
        let keys = [[0u8; 8], [0xFF; 8]];
        let (words, tails) = leaf_of(&[&keys[0][..], &keys[1][..]]);
        let leaf = Leaf::new(&words, 2).unwrap();
        assert_eq!(leaf.header.low, 62);
        assert_eq!(leaf.head(Portable, 1), u64::MAX);
        assert_eq!(
            leaf.rank(
                Portable,
                &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE],
                &tails,
                false
            ),
            (1, false)
        );
    }
}
