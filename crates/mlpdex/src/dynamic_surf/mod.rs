//! A writable SuRF: a small dynamic stage of recently inserted keys in front of a static
//! [`Surf`], merged in batches (memory-efficient-search-trees.txt §4.5, "SuRF is static", with
//! the hybrid index of chapter 5), keeping zero false negatives across any number of merges.
//!
//! ```
//! use mlpdex::dynamic_surf::{Config, DynamicSurf};
//! use mlpdex::surf::SurfKind;
//!
//! // SuRF-Real with 8 real bits; merge whenever the dynamic stage holds 64 keys or a tenth of
//! // the static stage's entries, whichever is more.
//! let mut f = DynamicSurf::with_config(SurfKind::Real(8), Config { ratio: 10, min_merge: 64 })?;
//! for i in 0u32..10_000 {
//!     f.insert(format!("user{i:05}").as_bytes())?;
//! }
//! assert!(f.stats().merges > 10);
//! // Every key ever inserted is reported, and every range holding one.
//! assert!(f.may_contain(b"user04242"));
//! assert!(f.may_contain_range("user0999".."user1"));
//! // "No" is certain.
//! assert!(!f.may_contain(b"admin"));
//! assert!(!f.may_contain_range("v"..));
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! A range filter over a key set that keeps growing, when most of its keys are known at the
//! start ([`from_sorted`](DynamicSurf::from_sorted) or [`from_surf`](DynamicSurf::from_surf))
//! or the keys are spread evenly and the kind is SuRF-Real with whole bytes (`Real(8)`,
//! `Real(16)`): a log-structured store's filter between compactions, a remote shard's key
//! space, a cache of negative lookups. Inserts cost a [Cuckoo Trie](crate::cuckoo_trie)
//! insert plus an amortized share of the merges (each entry is rebuilt about `ratio + 1`
//! times over its life, as in the hybrid index); queries ask the dynamic stage (exact) and the
//! SuRF.
//!
//! When not to use it:
//!
//! - When the key set is known up front: build a [`Surf`]; it is smaller and its
//!   false-positive rate is lower.
//! - When the set grows many times over from a small start, with SuRF-Base or SuRF-Hash, or
//!   with skewed keys (e-mail addresses, URLs) whatever the kind: the false-positive rate
//!   drifts towards 100% (table below). A merge sees only the old entries' prefixes, never
//!   the keys behind them, so it can never cut an entry deeper: an entry keeps the region (the
//!   keys starting with its prefix) its neighbours gave it when it was built, while a fresh
//!   build over the grown set would refine it. Where the whole key set is at hand now and
//!   then (a store's compactions), [`rebuild`](DynamicSurf::rebuild) from it: the filter then
//!   answers exactly as a SuRF built over those keys, drift undone and deletes applied.
//! - When keys are deleted and the remaining set is never at hand: an entry stands for keys
//!   it no longer knows, so nothing can be removed.
//! - For point queries only: a Bloom filter is smaller and does not drift.
//!
//! # What it is
//!
//! - **Two stages.** Inserted keys go, whole, into a [`CuckooTrie`] (the dynamic stage, `D`).
//!   Older keys live in a [`Surf`] of the chosen [`SurfKind`] (the static stage, `S`).
//!   [`may_contain`](DynamicSurf::may_contain) asks `D` for the exact key, then `S`;
//!   [`may_contain_range`](DynamicSurf::may_contain_range) asks `D` for its first key at or
//!   after the start bound, then `S`.
//! - **Merge-all with a ratio trigger**, as in [`hybrid`](crate::hybrid): when `D` holds
//!   `max(S.len() / ratio, min_merge)` keys ([`Config`]; `S.len()` counts entries), a new `S`
//!   is built from the old one's entries and `D`'s keys, streaming both in key order into the
//!   SuRF builder, and `D` is emptied.
//! - **Merging without the keys.** Each old entry becomes an item of the new build, which the
//!   builder may cut shorter (a shorter prefix covers more, never less); its hash bits are
//!   carried to the builder, and its real bits appended to its prefix, where the builder reads
//!   them back. A key of `D` that the entry whose prefix it starts with admits already is
//!   dropped. A key that starts with an entry's prefix but disagrees with its suffix bits
//!   cannot share that leaf with bits of its own: the entry is *degraded* (one bit per leaf
//!   of `S`, "answer as SuRF-Base here") after its path is extended by the whole bytes of its
//!   real bits, so a `Real(8)` entry keeps its point selectivity while a hash-only entry falls
//!   back to SuRF-Base's. The merge's module (`dynamic_surf/merge.rs`) has the full proof.
//!
//! Every [`SurfKind`] is supported, and none ever yields a false negative. They differ in how
//! their false-positive rate drifts: SuRF-Base never degrades an entry, but its regions are the
//! coarsest; SuRF-Real with a multiple of 8 real bits degrades entries at almost no cost;
//! SuRF-Hash entries, and SuRF-Real entries' partial bytes, fall back to SuRF-Base's
//! selectivity when a later key lands under their prefix.
//!
//! # False-positive drift
//!
//! What drives the drift is growth since the entries were built, not the number of merges:
//! doubling a set over 1, 10 or 100 merges costs about the same. Measured by the ignored test
//! `fpr_drift_table` (`cargo test --release -p mlpdex --test dynamic_surf fpr_drift_table --
//! --ignored --nocapture`): 10^6 distinct keys (random 8-byte integers; e-mail-like
//! `name.surname42@domain` strings from a small syllable set, heavily skewed), given as a fresh
//! SuRF; as a SuRF over the first half and the second half inserted in 1, 10 or 100 equal
//! batches, each merged; and inserted one by one into [`DynamicSurf::new`] (the default
//! policy, from nothing; a final merge empties `D`). Each cell: the point false-positive rate
//! on 200,000 absent keys of the same distribution / the range rate on the empty ones among
//! the ranges starting at those keys (one mean key gap wide for integers, the keys extending
//! the probe for e-mail), bits per key (both stages), and the share of degraded entries.
//!
//! | keys (1000000) | schedule | merges | Base | Hash(8) | Real(8) | Mixed { hash: 4, real: 8 } |
//! | rand-8 | fresh SuRF | 0 | 5.56% / 5.64%, 10.6 b, 0% deg. | 0.02% / 5.64%, 18.6 b, 0% deg. | 0.02% / 0.02%, 18.6 b, 0% deg. | 0.00% / 0.02%, 22.6 b, 0% deg. |
//! | rand-8 | half, then 2x | 1 | 6.00% / 6.27%, 10.3 b, 0% deg. | 0.47% / 6.27%, 19.2 b, 1% deg. | 0.03% / 0.02%, 19.6 b, 1% deg. | 0.00% / 0.02%, 23.6 b, 1% deg. |
//! | rand-8 | half, then 2x | 10 | 6.05% / 6.33%, 10.2 b, 0% deg. | 0.53% / 6.33%, 19.0 b, 2% deg. | 0.03% / 0.02%, 19.6 b, 2% deg. | 0.00% / 0.02%, 23.6 b, 2% deg. |
//! | rand-8 | half, then 2x | 100 | 6.07% / 6.36%, 10.2 b, 0% deg. | 0.55% / 6.36%, 19.0 b, 2% deg. | 0.03% / 0.02%, 19.6 b, 2% deg. | 0.00% / 0.02%, 23.6 b, 2% deg. |
//! | rand-8 | from empty, default policy | 44–135 | 96.64% / 96.97%, 0.6 b, 0% deg. | 96.45% / 96.97%, 1.5 b, 65% deg. | 0.76% / 0.77%, 19.5 b, 9% deg. | 1.04% / 1.09%, 23.4 b, 9% deg. |
//! | email | fresh SuRF | 0 | 28.47% / 28.47%, 15.9 b, 0% deg. | 0.12% / 28.47%, 23.9 b, 0% deg. | 25.91% / 25.91%, 23.9 b, 0% deg. | 1.66% / 25.91%, 27.9 b, 0% deg. |
//! | email | half, then 2x | 1 | 35.60% / 35.60%, 12.9 b, 0% deg. | 8.87% / 35.60%, 20.9 b, 9% deg. | 30.85% / 30.85%, 21.4 b, 1% deg. | 7.15% / 30.98%, 25.1 b, 9% deg. |
//! | email | half, then 2x | 10 | 37.66% / 37.66%, 11.8 b, 0% deg. | 11.39% / 37.66%, 19.5 b, 13% deg. | 32.55% / 32.55%, 20.1 b, 1% deg. | 9.08% / 32.84%, 23.6 b, 13% deg. |
//! | email | half, then 2x | 100 | 38.01% / 38.01%, 11.7 b, 0% deg. | 11.79% / 38.01%, 19.3 b, 14% deg. | 32.80% / 32.80%, 19.9 b, 2% deg. | 9.37% / 33.11%, 23.4 b, 13% deg. |
//! | email | from empty, default policy | 129–208 | 99.31% / 99.31%, 0.6 b, 0% deg. | 98.93% / 99.31%, 1.1 b, 86% deg. | 96.75% / 96.75%, 2.2 b, 7% deg. | 96.33% / 97.38%, 2.5 b, 74% deg. |
//!
//! So: on evenly spread keys SuRF-Real-8 stays under 1% from 4,096 to 10^6 keys (degrading 9%
//! of its entries at no cost to points), while SuRF-Base, whose regions are the coarsest, and
//! SuRF-Hash, whose entries fall back to them, end up accepting almost everything; doubling a
//! built set costs SuRF-Hash its point rate (0.02% to 0.5%) and the others little. On the
//! skewed e-mail set every kind drifts far once the set outgrows its first build many times.
//!
//! # Contract
//!
//! - **No false negatives, ever.** `may_contain(k)` is true for every key `k` inserted (or
//!   given to [`from_sorted`](DynamicSurf::from_sorted)), and `may_contain_range(r)` for
//!   every range holding one, across any number of merges. Proof sketch: call a key
//!   *admitted* by an entry of `S` when it starts with the entry's path and matches its suffix
//!   bits (or the entry is a prefix key equal to it, or is degraded). The SuRF answers yes for
//!   every admitted key, points and ranges (its static proof reads of an entry only its path
//!   and bits, which an admitted key shares with the key the entry was built from). Invariant:
//!   every inserted key is in `D` or admitted by an entry of `S`. A merge keeps it: each old
//!   entry becomes an item whose new leaf admits everything the old one did (the builder can
//!   only cut a prefix shorter, the real bits are re-read from the prefix and the bits
//!   appended to it, the hash bits are carried), and each key of `D` is either admitted by the
//!   old entry whose region it falls in (dropped), or makes that entry degraded and is
//!   admitted by it, or becomes an item of its own.
//! - `approx_count` adds the dynamic stage's exact count in the range to the SuRF's estimate
//!   (which counts entries, so a key dropped at a merge because an entry already admitted it
//!   is not counted again).
//! - [`len`](DynamicSurf::len) counts inserted keys: distinct within the dynamic stage, so a
//!   key inserted twice between merges counts once, but a key inserted again after a merge
//!   took it counts again (telling would need the key the SuRF no longer has).
//! - Errors: [`Error::InvalidConfig`] for a `ratio` or `min_merge` of 0 or invalid suffix bit
//!   counts ([`SurfKind::validate`]); [`Error::KeyTooLong`] for a key over
//!   [`CuckooTrie::MAX_KEY_LEN`] bytes (the filter is unchanged); an error from a merge (out
//!   of memory, [`Error::Capacity`]) leaves the key inserted and the old stages in place, and
//!   the next insert tries the merge again.
//! - `DynamicSurf` is `Send + Sync`. Inserts and merges take `&mut self`; queries take `&self`
//!   and allocate nothing, once a thread's reusable seek path has grown to the trie's height
//!   (during its first range queries).
//! - Not serializable (yet): [`Surf::to_bytes`] writes no degraded marks.

