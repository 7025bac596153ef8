//! What an experiment is: the parent builds an [`Experiment`] from the command line (or a
//! suite file), and every child gets it whole, as JSON, with the index and round it serves
//! ([`ChildSpec`]). Three kinds share the engine: [`RunSpec`] (ordered indexes under
//! workloads), [`FilterSpec`] (range filters, `filter`) and [`HopeSpec`] (HOPE encoders,
//! `hope`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::exec::{Mode, PlanSpec};
use crate::workload::{Distribution, Workload};

/// One `run` experiment: indexes × workloads × modes × thread counts on one dataset, for a
/// number of rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Registered index names, in the order rows are reported.
    pub indexes: Vec<String>,
    /// Dataset name (see `mlpdex-bench list`), e.g. `rand-8` or `u64:PATH`.
    pub dataset: String,
    /// Keys to load.
    pub keys: usize,
    /// Seed of the dataset and the operations.
    pub seed: u64,
    /// Workloads in order; `load` among them only says whether the load is reported.
    pub workloads: Vec<Workload>,
    /// Execution modes in order.
    pub modes: Vec<Mode>,
    /// Operations per workload; `None` for [`crate::exec::default_ops`].
    pub ops: Option<usize>,
    /// Key-choice distribution of the workloads.
    pub distribution: Distribution,
    /// Thread counts each workload runs with.
    pub threads: Vec<usize>,
    /// Rounds; each figure reported is the median round.
    pub rounds: usize,
    /// Latency of one dependent DRAM access, for the `DRAM rt` column; `None` when not probed.
    pub dram_ns: Option<f64>,
    /// Where that figure comes from (`274 ns (cached, probed 3 h ago at load 0.12)`), for the
    /// records' provenance.
    #[serde(default)]
    pub dram_source: Option<String>,
    /// Time every `sample_every`-th operation for latency percentiles (a power of two; 0: off).
    pub sample_every: usize,
    /// Reads and lower bounds go to the index in groups of up to this many (1: one by one).
    pub batch: usize,
    /// Record the load's latency over time in windows of this many inserts (0: off).
    #[serde(default)]
    pub series_window: usize,
}

impl RunSpec {
    /// The operation-generation parameters, for a process that prepares only `round` (`None`:
    /// every round).
    pub fn plan_spec(&self, round: Option<usize>) -> PlanSpec {
        PlanSpec {
            workloads: self.workloads.clone(),
            modes: self.modes.clone(),
            ops: self.ops,
            distribution: self.distribution,
            threads: self.threads.clone(),
            seed: self.seed,
            rounds: self.rounds.max(1),
            only_round: round,
            sample_every: self.sample_every,
            batch: self.batch,
            series_window: self.series_window,
        }
    }

    /// Checks what the command line's parsers cannot: non-empty lists, positive counts.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.indexes.is_empty(), "no index to measure");
        anyhow::ensure!(
            !self.modes.is_empty() && !self.workloads.is_empty() && !self.threads.is_empty(),
            "--mode, --threads and --workload each need at least one value"
        );
        anyhow::ensure!(
            !self.threads.contains(&0),
            "--threads takes positive thread counts"
        );
        anyhow::ensure!(self.keys > 0, "--keys must be at least 1");
        anyhow::ensure!(self.rounds > 0, "--repeat must be at least 1");
        anyhow::ensure!(
            self.batch > 0,
            "--batch must be at least 1 (1: one operation at a time)"
        );
        anyhow::ensure!(
            self.sample_every == 0 || self.sample_every.is_power_of_two(),
            "--sample-every must be a power of two (or 0 to turn latency sampling off), not {}",
            self.sample_every
        );
        Ok(())
    }
}

/// One `filter` experiment (memory-efficient-search-trees.txt §4.3): every filter is built
/// from a random half of the dataset and answers point, range or mixed queries drawn from all
/// of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilterSpec {
    /// Filter names as `filter --index` takes them, in the order rows are reported (a `bloom`
    /// takes its size from the SuRF before it).
    pub indexes: Vec<String>,
    /// Dataset name.
    pub dataset: String,
    /// Dataset size; half of it is stored.
    pub keys: usize,
    /// Query workloads, in order.
    pub queries: Vec<crate::filter::QueryKind>,
    /// Queries per workload.
    pub ops: usize,
    /// Seed of the dataset, the stored half, the queries and the Bloom filters' hashing.
    pub seed: u64,
    /// Rounds; each figure reported is the median round.
    pub rounds: usize,
}

