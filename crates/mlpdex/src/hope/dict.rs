//! The Dictionary module (§6.2.2): intervals of the string axis, their symbols and codes, and
//! the three lookup structures that find the interval holding a string.
//!
//! # Intervals as byte strings
//!
//! The string axis of the thesis (§6.1.1) is modelled here on plain byte strings with the end
//! of a key as its own, smallest symbol: a dictionary is a sorted list of left boundaries
//! `b₀ = "" < b₁ < … < b_{n-1}` (byte strings), interval `i` is `[bᵢ, bᵢ₊₁)` in ordinary
//! lexicographic order, and a lookup of the unencoded rest `r` of a key returns the interval
//! with the largest `bᵢ ≤ r`, which always exists since `b₀` is empty. Every single byte is a
//! boundary too, so no interval spans two first bytes.
//!
//! The symbol of an interval is the longest prefix all its strings share, found from the two
//! boundaries: if `bᵢ₊₁ = bᵢ · 0x00` the interval holds the single string `bᵢ`, and its symbol is
//! `bᵢ` *and the end of the key* (a terminal entry: encoding stops after it); otherwise it is
//! the longest prefix `p` of `bᵢ` with `bᵢ₊₁ ≤ succ(p)`, where `succ(p)` is the first string
//! after every extension of `p`. Interval 0 is always terminal (`b₁ = "\0"`): it encodes the end
//! of a key alone. Encoding a key therefore emits one code per symbol and ends with the code of
//! a terminal entry, which is what makes encoded keys of any lengths compare correctly (see the
//! module docs of [`super`]).
//!
//! # Entries
//!
//! An entry packs everything the encoder needs in one `u64`: `code << 16 | sym << 8 | len`,
//! where `len` is the code length in bits (≤ [`MAX_CODE_LEN`]), `sym` the bytes the symbol
//! consumes (bit 7 set for a terminal entry).
//!
//! # Lookup structures
//!
//! - [`ArrayDict`] (Single-Char, Double-Char): the interval index is a formula of the first one or
//!   two bytes; one array read.
//! - [`BitmapTrie`] (3-Grams, 4-Grams): boundaries of at most `D` bytes as a fixed-depth trie of
//!   257-bit nodes (end-of-key plus 256 bytes) stored level by level, each node with the index of
//!   its first child (Figure 6.6). A lookup walks at most `D` nodes; where the path leaves the
//!   trie, the answer is the leftmost leaf right of it minus one, found by following first-child
//!   indexes down.
//! - [`RadixDict`] (ALM, ALM-Improved): variable-length boundaries in a path-compressed radix
//!   tree whose nodes keep their whole compressed prefix (no optimistic skipping: there is no
//!   record to verify against) and the range of boundary indexes below them.

use super::code::MAX_CODE_LEN;

/// Longest symbol (bytes consumed by one entry); fits the 7 bits of an entry's `sym`.
pub const MAX_SYMBOL: usize = 127;

/// Bit 7 of an entry's `sym`: the entry also consumes the end of the key.
pub const TERMINAL: u8 = 0x80;

/// Packs an entry.
///
/// # Panics
/// If `len` exceeds [`MAX_CODE_LEN`] or `code` has bits at or above `len` (they would be lost).
#[inline]
pub fn entry(code: u64, len: u8, sym: u8) -> u64 {
    assert!(
        u32::from(len) <= MAX_CODE_LEN && code.checked_shr(u32::from(len)).unwrap_or(0) == 0,
        "entry: code {code:#x} does not fit in {len} bits"
    );
    code << 16 | u64::from(sym) << 8 | u64::from(len)
}

/// The first string after every string that starts with `p`; `None` when there is none (`p` is
/// empty or all 0xFF).
pub fn prefix_successor(p: &[u8]) -> Option<Vec<u8>> {
    let keep = p.iter().rposition(|&b| b != 0xFF)?;
    let mut s = p[..=keep].to_vec();
    s[keep] += 1;
    Some(s)
}

