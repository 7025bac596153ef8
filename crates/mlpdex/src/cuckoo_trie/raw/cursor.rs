//! In-order traversal with wide prefetching: the scan side of MLP.
//!
//! The paper iterates by following each leaf's next locator (§4.4), one dependent bucket read
//! per key. A regular node, though, names all its children at once: their hashes follow from
//! its hash and bitmap. The cursor walks the trie in order and, on entering a node, prefetches
//! the buckets of its next [`WINDOW`] children together, keeping the window full as it
//! advances, so a scan costs about one DRAM round trip per trie level it crosses rather than
//! one per key. (Measured on rand-8, 10M keys, YCSB-E: see the module docs of `cuckoo_trie`.)
//!
//! Every step returns `Err(Torn)` when, inside a read session of a shared table, its copies
//! show an impossible state (see `trie`); the concurrent map walks in validated batches.

use core::cmp::Ordering;

use super::table::{Ent, JUMP, LEAF, Loc, REGULAR, Torn};
use super::trie::{End, LeafRef, RawTrie};
use crate::substrate::prefetch::prefetch_read;

/// Children prefetched ahead of the cursor in each node.
const WINDOW: u32 = 8;
/// Distance of the second-stage peek (bucket already fetched; prefetch what it points to).
const PEEK: u32 = 4;

/// A regular node whose later children are still to visit.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// `mul_a` of the node's hash: a child's hash is one addition away.
    ha: u64,
    color: u8,
    /// Child symbols not visited yet.
    rem: u64,
    /// The last [`PEEK`] children read ahead (symbol, hash, entry), so taking them later needs
    /// no second hash and probe; `u32::MAX` marks an empty slot.
    peeked: [(u32, u64, Ent); PEEK as usize],
    /// Next slot of `peeked` to overwrite.
    slot: usize,
}

impl Frame {
    fn new(ha: u64, color: u8, rem: u64) -> Frame {
        Frame {
            ha,
            color,
            rem,
            peeked: [(u32::MAX, 0, Ent::EMPTY); PEEK as usize],
            slot: 0,
        }
    }
}

/// A position in the in-order walk (or, when `rev`, the walk in descending key order): the
/// regular nodes on the path with children left.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    stack: Vec<Frame>,
    rev: bool,
}

/// The first child symbol of `rem` in walk order.
#[inline(always)]
fn first(rem: u64, rev: bool) -> u32 {
    if rev {
        63 - rem.leading_zeros()
    } else {
        rem.trailing_zeros()
    }
}

/// `rem` without its first child in walk order.
#[inline(always)]
fn rest(rem: u64, rev: bool) -> u64 {
    rem & !(1u64 << first(rem, rev))
}

impl RawTrie {
    /// Prefetches the buckets of the first `WINDOW` children in `rem` of the node whose hash
    /// times `a` is `ha`.
    #[inline]
    fn prefetch_children(&self, ha: u64, mut rem: u64, rev: bool) {
        for _ in 0..WINDOW {
            if rem == 0 {
                break;
            }
            self.table
                .prefetch(self.table.hasher.child(ha, first(rem, rev)));
            rem = rest(rem, rev);
        }
    }

    /// Pushes a regular node's frame.
    #[inline]
    fn enter(&self, cur: &mut Cursor, h: u64, e: Ent, rem: u64, prefetch: bool) {
        if rem != 0 {
            let ha = self.table.hasher.mul_a(h);
            if prefetch {
                self.prefetch_children(ha, rem, cur.rev);
            }
            cur.stack.push(Frame::new(ha, e.color(), rem));
        }
    }

    /// The hash of the node below jump node `e`, whose hash is `h`.
    #[inline(always)]
    fn after_jump(&self, mut h: u64, e: Ent) -> u64 {
        for k in 0..e.jump_len() {
            h = self.table.hasher.step(h, e.jump_sym(k));
        }
        h
    }

    /// Follows a jump chain from `(h, e)` to the regular node below it.
    fn below_jumps(&self, mut h: u64, mut e: Ent) -> Result<(u64, Ent), Torn> {
        while e.kind() == JUMP {
            h = self.after_jump(h, e);
            e = self.table.fetch(Loc {
                h: h as u32,
                color: e.jump_child(),
            })?;
        }
        if e.kind() != REGULAR {
            // A jump node's child is a regular or jump node in every committed state.
            return Err(Torn);
        }
        Ok((h, e))
    }

