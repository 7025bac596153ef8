//! The Code Assigner (memory-efficient-search-trees.txt §6.2.2): order-preserving prefix codes
//! for a sequence of intervals.
//!
//! - [`optimal_lengths`] computes the code lengths of an optimal *alphabetic* prefix code (the
//!   problem Hu and Tucker solved) with the Garsia–Wachs algorithm, which reaches the same
//!   optimum: combine the leftmost pair `(k-1, k)` with `w[k-1] ≤ w[k+1]`, move the sum left
//!   past every smaller weight, repeat; the leaf depths of the resulting tree are the optimal
//!   lengths. The working sequence is a linked list and the search resumes where the last
//!   change happened, so typical inputs take near-linear time (O(N²) worst case).
//! - [`fixed_lengths`] gives every interval `⌈log₂ N⌉` bits (ALM).
//! - [`canonical_codes`] turns lengths into codes: `c₀ = 0`, and each next code is the previous
//!   plus one, shifted to its length. For lengths of an alphabetic tree this yields increasing,
//!   prefix-free codes; [`canonical_codes`] checks that (no code overflows its length, no set
//!   bit is lost by a shift) and refuses anything else, so a loaded dictionary cannot carry a
//!   broken code.

/// Longest code any interval may get (codes are packed beside 16 bits of metadata in a `u64`).
pub const MAX_CODE_LEN: u32 = 48;

/// Lengths of an optimal order-preserving prefix code for `weights` (in interval order), each
/// at most [`MAX_CODE_LEN`]. Weights of zero are treated as one (every interval can occur).
pub fn optimal_lengths(weights: &[u64]) -> Vec<u8> {
    let mut w: Vec<u64> = weights.iter().map(|&x| x.max(1)).collect();
    loop {
        let lens = garsia_wachs(&w);
        if lens.iter().all(|&l| u32::from(l) <= MAX_CODE_LEN) {
            return lens;
        }
        // Too skewed for the code width: flatten the distribution and retry. Each round halves
        // the spread of log-weights, so this ends quickly (uniform weights give ⌈log₂ N⌉).
        for x in &mut w {
            *x = (*x).isqrt() + 1;
        }
    }
}

/// `⌈log₂ n⌉` bits for each of `n` intervals (at least one bit).
pub fn fixed_lengths(n: usize) -> Vec<u8> {
    let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    vec![bits.max(1) as u8; n]
}

/// Leaf depths of the Garsia–Wachs tree over `w` (all weights ≥ 1).
fn garsia_wachs(w: &[u64]) -> Vec<u8> {
    let n = w.len();
    if n <= 1 {
        return vec![1; n];
    }
    const NIL: usize = usize::MAX;
    // Working list: item = (weight, tree node); nodes 0..n are leaves, later ones internal.
    let cap = 2 * n - 1;
    let mut weight = vec![0u64; cap];
    weight[..n].copy_from_slice(w);
    let mut parent = vec![NIL; cap];
    let mut prev: Vec<usize> = (0..cap).map(|i| i.wrapping_sub(1)).collect();
    let mut next: Vec<usize> = (0..cap).map(|i| i + 1).collect();
    prev[0] = NIL;
    next[n - 1] = NIL;
    let mut head = 0usize;
    let mut nodes = n;
    // `k` is the candidate right element of the pair; every triple left of it is descending.
    let mut k = next[head];
    while nodes < cap {
        // Find the leftmost k with w[prev k] <= w[next k] (a missing next is +infinity).
        while next[k] != NIL && weight[prev[k]] > weight[next[k]] {
            k = next[k];
        }
        let (x, y) = (prev[k], k);
        let sum = weight[x].saturating_add(weight[y]);
        let z = nodes;
        nodes += 1;
        weight[z] = sum;
        parent[x] = z;
        parent[y] = z;
        // Unlink x and y.
        let (before, after) = (prev[x], next[y]);
        if before == NIL {
            head = after;
        } else {
            next[before] = after;
        }
        if after != NIL {
            prev[after] = before;
        }
        // Insert z after the nearest item to the left of the gap whose weight is >= sum.
        let mut j = before;
        while j != NIL && weight[j] < sum {
            j = prev[j];
        }
        if j == NIL {
            prev[z] = NIL;
            next[z] = head;
            if head != NIL {
                prev[head] = z;
            }
            head = z;
        } else {
            let a = next[j];
            next[j] = z;
            prev[z] = j;
            next[z] = a;
            if a != NIL {
                prev[a] = z;
            }
        }
        if next[head] == NIL {
            break;
        }
        // Triples entirely left of j are unchanged: resume at j (or at the second item).
        k = if j == NIL || prev[j] == NIL {
            next[head]
        } else {
            j
        };
    }
    // Depths: parents are created after their children, so walk ids downwards.
    let mut depth = vec![0u32; nodes];
    for v in (0..nodes).rev() {
        if parent[v] != NIL {
            depth[v] = depth[parent[v]] + 1;
        }
    }
    depth[..n].iter().map(|&d| d.min(255) as u8).collect()
}

