//! Datasets: the keys a benchmark loads, and reserve keys of the same distribution to insert or
//! to miss with.
//!
//! Generated datasets follow the papers the harness reproduces:
//!
//! - `rand-8`, `rand-16`: uniform random 8- and 16-byte keys, the Cuckoo Trie's worst case for
//!   tries and best case for hashing (Cuckoo Trie paper §4, Table 1).
//! - `mono-8`: consecutive integers as 8-byte big-endian keys, loaded in increasing order: the
//!   "monotonically increasing integers" of memory-efficient-search-trees.txt §2.5 and §5.3, an
//!   append-only primary key. Its reserve continues the sequence, so inserts keep appending.
//! - `dec-a`, `dec-b`: the "decimal distributions" A and B of the MLP-data-structures paper (§4.4):
//!   8-byte keys drawn byte by byte, each byte from a small candidate set for its position, so
//!   the trie has both high- and low-fanout levels and path compression cannot flatten it.
//! - `email`: host-reversed e-mail addresses (`com.gmail@john.smith82`), a skewed text key set
//!   with shared prefixes of varying length.
//! - `az`: Amazon-review-like tuples `item,user,time` (Cuckoo Trie Table 1, `az`: 35.7 bytes on
//!   average, 138 bits of unique prefix): popular items make many keys share a long prefix, the
//!   Cuckoo Trie's worst case (its §4.7).
//!
//! Long keys (issue 23), whose sorted neighbours share long prefixes (generators in
//! `long_keys.rs`; shapes measured at 1M keys, seed 42, by `list --stats`; at 10M keys the
//! lengths stay and the shared prefixes grow by 2–5 bytes):
//!
//! - `paths`: file-system paths (`/home/alice/src/proj/lib/util/strings.rs`) of 3–15
//!   components: a directory tree grown by preferential attachment (skewed fan-out) at depths
//!   from a fixed table (so the length does not depend on the key count), files put in
//!   directories by Zipf weight (a few huge directories, many small ones), realistic names and
//!   extensions. Mean length 61.9 bytes, mean prefix shared with the sorted neighbour 50.4
//!   (a real file-path sample had 64 and 52).
//! - `urls`: host-reversed URLs with paths and queries
//!   (`com.example.www/products/shoes/item?id=83621&ref=home`): skewed hosts, each with its own
//!   few sections, 1–6 path segments, a query string on 40%. Mean length 70.3 bytes, mean
//!   shared prefix 23.3.
//! - `composite`: binary keys of a multi-tenant secondary index, the tuple (tenant, table,
//!   string column, primary key) encoded so byte order is tuple order: 4-byte big-endian
//!   tenant id (Zipf over 300 tenants), 4-byte big-endian table id (a few per tenant), a 5–30
//!   byte string and a 0x00 terminator, 8-byte big-endian primary key. Contains 0x00 bytes by
//!   design. Mean length 29.4 bytes, mean shared prefix 15.0.
//!
//! `mlpdex-bench list --stats [--keys N] [--seed S]` loads every generated dataset and prints
//! its [`stats`]: mean length, mean prefix shared with the sorted neighbour, and the distinct
//! prefixes at depths 1 to 64 bytes.
//!
//! File datasets read real key sets: `u64:PATH` (the SOSD binary layout) and `lines:PATH` (one key
//! per line). As in the Cuckoo Trie paper, every dataset is deduplicated and in random order,
//! `mono-8` excepted.
//!
//! A [`Dataset`] has a load set, `keys`, and a `reserve` of more distinct keys none of which is in
//! the load set. Workloads (see [`crate::workload`]) insert from the reserve's first half and
//! look up absent keys from its second half. Everything is deterministic from the seed.

use std::hash::{BuildHasherDefault, Hasher};

use anyhow::{Context, Result, bail, ensure};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::keys::Keys;
use crate::random::{Zipf, below, hash_bytes, hash_u64, shuffle, unit_f64};

mod long_keys;

use long_keys::{CompositeGen, PathGen, UrlGen};

/// A key set to benchmark on.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The spec as given, e.g. `rand-8` or `u64:/data/x`.
    pub name: String,
    /// The load set: distinct keys in random order.
    pub keys: Keys,
    /// More distinct keys of the same distribution, none of them in `keys`, for inserts and
    /// absent-key queries.
    pub reserve: Keys,
}

impl Dataset {
    /// Raw bytes per key-value pair: mean key length plus an 8-byte (u64) value. Index memory
    /// above this is overhead.
    pub fn raw_bytes_per_key(&self) -> f64 {
        self.keys.mean_len() + 8.0
    }
}

/// Every dataset name or pattern with a one-line description, for `mlpdex-bench list`.
pub const DATASETS: &[(&str, &str)] = &[
    (
        "rand-8",
        "uniform random u64 as 8-byte big-endian keys (Cuckoo Trie rand-8)",
    ),
    ("rand-16", "16 uniform random bytes (Cuckoo Trie rand-16)"),
    (
        "mono-8",
        "consecutive u64 as 8-byte keys, in increasing order (monotonic primary keys)",
    ),
    (
        "dec-a",
        "8 bytes; 6 candidates for each of bytes 0..6, 100 for bytes 6..8 (MLP paper §4.4, A)",
    ),
    (
        "dec-b",
        "8 bytes; 100 candidates for each of bytes 0..2, 6 for bytes 2..8 (MLP paper §4.4, B)",
    ),
    (
        "email",
        "host-reversed e-mail addresses like com.gmail@john.smith82, skewed hosts, ~25 bytes",
    ),
    (
        "az",
        "Amazon-review-like item,user,time tuples, 36 bytes, Zipf-popular items (Cuckoo Trie az)",
    ),
    (
        "paths",
        "file-system paths like /home/alice/src/proj/util/strings.rs, skewed directories, ~60 bytes",
    ),
    (
        "urls",
        "host-reversed URLs like com.example.www/shop/item?id=83621, skewed hosts, ~70 bytes",
    ),
    (
        "composite",
        "binary tuples: u32 tenant, u32 table, 0x00-terminated string, u64 key; ~30 bytes",
    ),
    (
        "u64:PATH",
        "SOSD binary file: little-endian u64 count, then the little-endian u64 keys",
    ),
    (
        "lines:PATH",
        "text file with one key per line (\\n or \\r\\n; an empty line is the empty key)",
    ),
];

