//! Deletion (§4.5, beyond the paper's implementation): unlinking a leaf, collapsing a tail
//! and merging jump nodes.

use super::super::table::{Ent, JUMP, JUMP_MAX, LEAF, Loc, Torn};
use super::{End, PathNode, RawTrie, Scratch};

impl RawTrie {
    /// Removes `key`; returns its record. In a shared table the changes wait in the caller's
    /// write session for its commit, and `Err(Torn)` asks for a new run.
    pub(crate) fn remove(&self, w: &mut Scratch, key: &[u8]) -> Result<Option<*mut u8>, Torn> {
        let mut path = core::mem::take(&mut w.path);
        path.clear();
        let result = (|| {
            let (end, _) = self.descend::<true>(key, Some(&mut path))?;
            let found = match end {
                // SAFETY: a leaf of this trie, record alive until we return it.
                End::Leaf { ent, .. } if unsafe { self.key_of(ent) } == key => Some(ent.rec()),
                _ => None,
            };
            if let Some(rec) = found {
                self.remove_key_entry(key, rec)?;
                self.remove_leaf(w, &path)?;
                self.count(w, -1);
            }
            Ok(found)
        })();
        w.path = path;
        w.settle();
        self.refresh_root();
        result
    }

    /// Whether the table is so empty that a smaller one ([`shrunk`](Self::shrunk)) should
    /// replace it: under a quarter of the load limit, and larger than the first table.
    pub(crate) fn wants_shrink(&self) -> bool {
        self.table.buckets() > self.params.initial_buckets.max(64)
            && (self.table.used() as f64)
                < self.table.capacity() as f64 * self.params.max_load_factor / 4.0
    }

    /// Unlinks the leaf at the end of `path` (§4.5, deletion).
    fn remove_leaf(&self, w: &mut Scratch, path: &[PathNode]) -> Result<(), Torn> {
        let leaf = path[path.len() - 1];
        let n_idx = path.len() - 2;
        let n = path[n_idx];
        let pred = self.resolve(leaf.cand_before)?;
        let nxt = leaf.ent.loc();
        self.link_after(w, pred, nxt)?;
        self.table.remove(leaf.loc)?;
        let c = leaf.ent.sym();
        let bm = n.ent.bitmap() & !(1u64 << c);
        self.table.update(n.loc, |e| e.set_bitmap(bm))?;
        let pred_loc = pred.map_or(Loc::NULL, |(l, _)| l);
        if n_idx == 0 || bm.count_ones() != 1 {
            return self.fix_max(path, n_idx, &[(leaf.loc, pred_loc)]);
        }
        // `n` has one child left.
        let r = bm.trailing_zeros();
        let hx = self.table.hasher.step(n.loc.h.into(), r);
        let x = self.table.child(hx, r, n.ent.color())?;
        let x_old = Loc {
            h: hx as u32,
            color: x.color(),
        };
        if x.kind() == LEAF {
            // A tail: the remaining leaf moves up to the top of the single-child run.
            let mut t = n_idx;
            while path[t - 1].ent.kind() == JUMP {
                t -= 1;
                if t == 0 {
                    // The root is a regular node: only torn copies end here.
                    return Err(self.torn());
                }
            }
            let top = path[t];
            let x_new = top.loc;
            let moved = Ent::leaf(
                top.ent.sym(),
                top.ent.pcolor(),
                x.rec(),
                x.key_len(),
                x.loc(),
            );
            self.table.remove(x_old)?;
            for p in &path[t + 1..=n_idx] {
                self.table.remove(p.loc)?;
            }
            self.table.replace(top.loc, moved)?;
            if r > c {
                // x followed the removed key: its predecessor is `pred`.
                self.link_after(w, pred, x_new)?;
            } else {
                // x preceded it (pred == x): relink x's own predecessor.
                let before = self.resolve(top.cand_before)?;
                self.link_after(w, before, x_new)?;
            }
            let pred_new = if pred_loc == x_old { x_new } else { pred_loc };
            return self.fix_max(path, t - 1, &[(leaf.loc, pred_new), (x_old, x_new)]);
        }
        // `n` becomes a jump node over symbol r (absorbing x when x is a short jump).
        let mut syms = vec![r];
        let mut child = x.color();
        if x.kind() == JUMP && x.jump_len() < JUMP_MAX {
            let (xs, xn) = x.jump_syms();
            syms.extend_from_slice(&xs[..xn]);
            child = x.jump_child();
            self.table.remove(x_old)?;
        } else {
            // x now hangs under a jump node: found by color only.
            self.table.update(x_old, |e| *e = e.with_by_color(true))?;
        }
        let cur_max = self.table.fetch(n.loc)?.loc();
        let mut walk_from = n_idx;
        let parent = path[n_idx - 1];
        if parent.ent.kind() == JUMP && parent.ent.jump_len() + syms.len() <= JUMP_MAX {
            let (ps, pn) = parent.ent.jump_syms();
            let mut all = ps[..pn].to_vec();
            all.extend_from_slice(&syms);
            let merged = Ent::jump(parent.ent.sym(), parent.ent.pcolor(), &all, child, cur_max);
            self.table.remove(n.loc)?;
            self.table.replace(parent.loc, merged)?;
            walk_from = n_idx - 1;
        } else {
            let e = Ent::jump(n.ent.sym(), n.ent.pcolor(), &syms, child, cur_max);
            self.table.replace(n.loc, e)?;
        }
        self.fix_max(path, walk_from, &[(leaf.loc, pred_loc)])
    }
}
