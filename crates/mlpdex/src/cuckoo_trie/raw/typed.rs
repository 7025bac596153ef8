//! The typed layer of the single-threaded map: a [`RawTrie`] whose records hold `V`s.
//!
//! The raw trie stores opaque record addresses; this layer owns the records (allocated by
//! `record`, `[V][key bytes]`), so every `unsafe` of the single-threaded map lives here with
//! its proof, and the front end (`cuckoo_trie::CuckooTrie`) only forwards. What makes the
//! references it hands out sound is one rule: **a record is freed or its value moved only
//! through `&mut TypedTrie`** (`insert` replacing a value, `remove`, `clear`, `drain`, drop).
//! So:
//!
//! - a [`Leaf<'a, V>`] is made only from a search under `&'a TypedTrie<V>`: its key and value
//!   stay alive and unchanged for `'a` (no `&mut` can exist meanwhile);
//! - a `&'a mut V` is handed out only under `&'a mut TypedTrie<V>` ([`get_mut`], [`Occupied`],
//!   [`WalkMut`], which yields each leaf at most once); the value bytes `[0, size_of::<V>())`
//!   and the key bytes after them never overlap, so shared keys and a unique value coexist.
//!
//! Iteration ([`Walk`]) also lives here: it is the cursor of `super::cursor` with a lookahead
//! of prefetched records, and it yields [`Leaf`] tokens that the front end turns into
//! `(&[u8], &V)`.
//!
//! [`get_mut`]: TypedTrie::get_mut

use core::marker::PhantomData;
use core::ops::Bound;
use core::ptr::NonNull;
use std::collections::VecDeque;

use super::super::record;
use super::cursor::Cursor;
use super::table::{Ent, Loc};
use super::trie::{Inserted, LeafRef, Params, RawTrie, Retry, Scratch, Seek, stable};
use crate::Error;
use crate::key::is_empty_range;
use crate::substrate::prefetch::prefetch_read;

/// A single-threaded Cuckoo Trie owning its records, each holding a `V`.
pub(crate) struct TypedTrie<V> {
    raw: RawTrie,
    scratch: Scratch,
    /// Bytes of live records (their layouts' sizes).
    record_bytes: usize,
    /// The trie owns `V`s (for drop check and auto traits).
    _values: PhantomData<V>,
}

// SAFETY: the trie owns its records (keys and `V`s) exclusively, like a `Vec<(Box<[u8]>, V)>`;
// sending it sends the `V`s.
unsafe impl<V: Send> Send for TypedTrie<V> {}
// SAFETY: `&TypedTrie` only reads the table and hands out `&V` (see the module docs); every
// write needs `&mut`.
unsafe impl<V: Sync> Sync for TypedTrie<V> {}

/// A leaf found under `&'a TypedTrie<V>`: its record lives, unchanged, for `'a`.
///
/// Made only in this module, from a search of a trie borrowed for `'a`.
pub(crate) struct Leaf<'a, V> {
    loc: Loc,
    ent: Ent,
    _trie: PhantomData<&'a V>,
}

impl<V> Clone for Leaf<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Leaf<'_, V> {}

impl<'a, V> Leaf<'a, V> {
    /// The leaf `l` of a trie borrowed for `'a` (the caller's search ran under that borrow).
    #[inline(always)]
    fn of(l: LeafRef) -> Leaf<'a, V> {
        Leaf {
            loc: l.0,
            ent: l.1,
            _trie: PhantomData,
        }
    }

    /// The leaf's key.
    #[inline(always)]
    pub(crate) fn key(self) -> &'a [u8] {
        // SAFETY: a leaf of a `TypedTrie<V>` borrowed for 'a: its record holds a V and then
        // `key_len` key bytes, and stays alive and unchanged for 'a (module docs).
        unsafe { record::key::<V>(self.ent.rec(), self.ent.key_len()) }
    }

    /// The leaf's value.
    #[inline(always)]
    pub(crate) fn value(self) -> &'a V {
        // SAFETY: as in `key`: a live record holding a V, with no `&mut` to it during 'a.
        unsafe { record::value::<V>(self.ent.rec()) }
    }

    /// Key and value.
    #[inline(always)]
    pub(crate) fn item(self) -> (&'a [u8], &'a V) {
        (self.key(), self.value())
    }

    /// Whether both name the same leaf.
    #[inline(always)]
    fn is(self, other: Leaf<'_, V>) -> bool {
        self.loc == other.loc
    }

    /// Starts fetching the record (no read: the address stays valid for 'a anyway).
    #[inline(always)]
    fn prefetch(self) {
        prefetch_read(self.ent.rec());
    }
}

