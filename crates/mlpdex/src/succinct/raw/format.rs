//! The serialized form of an FST or a SuRF (format version 4). All integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic: "MLPDXFST" (FST) or "MLPDSURF" (SuRF)
//! 8       4     format version (4)
//! 12      1     suffix kind: 0 none, 1 full, 2 hash, 3 real, 4 mixed
//! 13      1     hash bits (0 unless hash or mixed)
//! 14      1     real bits (0 unless real or mixed)
//! 15      1     flags: bit 0 the empty key is present; bit 1 the suffixes are encoded
//!               (complete-key FST only); bits 2-3 the suffix coding asked for (0 auto,
//!               1 plain, 2 coded; FST only); other bits reserved, must be 0
//! 16      4     dense ratio R the structure was built with (informational)
//! 20      4     reserved, must be 0
//! 24      8     number of keys
//! 32      8     value of the empty key (0 when absent)
//! 40      8     LOUDS-Dense levels
//! 48      8     trie levels
//! 56      8     LOUDS-Dense nodes
//! then sections, each a u64 length followed by that many items:
//!         d_labels, d_has_child, d_is_prefix     bit vectors: u64 bit count, then words
//!         s_labels                               u64 label count n, then the labels and
//!                                                zeros up to (n + 16) rounded up to 8
//!                                                (the SIMD label search reads 16 bytes)
//!         s_has_child, s_louds, s_chain          bit vectors
//!         values                                 u64 count, then u64s (unique-prefix FST only)
//!         suffix records                         u64 byte count, bytes, zero-padded to 8: per
//!                                                leaf its value (u64) and its suffix
//!                                                (complete-key FST only)
//!         suffix ends, fixed suffix bits         bit vectors
//!         suffix code                            u64 byte count (257 when bit 1 of the flags
//!                                                is set, else 0), the code length of the end
//!                                                and of each byte (see `super::suffix_code`),
//!                                                zero-padded to 8
//! last 8        XXH3-64 (seed 0) of every byte before it
//! ```
//!
//! Loading checks, in time linear in the image and without copying an aligned one:
//!
//! - the magic, the version, the checksum, every length against the buffer, zero padding and
//!   reserved fields (flag bits; the empty key's value is 0 when it is absent, and always in a
//!   SuRF);
//! - the trie's invariants 1–6 (see `super::trie`: sizes, LOUDS shape level by level, a label
//!   in every node, chains only at the start of a node and never with a child,
//!   `d_has_child ⊆ d_labels`, no prefix key at a root without a chain, strictly increasing
//!   labels after an optional terminator), via [`Trie::validate`];
//! - the payloads against the trie: the key count is its leaves (plus the empty key), one
//!   value per leaf (unique-prefix FST) or none, one suffix record per leaf with every suffix
//!   byte owned by a leaf (complete-key FST), `width` bits per leaf (SuRF), nothing else;
//! - invariant 7: a prefix key's leaf has an empty suffix and zero real bits;
//! - encoded suffixes: the code lengths are those of an alphabetic code tree, and every
//!   non-empty suffix is the encoding of a non-empty byte string (codes, the end's code, zero
//!   bits to the end of its byte) followed by nothing but zero bytes, so encoded suffixes
//!   order as their plain forms.
//!
//! Together these make every query stay in bounds (no panic) and agree with every other: the
//! keys iterated forwards are strictly increasing and the same as backwards, `get` finds each
//! with its value, seeks land where the iterated order says, and a SuRF admits what its cursor
//! visits. What no check can catch is damage that yields another valid image (a changed value,
//! a changed suffix byte or suffix bit of a leaf that is not a prefix key): that is a structure
//! of other keys, consistent in itself; the checksum is what guards against it. Any failure is
//! an [`Error::Format`] naming the broken rule and the byte where it was found, or an
//! [`Error::Version`].
//!
//! Every section starts at a multiple of 8 bytes, so a buffer whose start is 8-aligned is used
//! in place ([`Shared::section`]): loading reads the image once to check it and allocates only
//! the rank and select directories (rebuilt rather than stored, which keeps the image compact
//! and leaves nothing unverified), a few percent of the structure. Images of versions 1 (before
//! the label padding), 2 (before path compression) and 3 (before suffix coding) are refused
//! with [`Error::Version`].

use super::suffix::{FixedSuffixes, FullSuffixes, SuffixKind};
use super::suffix_code::{SYMBOLS, SuffixCode, SuffixCoding};
use super::trie::{Flaw, Part, Trie};
use crate::Error;
use crate::substrate::hash::hash_bytes;
use crate::substrate::image::check_frame;
use crate::substrate::labels::LABEL_PAD;
use crate::substrate::{Frozen, FrozenBits, Shared};

