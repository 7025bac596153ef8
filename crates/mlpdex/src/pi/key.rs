//! The keys a [`Pi`](super::Pi) stores: `u64`, or byte strings (`Vec<u8>`).
//!
//! The index layer compares 8-byte *prefixes* with SIMD (pi-parallel-skiplist.txt §4.2): a
//! `u64` is its own prefix; a byte string's is its first eight bytes read big-endian, padded
//! with zeros. The prefix preserves order (`a < b` implies `prefix(a) <= prefix(b)`), so
//! keys of different prefixes are ordered by them alone and only keys of one prefix need a
//! full comparison: a tie, which a `u64` never has ([`sealed::Key::EXACT`]), so the tie
//! checks compile away for it.
//!
//! Byte strings that share their first eight bytes are common (e-mail addresses of one
//! host, paths), so a byte-string key also carries the *next* eight bytes as a second word:
//! index entries keep it for each slot and nodes beside their bytes, and a tie on the first
//! word is settled by the second without reading the key's bytes, which a whole comparison
//! needs only when the first sixteen bytes agree.

use core::cmp::Ordering;
use core::fmt;

/// A key type of [`Pi`](super::Pi): `u64` (the default) or `Vec<u8>` (byte strings, in
/// lexicographic order). Sealed: the batch executor relies on how these two compare.
///
/// ```
/// use mlpdex::pi::{Pi, PiKey};
///
/// fn keys<K: PiKey>(m: &Pi<K>) -> usize {
///     m.len()
/// }
/// let ints: Pi = [(1u64, 10u64)].into_iter().collect();
/// let strings: Pi<Vec<u8>> = [(b"a".to_vec(), 1u64)].into_iter().collect();
/// assert_eq!(keys(&ints) + keys(&strings), 2);
/// ```
pub trait PiKey: sealed::Key {}

impl PiKey for u64 {}

impl PiKey for Vec<u8> {}

pub(crate) mod sealed {
    use super::*;

    /// How the executor handles a key type (see the module docs).
    pub trait Key: Ord + Clone + fmt::Debug + Send + Sync + 'static {
        /// A borrowed key, cheap to copy and compare.
        type Ref<'a>: Copy + fmt::Debug + Send + Sync;
        /// A key as a node keeps it.
        type Stored: Default + fmt::Debug + Send + Sync;
        /// Whether equal prefixes mean equal keys.
        const EXACT: bool;

