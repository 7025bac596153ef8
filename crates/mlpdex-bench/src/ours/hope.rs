//! `<index>+<scheme>`: any byte-key adapter behind a HOPE encoder ([`mlpdex::hope`]).
//!
//! [`Encoded<I>`] builds the encoder's dictionary from a 1% sample of the load set (at least
//! [`MIN_SAMPLE`] keys, as in memory-efficient-search-trees.txt §6.4.1) with a 64K-entry
//! limit, then hands `I` the encoded keys: static indexes are built from the encoded load set,
//! dynamic ones get every key encoded on its way in. Every measured operation encodes its key
//! first (into a per-thread buffer), so the figures include encoding, as a user would see them.
//!
//! The build time of the dictionary counts in `load`. Its figures go into every record:
//! compression rate over the whole load set, encode ns per input byte (a separate timed pass
//! over the load set, one thread) and dictionary bytes.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mlpdex::hope::{DEFAULT_LIMIT, Encoder, Scheme};

use crate::adapter::{BenchIndex, HopeFacts};
use crate::keys::Keys;

/// Fewest sample keys a dictionary is built from.
pub const MIN_SAMPLE: usize = 10_000;

/// The scheme the next [`Encoded::create`] uses: set by [`run_encoded`] from the index name
/// (the adapter interface has no parameters, and one process serves one index).
static SCHEME: Mutex<Option<Scheme>> = Mutex::new(None);

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Splits `base+scheme` into its parts.
pub fn split_name(name: &str) -> Option<(&str, Scheme)> {
    let (base, scheme) = name.split_once('+')?;
    Some((base, Scheme::from_name(scheme)?))
}

/// Sets the scheme for the coming `create` from an `<index>+<scheme>` name.
pub fn select_scheme(name: &str) -> anyhow::Result<()> {
    let (_, scheme) =
        split_name(name).ok_or_else(|| anyhow::anyhow!("{name:?} is not <index>+<scheme>"))?;
    *SCHEME.lock().unwrap_or_else(|e| e.into_inner()) = Some(scheme);
    Ok(())
}

/// The sample a dictionary is built from: every k-th key, 1% of the set and at least
/// [`MIN_SAMPLE`] keys (or all of them).
pub fn sample(keys: &Keys) -> Vec<&[u8]> {
    let n = keys.len();
    let want = (n / 100).max(MIN_SAMPLE).min(n).max(1);
    let step = (n / want).max(1);
    (0..n).step_by(step).map(|i| keys.get(i)).collect()
}

/// An encoder's figures on `keys`: the encoded set, compression rate and encode ns/byte.
pub fn measure(enc: &Encoder, keys: &Keys) -> (Keys, HopeFacts) {
    let mut encoded = Keys::with_capacity(keys.total_key_bytes());
    let mut buf = Vec::new();
    for k in keys.iter() {
        buf.clear();
        enc.encode_into(k, &mut buf);
        encoded.push(&buf);
    }
    // Timed separately, without the copy into the key set.
    let mut sink = 0usize;
    let start = Instant::now();
    for k in keys.iter() {
        buf.clear();
        enc.encode_into(k, &mut buf);
        sink = sink.wrapping_add(buf.len());
    }
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    let facts = HopeFacts {
        compression_rate: keys.total_key_bytes() as f64 / encoded.total_key_bytes().max(1) as f64,
        encode_ns_per_byte: secs * 1e9 / keys.total_key_bytes().max(1) as f64,
        dictionary_bytes: enc.dictionary_bytes() as u64,
    };
    (encoded, facts)
}

/// Index `I` over keys encoded by a HOPE dictionary.
#[derive(Debug)]
pub struct Encoded<I> {
    encoder: Arc<Encoder>,
    inner: I,
    facts: HopeFacts,
    build_seconds: f64,
    sample: usize,
}

/// Runs `f` on the encoding of `key`, in the thread's scratch buffer.
#[inline]
fn with_encoded<R>(enc: &Encoder, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut buf = s.borrow_mut();
        buf.clear();
        enc.encode_into(key, &mut buf);
        f(&buf)
    })
}

