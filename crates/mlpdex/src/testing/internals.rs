//! Thin wrappers over the crate-internal primitives the structures spend their time in, for the
//! micro-benchmarks under `crates/mlpdex/benches` (and for tests that want to call them
//! directly). Each wrapper runs the very code the structures run, with the same run-time CPU
//! dispatch; none adds checks to the hot call beyond what the structure itself does.
//!
//! | wrapper | primitive | used by |
//! |---|---|---|
//! | [`RankSelect`] | rank directories (64- and 512-bit blocks) and sampled select | FST, SuRF |
//! | [`pad_labels`], [`label_find_eq`], [`label_find_ge`] | SSE2 search of a sorted label run | FST, SuRF (LOUDS-Sparse) |
//! | [`CuckooPrefixHash`] | the peelable hash of every prefix of a key's symbol string | Cuckoo Trie |
//! | [`MlpPrefixHash`] | the invertible hash of a `u64` key's 3..=8-byte prefixes and its buckets | MlpIndex |
//! | [`xxh3`] | XXH3-64 of a byte string | SuRF hashed suffixes, image checksums |
//!
//! HOPE needs no wrapper: its encoder is public ([`crate::hope::Encoder`]).
//!
//! Bad arguments to a constructor are an [`Error`], never a panic; the query methods answer
//! out-of-range arguments as the structures' own code does (`None`, or clamped).

use crate::Error;
use crate::substrate::bits::FrozenBits;
use crate::substrate::frozen::Frozen;
use crate::substrate::rank::{MAX_BITS, RankBits, SelectBits};

/// A bit vector with the three directories the succinct structures build over their bit
/// vectors: rank over 64-bit blocks (LOUDS-Dense), rank over 512-bit blocks (LOUDS-Sparse) and
/// sampled select (one sample per 64 ones). The three share one copy of the bits.
///
/// Popcounts use the POPCNT instruction when the CPU has it (detected once per process), as in
/// the structures.
#[derive(Clone, Debug)]
pub struct RankSelect {
    rank64: RankBits<1>,
    rank512: RankBits<8>,
    select: SelectBits,
}

impl RankSelect {
    /// The directories over the first `len` bits of `words` (bit `i` is bit `i % 64` of word
    /// `i / 64`, least significant first).
    ///
    /// [`Error::InvalidConfig`] unless `words` holds exactly `len.div_ceil(64)` words with
    /// the bits past `len` zero; [`Error::Capacity`] when `len` is 2³² bits or more (the
    /// directories hold positions as `u32`).
    pub fn from_words(words: Vec<u64>, len: usize) -> Result<RankSelect, Error> {
        if len > MAX_BITS {
            return Err(Error::Capacity {
                what: "a rank/select directory indexes fewer than 2^32 bits",
            });
        }
        let bits = FrozenBits::new(Frozen::from(words), len).ok_or(Error::InvalidConfig {
            what: "RankSelect::from_words needs exactly len.div_ceil(64) words, with the bits \
                   past len zero",
        })?;
        let too_long = || Error::Capacity {
            what: "a rank/select directory indexes fewer than 2^32 bits",
        };
        Ok(RankSelect {
            rank64: RankBits::over(bits.clone()).ok_or_else(too_long)?,
            rank512: RankBits::over(bits.clone()).ok_or_else(too_long)?,
            select: SelectBits::over(bits).ok_or_else(too_long)?,
        })
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        self.select.len()
    }

    /// True when there are no bits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.select.is_empty()
    }

    /// Number of ones.
    #[inline]
    pub fn count_ones(&self) -> usize {
        self.select.count_ones()
    }

    /// Ones in positions `0..i` through the 64-bit-block directory (one directory read and
    /// one popcount); `i` past the end counts the whole vector.
    #[inline]
    pub fn rank1_64(&self, i: usize) -> usize {
        self.rank64.rank1(i)
    }

    /// Ones in positions `0..i` through the 512-bit-block directory (one directory read and
    /// up to eight popcounts in one cache line); `i` past the end counts the whole vector.
    #[inline]
    pub fn rank1_512(&self, i: usize) -> usize {
        self.rank512.rank1(i)
    }

    /// Position of the one numbered `k` (0-based), or `None` when there are at most `k` ones.
    #[inline]
    pub fn select1(&self, k: usize) -> Option<usize> {
        self.select.select1(k)
    }
}

