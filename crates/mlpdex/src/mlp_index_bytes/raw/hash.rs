//! Hashes of a key's prefixes, of any length, from one pass over the key's 8-byte words.
//!
//! A lookup probes the prefix table at several prefix lengths of one key. The hash of
//! `key[..m]` is a running state over the first `m / 8` whole words, finished with the
//! `m % 8` bytes that follow and with `m` itself; the states are computed once per key and
//! only as far as the longest length probed, so a probe costs one finishing step.
//!
//! Both steps are one 64 × 64 → 128-bit multiply folded to 64 bits (the high half xored
//! into the low): the high half carries every input bit into the top bits (the tag) and the
//! low half's low bits (the slot) mix with it. The data enters xored with the state, which
//! derives from the map's random seed, and the other factor is a constant or the length
//! xored into a constant with its top bit set: no key can make a factor zero (which would
//! make the product forget everything before it) without knowing the seed.
//! A search hashes up to 16 lengths per round, so this step is most of its arithmetic; the
//! full finaliser of [`hash_u64`](crate::substrate::hash::hash_u64) (three multiplies) cost a
//! sixth of a lookup's instructions.

/// Word states kept inline; prefixes longer than `8 * (INLINE - 1)` bytes continue on the heap.
const INLINE: usize = 64;

/// Odd constants with about half their bits set and the top bit set (`wyhash`'s secrets).
const K_WORD: u64 = 0xa076_1d64_78bd_642f;
const K_STATE: u64 = 0xe703_7ed1_a0b4_28db;
const K_LEN: u64 = 0x8ebc_6af0_9c88_c6e3;
const K_SEED: u64 = 0x5899_65cc_7537_4cc3;

/// The product of `a` and `b` as 128 bits, halves xored.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// `n` (at most 8) bytes of `key` from `at`, little-endian, zero above them.
#[inline(always)]
fn word(key: &[u8], at: usize, n: usize) -> u64 {
    debug_assert!(n <= 8 && at + n <= key.len());
    // `n == 8` keeps every bit; shifting a u64 by 64 would overflow.
    let mask = u64::MAX.checked_shl(8 * n as u32).map_or(u64::MAX, |x| !x);
    if let Some(w) = key.get(at..at + 8) {
        u64::from_le_bytes(w.try_into().expect("8 bytes")) & mask
    } else if let Some(last) = key.len().checked_sub(8) {
        // The key's last 8 bytes end before `at + 8`: shift the wanted bytes down (all of
        // them out when `at` is the key's end and `n` is 0).
        let w = u64::from_le_bytes(key[last..].try_into().expect("8 bytes"));
        w.checked_shr(8 * (at - last) as u32).unwrap_or(0) & mask
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
        states[0] = fold_mul(seed ^ K_SEED, K_STATE);
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
            let next = fold_mul(word(self.key, self.have * 8, 8) ^ s, K_WORD);
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
        // Lengths stay below 2^63, so the second factor keeps `K_LEN`'s top bit.
        fold_mul(tail ^ s, m as u64 ^ K_LEN)
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

    #[test]
    fn slots_and_tags_of_similar_keys_spread() {
        // Keys that differ in one digit run, as URLs and counters do: the low bits pick the
        // slot and the top byte is the tag; both must look uniform.
        let mut slots = vec![0u32; 1 << 12];
        let mask = slots.len() - 1;
        let mut tags = [0u32; 256];
        let n = 1u32 << 16;
        for i in 0..n {
            let key = format!("com.example.www/item/{i:08}?ref=home");
            let h = prefix_hash(key.as_bytes(), key.len(), 7);
            slots[h as usize & mask] += 1;
            tags[(h >> 56) as usize] += 1;
        }
        // 16 keys per slot and 256 per tag on average.
        assert!(
            slots.iter().all(|&c| c < 48),
            "max {:?}",
            slots.iter().max()
        );
        let chi2: f64 = tags
            .iter()
            .map(|&c| (f64::from(c) - 256.0).powi(2) / 256.0)
            .sum();
        assert!(
            chi2 < 400.0,
            "tag chi-square {chi2} over 255 degrees of freedom"
        );
    }

    #[test]
    fn no_word_resets_the_state() {
        // A factor that a key could make zero would make every prefix through that word hash
        // alike, whatever came before it.
        for k in [K_WORD, K_STATE, K_LEN, K_SEED, 0, u64::MAX] {
            let a = [&[1u8; 8][..], &k.to_le_bytes(), b"tail"].concat();
            let b = [&[2u8; 8][..], &k.to_le_bytes(), b"tail"].concat();
            for m in 9..=a.len() {
                assert_ne!(prefix_hash(&a, m, 5), prefix_hash(&b, m, 5), "length {m}");
            }
        }
    }
}
