//! An order-preserving code for the suffixes an FST keeps beyond its trie (HOPE's single-char
//! scheme, memory-efficient-search-trees.txt §6.1.3, applied inside the structure).
//!
//! Below its unique prefix a key is plain text: the trie stops branching there, and the rest
//! (a reviewer id and a timestamp, the tail of a URL) is stored byte for byte. Such text uses
//! few byte values, unevenly, so a Hu–Tucker code over the suffixes' own byte frequencies
//! stores it in five or six bits a byte instead of eight.
//!
//! Symbol 0 is the end of a suffix and symbol `b + 1` is byte `b`; every symbol has a code,
//! bytes no suffix uses included (a query may hold any byte). A non-empty suffix is stored as
//! the codes of its bytes, then the end's code, packed most significant bit first, the last
//! byte padded with zero bits, and possibly zero bytes after it (a level's encodings may be
//! padded to one length, see `super::suffix::encode_records`); an empty suffix stays empty.
//! Only the end has an all-zero code (canonical codes start at zero and increase), so zero
//! bits after the end's code never read as a byte. The codes are alphabetic (they
//! increase with their symbols) and prefix-free, so for all suffixes `a` and `b`,
//! `a < b ⇔ enc(a) < enc(b)` as byte strings (the proof is in `crate::hope`'s module docs; the
//! end symbol sorts first, as the end of a string does). A lookup therefore compares the
//! encoding of its key's rest against the stored bytes without decoding them, streaming the
//! encoding and stopping at the first byte that differs. Only cursors, which hand out whole
//! keys, decode.
//!
//! A code is stored as its 257 code lengths: alphabetic codes are determined by their lengths
//! (`crate::hope::code::canonical_codes`), which refuses lengths of no alphabetic code tree.

use core::cmp::Ordering;

use crate::hope::code::{canonical_codes, optimal_lengths};

/// How an FST stores the rest of each key below the trie (see the `fst` module docs).
///
/// ```
/// use mlpdex::fst::{Config, Fst, FstBuilder, SuffixCoding};
///
/// // Reviewer ids and times: text over a few byte values, which a code stores in fewer bits.
/// let mut keys: Vec<String> = (0..2000u64)
///     .map(|i| format!("A{:012},{:010}", i * 7919 % 100_000, 1_300_000_000 + i * 3571))
///     .collect();
/// keys.sort(); // a builder takes keys in increasing order
/// let build = |suffix_coding| -> Result<Fst, mlpdex::Error> {
///     let mut b = FstBuilder::with_config(Config { suffix_coding, ..Config::default() });
///     for (i, k) in keys.iter().enumerate() {
///         b.push(k.as_bytes(), i as u64)?;
///     }
///     b.finish()
/// };
/// let (coded, plain) = (build(SuffixCoding::Coded)?, build(SuffixCoding::Plain)?);
/// assert!(coded.suffixes_coded() && !plain.suffixes_coded());
/// assert!(coded.memory_usage() < plain.memory_usage());
/// // The same map either way.
/// assert_eq!(coded.get(keys[5].as_bytes()), Some(5));
/// assert!(coded.iter().eq(plain.iter()));
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SuffixCoding {
    /// Encoded when that makes the records below the trie (suffixes with their values)
    /// at least an eighth smaller.
    #[default]
    Auto,
    /// Byte for byte: the fastest lookups.
    Plain,
    /// Always encoded.
    Coded,
}

/// Symbols: the end of a suffix, then the 256 bytes.
pub(crate) const SYMBOLS: usize = 257;
/// Bits a decoding step looks up at once; longer codes fall back to a binary search.
const TABLE_BITS: u32 = 10;

/// An order-preserving prefix code over the end symbol and the 256 bytes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SuffixCode {
    /// Code length of each symbol, 1..=48.
    lens: [u8; SYMBOLS],
    /// Each symbol's code, right-aligned.
    codes: [u64; SYMBOLS],
    /// Each symbol's code left-aligned in 64 bits: increasing, for decoding by search.
    left: [u64; SYMBOLS],
    /// Per value of the next `TABLE_BITS` bits: `len << 9 | symbol` when a code of at most
    /// that many bits starts with them, else 0.
    table: [u16; 1 << TABLE_BITS],
}