impl<I> Encoded<I> {
    #[inline]
    fn with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        with_encoded(&self.encoder, key, f)
    }
}

impl<I: BenchIndex> BenchIndex for Encoded<I> {
    const CAPS: crate::adapter::Caps = I::CAPS;

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        let scheme = SCHEME
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| anyhow::anyhow!("no HOPE scheme selected"))?;
        let start = Instant::now();
        let sample = sample(load_set);
        let encoder = Encoder::build(scheme, sample.iter().copied())?;
        let build_seconds = start.elapsed().as_secs_f64();
        let (encoded, facts) = measure(&encoder, load_set);
        let inner = I::create(&encoded)?;
        Ok(Encoded {
            encoder: Arc::new(encoder),
            inner,
            facts,
            build_seconds,
            sample: sample.len(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.with(key, |k| self.inner.get(k))
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let inner = &mut self.inner;
        with_encoded(&self.encoder, key, |k| inner.insert(k, value))
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.with(key, |k| self.inner.lower_bound(k))
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        self.with(start, |k| self.inner.scan(k, n))
    }

    #[inline]
    fn insert_shared(&self, key: &[u8], value: u64) -> Option<u64> {
        self.with(key, |k| self.inner.insert_shared(k, value))
    }

    fn mapped_bytes(&self) -> usize {
        self.inner.mapped_bytes()
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        let mut v = self.inner.notes(keys);
        v.push(format!(
            "HOPE {}: {} entries, dictionary {:.1} KiB, built from {} sample keys in {:.2} s; compression rate {:.2}, encoding {:.2} ns/byte",
            self.encoder.scheme().name(),
            self.encoder.entries(),
            self.facts.dictionary_bytes as f64 / 1024.0,
            self.sample,
            self.build_seconds,
            self.facts.compression_rate,
            self.facts.encode_ns_per_byte,
        ));
        v
    }

    fn hope_facts(&self) -> Option<HopeFacts> {
        Some(self.facts)
    }
}

/// One row of the `hope` sweep: an encoder's figures on a dataset.
#[derive(Clone, Debug)]
pub struct SweepRow {
    /// Scheme.
    pub scheme: Scheme,
    /// Dictionary size limit asked for.
    pub limit: usize,
    /// Entries the dictionary got.
    pub entries: usize,
    /// Compression rate, encode ns/byte (median round), dictionary bytes.
    pub facts: HopeFacts,
    /// Seconds to build the dictionary from the sample.
    pub build_seconds: f64,
}

/// Builds every `scheme` × `limit` dictionary from the sample of `keys` and measures it;
/// the encode time is the median of `rounds` passes over the whole set.
pub fn sweep(
    keys: &Keys,
    schemes: &[Scheme],
    limits: &[usize],
    rounds: usize,
) -> anyhow::Result<Vec<SweepRow>> {
    let sample = sample(keys);
    let mut rows = Vec::new();
    for &scheme in schemes {
        let limits: &[usize] = if scheme.has_limit() {
            limits
        } else {
            &[DEFAULT_LIMIT]
        };
        for &limit in limits {
            let start = Instant::now();
            let enc = Encoder::build_with_limit(scheme, sample.iter().copied(), limit)?;
            let build_seconds = start.elapsed().as_secs_f64();
            let mut times = Vec::new();
            let mut facts = None;
            for _ in 0..rounds.max(1) {
                let (encoded, f) = measure(&enc, keys);
                drop(encoded);
                times.push(f.encode_ns_per_byte);
                facts = Some(f);
            }
            times.sort_by(f64::total_cmp);
            let mut facts = facts.expect("at least one round");
            facts.encode_ns_per_byte = times[times.len() / 2];
            rows.push(SweepRow {
                scheme,
                limit,
                entries: enc.entries(),
                facts,
                build_seconds,
            });
        }
    }
    Ok(rows)
}
