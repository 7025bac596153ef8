//! The indexes `mlpdex-bench` can measure, by stable kebab-case name.
//!
//! Names are an interface: other tools parse them, so an index keeps its name for life, and
//! configuration variants add a suffix (`cuckoo-trie-d4`). Each entry picks its adapter for the
//! dataset (integer keys for 8-byte datasets, byte keys otherwise) and runs it with
//! [`exec::serve`].
//!
//! `<index>+<scheme>` (`fst+double-char`) is the byte-key index behind a HOPE encoder of that
//! scheme ([`crate::ours::hope`]), for the indexes listed in [`ENCODABLE`].

use anyhow::Result;

use crate::baselines::{
    btree::BTree,
    congee::Art,
    fst::FstMap,
    fst::FstSet,
    hash::Hash,
    hash_tables::{Ch, Ht, Hti},
    scc_tree::SccTree,
    skipmap::Skip,
    sorted_vec::SortedVec,
};
use crate::exec::{self, Driver, Plan};
use crate::names;
use crate::ours::compact_art::CompactArtIndex;
use crate::ours::compact_btree::CompactBTreeIndex;
use crate::ours::concurrent_hybrid::ConcurrentHybridIndex;
use crate::ours::cuckoo_trie::{ConcurrentCuckoo, Cuckoo};
use crate::ours::fst::FstIndex;
use crate::ours::hope::{Encoded, select_scheme, split_name};
use crate::ours::hybrid::HybridIndex;
use crate::ours::mlp_index::{ConcurrentMlp, Mlp};
use crate::ours::pi::{self as pi, PiIndex};
use crate::ours::shortcut_eh::Eh;
use crate::ours::skiplist::Skiplist;

/// How an entry runs: its name, the plan, the driver.
pub type Runner = fn(&str, &Plan, &mut dyn Driver) -> Result<()>;

/// One measurable index.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Stable name.
    pub name: &'static str,
    /// One-line description for `mlpdex-bench list`.
    pub about: &'static str,
    /// A main index, or a configuration variant for a sweep.
    pub kind: Kind,
    /// The keys it takes.
    pub keys: KeyWidth,
    /// Loads the index with the plan's load set and serves the driver's measurements
    /// ([`exec::serve`] for the dataset's key representation).
    pub run: Runner,
}

/// The keys an index takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyWidth {
    /// Byte strings of any length.
    Any,
    /// 8-byte keys only (big-endian integers).
    Eight,
}

impl KeyWidth {
    /// Whether keys of `width` (`None`: of varying length) fit.
    pub fn accepts(self, width: Option<usize>) -> bool {
        self == KeyWidth::Any || width == Some(8)
    }
}

/// The main indexes that take keys of `width` (`None`: of varying length), for the message of
/// a run that measured nothing.
pub fn main_indexes_taking(width: Option<usize>) -> Vec<&'static str> {
    INDEXES
        .iter()
        .filter(|e| !e.is_variant() && e.keys.accepts(width))
        .map(|e| e.name)
        .collect()
}

/// What `all` and `mlpdex-bench list` make of an [`Entry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A main index: measured by `all`, listed under "indexes".
    Main,
    /// A configuration variant (`cuckoo-trie-d4`) for a sweep or a side comparison: measured
    /// only when named, listed under "sweep variants".
    Variant {
        /// The sweep it belongs to, described (`Cuckoo Trie with prefetch depth d`): `list`
        /// shows the variants of one family on one line, as `cuckoo-trie-d{1,2,4}`. `None`: a
        /// variant of its own, listed with its `about`.
        family: Option<&'static str>,
    },
}

impl Entry {
    /// Whether `all` skips it: a configuration variant, measured only when named.
    pub fn is_variant(&self) -> bool {
        matches!(self.kind, Kind::Variant { .. })
    }
}

/// A variant of its own, not one of a family.
const ONE_OFF: Kind = Kind::Variant { family: None };

