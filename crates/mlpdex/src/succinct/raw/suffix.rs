//! What a leaf keeps of its key beyond the trie: nothing, the whole rest of the key, or a few
//! bits of it (memory-efficient-search-trees.txt §4.1).
//!
//! The trie is always cut at each key's unique prefix (the shortest prefix no other key shares,
//! or the whole key when it is a prefix of another). Leaf `i` (in the trie's leaf order) then
//! owns entry `i` of one suffix store:
//!
//! - [`FullSuffixes`]: the rest of the key, so the trie plus the store hold every key exactly
//!   (FST's default). Bytes are concatenated; a bit vector with `len` zeros and then a one per
//!   leaf marks where each ends, so suffix `i` ends at `select1(i) - i`.
//! - [`FixedSuffixes`]: `w` bits per leaf: a hash of the whole key, the next `w` real bits after
//!   the unique prefix, or both (SuRF-Hash, -Real, -Mixed).

use core::cmp::Ordering;

use super::suffix_code::{SYMBOLS, SuffixCode};
use crate::Error;
use crate::substrate::hash::hash_bytes;
use crate::substrate::rank::SelectBits;
use crate::substrate::{BitVec, Frozen, FrozenBits};

/// Seed of the suffix hash; part of the serialized format.
pub(crate) const HASH_SEED: u64 = 0x5355_5246_4841_5348; // "SURFHASH"

/// What each leaf stores beyond the trie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SuffixKind {
    /// Nothing: the trie holds unique prefixes only.
    None,
    /// The rest of every key: the structure holds complete keys.
    Full,
    /// `n` bits (1..=64) of a hash of the whole key.
    Hash(u8),
    /// The `n` bits (1..=64) of the key that follow its unique prefix, zero-padded.
    Real(u8),
    /// `hash` hash bits followed by `real` real bits (each 1..=32).
    Mixed {
        /// Hash bits.
        hash: u8,
        /// Real bits.
        real: u8,
    },
}

impl SuffixKind {
    /// Checks the bit counts.
    pub(crate) fn validate(self) -> Result<(), Error> {
        let ok = match self {
            SuffixKind::None | SuffixKind::Full => true,
            SuffixKind::Hash(n) | SuffixKind::Real(n) => (1..=64).contains(&n),
            SuffixKind::Mixed { hash, real } => {
                (1..=32).contains(&hash) && (1..=32).contains(&real)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidConfig {
                what: "suffix bits must be 1..=64 (hash or real) or 1..=32 each (mixed)",
            })
        }
    }

    /// Bits per leaf of a fixed-width kind (0 for `None` and `Full`).
    pub(crate) fn width(self) -> u32 {
        match self {
            SuffixKind::None | SuffixKind::Full => 0,
            SuffixKind::Hash(n) | SuffixKind::Real(n) => n as u32,
            SuffixKind::Mixed { hash, real } => (hash + real) as u32,
        }
    }

    fn hash_bits(self) -> u32 {
        match self {
            SuffixKind::Hash(n) => n as u32,
            SuffixKind::Mixed { hash, .. } => hash as u32,
            _ => 0,
        }
    }

    fn real_bits(self) -> u32 {
        match self {
            SuffixKind::Real(n) => n as u32,
            SuffixKind::Mixed { real, .. } => real as u32,
            _ => 0,
        }
    }

    /// The fixed-width entry of `key`, whose unique prefix is `key[..depth]`.
    pub(crate) fn entry(self, key: &[u8], depth: usize) -> u64 {
        self.entry_with_hash(key, depth, self.key_hash(key))
    }

    /// The hash bits of `key`'s entry (0 for kinds without hash bits, without hashing).
    #[inline]
    pub(crate) fn key_hash(self, key: &[u8]) -> u64 {
        match self.hash_bits() {
            0 => 0,
            h => hash_bytes(key, HASH_SEED) & mask(h),
        }
    }

