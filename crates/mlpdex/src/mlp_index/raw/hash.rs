//! Hashing of node names: an invertible mix of a key prefix, split into a bucket and a
//! quotient so that leaves need not store what their bucket already says (key elimination).
//!
//! A node is named by its *index*: the first `len` bytes of every key below it (3 ≤ `len` ≤ 8;
//! shorter prefixes live in the flat top bitmap). [`mix`] maps the `8·len`-bit prefix to an
//! `8·len`-bit hash by a bijection, so the hash determines the prefix. [`Geo::place`] splits a
//! hash into the primary bucket and the quotient `q` (the hash bits the bucket index does not
//! hold); the secondary bucket is the primary XOR an odd offset drawn from `q`, so either
//! bucket and `q` give back the other. A leaf stores `q` and the key bytes after its index;
//! with its bucket that is the whole key.

/// Shortest index of a hashed node (prefixes of 1–3 bytes are the top bitmap's).
pub(crate) const MIN_LEN: u32 = 3;

const M1: u64 = 0x9E37_79B9_7F4A_7C15;
const M2: u64 = 0xBF58_476D_1CE4_E5B9;

/// The inverse of odd `m` modulo 2⁶⁴ (Newton's iteration doubles the correct bits each step).
const fn inverse(m: u64) -> u64 {
    let mut x = m;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
        i += 1;
    }
    x
}

const M1_INV: u64 = inverse(M1);
const M2_INV: u64 = inverse(M2);
const _: () = assert!(M1.wrapping_mul(M1_INV) == 1 && M2.wrapping_mul(M2_INV) == 1);

/// Per-length salts, so that prefixes of different lengths hash apart.
const SALT: [u64; 9] = [
    0,
    0,
    0,
    0x5bd1_e995_1234_5678,
    0x2545_f491_4f6c_dd1d,
    0x9e6c_63d0_676a_9a99,
    0xd6e8_feb8_6659_fd93,
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
];

/// Low `k` bits set (`k` ≤ 64).
#[inline(always)]
pub(crate) fn mask(k: u32) -> u64 {
    if k >= 64 { !0 } else { (1u64 << k) - 1 }
}

/// The first `len` bytes of `x` as a number (1 ≤ `len` ≤ 8).
#[inline(always)]
pub(crate) fn prefix(x: u64, len: u32) -> u64 {
    debug_assert!((1..=8).contains(&len));
    x >> (64 - 8 * len)
}

/// Byte `i` of `x` (0 = most significant).
#[inline(always)]
pub(crate) fn byte(x: u64, i: u32) -> u32 {
    debug_assert!(i < 8);
    ((x >> (56 - 8 * i)) & 0xFF) as u32
}

/// Index of the first byte where `a` and `b` differ (8 when equal).
#[inline(always)]
pub(crate) fn diff_byte(a: u64, b: u64) -> u32 {
    (a ^ b).leading_zeros() / 8
}

/// A bijection on `8·len`-bit numbers: salt, multiply, xorshift, multiply, xorshift.
#[inline(always)]
pub(crate) fn mix(p: u64, len: u32) -> u64 {
    let k = 8 * len;
    let m = mask(k);
    let s = k / 2;
    debug_assert!(p <= m);
    let mut h = (p ^ SALT[len as usize]) & m;
    h = h.wrapping_mul(M1) & m;
    h ^= h >> s;
    h = h.wrapping_mul(M2) & m;
    h ^ (h >> s)
}

/// The inverse of [`mix`]. (`x ^= x >> s` is its own inverse when `2s ≥ k`; multiplication by
/// an odd number modulo 2⁶⁴ is undone by its inverse, and so modulo any `2^k`.)
#[inline]
pub(crate) fn unmix(h: u64, len: u32) -> u64 {
    let k = 8 * len;
    let m = mask(k);
    let s = k / 2;
    let mut x = h ^ (h >> s);
    x = x.wrapping_mul(M2_INV) & m;
    x ^= x >> s;
    x = x.wrapping_mul(M1_INV) & m;
    (x ^ SALT[len as usize]) & m
}

