//! The merge: a new SuRF from the entries of the old one and the dynamic stage's keys, with no
//! original key at hand.
//!
//! # Terms
//!
//! An *entry* is a leaf of the static stage's SuRF: its path `p` (the unique prefix the builder
//! cut), whether it is a *prefix key* (a terminator: it stands for the key `p` exactly, a
//! proper prefix of the next entry's path), and its suffix bits, unless it is *degraded*
//! (see below). An entry *admits* a key `x` when
//!
//! - it is a prefix key and `x == p`; or
//! - `p` is a prefix of `x` and the entry is degraded, or is SuRF-Base, or its stored bits
//!   equal `x`'s own bits at depth `|p|`: the hash bits of `x`, and the `n` bits of `x` after
//!   byte `|p|`, zero-padded past its end.
//!
//! A degraded entry keeps its suffix bits in storage but no query reads them: it answers as a
//! SuRF-Base leaf (`Surf::may_contain` accepts every key reaching it, a seek keeps it, its
//! smallest key is its path). Only merges degrade entries, for the reason given under (c).
//!
//! # Facts used
//!
//! - **F1** (trie shape). The path of an entry that is not a prefix key is a prefix of no other
//!   entry's path: a leaf has no child. So those paths' *regions* (the keys starting with them)
//!   are disjoint, and a key lies in at most one region.
//! - **F2** (the builder). An item (a pushed byte string) that no other item starts with gets a
//!   leaf that is not a prefix key, at depth `d' = 1 + ` its longest common prefix with its
//!   neighbours; if no other item starts with `y[..m]` either, `d' ≤ m`. The leaf's real bits
//!   are computed from the item at `d'`; its hash bits are the ones pushed with it
//!   ([`SurfBuilder::push_carried`]). An item another item starts with gets a prefix-key leaf.
//! - **F3** (queries). `Surf::may_contain(x)` is true exactly when the entry `x`'s walk reaches
//!   admits `x`, and the walk of a key some entry admits reaches that entry (by F1 no other
//!   leaf lies on its path). `Surf::may_contain_range(r)` is true whenever an entry admits a
//!   key in `r`: the static proof (beside `Surf::may_contain_range`) reads of an entry only its
//!   path, prefix-key flag and stored real bits, all of which agree with the admitted key as
//!   with the key the entry was built from, or, degraded, only its path, which is a prefix of
//!   the key (the SuRF-Base case of that proof).
//!
//! # The items of a merge, and why each old admitted key stays admitted
//!
//! The old entries are walked in order beside the dynamic stage's sorted keys. The keys of the
//! dynamic stage in the region of a non-prefix-key entry `p` (its *run*: consecutive in sorted
//! order) are decided with that entry. Items:
//!
//! - **(a)** A prefix-key entry `e` becomes the item `e` (hash bits recomputed from `e`); a
//!   dynamic key equal to `e` is dropped. Its new leaf is a prefix key (admits `e`) or an
//!   ordinary leaf built from `e` itself (admits `e`).
//! - **(b)** A non-degraded entry `(p, bits)` that admits every key of its run (in particular
//!   one with an empty run) becomes the item `v = p ‖ t`, `t` its real bits as bytes with
//!   trailing zero bytes dropped, its hash bits carried; the run is dropped. No other item
//!   starts with `p` (the other entries' items start with their own paths, F1; kept dynamic keys
//!   lie in no region), so by F2 its new leaf is ordinary, at depth `d' ≤ |p|`, path `p[..d']`,
//!   real bits those of `v` at `d'`. A key `x` it admitted has path `p[..d'] ⊑ p ⊑ x`, the same
//!   hash bits, and the same real bits at `d'`: the `n` bits after byte `d'` of `x` and of `v`
//!   are `p[d'..]` followed by the first bits of the `n` bits after `p`, which are the entry's
//!   stored bits for both. So the new leaf admits `x`.
//! - **(c)** Otherwise (the entry is degraded already, or a key of its run differs from it in
//!   its suffix bits: the old filter rejects that key, yet it must now be admitted, and one leaf
//!   has room for one set of bits) the entry becomes the degraded item `R = p ‖ w`: `w` is the
//!   whole bytes of its real bits with trailing zero bytes dropped, empty if it was degraded.
//!   Every key `x` the old entry admitted starts with `R` (its real bits are the stored ones, so
//!   it continues `p` with those bytes up to the last non-zero one; a shorter `x` would be
//!   zero-padded there). Run keys starting with `R` are dropped; the rest become items (d). No
//!   other item starts with `R`, so the new leaf is ordinary, at a depth `d' ≤ |R|`, and
//!   degraded: it admits every key starting with `R[..d']`, which includes all of the above.
//!   Extending the path by the real bytes keeps a SuRF-Real-8 entry exactly as selective for
//!   points as it was (its region shrinks by the byte the bits held); a hash-only entry falls
//!   back to SuRF-Base.
//! - **(d)** A dynamic key in no region (or left over in (c)) and not equal to a prefix-key
//!   entry becomes the item `k` with its own hash bits: its leaf admits it (F2).
//! - The empty key is pushed when the old filter stores it or the dynamic stage holds it.
//!
//! Items come out strictly increasing: a kept key and an entry's item compare as the key and
//! the entry's path do, because the key does not start with that path (or, in (c), with `R`,
//! and is ordered against `R` explicitly). With F3, no key ever inserted is denied: before the
//! merge it was in the dynamic stage or admitted by an old entry, and after it, it is admitted
//! by a new entry.
//!
//! Safety does not hinge on the claim "admitted keys start with `R`" in (c): a run key not
//! starting with `R` is kept as its own item whatever the reason.

