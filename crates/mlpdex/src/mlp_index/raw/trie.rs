//! The trie over the table: search of all index lengths at once, insertion, deletion, seeks
//! and the in-order cursor.
//!
//! Structure (invariants, checked by [`RawIndex::audit`]):
//! 1. Every key `x` has exactly one leaf, whose index is `x`'s first `len` bytes for some
//!    3 ≤ `len` ≤ 8; its parent is the node whose string `x` continues, or the top bitmap when
//!    `len` = 3.
//! 2. A node with index length `len` has string length `pc` (`len ≤ pc ≤ 7`), at least two
//!    children, and `min` = the smallest key below it; child `c` is the item with index
//!    `min[0..pc] ++ c`, of length `pc + 1`. Path compression is complete: no node has one
//!    child.
//! 3. The top bit of a 3-byte prefix is set iff an item has that prefix as its index.
//! 4. `cnt[len]` counts the items of index length `len`; lengths with none are not probed.
//!
//! Because a search probes every index length 3..=8 at once (`D = 8` for 8-byte keys, one
//! phase), the "incomplete path compression" that multi-phase D-ary searches need adds no
//! intermediate nodes here: the deepest index found is the longest common prefix.

use crate::Error;
use crate::HugePages;

use super::Store;
use super::hash::{MIN_LEN, byte, diff_byte, prefix};
use super::table::{Item, Loc, Node, Probe};
use super::top::{TOP, Top};

/// The top bitmap's prefix of `x`.
#[inline(always)]
fn p3(x: u64) -> u32 {
    (x >> 40) as u32
}

/// What a search found at each index length of a key.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Path {
    pub(crate) loc: [Option<Loc>; 9],
    /// The longest index length found (0: none, the key's 3-byte prefix is absent).
    pub(crate) deepest: u32,
}

/// The map core.
pub(crate) struct RawIndex<T> {
    pub(crate) table: T,
    pub(crate) top: Top,
    len: usize,
    cnt: [usize; 9],
    homeless: Vec<Item>,
    max_load: f64,
    /// Size of the smallest table (a table's size is rounded up to whole pages).
    min_units: usize,
    /// Page size policy of the tables' mappings.
    huge: HugePages,
}

/// Smallest table, in buckets.
const MIN_BUCKETS: usize = super::hash::MIN_BUCKETS;
/// Fraction of the maximum load a grown (or shrunk) table starts at: tables grow by about
/// 1.5×, so the load stays between 2/3 of the maximum and the maximum.
const REFILL: f64 = 2.0 / 3.0;
/// Fraction of the maximum load a table sized by [`RawIndex::reserve`] reaches when the
/// reserved keys are in.
const RESERVE_LOAD: f64 = 0.9;

