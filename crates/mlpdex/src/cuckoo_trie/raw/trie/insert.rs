//! Insertion (§4.5): the three cases (under a regular node, splitting a leaf, splitting a jump
//! node), each creating its new entries before linking them so a full table rolls back.

use core::sync::atomic::Ordering::Relaxed;

use super::super::table::{Ent, Full, JUMP_MAX, LEAF, Loc, Torn};
use super::{Cand, End, HORIZON_MARGIN, Inserted, PathNode, RawTrie, Retry, Scratch};

impl RawTrie {
    /// Grows when the table would pass its load limit with `extra` more entries.
    fn needs_growth(&self, extra: usize) -> bool {
        let extra = extra + usize::from(self.params.key_index);
        (self.table.used() + extra) as f64
            > self.table.capacity() as f64 * self.params.max_load_factor
    }

    /// Inserts `key` with the record `make` returns, unless present. `make` may be called
    /// before a [`Retry`]: the caller keeps that record for the retry. In a shared table the
    /// changes wait in the caller's write session for its commit.
    pub(crate) fn insert(
        &self,
        w: &mut Scratch,
        key: &[u8],
        make: &mut dyn FnMut() -> *mut u8,
    ) -> Result<Inserted, Retry> {
        let mut path = core::mem::take(&mut w.path);
        path.clear();
        let result = (|| {
            let (end, cand) = self.descend::<true>(key, Some(&mut path))?;
            self.prefetch_pred(cand);
            let last = *path.last().expect("the path holds the root");
            // For a leaf split, where the two keys' strings part (computed once, here).
            let mut split_at = 0;
            let extra = match end {
                End::Leaf { loc, ent } => {
                    // SAFETY: a leaf of this trie; no record is freed during insert.
                    let other = unsafe { self.key_of(ent) };
                    if other == key {
                        return Ok(Inserted::Existing {
                            loc,
                            rec: ent.rec(),
                        });
                    }
                    split_at = self.first_difference(key, other, last.depth)?;
                    (split_at - last.depth).div_ceil(JUMP_MAX) + 3
                }
                _ => 3,
            };
            if self.needs_growth(extra) {
                return Err(Retry::Grow);
            }
            let r = make();
            w.created.clear();
            let indexed = self.add_key_entry(w, key, r).map_err(Retry::from);
            let done = indexed.and_then(|()| match end {
                End::NoChild { sym } => self.insert_under(w, key, &last, sym, cand, r, &path),
                End::Leaf { .. } => self.insert_split_leaf(w, key, &last, split_at, cand, r, &path),
                End::JumpMismatch { at } => {
                    self.insert_split_jump(w, key, &last, at, cand, r, &path)
                }
            });
            match done {
                Ok(depth) => {
                    self.count(w, 1);
                    self.note_leaf_depth(depth);
                    Ok(Inserted::New)
                }
                Err(Retry::Grow) if !self.table.is_shared() => {
                    for l in core::mem::take(&mut w.created) {
                        self.table
                            .remove(l)
                            .expect("an entry just created is in an unshared table");
                    }
                    Err(Retry::Grow)
                }
                // A shared table's session is discarded: nothing to roll back.
                Err(e) => Err(e),
            }
        })();
        w.path = path;
        w.settle();
        self.refresh_root();
        result
    }

    /// Points leaf `l` of `key`, whose record is `old`, at the new record `rec` (an update of
    /// an existing key's value), key entry included. In a shared table the caller's write
    /// session may copy `l`'s bucket again since it found the leaf; a copy that no longer
    /// holds that leaf there is torn (the commit would be refused) and gives `Err(Torn)`.
    pub(crate) fn set_record(
        &self,
        l: Loc,
        key: &[u8],
        old: *mut u8,
        rec: *mut u8,
    ) -> Result<(), Torn> {
        if self.params.key_index {
            self.repoint_key_entry(key, old, rec)?;
        }
        let set = self.table.update_if(l, |e| {
            if e.kind() != LEAF || e.rec() != old {
                return false;
            }
            *e = Ent::leaf(e.sym(), e.pcolor(), rec, e.key_len(), e.loc()).in_place_of(*e);
            true
        })?;
        if set { Ok(()) } else { Err(self.torn()) }
    }

    /// Folds the depth of a new leaf into the average that sets the prefetch horizon. Stores
    /// only what changed: every lookup reads the horizon, and a store takes its cache line
    /// away from the other cores even when the value stays.
    fn note_leaf_depth(&self, depth: usize) {
        let d16 = depth.min(1 << 20) * 16;
        let old = self.depth_avg.load(Relaxed);
        let avg = old - old / 16 + d16 / 16;
        if avg != old {
            self.depth_avg.store(avg, Relaxed);
            let horizon = avg.div_ceil(16) + HORIZON_MARGIN;
            if self.horizon.load(Relaxed) != horizon {
                self.horizon.store(horizon, Relaxed);
            }
        }
    }