/// One `hope` experiment (memory-efficient-search-trees.txt ch. 6): each encoder's dictionary
/// is built from a 1% sample of the dataset, then the whole dataset is encoded, timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HopeSpec {
    /// Encoder names: a scheme (`double-char`) or, for schemes with a dictionary size limit,
    /// `<scheme>-<limit>` (`alm-improved-4096`); see [`crate::ours::hope::parse_encoder`].
    pub indexes: Vec<String>,
    /// Dataset name.
    pub dataset: String,
    /// Dataset size.
    pub keys: usize,
    /// Seed of the dataset.
    pub seed: u64,
    /// Rounds; each figure reported is the median round.
    pub rounds: usize,
}

/// Any experiment the engine runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "experiment", rename_all = "kebab-case")]
pub enum Experiment {
    /// Ordered indexes under workloads.
    Run(RunSpec),
    /// Range filters.
    Filter(FilterSpec),
    /// HOPE encoders.
    Hope(HopeSpec),
}

/// One measurement each child takes per round: its position (the `run` of
/// [`crate::exec::Request::Run`]) and the thread counts to take it with.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSlot {
    /// Position among the experiment's measurements.
    pub run: usize,
    /// What it is, for progress lines (`c dependent`, `point queries`, `encode`).
    pub label: String,
    /// Thread counts.
    pub threads: Vec<usize>,
}

impl Experiment {
    /// The indexes (filters, encoders), in report order.
    pub fn indexes(&self) -> &[String] {
        match self {
            Experiment::Run(s) => &s.indexes,
            Experiment::Filter(s) => &s.indexes,
            Experiment::Hope(s) => &s.indexes,
        }
    }

    /// Rounds.
    pub fn rounds(&self) -> usize {
        match self {
            Experiment::Run(s) => s.rounds,
            Experiment::Filter(s) => s.rounds,
            Experiment::Hope(s) => s.rounds,
        }
    }

    /// (seed, keys asked for), for provenance.
    pub fn seed_and_keys(&self) -> (u64, usize) {
        match self {
            Experiment::Run(s) => (s.seed, s.keys),
            Experiment::Filter(s) => (s.seed, s.keys),
            Experiment::Hope(s) => (s.seed, s.keys),
        }
    }

    /// The DRAM figure with its source, as the records' provenance states it.
    pub fn dram_description(&self) -> Option<String> {
        match self {
            Experiment::Run(s) => s
                .dram_source
                .clone()
                .or_else(|| s.dram_ns.map(|d| format!("{d:.1} ns"))),
            _ => None,
        }
    }

    /// The measurements of `round`, after the load.
    pub fn runs(&self, round: usize) -> Vec<RunSlot> {
        match self {
            Experiment::Run(s) => s
                .plan_spec(None)
                .run_list()
                .into_iter()
                .enumerate()
                .filter(|(_, r)| r.0 == round)
                .map(|(k, (_, w, mode))| RunSlot {
                    run: k,
                    label: format!("{w} {mode}"),
                    threads: s.threads.clone(),
                })
                .collect(),
            Experiment::Filter(s) => s
                .queries
                .iter()
                .enumerate()
                .map(|(k, q)| RunSlot {
                    run: k,
                    label: format!("{q} queries"),
                    threads: vec![1],
                })
                .collect(),
            Experiment::Hope(_) => vec![RunSlot {
                run: 0,
                label: "encode".into(),
                threads: vec![1],
            }],
        }
    }

    /// Checks what the parsers cannot: non-empty lists, positive counts.
    pub fn validate(&self) -> anyhow::Result<()> {
        match self {
            Experiment::Run(s) => s.validate(),
            Experiment::Filter(s) => {
                anyhow::ensure!(!s.indexes.is_empty(), "no filter to measure");
                anyhow::ensure!(
                    !s.queries.is_empty(),
                    "--query needs at least one of point, range, mixed"
                );
                anyhow::ensure!(
                    s.keys >= 2,
                    "the filter benchmark stores half of the keys: --keys must be at least 2"
                );
                anyhow::ensure!(s.ops > 0, "--ops must be at least 1");
                anyhow::ensure!(s.rounds > 0, "--repeat must be at least 1");
                crate::filter::parse_indexes(&s.indexes.join(",")).map_err(anyhow::Error::msg)?;
                Ok(())
            }
            Experiment::Hope(s) => {
                anyhow::ensure!(!s.indexes.is_empty(), "no encoder to measure");
                anyhow::ensure!(s.keys > 0, "--keys must be at least 1");
                anyhow::ensure!(s.rounds > 0, "--repeat must be at least 1");
                for name in &s.indexes {
                    crate::ours::hope::parse_encoder(name).map_err(anyhow::Error::msg)?;
                }
                Ok(())
            }
        }
    }
}

