//! Nodes: header, inline value, key and tower in one allocation aligned to a cache line.
//!
//! ```text
//! offset 0   value word   0 = the inline value is current; else the address of a `Boxed<V>`
//!                         holding a replacement; bit 0 (DELETED) set once the key is removed
//!        8   next[0]      level-0 link (the only link a scan step reads)
//!       16   key_len: u32, height: u8, state: u8 (BUILT | UNLINKED, INLINE_DROPPED | FREEING)
//!       24   inline value (V; uninitialized in the head, dropped early once replaced)
//!   24+|V|   key bytes
//!  aligned   next[1..height]
//! ```
//!
//! What one step of a scan needs (the value word, `next[0]`, the key length, the value and the
//! key) comes first, so for keys up to about `40 - size_of::<V>()` bytes a step touches one
//! cache line. A node whose allocation is longer than a line carries the [`WIDE`] bit in every
//! link that points to it, so the iterator's prefetcher knows to fetch two lines.
//!
//! Links are `usize` words: a node address (a multiple of [`NODE_ALIGN`]) or 0 for the end of a
//! level, plus [`WIDE`] and, on a node's own `next[i]`, [`MARK`]: the node is being unlinked at
//! level `i`, and the link never changes again.

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::mem::{MaybeUninit, align_of, size_of};
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

use crate::Error;
use crate::substrate::prefetch::{CACHE_LINE, prefetch_read};
use crate::sync::{AtomicU8, AtomicUsize};

/// Most levels a node can have; 2^32 keys before the top level stops halving.
pub(crate) const MAX_HEIGHT: usize = 32;
/// Alignment of every node: a cache line, so a short node is one line.
pub(crate) const NODE_ALIGN: usize = 64;
/// Link bit on a node's own `next[i]`: the node is being unlinked at level `i`.
pub(crate) const MARK: usize = 1;
/// Link bit on every link to a node longer than one cache line.
pub(crate) const WIDE: usize = 2;
/// The address part of a link word.
const ADDR: usize = !(NODE_ALIGN - 1);
/// Value-word bit: the key was removed (the removal's linearization point).
pub(crate) const DELETED: usize = 1;
/// State bit: the inserter is done with the tower (linked or gave up) and will not touch it.
pub(crate) const BUILT: u8 = 1;
/// State bit: the remover has marked every level and run its unlinking search.
pub(crate) const UNLINKED: u8 = 2;
/// State bit: the inline value, replaced by an update, has been dropped (by the deferred drop
/// the update scheduled).
const INLINE_DROPPED: u8 = 4;
/// State bit: the node itself is done with (retired and past its epoch, or its list dropped),
/// but its replaced inline value was still waiting to be dropped, whose drop then frees it.
const FREEING: u8 = 8;

/// A replacement value, boxed so an update is one pointer swap; aligned so that bit 0 of its
/// address is free for [`DELETED`].
#[repr(align(8))]
pub(crate) struct Boxed<V>(pub(crate) V);

/// The fixed part of a node; key and upper tower follow it in the same allocation.
#[repr(C)]
pub(crate) struct Node<V> {
    /// 0, or the address of the current `Boxed<V>`; bit 0 is [`DELETED`].
    pub(crate) value: AtomicUsize,
    /// Link at level 0.
    next0: AtomicUsize,
    key_len: u32,
    height: u8,
    /// [`BUILT`] | [`UNLINKED`]: whoever sets the second bit retires the node.
    /// [`INLINE_DROPPED`] | [`FREEING`]: whoever sets the second bit frees it.
    pub(crate) state: AtomicU8,
    /// The first value. In an `UnsafeCell` because it is dropped in place (once replaced and
    /// past its epoch) while other threads may still hold references to the node.
    inline: UnsafeCell<MaybeUninit<V>>,
}

#[cfg(not(all(test, mlpdex_loom)))]
const _: () = assert!(core::mem::offset_of!(Node<u64>, inline) == 24);
#[cfg(not(all(test, mlpdex_loom)))]
const _: () = assert!(size_of::<Node<u64>>() == 32);