/// Loads dataset `spec` with a load set of `n` keys (file datasets: at most `n`), deterministic
/// from `seed`.
///
/// Generated datasets get a reserve of `max(n / 4, 1000)` keys. A file with `m > n` distinct keys
/// gives `n` load keys and the other `m - n` as reserve; with `m <= n` it is split 80/20, with a
/// warning on stderr.
pub fn load(spec: &str, n: usize, seed: u64) -> Result<Dataset> {
    ensure!(
        n > 0,
        "dataset {spec}: the load set needs at least one key (n = 0)"
    );
    let (keys, reserve) = if let Some(path) = spec.strip_prefix("u64:") {
        ensure!(
            !path.is_empty(),
            "dataset `{spec}`: missing file path after `u64:`"
        );
        load_sosd(spec, path, n, seed)?
    } else if let Some(path) = spec.strip_prefix("lines:") {
        ensure!(
            !path.is_empty(),
            "dataset `{spec}`: missing file path after `lines:`"
        );
        load_lines(spec, path, n, seed)?
    } else {
        let reserve = (n / 4).max(1000);
        match spec {
            "rand-8" => generate(spec, n, reserve, seed, 8, |rng, buf| {
                buf.extend_from_slice(&rng.next_u64().to_be_bytes())
            })?,
            "mono-8" => monotonic(n, reserve, seed),
            "rand-16" => generate(spec, n, reserve, seed, 16, |rng, buf| {
                buf.extend_from_slice(&rng.next_u64().to_be_bytes());
                buf.extend_from_slice(&rng.next_u64().to_be_bytes());
            })?,
            "dec-a" | "dec-b" => {
                let wide_first = spec == "dec-b";
                check_decimal_size(spec, n, reserve)?;
                let candidates = decimal_candidates(seed, wide_first);
                generate(spec, n, reserve, seed, 8, |rng, buf| {
                    for set in &candidates {
                        buf.push(set[below(rng, set.len() as u64) as usize]);
                    }
                })?
            }
            "email" => {
                let emails = EmailGen::new(seed);
                generate(spec, n, reserve, seed, 26, |rng, buf| emails.make(rng, buf))?
            }
            "az" => {
                let az = AzGen::new(seed, n + reserve);
                generate(spec, n, reserve, seed, AZ_LEN, |rng, buf| az.make(rng, buf))?
            }
            "paths" => {
                let paths = PathGen::new(seed, n + reserve);
                generate(spec, n, reserve, seed, 68, |rng, buf| paths.make(rng, buf))?
            }
            "urls" => {
                let urls = UrlGen::new(seed);
                generate(spec, n, reserve, seed, 76, |rng, buf| urls.make(rng, buf))?
            }
            "composite" => {
                let composite = CompositeGen::new(seed, n + reserve);
                generate(spec, n, reserve, seed, 32, |rng, buf| {
                    composite.make(rng, buf)
                })?
            }
            _ => {
                let names: Vec<&str> = DATASETS.iter().map(|(name, _)| *name).collect();
                let suggestion = crate::names::suggest(spec, &names);
                bail!(crate::names::unknown(
                    "dataset",
                    spec,
                    suggestion.as_deref()
                ));
            }
        }
    };
    Ok(Dataset {
        name: spec.to_string(),
        keys,
        reserve,
    })
}

/// The generated datasets' names: every [`DATASETS`] entry but the file patterns.
pub fn generated() -> impl Iterator<Item = &'static str> {
    DATASETS
        .iter()
        .map(|&(name, _)| name)
        .filter(|name| !name.contains(':'))
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// Prefix lengths at which [`KeyStats`] counts distinct prefixes.
pub const PREFIX_DEPTHS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The shape of a key set, as `mlpdex-bench list --stats` prints it: how long the keys are,
/// how much of each one its sorted neighbour shares (what path compression and a trie's
/// upper levels can save), and how many distinct prefixes each depth of a byte-wise trie
/// holds (its width at that depth).
///
/// ```
/// use mlpdex_bench::dataset::stats;
/// use mlpdex_bench::keys::Keys;
///
/// let mut keys = Keys::new();
/// for k in ["a/x", "a/b/d", "a/b/c"] {
///     keys.push(k.as_bytes());
/// }
/// let s = stats(&keys);
/// assert_eq!(s.mean_len, 13.0 / 3.0);
/// // Sorted: a/b/c, a/b/d (4 bytes shared), a/x (2 shared with a/b/d).
/// assert_eq!(s.mean_shared_prefix, 3.0);
/// // One distinct 1-byte prefix ("a"), two 4-byte ones ("a/b/", and "a/x", shorter).
/// assert_eq!((s.distinct_prefixes[0], s.distinct_prefixes[2]), (1, 2));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct KeyStats {
    /// Keys measured.
    pub keys: usize,
    /// Mean key length in bytes.
    pub mean_len: f64,
    /// Mean length in bytes of the common prefix of each key and the next in sorted order,
    /// over the `keys - 1` adjacent pairs (0 for fewer than two keys).
    pub mean_shared_prefix: f64,
    /// `distinct_prefixes[i]`: distinct prefixes of `PREFIX_DEPTHS[i]` bytes; a key shorter
    /// than that counts as itself.
    pub distinct_prefixes: [usize; PREFIX_DEPTHS.len()],
}

/// Measures `keys`: sorts references to them (16 bytes a key, the keys are not copied), then
/// one pass over adjacent pairs.
///
/// Sorted, the truncations of the keys to `d` bytes are sorted too, so equal truncations are
/// adjacent and the distinct ones are one plus the adjacent pairs whose truncations differ:
/// those of different truncated lengths, or sharing less than the truncated length.
pub fn stats(keys: &Keys) -> KeyStats {
    let mut sorted: Vec<&[u8]> = keys.iter().collect();
    sorted.sort_unstable();
    let mut shared_sum = 0u64;
    let mut distinct = [usize::from(!sorted.is_empty()); PREFIX_DEPTHS.len()];
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let shared = common_prefix(a, b);
        shared_sum += shared as u64;
        for (count, &depth) in distinct.iter_mut().zip(&PREFIX_DEPTHS) {
            let (da, db) = (a.len().min(depth), b.len().min(depth));
            if da != db || shared < da {
                *count += 1;
            }
        }
    }
    KeyStats {
        keys: keys.len(),
        mean_len: keys.mean_len(),
        mean_shared_prefix: if sorted.len() < 2 {
            0.0
        } else {
            shared_sum as f64 / (sorted.len() - 1) as f64
        },
        distinct_prefixes: distinct,
    }
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

// ---------------------------------------------------------------------------------------------
// Generation

/// A `Hasher` that passes a `u64` through: the set below stores XXH3 hashes, which are already
/// uniformly mixed, so hashing them again would only cost time.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; fold anything else in so the hasher stays correct.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

type HashSet64 = hashbrown::HashSet<u64, BuildHasherDefault<PassThrough>>;