/// `labels` followed by the zero padding the SIMD label search needs to read whole 16-byte
/// groups (as the FST lays out its label array); pass the result to [`label_find_eq`] and
/// [`label_find_ge`] for the SIMD path.
pub fn pad_labels(labels: Vec<u8>) -> Vec<u8> {
    crate::substrate::labels::padded(labels)
}

/// Index (relative to `start`) of the first label equal to `b` in `arr[start..end]`, as the
/// FST's exact lookups search a LOUDS-Sparse node.
///
/// On x86-64 an array with at least 16 readable bytes past `end` (see [`pad_labels`]) is
/// searched 16 labels per SSE2 compare; a shorter one, and every array elsewhere, by the
/// scalar loop. `None` also when the run is not inside `arr`.
#[inline]
pub fn label_find_eq(arr: &[u8], start: usize, end: usize, b: u8) -> Option<usize> {
    crate::substrate::labels::find_eq(arr, start, end, b)
}

/// Index (relative to `start`) of the first label `≥ b` in the sorted run `arr[start..end]`,
/// as the FST's seeks search a LOUDS-Sparse node. Paths and range handling as for
/// [`label_find_eq`].
#[inline]
pub fn label_find_ge(arr: &[u8], start: usize, end: usize, b: u8) -> Option<usize> {
    crate::substrate::labels::find_ge(arr, start, end, b)
}

/// The Cuckoo Trie's node-name hash for one table size: a key is read as symbols of
/// `symbol_bits` bits followed by an end symbol, and the hash of every prefix of that string is
/// one dependent step from the previous one, computed in order as a search computes (and
/// prefetches) them.
#[derive(Clone, Debug)]
pub struct CuckooPrefixHash {
    hasher: crate::cuckoo_trie::Hasher,
    syms: crate::cuckoo_trie::Syms,
}

impl CuckooPrefixHash {
    /// The hash of a table of `buckets` buckets, its random parameters drawn from `seed`, with
    /// keys read as symbols of `symbol_bits` bits (the map's default is 5). A power-of-two
    /// `buckets` reduces with a mask (tables grown by doubling), any other count with a
    /// multiplication (Barrett).
    ///
    /// [`Error::InvalidConfig`] when `symbol_bits` is outside `1..=5`, or `buckets` is 0 or
    /// above 2²⁸ − 1 (hashes are 32-bit: 16 per bucket).
    pub fn new(buckets: usize, seed: u64, symbol_bits: u32) -> Result<CuckooPrefixHash, Error> {
        if !(1..=5).contains(&symbol_bits) {
            return Err(Error::InvalidConfig {
                what: "symbol_bits must be 1..=5",
            });
        }
        if buckets == 0 || buckets as u64 > u64::from(u32::MAX) / 16 {
            return Err(Error::InvalidConfig {
                what: "a Cuckoo Trie table has 1..=2^28-1 buckets (16 32-bit hashes per bucket)",
            });
        }
        Ok(CuckooPrefixHash {
            hasher: crate::cuckoo_trie::Hasher::new(buckets, seed),
            syms: crate::cuckoo_trie::Syms::new(symbol_bits),
        })
    }

    /// Number of symbols in the string of a `len`-byte key, the end symbol included: the
    /// number of prefix hashes [`for_each_prefix_hash`](Self::for_each_prefix_hash) computes.
    #[inline]
    pub fn symbols(&self, len: usize) -> usize {
        self.syms.count(len)
    }

    /// Calls `f` with the hash of every non-empty prefix of `key`'s symbol string, shortest
    /// first, and returns the last one (the hash of the whole string, `0` being the hash of
    /// the empty prefix).
    #[inline]
    pub fn for_each_prefix_hash(&self, key: &[u8], mut f: impl FnMut(u64)) -> u64 {
        let mut h = 0;
        for i in 0..self.syms.count(key.len()) {
            h = self.hasher.step(h, self.syms.at(key, i));
            f(h);
        }
        h
    }

