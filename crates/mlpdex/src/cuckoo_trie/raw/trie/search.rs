//! Search: the prefetching descent (§4.1), predecessor candidates, point lookups, seeks and
//! the leaf list (§4.4).

use core::cmp::Ordering;
use core::sync::atomic::Ordering::{Acquire, Relaxed};

use super::super::table::{Ent, JUMP, JUMP_MAX, LEAF, Loc, REGULAR, Table, Torn};
use super::{Cand, End, LeafRef, PathNode, RawTrie, Seek, Syms, stable, unpack};
use crate::substrate::prefetch::prefetch_read;

/// Keys a batched lookup searches together ([`RawTrie::get_batch`]): enough to keep this
/// machine's 10–30 outstanding DRAM reads busy, few enough that a chunk's buckets stay in
/// the L1 cache until its searches read them.
const BATCH: usize = 16;

/// Ring of prefix hashes `h(k[:i])`, computed (and their buckets prefetched) `depth` ahead of
/// the search, and of the key's symbols, decoded eight at a time ([`Syms::group`]) ahead of
/// both the hashes and the search.
struct Hashes {
    ring: [u64; RING],
    /// `syms[i % SYM_RING]` is symbol `i` of the key, for `i < decoded`.
    syms: [u8; SYM_RING],
    /// Hashes of prefixes `0..known` have been computed.
    known: usize,
    /// Symbols `0..decoded` have been decoded (a multiple of 8).
    decoded: usize,
    total: usize,
}

const RING: usize = 32;
const _: () = assert!(RING > JUMP_MAX + super::super::MAX_PREFETCH + 1);
/// Symbols are decoded at most 8 past the deepest one read, which is at most
/// `JUMP_MAX + MAX_PREFETCH + 1` past the search's depth.
const SYM_RING: usize = 64;
const _: () = assert!(SYM_RING >= JUMP_MAX + super::super::MAX_PREFETCH + 1 + 8);
const _: () = assert!(SYM_RING.is_multiple_of(8) && RING.is_power_of_two());

impl Hashes {
    /// Nothing computed yet but `h(ε) = 0`. Built in place by the search (returning this
    /// 300-byte struct from a constructor cost a copy per search).
    #[inline(always)]
    fn empty(total: usize) -> Hashes {
        Hashes {
            ring: [0; RING],
            syms: [0; SYM_RING],
            known: 1,
            decoded: 0,
            total,
        }
    }

    /// Decodes the group of symbols after those decoded so far.
    #[inline(always)]
    fn decode(&mut self, syms: Syms, key: &[u8]) {
        let g = syms.group(key, self.decoded / 8);
        let at = self.decoded % SYM_RING;
        self.syms[at..at + 8].copy_from_slice(&g.to_le_bytes());
        self.decoded += 8;
    }

    /// Computes hashes up to prefix `upto` (capped at the full string), prefetching each.
    #[inline(always)]
    fn advance(&mut self, t: &Table, syms: Syms, key: &[u8], upto: usize) {
        let upto = upto.min(self.total);
        while self.known <= upto {
            let i = self.known;
            let c = self.sym(syms, key, i - 1);
            let h = t.hasher.step(self.ring[(i - 1) % RING], c);
            self.ring[i % RING] = h;
            t.prefetch(h);
            self.known += 1;
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.known && i + RING > self.known);
        self.ring[i % RING]
    }

    /// Symbol `i` of `key`, decoding it (and the rest of its group) when not yet decoded.
    /// Symbols are asked for in nondecreasing order of group, never more than
    /// `SYM_RING - 8` behind the last one decoded.
    #[inline(always)]
    fn sym(&mut self, syms: Syms, key: &[u8], i: usize) -> u32 {
        while i >= self.decoded {
            self.decode(syms, key);
        }
        debug_assert!(i + SYM_RING >= self.decoded, "symbol {i} overwritten");
        u32::from(self.syms[i % SYM_RING])
    }
}