/// A 64-bit finalizer (murmur3's), for secondary-bucket offsets.
#[inline(always)]
fn fmix(mut z: u64) -> u64 {
    z ^= z >> 33;
    z = z.wrapping_mul(0xff51_afd7_ed55_8ccd);
    z ^= z >> 33;
    z = z.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

/// A table's geometry: `2^e` buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geo {
    /// log₂ of the bucket count, ≥ [`MIN_LOG_BUCKETS`].
    pub e: u32,
}

/// Smallest table: 64 buckets (4 KiB). Leaves rely on `e ≥ 6` to fit their 58 stored bits.
pub(crate) const MIN_LOG_BUCKETS: u32 = 6;

impl Geo {
    #[inline(always)]
    pub(crate) fn buckets(self) -> usize {
        1 << self.e
    }

    /// Primary bucket and quotient of hash `h` of a `len`-byte index.
    ///
    /// When the hash has at least `e` bits, the bucket is its low `e` bits and `q` the rest.
    /// Shorter hashes (3-byte indexes in tables of more than 2²⁴ buckets) are spread with a
    /// per-length constant in the low bits, and `q` is empty.
    #[inline(always)]
    pub(crate) fn place(self, h: u64, len: u32) -> (usize, u64) {
        let k = 8 * len;
        if k >= self.e {
            ((h & mask(self.e)) as usize, h >> self.e)
        } else {
            let spread = self.e - k;
            (
                ((h << spread) | (SALT[len as usize] & mask(spread))) as usize,
                0,
            )
        }
    }

    /// The hash [`place`](Self::place) split into `b1` and `q`.
    #[inline]
    pub(crate) fn unplace(self, b1: usize, q: u64, len: u32) -> u64 {
        let k = 8 * len;
        if k >= self.e {
            (q << self.e) | b1 as u64
        } else {
            (b1 as u64) >> (self.e - k)
        }
    }

    /// Offset between an item's two buckets: odd, so the buckets always differ.
    #[inline(always)]
    pub(crate) fn alt(self, q: u64, len: u32) -> usize {
        ((fmix(q ^ (u64::from(len) << 58)) & mask(self.e)) | 1) as usize
    }

    /// Bits of `q` for a `len`-byte index.
    #[cfg(test)]
    pub(crate) fn q_bits(self, len: u32) -> u32 {
        (8 * len).saturating_sub(self.e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_a_bijection_that_unmix_undoes() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for len in MIN_LEN..=8 {
            for _ in 0..10_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let p = x & mask(8 * len);
                let h = mix(p, len);
                assert!(h <= mask(8 * len));
                assert_eq!(unmix(h, len), p);
            }
        }
        // Exhaustive on a small width is not possible (k ≥ 24), so check injectivity on a
        // dense block of 3-byte prefixes.
        let mut seen = std::collections::HashSet::new();
        for p in 0..200_000u64 {
            assert!(seen.insert(mix(p, 3)));
        }
    }

    #[test]
    fn place_and_unplace_agree_at_every_size() {
        for e in MIN_LOG_BUCKETS..=30 {
            let g = Geo { e };
            for len in MIN_LEN..=8 {
                for p in [0u64, 1, 77, 0xFF_FFFF, 0x1234_5678] {
                    let p = p & mask(8 * len);
                    let h = mix(p, len);
                    let (b1, q) = g.place(h, len);
                    assert!(b1 < g.buckets());
                    assert!(q <= mask(g.q_bits(len)));
                    assert_eq!(g.unplace(b1, q, len), h);
                    let b2 = b1 ^ g.alt(q, len);
                    assert_ne!(b1, b2);
                    assert!(b2 < g.buckets());
                    assert_eq!(b2 ^ g.alt(q, len), b1);
                }
            }
        }
    }

    #[test]
    fn byte_helpers() {
        let x = 0x0102_0304_0506_0708u64;
        assert_eq!(prefix(x, 3), 0x010203);
        assert_eq!(prefix(x, 8), x);
        assert_eq!(byte(x, 0), 1);
        assert_eq!(byte(x, 7), 8);
        assert_eq!(diff_byte(x, x), 8);
        assert_eq!(diff_byte(x, x ^ 0x100), 6);
    }
}
