//! Building a compact ART in one pass over sorted keys.
//!
//! The nodes of a path-compressed trie over sorted keys sit at the depths of the longest
//! common prefixes (LCPs) of neighbouring keys. The builder keeps the open nodes of the
//! rightmost path as a stack of frames, deepest on top, each at the depth of the byte that
//! tells its children apart. A key is placed when its successor arrives, because only then is
//! its parent known: the deeper of its LCPs with its two neighbours. Frames deeper than the
//! new LCP are complete: each is written (its out-of-line leaves, then the node), and becomes
//! a child of the frame below it, or of a new frame at the LCP's depth.
//!
//! Nodes are thus written in post-order, every node after all of its subtree; the audit
//! checks a loaded image against exactly that order. Memory beyond the arena is one frame
//! per open node, each holding its children's refs and its not yet written leaves.

use super::{
    Kind, LINEAR_MAX, LONG_PREFIX, MAX_KEY_LEN, MAX_W, MAX_WORDS, REF_TAG, REF_W, Ref, Tree,
    labels_bytes,
};
use crate::Error;
use crate::substrate::Frozen;

/// A child of an open node.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kid {
    Node(Ref),
    /// A leaf whose suffix is `suffixes[start..start + len]` of its frame.
    Leaf {
        value: u64,
        start: usize,
        len: usize,
    },
}

/// An open node.
#[derive(Debug, Default)]
pub(super) struct Frame {
    /// Depth of the byte that tells the children apart.
    pub(super) depth: usize,
    pub(super) value: Option<u64>,
    pub(super) labels: Vec<u8>,
    pub(super) kids: Vec<Kid>,
    pub(super) suffixes: Vec<u8>,
}

/// Builds a tree from keys in strictly increasing order.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    arena: Vec<u8>,
    stack: Vec<Frame>,
    /// Frames to reuse (their buffers keep their capacity).
    spare: Vec<Frame>,
    /// The last key pushed, not yet placed, and its value.
    prev: Vec<u8>,
    prev_value: u64,
    len: usize,
}

/// Bytes an out-of-line leaf with a suffix of `len` bytes takes.
pub(super) fn leaf_size(len: usize) -> usize {
    8 + len.next_multiple_of(8)
}

/// Whether a leaf with a suffix of `len` bytes fits in a record of `w` bytes.
fn fits(len: usize, w: usize) -> bool {
    w > REF_W && len + 9 <= w
}

impl Builder {
    /// Keys pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `key`; a failed call changes nothing.
    pub(crate) fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: MAX_KEY_LEN,
            });
        }
        if self.len > 0 {
            match key.cmp(&self.prev) {
                core::cmp::Ordering::Less => {
                    return Err(Error::OutOfOrder {
                        previous: self.prev.clone(),
                        got: key.to_vec(),
                    });
                }
                core::cmp::Ordering::Equal => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                core::cmp::Ordering::Greater => {}
            }
            let lcp = self
                .prev
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
            self.place(Some(lcp))?;
        }
        self.prev.clear();
        self.prev.extend_from_slice(key);
        self.prev_value = value;
        self.len += 1;
        Ok(())
    }

    /// Finishes the tree.
    pub(crate) fn finish(self) -> Result<Tree, Error> {
        let (arena, root, len) = self.finish_into()?;
        Ok(match len {
            0 => Tree::empty(),
            _ => Tree {
                arena: Frozen::from(arena),
                root,
                len,
            },
        })
    }

    /// A builder that writes after what `arena` already holds (a merge builds subtrees of
    /// the new tree this way).
    pub(super) fn with_arena(arena: Vec<u8>) -> Builder {
        Builder {
            arena,
            ..Builder::default()
        }
    }

    /// Finishes, returning the arena, the root (meaningless with no keys) and the key count.
    pub(super) fn finish_into(mut self) -> Result<(Vec<u8>, Ref, usize), Error> {
        if self.len == 0 {
            return Ok((self.arena, Ref(0), 0));
        }
        let root = self.place(None)?;
        debug_assert!(self.stack.is_empty());
        Ok((self.arena, root, self.len))
    }

    /// Places the pending key, whose LCP with the next key is `lcp` (`None`: no next key),
    /// and writes every frame that cannot receive more children. With no next key, writes
    /// them all and returns the root.
    fn place(&mut self, lcp: Option<usize>) -> Result<Ref, Error> {
        let top = self.stack.last().map(|f| f.depth);
        if let Some(l) = lcp
            && top.is_none_or(|t| l > t)
        {
            // The pending key and the next share more than the pending key and its
            // predecessor: they open a node at `l`.
            self.open(l);
            self.attach_prev();
            return Ok(Ref(0));
        }
        if top.is_none() {
            // A single key: the root is its leaf.
            let len = self.prev.len();
            let at = self.arena.len() / 8;
            check_room(&self.arena, leaf_size(len))?;
            emit_leaf(&mut self.arena, self.prev_value, &self.prev);
            return Ok(Ref::leaf(at, len));
        }
        self.attach_prev();
        let mut root = Ref(0);
        while let Some(frame) = self.stack.pop() {
            if lcp.is_some_and(|l| frame.depth <= l) {
                self.stack.push(frame);
                break;
            }
            let below = self.stack.last().map(|f| f.depth);
            let new_parent = match lcp {
                Some(l) => below.is_none_or(|b| b < l).then_some(l),
                None => None,
            };
            let parent_depth = new_parent.or(below);
            let r = self.write_node(frame, parent_depth)?;
            if let Some(l) = new_parent {
                self.open(l);
            }
            match self.stack.last_mut() {
                Some(parent) => {
                    parent.labels.push(self.prev[parent.depth]);
                    parent.kids.push(Kid::Node(r));
                }
                None => root = r,
            }
        }
        Ok(root)
    }

    /// Pushes an empty frame at `depth`.
    fn open(&mut self, depth: usize) {
        let mut f = self.spare.pop().unwrap_or_default();
        f.depth = depth;
        f.value = None;
        f.labels.clear();
        f.kids.clear();
        f.suffixes.clear();
        self.stack.push(f);
    }

    /// Makes the pending key a child (or the value) of the top frame.
    fn attach_prev(&mut self) {
        let f = self.stack.last_mut().expect("a frame is open");
        let d = f.depth;
        if self.prev.len() == d {
            debug_assert!(f.value.is_none());
            f.value = Some(self.prev_value);
        } else {
            let suffix = &self.prev[d + 1..];
            f.labels.push(self.prev[d]);
            f.kids.push(Kid::Leaf {
                value: self.prev_value,
                start: f.suffixes.len(),
                len: suffix.len(),
            });
            f.suffixes.extend_from_slice(suffix);
        }
    }

    /// Writes `frame`'s out-of-line leaves and then the node; its prefix is the pending
    /// key's bytes between the parent's byte (at `parent_depth`) and the frame's depth.
    fn write_node(&mut self, frame: Frame, parent_depth: Option<usize>) -> Result<Ref, Error> {
        let ps = parent_depth.map_or(0, |p| p + 1);
        let r = emit_node(&mut self.arena, &frame, &self.prev[ps..frame.depth])?;
        self.spare.push(frame);
        Ok(r)
    }
}

