//! Shared pieces of the mlpdex fuzz targets: an `Arbitrary` description of adversarial keys,
//! operation sequences mapped onto `mlpdex::testing::MapOp`, image mutations that keep the
//! checksum valid, and the checks every decoder target runs on a loaded image.
//!
//! Keys are not taken as raw fuzzer bytes: a [`KeySpec`] names a family (a shared prefix from a
//! small table plus a tail, 0x00/0xFF runs, multi-KiB patterns, the testing module's
//! [`KeyShape`] generators, or an edit of a key already used), so short inputs reach the keys
//! that break tries: the empty key, keys that are prefixes of each other, long shared prefixes.

use std::collections::BTreeMap;
use std::ops::{Bound, Range};

use arbitrary::Arbitrary;
use mlpdex::fst::{KeyStorage, SuffixCoding};
use mlpdex::key::{Escaped, in_range, show_bound};
use mlpdex::surf::{Surf, SurfKind};
use mlpdex::testing::{KeyShape, MapOp, TestRng, Walk};
use mlpdex::{RangeCursor, StaticMap};

/// The oracle every static check compares against.
pub type Oracle = BTreeMap<Vec<u8>, u64>;

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

/// Prefixes that keys of a run share: URL-like ones (one extending another), a record key
/// with 0x00 separators, runs of 0x00, 0xFF and `a`, and the chain `"" < "a" < "ab" < "abc"`.
const PREFIXES: [&[u8]; 12] = [
    b"",
    b"a",
    b"ab",
    b"abc",
    b"https://example.org/item/",
    b"https://example.org/item/reviews/",
    b"https://example.net/",
    b"acct\x00000000017\x00name\x00",
    &[0x00; 24],
    &[0xff; 32],
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    b"\x00\xff\x00\xff\x00\xff\x00\xff\x00\xff",
];

/// Tail bytes, biased towards the values byte-wise code gets wrong.
const TAIL_BYTES: [u8; 8] = [0x00, 0xff, b'a', b'b', b'z', b'0', b'/', 0x01];

/// Lengths of the long keys: around the 1, 2, 4 and 8 KiB marks.
const LONG_LENGTHS: [usize; 10] = [1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 8191, 8192];

/// Keys every pool starts with, so that a [`KeySpec::Pool`] always names something.
const POOL_START: [&[u8]; 5] = [b"", b"a", b"ab", b"\x00", b"\xff"];

/// A key family of the `testing` module, drawn with a fuzzer-chosen seed.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum ShapeSel {
    /// [`KeyShape::RandomBytes`].
    RandomBytes,
    /// [`KeyShape::SharedPrefix`].
    SharedPrefix,
    /// [`KeyShape::PrefixChains`].
    PrefixChains,
    /// [`KeyShape::ZeroFf`].
    ZeroFf,
    /// [`KeyShape::Long`].
    Long,
    /// [`KeyShape::U64`].
    U64,
}

impl ShapeSel {
    fn shape(self) -> KeyShape {
        match self {
            ShapeSel::RandomBytes => KeyShape::RandomBytes,
            ShapeSel::SharedPrefix => KeyShape::SharedPrefix,
            ShapeSel::PrefixChains => KeyShape::PrefixChains,
            ShapeSel::ZeroFf => KeyShape::ZeroFf,
            ShapeSel::Long => KeyShape::Long,
            ShapeSel::U64 => KeyShape::U64,
        }
    }
}

/// How a key already used is changed into a neighbour.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Edit {
    /// The key itself.
    Same,
    /// One byte appended.
    Push(u8),
    /// The last byte dropped.
    Pop,
    /// The last byte incremented (wrapping).
    Inc,
    /// The last byte decremented (wrapping).
    Dec,
    /// Cut to a length (modulo the key's length plus one).
    Cut(u16),
}