/// Draws keys with `make` until `n` distinct keys fill the load set and `reserve` more fill the
/// reserve. `mean_len` sizes the buffers.
///
/// Distinctness is checked on the 64-bit XXH3 hash of each key, not the key: two distinct keys
/// whose hashes collide make the second one look like a duplicate, so it is dropped and another
/// drawn. A collision can thus only drop a distinct key, never let a duplicate through.
///
/// Keys are independent draws, so they come out in random order and need no shuffle.
///
/// Keys are drawn in batches, and the batch's hashes then inserted in a tight loop: the set is
/// far larger than the caches, and an insert per draw leaves the core too few independent
/// inserts in flight to overlap their cache misses (measured: 10M `dec-a` keys took 4.9 s that
/// way, against 1.6 s batched).
fn generate(
    name: &str,
    n: usize,
    reserve: usize,
    seed: u64,
    mean_len: usize,
    mut make: impl FnMut(&mut Xoshiro256PlusPlus, &mut Vec<u8>),
) -> Result<(Keys, Keys)> {
    const BATCH: usize = 1024;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(name.as_bytes(), seed));
    let total = n + reserve;
    let mut seen = HashSet64::with_capacity_and_hasher(total, Default::default());
    let mut keys = Keys::with_capacity(n * mean_len + mean_len);
    let mut spare = Keys::with_capacity(reserve * mean_len + mean_len);
    let mut buf = Vec::with_capacity(64);
    let mut batch = Vec::with_capacity(BATCH * mean_len * 2);
    let mut ends = Vec::with_capacity(BATCH);
    let mut hashes = Vec::with_capacity(BATCH);
    // Every generator's key space is at least twice `total`, so a draw is new with probability
    // at least 1/2; this bound only stops a generator bug from looping forever.
    let max_draws = total.saturating_mul(20).saturating_add(1_000_000);
    let mut draws = 0usize;
    while keys.len() + spare.len() < total {
        ensure!(
            draws < max_draws,
            "dataset {name}: only {} distinct keys after {draws} draws, {total} needed",
            keys.len() + spare.len()
        );
        batch.clear();
        ends.clear();
        hashes.clear();
        for _ in 0..BATCH {
            buf.clear();
            make(&mut rng, &mut buf);
            hashes.push(hash_bytes(&buf, seed));
            batch.extend_from_slice(&buf);
            ends.push(batch.len());
        }
        draws += BATCH;
        let mut start = 0;
        for (&h, &end) in hashes.iter().zip(&ends) {
            if keys.len() + spare.len() == total {
                break;
            }
            if seen.insert(h) {
                let key = &batch[start..end];
                if keys.len() < n {
                    keys.push(key);
                } else {
                    spare.push(key);
                }
            }
            start = end;
        }
    }
    Ok((keys, spare))
}

/// `mono-8`: `n + reserve` consecutive integers from a start drawn from `seed` (below 2^40, so
/// the sequence never wraps), the first `n` the load set, in increasing order.
fn monotonic(n: usize, reserve: usize, seed: u64) -> (Keys, Keys) {
    let start = hash_u64(seed, 0x6d6f_6e6f) >> 24;
    let mut keys = Keys::with_capacity(n * 8);
    let mut spare = Keys::with_capacity(reserve * 8);
    for i in 0..(n + reserve) as u64 {
        let key = (start + i).to_be_bytes();
        if i < n as u64 {
            keys.push(&key);
        } else {
            spare.push(&key);
        }
    }
    (keys, spare)
}

/// Candidates per byte in the decimal distributions: few for the narrow positions, many for the
/// wide ones (MLP paper §4.4: 6 and "around 100").
const DEC_NARROW: usize = 6;
const DEC_WIDE: usize = 100;
/// Keys in the decimal key space: 6^6 · 100^2.
const DEC_SPACE: usize = 6usize.pow(6) * 100usize.pow(2);

/// Errors unless load set plus reserve fit in half the decimal key space (beyond that, rejection
/// sampling slows down sharply and the set stops looking like the distribution).
fn check_decimal_size(name: &str, n: usize, reserve: usize) -> Result<()> {
    let max_total = DEC_SPACE / 2;
    if n.saturating_add(reserve) > max_total {
        // The largest n with n + max(n / 4, 1000) <= max_total.
        let mut max_n = max_total * 4 / 5 + 4;
        while max_n + (max_n / 4).max(1000) > max_total {
            max_n -= 1;
        }
        bail!(
            "dataset {name} has {DEC_SPACE} possible keys and draws at most half of them \
             ({max_total}) as load set plus reserve; n = {n} needs {} with its reserve; \
             the maximum n is {max_n}",
            n + reserve
        );
    }
    Ok(())
}

/// The candidate bytes of each of the 8 positions: distinct values chosen pseudo-randomly from
/// the seed, sorted. Distribution A has narrow sets at positions 0..6 and wide ones at 6..8;
/// B (`wide_first`) has wide sets at 0..2 and narrow ones at 2..8.
fn decimal_candidates(seed: u64, wide_first: bool) -> Vec<Vec<u8>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"decimal candidates", seed));
    (0..8)
        .map(|pos| {
            let wide = if wide_first { pos < 2 } else { pos >= 6 };
            let k = if wide { DEC_WIDE } else { DEC_NARROW };
            // Partial Fisher–Yates: the first k slots become a uniform k-subset.
            let mut all: Vec<u8> = (0..=255).collect();
            for i in 0..k {
                let j = i + below(&mut rng, (256 - i) as u64) as usize;
                all.swap(i, j);
            }
            let mut set = all[..k].to_vec();
            set.sort_unstable();
            set
        })
        .collect()
}

/// Pushes `v` as `width` decimal digits, zero-padded (`v < 10^width`).
fn push_decimal(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    let start = buf.len();
    buf.resize(start + width, b'0');
    for slot in buf[start..].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Pushes the low `width` base-36 digits of `v` as `0-9A-Z`, most significant first.
fn push_base36(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let start = buf.len();
    buf.resize(start + width, b'0');
    for slot in buf[start..].iter_mut().rev() {
        *slot = DIGITS[(v % 36) as usize];
        v /= 36;
    }
}

/// Picks an entry of a `(value, weight)` table with probability proportional to its weight.
fn pick_weighted<'a, R: Rng + ?Sized>(table: &[(&'a str, u32)], rng: &mut R) -> &'a str {
    let total: u32 = table.iter().map(|&(_, w)| w).sum();
    let mut r = below(rng, total as u64) as u32;
    for &(value, w) in table {
        if r < w {
            return value;
        }
        r -= w;
    }
    table[table.len() - 1].0
}

/// Picks a uniform entry of a list.
fn pick<'a, R: Rng + ?Sized>(list: &[&'a str], rng: &mut R) -> &'a str {
    list[below(rng, list.len() as u64) as usize]
}