/// The node a link word points to (null for the end of a level).
#[inline(always)]
pub(crate) fn addr<V>(link: usize) -> *const Node<V> {
    (link & ADDR) as *const Node<V>
}

/// Prefetches the node `link` points to: its first line, and the second if it is [`WIDE`].
#[inline(always)]
pub(crate) fn prefetch_link(link: usize) {
    let a = link & ADDR;
    prefetch_read(a as *const u8);
    if link & WIDE != 0 {
        prefetch_read((a + CACHE_LINE) as *const u8);
    }
}

impl<V> Node<V> {
    const KEY_OFFSET: usize = size_of::<Node<V>>();

    /// Offset of `next[1]`.
    #[inline(always)]
    fn upper_offset(key_len: usize) -> usize {
        let a = align_of::<AtomicUsize>();
        (Self::KEY_OFFSET + key_len + a - 1) & !(a - 1)
    }

    /// Layout of a node with a `key_len`-byte key and `height` levels; `None` when too large.
    pub(crate) fn layout(key_len: usize, height: usize) -> Option<Layout> {
        debug_assert!((1..=MAX_HEIGHT).contains(&height));
        // `key_len` fits in a u32, so none of this overflows on a 64-bit target.
        let size = Self::upper_offset(key_len) + (height - 1) * size_of::<AtomicUsize>();
        Layout::from_size_align(size, NODE_ALIGN.max(align_of::<Node<V>>())).ok()
    }

    /// Bytes allocated for a node with a `key_len`-byte key and `height` levels.
    pub(crate) fn size(key_len: usize, height: usize) -> usize {
        Self::layout(key_len, height).map_or(0, |l| l.size())
    }

    /// The key.
    #[inline(always)]
    pub(crate) fn key(&self) -> &[u8] {
        // SAFETY: every node is allocated with `key_len` key bytes at KEY_OFFSET, written before
        // the node was published and never changed.
        unsafe {
            let p = (self as *const Self as *const u8).add(Self::KEY_OFFSET);
            core::slice::from_raw_parts(p, self.key_len as usize)
        }
    }

    /// Number of levels the node is part of (at least 1).
    #[inline(always)]
    pub(crate) fn height(&self) -> usize {
        self.height as usize
    }

    /// The link at `level`.
    #[inline(always)]
    pub(crate) fn next(&self, level: usize) -> &AtomicUsize {
        debug_assert!(level < self.height());
        if level == 0 {
            return &self.next0;
        }
        // SAFETY: `level < height`, and the allocation holds `height - 1` upper links from
        // `upper_offset`, aligned for AtomicUsize and initialized by `alloc`.
        unsafe {
            let base =
                (self as *const Self as *const u8).add(Self::upper_offset(self.key_len as usize));
            &*base.cast::<AtomicUsize>().add(level - 1)
        }
    }

    /// The value a value word designates.
    ///
    /// # Safety
    /// `word` was loaded from this node's value word (any DELETED bit is ignored), the node is
    /// not the head, and the caller keeps the node and that box alive for the reference's life
    /// (the epoch guard under which the word was loaded).
    #[inline(always)]
    pub(crate) unsafe fn value_at(&self, word: usize) -> &V {
        let p = word & !DELETED;
        if p == 0 {
            // SAFETY: every node but the head is allocated with its inline value initialized.
            // A word of 0 means no update has replaced it yet, or one did after the caller
            // loaded `word`: then the caller's guard predates the deferred drop, which waits.
            unsafe { (*self.inline.get()).assume_init_ref() }
        } else {
            // SAFETY: a non-zero word is the address of a live `Boxed<V>` (retired only after
            // it stopped being current, freed only after the caller's guard).
            unsafe { &(*(p as *const Boxed<V>)).0 }
        }
    }
}