        /// The key, borrowed.
        fn key_ref(&self) -> Self::Ref<'_>;
        /// A node's key, borrowed.
        fn stored_ref(s: &Self::Stored) -> Self::Ref<'_>;
        /// The key as a new node keeps it.
        fn store(r: Self::Ref<'_>) -> Self::Stored;
        /// The key, owned (for answers).
        fn owned(r: Self::Ref<'_>) -> Self;
        /// The smallest key.
        fn min_ref<'a>() -> Self::Ref<'a>;
        /// The order-preserving 8-byte prefix.
        fn prefix(r: Self::Ref<'_>) -> u64;
        /// The word after the prefix (bytes 8 to 16 of a byte string, zero-padded; 0 for
        /// `u64`): keys of one prefix are ordered by it, up to ties.
        fn second(r: Self::Ref<'_>) -> u64;
        /// The order of the keys (prefixes first).
        fn order(a: Self::Ref<'_>, b: Self::Ref<'_>) -> Ordering;
        /// Heap bytes a stored key owns.
        fn heap_bytes(s: &Self::Stored) -> usize;
    }
}

impl sealed::Key for u64 {
    type Ref<'a> = u64;
    type Stored = u64;
    const EXACT: bool = true;

    #[inline(always)]
    fn key_ref(&self) -> u64 {
        *self
    }
    #[inline(always)]
    fn stored_ref(s: &u64) -> u64 {
        *s
    }
    #[inline(always)]
    fn store(r: u64) -> u64 {
        r
    }
    #[inline(always)]
    fn owned(r: u64) -> u64 {
        r
    }
    #[inline(always)]
    fn min_ref<'a>() -> Self::Ref<'a> {
        0
    }
    #[inline(always)]
    fn prefix(r: u64) -> u64 {
        r
    }
    #[inline(always)]
    fn second(_: u64) -> u64 {
        0
    }
    #[inline(always)]
    fn order(a: u64, b: u64) -> Ordering {
        a.cmp(&b)
    }
    #[inline(always)]
    fn heap_bytes(_: &u64) -> usize {
        0
    }
}

/// The prefix of a byte string: its first eight bytes, big-endian, zero-padded.
#[inline(always)]
fn bytes_prefix(bytes: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = bytes.len().min(8);
    p[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(p)
}

/// A borrowed byte-string key and its first two words.
#[derive(Clone, Copy, Debug)]
pub struct BytesRef<'a> {
    prefix: u64,
    second: u64,
    bytes: &'a [u8],
}

impl<'a> BytesRef<'a> {
    #[inline(always)]
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        BytesRef {
            prefix: bytes_prefix(bytes),
            second: bytes_prefix(bytes.get(8..).unwrap_or_default()),
            bytes,
        }
    }
}

/// A byte-string key as a node keeps it: the first two words beside the bytes.
#[derive(Debug, Default)]
pub struct StoredBytes {
    prefix: u64,
    second: u64,
    bytes: Box<[u8]>,
}

impl sealed::Key for Vec<u8> {
    type Ref<'a> = BytesRef<'a>;
    type Stored = StoredBytes;
    const EXACT: bool = false;

    #[inline(always)]
    fn key_ref(&self) -> BytesRef<'_> {
        BytesRef::new(self)
    }
    #[inline(always)]
    fn stored_ref(s: &StoredBytes) -> BytesRef<'_> {
        BytesRef {
            prefix: s.prefix,
            second: s.second,
            bytes: &s.bytes,
        }
    }
    fn store(r: BytesRef<'_>) -> StoredBytes {
        StoredBytes {
            prefix: r.prefix,
            second: r.second,
            bytes: r.bytes.into(),
        }
    }
    fn owned(r: BytesRef<'_>) -> Vec<u8> {
        r.bytes.to_vec()
    }
    #[inline(always)]
    fn min_ref<'a>() -> Self::Ref<'a> {
        BytesRef {
            prefix: 0,
            second: 0,
            bytes: &[],
        }
    }
    #[inline(always)]
    fn prefix(r: BytesRef<'_>) -> u64 {
        r.prefix
    }
    #[inline(always)]
    fn second(r: BytesRef<'_>) -> u64 {
        r.second
    }
    #[inline(always)]
    fn order(a: BytesRef<'_>, b: BytesRef<'_>) -> Ordering {
        (a.prefix, a.second)
            .cmp(&(b.prefix, b.second))
            .then_with(|| {
                // Equal words of keys of sixteen bytes or more: their first sixteen bytes agree.
                if a.bytes.len() >= 16 && b.bytes.len() >= 16 {
                    a.bytes[16..].cmp(&b.bytes[16..])
                } else {
                    a.bytes.cmp(b.bytes)
                }
            })
    }
    fn heap_bytes(s: &StoredBytes) -> usize {
        s.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::sealed::Key;
    use super::*;

    #[test]
    fn byte_order_is_prefix_then_bytes() {
        let keys: [&[u8]; 16] = [
            b"abcdefgh\0\0\0\0\0\0\0\0",
            b"abcdefgh\0\0\0\0\0\0\0\0\0",
            b"abcdefghijklmnop",
            b"abcdefghijklmnopq",
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0",
            b"a\0\0\0\0\0\0\0\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in keys {
            for b in keys {
                let (ra, rb) = (BytesRef::new(a), BytesRef::new(b));
                assert_eq!(<Vec<u8>>::order(ra, rb), a.cmp(b), "{a:?} {b:?}");
                if a < b {
                    let (p, q) = (BytesRef::new(a), BytesRef::new(b));
                    assert!((p.prefix, p.second) <= (q.prefix, q.second), "{a:?} {b:?}");
                }
            }
        }
        let s = <Vec<u8>>::store(BytesRef::new(b"abcdefghi"));
        assert_eq!(<Vec<u8>>::owned(<Vec<u8>>::stored_ref(&s)), b"abcdefghi");
        assert_eq!(<Vec<u8>>::heap_bytes(&s), 9);
    }
}