/// Popular mail hosts with Zipf-like weights in per mille of all addresses; the rest
/// ([`EMAIL_TAIL_WEIGHT`]) goes to a long tail of generated domains.
const POPULAR_HOSTS: &[(&str, u32)] = &[
    ("gmail.com", 300),
    ("yahoo.com", 100),
    ("hotmail.com", 75),
    ("outlook.com", 45),
    ("aol.com", 30),
    ("icloud.com", 28),
    ("mail.ru", 24),
    ("qq.com", 22),
    ("live.com", 18),
    ("yandex.ru", 15),
    ("gmx.de", 14),
    ("yahoo.co.uk", 12),
    ("web.de", 11),
    ("hotmail.co.uk", 9),
    ("protonmail.com", 7),
];
/// Per mille of addresses at the long tail of generated domains.
const EMAIL_TAIL_WEIGHT: u32 = 290;
/// Generated tail domains per dataset.
const EMAIL_TAIL_DOMAINS: usize = 100_000;

/// Top-level domains of tail hosts with weights.
const TLDS: &[(&str, u32)] = &[
    ("com", 45),
    ("net", 10),
    ("org", 8),
    ("de", 8),
    ("co.uk", 6),
    ("fr", 5),
    ("jp", 4),
    ("nl", 3),
    ("it", 3),
    ("com.br", 3),
    ("edu", 3),
    ("es", 2),
];

/// Common first names, space-separated.
const FIRST_NAMES: &str = "\
    james john robert michael william david richard joseph thomas charles daniel matthew \
    anthony mark paul steven andrew joshua kevin brian george edward jason ryan jacob gary \
    eric stephen justin scott brandon samuel frank peter patrick jack tyler adam nathan \
    henry mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa \
    nancy betty sandra ashley emily donna michelle carol amanda melissa rebecca laura amy \
    angela anna emma nicole helen rachel maria olivia sophie julia lucas luca hans pierre \
    marie yuki hiro wei ming ivan olga sven ingrid carlos ana diego chloe leon mia noah liam \
    ella zoe max alex sam";

/// Common family names, space-separated.
const LAST_NAMES: &str = "\
    smith johnson williams brown jones garcia miller davis rodriguez martinez hernandez \
    lopez gonzalez wilson anderson taylor moore jackson martin lee perez thompson white \
    harris sanchez clark lewis robinson walker young allen king wright scott torres nguyen \
    hill flores green adams baker hall rivera campbell mitchell carter roberts muller \
    schmidt schneider fischer weber meyer wagner becker hoffmann dubois bernard petit durand \
    moreau laurent tanaka suzuki sato takahashi watanabe yamamoto kim park chen wang li \
    zhang liu yang huang zhao rossi russo ferrari bianchi romano silva santos oliveira costa \
    pereira ivanov smirnov popov novak kowalski nowak jensen nielsen hansen larsen johansson \
    karlsson";

/// Syllable parts for pseudo-words (domain names, handles).
const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
    "ch", "cr", "dr", "fl", "gr", "kl", "pr", "sh", "st", "tr", "th",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "l", "x", "nt", "rk", "m", "ck"];

/// Pushes a pronounceable pseudo-word of `min..=max` syllables.
fn push_word<R: Rng + ?Sized>(buf: &mut Vec<u8>, rng: &mut R, min: u64, max: u64) {
    let syllables = min + below(rng, max - min + 1);
    for _ in 0..syllables {
        buf.extend_from_slice(pick(ONSETS, rng).as_bytes());
        buf.extend_from_slice(pick(VOWELS, rng).as_bytes());
    }
    buf.extend_from_slice(pick(CODAS, rng).as_bytes());
}

/// Host labels reversed: `mail.example.co.uk` becomes `uk.co.example.mail`.
fn reverse_host(host: &str) -> Vec<u8> {
    host.split('.')
        .rev()
        .collect::<Vec<_>>()
        .join(".")
        .into_bytes()
}

/// Generator of host-reversed e-mail addresses.
struct EmailGen {
    /// Reversed popular hosts with the cumulative per-mille bound of each.
    popular: Vec<(u32, Vec<u8>)>,
    /// Reversed tail hosts; lower indexes are drawn more often.
    tail: Vec<Vec<u8>>,
    first_names: Vec<&'static str>,
    last_names: Vec<&'static str>,
}

impl EmailGen {
    fn new(seed: u64) -> EmailGen {
        let mut bound = 0;
        let popular = POPULAR_HOSTS
            .iter()
            .map(|&(host, w)| {
                bound += w;
                (bound, reverse_host(host))
            })
            .collect();
        debug_assert_eq!(bound + EMAIL_TAIL_WEIGHT, 1000);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"email tail", seed));
        let tail = (0..EMAIL_TAIL_DOMAINS)
            .map(|_| {
                let mut name = Vec::new();
                push_word(&mut name, &mut rng, 2, 3);
                if below(&mut rng, 10) == 0 {
                    push_word(&mut name, &mut rng, 1, 1);
                }
                let mut host = reverse_host(pick_weighted(TLDS, &mut rng));
                host.push(b'.');
                host.extend_from_slice(&name);
                // A few organisations use a mail subdomain: `com.example.mail`.
                if below(&mut rng, 20) == 0 {
                    host.extend_from_slice(b".mail");
                }
                host
            })
            .collect();
        EmailGen {
            popular,
            tail,
            first_names: FIRST_NAMES.split_whitespace().collect(),
            last_names: LAST_NAMES.split_whitespace().collect(),
        }
    }

    fn make<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        // Host.
        let r = below(rng, 1000) as u32;
        match self.popular.iter().find(|(bound, _)| r < *bound) {
            Some((_, host)) => buf.extend_from_slice(host),
            None => {
                // Squaring a uniform number skews towards the low indexes: a few tail domains
                // (companies, universities) have many users, most have few.
                let u = unit_f64(rng);
                let i = ((u * u) * self.tail.len() as f64) as usize;
                buf.extend_from_slice(&self.tail[i.min(self.tail.len() - 1)]);
            }
        }
        buf.push(b'@');

        // Local part.
        let sep = pick_weighted(&[(".", 50), ("", 35), ("_", 15)], rng).as_bytes();
        let first = pick(&self.first_names, rng).as_bytes();
        let last = pick(&self.last_names, rng).as_bytes();
        match below(rng, 100) {
            0..30 => {
                buf.extend_from_slice(first);
                buf.extend_from_slice(sep);
                buf.extend_from_slice(last);
            }
            30..42 => {
                buf.push(first[0]);
                buf.extend_from_slice(sep);
                buf.extend_from_slice(last);
            }
            42..52 => {
                buf.extend_from_slice(last);
                buf.extend_from_slice(sep);
                buf.extend_from_slice(first);
            }
            52..62 => buf.extend_from_slice(first),
            62..72 => {
                buf.extend_from_slice(first);
                buf.extend_from_slice(sep);
                push_word(buf, rng, 1, 2);
            }
            _ => push_word(buf, rng, 2, 3),
        }

        // Optional digits.
        match below(rng, 100) {
            0..35 => {}
            35..65 => push_decimal(buf, below(rng, 100), 2),
            65..80 => push_decimal(buf, 1950 + below(rng, 63), 4),
            _ => {
                let width = 1 + below(rng, 4) as usize;
                push_decimal(buf, below(rng, 10u64.pow(width as u32)), width);
            }
        }
    }
}

