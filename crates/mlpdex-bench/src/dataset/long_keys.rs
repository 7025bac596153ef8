//! Long-key datasets (issue 23): `paths`, `urls` and `composite`, keys of 30 to 70 bytes whose
//! sorted neighbours share long prefixes, the shape where a trie's depth and a comparison
//! tree's key comparisons cost the most. See the [parent module](super) for what each models
//! and its measured shape.
//!
//! Each generator follows [`super::EmailGen`]'s pattern: `new` builds the vocabularies, trees
//! and tables once from the seed, and `make` appends one key to a buffer without allocating.

use rand::{Rng, SeedableRng};
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};

use super::{
    FIRST_NAMES, LAST_NAMES, TLDS, pick, pick_weighted, push_base36, push_decimal, push_word,
    reverse_host,
};
use crate::keys::Keys;
use crate::random::{Zipf, below, hash_bytes, hash_u64, shuffle, unit_f64};

/// Pushes the low `width` hex digits of `v`, lower case, most significant first.
fn push_hex(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let start = buf.len();
    buf.resize(start + width, b'0');
    for slot in buf[start..].iter_mut().rev() {
        *slot = DIGITS[(v % 16) as usize];
        v /= 16;
    }
}

/// Pushes `v` in decimal without padding.
fn push_number(buf: &mut Vec<u8>, v: u64) {
    let width = v.checked_ilog10().map_or(1, |d| d as usize + 1);
    push_decimal(buf, v, width);
}

/// Pushes `n` words of `words`, uniformly drawn, separated by `sep`.
fn push_words<R: Rng + ?Sized>(buf: &mut Vec<u8>, rng: &mut R, words: &[&str], n: u64, sep: u8) {
    for w in 0..n {
        if w > 0 {
            buf.push(sep);
        }
        buf.extend_from_slice(pick(words, rng).as_bytes());
    }
}

/// A uniform draw below `n` skewed towards 0: `below(1 + below(n))`, so index `i` is drawn
/// with probability `(H(n) - H(i)) / n`, about `ln(n / (i + 1)) / n` (the first of 8 about
/// a third of the time, the last 1/64). For small skewed choices (a host's sections, a tenant's
/// tables) where a [`Zipf`] table would be overkill.
fn below_skewed<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let bound = 1 + below(rng, n);
    below(rng, bound)
}

/// Words of file-system paths: directory and file names, space-separated.
const PATH_WORDS: &str = "\
    src lib include bin share doc docs test tests build target debug release assets images img \
    static css js scripts tools util utils core common config conf data logs cache tmp examples \
    modules components models views controllers services handlers api cmd internal pkg vendor \
    node_modules dist public resources res fixtures migrations templates layouts pages app \
    server client web site backup archive old local system kernel drivers net crypto fs arch \
    x86 arm sys user projects work notes photos music videos downloads desktop documents \
    invoices reports main index mod string strings parser lexer token ast codegen runtime \
    memory alloc buffer queue stack tree map hash table list vector graph node edge types \
    error errors io file files stream socket http session auth login account \
    admin schema query storage engine page block segment wal log journal shard replica \
    cluster worker scheduler task job event events message handler plugin plugins theme \
    style styles font fonts icon icons logo banner thumb preview draft final readme license \
    changelog makefile setup install package manifest settings default base helpers \
    shared generated proto gen bench benches fuzz corpus sample samples dataset raw clean";

/// File extensions with weights; the empty one is a file without extension.
const PATH_EXTENSIONS: &[(&str, u32)] = &[
    (".rs", 60),
    (".c", 50),
    (".h", 50),
    (".py", 60),
    (".js", 60),
    (".ts", 30),
    (".json", 40),
    (".md", 25),
    (".txt", 30),
    (".log", 40),
    (".png", 40),
    (".jpg", 50),
    (".so", 15),
    (".o", 40),
    (".html", 25),
    (".css", 15),
    (".go", 20),
    (".java", 20),
    (".cpp", 20),
    (".hpp", 10),
    (".toml", 10),
    (".yaml", 15),
    (".xml", 15),
    (".csv", 15),
    (".gz", 15),
    (".sh", 15),
    (".d", 10),
    (".a", 5),
    ("", 30),
];