mod merge;

use core::fmt;
use std::time::{Duration, Instant};

use crate::Error;
use crate::KeyRange;
use crate::api::RangeFilter;
use crate::cuckoo_trie::CuckooTrie;
/// When a [`DynamicSurf`] merges: the [hybrid index](crate::hybrid)'s trigger, counting the
/// static stage's SuRF entries. Larger ratios keep the dynamic stage smaller and merge more
/// often, and so drift more (every merge freezes the regions of the keys it takes).
///
/// ```
/// use mlpdex::dynamic_surf::{Config, DynamicSurf};
/// use mlpdex::surf::SurfKind;
///
/// let mut f = DynamicSurf::with_config(SurfKind::Base, Config { ratio: 4, min_merge: 16 })?;
/// for i in 0u64..100 {
///     f.insert(&i.to_be_bytes())?;
/// }
/// assert!(f.stats().merges >= 3);
/// assert!(DynamicSurf::with_config(SurfKind::Base, Config { ratio: 0, min_merge: 1 }).is_err());
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub use crate::hybrid::Config;
use crate::key::{before_end, is_empty_range};
use crate::surf::{Surf, SurfBuilder, SurfKind};

/// What the merges of a [`DynamicSurf`] did so far.
///
/// ```
/// use mlpdex::dynamic_surf::DynamicSurf;
/// use mlpdex::surf::SurfKind;
///
/// let mut f = DynamicSurf::new(SurfKind::Hash(8))?;
/// f.insert(b"a")?;
/// f.insert(b"b")?;
/// f.merge()?;
/// let s = f.stats();
/// assert_eq!((s.merges, s.last_keys, s.entries), (1, 2, 2));
/// assert_eq!(s.degraded, 0);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Merges run.
    pub merges: u64,
    /// Rebuilds from a full key set ([`DynamicSurf::rebuild`]).
    pub rebuilds: u64,
    /// Time spent merging and rebuilding, in all.
    pub total: Duration,
    /// The last merge's time.
    pub last: Duration,
    /// Keys the last merge took from the dynamic stage.
    pub last_keys: usize,
    /// Of those, the keys that became entries of their own (the others were admitted by an
    /// entry already, or made it degraded).
    pub last_kept: usize,
    /// Entries of the static stage now.
    pub entries: usize,
    /// Entries of the static stage that answer as SuRF-Base entries (their suffix bits were
    /// given up when a later key fell under their prefix with other bits); always 0 for
    /// SuRF-Base.
    pub degraded: usize,
}