/// Writes `frame`'s out-of-line leaves and then the node with `prefix`.
pub(super) fn emit_node(arena: &mut Vec<u8>, frame: &Frame, prefix: &[u8]) -> Result<Ref, Error> {
    let n = frame.kids.len();
    debug_assert!(n >= 1 && frame.labels.windows(2).all(|p| p[0] < p[1]));
    let kind = match n {
        256 => Kind::Full,
        _ if n <= LINEAR_MAX => Kind::Linear,
        _ => Kind::Bitmap,
    };
    // The record width that makes node and out-of-line leaves smallest; a tie goes to the
    // wider records, which keep more leaves one miss closer. `outside[m]`: bytes of the
    // leaves that need records of at least `m` bytes to be inline (MAX_W + 1: none fits).
    let mut outside = [0usize; MAX_W + 2];
    // Bit `m - REF_W` set: some leaf needs records of exactly `m <= MAX_W` bytes.
    let mut needs = 0u64;
    for kid in &frame.kids {
        if let Kid::Leaf { len, .. } = *kid {
            let m = (len + 9).min(MAX_W + 1);
            outside[m] += leaf_size(len);
            if m <= MAX_W {
                needs |= 1 << (m - REF_W);
            }
        }
    }
    let labels_bytes = labels_bytes(kind, n);
    let (total, w) = best_width(n, labels_bytes % 8, &outside, needs);
    let records_bytes = (labels_bytes + n * w).next_multiple_of(8) - labels_bytes;
    let plen = prefix.len();
    let value_bytes = 8 * frame.value.is_some() as usize;
    let long = 8 * (plen >= LONG_PREFIX) as usize;
    let node_bytes = value_bytes + labels_bytes + records_bytes + long + plen.next_multiple_of(8);
    check_room(arena, total - records_bytes + node_bytes)?;

    // Out-of-line leaves first, in child order.
    let leaves_at = arena.len();
    for kid in &frame.kids {
        if let Kid::Leaf { value, start, len } = *kid
            && !fits(len, w)
        {
            emit_leaf(arena, value, &frame.suffixes[start..start + len]);
        }
    }

    let at = arena.len();
    arena.resize(at + node_bytes, 0);
    let node = &mut arena[at..];
    if let Some(v) = frame.value {
        node[..8].copy_from_slice(&v.to_le_bytes());
    }
    let labels = &mut node[value_bytes..value_bytes + labels_bytes];
    match kind {
        Kind::Bitmap => {
            let mut bits = [0u64; 4];
            for &l in &frame.labels {
                bits[l as usize / 64] |= 1 << (l % 64);
            }
            for (chunk, b) in labels.chunks_exact_mut(8).zip(bits) {
                chunk.copy_from_slice(&b.to_le_bytes());
            }
        }
        Kind::Linear => labels[..n].copy_from_slice(&frame.labels),
        _ => {}
    }
    let records = value_bytes + labels_bytes;
    let mut leaf_at = leaves_at;
    for (i, kid) in frame.kids.iter().enumerate() {
        let rec = &mut node[records + i * w..records + (i + 1) * w];
        let r = match *kid {
            Kid::Leaf { value, start, len } if fits(len, w) => {
                rec[..8].copy_from_slice(&value.to_le_bytes());
                rec[8] = len as u8;
                rec[9..9 + len].copy_from_slice(&frame.suffixes[start..start + len]);
                continue;
            }
            Kid::Leaf { len, .. } => {
                let r = Ref::leaf(leaf_at / 8, len);
                leaf_at += leaf_size(len);
                r
            }
            Kid::Node(r) => r,
        };
        rec[..8].copy_from_slice(&r.0.to_le_bytes());
        if w > REF_W {
            rec[8] = REF_TAG;
        }
    }
    debug_assert_eq!(leaf_at, at);
    let p = records + records_bytes;
    if long > 0 {
        node[p..p + 8].copy_from_slice(&(plen as u64).to_le_bytes());
    }
    node[p + long..p + long + plen].copy_from_slice(prefix);
    Ok(Ref::node(kind, at / 8, n, w, frame.value.is_some(), plen))
}