use core::ops::Bound;

use crate::Error;
use crate::substrate::BitVec;
use crate::surf::{Surf, SurfBuilder, SurfCursor};

/// What a merge built.
pub(super) struct Merged {
    /// The new static stage.
    pub(super) surf: Surf,
    /// Dynamic keys that became entries of their own (the rest were admitted already).
    pub(super) kept: usize,
    /// Entries degraded by this merge (they were not before).
    pub(super) newly_degraded: usize,
}

/// Pushes items in order and remembers which (by ordinal among the non-empty items) are
/// degraded.
struct Items {
    builder: SurfBuilder,
    ordinal: usize,
    degraded: Vec<usize>,
}

impl Items {
    fn push(&mut self, item: &[u8], hash: u64, degraded: bool) -> Result<(), Error> {
        self.builder.push_carried(item, hash)?;
        if !item.is_empty() {
            if degraded {
                self.degraded.push(self.ordinal);
            }
            self.ordinal += 1;
        }
        Ok(())
    }
}

/// The whole bytes of the current entry's real bits, trailing zero bytes dropped: every key
/// the entry admits continues its path with these bytes (proof (c) in the module docs).
fn whole_real_bytes(c: &SurfCursor<'_>, out: &mut Vec<u8>) {
    let (bits, n) = c.real_suffix();
    let whole = (n / 8) as usize;
    if whole == 0 {
        return;
    }
    let bytes = (bits << (64 - n)).to_be_bytes();
    let mut take = whole;
    while take > 0 && bytes[take - 1] == 0 {
        take -= 1;
    }
    out.extend_from_slice(&bytes[..take]);
}