impl<V> TypedTrie<V> {
    pub(crate) fn new(params: Params) -> Result<TypedTrie<V>, Error> {
        debug_assert_eq!(params.val_size, core::mem::size_of::<V>());
        Ok(TypedTrie {
            raw: RawTrie::new(params)?,
            scratch: Scratch::default(),
            record_bytes: 0,
            _values: PhantomData,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    /// Bytes of the table mapped from the operating system.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.raw.table.mapped_bytes()
    }

    /// Table, records and scratch (not the struct itself).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.raw.table_bytes() + self.scratch.memory_usage() + self.record_bytes
    }

    /// Checks every invariant of the trie and the table; slow.
    pub(crate) fn audit(&self) -> Result<(), String> {
        self.raw.audit()
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        let p = stable(self.raw.get(key))?;
        // SAFETY: the live record of `key`, borrowed with `&self` (module docs).
        Some(unsafe { record::value::<V>(p) })
    }

    /// The values of `keys` into `out` (`RawTrie::get_batch`).
    pub(crate) fn get_batch<'a>(&'a self, keys: &[&[u8]], out: &mut [Option<&'a V>]) {
        let leaf = |k: &[u8]| stable(self.raw.leaf_for(k));
        let answer = |i: usize, rec: Option<*mut u8>| {
            // SAFETY: the live record of `keys[i]`, borrowed with `&self` (module docs).
            out[i] = rec.map(|p| unsafe { record::value::<V>(p) });
        };
        // SAFETY: records are freed only through `&mut self`, and `&self` is borrowed as long
        // as the values are.
        unsafe { self.raw.get_batch(keys, leaf, answer) };
    }

    /// The stored key equal to `key`, and its value.
    #[inline]
    pub(crate) fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        let p = stable(self.raw.get(key))?;
        // SAFETY: the live record of `key`, whose key has `key.len()` bytes, borrowed with
        // `&self`.
        Some(unsafe { (record::key::<V>(p, key.len()), record::value::<V>(p)) })
    }