/// Length of an `az` key: 10-byte item id, ',', 14-byte user id, ',', 10-digit time.
const AZ_LEN: usize = 36;
/// Unix seconds of 2000-01-01 and 2018-12-31 23:59:59.
const AZ_TIME_FROM: u64 = 946_684_800;
const AZ_TIME_TO: u64 = 1_546_300_799;
/// Zipf exponent of item popularity: skewed, but no item holds more than a few percent.
const AZ_ITEM_THETA: f64 = 0.8;

/// Generator of Amazon-review-like keys `B0XXXXXXXX,AXXXXXXXXXXXXX,1234567890`, the item id,
/// reviewer id and review time of a review, as a CSV row of the Az1 data would give them.
struct AzGen {
    /// Popularity rank of the reviewed item.
    items: Zipf,
    item_seed: u64,
    users: u64,
    user_seed: u64,
}

impl AzGen {
    fn new(seed: u64, total: usize) -> AzGen {
        AzGen {
            // About 16 reviews per item on average, as in Amazon review data; the Zipf skew
            // gives popular items thousands, which share the 11-byte `item,` prefix.
            items: Zipf::new((total as u64 / 16).max(1000), AZ_ITEM_THETA),
            item_seed: hash_bytes(b"az items", seed),
            users: (total as u64 / 4).max(1000),
            user_seed: hash_bytes(b"az users", seed),
        }
    }

    fn make<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        // Ids are hashes of the rank and user number, so popular items are spread over the key
        // space. A user id's 13 base-36 digits hold a 64-bit hash, so its first digit is 0-3,
        // like the `A1`, `A2`, `A3` prefixes of real reviewer ids.
        buf.extend_from_slice(b"B0");
        push_base36(buf, hash_u64(self.items.sample(rng), self.item_seed), 8);
        buf.push(b',');
        buf.push(b'A');
        push_base36(buf, hash_u64(below(rng, self.users), self.user_seed), 13);
        buf.push(b',');
        let time = AZ_TIME_FROM + below(rng, AZ_TIME_TO - AZ_TIME_FROM + 1);
        push_decimal(buf, time, 10);
        debug_assert_eq!(buf.len(), AZ_LEN);
    }
}

// ---------------------------------------------------------------------------------------------
// Files

/// How many of `m` distinct file keys go to the load set when `n` are asked for.
fn load_count(spec: &str, m: usize, n: usize) -> usize {
    if m > n {
        n
    } else {
        let load = (m * 4 / 5).max(1);
        eprintln!(
            "warning: dataset {spec} has only {m} distinct keys (asked for {n}): \
             loading {load} and keeping {} as reserve",
            m - load
        );
        load
    }
}

fn read_file(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read dataset file {path}"))
}

/// Loads a SOSD file: a little-endian u64 count, then that many little-endian u64 keys. Keys
/// become 8-byte big-endian keys (so byte order is numeric order).
fn load_sosd(spec: &str, path: &str, n: usize, seed: u64) -> Result<(Keys, Keys)> {
    let bytes = read_file(path)?;
    let len = bytes.len() as u128;
    ensure!(
        len >= 8,
        "dataset file {path} is {len} bytes, shorter than the 8-byte SOSD header \
         (a little-endian u64 key count)"
    );
    let count = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let expected = 8 + 8 * count as u128;
    if len < expected {
        bail!(
            "dataset file {path} is truncated: its header says {count} keys, which needs \
             {expected} bytes, but the file has {len} bytes ({} whole keys, {} bytes missing)",
            (len - 8) / 8,
            expected - len
        );
    }
    if len > expected {
        bail!(
            "dataset file {path} has {} trailing bytes: its header says {count} keys \
             ({expected} bytes) but the file has {len} bytes",
            len - expected
        );
    }
    ensure!(count > 0, "dataset file {path} holds zero keys");

    let mut values: Vec<u64> = bytes[8..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    drop(bytes);
    // Exact deduplication; sorting first also makes the result independent of the file order.
    values.sort_unstable();
    values.dedup();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"shuffle", seed));
    shuffle(&mut values, &mut rng);

    let n_load = load_count(spec, values.len(), n);
    let mut keys = Keys::with_capacity(n_load * 8);
    let mut reserve = Keys::with_capacity((values.len() - n_load) * 8);
    for (i, v) in values.iter().enumerate() {
        let target = if i < n_load { &mut keys } else { &mut reserve };
        target.push(&v.to_be_bytes());
    }
    Ok((keys, reserve))
}

/// Loads a text file with one key per line. `\n` ends a line and a `\r` before it is removed;
/// an empty line is the empty key; a last line without `\n` counts.
fn load_lines(spec: &str, path: &str, n: usize, seed: u64) -> Result<(Keys, Keys)> {
    let bytes = read_file(path)?;
    ensure!(!bytes.is_empty(), "dataset file {path} is empty: zero keys");
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);

    // Deduplicate by 64-bit hash, like generated datasets: a hash collision can only drop a
    // distinct key, never keep a duplicate.
    let mut seen = HashSet64::default();
    let mut distinct = Keys::with_capacity(bytes.len());
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if seen.insert(hash_bytes(line, seed)) {
            distinct.push(line);
        }
    }
    drop(seen);
    drop(bytes);

    let m = distinct.len();
    let mut order: Vec<usize> = (0..m).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"shuffle", seed));
    shuffle(&mut order, &mut rng);
    let n_load = load_count(spec, m, n);
    let keys = distinct.gather(order[..n_load].iter().copied());
    let reserve = distinct.gather(order[n_load..].iter().copied());
    Ok((keys, reserve))
}

#[cfg(test)]
mod tests {
    use super::long_keys::{
        COMPOSITE_MAX_STR, COMPOSITE_MAX_TABLES, COMPOSITE_MIN_STR, COMPOSITE_TENANTS,
    };
    use super::*;
    use hashbrown::{HashMap, HashSet};
    use std::io::Write;

    const GENERATED: &[&str] = &[
        "rand-8",
        "mono-8",
        "rand-16",
        "dec-a",
        "dec-b",
        "email",
        "az",
        "paths",
        "urls",
        "composite",
    ];

    fn check_distinct(ds: &Dataset) {
        let keys: HashSet<&[u8]> = ds.keys.iter().collect();
        assert_eq!(
            keys.len(),
            ds.keys.len(),
            "{}: duplicate load keys",
            ds.name
        );
        let reserve: HashSet<&[u8]> = ds.reserve.iter().collect();
        assert_eq!(
            reserve.len(),
            ds.reserve.len(),
            "{}: duplicate reserve",
            ds.name
        );
        assert!(
            reserve.iter().all(|k| !keys.contains(k)),
            "{}: reserve key in load set",
            ds.name
        );
    }

