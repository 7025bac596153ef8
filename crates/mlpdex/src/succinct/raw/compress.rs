//! Path compression: single-child chains of LOUDS-Sparse stored once as byte strings.
//!
//! The builder ([`super::build`]) lays the trie out one level per key byte, so a prefix that
//! many keys share (`/usr/share/doc/`, a tenant id) costs one node per byte: a rank, a select
//! and a label read each, all dependent. This pass rewrites the levels so that every run of
//! sparse nodes with a single label that has a child (a node no key ends in and no lookup
//! chooses between branches at) is folded into the node below it as a *chain*: the run's
//! labels, stored in front of that node's labels. A lookup compares the chain with one
//! `memcmp` where it used to take a level per byte.
//!
//! Levels are then node depths, not byte depths: a node's level is the number of nodes above
//! it. The nodes of each level come out in key order (a depth-first walk in key order meets the
//! nodes of any one depth in key order), so the result is again a LOUDS level order, and
//! leaves, numbered level by level, carry their payloads along. Dense levels (the top
//! `dense_height`) are kept as they are: LOUDS-Dense has no room for a chain.
//!
//! A chain byte is a position of the sparse sequence like a label, marked in the level's
//! `chain` bits, with no child and only the first of a node's positions opening the node: so
//! child numbers (ranks of `has_child`) and node starts (selects of `louds`) are unchanged in
//! meaning, and a leaf's number discounts the chain bytes before it.
//!
//! The pass runs only where it pays ([`worth_folding`]); a trie it leaves alone keeps no chain
//! bits at all.

use super::build::{Level, push_ends};
use crate::substrate::rank::next_one;

/// Where the walk stands on one level of the uncompressed trie: the next node it will meet
/// there and that node's first leaf payload. The walk meets each level's nodes in order.
#[derive(Clone, Copy, Default)]
struct Cursor {
    node: usize,
    leaf: usize,
    /// Byte and end-marker bit of that leaf's full suffix record.
    record: usize,
    end_bit: usize,
}

/// End of the node starting at `start` on level `lv`.
fn node_end(lv: &Level, start: usize) -> usize {
    next_one(lv.louds.words(), start + 1).unwrap_or(lv.labels.len())
}

/// Whether the node starting at `start` on `lv` has one label and that label has a child.
fn is_link(lv: &Level, start: usize) -> bool {
    node_end(lv, start) == start + 1 && lv.has_child.get(start) == Some(true)
}

/// Whether folding the chains of the sparse levels (`≥ dense_height`) pays: when at least one
/// sparse label in 64 is a link of a chain. Folding costs every sparse position a bit (the
/// chain bits and their rank directory, about 1.2 bits against a label's 10) and every
/// lookup a rank, and saves a level of lookup per link on its path; where links are rarer
/// (random short keys: about one label in a thousand on `rand-8`), the trie stays as built
/// and keeps no chain bits.
pub(crate) fn worth_folding(levels: &[Level], dense_height: usize) -> bool {
    let (mut links, mut labels) = (0usize, 0usize);
    for lv in levels.iter().skip(dense_height) {
        labels += lv.labels.len();
        let mut s = 0;
        while s < lv.labels.len() {
            links += is_link(lv, s) as usize;
            s = node_end(lv, s);
        }
    }
    links > 0 && links * 64 >= labels
}

/// Folds every chain of single-child sparse nodes into the node below it (see the module
/// docs), moving the leaf payloads to their new leaf numbers. Levels `0..dense_height` keep
/// their nodes.
pub(crate) fn compress(levels: Vec<Level>, dense_height: usize) -> Vec<Level> {
    if levels.is_empty() {
        return levels;
    }
    let mut at = vec![Cursor::default(); levels.len()];
    let mut out: Vec<Level> = Vec::new();
    let mut chain = Vec::new();
    // Per open node: its level, the next of its positions to look at for a child, its end,
    // and its output level.
    let mut stack: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut descend = |from: usize, out_level: usize, out: &mut Vec<Level>, at: &mut [Cursor]| {
        // Skip the links below `from`, collecting their labels.
        chain.clear();
        let mut l = from;
        while l >= dense_height && l + 1 < levels.len() && is_link(&levels[l], at[l].node) {
            chain.push(levels[l].labels[at[l].node]);
            at[l].node += 1;
            l += 1;
        }
        if out.len() <= out_level {
            out.resize_with(out_level + 1, Level::default);
        }
        let (start, end) = emit(&levels[l], &mut at[l], &chain, &mut out[out_level]);
        (l, start, end)
    };
    let (l, s, e) = descend(0, 0, &mut out, &mut at);
    stack.push((l, s, e, 0));
    while let Some(top) = stack.last_mut() {
        let (l, from, end, out_level) = *top;
        let lv = &levels[l];
        match (from..end).find(|&p| lv.has_child.get(p) == Some(true)) {
            None => {
                stack.pop();
            }
            Some(p) => {
                top.1 = p + 1;
                let (cl, s, e) = descend(l + 1, out_level + 1, &mut out, &mut at);
                stack.push((cl, s, e, out_level + 1));
            }
        }
    }
    debug_assert!(
        levels
            .iter()
            .zip(&at)
            .all(|(lv, c)| c.node == lv.labels.len() && c.leaf == leaves_of(lv)),
        "compression left nodes or leaves behind"
    );
    out
}

