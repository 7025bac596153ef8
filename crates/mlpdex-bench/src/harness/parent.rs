//! The parent's side: a child process per index and round, measurements scheduled
//! round-robin, the median round kept.
//!
//! Why a process per index: an index built after others would inherit their freed heap, and
//! its speed would depend on its place in the list; a fresh process gives every index a fresh
//! heap with every page faulted in for it on the same terms.
//!
//! Why fresh processes every round: each measures the first instance of its index in its
//! process (a reloaded instance can be slower: congee lost 30% over three reloads).
//!
//! Why round-robin over live children: on a shared machine the speed of memory-bound code
//! drifts by 20% and more over minutes as neighbours compete for the last-level cache and the
//! memory bus. Measuring every index on one (workload, mode, threads) within a few seconds of
//! each other, in an order rotated per measurement, exposes them to the same conditions, so
//! their ratios stay put even when absolute numbers drift.

use std::io::BufReader;
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, bail};

use super::protocol::{FromChild, recv, send};
use super::spec::{ChildSpec, Experiment};
use crate::exec::Request;
use crate::provenance::{Provenance, rfc3339_utc};
use crate::record::{Record, RecordKey, Spread};

/// What an experiment measured.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every measurement of every round, in the order taken.
    pub rounds: Vec<Record>,
    /// Why some (index, run) pairs were not measured, each reason once.
    pub skipped: Vec<String>,
    /// Facts the children reported beside their measurements (load times, memory, query
    /// shares), each once.
    pub notes: Vec<String>,
    /// Children that failed after they started measuring, with why: a crash, or a wrong answer
    /// a check caught. The measurements they did take are kept; the command must still fail.
    pub failures: Vec<String>,
}

/// The median round of every measurement, and what else the experiment said.
#[derive(Debug)]
pub struct Measured {
    /// One record per measurement: the median round, with its spread over the rounds.
    pub records: Vec<Record>,
    /// Reasons for skipped measurements.
    pub skipped: Vec<String>,
    /// Facts reported beside the measurements.
    pub notes: Vec<String>,
    /// Failures (see [`Outcome::failures`]).
    pub failures: Vec<String>,
}

impl Measured {
    /// An error listing the failures, if any: call it after the results are written, so a
    /// failure never loses the measurements taken.
    pub fn check(&self) -> Result<()> {
        if self.failures.is_empty() {
            Ok(())
        } else {
            bail!(
                "{} measurement(s) failed: {}",
                self.failures.len(),
                self.failures.join("; ")
            )
        }
    }
}