/// Directories every `paths` tree starts from; the tree grows below them (none directly below
/// `/`). `{user}` stands for each of [`PATH_USERS`].
const PATH_SKELETON: &[&str] = &[
    "/home",
    "/home/{user}",
    "/home/{user}/src",
    "/home/{user}/.cache",
    "/home/{user}/Documents",
    "/usr",
    "/usr/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/share",
    "/usr/share/doc",
    "/usr/include",
    "/usr/local",
    "/usr/local/lib",
    "/var",
    "/var/log",
    "/var/lib",
    "/var/cache",
    "/var/www",
    "/opt",
    "/srv",
    "/srv/data",
    "/etc",
    "/tmp",
];
/// Home directories of the `paths` tree.
const PATH_USERS: usize = 12;
/// Keys (load set plus reserve) per directory of the `paths` tree, and bounds on the number of
/// directories: ten files per directory on average, like a real file system, but never so few
/// directories that a test set has no deep tree, nor so many that generation slows.
const PATH_KEYS_PER_DIR: usize = 10;
const PATH_MIN_DIRS: usize = 2_000;
const PATH_MAX_DIRS: usize = 100_000;
/// Zipf exponent of directory sizes: a few directories hold thousands of files, most a handful.
const PATH_DIR_THETA: f64 = 0.9;
/// Depths (components below `/`) of the directories that hold files: a path has 3 to 15
/// components, the file name included.
const PATH_MIN_DIR_DEPTH: usize = 2;
const PATH_MAX_DIR_DEPTH: usize = 14;
/// Weights of the depths `PATH_MIN_DIR_DEPTH..=PATH_MAX_DIR_DEPTH` of generated directories:
/// 7 components on average, 8 with the file name.
const PATH_DIR_DEPTHS: [u32; PATH_MAX_DIR_DEPTH - PATH_MIN_DIR_DEPTH + 1] =
    [3, 6, 10, 13, 15, 14, 12, 9, 7, 5, 3, 2, 1];

/// Generator of hierarchical file-system paths `/home/alice/src/proj/lib/util/strings.rs`.
///
/// The directory tree is built once, below a fixed skeleton (`/home/USER/src`, `/usr/lib`,
/// `/var/log`, ...). Each new directory draws its depth from [`PATH_DIR_DEPTHS`], so the
/// path length does not depend on the tree's size, and its parent one level up by
/// preferential attachment: a directory's chance of getting the next subdirectory grows with
/// the subdirectories it has, so fan-out is skewed. Each key is then a directory drawn by Zipf
/// weight (ranks assigned in random order, so a directory's size does not depend on its depth
/// or fan-out) followed by a file name. Most keys thus share their whole directory path with
/// their sorted neighbour, as in a real file system.
pub(super) struct PathGen {
    /// Full paths, without a trailing `/`, of the directories files go in (depth at least
    /// [`PATH_MIN_DIR_DEPTH`]), by Zipf rank: the popular ones side by side, so they stay in
    /// cache (with a `Vec` per directory, in tree order, 28% of the generation time at 3M keys
    /// went to cache misses on them).
    dirs: Keys,
    sizes: Zipf,
    words: Vec<&'static str>,
}