impl<T: Store> RawIndex<T> {
    pub(crate) fn new(max_load: f64, huge: HugePages) -> Result<RawIndex<T>, Error> {
        let table = T::new(MIN_BUCKETS, huge)?;
        Ok(RawIndex {
            min_units: table.units(),
            table,
            top: Top::new(huge)?,
            len: 0,
            cnt: [0; 9],
            homeless: Vec::new(),
            max_load,
            huge,
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes mapped from the operating system: the table and the top bitmap.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.table.bytes() + self.top.mapped_bytes()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.table.bytes() + self.top.bytes() + self.homeless.capacity() * size_of::<Item>()
    }

    /// The index lengths that have items: bit `len` for each.
    pub(crate) fn lengths(&self) -> u32 {
        (MIN_LEN..=8)
            .filter(|&len| self.cnt[len as usize] != 0)
            .fold(0, |m, len| m | 1 << len)
    }

    /// Grows the table now if `slots` more slots would not fit under the maximum load (the
    /// most an insertion places is a leaf and a node of three entries moved or split), so
    /// that growth happens between operations rather than inside one.
    pub(crate) fn make_room(&mut self, slots: usize) -> Result<(), Error> {
        let need = self.table.used() + slots;
        if need as f64 > self.max_load * self.table.capacity() as f64 {
            self.rebuild(self.grown_size(need), &mut Vec::new())?;
        }
        Ok(())
    }

    /// Probes for every index length of `x` that has items, prefetching all their buckets.
    #[inline(always)]
    fn probes(&self, x: u64) -> [Probe; 9] {
        let mut pr = [Probe::default(); 9];
        for len in MIN_LEN..=8 {
            if self.cnt[len as usize] != 0 {
                let p = self.table.probe(prefix(x, len), len);
                self.table.prefetch(&p);
                pr[len as usize] = p;
            }
        }
        pr
    }

    /// The items on `x`'s path.
    pub(crate) fn path(&self, x: u64) -> Path {
        self.path_of(&self.probes(x))
    }

    /// The items [`probes`](Self::probes) looked for.
    fn path_of(&self, pr: &[Probe; 9]) -> Path {
        let mut path = Path::default();
        for len in MIN_LEN..=8 {
            if self.cnt[len as usize] != 0 {
                let l = self.table.find(&pr[len as usize]);
                if l.is_some() {
                    path.loc[len as usize] = l;
                    path.deepest = len;
                }
            }
        }
        path
    }

    /// The value of `x`.
    #[inline]
    pub(crate) fn get(&self, x: u64) -> Option<u64> {
        let pr = self.probes(x);
        for len in (MIN_LEN..=8).rev() {
            if self.cnt[len as usize] == 0 {
                continue;
            }
            if let Some(l) = self.table.find(&pr[len as usize]) {
                let (leaf, w0) = self.table.word(l);
                return (leaf && self.table.leaf_suffix_is(l, x)).then_some(w0);
            }
        }
        None
    }

    /// Where the leaf of `x` is (as [`get`](Self::get), for callers that want the value in
    /// place).
    #[inline]
    pub(crate) fn leaf(&self, x: u64) -> Option<Loc> {
        let pr = self.probes(x);
        for len in (MIN_LEN..=8).rev() {
            if self.cnt[len as usize] == 0 {
                continue;
            }
            if let Some(l) = self.table.find(&pr[len as usize]) {
                let (leaf, _) = self.table.word(l);
                return (leaf && self.table.leaf_suffix_is(l, x)).then_some(l);
            }
        }
        None
    }

    /// The value of the leaf at `l`, in place.
    #[inline]
    pub(crate) fn value(&self, l: Loc) -> &u64 {
        self.table.value(l)
    }

    /// The value of the leaf at `l`, in place, for writing.
    #[inline]
    pub(crate) fn value_mut(&mut self, l: Loc) -> &mut u64 {
        self.table.value_mut(l)
    }

    /// The address of the value of the leaf at `l` (see [`Store::value_ptr`]).
    #[inline]
    pub(crate) fn value_ptr(&mut self, l: Loc) -> *mut u64 {
        self.table.value_ptr(l)
    }

    #[inline]
    fn find(&self, p: u64, len: u32) -> Option<Loc> {
        self.table.find(&self.table.probe(p, len))
    }

    /// Child `c` of node `n`.
    #[inline]
    fn child(&self, n: &Node, c: u32) -> Loc {
        self.find(n.child_prefix(c), n.pc + 1)
            .expect("invariant 2: every child bit names an item")
    }

    /// Places a new item, growing the table when it is full.
    fn put(&mut self, it: Item) -> Result<(), Error> {
        let need = self.table.used() + 3;
        if need as f64 > self.max_load * self.table.capacity() as f64 {
            let mut none = Vec::new();
            self.rebuild(self.grown_size(need), &mut none)?;
        }
        let mut homeless = core::mem::take(&mut self.homeless);
        let home = self.table.home(&it);
        if self.table.place(it, home, &mut homeless).is_err() {
            let size = self.grown_size(self.table.used() + 3 * homeless.len());
            if let Err(err) = self.rebuild(size, &mut homeless) {
                // The displaced items have nowhere to go: leave a consistent, empty map.
                self.reset();
                return Err(err);
            }
        }
        homeless.clear();
        self.homeless = homeless;
        Ok(())
    }

    /// Buckets for a table holding `slots` slots at the refill load.
    fn size_for(&self, slots: usize) -> usize {
        let per_bucket = T::SLOTS as f64 * self.max_load * REFILL;
        ((slots as f64 / per_bucket).ceil() as usize).max(MIN_BUCKETS)
    }

    /// Buckets for the next table when `slots` must fit: at least 1.25× the current table.
    fn grown_size(&self, slots: usize) -> usize {
        let b = self.table.units();
        self.size_for(slots).max(b + b / 4)
    }

    /// Moves every item (and `extra`) into a new table of at least `buckets` buckets.
    fn rebuild(&mut self, buckets: usize, extra: &mut Vec<Item>) -> Result<(), Error> {
        let new = self.rebuilt(buckets, extra)?;
        let old = core::mem::replace(&mut self.table, new);
        self.table.succeed(old);
        extra.clear();
        Ok(())
    }

    /// A copy of the map, its table the size of this one's (or larger if placement needs it).
    pub(crate) fn try_clone(&self) -> Result<RawIndex<T>, Error> {
        Ok(RawIndex {
            table: self.rebuilt(self.table.units(), &[])?,
            top: self.top.try_clone(self.huge)?,
            len: self.len,
            cnt: self.cnt,
            homeless: Vec::new(),
            max_load: self.max_load,
            min_units: self.min_units,
            huge: self.huge,
        })
    }

    /// Grows the table, if needed, so that `additional` more keys fit without growing again
    /// (an estimate: a key takes a slot for its leaf and, depending on the prefixes it shares,
    /// part of a node's; [`Store::SLOTS_PER_KEY`] is what random keys take).
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), Error> {
        let keys = self.len.saturating_add(additional);
        let slots = keys as f64 * T::SLOTS_PER_KEY + 3.0;
        // Cuckoo placement may give up a little short of the maximum load: aim below it.
        let load = self.max_load * RESERVE_LOAD;
        let buckets = (slots / (T::SLOTS as f64 * load)).ceil() as usize;
        if buckets > self.table.units() {
            self.rebuild(buckets, &mut Vec::new())?;
        }
        Ok(())
    }

    /// Shrinks the table, if it is larger, to the size growth would give it for the items it
    /// holds (two thirds of the maximum load).
    pub(crate) fn shrink_to_fit(&mut self) -> Result<(), Error> {
        let buckets = self.size_for(self.table.used());
        if buckets < self.table.units() {
            self.rebuild(buckets, &mut Vec::new())?;
        }
        Ok(())
    }

    /// A new table of at least `buckets` buckets holding every item and `extra`.
    fn rebuilt(&self, mut buckets: usize, extra: &[Item]) -> Result<T, Error> {
        /// Items whose new buckets are being fetched while earlier ones are placed.
        const AHEAD: usize = 16;
        let mut scratch = Vec::new();
        loop {
            let mut t = T::new(buckets, self.huge)?;
            let mut ok = true;
            let mut ring: [Option<(Item, T::Home)>; AHEAD] = [None; AHEAD];
            let mut at = 0;
            let mut feed = |it: Item, t: &mut T, ok: &mut bool| {
                let home = t.home(&it);
                if let Some((old, home)) = ring[at].replace((it, home))
                    && *ok
                {
                    scratch.clear();
                    *ok = t.place(old, home, &mut scratch).is_ok();
                }
                at = (at + 1) % AHEAD;
            };
            self.table
                .for_each(|l| feed(self.table.item(l), &mut t, &mut ok));
            for it in extra.iter() {
                feed(*it, &mut t, &mut ok);
            }
            for (it, home) in ring.iter_mut().filter_map(Option::take) {
                if ok {
                    scratch.clear();
                    ok = t.place(it, home, &mut scratch).is_ok();
                }
            }
            if ok {
                return Ok(t);
            }
            buckets += buckets / 8 + 1;
        }
    }

    /// Back to an empty map with the smallest table (keeps the current one if the system
    /// refuses even that).
    pub(crate) fn reset(&mut self) {
        if self.table.units() != self.min_units
            && let Ok(t) = T::new(MIN_BUCKETS, self.huge)
        {
            let old = core::mem::replace(&mut self.table, t);
            self.table.succeed(old);
        }
        if self.table.used() != 0 {
            let mut locs = Vec::new();
            self.table.for_each(|l| locs.push(l));
            for l in locs {
                self.table.remove(l);
            }
        }
        self.top.clear_all();
        self.homeless = Vec::new();
        self.cnt = [0; 9];
        self.len = 0;
    }

    fn add(&mut self, it: Item) -> Result<(), Error> {
        let len = match &it {
            Item::Leaf { len, .. } => *len,
            Item::Node(n) => n.len,
        };
        self.cnt[len as usize] += 1;
        self.put(it)
    }

    /// Lowers the `min` of the nodes on `path` above length `below` to `x` where larger.
    fn lower_mins(&mut self, path: &Path, below: u32, x: u64) {
        for len in MIN_LEN..below {
            if let Some(l) = path.loc[len as usize] {
                let (leaf, min) = self.table.word(l);
                debug_assert!(!leaf);
                if x < min {
                    self.table.set_word(l, x);
                }
            }
        }
    }

    /// Replaces the `min` `old` of the nodes on `path` above length `below` by `new`.
    fn raise_mins(&mut self, path: &Path, below: u32, old: u64, new: u64) {
        for len in MIN_LEN..below {
            if let Some(l) = path.loc[len as usize] {
                let (leaf, min) = self.table.word(l);
                debug_assert!(!leaf);
                if min == old {
                    self.table.set_word(l, new);
                }
            }
        }
    }

    /// Rewrites the node at `l` as `m`: in place when it fits, else moved.
    fn rewrite(&mut self, l: Loc, m: &Node) -> Result<(), Error> {
        if self.table.write_node(l, m) {
            Ok(())
        } else {
            self.table.remove(l);
            self.put(Item::Node(*m))
        }
    }

    /// Inserts or updates; returns the previous value.
    pub(crate) fn insert(&mut self, x: u64, v: u64) -> Result<Option<u64>, Error> {
        let path = self.path(x);
        let dl = path.deepest;
        // Every in-place change comes first; placements (which may move items) last.
        let leaf_len = if dl == 0 {
            debug_assert!(!self.top.get(p3(x)));
            self.top.set(p3(x));
            MIN_LEN
        } else {
            let l = path.loc[dl as usize].expect("deepest is found");
            let (leaf, w0) = self.table.word(l);
            if leaf {
                let k = self.table.leaf_key(l);
                if k == x {
                    self.table.set_word(l, v);
                    return Ok(Some(w0));
                }
                // Split the leaf: a node at its index, both keys below it.
                let p = diff_byte(k, x);
                debug_assert!(p >= dl && p < 8);
                let mut n = Node {
                    len: dl,
                    pc: p,
                    min: k.min(x),
                    count: 0,
                    kids: [0; 4],
                };
                n.set(byte(k, p));
                n.set(byte(x, p));
                self.lower_mins(&path, dl, x);
                self.table.leaf_to_node(l, &n);
                self.add(Item::Leaf {
                    key: k,
                    len: p + 1,
                    value: w0,
                })?;
                p + 1
            } else {
                let n = self.table.node(l);
                let p = diff_byte(n.min, x);
                self.lower_mins(&path, dl, x);
                if p < n.pc {
                    // `x` leaves the node's path-compressed string at byte `p`: a new node at
                    // the old one's index, the old one moved below it.
                    debug_assert!(p >= dl);
                    let mut m = Node {
                        len: dl,
                        pc: p,
                        min: n.min.min(x),
                        count: 0,
                        kids: [0; 4],
                    };
                    m.set(byte(n.min, p));
                    m.set(byte(x, p));
                    // `m` (two children) is never larger than `n`.
                    let fits = self.table.write_node(l, &m);
                    debug_assert!(fits);
                    self.add(Item::Node(Node { len: p + 1, ..n }))?;
                    p + 1
                } else {
                    let c = byte(x, n.pc);
                    debug_assert!(!n.has(c), "a child on x's path would have been found");
                    let mut m = n;
                    m.set(c);
                    m.min = m.min.min(x);
                    self.rewrite(l, &m)?;
                    n.pc + 1
                }
            }
        };
        self.add(Item::Leaf {
            key: x,
            len: leaf_len,
            value: v,
        })?;
        self.len += 1;
        Ok(None)
    }
}

impl<T: Store> RawIndex<T> {
    /// Removes `x`; returns its value.
    pub(crate) fn remove(&mut self, x: u64) -> Option<u64> {
        let path = self.path(x);
        let dl = path.deepest;
        if dl == 0 {
            return None;
        }
        let l = path.loc[dl as usize].expect("deepest is found");
        let (leaf, w0) = self.table.word(l);
        if !leaf || !self.table.leaf_suffix_is(l, x) {
            return None;
        }
        let parent = (MIN_LEN..dl)
            .rev()
            .find(|&len| path.loc[len as usize].is_some());
        match parent {
            None => {
                debug_assert_eq!(dl, MIN_LEN);
                self.table.remove(l);
                self.cnt[dl as usize] -= 1;
                self.top.clear(p3(x));
            }
            Some(pl) => {
                let ploc = path.loc[pl as usize].expect("found");
                let n = self.table.node(ploc);
                debug_assert_eq!(n.pc + 1, dl);
                let mut m = n;
                m.unset(byte(x, n.pc));
                if m.count == 1 {
                    // Complete path compression: the only child takes the node's place.
                    let r = m.next_after(-1).expect("one child left");
                    let cl = self.child(&m, r);
                    let moved = match self.table.item(cl) {
                        Item::Leaf { key, value, .. } => Item::Leaf {
                            key,
                            len: pl,
                            value,
                        },
                        Item::Node(c) => Item::Node(Node { len: pl, ..c }),
                    };
                    if n.min == x {
                        let new = match moved {
                            Item::Leaf { key, .. } => key,
                            Item::Node(c) => c.min,
                        };
                        self.raise_mins(&path, pl, x, new);
                    }
                    self.table.remove(l);
                    self.table.remove(cl);
                    self.table.remove(ploc);
                    self.cnt[dl as usize] -= 2;
                    if let Err(err) = self.put(moved) {
                        // Like std's collections: a refused allocation in an infallible
                        // operation aborts (the moved child has no place to go).
                        let _ = err;
                        std::alloc::handle_alloc_error(
                            std::alloc::Layout::from_size_align(self.table.bytes() * 2, 64)
                                .expect("a table size is a valid layout"),
                        );
                    }
                } else {
                    if n.min == x {
                        let s = m.next_after(-1).expect("children left");
                        let new = match self.table.item(self.child(&m, s)) {
                            Item::Leaf { key, .. } => key,
                            Item::Node(c) => c.min,
                        };
                        m.min = new;
                        self.raise_mins(&path, pl, x, new);
                    }
                    self.table.remove(l);
                    self.cnt[dl as usize] -= 1;
                    let fits = self.table.write_node(ploc, &m);
                    debug_assert!(fits, "a node with one child fewer fits in place");
                }
            }
        }
        self.len -= 1;
        if self.len == 0 {
            self.reset();
        } else if (self.table.used() as f64) < self.table.capacity() as f64 * self.max_load / 4.0
            && self.table.units() > self.min_units
        {
            // Shrinking only returns memory; if it fails the table stays as it is.
            let mut none = Vec::new();
            let _ = self.rebuild(self.size_for(self.table.used()), &mut none);
        }
        Some(w0)
    }

