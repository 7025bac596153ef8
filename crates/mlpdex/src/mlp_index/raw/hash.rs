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
pub(crate) fn fmix(mut z: u64) -> u64 {
    z ^= z >> 33;
    z = z.wrapping_mul(0xff51_afd7_ed55_8ccd);
    z ^= z >> 33;
    z = z.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

/// `⌊a·b / 2⁶⁴⌋`.
#[inline(always)]
pub(crate) fn mulhi(a: u64, b: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) >> 64) as u64
}

/// A table's geometry: `s` buckets, any count from [`MIN_BUCKETS`] up (tables grow by about
/// 1.5×, not 2×, so their load stays high).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geo {
    s: u64,
    /// `⌊(2⁶⁴−1)/s⌋`, for division by `s` with a multiplication (Barrett).
    inv: u64,
}

/// Smallest table: 64 buckets (4 KiB). Leaves rely on at least 64 buckets to fit their 58
/// stored bits (a quotient of a `k`-bit hash has at most `k − 6` bits).
pub(crate) const MIN_BUCKETS: usize = 64;

impl Geo {
    pub(crate) fn new(buckets: usize) -> Geo {
        let s = buckets.max(MIN_BUCKETS) as u64;
        Geo {
            s,
            inv: u64::MAX / s,
        }
    }

    #[inline(always)]
    pub(crate) fn buckets(self) -> usize {
        self.s as usize
    }

    /// `(h / s, h mod s)`.
    #[inline(always)]
    fn divmod(self, h: u64) -> (u64, u64) {
        let mut q = mulhi(h, self.inv);
        let mut r = h - q * self.s;
        // The estimate is short by at most two.
        if r >= self.s {
            r -= self.s;
            q += 1;
        }
        if r >= self.s {
            r -= self.s;
            q += 1;
        }
        debug_assert!(r < self.s);
        (q, r)
    }

    /// Primary bucket and quotient of hash `h` of a `len`-byte index.
    ///
    /// When there are at least as many hash values as buckets, the bucket is `h mod s` and `q`
    /// is `h / s`. Fewer values (3-byte indexes in tables of more than 2²⁴ buckets) are spread
    /// over the table by a factor `f = ⌊s / 2^k⌋` plus a per-length constant below `f`, and
    /// `q` is 0.
    #[inline(always)]
    pub(crate) fn place(self, h: u64, len: u32) -> (usize, u64) {
        let k = 8 * len;
        if k >= 64 || (1u64 << k) >= self.s {
            let (q, r) = self.divmod(h);
            (r as usize, q)
        } else {
            let f = self.s >> k;
            ((h * f + SALT[len as usize] % f) as usize, 0)
        }
    }

    /// The hash [`place`](Self::place) split into `b1` and `q`.
    #[inline]
    pub(crate) fn unplace(self, b1: usize, q: u64, len: u32) -> u64 {
        let k = 8 * len;
        if k >= 64 || (1u64 << k) >= self.s {
            q * self.s + b1 as u64
        } else {
            b1 as u64 / (self.s >> k)
        }
    }

    /// Distance from an item's primary bucket to its secondary one, in `1..s`.
    #[inline(always)]
    fn offset(self, q: u64, len: u32) -> u64 {
        1 + mulhi(fmix(q ^ (u64::from(len) << 58)), self.s - 1)
    }

    /// The secondary bucket of an item with primary bucket `b1`.
    #[inline(always)]
    pub(crate) fn secondary(self, b1: usize, q: u64, len: u32) -> usize {
        let b = b1 as u64 + self.offset(q, len);
        (if b >= self.s { b - self.s } else { b }) as usize
    }

    /// The primary bucket of an item in its secondary bucket `b2`.
    #[inline(always)]
    pub(crate) fn primary(self, b2: usize, q: u64, len: u32) -> usize {
        let o = self.offset(q, len);
        let b = b2 as u64;
        (if b >= o { b - o } else { b + self.s - o }) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_a_bijection_that_unmix_undoes() {
        // Smaller under miri (this module has no unsafe code; the run checks the arithmetic).
        let (per_len, block) = if cfg!(miri) {
            (100, 2_000)
        } else {
            (10_000, 200_000)
        };
        let mut x = 0x0123_4567_89ab_cdefu64;
        for len in MIN_LEN..=8 {
            for _ in 0..per_len {
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
        for p in 0..block {
            assert!(seen.insert(mix(p, 3)));
        }
    }

    #[test]
    fn place_and_unplace_agree_at_every_size() {
        for s in [
            64,
            65,
            100,
            1000,
            4096,
            12345,
            1 << 20,
            (1 << 24) + 3,
            3 << 24,
            1 << 30,
        ] {
            let g = Geo::new(s);
            for len in MIN_LEN..=8 {
                for p in [0u64, 1, 77, 0xFF_FFFF, 0x1234_5678, !0] {
                    let p = p & mask(8 * len);
                    let h = mix(p, len);
                    let (b1, q) = g.place(h, len);
                    assert!(b1 < g.buckets());
                    assert!(q < 1 << (8 * len - 6), "q fits the leaf's stored bits");
                    assert_eq!(g.unplace(b1, q, len), h);
                    let b2 = g.secondary(b1, q, len);
                    assert_ne!(b1, b2);
                    assert!(b2 < g.buckets());
                    assert_eq!(g.primary(b2, q, len), b1);
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
