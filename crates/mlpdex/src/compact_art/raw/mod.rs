//! The compact ART's core: references, the node layouts, and the exact lookup.
//!
//! Everything lives in one byte arena, in 8-byte words, written in post-order by the builder
//! (a node after its children). A node is found through a [`Ref`], a 64-bit word that carries,
//! besides the node's word offset, everything needed to compute where each part of the node
//! lies: its layout, child count, record width, whether it stores a value and its prefix
//! length. A node therefore has no header, and a lookup can prefetch the line it will read
//! before reading anything of the node.
//!
//! ```text
//! node (word offsets from its start; parts present as the ref says):
//!   value    1 word       the value of the key that ends at this node
//!   labels   Linear: the n child bytes increasing (not padded: the records follow)
//!            Bitmap: 4 words, bit b set when a child has byte b (n of them set)
//!            Full:   nothing (n = 256, child b is record b)
//!   records  n records of w bytes, one per child in byte order; labels and records
//!            together are zero-padded to a word
//!   prefix   the bytes every key below shares after the parent's byte (path compression),
//!            zero-padded; a prefix of LONG_PREFIX bytes or more is preceded by a word
//!            holding its length
//! record of w = 8:  the child's ref
//! record of w >= 9: byte 8 is a tag: 0xFF = bytes 0..8 are the child's ref; otherwise the
//!                   child is a leaf stored inline: bytes 0..8 its value, bytes 9.. its
//!                   suffix of `tag` bytes (at most w - 9)
//! leaf (out of line): its value, then its suffix, zero-padded
//! ```
//!
//! A leaf's suffix is the rest of its key after the byte that led to it: lazy expansion
//! (a key below a node that no other key shares is not spread over more nodes).

pub(crate) mod audit;
pub(crate) mod build;
pub(crate) mod format;
pub(crate) mod merge;
pub(crate) mod path;

use crate::substrate::Frozen;
use crate::substrate::popcount::{Popcount, dispatch};
use crate::substrate::prefetch::{CACHE_LINE, prefetch_read};

/// Bits of a ref that hold the word offset.
pub(crate) const OFFSET_BITS: u32 = 36;
/// Number of words the arena may hold.
pub(crate) const MAX_WORDS: usize = 1 << OFFSET_BITS;
/// The longest key: a leaf ref holds its suffix length in 24 bits.
pub(crate) const MAX_KEY_LEN: usize = (1 << 24) - 1;
/// A prefix length field of this value means "the length is in the node's prefix word".
pub(crate) const LONG_PREFIX: usize = 2047;
/// Widest record, in bytes (a value, a tag and a suffix of up to 55 bytes).
pub(crate) const MAX_W: usize = 64;
/// The record of a node whose records are all refs: a ref, no tag.
pub(crate) const REF_W: usize = 8;
/// Most children of a Linear node: past it a bitmap (4 words) is smaller than the labels.
pub(crate) const LINEAR_MAX: usize = 24;
/// Tag of a record (of two or more words) that holds a ref.
pub(crate) const REF_TAG: u8 = 0xFF;

/// How a node finds its children, or that a ref is a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An out-of-line leaf.
    Leaf = 0,
    /// Up to [`LINEAR_MAX`] sorted child bytes.
    Linear = 1,
    /// A 256-bit set of child bytes; a child's record is found by rank.
    Bitmap = 2,
    /// All 256 bytes have a child; child `b` is record `b`.
    Full = 3,
}

/// A reference to a node or an out-of-line leaf.
///
/// ```text
/// bits  0..36  word offset in the arena
/// bits 36..38  kind (Kind)
/// leaf: bits 40..64  suffix length
/// node: bits 38..46  children - 1
///       bits 46..52  record width in bytes - 1 (8, or 9 to 64)
///       bit  52      the node stores a value
///       bits 53..64  prefix length, or LONG_PREFIX
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Ref(pub(crate) u64);