    /// The next leaf of the walk (the previous key, for a reverse cursor).
    pub(crate) fn cursor_next(&self, cur: &mut Cursor) -> Result<Option<LeafRef>, Torn> {
        let rev = cur.rev;
        loop {
            let Some(f) = cur.stack.last_mut() else {
                return Ok(None);
            };
            if f.rem == 0 {
                cur.stack.pop();
                continue;
            }
            let c = first(f.rem, rev);
            f.rem = rest(f.rem, rev);
            let (pha, pcolor) = (f.ha, f.color);
            // Keep the window full: prefetch the child WINDOW − 1 places ahead. Second stage:
            // the child PEEK places ahead was prefetched a while ago; read it and prefetch
            // what it leads to (its record, or its first children), so entering the next
            // node or yielding the next leaf does not wait a full round trip.
            let mut ahead = f.rem;
            let mut peek = 0;
            for k in 1..WINDOW {
                if ahead == 0 {
                    break;
                }
                if k == PEEK {
                    peek = ahead;
                }
                ahead = rest(ahead, rev);
            }
            if ahead != 0 {
                self.table
                    .prefetch(self.table.hasher.child(pha, first(ahead, rev)));
            }
            if peek != 0 {
                let ps = first(peek, rev);
                let hp = self.table.hasher.child(pha, ps);
                if let Some((_, e)) = self.table.find_by_parent(hp, ps, pcolor) {
                    match e.kind() {
                        LEAF => prefetch_read(e.rec()),
                        REGULAR => {
                            self.prefetch_children(self.table.hasher.mul_a(hp), e.bitmap(), rev)
                        }
                        // The node below the jump: on keys with long shared prefixes most
                        // children are jump nodes (`paths`: 0.57 a leaf), and `below_jumps`
                        // would otherwise wait for that bucket.
                        _ => self.table.prefetch(self.after_jump(hp, e)),
                    }
                    f.peeked[f.slot] = (ps, hp, e);
                    f.slot = (f.slot + 1) % PEEK as usize;
                }
            }
            let (h, e) = match f.peeked.iter().find(|p| p.0 == c) {
                Some(&(_, h, e)) => (h, e),
                None => {
                    let h = self.table.hasher.child(pha, c);
                    (h, self.table.child(h, c, pcolor)?)
                }
            };
            if e.kind() == LEAF {
                return Ok(Some((
                    Loc {
                        h: h as u32,
                        color: e.color(),
                    },
                    e,
                )));
            }
            let (rh, r) = self.below_jumps(h, e)?;
            self.enter(cur, rh, r, r.bitmap(), true);
        }
    }

    /// A cursor after the first leaf `>= key` (`> key` when `strict`), and that leaf; when
    /// `rev`, a reverse cursor after the last leaf `<= key` (`< key`).
    pub(crate) fn cursor_seek(
        &self,
        key: &[u8],
        strict: bool,
        rev: bool,
    ) -> Result<(Cursor, Option<LeafRef>), Torn> {
        // The children that come after symbol `c` in walk order.
        let after = |bitmap: u64, c: u32| {
            if rev {
                bitmap & ((1u64 << c) - 1)
            } else {
                bitmap & !((2u64 << c) - 1)
            }
        };
        // One allocation: a path holds at most a node per symbol and the root, and rarely
        // more than 64 nodes even on long keys (`paths` averages 40).
        let mut path = Vec::with_capacity(self.syms.count(key.len()).min(63) + 1);
        let (end, _) = self.descend::<false>(key, Some(&mut path))?;
        let mut cur = Cursor {
            stack: Vec::with_capacity(path.len() + 4),
            rev,
        };
        let last = path.len() - 1;
        for (i, p) in path[..last].iter().enumerate() {
            if p.ent.kind() == JUMP {
                continue;
            }
            let rem = after(p.ent.bitmap(), self.syms.at(key, p.depth));
            // Only the deepest frames are needed soon; prefetch for the last two levels.
            self.enter(&mut cur, p.loc.h.into(), p.ent, rem, i + 2 >= last);
        }
        let p = path[last];
        match end {
            End::Leaf { loc, ent } => {
                // SAFETY: a leaf of this trie, read under `&self` (and, in a read session,
                // from one consistent bucket copy whose record reclamation keeps alive).
                let ord = unsafe { self.key_of(ent) }.cmp(key);
                // Where the leaf lies relative to the key, in walk order.
                let ord = if rev { ord.reverse() } else { ord };
                if ord == Ordering::Greater || (ord == Ordering::Equal && !strict) {
                    return Ok((cur, Some((loc, ent))));
                }
            }
            End::NoChild { sym } => {
                let rem = after(p.ent.bitmap(), sym);
                self.enter(&mut cur, p.loc.h.into(), p.ent, rem, true);
            }
            End::JumpMismatch { at } => {
                // The symbols differ here; if the jump's comes later in walk order, so does
                // everything below the jump node.
                if (self.syms.at(key, p.depth + at) < p.ent.jump_sym(at)) != rev {
                    let (rh, r) = self.below_jumps(p.loc.h.into(), p.ent)?;
                    self.enter(&mut cur, rh, r, r.bitmap(), true);
                }
            }
        }
        let first = self.cursor_next(&mut cur)?;
        Ok((cur, first))
    }

    /// A cursor at the first leaf (the last, when `rev`), and that leaf.
    pub(crate) fn cursor_first(&self, rev: bool) -> Result<(Cursor, Option<LeafRef>), Torn> {
        let mut cur = Cursor {
            stack: Vec::new(),
            rev,
        };
        let root = self.root_entry()?;
        self.enter(&mut cur, 0, root, root.bitmap(), true);
        let first = self.cursor_next(&mut cur)?;
        Ok((cur, first))
    }
}