/// A SuRF that accepts inserts (see the [module docs](self)).
///
/// ```
/// use mlpdex::RangeFilter;
/// use mlpdex::dynamic_surf::DynamicSurf;
/// use mlpdex::surf::SurfKind;
///
/// // Start from a built SuRF and keep inserting.
/// let mut f = DynamicSurf::from_sorted(SurfKind::Real(8), ["apple", "banana", "cherry"])?;
/// f.extend(["date", "elderberry"]);
/// f.merge()?;
/// assert!(f.may_contain(b"date"));
/// assert!(f.may_contain_range("e".."f"));
/// assert!(!f.may_contain_range("x"..));
/// assert_eq!(f.len(), 5);
/// // Generic code sees a range filter.
/// fn probe(f: &impl RangeFilter) -> bool {
///     f.may_contain(b"apple")
/// }
/// assert!(probe(&f));
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone)]
pub struct DynamicSurf {
    dynamic: CuckooTrie<()>,
    stat: Surf,
    config: Config,
    /// Keys counted by earlier merges and by `from_sorted`.
    merged_keys: usize,
    stats: MergeStats,
}

// Queries share the filter between threads; writes need `&mut`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<DynamicSurf>();
};

impl DynamicSurf {
    /// An empty filter of `kind` with the default [`Config`]; [`Error::InvalidConfig`] for
    /// suffix bit counts out of range.
    ///
    /// ```
    /// use mlpdex::dynamic_surf::DynamicSurf;
    /// use mlpdex::surf::SurfKind;
    ///
    /// let mut f = DynamicSurf::new(SurfKind::Mixed { hash: 4, real: 8 })?;
    /// f.insert(b"k")?;
    /// assert!(f.may_contain(b"k"));
    /// assert!(DynamicSurf::new(SurfKind::Hash(0)).is_err());
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn new(kind: SurfKind) -> Result<Self, Error> {
        Self::with_config(kind, Config::default())
    }