impl Ref {
    /// A ref to an out-of-line leaf at word `offset` with a suffix of `len` bytes.
    pub(crate) fn leaf(offset: usize, len: usize) -> Ref {
        debug_assert!(offset < MAX_WORDS && len <= MAX_KEY_LEN);
        Ref(offset as u64 | (len as u64) << 40)
    }

    /// A ref to a node.
    pub(crate) fn node(
        kind: Kind,
        offset: usize,
        n: usize,
        w: usize,
        has_value: bool,
        plen: usize,
    ) -> Ref {
        debug_assert!(kind != Kind::Leaf && offset < MAX_WORDS);
        debug_assert!((1..=256).contains(&n) && (REF_W..=MAX_W).contains(&w));
        Ref(offset as u64
            | (kind as u64) << OFFSET_BITS
            | ((n - 1) as u64) << 38
            | ((w - 1) as u64) << 46
            | (has_value as u64) << 52
            | (plen.min(LONG_PREFIX) as u64) << 53)
    }

    #[inline(always)]
    pub(crate) fn offset(self) -> usize {
        (self.0 & (MAX_WORDS as u64 - 1)) as usize
    }

    #[inline(always)]
    pub(crate) fn kind(self) -> Kind {
        match (self.0 >> OFFSET_BITS) & 3 {
            0 => Kind::Leaf,
            1 => Kind::Linear,
            2 => Kind::Bitmap,
            _ => Kind::Full,
        }
    }

    /// Suffix length of a leaf ref.
    #[inline(always)]
    pub(crate) fn leaf_len(self) -> usize {
        (self.0 >> 40) as usize
    }

    /// Children of a node ref.
    #[inline(always)]
    pub(crate) fn n(self) -> usize {
        ((self.0 >> 38) & 0xFF) as usize + 1
    }

    /// Record width of a node ref, in bytes.
    #[inline(always)]
    pub(crate) fn w(self) -> usize {
        ((self.0 >> 46) & 63) as usize + 1
    }

    #[inline(always)]
    pub(crate) fn has_value(self) -> bool {
        (self.0 >> 52) & 1 == 1
    }

    /// The prefix length field (the length, or [`LONG_PREFIX`]).
    #[inline(always)]
    pub(crate) fn plen_field(self) -> usize {
        (self.0 >> 53) as usize
    }
}

/// The little-endian word at byte `at`; 0 past the end (never for an audited tree).
#[inline(always)]
pub(crate) fn word(a: &[u8], at: usize) -> u64 {
    match a.get(at..at + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}

/// The set bits of `w`, with the CPU's popcount instruction where it has one.
#[inline(always)]
fn popcount(w: u64) -> u32 {
    dispatch!(p => p.count(w))
}

/// `len` bytes at `at`; empty past the end (never for an audited tree).
#[inline(always)]
pub(crate) fn bytes(a: &[u8], at: usize, len: usize) -> &[u8] {
    a.get(at..at + len).unwrap_or(&[])
}

/// A leaf wherever it is stored: its value's byte offset (also the entry's identity) and its
/// suffix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeafAt {
    pub(crate) at: usize,
    pub(crate) len: usize,
}

impl LeafAt {
    /// The out-of-line leaf `r` refers to.
    #[inline(always)]
    pub(crate) fn of(r: Ref) -> LeafAt {
        LeafAt {
            at: r.offset() * 8,
            len: r.leaf_len(),
        }
    }

    /// Its suffix (inline or out of line, the suffix follows the value; inline, after the tag
    /// byte).
    #[inline(always)]
    pub(crate) fn suffix<'a>(&self, a: &'a [u8], inline: bool) -> &'a [u8] {
        bytes(a, self.at + 8 + inline as usize, self.len)
    }
}

/// Bytes of a node's labels: the child bytes (Linear), the 256-bit set (Bitmap) or none
/// (Full). Records start right after them.
#[inline(always)]
pub(crate) fn labels_bytes(kind: Kind, n: usize) -> usize {
    match kind {
        Kind::Bitmap => 32,
        Kind::Linear => n,
        _ => 0,
    }
}