impl core::fmt::Debug for SuffixCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (min, max) = (self.lens.iter().min(), self.lens.iter().max());
        f.debug_struct("SuffixCode")
            .field("end_len", &self.lens[0])
            .field("shortest", &min)
            .field("longest", &max)
            .finish_non_exhaustive()
    }
}

impl SuffixCode {
    /// The optimal code for symbol counts `counts` (index 0 counts suffix ends).
    pub(crate) fn optimal(counts: &[u64; SYMBOLS]) -> SuffixCode {
        let lens = optimal_lengths(counts);
        // Garsia–Wachs gives the lengths of a complete alphabetic tree of at most 48 levels.
        Self::from_lens(&lens).unwrap_or_else(|| unreachable!("optimal lengths are alphabetic"))
    }

    /// The code with lengths `lens`, or `None` unless they are those of an alphabetic code
    /// tree over the 257 symbols.
    pub(crate) fn from_lens(lens: &[u8]) -> Option<SuffixCode> {
        if lens.len() != SYMBOLS {
            return None;
        }
        let canonical = canonical_codes(lens)?;
        let mut code = SuffixCode {
            lens: [0; SYMBOLS],
            codes: [0; SYMBOLS],
            left: [0; SYMBOLS],
            table: [0; 1 << TABLE_BITS],
        };
        for (s, (&len, &c)) in lens.iter().zip(&canonical).enumerate() {
            code.lens[s] = len;
            code.codes[s] = c;
            // `canonical_codes` keeps every length in 1..=48.
            code.left[s] = c << (64 - u32::from(len));
        }
        for prefix in 0..code.table.len() {
            let x = (prefix as u64) << (64 - TABLE_BITS);
            if let Some((s, len)) = code.search(x)
                && len <= TABLE_BITS
            {
                code.table[prefix] = (len as u16) << 9 | s as u16;
            }
        }
        Some(code)
    }

    /// The code lengths, as serialized.
    pub(crate) fn lens(&self) -> &[u8; SYMBOLS] {
        &self.lens
    }

    /// Bytes of memory owned.
    pub(crate) fn memory_usage(&self) -> usize {
        core::mem::size_of::<SuffixCode>()
    }

    /// Bits of the encoding of a suffix with symbol counts `counts` (end included).
    pub(crate) fn bits_for(&self, counts: &[u64; SYMBOLS]) -> u64 {
        counts
            .iter()
            .zip(&self.lens)
            .map(|(&n, &l)| n * u64::from(l))
            .sum()
    }

    /// Bytes of the encoding of `suffix` (0 for an empty one), without padding.
    pub(crate) fn encoded_len(&self, suffix: &[u8]) -> usize {
        if suffix.is_empty() {
            return 0;
        }
        let bits: usize = suffix
            .iter()
            .map(|&b| usize::from(self.lens[usize::from(b) + 1]))
            .sum();
        (bits + usize::from(self.lens[0])).div_ceil(8)
    }

    #[inline]
    fn symbol(&self, s: usize) -> (u64, u32) {
        (self.codes[s], u32::from(self.lens[s]))
    }

    /// Appends the encoding of `suffix` (nothing for an empty one) to `out`.
    pub(crate) fn encode_into(&self, suffix: &[u8], out: &mut Vec<u8>) {
        if suffix.is_empty() {
            return;
        }
        let mut w = BitWriter::default();
        for &b in suffix {
            w.push(self.symbol(usize::from(b) + 1), |byte| out.push(byte));
        }
        w.push(self.symbol(0), |byte| out.push(byte));
        w.flush(|byte| out.push(byte));
    }