    /// Key and leaf of the smallest key below the item at `l`.
    fn min_of(&self, l: Loc) -> (u64, Loc) {
        let (leaf, w0) = self.table.word(l);
        if leaf {
            (self.table.leaf_key(l), l)
        } else {
            let k = w0;
            (k, self.leaf(k).expect("invariant 2: a node's min is a key"))
        }
    }

    /// Key and leaf of the largest key below the item at `l` (one probe per level down).
    fn max_of(&self, mut l: Loc) -> (u64, Loc) {
        loop {
            let (leaf, _) = self.table.word(l);
            if leaf {
                return (self.table.leaf_key(l), l);
            }
            let n = self.table.node(l);
            l = self.child(&n, n.prev_before(256).expect("nodes have children"));
        }
    }

    /// The first key after every key below the path items of `x` down to length `dl`
    /// (exclusive), i.e. the successor of the subtree `x` fell out of.
    fn succ_above(&self, path: &Path, dl: u32, x: u64) -> Option<(u64, Loc)> {
        for len in (MIN_LEN..dl).rev() {
            if let Some(l) = path.loc[len as usize] {
                let n = self.table.node(l);
                if let Some(c) = n.next_after(byte(x, n.pc) as i32) {
                    return Some(self.min_of(self.child(&n, c)));
                }
            }
        }
        let t = self.top.next(p3(x) + 1)?;
        Some(self.min_of(self.find(u64::from(t), MIN_LEN).expect("invariant 3")))
    }