impl PathGen {
    pub(super) fn new(seed: u64, total: usize) -> PathGen {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"paths tree", seed));
        let words: Vec<&'static str> = PATH_WORDS.split_whitespace().collect();
        let users: Vec<&'static str> = FIRST_NAMES.split_whitespace().take(PATH_USERS).collect();
        let n_dirs = (total / PATH_KEYS_PER_DIR).clamp(PATH_MIN_DIRS, PATH_MAX_DIRS);
        let mut dirs: Vec<Vec<u8>> = Vec::with_capacity(n_dirs);
        let mut depths: Vec<usize> = Vec::with_capacity(n_dirs);
        for &pattern in PATH_SKELETON {
            let each_user: &[&str] = if pattern.contains("{user}") {
                &users
            } else {
                &[""]
            };
            for &user in each_user {
                let path = pattern.replace("{user}", user);
                depths.push(path.matches('/').count());
                dirs.push(path.into_bytes());
            }
        }
        // Preferential attachment: `slots[d]` holds every directory of depth `d` once, plus
        // once more per subdirectory, so a uniform slot picks a directory of that depth with
        // probability proportional to one plus its fan-out.
        let mut slots: Vec<Vec<u32>> = vec![Vec::new(); PATH_MAX_DIR_DEPTH + 1];
        for (dir, &depth) in depths.iter().enumerate() {
            slots[depth].push(dir as u32);
            let path = &dirs[dir];
            let parent_path = &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0)];
            if let Some(parent) = dirs.iter().position(|d| d == parent_path) {
                slots[depth - 1].push(parent as u32);
            }
        }
        let depth_total: u32 = PATH_DIR_DEPTHS.iter().sum();
        while dirs.len() < n_dirs {
            let mut r = below(&mut rng, depth_total as u64) as u32;
            let mut depth = PATH_MIN_DIR_DEPTH;
            for &w in &PATH_DIR_DEPTHS {
                if r < w {
                    break;
                }
                r -= w;
                depth += 1;
            }
            // While the tree is young, a level may have no directory to attach to yet: then
            // the deepest one there is (the skeleton's top directories have depth 1, so the
            // depth stays at least 2).
            while slots[depth - 1].is_empty() {
                depth -= 1;
            }
            let level = &slots[depth - 1];
            let parent = level[below(&mut rng, level.len() as u64) as usize] as usize;
            let mut path = Vec::with_capacity(dirs[parent].len() + 16);
            path.extend_from_slice(&dirs[parent]);
            path.push(b'/');
            push_dir_name(&mut path, &mut rng, &words);
            slots[depth - 1].push(parent as u32);
            slots[depth].push(dirs.len() as u32);
            depths.push(depth);
            dirs.push(path);
        }
        let mut by_rank: Vec<u32> = (0..dirs.len() as u32)
            .filter(|&dir| depths[dir as usize] >= PATH_MIN_DIR_DEPTH)
            .collect();
        shuffle(&mut by_rank, &mut rng);
        PathGen {
            sizes: Zipf::new(by_rank.len() as u64, PATH_DIR_THETA),
            dirs: by_rank
                .iter()
                .map(|&dir| dirs[dir as usize].as_slice())
                .collect(),
            words,
        }
    }

    pub(super) fn make<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        buf.extend_from_slice(self.dirs.get(self.sizes.sample(rng) as usize));
        buf.push(b'/');
        push_file_name(buf, rng, &self.words);
    }
}

/// Pushes a directory name: mostly a common word, else a project-like pseudo-word, a compound,
/// a version (`v2.3`, `1.14.2`), a hex fan-out or hash directory, a year, or a word with a
/// number (`python3`).
fn push_dir_name<R: Rng + ?Sized>(buf: &mut Vec<u8>, rng: &mut R, words: &[&str]) {
    match below(rng, 100) {
        0..50 => buf.extend_from_slice(pick(words, rng).as_bytes()),
        50..65 => push_word(buf, rng, 1, 3),
        65..75 => {
            buf.extend_from_slice(pick(words, rng).as_bytes());
            buf.push(if below(rng, 2) == 0 { b'-' } else { b'_' });
            buf.extend_from_slice(pick(words, rng).as_bytes());
        }
        75..83 => {
            if below(rng, 2) == 0 {
                buf.push(b'v');
            }
            push_number(buf, below_skewed(rng, 12));
            buf.push(b'.');
            push_number(buf, below(rng, 20));
            if below(rng, 2) == 0 {
                buf.push(b'.');
                push_number(buf, below(rng, 10));
            }
        }
        83..90 => {
            // Git-object-like fan-out (`3f`) or a content hash.
            let width = if below(rng, 2) == 0 { 2 } else { 12 };
            push_hex(buf, rng.next_u64(), width);
        }
        90..95 => push_number(buf, 2010 + below(rng, 15)),
        _ => {
            buf.extend_from_slice(pick(words, rng).as_bytes());
            push_number(buf, below_skewed(rng, 100));
        }
    }
}