    /// The fixed-width entry of `key` at `depth` with the given hash bits instead of the key's
    /// own: a rebuild from stored entries (`dynamic_surf`) carries hash bits it cannot
    /// recompute. `entry(key, depth)` is `entry_with_hash(key, depth, key_hash(key))`.
    pub(crate) fn entry_with_hash(self, key: &[u8], depth: usize, hash: u64) -> u64 {
        let (h, r) = (self.hash_bits(), self.real_bits());
        let mut v = 0;
        if h > 0 {
            v = hash & mask(h);
        }
        if r > 0 {
            // `h + r <= 64`, and `h == 0` when `r == 64`.
            let real = real_bits(key, depth, r);
            v = if h == 0 { real } else { v << r | real };
        }
        v
    }
}

#[inline]
fn mask(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The `n` bits of `key` after byte `depth`, most significant first, zero-padded past the end.
#[inline]
pub(crate) fn real_bits(key: &[u8], depth: usize, n: u32) -> u64 {
    let rest = key.get(depth..).unwrap_or(&[]);
    let mut buf = [0u8; 8];
    let take = rest.len().min(8);
    buf[..take].copy_from_slice(&rest[..take]);
    let word = u64::from_be_bytes(buf);
    if n >= 64 { word } else { word >> (64 - n) }
}

/// The rest of every key after its unique prefix, each preceded by the key's value.
///
/// Leaf `i`'s record is its value (u64, little-endian) followed by its suffix; records are
/// back to back. `ends` has, per leaf, one zero per suffix byte and then a one, so suffix bytes
/// before leaf `i` number `select1(i - 1) - (i - 1)` and its record starts 8·i bytes later: one
/// select finds both, and the value arrives with the suffix's cache line.
///
/// Levels whose suffixes all have the same length (every level, for fixed-width keys) are also
/// indexed by arithmetic: record `i` of such a level starts at the level's first record plus
/// `(i - first) * (8 + len)`, with no select at all.
///
/// With a [`SuffixCode`], each non-empty suffix is stored encoded (see `super::suffix_code`):
/// the markers count encoded bytes, lookups compare a key's rest against the encoding with
/// [`cmp_rest`](Self::cmp_rest), and keys are rebuilt with [`extend_key`](Self::extend_key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FullSuffixes {
    records: Frozen<u8>,
    ends: SelectBits,
    /// Per trie level: `(first leaf, first record's offset, suffix length)` when uniform.
    uniform: Vec<Option<(usize, usize, usize)>>,
    code: Option<Box<SuffixCode>>,
}

/// Bytes of the value in front of each suffix.
const VALUE: usize = 8;

impl FullSuffixes {
    /// Checks that `records` holds exactly one value per leaf and the suffix bytes `ends`
    /// counts.
    pub(crate) fn new(records: Frozen<u8>, ends: FrozenBits) -> Result<Self, Error> {
        let ends = SelectBits::over(ends).ok_or(Error::Capacity {
            what: "key suffixes exceed 2^32 bytes",
        })?;
        let leaves = ends.count_ones();
        let suffix_bytes = ends.len() - leaves;
        // Every suffix byte belongs to a leaf: the markers end with a one.
        let owned = ends.is_empty() || ends.get(ends.len() - 1);
        if !owned || Some(records.len()) != leaves.checked_mul(VALUE).map(|v| v + suffix_bytes) {
            return Err(Error::Format {
                what: "suffix records disagree with their end markers",
                offset: 0,
            });
        }
        Ok(FullSuffixes {
            records,
            ends,
            uniform: Vec::new(),
            code: None,
        })
    }

    /// The same records with their suffixes read through `code`, after checking that each
    /// non-empty suffix is an exact encoding; on failure, the byte offset of the first suffix
    /// that is not.
    pub(crate) fn with_code(mut self, code: SuffixCode) -> Result<Self, usize> {
        let mut scratch = Vec::new();
        let mut at = RecordAt::default();
        for _ in 0..self.len() {
            let start = at.byte + VALUE;
            let (_, suffix) = self.read_at(&mut at);
            scratch.clear();
            if !code.decode_into(suffix, &mut scratch) {
                return Err(start);
            }
        }
        self.code = Some(Box::new(code));
        Ok(self)
    }

    /// The same records with their suffixes read through `code`, which encoded them (the
    /// builder's path: checked in debug builds only).
    pub(crate) fn coded_by(self, code: SuffixCode) -> Self {
        if cfg!(debug_assertions) {
            return self
                .with_code(code)
                .unwrap_or_else(|at| panic!("the builder wrote no encoding at byte {at}"));
        }
        FullSuffixes {
            code: Some(Box::new(code)),
            ..self
        }
    }

