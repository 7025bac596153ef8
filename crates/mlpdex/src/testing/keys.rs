//! Adversarial key shapes (`KeyShape`) and their generators: small universes of random bytes,
//! shared prefixes, prefix chains, 0x00/0xFF strings, multi-KiB keys, file-system paths and
//! 8-byte integers; plus
//! `permutations`, for tests that try every insertion order of a few keys.

use super::rng::TestRng;

/// An adversarial distribution of keys; see [`gen_key`](KeyShape::gen_key).
///
/// Every shape draws from a universe small enough (a few hundred to a few thousand keys) that a
/// long run inserts, removes and looks up the same keys many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyShape {
    /// Lengths 0 to 24, any byte values (0x00 and 0xFF favoured), with shared prefixes of random
    /// length; the empty key included.
    RandomBytes,
    /// A few common prefixes of 20 to 40 bytes, URL-like or made of 0x00 or 0xFF (one extends
    /// another), followed by tails of up to 3 bytes; sometimes a cut-off prefix.
    SharedPrefix,
    /// Prefixes of a few fixed strings (`""`, `"a"`, `"ab"`, `"abc"`, …, and runs of 0x00, 0xFF
    /// and `a`), sometimes with one byte appended: keys that are prefixes of each other.
    PrefixChains,
    /// Only 0x00 and 0xFF bytes, lengths 0 to 12.
    ZeroFf,
    /// Keys of 1 to 8 KiB built on three long patterns, differing late (one of the last 8 bytes)
    /// or only by length.
    Long,
    /// File-system paths of 1 to 5 levels under two long stems: names that extend one another
    /// (`lib`, `lib64`), differ in one late byte, hold 0x00 or 0xFF, or are 60 bytes long; every
    /// directory is itself a key, a prefix of its files; sometimes a path cut mid-name. Sorted
    /// neighbours share long prefixes, branching at every depth: the shape of issue 23's
    /// `paths` dataset, small.
    Paths,
    /// 8-byte big-endian integers: 0, 1, `u64::MAX` and other edges, dense small ranges, runs
    /// differing only in the last byte, and some random values. For integer-only maps: probe
    /// keys derived from these stay 8 bytes wide.
    U64,
    /// Each key from a random one of the other byte-string shapes (not `U64`); few are long.
    Mixed,
}

impl KeyShape {
    /// The byte-string shapes, every shape but [`KeyShape::U64`].
    pub const ALL_BYTES: &'static [KeyShape] = &[
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::Long,
        KeyShape::Paths,
        KeyShape::Mixed,
    ];

    /// Every shape: the byte-string ones, then [`KeyShape::U64`].
    pub const ALL: &'static [KeyShape] = &[
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::Long,
        KeyShape::Paths,
        KeyShape::Mixed,
        KeyShape::U64,
    ];

    /// Draws one key of this shape.
    pub fn gen_key(&self, rng: &mut TestRng) -> Vec<u8> {
        match self {
            KeyShape::RandomBytes => random_bytes_key(rng),
            KeyShape::SharedPrefix => shared_prefix_key(rng),
            KeyShape::PrefixChains => prefix_chain_key(rng),
            KeyShape::ZeroFf => zero_ff_key(rng),
            KeyShape::Long => long_key(rng),
            KeyShape::Paths => {
                let mut key = path_key(rng.below(PATHS_UNIVERSE));
                if rng.chance(0.05) {
                    key.truncate(rng.index(key.len() + 1));
                }
                key
            }
            KeyShape::U64 => u64_key(rng).to_vec(),
            KeyShape::Mixed => {
                let shape = match rng.below(31) {
                    0..=5 => KeyShape::RandomBytes,
                    6..=11 => KeyShape::SharedPrefix,
                    12..=17 => KeyShape::PrefixChains,
                    18..=23 => KeyShape::ZeroFf,
                    24..=29 => KeyShape::Paths,
                    _ => KeyShape::Long,
                };
                shape.gen_key(rng)
            }
        }
    }
}

