//! The label search of a LOUDS-Sparse node (FST, SuRF): the first label equal to a byte
//! (`find_eq`, exact lookups) or at least a byte (`find_ge`, seeks), in a sorted run of 1 to
//! 256 distinct labels.
//!
//! `padded` searches an array with the 16 bytes of padding the FST lays out after its labels,
//! which on x86-64 takes the SSE2 path (16 labels per compare); `unpadded` searches the same
//! run with no padding, which takes the scalar loop: the difference is what the SIMD path buys.
//! The run starts at an odd offset of a longer array, as a node's labels do.
//!
//! Each iteration is one search; `find_eq` looks for a label of the node (a hit, at a uniform
//! position), `find_ge` for a random byte.
//!
//! `cargo bench -p mlpdex --bench label_search`

use divan::Bencher;
use mlpdex::testing::TestRng;
use mlpdex::testing::internals::{label_find_eq, label_find_ge, pad_labels};

fn main() {
    divan::main();
}

/// Iterations per sample (`--sample-size` overrides it): fixed rather than tuned by divan, whose
/// tuning from the first, cold sample sometimes picked one iteration per sample, so that the
/// timer's resolution (about 20 ns) swamped a query of a few nanoseconds.
const SAMPLE_SIZE: u32 = 1024;

/// Node sizes (numbers of labels).
const LABELS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/// Labels before the node in the array (an odd number, so the run is not 16-byte aligned).
const BEFORE: usize = 37;

/// Queries drawn per benchmark and cycled through (a power of two).
const QUERIES: usize = 4096;

/// A label array holding `BEFORE` labels, then a node of `n` distinct sorted labels, then 40
/// labels more; the node's range in it; and `QUERIES` query bytes (labels of the node when
/// `hits`, random bytes otherwise).
fn node(n: usize, hits: bool) -> (Vec<u8>, usize, usize, Vec<u8>) {
    let mut rng = TestRng::new(n as u64);
    // A random n-subset of the byte values, sorted (partial Fisher-Yates).
    let mut all: Vec<u8> = (0..=255).collect();
    for i in 0..n {
        let j = i + rng.index(256 - i);
        all.swap(i, j);
    }
    let mut labels = all[..n].to_vec();
    labels.sort_unstable();
    let mut arr: Vec<u8> = (0..BEFORE).map(|_| rng.next_u64() as u8).collect();
    arr.extend_from_slice(&labels);
    arr.extend((0..40).map(|_| rng.next_u64() as u8));
    let queries = (0..QUERIES)
        .map(|_| {
            if hits {
                *rng.pick(&labels)
            } else {
                rng.next_u64() as u8
            }
        })
        .collect();
    (arr, BEFORE, BEFORE + n, queries)
}

/// Benchmarks `search` on the node of `n` labels, with or without the padding.
fn bench(
    bencher: Bencher,
    n: usize,
    padded: bool,
    hits: bool,
    search: impl Fn(&[u8], usize, usize, u8) -> Option<usize>,
) {
    let (arr, start, end, queries) = node(n, hits);
    let arr = if padded {
        pad_labels(arr)
    } else {
        // Cut right after the node: fewer than 16 readable bytes past it, so the scalar loop.
        arr[..end].to_vec()
    };
    let mut q = 0usize;
    bencher.bench_local(|| {
        q = (q + 1) & (QUERIES - 1);
        search(divan::black_box(&arr), start, end, queries[q])
    });
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod find_eq {
    use super::*;

    #[divan::bench(args = LABELS)]
    fn padded(bencher: Bencher, n: usize) {
        bench(bencher, n, true, true, label_find_eq);
    }

    #[divan::bench(args = LABELS)]
    fn unpadded(bencher: Bencher, n: usize) {
        bench(bencher, n, false, true, label_find_eq);
    }
}

#[divan::bench_group(sample_size = SAMPLE_SIZE)]
mod find_ge {
    use super::*;

    #[divan::bench(args = LABELS)]
    fn padded(bencher: Bencher, n: usize) {
        bench(bencher, n, true, false, label_find_ge);
    }

    #[divan::bench(args = LABELS)]
    fn unpadded(bencher: Bencher, n: usize) {
        bench(bencher, n, false, false, label_find_ge);
    }
}
