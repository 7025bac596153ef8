//! The fast route to a leaf, for trees whose leaves' first keys differ in their first 8 bytes
//! (integer keys, and most random ones), or in their first 16 (most string keys: e-mail
//! addresses share 8 bytes of host across thousands of leaves, rarely 16): a static search
//! tree over those heads, as `u64` or `u128`.
//!
//! The Structural Reduction rule (memory-efficient-search-trees.txt §2.3) in its plainest
//! form: every node is full, each level is one array, and a child's position is computed
//! (`node * FANOUT + slot`), not stored. Level 0 is the leaves' first heads (`firsts`); level
//! `k + 1` keeps every `FANOUT`-th entry of level `k`, until a level fits in one node. A node is
//! `FANOUT` consecutive entries, 128 bytes, two cache lines, searched by counting, with no
//! decoding: cheaper per level than the general route (`super::Route::Layers`), which must
//! decode prefix-stripped leaves because heads alone cannot order keys that share 8 bytes.

/// Entries per inner node.
pub(crate) const FANOUT: usize = 16;

/// The levels above `firsts`, bottom first, of heads `H` (`u64` or `u128`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Index<H = u64> {
    levels: Vec<Box<[H]>>,
}

impl<H: Copy + Ord> Index<H> {
    /// The levels over `firsts`.
    pub(crate) fn build(firsts: &[H]) -> Index<H> {
        let mut levels: Vec<Box<[H]>> = Vec::new();
        loop {
            let below = levels.last().map_or(firsts, |l| &l[..]);
            if below.len() <= FANOUT {
                return Index { levels };
            }
            let level: Box<[H]> = below.iter().step_by(FANOUT).copied().collect();
            levels.push(level);
        }
    }

    /// Bytes of the levels.
    pub(crate) fn memory_usage(&self) -> usize {
        self.levels.iter().map(|l| size_of_val::<[H]>(l)).sum()
    }

    /// How many entries of `firsts` (non-decreasing, the array this index was built over) are
    /// at most `head`; calls `hint` with the first entry of the node of `firsts` it is about to
    /// read, so the caller can prefetch what it reads next for those leaves.
    #[inline]
    pub(crate) fn count(&self, firsts: &[H], head: H, hint: impl FnOnce(usize)) -> usize {
        let count_in = |node: &[H]| count_le(node, head);
        let mut node = 0;
        for level in self.levels.iter().rev() {
            let from = node * FANOUT;
            let c = count_in(
                level
                    .get(from..level.len().min(from + FANOUT))
                    .unwrap_or(&[]),
            );
            if c == 0 {
                // Only at the top: a lower node starts with its parent's entry, which counted.
                return 0;
            }
            node = from + c - 1;
        }
        let from = node * FANOUT;
        hint(from);
        from + count_in(
            firsts
                .get(from..firsts.len().min(from + FANOUT))
                .unwrap_or(&[]),
        )
    }
}

/// How many entries of the sorted `node` are at most `head`: a binary search whose steps
/// choose by a conditional move rather than a branch, which a random key would mispredict
/// half the time (callgrind, 1M rand-8 keys: 240 instructions a lookup for the four levels
/// counted entry by entry, about 60 this way).
#[inline]
fn count_le<H: Copy + Ord>(node: &[H], head: H) -> usize {
    let Some(&first) = node.first() else {
        return 0;
    };
    if first > head {
        return 0;
    }
    // Invariant: node[base] <= head, and every entry at or after base + len exceeds head.
    let mut base = 0;
    let mut len = node.len();
    while len > 1 {
        let half = len / 2;
        base = if node[base + half] <= head {
            base + half
        } else {
            base
        };
        len -= half;
    }
    base + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_counts_match_a_scan() {
        for len in 0..=17usize {
            let node: Vec<u64> = (0..len as u64).map(|i| i / 2 * 10).collect();
            for q in [0, 1, 9, 10, 11, 39, 40, 79, 80, 81, u64::MAX] {
                let want = node.iter().filter(|&&x| x <= q).count();
                assert_eq!(count_le(&node, q), want, "len {len} q {q}");
            }
        }
    }

    #[test]
    fn counts_match_a_scan_at_every_size() {
        for n in [0, 1, 2, 15, 16, 17, 255, 256, 257, 4097] {
            let firsts: Vec<u64> = (0..n as u64).map(|i| i * 10).collect();
            let index = Index::build(&firsts);
            for q in [0, 1, 5, 9, 10, 11, 100, 40_950, 40_960, u64::MAX] {
                let le = firsts.iter().filter(|&&x| x <= q).count();
                assert_eq!(index.count(&firsts, q, |_| {}), le, "n {n} q {q}");
            }
        }
    }
}