/// Builds the SuRF of `old`'s entries and `keys` (the dynamic stage's keys, strictly
/// increasing), so that every key `old` admits and every key of `keys` is admitted by the
/// result (see the module docs for the proof).
pub(super) fn merge<'k>(old: &Surf, keys: impl Iterator<Item = &'k [u8]>) -> Result<Merged, Error> {
    let kind = old.kind();
    let suffix = kind.suffix();
    let mut items = Items {
        builder: SurfBuilder::carrying(kind, old.dense_ratio())?,
        ordinal: 0,
        degraded: Vec::new(),
    };
    let mut keys = keys.peekable();
    let mut kept = 0;
    let mut newly_degraded = 0;

    let mut has_empty = old.may_contain(b"");
    if keys.next_if(|k| k.is_empty()).is_some() {
        has_empty = true;
    }
    if has_empty {
        items.push(b"", suffix.key_hash(b""), false)?;
    }

    let mut cur = old.cursor();
    let mut valid = cur.seek(Bound::Unbounded);
    let mut item = Vec::new();
    let mut run: Vec<&[u8]> = Vec::new();
    while valid {
        let p = cur.prefix();
        // (d) Keys before this entry lie in no region: the previous entry took its run.
        while let Some(k) = keys.next_if(|k| *k < p) {
            items.push(k, suffix.key_hash(k), false)?;
            kept += 1;
        }
        if cur.is_prefix_key() {
            // (a)
            keys.next_if(|k| *k == p);
            items.push(p, suffix.key_hash(p), false)?;
        } else {
            run.clear();
            while let Some(k) = keys.next_if(|k| k.starts_with(p)) {
                run.push(k);
            }
            let hash = cur.hash_suffix();
            if !cur.is_degraded() && run.iter().all(|k| cur.admits(k)) {
                // (b)
                cur.smallest_key(&mut item);
                items.push(&item, hash, false)?;
            } else {
                // (c)
                if !cur.is_degraded() {
                    newly_degraded += 1;
                }
                item.clear();
                item.extend_from_slice(p);
                whole_real_bytes(&cur, &mut item);
                let mut pushed = false;
                for &k in &run {
                    if k.starts_with(&item) {
                        continue;
                    }
                    if !pushed && k > item.as_slice() {
                        items.push(&item, hash, true)?;
                        pushed = true;
                    }
                    items.push(k, suffix.key_hash(k), false)?;
                    kept += 1;
                }
                if !pushed {
                    items.push(&item, hash, true)?;
                }
            }
        }
        valid = cur.next();
    }
    for k in keys {
        items.push(k, suffix.key_hash(k), false)?;
        kept += 1;
    }

    let Items {
        builder, degraded, ..
    } = items;
    let mut surf = builder.finish()?;
    if !degraded.is_empty() {
        surf.set_degraded(Some(mark(&surf, &degraded)));
    }
    Ok(Merged {
        surf,
        kept,
        newly_degraded,
    })
}