/// Pushes a file name: a stem (a word, two words, a pseudo-word, a numbered name like
/// `img_0042`, a hash, a timestamp, a dotfile) and an extension from [`PATH_EXTENSIONS`].
fn push_file_name<R: Rng + ?Sized>(buf: &mut Vec<u8>, rng: &mut R, words: &[&str]) {
    match below(rng, 100) {
        0..28 => buf.extend_from_slice(pick(words, rng).as_bytes()),
        28..48 => {
            buf.extend_from_slice(pick(words, rng).as_bytes());
            buf.push(pick_weighted(&[("_", 5), ("-", 3), (".", 2)], rng).as_bytes()[0]);
            buf.extend_from_slice(pick(words, rng).as_bytes());
        }
        48..60 => push_word(buf, rng, 2, 3),
        60..74 => {
            buf.extend_from_slice(pick(words, rng).as_bytes());
            buf.push(if below(rng, 2) == 0 { b'_' } else { b'-' });
            push_decimal(buf, below(rng, 10_000), 4);
        }
        74..83 => push_hex(buf, rng.next_u64(), 16),
        83..91 => {
            push_number(buf, 2010 + below(rng, 15));
            push_decimal(buf, 1 + below(rng, 12), 2);
            push_decimal(buf, 1 + below(rng, 28), 2);
            buf.push(b'_');
            push_decimal(buf, below(rng, 240_000), 6);
        }
        91..95 => {
            buf.push(b'.');
            buf.extend_from_slice(pick(words, rng).as_bytes());
        }
        _ => {
            buf.extend_from_slice(pick(words, rng).as_bytes());
            push_number(buf, below(rng, 1000));
        }
    }
    buf.extend_from_slice(pick_weighted(PATH_EXTENSIONS, rng).as_bytes());
}

/// Popular web sites with weights in per mille of all URLs; the rest ([`URL_TAIL_WEIGHT`]) goes
/// to a long tail of generated hosts.
const POPULAR_SITES: &[(&str, u32)] = &[
    ("www.google.com", 80),
    ("www.youtube.com", 60),
    ("www.facebook.com", 45),
    ("en.wikipedia.org", 40),
    ("www.amazon.com", 35),
    ("twitter.com", 28),
    ("www.reddit.com", 25),
    ("www.instagram.com", 22),
    ("www.linkedin.com", 16),
    ("github.com", 15),
    ("stackoverflow.com", 12),
    ("www.ebay.com", 11),
    ("www.nytimes.com", 9),
    ("www.imdb.com", 8),
    ("www.bbc.co.uk", 8),
    ("www.yahoo.co.jp", 7),
    ("www.netflix.com", 6),
    ("www.spiegel.de", 5),
    ("news.ycombinator.com", 4),
    ("docs.python.org", 4),
];
/// Per mille of URLs on the long tail of generated hosts.
const URL_TAIL_WEIGHT: u32 = 560;
/// Generated tail hosts per dataset.
const URL_TAIL_HOSTS: usize = 200_000;
/// Subdomains of tail hosts with weights; the empty one is the bare domain.
const URL_SUBDOMAINS: &[(&str, u32)] = &[
    ("www", 50),
    ("", 15),
    ("m", 5),
    ("blog", 5),
    ("shop", 5),
    ("api", 3),
    ("docs", 3),
    ("news", 3),
    ("forum", 3),
    ("cdn", 3),
    ("en", 5),
];
/// Words of URL paths and slugs, space-separated.
const WEB_WORDS: &str = "\
    products product shoes shirts dresses item items news article articles blog post posts \
    user users profile search category categories tags tag wiki questions answers watch video \
    videos photos photo help about docs api v1 v2 en us de fr shop cart checkout account \
    login settings images media static assets download downloads release releases issues \
    pull commits tree blob events sports world politics business technology science health \
    travel food recipes movies music games books reviews deals sale women men kids home \
    garden kitchen electronics phones laptops cameras how to the best new top guide make \
    cook rice easy quick free online week year first last great little old big small long \
    day night city country house family school water people time life market report \
    study data model design story history season episode live stream chat group groups page";
