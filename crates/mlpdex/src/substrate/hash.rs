//! Fast hashing for table indexes and fingerprints: XXH3 (xxhash-rust), the hash family
//! mlp-data-structures.txt §4.3 chose for being fast, high quality and vectorisable.
//!
//! [`hash_bytes`] hashes a byte string; [`hash_u64`] is a cheaper mixer for one integer (a full
//! avalanche of all 64 bits, as cuckoo hashing needs near-independent bucket choices). Both take a
//! seed so that one structure can draw independent hash functions (e.g. the two cuckoo choices).

/// XXH3-64 of `bytes` under `seed`.
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed)
}

/// A full-avalanche 64-bit mix of `x` under `seed` (the murmur3/splitmix finaliser).
#[inline]
pub fn hash_u64(x: u64, seed: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_give_different_functions() {
        assert_ne!(hash_bytes(b"key", 1), hash_bytes(b"key", 2));
        assert_eq!(hash_bytes(b"key", 1), hash_bytes(b"key", 1));
        assert_ne!(hash_u64(5, 1), hash_u64(5, 2));
        assert_ne!(hash_u64(0, 0), 0);
    }

    #[test]
    fn mixer_avalanches() {
        // Flipping any one input bit flips about half the output bits on average.
        let mut total = 0u32;
        for bit in 0..64 {
            for x in [0u64, 1, 0xdead_beef, u64::MAX] {
                total += (hash_u64(x, 3) ^ hash_u64(x ^ (1 << bit), 3)).count_ones();
            }
        }
        let mean = f64::from(total) / (64.0 * 4.0);
        assert!((28.0..36.0).contains(&mean), "mean flipped bits {mean}");
    }
}
