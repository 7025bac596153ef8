//! HOPE, the High-speed Order-Preserving Encoder (memory-efficient-search-trees.txt ch. 6):
//! compresses byte-string keys with a small dictionary so that encoded keys sort exactly as the
//! originals, making tries shorter and every index smaller.
//!
//! ```
//! use mlpdex::fst::FstBuilder;
//! use mlpdex::hope::{Encoder, Hope, HopeBuilder, Scheme};
//!
//! // A dictionary from a sample of the keys; encoded keys sort like the originals.
//! let sample = ["alice@example.com", "bob@example.org", "carol@example.net"];
//! let encoder = Encoder::build(Scheme::DoubleChar, sample)?;
//! let code = encoder.encode(b"bob@example.org");
//! assert!(code.len() < b"bob@example.org".len());
//! assert_eq!(encoder.decode(&code)?, b"bob@example.org");
//! // Bytes that are no encoding are an error, never a key.
//! assert!(encoder.decode(b"\xff\xff\xff\xff").is_err());
//!
//! // Any mlpdex structure behind it; methods need no trait import.
//! let mut b = HopeBuilder::new(encoder, FstBuilder::new());
//! for (i, k) in sample.iter().enumerate() {
//!     b.push(k.as_bytes(), i as u64)?;
//! }
//! let map = b.finish()?;
//! assert_eq!(map.get(b"bob@example.org"), Some(1));
//! let all: Vec<(Vec<u8>, u64)> = map.range(..).collect();
//! assert_eq!(all[0].0, b"alice@example.com");
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it, and when not
//!
//! Put an encoder in front of a structure whose size or depth grows with key length (FST,
//! SuRF, the Cuckoo Trie, a B-tree of full keys) when keys have skewed byte statistics: text,
//! e-mail addresses, URLs. [`Hope`] wraps any mlpdex ordered map, static map or range filter.
//! Not for random binary keys (nothing to compress: codes average eight bits per byte), and not
//! where the cost of encoding each query key (a few ns per byte) exceeds what the shorter
//! structure saves. A dictionary never needs rebuilding for correctness when the key
//! distribution drifts; only the compression rate suffers (§6.4.5).
//!
//! Measured compression rates, encoding speeds and dictionary sizes of every scheme, and the
//! FST, the Cuckoo Trie and SuRF with and without an encoder in front, as the suite
//! `bench/suites/hope.toml` wrote them: [`docs/results/hope.md`](../../../../docs/results/hope.md).
//!
//! # What it is
//!
//! An [`Encoder`] holds a complete, order-preserving dictionary built from a sample of keys
//! ([`Encoder::build`]): the string axis is cut into intervals (§6.1.1), each with a symbol (the
//! prefix its strings share) and a code; encoding replaces the key's symbols by their codes,
//! one dictionary lookup per symbol. Six schemes (§6.1.3, Table 6.1):
//!
//! | [`Scheme`] | intervals | codes | dictionary |
//! |---|---|---|---|
//! | `SingleChar` | fixed, 1 byte | Hu–Tucker | array (257 entries) |
//! | `DoubleChar` | fixed, 2 bytes | Hu–Tucker | array (65,793 entries) |
//! | `ThreeGrams`, `FourGrams` | frequent 3/4-byte grams and the gaps | Hu–Tucker | bitmap trie |
//! | `Alm` | long frequent substrings and the gaps | fixed length | radix tree |
//! | `AlmImproved` | repeated substrings from sorted suffixes | Hu–Tucker | radix tree |
//!
//! The crate-private modules follow Figure 6.5: `select` (Symbol Selector), `code` (Code
//! Assigner, Hu–Tucker by Garsia–Wachs), `dict` (Dictionary, with the interval model), and the
//! encoder here.
//!
//! # How encoded keys compare
//!
//! The end of a key is a symbol of its own, smaller than every byte: a key is encoded as the
//! codes of its symbols *followed by the code of the end*, the end sharing an entry with the
//! last symbol when that symbol's interval holds one string only. The code bits are packed most
//! significant first and the last byte is padded with zero bits. Then, for all byte strings `a`
//! and `b`, comparing encodings as byte strings (lexicographically, a proper prefix first):
//!
//! - `a < b ⇔ enc(a) < enc(b)` and `a = b ⇔ enc(a) = enc(b)`, for encodings of any lengths.
//!
//! Why: the two code sequences agree up to the first symbol where the keys' rests fall into
//! different intervals; interval order is the order of the rests, codes increase with the
//! intervals, and two different codes of a prefix code differ at a bit inside both, so the
//! comparison is decided inside code bits and never reaches the padding. No code sequence is a
//! proper prefix of another, since both end with an end code in the same interval.
//!
//! # Contract
//!
//! - Any byte string encodes, whatever the sample held: the empty key, bytes never seen, long
//!   0x00/0xFF runs. Encoding allocates nothing beyond growing the output buffer.
//! - Decoding ([`Encoder::decode`]) inverts encoding; a damaged encoding is an error.
//! - [`Encoder::to_bytes`] / [`Encoder::from_bytes`]: a versioned, checksummed format; loading
//!   checks that the boundaries are sorted and complete and the code lengths form an
//!   order-preserving prefix code, so a loaded dictionary can never mis-encode.
//! - `Encoder` is immutable and `Send + Sync`.
//!
//! # Notes
//!
//! Differences from the thesis' implementation: the end of a key is an explicit symbol (so
//! encodings compare correctly without knowing their bit lengths); Hu–Tucker weights are the
//! sample's interval accesses, unseen intervals weighing 1/256 of one access; ALM ranks
//! candidates by length × frequency and fills gaps with the intervals' own common prefixes
//! rather than Antoshenkov's equalizing split; ALM-Improved counts right-maximal repeats of the
//! sorted suffixes.