    /// Mirror of [`succ_above`](Self::succ_above).
    fn pred_above(&self, path: &Path, dl: u32, x: u64) -> Option<(u64, Loc)> {
        for len in (MIN_LEN..dl).rev() {
            if let Some(l) = path.loc[len as usize] {
                let n = self.table.node(l);
                if let Some(c) = n.prev_before(byte(x, n.pc) as i32) {
                    return Some(self.max_of(self.child(&n, c)));
                }
            }
        }
        let t = self.top.prev(p3(x).checked_sub(1)?)?;
        Some(self.max_of(self.find(u64::from(t), MIN_LEN).expect("invariant 3")))
    }

    /// The first key `≥ x` and its leaf.
    pub(crate) fn lower_bound(&self, x: u64) -> Option<(u64, Loc)> {
        let pr = self.probes(x);
        // The answer is often the smallest key of the next 3-byte prefix (always, when `x`'s
        // own is absent): fetch that item along with the path (the top bitmap is small
        // enough to stay in cache).
        if let Some(t) = self.top.next(p3(x) + 1) {
            self.table
                .prefetch(&self.table.probe(u64::from(t), MIN_LEN));
        }
        let path = self.path_of(&pr);
        let dl = path.deepest;
        if dl == 0 {
            let t = self.top.next(p3(x))?;
            return Some(self.min_of(self.find(u64::from(t), MIN_LEN).expect("invariant 3")));
        }
        let l = path.loc[dl as usize].expect("found");
        let (leaf, _) = self.table.word(l);
        if leaf {
            let k = self.table.leaf_key(l);
            return if k >= x {
                Some((k, l))
            } else {
                self.succ_above(&path, dl, x)
            };
        }
        let n = self.table.node(l);
        let p = diff_byte(n.min, x);
        if p < n.pc {
            if byte(x, p) < byte(n.min, p) {
                Some(self.min_of(l))
            } else {
                self.succ_above(&path, dl, x)
            }
        } else {
            match n.next_after(byte(x, n.pc) as i32) {
                Some(c) => Some(self.min_of(self.child(&n, c))),
                None => self.succ_above(&path, dl, x),
            }
        }
    }