    /// The code of the suffixes, when they are encoded.
    pub(crate) fn code(&self) -> Option<&SuffixCode> {
        self.code.as_deref()
    }

    /// True when the stored suffix `stored` is the key rest `rest`.
    #[inline]
    pub(crate) fn matches(&self, stored: &[u8], rest: &[u8]) -> bool {
        match &self.code {
            None => stored == rest,
            Some(c) => c.cmp(stored, rest) == Ordering::Equal,
        }
    }

    /// Orders the stored suffix `stored` against the key rest `rest`.
    #[inline]
    pub(crate) fn cmp_rest(&self, stored: &[u8], rest: &[u8]) -> Ordering {
        match &self.code {
            None => stored.cmp(rest),
            Some(c) => c.cmp(stored, rest),
        }
    }

    /// Appends the plain form of the stored suffix `stored` to `key`.
    #[inline]
    pub(crate) fn extend_key(&self, stored: &[u8], key: &mut Vec<u8>) {
        match &self.code {
            None => key.extend_from_slice(stored),
            Some(c) => {
                // Checked on load and written by the builder: every stored suffix decodes.
                let ok = c.decode_into(stored, key);
                debug_assert!(ok, "a stored suffix is no encoding");
            }
        }
    }

    /// Finds the levels (with `per_level` leaves each, in leaf order) whose suffixes all have
    /// one length, for [`get_at`](Self::get_at).
    pub(crate) fn index_levels(&mut self, per_level: &[usize]) {
        let words = self.ends.bits().words();
        let mut uniform = Vec::with_capacity(per_level.len());
        let (mut leaf, mut bit) = (0usize, 0usize);
        for &n in per_level {
            let first = leaf;
            let offset = bit - leaf + VALUE * leaf;
            let mut len = None;
            let mut same = n > 0;
            for _ in 0..n {
                let Some(one) = crate::substrate::rank::next_one(words, bit) else {
                    same = false;
                    break;
                };
                let l = one - bit;
                same &= *len.get_or_insert(l) == l;
                bit = one + 1;
                leaf += 1;
            }
            uniform.push(same.then(|| (first, offset, len.unwrap_or(0))));
        }
        self.uniform = uniform;
    }

    /// Prefetches the record of leaf `leaf` on `level` when its level is uniform, else the
    /// end markers its select will read; true when the record itself was prefetched.
    #[inline]
    pub(crate) fn prefetch_at(&self, level: usize, leaf: usize) -> bool {
        use crate::substrate::prefetch::prefetch_read;
        if let Some(&Some((first, offset, len))) = self.uniform.get(level) {
            let start = offset + leaf.wrapping_sub(first).wrapping_mul(VALUE + len);
            prefetch_read(self.records.as_ptr().wrapping_add(start));
            return true;
        }
        self.ends.prefetch_select(leaf);
        false
    }

    /// Prefetches the record of leaf `leaf` found through the end markers (after
    /// [`prefetch_at`](Self::prefetch_at) brought those in).
    #[inline]
    pub(crate) fn prefetch_record(&self, leaf: usize) {
        if let Some(end_bit) = self.ends.select1(leaf) {
            let start = (end_bit - leaf + VALUE * leaf).saturating_sub(24);
            crate::substrate::prefetch::prefetch_read(self.records.as_ptr().wrapping_add(start));
        }
    }

    /// The value and suffix of leaf `leaf` on trie level `level`.
    #[inline]
    pub(crate) fn get_at(&self, level: usize, leaf: usize) -> (u64, &[u8]) {
        if let Some(&Some((first, offset, len))) = self.uniform.get(level) {
            let start = offset + (leaf - first) * (VALUE + len);
            if let Some(r) = self.records.get(start..start + VALUE + len) {
                let mut v = [0u8; VALUE];
                v.copy_from_slice(&r[..VALUE]);
                return (u64::from_le_bytes(v), &r[VALUE..]);
            }
        }
        self.get(leaf)
    }