/// What a record holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Child {
    /// A node.
    Node(Ref),
    /// A leaf; `inline` when it sits in the record.
    Leaf(LeafAt, bool),
}

/// Where the parts of a node lie, computed from its ref alone (plus the length word of a long
/// prefix).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) r: Ref,
    /// Byte offset of the node (its value word when it has one).
    pub(crate) at: usize,
    /// Byte offset of the labels or the bitmap.
    pub(crate) labels: usize,
    /// Byte offset of record 0.
    pub(crate) records: usize,
    /// Byte offset of the prefix bytes.
    pub(crate) prefix: usize,
    pub(crate) plen: usize,
}

impl Node {
    #[inline(always)]
    pub(crate) fn new(a: &[u8], r: Ref) -> Node {
        let at = r.offset() * 8;
        let n = r.n();
        let labels = at + 8 * r.has_value() as usize;
        let head = labels_bytes(r.kind(), n);
        let records = labels + head;
        let end = labels + (head + n * r.w()).next_multiple_of(8);
        let (prefix, plen) = match r.plen_field() {
            LONG_PREFIX => (end + 8, word(a, end) as usize),
            p => (end, p),
        };
        Node {
            r,
            at,
            labels,
            records,
            prefix,
            plen,
        }
    }

    /// Bytes the node takes.
    pub(crate) fn size(&self) -> usize {
        self.prefix + self.plen.next_multiple_of(8) - self.at
    }

    #[inline(always)]
    pub(crate) fn n(&self) -> usize {
        self.r.n()
    }