pub(crate) mod code;
mod dict;
mod select;
mod wrap;

pub use wrap::{EncodedMap, Hope, HopeBuilder, HopeCursor, HopeRange};

use self::code::{MAX_CODE_LEN, canonical_codes, fixed_lengths, optimal_lengths};
use self::dict::{ArrayDict, BitmapTrie, Boundaries, RadixDict, TERMINAL, entry};
use crate::Error;
use crate::substrate::hash::hash_bytes;
use std::sync::OnceLock;

/// The six compression schemes of §6.1.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// One-byte intervals, Hu–Tucker codes.
    SingleChar,
    /// Two-byte intervals (and one-byte ones that end a key), Hu–Tucker codes.
    DoubleChar,
    /// Frequent 3-byte grams, Hu–Tucker codes, bitmap-trie dictionary.
    ThreeGrams,
    /// Frequent 4-byte grams, Hu–Tucker codes, bitmap-trie dictionary.
    FourGrams,
    /// ALM: long frequent substrings, fixed-length codes, radix-tree dictionary.
    Alm,
    /// ALM-Improved: repeated substrings counted on suffixes, Hu–Tucker codes, radix tree.
    AlmImproved,
}

impl Scheme {
    /// Every scheme, in the thesis' order.
    pub const ALL: [Scheme; 6] = [
        Scheme::SingleChar,
        Scheme::DoubleChar,
        Scheme::ThreeGrams,
        Scheme::FourGrams,
        Scheme::Alm,
        Scheme::AlmImproved,
    ];

    /// The name used by mlpdex-bench (`single-char`, `double-char`, `3-grams`, `4-grams`, `alm`,
    /// `alm-improved`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::SingleChar => "single-char",
            Scheme::DoubleChar => "double-char",
            Scheme::ThreeGrams => "3-grams",
            Scheme::FourGrams => "4-grams",
            Scheme::Alm => "alm",
            Scheme::AlmImproved => "alm-improved",
        }
    }

    /// The scheme called `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.name() == name)
    }

    fn code(self) -> u8 {
        Scheme::ALL.iter().position(|&s| s == self).unwrap_or(0) as u8
    }

    /// Whether the dictionary size limit applies (the fixed-interval schemes have fixed sizes).
    pub fn has_limit(self) -> bool {
        !matches!(self, Scheme::SingleChar | Scheme::DoubleChar)
    }
}