    /// The end marker of leaf `i`'s suffix when that suffix is not empty (`None` when it is,
    /// or past the last leaf).
    pub(crate) fn nonempty_suffix_end(&self, i: usize) -> Option<usize> {
        // The suffix is empty when its marker directly follows the previous one (or, for the
        // first leaf, starts the markers).
        let end = self.ends.select1(i)?;
        (end > 0 && !self.ends.get(end - 1)).then_some(end)
    }

    pub(crate) fn parts(&self) -> (&[u8], &FrozenBits) {
        (&self.records, self.ends.bits())
    }

    /// Bytes of the records (values and suffixes) of leaves `0..leaf`.
    pub(crate) fn record_bytes_before(&self, leaf: usize) -> usize {
        match leaf.checked_sub(1) {
            None => 0,
            // The suffix bytes are the zeros before the last leaf's end marker.
            Some(last) => self
                .ends
                .select1(last)
                .map_or(self.records.len(), |end| end + 1 - leaf + VALUE * leaf),
        }
    }

    /// Number of leaves.
    pub(crate) fn len(&self) -> usize {
        self.ends.count_ones()
    }

    /// The value and suffix of leaf `i` (`(0, [])` past the last leaf).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> (u64, &[u8]) {
        let Some(end_bit) = self.ends.select1(i) else {
            return (0, &[]);
        };
        let end = end_bit - i + VALUE * (i + 1);
        let start = if i == 0 {
            0
        } else {
            // The previous leaf's one is the last one before `end_bit`.
            self.ends
                .prev_one(end_bit.wrapping_sub(1))
                .map_or(0, |p| p + 1 - i + VALUE * i)
        };
        match self.records.get(start..end) {
            Some(r) if r.len() >= VALUE => {
                let mut v = [0u8; VALUE];
                v.copy_from_slice(&r[..VALUE]);
                (u64::from_le_bytes(v), &r[VALUE..])
            }
            _ => (0, &[]),
        }
    }

    /// Where the record of leaf `i` starts (one select): what [`read_at`](Self::read_at)
    /// steps from.
    ///
    /// `level` is the trie level of leaf `i`: when every suffix there has one length (see
    /// [`index_levels`](Self::index_levels)), reads step by that length without a scan.
    pub(crate) fn record_at(&self, level: usize, i: usize) -> RecordAt {
        let bit = match i.checked_sub(1) {
            None => 0,
            Some(last) => self
                .ends
                .select1(last)
                .map_or(self.ends.len(), |end| end + 1),
        };
        let uniform = match self.uniform.get(level) {
            Some(&Some((_, _, len))) => Some(len),
            _ => None,
        };
        RecordAt {
            byte: bit - i + VALUE * i,
            bit,
            uniform,
        }
    }

    /// The value and suffix of the record at `at`, stepping `at` to the next record: one scan
    /// for the suffix's end marker from where the record starts, no select (`(0, [])` past
    /// the last record).
    #[inline]
    pub(crate) fn read_at(&self, at: &mut RecordAt) -> (u64, &[u8]) {
        let end = match at.uniform {
            Some(len) => at.bit + len,
            None => match crate::substrate::rank::next_one(self.ends.bits().words(), at.bit) {
                Some(end) => end,
                None => return (0, &[]),
            },
        };
        let start = at.byte;
        let len = end - at.bit;
        at.bit = end + 1;
        at.byte = start + VALUE + len;
        match self.records.get(start..at.byte) {
            Some(r) => {
                let (v, suffix) = r.split_at(VALUE);
                (
                    u64::from_le_bytes(v.try_into().unwrap_or([0; VALUE])),
                    suffix,
                )
            }
            None => (0, &[]),
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.records.bytes()
            + self.ends.memory_usage()
            + self.code.as_ref().map_or(0, |c| c.memory_usage())
    }
}

/// Calls `f` with the value bytes and the suffix of each plain record in `records` (values and
/// suffixes, `ends` marking where suffixes end).
fn each_record(records: &[u8], ends: &FrozenBits, mut f: impl FnMut(&[u8], &[u8])) {
    let (mut byte, mut bit) = (0usize, 0usize);
    for end in ends.iter_ones() {
        let len = end - bit;
        let r = &records[byte..byte + VALUE + len];
        f(&r[..VALUE], &r[VALUE..]);
        byte += VALUE + len;
        bit = end + 1;
    }
}