    /// The first symbol position `>= from` where the strings of `a` and `b` differ (distinct
    /// keys, which agree on their first `from` symbols unless a shared table's copies are
    /// torn).
    fn first_difference(&self, a: &[u8], b: &[u8], from: usize) -> Result<usize, Torn> {
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let mut j = (common * 8 / self.syms.bits as usize).max(from);
        let end = self.syms.count(a.len().max(b.len()));
        while self.syms.at(a, j) == self.syms.at(b, j) {
            j += 1;
            if j >= end {
                // Both strings ended (in end symbols) without a difference past `from`.
                return Err(self.torn());
            }
        }
        Ok(j)
    }

    /// Case 1 of §4.5: the search stopped at regular node `n`, which lacks child `c`.
    #[allow(clippy::too_many_arguments)]
    fn insert_under(
        &self,
        w: &mut Scratch,
        key: &[u8],
        n: &PathNode,
        c: u32,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Retry> {
        let pred = self.resolve(cand)?;
        let h = self.table.hasher.step(n.loc.h.into(), c);
        let leaf = Ent::leaf(c, n.ent.color(), rec, key.len(), self.next_of(w, pred)?);
        let l = self.create(w, h, leaf)?;
        self.link_after(w, pred, l)?;
        let bm = n.ent.bitmap();
        self.table.update(n.loc, |e| e.set_bitmap(bm | 1 << c))?;
        if bm >> c == 0 {
            // The new leaf is the greatest below `n`.
            self.fix_max(path, path.len() - 1, &[(n.ent.loc(), l)])?;
        }
        Ok(n.depth + 1)
    }

    /// Jump nodes (bottom-up creation) for the chain of symbols `syms` starting at depth
    /// `depth` with hash `h`, above a node of color `child`; the top one is not created but
    /// returned as content. Returns (top content, hash after the chain).
    #[allow(clippy::too_many_arguments)]
    fn build_chain(
        &self,
        w: &mut Scratch,
        syms: &[u32],
        h: u64,
        top_sym: u32,
        top_pcolor: u8,
        mut child: u8,
        max: Loc,
    ) -> Result<Ent, Full> {
        debug_assert!(!syms.is_empty());
        if syms.len() <= JUMP_MAX {
            // One jump node, the top: nothing to create (the common case; no allocation).
            return Ok(Ent::jump(top_sym, top_pcolor, syms, child, max));
        }
        // Hashes at each chunk start.
        let mut starts: Vec<(usize, u64)> = Vec::with_capacity(syms.len() / JUMP_MAX + 1);
        let mut hh = h;
        for (k, &s) in syms.iter().enumerate() {
            if k % JUMP_MAX == 0 {
                starts.push((k, hh));
            }
            hh = self.table.hasher.step(hh, s);
        }
        for (idx, &(k, hk)) in starts.iter().enumerate().rev() {
            let chunk = &syms[k..(k + JUMP_MAX).min(syms.len())];
            if idx == 0 {
                return Ok(Ent::jump(top_sym, top_pcolor, chunk, child, max));
            }
            let e = Ent::jump(syms[k - 1], 0, chunk, child, max).with_by_color(true);
            child = self.create(w, hk, e)?.color;
        }
        unreachable!("the chain has a first chunk")
    }

    /// Case 2 of §4.5: the search reached leaf `leaf` (at depth `i`) of another key `e`.
    /// `j` is the first symbol position where `key` and the leaf's key differ.
    #[allow(clippy::too_many_arguments)]
    fn insert_split_leaf(
        &self,
        w: &mut Scratch,
        key: &[u8],
        leaf: &PathNode,
        j: usize,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Retry> {
        let i = leaf.depth;
        let old = leaf.ent;
        // SAFETY: a leaf of this trie; its record stays alive (it moves to the new leaf).
        let other = unsafe { self.key_of(old) };
        debug_assert_eq!(Ok(j), self.first_difference(key, other, i).map_err(|_| ()));
        let hasher = &self.table.hasher;
        let mut hj = u64::from(leaf.loc.h);
        let mut chain = core::mem::take(&mut w.chain);
        chain.clear();
        for p in i..j {
            let s = self.syms.at(key, p);
            chain.push(s);
            hj = hasher.step(hj, s);
        }
        let (ck, co) = (self.syms.at(key, j), self.syms.at(other, j));
        let (hk, ho) = (hasher.step(hj, ck), hasher.step(hj, co));
        // The moved leaf's bucket depends on the other key's record: start fetching it now.
        self.table.prefetch(ho);
        let pred = self.resolve(cand)?;
        let bitmap = (1u64 << ck) | (1u64 << co);
        // The regular node R at depth j: in place of the old leaf when j == i.
        let r_color = if j == i {
            leaf.loc.color
        } else {
            let last = *chain.last().expect("j > i");
            let r = Ent::regular(last, 0, bitmap, Loc::NULL).with_by_color(true);
            self.create(w, hj, r)?.color
        };
        let new_leaf = Ent::leaf(ck, r_color, rec, key.len(), Loc::NULL);
        let moved = Ent::leaf(co, r_color, old.rec(), old.key_len(), Loc::NULL);
        // Insert the greater leaf first so the smaller can point at it.
        let (small, big) = if ck < co {
            ((hk, new_leaf), (ho, moved))
        } else {
            ((ho, moved), (hk, new_leaf))
        };
        let mut big_e = big.1;
        big_e.set_loc(old.loc());
        let big_l = self.create(w, big.0, big_e)?;
        let mut small_e = small.1;
        small_e.set_loc(big_l);
        let small_l = self.create(w, small.0, small_e)?;
        let top = if j == i {
            Ent::regular(old.sym(), old.pcolor(), bitmap, big_l)
        } else {
            self.table.update(
                Loc {
                    h: hj as u32,
                    color: r_color,
                },
                |e| e.set_loc(big_l),
            )?;
            self.build_chain(
                w,
                &chain,
                leaf.loc.h.into(),
                old.sym(),
                old.pcolor(),
                r_color,
                big_l,
            )?
        };
        w.chain = chain;
        // Everything new is in place; now link it (these writes cannot fail).
        self.table.replace(leaf.loc, top)?;
        self.link_after(w, pred, small_l)?;
        self.fix_max(path, path.len() - 2, &[(leaf.loc, big_l)])?;
        Ok(j + 1)
    }

    /// Case 3 of §4.5: the search left jump node `jn` at its symbol `at`.
    #[allow(clippy::too_many_arguments)]
    fn insert_split_jump(
        &self,
        w: &mut Scratch,
        key: &[u8],
        jn: &PathNode,
        at: usize,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Retry> {
        let j = jn.ent;
        let (syms, n) = j.jump_syms();
        let hasher = &self.table.hasher;
        let mut hd = u64::from(jn.loc.h);
        for &s in &syms[..at] {
            hd = hasher.step(hd, s);
        }
        let c = self.syms.at(key, jn.depth + at);
        let sd = syms[at];
        let h_below = hasher.step(hd, sd);
        let h_leaf = hasher.step(hd, c);
        let pred = self.resolve(cand)?;
        let bitmap = (1u64 << c) | (1u64 << sd);
        let r_color = if at == 0 {
            jn.loc.color
        } else {
            let r = Ent::regular(syms[at - 1], 0, bitmap, Loc::NULL).with_by_color(true);
            self.create(w, hd, r)?.color
        };
        let child_color = j.jump_child();
        if at + 1 < n {
            let e = Ent::jump(sd, r_color, &syms[at + 1..n], child_color, j.loc());
            self.create(w, h_below, e)?;
        }
        let leaf = Ent::leaf(c, r_color, rec, key.len(), self.next_of(w, pred)?);
        let l = self.create(w, h_leaf, leaf)?;
        // Linking.
        if at + 1 == n {
            // The jump's child now hangs under R: it must carry R's color.
            let cl = Loc {
                h: h_below as u32,
                color: child_color,
            };
            self.table.update(cl, |e| *e = e.with_by_color(false))?;
            self.table.update(cl, |e| e.set_pcolor(r_color))?;
        }
        let r_max = if c > sd { l } else { j.loc() };
        if at == 0 {
            self.table
                .replace(jn.loc, Ent::regular(j.sym(), j.pcolor(), bitmap, r_max))?;
        } else {
            self.table.update(
                Loc {
                    h: hd as u32,
                    color: r_color,
                },
                |e| e.set_loc(r_max),
            )?;
            let top = Ent::jump(j.sym(), j.pcolor(), &syms[..at], r_color, r_max);
            self.table.replace(jn.loc, top)?;
        }
        self.link_after(w, pred, l)?;
        if c > sd {
            self.fix_max(path, path.len() - 2, &[(j.loc(), l)])?;
        }
        Ok(jn.depth + at + 1)
    }
}
