//! LOUDS-DS: the trie's upper levels in LOUDS-Dense, the rest in LOUDS-Sparse
//! (memory-efficient-search-trees.txt §3.2–3.4), and the per-level cursor ([`Path`]) that
//! seeks and iterates.
//!
//! ```text
//! LOUDS-Dense, per node n (positions n*256 + byte):
//!   d_labels[p]     the node has a branch for this byte          rank, 64-bit blocks
//!   d_has_child[p]  that branch leads to a node (else a leaf)    rank, 64-bit blocks
//!   d_is_prefix[n]  the path to n is itself a key                rank, 64-bit blocks
//! LOUDS-Sparse, per position p (a node: its chain bytes, then its labels):
//!   s_labels[p]     the byte (labels sorted within a node; a terminator first)
//!   s_has_child[p]  as above (never on a chain byte)             rank, 512-bit blocks
//!   s_louds[p]      p is the first position of its node          select, every 64th one
//!   s_chain[p]      p is a chain byte                            rank, 512-bit blocks
//! Derived on assembly (not in images), per 64-bit word w of s_has_child:
//!   s_child_starts[w]  start of the child of the first branch with a child at p ≥ 64 w
//! ```
//!
//! Nodes are numbered in level order over both parts (the root is 0); the child of the branch
//! at `p` is node `1 + (branches with a child before p)`, found with one rank, and a sparse
//! node's first position with one select. Below the dense levels a walk skips both: the child
//! of `p` starts as many LOUDS ones after `s_child_starts[p / 64]` as `p`'s word has branches
//! with a child before it. A walk reads that entry as it reaches a node, before searching the
//! labels, and prefetches the LOUDS bits it points at, so a sparse level costs one round of
//! cache misses (labels, child bits, LOUDS bits together) instead of a chain of them (labels,
//! then the rank directory, then the select sample and the LOUDS bits): on 4M `paths` keys,
//! 15 sparse levels a lookup, a `get` took a fifth less time, for 4 bytes per 64 labels.
//!
//! Leaves are numbered in the same level order: dense leaves first (a node's prefix key before
//! its labels), then sparse ones; leaf `i` owns value and suffix `i`. A sparse leaf's number
//! discounts the branches and the chain bytes before it.
//!
//! Path compression (see `compress`): a run of sparse nodes that each have one label, with a
//! child, is stored as a *chain* in front of the node it leads to: the run's labels, read with
//! one comparison instead of a rank, a select and a label search per byte. So a level is a
//! node depth, not a byte depth: a lookup keeps its depth in the key beside its level (on the
//! dense levels, which hold no chain, the two agree).
//!
//! Terminator rule (§3.3, made unambiguous): in LOUDS-Sparse a prefix key is a 0xFF label
//! without a child placed first among its node's labels (after its chain). A real 0xFF byte
//! sorts last, so it can be first only as the node's single label; hence a node's first label
//! is a terminator exactly when it
//! is 0xFF, has no child, and the node has another label (a node that holds a prefix key always
//! has a longer key below it). The empty key is never in the trie.
//!
//! Invariants, all checked on load by [`Trie::validate`] in one pass over the levels (so a
//! loaded image never gives a wrong answer, see `format`):
//!
//! 1. Sizes agree: 256 bits of `d_labels` and `d_has_child` per dense node, one bit of
//!    `s_has_child`, `s_louds` and `s_chain` per sparse position (or no `s_chain` at all: a
//!    trie without chains); dense height ≤ height; a trie of height 0 has no node.
//! 2. LOUDS shape: level 0 is one node; level `l + 1` has exactly as many nodes as level `l`
//!    has branches with a child; the dense levels use exactly the dense nodes; each sparse node
//!    starts at a one of `s_louds` where the previous one ended; the last level has no branch
//!    with a child and nothing follows it. So every rank-and-select child step lands on a node
//!    of the next level, the one the per-level cursors of [`Path`] step to.
//! 3. Every node has a label (a dense node may also hold its prefix key). A sparse node's
//!    chain bytes are its first positions, followed by at least one label; no other position
//!    is a chain byte, and no chain byte has a child.
//! 4. `d_has_child ⊆ d_labels`.
//! 5. The root holds no prefix key unless it has a chain (the chain is then that key): the
//!    empty key lives beside the trie.
//! 6. A sparse node's labels strictly increase after its optional terminator (dense bitmaps
//!    are ordered by construction). With 2 and 5, the leaves in leaf order spell strictly
//!    increasing keys, which lookups, seeks and iteration both ways agree on.
//! 7. A prefix key's leaf adds nothing to its key: no suffix byte, zero real bits (the loader
//!    checks the payloads of the leaves `validate` reports). Hash bits of a prefix key are
//!    never read: a lookup ending at one has matched the whole key.
//!
//! One file per operation over the shared [`Trie`] and [`Path`]:
//!
//! - `encode`: encoding finished (path-compressed) levels ([`Trie::from_levels`]) and
//!   assembling loaded parts;
//! - `audit`: [`Trie::validate`], the load-time check of the invariants above, and its
//!   [`Flaw`] / [`Part`];
//! - `nav`: the navigation primitives every query is made of (labels, children, leaf numbers);
//! - `search`: exact lookups, one at a time and interleaved in batches;
//! - `seek`: positioning a [`Path`] at a bound, one at a time and in batches;
//! - `cursor`: the [`Path`] itself and its moves to the first, last, next and previous leaf;
//! - `count`: ranks of keys (how many keys lie before a path), for approximate counts;
//! - `stats`: sizes of the parts.