/// Number of leaf payloads a level holds.
fn leaves_of(lv: &Level) -> usize {
    lv.values
        .len()
        .max(lv.fixed.len())
        .max(lv.suffix_ends.count_ones())
}

/// Appends the node at `at.node` of `lv` to `out` behind `chain`, with its leaves' payloads;
/// returns the node's extent in `lv` and moves `at` past it.
fn emit(lv: &Level, at: &mut Cursor, chain: &[u8], out: &mut Level) -> (usize, usize) {
    let start = at.node;
    let end = node_end(lv, start);
    at.node = end;
    for (i, &b) in chain.iter().enumerate() {
        out.labels.push(b);
        out.has_child.push(false);
        out.louds.push(i == 0);
        out.chain.push(true);
    }
    for p in start..end {
        let child = lv.has_child.get(p) == Some(true);
        out.labels.push(lv.labels[p]);
        out.has_child.push(child);
        out.louds.push(p == start && chain.is_empty());
        out.chain.push(false);
        if child {
            continue;
        }
        // One payload per leaf, whichever kind the levels carry.
        if let Some(&v) = lv.values.get(at.leaf) {
            out.values.push(v);
        }
        if let Some(&f) = lv.fixed.get(at.leaf) {
            out.fixed.push(f);
        }
        if at.end_bit < lv.suffix_ends.len() {
            let stop = next_one(lv.suffix_ends.words(), at.end_bit).unwrap_or(at.end_bit);
            let len = stop - at.end_bit;
            out.suffix_bytes
                .extend_from_slice(&lv.suffix_bytes[at.record..at.record + 8 + len]);
            push_ends(&mut out.suffix_ends, len);
            at.record += 8 + len;
            at.end_bit = stop + 1;
        }
        at.leaf += 1;
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::succinct::raw::build::LevelBuilder;
    use crate::succinct::raw::suffix::SuffixKind;

    fn levels_of(keys: &[&[u8]]) -> Vec<Level> {
        let mut b = LevelBuilder::new(SuffixKind::Full);
        for (i, k) in keys.iter().enumerate() {
            b.push(k, i as u64).unwrap();
        }
        b.finish_levels();
        core::mem::take(&mut b.levels)
    }

    #[test]
    fn chains_fold_into_the_node_below() {
        // "abcd1", "abcd2", "abx": root {a} → {b} → {c, x} → {d} → {1, 2}.
        let levels = levels_of(&[b"abcd1", b"abcd2", b"abx"]);
        assert_eq!(levels.len(), 5);
        assert!(worth_folding(&levels, 0));
        let out = compress(levels, 0);
        // Root: chain "ab", labels {c, x}; then chain "d", labels {1, 2}.
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].labels, b"abcx");
        assert_eq!(out[0].chain.iter_ones().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(out[0].louds.iter_ones().collect::<Vec<_>>(), [0]);
        assert_eq!(out[0].has_child.iter_ones().collect::<Vec<_>>(), [2]);
        assert_eq!(out[1].labels, b"d12");
        assert_eq!(out[1].chain.iter_ones().collect::<Vec<_>>(), [0]);
        // Leaves in the new level order: "abx" (level 0), then "abcd1", "abcd2".
        let values: Vec<u64> = [&out[0], &out[1]]
            .iter()
            .flat_map(|lv| lv.suffix_bytes.chunks(8).map(|c| c[0] as u64))
            .collect();
        assert_eq!(values, [2, 0, 1]);
    }

    #[test]
    fn dense_levels_keep_their_links() {
        let levels = levels_of(&[b"abcd1", b"abcd2", b"abx"]);
        let out = compress(levels, 2);
        // Levels 0 and 1 stay; the chain of "d" still folds below the sparse {c, x}.
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].labels, b"a");
        assert_eq!(out[1].labels, b"b");
        assert_eq!(out[2].labels, b"cx");
        assert_eq!(out[3].labels, b"d12");
        assert!(worth_folding(&levels_of(&[b"ab", b"ac"]), 0));
        assert!(!worth_folding(&levels_of(&[b"ab", b"ac"]), 1));
        assert!(!worth_folding(&levels_of(&[b"ab", b"b"]), 0));
        // One link among 64 labels pays; among 65 it does not.
        let many = |n: u8| -> Vec<Vec<u8>> {
            let mut keys: Vec<Vec<u8>> = (0..n).map(|i| vec![i, 0]).collect();
            keys[0] = vec![0, 1, 2];
            keys.push(vec![0, 1, 3]);
            keys.sort();
            keys
        };
        let refs = |v: &[Vec<u8>]| -> Vec<Level> {
            levels_of(&v.iter().map(Vec::as_slice).collect::<Vec<_>>())
        };
        assert!(worth_folding(&refs(&many(61)), 0));
        assert!(!worth_folding(&refs(&many(62)), 0));
    }
}
