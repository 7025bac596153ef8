//! Keys: byte strings in lexicographic order, and helpers around them.
//!
//! Every mlpdex structure orders keys as `[u8]` slices compare: byte by byte, unsigned, and a
//! proper prefix before any extension of it (`"ab" < "abc" < "ac"`). The empty key, every byte
//! value, prefix keys stored together and keys of several KiB are legal everywhere unless a
//! structure is documented as integer-only.
//!
//! Integer keys map to big-endian bytes, which preserves their order:
//! ```
//! use mlpdex::key::{key_to_u64, u64_to_key};
//! assert!(u64_to_key(1) < u64_to_key(256));
//! assert_eq!(key_to_u64(&u64_to_key(42)), Some(42));
//! assert_eq!(key_to_u64(b"short"), None);
//! ```

use core::ops::{Bound, RangeBounds};

/// The big-endian bytes of `x`: byte order equals integer order.
#[inline]
pub fn u64_to_key(x: u64) -> [u8; 8] {
    x.to_be_bytes()
}

/// The integer whose big-endian bytes are `key`, or `None` unless `key` is exactly 8 bytes long.
#[inline]
pub fn key_to_u64(key: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(key).ok().map(u64::from_be_bytes)
}

/// The integer bound selecting the same 8-byte keys as the byte-string lower bound `b`.
///
/// An 8-byte key `k` is `≥ b` for a shorter `b` exactly when `k ≥ b` padded with zeros, and
/// for a longer `b` exactly when `k > b[..8]` (a key equal to `b[..8]` is a proper prefix of
/// `b`, so smaller); `Excluded` selects the same keys as `Included` when `b` is not 8 bytes.
pub(crate) fn int_start(b: Bound<&[u8]>) -> Bound<u64> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(b) | Bound::Excluded(b) if b.len() < 8 => Bound::Included(padded(b)),
        Bound::Included(b) | Bound::Excluded(b) if b.len() > 8 => Bound::Excluded(padded(b)),
        Bound::Included(b) => Bound::Included(padded(b)),
        Bound::Excluded(b) => Bound::Excluded(padded(b)),
    }
}

/// The integer bound selecting the same 8-byte keys as the byte-string upper bound `b`
/// (mirror of [`int_start`]: `k ≤ b` is `k < b` padded for a shorter `b`, `k ≤ b[..8]` for a
/// longer one).
pub(crate) fn int_end(b: Bound<&[u8]>) -> Bound<u64> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(b) | Bound::Excluded(b) if b.len() < 8 => Bound::Excluded(padded(b)),
        Bound::Included(b) | Bound::Excluded(b) if b.len() > 8 => Bound::Included(padded(b)),
        Bound::Included(b) => Bound::Included(padded(b)),
        Bound::Excluded(b) => Bound::Excluded(padded(b)),
    }
}

/// The integer of `b`'s first 8 bytes, zero-padded when shorter.
fn padded(b: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = b.len().min(8);
    k[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(k)
}

/// A range of byte-string keys, in any of the forms people write.
///
/// Every `range`, `visit_range`, `may_contain_range` and `approx_count` in mlpdex takes an
/// `impl KeyRange`, so none needs a turbofish. It is implemented for `..`, for `a..b`, `a..`,
/// `..b`, `a..=b` and `..=b` over any key type that is `AsRef<[u8]>` (`&[u8]`, `&[u8; N]`,
/// `Vec<u8>`, `&str`, `String`, …), and for a pair of [`Bound`]s of one such type:
///
/// ```
/// use core::ops::Bound;
/// use mlpdex::KeyRange;
///
/// fn show(r: impl KeyRange) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
///     let (lo, hi) = r.key_bounds();
///     (lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec))
/// }
/// let k: &[u8] = b"k";
/// assert_eq!(show(..), (Bound::Unbounded, Bound::Unbounded));
/// assert_eq!(show(b"a".as_slice()..b"cc"), (Bound::Included(b"a".to_vec()), Bound::Excluded(b"cc".to_vec())));
/// assert_eq!(show("a"..="c").1, Bound::Included(b"c".to_vec()));
/// assert_eq!(show((Bound::Excluded(k), Bound::Unbounded)).0, Bound::Excluded(b"k".to_vec()));
/// assert_eq!(show(vec![1u8]..).0, Bound::Included(vec![1]));
/// ```
///
/// An empty or inverted range (`b"c".as_slice()..b"a"`) selects no key: mlpdex structures
/// return nothing for it where `BTreeMap::range` would panic.
pub trait KeyRange {
    /// The lower and upper bound of the range, borrowed as byte slices.
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>);
}