/// Query parameter names, space-separated.
const URL_PARAMS: &str = "\
    id q page ref sort lang utm_source utm_medium v t s session tag category offset limit";
/// Sections per host: the first path segment of a host's URLs is one of this many words chosen
/// for the host, the second one of [`URL_SUBSECTIONS`] chosen for the host and section.
const URL_SECTIONS: u64 = 8;
const URL_SUBSECTIONS: u64 = 32;

/// Generator of host-reversed URLs with paths and query strings,
/// `com.example.www/products/shoes/item?id=83621&ref=home`.
///
/// Hosts are skewed like [`super::EmailGen`]'s: popular sites with fixed weights and a tail skewed
/// towards its first hosts. Each host has its own few sections (first path segment) and
/// subsections (second), skewed too, chosen by hashing, so a site's URLs share its structure;
/// deeper segments are ids, slugs, words, hashes and dates.
pub(super) struct UrlGen {
    /// Reversed popular hosts with the cumulative per-mille bound of each.
    popular: Vec<(u32, Vec<u8>)>,
    /// Seed of the tail hosts, each made from its index when drawn (see [`UrlGen::push_tail_host`]).
    tail_seed: u64,
    words: Vec<&'static str>,
    params: Vec<&'static str>,
    /// Seed of the per-host section choice.
    section_seed: u64,
}

impl UrlGen {
    pub(super) fn new(seed: u64) -> UrlGen {
        let mut bound = 0;
        let popular = POPULAR_SITES
            .iter()
            .map(|&(host, w)| {
                bound += w;
                (bound, reverse_host(host))
            })
            .collect();
        debug_assert_eq!(bound + URL_TAIL_WEIGHT, 1000);
        UrlGen {
            popular,
            tail_seed: hash_bytes(b"url tail", seed),
            words: WEB_WORDS.split_whitespace().collect(),
            params: URL_PARAMS.split_whitespace().collect(),
            section_seed: hash_bytes(b"url sections", seed),
        }
    }

    /// Pushes tail host `i`, reversed (`com.brailex.www`): a top-level domain, a pseudo-word
    /// name, sometimes hyphenated, and a subdomain, all drawn from a generator seeded with `i`,
    /// so the same `i` always gives the same host. Making it costs less than looking it up: a
    /// table of 200k hosts took 28% of the generation time at 3M keys in cache misses.
    fn push_tail_host(&self, buf: &mut Vec<u8>, i: u64) {
        let mut rng = SplitMix64::seed_from_u64(hash_u64(i, self.tail_seed));
        let tld = pick_weighted(TLDS, &mut rng);
        for (n, label) in tld.rsplit('.').enumerate() {
            if n > 0 {
                buf.push(b'.');
            }
            buf.extend_from_slice(label.as_bytes());
        }
        buf.push(b'.');
        push_word(buf, &mut rng, 2, 3);
        if below(&mut rng, 8) == 0 {
            buf.push(b'-');
            push_word(buf, &mut rng, 1, 2);
        }
        let sub = pick_weighted(URL_SUBDOMAINS, &mut rng);
        if !sub.is_empty() {
            buf.push(b'.');
            buf.extend_from_slice(sub.as_bytes());
        }
    }

