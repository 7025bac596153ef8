//! Insertion: a fresh color under the entry's full hash, and a breadth-first cuckoo path when
//! both buckets are full (§4.2).

use super::entry::{F_COLOR, F_SEC, F_TAG};
use super::session::{decode, first_byte};
use super::{COLORS, EMPTY, Ent, Full, Loc, SLOTS, Slot, TAGS, Table};

/// Breadth-first cuckoo search limit, in buckets visited.
const BFS_NODES: usize = 512;

impl Table {
    /// Inserts `e` (whose position fields are ignored) under full hash `h` with a fresh color,
    /// relocating other entries if both buckets are full. Returns the new entry's locator.
    pub(crate) fn insert(&self, h: u64, e: Ent) -> Result<Loc, Full> {
        self.insert_at(h, e).map(|(l, _)| l)
    }

    /// [`insert`](Self::insert), also returning where the entry went (valid until the next
    /// cuckoo relocation: see [`moves`](Self::moves)).
    pub(crate) fn insert_at(&self, h: u64, mut e: Ent) -> Result<(Loc, Slot), Full> {
        debug_assert!(e.kind() != EMPTY);
        let (b1, b2) = self.hasher.buckets(h);
        let tag = (h % TAGS) as u8;
        // One pass over both buckets: colors in use under `h`, and the first free slot.
        let mut used = 0u32;
        let mut free: Option<Slot> = None;
        for (bucket, sec) in [(b1, 0u8), (b2, 1u8)] {
            let want = (tag << F_TAG.0) | (sec << F_SEC.0);
            let words = self.words(bucket);
            for idx in 0..SLOTS {
                let first = first_byte(idx, |i| words[i]);
                if first & 0x03 == 0 {
                    if free.is_none() {
                        free = Some(Slot { bucket, idx });
                    }
                } else if first & 0x7C == want {
                    used |= 1 << decode(idx, |i| words[i]).color();
                }
            }
        }
        if used == (1 << COLORS) - 1 {
            return Err(Full);
        }
        let color = used.trailing_ones() as u8;
        e.set(F_COLOR, color.into());
        e.set(F_TAG, h % TAGS);
        let slot = match free {
            Some(s) => s,
            None => self.make_room_slow(b1, b2)?,
        };
        e.set(F_SEC, u64::from(slot.bucket != b1));
        self.write(slot, e);
        self.count(1);
        Ok((Loc { h: h as u32, color }, slot))
    }

    fn free_slot(&self, bucket: usize) -> Option<usize> {
        (0..SLOTS).find(|&idx| self.read(Slot { bucket, idx }).kind() == EMPTY)
    }

    /// Frees a slot in `b1` or `b2` by a breadth-first search for a cuckoo path, moving entries
    /// from the path's end backwards so every entry stays in one of its two buckets. (In a
    /// shared table the moves are copies committed together, so readers never see an entry in
    /// neither or both of its buckets.)
    #[cold]
    fn make_room_slow(&self, b1: usize, b2: usize) -> Result<Slot, Full> {
        struct Node {
            bucket: usize,
            parent: usize,
            pslot: usize,
        }
        let mut nodes: Vec<Node> = Vec::with_capacity(64);
        nodes.push(Node {
            bucket: b1,
            parent: usize::MAX,
            pslot: 0,
        });
        if b2 != b1 {
            nodes.push(Node {
                bucket: b2,
                parent: usize::MAX,
                pslot: 0,
            });
        }
        let on_path = |nodes: &[Node], mut k: usize, b: usize| {
            while k != usize::MAX {
                if nodes[k].bucket == b {
                    return true;
                }
                k = nodes[k].parent;
            }
            false
        };
        let mut head = 0;
        while head < nodes.len() && nodes.len() < BFS_NODES {
            let bucket = nodes[head].bucket;
            for idx in 0..SLOTS {
                let victim = self.read(Slot { bucket, idx });
                let alt = self.hasher.other_bucket(bucket, victim.tag(), victim.sec());
                if alt == bucket || on_path(&nodes, head, alt) {
                    continue;
                }
                if let Some(free) = self.free_slot(alt) {
                    self.moved();
                    // Move the victim out, then each parent's victim into the slot it freed.
                    let mut to = Slot {
                        bucket: alt,
                        idx: free,
                    };
                    let mut from = Slot { bucket, idx };
                    let mut k = head;
                    loop {
                        let mut moved = self.read(from);
                        moved.set(F_SEC, u64::from(!moved.sec()));
                        self.write(to, moved);
                        to = from;
                        if nodes[k].parent == usize::MAX {
                            self.write(to, Ent::EMPTY);
                            return Ok(to);
                        }
                        from = Slot {
                            bucket: nodes[nodes[k].parent].bucket,
                            idx: nodes[k].pslot,
                        };
                        k = nodes[k].parent;
                    }
                }
                nodes.push(Node {
                    bucket: alt,
                    parent: head,
                    pslot: idx,
                });
            }
            head += 1;
        }
        Err(Full)
    }
}
