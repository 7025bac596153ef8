//! The peelable hash of node names (§4.2; see the module docs of `table`) and the two buckets
//! of each hash.

use super::{Ent, MAX_HASHES, TAGS};

/// The peelable hash of node names for one table size; see the module docs.
#[derive(Clone, Debug)]
pub(crate) struct Hasher {
    /// `N = 16·S`, the number of hash values.
    n: u64,
    /// `S`, the number of buckets.
    s: u64,
    /// Multiplier, a unit modulo `n`.
    a: u64,
    /// `⌊(2⁶⁴−1)/n⌋` for Barrett reduction.
    inv: u64,
    /// `n − 1` when `n` is a power of two (every table grown by doubling), else 0. Reduction
    /// is then one AND, which shortens the chain of dependent steps that hashes a key's
    /// prefixes: about 5 cycles per symbol instead of 15.
    mask: u64,
    /// Per-symbol offsets, in `[0, n)`.
    g: [u64; 64],
    /// `g[c]·a mod n`: `h(x·c) = (h(x)·a + ga[c]) mod n`, so the children of one node cost one
    /// multiplication for the node and one addition each ([`mul_a`](Self::mul_a),
    /// [`child`](Self::child)).
    ga: [u64; 64],
    /// Secondary-bucket offsets per tag, in `[1, s)` (0 when `s == 1`).
    alt: [u64; TAGS as usize],
    /// Seed of [`key_hash`](Self::key_hash).
    key_seed: u64,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Hasher {
    pub(crate) fn new(buckets: usize, seed: u64) -> Hasher {
        let s = buckets as u64;
        let n = s * TAGS;
        debug_assert!(n <= MAX_HASHES);
        let mut st = seed ^ n.rotate_left(17);
        let a = loop {
            let a = splitmix(&mut st) % n;
            if a > 1 && gcd(a, n) == 1 {
                break a;
            }
            if n <= 2 {
                break 1;
            }
        };
        let mut g = [0; 64];
        for x in &mut g {
            *x = splitmix(&mut st) % n;
        }
        let mut alt = [0; TAGS as usize];
        for x in &mut alt {
            *x = if s > 1 {
                1 + splitmix(&mut st) % (s - 1)
            } else {
                0
            };
        }
        let key_seed = splitmix(&mut st);
        let mut h = Hasher {
            key_seed,
            n,
            s,
            a,
            inv: u64::MAX / n,
            mask: if n.is_power_of_two() { n - 1 } else { 0 },
            g,
            ga: [0; 64],
            alt,
        };
        for c in 0..64 {
            h.ga[c] = h.reduce(h.g[c] * a);
        }
        h
    }

    /// `x mod n` for any `x` (Barrett reduction: the estimated quotient is short by at most 2).
    #[inline(always)]
    fn reduce(&self, x: u64) -> u64 {
        if self.mask != 0 {
            return x & self.mask;
        }
        let q = ((u128::from(x) * u128::from(self.inv)) >> 64) as u64;
        let mut r = x - q * self.n;
        // Two conditional subtractions rather than a loop: they compile to conditional moves.
        if r >= self.n {
            r -= self.n;
        }
        if r >= self.n {
            r -= self.n;
        }
        debug_assert!(r < self.n);
        r
    }

    /// `h(x·c)` from `h = h(x)`.
    #[inline(always)]
    pub(crate) fn step(&self, h: u64, c: u32) -> u64 {
        debug_assert!(h < self.n);
        if self.mask != 0 {
            // Reducing once at the end is the same modulo a power of two (wrapping modulo 2⁶⁴
            // keeps the low bits exact).
            return (h + self.g[c as usize]).wrapping_mul(self.a) & self.mask;
        }
        let mut x = h + self.g[c as usize];
        if x >= self.n {
            x -= self.n;
        }
        // x < n ≤ 2³², a < n: the product fits in 64 bits.
        self.reduce(x * self.a)
    }

    /// `h·a mod n`: the part of every child's hash shared by the children of the node `h`.
    #[inline(always)]
    pub(crate) fn mul_a(&self, h: u64) -> u64 {
        debug_assert!(h < self.n);
        self.reduce(h * self.a)
    }

    /// `h(x·c)` from `ha = mul_a(h(x))`: equal to `step(h(x), c)`.
    #[inline(always)]
    pub(crate) fn child(&self, ha: u64, c: u32) -> u64 {
        let x = ha + self.ga[c as usize];
        if self.mask != 0 {
            return x & self.mask;
        }
        if x >= self.n { x - self.n } else { x }
    }

    /// The full hash of a key entry: the whole key hashed at once (8 bytes a step, so a long
    /// key costs a few dozen instructions where the peelable hash of its symbols costs a
    /// dependent multiplication per symbol), reduced to `[0, n)`.
    #[inline]
    pub(crate) fn key_hash(&self, key: &[u8]) -> u64 {
        const M: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h = self.key_seed ^ (key.len() as u64).wrapping_mul(M);
        let mut words = key.chunks_exact(8);
        for w in &mut words {
            h = (h ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(M);
            h ^= h >> 29;
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            h = (h ^ u64::from_le_bytes(last)).wrapping_mul(M);
        }
        let mut st = h;
        self.reduce(splitmix(&mut st))
    }

    /// Primary and secondary bucket of hash `h`.
    #[inline(always)]
    pub(crate) fn buckets(&self, h: u64) -> (usize, usize) {
        let b1 = h / TAGS;
        let mut b2 = b1 + self.alt[(h % TAGS) as usize];
        if b2 >= self.s {
            b2 -= self.s;
        }
        (b1 as usize, b2 as usize)
    }

    /// The bucket an entry with `tag` and side `sec` in `bucket` would move to.
    #[inline]
    pub(super) fn other_bucket(&self, bucket: usize, tag: u64, sec: bool) -> usize {
        let off = self.alt[tag as usize];
        let b = bucket as u64;
        (if sec {
            (b + self.s - off) % self.s
        } else {
            (b + off) % self.s
        }) as usize
    }

    /// The full hash of the entry `e` found in `bucket`.
    pub(crate) fn hash_of(&self, bucket: usize, e: Ent) -> u64 {
        let primary = if e.sec() {
            self.other_bucket(bucket, e.tag(), true)
        } else {
            bucket
        };
        primary as u64 * TAGS + e.tag()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_of_mul_a_is_step_and_step_is_peelable() {
        // Fewer hashes per table size under miri, which interprets every multiplication.
        let per_size = if cfg!(miri) { 40 } else { 2000 };
        for buckets in [1usize, 2, 3, 64, 1000, 65_537, (1 << 27) + 5] {
            let hs = Hasher::new(buckets, 42);
            let mut x = 0x9E37_79B9_7F4A_7C15_u64;
            for _ in 0..per_size {
                x = x.rotate_left(17).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ 0x94D0_49BB;
                let h = x % hs.n;
                let c = (x >> 40) as u32 % 33;
                let stepped = hs.step(h, c);
                assert!(stepped < hs.n);
                assert_eq!(hs.child(hs.mul_a(h), c), stepped, "S={buckets} h={h} c={c}");
                // Peelable: another parent hash gives another child hash for the same symbol.
                let other = (h + 1) % hs.n;
                if other != h {
                    assert_ne!(hs.step(other, c), stepped, "S={buckets} h={h} c={c}");
                }
            }
        }
    }
}