/// The baselines of shortcut extendible hashing (vm-shortcuts-extendible-hashing.txt §4.2).
const EH_BASELINES: Kind = Kind::Variant {
    family: Some(
        "shortcut-eh's baselines (§4.2), its hash, 8-byte keys: eh (without the shortcut), ht \
         (linear probing, doubled whole), hti (rehashed incrementally), ch (chaining)",
    ),
};

/// The fan-in sweep of shortcut extendible hashing (§3.2).
const EH_FANIN: Kind = Kind::Variant {
    family: Some(
        "extendible hashing from a directory of 2^20 slots, with its shortcut at any fan-in and \
         without (the fan-in sweep, §3.2)",
    ),
};

/// The family of the Cuckoo Trie's prefetch-depth variants.
const CUCKOO_DEPTHS: Kind = Kind::Variant {
    family: Some("Cuckoo Trie with prefetch depth d (the default, cuckoo-trie, has none)"),
};

/// The family of the skip list's prefetch-depth variants.
const SKIPLIST_DEPTHS: Kind = Kind::Variant {
    family: Some("mlpdex lock-free skip list with iterator prefetch depth k"),
};

/// The family of MlpIndex's alternative layouts.
const MLP_LAYOUTS: Kind = Kind::Variant {
    family: Some(
        "mlpdex MlpIndex layouts: bucketized (16-byte entries, 4-entry buckets), the paper's \
         (24-byte slots, two-choice cuckoo)",
    ),
};

/// The family of PI with one optimization switched off (§6.8's breakdown).
const PI_BREAKDOWN: Kind = Kind::Variant {
    family: Some("PI with one of §6.8's optimizations switched off"),
};

fn integer_keys(plan: &Plan) -> bool {
    plan.dataset.keys.fixed_width() == Some(8)
}

/// A Cuckoo Trie with prefetch depth `$d`, for the depth sweep.
macro_rules! cuckoo_variant {
    ($name:literal, $d:literal) => {
        Entry {
            name: $name,
            about: concat!("Cuckoo Trie with prefetch depth ", $d),
            kind: CUCKOO_DEPTHS,
            keys: KeyWidth::Any,
            run: exec::serve::<Cuckoo<$d>>,
        }
    };
}

/// The skip list with prefetch depth `$k`, for the depth sweep.
macro_rules! skiplist_variant {
    ($name:literal, $k:literal) => {
        Entry {
            name: $name,
            about: concat!("mlpdex lock-free skip list, iterator prefetch depth ", $k),
            kind: SKIPLIST_DEPTHS,
            keys: KeyWidth::Any,
            run: exec::serve::<Skiplist<$k>>,
        }
    };
}