    #[inline(always)]
    pub(crate) fn prefix<'a>(&self, a: &'a [u8]) -> &'a [u8] {
        bytes(a, self.prefix, self.plen)
    }

    /// The value of the key ending here.
    #[inline(always)]
    pub(crate) fn value(&self, a: &[u8]) -> Option<u64> {
        self.r.has_value().then(|| word(a, self.at))
    }

    /// Starts loading the lines a search for child byte `b` will read: the prefix, and the
    /// record where `b`'s child is (Full) or is expected (Bitmap: at rank `b * n / 256`, the
    /// rank of `b` when child bytes spread evenly; the bitmap line is loaded by the read).
    #[inline(always)]
    pub(crate) fn prefetch(&self, a: &[u8], b: u8) {
        let base = a.as_ptr();
        let line = |at: usize| prefetch_read(base.wrapping_add(at));
        if self.plen > 0 {
            line(self.prefix);
        }
        let rec = self.r.w();
        match self.r.kind() {
            Kind::Full => line(self.records + b as usize * rec),
            Kind::Bitmap => {
                let guess = self.records + ((b as usize * self.n()) >> 8) * rec;
                line(self.labels);
                line(guess);
                line(guess + CACHE_LINE);
                line(guess.wrapping_sub(CACHE_LINE));
            }
            _ => line(self.records),
        }
    }

    /// Index of the child with byte `b`.
    #[inline(always)]
    pub(crate) fn find<P: Popcount>(&self, p: P, a: &[u8], b: u8) -> Option<usize> {
        match self.r.kind() {
            Kind::Full => Some(b as usize),
            Kind::Bitmap => {
                let q = (b >> 6) as usize;
                let bit = 1u64 << (b & 63);
                let here = word(a, self.labels + 8 * q);
                if here & bit == 0 {
                    return None;
                }
                let mut rank = p.count(here & (bit - 1)) as usize;
                for j in 0..q {
                    rank += p.count(word(a, self.labels + 8 * j)) as usize;
                }
                Some(rank)
            }
            _ => {
                let n = self.n();
                let spread = u64::from(b) * 0x0101_0101_0101_0101;
                for j in 0..n.div_ceil(8) {
                    let x = word(a, self.labels + 8 * j) ^ spread;
                    let zero = x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080;
                    if zero != 0 {
                        let i = 8 * j + (zero.trailing_zeros() / 8) as usize;
                        return (i < n).then_some(i);
                    }
                }
                None
            }
        }
    }

    /// Byte of child `i` (`i < n`), given the byte of child `i - 1` when known (a bitmap
    /// then scans on from it instead of selecting from the start).
    pub(crate) fn label(&self, a: &[u8], i: usize) -> u8 {
        match self.r.kind() {
            Kind::Full => i as u8,
            Kind::Linear => bytes(a, self.labels + i, 1).first().copied().unwrap_or(0),
            _ => {
                let mut left = i;
                for j in 0..4 {
                    let w = word(a, self.labels + 8 * j);
                    let c = popcount(w) as usize;
                    if left < c {
                        let mut w = w;
                        for _ in 0..left {
                            w &= w - 1;
                        }
                        return (64 * j + w.trailing_zeros() as usize) as u8;
                    }
                    left -= c;
                }
                0
            }
        }
    }

    /// The first child whose byte is at least `b`: its index and byte.
    pub(crate) fn label_ge(&self, a: &[u8], b: u8) -> Option<(usize, u8)> {
        match self.r.kind() {
            Kind::Full => Some((b as usize, b)),
            Kind::Linear => {
                let labels = bytes(a, self.labels, self.n());
                let i = labels.iter().position(|&l| l >= b)?;
                Some((i, labels[i]))
            }
            _ => {
                let mut rank = 0;
                for j in 0..4 {
                    let w = word(a, self.labels + 8 * j);
                    let from = b as usize as i64 - 64 * j as i64;
                    let masked = if from <= 0 {
                        w
                    } else if from >= 64 {
                        0
                    } else {
                        w & (!0u64 << from)
                    };
                    if masked != 0 {
                        rank += popcount(w & !masked) as usize;
                        return Some((rank, (64 * j + masked.trailing_zeros() as usize) as u8));
                    }
                    rank += popcount(w) as usize;
                }
                None
            }
        }
    }

    /// The last child whose byte is at most `b`: its index and byte.
    pub(crate) fn label_le(&self, a: &[u8], b: u8) -> Option<(usize, u8)> {
        match self.r.kind() {
            Kind::Full => Some((b as usize, b)),
            Kind::Linear => {
                let labels = bytes(a, self.labels, self.n());
                let i = labels.iter().rposition(|&l| l <= b)?;
                Some((i, labels[i]))
            }
            _ => {
                let after = match b.checked_add(1) {
                    Some(next) => self.label_ge(a, next).map_or(self.n(), |(i, _)| i),
                    None => self.n(),
                };
                let i = after.checked_sub(1)?;
                Some((i, self.label(a, i)))
            }
        }
    }

    /// The byte of the child after child `i`, whose byte is `b`.
    pub(crate) fn next_label(&self, a: &[u8], i: usize, b: u8) -> Option<(usize, u8)> {
        if i + 1 >= self.n() {
            return None;
        }
        Some((i + 1, self.label_after(a, i + 1, b)))
    }

    /// The byte of the child before child `i`, whose byte is `b`.
    pub(crate) fn prev_label(&self, a: &[u8], i: usize, b: u8) -> Option<(usize, u8)> {
        let i = i.checked_sub(1)?;
        match self.r.kind() {
            Kind::Bitmap => self.label_le(a, b.checked_sub(1)?),
            _ => Some((i, self.label(a, i))),
        }
    }

    /// Byte of child `i`, knowing child `i - 1` has byte `prev`.
    fn label_after(&self, a: &[u8], i: usize, prev: u8) -> u8 {
        match (self.r.kind(), prev.checked_add(1)) {
            (Kind::Bitmap, Some(next)) => self.label_ge(a, next).map_or(0, |(_, l)| l),
            _ => self.label(a, i),
        }
    }

    /// The child bytes in order.
    #[inline]
    pub(crate) fn labels(&self, a: &[u8]) -> Labels {
        let words = match self.r.kind() {
            Kind::Bitmap => [0, 1, 2, 3].map(|j| word(a, self.labels + 8 * j)),
            _ => [0; 4],
        };
        Labels {
            node: *self,
            words,
            next: 0,
        }
    }

    /// What record `i` holds.
    #[inline(always)]
    pub(crate) fn child(&self, a: &[u8], i: usize) -> Child {
        let w = self.r.w();
        let at = self.records + i * w;
        if w > REF_W {
            let tag = bytes(a, at + 8, 1).first().copied().unwrap_or(REF_TAG);
            if tag != REF_TAG {
                return Child::Leaf(
                    LeafAt {
                        at,
                        len: tag as usize,
                    },
                    true,
                );
            }
        }
        let r = Ref(word(a, at));
        match r.kind() {
            Kind::Leaf => Child::Leaf(LeafAt::of(r), false),
            _ => Child::Node(r),
        }
    }
}