/// Allocates a node with `key`, `value` and `height` levels, every link null. Returns the link
/// word (address plus [`WIDE`] when it spans lines) and the bytes allocated.
pub(crate) fn alloc<V>(key: &[u8], value: V, height: usize) -> Result<(usize, usize), Error> {
    let key_len = u32::try_from(key.len()).map_err(|_| Error::KeyTooLong {
        len: key.len(),
        max: u32::MAX as usize,
    })?;
    // SAFETY: the value slot is written right after allocation.
    let (link, bytes) = unsafe { alloc_raw::<V>(key, key_len, height)? };
    // SAFETY: `alloc_raw` returned a fresh node of this layout; nobody else sees it yet.
    unsafe {
        let n = addr::<V>(link) as *mut Node<V>;
        (*n).inline.get_mut().as_mut_ptr().write(value);
    }
    Ok((link, bytes))
}

/// Allocates the head: no key, [`MAX_HEIGHT`] levels, no value.
pub(crate) fn alloc_head<V>() -> Result<(usize, usize), Error> {
    // SAFETY: the head's value is never read (`value_at` excludes the head).
    unsafe { alloc_raw::<V>(&[], 0, MAX_HEIGHT) }
}

/// # Safety
/// The caller initializes the inline value before any `value_at`, unless this is the head.
unsafe fn alloc_raw<V>(key: &[u8], key_len: u32, height: usize) -> Result<(usize, usize), Error> {
    let layout =
        Node::<V>::layout(key.len(), height).ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
    // SAFETY: the layout's size is at least size_of::<Node<V>>() > 0.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(Error::OutOfMemory {
            bytes: layout.size(),
        });
    }
    let n = p.cast::<Node<V>>();
    // SAFETY: `p` is valid for `layout`, aligned for Node<V> and AtomicUsize; fields, key and
    // links are written in place before the node is shared.
    unsafe {
        core::ptr::addr_of_mut!((*n).value).write(AtomicUsize::new(0));
        core::ptr::addr_of_mut!((*n).next0).write(AtomicUsize::new(0));
        core::ptr::addr_of_mut!((*n).key_len).write(key_len);
        core::ptr::addr_of_mut!((*n).height).write(height as u8);
        core::ptr::addr_of_mut!((*n).state).write(AtomicU8::new(0));
        core::ptr::copy_nonoverlapping(key.as_ptr(), p.add(Node::<V>::KEY_OFFSET), key.len());
        let upper = p
            .add(Node::<V>::upper_offset(key.len()))
            .cast::<AtomicUsize>();
        for i in 0..height - 1 {
            upper.add(i).write(AtomicUsize::new(0));
        }
    }
    let wide = if layout.size() > CACHE_LINE { WIDE } else { 0 };
    Ok((p as usize | wide, layout.size()))
}

/// Releases a node the list is done with (retired past its epoch, or linked when the list is
/// dropped): drops its current value and frees it. If an update replaced the inline value
/// (the value word is not 0) the update scheduled that value's drop; the node is then freed
/// here or by that drop ([`drop_replaced_inline`]), whichever comes second. Returns the bytes
/// released here.
///
/// # Safety
/// The node is not the head, no thread can reach it any more, and it is released once.
pub(crate) unsafe fn release<V>(link: usize) -> usize {
    let n = addr::<V>(link) as *mut Node<V>;
    // SAFETY: per the contract the node is ours, except that a scheduled drop of its replaced
    // inline value may run at the same time; that drop touches only the inline value and the
    // state byte, and the handshake below leaves the deallocation to the second of us.
    unsafe {
        let word = (*n).value.load(Acquire) & !DELETED;
        if word == 0 {
            (*n).inline.get_mut().assume_init_drop();
            return dealloc::<V>(n);
        }
        let bytes = drop_box::<V>(word);
        if (*n).state.fetch_or(FREEING, AcqRel) & INLINE_DROPPED != 0 {
            return bytes + dealloc::<V>(n);
        }
        bytes
    }
}

