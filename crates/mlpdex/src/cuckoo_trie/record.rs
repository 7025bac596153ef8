//! Records: a leaf's value and full key in one allocation, `[V][key bytes]`, aligned to 16 so
//! a leaf stores the address shifted right by 4. Shared by both front ends.

use std::alloc::Layout;

/// Layout of a record for a `key_len`-byte key.
pub(crate) fn layout<V>(key_len: usize) -> Layout {
    let align = core::mem::align_of::<V>().max(16);
    Layout::from_size_align(core::mem::size_of::<V>() + key_len, align)
        .expect("key length is bounded by MAX_KEY_LEN")
}

/// Allocates a record holding `value` and `key`; returns it and the bytes allocated.
pub(crate) fn alloc<V>(key: &[u8], value: V) -> (*mut u8, usize) {
    let layout = layout::<V>(key.len());
    let (p, bytes) = if layout.size() == 0 {
        // A zero-sized value with the empty key: any aligned address will do.
        (layout.align() as *mut u8, 0)
    } else {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        (p, layout.size())
    };
    // SAFETY: `p` is valid for `layout.size()` bytes and aligned for V: V at offset 0, the key
    // right after it.
    unsafe {
        p.cast::<V>().write(value);
        core::ptr::copy_nonoverlapping(key.as_ptr(), p.add(core::mem::size_of::<V>()), key.len());
    }
    (p, bytes)
}

/// Frees a record, returning its value and the bytes released.
///
/// # Safety
/// `p` came from [`alloc`] with a `key_len`-byte key, is no longer reachable by anyone, and is
/// freed once.
pub(crate) unsafe fn free<V>(p: *mut u8, key_len: usize) -> (V, usize) {
    // SAFETY: `alloc` wrote a V at offset 0; nobody else reads it any more.
    let v = unsafe { p.cast::<V>().read() };
    let layout = layout::<V>(key_len);
    if layout.size() != 0 {
        // SAFETY: allocated by `alloc` with this layout.
        unsafe { std::alloc::dealloc(p, layout) };
    }
    (v, layout.size())
}

/// The value in record `p`.
///
/// # Safety
/// `p` is a live record, and the reference does not outlive it or meet a `&mut` to it.
#[inline(always)]
pub(crate) unsafe fn value<'a, V>(p: *mut u8) -> &'a V {
    // SAFETY: per the contract, a live record holding a V at offset 0.
    unsafe { &*p.cast::<V>() }
}

/// The key in record `p`, of `key_len` bytes.
///
/// # Safety
/// `p` is a live record made by [`alloc`] for a `key_len`-byte key, and the slice does not
/// outlive it.
#[inline(always)]
pub(crate) unsafe fn key<'a, V>(p: *mut u8, key_len: usize) -> &'a [u8] {
    // SAFETY: per the contract, `alloc` wrote `key_len` key bytes right after the V.
    unsafe { core::slice::from_raw_parts(p.add(core::mem::size_of::<V>()), key_len) }
}