/// The child bytes of a node, in order (see [`Node::labels`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Labels {
    node: Node,
    /// A Bitmap node's bits not yet returned.
    words: [u64; 4],
    /// Index of the next child.
    next: usize,
}

impl Labels {
    /// The next child's byte, reading Linear labels from `a`.
    #[inline]
    pub(crate) fn next(&mut self, a: &[u8]) -> Option<u8> {
        let i = self.next;
        if i >= self.node.n() {
            return None;
        }
        self.next += 1;
        Some(match self.node.r.kind() {
            Kind::Bitmap => {
                let j = self.words.iter().position(|&w| w != 0).unwrap_or(3);
                let w = self.words[j];
                self.words[j] = w & w.wrapping_sub(1);
                (64 * j + w.trailing_zeros() as usize) as u8
            }
            Kind::Linear => bytes(a, self.node.labels + i, 1)
                .first()
                .copied()
                .unwrap_or(0),
            _ => i as u8,
        })
    }
}

/// A built or loaded compact ART.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// Nodes and out-of-line leaves, in words (little-endian), written in post-order.
    pub(crate) arena: Frozen<u8>,
    /// The root: a node, or a leaf when there is one key; meaningless when `len == 0`.
    pub(crate) root: Ref,
    pub(crate) len: usize,
}

impl Tree {
    /// The tree of no keys.
    pub(crate) fn empty() -> Tree {
        Tree {
            arena: Frozen::from(Vec::new()),
            root: Ref(0),
            len: 0,
        }
    }

    /// Bytes of memory the tree takes.
    pub(crate) fn memory_usage(&self) -> usize {
        size_of::<Tree>() + self.arena.bytes()
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        dispatch!(p => self.get_with(p, key))
    }

    #[inline(always)]
    fn get_with<P: Popcount>(&self, p: P, key: &[u8]) -> Option<u64> {
        let a = &*self.arena;
        let mut r = self.root;
        let mut d = 0;
        loop {
            if r.kind() == Kind::Leaf {
                let leaf = LeafAt::of(r);
                return (leaf.suffix(a, false) == &key[d..]).then(|| word(a, leaf.at));
            }
            let node = Node::new(a, r);
            if let Some(&b) = key.get(d + node.plen) {
                node.prefetch(a, b);
            }
            if !key[d..].starts_with(node.prefix(a)) {
                return None;
            }
            d += node.plen;
            let Some(&b) = key.get(d) else {
                return node.value(a);
            };
            d += 1;
            match node.child(a, node.find(p, a, b)?) {
                Child::Node(c) => r = c,
                Child::Leaf(leaf, inline) => {
                    return (leaf.suffix(a, inline) == &key[d..]).then(|| word(a, leaf.at));
                }
            }
        }
    }

    /// Starts loading the lines a lookup of `key` reads below the top `levels` nodes of its
    /// path: reads those nodes (the top of a large tree stays in cache) and prefetches the
    /// next one's prefix and record line, without waiting for it. A caller with other work
    /// to do before its lookup (the hybrid's insert, which writes its dynamic stage first)
    /// overlaps that lookup's first miss with the work.
    pub(crate) fn prefetch(&self, key: &[u8], levels: usize) {
        if self.len == 0 {
            return;
        }
        dispatch!(p => self.prefetch_with(p, key, levels))
    }