/// The record width in `REF_W..=MAX_W` for `n` records that makes node records plus
/// out-of-line leaves smallest, widest on a tie, and that size: `outside[m]` holds the bytes of
/// the leaves needing records of `m` bytes to be inline, `needs` a bit for each such `m` up to
/// `MAX_W`, `head` the bytes (mod 8) before the records in their word-padded run (a Linear
/// node's labels). The size is `rec(w) + out(w)`, `rec(w) = ceil8(head + n * w) - head` and
/// `out(w)` the bytes of the leaves needing more than `w`: `out` is constant between
/// consecutive needed widths, where the size grows with `w`, so each such interval `[lo, hi]`
/// has its least size at `lo`, reached by every width up to `rec(lo) / n`; intervals are
/// visited widest first, as a scan from `MAX_W` down keeping strict improvements would.
fn best_width(n: usize, head: usize, outside: &[usize; MAX_W + 2], needs: u64) -> (usize, usize) {
    let mut best = (usize::MAX, REF_W);
    let mut out = outside[MAX_W + 1];
    let mut hi = MAX_W;
    loop {
        // The needed widths up to `hi`; the interval starts at the largest (REF_W if none).
        let below = needs & (u64::MAX >> (63 - (hi - REF_W)));
        let lo = match below {
            0 => REF_W,
            b => REF_W + 63 - b.leading_zeros() as usize,
        };
        let size = (head + n * lo).next_multiple_of(8) - head + out;
        if size < best.0 {
            best = (size, hi.min(size.saturating_sub(out) / n).max(lo));
        }
        if lo == REF_W {
            return best;
        }
        out += outside[lo];
        hi = lo - 1;
    }
}

fn check_room(arena: &[u8], bytes: usize) -> Result<(), Error> {
    if (arena.len() + bytes) / 8 > MAX_WORDS {
        return Err(Error::Capacity {
            what: "compact ART arena exceeds 2^36 words",
        });
    }
    Ok(())
}

/// Writes an out-of-line leaf.
pub(super) fn emit_leaf(arena: &mut Vec<u8>, value: u64, suffix: &[u8]) {
    arena.extend_from_slice(&value.to_le_bytes());
    arena.extend_from_slice(suffix);
    pad(arena);
}

pub(super) fn pad(arena: &mut Vec<u8>) {
    arena.resize(arena.len().next_multiple_of(8), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan `best_width` stands for: every width from `MAX_W` down, strict improvements.
    fn scan(n: usize, head: usize, outside: &[usize; MAX_W + 2]) -> (usize, usize) {
        let mut best = (usize::MAX, REF_W);
        let mut out = 0;
        for w in (REF_W..=MAX_W).rev() {
            out += outside[w + 1];
            let size = (head + n * w).next_multiple_of(8) - head + out;
            if size < best.0 {
                best = (size, w);
            }
        }
        best
    }

    #[test]
    fn best_width_agrees_with_the_scan_of_every_width() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..if cfg!(miri) { 200 } else { 20_000 } {
            let n = 1 + next(256) as usize;
            let head = next(8) as usize;
            let mut outside = [0usize; MAX_W + 2];
            let mut needs = 0u64;
            for _ in 0..next(n as u64 + 1) {
                let len = match next(4) {
                    0 => next(8),
                    1 => next(64),
                    _ => next(200),
                } as usize;
                let m = (len + 9).min(MAX_W + 1);
                outside[m] += leaf_size(len);
                if m <= MAX_W {
                    needs |= 1 << (m - REF_W);
                }
            }
            assert_eq!(
                best_width(n, head, &outside, needs),
                scan(n, head, &outside),
                "n {n} head {head}"
            );
        }
    }
}