    /// The primary and secondary bucket of hash `h`, the two a search prefetches per prefix.
    #[inline]
    pub fn buckets(&self, h: u64) -> (usize, usize) {
        self.hasher.buckets(h)
    }
}

/// The MlpIndex's node-name hash for one table size: a node is named by the first `len` bytes
/// (3..=8) of a `u64` key, hashed by a bijection and split into a primary bucket and a
/// quotient, from which the secondary bucket follows. A lookup probes every length at once.
#[derive(Clone, Copy, Debug)]
pub struct MlpPrefixHash {
    geo: crate::mlp_index::Geo,
}

impl MlpPrefixHash {
    /// Shortest hashed prefix, in bytes (shorter ones live in the index's flat top bitmap).
    pub const MIN_LEN: u32 = crate::mlp_index::MIN_LEN;

    /// The hash of a table of `buckets` buckets; counts below 64 are raised to 64, the
    /// index's smallest table.
    pub fn new(buckets: usize) -> MlpPrefixHash {
        MlpPrefixHash {
            geo: crate::mlp_index::Geo::new(buckets),
        }
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.geo.buckets()
    }

    /// The primary and secondary bucket of the node named by the first `len` bytes of `key`
    /// (its most significant bytes), as a lookup computes them; `None` unless `len` is
    /// in `3..=8`.
    #[inline]
    pub fn probe(&self, key: u64, len: u32) -> Option<(usize, usize)> {
        if !(Self::MIN_LEN..=8).contains(&len) {
            return None;
        }
        let h = crate::mlp_index::mix(crate::mlp_index::prefix(key, len), len);
        let (b1, q) = self.geo.place(h, len);
        Some((b1, self.geo.secondary(b1, q, len)))
    }
}