/// How often each symbol of a [`SuffixCode`] occurs in the plain records `records`: the ends
/// of the non-empty suffixes (symbol 0) and their bytes.
pub(crate) fn suffix_counts(records: &[u8], ends: &FrozenBits) -> [u64; SYMBOLS] {
    let mut counts = [0u64; SYMBOLS];
    each_record(records, ends, |_, suffix| {
        if !suffix.is_empty() {
            counts[0] += 1;
            for &b in suffix {
                counts[usize::from(b) + 1] += 1;
            }
        }
    });
    counts
}

/// Re-encodes plain records (values and suffixes, `ends` marking where suffixes end; the trie
/// levels hold `per_level` leaves each, in leaf order) with `code`: the new records and
/// markers.
///
/// Plain suffixes of fixed-width keys have one length per level, which lets lookups find a
/// record by arithmetic instead of a select (see [`FullSuffixes::index_levels`]); encodings
/// of text vary by a few bytes. So a level whose suffixes are all non-empty is padded with
/// zero bytes to its longest encoding when that adds at most a quarter to its encoded bytes:
/// padding the `az` suffixes keeps lookups at one cache miss for the record instead of
/// three (select samples, end markers, record).
pub(crate) fn encode_records(
    records: &[u8],
    ends: &FrozenBits,
    per_level: &[usize],
    code: &SuffixCode,
) -> (Vec<u8>, BitVec) {
    // The level of each leaf, in leaf order.
    let levels = || {
        per_level
            .iter()
            .enumerate()
            .flat_map(|(level, &n)| core::iter::repeat_n(level, n))
    };
    // Per level: its longest encoding, its encoded bytes, whether no suffix is empty.
    let mut shape = vec![(0usize, 0usize, true); per_level.len()];
    let mut level = levels();
    each_record(records, ends, |_, suffix| {
        if let Some((longest, bytes, nonempty)) = level.next().and_then(|l| shape.get_mut(l)) {
            let len = code.encoded_len(suffix);
            *longest = (*longest).max(len);
            *bytes += len;
            *nonempty &= len > 0;
        }
    });
    let width: Vec<Option<usize>> = shape
        .iter()
        .zip(per_level)
        .map(|(&(longest, bytes, nonempty), &n)| {
            (nonempty && (longest * n - bytes) * 4 <= bytes).then_some(longest)
        })
        .collect();
    let mut out = Vec::with_capacity(records.len());
    let mut out_ends = BitVec::new();
    let mut level = levels();
    each_record(records, ends, |value, suffix| {
        out.extend_from_slice(value);
        let start = out.len();
        code.encode_into(suffix, &mut out);
        if let Some(&Some(w)) = level.next().and_then(|l| width.get(l)) {
            out.resize(start + w, 0);
        }
        for _ in start..out.len() {
            out_ends.push(false);
        }
        out_ends.push(true);
    });
    (out, out_ends)
}

/// Where a leaf's record starts: its byte in the records and its first bit in the end markers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecordAt {
    byte: usize,
    bit: usize,
    /// The length of every suffix of the level, when they have one.
    uniform: Option<usize>,
}

/// `width` bits per leaf, packed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FixedSuffixes {
    kind: SuffixKind,
    bits: FrozenBits,
}

impl FixedSuffixes {
    pub(crate) fn new(kind: SuffixKind, entries: &[u64]) -> Self {
        let w = kind.width();
        let mut bits = BitVec::new();
        for &e in entries {
            bits.push_bits(e, w);
        }
        FixedSuffixes {
            kind,
            bits: bits.into(),
        }
    }

    pub(crate) fn from_bits(kind: SuffixKind, bits: FrozenBits) -> Self {
        FixedSuffixes { kind, bits }
    }

    pub(crate) fn bits(&self) -> &FrozenBits {
        &self.bits
    }

