//! Checking every invariant a query relies on, in one pass over a tree's keys (layer 0): what a
//! loaded image must pass before it answers anything (see [`super::leaf`] for the numbered
//! invariants). The route to the leaves is rebuilt from audited keys, not loaded, so it needs
//! no check.
//!
//! The pass decodes every key once, so it costs about what a full scan does. Afterwards no
//! query can panic or read out of bounds, and every query agrees with every other: keys
//! iterate strictly increasing, and `get` and the seeks land where that order says.

use super::leaf::{LONG, Leaf, Split};
use super::{Layer, Tree};
use crate::substrate::bits::low_mask;
use crate::substrate::popcount::{Popcount, dispatch};

/// Which array a flaw was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Words,
    Tails,
    Values,
    LeafAt,
}

/// A broken invariant: what, and the index of the element of `part` where it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flaw {
    pub(crate) what: &'static str,
    pub(crate) part: Part,
    pub(crate) index: usize,
}

fn flaw(what: &'static str, part: Part, index: usize) -> Flaw {
    Flaw { what, part, index }
}

impl Tree {
    /// Checks the keys' layer and the values against the key count.
    pub(crate) fn audit(&self) -> Result<(), Flaw> {
        if self.values.len() != self.len() {
            return Err(flaw(
                "value count disagrees with the key count",
                Part::Values,
                0,
            ));
        }
        let keys = &self.keys;
        dispatch!(p => audit_layer(p, keys, self.shift))
    }
}

fn audit_layer<P: Popcount>(p: P, layer: &Layer, shift: u32) -> Result<(), Flaw> {
    let leaves = layer.len.div_ceil(1 << shift);
    let leaf_at = &layer.leaf_at[..];
    if leaf_at.len() != leaves + 1 || leaf_at.first() != Some(&0) {
        return Err(flaw(
            "leaf offsets disagree with the leaf count",
            Part::LeafAt,
            0,
        ));
    }
    if leaf_at[leaves] != layer.words.len() as u64 {
        return Err(flaw(
            "leaf offsets do not end with the words",
            Part::LeafAt,
            leaves,
        ));
    }
    let tails = &layer.tails[..];
    let mut tail_at = 0usize;
    let (mut key, mut previous, mut first) = (Vec::new(), Vec::new(), true);
    for j in 0..leaves {
        let (a, b) = (leaf_at[j], leaf_at[j + 1]);
        if a > b || b > layer.words.len() as u64 {
            return Err(flaw(
                "leaf offsets decrease or pass the words",
                Part::LeafAt,
                j + 1,
            ));
        }
        let (a, b) = (a as usize, b as usize);
        let n = layer.leaf_len(shift, j);
        let leaf = Leaf::new(&layer.words[a..b], n).ok_or(flaw(
            "leaf size disagrees with its header",
            Part::Words,
            a,
        ))?;
        check_high(p, &leaf, n).map_err(|(what, w)| flaw(what, Part::Words, a + 4 + w))?;
        if leaf.tail_at != tail_at {
            return Err(flaw("leaf tails are not contiguous", Part::Words, a + 1));
        }
        if let Some(&last) = leaf.prefix_words().last() {
            let used = leaf.skip - (leaf.skip - 1) / 8 * 8;
            if used < 8 && last >> (8 * used) != 0 {
                return Err(flaw("prefix padding not zero", Part::Words, a + 4));
            }
        }
        let mut prefix = Vec::with_capacity(leaf.skip);
        leaf.write_prefix(&mut prefix);
        let after = tail_at;
        let short_base = leaf.header.short_base as u64;
        let mut end = 0;
        for i in 0..n {
            let delta = leaf.delta(p, i).filter(|&d| i > 0 || d == 0).ok_or(flaw(
                "bad head delta",
                Part::Words,
                a,
            ))?;
            let head =
                leaf.base
                    .checked_add(delta)
                    .ok_or(flaw("head overflows", Part::Words, a))?;
            let e = leaf.end(i);
            if e < end || after.checked_add(e).is_none_or(|t| t > tails.len()) {
                return Err(flaw("tail ends out of order or bounds", Part::Words, a));
            }
            let short = leaf.short(i);
            let class = if e > end {
                if short != 0 {
                    return Err(flaw("long key with a short code", Part::Words, a));
                }
                LONG
            } else {
                if short_base + short > 8 {
                    return Err(flaw("short code above 8", Part::Words, a));
                }
                let class = (8 - short_base - short) as u32;
                if head & low_mask(64 - 8 * class) != 0 {
                    return Err(flaw("short key with bytes past its end", Part::Words, a));
                }
                class
            };
            let rest = Split {
                head,
                class,
                tail: &tails[after + end..after + e],
            };
            key.clear();
            key.extend_from_slice(&prefix);
            rest.write(&mut key);
            if !first && previous >= key {
                return Err(flaw("keys out of order", Part::Words, a));
            }
            first = false;
            core::mem::swap(&mut key, &mut previous);
            end = e;
        }
        tail_at = after + end;
    }
    if tail_at != tails.len() {
        return Err(flaw("tail bytes no key owns", Part::Tails, tail_at));
    }
    Ok(())
}

/// Invariant 2 for `leaf`: `n` ones among the `n + top + 1` bits of `high`, the last of them a
/// zero, zero padding. On failure, what broke and the word of `high` where.
fn check_high<P: Popcount>(p: P, leaf: &Leaf<'_>, n: usize) -> Result<(), (&'static str, usize)> {
    let bits = n + leaf.header.top + 1;
    let words = leaf.high_words();
    let ones: usize = words.iter().map(|&w| p.count(w) as usize).sum();
    if ones != n {
        return Err(("upper parts disagree with the key count", 0));
    }
    let last = words.len() - 1;
    let used = bits - last * 64;
    if used < 64 && words[last] >> used != 0 {
        return Err(("upper part bits past their end", last));
    }
    if words[last] >> (used - 1) & 1 != 0 {
        return Err(("upper parts do not end with a zero", last));
    }
    Ok(())
}
