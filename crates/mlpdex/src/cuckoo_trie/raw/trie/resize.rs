//! Growth and shrinking: a copy of the trie into a table of another size, walked in preorder
//! with the next children's buckets in flight.

use core::sync::atomic::Ordering::Relaxed;

use super::super::table::{Ent, FrozenRead, Full, JUMP, LEAF, Loc, REGULAR, SLOTS, Table};
use super::{RawTrie, broken};
use crate::Error;

/// Table entries per key that [`RawTrie::reserved`] plans for: the leaf and a share of the
/// internal nodes. Random 8-byte keys measured about 1.3 (10M keys: 42.8 bytes per key,
/// 16 of them the record, at 75% load); keys with long shared prefixes need more, and the map
/// still grows when they do.
const ENTRIES_PER_KEY: f64 = 1.5;
/// Children whose buckets (old and new table) a rebuild keeps in flight.
const REBUILD_WINDOW: u32 = 8;

impl RawTrie {
    /// A copy of this trie in a table of twice the buckets (readers may keep using `self`
    /// meanwhile: it only reads). A shared table must be frozen first
    /// ([`Table::freeze`]): the copy reads it as one that cannot change.
    #[cold]
    pub(crate) fn grown(&self) -> Result<RawTrie, Error> {
        self.resized(self.table.buckets() * 2)
    }

    /// A copy of this trie in a table sized for its entries at half the load limit.
    #[cold]
    pub(crate) fn shrunk(&self) -> Result<RawTrie, Error> {
        let entries = self.table.used();
        let want = (entries as f64 / (self.params.max_load_factor / 2.0) / 4.0).ceil() as usize;
        self.resized(want.max(self.params.initial_buckets))
    }

    /// A copy of this trie in a table large enough that `keys` keys fit without growing, or
    /// `None` when this one already is. The estimate is [`ENTRIES_PER_KEY`] entries per key;
    /// the table doubles from its size, so a power-of-two table stays one (its hash reduces
    /// with a mask).
    #[cold]
    pub(crate) fn reserved(&self, keys: usize) -> Result<Option<RawTrie>, Error> {
        let entries = (keys as f64 * ENTRIES_PER_KEY).ceil() + 1.0;
        let slots = entries / self.params.max_load_factor;
        let mut buckets = self.table.buckets();
        if (buckets * SLOTS) as f64 >= slots {
            return Ok(None);
        }
        while ((buckets * SLOTS) as f64) < slots {
            buckets = buckets
                .checked_mul(2)
                .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        }
        self.resized(buckets).map(Some)
    }

    fn resized(&self, mut buckets: usize) -> Result<RawTrie, Error> {
        let _frozen = self.table.is_shared().then(FrozenRead::begin);
        let mut seed = self.seed;
        for attempt in 0u64.. {
            seed = seed.wrapping_add(0x9E37_79B9 + attempt);
            let mut table = Table::with_buckets(buckets, seed, self.params.huge_pages)?;
            match self.rebuild_into(&table) {
                Ok((root, head)) => {
                    table.set_shared(self.table.is_shared());
                    return Ok(Self::assemble(
                        table,
                        self.params,
                        seed,
                        root,
                        head,
                        self.len(),
                        (self.depth_avg.load(Relaxed), self.horizon.load(Relaxed)),
                    ));
                }
                Err(Full) => buckets = buckets + buckets / 2 + 1,
            }
        }
        unreachable!()
    }