impl RawTrie {
    /// Searches `key` from the root, recording the path in `path` when given. With `PRED`, the
    /// buckets of each new predecessor candidate are prefetched as soon as it is known, so
    /// resolving the last one afterwards (seeks and writes do) overlaps with the descent.
    #[inline(always)]
    pub(in crate::cuckoo_trie::raw) fn descend<const PRED: bool>(
        &self,
        key: &[u8],
        mut path: Option<&mut Vec<PathNode>>,
    ) -> Result<(End, Cand), Torn> {
        let syms = self.syms;
        let t = &self.table;
        let total = syms.count(key.len());
        let d = self.params.prefetch_depth;
        let cap = self.horizon.load(Relaxed);
        let mut hs = Hashes::empty(total);
        hs.advance(t, syms, key, d.min(cap));
        let mut loc = self.root;
        let mut ent = self.root_entry()?;
        let mut i = 0usize;
        let mut cand = Cand::None;
        loop {
            if let Some(p) = path.as_deref_mut() {
                p.push(PathNode {
                    loc,
                    ent,
                    depth: i,
                    cand_before: cand,
                });
            }
            match ent.kind() {
                LEAF => return Ok((End::Leaf { loc, ent }, cand)),
                REGULAR => {
                    if i >= total {
                        // Past the end symbol, whose child is always a leaf: a torn view.
                        return Err(self.torn());
                    }
                    let c = hs.sym(syms, key, i);
                    let bm = ent.bitmap();
                    let below = bm & ((1u64 << c) - 1);
                    if below != 0 {
                        let (h, sym) = (hs.get(i), 63 - below.leading_zeros());
                        if PRED {
                            t.prefetch(t.hasher.step(h, sym));
                        }
                        cand = Cand::Sibling {
                            h,
                            sym,
                            pcolor: ent.color(),
                        };
                    }
                    if (bm >> c) & 1 == 0 {
                        return Ok((End::NoChild { sym: c }, cand));
                    }
                    hs.advance(t, syms, key, (i + 1 + d).min(cap.max(i + 1)));
                    let h = hs.get(i + 1);
                    let e = t.child(h, c, ent.color())?;
                    loc = Loc {
                        h: h as u32,
                        color: e.color(),
                    };
                    ent = e;
                    i += 1;
                }
                JUMP => {
                    let n = ent.jump_len();
                    for at in 0..n {
                        let c = hs.sym(syms, key, i + at);
                        let s = ent.jump_sym(at);
                        if c != s {
                            if c > s {
                                cand = Cand::Leaf(ent.loc());
                                if PRED {
                                    t.prefetch(ent.loc().h.into());
                                }
                            }
                            return Ok((End::JumpMismatch { at }, cand));
                        }
                    }
                    hs.advance(t, syms, key, (i + n + d).min(cap.max(i + n)));
                    let h = hs.get(i + n);
                    loc = Loc {
                        h: h as u32,
                        color: ent.jump_child(),
                    };
                    ent = t.fetch(loc)?;
                    i += n;
                }
                _ => return Err(self.torn()),
            }
        }
    }

    /// Starts the second read of resolving `cand` (a sibling's maximum) so it overlaps with
    /// the writer's next reads (the split leaf's record, new entries' buckets).
    #[inline]
    pub(super) fn prefetch_pred(&self, cand: Cand) {
        if let Cand::Sibling { h, sym, pcolor } = cand {
            let hc = self.table.hasher.step(h, sym);
            if let Some((_, e)) = self.table.find_by_parent(hc, sym, pcolor)
                && e.kind() != LEAF
            {
                self.table.prefetch(e.loc().h.into());
            }
        }
    }

    /// The leaf a predecessor candidate stands for.
    pub(super) fn resolve(&self, cand: Cand) -> Result<Option<LeafRef>, Torn> {
        match cand {
            Cand::None => Ok(None),
            Cand::Leaf(l) => Ok(Some((l, self.table.fetch(l)?))),
            Cand::Sibling { h, sym, pcolor } => {
                let hc = self.table.hasher.step(h, sym);
                let e = self.table.child(hc, sym, pcolor)?;
                if e.kind() == LEAF {
                    Ok(Some((
                        Loc {
                            h: hc as u32,
                            color: e.color(),
                        },
                        e,
                    )))
                } else {
                    let m = e.loc();
                    Ok(Some((m, self.table.fetch(m)?)))
                }
            }
        }
    }