/// The `sym` byte of interval `[lo, hi)` (`hi = None`: the end of the axis); `None` when the
/// interval spans two first bytes (a dictionary without every single byte as a boundary).
pub fn symbol_of(lo: &[u8], hi: Option<&[u8]>) -> Option<u8> {
    if let Some(h) = hi
        && h.len() == lo.len() + 1
        && h[lo.len()] == 0
        && h.starts_with(lo)
    {
        return (lo.len() <= MAX_SYMBOL).then_some(TERMINAL | lo.len() as u8);
    }
    // Longest prefix p of lo with hi <= succ(p); succ(p) decreases as p grows.
    for k in (1..=lo.len().min(MAX_SYMBOL)).rev() {
        let fits = match (hi, prefix_successor(&lo[..k])) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(h), Some(s)) => h <= s.as_slice(),
        };
        if fits {
            return Some(k as u8);
        }
    }
    None
}

/// Sorted boundaries in one byte pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Boundaries {
    pool: Vec<u8>,
    /// `ends[i]` = end of boundary `i` in `pool`; boundary `i` starts at `ends[i - 1]`.
    ends: Vec<u32>,
}

impl Boundaries {
    /// Boundaries from strictly increasing strings; `None` unless they increase, start with
    /// the empty string, include every single byte and fit the symbol limit.
    pub fn new<I, S>(sorted: I) -> Option<Boundaries>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let mut b = Boundaries::default();
        for s in sorted {
            let s = s.as_ref();
            if s.len() > MAX_SYMBOL + 1 {
                return None;
            }
            if let Some(last) = b.len().checked_sub(1)
                && b.get(last) >= s
            {
                return None;
            }
            b.pool.extend_from_slice(s);
            b.ends.push(u32::try_from(b.pool.len()).ok()?);
        }
        if b.is_empty() || !b.get(0).is_empty() {
            return None;
        }
        // Every single byte is a boundary: count them while checking.
        let singles = (0..b.len()).filter(|&i| b.get(i).len() == 1).count();
        (singles == 256).then_some(b)
    }

    /// Number of boundaries (= intervals).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Boundary `i`.
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.pool[start..self.ends[i] as usize]
    }

    /// Longest boundary.
    pub fn max_len(&self) -> usize {
        (0..self.len())
            .map(|i| self.get(i).len())
            .max()
            .unwrap_or(0)
    }

    /// The `sym` byte of every interval (see [`symbol_of`]).
    pub fn symbols(&self) -> Option<Vec<u8>> {
        (0..self.len())
            .map(|i| symbol_of(self.get(i), (i + 1 < self.len()).then(|| self.get(i + 1))))
            .collect()
    }

    /// Index of the largest boundary `≤ s` (binary search; the reference the lookup structures
    /// are tested against).
    #[cfg(test)]
    pub fn floor(&self, s: &[u8]) -> usize {
        let mut lo = 0usize;
        let mut hi = self.len();
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.get(mid) <= s {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes of memory.
    pub fn memory_usage(&self) -> usize {
        self.pool.capacity() + self.ends.capacity() * 4
    }

    pub(crate) fn pool(&self) -> &[u8] {
        &self.pool
    }
}

/// Single-Char or Double-Char: the entry index is a formula of the first bytes.
#[derive(Clone, Debug)]
pub struct ArrayDict {
    /// 1 (Single-Char) or 2 (Double-Char).
    width: usize,
    entries: Vec<u64>,
}

impl ArrayDict {
    /// The boundaries of the fixed-interval scheme of `width` bytes, in order.
    pub fn boundaries(width: usize) -> Vec<Vec<u8>> {
        let mut v = vec![Vec::new()];
        for a in 0..=255u8 {
            v.push(vec![a]);
            if width == 2 {
                for b in 0..=255u8 {
                    v.push(vec![a, b]);
                }
            }
        }
        v
    }

    /// The dictionary of `width` bytes with one entry per boundary of
    /// [`boundaries`](Self::boundaries).
    ///
    /// # Panics
    /// If `width` is not 1 or 2, or `entries` has not one entry per boundary.
    pub fn new(width: usize, entries: Vec<u64>) -> ArrayDict {
        let want = match width {
            1 => 257,
            2 => 1 + 256 * 257,
            _ => panic!("ArrayDict: width {width}, expected 1 or 2"),
        };
        assert_eq!(entries.len(), want, "ArrayDict: one entry per boundary");
        ArrayDict { width, entries }
    }

    /// 1 (Single-Char) or 2 (Double-Char).
    #[inline]
    pub fn width(&self) -> usize {
        self.width
    }

    /// The entries, in interval order.
    #[inline]
    pub fn entries(&self) -> &[u64] {
        &self.entries
    }

    /// Boundary `i` of [`boundaries`](Self::boundaries), written into `buf`.
    ///
    /// # Panics
    /// If `i` is not below the number of entries, like slice indexing.
    pub fn boundary<'a>(&self, i: usize, buf: &'a mut [u8; 2]) -> &'a [u8] {
        assert!(
            i < self.entries.len(),
            "ArrayDict::boundary: {i} of {}",
            self.entries.len()
        );
        if i == 0 {
            return &buf[..0];
        }
        let j = i - 1;
        if self.width == 1 {
            buf[0] = j as u8;
            return &buf[..1];
        }
        buf[0] = (j / 257) as u8;
        match j % 257 {
            0 => &buf[..1],
            r => {
                buf[1] = (r - 1) as u8;
                &buf[..2]
            }
        }
    }

    /// The interval holding `rest`.
    #[inline]
    pub fn index(&self, rest: &[u8]) -> usize {
        match (self.width, rest) {
            (_, []) => 0,
            (1, [a, ..]) => 1 + *a as usize,
            (_, [a]) => 1 + *a as usize * 257,
            (_, [a, b, ..]) => 2 + *a as usize * 257 + *b as usize,
        }
    }

    /// The entry of the interval holding `rest`.
    #[inline]
    pub fn lookup(&self, rest: &[u8]) -> u64 {
        self.entries[self.index(rest)]
    }

    /// The entries, in interval order.
    pub fn entries_mut(&mut self) -> &mut [u64] {
        &mut self.entries
    }

    /// Bytes of memory.
    pub fn memory_usage(&self) -> usize {
        self.entries.capacity() * 8
    }
}