    #[inline(always)]
    fn prefetch_with<P: Popcount>(&self, p: P, key: &[u8], levels: usize) {
        let a = &*self.arena;
        let mut r = self.root;
        let mut d = 0;
        for level in 0..=levels {
            if r.kind() == Kind::Leaf {
                return;
            }
            let node = Node::new(a, r);
            let Some(&b) = key.get(d + node.plen) else {
                return;
            };
            if level == levels {
                node.prefetch(a, b);
                return;
            }
            if !key[d..].starts_with(node.prefix(a)) {
                return;
            }
            d += node.plen + 1;
            match node.find(p, a, b).map(|i| node.child(a, i)) {
                Some(Child::Node(c)) => r = c,
                _ => return,
            }
        }
    }

    /// The value of the first entry `>= key` (`> key` when `strict`), found in one descent
    /// without a path: the search remembers the nearest subtree to the right of its way
    /// down, whose first entry is the answer when nothing below the way down is.
    #[inline]
    pub(crate) fn lower_bound_value(&self, key: &[u8], strict: bool) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.lower_bound_value_in(key, strict)
    }

    #[inline(always)]
    fn lower_bound_value_in(&self, key: &[u8], strict: bool) -> Option<u64> {
        use core::cmp::Ordering;
        let a = &*self.arena;
        // The next sibling of the deepest child taken so far: (node, child index).
        let mut right: Option<(Node, usize)> = None;
        let after = |right: Option<(Node, usize)>| right.map(|(node, i)| self.first_of(node, i));
        let leaf =
            |leaf: LeafAt, inline: bool, rest: &[u8], right| match leaf.suffix(a, inline).cmp(rest)
            {
                Ordering::Greater => Some(word(a, leaf.at)),
                Ordering::Equal if !strict => Some(word(a, leaf.at)),
                _ => after(right),
            };
        let mut r = self.root;
        let mut d = 0;
        loop {
            if r.kind() == Kind::Leaf {
                return leaf(LeafAt::of(r), false, &key[d..], right);
            }
            let node = Node::new(a, r);
            if let Some(&b) = key.get(d + node.plen) {
                node.prefetch(a, b);
            }
            let prefix = node.prefix(a);
            let rest = &key[d..];
            let m = prefix.len().min(rest.len());
            match prefix[..m].cmp(&rest[..m]) {
                Ordering::Less => return after(right),
                Ordering::Greater => return Some(self.first_below(r)),
                Ordering::Equal if m < prefix.len() => return Some(self.first_below(r)),
                Ordering::Equal => {}
            }
            d += node.plen;
            let Some(&b) = key.get(d) else {
                return match node.value(a) {
                    Some(v) if !strict => Some(v),
                    _ => Some(self.first_of(node, 0)),
                };
            };
            let (i, label) = match node.label_ge(a, b) {
                Some(found) => found,
                None => return after(right),
            };
            if label > b {
                return Some(self.first_of(node, i));
            }
            if i + 1 < node.n() {
                right = Some((node, i + 1));
            }
            d += 1;
            match node.child(a, i) {
                Child::Node(c) => r = c,
                Child::Leaf(l, inline) => return leaf(l, inline, &key[d..], right),
            }
        }
    }

    /// The value of the first entry of child `i` of `node`.
    fn first_of(&self, node: Node, i: usize) -> u64 {
        match node.child(&self.arena, i) {
            Child::Leaf(leaf, _) => word(&self.arena, leaf.at),
            Child::Node(c) => self.first_below(c),
        }
    }

    /// The value of the first entry at or below `r`.
    fn first_below(&self, mut r: Ref) -> u64 {
        let a = &*self.arena;
        loop {
            if r.kind() == Kind::Leaf {
                return word(a, LeafAt::of(r).at);
            }
            let node = Node::new(a, r);
            if let Some(v) = node.value(a) {
                return v;
            }
            match node.child(a, 0) {
                Child::Leaf(leaf, _) => return word(a, leaf.at),
                Child::Node(c) => r = c,
            }
        }
    }
}
