//! A leaf: up to [`CAP`] entries in key order, with their keys in a leaf-local arena.
//!
//! What a search reads sits in the leaf itself, at fixed offsets, so one round of prefetches
//! brings it: the fences (the leaf's anchor and the next leaf's) and the keys' common prefix
//! in the first lines, then per entry the 8 key bytes after the common prefix, big-endian (for
//! seeks: comparing two of them orders the keys unless they tie), the values in key order,
//! a one-byte hash tag per entry (for exact lookups) and the keys' offsets and lengths. Only
//! an exact match or a tie reads a key from the arena. The values are inline rather than
//! behind a pointer: a seek prefetches them with the slices, where a value array elsewhere cost
//! a DRAM round trip after the seek (its address known only once the leaf's header arrived).

use core::cmp::Ordering;

use super::NONE;
use crate::key::common_prefix;
use crate::substrate::inline_vec::InlineVec;
use crate::substrate::prefetch::prefetch_read;

/// Entries per leaf.
pub(crate) const CAP: usize = 64;
/// Inline bytes for the fences and the common prefix; more go to the heap. 112 makes a leaf
/// of 8-byte values 1,792 bytes, one of jemalloc's size classes (with 128 it was 1,856,
/// rounded up to 2,048: 6 bytes a key on `paths`). Inserting 4M keys of each bench dataset,
/// 98 of 93,422 `paths` leaves spilled (2 with 128), none on the others.
const FB: usize = 112;

/// `key[at..at + 8]` big-endian, zero-padded past the key's end.
#[inline(always)]
fn slice_at(key: &[u8], at: usize) -> u64 {
    if let Some(w) = key.get(at..at + 8) {
        return u64::from_be_bytes(w.try_into().expect("8"));
    }
    let mut b = [0u8; 8];
    if at < key.len() {
        b[..key.len() - at].copy_from_slice(&key[at..]);
    }
    u64::from_be_bytes(b)
}

/// Orders `q` against the concatenation `a ‖ b`.
#[inline]
fn cmp_concat(q: &[u8], a: &[u8], b: &[u8]) -> Ordering {
    let n = q.len().min(a.len());
    match q[..n].cmp(&a[..n]) {
        Ordering::Equal if q.len() < a.len() => Ordering::Less,
        Ordering::Equal => q[n..].cmp(b),
        o => o,
    }
}

/// A leaf. The fields are in the order a seek reads them (see the module docs).
#[repr(C, align(64))]
pub(crate) struct Leaf<V> {
    /// Neighbours in key order ([`NONE`] at the ends).
    pub(crate) prev: u32,
    pub(crate) next: u32,
    /// Length of the common prefix of the keys.
    d: u32,
    /// Length of the lower fence (the anchor).
    lo_len: u32,
    /// Length of the upper fence, or [`NONE`] for the last leaf.
    up_len: u32,
    /// Bytes the upper fence shares with the lower one (not stored twice).
    up_shared: u32,
    /// Bytes the common prefix shares with the lower fence (not stored twice).
    pre_shared: u32,
    /// Arena bytes of removed keys.
    garbage: u32,
    /// Fences and prefix, stored as `lower ‖ upper[up_shared..] ‖ prefix[pre_shared..]`, in
    /// `fb` when they fit, else in `big`.
    big: Box<[u8]>,
    /// Key bytes, back to back (removed keys leave garbage until a compaction).
    arena: Vec<u8>,
    fb: [u8; FB],
    slices: [u64; CAP],
    /// The values in key order; their count is the leaf's.
    vals: InlineVec<V, CAP>,
    tags: [u8; CAP],
    /// Entry `i`'s key is `arena[off[i]..off[i] + klen[i]]`.
    off: [u32; CAP],
    klen: [u32; CAP],
}

const _: () = assert!(core::mem::size_of::<Leaf<u64>>() == 1_792);

// What `prefetch_find` assumes: the links, lengths and the key arena's pointer are in the
// first two lines, whatever the value type.
const _: () = assert!(core::mem::offset_of!(Leaf<u8>, fb) <= 2 * 64);
const _: () = assert!(core::mem::offset_of!(Leaf<[u64; 4]>, fb) <= 2 * 64);