/// Version written and the newest one read.
pub(crate) const VERSION: u32 = 4;
/// Magic of a serialized FST.
pub(crate) const FST_MAGIC: [u8; 8] = *b"MLPDXFST";
/// Magic of a serialized SuRF.
pub(crate) const SURF_MAGIC: [u8; 8] = *b"MLPDSURF";

/// Everything a serialized structure holds.
pub(crate) struct Image {
    pub(crate) kind: SuffixKind,
    pub(crate) ratio: u32,
    pub(crate) keys: u64,
    pub(crate) empty: Option<u64>,
    pub(crate) trie: Trie,
    pub(crate) values: Frozen<u64>,
    pub(crate) full: Option<FullSuffixes>,
    pub(crate) fixed: Option<FixedSuffixes>,
    /// The suffix coding the structure was built with.
    pub(crate) coding: SuffixCoding,
}

fn kind_code(kind: SuffixKind) -> (u8, u8, u8) {
    match kind {
        SuffixKind::None => (0, 0, 0),
        SuffixKind::Full => (1, 0, 0),
        SuffixKind::Hash(n) => (2, n, 0),
        SuffixKind::Real(n) => (3, 0, n),
        SuffixKind::Mixed { hash, real } => (4, hash, real),
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn bits(&mut self, b: &FrozenBits) {
        self.u64(b.len() as u64);
        for &w in b.words() {
            self.u64(w);
        }
    }
    /// `b`'s length, `b`, and zeros up to a multiple of 8 that leaves at least `min_pad`.
    fn bytes(&mut self, b: &[u8], min_pad: usize) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        let pad = (b.len() + min_pad).next_multiple_of(8) - b.len();
        self.0.extend(core::iter::repeat_n(0, pad));
    }
}

/// Serializes a structure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    magic: [u8; 8],
    kind: SuffixKind,
    ratio: u32,
    keys: u64,
    empty: Option<u64>,
    trie: &Trie,
    values: &[u64],
    full: Option<&FullSuffixes>,
    fixed: Option<&FixedSuffixes>,
    coding: SuffixCoding,
) -> Vec<u8> {
    let parts = trie.parts();
    let mut w = Writer(Vec::with_capacity(
        trie.memory_usage() + values.len() * 8 + 256,
    ));
    w.0.extend_from_slice(&magic);
    w.0.extend_from_slice(&VERSION.to_le_bytes());
    let (k, h, r) = kind_code(kind);
    let code = full.and_then(FullSuffixes::code);
    let asked = match coding {
        SuffixCoding::Auto => 0u8,
        SuffixCoding::Plain => 1,
        SuffixCoding::Coded => 2,
    };
    let flags = empty.is_some() as u8 | (code.is_some() as u8) << 1 | asked << 2;
    w.0.extend_from_slice(&[k, h, r, flags]);
    w.0.extend_from_slice(&ratio.to_le_bytes());
    w.0.extend_from_slice(&0u32.to_le_bytes());
    w.u64(keys);
    w.u64(empty.unwrap_or(0));
    w.u64(parts.dense_height as u64);
    w.u64(parts.height as u64);
    w.u64(parts.d_is_prefix.len() as u64);
    w.bits(parts.d_labels);
    w.bits(parts.d_has_child);
    w.bits(parts.d_is_prefix);
    w.bytes(&parts.s_labels[..parts.s_len], LABEL_PAD);
    w.bits(parts.s_has_child);
    w.bits(parts.s_louds);
    w.bits(parts.s_chain);
    w.u64(values.len() as u64);
    for &v in values {
        w.u64(v);
    }
    let empty_bits = FrozenBits::default();
    let (sb, se) = full.map_or((&[][..], &empty_bits), |f| f.parts());
    w.bytes(sb, 0);
    w.bits(se);
    w.bits(fixed.map_or(&empty_bits, |f| f.bits()));
    w.bytes(code.map_or(&[][..], |c| &c.lens()[..]), 0);
    let sum = hash_bytes(&w.0, 0);
    w.u64(sum);
    w.0
}

struct Reader<'a> {
    buf: &'a Shared,
    /// End of the body (the checksum follows).
    end: usize,
    at: usize,
}

fn bad(what: &'static str, offset: usize) -> Error {
    Error::Format { what, offset }
}