#[inline]
fn as_bytes_bound<K: AsRef<[u8]> + ?Sized>(b: Bound<&K>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Implements [`KeyRange`] for range types over an `AsRef<[u8]>` key, through `RangeBounds`.
macro_rules! key_range_via_range_bounds {
    ($($ty:ty),*) => {$(
        impl<K: AsRef<[u8]>> KeyRange for $ty {
            #[inline]
            fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
                (
                    as_bytes_bound(RangeBounds::<K>::start_bound(self)),
                    as_bytes_bound(RangeBounds::<K>::end_bound(self)),
                )
            }
        }
    )*};
}

key_range_via_range_bounds!(
    core::ops::Range<K>,
    core::ops::RangeFrom<K>,
    core::ops::RangeTo<K>,
    core::ops::RangeInclusive<K>,
    core::ops::RangeToInclusive<K>,
    (Bound<K>, Bound<K>)
);

impl KeyRange for core::ops::RangeFull {
    #[inline]
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

impl<R: KeyRange + ?Sized> KeyRange for &R {
    #[inline]
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (**self).key_bounds()
    }
}

/// Length of the common prefix of `a` and `b`, eight bytes at a time.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

// The range-bound helpers and `Escaped` are the crate's own: its structures call them, and they
// are no part of the API. The `testing` feature exposes them, hidden from the docs, to the
// crate's integration tests and fuzz targets, whose reference models check ranges the same way.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use internal::{Escaped, after_start, before_end, in_range, is_empty_range, show_bound};
#[cfg(not(feature = "testing"))]
pub(crate) use internal::{Escaped, after_start, before_end, is_empty_range};
#[cfg(all(test, not(feature = "testing")))]
pub(crate) use internal::{in_range, show_bound};

mod internal {
    use core::fmt;
    use core::ops::Bound;