/// The bytes `[from, to)`, prefetched a line at a time.
#[inline(always)]
fn prefetch_range<T, U>(from: *const T, to: *const U) {
    let start = from.cast::<u8>().wrapping_sub(from as usize % 64);
    let len = (to as usize).saturating_sub(start as usize);
    for line in (0..len).step_by(64) {
        prefetch_read(start.wrapping_add(line));
    }
}

impl<V> Leaf<V> {
    /// An empty leaf between `lower` (inclusive) and `upper` (exclusive; `None`: unbounded).
    pub(crate) fn new(lower: &[u8], upper: Option<&[u8]>) -> Box<Self> {
        let mut l = Box::new(Leaf {
            prev: NONE,
            next: NONE,
            d: 0,
            lo_len: 0,
            up_len: NONE,
            up_shared: 0,
            pre_shared: 0,
            garbage: 0,
            big: Box::default(),
            arena: Vec::new(),
            fb: [0; FB],
            slices: [0; CAP],
            vals: InlineVec::new(),
            tags: [0; CAP],
            off: [0; CAP],
            klen: [0; CAP],
        });
        l.set_fences(lower, upper);
        l
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.vals.len()
    }

    #[inline(always)]
    fn hb(&self) -> &[u8] {
        if self.big.is_empty() {
            &self.fb
        } else {
            &self.big
        }
    }

    /// The lower fence: every key of the leaf is `>=` it.
    #[inline(always)]
    pub(crate) fn lower(&self) -> &[u8] {
        &self.hb()[..self.lo_len as usize]
    }

    /// The upper fence's bytes after those it shares with the lower one.
    #[inline(always)]
    fn upper_tail(&self) -> &[u8] {
        let at = self.lo_len as usize;
        let n = self.up_len as usize - self.up_shared as usize;
        &self.hb()[at..at + n]
    }

    /// The upper fence (a copy): every key of the leaf is `<` it.
    pub(crate) fn upper(&self) -> Option<Vec<u8>> {
        (self.up_len != NONE).then(|| {
            let mut u = self.lower()[..self.up_shared as usize].to_vec();
            u.extend_from_slice(self.upper_tail());
            u
        })
    }

    /// The common prefix's bytes after those it shares with the lower fence.
    #[inline(always)]
    fn pre_tail(&self) -> &[u8] {
        let up = if self.up_len == NONE {
            0
        } else {
            (self.up_len - self.up_shared) as usize
        };
        let at = self.lo_len as usize + up;
        &self.hb()[at..at + (self.d - self.pre_shared) as usize]
    }

