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
use crate::exec::{Driver, Reply, Request};
use crate::harness::spec::HopeSpec;
use crate::keys::Keys;
use crate::record::{EncoderRecord, Measurement, Record};

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

/// The encoder a `hope` experiment names: a scheme (`double-char`, its default dictionary
/// limit) or `<scheme>-<limit>` (`alm-improved-4096`) for a scheme with a size limit.
pub fn parse_encoder(name: &str) -> Result<(Scheme, usize), String> {
    if let Some(s) = Scheme::from_name(name) {
        return Ok((s, DEFAULT_LIMIT));
    }
    let known = || {
        Scheme::ALL
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (scheme, limit) = name
        .rsplit_once('-')
        .ok_or_else(|| format!("unknown encoder {name:?} (schemes: {})", known()))?;
    let scheme = Scheme::from_name(scheme)
        .ok_or_else(|| format!("unknown encoder {name:?} (schemes: {})", known()))?;
    if !scheme.has_limit() {
        return Err(format!(
            "encoder {name:?}: {} has a fixed dictionary; name it without a limit",
            scheme.name()
        ));
    }
    let limit: usize = limit
        .parse()
        .map_err(|_| format!("encoder {name:?}: {limit:?} is not a dictionary size limit"))?;
    Ok((scheme, limit))
}

/// The encoder names of every `scheme` × `limit` (one name for a scheme without a limit).
pub fn encoder_names(schemes: &[Scheme], limits: &[usize]) -> Vec<String> {
    let mut names = Vec::new();
    for &s in schemes {
        if s.has_limit() {
            names.extend(limits.iter().map(|l| format!("{}-{l}", s.name())));
        } else {
            names.push(s.name().to_string());
        }
    }
    names
}

/// One encoder of a [`HopeSpec`], ready in a child process: the dataset and its sample.
#[derive(Debug)]
pub struct PreparedEncoder {
    name: String,
    scheme: Scheme,
    limit: usize,
    dataset: crate::dataset::Dataset,
    encoder: Option<(Encoder, f64)>,
}

impl PreparedEncoder {
    /// Loads the dataset for encoder `name` of `spec`.
    pub fn new(spec: &HopeSpec, name: &str) -> anyhow::Result<PreparedEncoder> {
        anyhow::ensure!(
            spec.indexes.iter().any(|n| n == name),
            "encoder {name:?} is not in the experiment"
        );
        let (scheme, limit) = parse_encoder(name).map_err(anyhow::Error::msg)?;
        let t = Instant::now();
        let dataset = crate::dataset::load(&spec.dataset, spec.keys, spec.seed)?;
        eprintln!(
            "{name}: dataset {}: {} keys, mean {:.1} bytes, built in {:.1} s",
            dataset.name,
            dataset.keys.len(),
            dataset.keys.mean_len(),
            t.elapsed().as_secs_f64()
        );
        Ok(PreparedEncoder {
            name: name.to_string(),
            scheme,
            limit,
            dataset,
            encoder: None,
        })
    }

    /// Answers `driver`'s requests: `load` builds the dictionary from a 1% sample (its time
    /// and size are notes), `run` 0 encodes the whole dataset, timed.
    pub fn serve(mut self, driver: &mut dyn Driver) -> anyhow::Result<()> {
        while let Some(request) = driver.next()? {
            match request {
                Request::Load => {
                    self.encoder = None;
                    let keys = &self.dataset.keys;
                    let sample = sample(keys);
                    let start = Instant::now();
                    let enc =
                        Encoder::build_with_limit(self.scheme, sample.iter().copied(), self.limit)?;
                    let secs = start.elapsed().as_secs_f64();
                    let note = format!(
                        "{}: {} dictionary entries ({:.1} KiB) from a sample of {} keys, built \
                         in {secs:.2} s",
                        self.name,
                        enc.entries(),
                        enc.dictionary_bytes() as f64 / 1024.0,
                        sample.len()
                    );
                    self.encoder = Some((enc, secs));
                    driver.loaded(None, vec![note])?;
                }
                Request::Run { run: 0, .. } => {
                    let Some((enc, build_seconds)) = &self.encoder else {
                        anyhow::bail!(
                            "{}: asked to encode before the dictionary was built",
                            self.name
                        );
                    };
                    let keys = &self.dataset.keys;
                    let (encoded, facts) = measure(enc, keys);
                    drop(encoded);
                    let n = keys.len();
                    let secs =
                        (facts.encode_ns_per_byte * keys.total_key_bytes() as f64 / 1e9).max(1e-9);
                    let r = EncoderRecord {
                        m: Measurement {
                            index: self.name.clone(),
                            dataset: self.dataset.name.clone(),
                            keys: n as u64,
                            ops: n as u64,
                            seconds: secs,
                            mops: n as f64 / secs / 1e6,
                            ns_per_op: secs * 1e9 / n.max(1) as f64,
                            ..Measurement::default()
                        },
                        scheme: self.scheme,
                        limit: self.scheme.has_limit().then_some(self.limit as u64),
                        entries: enc.entries() as u64,
                        build_seconds: *build_seconds,
                        hope: facts,
                    };
                    driver.reply(Reply::Record(Record::Encoder(r)))?;
                }
                Request::Run { run, .. } => {
                    anyhow::bail!("{}: an encoder has one measurement, not #{run}", self.name)
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_names_parse_and_typos_are_errors() {
        assert_eq!(parse_encoder("double-char").unwrap().0, Scheme::DoubleChar);
        assert_eq!(
            parse_encoder("alm-improved-4096").unwrap(),
            (Scheme::AlmImproved, 4096)
        );
        for bad in ["double-char-4096", "alm-improved-x", "quad-char", ""] {
            assert!(parse_encoder(bad).is_err(), "{bad}");
        }
        let names = encoder_names(&[Scheme::SingleChar, Scheme::AlmImproved], &[1024, 4096]);
        assert_eq!(
            names,
            ["single-char", "alm-improved-1024", "alm-improved-4096"]
        );
        for n in &names {
            parse_encoder(n).unwrap();
        }
    }

    #[test]
    fn an_encoder_child_builds_then_encodes() {
        let spec = HopeSpec {
            indexes: vec!["3-grams-1024".into()],
            dataset: "email".into(),
            keys: 20_000,
            seed: 1,
            rounds: 1,
        };
        let mut d = crate::exec::RunAll::with_requests(vec![
            Request::Load,
            Request::Run { run: 0, threads: 1 },
        ]);
        PreparedEncoder::new(&spec, "3-grams-1024")
            .unwrap()
            .serve(&mut d)
            .unwrap();
        let [Record::Encoder(r)] = d.records.as_slice() else {
            panic!("{:?}", d.records);
        };
        assert_eq!(
            (r.scheme, r.limit, r.m.ops),
            (Scheme::ThreeGrams, Some(1024), 20_000)
        );
        assert!(r.entries > 0 && r.entries <= 1024, "{r:?}");
        assert!(r.hope.compression_rate > 1.0, "{r:?}");
        assert!(d.notes.iter().any(|n| n.contains("dictionary entries")));
    }
}