/// Drops the inline value of a node whose first update replaced it; frees the node too if the
/// list was already done with it ([`release`]). Returns the bytes freed.
///
/// # Safety
/// An update replaced the node's inline value (its value word left 0), no thread can still
/// hold a reference to that value, and this runs once per node.
pub(crate) unsafe fn drop_replaced_inline<V>(link: usize) -> usize {
    let n = addr::<V>(link) as *mut Node<V>;
    // SAFETY: the node is still allocated: it is freed only by the second of this call and
    // `release`, and this call has not set its bit yet. The inline value is initialized
    // (never dropped before: this runs once and `release` skips it) and nobody reads it any
    // more; other threads may still read the node's other fields, which we leave alone, and
    // the value sits in an `UnsafeCell`.
    unsafe {
        (*(*n).inline.get()).assume_init_drop();
        if (*n).state.fetch_or(INLINE_DROPPED, AcqRel) & FREEING != 0 {
            return dealloc::<V>(n);
        }
    }
    0
}

/// Frees the head node (it has no value).
///
/// # Safety
/// `link` is the list's head, no thread can reach it any more, freed once.
pub(crate) unsafe fn free_head<V>(link: usize) -> usize {
    // SAFETY: per the contract; the head's inline value was never initialized.
    unsafe { dealloc::<V>(addr::<V>(link) as *mut Node<V>) }
}

/// Takes the value back out of a node that was never published and frees the node; returns
/// the value and the bytes released.
///
/// # Safety
/// The node came from [`alloc`], was never shared, and has no boxed value.
pub(crate) unsafe fn take_unpublished<V>(link: usize) -> (V, usize) {
    let n = addr::<V>(link) as *mut Node<V>;
    // SAFETY: per the contract we own the node; the inline value is initialized.
    unsafe {
        debug_assert_eq!((*n).value.load(Relaxed), 0);
        let v = (*n).inline.get_mut().assume_init_read();
        let bytes = dealloc::<V>(n);
        (v, bytes)
    }
}

/// # Safety
/// `n` is owned by the caller; its value (if any) has been dropped or moved out.
unsafe fn dealloc<V>(n: *mut Node<V>) -> usize {
    // SAFETY: per the contract; the layout is the one `alloc_raw` used.
    unsafe {
        let key_len = (*n).key_len as usize;
        let height = (*n).height as usize;
        for level in 1..height {
            core::ptr::drop_in_place((*n).next(level) as *const AtomicUsize as *mut AtomicUsize);
        }
        core::ptr::drop_in_place(core::ptr::addr_of_mut!((*n).value));
        core::ptr::drop_in_place(core::ptr::addr_of_mut!((*n).next0));
        core::ptr::drop_in_place(core::ptr::addr_of_mut!((*n).state));
        let layout = Node::<V>::layout(key_len, height).expect("allocated with this layout");
        std::alloc::dealloc(n.cast(), layout);
        layout.size()
    }
}

/// Boxes a replacement value; returns its value word and size.
pub(crate) fn new_box<V>(v: V) -> (usize, usize) {
    let p = Box::into_raw(Box::new(Boxed(v))) as usize;
    debug_assert_eq!(p & DELETED, 0);
    (p, size_of::<Boxed<V>>())
}

/// Takes the value out of a box that was never published.
///
/// # Safety
/// `word` came from [`new_box`] and was never shared.
pub(crate) unsafe fn take_box<V>(word: usize) -> V {
    // SAFETY: per the contract.
    unsafe { Box::from_raw(word as *mut Boxed<V>).0 }
}

/// Drops and frees a box; returns its size.
///
/// # Safety
/// `word` came from [`new_box`], nobody can reach it any more, and it is freed once.
pub(crate) unsafe fn drop_box<V>(word: usize) -> usize {
    // SAFETY: per the contract.
    drop(unsafe { Box::from_raw(word as *mut Boxed<V>) });
    size_of::<Boxed<V>>()
}