    /// The value of `key`, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let p = stable(self.raw.get(key))?;
        // SAFETY: the live record of `key`; `&mut self` makes this the only reference to it.
        Some(unsafe { &mut *p.cast::<V>() })
    }

    /// Stores `value` under `key`; returns the value in the map and the one it replaced.
    /// The caller has checked the key's length.
    pub(crate) fn insert(&mut self, key: &[u8], value: V) -> Result<(&mut V, Option<V>), Error> {
        debug_assert!(key.len() <= super::table::MAX_KEY_LEN);
        let mut slot = Some(value);
        let mut made: Option<*mut u8> = None;
        loop {
            let TypedTrie {
                raw,
                scratch,
                record_bytes,
                ..
            } = self;
            let mut make = || {
                *made.get_or_insert_with(|| {
                    let (p, bytes) = record::alloc(key, slot.take().expect("made once"));
                    *record_bytes += bytes;
                    p
                })
            };
            match raw.insert(scratch, key, &mut make) {
                Ok(Inserted::New) => {
                    let p = made.expect("a new leaf holds the record made for it");
                    // SAFETY: the record just linked for `key`; `&mut self` makes this the
                    // only reference to it.
                    return Ok((unsafe { &mut *p.cast::<V>() }, None));
                }
                Ok(Inserted::Existing { rec, .. }) => {
                    let v = slot.take().expect("not consumed for an existing key");
                    // SAFETY: the live record of `key`; `&mut self` gives exclusive access.
                    let cur = unsafe { &mut *rec.cast::<V>() };
                    let old = core::mem::replace(cur, v);
                    return Ok((cur, Some(old)));
                }
                Err(Retry::Torn) => unreachable!("an unshared table is never torn"),
                Err(Retry::Grow) => match self.raw.grown(None) {
                    Ok(bigger) => self.raw = bigger,
                    Err(e) => {
                        if let Some(p) = made {
                            // SAFETY: made by `record::alloc` for this key and never linked
                            // (the insert rolled back before linking it).
                            drop(unsafe { self.take_record(p, key.len()) });
                        }
                        return Err(e);
                    }
                },
            }
        }
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let p = stable(self.raw.remove(&mut self.scratch, key))?;
        self.maybe_shrink();
        // SAFETY: the record of `key`, just unlinked from the trie.
        Some(unsafe { self.take_record(p, key.len()) })
    }

    /// Replaces the table by a smaller one when removals left it mostly empty. Shrinking only
    /// returns memory; if it fails the trie stays as it is.
    fn maybe_shrink(&mut self) {
        if self.raw.wants_shrink()
            && let Ok(smaller) = self.raw.shrunk(None)
        {
            self.raw = smaller;
        }
    }

    /// Shrinks the table to the size growth would give the keys present, unless it is that
    /// small already; keeps it if the memory is refused.
    pub(crate) fn shrink_to_fit(&mut self) {
        let b = self.raw.fit_buckets();
        if b < self.raw.table.buckets()
            && let Ok(smaller) = self.raw.resized(b, None)
        {
            self.raw = smaller;
        }
    }

    /// Grows the table, if needed, so that `keys` keys fit without another growth (estimated;
    /// see `RawTrie::reserve`).
    pub(crate) fn reserve(&mut self, keys: usize) -> Result<(), Error> {
        if let Some(bigger) = self.raw.reserved(keys)? {
            self.raw = bigger;
        }
        Ok(())
    }

    /// Frees a record, returning its value.
    ///
    /// # Safety
    /// `p` came from `record::alloc` with a key of `key_len` bytes, is no longer in the trie,
    /// and is freed once.
    unsafe fn take_record(&mut self, p: *mut u8, key_len: usize) -> V {
        // SAFETY: per the contract; `&mut self` means no reference into it is alive.
        let (v, bytes) = unsafe { record::free::<V>(p, key_len) };
        self.record_bytes -= bytes;
        v
    }

    /// Every record in key order, as (address, key length).
    fn records(&self) -> VecDeque<(NonNull<u8>, usize)> {
        let mut recs = VecDeque::with_capacity(self.raw.len());
        self.raw.for_each_leaf(|e| {
            recs.push_back((
                NonNull::new(e.rec()).expect("records are non-null"),
                e.key_len(),
            ));
        });
        recs
    }

    /// Takes every record out, leaving the trie empty (table back to its first size): the
    /// records, in key order, are the returned [`Drain`]'s to yield or drop.
    pub(crate) fn drain(&mut self) -> Drain<V> {
        let recs = self.records();
        self.raw.reset();
        self.scratch = Scratch::default();
        self.record_bytes = 0;
        Drain {
            recs,
            _values: PhantomData,
        }
    }

    /// Drops every value and empties the trie.
    pub(crate) fn clear(&mut self) {
        drop(self.drain());
    }

    /// The first leaf.
    pub(crate) fn first(&self) -> Option<Leaf<'_, V>> {
        stable(self.raw.first()).map(Leaf::of)
    }

    /// The last leaf.
    pub(crate) fn last(&self) -> Option<Leaf<'_, V>> {
        stable(self.raw.last()).map(Leaf::of)
    }

    /// With the key index, `key`'s entry when the map holds it: the answer of `lower_bound`
    /// and `upper_bound` for `Included(key)` ([`RawTrie::seek_exact`]).
    #[inline]
    pub(crate) fn seek_exact(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        let e = self.raw.seek_exact(key)?;
        // SAFETY: the live record of a key entry, whose key has `e.key_len()` bytes, borrowed
        // with `&self`.
        Some(unsafe {
            (
                record::key::<V>(e.rec(), e.key_len()),
                record::value::<V>(e.rec()),
            )
        })
    }

    /// The first leaf within the start bound `bound` (`>= k`, `> k`, or the first leaf).
    pub(crate) fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<Leaf<'_, V>> {
        let r = match bound {
            Bound::Included(k) => self.raw.seek(k, Seek::Ge),
            Bound::Excluded(k) => self.raw.seek(k, Seek::Gt),
            Bound::Unbounded => self.raw.first(),
        };
        stable(r).map(Leaf::of)
    }

    /// The last leaf within the end bound `bound` (`<= k`, `< k`, or the last leaf).
    pub(crate) fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<Leaf<'_, V>> {
        let r = match bound {
            Bound::Included(k) => self.raw.seek(k, Seek::Le),
            Bound::Excluded(k) => self.raw.seek(k, Seek::Lt),
            Bound::Unbounded => self.raw.last(),
        };
        stable(r).map(Leaf::of)
    }

    /// The entry of `key`: occupied (the record found, so using it needs no second search) or
    /// vacant.
    pub(crate) fn entry(&mut self, key: &[u8]) -> RawEntry<'_, V> {
        match stable(self.raw.get(key)) {
            Some(rec) => RawEntry::Occupied(Occupied {
                trie: self,
                rec,
                key_len: key.len(),
            }),
            None => RawEntry::Vacant(self),
        }
    }

    /// The leaves with keys in `[start, end]` (per the bounds), in order from both ends.
    pub(crate) fn walk(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Walk<'_, V> {
        let empty = || Walk {
            trie: self,
            front: None,
            ahead: Ahead::default(),
            cursor: Cursor::default(),
            back: Back::Last,
            back_cursor: None,
        };
        if is_empty_range(start, end) {
            return empty();
        }
        let back = match end {
            Bound::Unbounded => Some(Back::Last),
            bounded => self.upper_bound(bounded).map(Back::At),
        };
        let Some(back) = back else {
            return empty();
        };
        let (cursor, front) = match start {
            Bound::Included(k) => stable(self.raw.cursor_seek(k, false, false)),
            Bound::Excluded(k) => stable(self.raw.cursor_seek(k, true, false)),
            Bound::Unbounded => stable(self.raw.cursor_first(false)),
        };
        let Some(front) = front.map(Leaf::of) else {
            return empty();
        };
        if let Back::At(b) = back
            && front.key() > b.key()
        {
            return empty();
        }
        front.prefetch();
        Walk {
            trie: self,
            front: Some(front),
            ahead: Ahead::default(),
            cursor,
            back,
            back_cursor: None,
        }
    }

    /// As [`walk`](Self::walk), yielding each value mutably.
    pub(crate) fn walk_mut(&mut self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> WalkMut<'_, V> {
        WalkMut {
            walk: self.walk(start, end),
            _unique: PhantomData,
        }
    }
}

