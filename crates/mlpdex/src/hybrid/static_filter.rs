//! What a [`Hybrid`](super::Hybrid)'s insert knows of the static stage's keys without reading
//! it: the stage's largest key, and a Bloom filter over its keys up to a bound.
//!
//! An insert of a key new to the dynamic stage must tell a new key from an update of a static
//! one (it returns the old value, and counts keys). Reading the static stage for that costs a
//! lookup that misses for every new key: most of an insert's time on long string keys (600 ns
//! of 1,800 on 10M email keys). The filter answers most of those misses with one cache line:
//!
//! - a key above the static stage's largest key is not in it (every key of a rising load,
//!   at no cost at all);
//! - at or below `covered`, a key the Bloom filter rules out is not in it. The filter holds
//!   every static key up to `covered`: it is built from both stages, and every key new to the
//!   dynamic stage up to `covered` is added as it comes, so the keys a merge moves into the
//!   static stage are in it already. Keys above `covered` are not added (so a rising load
//!   never fills it), and read the static stage when they are not above its largest key.
//!
//! The filter is sized for 60% more keys than it was built from; when the keys added since
//! fill it, the next merge builds it anew from the new static stage, so over a load each key
//! is hashed about 2.7 times, in passes that group their cache misses (see
//! [`Bloom::grouped`]).

use super::bloom::Bloom;
use super::stage::{DynamicStage, StaticStage};
use crate::api::RangeCursor;

/// The static stage's largest key, and a filter over its keys up to a bound (module docs).
#[derive(Debug)]
pub(crate) struct StaticFilter {
    /// Bits per key of the Bloom filter; 0 for none.
    bits: usize,
    /// Every static key up to `covered`; `None` at 0 bits.
    bloom: Option<Bloom>,
    /// The largest key `bloom` covers (`None`: none, the stages were empty when it was built).
    covered: Option<Box<[u8]>>,
    /// Keys `bloom` may still take before the next merge builds it anew.
    room: usize,
    /// The static stage's largest key (`None`: the stage is empty).
    largest: Option<Box<[u8]>>,
}

impl StaticFilter {
    /// A filter of `bits` per key over the empty static stage.
    pub(crate) fn new(bits: usize) -> StaticFilter {
        StaticFilter {
            bits,
            bloom: None,
            covered: None,
            room: 0,
            largest: None,
        }
    }

    /// Bits per key of the Bloom filter (0: none).
    pub(crate) fn bits(&self) -> usize {
        self.bits
    }

    /// Starts loading the cache line [`record`](Self::record) of `key` reads.
    #[inline]
    pub(crate) fn prefetch(&self, key: &[u8]) {
        if let Some(bloom) = &self.bloom {
            bloom.prefetch(key);
        }
    }

    /// False when `key` is certainly not in the static stage.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        match &self.largest {
            Some(largest) if key <= &largest[..] => match (&self.bloom, &self.covered) {
                (Some(bloom), Some(covered)) if key <= &covered[..] => bloom.may_contain(key),
                _ => true,
            },
            _ => false,
        }
    }

    /// Takes note of `key`, new to the dynamic stage (so in the static stage after the next
    /// merge), and answers [`may_contain`](Self::may_contain) for it as of before.
    #[inline]
    pub(crate) fn record(&mut self, key: &[u8]) -> bool {
        let below_largest = self.largest.as_deref().is_some_and(|l| key <= l);
        match (&mut self.bloom, &self.covered) {
            (Some(bloom), Some(covered)) if key <= &covered[..] => {
                self.room = self.room.saturating_sub(1);
                bloom.insert_test(key) && below_largest
            }
            _ => below_largest,
        }
    }

    /// Sets the bits per key and builds the filter anew from both stages.
    pub(crate) fn set_bits<D: DynamicStage, S: StaticStage>(
        &mut self,
        bits: usize,
        stat: &S,
        dynamic: &D,
    ) {
        self.bits = bits;
        self.rebuild(stat, dynamic);
    }

    /// Catches up with a new static stage (after a merge or a clear, with the dynamic stage
    /// empty): takes its largest key, and answers whether the filter must be built anew
    /// ([`rebuild`](Self::rebuild)): when the keys added since its build used its room.
    pub(crate) fn note_static<S: StaticStage>(&mut self, stat: &S) -> bool {
        self.largest = largest(stat);
        self.room == 0 || stat.is_empty()
    }

    /// Builds the filter from the keys of both stages (the static stage's, and the dynamic
    /// stage's, which the next merge moves into it), with room for 60% more keys, covering
    /// keys up to the largest of both.
    pub(crate) fn rebuild<D: DynamicStage, S: StaticStage>(&mut self, stat: &S, dynamic: &D) {
        self.largest = largest(stat);
        self.bloom = None;
        self.covered = None;
        self.room = 0;
        let n = stat.len() + dynamic.len();
        if self.bits == 0 || n == 0 {
            return;
        }
        let capacity = (n + n / 2 + n / 10).max(1024);
        let mut bloom = Bloom::with_bits(capacity, self.bits);
        let mut grouped = bloom.grouped();
        let mut c = stat.cursor(..);
        while let Some((k, _)) = c.next() {
            grouped.push(k);
        }
        drop(grouped);
        let mut covered = self.largest.clone();
        for (k, _) in dynamic.iter() {
            let k = k.as_ref();
            bloom.insert(k);
            if covered.as_deref().is_none_or(|c| k > c) {
                covered = Some(k.into());
            }
        }
        self.bloom = Some(bloom);
        self.covered = covered;
        self.room = capacity - n;
    }

    /// Bytes owned.
    pub(crate) fn bytes(&self) -> usize {
        self.bloom.as_ref().map_or(0, Bloom::bytes)
            + self.covered.as_ref().map_or(0, |k| k.len())
            + self.largest.as_ref().map_or(0, |k| k.len())
    }
}

/// The largest key of `stat`.
fn largest<S: StaticStage>(stat: &S) -> Option<Box<[u8]>> {
    stat.cursor(..).next_back().map(|(k, _)| k.into())
}