    /// Entry of leaf `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        let w = self.kind.width() as usize;
        if w == 0 {
            return 0;
        }
        let at = i * w;
        let words = self.bits.words();
        let (wi, off) = (at / 64, at % 64);
        let Some(&lo) = words.get(wi) else {
            return 0;
        };
        let mut v = lo >> off;
        if off + w > 64 {
            v |= words.get(wi + 1).copied().unwrap_or(0) << (64 - off);
        }
        v & mask(w as u32)
    }

    /// Prefetches entry `i`.
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        let at = i * self.kind.width() as usize;
        crate::substrate::prefetch::prefetch_read(self.bits.words().as_ptr().wrapping_add(at / 64));
    }

    /// False when leaf `i` certainly does not hold `key` (whose unique prefix ends at `depth`).
    #[inline]
    pub(crate) fn may_match(&self, i: usize, key: &[u8], depth: usize) -> bool {
        self.get(i) == self.kind.entry(key, depth)
    }

    /// Whether entries hold real key bits.
    #[inline]
    pub(crate) fn has_real(&self) -> bool {
        self.kind.real_bits() > 0
    }

    /// Orders the real bits of leaf `i` against those of `key` after `depth`; `None` when the
    /// store has no real bits or they are equal (the order of the full keys is unknown).
    #[inline]
    pub(crate) fn cmp_real(&self, i: usize, key: &[u8], depth: usize) -> Option<Ordering> {
        let r = self.kind.real_bits();
        if r == 0 {
            return None;
        }
        let stored = self.get(i) & mask(r);
        let probe = real_bits(key, depth, r);
        match stored.cmp(&probe) {
            Ordering::Equal => None,
            o => Some(o),
        }
    }

    /// The real bits of leaf `i` and their count.
    pub(crate) fn real(&self, i: usize) -> (u64, u32) {
        let r = self.kind.real_bits();
        (self.get(i) & mask(r), r)
    }

    /// The hash bits of leaf `i` (0 without hash bits).
    pub(crate) fn hash(&self, i: usize) -> u64 {
        match self.kind.hash_bits() {
            0 => 0,
            // `h + r <= 64`, and `r == 0` when `h == 64`.
            h => (self.get(i) >> self.kind.real_bits()) & mask(h),
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.bits.memory_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_suffixes_round_trip_with_empty_ones() {
        let sufs: Vec<&[u8]> = vec![b"", b"abc", b"", b"", b"\xff\x00", b"x", b""];
        let mut bytes = Vec::new();
        let mut ends = BitVec::new();
        for (i, s) in sufs.iter().enumerate() {
            bytes.extend_from_slice(&(i as u64 * 77).to_le_bytes());
            bytes.extend_from_slice(s);
            for _ in 0..s.len() {
                ends.push(false);
            }
            ends.push(true);
        }
        assert!(FullSuffixes::new(bytes[1..].to_vec().into(), ends.clone().into()).is_err());
        let f = FullSuffixes::new(bytes.into(), ends.into()).unwrap();
        assert_eq!(f.len(), sufs.len());
        for (i, s) in sufs.iter().enumerate() {
            assert_eq!(f.get(i), (i as u64 * 77, *s), "leaf {i}");
        }
        assert_eq!(f.get(sufs.len()), (0, &b""[..]));
    }

    #[test]
    fn fixed_entries_pack_and_compare() {
        for kind in [
            SuffixKind::Hash(1),
            SuffixKind::Hash(13),
            SuffixKind::Hash(64),
            SuffixKind::Real(7),
            SuffixKind::Real(64),
            SuffixKind::Mixed { hash: 4, real: 8 },
            SuffixKind::Mixed { hash: 32, real: 32 },
        ] {
            kind.validate().unwrap();
            let keys: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
            let entries: Vec<u64> = keys.iter().map(|k| kind.entry(k, 2)).collect();
            let f = FixedSuffixes::new(kind, &entries);
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(f.get(i), entries[i]);
                assert!(f.may_match(i, k, 2));
                if kind.real_bits() > 0 {
                    assert_eq!(f.cmp_real(i, k, 2), None);
                }
            }
        }
        assert!(SuffixKind::Hash(0).validate().is_err());
        assert!(SuffixKind::Real(65).validate().is_err());
        assert!(SuffixKind::Mixed { hash: 0, real: 3 }.validate().is_err());
        assert_eq!(real_bits(b"\x80", 0, 1), 1);
        assert_eq!(real_bits(b"ab\x01\x02", 2, 16), 0x0102);
        assert_eq!(real_bits(b"ab", 2, 16), 0);
        assert_eq!(real_bits(b"ab", 5, 16), 0);
    }
}