impl Reader<'_> {
    /// Checks that `n` more bytes exist and returns where they start.
    fn skip(&mut self, n: usize, what: &'static str) -> Result<usize, Error> {
        let start = self.at;
        self.at = start
            .checked_add(n)
            .filter(|&e| e <= self.end)
            .ok_or(bad(what, start))?;
        Ok(start)
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, Error> {
        let at = self.skip(8, what)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf.bytes()[at..at + 8]);
        Ok(u64::from_le_bytes(b))
    }
    fn count(&mut self, what: &'static str) -> Result<usize, Error> {
        let at = self.at;
        let n = self.u64(what)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.end.saturating_mul(8))
            .ok_or(bad(what, at))
    }
    fn words(&mut self, n: usize, what: &'static str) -> Result<Frozen<u64>, Error> {
        let at = self.skip(n.checked_mul(8).ok_or(bad(what, self.at))?, what)?;
        self.buf.section(at, n).ok_or(bad(what, at))
    }
    fn bits(&mut self, what: &'static str) -> Result<FrozenBits, Error> {
        let at = self.at;
        let len = self.count(what)?;
        let words = self.words(len.div_ceil(64), what)?;
        FrozenBits::new(words, len).ok_or(bad(what, at))
    }
    /// A byte section of `len` bytes and zero padding to a multiple of 8 of at least
    /// `min_pad`; the result keeps the padding when `keep_pad`.
    fn bytes(
        &mut self,
        min_pad: usize,
        keep_pad: bool,
        what: &'static str,
    ) -> Result<(Frozen<u8>, usize), Error> {
        let len = self.count(what)?;
        let total = (len + min_pad).next_multiple_of(8);
        let at = self.skip(total, what)?;
        if self.buf.bytes()[at + len..at + total]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(bad("nonzero padding", at + len));
        }
        let kept = if keep_pad { total } else { len };
        Ok((self.buf.section(at, kept).ok_or(bad(what, at))?, len))
    }
}

