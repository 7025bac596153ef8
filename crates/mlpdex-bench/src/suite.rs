//! Declarative suites: a file under `bench/suites/NAME.toml` names an experiment (or several),
//! and `mlpdex-bench suite NAME` runs it and writes `docs/results/NAME.json` (the records) and
//! `docs/results/NAME.md` (the tables, by [`crate::markdown`]). Documentation quotes these
//! files; nobody types a measured number.
//!
//! A suite file:
//!
//! ```toml
//! title = "Headline: rand-8, 10M keys"
//!
//! [[experiment]]
//! indexes = ["btreemap", "cuckoo-trie"]   # or "all"
//! dataset = "rand-8"                      # every field below has the `run` default
//! keys = 10_000_000
//! workloads = ["load", "c", "e"]
//! modes = ["independent", "dependent"]
//! threads = [1]
//! rounds = 3
//! # also: distribution, seed, ops, batch, sample_every, latency_series
//!
//! [[experiment]]
//! kind = "filter"                         # range filters, as `mlpdex-bench filter`
//! indexes = ["surf-real-8", "bloom"]      # or "all": the default sweep
//! queries = ["point", "range"]            # also: dataset, keys, ops, seed, rounds
//!
//! [[experiment]]
//! kind = "hope"                           # HOPE encoders, as `mlpdex-bench hope`
//! indexes = ["double-char", "alm-improved-4096"]  # or "all"
//! dataset = "email"                       # also: keys, seed, rounds
//! ```
//!
//! Unknown fields are errors, so a typo cannot silently fall back to a default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::exec::Mode;
use crate::filter::{DEFAULT_INDEXES, QueryKind, parse_indexes};
use crate::harness::spec::{Experiment as SpecOf, FilterSpec, HopeSpec, RunSpec};
use crate::ours::hope::encoder_names;
use crate::registry;
use crate::workload::{Distribution, Workload};

/// A suite file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Title of the generated Markdown.
    pub title: String,
    /// The experiments, run in order; their records go to one file.
    #[serde(rename = "experiment")]
    pub experiments: Vec<Experiment>,
}

/// Indexes of an experiment: `"all"` or a list of names.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Indexes {
    /// `"all"` (the main indexes, no sweep variants), or one comma-separated string.
    List(String),
    /// Index names.
    Names(Vec<String>),
}

/// What an experiment measures: the `run`, `filter` or `hope` subcommand's experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Ordered indexes under workloads (the default).
    #[default]
    Run,
    /// Range filters: build, point, range and mixed queries.
    Filter,
    /// HOPE encoders: dictionary, compression rate, encoding speed.
    Hope,
}

/// One experiment. Every field but `indexes` defaults to the matching subcommand's default;
/// fields that do not apply to the experiment's kind are errors.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// `run` (default), `filter` or `hope`.
    #[serde(default)]
    pub kind: Kind,
    /// The indexes, filters or encoders (`"all"`: the main indexes, the default filter sweep,
    /// or every scheme at every default limit).
    pub indexes: Indexes,
    /// Dataset name.
    pub dataset: Option<String>,
    /// Keys to load (filters store half of them).
    pub keys: Option<usize>,
    /// Seed.
    pub seed: Option<u64>,
    /// Rounds.
    pub rounds: Option<usize>,
    /// `run`: workloads.
    pub workloads: Option<Vec<Workload>>,
    /// `run`: execution modes.
    pub modes: Option<Vec<Mode>>,
    /// `run`: thread counts.
    pub threads: Option<Vec<usize>>,
    /// `run`: key distribution.
    pub distribution: Option<Distribution>,
    /// `run` and `filter`: operations (queries) per workload.
    pub ops: Option<usize>,
    /// `run`: batch size.
    pub batch: Option<usize>,
    /// `run`: latency sampling interval.
    pub sample_every: Option<usize>,
    /// `run`: the load's latency series window (inserts per window).
    pub latency_series: Option<usize>,
    /// `filter`: query kinds.
    pub queries: Option<Vec<QueryKind>>,
}