/// One bit per leaf of `surf`, set for the leaves of the items numbered `ordinals` (ascending,
/// among the non-empty items): the `i`-th entry in key order is the `i`-th such item's leaf.
fn mark(surf: &Surf, ordinals: &[usize]) -> BitVec {
    let mut bits = BitVec::zeros(surf.leaves());
    let mut c = surf.cursor();
    let mut valid = c.seek(Bound::Unbounded);
    let mut i = 0;
    for &want in ordinals {
        while valid && i < want {
            valid = c.next();
            i += 1;
        }
        if !valid {
            break;
        }
        bits.set(c.leaf(), true);
    }
    debug_assert_eq!(bits.count_ones(), ordinals.len());
    bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surf::SurfKind;

    fn entries(s: &Surf) -> Vec<(Vec<u8>, bool)> {
        let mut c = s.cursor();
        let mut out = Vec::new();
        let mut valid = c.seek(Bound::Unbounded);
        while valid {
            out.push((c.prefix().to_vec(), c.is_degraded()));
            valid = c.next();
        }
        out
    }

    #[test]
    fn an_empty_dynamic_stage_rebuilds_the_same_entries() {
        let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"abc\x00", b"b\xff", b"zz"];
        for kind in [SurfKind::Base, SurfKind::Hash(9), SurfKind::Real(12)] {
            let old = Surf::from_sorted(kind, keys).unwrap();
            let m = merge(&old, core::iter::empty()).unwrap();
            assert_eq!(entries(&m.surf), entries(&old), "{kind:?}");
            assert_eq!((m.kept, m.newly_degraded), (0, 0));
            for k in keys {
                assert!(m.surf.may_contain(k), "{kind:?} {k:?}");
            }
        }
    }

    #[test]
    fn hash_bits_are_carried_not_recomputed() {
        // The entries are "a" and "b"; rebuilding hashes the items "a" and "b" unless the
        // stored bits are carried, and "apple" would then be denied.
        let old = Surf::from_sorted(SurfKind::Hash(32), ["apple", "banana"]).unwrap();
        let m = merge(&old, [&b"cherry"[..]].into_iter()).unwrap();
        assert!(m.surf.may_contain(b"apple") && m.surf.may_contain(b"banana"));
        assert!(m.surf.may_contain(b"cherry"));
        assert!(!m.surf.may_contain(b"a") && !m.surf.may_contain(b"apricot"));
        assert_eq!(m.kept, 1);
    }

    #[test]
    fn a_conflict_extends_the_path_by_the_real_bytes_and_degrades() {
        let old = Surf::from_sorted(SurfKind::Real(16), ["apple", "banana"]).unwrap();
        // "ax" falls under "a" with other real bits; "applz" shares them ("pp").
        let m = merge(&old, [&b"applz"[..], b"ax"].into_iter()).unwrap();
        assert_eq!(m.newly_degraded, 1);
        assert_eq!(m.kept, 1, "\"applz\" starts with the degraded item \"app\"");
        // The builder cuts the item "app" where "ax" parts from it.
        assert_eq!(
            entries(&m.surf),
            [
                (b"ap".to_vec(), true),
                (b"ax".to_vec(), false),
                (b"b".to_vec(), false)
            ]
        );
        for k in ["apple", "applz", "ax", "banana"] {
            assert!(m.surf.may_contain(k.as_bytes()), "{k}");
        }
        // Degraded entries stay degraded, and absorb every key under their path.
        let again = merge(&m.surf, [&b"appz"[..], b"ay"].into_iter()).unwrap();
        assert_eq!((again.newly_degraded, again.kept), (0, 1));
        assert_eq!(
            again.surf.degraded().map(|d| d.iter_ones().count()),
            Some(1)
        );
        for k in ["apple", "applz", "appz", "ax", "ay", "banana"] {
            assert!(again.surf.may_contain(k.as_bytes()), "{k}");
        }
    }

    #[test]
    fn zero_real_bytes_are_not_appended() {
        // The real bits of "a" (a key that ends there) are zero: a key that ends at the path
        // is admitted by them, so the degraded path must not grow by a zero byte.
        let old = Surf::from_sorted(SurfKind::Real(8), ["a", "b"]).unwrap();
        let m = merge(&old, [&b"ab"[..]].into_iter()).unwrap();
        for k in ["a", "ab", "b"] {
            assert!(m.surf.may_contain(k.as_bytes()), "{k}");
        }
        let old = Surf::from_sorted(SurfKind::Real(16), ["a\x00\x07", "b"]).unwrap();
        let m = merge(&old, [&b"a\x01"[..]].into_iter()).unwrap();
        // The degraded item is "a\x00\x07"; the builder cuts it where "a\x01" parts from it.
        assert_eq!(entries(&m.surf)[0], (b"a\x00".to_vec(), true));
        assert!(m.surf.may_contain(b"a\x00\x07\x01") && m.surf.may_contain(b"a\x01"));
    }

    #[test]
    fn prefix_keys_stay_exact_and_new_prefixes_of_entries_are_kept() {
        let old = Surf::from_sorted(SurfKind::Real(8), ["ab", "abc", "abd"]).unwrap();
        // "a" is a proper prefix of every entry; "ab" is the prefix-key entry itself.
        let m = merge(&old, [&b"a"[..], b"ab"].into_iter()).unwrap();
        assert_eq!(m.kept, 1);
        for k in ["a", "ab", "abc", "abd"] {
            assert!(m.surf.may_contain(k.as_bytes()), "{k}");
        }
        assert!(!m.surf.may_contain(b"abe") && !m.surf.may_contain(b"aa"));
    }
}