    /// Orders the stored encoding `stored` against the plain suffix `rest`, as their plain
    /// forms order: encodes `rest` byte by byte, stopping at the first byte that differs.
    #[inline]
    pub(crate) fn cmp(&self, stored: &[u8], rest: &[u8]) -> Ordering {
        if stored.is_empty() || rest.is_empty() {
            return (!stored.is_empty()).cmp(&!rest.is_empty());
        }
        let mut c = Compare {
            stored,
            at: 0,
            order: Ordering::Equal,
        };
        let mut w = BitWriter::default();
        for &b in rest {
            w.push(self.symbol(usize::from(b) + 1), |byte| c.put(byte));
            // Checked per byte of the query: a mismatch usually shows in its first codes.
            if c.order != Ordering::Equal {
                return c.order;
            }
        }
        w.push(self.symbol(0), |byte| c.put(byte));
        w.flush(|byte| c.put(byte));
        match c.order {
            // Zero bytes after a stored encoding are padding.
            Ordering::Equal
                if stored
                    .get(c.at..)
                    .is_some_and(|r| r.iter().any(|&b| b != 0)) =>
            {
                Ordering::Greater
            }
            o => o,
        }
    }

    /// The symbol whose code starts the left-aligned bits `x` and its length, found by
    /// binary search; `None` when no code does (an incomplete code's gap).
    fn search(&self, x: u64) -> Option<(usize, u32)> {
        let s = self.left.partition_point(|&l| l <= x).checked_sub(1)?;
        let len = u32::from(self.lens[s]);
        (x >> (64 - len) == self.codes[s]).then_some((s, len))
    }

    /// Appends the plain form of the encoding `stored` to `out`; `false` (with `out` holding
    /// part of it) unless `stored` is exactly the encoding of a non-empty suffix: codes of
    /// bytes, the end's code, zero bits to the end of its byte, then only zero bytes.
    pub(crate) fn decode_into(&self, stored: &[u8], out: &mut Vec<u8>) -> bool {
        if stored.is_empty() {
            return true;
        }
        let mut bytes = stored.iter();
        // The next bits, left-aligned in `window`, `avail` of them real.
        let (mut window, mut avail) = (0u64, 0u32);
        let mut decoded = 0usize;
        loop {
            while avail <= 56 {
                match bytes.next() {
                    Some(&b) => {
                        window |= u64::from(b) << (56 - avail);
                        avail += 8;
                    }
                    None => break,
                }
            }
            let entry = self.table[(window >> (64 - TABLE_BITS)) as usize];
            let (s, len) = if entry != 0 {
                (usize::from(entry & 0x1ff), u32::from(entry >> 9))
            } else {
                match self.search(window) {
                    Some(hit) => hit,
                    None => return false,
                }
            };
            if len > avail {
                return false;
            }
            window = window.checked_shl(len).unwrap_or(0);
            avail -= len;
            if s == 0 {
                // The end: what is left is the last byte's zero padding.
                return decoded > 0 && window == 0 && bytes.all(|&b| b == 0);
            }
            out.push((s - 1) as u8);
            decoded += 1;
        }
    }
}

/// Compares an encoding, byte by byte as it is produced, against stored bytes.
struct Compare<'a> {
    stored: &'a [u8],
    /// Bytes compared so far.
    at: usize,
    /// The first difference, `Equal` while there is none.
    order: Ordering,
}

impl Compare<'_> {
    #[inline]
    fn put(&mut self, byte: u8) {
        if self.order == Ordering::Equal {
            self.order = match self.stored.get(self.at) {
                Some(&s) => s.cmp(&byte),
                None => Ordering::Less,
            };
            self.at += 1;
        }
    }
}

/// Packs codes most significant bit first, handing out each byte as it completes.
#[derive(Default)]
struct BitWriter {
    /// Pending bits, right-aligned; fewer than 8 between pushes.
    acc: u64,
    n: u32,
}

impl BitWriter {
    #[inline]
    fn push(&mut self, (code, len): (u64, u32), mut out: impl FnMut(u8)) {
        // `n < 8` and `len <= 48`: the sum fits.
        self.acc = self.acc << len | code;
        self.n += len;
        while self.n >= 8 {
            self.n -= 8;
            out((self.acc >> self.n) as u8);
        }
        self.acc &= (1u64 << self.n) - 1;
    }