    /// The last key `≤ x` and its leaf.
    pub(crate) fn upper_bound(&self, x: u64) -> Option<(u64, Loc)> {
        let pr = self.probes(x);
        // As in `lower_bound`, the previous 3-byte prefix's item.
        if let Some(t) = p3(x).checked_sub(1).and_then(|p| self.top.prev(p)) {
            self.table
                .prefetch(&self.table.probe(u64::from(t), MIN_LEN));
        }
        let path = self.path_of(&pr);
        let dl = path.deepest;
        if dl == 0 {
            let t = self.top.prev(p3(x))?;
            return Some(self.max_of(self.find(u64::from(t), MIN_LEN).expect("invariant 3")));
        }
        let l = path.loc[dl as usize].expect("found");
        let (leaf, _) = self.table.word(l);
        if leaf {
            let k = self.table.leaf_key(l);
            return if k <= x {
                Some((k, l))
            } else {
                self.pred_above(&path, dl, x)
            };
        }
        let n = self.table.node(l);
        let p = diff_byte(n.min, x);
        if p < n.pc {
            if byte(x, p) > byte(n.min, p) {
                Some(self.max_of(l))
            } else {
                self.pred_above(&path, dl, x)
            }
        } else {
            match n.prev_before(byte(x, n.pc) as i32) {
                Some(c) => Some(self.max_of(self.child(&n, c))),
                None => self.pred_above(&path, dl, x),
            }
        }
    }