/// Every registered index, baselines first.
pub const INDEXES: &[Entry] = &[
    Entry {
        name: "btreemap",
        about: "std BTreeMap (u64 keys on 8-byte datasets, Box<[u8]> otherwise)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: |name, plan, driver| {
            if integer_keys(plan) {
                exec::serve::<BTree<u64>>(name, plan, driver)
            } else {
                exec::serve::<BTree<Box<[u8]>>>(name, plan, driver)
            }
        },
    },
    Entry {
        name: "skipmap",
        about: "crossbeam-skiplist SkipMap, lock-free, concurrent",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: |name, plan, driver| {
            if integer_keys(plan) {
                exec::serve::<Skip<u64>>(name, plan, driver)
            } else {
                exec::serve::<Skip<Box<[u8]>>>(name, plan, driver)
            }
        },
    },
    Entry {
        name: "congee",
        about: "congee concurrent ART with optimistic lock coupling (8-byte keys only)",
        kind: Kind::Main,
        keys: KeyWidth::Eight,
        run: exec::serve::<Art>,
    },
    Entry {
        name: "scc-tree",
        about: "scc TreeIndex, concurrent B+-tree with lock-free reads",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: |name, plan, driver| {
            if integer_keys(plan) {
                exec::serve::<SccTree<u64>>(name, plan, driver)
            } else {
                exec::serve::<SccTree<Box<[u8]>>>(name, plan, driver)
            }
        },
    },
    Entry {
        name: "hashmap",
        about: "hashbrown HashMap (point operations only)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: |name, plan, driver| {
            if integer_keys(plan) {
                exec::serve::<Hash<u64>>(name, plan, driver)
            } else {
                exec::serve::<Hash<Box<[u8]>>>(name, plan, driver)
            }
        },
    },
    Entry {
        name: "sorted-vec",
        about: "static sorted array with binary search (built once)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<SortedVec>,
    },
    Entry {
        name: "fst-crate",
        about: "the fst crate's static Map (built once)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<FstMap>,
    },
    Entry {
        name: "fst-crate-set",
        about: "the fst crate's static Set (keys only: its size is the structure without values)",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<FstSet>,
    },
    Entry {
        name: "fst",
        about: "mlpdex Fast Succinct Trie (memory-efficient-search-trees.txt ch. 3), complete keys",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<FstIndex>,
    },
    Entry {
        name: "fst-plain",
        about: "mlpdex FST with its suffixes stored byte for byte (no suffix coding)",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<FstIndex<true>>,
    },
    Entry {
        name: "compact-btree",
        about: "mlpdex compact B-tree (memory-efficient-search-trees.txt ch. 2), built once",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<CompactBTreeIndex>,
    },
    Entry {
        name: "compact-art",
        about: "mlpdex compact ART (memory-efficient-search-trees.txt ch. 2), built once",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<CompactArtIndex>,
    },
    Entry {
        name: "hybrid-cuckoo-trie-compact-art",
        about: "mlpdex hybrid index (memory-efficient-search-trees.txt ch. 5): Cuckoo Trie + compact ART, ratio 10",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<HybridIndex<mlpdex::compact_art::CompactArt>>,
    },
    Entry {
        name: "hybrid-cuckoo-trie-concurrent-compact-art",
        about: "mlpdex ConcurrentHybrid: concurrent Cuckoo Trie + compact ART, ratio 10, merges on their own thread; runs start with no merge under way",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<ConcurrentHybridIndex<mlpdex::compact_art::CompactArt, false>>,
    },
    Entry {
        name: "hybrid-cuckoo-trie-concurrent-compact-art-merging",
        about: "the same, every run measured while a merge driver keeps a merge under way (re-inserting 1,024 stored entries and merging, again and again)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<ConcurrentHybridIndex<mlpdex::compact_art::CompactArt, true>>,
    },
    Entry {
        name: "hybrid-cuckoo-trie-compact-btree",
        about: "mlpdex hybrid index: Cuckoo Trie + compact B-tree, ratio 10",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<HybridIndex<mlpdex::compact_btree::CompactBTree>>,
    },
    Entry {
        name: "hybrid-cuckoo-trie-fst",
        about: "mlpdex hybrid index: Cuckoo Trie + FST, ratio 10",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<HybridIndex<mlpdex::fst::Fst>>,
    },
    Entry {
        name: "cuckoo-trie",
        about: "mlpdex Cuckoo Trie (cuckoo-trie.txt), default configuration",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<Cuckoo<0>>,
    },
    Entry {
        name: "mlp-index-bytes",
        about: "mlpdex MlpIndexBytes: sorted leaves under a table of anchor prefixes probed many lengths at once",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<crate::ours::mlp_index_bytes::MlpBytes>,
    },
    Entry {
        name: "cuckoo-trie-keyed",
        about: "the same with its key index (Config::key_index): point lookups probe a hash of the whole key",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<Cuckoo<0, true>>,
    },
    Entry {
        name: "cuckoo-trie-concurrent",
        about: "mlpdex Cuckoo Trie for many threads (cuckoo-trie.txt §5), default configuration",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<ConcurrentCuckoo<false>>,
    },
    Entry {
        name: "cuckoo-trie-concurrent-growing",
        about: "the same, every run measured while a resize driver doubles the table and shrinks it back, again and again",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<ConcurrentCuckoo<true>>,
    },
    Entry {
        name: "cuckoo-trie-concurrent-keyed",
        about: "the concurrent map with its key index (Config::key_index): point lookups probe a hash of the whole key",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<ConcurrentCuckoo<false, true>>,
    },
    Entry {
        name: "mlp-index",
        about: "mlpdex MlpIndex (mlp-data-structures.txt §4), 8-byte keys, default layout",
        kind: Kind::Main,
        keys: KeyWidth::Eight,
        run: exec::serve::<Mlp<0>>,
    },
    Entry {
        name: "mlp-index-concurrent",
        about: "mlpdex MlpIndex for many threads: lock-free lookups, writers taking turns; 8-byte keys",
        kind: ONE_OFF,
        keys: KeyWidth::Eight,
        run: exec::serve::<ConcurrentMlp<false>>,
    },
    Entry {
        name: "mlp-index-concurrent-growing",
        about: "the same, every run measured while a resize driver doubles the table and shrinks it back, again and again",
        kind: ONE_OFF,
        keys: KeyWidth::Eight,
        run: exec::serve::<ConcurrentMlp<true>>,
    },
    Entry {
        name: "mlp-index-bytes-concurrent",
        about: "mlpdex MlpIndexBytes for many threads: copy-on-write leaves, readers in sections, writers taking turns",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<crate::ours::mlp_index_bytes::MlpBytesConcurrent>,
    },
    Entry {
        name: "shortcut-eh",
        about: "mlpdex shortcut extendible hashing (vm-shortcuts-extendible-hashing.txt), 8-byte keys, point operations",
        kind: Kind::Main,
        keys: KeyWidth::Eight,
        run: exec::serve::<Eh<true>>,
    },
    Entry {
        name: "eh",
        about: "classic extendible hashing: shortcut-eh without its shortcut (the traditional directory only)",
        kind: EH_BASELINES,
        keys: KeyWidth::Eight,
        run: exec::serve::<Eh<false>>,
    },
    Entry {
        name: "shortcut-eh-d20",
        about: "shortcut-eh from a directory of 2^20 slots, its shortcut taken at any fan-in (the fan-in sweep, §3.2)",
        kind: EH_FANIN,
        keys: KeyWidth::Eight,
        run: exec::serve::<Eh<true, 20>>,
    },
    Entry {
        name: "eh-d20",
        about: "eh from a directory of 2^20 slots (the fan-in sweep, §3.2)",
        kind: EH_FANIN,
        keys: KeyWidth::Eight,
        run: exec::serve::<Eh<false, 20>>,
    },
    Entry {
        name: "ht",
        about: "hash table, linear probing, doubled and rehashed whole (shortcut-eh's hash; 8-byte keys)",
        kind: EH_BASELINES,
        keys: KeyWidth::Eight,
        run: exec::serve::<Ht>,
    },
    Entry {
        name: "hti",
        about: "hash table, linear probing, rehashed incrementally as Redis' dict (shortcut-eh's hash; 8-byte keys)",
        kind: EH_BASELINES,
        keys: KeyWidth::Eight,
        run: exec::serve::<Hti>,
    },
    Entry {
        name: "ch",
        about: "chained hash table sized up front, 128-byte chunks (shortcut-eh's hash; 8-byte keys)",
        kind: EH_BASELINES,
        keys: KeyWidth::Eight,
        run: exec::serve::<Ch>,
    },
    Entry {
        name: "mlp-index-bucketized",
        about: "mlpdex MlpIndex, bucketized layout (16-byte entries, 4-entry buckets)",
        kind: MLP_LAYOUTS,
        keys: KeyWidth::Eight,
        run: exec::serve::<Mlp<1>>,
    },
    Entry {
        name: "mlp-index-paper",
        about: "mlpdex MlpIndex, the paper's layout (24-byte slots, two-choice cuckoo)",
        kind: MLP_LAYOUTS,
        keys: KeyWidth::Eight,
        run: exec::serve::<Mlp<2>>,
    },
    Entry {
        name: "skiplist",
        about: "mlpdex lock-free skip list (mlp-data-structures.txt §3), prefetching iterator",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<Skiplist<{ usize::MAX }>>,
    },
    Entry {
        name: "pi",
        about: "mlpdex PI (pi-parallel-skiplist.txt): batches on a pool of --threads workers, SIMD index layer (u64 keys on 8-byte datasets, byte strings on others; give --batch)",
        kind: Kind::Main,
        keys: KeyWidth::Any,
        run: exec::serve::<PiIndex>,
    },
    Entry {
        name: "pi-no-simd",
        about: "PI with scalar compares in the index layer (§6.8 breakdown)",
        kind: PI_BREAKDOWN,
        keys: KeyWidth::Eight,
        run: exec::serve::<PiIndex<{ pi::NO_SIMD }>>,
    },
    Entry {
        name: "pi-no-group",
        about: "PI walking the index one query at a time (§6.8 breakdown)",
        kind: PI_BREAKDOWN,
        keys: KeyWidth::Eight,
        run: exec::serve::<PiIndex<{ pi::NO_GROUP }>>,
    },
    Entry {
        name: "pi-no-prefetch",
        about: "PI without prefetching in its group walks (§6.8 breakdown)",
        kind: PI_BREAKDOWN,
        keys: KeyWidth::Eight,
        run: exec::serve::<PiIndex<{ pi::NO_PREFETCH }>>,
    },
    Entry {
        name: "skiplist-plain",
        about: "mlpdex lock-free skip list with the plain iterator (prefetch depth 0)",
        // The prefetch sweep's depth 0: the scans and skip list suites name it.
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run: exec::serve::<Skiplist<0>>,
    },
    skiplist_variant!("skiplist-k1", 1),
    skiplist_variant!("skiplist-k2", 2),
    skiplist_variant!("skiplist-k3", 3),
    skiplist_variant!("skiplist-k4", 4),
    skiplist_variant!("skiplist-k5", 5),
    skiplist_variant!("skiplist-k6", 6),
    cuckoo_variant!("cuckoo-trie-d1", 1),
    cuckoo_variant!("cuckoo-trie-d2", 2),
    cuckoo_variant!("cuckoo-trie-d3", 3),
    cuckoo_variant!("cuckoo-trie-d4", 4),
    cuckoo_variant!("cuckoo-trie-d5", 5),
    cuckoo_variant!("cuckoo-trie-d6", 6),
    cuckoo_variant!("cuckoo-trie-d8", 8),
    cuckoo_variant!("cuckoo-trie-d10", 10),
];

