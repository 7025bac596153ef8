//! Immutable arrays that either own their memory or borrow it from a loaded buffer: the storage
//! of the static structures (FST, SuRF), so that loading a serialized image can point into the
//! image instead of copying it.
//!
//! - [`Frozen<T>`] is a read-only `[T]` for plain integer types (`u8`, `u32`, `u64`). It derefs
//!   to a slice through a stored pointer and length, so reads cost what a `Vec`'s do. Clones share
//!   the memory.
//! - [`Shared`] keeps a whole buffer alive (a `Vec<u8>`, an `Arc<[u8]>`, a memory map, a
//!   `&'static [u8]`: anything that is [`StableDeref`] to bytes) and hands out `Frozen` views of
//!   its sections. A view is borrowed when the section is aligned for `T` and the target is
//!   little-endian (the formats' byte order); otherwise it is copied, so every buffer loads and
//!   aligned ones load without copying their bulk.
//!
//! Invariant: `ptr` is valid for reads of `len` elements for as long as `keep` lives, and nobody
//! writes there meanwhile. Owned arrays keep their boxed slice in `keep`; borrowed ones keep the
//! buffer, whose bytes [`StableDeref`] promises do not move while it lives and which is never
//! handed out mutably again.

use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;
use std::sync::Arc;

pub use stable_deref_trait::StableDeref;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// An integer type any bit pattern of which is a valid value, read little-endian.
pub trait Plain: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The value of the first `size_of::<Self>()` bytes of `b`, little-endian.
    fn from_le(b: &[u8]) -> Self;
}

impl Plain for u8 {
    #[inline]
    fn from_le(b: &[u8]) -> Self {
        b[0]
    }
}

impl Plain for u32 {
    #[inline]
    fn from_le(b: &[u8]) -> Self {
        let mut a = [0u8; 4];
        a.copy_from_slice(&b[..4]);
        u32::from_le_bytes(a)
    }
}

impl Plain for u64 {
    #[inline]
    fn from_le(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        u64::from_le_bytes(a)
    }
}

/// What keeps a [`Frozen`]'s memory alive.
type Keep = Arc<dyn Send + Sync>;

/// A read-only array of `T`, owned or borrowed from a [`Shared`] buffer.
pub struct Frozen<T: Plain> {
    ptr: NonNull<T>,
    len: usize,
    keep: Keep,
    borrowed: bool,
}

// SAFETY: a `Frozen` only ever reads its elements (shared, immutable memory of `Sync` plain
// integers) and its keeper is `Send + Sync`.
unsafe impl<T: Plain> Send for Frozen<T> {}
// SAFETY: as above; `&Frozen` gives only `&[T]`.
unsafe impl<T: Plain> Sync for Frozen<T> {}

impl<T: Plain> From<Vec<T>> for Frozen<T> {
    fn from(v: Vec<T>) -> Self {
        let boxed: Box<[T]> = v.into_boxed_slice();
        let len = boxed.len();
        // A boxed slice's pointer is non-null and aligned even when empty, and its heap block
        // does not move when the box moves into the `Arc`.
        let ptr = NonNull::from(&*boxed).cast::<T>();
        Frozen {
            ptr,
            len,
            keep: Arc::new(boxed),
            borrowed: false,
        }
    }
}

impl<T: Plain> Default for Frozen<T> {
    fn default() -> Self {
        Frozen::from(Vec::new())
    }
}

impl<T: Plain> Deref for Frozen<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the invariant of the module: `ptr` is aligned, valid for `len` reads and kept
        // alive (unwritten) by `self.keep` for as long as `self` lives.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> Clone for Frozen<T> {
    fn clone(&self) -> Self {
        Frozen {
            ptr: self.ptr,
            len: self.len,
            keep: Arc::clone(&self.keep),
            borrowed: self.borrowed,
        }
    }
}

impl<T: Plain + PartialEq> PartialEq for Frozen<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Plain + Eq> Eq for Frozen<T> {}

impl<T: Plain + fmt::Debug> fmt::Debug for Frozen<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frozen")
            .field("len", &self.len)
            .field("borrowed", &self.borrowed)
            .finish()
    }
}

impl<T: Plain> Frozen<T> {
    /// Bytes of the elements (whether owned or borrowed: either way they occupy memory).
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// True when the elements live in a loaded buffer rather than in memory of their own.
    #[inline]
    pub fn is_borrowed(&self) -> bool {
        self.borrowed
    }
}