    /// Checks invariants 1–4 and the table's; for tests.
    pub(crate) fn audit(&self) -> Result<(), String> {
        let items = self.table.audit()?;
        let mut cnt = [0usize; 9];
        let mut keys = 0usize;
        let mut last: Option<u64> = None;
        let mut t = self.top.next(0);
        while let Some(p) = t {
            let l = self
                .find(u64::from(p), MIN_LEN)
                .ok_or(format!("top bit {p:#x} without an item"))?;
            self.audit_item(l, MIN_LEN, &mut cnt, &mut keys, &mut last)?;
            t = self.top.next(p + 1);
        }
        if cnt != self.cnt {
            return Err(format!("items per length {cnt:?}, counted {:?}", self.cnt));
        }
        if cnt.iter().sum::<usize>() != items {
            return Err(format!("{items} items in the table, {cnt:?} reachable"));
        }
        if keys != self.len {
            return Err(format!("{keys} leaves, len {}", self.len));
        }
        Ok(())
    }

    /// Audits the subtree at `l` (index length `len`); returns its smallest key.
    fn audit_item(
        &self,
        l: Loc,
        len: u32,
        cnt: &mut [usize; 9],
        keys: &mut usize,
        last: &mut Option<u64>,
    ) -> Result<u64, String> {
        cnt[len as usize] += 1;
        let (leaf, w0) = self.table.word(l);
        if leaf {
            let k = self.table.leaf_key(l);
            if last.is_some_and(|p| p >= k) {
                return Err(format!("leaf {k:#x} after {last:?}"));
            }
            *last = Some(k);
            *keys += 1;
            if self.get(k) != Some(w0) {
                return Err(format!("leaf {k:#x} is not found by get"));
            }
            return Ok(k);
        }
        let n = self.table.node(l);
        if n.len != len || n.pc < len || n.pc > 7 || n.count < 2 {
            return Err(format!("node {n:?} at length {len}"));
        }
        if n.kids.iter().map(|w| w.count_ones()).sum::<u32>() != n.count {
            return Err(format!("node {n:?}: count disagrees with its children"));
        }
        let mut min = None;
        let mut c = n.next_after(-1);
        while let Some(b) = c {
            let cl = self
                .find(n.child_prefix(b), n.pc + 1)
                .ok_or(format!("node {n:?}: child {b} missing"))?;
            let m = self.audit_item(cl, n.pc + 1, cnt, keys, last)?;
            if prefix(m, n.pc + 1) != n.child_prefix(b) {
                return Err(format!("node {n:?}: child {b} holds key {m:#x}"));
            }
            min.get_or_insert(m);
            c = n.next_after(b as i32);
        }
        if min != Some(n.min) {
            return Err(format!("node {n:?}: subtree minimum is {min:?}"));
        }
        Ok(n.min)
    }
}

/// One node on a cursor's stack.
#[derive(Clone, Copy, Debug)]
struct Frame {
    node: Node,
    /// Last child visited (−1 before the first going forward, 256 going backward).
    pos: i32,
    /// Last child whose buckets were prefetched.
    ahead: i32,
}

/// Items a cursor keeps in flight ahead of the one it visits (children of the current node,
/// or the next 3-byte prefixes).
const LOOKAHEAD: usize = 8;

/// Most nodes on one root-to-leaf path (index lengths 3..=7).
const MAX_DEPTH: usize = 5;

/// An in-order walk over the leaves, forwards or backwards, from a seek position.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    stack: [Option<Frame>; MAX_DEPTH],
    depth: usize,
    /// Last top prefix visited (−1 / 2²⁴ before the first).
    top: i64,
    rev: bool,
    /// A leaf found by the seek itself, yielded first.
    pending: Option<(u64, Loc)>,
    /// Last top prefix whose item was prefetched.
    top_ahead: i64,
    /// Prefetched top items not visited yet.
    top_inflight: usize,
}

