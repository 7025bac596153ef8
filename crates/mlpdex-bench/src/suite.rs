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
//! # also: distribution, seed, ops, batch, sample_every
//! ```
//!
//! Unknown fields are errors, so a typo cannot silently fall back to a default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::exec::Mode;
use crate::harness::spec::RunSpec;
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

/// One `run` experiment; every field but `indexes` defaults to `mlpdex-bench run`'s default.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// The indexes.
    pub indexes: Indexes,
    /// Dataset name.
    #[serde(default = "defaults::dataset")]
    pub dataset: String,
    /// Keys to load.
    #[serde(default = "defaults::keys")]
    pub keys: usize,
    /// Workloads.
    #[serde(default = "defaults::workloads")]
    pub workloads: Vec<Workload>,
    /// Execution modes.
    #[serde(default = "defaults::modes")]
    pub modes: Vec<Mode>,
    /// Thread counts.
    #[serde(default = "defaults::threads")]
    pub threads: Vec<usize>,
    /// Key distribution.
    #[serde(default = "defaults::distribution")]
    pub distribution: Distribution,
    /// Seed.
    #[serde(default = "defaults::seed")]
    pub seed: u64,
    /// Operations per workload (default: the workload's own).
    #[serde(default)]
    pub ops: Option<usize>,
    /// Rounds.
    #[serde(default = "defaults::rounds")]
    pub rounds: usize,
    /// Batch size.
    #[serde(default = "defaults::batch")]
    pub batch: usize,
    /// Latency sampling interval.
    #[serde(default = "defaults::sample_every")]
    pub sample_every: usize,
}

mod defaults {
    use super::*;
    pub fn dataset() -> String {
        "rand-8".into()
    }
    pub fn keys() -> usize {
        10_000_000
    }
    pub fn workloads() -> Vec<Workload> {
        vec![Workload::Load, Workload::C, Workload::E]
    }
    pub fn modes() -> Vec<Mode> {
        vec![Mode::Independent, Mode::Dependent]
    }
    pub fn threads() -> Vec<usize> {
        vec![1]
    }
    pub fn distribution() -> Distribution {
        Distribution::Uniform
    }
    pub fn seed() -> u64 {
        42
    }
    pub fn rounds() -> usize {
        3
    }
    pub fn batch() -> usize {
        1
    }
    pub fn sample_every() -> usize {
        64
    }
}

impl Experiment {
    /// The engine's spec for this experiment, index names checked.
    pub fn spec(&self, dram_ns: Option<f64>) -> Result<RunSpec> {
        let list = match &self.indexes {
            Indexes::List(s) => s.clone(),
            Indexes::Names(v) => v.join(","),
        };
        let indexes = registry::resolve(&list)
            .map_err(anyhow::Error::msg)?
            .iter()
            .map(|e| e.name.to_string())
            .collect();
        let spec = RunSpec {
            indexes,
            dataset: self.dataset.clone(),
            keys: self.keys,
            seed: self.seed,
            workloads: self.workloads.clone(),
            modes: self.modes.clone(),
            ops: self.ops,
            distribution: self.distribution,
            threads: self.threads.clone(),
            rounds: self.rounds,
            dram_ns,
            sample_every: self.sample_every,
            batch: self.batch,
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
        for expected in ["headline", "scans", "50m"] {
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
        let spec = s.experiments[0].spec(None).unwrap();
        assert_eq!(spec.dataset, "rand-8");
        assert_eq!(spec.keys, 10_000_000);
        assert_eq!(spec.workloads, defaults::workloads());
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
}