/// Number of keys in the [`KeyShape::RandomBytes`] universe.
pub(super) const RANDOM_BYTES_UNIVERSE: u64 = 1536;

/// A byte favouring the values that break byte-wise code: 0x00, 0xFF and a few letters.
pub(super) fn adversarial_byte(rng: &mut TestRng) -> u8 {
    match rng.below(8) {
        0 => 0x00,
        1 => 0xff,
        2 => b'a' + rng.below(3) as u8,
        _ => rng.next_u64() as u8,
    }
}

pub(super) fn random_bytes_key(rng: &mut TestRng) -> Vec<u8> {
    if rng.chance(0.08) {
        // A fresh key from the whole space: mostly absent, good for gets and bounds.
        let len = rng.index(25);
        (0..len).map(|_| adversarial_byte(rng)).collect()
    } else {
        universe_key(rng.below(RANDOM_BYTES_UNIVERSE))
    }
}

/// Key `i` of the random-bytes universe: a prefix of its parent `i / 8` plus random bytes, so
/// keys share prefixes of every length. Key 0 is the empty key. At most 24 bytes.
pub(super) fn universe_key(i: u64) -> Vec<u8> {
    if i == 0 {
        return Vec::new();
    }
    let mut r = TestRng::new(i.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ 0x5EED_5EED);
    let mut key = if i >= 8 {
        let parent = universe_key(i / 8);
        let keep = if r.chance(0.5) {
            parent.len()
        } else {
            r.index(parent.len() + 1)
        };
        parent[..keep].to_vec()
    } else {
        Vec::new()
    };
    let extra = r.index(25 - key.len());
    key.extend((0..extra).map(|_| adversarial_byte(&mut r)));
    key
}

pub(super) const SHARED_PREFIXES: [&[u8]; 6] = [
    b"https://www.amazon.com/dp/B0",
    b"https://www.amazon.com/dp/B0/reviews/",
    b"https://www.amazon.co.uk/dp/B0",
    b"user\x00000000042\x00profile\x00",
    &[0x00; 24],
    &[0xff; 32],
];

pub(super) const TAIL_ALPHABET: &[u8] = b"019az/\x00\xff";

pub(super) fn shared_prefix_key(rng: &mut TestRng) -> Vec<u8> {
    let mut key = rng.pick(&SHARED_PREFIXES).to_vec();
    if rng.chance(0.05) {
        let cut = rng.index(key.len() + 1);
        key.truncate(cut);
        return key;
    }
    let longest = rng.index(4);
    let tail = rng.index(longest + 1);
    for _ in 0..tail {
        key.push(*rng.pick(TAIL_ALPHABET));
    }
    key
}

pub(super) const CHAINS: [&[u8]; 5] = [
    b"abcdefghijklmnopqrstuvwxyz",
    b"aaaaaaaaaaaaaaaaaaaa",
    &[0x00; 20],
    &[0xff; 20],
    b"a\x00b\xffa\x00b\xffa\x00b\xff",
];

pub(super) fn prefix_chain_key(rng: &mut TestRng) -> Vec<u8> {
    let chain = rng.pick(&CHAINS);
    let n = rng.index(chain.len() + 1);
    let mut key = chain[..n].to_vec();
    if rng.chance(0.2) {
        key.push(*rng.pick(&[0x00, 0xff, b'a', b'b']));
    }
    key
}

pub(super) fn zero_ff_key(rng: &mut TestRng) -> Vec<u8> {
    let max = if rng.chance(0.5) { 4 } else { 12 };
    let len = rng.index(max + 1);
    (0..len)
        .map(|_| if rng.chance(0.5) { 0x00 } else { 0xff })
        .collect()
}

/// Number of keys in the [`KeyShape::Paths`] universe.
pub(super) const PATHS_UNIVERSE: u64 = 2048;

