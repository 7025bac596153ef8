//! The key universes the harnesses write to, and `Stamp`, the value every writer stores: the key it
//! was written for, the writer and the writer's operation counter, so that a reader can tell where
//! any value it sees came from.

use core::fmt;
use core::ops::Bound;
use std::collections::{BTreeSet, HashMap};

use crate::key::{Escaped, after_start, before_end};
use crate::testing::{KeyShape, TestRng};

/// A sorted set of distinct keys; a key is named by its index, so key order is index order.
pub(super) struct Universe {
    pub(super) keys: Vec<Vec<u8>>,
    pub(super) index: HashMap<Vec<u8>, usize>,
}

/// A sorted set of at least `target` adversarial keys: the empty key; prefix chains (every
/// prefix of `abcdefghijkl`, of twelve 0x00 bytes, of twelve 0xFF bytes and of `a\0b\xffa`,
/// each also followed by 0x00 and by 0xFF); every 0x00/0xFF string of 1 to 5 bytes; `long`
/// multi-KiB keys, each with its first half and its one-byte 0x00 extension; then random keys
/// of the other [`KeyShape`]s (random bytes, shared prefixes, prefix chains, 0x00/0xFF,
/// 8-byte integers). Deterministic in `seed`.
pub fn mixed_keys(target: usize, long: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut set: BTreeSet<Vec<u8>> = BTreeSet::new();
    set.insert(Vec::new());
    let chains: [&[u8]; 4] = [b"abcdefghijkl", &[0x00; 12], &[0xff; 12], b"a\x00b\xffa"];
    for chain in chains {
        for n in 1..=chain.len() {
            let p = chain[..n].to_vec();
            for b in [0x00, 0xff] {
                let mut q = p.clone();
                q.push(b);
                set.insert(q);
            }
            set.insert(p);
        }
    }
    for len in 1..=5u32 {
        for bits in 0..(1u32 << len) {
            set.insert(
                (0..len)
                    .map(|i| if bits >> i & 1 == 1 { 0xff } else { 0x00 })
                    .collect(),
            );
        }
    }
    let mut rng = TestRng::new(seed);
    let mut longs = 0;
    while longs < long {
        let k = KeyShape::Long.gen_key(&mut rng);
        if set.insert(k.clone()) {
            longs += 1;
            set.insert(k[..k.len() / 2].to_vec());
            let mut ext = k;
            ext.push(0x00);
            set.insert(ext);
        }
    }
    const FILL: [KeyShape; 5] = [
        KeyShape::RandomBytes,
        KeyShape::SharedPrefix,
        KeyShape::PrefixChains,
        KeyShape::ZeroFf,
        KeyShape::U64,
    ];
    let mut i = 0;
    while set.len() < target {
        set.insert(FILL[i % FILL.len()].gen_key(&mut rng));
        i += 1;
    }
    set.into_iter().collect()
}

impl Universe {
    /// [`mixed_keys`]`(target, long, seed)`, indexed.
    pub(super) fn new(target: usize, long: usize, seed: u64) -> Universe {
        Universe::from_keys(mixed_keys(target, long, seed))
    }

    /// The sorted, distinct `keys`, indexed.
    pub(super) fn from_keys(keys: Vec<Vec<u8>>) -> Universe {
        debug_assert!(keys.is_sorted_by(|a, b| a < b));
        assert!(
            keys.len() < 1 << INDEX_BITS,
            "universe too large for a stamp"
        );
        let index = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        Universe { keys, index }
    }

    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn idx(&self, key: &[u8]) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// A bound for a range or a seek: mostly around a key of the universe, sometimes a key
    /// next to one (one byte longer, shorter, or last byte incremented), sometimes unbounded.
    pub(super) fn random_bound(&self, rng: &mut TestRng) -> Bound<Vec<u8>> {
        if rng.chance(0.1) {
            return Bound::Unbounded;
        }
        let mut k = rng.pick(&self.keys).clone();
        match rng.below(8) {
            0 => k.push(0x00),
            1 => {
                k.pop();
            }
            2 => match k.last_mut() {
                Some(b) if *b < 0xff => *b += 1,
                _ => k.push(0x01),
            },
            _ => {}
        }
        if rng.chance(0.5) {
            Bound::Included(k)
        } else {
            Bound::Excluded(k)
        }
    }

    /// The indexes of the keys within `(s, e)`, as a half-open range of indexes.
    pub(super) fn inside(&self, s: Bound<&[u8]>, e: Bound<&[u8]>) -> core::ops::Range<usize> {
        let lo = self.keys.partition_point(|k| !after_start(k, s));
        let hi = self.keys.partition_point(|k| before_end(k, e));
        lo..hi.max(lo)
    }

    pub(super) fn show(&self, idx: usize) -> String {
        format!("key #{idx} {}", Escaped(&self.keys[idx]))
    }
}

/// Bits of a stamped value holding the writer id.
pub(super) const WRITER_BITS: u32 = 8;
/// Bits of a stamped value holding the key's index in its universe.
pub(super) const INDEX_BITS: u32 = 16;

/// What a stress value says about its write: which writer wrote it, as that writer's
/// how-manieth operation, for which key (by index in the run's sorted key universe).
///
/// The maps hold [`encode`](Self::encode)d stamps; failure messages show them decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The writer's operation counter when it wrote the value.
    pub counter: u64,
    /// The index of the key in the run's universe.
    pub idx: usize,
    /// The writer's id (for values inserted before a churn run, the number of writers).
    pub writer: usize,
}

impl Stamp {
    /// The stamp as a `u64`: counter, then 16 bits of key index, then 8 bits of writer.
    ///
    /// # Panics
    ///
    /// If a field does not fit.
    pub fn encode(self) -> u64 {
        assert!(self.counter < 1 << (64 - INDEX_BITS - WRITER_BITS));
        assert!(self.idx < 1 << INDEX_BITS && self.writer < 1 << WRITER_BITS);
        (self.counter << (INDEX_BITS + WRITER_BITS))
            | ((self.idx as u64) << WRITER_BITS)
            | self.writer as u64
    }

    /// The stamp [`encode`](Self::encode) turned into `v`.
    pub fn decode(v: u64) -> Stamp {
        Stamp {
            counter: v >> (INDEX_BITS + WRITER_BITS),
            idx: ((v >> WRITER_BITS) & ((1 << INDEX_BITS) - 1)) as usize,
            writer: (v & ((1 << WRITER_BITS) - 1)) as usize,
        }
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "writer {}'s operation #{} on key #{}",
            self.writer, self.counter, self.idx
        )
    }
}