    /// The word `hash_u64(key)` selects.
    fn word_for(&self, key: u64) -> &'static str {
        let h = hash_u64(key, self.section_seed);
        self.words[((h as u128 * self.words.len() as u128) >> 64) as usize]
    }

    pub(super) fn make<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        // Host, and a number naming it for the section choice.
        let r = below(rng, 1000) as u32;
        let host = match self.popular.iter().position(|(bound, _)| r < *bound) {
            Some(i) => {
                buf.extend_from_slice(&self.popular[i].1);
                i
            }
            None => {
                // Squared uniform: skewed towards the first tail hosts, as for e-mail.
                let u = unit_f64(rng);
                let i = ((u * u) * URL_TAIL_HOSTS as f64) as usize;
                let i = i.min(URL_TAIL_HOSTS - 1);
                self.push_tail_host(buf, i as u64);
                self.popular.len() + i
            }
        };
        let host = host as u64;

        // Path: 1-6 segments, 3.6 on average.
        let segments = match below(rng, 100) {
            0..8 => 1,
            8..25 => 2,
            25..50 => 3,
            50..72 => 4,
            72..88 => 5,
            _ => 6,
        };
        let section = below_skewed(rng, URL_SECTIONS);
        for s in 0..segments {
            buf.push(b'/');
            match s {
                0 => buf.extend_from_slice(self.word_for((host << 8) | section).as_bytes()),
                1 => {
                    let sub = below_skewed(rng, URL_SUBSECTIONS);
                    // The top bit keeps subsection keys apart from section keys.
                    let key = (1 << 63) | (host << 16) | (section << 8) | sub;
                    buf.extend_from_slice(self.word_for(key).as_bytes());
                    // A third of the subsections are compounds (`sports-news`).
                    if sub.is_multiple_of(3) {
                        buf.push(b'-');
                        buf.extend_from_slice(self.word_for(key ^ (1 << 62)).as_bytes());
                    }
                }
                _ => self.push_segment(rng, buf),
            }
        }
        if below(rng, 100) < 12 {
            buf.extend_from_slice(
                pick_weighted(&[(".html", 6), (".php", 3), (".jpg", 2)], rng).as_bytes(),
            );
        }

        // Query string, of 1-4 parameters, on 40% of the URLs.
        if below(rng, 100) < 40 {
            let params = 1 + below_skewed(rng, 4);
            for p in 0..params {
                buf.push(if p == 0 { b'?' } else { b'&' });
                buf.extend_from_slice(pick(&self.params, rng).as_bytes());
                buf.push(b'=');
                match below(rng, 3) {
                    0 => push_number(buf, below(rng, 1_000_000)),
                    1 => buf.extend_from_slice(pick(&self.words, rng).as_bytes()),
                    _ => push_hex(buf, rng.next_u64(), 16),
                }
            }
        }
    }

    /// Pushes a path segment below the section and subsection: a numeric id, a slug of 3-7
    /// words (`how-to-cook-rice`), a word, a hex id or a date.
    fn push_segment<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        match below(rng, 100) {
            0..25 => {
                let digits = 3 + below(rng, 5) as u32;
                push_number(buf, below(rng, 10u64.pow(digits)));
            }
            25..60 => {
                let n = 3 + below(rng, 5);
                push_words(buf, rng, &self.words, n, b'-');
            }
            60..82 => buf.extend_from_slice(pick(&self.words, rng).as_bytes()),
            82..94 => push_hex(buf, rng.next_u64(), 12),
            _ => {
                push_number(buf, 2010 + below(rng, 15));
                buf.push(b'-');
                push_decimal(buf, 1 + below(rng, 12), 2);
                buf.push(b'-');
                push_decimal(buf, 1 + below(rng, 28), 2);
            }
        }
    }
}