    #[inline]
    fn flush(&mut self, mut out: impl FnMut(u8)) {
        if self.n > 0 {
            out((self.acc << (8 - self.n)) as u8);
            self.n = 0;
            self.acc = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;

    fn code_for(samples: &[&[u8]]) -> SuffixCode {
        let mut counts = [0u64; SYMBOLS];
        for s in samples {
            counts[0] += 1;
            for &b in *s {
                counts[usize::from(b) + 1] += 1;
            }
        }
        SuffixCode::optimal(&counts)
    }

    #[test]
    fn encodings_sort_like_the_suffixes_and_decode_back() {
        let samples: Vec<&[u8]> = vec![b"A1B2C3,1234567890", b"A9,0000000001", b"zz"];
        let code = code_for(&samples);
        let mut rng = TestRng::new(7);
        let alphabet = b"\x00\x01AB19,z\xfe\xff";
        let mut keys: Vec<Vec<u8>> = vec![Vec::new(), vec![0], vec![0, 0], vec![0xff]];
        for _ in 0..2000 {
            let len = rng.below(12) as usize;
            keys.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        let enc: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| {
                let mut e = Vec::new();
                code.encode_into(k, &mut e);
                e
            })
            .collect();
        for (i, (k, e)) in keys.iter().zip(&enc).enumerate() {
            assert_eq!(code.encoded_len(k), e.len(), "key {i} {k:?}");
            let mut back = Vec::new();
            assert!(code.decode_into(e, &mut back), "key {i} {k:?}");
            assert_eq!(&back, k);
            for (k2, e2) in keys.iter().zip(&enc).take(200) {
                assert_eq!(e.cmp(e2), k.cmp(k2), "{k:?} vs {k2:?}");
                assert_eq!(code.cmp(e, k2), k.cmp(k2), "{k:?} vs {k2:?}");
            }
        }
    }

    #[test]
    fn frequent_bytes_get_short_codes() {
        let samples: Vec<&[u8]> = vec![b"0123456789"; 100];
        let code = code_for(&samples);
        assert!(code.lens[usize::from(b'5') + 1] <= 4);
        assert!(code.lens[usize::from(b'Z') + 1] > 8);
        let mut e = Vec::new();
        code.encode_into(b"0123456789", &mut e);
        assert!(e.len() <= 6, "{} bytes", e.len());
    }

    #[test]
    fn malformed_encodings_do_not_decode() {
        let code = code_for(&[b"abc", b"abd"]);
        let mut e = Vec::new();
        code.encode_into(b"abc", &mut e);
        let mut out = Vec::new();
        // A trailing byte, a missing end, an encoded empty suffix, set padding bits.
        let mut longer = e.clone();
        longer.push(1);
        assert!(!code.decode_into(&longer, &mut out));
        // Zero bytes after an encoding are padding: the same suffix, in order and decoded.
        longer.pop();
        longer.extend([0, 0]);
        out.clear();
        assert!(code.decode_into(&longer, &mut out));
        assert_eq!(out, b"abc");
        assert_eq!(code.cmp(&longer, b"abc"), Ordering::Equal);
        assert_eq!(code.cmp(&longer, b"abd"), Ordering::Less);
        assert_eq!(code.cmp(&longer, b"ab"), Ordering::Greater);
        assert_eq!(code.cmp(&longer, b"abc\x00"), Ordering::Less);
        assert!(!code.decode_into(&e[..e.len() - 1], &mut out) || e.len() == 1);
        let mut empty = Vec::new();
        let mut w = BitWriter::default();
        w.push(code.symbol(0), |b| empty.push(b));
        w.flush(|b| empty.push(b));
        assert!(!code.decode_into(&empty, &mut out));
        let pad = (8 - code.bits_for(&{
            let mut c = [0u64; SYMBOLS];
            c[0] = 1;
            for &b in b"abc" {
                c[usize::from(b) + 1] += 1;
            }
            c
        }) % 8)
            % 8;
        if pad > 0 {
            let mut bad = e.clone();
            *bad.last_mut().unwrap() |= 1;
            assert!(!code.decode_into(&bad, &mut out));
        }
        // Lengths of no alphabetic tree are refused.
        assert!(SuffixCode::from_lens(&[1u8; SYMBOLS]).is_none());
        assert!(SuffixCode::from_lens(&[9u8; SYMBOLS - 1]).is_none());
        assert!(SuffixCode::from_lens(&[9u8; SYMBOLS]).is_some());
    }
}
