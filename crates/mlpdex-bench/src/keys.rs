//! A compact, flat store of many byte-string keys.
//!
//! Ten million keys as `Vec<Vec<u8>>` would cost a heap block and 24 bytes of header each and
//! scatter the keys over the heap; here they sit back to back in one buffer with an offset table
//! (or none at all when every key has the same width), so a workload reading keys in order
//! streams through memory and the hardware prefetcher hides it.

/// Keys stored back to back. Key `i` is `bytes[starts[i]..starts[i + 1]]`, or
/// `bytes[i * w..(i + 1) * w]` when every key has width `w`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keys {
    bytes: Vec<u8>,
    /// `len + 1` offsets for variable-width keys; empty while every key has the width `width`.
    starts: Vec<u64>,
    /// Width of every key while the store is uniform; `None` once widths differ (or while empty).
    width: Option<usize>,
    len: usize,
}

impl Keys {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with room for `keys` keys of `bytes` bytes in total.
    /// An empty store with room for `bytes` bytes of keys (offsets are only materialised once
    /// widths differ, so there is nothing to reserve for them).
    pub fn with_capacity(bytes: usize) -> Self {
        Keys {
            bytes: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }

    /// Appends a key.
    pub fn push(&mut self, key: &[u8]) {
        match self.width {
            Some(w) if w == key.len() => {}
            None if self.len == 0 => self.width = Some(key.len()),
            Some(w) => {
                // Widths now differ: materialise the offset table once.
                self.starts = (0..=self.len as u64).map(|i| i * w as u64).collect();
                self.width = None;
                self.starts.push((self.bytes.len() + key.len()) as u64);
            }
            None => self.starts.push((self.bytes.len() + key.len()) as u64),
        }
        self.bytes.extend_from_slice(key);
        self.len += 1;
        debug_assert!(self.width.is_some() || self.starts.len() == self.len + 1);
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is stored.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Key `i`. Panics when `i >= len` (a harness bug, not an input error).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        match self.width {
            Some(w) => &self.bytes[i * w..(i + 1) * w],
            None => &self.bytes[self.starts[i] as usize..self.starts[i + 1] as usize],
        }
    }

    /// The common width of all keys, if they share one.
    #[inline]
    pub fn fixed_width(&self) -> Option<usize> {
        self.width
    }

    /// Sum of all key lengths in bytes.
    pub fn total_key_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Mean key length in bytes (0 when empty).
    pub fn mean_len(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.bytes.len() as f64 / self.len as f64
        }
    }

    /// Iterates over the keys in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len).map(move |i| self.get(i))
    }

    /// A new store holding the keys `indexes` point to, in that order.
    pub fn gather(&self, indexes: impl IntoIterator<Item = usize>) -> Keys {
        let mut out = Keys::new();
        for i in indexes {
            out.push(self.get(i));
        }
        out
    }

    /// Bytes of heap memory this store owns.
    pub fn memory_usage(&self) -> usize {
        self.bytes.capacity() + self.starts.capacity() * 8
    }
}

impl<'a> FromIterator<&'a [u8]> for Keys {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> Self {
        let mut k = Keys::new();
        for key in iter {
            k.push(key);
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_then_variable_width() {
        let mut k = Keys::new();
        k.push(b"abcd");
        k.push(b"efgh");
        assert_eq!(k.fixed_width(), Some(4));
        k.push(b"");
        k.push(b"xyz");
        assert_eq!(k.fixed_width(), None);
        let all: Vec<&[u8]> = k.iter().collect();
        assert_eq!(all, vec![&b"abcd"[..], b"efgh", b"", b"xyz"]);
        assert_eq!(k.total_key_bytes(), 11);
        assert_eq!(k.len(), 4);
    }

    #[test]
    fn gather_reorders() {
        let k: Keys = [&b"a"[..], b"bb", b"ccc"].into_iter().collect();
        let g = k.gather([2, 0, 2]);
        assert_eq!(
            g.iter().collect::<Vec<_>>(),
            vec![&b"ccc"[..], b"a", b"ccc"]
        );
    }
}