impl Cursor {
    fn push(&mut self, node: Node, pos: i32) {
        debug_assert!(self.depth < MAX_DEPTH);
        self.stack[self.depth] = Some(Frame {
            node,
            pos,
            ahead: pos,
        });
        self.depth += 1;
    }

    /// Prefetches up to `n` more children of the top frame, past the last prefetched one.
    #[inline]
    fn prefetch_children<T: Store>(&mut self, idx: &RawIndex<T>, n: usize) {
        let rev = self.rev;
        let f = self.stack[self.depth - 1]
            .as_mut()
            .expect("frames below depth");
        for _ in 0..n {
            let next = if rev {
                f.node.prev_before(f.ahead)
            } else {
                f.node.next_after(f.ahead)
            };
            let Some(c) = next else {
                return;
            };
            f.ahead = c as i32;
            idx.table
                .prefetch(&idx.table.probe(f.node.child_prefix(c), f.node.pc + 1));
        }
    }

    /// Keeps [`LOOKAHEAD`] of the next 3-byte prefixes' items in flight.
    #[inline]
    fn prefetch_top<T: Store>(&mut self, idx: &RawIndex<T>) {
        while self.top_inflight < LOOKAHEAD {
            let t = if self.rev {
                u32::try_from(self.top_ahead - 1)
                    .ok()
                    .and_then(|p| idx.top.prev(p))
            } else {
                u32::try_from(self.top_ahead + 1)
                    .ok()
                    .and_then(|p| idx.top.next(p))
            };
            let Some(t) = t else {
                return;
            };
            self.top_ahead = i64::from(t);
            self.top_inflight += 1;
            idx.table.prefetch(&idx.table.probe(u64::from(t), MIN_LEN));
        }
    }