impl<V> Drop for TypedTrie<V> {
    fn drop(&mut self) {
        // The records become the drain's, which drops them; the table goes with `self`.
        drop(Drain::<V> {
            recs: self.records(),
            _values: PhantomData,
        });
    }
}

/// The result of [`TypedTrie::entry`].
pub(crate) enum RawEntry<'a, V> {
    Occupied(Occupied<'a, V>),
    Vacant(&'a mut TypedTrie<V>),
}

/// A key found in the trie, with the trie borrowed exclusively: the record stays live and
/// unaliased until this is consumed.
pub(crate) struct Occupied<'a, V> {
    trie: &'a mut TypedTrie<V>,
    rec: *mut u8,
    key_len: usize,
}

impl<'a, V> Occupied<'a, V> {
    /// The stored key.
    pub(crate) fn key(&self) -> &[u8] {
        // SAFETY: the live record (type docs), its key `key_len` bytes, borrowed with `&self`.
        unsafe { record::key::<V>(self.rec, self.key_len) }
    }

    pub(crate) fn get(&self) -> &V {
        // SAFETY: the live record, borrowed with `&self`.
        unsafe { record::value::<V>(self.rec) }
    }

    pub(crate) fn get_mut(&mut self) -> &mut V {
        // SAFETY: the live record; `&mut self`, which holds the trie exclusively, makes this
        // the only reference.
        unsafe { &mut *self.rec.cast::<V>() }
    }