/// A runner for `<index>+<scheme>`: selects the scheme from the name, then serves the encoded
/// byte-key adapter.
macro_rules! encoded {
    ($adapter:ty) => {
        (|name: &str, plan: &Plan, driver: &mut dyn Driver| {
            select_scheme(name)?;
            exec::serve::<Encoded<$adapter>>(name, plan, driver)
        }) as Runner
    };
}

/// The indexes that can run behind a HOPE encoder (`<index>+<scheme>`), with the runner of
/// their byte-key adapter (encoded keys have any length, so never the integer one).
pub const ENCODABLE: &[(&str, Runner)] = &[
    ("btreemap", encoded!(BTree<Box<[u8]>>)),
    ("skipmap", encoded!(Skip<Box<[u8]>>)),
    ("hashmap", encoded!(Hash<Box<[u8]>>)),
    ("sorted-vec", encoded!(SortedVec)),
    ("fst-crate", encoded!(FstMap)),
    ("fst", encoded!(FstIndex)),
    ("compact-btree", encoded!(CompactBTreeIndex)),
    ("compact-art", encoded!(CompactArtIndex)),
    ("cuckoo-trie", encoded!(Cuckoo<0>)),
    ("cuckoo-trie-concurrent", encoded!(ConcurrentCuckoo<false>)),
    ("skiplist", encoded!(Skiplist<{ usize::MAX }>)),
];