/// Parses and checks a serialized structure with the given magic, borrowing its sections from
/// `shared` where they are aligned.
pub(crate) fn read(shared: &Shared, magic: [u8; 8]) -> Result<Image, Error> {
    let buf = shared.bytes();
    let body = check_frame(buf, magic, VERSION, 72)?;
    let (k, h, r, flags) = (buf[12], buf[13], buf[14], buf[15]);
    let kind = match (k, h, r) {
        (0, 0, 0) => SuffixKind::None,
        (1, 0, 0) => SuffixKind::Full,
        (2, n, 0) => SuffixKind::Hash(n),
        (3, 0, n) => SuffixKind::Real(n),
        (4, hash, real) => SuffixKind::Mixed { hash, real },
        _ => return Err(bad("unknown suffix kind", 12)),
    };
    kind.validate()
        .map_err(|_| bad("suffix bits out of range", 13))?;
    let coding = match flags >> 2 {
        0 => SuffixCoding::Auto,
        1 => SuffixCoding::Plain,
        2 => SuffixCoding::Coded,
        _ => return Err(bad("reserved flag set", 15)),
    };
    let coded = flags & 2 != 0;
    // Encoded suffixes only in a complete-key FST, exactly as it asked or as `Auto` chose; a
    // SuRF asks for nothing (a unique-prefix FST keeps its setting, unused).
    let fits = match (kind, coding) {
        (SuffixKind::Full, SuffixCoding::Plain) => !coded,
        (SuffixKind::Full, SuffixCoding::Coded) => coded,
        (SuffixKind::Full, SuffixCoding::Auto) => true,
        _ => !coded && (magic == FST_MAGIC || coding == SuffixCoding::Auto),
    };
    if !fits {
        return Err(bad("suffix coding flags disagree", 15));
    }
    let ratio = u32::from_le_bytes([buf[16], buf[17], buf[18], buf[19]]);
    if buf[20..24] != [0; 4] {
        return Err(bad("reserved field set", 20));
    }
    let mut rd = Reader {
        buf: shared,
        end: body,
        at: 24,
    };
    let keys = rd.u64("truncated header")?;
    let empty_value = rd.u64("truncated header")?;
    let dense_height = rd.count("truncated header")?;
    let height = rd.count("truncated header")?;
    let dense_nodes = rd.count("truncated header")?;
    // Where each section's data starts (after its length), to locate flaws.
    let mut data = [0usize; 10];
    data[Part::DLabels as usize] = rd.at + 8;
    let d_labels = rd.bits("truncated d_labels")?;
    data[Part::DHasChild as usize] = rd.at + 8;
    let d_has_child = rd.bits("truncated d_has_child")?;
    let at = rd.at;
    data[Part::DIsPrefix as usize] = at + 8;
    let d_is_prefix = rd.bits("truncated d_is_prefix")?;
    if d_is_prefix.len() != dense_nodes {
        return Err(bad("dense node count disagrees", at));
    }
    data[Part::SLabels as usize] = rd.at + 8;
    let (s_labels, s_len) = rd.bytes(LABEL_PAD, true, "truncated s_labels")?;
    data[Part::SHasChild as usize] = rd.at + 8;
    let s_has_child = rd.bits("truncated s_has_child")?;
    data[Part::SLouds as usize] = rd.at + 8;
    let s_louds = rd.bits("truncated s_louds")?;
    data[Part::SChain as usize] = rd.at + 8;
    let s_chain = rd.bits("truncated s_chain")?;
    let at = rd.at;
    let nvalues = rd.count("truncated values")?;
    let values = rd.words(nvalues, "truncated values")?;
    let suffix_at = rd.at;
    let (suffix_bytes, _) = rd.bytes(0, false, "truncated suffix bytes")?;
    let ends_at = rd.at;
    data[Part::SuffixEnds as usize] = ends_at + 8;
    let suffix_ends = rd.bits("truncated suffix ends")?;
    let fixed_at = rd.at;
    data[Part::SuffixBits as usize] = fixed_at + 8;
    let fixed_bits = rd.bits("truncated suffix bits")?;
    let code_at = rd.at;
    let (code_lens, _) = rd.bytes(0, false, "truncated suffix code")?;
    if code_lens.len() != if coded { SYMBOLS } else { 0 } {
        return Err(bad("suffix code size disagrees with the flags", code_at));
    }
    if rd.at != body {
        return Err(bad("trailing bytes", rd.at));
    }
    let empty = (flags & 1 == 1).then_some(empty_value);
    // Reserved values: no value without an empty key, and a SuRF keeps no value at all.
    if (empty.is_none() || magic == SURF_MAGIC) && empty_value != 0 {
        return Err(bad("value of an absent empty key", 32));
    }
    let trie = Trie::assemble(
        dense_height,
        height,
        d_labels,
        d_has_child,
        d_is_prefix,
        s_labels,
        s_len,
        s_has_child,
        s_louds,
        s_chain,
    )
    .map_err(|_| bad("trie too large", 24))?;
    let leaves = trie.leaves();
    if keys != leaves as u64 + empty.is_some() as u64 {
        return Err(bad("key count disagrees with the trie", 24));
    }
    let wants_values = magic == FST_MAGIC && kind == SuffixKind::None;
    if values.len() != if wants_values { leaves } else { 0 } {
        return Err(bad("value count disagrees with the trie", at));
    }
    let full = if kind == SuffixKind::Full {
        let f = FullSuffixes::new(suffix_bytes, suffix_ends)
            .map_err(|_| bad("suffix records disagree with their end markers", suffix_at))?;
        if f.len() != leaves {
            return Err(bad("suffix count disagrees with the trie", ends_at));
        }
        let f = if coded {
            let code = SuffixCode::from_lens(&code_lens).ok_or(bad(
                "suffix code lengths of no alphabetic code",
                code_at + 8,
            ))?;
            f.with_code(code)
                .map_err(|at| bad("suffix is no encoding", suffix_at + 8 + at))?
        } else {
            f
        };
        Some(f)
    } else {
        if !suffix_bytes.is_empty() || !suffix_ends.is_empty() {
            return Err(bad("suffix bytes without full suffixes", suffix_at));
        }
        None
    };
    let fixed = match kind {
        SuffixKind::None | SuffixKind::Full => {
            if !fixed_bits.is_empty() {
                return Err(bad("suffix bits without a fixed-width kind", fixed_at));
            }
            None
        }
        _ => {
            if fixed_bits.len() != leaves * kind.width() as usize {
                return Err(bad("suffix bit count disagrees with the trie", fixed_at));
            }
            Some(FixedSuffixes::from_bits(kind, fixed_bits))
        }
    };
    // The trie's invariants, and that a prefix key's leaf adds nothing to its key (invariant
    // 7 of `trie`).
    let mut prefix_key = |leaf: usize| -> Result<(), Flaw> {
        if let Some(f) = &full
            && let Some(end) = f.nonempty_suffix_end(leaf)
        {
            return Err(Flaw::new("prefix key with a suffix", Part::SuffixEnds, end));
        }
        if let Some(f) = &fixed
            && f.real(leaf).0 != 0
        {
            let bit = leaf * kind.width() as usize;
            return Err(Flaw::new(
                "prefix key with real suffix bits",
                Part::SuffixBits,
                bit,
            ));
        }
        Ok(())
    };
    trie.validate(&mut prefix_key).map_err(|f| {
        let offset = match f.part {
            Part::Header => f.index,
            Part::SLabels => data[f.part as usize] + f.index,
            p => data[p as usize] + f.index / 8,
        };
        bad(f.what, offset)
    })?;
    Ok(Image {
        kind,
        ratio,
        keys,
        empty,
        trie,
        values,
        full,
        fixed,
        coding,
    })
}