    pub(crate) fn into_mut(self) -> &'a mut V {
        // SAFETY: the live record; the trie stays borrowed exclusively for 'a, and `self` is
        // consumed, so this is the only reference for 'a.
        unsafe { &mut *self.rec.cast::<V>() }
    }

    /// Removes the entry, returning its key and value.
    pub(crate) fn remove_entry(self) -> (Vec<u8>, V) {
        let key = self.key().to_vec();
        let v = self
            .trie
            .remove(&key)
            .expect("an occupied entry's key is present");
        (key, v)
    }

    /// Removes the entry, returning its value. (The key is copied first: the search reads it
    /// while the record holding it is freed by the same call.)
    pub(crate) fn remove(self) -> V {
        self.remove_entry().1
    }
}

/// A forward lookahead of the walk: leaves found, records prefetched.
const LOOKAHEAD: usize = 8;

/// A ring of leaves found ahead of the front.
struct Ahead<'a, V> {
    ring: [Option<Leaf<'a, V>>; LOOKAHEAD],
    head: usize,
    len: usize,
    /// Items yielded so far: the lookahead ramps up with it, so a short range does not walk far
    /// past its end.
    yielded: usize,
    /// The cursor has no more leaves.
    exhausted: bool,
}

impl<V> Default for Ahead<'_, V> {
    fn default() -> Self {
        Ahead {
            ring: [None; LOOKAHEAD],
            head: 0,
            len: 0,
            yielded: 0,
            exhausted: false,
        }
    }
}

/// The back end of a [`Walk`].
enum Back<'a, V> {
    /// Unbounded: the last leaf, looked up only if the range is walked backwards.
    Last,
    /// The next leaf from the back.
    At(Leaf<'a, V>),
}

/// The leaves of a key range in order, from both ends.
///
/// Going forward walks the trie in order, prefetching the buckets of the next several children
/// of each node together (see `super::cursor`) and each record up to [`LOOKAHEAD`] steps
/// ahead; going backward runs the same walk in reverse (started by one predecessor search),
/// prefetching each record one step ahead.
pub(crate) struct Walk<'a, V> {
    trie: &'a TypedTrie<V>,
    /// The next leaf from the front; `None` once the range is exhausted.
    front: Option<Leaf<'a, V>>,
    /// Leaves after `front` that the cursor has already found (their records prefetched).
    ahead: Ahead<'a, V>,
    cursor: Cursor,
    back: Back<'a, V>,
    /// The reverse walk, once the range has been walked from the back.
    back_cursor: Option<Cursor>,
}

impl<'a, V> Walk<'a, V> {
    /// The key of the next leaf from the front and of the known back leaf (for `Debug`).
    pub(crate) fn ends(&self) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let back = match self.back {
            Back::Last => None,
            Back::At(b) => Some(b.key()),
        };
        (self.front.map(Leaf::key), back)
    }

    /// The leaf after `front`, topping the lookahead up first.
    #[inline]
    fn advance(&mut self) -> Option<Leaf<'a, V>> {
        let a = &mut self.ahead;
        a.yielded += 1;
        let want = (a.yielded + 1).min(LOOKAHEAD);
        while a.len < want && !a.exhausted {
            match stable(self.trie.raw.cursor_next(&mut self.cursor)) {
                Some(leaf) => {
                    let leaf = Leaf::of(leaf);
                    leaf.prefetch();
                    a.ring[(a.head + a.len) % LOOKAHEAD] = Some(leaf);
                    a.len += 1;
                }
                None => a.exhausted = true,
            }
        }
        if a.len == 0 {
            return None;
        }
        let leaf = a.ring[a.head].take();
        a.head = (a.head + 1) % LOOKAHEAD;
        a.len -= 1;
        leaf
    }
}

impl<'a, V> Iterator for Walk<'a, V> {
    type Item = Leaf<'a, V>;

    #[inline]
    fn next(&mut self) -> Option<Leaf<'a, V>> {
        let f = self.front?;
        self.front = match self.back {
            Back::At(b) if b.is(f) => None,
            _ => self.advance(),
        };
        Some(f)
    }
}

