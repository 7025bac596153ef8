//! The Symbol Selectors (§6.1.3, §6.2.2): from a sample of keys, the interval boundaries of
//! each scheme, at most `limit` of them.
//!
//! Every selector returns a sorted boundary list that contains the empty string and every
//! single byte (so the dictionary is complete: see [`super::dict`]). A selected symbol `s`
//! contributes the interval `[s, succ(s))` of all strings starting with `s`; the gaps between
//! selected intervals need no explicit filling, since the symbol of any interval is derived from
//! its two boundaries ([`super::dict::symbol_of`]): a gap such as `[inh, ion)` gets the symbol
//! `i`, as in Figure 6.4d. A symbol that ends a key (`om` + end) contributes the one-string
//! interval `[om, om\0)`, whose entry consumes the end of the key as well.
//!
//! - Single-Char, Double-Char: fixed boundaries (257 and 65,793).
//! - 3-Grams, 4-Grams: the most frequent `n`-byte substrings (and key tails shorter than `n`
//!   followed by the end), as many as fit the limit.
//! - ALM: substrings of 2 to [`ALM_MAX`] bytes ranked by length × frequency (the thesis'
//!   `len(s) · freq(s) > W` test, with `W` lowered until the limit is reached; ranking and
//!   taking the top `k` is the same as the binary search on `W`). Counting every substring is
//!   what makes ALM slow and memory-hungry, so it counts over at most [`ALM_SAMPLE`] keys.
//! - ALM-Improved: the thesis counts only suffixes of the sample strings. Here every suffix
//!   (cut at [`ALM_IMPROVED_MAX`] bytes) is sorted once, and a pass over neighbouring suffixes
//!   yields each repeated substring that is a branching point of the suffix trie with its
//!   frequency (the number of suffixes that start with it). Only those right-maximal
//!   substrings are candidates, ranked as in ALM, over the whole sample.

use std::collections::HashMap;

use super::dict::prefix_successor;

/// Longest substring ALM counts.
pub const ALM_MAX: usize = 8;
/// Most sample keys ALM counts substrings of.
pub const ALM_SAMPLE: usize = 10_000;
/// Longest suffix prefix ALM-Improved considers.
pub const ALM_IMPROVED_MAX: usize = 24;

/// A candidate symbol: its bytes, whether it ends a key, and its score.
struct Candidate {
    bytes: Vec<u8>,
    terminal: bool,
    score: u64,
}

/// The empty string and every single byte.
fn base() -> Vec<Vec<u8>> {
    core::iter::once(Vec::new())
        .chain((0..=255u8).map(|b| vec![b]))
        .collect()
}