/// One key, as a family and the fuzzer's choices within it; [`KeySpec::make`] turns it into
/// bytes.
#[derive(Arbitrary, Clone, Debug)]
pub enum KeySpec {
    /// A key used earlier in the input (or one of a few fixed keys), possibly edited.
    Pool(u8, Edit),
    /// A prefix from a fixed table, optionally cut short, followed by a tail of biased bytes
    /// (each tail byte indexes the biased alphabet unless its top bit is set).
    Prefixed {
        /// Index into the prefix table.
        prefix: u8,
        /// Cut the prefix to this length when below it.
        cut: u8,
        /// The tail.
        tail: Vec<u8>,
    },
    /// Raw bytes, at most 32 of them.
    Raw(Vec<u8>),
    /// Only 0x00 and 0xFF bytes: the low `len % 17` bits of the pattern.
    ZeroFf {
        /// Length, modulo 17.
        len: u8,
        /// Bit `i` set: byte `i` is 0xFF.
        bits: u16,
    },
    /// A key of 1 to 8 KiB on one of three patterns (two share their first 1000 bytes),
    /// optionally changed in one of its last eight bytes.
    Long {
        /// Pattern.
        base: u8,
        /// Index into the long lengths, or an extra length above 1 KiB.
        len: u8,
        /// Which of the last eight bytes to change (none when ≥ 8).
        at: u8,
        /// The value written there.
        byte: u8,
    },
    /// A key of the `testing` module's adversarial shapes.
    Shape(ShapeSel, u64),
}

fn long_byte(base: u8, i: usize) -> u8 {
    match base % 3 {
        0 => b'a' + (i % 26) as u8,
        1 if i < 1000 => b'a' + (i % 26) as u8,
        1 => b'0' + (i % 10) as u8,
        _ if i % 512 == 511 => 0xff,
        _ => 0x00,
    }
}

impl KeySpec {
    /// The bytes of this key; fresh keys are added to `pool` for later [`KeySpec::Pool`]s.
    pub fn make(&self, pool: &mut Pool) -> Vec<u8> {
        let key = match self {
            KeySpec::Pool(i, edit) => {
                let mut k = pool.keys[*i as usize % pool.keys.len()].clone();
                match *edit {
                    Edit::Same => {}
                    Edit::Push(b) => k.push(b),
                    Edit::Pop => {
                        k.pop();
                    }
                    Edit::Inc => {
                        if let Some(b) = k.last_mut() {
                            *b = b.wrapping_add(1);
                        }
                    }
                    Edit::Dec => {
                        if let Some(b) = k.last_mut() {
                            *b = b.wrapping_sub(1);
                        }
                    }
                    Edit::Cut(n) => k.truncate(n as usize % (k.len() + 1)),
                }
                return k;
            }
            KeySpec::Prefixed { prefix, cut, tail } => {
                let p = PREFIXES[*prefix as usize % PREFIXES.len()];
                let mut k = p[..p.len().min(*cut as usize)].to_vec();
                k.extend(tail.iter().take(64).map(|&b| {
                    if b & 0x80 == 0 {
                        TAIL_BYTES[b as usize % TAIL_BYTES.len()]
                    } else {
                        b
                    }
                }));
                k
            }
            KeySpec::Raw(bytes) => bytes.iter().take(32).copied().collect(),
            KeySpec::ZeroFf { len, bits } => (0..*len as usize % 17)
                .map(|i| if bits >> i & 1 == 1 { 0xff } else { 0x00 })
                .collect(),
            KeySpec::Long {
                base,
                len,
                at,
                byte,
            } => {
                let n = if (*len as usize) < LONG_LENGTHS.len() * 16 {
                    LONG_LENGTHS[*len as usize % LONG_LENGTHS.len()]
                } else {
                    1024 + *len as usize % 32
                };
                let mut k: Vec<u8> = (0..n).map(|i| long_byte(*base, i)).collect();
                if *at < 8 {
                    k[n - 1 - *at as usize] = *byte;
                }
                k
            }
            KeySpec::Shape(shape, seed) => shape.shape().gen_key(&mut TestRng::new(*seed)),
        };
        pool.add(&key);
        key
    }
}

/// The keys an input has used so far, for [`KeySpec::Pool`].
#[derive(Debug)]
pub struct Pool {
    keys: Vec<Vec<u8>>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            keys: POOL_START.iter().map(|k| k.to_vec()).collect(),
        }
    }
}

impl Pool {
    fn add(&mut self, key: &[u8]) {
        if self.keys.len() < 256 {
            self.keys.push(key.to_vec());
        }
    }
}

/// A range bound over a key.
#[derive(Arbitrary, Clone, Debug)]
pub enum BoundSpec {
    /// `Included(key)`.
    Included(KeySpec),
    /// `Excluded(key)`.
    Excluded(KeySpec),
    /// `Unbounded`.
    Unbounded,
}