    /// An empty filter of `kind` merging as `config` says; [`Error::InvalidConfig`] for a
    /// `ratio` or `min_merge` of 0 or suffix bit counts out of range.
    pub fn with_config(kind: SurfKind, config: Config) -> Result<Self, Error> {
        Self::from_surf(
            Surf::from_sorted(kind, core::iter::empty::<&[u8]>())?,
            config,
        )
    }

    /// A filter whose static stage is built from `keys` (strictly increasing; errors as
    /// [`Surf::from_sorted`]), with the default [`Config`].
    pub fn from_sorted<K: AsRef<[u8]>>(
        kind: SurfKind,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<Self, Error> {
        Self::from_surf(Surf::from_sorted(kind, keys)?, Config::default())
    }

    /// A filter whose static stage is `surf` (built, or loaded with [`Surf::from_bytes`]),
    /// merging as `config` says.
    ///
    /// ```
    /// use mlpdex::dynamic_surf::{Config, DynamicSurf};
    /// use mlpdex::surf::{Surf, SurfKind};
    ///
    /// let image = Surf::from_sorted(SurfKind::Real(8), ["a", "b"])?.to_bytes();
    /// let mut f = DynamicSurf::from_surf(Surf::from_bytes(&image)?, Config::default())?;
    /// f.insert(b"c")?;
    /// assert!(f.may_contain(b"a") && f.may_contain(b"c"));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn from_surf(surf: Surf, config: Config) -> Result<Self, Error> {
        config.validate()?;
        let dynamic = CuckooTrie::with_config(crate::cuckoo_trie::Config::default())?;
        let merged_keys = surf.len();
        let stats = MergeStats {
            entries: surf.len(),
            ..MergeStats::default()
        };
        Ok(DynamicSurf {
            dynamic,
            stat: surf,
            config,
            merged_keys,
            stats,
        })
    }