mod audit;
mod count;
mod cursor;
mod encode;
mod nav;
mod search;
mod seek;
mod stats;

pub(crate) use self::audit::{Flaw, Part};
pub(crate) use self::cursor::Path;
pub(crate) use self::encode::choose_dense_height;
pub(crate) use self::seek::bound_key;
pub use self::stats::TrieStats;

use crate::substrate::rank::{RankBits, SelectBits};
use crate::substrate::{Frozen, FrozenBits};

/// The LOUDS-DS encoded trie (no leaf payloads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trie {
    pub(crate) dense_height: usize,
    pub(crate) height: usize,
    d_labels: RankBits<1>,
    d_has_child: RankBits<1>,
    d_is_prefix: RankBits<1>,
    dense_nodes: usize,
    dense_children: usize,
    dense_leaves: usize,
    /// Labels followed by at least [`LABEL_PAD`] bytes.
    ///
    /// [`LABEL_PAD`]: labels::LABEL_PAD
    s_labels: Frozen<u8>,
    s_len: usize,
    s_has_child: RankBits<8>,
    s_louds: SelectBits,
    /// Per word `w` of `s_has_child`: the start of the child of the first branch with a child
    /// at a position `≥ 64 w` (derived on assembly, not stored in images).
    s_child_starts: Vec<u32>,
    /// One at each chain byte: the labels of a folded single-child chain, in front of the
    /// labels of the node they lead to (see `compress`). Empty when the trie has no chain:
    /// then every chain length is 0 and every rank 0, with no test on the way.
    s_chain: RankBits<8>,
    /// `s_chain` is not empty: lookups in a trie without chains skip every chain test (one
    /// predictable branch a level instead of a bit scan, and no rank at the leaf).
    folded: bool,
    leaves: usize,
}

impl Trie {
    /// True when the labels and the LOUDS-Sparse bits lie in a loaded image (the loader
    /// borrows all sections of an aligned image or copies the word sections of all).
    pub(crate) fn is_borrowed(&self) -> bool {
        self.s_labels.is_borrowed() && self.s_louds.bits().is_borrowed()
    }

    /// Number of leaves (keys in the trie).
    pub(crate) fn leaves(&self) -> usize {
        self.leaves
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.height == 0
    }

    pub(crate) fn parts(&self) -> TrieParts<'_> {
        TrieParts {
            dense_height: self.dense_height,
            height: self.height,
            d_labels: self.d_labels.bits(),
            d_has_child: self.d_has_child.bits(),
            d_is_prefix: self.d_is_prefix.bits(),
            s_labels: &self.s_labels,
            s_len: self.s_len,
            s_has_child: self.s_has_child.bits(),
            s_louds: self.s_louds.bits(),
            s_chain: self.s_chain.bits(),
        }
    }
}

/// The encoded parts of a trie, for serialization.
pub(crate) struct TrieParts<'a> {
    pub(crate) dense_height: usize,
    pub(crate) height: usize,
    pub(crate) d_labels: &'a FrozenBits,
    pub(crate) d_has_child: &'a FrozenBits,
    pub(crate) d_is_prefix: &'a FrozenBits,
    /// Labels and their padding.
    pub(crate) s_labels: &'a [u8],
    pub(crate) s_len: usize,
    pub(crate) s_has_child: &'a FrozenBits,
    pub(crate) s_louds: &'a FrozenBits,
    pub(crate) s_chain: &'a FrozenBits,
}