impl BoundSpec {
    /// The bound with its key made.
    pub fn make(&self, pool: &mut Pool) -> Bound<Vec<u8>> {
        match self {
            BoundSpec::Included(k) => Bound::Included(k.make(pool)),
            BoundSpec::Excluded(k) => Bound::Excluded(k.make(pool)),
            BoundSpec::Unbounded => Bound::Unbounded,
        }
    }
}

/// How a range is walked (see [`Walk`]); a limit of 0 walks the whole range.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum WalkSpec {
    /// `next` only.
    Forward(u8),
    /// `next_back` only.
    Backward(u8),
    /// Both ends, as a generator seeded with the first field chooses.
    Alternate(u64, u8),
}

fn limit(n: u8) -> usize {
    if n == 0 { usize::MAX } else { n as usize }
}

impl WalkSpec {
    /// The walk.
    pub fn walk(self) -> Walk {
        match self {
            WalkSpec::Forward(n) => Walk::Forward(limit(n)),
            WalkSpec::Backward(n) => Walk::Backward(limit(n)),
            WalkSpec::Alternate(seed, n) => Walk::Alternate(seed, limit(n)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Operation sequences
// ---------------------------------------------------------------------------------------------

/// One operation on a byte-keyed map; [`map_ops`] turns a sequence into `MapOp`s.
#[derive(Arbitrary, Clone, Debug)]
pub enum OpSpec {
    /// `insert`.
    Insert(KeySpec, u64),
    /// `insert` of a key already used (weights inserts towards overwrites).
    Overwrite(u8, u64),
    /// `remove`.
    Remove(KeySpec),
    /// `get`.
    Get(KeySpec),
    /// `contains_key`.
    ContainsKey(KeySpec),
    /// `len` and `is_empty`.
    Len,
    /// `first`.
    First,
    /// `last`.
    Last,
    /// `lower_bound`.
    LowerBound(BoundSpec),
    /// `upper_bound`.
    UpperBound(BoundSpec),
    /// `range`, walked.
    Range(BoundSpec, BoundSpec, WalkSpec),
    /// Whole map forward and backward.
    Iter,
    /// `clear` (for a concurrent map: every key removed).
    Clear,
    /// `memory_usage`.
    MemoryUsage,
}

/// At most this many operations run per input, so one input stays fast.
pub const MAX_OPS: usize = 400;

/// Makes the operations' keys and maps them onto the `testing` driver's `MapOp`.
pub fn map_ops(specs: &[OpSpec]) -> Vec<MapOp> {
    let mut pool = Pool::default();
    specs
        .iter()
        .take(MAX_OPS)
        .map(|s| match s {
            OpSpec::Insert(k, v) => MapOp::Insert(k.make(&mut pool), *v),
            OpSpec::Overwrite(i, v) => {
                MapOp::Insert(KeySpec::Pool(*i, Edit::Same).make(&mut pool), *v)
            }
            OpSpec::Remove(k) => MapOp::Remove(k.make(&mut pool)),
            OpSpec::Get(k) => MapOp::Get(k.make(&mut pool)),
            OpSpec::ContainsKey(k) => MapOp::ContainsKey(k.make(&mut pool)),
            OpSpec::Len => MapOp::Len,
            OpSpec::First => MapOp::First,
            OpSpec::Last => MapOp::Last,
            OpSpec::LowerBound(b) => MapOp::LowerBound(b.make(&mut pool)),
            OpSpec::UpperBound(b) => MapOp::UpperBound(b.make(&mut pool)),
            OpSpec::Range(lo, hi, w) => {
                MapOp::Range(lo.make(&mut pool), hi.make(&mut pool), w.walk())
            }
            OpSpec::Iter => MapOp::Iter,
            OpSpec::Clear => MapOp::Clear,
            OpSpec::MemoryUsage => MapOp::MemoryUsage,
        })
        .collect()
}

/// Panics with the divergence and the whole operation sequence, which is the reproducer.
pub fn report(target: &str, ops: &[MapOp], what: &str) -> ! {
    panic!(
        "{target}: divergence from BTreeMap\n{what}\noperations ({}):\n{ops:#?}",
        ops.len()
    )
}

// ---------------------------------------------------------------------------------------------
// Static key sets
// ---------------------------------------------------------------------------------------------

/// At most this many keys go into a static structure per input.
pub const MAX_KEYS: usize = 300;

/// The oracle of a key set: each key with its value (later duplicates win).
pub fn key_set(keys: &[(KeySpec, u64)], pool: &mut Pool) -> Oracle {
    keys.iter()
        .take(MAX_KEYS)
        .map(|(k, v)| (k.make(pool), *v))
        .collect()
}

/// A dense ratio worth trying: all dense, mostly dense, the default, all sparse, or any.
pub fn dense_ratio(sel: u8) -> u32 {
    match sel % 8 {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 16,
        4 => 64,
        5 => 1 << 20,
        _ => u32::from(sel),
    }
}

/// A SuRF kind: Base, Hash(n), Real(n) or Mixed, with bit counts inside their legal ranges.
pub fn surf_kind(sel: u8, a: u8, b: u8) -> SurfKind {
    match sel % 4 {
        0 => SurfKind::Base,
        1 => SurfKind::Hash(1 + a % 64),
        2 => SurfKind::Real(1 + a % 64),
        _ => SurfKind::Mixed {
            hash: 1 + a % 32,
            real: 1 + b % 32,
        },
    }
}

/// FST suffix coding from a selector.
pub fn suffix_coding(sel: u8) -> SuffixCoding {
    match sel % 3 {
        0 => SuffixCoding::Auto,
        1 => SuffixCoding::Plain,
        _ => SuffixCoding::Coded,
    }
}

/// The format version the crate writes: bytes 8..12 of any FST or SuRF image.
pub fn fst_format_version() -> [u8; 4] {
    let img = mlpdex::fst::Fst::from_sorted::<&[u8]>([]).map(|f| f.to_bytes());
    let mut v = [0; 4];
    if let Ok(img) = img {
        v.copy_from_slice(&img[8..12]);
    }
    v
}

/// The key storage `unique` selects.
pub fn key_storage(unique: bool) -> KeyStorage {
    if unique {
        KeyStorage::UniquePrefixes
    } else {
        KeyStorage::Complete
    }
}

// ---------------------------------------------------------------------------------------------
// Image mutations
// ---------------------------------------------------------------------------------------------

/// One change to a serialized image. Offsets are taken modulo the image length.
#[derive(Arbitrary, Clone, Debug)]
pub enum Mutation {
    /// Overwrite one byte.
    Set(u32, u8),
    /// Flip bits of one byte.
    Xor(u32, u8),
    /// Write a little-endian u64 at an 8-aligned offset (lengths and counts live there).
    SetWord(u32, u64),
    /// Add a small signed delta to the little-endian u64 at an 8-aligned offset.
    Nudge(u32, i8),
    /// Cut the image to a length.
    Truncate(u32),
    /// Copy `len` bytes from one offset to another within the image.
    Splice {
        /// Source offset.
        from: u32,
        /// Destination offset.
        to: u32,
        /// Bytes copied.
        len: u16,
    },
    /// Insert bytes at an offset.
    Insert(u32, Vec<u8>),
    /// Remove up to `len` bytes at an offset.
    Remove(u32, u16),
}

/// At most this many mutations apply per input.
pub const MAX_MUTATIONS: usize = 8;

fn at(off: u32, len: usize) -> usize {
    if len == 0 { 0 } else { off as usize % len }
}

/// Applies `muts` to `img`, then, when `fix_checksum`, rewrites the trailing 8-byte XXH3-64
/// (seed 0) of everything before it, the layout the FST/SuRF format and the HOPE dictionary
/// format share, so that the damage reaches the loaders' structural checks.
pub fn mutate(img: &mut Vec<u8>, muts: &[Mutation], fix_checksum: bool) {
    for m in muts.iter().take(MAX_MUTATIONS) {
        let len = img.len();
        match m {
            Mutation::Set(o, b) if len > 0 => img[at(*o, len)] = *b,
            Mutation::Xor(o, b) if len > 0 => img[at(*o, len)] ^= *b,
            Mutation::SetWord(o, w) if len >= 8 => {
                let p = at(*o, len - 7) & !7;
                img[p..p + 8].copy_from_slice(&w.to_le_bytes());
            }
            Mutation::Nudge(o, d) if len >= 8 => {
                let p = at(*o, len - 7) & !7;
                let mut w = [0u8; 8];
                w.copy_from_slice(&img[p..p + 8]);
                let x = u64::from_le_bytes(w).wrapping_add(*d as i64 as u64);
                img[p..p + 8].copy_from_slice(&x.to_le_bytes());
            }
            Mutation::Truncate(n) => img.truncate(at(*n, len + 1)),
            Mutation::Splice { from, to, len: n } if len > 0 => {
                let (f, t) = (at(*from, len), at(*to, len));
                let n = (*n as usize).min(len - f).min(len - t);
                img.copy_within(f..f + n, t);
            }
            Mutation::Insert(o, bytes) => {
                let p = at(*o, len + 1);
                let bytes = &bytes[..bytes.len().min(64)];
                img.splice(p..p, bytes.iter().copied());
            }
            Mutation::Remove(o, n) if len > 0 => {
                let p = at(*o, len);
                let n = (*n as usize).min(len - p);
                img.drain(p..p + n);
            }
            _ => {}
        }
    }
    if fix_checksum {
        mlpdex::testing::reseal(img);
    }
}

/// Loads `img` through a structure's copying and zero-copy loaders, both results; `None` when
/// both refuse it. Panics when they disagree (one loads, or they load different structures), or when
/// `must_load` (an untouched valid image) and the image is refused.
pub fn load_both<T: PartialEq, E: std::fmt::Debug>(
    img: &[u8],
    must_load: bool,
    from_bytes: impl FnOnce(&[u8]) -> Result<T, E>,
    from_shared: impl FnOnce(Vec<u8>) -> Result<T, E>,
) -> Option<(T, T)> {
    match (from_bytes(img), from_shared(img.to_vec())) {
        (Ok(copied), Ok(shared)) => {
            assert!(
                copied == shared,
                "from_bytes and from_shared load different structures"
            );
            Some((copied, shared))
        }
        (Err(_), Err(_)) => {
            assert!(!must_load, "a valid image, unmutated, fails to load");
            None
        }
        (c, s) => panic!(
            "from_bytes and from_shared disagree: {:?} / {:?}",
            c.err(),
            s.err()
        ),
    }
}

/// The byte ranges of the twelve sections of an FST or SuRF image (format version 4, see
/// `fst::raw::format`: each a u64 count then its items, after a 64-byte header), or `None`
/// when `img` does not parse that far.
pub fn fst_sections(img: &[u8]) -> Option<Vec<Range<usize>>> {
    /// How a section's count turns into its length in bytes.
    #[derive(Clone, Copy)]
    enum Items {
        Bits,
        Labels,
        Words,
        Bytes,
    }
    use Items::*;
    let end = img.len().checked_sub(8)?;
    let mut at = 64usize;
    let mut out = Vec::with_capacity(12);
    for items in [
        Bits, Bits, Bits, Labels, Bits, Bits, Bits, Words, Bytes, Bits, Bits, Bytes,
    ] {
        let n = usize::try_from(u64::from_le_bytes(img.get(at..at + 8)?.try_into().ok()?)).ok()?;
        let len = match items {
            Bits => n.div_ceil(64).checked_mul(8)?,
            Labels => n.checked_add(16)?.div_ceil(8).checked_mul(8)?,
            Words => n.checked_mul(8)?,
            Bytes => n.div_ceil(8).checked_mul(8)?,
        };
        let next = at.checked_add(8)?.checked_add(len)?;
        if next > end {
            return None;
        }
        out.push(at..next);
        at = next;
    }
    Some(out)
}

/// The sections `graft` moves together, as they must agree with each other to load at all:
/// the three LOUDS-Dense bitmaps, the four LOUDS-Sparse sequences (labels, child, LOUDS and
/// chain bits), the values, the suffix records with their end markers and their code, the
/// fixed-width suffix bits.
const GRAFT_GROUPS: [&[usize]; 5] = [&[0, 1, 2], &[3, 4, 5, 6], &[7], &[8, 9, 11], &[10]];

/// Replaces sections of the FST/SuRF image `img` by the same sections of `donor` (an image
/// of other keys): for each `w`, group `w % 6` of [`GRAFT_GROUPS`], 5 standing for the
/// header's counts (key count, empty-key value, levels, dense nodes). Crossing whole sections
/// over makes images that are well formed section by section but disagree across sections,
/// which byte edits rarely reach (a suffix given to a leaf that ends a key, say).
pub fn graft(img: &mut Vec<u8>, donor: &[u8], which: &[u8]) {
    for &w in which.iter().take(4) {
        let group = match GRAFT_GROUPS.get(usize::from(w) % 6) {
            Some(g) => *g,
            None => {
                if img.len() >= 64 && donor.len() >= 64 {
                    img[24..64].copy_from_slice(&donor[24..64]);
                }
                continue;
            }
        };
        // Last section first, so the earlier ones' offsets stay put.
        for &i in group.iter().rev() {
            let (Some(a), Some(b)) = (fst_sections(img), fst_sections(donor)) else {
                return;
            };
            img.splice(a[i].clone(), donor[b[i].clone()].iter().copied());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks on loaded or built structures
// ---------------------------------------------------------------------------------------------

/// Every entry of a static map's cursor, forward, refusing to go past `bound` entries (a
/// cursor that never ends is a failure, not a hang).
fn walk<C: RangeCursor>(mut c: C, back: bool, bound: usize, what: &str) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    loop {
        let item = if back { c.next_back() } else { c.next() };
        let Some((k, v)) = item else { break };
        out.push((k.to_vec(), v));
        assert!(
            out.len() <= bound,
            "{what}: the cursor yields more than {bound} entries"
        );
    }
    if back {
        out.reverse();
    }
    out
}

/// What every check of a static map (FST, compact B-tree) asserts: iteration is strictly
/// sorted and holds `len` entries, forward equals reversed backward, `get` and both seeks find
/// every iterated key with its value; returns the entries.
pub fn check_static_map<M: StaticMap>(m: &M, what: &str) -> Vec<(Vec<u8>, u64)> {
    let fwd = walk(m.cursor(..), false, m.len(), what);
    let bwd = walk(m.cursor(..), true, m.len(), what);
    assert_eq!(
        fwd.len(),
        m.len(),
        "{what}: iteration holds other than len() entries"
    );
    assert!(
        fwd == bwd,
        "{what}: forward iteration differs from reversed backward iteration"
    );
    for w in fwd.windows(2) {
        assert!(
            w[0].0 < w[1].0,
            "{what}: iteration not strictly sorted: {} then {}",
            Escaped(&w[0].0),
            Escaped(&w[1].0)
        );
    }
    for (k, v) in &fwd {
        assert_eq!(
            m.get(k),
            Some(*v),
            "{what}: get({}) misses an iterated key",
            Escaped(k)
        );
        let b = Bound::Included(k.as_slice());
        assert_eq!(
            m.lower_bound(b),
            Some((k.clone(), *v)),
            "{what}: lower_bound(Included({})) misses it",
            Escaped(k)
        );
        assert_eq!(
            m.upper_bound(b),
            Some((k.clone(), *v)),
            "{what}: upper_bound(Included({})) misses it",
            Escaped(k)
        );
    }
    fwd
}

/// The entries a SuRF's cursor visits (unique prefixes, smallest keys), forward, and checks
/// them: strictly sorted (prefixes and smallest keys), forward equal to reversed backward, at
/// most `len` of them, each admitted by `may_contain` (kinds without hash bits) and by a range
/// starting at it.
pub fn check_surf(f: &Surf, what: &str) -> Vec<Vec<u8>> {
    let bound = f.len();
    let mut fwd = Vec::new();
    let mut smallest = Vec::new();
    let mut c = f.cursor();
    let mut ok = c.seek(Bound::Unbounded);
    while ok {
        fwd.push(c.prefix().to_vec());
        let mut s = Vec::new();
        c.smallest_key(&mut s);
        smallest.push(s);
        assert!(
            fwd.len() <= bound,
            "{what}: the cursor visits more than len() = {bound} keys"
        );
        ok = c.next();
    }
    let mut bwd = Vec::new();
    let mut c = f.cursor();
    let mut ok = c.seek_back(Bound::Unbounded);
    while ok {
        bwd.push(c.prefix().to_vec());
        assert!(
            bwd.len() <= bound,
            "{what}: the cursor visits more than len() = {bound} keys"
        );
        ok = c.prev();
    }
    bwd.reverse();
    assert!(
        fwd == bwd,
        "{what}: forward visit differs from reversed backward visit"
    );
    for w in fwd.windows(2) {
        assert!(
            w[0] < w[1],
            "{what}: visit not strictly sorted: {} then {}",
            Escaped(&w[0]),
            Escaped(&w[1])
        );
    }
    // A visited key's smallest key is its prefix followed by its real bits; the real bits of
    // a key that ends at its leaf (a prefix of later keys) are zero, so these sort as the
    // prefixes do.
    for w in smallest.windows(2) {
        assert!(
            w[0] < w[1],
            "{what}: smallest keys not strictly sorted: {} then {}",
            Escaped(&w[0]),
            Escaped(&w[1])
        );
    }
    let points = matches!(f.kind(), SurfKind::Base | SurfKind::Real(_));
    for (p, s) in fwd.iter().zip(&smallest) {
        assert!(
            s.starts_with(p),
            "{what}: smallest key {} does not extend its prefix {}",
            Escaped(s),
            Escaped(p)
        );
        if points {
            assert!(
                f.may_contain(s),
                "{what}: may_contain refuses the visited key {}",
                Escaped(s)
            );
        }
        let r = (Bound::Included(s.as_slice()), Bound::Unbounded);
        assert!(
            f.may_contain_range(r),
            "{what}: may_contain_range([{}, ..)) refuses a visited key",
            Escaped(s)
        );
        let r = (Bound::Included(p.as_slice()), Bound::Unbounded);
        assert!(
            f.may_contain_range(r),
            "{what}: may_contain_range([{}, ..)) refuses a visited prefix",
            Escaped(p)
        );
        assert!(
            f.approx_count(r) >= 1,
            "{what}: approx_count([{}, ..)) is 0 with a visited key in it",
            Escaped(p)
        );
    }
    fwd
}

/// A stored key set's no-false-negative checks on a SuRF, for every stored key: the point, the
/// point as a range, ranges starting or ending at it, and the cursor's seeks landing on the
/// key's own leaf (whose prefix is a prefix of the key).
pub fn check_surf_keys(f: &Surf, keys: &Oracle, what: &str) {
    for k in keys.keys() {
        let k = k.as_slice();
        let e = Escaped(k);
        assert!(f.may_contain(k), "{what}: false negative: may_contain({e})");
        for r in [
            (Bound::Included(k), Bound::Included(k)),
            (Bound::Included(k), Bound::Unbounded),
            (Bound::Unbounded, Bound::Included(k)),
        ] {
            assert!(
                f.may_contain_range(r),
                "{what}: false negative: may_contain_range({}..{}) with {e} stored",
                show_bound(r.0),
                show_bound(r.1)
            );
        }
        if k.is_empty() {
            continue;
        }
        let mut c = f.cursor();
        assert!(
            c.seek(Bound::Included(k)),
            "{what}: seek(Included({e})) finds nothing"
        );
        assert!(
            k.starts_with(c.prefix()),
            "{what}: seek(Included({e})) stops at {}, not at the key's leaf",
            Escaped(c.prefix())
        );
        assert!(
            c.seek_back(Bound::Included(k)),
            "{what}: seek_back(Included({e})) finds nothing"
        );
        assert!(
            k.starts_with(c.prefix()),
            "{what}: seek_back(Included({e})) stops at {}, not at the key's leaf",
            Escaped(c.prefix())
        );
    }
    let mut batch = vec![false; keys.len()];
    let refs: Vec<&[u8]> = keys.keys().map(Vec::as_slice).collect();
    f.may_contain_batch(&refs, &mut batch);
    assert!(
        batch.iter().all(|&b| b),
        "{what}: false negative in may_contain_batch"
    );
}

/// A range query against a stored key set: a range holding a stored key must be admitted,
/// batch and single answers agree, and `approx_count` is at least the keys strictly inside
/// minus nothing and at most two more than the keys inside.
pub fn check_surf_range(f: &Surf, keys: &Oracle, lo: Bound<&[u8]>, hi: Bound<&[u8]>, what: &str) {
    let inside = keys.keys().filter(|k| in_range(k, lo, hi)).count() as u64;
    let got = f.may_contain_range((lo, hi));
    let mut batch = [false];
    f.may_contain_range_batch(&[(lo, hi)], &mut batch);
    assert_eq!(
        got,
        batch[0],
        "{what}: may_contain_range and its batch form disagree on {}..{}",
        show_bound(lo),
        show_bound(hi)
    );
    if inside > 0 {
        assert!(
            got,
            "{what}: false negative: range {}..{} holds {inside} stored keys",
            show_bound(lo),
            show_bound(hi)
        );
    }
    let n = f.approx_count((lo, hi));
    assert!(
        n + 2 >= inside && n <= inside + 2,
        "{what}: approx_count of {}..{} is {n}, with {inside} stored keys inside",
        show_bound(lo),
        show_bound(hi)
    );
}

/// A query a static-map target asks both the map and the oracle.
#[derive(Arbitrary, Debug)]
pub enum StaticQuery {
    /// `get` of a key.
    Get(KeySpec),
    /// `lower_bound` of a bound.
    LowerBound(BoundSpec),
    /// `upper_bound` of a bound.
    UpperBound(BoundSpec),
    /// A range, walked as the spec says.
    Range(BoundSpec, BoundSpec, WalkSpec),
}

/// Asks `m` the first 64 of `queries` and compares each answer with the oracle's; `check`
/// also sees each `lower_bound` bound with the oracle's answer, for a map's own variants
/// (`lower_bound_value`).
pub fn check_static_queries<M: StaticMap>(
    m: &M,
    oracle: &Oracle,
    queries: &[StaticQuery],
    pool: &mut Pool,
    what: &str,
    mut check: impl FnMut(Bound<&[u8]>, &Option<(Vec<u8>, u64)>),
) {
    for q in queries.iter().take(64) {
        match q {
            StaticQuery::Get(k) => {
                let k = k.make(pool);
                assert_eq!(
                    m.get(&k),
                    oracle.get(&k).copied(),
                    "{what}: get({})",
                    Escaped(&k)
                );
            }
            StaticQuery::LowerBound(b) => {
                let b = b.make(pool);
                let b = b.as_ref().map(Vec::as_slice);
                let want = first_in(oracle, b, Bound::Unbounded, false);
                assert_eq!(
                    m.lower_bound(b),
                    want,
                    "{what}: lower_bound({})",
                    show_bound(b)
                );
                check(b, &want);
            }
            StaticQuery::UpperBound(b) => {
                let b = b.make(pool);
                let b = b.as_ref().map(Vec::as_slice);
                let want = first_in(oracle, Bound::Unbounded, b, true);
                assert_eq!(
                    m.upper_bound(b),
                    want,
                    "{what}: upper_bound({})",
                    show_bound(b)
                );
            }
            StaticQuery::Range(lo, hi, walk) => {
                let (lo, hi) = (lo.make(pool), hi.make(pool));
                let (lo, hi) = (
                    lo.as_ref().map(Vec::as_slice),
                    hi.as_ref().map(Vec::as_slice),
                );
                check_static_query(m, oracle, lo, hi, *walk, what);
            }
        }
    }
}

/// The oracle's first entry within `(lo, hi)`, or with `back` its last: what a static map's
/// `lower_bound` / `upper_bound` must answer.
fn first_in(
    oracle: &Oracle,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    back: bool,
) -> Option<(Vec<u8>, u64)> {
    let mut it = oracle.iter().filter(|(k, _)| in_range(k, lo, hi));
    let e = if back { it.next_back() } else { it.next() };
    e.map(|(k, v)| (k.clone(), *v))
}

/// Compares a static map against the oracle on one `get`, seek or range query, walked in the
/// given direction.
pub fn check_static_query<M: StaticMap>(
    m: &M,
    oracle: &Oracle,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    walk_spec: WalkSpec,
    what: &str,
) {
    let want: Vec<(Vec<u8>, u64)> = oracle
        .iter()
        .filter(|(k, _)| in_range(k, lo, hi))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let mut c = m.range((lo, hi));
    let mut front = 0usize;
    let mut back = want.len();
    let mut rng = TestRng::new(match walk_spec {
        WalkSpec::Alternate(seed, _) => seed,
        _ => 0,
    });
    let lim = walk_spec.walk().limit();
    for _ in 0..lim.min(want.len() + 1) {
        let from_back = match walk_spec {
            WalkSpec::Forward(_) => false,
            WalkSpec::Backward(_) => true,
            WalkSpec::Alternate(..) => rng.chance(0.5),
        };
        let got = if from_back { c.next_back() } else { c.next() };
        let expected = if front < back {
            if from_back {
                back -= 1;
                Some(&want[back])
            } else {
                front += 1;
                Some(&want[front - 1])
            }
        } else {
            None
        };
        let got = got.map(|(k, v)| (k.to_vec(), v));
        assert!(
            got.as_ref() == expected,
            "{what}: range {}..{} walked {walk_spec:?}: got {:?}, expected {:?} ({} from the front, {} from the back)",
            show_bound(lo),
            show_bound(hi),
            got.as_ref().map(|(k, v)| (Escaped(k).to_string(), v)),
            expected.map(|(k, v)| (Escaped(k).to_string(), v)),
            front,
            want.len() - back
        );
        if expected.is_none() {
            break;
        }
    }
}