/// A child process holding one loaded index.
struct Child {
    name: String,
    process: std::process::Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Child {
    /// Starts `exe child` and sends it its spec; it answers `ready` once its dataset and
    /// operations are prepared.
    fn start(exe: &Path, spec: &ChildSpec) -> Result<Child> {
        let mut process = Command::new(exe)
            .arg("child")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the child process for {}", spec.index))?;
        let (Some(mut stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            bail!("child process for {} has no pipes", spec.index);
        };
        send(&mut stdin, spec)?;
        Ok(Child {
            name: spec.index.clone(),
            process,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    fn read(&mut self) -> Result<FromChild> {
        match recv(&mut self.stdout)? {
            Some(m) => Ok(m),
            None => bail!("child process for {} ended unexpectedly", self.name),
        }
    }

    fn ask(&mut self, request: Request) -> Result<FromChild> {
        send(&mut self.stdin, &request)?;
        self.read()
    }

    fn finish(self) {
        drop(self.stdin);
        let mut process = self.process;
        let _ = process.wait();
    }
}

/// Runs `spec`: every round starts a child per index (`exe child`), loads them one at a time,
/// then takes each measurement across all children, rotating their order. Progress goes to
/// stderr.
///
/// In the first round, loads go in list order: a `bloom` filter is sized after the SuRF before
/// it, and its child, which builds that SuRF itself to learn the size, comes after it anyway.
pub fn run(spec: &Experiment, exe: &Path, progress: bool) -> Result<Outcome> {
    spec.validate()?;
    let mut out = Outcome::default();
    let note = |list: &mut Vec<String>, why: String| {
        if !list.contains(&why) {
            eprintln!("  {why}");
            list.push(why);
        }
    };
    let rounds = spec.rounds();
    let (seed, keys) = spec.seed_and_keys();
    let mut base = Provenance::now(seed, rounds, keys);
    base.dram = spec.dram_description();
    // Every record names its round and the moment it was taken.
    let stamped = |mut r: Record, round: usize| {
        r.m_mut().provenance = Some(Provenance {
            round: Some(round as u32),
            date: rfc3339_utc(std::time::SystemTime::now()),
            ..base.clone()
        });
        r
    };
    for round in 0..rounds {
        // The children build datasets and operations in parallel; loads and measurements are
        // then strictly one at a time.
        let mut started = Vec::new();
        for index in spec.indexes() {
            let child = ChildSpec {
                spec: spec.clone(),
                index: index.clone(),
                round,
                progress,
            };
            started.push(Child::start(exe, &child)?);
        }
        let mut children: Vec<Option<Child>> = Vec::new();
        for mut child in started {
            match child.read() {
                Ok(FromChild::Ready) => children.push(Some(child)),
                Ok(FromChild::Failed { message }) => {
                    note(
                        &mut out.skipped,
                        format!("{}: skipped: {message}", child.name),
                    );
                    child.finish();
                }
                Ok(other) => bail!("child {} answered {other:?} before ready", child.name),
                Err(e) => {
                    note(&mut out.skipped, format!("{}: skipped: {e:#}", child.name));
                    child.finish();
                }
            }
        }
        let n = children.len();
        eprintln!("round {}/{rounds}: load", round + 1);
        for j in 0..n {
            let slot = &mut children[(j + round) % n];
            let Some(child) = slot.as_mut() else { continue };
            match child.ask(Request::Load) {
                Ok(FromChild::Loaded { record, notes }) => {
                    for n in notes {
                        // Load times and memory differ per round: print them, keep the first.
                        if round == 0 {
                            note(&mut out.notes, n);
                        } else {
                            eprintln!("  {n}");
                        }
                    }
                    out.rounds.extend(record.map(|r| stamped(r, round)));
                }
                Ok(FromChild::Failed { message }) => {
                    note(
                        &mut out.skipped,
                        format!("{}: skipped: {message}", child.name),
                    );
                    *slot = None;
                }
                Ok(other) => bail!("child {} answered {other:?} to load", child.name),
                Err(e) => {
                    note(&mut out.skipped, format!("{}: skipped: {e:#}", child.name));
                    *slot = None;
                }
            }
        }
        if children.iter().all(Option::is_none) {
            // Every index refused the dataset or failed to load; later rounds would repeat it.
            break;
        }
        for slot_spec in spec.runs(round) {
            let k = slot_spec.run;
            for &threads in &slot_spec.threads {
                eprintln!(
                    "round {}/{rounds}: {} {threads}t",
                    round + 1,
                    slot_spec.label
                );
                for j in 0..n {
                    let slot = &mut children[(j + k + round) % n];
                    let Some(child) = slot.as_mut() else { continue };
                    match child.ask(Request::Run { run: k, threads }) {
                        Ok(FromChild::Measured { record: r }) => {
                            eprintln!(
                                "  {:<16} {:>9.3} Mops/s {:>9.1} ns/op",
                                r.m().index,
                                r.m().mops,
                                r.m().ns_per_op
                            );
                            out.rounds.push(stamped(r, round));
                        }
                        Ok(FromChild::Skipped { why }) => note(&mut out.skipped, why),
                        Ok(FromChild::Failed { message }) => {
                            let why =
                                format!("{}: failed in round {}: {message}", child.name, round + 1);
                            eprintln!("  {why}; dropped from this round");
                            out.failures.push(why);
                            *slot = None;
                        }
                        Ok(other) => bail!("child {} answered {other:?} to run", child.name),
                        Err(e) => {
                            let why =
                                format!("{}: failed in round {}: {e:#}", child.name, round + 1);
                            eprintln!("  {why}; dropped from this round");
                            out.failures.push(why);
                            *slot = None;
                        }
                    }
                }
            }
        }
        for child in children.into_iter().flatten() {
            child.finish();
        }
    }
    Ok(out)
}

/// Runs `spec` and returns the median round of every measurement: rows in the order the
/// indexes were asked for (measurement order rotates), groups in the order they ran. A run that
/// measured nothing is an error naming why each index was skipped.
pub fn measure(spec: &Experiment, exe: &Path, progress: bool) -> Result<Measured> {
    let outcome = run(spec, exe, progress)?;
    if outcome.rounds.is_empty() {
        let mut why = outcome.skipped.clone();
        why.extend(outcome.failures.iter().cloned());
        bail!(
            "nothing was measured: every index was skipped ({}){}",
            why.join("; "),
            indexes_that_can(spec)
        );
    }
    let mut all = median_rounds(&outcome.rounds);
    let position = |name: &str| spec.indexes().iter().position(|e| e == name);
    let group = |r: &Record| {
        let k = r.key();
        (k.workload, k.distribution, k.mode, k.threads, k.batch)
    };
    let mut groups = Vec::new();
    for r in &all {
        if !groups.contains(&group(r)) {
            groups.push(group(r));
        }
    }
    all.sort_by_key(|r| {
        (
            groups.iter().position(|g| *g == group(r)),
            position(&r.m().index),
        )
    });
    Ok(Measured {
        records: all,
        skipped: outcome.skipped,
        notes: outcome.notes,
        failures: outcome.failures,
    })
}

/// For a `run` whose every index refused the dataset: the main indexes that take its keys,
/// as the end of the error message (a few keys of the dataset are built to learn their width).
fn indexes_that_can(spec: &Experiment) -> String {
    let Experiment::Run(run) = spec else {
        return String::new();
    };
    let Ok(sample) = crate::dataset::load(&run.dataset, 64, run.seed) else {
        return String::new();
    };
    let width = sample.keys.fixed_width();
    let can = crate::registry::main_indexes_taking(width);
    format!(
        "; the indexes that take {} keys: {}",
        match width {
            Some(w) => format!("{w}-byte"),
            None => "variable-length".into(),
        },
        can.join(", ")
    )
}

/// For each measurement (same [`Record::key`]), the record of the median round by throughput
/// (the lower middle one for an even count), with the spread of all its rounds, in first-seen
/// order.
pub fn median_rounds(records: &[Record]) -> Vec<Record> {
    let mut groups: Vec<(RecordKey, Vec<&Record>)> = Vec::new();
    for r in records {
        let key = r.key();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut g)| {
            g.sort_by(|a, b| a.m().mops.total_cmp(&b.m().mops));
            let mops: Vec<f64> = g.iter().map(|r| r.m().mops).collect();
            let mut median = g[(g.len() - 1) / 2].clone();
            median.m_mut().spread = Spread::of(&mops);
            median
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::index_rec as rec;

    #[test]
    fn median_round_is_kept_per_measurement_with_its_spread() {
        let rounds = [
            rec("a", "c", 3.0),
            rec("b", "c", 9.0),
            rec("b", "c", 1.0),
            rec("a", "c", 1.0),
            rec("a", "e", 5.0),
            rec("a", "c", 2.0),
            rec("b", "c", 4.0),
        ];
        let m = median_rounds(&rounds);
        let got: Vec<(&str, String, f64)> = m
            .iter()
            .map(|r| (r.m().index.as_str(), r.workload_name(), r.m().mops))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "c".to_string(), 2.0),
                ("b", "c".to_string(), 4.0),
                ("a", "e".to_string(), 5.0)
            ]
        );
        let s = m[0].m().spread.unwrap();
        assert_eq!((s.rounds, s.min_mops, s.max_mops), (3, 1.0, 3.0));
        assert_eq!(m[2].m().spread, None, "one round has no spread");
        // Even counts take the lower middle: never an average, always a measured record.
        let m = median_rounds(&[rec("a", "c", 1.0), rec("a", "c", 3.0)]);
        assert_eq!(m[0].m().mops, 1.0);
    }
}
