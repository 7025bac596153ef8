//! Hashes of a key's prefixes, of any length, from one pass over the key's 8-byte words.
//!
//! A lookup probes the prefix table at several prefix lengths of one key. The hash of
//! `key[..m]` is a running state over the first `m / 8` whole words (each word mixed in with
//! the substrate's [`hash_u64`], seeded by the state so far), finished with the `m % 8` bytes
//! that follow and with `m` itself; the states are computed once per key and only as far as the
//! longest length probed, so a probe costs one mix.

/// Word states kept inline; prefixes longer than `8 * (INLINE - 1)` bytes continue on the heap.
const INLINE: usize = 64;

use crate::substrate::hash::hash_u64;

/// `n` (at most 8) bytes of `key` from `at`, little-endian, zero above them.
#[inline(always)]
fn word(key: &[u8], at: usize, n: usize) -> u64 {
    debug_assert!(n <= 8 && at + n <= key.len());
    if let Some(w) = key.get(at..at + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        match n {
            8 => w,
            _ => w & ((1u64 << (8 * n)) - 1),
        }
    } else {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&key[at..at + n]);
        u64::from_le_bytes(b)
    }
}

/// The prefix hashes of one key under one seed.
pub(crate) struct PrefixHasher<'k> {
    key: &'k [u8],
    /// `states[w]`: the state after `w` whole words.
    states: [u64; INLINE],
    /// States past `INLINE - 1` words (keys longer than 504 bytes).
    more: Vec<u64>,
    /// States computed so far: `states[..=have]`.
    have: usize,
}

impl<'k> PrefixHasher<'k> {
    #[inline]
    pub(crate) fn new(key: &'k [u8], seed: u64) -> Self {
        let mut states = [0u64; INLINE];
        states[0] = seed;
        PrefixHasher {
            key,
            states,
            more: Vec::new(),
            have: 0,
        }
    }

    #[inline(always)]
    fn state(&mut self, w: usize) -> u64 {
        while self.have < w {
            let s = self.state_at(self.have);
            let next = hash_u64(word(self.key, self.have * 8, 8), s);
            self.have += 1;
            if self.have < INLINE {
                self.states[self.have] = next;
            } else {
                self.more.push(next);
            }
        }
        self.state_at(w)
    }

    #[inline(always)]
    fn state_at(&self, w: usize) -> u64 {
        if w < INLINE {
            self.states[w]
        } else {
            self.more[w - INLINE]
        }
    }

    /// The hash of `key[..m]`. `m` must be at most the key's length.
    #[inline(always)]
    pub(crate) fn hash(&mut self, m: usize) -> u64 {
        debug_assert!(m <= self.key.len());
        let w = m / 8;
        let s = self.state(w);
        let tail = word(self.key, w * 8, m - w * 8);
        hash_u64(tail, s ^ (m as u64).rotate_left(32))
    }
}

/// The hash of `key[..m]` without keeping states (one-off probes: writes, audits).
pub(crate) fn prefix_hash(key: &[u8], m: usize, seed: u64) -> u64 {
    PrefixHasher::new(&key[..m], seed).hash(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_matches_a_fresh_hasher() {
        let key: Vec<u8> = (0..1200u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut h = PrefixHasher::new(&key, 99);
        // Out of order, as a search probes.
        for m in [600usize, 3, 1200, 0, 8, 9, 504, 505, 511, 512, 7] {
            assert_eq!(h.hash(m), prefix_hash(&key, m, 99), "length {m}");
        }
    }

    #[test]
    fn lengths_and_seeds_are_distinguished() {
        let key = [0u8; 16];
        let hs: Vec<u64> = (0..=16).map(|m| prefix_hash(&key, m, 1)).collect();
        for i in 0..hs.len() {
            for j in 0..i {
                assert_ne!(hs[i], hs[j], "zero prefixes of lengths {i} and {j}");
            }
        }
        assert_ne!(prefix_hash(b"abc", 3, 1), prefix_hash(b"abc", 3, 2));
    }
}