    #[test]
    fn generated_sets_are_distinct_and_deterministic() {
        for &name in GENERATED {
            let a = load(name, 20_000, 1).unwrap();
            assert_eq!(a.name, name);
            assert_eq!(a.keys.len(), 20_000);
            assert_eq!(a.reserve.len(), 5000);
            check_distinct(&a);
            let b = load(name, 20_000, 1).unwrap();
            assert_eq!(a.keys, b.keys, "{name}: not deterministic");
            assert_eq!(a.reserve, b.reserve, "{name}: not deterministic");
            let c = load(name, 20_000, 2).unwrap();
            assert_ne!(a.keys, c.keys, "{name}: seed ignored");
        }
        // Small sets still get a 1000-key reserve.
        assert_eq!(load("rand-8", 10, 1).unwrap().reserve.len(), 1000);
    }

    #[test]
    fn generated_lists_every_generated_dataset() {
        let mut listed: Vec<&str> = generated().collect();
        listed.sort_unstable();
        let mut tested = GENERATED.to_vec();
        tested.sort_unstable();
        assert_eq!(listed, tested);
    }

    #[test]
    fn stats_of_a_hand_made_set() {
        let keys: Keys = [
            &b"abce"[..],
            b"b",
            b"0123456789B",
            b"",
            b"abx",
            b"0123456789A",
            b"abcd",
        ]
        .into_iter()
        .collect();
        let s = stats(&keys);
        assert_eq!(s.keys, 7);
        // 0 + 11 + 11 + 4 + 4 + 3 + 1 bytes.
        assert_eq!(s.mean_len, 34.0 / 7.0);
        // Sorted: "", 0123456789A, 0123456789B, abcd, abce, abx, b; each shares with the next
        // 0, 10, 0, 3, 2 and 0 bytes.
        assert_eq!(s.mean_shared_prefix, 15.0 / 6.0);
        // Depth 1: "", 0, a, b. Depth 2: "", 01, ab, b. Depth 4: "", 0123, abcd, abce, abx, b;
        // depth 8 the same with 01234567. From 16 on every key is whole, and distinct.
        assert_eq!(s.distinct_prefixes, [4, 4, 6, 6, 7, 7, 7]);

        let empty = stats(&Keys::new());
        assert_eq!(
            (
                empty.keys,
                empty.mean_shared_prefix,
                empty.distinct_prefixes
            ),
            (0, 0.0, [0; PREFIX_DEPTHS.len()])
        );
        let one: Keys = [&b"key"[..]].into_iter().collect();
        let one = stats(&one);
        assert_eq!(
            (one.mean_len, one.mean_shared_prefix, one.distinct_prefixes),
            (3.0, 0.0, [1; PREFIX_DEPTHS.len()])
        );
        // A duplicate adds no distinct prefix and shares its whole length.
        let twice: Keys = [&b"ab"[..], b"ab"].into_iter().collect();
        let twice = stats(&twice);
        assert_eq!(twice.mean_shared_prefix, 2.0);
        assert_eq!(twice.distinct_prefixes, [1; PREFIX_DEPTHS.len()]);
    }

    #[test]
    fn random_shapes() {
        let ds = load("rand-8", 50_000, 3).unwrap();
        assert_eq!(ds.keys.fixed_width(), Some(8));
        assert_eq!(ds.reserve.fixed_width(), Some(8));
        assert_eq!(ds.raw_bytes_per_key(), 16.0);
        let ds = load("rand-16", 50_000, 3).unwrap();
        assert_eq!(ds.keys.fixed_width(), Some(16));
        assert_eq!(ds.reserve.fixed_width(), Some(16));
        // Random order: not sorted.
        let k: Vec<&[u8]> = ds.keys.iter().take(100).collect();
        assert!(k.windows(2).any(|w| w[0] > w[1]) && k.windows(2).any(|w| w[0] < w[1]));
    }

    #[test]
    fn monotonic_keys_count_up_into_the_reserve() {
        let ds = load("mono-8", 5000, 7).unwrap();
        let all: Vec<u64> = ds
            .keys
            .iter()
            .chain(ds.reserve.iter())
            .map(|k| u64::from_be_bytes(k.try_into().unwrap()))
            .collect();
        assert_eq!(all.len(), 5000 + 1250);
        assert!(all.windows(2).all(|w| w[1] == w[0] + 1));
    }

    fn distinct_per_position(keys: &Keys) -> Vec<usize> {
        (0..8)
            .map(|p| {
                let mut seen = [false; 256];
                for k in keys.iter() {
                    seen[k[p] as usize] = true;
                }
                seen.iter().filter(|&&s| s).count()
            })
            .collect()
    }

    #[test]
    fn decimal_shapes() {
        let a = load("dec-a", 100_000, 5).unwrap();
        assert_eq!(a.keys.fixed_width(), Some(8));
        let per = distinct_per_position(&a.keys);
        assert!(per[..6].iter().all(|&c| c <= 6), "{per:?}");
        assert!(per[6..].iter().all(|&c| c > 50 && c <= 100), "{per:?}");
        let b = load("dec-b", 100_000, 5).unwrap();
        let per = distinct_per_position(&b.keys);
        assert!(per[..2].iter().all(|&c| c > 50 && c <= 100), "{per:?}");
        assert!(per[2..].iter().all(|&c| c <= 6), "{per:?}");
        // The reserve draws from the same candidates.
        let mut both = b.keys.clone();
        for k in b.reserve.iter() {
            both.push(k);
        }
        let per = distinct_per_position(&both);
        assert!(per[2..].iter().all(|&c| c <= 6), "{per:?}");
    }

    #[test]
    fn decimal_size_limit() {
        let e = load("dec-a", 200_000_000, 1).unwrap_err().to_string();
        assert!(e.contains("maximum n is 186624000"), "{e}");
        let e = load("dec-b", usize::MAX / 2, 1).unwrap_err().to_string();
        assert!(e.contains("maximum n"), "{e}");
    }

    #[test]
    fn email_shape() {
        let ds = load("email", 100_000, 4).unwrap();
        let mut gmail = 0;
        for key in ds.keys.iter().chain(ds.reserve.iter()) {
            let s = std::str::from_utf8(key).unwrap();
            assert_eq!(s.matches('@').count(), 1, "{s}");
            let (host, local) = s.split_once('@').unwrap();
            assert!(host.contains('.') && !local.is_empty(), "{s}");
            if host == "com.gmail" {
                gmail += 1;
            }
        }
        let share = gmail as f64 / (ds.keys.len() + ds.reserve.len()) as f64;
        assert!(share > 0.2, "com.gmail share {share}");
        let mean = ds.keys.mean_len();
        assert!((20.0..=30.0).contains(&mean), "mean length {mean}");
        let hosts: HashSet<&[u8]> = ds
            .keys
            .iter()
            .map(|k| k.split(|&b| b == b'@').next().unwrap())
            .collect();
        assert!(hosts.len() > 1000, "only {} hosts", hosts.len());
    }

