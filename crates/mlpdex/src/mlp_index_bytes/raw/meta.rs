//! The prefix table: one node per distinct prefix of the leaves' anchors, in an
//! open-addressing hash table with one 64-byte node per slot.
//!
//! A node for prefix `P` records how the anchors that start with `P` continue: whether `P` is
//! itself a leaf's anchor, the next bytes (its *kids*), for each kid the leaf just before that
//! kid's subtree, the last leaf under `P` and how many anchors are under `P`. That is enough to
//! name the leaf of any key whose longest prefix in the table is `P`, without reading a second
//! node (see [`Nodes::leaf_of`]). The set of prefixes is closed under taking prefixes, which
//! is what lets a search binary-search over prefix lengths.
//!
//! Slots hold the full 64-bit hash of the prefix and its length, not its bytes: a match is a
//! hint that the leaf's fences confirm (see the map's contract).

use super::NONE;
use crate::Error;
use crate::substrate::prefetch::prefetch_read;

/// Kids kept in the node itself; more go to a side list.
const INLINE_KIDS: usize = 6;

/// One prefix.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) hash: u64,
    /// Prefix length; [`NONE`] marks an empty slot.
    pub(crate) len: u32,
    /// The leaf whose anchor is this prefix, or [`NONE`].
    pub(crate) anchor: u32,
    /// The last leaf (in key order) whose anchor starts with this prefix.
    pub(crate) rmost: u32,
    /// Anchors that start with this prefix.
    pub(crate) nanch: u32,
    nkids: u16,
    /// The first kids' bytes, ascending (all of them while `nkids <= INLINE_KIDS`).
    kids: [u8; INLINE_KIDS],
    /// Index of the side list when `nkids > INLINE_KIDS`.
    spill: u32,
    /// `before[i]`: the leaf just before the subtree of kid `kids[i]`.
    before: [u32; INLINE_KIDS],
}

const _: () = assert!(core::mem::size_of::<Node>() == 64);

const EMPTY: Node = Node {
    hash: 0,
    len: NONE,
    anchor: NONE,
    rmost: NONE,
    nanch: 0,
    nkids: 0,
    kids: [0; INLINE_KIDS],
    spill: NONE,
    before: [NONE; INLINE_KIDS],
};

/// A rehashed copy of the table's slots (see [`Nodes::grown`]).
pub(crate) struct GrownSlots(Vec<Node>);

/// Kids of a node with many.
#[derive(Clone, Debug, Default)]
struct Spill {
    bytes: Vec<u8>,
    before: Vec<u32>,
}

/// The table.
#[derive(Clone, Debug)]
pub(crate) struct Nodes {
    slots: Vec<Node>,
    mask: usize,
    used: usize,
    spills: Vec<Spill>,
    free_spills: Vec<u32>,
}