    /// The leaf after `e` in key order.
    #[inline]
    pub(crate) fn next(&self, e: Ent) -> Result<Option<LeafRef>, Torn> {
        let l = e.loc();
        if l.is_null() {
            return Ok(None);
        }
        Ok(Some((l, self.table.fetch(l)?)))
    }

    /// Prefetches the buckets a locator names.
    #[inline]
    pub(crate) fn prefetch_loc(&self, l: Loc) {
        if !l.is_null() {
            self.table.prefetch(l.h.into());
        }
    }

    /// The first leaf. In a shared table, `head` is read after a copy of the root's bucket,
    /// which every change of `head` locks: validating that bucket validates `head`.
    pub(crate) fn first(&self) -> Result<Option<LeafRef>, Torn> {
        if self.table.is_shared() {
            self.root_entry()?;
        }
        let head = unpack(self.head.load(Acquire));
        if head.is_null() {
            return Ok(None);
        }
        Ok(Some((head, self.table.fetch(head)?)))
    }

    /// The last leaf.
    pub(crate) fn last(&self) -> Result<Option<LeafRef>, Torn> {
        let m = self.root_entry()?.loc();
        if m.is_null() {
            return Ok(None);
        }
        Ok(Some((m, self.table.fetch(m)?)))
    }

    /// The record of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<*mut u8>, Torn> {
        if self.has_key_index() {
            return Ok(self.indexed(key).map(Ent::rec));
        }
        Ok(match self.descend::<false>(key, None)?.0 {
            // SAFETY: `ent` is a leaf of this trie, read under `&self`.
            End::Leaf { ent, .. } if unsafe { self.key_of(ent) } == key => Some(ent.rec()),
            _ => None,
        })
    }

    /// Starts the first reads of a search of `key`: the buckets of its prefixes down to the
    /// average leaf depth. [`descend`](Self::descend) prefetches [`HORIZON_MARGIN`] levels
    /// further, which a batch of 16 searches cannot afford: their extra lines crowd out the
    /// reads the other searches need (measured at 10M random keys, one run each: 1.92 against
    /// 2.54 Mops/s).
    ///
    /// [`HORIZON_MARGIN`]: super::HORIZON_MARGIN
    #[inline]
    pub(crate) fn prefetch_descent(&self, key: &[u8]) {
        if self.has_key_index() {
            return self.prefetch_indexed(key);
        }
        self.prefetch_levels(key);
    }

    /// With the key index, the key entry of `key` (its record and length) when the trie holds
    /// `key`: then `key` itself answers a seek to `≥ key` or `≤ key`, found with one probe
    /// instead of a descent. `None` without an index or for an absent key. The probe's buckets
    /// are fetched together with the first levels of the descent that a miss goes on to, so
    /// a miss costs the probe's instructions, not a round trip of its own.
    #[inline]
    pub(crate) fn seek_exact(&self, key: &[u8]) -> Option<Ent> {
        if !self.has_key_index() {
            return None;
        }
        // One hash of the whole key serves the prefetch and the probe.
        let h = self.table.hasher.key_hash(key);
        self.table.prefetch(h);
        self.prefetch_levels(key);
        self.indexed_under(h, key)
    }

    /// Prefetches the buckets of `key`'s prefixes down to the average leaf depth (see
    /// [`prefetch_descent`](Self::prefetch_descent)).
    #[inline]
    fn prefetch_levels(&self, key: &[u8]) {
        let (syms, t) = (self.syms, &self.table);
        let avg_depth = self
            .horizon
            .load(Relaxed)
            .saturating_sub(super::HORIZON_MARGIN);
        let upto = avg_depth
            .min(self.params.prefetch_depth)
            .min(syms.count(key.len()));
        let mut h = 0;
        for i in 0..upto {
            h = t.hasher.step(h, syms.at(key, i));
            t.prefetch(h);
        }
    }

    /// The leaf the search for `key` ends at, if it ends at one. Its record is `key`'s when
    /// the record's key is `key`: batched lookups compare once the records of a whole chunk
    /// are on their way.
    #[inline]
    pub(crate) fn leaf_for(&self, key: &[u8]) -> Result<Option<Ent>, Torn> {
        if self.has_key_index() {
            return Ok(self.indexed(key));
        }
        Ok(match self.descend::<false>(key, None)?.0 {
            End::Leaf { ent, .. } => Some(ent),
            End::NoChild { .. } | End::JumpMismatch { .. } => None,
        })
    }

    /// The records of `keys`, searched [`BATCH`] at a time: `answer(i, rec)` for every key
    /// `keys[i]`, in order, with its record or `None`.
    ///
    /// Where [`get`](Self::get) makes two dependent rounds of DRAM reads per key (the trie's
    /// buckets, read in parallel, then the leaf's record), this makes them per chunk: the first
    /// buckets of every search are prefetched before any search runs, and the records of all
    /// leaves found are prefetched before any key is compared. `leaf` runs one search to its
    /// leaf ([`leaf_for`](Self::leaf_for) on this trie, or in a read session on the current
    /// trie of a shared map, whose records and record layout are this trie's).
    ///
    /// # Safety
    /// Every leaf `leaf` returns has a live record until the caller is done with the answers.
    #[inline]
    pub(crate) unsafe fn get_batch(
        &self,
        keys: &[&[u8]],
        mut leaf: impl FnMut(&[u8]) -> Option<Ent>,
        mut answer: impl FnMut(usize, Option<*mut u8>),
    ) {
        let mut leaves = [None; BATCH];
        for (c, chunk) in keys.chunks(BATCH).enumerate() {
            for k in chunk {
                self.prefetch_descent(k);
            }
            for (k, l) in chunk.iter().zip(leaves.iter_mut()) {
                *l = leaf(k);
                if let Some(e) = l {
                    // SAFETY: a leaf's record holds `val_size` bytes of value before its key.
                    prefetch_read(unsafe { e.rec().add(self.params.val_size) });
                }
            }
            for (i, (k, l)) in chunk.iter().zip(&leaves).enumerate() {
                // SAFETY: a leaf `leaf` returned, whose record is live (the caller's contract).
                let rec = l.filter(|e| unsafe { self.key_of(*e) } == *k).map(Ent::rec);
                answer(c * BATCH + i, rec);
            }
        }
    }

    /// The neighbour of `key` that `op` asks for.
    pub(crate) fn seek(&self, key: &[u8], op: Seek) -> Result<Option<LeafRef>, Torn> {
        let (end, cand) = self.descend::<true>(key, None)?;
        match end {
            End::Leaf { loc, ent } => {
                if matches!(op, Seek::Ge | Seek::Gt) {
                    // The answer may be the next leaf: fetch its buckets while the record's
                    // key is read for the comparison (two independent DRAM reads).
                    self.prefetch_loc(ent.loc());
                }
                // SAFETY: a leaf of this trie under `&self`.
                let ord = unsafe { self.key_of(ent) }.cmp(key);
                let here = match op {
                    Seek::Ge => ord != Ordering::Less,
                    Seek::Gt => ord == Ordering::Greater,
                    Seek::Le => ord != Ordering::Greater,
                    Seek::Lt => ord == Ordering::Less,
                };
                if here {
                    Ok(Some((loc, ent)))
                } else if matches!(op, Seek::Ge | Seek::Gt) {
                    // The leaf is below the probe: its successor is the answer.
                    self.next(ent)
                } else {
                    // The leaf is above the probe: the predecessor of its subtree is.
                    self.resolve(cand)
                }
            }
            _ => {
                let pred = self.resolve(cand)?;
                match op {
                    Seek::Le | Seek::Lt => Ok(pred),
                    Seek::Ge | Seek::Gt => match pred {
                        Some((_, e)) => self.next(e),
                        None => self.first(),
                    },
                }
            }
        }
    }

    /// Every record, in key order (for the front end's drop and clear).
    pub(crate) fn for_each_leaf(&self, mut f: impl FnMut(Ent)) {
        let mut cur = stable(self.first());
        while let Some((_, e)) = cur {
            f(e);
            cur = stable(self.next(e));
        }
    }
}