/// Weight of one observed interval access relative to an interval the sample never reached
/// (see [`Encoder::build`]).
const SMOOTH: u64 = 256;

/// Dictionary size limit used when none is given: 64K entries, the thesis' default.
pub const DEFAULT_LIMIT: usize = 1 << 16;

/// The lookup structure of a scheme.
#[derive(Clone, Debug)]
enum Dict {
    Array(ArrayDict),
    Trie(BitmapTrie),
    Radix(RadixDict),
}

impl Dict {
    #[inline]
    fn lookup(&self, rest: &[u8]) -> u64 {
        match self {
            Dict::Array(d) => d.lookup(rest),
            Dict::Trie(d) => d.lookup(rest),
            Dict::Radix(d) => d.lookup(rest),
        }
    }

    fn entries_mut(&mut self) -> &mut [u64] {
        match self {
            Dict::Array(d) => d.entries_mut(),
            Dict::Trie(d) => d.entries_mut(),
            Dict::Radix(d) => d.entries_mut(),
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Dict::Array(d) => d.memory_usage(),
            Dict::Trie(d) => d.memory_usage(),
            Dict::Radix(d) => d.memory_usage(),
        }
    }
}

/// A HOPE dictionary and its encoder (see the module docs).
#[derive(Clone, Debug)]
pub struct Encoder {
    scheme: Scheme,
    boundaries: Boundaries,
    /// Per interval: bytes consumed, bit 7 for a terminal entry.
    syms: Vec<u8>,
    /// Per interval: code length in bits.
    lens: Vec<u8>,
    dict: Dict,
    /// Longest boundary: a lookup reads at most this many bytes of the rest (batch encoding).
    lookahead: usize,
    /// Left-aligned codes, for decoding: built on the first decode (the decoder is optional,
    /// §6.2.1, and an index that never decodes should not pay its memory).
    left_codes: OnceLock<Vec<u64>>,
}

impl PartialEq for Encoder {
    fn eq(&self, other: &Self) -> bool {
        self.scheme == other.scheme
            && self.boundaries == other.boundaries
            && self.lens == other.lens
    }
}

impl Eq for Encoder {}

/// Appends codes to a byte buffer, most significant bit first.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    /// Bits held in `acc` (< 64 between calls... at most 63 after a flush).
    n: u32,
}

impl<'a> BitWriter<'a> {
    #[inline]
    fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter { out, acc: 0, n: 0 }
    }

    /// Resumes after `bits` bits already in `out` (the last byte possibly partial).
    #[inline]
    fn resume(out: &'a mut Vec<u8>, bits: usize) -> Self {
        out.truncate(bits.div_ceil(8));
        let rem = (bits % 8) as u32;
        let mut w = BitWriter { out, acc: 0, n: 0 };
        if rem != 0 {
            let last = w.out.pop().unwrap_or(0);
            w.acc = u64::from(last >> (8 - rem));
            w.n = rem;
        }
        w
    }

    #[inline]
    fn put(&mut self, code: u64, len: u32) {
        debug_assert!(len <= MAX_CODE_LEN && code >> len == 0);
        if self.n + len <= 64 {
            self.acc = if len == 64 {
                code
            } else {
                self.acc << len | code
            };
            self.n += len;
            if self.n >= 32 {
                // Flush whole bytes, keeping fewer than 8 bits.
                let whole = self.n / 8;
                let keep = self.n % 8;
                let bytes = (self.acc >> keep).to_be_bytes();
                self.out.extend_from_slice(&bytes[8 - whole as usize..]);
                self.acc &= (1u64 << keep) - 1;
                self.n = keep;
            }
        } else {
            // n + len > 64 only when n >= 17; n < 32 here, so split the code.
            let first = 64 - self.n;
            self.put(code >> (len - first), first);
            self.put(code & ((1u64 << (len - first)) - 1), len - first);
        }
    }

    /// Bits written so far.
    #[inline]
    fn bits(&self) -> usize {
        self.out.len() * 8 + self.n as usize
    }

    /// Writes the last partial byte, zero-padded.
    #[inline]
    fn finish(self) {
        let whole = self.n / 8;
        let keep = self.n % 8;
        let bytes = (self.acc >> keep).to_be_bytes();
        self.out.extend_from_slice(&bytes[8 - whole as usize..]);
        if keep != 0 {
            self.out
                .push(((self.acc & ((1 << keep) - 1)) << (8 - keep)) as u8);
        }
    }
}