    /// True when no key can lie within `(start, end)`: start above end, or equal with an exclusion.
    ///
    /// Structures use this to return an empty range where `std::collections::BTreeMap` would panic.
    #[inline]
    pub fn is_empty_range(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
        match (start, end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e))
            | (Bound::Excluded(s), Bound::Excluded(e)) => s >= e,
            _ => false,
        }
    }

    /// True when `key` lies after the start bound `start` (always for `Unbounded`).
    #[inline]
    pub fn after_start(key: &[u8], start: Bound<&[u8]>) -> bool {
        match start {
            Bound::Included(s) => key >= s,
            Bound::Excluded(s) => key > s,
            Bound::Unbounded => true,
        }
    }

    /// True when `key` lies before the end bound `end` (always for `Unbounded`).
    #[inline]
    pub fn before_end(key: &[u8], end: Bound<&[u8]>) -> bool {
        match end {
            Bound::Included(e) => key <= e,
            Bound::Excluded(e) => key < e,
            Bound::Unbounded => true,
        }
    }

    /// True when `key` lies within `(start, end)`.
    #[cfg(any(test, feature = "testing"))]
    #[inline]
    pub fn in_range(key: &[u8], start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
        after_start(key, start) && before_end(key, end)
    }

    /// A bound for messages: `Included("k")`, `Excluded("k")` or `Unbounded`, keys [`Escaped`].
    #[cfg(any(test, feature = "testing"))]
    pub fn show_bound(b: Bound<&[u8]>) -> String {
        match b {
            Bound::Included(k) => format!("Included({})", Escaped(k)),
            Bound::Excluded(k) => format!("Excluded({})", Escaped(k)),
            Bound::Unbounded => "Unbounded".to_string(),
        }
    }

    /// Displays a key readably: printable ASCII as is, other bytes as `\xNN`. A key longer than
    /// 64 bytes shows its first 48 and last 8 bytes and its length (long keys that differ only
    /// near the end stay distinguishable).
    #[derive(Clone, Copy)]
    pub struct Escaped<'a>(pub &'a [u8]);

    impl Escaped<'_> {
        fn write_bytes(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
            for &b in bytes {
                if b.is_ascii_graphic() || b == b' ' {
                    if b == b'"' || b == b'\\' {
                        f.write_str("\\")?;
                    }
                    write!(f, "{}", b as char)?;
                } else {
                    write!(f, "\\x{b:02x}")?;
                }
            }
            Ok(())
        }
    }

    impl fmt::Display for Escaped<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            const WHOLE: usize = 64;
            const HEAD: usize = 48;
            const TAIL: usize = 8;
            let k = self.0;
            f.write_str("\"")?;
            if k.len() <= WHOLE {
                Self::write_bytes(f, k)?;
                return f.write_str("\"");
            }
            Self::write_bytes(f, &k[..HEAD])?;
            f.write_str("…")?;
            Self::write_bytes(f, &k[k.len() - TAIL..])?;
            write!(f, "\" ({} bytes)", k.len())
        }
    }

    impl fmt::Debug for Escaped<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(self, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_round_trip_preserves_order() {
        let xs = [0u64, 1, 255, 256, 1 << 40, u64::MAX - 1, u64::MAX];
        for w in xs.windows(2) {
            assert!(u64_to_key(w[0]) < u64_to_key(w[1]));
        }
        for &x in &xs {
            assert_eq!(key_to_u64(&u64_to_key(x)), Some(x));
        }
        assert_eq!(key_to_u64(&[0; 9]), None);
        assert_eq!(key_to_u64(&[]), None);
    }

    #[test]
    fn bounds_of_various_range_types() {
        let a: &[u8] = b"a";
        let c: &[u8] = b"c";
        assert_eq!(
            (a..c).key_bounds(),
            (Bound::Included(a), Bound::Excluded(c))
        );
        assert_eq!(
            ("a"..="c").key_bounds(),
            (Bound::Included(a), Bound::Included(c))
        );
        assert_eq!(
            (Bound::Excluded(a), Bound::Unbounded).key_bounds(),
            (Bound::Excluded(a), Bound::Unbounded)
        );
        assert_eq!((..).key_bounds(), (Bound::Unbounded, Bound::Unbounded));
    }

    #[test]
    fn empty_ranges() {
        let (a, b): (&[u8], &[u8]) = (b"a", b"b");
        assert!(is_empty_range(Bound::Included(b), Bound::Included(a)));
        assert!(is_empty_range(Bound::Excluded(a), Bound::Included(a)));
        assert!(is_empty_range(Bound::Included(a), Bound::Excluded(a)));
        assert!(!is_empty_range(Bound::Included(a), Bound::Included(a)));
        assert!(!is_empty_range(Bound::Excluded(a), Bound::Excluded(b)));
        assert!(!is_empty_range(Bound::Unbounded, Bound::Excluded(a)));
        assert!(in_range(b"a", Bound::Included(a), Bound::Excluded(b)));
        assert!(!in_range(b"b", Bound::Included(a), Bound::Excluded(b)));
        assert!(in_range(b"", Bound::Unbounded, Bound::Included(a)));
    }

    #[test]
    fn escaped_display() {
        assert_eq!(Escaped(b"ab\x00\xff\"").to_string(), r#""ab\x00\xff\"""#);
        let mut long = vec![b'x'; 100];
        long[99] = b'y';
        let shown = Escaped(&long).to_string();
        assert!(shown.ends_with("…xxxxxxxy\" (100 bytes)"), "{shown}");
        assert!(
            shown.starts_with(&format!("\"{}…", "x".repeat(48))),
            "{shown}"
        );
    }
}

#[cfg(test)]
mod common_prefix_tests {
    use super::common_prefix;

    #[test]
    fn common_prefix_matches_naive() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"", b"abc"),
            (b"abc", b"abd"),
            (b"abcdefghij", b"abcdefghik"),
            (b"abcdefgh", b"abcdefgh"),
            (b"abcdefghijklmnopq", b"abcdefghijklmnopr"),
            (b"\xff\x00", b"\xff\x01"),
        ];
        for (a, b) in cases {
            let naive = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            assert_eq!(common_prefix(a, b), naive);
            assert_eq!(common_prefix(b, a), naive);
        }
    }
}