    #[test]
    fn az_shape() {
        let ds = load("az", 100_000, 6).unwrap();
        let mean = ds.keys.mean_len();
        assert!((34.0..=38.0).contains(&mean), "mean length {mean}");
        for key in ds.keys.iter().take(1000) {
            let s = std::str::from_utf8(key).unwrap();
            let parts: Vec<&str> = s.split(',').collect();
            assert_eq!(parts.len(), 3, "{s}");
            assert!(parts[0].starts_with("B0") && parts[0].len() == 10, "{s}");
            assert!(parts[1].starts_with('A') && parts[1].len() == 14, "{s}");
            let t: u64 = parts[2].parse().unwrap();
            assert!((AZ_TIME_FROM..=AZ_TIME_TO).contains(&t), "{s}");
        }
        let mut sorted: Vec<&[u8]> = ds.keys.iter().collect();
        sorted.sort_unstable();
        let lcp: usize = sorted
            .windows(2)
            .map(|w| w[0].iter().zip(w[1]).take_while(|(a, b)| a == b).count())
            .sum();
        let mean_lcp = lcp as f64 / (sorted.len() - 1) as f64;
        assert!(mean_lcp >= 10.0, "mean common prefix {mean_lcp}");
    }

    /// Loads `name` with `n` keys and `seed`, and checks that it is distinct, deterministic
    /// from the seed and different under another seed.
    fn load_checked(name: &str, n: usize, seed: u64) -> Dataset {
        let ds = load(name, n, seed).unwrap();
        check_distinct(&ds);
        let again = load(name, n, seed).unwrap();
        assert_eq!(ds.keys, again.keys, "{name}: not deterministic");
        assert_eq!(ds.reserve, again.reserve, "{name}: not deterministic");
        assert_ne!(
            ds.keys,
            load(name, n, seed + 1).unwrap().keys,
            "{name}: seed ignored"
        );
        ds
    }

    #[test]
    fn paths_shape() {
        let ds = load_checked("paths", 100_000, 8);
        let mut per_dir: HashMap<&[u8], usize> = HashMap::new();
        for key in ds.keys.iter().chain(ds.reserve.iter()) {
            let s = std::str::from_utf8(key).unwrap();
            assert!(
                s.starts_with('/') && !s.ends_with('/') && !s.contains("//"),
                "{s}"
            );
            let components = s.matches('/').count();
            assert!(
                (3..=15).contains(&components),
                "{components} components: {s}"
            );
            let dir = &key[..key.iter().rposition(|&b| b == b'/').unwrap()];
            *per_dir.entry(dir).or_default() += 1;
        }
        let s = stats(&ds.keys);
        assert!((50.0..=70.0).contains(&s.mean_len), "{s:?}");
        assert!(
            (35.0..=60.0).contains(&s.mean_shared_prefix),
            "mean shared prefix: {s:?}"
        );
        // Skewed directories: a few with thousands of files, most with a handful.
        let mut sizes: Vec<usize> = per_dir.into_values().collect();
        sizes.sort_unstable();
        let largest = sizes[sizes.len() - 1];
        let median = sizes[sizes.len() / 2];
        assert!(
            largest > 2000 && median <= 5,
            "largest {largest}, median {median}"
        );
    }

    #[test]
    fn urls_shape() {
        let ds = load_checked("urls", 100_000, 9);
        let (mut google, mut queries) = (0, 0);
        let mut hosts: HashSet<&[u8]> = HashSet::new();
        for key in ds.keys.iter() {
            let s = std::str::from_utf8(key).unwrap();
            let (url, query) = match s.split_once('?') {
                Some((url, query)) => {
                    queries += 1;
                    assert!(!query.is_empty() && query.contains('='), "{s}");
                    (url, Some(query))
                }
                None => (s, None),
            };
            let (host, path) = url.split_once('/').unwrap();
            assert!(host.contains('.'), "{s}");
            let segments = path.split('/').count();
            assert!((1..=6).contains(&segments), "{segments} segments: {s}");
            assert!(path.split('/').all(|seg| !seg.is_empty()), "{s}");
            assert!(query.is_none_or(|q| !q.contains('/')), "{s}");
            google += usize::from(host == "com.google.www");
            hosts.insert(host.as_bytes());
        }
        let n = ds.keys.len() as f64;
        assert!(google as f64 / n > 0.05, "com.google.www share {google}");
        let query_share = queries as f64 / n;
        assert!(
            (0.3..=0.5).contains(&query_share),
            "query share {query_share}"
        );
        assert!(hosts.len() > 10_000, "only {} hosts", hosts.len());
        let s = stats(&ds.keys);
        assert!((60.0..=80.0).contains(&s.mean_len), "{s:?}");
        assert!(
            (12.0..=35.0).contains(&s.mean_shared_prefix),
            "mean shared prefix: {s:?}"
        );
    }

