//! Rank and select, the navigation of the FST and SuRF: `rank1` over 64-bit blocks
//! (LOUDS-Dense), `rank1` over 512-bit blocks (LOUDS-Sparse) and sampled `select1`, each on a
//! random half-full vector of 1 Mbit (fits the L2 cache with its directories) and 256 Mbit
//! (32 MiB of bits plus the directories, as large as a server's last-level cache or larger:
//! most queries miss to DRAM).
//!
//! Each iteration is one query. `independent` draws a fresh random position per query, so the
//! CPU overlaps consecutive queries (throughput, as a batch of lookups sees); `dependent`
//! mixes the previous answer into the next position, so each query waits for the last
//! (latency, as one trie walk sees).
//!
//! `cargo bench -p mlpdex --bench rank_select`

use std::fmt;
use std::sync::OnceLock;

use divan::Bencher;
use mlpdex::testing::TestRng;
use mlpdex::testing::internals::RankSelect;

fn main() {
    divan::main();
}

/// Iterations per sample (`--sample-size` overrides it): fixed rather than tuned by divan, whose
/// tuning from the first, cold sample sometimes picked one iteration per sample, so that the
/// timer's resolution (about 20 ns) swamped a query of a few nanoseconds.
const SAMPLE_SIZE: u32 = 1024;

/// Vector sizes, both powers of two so a position is a random number masked.
#[derive(Clone, Copy, Debug)]
enum Size {
    /// 2^20 bits: 128 KiB of bits.
    Mbit1,
    /// 2^28 bits: 32 MiB of bits.
    Mbit256,
}

const SIZES: [Size; 2] = [Size::Mbit1, Size::Mbit256];

impl Size {
    fn bits(self) -> usize {
        match self {
            Size::Mbit1 => 1 << 20,
            Size::Mbit256 => 1 << 28,
        }
    }

    /// The vector of this size, built once per process (the 256 Mbit one takes a moment).
    fn vector(self) -> &'static RankSelect {
        static SMALL: OnceLock<RankSelect> = OnceLock::new();
        static LARGE: OnceLock<RankSelect> = OnceLock::new();
        let cell = match self {
            Size::Mbit1 => &SMALL,
            Size::Mbit256 => &LARGE,
        };
        cell.get_or_init(|| {
            let len = self.bits();
            let mut rng = TestRng::new(0x5eed ^ len as u64);
            let words = (0..len / 64).map(|_| rng.next_u64()).collect();
            RankSelect::from_words(words, len).expect("whole words, fewer than 2^32 bits")
        })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Size::Mbit1 => "1 Mbit",
            Size::Mbit256 => "256 Mbit",
        })
    }
}

/// One step of a 64-bit LCG (Knuth's MMIX constants), answering the state's high 44 bits: a
/// random number in two instructions, cheap next to any query.
#[inline(always)]
fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *x >> 20
}

/// Queries run before timing starts, so that the first samples do not pay for first touches
/// (page faults, cold caches and TLB).
const WARM_UP: usize = 20_000;

fn warm_up(query: &impl Fn(u64) -> usize) {
    let mut x = 2u64;
    for _ in 0..WARM_UP {
        divan::black_box(query(lcg(&mut x)));
    }
}

/// Runs `query` once per iteration on a fresh random number (`independent`).
fn independent_queries(bencher: Bencher, query: impl Fn(u64) -> usize) {
    warm_up(&query);
    let mut x = 1u64;
    bencher.bench_local(move || query(divan::black_box(lcg(&mut x))));
}

/// Runs `query` once per iteration on a fresh random number XOR the previous answer
/// (`dependent`): the next query cannot start before the last one has answered.
fn dependent_queries(bencher: Bencher, query: impl Fn(u64) -> usize) {
    warm_up(&query);
    let mut x = 1u64;
    let mut prev = 0usize;
    bencher.bench_local(move || {
        prev = query(lcg(&mut x) ^ prev as u64);
        prev
    });
}

/// A rank query at a uniformly random position of the vector of `size`.
fn rank(size: Size, rank1: impl Fn(&RankSelect, usize) -> usize) -> impl Fn(u64) -> usize {
    let (rs, mask) = (size.vector(), size.bits() - 1);
    move |r| rank1(rs, r as usize & mask)
}

/// A select query of a uniformly random one of the vector of `size` (`⌊r·ones / 2^44⌋` for
/// the low 44 bits `r` of the random number).
fn select(size: Size) -> impl Fn(u64) -> usize {
    let rs = size.vector();
    let ones = rs.count_ones() as u128;
    move |r| {
        let k = (u128::from(r & ((1 << 44) - 1)) * ones) >> 44;
        rs.select1(k as usize).unwrap_or(0)
    }
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod rank1_64 {
    use super::*;

    #[divan::bench(args = SIZES)]
    fn independent(bencher: Bencher, size: Size) {
        independent_queries(bencher, rank(size, RankSelect::rank1_64));
    }

    #[divan::bench(args = SIZES)]
    fn dependent(bencher: Bencher, size: Size) {
        dependent_queries(bencher, rank(size, RankSelect::rank1_64));
    }
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod rank1_512 {
    use super::*;

    #[divan::bench(args = SIZES)]
    fn independent(bencher: Bencher, size: Size) {
        independent_queries(bencher, rank(size, RankSelect::rank1_512));
    }

    #[divan::bench(args = SIZES)]
    fn dependent(bencher: Bencher, size: Size) {
        dependent_queries(bencher, rank(size, RankSelect::rank1_512));
    }
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod select1 {
    use super::*;

    #[divan::bench(args = SIZES)]
    fn independent(bencher: Bencher, size: Size) {
        independent_queries(bencher, select(size));
    }

    #[divan::bench(args = SIZES)]
    fn dependent(bencher: Bencher, size: Size) {
        dependent_queries(bencher, select(size));
    }
}