/// The dictionary size limits of `hope`'s default sweep.
const HOPE_LIMITS: [usize; 4] = [1 << 10, 1 << 12, 1 << 14, 1 << 16];

impl Experiment {
    /// The engine's spec for this experiment, names checked.
    pub fn spec(&self, dram_ns: Option<f64>) -> Result<SpecOf> {
        let list = match &self.indexes {
            Indexes::List(s) => s.clone(),
            Indexes::Names(v) => v.join(","),
        };
        let all = list.trim() == "all";
        let given = |name: &str, set: bool| -> Result<()> {
            anyhow::ensure!(
                !set,
                "`{name}` does not apply to a {:?} experiment",
                self.kind
            );
            Ok(())
        };
        let run_only = [
            ("workloads", self.workloads.is_some()),
            ("modes", self.modes.is_some()),
            ("threads", self.threads.is_some()),
            ("distribution", self.distribution.is_some()),
            ("batch", self.batch.is_some()),
            ("sample_every", self.sample_every.is_some()),
            ("latency_series", self.latency_series.is_some()),
        ];
        let spec = match self.kind {
            Kind::Run => {
                given("queries", self.queries.is_some())?;
                let indexes = registry::resolve(&list)
                    .map_err(anyhow::Error::msg)?
                    .iter()
                    .map(|e| e.name.to_string())
                    .collect();
                SpecOf::Run(RunSpec {
                    indexes,
                    dataset: self.dataset.clone().unwrap_or_else(|| "rand-8".into()),
                    keys: self.keys.unwrap_or(10_000_000),
                    seed: self.seed.unwrap_or(42),
                    workloads: self
                        .workloads
                        .clone()
                        .unwrap_or_else(|| vec![Workload::Load, Workload::C, Workload::E]),
                    modes: self
                        .modes
                        .clone()
                        .unwrap_or_else(|| vec![Mode::Independent, Mode::Dependent]),
                    ops: self.ops,
                    distribution: self.distribution.unwrap_or(Distribution::Uniform),
                    threads: self.threads.clone().unwrap_or_else(|| vec![1]),
                    rounds: self.rounds.unwrap_or(3),
                    dram_ns,
                    dram_source: None,
                    sample_every: self.sample_every.unwrap_or(64),
                    batch: self.batch.unwrap_or(1),
                    series_window: self.latency_series.unwrap_or(0),
                })
            }
            Kind::Filter => {
                for (name, set) in run_only {
                    given(name, set)?;
                }
                let list = if all {
                    DEFAULT_INDEXES.to_string()
                } else {
                    list
                };
                let indexes = parse_indexes(&list)
                    .map_err(anyhow::Error::msg)?
                    .into_iter()
                    .map(|f| f.name)
                    .collect();
                SpecOf::Filter(FilterSpec {
                    indexes,
                    dataset: self.dataset.clone().unwrap_or_else(|| "rand-8".into()),
                    keys: self.keys.unwrap_or(10_000_000),
                    queries: self
                        .queries
                        .clone()
                        .unwrap_or_else(|| QueryKind::ALL.to_vec()),
                    ops: self.ops.unwrap_or(1_000_000),
                    seed: self.seed.unwrap_or(42),
                    rounds: self.rounds.unwrap_or(3),
                })
            }
            Kind::Hope => {
                for (name, set) in run_only {
                    given(name, set)?;
                }
                given("queries", self.queries.is_some())?;
                given("ops", self.ops.is_some())?;
                let indexes = if all {
                    encoder_names(&mlpdex::hope::Scheme::ALL, &HOPE_LIMITS)
                } else {
                    list.split(',').map(|s| s.trim().to_string()).collect()
                };
                SpecOf::Hope(HopeSpec {
                    indexes,
                    dataset: self.dataset.clone().unwrap_or_else(|| "email".into()),
                    keys: self.keys.unwrap_or(10_000_000),
                    seed: self.seed.unwrap_or(42),
                    rounds: self.rounds.unwrap_or(3),
                })
            }
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// The file of suite `name` in `dir`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.toml"))
}

/// Reads and checks suite `name` from `dir`: it parses, and every experiment makes a valid spec.
pub fn load(dir: &Path, name: &str) -> Result<Suite> {
    let p = path(dir, name);
    let text = std::fs::read_to_string(&p).with_context(|| {
        let known = names(dir).unwrap_or_default().join(", ");
        format!(
            "reading suite {name:?} ({}); suites here: {known}",
            p.display()
        )
    })?;
    let suite: Suite = toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
    anyhow::ensure!(
        !suite.experiments.is_empty(),
        "{} has no [[experiment]]",
        p.display()
    );
    for (i, e) in suite.experiments.iter().enumerate() {
        e.spec(None)
            .with_context(|| format!("{}: experiment {}", p.display(), i + 1))?;
    }
    Ok(suite)
}

/// The suites in `dir`, sorted.
pub fn names(dir: &Path) -> Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "toml" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suites_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/suites")
    }

