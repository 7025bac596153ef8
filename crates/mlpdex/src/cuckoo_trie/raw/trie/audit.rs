//! The audit: every invariant of the trie (module docs of `trie`) and of the table, checked by
//! a full walk; slow, for tests.

use core::sync::atomic::Ordering::Relaxed;

use super::super::table::{Ent, JUMP, JUMP_MAX, LEAF, Loc, REGULAR};
use super::{RawTrie, unpack};

impl RawTrie {
    /// Checks every invariant of the module docs and of the table; slow.
    pub(crate) fn audit(&self) -> Result<(), String> {
        let t = &self.table;
        let root = t.get(self.root);
        if root.kind() != REGULAR {
            return Err("root is not a regular node".into());
        }
        // DFS in key order, checking structure, names, maxima and the leaf list.
        struct Frame {
            loc: Loc,
            ent: Ent,
            name: Vec<u32>,
            rem: u64,
            first_leaf_idx: usize,
        }
        let mut leaves: Vec<Loc> = Vec::new();
        let mut nodes = 1usize;
        let mut stack = vec![Frame {
            loc: self.root,
            ent: root,
            name: Vec::new(),
            rem: root.bitmap(),
            first_leaf_idx: 0,
        }];
        let mut last_key: Option<&[u8]> = None;
        while let Some(f) = stack.last_mut() {
            if f.rem == 0 {
                let f = stack.pop().expect("non-empty");
                let want = if leaves.len() > f.first_leaf_idx {
                    *leaves.last().expect("non-empty")
                } else {
                    Loc::NULL
                };
                if f.ent.loc() != want {
                    return Err(format!(
                        "node {:?} (name {:?}) has max {:?}, its last leaf is {want:?}",
                        f.loc,
                        f.name,
                        f.ent.loc()
                    ));
                }
                continue;
            }
            let c = f.rem.trailing_zeros();
            f.rem &= f.rem - 1;
            let mut name = f.name.clone();
            name.push(c);
            let h = t.hasher.step(f.loc.h.into(), c);
            let Some((_, mut e)) = t.find_by_parent(h, c, f.ent.color()) else {
                return Err(format!("child {c} of {:?} missing", f.loc));
            };
            let mut loc = Loc {
                h: h as u32,
                color: e.color(),
            };
            if e.by_color() {
                return Err(format!(
                    "child {loc:?} of a regular node is marked by-color"
                ));
            }
            nodes += 1;
            // Follow jump chains.
            let first_leaf_idx = leaves.len();
            let mut chain_heads = Vec::new();
            while e.kind() == JUMP {
                if !(1..=JUMP_MAX).contains(&e.jump_len()) {
                    return Err(format!("jump {loc:?} has length {}", e.jump_len()));
                }
                chain_heads.push((loc, e));
                let mut hh = u64::from(loc.h);
                for k in 0..e.jump_len() {
                    let s = e.jump_sym(k);
                    if s == 0 {
                        return Err(format!("jump {loc:?} holds the end symbol"));
                    }
                    name.push(s);
                    hh = t.hasher.step(hh, s);
                }
                loc = Loc {
                    h: hh as u32,
                    color: e.jump_child(),
                };
                let Some((_, ce)) = t.find_loc(loc) else {
                    return Err(format!("jump child {loc:?} missing"));
                };
                if ce.kind() == LEAF {
                    return Err(format!("jump above leaf {loc:?}"));
                }
                if !ce.by_color() {
                    return Err(format!("jump child {loc:?} lacks the by-color bit"));
                }
                e = ce;
                nodes += 1;
            }
            match e.kind() {
                LEAF => {
                    // SAFETY: a leaf of this trie under `&self`.
                    let key = unsafe { self.key_of(e) };
                    for (k, &s) in name.iter().enumerate() {
                        if self.syms.at(key, k) != s {
                            return Err(format!(
                                "leaf {loc:?} key {} does not match its name at symbol {k} of {}",
                                crate::key::Escaped(key),
                                name.len()
                            ));
                        }
                    }
                    if name.len() > self.syms.count(key.len()) {
                        return Err(format!("leaf {loc:?} deeper than its key"));
                    }
                    if let Some(prev) = last_key
                        && prev >= key
                    {
                        return Err(format!("leaves out of order at {loc:?}"));
                    }
                    last_key = Some(key);
                    leaves.push(loc);
                }
                REGULAR => {
                    if e.bitmap().count_ones() < 2 {
                        return Err(format!("regular node {loc:?} has < 2 children"));
                    }
                    // Chain heads check their max against the regular node's when it closes:
                    // check them now through the regular node's own max (same subtree).
                    for (jl, je) in &chain_heads {
                        if je.loc() != e.loc() {
                            return Err(format!("jump {jl:?} max differs from its child's"));
                        }
                    }
                    stack.push(Frame {
                        loc,
                        ent: e,
                        name,
                        rem: e.bitmap(),
                        first_leaf_idx,
                    });
                }
                k => return Err(format!("entry {loc:?} of kind {k}")),
            }
        }
        if leaves.len() != self.len() {
            return Err(format!("{} leaves, len {}", leaves.len(), self.len()));
        }
        // The leaf list.
        let mut cur = unpack(self.head.load(Relaxed));
        for (k, &l) in leaves.iter().enumerate() {
            if cur != l {
                return Err(format!("leaf list position {k}: {cur:?}, expected {l:?}"));
            }
            cur = t.get(l).loc();
        }
        if !cur.is_null() {
            return Err("leaf list runs past the last leaf".into());
        }
        let leaf_ents: Vec<Ent> = leaves.iter().map(|&l| t.get(l)).collect();
        let key_entries = self.audit_key_index(&leaf_ents)?;
        if t.used() != nodes + key_entries {
            return Err(format!(
                "table holds {} entries, trie {nodes} nodes and {key_entries} key entries",
                t.used()
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (h, e) in t.entries() {
            if !seen.insert((h, e.color())) {
                return Err(format!("color {} used twice under hash {h}", e.color()));
            }
        }
        if seen.len() != t.used() {
            return Err("used count differs from the table's content".into());
        }
        Ok(())
    }
}