/// A node of a [`BitmapTrie`]: which of the 257 labels (end of key, then bytes) have a child,
/// and the index of its first child on the next level.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct TrieNode {
    first_child: u32,
    /// 1 when the end-of-key label is present.
    end: u32,
    bytes: [u64; 4],
}

const _: () = assert!(size_of::<TrieNode>() == 40);

impl TrieNode {
    /// Labels below byte `b` (the end label counts) and whether `b` is present.
    #[inline]
    fn rank(&self, b: u8) -> (u32, bool) {
        crate::substrate::popcount::dispatch!(p => self.rank_with(p, b))
    }

    /// [`rank`](Self::rank) with the popcount `p` (POPCNT when the CPU has it).
    #[inline(always)]
    fn rank_with<P: crate::substrate::popcount::Popcount>(&self, p: P, b: u8) -> (u32, bool) {
        let w = (b / 64) as usize;
        let bit = b % 64;
        let mut r = self.end;
        for &x in &self.bytes[..w] {
            r += p.count(x);
        }
        let word = self.bytes[w];
        r += p.count(word & ((1u64 << bit) - 1));
        (r, word >> bit & 1 == 1)
    }
}

/// Fixed-depth bitmap trie over boundaries of at most `depth` bytes (3-Grams, 4-Grams).
#[derive(Clone, Debug)]
pub struct BitmapTrie {
    depth: usize,
    /// Per level, its nodes and then one sentinel whose `first_child` is the next level's size.
    levels: Vec<Vec<TrieNode>>,
    entries: Vec<u64>,
}

impl BitmapTrie {
    /// The trie over `b` (every boundary at most `depth` bytes long).
    pub fn new(b: &Boundaries, depth: usize, entries: Vec<u64>) -> BitmapTrie {
        debug_assert!(b.max_len() <= depth && entries.len() == b.len());
        // Label of boundary s at level d: 0 = end of key (also past its end), else byte + 1.
        let label = |s: &[u8], d: usize| s.get(d).map_or(0usize, |&x| x as usize + 1);
        let mut levels = Vec::with_capacity(depth);
        // Group boundaries by their first d labels: a node per distinct d-prefix.
        let n = b.len();
        let mut starts: Vec<usize> = vec![0]; // first boundary of each node on this level
        for d in 0..depth {
            let mut nodes = Vec::with_capacity(starts.len() + 1);
            let mut next_starts = Vec::new();
            for (j, &s) in starts.iter().enumerate() {
                let end = starts.get(j + 1).copied().unwrap_or(n);
                let mut node = TrieNode {
                    first_child: next_starts.len() as u32,
                    ..TrieNode::default()
                };
                let mut prev = usize::MAX;
                for i in s..end {
                    let l = label(b.get(i), d);
                    if l != prev {
                        next_starts.push(i);
                        if l == 0 {
                            node.end = 1;
                        } else {
                            node.bytes[(l - 1) / 64] |= 1 << ((l - 1) % 64);
                        }
                        prev = l;
                    }
                }
                nodes.push(node);
            }
            nodes.push(TrieNode {
                first_child: next_starts.len() as u32,
                ..TrieNode::default()
            });
            levels.push(nodes);
            starts = next_starts;
        }
        debug_assert_eq!(starts.len(), n, "boundaries are distinct after padding");
        BitmapTrie {
            depth,
            levels,
            entries,
        }
    }