    /// The kind of suffix bits the static stage keeps.
    pub fn kind(&self) -> SurfKind {
        self.stat.kind()
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// What the merges did so far.
    pub fn stats(&self) -> MergeStats {
        self.stats
    }

    /// Keys inserted (see the module docs: distinct between merges, a key inserted again
    /// after a merge counts again).
    pub fn len(&self) -> usize {
        self.merged_keys + self.dynamic.len()
    }

    /// True when no key was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys in the dynamic stage (inserted since the last merge).
    pub fn dynamic_len(&self) -> usize {
        self.dynamic.len()
    }

    /// Adds `key`; may merge (see the module docs). [`Error::KeyTooLong`] for a key over
    /// [`CuckooTrie::MAX_KEY_LEN`] bytes and out of memory leave the filter unchanged; an
    /// error from a merge leaves the key inserted and the merge to the next insert.
    pub fn insert(&mut self, key: &[u8]) -> Result<(), Error> {
        self.dynamic.insert(key, ())?;
        if self.dynamic.len() >= self.merge_threshold() {
            self.merge()?;
        }
        Ok(())
    }

    /// Inserts every key of `keys`, stopping at the first error (see [`insert`](Self::insert)).
    pub fn try_extend<K: AsRef<[u8]>>(
        &mut self,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), Error> {
        for k in keys {
            self.insert(k.as_ref())?;
        }
        Ok(())
    }

    /// Size of the dynamic stage that triggers a merge.
    fn merge_threshold(&self) -> usize {
        (self.stat.len() / self.config.ratio as usize).max(self.config.min_merge)
    }

    /// Merges the dynamic stage into the static one now (nothing to do when it is empty).
    /// On error both stages stay as they were.
    ///
    /// ```
    /// use mlpdex::dynamic_surf::DynamicSurf;
    /// use mlpdex::surf::SurfKind;
    ///
    /// let mut f = DynamicSurf::new(SurfKind::Base)?;
    /// f.insert(b"k")?;
    /// assert_eq!(f.dynamic_len(), 1);
    /// f.merge()?;
    /// assert_eq!(f.dynamic_len(), 0);
    /// assert!(f.may_contain(b"k"));
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn merge(&mut self) -> Result<(), Error> {
        if self.dynamic.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let merged = merge::merge(&self.stat, self.dynamic.keys())?;
        let taken = self.dynamic.len();
        self.stat = merged.surf;
        self.dynamic.clear();
        self.merged_keys += taken;
        let took = start.elapsed();
        let s = &mut self.stats;
        s.merges += 1;
        s.total += took;
        s.last = took;
        s.last_keys = taken;
        s.last_kept = merged.kept;
        s.entries = self.stat.len();
        s.degraded = self.stat.degraded().map_or(0, |d| d.iter_ones().count());
        debug_assert!(s.degraded >= merged.newly_degraded);
        Ok(())
    }

    /// Replaces the static stage with a SuRF built fresh from `keys` (strictly increasing;
    /// errors as [`Surf::from_sorted`]) and the keys of the dynamic stage, which it empties:
    /// the filter of exactly those keys, as good as a [`Surf`] built over them. This is how to
    /// undo the drift of merges and how deletes reach the filter, whenever the key set is at
    /// hand (a store streams it at a compaction). Keys inserted earlier and missing from
    /// `keys` are no longer promised; every key of `keys` and of the dynamic stage is. On error
    /// nothing changes.
    ///
    /// ```
    /// use mlpdex::dynamic_surf::{Config, DynamicSurf};
    /// use mlpdex::surf::SurfKind;
    ///
    /// let mut f = DynamicSurf::with_config(SurfKind::Real(8), Config { ratio: 10, min_merge: 16 })?;
    /// let keys: Vec<String> = (0..1000).map(|i| format!("key{i:04}")).collect();
    /// for k in &keys {
    ///     f.insert(k.as_bytes())?;
    /// }
    /// f.merge()?;
    /// f.insert(b"late")?; // in the dynamic stage, so kept by the rebuild
    /// // The store deleted the odd keys; rebuild from what it holds now.
    /// f.rebuild(keys.iter().step_by(2))?;
    /// assert!(f.may_contain(b"key0998") && f.may_contain(b"late"));
    /// assert_eq!(f.stats().degraded, 0);
    /// assert_eq!(f.len(), 501);
    /// # Ok::<(), mlpdex::Error>(())
    /// ```
    pub fn rebuild<K: AsRef<[u8]>>(
        &mut self,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let mut b = SurfBuilder::with_dense_ratio(self.kind(), self.stat.dense_ratio())?;
        let mut pending = self.dynamic.keys().peekable();
        let mut count = 0usize;
        for k in keys {
            let k = k.as_ref();
            // The dynamic stage's keys before `k` go first; one equal to `k` goes once.
            while let Some(d) = pending.next_if(|d| *d <= k) {
                if d != k {
                    b.push(d)?;
                    count += 1;
                }
            }
            b.push(k)?;
            count += 1;
        }
        for d in pending {
            b.push(d)?;
            count += 1;
        }
        let surf = b.finish()?;
        self.stat = surf;
        self.dynamic.clear();
        self.merged_keys = count;
        let took = start.elapsed();
        let s = &mut self.stats;
        s.rebuilds += 1;
        s.total += took;
        s.entries = self.stat.len();
        s.degraded = 0;
        Ok(())
    }

    /// False only when `key` was certainly never inserted.
    #[inline]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.dynamic.contains_key(key) || self.stat.may_contain(key)
    }