/// Increasing prefix-free codes for `lens` (interval order), or `None` unless the lengths are
/// those of an alphabetic code tree (complete, as Garsia–Wachs gives, or not, as fixed-length
/// codes for a count that is no power of two give) with every length in `1..=MAX_CODE_LEN`.
pub fn canonical_codes(lens: &[u8]) -> Option<Vec<u64>> {
    if lens.is_empty() {
        return Some(Vec::new());
    }
    if lens.iter().any(|&l| l == 0 || u32::from(l) > MAX_CODE_LEN) {
        return None;
    }
    let mut codes = Vec::with_capacity(lens.len());
    let mut c = 0u64;
    codes.push(0);
    for i in 1..lens.len() {
        let (a, b) = (u32::from(lens[i - 1]), u32::from(lens[i]));
        let inc = c + 1;
        if inc >> a != 0 {
            return None; // the previous code was all ones: no room after it
        }
        c = if b >= a {
            inc << (b - a)
        } else {
            if inc & ((1u64 << (a - b)) - 1) != 0 {
                return None; // a shift would drop set bits: not an alphabetic tree
            }
            inc >> (a - b)
        };
        codes.push(c);
    }
    let last = u32::from(lens[lens.len() - 1]);
    (c >> last == 0).then_some(codes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;

    /// Cost of the cheapest alphabetic code tree over `w` (interval DP, O(n³)).
    fn optimal_alphabetic_cost(w: &[u64]) -> u128 {
        let n = w.len();
        let mut prefix = vec![0u128; n + 1];
        for i in 0..n {
            prefix[i + 1] = prefix[i] + u128::from(w[i]);
        }
        // cost[i][j]: leaves i..=j under one root, depths counted from that root.
        let mut cost = vec![vec![0u128; n]; n];
        for len in 2..=n {
            for i in 0..=n - len {
                let j = i + len - 1;
                let best = (i..j).map(|m| cost[i][m] + cost[m + 1][j]).min().unwrap();
                cost[i][j] = best + prefix[j + 1] - prefix[i];
            }
        }
        cost[0][n - 1]
    }

    fn check(w: &[u64]) {
        let lens = garsia_wachs(w);
        let codes = canonical_codes(&lens).expect("lengths of an alphabetic tree");
        for i in 1..codes.len() {
            let (a, b) = (lens[i - 1] as u32, lens[i] as u32);
            // Left-aligned codes increase and neither is a prefix of the other.
            let (x, y) = (codes[i - 1] << (64 - a), codes[i] << (64 - b));
            assert!(x < y);
            let common = a.min(b);
            assert_ne!(x >> (64 - common), y >> (64 - common), "prefix at {i}");
        }
        let cost: u128 = w
            .iter()
            .zip(&lens)
            .map(|(&x, &l)| u128::from(x) * u128::from(l))
            .sum();
        if w.len() > 1 {
            assert_eq!(
                cost,
                optimal_alphabetic_cost(w),
                "weights {w:?} lengths {lens:?}"
            );
        }
    }

    #[test]
    fn optimal_against_brute_force_on_small_alphabets() {
        // Fewer and shorter vectors under miri: this module has no unsafe code, the run only
        // checks the arithmetic under the interpreter.
        let (per_n, longest_exhaustive) = if cfg!(miri) { (3, 4) } else { (300, 7) };
        let mut rng = TestRng::new(5);
        for n in 1..=12 {
            for _ in 0..per_n {
                let w: Vec<u64> = (0..n)
                    .map(|_| match rng.index(4) {
                        0 => 1 + rng.index(3) as u64,
                        1 => 1 + rng.index(1000) as u64,
                        2 => 1u64 << rng.index(20),
                        _ => 1 + rng.index(50) as u64,
                    })
                    .collect();
                check(&w);
            }
        }
        // Every weight vector over {1, 2, 3} of length up to 7.
        for n in 2..=longest_exhaustive {
            for mut m in 0..3u64.pow(n) {
                let w: Vec<u64> = (0..n)
                    .map(|_| {
                        let x = m % 3 + 1;
                        m /= 3;
                        x
                    })
                    .collect();
                check(&w);
            }
        }
    }

    #[test]
    fn large_and_skewed_inputs_stay_within_the_code_width() {
        let n = if cfg!(miri) { 200 } else { 70_000 };
        let w: Vec<u64> = (0..n as u64)
            .map(|i| 1 + (i * 7919 % 1000).pow(3))
            .collect();
        let lens = optimal_lengths(&w);
        assert!(canonical_codes(&lens).is_some());
        // Fibonacci weights force a maximally deep tree: lengths get capped by flattening.
        let mut fib = vec![1u64, 1];
        while fib.len() < 90 {
            let x = fib[fib.len() - 1].saturating_add(fib[fib.len() - 2]);
            fib.push(x);
        }
        let lens = optimal_lengths(&fib);
        assert!(lens.iter().all(|&l| u32::from(l) <= MAX_CODE_LEN));
        assert!(canonical_codes(&lens).is_some());
        let lens = fixed_lengths(300);
        assert_eq!(lens[0], 9);
        assert!(canonical_codes(&lens).is_some());
        assert!(canonical_codes(&fixed_lengths(256)).is_some());
        assert_eq!(fixed_lengths(1), vec![1]);
    }

    #[test]
    fn canonical_codes_refuse_broken_lengths() {
        assert!(canonical_codes(&[1, 1]).is_some());
        assert!(canonical_codes(&[1, 2, 2]).is_some());
        assert!(canonical_codes(&[2, 1, 2]).is_none()); // not alphabetic
        assert!(canonical_codes(&[1, 1, 1]).is_none()); // over-full
        assert!(canonical_codes(&[1, 2]).is_some()); // incomplete codes are still prefix-free
        assert!(canonical_codes(&[0]).is_none());
        assert!(canonical_codes(&[49, 49]).is_none());
    }

    /// Through the public entry point: zero weights count as one, the lengths form a full
    /// binary tree (Kraft sum exactly 1) of optimal cost, and their canonical codes increase
    /// and are prefix-free.
    fn check_lengths(w: &[u64]) {
        let lens = optimal_lengths(w);
        assert_eq!(lens.len(), w.len());
        let clamped: Vec<u64> = w.iter().map(|&x| x.max(1)).collect();
        let cost: u128 = clamped
            .iter()
            .zip(&lens)
            .map(|(&x, &l)| u128::from(x) * u128::from(l))
            .sum();
        assert_eq!(
            cost,
            optimal_alphabetic_cost(&clamped),
            "weights {w:?} got lengths {lens:?}"
        );
        // A full binary tree: the Kraft sum is exactly 1.
        let kraft: u128 = lens.iter().map(|&l| 1u128 << (64 - u32::from(l))).sum();
        assert_eq!(kraft, 1u128 << 64, "lengths {lens:?} of weights {w:?}");
        let codes = canonical_codes(&lens).expect("lengths of an alphabetic tree");
        for i in 1..codes.len() {
            let (a, b) = (u32::from(lens[i - 1]), u32::from(lens[i]));
            let (x, y) = (codes[i - 1] << (64 - a), codes[i] << (64 - b));
            assert!(x < y, "codes not increasing at {i}: {codes:?} {lens:?}");
            let c = a.min(b);
            assert_ne!(x >> (64 - c), y >> (64 - c), "a prefix at {i}");
        }
    }

    #[test]
    fn optimal_lengths_match_brute_force_on_skewed_and_flat_weights() {
        // Fewer vectors under miri (no unsafe code here; the run checks the arithmetic only).
        let (rounds, longest_exhaustive) = if cfg!(miri) { (8, 4) } else { (400, 7) };
        let mut rng = TestRng::new(0xC0DE);
        for n in 2..=10usize {
            for round in 0..rounds {
                let w: Vec<u64> = match round % 8 {
                    // One heavy weight, the rest light.
                    0 => {
                        let heavy = rng.index(n);
                        (0..n)
                            .map(|i| {
                                if i == heavy {
                                    1 << (20 + rng.index(20))
                                } else {
                                    1 + rng.below(3)
                                }
                            })
                            .collect()
                    }
                    // Geometric: each weight a random power of two up to 2^40.
                    1 => (0..n).map(|_| 1u64 << rng.index(41)).collect(),
                    // Many equal weights, a few different.
                    2 => {
                        let base = 1 + rng.below(1000);
                        (0..n)
                            .map(|_| {
                                if rng.chance(0.8) {
                                    base
                                } else {
                                    1 + rng.below(2000)
                                }
                            })
                            .collect()
                    }
                    // All equal.
                    3 => vec![1 + rng.below(1 << 30); n],
                    // Zeros (treated as one) among small weights.
                    4 => (0..n).map(|_| rng.below(3)).collect(),
                    // Increasing and decreasing runs (Fibonacci-like growth).
                    5 => {
                        let mut v = vec![1u64, 1 + rng.below(2)];
                        while v.len() < n {
                            let x = v[v.len() - 1] + v[v.len() - 2];
                            v.push(x);
                        }
                        v.truncate(n);
                        if rng.chance(0.5) {
                            v.reverse();
                        }
                        v
                    }
                    // Two heavy ends, light middle, and the opposite.
                    6 => {
                        let heavy = 1 << 30;
                        let inside = rng.chance(0.5);
                        (0..n)
                            .map(|i| {
                                let edge = i == 0 || i == n - 1;
                                if edge != inside {
                                    heavy
                                } else {
                                    1 + rng.below(5)
                                }
                            })
                            .collect()
                    }
                    // Large random weights (sums stay far below 2^64).
                    _ => (0..n).map(|_| rng.below(1 << 50)).collect(),
                };
                check_lengths(&w);
            }
        }
        // Every vector over {0, 1, 1000} of length up to 7.
        for n in 2..=longest_exhaustive {
            for mut m in 0..3u64.pow(n) {
                let w: Vec<u64> = (0..n)
                    .map(|_| {
                        let x = [0, 1, 1000][(m % 3) as usize];
                        m /= 3;
                        x
                    })
                    .collect();
                check_lengths(&w);
            }
        }
        // The degenerate sizes.
        assert_eq!(optimal_lengths(&[]), Vec::<u8>::new());
        assert_eq!(optimal_lengths(&[5]).len(), 1);
        assert!(canonical_codes(&optimal_lengths(&[5])).is_some());
    }

    #[test]
    fn canonical_codes_accept_fixed_lengths_and_refuse_non_alphabetic_ones() {
        for n in [1usize, 2, 3, 5, 257, 1000, 65_793] {
            let lens = fixed_lengths(n);
            let codes = canonical_codes(&lens).unwrap();
            assert!(codes.windows(2).all(|w| w[0] < w[1]), "n = {n}");
            assert_eq!(codes[n - 1], n as u64 - 1);
        }
        assert!(canonical_codes(&[1, 1, 1]).is_none());
        assert!(canonical_codes(&[2, 1, 2]).is_none());
        assert!(canonical_codes(&[3, 3, 1, 3, 3]).is_none());
        assert!(canonical_codes(&[2, 2, 2, 2]).is_some());
        assert!(canonical_codes(&[1, 0]).is_none());
    }
}