    /// Copies the trie into `new` (preorder, so parents' colors are known before their
    /// children's entries are written), patching leaf links and maxima as subtrees close.
    fn rebuild_into(&self, new: &Table) -> Result<(Loc, Loc), Full> {
        /// A node with children left to copy; `oha`/`nha` are `mul_a` of its hash in the old
        /// and new table (a child's hash is then one addition away).
        struct Frame {
            oha: u64,
            oc: u8,
            nha: u64,
            nc: u8,
            rem: u64,
            pstart: usize,
        }
        let old = &self.table;
        // `new` is not shared yet: its entries are where the copy put them.
        let link = |l: Loc, next: Loc| {
            new.update(l, |e| e.set_loc(next))
                .expect("an unshared table is never torn");
        };
        let oroot = old.get(self.root);
        let root_ent = Ent::regular(0, 0, oroot.bitmap(), Loc::NULL).with_by_color(true);
        let root = new.insert(0, root_ent)?;
        let mut pending = vec![root];
        let mut stack = vec![Frame {
            oha: 0,
            oc: self.root.color,
            nha: 0,
            nc: root.color,
            rem: oroot.bitmap(),
            pstart: 0,
        }];
        let mut prev = Loc::NULL;
        let mut head = Loc::NULL;
        let mut chain: Vec<(Ent, u64, u32)> = Vec::new();
        let warm = |new: &Table, oha: u64, nha: u64, mut rem: u64| {
            for _ in 0..REBUILD_WINDOW {
                if rem == 0 {
                    break;
                }
                let c = rem.trailing_zeros();
                old.prefetch(old.hasher.child(oha, c));
                new.prefetch(new.hasher.child(nha, c));
                rem &= rem - 1;
            }
        };
        warm(new, 0, 0, oroot.bitmap());
        while let Some(f) = stack.last_mut() {
            if f.rem == 0 {
                let start = f.pstart;
                stack.pop();
                for l in pending.drain(start..) {
                    link(l, prev);
                }
                continue;
            }
            let c = f.rem.trailing_zeros();
            f.rem &= f.rem - 1;
            // Children's hashes in both tables follow from the bitmap: keep the buckets of the
            // child REBUILD_WINDOW places ahead in flight (the walk is otherwise a chain of
            // dependent misses).
            let mut ahead = f.rem;
            for _ in 1..REBUILD_WINDOW {
                ahead &= ahead.wrapping_sub(1);
            }
            if ahead != 0 {
                let a = ahead.trailing_zeros();
                old.prefetch(old.hasher.child(f.oha, a));
                new.prefetch(new.hasher.child(f.nha, a));
            }
            let (oh, nh, oc, nc) = (
                old.hasher.child(f.oha, c),
                new.hasher.child(f.nha, c),
                f.oc,
                f.nc,
            );
            let Some((_, ce)) = old.find_by_parent(oh, c, oc) else {
                broken("a child bit without its child")
            };
            match ce.kind() {
                LEAF => {
                    let l = new.insert(nh, Ent::leaf(c, nc, ce.rec(), ce.key_len(), Loc::NULL))?;
                    if prev.is_null() {
                        head = l;
                    } else {
                        link(prev, l);
                    }
                    prev = l;
                }
                REGULAR => {
                    let l = new.insert(nh, Ent::regular(c, nc, ce.bitmap(), Loc::NULL))?;
                    let (oha, nha) = (old.hasher.mul_a(oh), new.hasher.mul_a(nh));
                    warm(new, oha, nha, ce.bitmap());
                    let pstart = pending.len();
                    pending.push(l);
                    stack.push(Frame {
                        oha,
                        oc: ce.color(),
                        nha,
                        nc: l.color,
                        rem: ce.bitmap(),
                        pstart,
                    });
                }
                _ => {
                    chain.clear();
                    let (mut e, mut ohh, mut nhh, mut last) = (ce, oh, nh, c);
                    let r = loop {
                        chain.push((e, nhh, last));
                        let (s, k) = e.jump_syms();
                        for &x in &s[..k] {
                            ohh = old.hasher.step(ohh, x);
                            nhh = new.hasher.step(nhh, x);
                            last = x;
                        }
                        let ch = old.get(Loc {
                            h: ohh as u32,
                            color: e.jump_child(),
                        });
                        if ch.kind() == JUMP {
                            e = ch;
                        } else {
                            debug_assert_eq!(ch.kind(), REGULAR);
                            break ch;
                        }
                    };
                    let r_ent = Ent::regular(last, 0, r.bitmap(), Loc::NULL).with_by_color(true);
                    let rl = new.insert(nhh, r_ent)?;
                    let (oha, nha) = (old.hasher.mul_a(ohh), new.hasher.mul_a(nhh));
                    warm(new, oha, nha, r.bitmap());
                    let pstart = pending.len();
                    pending.push(rl);
                    let mut child = rl.color;
                    for (k, &(je, jh, js)) in chain.iter().enumerate().rev() {
                        let (s, n) = je.jump_syms();
                        let pc = if k == 0 { nc } else { 0 };
                        let je = Ent::jump(js, pc, &s[..n], child, Loc::NULL).with_by_color(k != 0);
                        let jl = new.insert(jh, je)?;
                        child = jl.color;
                        pending.push(jl);
                    }
                    stack.push(Frame {
                        oha,
                        oc: r.color(),
                        nha,
                        nc: rl.color,
                        rem: r.bitmap(),
                        pstart,
                    });
                }
            }
        }
        Ok((root, head))
    }
}