    /// A cursor before every key (forward) or after every key (`rev`).
    pub(crate) fn ends(rev: bool) -> Cursor {
        Cursor {
            stack: [None; MAX_DEPTH],
            depth: 0,
            top: if rev { i64::from(TOP) } else { -1 },
            rev,
            pending: None,
            top_ahead: if rev { i64::from(TOP) } else { -1 },
            top_inflight: 0,
        }
    }

    /// A cursor whose first step yields the first key `≥ x` (forward) or the last `≤ x`.
    pub(crate) fn seek<T: Store>(idx: &RawIndex<T>, x: u64, rev: bool) -> Cursor {
        let mut c = Cursor::ends(rev);
        c.top = i64::from(p3(x));
        c.top_ahead = c.top;
        let path = idx.path(x);
        let dl = path.deepest;
        if dl == 0 {
            return c;
        }
        for len in MIN_LEN..dl {
            if let Some(l) = path.loc[len as usize] {
                let n = idx.table.node(l);
                c.push(n, byte(x, n.pc) as i32);
            }
        }
        let l = path.loc[dl as usize].expect("found");
        let (leaf, _) = idx.table.word(l);
        if leaf {
            let k = idx.table.leaf_key(l);
            if (!rev && k >= x) || (rev && k <= x) {
                c.pending = Some((k, l));
            }
            return c;
        }
        let n = idx.table.node(l);
        let p = diff_byte(n.min, x);
        if p < n.pc {
            let below = byte(x, p) < byte(n.min, p);
            if below != rev {
                // The whole subtree is on the walk's side of `x`.
                c.push(n, if rev { 256 } else { -1 });
            }
        } else {
            c.push(n, byte(x, n.pc) as i32);
        }
        if c.depth > 0 {
            c.prefetch_children(idx, LOOKAHEAD);
        }
        c
    }

    /// The next leaf in the walk's direction: its key and where it is (valid until the
    /// table changes shape; values may be rewritten in place between steps).
    pub(crate) fn step<T: Store>(&mut self, idx: &RawIndex<T>) -> Option<(u64, Loc)> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        loop {
            let l = if self.depth > 0 {
                let f = self.stack[self.depth - 1]
                    .as_mut()
                    .expect("frames below depth");
                let next = if self.rev {
                    f.node.prev_before(f.pos)
                } else {
                    f.node.next_after(f.pos)
                };
                let Some(c) = next else {
                    self.depth -= 1;
                    continue;
                };
                f.pos = c as i32;
                let n = f.node;
                // The child visited now was in flight: send one more in its place.
                self.prefetch_children(idx, 1);
                idx.child(&n, c)
            } else {
                let t = if self.rev {
                    idx.top.prev(u32::try_from(self.top.checked_sub(1)?).ok()?)
                } else {
                    idx.top.next(u32::try_from(self.top + 1).ok()?)
                };
                let t = t?;
                self.top = i64::from(t);
                let was_ahead = if self.rev {
                    self.top >= self.top_ahead
                } else {
                    self.top <= self.top_ahead
                };
                if was_ahead && self.top_inflight > 0 {
                    self.top_inflight -= 1;
                }
                self.prefetch_top(idx);
                idx.find(u64::from(t), MIN_LEN).expect("invariant 3")
            };
            let (leaf, _) = idx.table.word(l);
            if leaf {
                return Some((idx.table.leaf_key(l), l));
            }
            let n = idx.table.node(l);
            self.push(n, if self.rev { 256 } else { -1 });
            self.prefetch_children(idx, LOOKAHEAD);
        }
    }
}