/// Tenants of `composite` and the Zipf exponent of their sizes.
pub(super) const COMPOSITE_TENANTS: u64 = 300;
const COMPOSITE_TENANT_THETA: f64 = 0.9;
/// Tables in the shared catalog, of which each tenant uses 1 to [`COMPOSITE_MAX_TABLES`].
const COMPOSITE_CATALOG: u64 = 24;
pub(super) const COMPOSITE_MAX_TABLES: u64 = 8;
/// Bounds on the length of the string column, terminator excluded.
pub(super) const COMPOSITE_MIN_STR: usize = 5;
pub(super) const COMPOSITE_MAX_STR: usize = 30;

/// Generator of binary composite keys: the tuple (tenant, table, string column, primary key) of
/// a multi-tenant secondary index, encoded so byte order is tuple order: a 4-byte big-endian
/// tenant id, a 4-byte big-endian table id, the string (5–30 bytes, no 0x00) and a 0x00
/// terminator, then the 8-byte big-endian primary key.
///
/// Tenants are Zipf-skewed; each uses a few tables of a shared catalog, skewed too. A table's
/// column is a person's name, a product-like phrase, or a code, by the table id.
pub(super) struct CompositeGen {
    tenants: Zipf,
    /// Tenant id of each Zipf rank: ids `1..=COMPOSITE_TENANTS` in random order.
    tenant_ids: Vec<u32>,
    /// Catalog table ids each tenant (by rank) uses, most used first.
    tables: Vec<Vec<u32>>,
    first_names: Vec<&'static str>,
    last_names: Vec<&'static str>,
    words: Vec<&'static str>,
    /// Primary keys are below this: row ids of tables the size of the whole dataset.
    pk_bound: u64,
}

impl CompositeGen {
    pub(super) fn new(seed: u64, total: usize) -> CompositeGen {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(hash_bytes(b"composite schema", seed));
        let mut tenant_ids: Vec<u32> = (1..=COMPOSITE_TENANTS as u32).collect();
        shuffle(&mut tenant_ids, &mut rng);
        let tables = (0..COMPOSITE_TENANTS)
            .map(|_| {
                let mut catalog: Vec<u32> = (1..=COMPOSITE_CATALOG as u32).collect();
                shuffle(&mut catalog, &mut rng);
                catalog.truncate(1 + below(&mut rng, COMPOSITE_MAX_TABLES) as usize);
                catalog
            })
            .collect();
        CompositeGen {
            tenants: Zipf::new(COMPOSITE_TENANTS, COMPOSITE_TENANT_THETA),
            tenant_ids,
            tables,
            first_names: FIRST_NAMES.split_whitespace().collect(),
            last_names: LAST_NAMES.split_whitespace().collect(),
            words: WEB_WORDS.split_whitespace().collect(),
            pk_bound: (total as u64).max(1 << 20),
        }
    }

    pub(super) fn make<R: Rng + ?Sized>(&self, rng: &mut R, buf: &mut Vec<u8>) {
        let tenant = self.tenants.sample(rng) as usize;
        buf.extend_from_slice(&self.tenant_ids[tenant].to_be_bytes());
        let tables = &self.tables[tenant];
        let table = tables[below_skewed(rng, tables.len() as u64) as usize];
        buf.extend_from_slice(&table.to_be_bytes());

        let start = buf.len();
        match table % 3 {
            0 => {
                buf.extend_from_slice(pick(&self.first_names, rng).as_bytes());
                buf.push(b' ');
                buf.extend_from_slice(pick(&self.last_names, rng).as_bytes());
            }
            1 => {
                let n = 1 + below(rng, 4);
                push_words(buf, rng, &self.words, n, b' ');
            }
            _ => {
                buf.extend_from_slice(b"SKU-");
                push_base36(buf, below(rng, 36u64.pow(6)), 6);
            }
        }
        while buf.len() - start < COMPOSITE_MIN_STR {
            buf.push(b' ');
            buf.extend_from_slice(pick(&self.words, rng).as_bytes());
        }
        buf.truncate(start + COMPOSITE_MAX_STR);
        buf.push(0);
        buf.extend_from_slice(&below(rng, self.pk_bound).to_be_bytes());
    }
}