/// What one child serves: one index, one round of an [`Experiment`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildSpec {
    /// The experiment.
    pub spec: Experiment,
    /// The index this child loads.
    pub index: String,
    /// The round whose operations it prepares and runs.
    pub round: usize,
    /// Whether it may draw progress bars on stderr (the parent's stdout is a terminal).
    pub progress: bool,
}

/// Serde through the names the command line uses (`Display` and `FromStr`), so a spec reads
/// like the command that made it.
macro_rules! serde_by_name {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                name.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
serde_by_name!(Workload, Mode, Distribution);

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> RunSpec {
        RunSpec {
            indexes: vec!["btreemap".into(), "fst".into()],
            dataset: "u64:/data/osm keys".into(),
            keys: 12_345,
            seed: 7,
            workloads: Workload::parse_list("load,c,scan-100,lower-bound").unwrap(),
            modes: vec![Mode::Independent, Mode::Dependent],
            ops: Some(999),
            distribution: Distribution::Zipfian,
            threads: vec![1, 2, 4],
            rounds: 3,
            dram_ns: Some(286.5),
            dram_source: Some("286.5 ns (probed now, load 0.10)".into()),
            sample_every: 32,
            batch: 16,
            series_window: 100_000,
        }
    }

    #[test]
    fn a_spec_round_trips_through_the_protocol_as_names() {
        let child = ChildSpec {
            spec: Experiment::Run(sample()),
            index: "fst".into(),
            round: 2,
            progress: false,
        };
        let line = serde_json::to_string(&child).unwrap();
        assert!(!line.contains('\n'), "one line on the wire");
        assert!(line.contains(r#""workloads":["load","c","scan-100","lower-bound"]"#));
        assert!(line.contains(r#""modes":["independent","dependent"]"#));
        assert!(line.contains(r#""distribution":"zipfian""#));
        assert_eq!(serde_json::from_str::<ChildSpec>(&line).unwrap(), child);
    }

    #[test]
    fn filter_and_hope_specs_round_trip_too() {
        let specs = [
            Experiment::Filter(FilterSpec {
                indexes: vec!["surf-real-8+double-char".into(), "bloom".into()],
                dataset: "email".into(),
                keys: 1000,
                queries: vec![crate::filter::QueryKind::Range],
                ops: 10,
                seed: 3,
                rounds: 2,
            }),
            Experiment::Hope(HopeSpec {
                indexes: vec!["double-char".into(), "alm-improved-4096".into()],
                dataset: "email".into(),
                keys: 1000,
                seed: 3,
                rounds: 1,
            }),
        ];
        for spec in specs {
            spec.validate().unwrap();
            let child = ChildSpec {
                spec,
                index: "bloom".into(),
                round: 1,
                progress: true,
            };
            let line = serde_json::to_string(&child).unwrap();
            assert_eq!(serde_json::from_str::<ChildSpec>(&line).unwrap(), child);
        }
    }

    #[test]
    fn unknown_names_in_a_spec_are_errors_that_name_them() {
        let line = serde_json::to_string(&sample())
            .unwrap()
            .replace("scan-100", "scan-x");
        let e = serde_json::from_str::<RunSpec>(&line).unwrap_err();
        assert!(e.to_string().contains("scan-x"), "{e}");
    }

    #[test]
    fn validation_refuses_empty_lists_and_zero_counts() {
        assert!(sample().validate().is_ok());
        for broken in [
            RunSpec {
                indexes: vec![],
                ..sample()
            },
            RunSpec {
                threads: vec![1, 0],
                ..sample()
            },
            RunSpec {
                modes: vec![],
                ..sample()
            },
            RunSpec {
                keys: 0,
                ..sample()
            },
            RunSpec {
                rounds: 0,
                ..sample()
            },
            RunSpec {
                sample_every: 24,
                ..sample()
            },
            RunSpec {
                batch: 0,
                ..sample()
            },
        ] {
            assert!(broken.validate().is_err(), "{broken:?}");
        }
    }

    #[test]
    fn the_plan_spec_keeps_every_parameter() {
        let s = sample();
        let p = s.plan_spec(Some(1));
        assert_eq!(p.workloads, s.workloads);
        assert_eq!(p.modes, s.modes);
        assert_eq!(
            (p.ops, p.seed, p.rounds, p.only_round),
            (Some(999), 7, 3, Some(1))
        );
        assert_eq!(p.threads, vec![1, 2, 4]);
    }
}