    /// The interval holding `rest`.
    #[inline]
    pub fn index(&self, rest: &[u8]) -> usize {
        let mut node = 0usize;
        for d in 0..self.depth {
            let n = &self.levels[d][node];
            let (r, present) = match rest.get(d) {
                None => (0, n.end == 1),
                Some(&b) => n.rank(b),
            };
            let pos = n.first_child as usize + r as usize;
            if !present {
                // Leftmost leaf at or after `pos` on level d + 1, minus one.
                let mut p = pos;
                for lv in &self.levels[d + 1..] {
                    p = lv[p].first_child as usize;
                }
                return p - 1;
            }
            node = pos;
            if rest.len() <= d {
                // Past the end of the key every label is the end label: the end-labelled
                // path leads straight to the boundary equal to `rest`.
                for lv in &self.levels[d + 1..] {
                    node = lv[node].first_child as usize;
                }
                return node;
            }
        }
        node
    }

    /// The entry of the interval holding `rest`.
    #[inline]
    pub fn lookup(&self, rest: &[u8]) -> u64 {
        self.entries[self.index(rest)]
    }

    /// The entries, in interval order.
    pub fn entries_mut(&mut self) -> &mut [u64] {
        &mut self.entries
    }

    /// Bytes of memory.
    pub fn memory_usage(&self) -> usize {
        self.levels.iter().map(|l| l.capacity() * 40).sum::<usize>() + self.entries.capacity() * 8
    }
}

/// A node of a [`RadixDict`].
#[derive(Clone, Copy, Debug)]
struct RadixNode {
    /// The compressed path into this node: `pool[prefix_start..prefix_start + prefix_len]`.
    prefix_start: u32,
    prefix_len: u32,
    /// Children: `labels[child_start..child_start + children]` (0 = end of key, else byte + 1)
    /// and the matching `targets` (a node, or the boundary index for the end label).
    child_start: u32,
    children: u32,
    /// Boundary indexes below this node: `first..=last`.
    first: u32,
    last: u32,
}

/// Path-compressed radix tree over variable-length boundaries (ALM, ALM-Improved).
#[derive(Clone, Debug)]
pub struct RadixDict {
    nodes: Vec<RadixNode>,
    pool: Vec<u8>,
    labels: Vec<u16>,
    targets: Vec<u32>,
    entries: Vec<u64>,
}

impl RadixDict {
    /// The radix tree over `b`, with one entry per boundary.
    pub fn new(b: &Boundaries, entries: Vec<u64>) -> RadixDict {
        let mut d = RadixDict {
            nodes: Vec::new(),
            pool: Vec::new(),
            labels: Vec::new(),
            targets: Vec::new(),
            entries,
        };
        d.build(b, 0, b.len(), 0);
        d
    }