/// The entry of `<index>+<scheme>`, or `None` when `name` is not one.
fn encoded_entry(name: &str) -> Option<Entry> {
    let (base, scheme) = split_name(name)?;
    let &(_, run) = ENCODABLE.iter().find(|(b, _)| *b == base)?;
    // Names are built once per process from the command line.
    let name: &'static str = Box::leak(format!("{base}+{}", scheme.name()).into_boxed_str());
    Some(Entry {
        name,
        about: "an mlpdex-bench index behind a HOPE encoder",
        kind: ONE_OFF,
        keys: KeyWidth::Any,
        run,
    })
}

/// Applies `--encoder` to an index list: each index in [`ENCODABLE`] is listed once per
/// encoder (`none` keeps it plain, a scheme name makes `<index>+<scheme>`); other indexes stay
/// plain, listed once.
pub fn with_encoders(list: &str, encoders: &str) -> Result<String, String> {
    let entries = resolve(list)?;
    let encoders: Vec<&str> = encoders
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    for e in &encoders {
        if *e != "none" && mlpdex::hope::Scheme::from_name(e).is_none() {
            let mut known = scheme_names();
            known.push("none");
            let suggestion = names::suggest(e, &known);
            return Err(names::unknown("encoder", e, suggestion.as_deref()));
        }
    }
    let mut out: Vec<String> = Vec::new();
    for entry in entries {
        let encodable = ENCODABLE.iter().any(|(b, _)| *b == entry.name);
        if !encodable {
            out.push(entry.name.to_string());
            continue;
        }
        for e in &encoders {
            out.push(if *e == "none" {
                entry.name.to_string()
            } else {
                format!("{}+{e}", entry.name)
            });
        }
    }
    out.dedup();
    Ok(out.join(","))
}