/// A loaded buffer kept alive and cut into [`Frozen`] sections.
#[derive(Clone)]
pub struct Shared {
    keep: Keep,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Shared` only reads the buffer's bytes; its keeper is `Send + Sync`.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").field("len", &self.len).finish()
    }
}

impl Shared {
    /// Keeps `buf` alive for the sections cut from it.
    pub fn new<B>(buf: B) -> Shared
    where
        B: StableDeref<Target = [u8]> + Send + Sync + 'static,
    {
        let bytes: &[u8] = &buf;
        let (ptr, len) = (NonNull::from(bytes).cast::<u8>(), bytes.len());
        Shared {
            keep: Arc::new(buf),
            ptr,
            len,
        }
    }

    /// A copy of `bytes` in memory aligned for `u64`, so that every aligned section borrows.
    pub fn copy_of(bytes: &[u8]) -> Shared {
        // Native byte order keeps every byte where it was: the words hold `bytes` verbatim.
        let whole = bytes.chunks_exact(8);
        let tail = whole.remainder();
        let mut words: Vec<u64> = Vec::with_capacity(bytes.len().div_ceil(8));
        words.extend(whole.map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))));
        if !tail.is_empty() {
            let mut w = [0u8; 8];
            w[..tail.len()].copy_from_slice(tail);
            words.push(u64::from_ne_bytes(w));
        }
        let boxed: Box<[u64]> = words.into_boxed_slice();
        let ptr = NonNull::from(&*boxed).cast::<u8>();
        Shared {
            keep: Arc::new(boxed),
            ptr,
            len: bytes.len(),
        }
    }

    /// The buffer's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` came from the buffer `keep` holds, which does not move its
        // bytes (StableDeref, or a boxed slice) and is never written again.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The `count` elements of `T` at byte `offset`: borrowed when aligned on a little-endian
    /// target, else copied. `None` when the section does not fit in the buffer.
    pub fn section<T: Plain>(&self, offset: usize, count: usize) -> Option<Frozen<T>> {
        let size = count.checked_mul(size_of::<T>())?;
        let end = offset.checked_add(size)?;
        let bytes = self.bytes().get(offset..end)?;
        let aligned = (bytes.as_ptr() as usize).is_multiple_of(align_of::<T>());
        if aligned && cfg!(target_endian = "little") {
            return Some(Frozen {
                ptr: NonNull::from(bytes).cast::<T>(),
                len: count,
                keep: Arc::clone(&self.keep),
                borrowed: true,
            });
        }
        Some(Frozen::from(
            bytes
                .chunks_exact(size_of::<T>())
                .map(T::from_le)
                .collect::<Vec<T>>(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_arrays_read_back_and_share_on_clone() {
        let f = Frozen::from(vec![1u64, 2, 3]);
        assert_eq!(&*f, &[1, 2, 3]);
        assert!(!f.is_borrowed());
        let g = f.clone();
        drop(f);
        assert_eq!(&*g, &[1, 2, 3]);
        assert_eq!(g.bytes(), 24);
        let e = Frozen::<u32>::default();
        assert!(e.is_empty());
        assert_eq!(e, Frozen::from(Vec::new()));
    }

    #[test]
    fn sections_borrow_when_aligned_and_copy_otherwise() {
        let mut bytes = Vec::new();
        for x in [7u64, u64::MAX, 0x0102_0304_0506_0708] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let s = Shared::copy_of(&bytes);
        let w = s.section::<u64>(0, 3).unwrap();
        assert_eq!(&*w, &[7, u64::MAX, 0x0102_0304_0506_0708]);
        assert_eq!(w.is_borrowed(), cfg!(target_endian = "little"));
        let h = s.section::<u32>(16, 2).unwrap();
        assert_eq!(&*h, &[0x0506_0708, 0x0102_0304]);
        // Byte 5 is never aligned for u32: the section is copied and still right.
        let u = s.section::<u32>(5, 1).unwrap();
        assert!(!u.is_borrowed());
        assert_eq!(u[0], u32::from_le_bytes([0, 0, 0, 0xFF]));
        let b = s.section::<u8>(3, 5).unwrap();
        assert_eq!(&*b, &bytes[3..8]);
        assert!(s.section::<u64>(8, 3).is_none());
        assert!(s.section::<u8>(usize::MAX, 2).is_none());
        assert!(s.section::<u64>(0, usize::MAX).is_none());
        // Offsets and counts whose byte size or end passes usize::MAX (or wraps onto a small
        // number) are refused, not wrapped.
        for (offset, count) in [
            (usize::MAX, 0),
            (usize::MAX - 7, 1),
            (8, usize::MAX / 8),
            (8, usize::MAX / 8 + 1),
            (usize::MAX / 2, usize::MAX / 16 + 1),
            (25, 0),
        ] {
            assert!(
                s.section::<u64>(offset, count).is_none(),
                "u64 ({offset}, {count})"
            );
            assert!(
                s.section::<u32>(offset, count).is_none(),
                "u32 ({offset}, {count})"
            );
        }
        assert_eq!(s.section::<u8>(24, 0).map(|f| f.len()), Some(0));
        // Sections outlive the handle they were cut from.
        drop(s);
        assert_eq!(w[0], 7);
        assert_eq!(b[0], 0);
    }

    #[test]
    fn shared_keeps_any_stable_buffer() {
        let v: Vec<u8> = (0..32).collect();
        let a: Arc<[u8]> = v.clone().into();
        for s in [
            Shared::new(v.clone()),
            Shared::new(a),
            Shared::new(v.clone().into_boxed_slice()),
            Shared::new(&[9u8; 4][..]),
        ] {
            let n = s.bytes().len();
            let sec = s.section::<u8>(0, n).unwrap();
            assert_eq!(&*sec, s.bytes());
        }
    }
}