    /// Adds the node over boundaries `lo..hi`, which share their first `depth` bytes; returns
    /// its index.
    fn build(&mut self, b: &Boundaries, lo: usize, hi: usize, depth: usize) -> u32 {
        // Extend the shared prefix while no boundary ends and all agree.
        let first = b.get(lo);
        let mut end = depth;
        'grow: while let Some(&c) = first.get(end) {
            for i in lo..hi {
                if b.get(i).get(end) != Some(&c) {
                    break 'grow;
                }
            }
            end += 1;
        }
        let id = self.nodes.len() as u32;
        let prefix_start = self.pool.len() as u32;
        self.pool.extend_from_slice(&first[depth..end]);
        self.nodes.push(RadixNode {
            prefix_start,
            prefix_len: (end - depth) as u32,
            child_start: 0,
            children: 0,
            first: lo as u32,
            last: (hi - 1) as u32,
        });
        // Children grouped by the label at `end`; recursion fills targets afterwards.
        let mut groups: Vec<(u16, usize, usize)> = Vec::new();
        let mut i = lo;
        while i < hi {
            let l = b.get(i).get(end).map_or(0u16, |&x| x as u16 + 1);
            let mut j = i + 1;
            while j < hi && b.get(j).get(end).map_or(0u16, |&x| x as u16 + 1) == l {
                j += 1;
            }
            groups.push((l, i, j));
            i = j;
        }
        let child_start = self.labels.len();
        for &(l, _, _) in &groups {
            self.labels.push(l);
            self.targets.push(0);
        }
        for (k, &(l, s, e)) in groups.iter().enumerate() {
            let t = if l == 0 {
                debug_assert_eq!(e - s, 1);
                s as u32
            } else {
                self.build(b, s, e, end + 1)
            };
            self.targets[child_start + k] = t;
        }
        let n = &mut self.nodes[id as usize];
        n.child_start = child_start as u32;
        n.children = groups.len() as u32;
        id
    }

    /// The interval holding `rest`.
    #[inline]
    pub fn index(&self, rest: &[u8]) -> usize {
        let mut node = &self.nodes[0];
        let mut i = 0usize;
        loop {
            let p = &self.pool
                [node.prefix_start as usize..(node.prefix_start + node.prefix_len) as usize];
            for &x in p {
                match rest.get(i) {
                    Some(&c) if c == x => i += 1,
                    Some(&c) if c > x => return node.last as usize,
                    _ => return node.first as usize - 1,
                }
            }
            let label = rest.get(i).map_or(0u16, |&c| c as u16 + 1);
            let cs = node.child_start as usize;
            let labels = &self.labels[cs..cs + node.children as usize];
            // Number of children with a label <= `label`.
            let k = labels.partition_point(|&l| l <= label);
            if k == 0 {
                return node.first as usize - 1;
            }
            let t = self.targets[cs + k - 1];
            if labels[k - 1] != label {
                // Everything under the child left of `label` is smaller than `rest`.
                return if labels[k - 1] == 0 {
                    t as usize
                } else {
                    self.nodes[t as usize].last as usize
                };
            }
            if label == 0 {
                return t as usize;
            }
            node = &self.nodes[t as usize];
            i += 1;
        }
    }

    /// The entry of the interval holding `rest`.
    #[inline]
    pub fn lookup(&self, rest: &[u8]) -> u64 {
        self.entries[self.index(rest)]
    }

    /// The entries, in interval order.
    pub fn entries_mut(&mut self) -> &mut [u64] {
        &mut self.entries
    }

    /// Bytes of memory.
    pub fn memory_usage(&self) -> usize {
        self.nodes.capacity() * size_of::<RadixNode>()
            + self.pool.capacity()
            + self.labels.capacity() * 2
            + self.targets.capacity() * 4
            + self.entries.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;

    fn singles_and(extra: &[&[u8]]) -> Boundaries {
        let mut v: Vec<Vec<u8>> = ArrayDict::boundaries(1);
        v.extend(extra.iter().map(|s| s.to_vec()));
        v.sort();
        v.dedup();
        Boundaries::new(v).unwrap()
    }

    #[test]
    fn symbols_follow_the_string_axis() {
        let b = singles_and(&[
            b"ab",
            b"ab\x00",
            b"abc",
            b"abd",
            b"b\xff\xff",
            b"ing",
            b"inh",
        ]);
        let syms = b.symbols().unwrap();
        let sym = |s: &[u8]| syms[b.floor(s)];
        assert_eq!(syms[0], TERMINAL); // the empty key alone
        assert_eq!(sym(b"ab"), TERMINAL | 2); // [ab, ab\0) holds only "ab"
        assert_eq!(sym(b"ab\x00z"), 2); // [ab\0, abc): prefix "ab"
        assert_eq!(sym(b"abcz"), 3); // [abc, abd)
        assert_eq!(sym(b"abd"), 1); // [abd, b): only "a" is common
        assert_eq!(sym(b"ingot"), 3);
        assert_eq!(sym(b"inhale"), 1);
        assert_eq!(sym(b"b\xff\xff\xff"), 3); // up to the end of b's cone
        assert_eq!(sym(b"\xff\xff"), 1); // last interval runs to the end of the axis
        assert!(Boundaries::new([&b""[..], b"a"]).is_none()); // not every single byte
        assert!(Boundaries::new([&b"a"[..]]).is_none());
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(symbol_of(b"a", Some(b"c")), None);
    }

    fn random_boundaries(rng: &mut TestRng, max_len: usize, n: usize) -> Boundaries {
        let mut v: Vec<Vec<u8>> = ArrayDict::boundaries(1);
        let alphabet = [0u8, 1, b'a', b'b', b'c', 0xFE, 0xFF];
        for _ in 0..n {
            let len = 2 + rng.index(max_len - 1);
            v.push(
                (0..len)
                    .map(|_| alphabet[rng.index(alphabet.len())])
                    .collect(),
            );
        }
        v.sort();
        v.dedup();
        Boundaries::new(v).unwrap()
    }

    fn probes(rng: &mut TestRng, b: &Boundaries) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new(), vec![0], vec![0xFF; 9]];
        for i in 0..b.len() {
            let s = b.get(i).to_vec();
            out.push(s.clone());
            let mut t = s.clone();
            t.push(0);
            out.push(t);
            if let Some(x) = s.last() {
                let mut u = s.clone();
                *u.last_mut().unwrap() = x.wrapping_sub(1);
                out.push(u);
                out.push(s[..s.len() - 1].to_vec());
            }
        }
        for _ in 0..500 {
            let len = rng.index(7);
            out.push(
                (0..len)
                    .map(|_| [0u8, 1, b'a', b'b', b'c', 0xFE, 0xFF][rng.index(7)])
                    .collect(),
            );
        }
        out
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a big-data sweep (65 793 two-byte boundaries, 2000-key samples); hope has no unsafe code"
    )]
    fn lookup_structures_agree_with_binary_search() {
        let mut rng = TestRng::new(11);
        for round in 0..40 {
            let depth = 2 + round % 4;
            let b = random_boundaries(&mut rng, depth, 5 + round * 7);
            let entries: Vec<u64> = (0..b.len() as u64).collect();
            let trie = BitmapTrie::new(&b, depth, entries.clone());
            let radix = RadixDict::new(&b, entries);
            for p in probes(&mut rng, &b) {
                let want = b.floor(&p);
                assert_eq!(trie.index(&p), want, "trie {p:?}");
                assert_eq!(radix.index(&p), want, "radix {p:?}");
            }
        }
        for width in [1, 2] {
            let b = Boundaries::new(ArrayDict::boundaries(width)).unwrap();
            let a = ArrayDict::new(width, vec![0; b.len()]);
            let mut buf = [0u8; 2];
            for i in 0..b.len() {
                assert_eq!(a.boundary(i, &mut buf), b.get(i), "boundary {i}");
            }
            for p in probes(&mut rng, &b) {
                assert_eq!(a.index(&p), b.floor(&p), "array {width} {p:?}");
            }
        }
    }

    /// The packing and array helpers refuse arguments that would silently give wrong entries
    /// or boundaries (issue 16's overflow audit): each panics with a message, like slice
    /// indexing.
    #[test]
    fn entry_and_array_dict_refuse_out_of_range_arguments() {
        use std::panic::catch_unwind;
        assert!(catch_unwind(|| entry(1 << 48, 48, 0)).is_err());
        assert!(catch_unwind(|| entry(1, 0, 0)).is_err());
        assert!(catch_unwind(|| entry(1, u8::MAX, 0)).is_err());
        assert_eq!(entry(0b101, 3, 7), 0b101 << 16 | 7 << 8 | 3);
        assert!(catch_unwind(|| ArrayDict::new(3, vec![0; 257])).is_err());
        assert!(catch_unwind(|| ArrayDict::new(1, vec![0; 256])).is_err());
        let d = ArrayDict::new(1, vec![0; 257]);
        let mut buf = [0u8; 2];
        assert_eq!(d.boundary(256, &mut buf), &[255u8][..]);
        assert!(catch_unwind(|| d.boundary(257, &mut [0u8; 2]).to_vec()).is_err());
        assert!(catch_unwind(|| d.boundary(usize::MAX, &mut [0u8; 2]).to_vec()).is_err());
    }
}