/// The two stems every path starts with.
const PATH_STEMS: [&[u8]; 2] = [
    b"/home/alice/projects/mlpdex/crates",
    b"/srv/www/htdocs/static/assets/images",
];

/// Names of path components: stems that extend one another, names differing in one late
/// byte, 0x00 and 0xFF inside a name, and one long name.
const PATH_NAMES: [&[u8]; 12] = [
    b"usr",
    b"user",
    b"users",
    b"lib",
    b"lib64",
    b"a",
    b"config.yaml",
    b"config.yml",
    b"\x00",
    b"\xff\xfe",
    b"node_modules",
    b"a-directory-name-long-enough-to-cross-every-jump-0000000000",
];

/// Key `i` of the paths universe: the path of its parent `i / 6` (a stem for `i < 6`), a
/// slash and a name, sometimes with a number after it. At most 5 levels, under 400 bytes.
pub(super) fn path_key(i: u64) -> Vec<u8> {
    let mut r = TestRng::new(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x9A75);
    let mut key = if i < 6 {
        PATH_STEMS[(i % 2) as usize].to_vec()
    } else {
        path_key(i / 6)
    };
    key.push(b'/');
    let name: &&[u8] = r.pick(&PATH_NAMES);
    key.extend_from_slice(name);
    if r.chance(0.5) {
        key.push(b'-');
        key.push(b'0' + r.below(4) as u8);
    }
    key
}

pub(super) const LONG_LENGTHS: [usize; 9] = [1024, 1025, 2047, 2048, 4095, 4096, 6000, 8191, 8192];

/// Byte `i` of long pattern `base`: pattern 1 equals pattern 0 for its first 1000 bytes.
pub(super) fn long_pattern(base: u64, i: usize) -> u8 {
    match base {
        0 => b'a' + (i % 26) as u8,
        1 if i < 1000 => b'a' + (i % 26) as u8,
        1 => b'A' + (i % 26) as u8,
        _ if i % 1000 == 999 => 0xff,
        _ => 0x00,
    }
}

pub(super) fn long_key(rng: &mut TestRng) -> Vec<u8> {
    let base = rng.below(3);
    let len = if rng.chance(0.8) {
        *rng.pick(&LONG_LENGTHS)
    } else {
        1024 + rng.index(16)
    };
    let mut key: Vec<u8> = (0..len).map(|i| long_pattern(base, i)).collect();
    match rng.below(6) {
        3 => key[len - 1] = 0x00,
        4 => key[len - 1] = 0xff,
        5 => {
            let pos = len - 1 - rng.index(8);
            key[pos] = key[pos].wrapping_add(1);
        }
        _ => {}
    }
    key
}

pub(super) fn u64_key(rng: &mut TestRng) -> [u8; 8] {
    const EDGES: [u64; 8] = [
        0,
        1,
        0xff,
        0x100,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        (1 << 63) - 1,
    ];
    const LAST_BYTE_RUNS: [u64; 4] = [
        0x0102_0304_0506_0700,
        0xdead_beef_0000_0000,
        0xffff_ffff_ffff_ff00,
        0x00ff_00ff_00ff_0000,
    ];
    let x = match rng.below(8) {
        0 => *rng.pick(&EDGES),
        1 | 2 => rng.below(512),
        3 => u64::MAX - rng.below(256),
        4 | 5 => *rng.pick(&LAST_BYTE_RUNS) | rng.below(256),
        6 => (1 << 32) - 128 + rng.below(256),
        _ => rng.next_u64(),
    };
    x.to_be_bytes()
}

/// Every permutation of `0..n` (Heap's algorithm), for tests that try every insertion order
/// of a few keys.
pub fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut c = vec![0usize; n];
    let mut out = vec![a.clone()];
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                a.swap(0, i);
            } else {
                a.swap(c[i], i);
            }
            out.push(a.clone());
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    out
}