    /// Whether `key` lies between the fences.
    #[inline]
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        key >= self.lower() && self.below_upper(key)
    }

    /// Whether `key` is below the upper fence.
    #[inline]
    pub(crate) fn below_upper(&self, key: &[u8]) -> bool {
        self.up_len == NONE
            || cmp_concat(
                key,
                &self.lower()[..self.up_shared as usize],
                self.upper_tail(),
            ) == Ordering::Less
    }

    /// Entry `i`'s key.
    #[inline(always)]
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let at = self.off[i] as usize;
        &self.arena[at..at + self.klen[i] as usize]
    }

    #[inline(always)]
    pub(crate) fn val(&self, i: usize) -> &V {
        self.vals.get(i)
    }

    #[inline(always)]
    pub(crate) fn val_mut(&mut self, i: usize) -> &mut V {
        self.vals.get_mut(i)
    }

    /// Prefetches what [`find`](Self::find) reads: the header and the start of the fences,
    /// the entry count, tags, key offsets and lengths. (The entry count is read first, so the
    /// prefetch cannot use it: it covers a full leaf. The candidate's value is read while its
    /// key is compared, so is not prefetched.)
    #[inline(always)]
    pub(crate) fn prefetch_find(&self) {
        let p = (self as *const Self).cast::<u8>();
        prefetch_range(p, p.wrapping_add(2 * 64));
        prefetch_read(&self.vals);
        prefetch_range(&self.tags, self.tags.as_ptr().wrapping_add(CAP));
        prefetch_range(&self.off, self.off.as_ptr().wrapping_add(CAP));
        prefetch_range(&self.klen, self.klen.as_ptr().wrapping_add(CAP));
    }

    /// Prefetches what [`seek`](Self::seek) and the entry it lands on read: the header,
    /// fences and prefix, the first `len` slices, values, key offsets and lengths.
    #[inline(always)]
    pub(crate) fn prefetch_seek(&self) {
        // The count is in the values' first line, itself prefetched here: the loops' bounds
        // wait for it, and the processor issues the prefetches ahead on predicted bounds.
        let n = self.len();
        prefetch_range(self, self.slices.as_ptr().wrapping_add(n));
        prefetch_range(&self.vals, self.vals.ptr(n));
        prefetch_range(&self.off, self.off.as_ptr().wrapping_add(n));
        prefetch_range(&self.klen, self.klen.as_ptr().wrapping_add(n));
    }

    /// Prefetches the links and the entry count (scans, a leaf ahead).
    #[inline(always)]
    pub(crate) fn prefetch_header(&self) {
        prefetch_read(self);
        prefetch_read(&self.vals);
    }

    /// Prefetches what a scan reads of each entry: the values and the key offsets and
    /// lengths (not the key bytes: the scan hands out slices without reading them).
    #[inline(always)]
    pub(crate) fn prefetch_scan(&self) {
        let n = self.len();
        prefetch_range(&self.vals, self.vals.ptr(n));
        prefetch_range(&self.off, self.off.as_ptr().wrapping_add(n));
        prefetch_range(&self.klen, self.klen.as_ptr().wrapping_add(n));
    }

    /// The entry whose key is `key`, whose hash tag is `tag`.
    #[inline]
    pub(crate) fn find(&self, key: &[u8], tag: u8) -> Option<usize> {
        (0..self.len()).find(|&i| self.tags[i] == tag && self.key(i) == key)
    }

    /// The first entry whose key is `>= key` (`len()` when none), and whether it equals `key`.
    #[inline]
    pub(crate) fn seek(&self, key: &[u8]) -> (usize, bool) {
        let n = self.len();
        let d = self.d as usize;
        let shared = self.pre_shared as usize;
        match cmp_concat(
            &key[..d.min(key.len())],
            &self.lower()[..shared],
            self.pre_tail(),
        ) {
            Ordering::Less => return (0, false),
            Ordering::Greater => return (n, false),
            Ordering::Equal if key.len() < d => return (0, false),
            Ordering::Equal => {}
        }
        let q = slice_at(key, d);
        let s = &self.slices[..n];
        let a = s.partition_point(|&x| x < q);
        let b = a + s[a..].partition_point(|&x| x == q);
        if a == b {
            return (a, false);
        }
        // Tied slices: their keys decide. Fetch them all at once.
        for i in a..b {
            prefetch_read(self.arena.as_ptr().wrapping_add(self.off[i] as usize));
        }
        let mut i = a;
        while i < b {
            match self.key(i).cmp(key) {
                Ordering::Less => i += 1,
                Ordering::Equal => return (i, true),
                Ordering::Greater => break,
            }
        }
        (i, false)
    }

    /// Stores the fences and rewrites the prefix and slices for them.
    pub(crate) fn set_fences(&mut self, lower: &[u8], upper: Option<&[u8]>) {
        let d = self.common_len();
        let pre: Vec<u8> = if self.len() == 0 {
            Vec::new()
        } else {
            self.key(0)[..d].to_vec()
        };
        self.write_header(lower, upper, &pre);
        self.rewrite_slices();
    }

    /// Length of the keys' common prefix.
    fn common_len(&self) -> usize {
        match self.len() {
            0 => 0,
            n => common_prefix(self.key(0), self.key(n - 1)),
        }
    }

    fn write_header(&mut self, lower: &[u8], upper: Option<&[u8]>, pre: &[u8]) {
        let up_shared = upper.map_or(0, |u| common_prefix(lower, u));
        let pre_shared = common_prefix(lower, pre);
        let mut buf = Vec::with_capacity(lower.len() + pre.len() + upper.map_or(0, <[u8]>::len));
        buf.extend_from_slice(lower);
        if let Some(u) = upper {
            buf.extend_from_slice(&u[up_shared..]);
        }
        buf.extend_from_slice(&pre[pre_shared..]);
        self.lo_len = lower.len() as u32;
        self.up_len = upper.map_or(NONE, |u| u.len() as u32);
        self.up_shared = up_shared as u32;
        self.d = pre.len() as u32;
        self.pre_shared = pre_shared as u32;
        if buf.len() <= FB {
            self.fb[..buf.len()].copy_from_slice(&buf);
            self.big = Box::default();
        } else {
            self.big = buf.into_boxed_slice();
        }
    }

    fn rewrite_slices(&mut self) {
        let d = self.d as usize;
        for i in 0..self.len() {
            self.slices[i] = slice_at(self.key(i), d);
        }
    }

    /// After the first or last key changed: a new common prefix, so new slices.
    fn refresh_prefix(&mut self) {
        let d = self.common_len();
        if d == self.d as usize && self.len() > 0 {
            return;
        }
        let lower = self.lower().to_vec();
        let upper = self.upper();
        let pre: Vec<u8> = if self.len() == 0 {
            Vec::new()
        } else {
            self.key(0)[..d].to_vec()
        };
        self.write_header(&lower, upper.as_deref(), &pre);
        self.rewrite_slices();
    }

    /// Inserts `key` (absent, between the fences, with hash tag `tag`) at `pos`. The leaf must
    /// not be full.
    pub(crate) fn insert_at(&mut self, pos: usize, key: &[u8], tag: u8, val: V) {
        let n = self.len();
        debug_assert!(n < CAP && pos <= n);
        debug_assert!(self.covers(key));
        let at = self.arena.len();
        if self.arena.capacity() - at < key.len() {
            // Grow by a quarter, not double: arenas are most of the map's bytes.
            self.arena.reserve_exact(key.len().max(at / 4).max(64));
        }
        self.arena.extend_from_slice(key);
        self.tags.copy_within(pos..n, pos + 1);
        self.slices.copy_within(pos..n, pos + 1);
        self.off.copy_within(pos..n, pos + 1);
        self.klen.copy_within(pos..n, pos + 1);
        self.tags[pos] = tag;
        self.off[pos] = at as u32;
        self.klen[pos] = key.len() as u32;
        self.vals.insert(pos, val);
        if pos == 0 || pos == n {
            self.refresh_prefix();
        }
        self.slices[pos] = slice_at(key, self.d as usize);
    }

    /// Removes entry `pos`; returns its value.
    pub(crate) fn remove_at(&mut self, pos: usize) -> V {
        let n = self.len();
        debug_assert!(pos < n);
        self.garbage += self.klen[pos];
        self.tags.copy_within(pos + 1..n, pos);
        self.slices.copy_within(pos + 1..n, pos);
        self.off.copy_within(pos + 1..n, pos);
        self.klen.copy_within(pos + 1..n, pos);
        let v = self.vals.remove(pos);
        if self.garbage as usize * 2 > self.arena.len() {
            self.compact();
        }
        if pos == 0 || pos == n - 1 {
            self.refresh_prefix();
        }
        v
    }

    /// Empties the leaf; its entries in key order (key, hash tag, value).
    pub(crate) fn take_all(&mut self) -> Vec<(Vec<u8>, u8, V)> {
        let keys: Vec<(Vec<u8>, u8)> = (0..self.len())
            .map(|i| (self.key(i).to_vec(), self.tags[i]))
            .collect();
        let vals = self.vals.take_all();
        self.arena = Vec::new();
        self.garbage = 0;
        self.refresh_prefix();
        keys.into_iter()
            .zip(vals)
            .map(|((k, t), v)| (k, t, v))
            .collect()
    }

    /// The entries, owned, in key order (the leaf is consumed).
    pub(crate) fn into_entries(self: Box<Self>) -> std::vec::IntoIter<(Vec<u8>, V)> {
        let mut leaf = self;
        // The keys stay in the arena (only the count went to zero with the values).
        let vals = leaf.vals.take_all();
        vals.into_iter()
            .enumerate()
            .map(|(i, v)| (leaf.key(i).to_vec(), v))
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// A pointer to value `i` (`i < len()`), for the map's mutable iterator, which hands out
    /// values of a leaf while it reads the leaf's other fields: it borrows no value, and the
    /// values are interior-mutable (see [`InlineVec::ptr`] for when it may be written).
    #[inline(always)]
    pub(crate) fn val_ptr(&self, i: usize) -> *mut V {
        debug_assert!(i < self.len());
        self.vals.ptr(i)
    }

    /// A new version of this leaf for a copy-on-write writer: the same fences, keys and
    /// links, room in its arena for `extra` more key bytes, and this leaf's values bit for bit
    /// (not cloned).
    ///
    /// # Safety
    ///
    /// The copy owns the values from now on: this leaf may afterwards only be read, and must
    /// be freed without dropping them ([`forget_values`](Self::forget_values), as
    /// [`Superseded`](super::leaves::Superseded) does).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn cow_copy(&self, extra: usize) -> Box<Self> {
        let mut arena = Vec::with_capacity(self.arena.len() + extra);
        arena.extend_from_slice(&self.arena);
        Box::new(Leaf {
            prev: self.prev,
            next: self.next,
            d: self.d,
            lo_len: self.lo_len,
            up_len: self.up_len,
            up_shared: self.up_shared,
            pre_shared: self.pre_shared,
            garbage: self.garbage,
            big: self.big.clone(),
            arena,
            fb: self.fb,
            slices: self.slices,
            // SAFETY: the caller's contract: only the copy drops or moves out the values.
            vals: unsafe { self.vals.bitwise_copy() },
            tags: self.tags,
            off: self.off,
            klen: self.klen,
        })
    }

    /// Empties the leaf without dropping its values (a newer version owns them).
    pub(crate) fn forget_values(&mut self) {
        self.vals.forget_all();
    }

    /// Whether this leaf's lower fence is `prev`'s upper fence: it follows `prev` in key
    /// order with nothing between them.
    pub(crate) fn follows(&self, prev: &Leaf<V>) -> bool {
        prev.up_len == self.lo_len
            && self
                .lower()
                .starts_with(&prev.lower()[..prev.up_shared as usize])
            && self.lower()[prev.up_shared as usize..] == *prev.upper_tail()
    }

    /// The longest key's length.
    pub(crate) fn longest_key(&self) -> usize {
        self.klen[..self.len()]
            .iter()
            .max()
            .map_or(0, |&k| k as usize)
    }

    /// Drops removed keys' bytes and spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        if self.garbage > 0 {
            self.compact();
        }
        self.arena.shrink_to_fit();
    }

    /// Rewrites the arena without removed keys, in key order.
    fn compact(&mut self) {
        let live = self.arena.len() - self.garbage as usize;
        let mut arena = Vec::with_capacity(live + live / 4);
        for i in 0..self.len() {
            let at = self.off[i] as usize;
            self.off[i] = arena.len() as u32;
            arena.extend_from_slice(&self.arena[at..at + self.klen[i] as usize]);
        }
        self.arena = arena;
        self.garbage = 0;
    }

    /// Moves entries `from..` to a new leaf whose lower fence is `anchor` (which orders after
    /// entry `from - 1` and not after entry `from`). This leaf's upper fence becomes `anchor`;
    /// the new leaf's is this leaf's old one. Links are the caller's.
    pub(crate) fn split_off(&mut self, from: usize, anchor: &[u8]) -> Box<Self> {
        let n = self.len();
        debug_assert!(0 < from && from < n);
        let upper = self.upper();
        let mut right = Leaf::new(anchor, upper.as_deref());
        let bytes: usize = (from..n).map(|i| self.klen[i] as usize).sum();
        right.arena.reserve_exact(bytes + bytes / 4);
        for i in from..n {
            let at = right.arena.len();
            right.arena.extend_from_slice(self.key(i));
            right.off[i - from] = at as u32;
            right.klen[i - from] = self.klen[i];
            right.tags[i - from] = self.tags[i];
        }
        self.vals.move_tail_to(from, &mut right.vals);
        // The moved keys are this arena's garbage now.
        self.garbage += bytes as u32;
        self.compact();
        let lower = self.lower().to_vec();
        self.set_fences(&lower, Some(anchor));
        right.set_fences(anchor, upper.as_deref());
        right
    }

    /// Sets only the upper fence.
    pub(crate) fn set_upper(&mut self, upper: Option<&[u8]>) {
        let lower = self.lower().to_vec();
        self.set_fences(&lower, upper);
    }

    /// Bytes on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        core::mem::size_of::<Self>() + self.big.len() + self.arena.capacity()
    }

    /// Checks the leaf's own invariants.
    pub(crate) fn audit(&self) -> Result<(), String> {
        let n = self.len();
        if n > CAP {
            return Err(format!("{n} entries"));
        }
        let live: usize = self.klen[..n].iter().map(|&k| k as usize).sum();
        if live + self.garbage as usize != self.arena.len() {
            return Err(format!(
                "arena of {} bytes holds {live} of keys and {} of garbage",
                self.arena.len(),
                self.garbage
            ));
        }
        for i in 0..n {
            if i > 0 && self.key(i - 1) >= self.key(i) {
                return Err(format!("keys {} and {i} out of order", i - 1));
            }
            if !self.covers(self.key(i)) {
                return Err(format!("key {i} outside the fences"));
            }
            if self.slices[i] != slice_at(self.key(i), self.d as usize) {
                return Err(format!("slice {i} stale"));
            }
        }
        if self.d as usize != self.common_len() {
            return Err("stale common prefix".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_order_matches_the_joined_string() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"", b"", b""),
            (b"a", b"", b""),
            (b"", b"a", b""),
            (b"ab", b"a", b"b"),
            (b"a", b"a", b"b"),
            (b"abc", b"a", b"b"),
            (b"b", b"a", b"b"),
            (b"a\0", b"a", b""),
            (b"aa", b"ab", b"c"),
            (b"ac", b"ab", b"c"),
        ];
        for &(q, a, b) in cases {
            let joined: Vec<u8> = a.iter().chain(b).copied().collect();
            assert_eq!(
                cmp_concat(q, a, b),
                q.cmp(&joined[..]),
                "{q:?} vs {a:?}+{b:?}"
            );
        }
    }

    #[test]
    fn seek_finds_every_gap() {
        let mut l: Box<Leaf<u32>> = Leaf::new(b"", None);
        let keys: [&[u8]; 7] = [
            b"p",
            b"p\0",
            b"pa",
            b"pabcdefgh1",
            b"pabcdefgh2",
            b"pb",
            b"q",
        ];
        for (i, k) in keys.iter().enumerate() {
            l.insert_at(i, k, 0, i as u32);
        }
        l.audit().unwrap();
        let probes: [&[u8]; 9] = [
            b"",
            b"p",
            b"p\0\0",
            b"pabcdefgh",
            b"pabcdefgh15",
            b"pb",
            b"pc",
            b"q",
            b"r",
        ];
        for q in probes {
            let want = keys.partition_point(|k| *k < q);
            assert_eq!(l.seek(q), (want, keys.get(want) == Some(&q)), "{q:?}");
        }
    }

    #[test]
    fn split_halves_keep_arenas_for_their_own_keys() {
        // Before a fix, the left half kept an arena sized for the whole leaf: 50% more arena
        // than keys on 1M paths.
        let mut l: Box<Leaf<u32>> = Leaf::new(b"", None);
        let keys: Vec<Vec<u8>> = (0..CAP as u32)
            .map(|i| format!("/home/user/projects/{i:04}/src/main.rs").into_bytes())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            l.insert_at(i, k, 0, i as u32);
        }
        let anchor = &keys[CAP / 2][..24];
        let r = l.split_off(CAP / 2, anchor);
        for half in [&l, &r] {
            half.audit().unwrap();
            let live: usize = (0..half.len()).map(|i| half.key(i).len()).sum();
            assert_eq!(half.arena.len(), live);
            assert!(
                half.arena.capacity() <= live + live / 4 + 64,
                "{}",
                half.arena.capacity()
            );
        }
    }
}