impl Encoder {
    /// Builds the dictionary of `scheme` from `sample` keys. Any sample works, even an empty
    /// one; a representative one (1% of the keys is plenty) compresses better. The
    /// variable-interval schemes select at most [`DEFAULT_LIMIT`] entries; use
    /// [`build_with_limit`](Self::build_with_limit) to choose another bound.
    ///
    /// ```
    /// use mlpdex::hope::{Encoder, Scheme};
    ///
    /// let encoder = Encoder::build(Scheme::DoubleChar, ["alice@example.com", "bob@example.org"])?;
    /// let (a, b) = (encoder.encode(b"alice"), encoder.encode(b"bob"));
    /// assert!(a < b);
    /// assert_eq!(encoder.decode(&a)?, b"alice");
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn build<I, K>(scheme: Scheme, sample: I) -> Result<Encoder, Error>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        Self::build_with_limit(scheme, sample, DEFAULT_LIMIT)
    }

    /// [`build`](Self::build) with at most `limit` dictionary entries for the
    /// variable-interval schemes (3-grams, 4-grams, ALM, ALM-improved): a larger dictionary
    /// compresses better and takes more memory (see [`Scheme::has_limit`]). The fixed-interval
    /// schemes (single- and double-char) ignore `limit`.
    ///
    /// [`Error::InvalidConfig`] when a variable-interval scheme gets a `limit` below 257: the
    /// smallest complete dictionary has one entry per byte value plus one for the end of a
    /// key. [`DEFAULT_LIMIT`] (65,536) suits most key sets; 4,096 already compresses text
    /// well.
    pub fn build_with_limit<I, K>(scheme: Scheme, sample: I, limit: usize) -> Result<Encoder, Error>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        if scheme.has_limit() && limit < 257 {
            return Err(Error::InvalidConfig {
                what: "the HOPE dictionary limit is the most entries symbol selection may \
                       choose, and must be at least 257 (every byte value and the end of a key); \
                       use hope::DEFAULT_LIMIT (65536), or 4096 for a small dictionary",
            });
        }
        let owned: Vec<K> = sample.into_iter().collect();
        let keys: Vec<&[u8]> = owned.iter().map(AsRef::as_ref).collect();
        let bounds = match scheme {
            Scheme::SingleChar => ArrayDict::boundaries(1),
            Scheme::DoubleChar => ArrayDict::boundaries(2),
            Scheme::ThreeGrams => select::ngrams(&keys, 3, limit),
            Scheme::FourGrams => select::ngrams(&keys, 4, limit),
            Scheme::Alm => select::alm(&keys, limit),
            Scheme::AlmImproved => select::alm_improved(&keys, limit),
        };
        let boundaries = Boundaries::new(&bounds).ok_or(Error::Capacity {
            what: "HOPE symbol selection produced an invalid dictionary",
        })?;
        drop(bounds);
        let syms = boundaries.symbols().ok_or(Error::Capacity {
            what: "HOPE symbol selection produced an interval without a symbol",
        })?;
        // Test-encode the sample with placeholder codes to count interval accesses (§6.2.2).
        let mut enc = Encoder::assemble(scheme, boundaries, syms, None)?;
        let mut counts = vec![0u64; enc.syms.len()];
        for k in &keys {
            enc.for_each_interval(k, |i| counts[i] += 1);
        }
        // Intervals the sample never reached still need codes, but should cost the seen ones
        // as little as possible: weight them 1/SMOOTH of one observed access.
        for c in &mut counts {
            *c = if *c == 0 { 1 } else { *c * SMOOTH };
        }
        let lens = match scheme {
            Scheme::Alm => fixed_lengths(counts.len()),
            _ => optimal_lengths(&counts),
        };
        enc.set_codes(lens)?;
        Ok(enc)
    }

    /// An encoder over checked boundaries and symbols; codes from `lens`, or placeholders.
    fn assemble(
        scheme: Scheme,
        boundaries: Boundaries,
        syms: Vec<u8>,
        lens: Option<Vec<u8>>,
    ) -> Result<Encoder, Error> {
        let n = boundaries.len();
        let placeholder: Vec<u64> = syms.iter().map(|&s| entry(0, 0, s)).collect();
        let lookahead = boundaries.max_len();
        let dict = match scheme {
            Scheme::SingleChar | Scheme::DoubleChar => {
                let width = if scheme == Scheme::SingleChar { 1 } else { 2 };
                // The array finds intervals by a formula: the boundaries must be exactly the
                // fixed ones, not merely as many.
                let fixed = ArrayDict::boundaries(width);
                if n != fixed.len() || (0..n).any(|i| boundaries.get(i) != fixed[i].as_slice()) {
                    return Err(bad("boundaries of a fixed-interval scheme"));
                }
                Dict::Array(ArrayDict::new(width, placeholder))
            }
            Scheme::ThreeGrams | Scheme::FourGrams => {
                let depth = if scheme == Scheme::ThreeGrams { 3 } else { 4 };
                if lookahead > depth {
                    return Err(bad("a gram boundary longer than the gram"));
                }
                Dict::Trie(BitmapTrie::new(&boundaries, depth, placeholder))
            }
            Scheme::Alm | Scheme::AlmImproved => {
                Dict::Radix(RadixDict::new(&boundaries, placeholder))
            }
        };
        // The array schemes' boundaries are a formula of the index (`Encoder::boundary`): do
        // not keep 400 KiB of them for Double-Char.
        let boundaries = match dict {
            Dict::Array(_) => Boundaries::default(),
            _ => boundaries,
        };
        let mut enc = Encoder {
            scheme,
            boundaries,
            syms,
            lens: vec![0; n],
            dict,
            lookahead,
            left_codes: OnceLock::new(),
        };
        if let Some(l) = lens {
            enc.set_codes(l)?;
        }
        Ok(enc)
    }

    fn set_codes(&mut self, lens: Vec<u8>) -> Result<(), Error> {
        if lens.len() != self.syms.len() {
            return Err(bad("code count disagrees with the intervals"));
        }
        let codes = canonical_codes(&lens).ok_or(bad("code lengths of no alphabetic code"))?;
        for (i, e) in self.dict.entries_mut().iter_mut().enumerate() {
            *e = entry(codes[i], lens[i], self.syms[i]);
        }
        self.left_codes = OnceLock::new();
        self.lens = lens;
        Ok(())
    }

    /// Calls `f` with each interval the encoding of `key` visits.
    fn for_each_interval(&self, key: &[u8], mut f: impl FnMut(usize)) {
        let mut rest = key;
        loop {
            let i = self.index(rest);
            f(i);
            let s = self.syms[i];
            if s & TERMINAL != 0 {
                return;
            }
            rest = &rest[s as usize..];
        }
    }

    fn index(&self, rest: &[u8]) -> usize {
        match &self.dict {
            Dict::Array(d) => d.index(rest),
            Dict::Trie(d) => d.index(rest),
            Dict::Radix(d) => d.index(rest),
        }
    }

    /// Boundary `i` (written into `buf` for the array schemes, whose boundaries are not
    /// stored).
    fn boundary<'a>(&'a self, i: usize, buf: &'a mut [u8; 2]) -> &'a [u8] {
        match &self.dict {
            Dict::Array(d) => d.boundary(i, buf),
            _ => self.boundaries.get(i),
        }
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Number of dictionary entries (intervals).
    pub fn entries(&self) -> usize {
        self.syms.len()
    }

    /// Bytes of the dictionary an encoder needs (lookup structure with its entries); the
    /// decoder's tables are counted by [`memory_usage`](Self::memory_usage).
    pub fn dictionary_bytes(&self) -> usize {
        self.dict.memory_usage()
    }

    /// Bytes of memory owned: the dictionary, the boundaries and, once a decode built them, the
    /// decoder's tables.
    pub fn memory_usage(&self) -> usize {
        self.dict.memory_usage()
            + self.boundaries.memory_usage()
            + self.syms.capacity()
            + self.lens.capacity()
            + self.left_codes.get().map_or(0, |v| v.capacity() * 8)
    }

    /// Appends the encoding of `key` to `out`; returns its length in bits (before padding).
    #[inline]
    pub fn encode_into(&self, key: &[u8], out: &mut Vec<u8>) -> usize {
        let mut w = BitWriter::new(out);
        let start = w.bits();
        self.encode_rest(key, &mut w);
        let bits = w.bits() - start;
        w.finish();
        bits
    }

    /// Encodes `key` into `w`: one loop per lookup structure, so the dispatch happens once per
    /// key rather than once per symbol.
    #[inline]
    fn encode_rest(&self, key: &[u8], w: &mut BitWriter<'_>) {
        match &self.dict {
            Dict::Array(d) if d.width() == 1 => {
                // Single-Char: every byte is one symbol, then the end.
                let e = d.entries();
                for &b in key {
                    let x = e[1 + b as usize];
                    w.put(x >> 16, (x & 0xFF) as u32);
                }
                w.put(e[0] >> 16, (e[0] & 0xFF) as u32);
            }
            Dict::Array(d) => encode_with(key, w, |r| d.lookup(r)),
            Dict::Trie(d) => encode_with(key, w, |r| d.lookup(r)),
            Dict::Radix(d) => encode_with(key, w, |r| d.lookup(r)),
        }
    }

    /// The encoding of `key`.
    pub fn encode(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(key.len() + 2);
        self.encode_into(key, &mut out);
        out
    }

    /// Encodes keys given in sorted order, sharing work between neighbours (§6.2.2): within
    /// each block of `block` keys, the symbols of the block's common prefix are looked up once.
    /// `out` receives one encoding per key, exactly what [`encode`](Self::encode) gives.
    ///
    /// A symbol's interval depends on up to `lookahead` bytes of the rest (the longest
    /// boundary), so the shared part ends where a lookup would read past the common prefix.
    pub fn encode_batch<K: AsRef<[u8]>>(&self, keys: &[K], block: usize, out: &mut Vec<Vec<u8>>) {
        let block = block.max(1);
        let mut shared = Vec::new();
        for chunk in keys.chunks(block) {
            let first = chunk[0].as_ref();
            let lcp = chunk[1..].iter().fold(first.len(), |l, k| {
                l.min(
                    first
                        .iter()
                        .zip(k.as_ref())
                        .take_while(|(a, b)| a == b)
                        .count(),
                )
            });
            // Encode the shared symbols once: those whose lookup reads only common bytes.
            shared.clear();
            let mut w = BitWriter::new(&mut shared);
            let mut at = 0usize;
            // Strictly less: a rest of exactly `lookahead` bytes may end inside a boundary.
            while at + self.lookahead < lcp {
                let e = self.dict.lookup(&first[at..]);
                let s = (e >> 8) as u8;
                if s & TERMINAL != 0 {
                    break;
                }
                w.put(e >> 16, (e & 0xFF) as u32);
                at += s as usize;
            }
            let bits = w.bits();
            w.finish();
            for k in chunk {
                let mut buf = shared.clone();
                let mut w = BitWriter::resume(&mut buf, bits);
                self.encode_rest(&k.as_ref()[at..], &mut w);
                w.finish();
                out.push(buf);
            }
        }
    }

    /// The key `encoded` is the encoding of; `Error::Format` when it is not exactly the
    /// encoding of any key (codes that run past the end, bytes left after the end code, or a
    /// code sequence the encoder would not produce, such as a gap interval's code where a
    /// longer symbol applies: the decoded key is encoded again and compared).
    pub fn decode(&self, encoded: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(encoded.len() * 2);
        self.decode_into(encoded, &mut out)?;
        Ok(out)
    }

    /// Appends the key `encoded` is the encoding of to `out` (see [`decode`](Self::decode));
    /// on error `out` is left as it was.
    pub fn decode_into(&self, encoded: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        let r = self.decode_codes(encoded, out).and_then(|()| {
            let mut again = Vec::with_capacity(encoded.len());
            self.encode_into(&out[start..], &mut again);
            if again == encoded {
                Ok(())
            } else {
                Err(bad("a code sequence the encoder does not produce"))
            }
        });
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    /// Replaces codes by symbols up to the end code, without checking that the encoder would
    /// have produced exactly these codes (for encodings known to come from it, such as the
    /// keys of a [`Hope`] structure).
    pub(crate) fn decode_codes(&self, encoded: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let left = self.left_codes.get_or_init(|| {
            // The lengths were checked when the encoder was made.
            let codes = canonical_codes(&self.lens).unwrap_or_default();
            codes
                .iter()
                .zip(&self.lens)
                .map(|(&c, &l)| c << (64 - u32::from(l)))
                .collect()
        });
        let total = encoded.len() * 8;
        let mut pos = 0usize;
        loop {
            // The next 64 bits, zero past the end.
            let byte = pos / 8;
            let mut win = [0u8; 8];
            let avail = encoded.len().saturating_sub(byte).min(8);
            win[..avail].copy_from_slice(&encoded[byte..byte + avail]);
            let mut w = u64::from_be_bytes(win) << (pos % 8);
            if !pos.is_multiple_of(8) && byte + 8 < encoded.len() {
                w |= u64::from(encoded[byte + 8]) >> (8 - pos % 8);
            }
            let i = left.partition_point(|&c| c <= w) - 1;
            let len = usize::from(self.lens[i]);
            // An incomplete code (ALM's fixed lengths) leaves bit patterns that are no code.
            if w >> (64 - len) << (64 - len) != left[i] {
                return Err(bad("bits that are no code"));
            }
            pos += len;
            if pos > total {
                return Err(bad("an encoding that ends inside a code"));
            }
            let s = self.syms[i];
            let n = usize::from(s & !TERMINAL);
            let mut buf = [0u8; 2];
            out.extend_from_slice(&self.boundary(i, &mut buf)[..n]);
            if s & TERMINAL != 0 {
                break;
            }
        }
        // Only the zero padding of the last byte may follow.
        if pos.div_ceil(8) != encoded.len()
            || (!pos.is_multiple_of(8) && encoded[pos / 8] << (pos % 8) != 0)
        {
            return Err(bad("bytes after the end of an encoding"));
        }
        Ok(())
    }

    /// Serializes the dictionary. Format (version 1, little-endian): magic `MLPDHOPE`, u32
    /// version, u8 scheme, 3 zero bytes, u64 interval count `n`, then per interval its boundary
    /// (u8 length, bytes) and its code length (u8), then an XXH3-64 of everything before.
    /// Symbols, codes and the lookup structure are derived again on load.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32 + self.boundaries.pool().len() + 2 * self.syms.len());
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&[self.scheme.code(), 0, 0, 0]);
        v.extend_from_slice(&(self.syms.len() as u64).to_le_bytes());
        for i in 0..self.syms.len() {
            let mut buf = [0u8; 2];
            let b = self.boundary(i, &mut buf);
            v.push(b.len() as u8);
            v.extend_from_slice(b);
            v.push(self.lens[i]);
        }
        let sum = hash_bytes(&v, 0);
        v.extend_from_slice(&sum.to_le_bytes());
        v
    }

    /// Loads a dictionary written by [`to_bytes`](Self::to_bytes), checking everything.
    pub fn from_bytes(buf: &[u8]) -> Result<Encoder, Error> {
        if buf.len() < 32 {
            return Err(bad("truncated HOPE dictionary"));
        }
        if &buf[..8] != MAGIC {
            return Err(bad("bad magic"));
        }
        let version = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]);
        if version != VERSION {
            return Err(Error::Version {
                found: version,
                supported: VERSION,
            });
        }
        let body = buf.len() - 8;
        if hash_bytes(&buf[..body], 0).to_le_bytes() != buf[body..] {
            return Err(bad("checksum mismatch"));
        }
        let scheme = *Scheme::ALL
            .get(usize::from(buf[12]))
            .ok_or(bad("unknown scheme"))?;
        if buf[13..16] != [0; 3] {
            return Err(bad("reserved field set"));
        }
        let mut c = [0u8; 8];
        c.copy_from_slice(&buf[16..24]);
        let n = usize::try_from(u64::from_le_bytes(c))
            .ok()
            .filter(|&n| n <= body)
            .ok_or(bad("interval count"))?;
        let mut at = 24usize;
        let mut bounds = Vec::with_capacity(n);
        let mut lens = Vec::with_capacity(n);
        for _ in 0..n {
            let l = usize::from(*buf[..body].get(at).ok_or(bad("truncated boundary"))?);
            let b = buf
                .get(at + 1..at + 1 + l)
                .filter(|_| at + 2 + l <= body)
                .ok_or(bad("truncated boundary"))?;
            bounds.push(b);
            lens.push(buf[at + 1 + l]);
            at += 2 + l;
        }
        if at != body {
            return Err(bad("trailing bytes"));
        }
        let boundaries = Boundaries::new(bounds).ok_or(bad("boundaries unsorted or incomplete"))?;
        let syms = boundaries
            .symbols()
            .ok_or(bad("an interval without a symbol"))?;
        Encoder::assemble(scheme, boundaries, syms, Some(lens))
    }
}