    /// A `composite` key's fields: tenant, table, string column, primary key.
    fn composite_fields(key: &[u8]) -> (u32, u32, &[u8], u64) {
        let tenant = u32::from_be_bytes(key[..4].try_into().unwrap());
        let table = u32::from_be_bytes(key[4..8].try_into().unwrap());
        let rest = &key[8..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .expect("a 0x00 terminator");
        assert_eq!(
            rest.len() - end - 1,
            8,
            "8 bytes after the terminator: {key:?}"
        );
        let pk = u64::from_be_bytes(rest[end + 1..].try_into().unwrap());
        (tenant, table, &rest[..end], pk)
    }

    #[test]
    fn composite_shape() {
        let ds = load_checked("composite", 100_000, 10);
        let mut tables: HashMap<u32, HashSet<u32>> = HashMap::new();
        let mut per_tenant: HashMap<u32, usize> = HashMap::new();
        for key in ds.keys.iter().chain(ds.reserve.iter()) {
            let (tenant, table, column, _) = composite_fields(key);
            assert!(
                (COMPOSITE_MIN_STR..=COMPOSITE_MAX_STR).contains(&column.len()),
                "{key:?}"
            );
            assert!(
                column.iter().all(|&b| b.is_ascii_graphic() || b == b' '),
                "{key:?}"
            );
            tables.entry(tenant).or_default().insert(table);
            *per_tenant.entry(tenant).or_default() += 1;
        }
        assert!(
            (200..=COMPOSITE_TENANTS as usize).contains(&tables.len()),
            "{} tenants",
            tables.len()
        );
        assert!(
            tables
                .values()
                .all(|t| t.len() <= COMPOSITE_MAX_TABLES as usize)
        );
        let largest = per_tenant.values().copied().max().unwrap();
        let share = largest as f64 / (ds.keys.len() + ds.reserve.len()) as f64;
        assert!(share > 0.03, "largest tenant's share {share}");
        // Byte order is tuple order.
        let mut by_bytes: Vec<&[u8]> = ds.keys.iter().take(5000).collect();
        let mut by_tuple = by_bytes.clone();
        by_bytes.sort_unstable();
        by_tuple.sort_unstable_by(|a, b| composite_fields(a).cmp(&composite_fields(b)));
        assert_eq!(by_bytes, by_tuple);
        let s = stats(&ds.keys);
        assert!((25.0..=40.0).contains(&s.mean_len), "{s:?}");
        assert!(
            (10.0..=25.0).contains(&s.mean_shared_prefix),
            "mean shared prefix: {s:?}"
        );
    }

    #[test]
    fn unknown_names_suggest_a_valid_one() {
        let e = load("rand-9", 10, 1).unwrap_err().to_string();
        assert!(
            e.contains(r#"unknown dataset "rand-9"; did you mean "rand-8"?"#),
            "{e}"
        );
        let e = load("line:/data/keys", 10, 1).unwrap_err().to_string();
        assert!(e.contains(r#"did you mean "lines:/data/keys"?"#), "{e}");
        let e = load("banana", 10, 1).unwrap_err().to_string();
        assert!(!e.contains("did you mean") && e.contains("list"), "{e}");
        assert!(load("u64:", 10, 1).is_err());
        assert!(load("rand-8", 0, 1).is_err());
    }

    fn sosd_bytes(count: u64, keys: &[u64]) -> Vec<u8> {
        let mut b = count.to_le_bytes().to_vec();
        for k in keys {
            b.extend_from_slice(&k.to_le_bytes());
        }
        b
    }

    fn write_temp(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f.flush().unwrap();
        f
    }

    #[test]
    fn sosd_valid() {
        // 0..1000 with 100 duplicates.
        let mut values: Vec<u64> = (0..1000u64).map(|i| i * 7919 + 3).collect();
        values.extend_from_slice(&values.clone()[..100]);
        let f = write_temp(&sosd_bytes(values.len() as u64, &values));
        let spec = format!("u64:{}", f.path().display());
        let ds = load(&spec, 600, 1).unwrap();
        assert_eq!(ds.name, spec);
        assert_eq!(ds.keys.len(), 600);
        assert_eq!(ds.reserve.len(), 400);
        assert_eq!(ds.keys.fixed_width(), Some(8));
        check_distinct(&ds);
        let mut all: Vec<u64> = ds
            .keys
            .iter()
            .chain(ds.reserve.iter())
            .map(|k| u64::from_be_bytes(k.try_into().unwrap()))
            .collect();
        // Shuffled, then exactly the distinct input values.
        assert!(all.windows(2).any(|w| w[0] > w[1]));
        all.sort_unstable();
        assert_eq!(all, values[..1000]);
        assert_eq!(load(&spec, 600, 1).unwrap().keys, ds.keys);
        assert_ne!(load(&spec, 600, 2).unwrap().keys, ds.keys);

        // m <= n: 80/20.
        let ds = load(&spec, 5000, 1).unwrap();
        assert_eq!((ds.keys.len(), ds.reserve.len()), (800, 200));
    }

    #[test]
    fn sosd_malformed() {
        let f = write_temp(&sosd_bytes(10, &[1, 2, 3]));
        let e = load(&format!("u64:{}", f.path().display()), 5, 1).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("truncated") && e.contains("10 keys"), "{e}");
        assert!(e.contains(&f.path().display().to_string()), "{e}");

        let mut bytes = sosd_bytes(3, &[1, 2, 3]);
        bytes.extend_from_slice(&[9, 9, 9]);
        let f = write_temp(&bytes);
        let e = format!(
            "{:#}",
            load(&format!("u64:{}", f.path().display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("3 trailing bytes"), "{e}");

        let f = write_temp(&[1, 2, 3]);
        let e = format!(
            "{:#}",
            load(&format!("u64:{}", f.path().display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("shorter than the 8-byte"), "{e}");

        let f = write_temp(&sosd_bytes(0, &[]));
        let e = format!(
            "{:#}",
            load(&format!("u64:{}", f.path().display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("zero keys"), "{e}");

        let f = write_temp(&sosd_bytes(u64::MAX, &[1]));
        let e = format!(
            "{:#}",
            load(&format!("u64:{}", f.path().display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("truncated"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.bin");
        let e = format!(
            "{:#}",
            load(&format!("u64:{}", missing.display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("cannot read") && e.contains("nope.bin"), "{e}");
    }

    #[test]
    fn lines_file() {
        let f = write_temp(b"apple\r\nbanana\n\ncherry\napple\nbanana\r\n\ndate");
        let spec = format!("lines:{}", f.path().display());
        let ds = load(&spec, 3, 1).unwrap();
        assert_eq!(ds.keys.len(), 3);
        assert_eq!(ds.reserve.len(), 2);
        check_distinct(&ds);
        let mut all: Vec<&[u8]> = ds.keys.iter().chain(ds.reserve.iter()).collect();
        all.sort_unstable();
        assert_eq!(all, [&b""[..], b"apple", b"banana", b"cherry", b"date"]);

        // m <= n: 80/20 of the 5 distinct keys.
        let ds = load(&spec, 100, 1).unwrap();
        assert_eq!((ds.keys.len(), ds.reserve.len()), (4, 1));

        // A trailing newline does not add an empty key.
        let f = write_temp(b"x\ny\n");
        let ds = load(&format!("lines:{}", f.path().display()), 1, 1).unwrap();
        assert_eq!(ds.keys.len() + ds.reserve.len(), 2);

        let f = write_temp(b"");
        let e = format!(
            "{:#}",
            load(&format!("lines:{}", f.path().display()), 5, 1).unwrap_err()
        );
        assert!(e.contains("zero keys"), "{e}");
    }

    /// Release-mode timing: `cargo test --release -p mlpdex-bench --lib dataset::tests::timing
    /// -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn timing() {
        for name in [
            "rand-8",
            "rand-16",
            "dec-a",
            "email",
            "az",
            "paths",
            "urls",
            "composite",
        ] {
            let t = std::time::Instant::now();
            let ds = load(name, 10_000_000, 1).unwrap();
            eprintln!(
                "{name}: 10M keys + {} reserve in {:?}, mean length {:.1}",
                ds.reserve.len(),
                t.elapsed(),
                ds.keys.mean_len()
            );
        }
    }
}
