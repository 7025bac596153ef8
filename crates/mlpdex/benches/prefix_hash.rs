//! Prefix hashing, the first thing every lookup of a hashed trie does:
//!
//! - `cuckoo_trie`: the Cuckoo Trie's peelable hash of every prefix of a key's symbol string
//!   (5-bit symbols, the map's default), with both buckets of each prefix, as a search
//!   computes and prefetches them; keys of 8, 32 and 256 bytes (14, 53 and 411 prefixes). Each
//!   hash is one dependent step from the last, so this is a latency chain. `pow2` is a table of
//!   2^20 buckets (reduction by a mask, every table grown by doubling), `barrett` one of
//!   1,000,003 (reduction by multiplication, a table sized by `initial_buckets`).
//! - `mlp_index`: the MlpIndex's hash of the 3- to 8-byte prefixes of one random `u64` key and
//!   both buckets of each (a lookup probes all six levels at once), for a table of 2^20 buckets.
//! - `xxh3`: XXH3-64 of 8, 32 and 256 bytes, the SuRF's hashed-suffix and checksum hash.
//!
//! Each iteration hashes one key, drawn from 1,024 random keys of the length (cycled). The
//! throughput column is in key bytes per second.
//!
//! `cargo bench -p mlpdex --bench prefix_hash`

use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};
use mlpdex::testing::TestRng;
use mlpdex::testing::internals::{CuckooPrefixHash, MlpPrefixHash, xxh3};

fn main() {
    divan::main();
}

/// Iterations per sample (`--sample-size` overrides it): fixed rather than tuned by divan, whose
/// tuning from the first, cold sample sometimes picked one iteration per sample, so that the
/// timer's resolution (about 20 ns) swamped a hash of a few nanoseconds.
const SAMPLE_SIZE: u32 = 1024;

/// Key lengths in bytes.
const LENGTHS: [usize; 3] = [8, 32, 256];

/// Keys per length, cycled through (a power of two).
const KEYS: usize = 1024;

/// `KEYS` random keys of `len` bytes.
fn keys(len: usize) -> Vec<Vec<u8>> {
    let mut rng = TestRng::new(len as u64);
    (0..KEYS)
        .map(|_| (0..len).map(|_| rng.next_u64() as u8).collect())
        .collect()
}

/// Benchmarks `hash` over the keys of `len` bytes, one key per iteration.
fn per_key(bencher: Bencher, len: usize, hash: impl Fn(&[u8]) -> u64) {
    let keys = keys(len);
    let mut i = 0usize;
    bencher.counter(BytesCount::new(len)).bench_local(|| {
        i = (i + 1) & (KEYS - 1);
        hash(divan::black_box(&keys[i]))
    });
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod cuckoo_trie {
    use super::*;

    /// Every prefix hash of `key` and its buckets, folded so none is optimised away.
    fn prefixes(h: &CuckooPrefixHash, key: &[u8]) -> u64 {
        let mut acc = 0u64;
        h.for_each_prefix_hash(key, |p| {
            let (b1, b2) = h.buckets(p);
            acc = acc.wrapping_add((b1 ^ b2) as u64);
        }) ^ acc
    }

    #[divan::bench(args = LENGTHS)]
    fn pow2(bencher: Bencher, len: usize) {
        let h = CuckooPrefixHash::new(1 << 20, 7, 5).expect("valid table size and symbols");
        per_key(bencher, len, |k| prefixes(&h, k));
    }

    #[divan::bench(args = LENGTHS)]
    fn barrett(bencher: Bencher, len: usize) {
        let h = CuckooPrefixHash::new(1_000_003, 7, 5).expect("valid table size and symbols");
        per_key(bencher, len, |k| prefixes(&h, k));
    }
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod mlp_index {
    use super::*;

    /// The six probes of one random key (levels 3..=8), an item being one level.
    #[divan::bench(counters = [ItemsCount::new(6usize)])]
    fn all_levels(bencher: Bencher) {
        let m = MlpPrefixHash::new(1 << 20);
        let mut x = 1u64;
        bencher.bench_local(|| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let key = divan::black_box(x);
            let mut acc = 0usize;
            for len in MlpPrefixHash::MIN_LEN..=8 {
                if let Some((b1, b2)) = m.probe(key, len) {
                    acc = acc.wrapping_add(b1 ^ b2);
                }
            }
            acc
        });
    }
}

#[divan::bench(args = LENGTHS, sample_size = SAMPLE_SIZE)]
fn xxh3_64(bencher: Bencher, len: usize) {
    per_key(bencher, len, |k| xxh3(k, 0));
}