/// XXH3-64 of `bytes` under `seed`: the hash of the SuRF's hashed suffix bits and of the
/// serialized images' checksums.
#[inline]
pub fn xxh3(bytes: &[u8], seed: u64) -> u64 {
    crate::substrate::hash::hash_bytes(bytes, seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;

    fn random_bits(rng: &mut TestRng, len: usize, density: u64) -> (Vec<u64>, Vec<bool>) {
        let bools: Vec<bool> = (0..len).map(|_| rng.below(100) < density).collect();
        let mut words = vec![0u64; len.div_ceil(64)];
        for (i, &b) in bools.iter().enumerate() {
            words[i / 64] |= u64::from(b) << (i % 64);
        }
        (words, bools)
    }

    #[test]
    fn rank_select_match_a_naive_count() {
        let mut rng = TestRng::new(7);
        for (len, density) in [
            (0, 50),
            (1, 100),
            (63, 50),
            (64, 100),
            (1000, 3),
            (5000, 50),
        ] {
            let (words, bools) = random_bits(&mut rng, len, density);
            let rs = RankSelect::from_words(words, len).unwrap();
            assert_eq!(rs.len(), len);
            assert_eq!(rs.is_empty(), len == 0);
            let mut ones = 0;
            let mut positions = Vec::new();
            for (i, &b) in bools.iter().enumerate() {
                assert_eq!(rs.rank1_64(i), ones, "rank64({i}) of {len}");
                assert_eq!(rs.rank1_512(i), ones, "rank512({i}) of {len}");
                if b {
                    positions.push(i);
                    ones += 1;
                }
            }
            assert_eq!(rs.rank1_64(len + 100), ones);
            assert_eq!(rs.rank1_512(len + 100), ones);
            assert_eq!(rs.count_ones(), ones);
            for (k, &p) in positions.iter().enumerate() {
                assert_eq!(rs.select1(k), Some(p), "select1({k}) of {len}");
            }
            assert_eq!(rs.select1(ones), None);
        }
    }

    #[test]
    fn rank_select_refuses_mismatched_words() {
        // Too few words, too many, and a set bit past the length.
        for (words, len) in [(vec![], 1), (vec![0, 0], 64), (vec![1 << 10], 10)] {
            assert!(matches!(
                RankSelect::from_words(words, len),
                Err(Error::InvalidConfig { .. })
            ));
        }
        assert!(matches!(
            RankSelect::from_words(vec![], usize::MAX),
            Err(Error::Capacity { .. })
        ));
    }

    #[test]
    fn label_search_matches_a_scan_on_both_paths() {
        let mut rng = TestRng::new(3);
        for n in [0usize, 1, 15, 16, 17, 100, 256] {
            let mut labels: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            labels.sort_unstable();
            labels.dedup();
            let padded = pad_labels(labels.clone());
            assert!(padded.len() >= labels.len() + 16);
            let end = labels.len();
            for b in 0..=255u8 {
                let eq = labels.iter().position(|&l| l == b);
                let ge = labels.iter().position(|&l| l >= b);
                assert_eq!(label_find_eq(&padded, 0, end, b), eq);
                assert_eq!(label_find_eq(&labels, 0, end, b), eq);
                assert_eq!(label_find_ge(&padded, 0, end, b), ge);
                assert_eq!(label_find_ge(&labels, 0, end, b), ge);
            }
            assert_eq!(label_find_eq(&padded, 0, usize::MAX, 0), None);
        }
    }

    #[test]
    fn cuckoo_prefix_hashes_are_a_chain_and_bounded() {
        for (buckets, bits) in [(1usize << 10, 5), (1000, 5), (1 << 16, 1), (7, 3)] {
            let ch = CuckooPrefixHash::new(buckets, 42, bits).unwrap();
            for key in [&b""[..], b"a", b"ab", b"user@example.com", &[0xFF; 40]] {
                let mut seen = Vec::new();
                let last = ch.for_each_prefix_hash(key, |h| seen.push(h));
                assert_eq!(seen.len(), ch.symbols(key.len()));
                assert_eq!(seen.len(), (key.len() * 8).div_ceil(bits as usize) + 1);
                assert_eq!(seen.last().copied(), Some(last));
                for &h in &seen {
                    assert!(h < 16 * buckets as u64, "hash {h} of {buckets} buckets");
                    let (b1, b2) = ch.buckets(h);
                    assert!(b1 < buckets && b2 < buckets);
                }
                // The same key hashes the same; a one-byte-longer key shares the data prefixes.
                assert_eq!(ch.for_each_prefix_hash(key, |_| ()), last);
                let mut longer = key.to_vec();
                longer.push(0x41);
                let mut seen2 = Vec::new();
                ch.for_each_prefix_hash(&longer, |h| seen2.push(h));
                let shared = key.len() * 8 / bits as usize;
                assert_eq!(seen[..shared], seen2[..shared]);
            }
        }
    }

    #[test]
    fn cuckoo_prefix_hash_refuses_bad_parameters() {
        for (buckets, bits) in [(0, 5), (1 << 28, 5), (1024, 0), (1024, 6)] {
            assert!(matches!(
                CuckooPrefixHash::new(buckets, 1, bits),
                Err(Error::InvalidConfig { .. })
            ));
        }
        assert!(CuckooPrefixHash::new((1 << 28) - 1, 1, 5).is_ok());
    }

    #[test]
    fn mlp_probes_are_in_range_distinct_and_length_checked() {
        let mut rng = TestRng::new(11);
        for buckets in [0usize, 64, 1000, 1 << 20] {
            let m = MlpPrefixHash::new(buckets);
            assert_eq!(m.buckets(), buckets.max(64));
            for _ in 0..1000 {
                let key = rng.next_u64();
                for len in 3..=8 {
                    let (b1, b2) = m.probe(key, len).unwrap();
                    assert!(b1 < m.buckets() && b2 < m.buckets() && b1 != b2);
                    // Only the prefix counts: bytes past it do not move the buckets.
                    let tail = if len == 8 { 0 } else { u64::MAX >> (8 * len) };
                    assert_eq!(m.probe(key ^ tail, len), Some((b1, b2)));
                }
                for len in [0, 1, 2, 9, u32::MAX] {
                    assert_eq!(m.probe(key, len), None);
                }
            }
        }
    }

    #[test]
    fn xxh3_is_the_substrate_hash() {
        assert_eq!(
            xxh3(b"key", 5),
            xxhash_rust::xxh3::xxh3_64_with_seed(b"key", 5)
        );
        assert_ne!(xxh3(b"key", 5), xxh3(b"key", 6));
    }
}