    /// False only when no key ever inserted lies within `range` (any [`KeyRange`]).
    pub fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return false;
        }
        self.dynamic
            .lower_bound(start)
            .is_some_and(|(k, _)| before_end(k, end))
            || self.stat.may_contain_range((start, end))
    }

    /// About how many keys lie within `range`: the dynamic stage's exact count (it walks
    /// them) plus the SuRF's estimate ([`Surf::approx_count`]).
    pub fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            return 0;
        }
        let dynamic = self.dynamic.range((start, end)).count() as u64;
        dynamic + self.stat.approx_count((start, end))
    }

    /// Bytes of memory owned: the dynamic stage (table and keys), the SuRF (trie, suffix bits,
    /// degraded marks) and the struct.
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() - core::mem::size_of::<CuckooTrie<()>>()
            + self.dynamic.memory_usage()
            + self.stat.memory_usage()
    }

    /// Bits of memory per key counted by [`len`](Self::len).
    pub fn bits_per_key(&self) -> f64 {
        self.memory_usage() as f64 * 8.0 / self.len().max(1) as f64
    }
}

impl RangeFilter for DynamicSurf {
    fn may_contain(&self, key: &[u8]) -> bool {
        DynamicSurf::may_contain(self, key)
    }

    fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        DynamicSurf::may_contain_range(self, range)
    }

    fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        DynamicSurf::approx_count(self, range)
    }

    fn memory_usage(&self) -> usize {
        DynamicSurf::memory_usage(self)
    }
}

impl<K: AsRef<[u8]>> Extend<K> for DynamicSurf {
    /// Inserts every key.
    ///
    /// # Panics
    ///
    /// On the errors [`insert`](DynamicSurf::insert) returns (a key over
    /// [`CuckooTrie::MAX_KEY_LEN`] bytes, out of memory); use
    /// [`try_extend`](DynamicSurf::try_extend) to get them as `Err`.
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            if let Err(e) = self.insert(k.as_ref()) {
                panic!("DynamicSurf::extend: {e}");
            }
        }
    }
}

impl fmt::Debug for DynamicSurf {
    /// A summary: kind, sizes, merges; no keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicSurf")
            .field("kind", &self.kind())
            .field("len", &self.len())
            .field("dynamic_keys", &self.dynamic.len())
            .field("static_entries", &self.stat.len())
            .field("degraded_entries", &self.stats.degraded)
            .field("merges", &self.stats.merges)
            .field("memory_usage", &self.memory_usage())
            .field("config", &self.config)
            .finish()
    }
}