/// The encoding loop over any lookup: emit the entry's code, consume its symbol, stop after a
/// terminal entry.
#[inline(always)]
fn encode_with(key: &[u8], w: &mut BitWriter<'_>, lookup: impl Fn(&[u8]) -> u64) {
    let mut rest = key;
    loop {
        let e = lookup(rest);
        w.put(e >> 16, (e & 0xFF) as u32);
        let s = (e >> 8) as u8;
        if s & TERMINAL != 0 {
            return;
        }
        rest = &rest[s as usize..];
    }
}

const MAGIC: &[u8; 8] = b"MLPDHOPE";
const VERSION: u32 = 1;

fn bad(what: &'static str) -> Error {
    Error::Format { what, offset: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_writer_packs_msb_first_and_resumes() {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.put(0b1, 1);
        w.put(0b0110, 4);
        w.put(0x3F_FFFF_FFFF, 38);
        w.put(0b101, 3);
        w.put(0x1234_5678_9ABC, 48);
        let bits = w.bits();
        w.finish();
        assert_eq!(bits, 94);
        // Re-read the bits.
        let bit = |i: usize| out[i / 8] >> (7 - i % 8) & 1;
        let read =
            |from: usize, n: usize| (from..from + n).fold(0u64, |a, i| a << 1 | bit(i) as u64);
        assert_eq!(read(0, 1), 1);
        assert_eq!(read(1, 4), 0b0110);
        assert_eq!(read(5, 38), 0x3F_FFFF_FFFF);
        assert_eq!(read(43, 3), 0b101);
        assert_eq!(read(46, 48), 0x1234_5678_9ABC);
        assert_eq!(out.len(), 12);
        assert_eq!(out[11] & 0b11, 0);
        // Resuming after 43 bits and writing the same tail gives the same bytes.
        let mut again = out.clone();
        let mut w = BitWriter::resume(&mut again, 43);
        w.put(0b101, 3);
        w.put(0x1234_5678_9ABC, 48);
        w.finish();
        assert_eq!(again, out);
    }
}