impl Nodes {
    pub(crate) fn new() -> Self {
        Nodes {
            slots: vec![EMPTY; 16],
            mask: 15,
            used: 0,
            spills: Vec::new(),
            free_spills: Vec::new(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<Node>()
            + self.spills.capacity() * core::mem::size_of::<Spill>()
            + self
                .spills
                .iter()
                .map(|s| s.bytes.capacity() + 4 * s.before.capacity())
                .sum::<usize>()
    }

    #[inline(always)]
    pub(crate) fn prefetch(&self, hash: u64) {
        prefetch_read(&self.slots[hash as usize & self.mask]);
    }

    /// The slot of the node with this hash and length.
    #[inline(always)]
    pub(crate) fn find(&self, hash: u64, len: u32) -> Option<usize> {
        let mut i = hash as usize & self.mask;
        loop {
            let n = &self.slots[i];
            if n.len == NONE {
                return None;
            }
            if n.hash == hash && n.len == len {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline(always)]
    pub(crate) fn node(&self, slot: usize) -> &Node {
        &self.slots[slot]
    }

    #[inline(always)]
    pub(crate) fn node_mut(&mut self, slot: usize) -> &mut Node {
        &mut self.slots[slot]
    }

    /// The slot of the node with this hash and length, made empty (no anchor, no kids) if absent;
    /// and whether it was made. Slots move when the table grows: do not keep one across calls.
    pub(crate) fn find_or_insert(&mut self, hash: u64, len: u32) -> (usize, bool) {
        if let Some(s) = self.find(hash, len) {
            return (s, false);
        }
        if (self.used + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mut i = hash as usize & self.mask;
        while self.slots[i].len != NONE {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = Node { hash, len, ..EMPTY };
        self.used += 1;
        (i, true)
    }

    fn grow(&mut self) {
        if let Err(e) = self.rehash(self.slots.len() * 2) {
            panic!("MlpIndexBytes: the prefix table cannot grow: {e}");
        }
    }

    /// Slots for `nodes` nodes at a load of at most a half.
    fn slots_for(nodes: usize) -> usize {
        nodes.saturating_mul(2).next_power_of_two().max(16)
    }

    /// Makes room for `more` nodes beyond those present without growing.
    pub(crate) fn try_reserve(&mut self, more: usize) -> Result<(), Error> {
        let want = Self::slots_for(self.used.saturating_add(more));
        if want > self.slots.len() {
            self.rehash(want)?;
        }
        Ok(())
    }

    /// Shrinks the table to the size growth would give the nodes present.
    pub(crate) fn shrink_to_fit(&mut self) {
        let want = Self::slots_for(self.used);
        if want < self.slots.len() {
            // A refusal keeps the larger table, which is as good.
            let _ = self.rehash(want);
        }
        self.spills.shrink_to_fit();
        self.free_spills.shrink_to_fit();
    }

    /// Moves the nodes to a table of `len` slots (a power of two over twice the nodes).
    fn rehash(&mut self, len: usize) -> Result<(), Error> {
        let slots = self.rehashed(len)?;
        self.install(slots);
        Ok(())
    }

    /// The nodes in a new table of `len` slots (a power of two over twice the nodes).
    fn rehashed(&self, len: usize) -> Result<GrownSlots, Error> {
        debug_assert!(len.is_power_of_two() && len >= 2 * self.used);
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(len)
            .map_err(|_| Error::OutOfMemory {
                bytes: len.saturating_mul(core::mem::size_of::<Node>()),
            })?;
        slots.resize(len, EMPTY);
        let mask = len - 1;
        for n in self.slots.iter().filter(|n| n.len != NONE) {
            let mut i = n.hash as usize & mask;
            while slots[i].len != NONE {
                i = (i + 1) & mask;
            }
            slots[i] = *n;
        }
        Ok(GrownSlots(slots))
    }

    /// A copy of the table with room for `more` nodes beyond those present, when the table
    /// itself would grow before they fit; built through `&self`.
    pub(crate) fn grown(&self, more: usize) -> Result<Option<GrownSlots>, Error> {
        let want = Self::slots_for(self.used.saturating_add(more));
        if want <= self.slots.len() {
            return Ok(None);
        }
        self.rehashed(want).map(Some)
    }

    /// Replaces the table with `slots`, a copy of it from [`grown`](Self::grown) (or
    /// `rehashed`) with no change since.
    pub(crate) fn install(&mut self, slots: GrownSlots) {
        debug_assert_eq!(
            slots.0.iter().filter(|n| n.len != NONE).count(),
            self.used,
            "the table changed since it was copied"
        );
        self.mask = slots.0.len() - 1;
        self.slots = slots.0;
    }

    /// Slots in the table.
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Removes the node in `slot` (it must have no kids), closing the probe run behind it.
    pub(crate) fn remove(&mut self, slot: usize) {
        debug_assert_eq!(self.slots[slot].nkids, 0);
        let mut hole = slot;
        let mut i = (slot + 1) & self.mask;
        while self.slots[i].len != NONE {
            let home = self.slots[i].hash as usize & self.mask;
            // Move the entry back when the hole lies on its probe path from `home`.
            if (i.wrapping_sub(home) & self.mask) >= (i.wrapping_sub(hole) & self.mask) {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
            i = (i + 1) & self.mask;
        }
        self.slots[hole] = EMPTY;
        self.used -= 1;
    }

    /// Kids of the node in `slot`: bytes ascending and, for each, the leaf before its subtree.
    #[inline(always)]
    pub(crate) fn kids(&self, slot: usize) -> (&[u8], &[u32]) {
        let n = &self.slots[slot];
        let k = n.nkids as usize;
        if k <= INLINE_KIDS {
            (&n.kids[..k], &n.before[..k])
        } else {
            let s = &self.spills[n.spill as usize];
            (&s.bytes, &s.before)
        }
    }

    /// The leaf a key belongs to when `slot` holds its longest prefix in the table, `P`, of
    /// length `m`, and `next` is the key's byte after `P` (`None`: the key is `P`). `next` is
    /// not a kid of `P`.
    ///
    /// The key lies after every anchor in the kids' subtrees below `next` and before every
    /// anchor in those above it: its leaf is the one just before the first kid above `next`,
    /// or, when there is none, the last leaf under `P`. A key equal to `P` lies at `P`'s own
    /// leaf when `P` is an anchor.
    #[inline(always)]
    pub(crate) fn leaf_of(&self, slot: usize, next: Option<u8>) -> u32 {
        let n = &self.slots[slot];
        if next.is_none() && n.anchor != NONE {
            return n.anchor;
        }
        let (bytes, before) = self.kids(slot);
        let i = match next {
            None => 0,
            Some(b) => bytes.partition_point(|&k| k <= b),
        };
        match before.get(i) {
            Some(&leaf) => leaf,
            None => n.rmost,
        }
    }

    /// When every key under the node in `slot` belongs to one of at most two leaves, the
    /// first of them and, when there are two, the second. The leaves under a node are its own
    /// (when it is an anchor) and, otherwise, the one before its first kid, then one per anchor.
    #[inline(always)]
    pub(crate) fn narrow(&self, slot: usize) -> Option<(u32, u32)> {
        let n = &self.slots[slot];
        let (first, count) = if n.anchor != NONE {
            (n.anchor, n.nanch)
        } else {
            (*self.kids(slot).1.first()?, n.nanch + 1)
        };
        match count {
            1 => Some((first, NONE)),
            2 => Some((first, n.rmost)),
            _ => None,
        }
    }

    /// Adds kid `byte` (absent) with `before`.
    pub(crate) fn add_kid(&mut self, slot: usize, byte: u8, before: u32) {
        let k = self.slots[slot].nkids as usize;
        if k < INLINE_KIDS {
            let n = &mut self.slots[slot];
            let i = n.kids[..k].partition_point(|&b| b < byte);
            debug_assert!(n.kids[..k].get(i) != Some(&byte));
            n.kids.copy_within(i..k, i + 1);
            n.before.copy_within(i..k, i + 1);
            n.kids[i] = byte;
            n.before[i] = before;
            n.nkids += 1;
            return;
        }
        if k == INLINE_KIDS {
            let n = self.slots[slot];
            let spill = Spill {
                bytes: n.kids.to_vec(),
                before: n.before.to_vec(),
            };
            let at = match self.free_spills.pop() {
                Some(at) => {
                    self.spills[at as usize] = spill;
                    at
                }
                None => {
                    self.spills.push(spill);
                    (self.spills.len() - 1) as u32
                }
            };
            self.slots[slot].spill = at;
        }
        let at = self.slots[slot].spill as usize;
        let s = &mut self.spills[at];
        let i = s.bytes.partition_point(|&b| b < byte);
        debug_assert!(s.bytes.get(i) != Some(&byte));
        s.bytes.insert(i, byte);
        s.before.insert(i, before);
        self.slots[slot].nkids += 1;
    }

    /// Removes kid `byte` (present).
    pub(crate) fn remove_kid(&mut self, slot: usize, byte: u8) {
        let k = self.slots[slot].nkids as usize;
        if k <= INLINE_KIDS {
            let n = &mut self.slots[slot];
            let i = n.kids[..k].partition_point(|&b| b < byte);
            debug_assert_eq!(n.kids[i], byte);
            n.kids.copy_within(i + 1..k, i);
            n.before.copy_within(i + 1..k, i);
            n.nkids -= 1;
            return;
        }
        let at = self.slots[slot].spill as usize;
        let s = &mut self.spills[at];
        let i = s.bytes.partition_point(|&b| b < byte);
        debug_assert_eq!(s.bytes[i], byte);
        s.bytes.remove(i);
        s.before.remove(i);
        if k - 1 == INLINE_KIDS {
            let s = core::mem::take(&mut self.spills[at]);
            let n = &mut self.slots[slot];
            n.kids.copy_from_slice(&s.bytes);
            n.before.copy_from_slice(&s.before);
            n.spill = NONE;
            self.free_spills.push(at as u32);
        }
        self.slots[slot].nkids -= 1;
    }

    /// Replaces the `before` leaf of kid `byte` when it is `from`.
    pub(crate) fn retarget_kid(&mut self, slot: usize, byte: u8, from: u32, to: u32) {
        let Ok(i) = self.kids(slot).0.binary_search(&byte) else {
            return;
        };
        let k = self.slots[slot].nkids as usize;
        let b = if k <= INLINE_KIDS {
            &mut self.slots[slot].before[i]
        } else {
            let at = self.slots[slot].spill as usize;
            &mut self.spills[at].before[i]
        };
        if *b == from {
            *b = to;
        }
    }

    /// Whether `byte` is a kid of the node in `slot`.
    pub(crate) fn has_kid(&self, slot: usize, byte: u8) -> bool {
        self.kids(slot).0.binary_search(&byte).is_ok()
    }

    /// Nodes in the table.
    pub(crate) fn len(&self) -> usize {
        self.used
    }
}