/// Resolves a comma-separated list of names (or `all`) to entries, in the order given.
pub fn resolve(list: &str) -> Result<Vec<Entry>, String> {
    if list.trim() == "all" {
        return Ok(INDEXES
            .iter()
            .copied()
            .filter(|e| !e.is_variant())
            .collect());
    }
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            INDEXES
                .iter()
                .copied()
                .find(|e| e.name == name)
                .or_else(|| encoded_entry(name))
                .ok_or_else(|| unknown_index(name))
        })
        .collect()
}

/// The variants as `mlpdex-bench list` shows them, in registry order: one row per family, its
/// names in brace form (`cuckoo-trie-d{1,2,4}`) with the family's description, and one row per
/// variant of its own (or alone in its family) with its `about`.
pub fn variant_rows() -> Vec<(String, &'static str)> {
    // (family, members), in order of first appearance.
    let mut groups: Vec<(Option<&'static str>, Vec<&Entry>)> = Vec::new();
    for e in INDEXES {
        let Kind::Variant { family } = e.kind else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|(f, _)| family.is_some() && *f == family)
        {
            Some((_, members)) => members.push(e),
            None => groups.push((family, vec![e])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(family, members)| {
            let first = members.first()?;
            Some(match family {
                Some(about) if members.len() > 1 => {
                    let names: Vec<&str> = members.iter().map(|e| e.name).collect();
                    (brace(&names), about)
                }
                _ => (first.name.to_owned(), first.about),
            })
        })
        .collect()
}

/// Names with a common start, written once: `["ab-1", "ab-2"]` is `ab-{1,2}`. The start ends
/// between words or numbers, never inside one. One name stays as it is.
fn brace(names: &[&str]) -> String {
    let Some((first, rest)) = names.split_first() else {
        return String::new();
    };
    if rest.is_empty() {
        return (*first).to_owned();
    }
    let mut common = rest.iter().fold(first.len(), |len, n| {
        len.min(
            first
                .bytes()
                .zip(n.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    // Cut between words and numbers, not inside one: `d{1,10}`, not `d1{,0}`.
    let class = |b: u8| {
        if b.is_ascii_digit() {
            1
        } else if b.is_ascii_alphabetic() {
            2
        } else {
            0
        }
    };
    while common > 0 {
        let before = class(first.as_bytes()[common - 1]);
        let inside = before != 0
            && names.iter().any(|n| {
                n.as_bytes()
                    .get(common)
                    .is_some_and(|&b| class(b) == before)
            });
        if !inside {
            break;
        }
        common -= 1;
    }
    while !first.is_char_boundary(common) {
        common -= 1;
    }
    let tails: Vec<&str> = names.iter().map(|n| &n[common..]).collect();
    format!("{}{{{}}}", &first[..common], tails.join(","))
}

/// The names of the HOPE schemes.
fn scheme_names() -> Vec<&'static str> {
    mlpdex::hope::Scheme::ALL.iter().map(|s| s.name()).collect()
}

/// The error for an index name that [`resolve`] does not know, with the closest known name.
/// `<index>+<scheme>` is corrected part by part (`fts+dobule-char` suggests `fst+double-char`).
fn unknown_index(name: &str) -> String {
    let suggestion = match name.split_once('+') {
        Some((base, scheme)) => {
            let bases: Vec<&str> = ENCODABLE.iter().map(|(b, _)| *b).collect();
            if !bases.contains(&base) && INDEXES.iter().any(|e| e.name == base) {
                return format!(
                    "index {base:?} cannot run behind a HOPE encoder; these can: {}",
                    bases.join(", ")
                );
            }
            let fix = |part: &str, known: &[&str]| {
                if known.contains(&part) {
                    Some(part.to_owned())
                } else {
                    names::suggest(part, known)
                }
            };
            fix(base, &bases)
                .zip(fix(scheme, &scheme_names()))
                .map(|(b, s)| format!("{b}+{s}"))
        }
        None => {
            let mut known: Vec<&str> = INDEXES.iter().map(|e| e.name).collect();
            known.push("all");
            names::suggest(name, &known)
        }
    };
    names::unknown("index", name, suggestion.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for e in INDEXES {
            assert!(seen.insert(e.name), "duplicate {}", e.name);
            assert!(
                e.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
        }
    }

    #[test]
    fn resolve_lists_and_rejects() {
        let all = resolve("all").unwrap();
        assert_eq!(
            all.len(),
            INDEXES.iter().filter(|e| !e.is_variant()).count()
        );
        assert!(all.iter().any(|e| e.name == "cuckoo-trie"));
        assert!(all.iter().all(|e| e.kind == Kind::Main));
        let variant = resolve("cuckoo-trie-d4").unwrap();
        assert!(variant[0].is_variant());
        let two = resolve("congee, btreemap").unwrap();
        assert_eq!(
            two.iter().map(|e| e.name).collect::<Vec<_>>(),
            ["congee", "btreemap"]
        );
        let enc = resolve("fst+double-char,cuckoo-trie+3-grams").unwrap();
        assert_eq!(enc[0].name, "fst+double-char");
        assert!(enc[1].is_variant());
        assert!(resolve("fst+nope").is_err());
        assert!(resolve("mlp-index+double-char").is_err());
        assert_eq!(
            with_encoders("fst,mlp-index", "none,double-char").unwrap(),
            "fst,fst+double-char,mlp-index"
        );
        assert!(with_encoders("fst", "zip").is_err());
        let err = resolve("btreemap,nope").unwrap_err();
        assert_eq!(err, r#"unknown index "nope" (mlpdex-bench list shows all)"#);
    }

    #[test]
    fn variants_are_listed_by_family() {
        assert_eq!(
            brace(&["cuckoo-trie-d1", "cuckoo-trie-d10"]),
            "cuckoo-trie-d{1,10}"
        );
        assert_eq!(
            brace(&["mlp-index-bucketized", "mlp-index-paper"]),
            "mlp-index-{bucketized,paper}"
        );
        assert_eq!(brace(&["fst"]), "fst");
        assert_eq!(brace(&["x", "y"]), "{x,y}");
        assert_eq!(brace(&["k-page", "k-pair"]), "k-{page,pair}");
        assert_eq!(brace(&["k-12", "k-13", "k-1"]), "k-{12,13,1}");
        assert_eq!(brace(&[]), "");
        let rows = variant_rows();
        let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "fst-crate-set",
                "fst-plain",
                "cuckoo-trie-keyed",
                "cuckoo-trie-concurrent",
                "cuckoo-trie-concurrent-growing",
                "cuckoo-trie-concurrent-keyed",
                "mlp-index-concurrent",
                "mlp-index-concurrent-growing",
                "mlp-index-bytes-concurrent",
                "{eh,ht,hti,ch}",
                "{shortcut-eh-d20,eh-d20}",
                "mlp-index-{bucketized,paper}",
                "pi-no-{simd,group,prefetch}",
                "skiplist-plain",
                "skiplist-k{1,2,3,4,5,6}",
                "cuckoo-trie-d{1,2,3,4,5,6,8,10}",
            ]
        );
        // Every variant is on exactly one row, and no main index is.
        for e in INDEXES {
            let rows_with = labels
                .iter()
                .filter(|l| {
                    **l == e.name
                        || l.split_once('{').is_some_and(|(head, tails)| {
                            tails
                                .trim_end_matches('}')
                                .split(',')
                                .any(|t| format!("{head}{t}") == e.name)
                        })
                })
                .count();
            assert_eq!(rows_with, usize::from(e.is_variant()), "{}", e.name);
        }
    }

    #[test]
    fn typos_get_a_suggestion() {
        let did_you_mean = |list: &str| {
            let e = resolve(list).unwrap_err();
            let (_, rest) = e
                .split_once("did you mean \"")
                .unwrap_or_else(|| panic!("{e}"));
            rest.split_once('"').unwrap().0.to_owned()
        };
        assert_eq!(
            resolve("cukoo-trie").unwrap_err(),
            r#"unknown index "cukoo-trie"; did you mean "cuckoo-trie"? (mlpdex-bench list shows all)"#
        );
        assert_eq!(did_you_mean("btreemap,skiplsit"), "skiplist");
        assert_eq!(did_you_mean("cuckoo-trie-4"), "cuckoo-trie-d4");
        assert_eq!(did_you_mean("mlp-index-papr"), "mlp-index-paper");
        assert_eq!(did_you_mean("al"), "all");
        // <index>+<scheme>: each part corrected, a correct part kept.
        assert_eq!(did_you_mean("fts+dobule-char"), "fst+double-char");
        assert_eq!(did_you_mean("fst+3grams"), "fst+3-grams");
        assert_eq!(did_you_mean("skiplst+alm"), "skiplist+alm");
        assert!(!resolve("fst+banana").unwrap_err().contains("did you mean"));
        let e = resolve("mlp-index+alm").unwrap_err();
        assert!(
            e.contains("cannot run behind a HOPE encoder") && e.contains("fst"),
            "{e}"
        );
        let e = with_encoders("fst", "dobule-char").unwrap_err();
        assert!(
            e.contains(r#"unknown encoder "dobule-char"; did you mean "double-char"?"#),
            "{e}"
        );
        assert!(
            with_encoders("fst", "non")
                .unwrap_err()
                .contains(r#""none""#)
        );
    }
}