/// Boundaries of the best `k` candidates plus the base, sorted and deduplicated.
fn boundaries_of(cands: &[Candidate], k: usize) -> Vec<Vec<u8>> {
    let mut v = base();
    for c in &cands[..k] {
        v.push(c.bytes.clone());
        if c.terminal {
            let mut t = c.bytes.clone();
            t.push(0);
            v.push(t);
        } else if let Some(s) = prefix_successor(&c.bytes) {
            v.push(s);
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The most candidates (best first) whose boundaries number at most `limit`, by binary search
/// on the count (boundaries grow with `k`).
fn fit(mut cands: Vec<Candidate>, limit: usize) -> Vec<Vec<u8>> {
    cands.sort_unstable_by(|a, b| b.score.cmp(&a.score).then_with(|| a.bytes.cmp(&b.bytes)));
    let (mut lo, mut hi) = (0usize, cands.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if boundaries_of(&cands, mid).len() <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    boundaries_of(&cands, lo)
}

/// 3-Grams (`n = 3`) or 4-Grams (`n = 4`).
///
/// # Panics
/// If `n` is not 2, 3 or 4 (grams are packed into 32 bits).
pub fn ngrams(sample: &[&[u8]], n: usize, limit: usize) -> Vec<Vec<u8>> {
    assert!((2..=4).contains(&n), "ngrams: n = {n}, expected 2, 3 or 4");
    // Key: up to 4 bytes big-endian, then the length and the terminal flag.
    let pack = |s: &[u8], terminal: bool| {
        let mut x = 0u64;
        for &b in s {
            x = x << 8 | b as u64;
        }
        (x << (8 * (4 - s.len())) << 8) | (s.len() as u64) << 1 | terminal as u64
    };
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for k in sample {
        if k.len() >= n {
            for w in k.windows(n) {
                *counts.entry(pack(w, false)).or_default() += 1;
            }
        }
        // Tails shorter than n, ending the key.
        for t in 1..n.min(k.len() + 1) {
            *counts.entry(pack(&k[k.len() - t..], true)).or_default() += 1;
        }
    }
    let cands = counts
        .into_iter()
        .map(|(x, c)| {
            let len = (x >> 1 & 0x7F) as usize;
            let word = (x >> 8) as u32;
            let bytes = word.to_be_bytes()[..len].to_vec();
            Candidate {
                bytes,
                terminal: x & 1 == 1,
                score: c,
            }
        })
        .collect();
    fit(cands, limit)
}

/// ALM: substrings of 2..=ALM_MAX bytes ranked by length × frequency.
pub fn alm(sample: &[&[u8]], limit: usize) -> Vec<Vec<u8>> {
    let mut counts: HashMap<&[u8], u64> = HashMap::new();
    for k in sample.iter().take(ALM_SAMPLE) {
        for i in 0..k.len() {
            for len in 2..=ALM_MAX.min(k.len() - i) {
                *counts.entry(&k[i..i + len]).or_default() += 1;
            }
        }
    }
    let cands = counts
        .into_iter()
        .filter(|&(_, c)| c > 1)
        .map(|(s, c)| Candidate {
            bytes: s.to_vec(),
            terminal: false,
            score: c * s.len() as u64,
        })
        .collect();
    fit(cands, limit)
}

/// ALM-Improved: right-maximal repeated substrings from the sorted suffixes of the sample.
pub fn alm_improved(sample: &[&[u8]], limit: usize) -> Vec<Vec<u8>> {
    let mut suffixes: Vec<&[u8]> = Vec::new();
    for k in sample {
        for i in 0..k.len() {
            suffixes.push(&k[i..k.len().min(i + ALM_IMPROVED_MAX)]);
        }
    }
    suffixes.sort_unstable();
    // Walk neighbouring suffixes with a stack of open prefixes (length, first suffix index):
    // a prefix of length l closes when the next suffix shares fewer than l bytes; its
    // frequency is the number of suffixes it spanned.
    let lcp = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let mut cands = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for i in 0..=suffixes.len() {
        let l = if i == 0 || i == suffixes.len() {
            0
        } else {
            lcp(suffixes[i - 1], suffixes[i])
        };
        let mut start = i;
        while let Some(&(len, first)) = stack.last() {
            if len <= l {
                break;
            }
            stack.pop();
            let freq = (i - first) as u64;
            if len >= 2 {
                cands.push(Candidate {
                    bytes: suffixes[first][..len].to_vec(),
                    terminal: false,
                    score: freq * len as u64,
                });
            }
            start = first;
        }
        if l > 0 && stack.last().is_none_or(|&(len, _)| len < l) {
            stack.push((l, start.min(i.saturating_sub(1))));
        }
    }
    fit(cands, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hope::dict::Boundaries;

    fn sample() -> Vec<Vec<u8>> {
        let mut rng = crate::testing::TestRng::new(3);
        (0..2000)
            .map(|i| {
                let user: Vec<u8> = (0..3 + rng.index(8))
                    .map(|_| b'a' + rng.index(26) as u8)
                    .collect();
                let host: &[u8] = [&b"@gmail.com"[..], b"@yahoo.com", b"@cmu.edu"][i % 3];
                [user.as_slice(), host].concat()
            })
            .collect()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a big-data sweep (65 793 two-byte boundaries, 2000-key samples); hope has no unsafe code"
    )]
    fn selectors_respect_the_limit_and_give_valid_boundaries() {
        let keys = sample();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        for limit in [257, 300, 1000, 4096] {
            for (name, b) in [
                ("3-grams", ngrams(&refs, 3, limit)),
                ("4-grams", ngrams(&refs, 4, limit)),
                ("alm", alm(&refs, limit)),
                ("alm-improved", alm_improved(&refs, limit)),
            ] {
                assert!(b.len() <= limit.max(257), "{name} {limit}: {}", b.len());
                let b = Boundaries::new(&b).expect(name);
                assert!(b.symbols().is_some());
                if limit >= 1000 {
                    assert!(b.len() > 300, "{name} selected too little: {}", b.len());
                }
            }
        }
        // The frequent host names are found.
        let b = alm_improved(&refs, 1000);
        assert!(
            b.iter().any(|s| s.as_slice() == b"@gmail.com"),
            "alm-improved"
        );
        let b = ngrams(&refs, 4, 1000);
        assert!(b.iter().any(|s| s.as_slice() == b"gmai"), "4-grams");
    }

    #[test]
    fn suffix_counting_finds_exact_frequencies() {
        let keys: Vec<&[u8]> = vec![b"abcab", b"xabc", b"ab"];
        let mut suffixes: Vec<&[u8]> = Vec::new();
        for k in &keys {
            for i in 0..k.len() {
                suffixes.push(&k[i..]);
            }
        }
        let b = alm_improved(&keys, 10_000);
        // "abc" occurs twice, "ab" four times: both are right-maximal repeats.
        assert!(b.iter().any(|s| s.as_slice() == b"abc"));
        assert!(b.iter().any(|s| s.as_slice() == b"ab"));
        assert_eq!(suffixes.iter().filter(|s| s.starts_with(b"ab")).count(), 4);
    }

    /// `ngrams` refuses gram lengths other than 2, 3 or 4 (grams are packed into 32 bits) with
    /// a panic rather than a silently wrong selection (issue 16's overflow audit).
    #[test]
    fn ngrams_refuses_gram_lengths_it_cannot_hold() {
        use std::panic::catch_unwind;
        assert!(catch_unwind(|| ngrams(&[b"abcdef"], 5, 100)).is_err());
        assert!(catch_unwind(|| ngrams(&[b"abcdef"], usize::MAX, 100)).is_err());
        assert!(!ngrams(&[b"abcdef"], 3, 100).is_empty());
    }
}