impl<V> DoubleEndedIterator for Walk<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let f = self.front?;
        let raw = &self.trie.raw;
        let b = match self.back {
            Back::At(b) => b,
            Back::Last => {
                let (cur, last) = stable(raw.cursor_first(true));
                self.back_cursor = Some(cur);
                Leaf::of(last.expect("a non-empty range has a last leaf"))
            }
        };
        if f.is(b) {
            self.front = None;
        } else {
            // The walk backwards runs the cursor in reverse (prefetching a window of smaller
            // siblings per node), started where the back end first moves.
            let prev = match &mut self.back_cursor {
                Some(cur) => stable(raw.cursor_next(cur)),
                None => {
                    let (cur, prev) = stable(raw.cursor_seek(b.key(), true, true));
                    self.back_cursor = Some(cur);
                    prev
                }
            };
            let prev = Leaf::of(prev.expect("the front leaf precedes the back leaf"));
            prev.prefetch();
            self.back = Back::At(prev);
        }
        Some(b)
    }
}

/// A [`Walk`] under `&'a mut TypedTrie<V>`, yielding values mutably.
pub(crate) struct WalkMut<'a, V> {
    walk: Walk<'a, V>,
    /// The trie is borrowed exclusively for 'a (the walk reads it through a reborrow).
    _unique: PhantomData<&'a mut V>,
}

impl<'a, V> WalkMut<'a, V> {
    /// The value of a leaf the walk has just yielded.
    #[inline(always)]
    fn item(leaf: Leaf<'a, V>) -> (&'a [u8], &'a mut V) {
        // SAFETY: the trie is borrowed exclusively for 'a (`walk_mut` took `&'a mut`), so
        // nothing else reads or writes its records; the walk yields each leaf at most once
        // (front and back stop where they meet), so this is the only `&mut` to this value; the
        // key bytes lie after the value's, so the shared key does not overlap it.
        (leaf.key(), unsafe { &mut *leaf.ent.rec().cast::<V>() })
    }

    pub(crate) fn ends(&self) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        self.walk.ends()
    }
}

impl<'a, V> Iterator for WalkMut<'a, V> {
    type Item = (&'a [u8], &'a mut V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.walk.next().map(Self::item)
    }
}

impl<V> DoubleEndedIterator for WalkMut<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.walk.next_back().map(Self::item)
    }
}

/// Records taken out of a trie by [`TypedTrie::drain`], in key order; yields `(key, value)`
/// from both ends and drops what is left.
pub(crate) struct Drain<V> {
    /// Invariant: each is a live record from `record::alloc` holding a V and its key, owned
    /// by this value alone.
    recs: VecDeque<(NonNull<u8>, usize)>,
    _values: PhantomData<V>,
}

// SAFETY: a Drain owns its records like a `VecDeque<(Box<[u8]>, V)>`.
unsafe impl<V: Send> Send for Drain<V> {}
// SAFETY: `&Drain` gives no access to the records.
unsafe impl<V: Sync> Sync for Drain<V> {}

impl<V> Drain<V> {
    /// Frees a record this drain owned (just popped), returning its key and value.
    fn take((p, len): (NonNull<u8>, usize)) -> (Vec<u8>, V) {
        // SAFETY: a live record holding a V and `len` key bytes (invariant), popped, so freed
        // once and never touched again.
        unsafe {
            let key = record::key::<V>(p.as_ptr(), len).to_vec();
            let (v, _) = record::free::<V>(p.as_ptr(), len);
            (key, v)
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }
}

impl<V> Iterator for Drain<V> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.recs.pop_front().map(Self::take)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.recs.len(), Some(self.recs.len()))
    }
}

impl<V> DoubleEndedIterator for Drain<V> {
    fn next_back(&mut self) -> Option<(Vec<u8>, V)> {
        self.recs.pop_back().map(Self::take)
    }
}

impl<V> Drop for Drain<V> {
    fn drop(&mut self) {
        while let Some((p, len)) = self.recs.pop_front() {
            // SAFETY: as in `take`.
            drop(unsafe { record::free::<V>(p.as_ptr(), len) });
        }
    }
}