    #[test]
    fn every_suite_in_the_repository_parses_and_validates() {
        let names = names(&suites_dir()).unwrap();
        for expected in ["headline", "scans", "50m", "filters", "hope"] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        for n in &names {
            load(&suites_dir(), n).unwrap_or_else(|e| panic!("suite {n}: {e:#}"));
        }
    }

    #[test]
    fn defaults_are_run_defaults_and_typos_are_errors() {
        let s: Suite =
            toml::from_str("title = \"t\"\n[[experiment]]\nindexes = \"all\"\n").unwrap();
        let SpecOf::Run(spec) = s.experiments[0].spec(None).unwrap() else {
            panic!("the default kind is run");
        };
        assert_eq!(spec.dataset, "rand-8");
        assert_eq!(spec.keys, 10_000_000);
        assert_eq!(spec.workloads, [Workload::Load, Workload::C, Workload::E]);
        assert_eq!((spec.rounds, spec.batch, spec.sample_every), (3, 1, 64));
        assert!(spec.indexes.contains(&"cuckoo-trie".to_string()));
        let typo = "title = \"t\"\n[[experiment]]\nindexes = \"all\"\nworkload = [\"c\"]\n";
        let e = toml::from_str::<Suite>(typo).unwrap_err().to_string();
        assert!(e.contains("workload"), "{e}");
        let bad = "title = \"t\"\n[[experiment]]\nindexes = [\"btreemap\"]\nworkloads = [\"z\"]\n";
        assert!(toml::from_str::<Suite>(bad).is_err());
        let unknown_index = "title = \"t\"\n[[experiment]]\nindexes = [\"bree\"]\n";
        let s: Suite = toml::from_str(unknown_index).unwrap();
        assert!(s.experiments[0].spec(None).is_err());
    }

    #[test]
    fn filter_and_hope_experiments_take_their_own_fields_only() {
        let s: Suite = toml::from_str(
            "title = \"t\"\n[[experiment]]\nkind = \"filter\"\nindexes = \"all\"\n\
             queries = [\"point\"]\n[[experiment]]\nkind = \"hope\"\nindexes = \"all\"\n",
        )
        .unwrap();
        let SpecOf::Filter(f) = s.experiments[0].spec(None).unwrap() else {
            panic!("filter");
        };
        assert_eq!((f.queries.len(), f.ops), (1, 1_000_000));
        assert!(f.indexes.iter().any(|n| n == "bloom-10"));
        let SpecOf::Hope(h) = s.experiments[1].spec(None).unwrap() else {
            panic!("hope");
        };
        assert_eq!(h.dataset, "email");
        assert!(h.indexes.iter().any(|n| n == "alm-improved-65536"));
        let wrong = "title = \"t\"\n[[experiment]]\nkind = \"hope\"\nindexes = \"all\"\n\
                     workloads = [\"c\"]\n";
        let s: Suite = toml::from_str(wrong).unwrap();
        let e = s.experiments[0].spec(None).unwrap_err().to_string();
        assert!(e.contains("workloads"), "{e}");
    }
}
