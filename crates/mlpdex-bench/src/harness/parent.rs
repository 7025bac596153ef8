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
use super::spec::{ChildSpec, RunSpec};
use crate::exec::Request;
use crate::provenance::{Provenance, rfc3339_utc};
use crate::record::Record;

/// What an experiment measured.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every measurement of every round, in the order taken.
    pub rounds: Vec<Record>,
    /// Why some (index, run) pairs were not measured, each reason once.
    pub skipped: Vec<String>,
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
/// then takes each (workload, mode, threads) measurement across all children, rotating their
/// order. Progress goes to stderr.
pub fn run(spec: &RunSpec, exe: &Path, progress: bool) -> Result<Outcome> {
    spec.validate()?;
    let mut out = Outcome::default();
    let skip = |out: &mut Outcome, why: String| {
        if !out.skipped.contains(&why) {
            eprintln!("  {why}");
            out.skipped.push(why);
        }
    };
    let runs = spec.plan_spec(None).run_list();
    let mut base = Provenance::now(spec.seed, spec.rounds, spec.keys);
    base.dram = spec.dram_ns.map(|d| format!("{d:.1} ns"));
    // Every record names its round and the moment it was taken.
    let stamped = |mut r: Record, round: usize| {
        r.provenance = Some(Provenance {
            round: Some(round as u32),
            date: rfc3339_utc(std::time::SystemTime::now()),
            ..base.clone()
        });
        r
    };
    for round in 0..spec.rounds {
        // The children build datasets and operations in parallel; loads and measurements are
        // then strictly one at a time.
        let mut started = Vec::new();
        for index in &spec.indexes {
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
                    skip(&mut out, format!("{}: skipped: {message}", child.name));
                    child.finish();
                }
                Ok(other) => bail!("child {} answered {other:?} before ready", child.name),
                Err(e) => {
                    skip(&mut out, format!("{}: skipped: {e:#}", child.name));
                    child.finish();
                }
            }
        }
        let n = children.len();
        eprintln!("round {}/{}: load", round + 1, spec.rounds);
        for j in 0..n {
            let slot = &mut children[(j + round) % n];
            let Some(child) = slot.as_mut() else { continue };
            match child.ask(Request::Load) {
                Ok(FromChild::Loaded { record, notes }) => {
                    for note in notes {
                        eprintln!("  {note}");
                    }
                    out.rounds.extend(record.map(|r| stamped(r, round)));
                }
                Ok(FromChild::Failed { message }) => {
                    skip(&mut out, format!("{}: skipped: {message}", child.name));
                    *slot = None;
                }
                Ok(other) => bail!("child {} answered {other:?} to load", child.name),
                Err(e) => {
                    skip(&mut out, format!("{}: skipped: {e:#}", child.name));
                    *slot = None;
                }
            }
        }
        if children.iter().all(Option::is_none) {
            // Every index refused the dataset or failed to load; later rounds would repeat it.
            break;
        }
        for (k, &(_, w, mode)) in runs.iter().enumerate().filter(|(_, r)| r.0 == round) {
            for &threads in &spec.threads {
                eprintln!("round {}/{}: {w} {mode} {threads}t", round + 1, spec.rounds);
                for j in 0..n {
                    let slot = &mut children[(j + k) % n];
                    let Some(child) = slot.as_mut() else { continue };
                    match child.ask(Request::Run { run: k, threads }) {
                        Ok(FromChild::Measured { record: r }) => {
                            eprintln!(
                                "  {:<12} {:>9.3} Mops/s {:>9.1} ns/op",
                                r.index, r.mops, r.ns_per_op
                            );
                            out.rounds.push(stamped(r, round));
                        }
                        Ok(FromChild::Skipped { why }) => skip(&mut out, why),
                        Ok(FromChild::Failed { message }) => {
                            eprintln!(
                                "  {}: failed, dropped from this round: {message}",
                                child.name
                            );
                            *slot = None;
                        }
                        Ok(other) => bail!("child {} answered {other:?} to run", child.name),
                        Err(e) => {
                            eprintln!("  {}: failed, dropped from this round: {e:#}", child.name);
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
pub fn measure(spec: &RunSpec, exe: &Path, progress: bool) -> Result<Vec<Record>> {
    let outcome = run(spec, exe, progress)?;
    if outcome.rounds.is_empty() {
        bail!(
            "nothing was measured: every index was skipped ({})",
            outcome.skipped.join("; ")
        );
    }
    let mut all = median_rounds(&outcome.rounds);
    let position = |name: &str| spec.indexes.iter().position(|e| e == name);
    let group = |r: &Record| (r.workload.clone(), r.mode.clone(), r.threads, r.batch);
    let mut groups = Vec::new();
    for r in &all {
        if !groups.contains(&group(r)) {
            groups.push(group(r));
        }
    }
    all.sort_by_key(|r| {
        (
            groups.iter().position(|g| *g == group(r)),
            position(&r.index),
        )
    });
    Ok(all)
}

/// For each measurement (index, workload, distribution, mode, threads), the record of the
/// median round by throughput (the lower middle one for an even count), in first-seen order.
pub fn median_rounds(records: &[Record]) -> Vec<Record> {
    let mut groups: Vec<Vec<&Record>> = Vec::new();
    for r in records {
        let same = |g: &&mut Vec<&Record>| {
            let f = g[0];
            (
                &f.index,
                &f.workload,
                &f.distribution,
                &f.mode,
                f.threads,
                f.batch,
            ) == (
                &r.index,
                &r.workload,
                &r.distribution,
                &r.mode,
                r.threads,
                r.batch,
            )
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            g.sort_by(|a, b| a.mops.total_cmp(&b.mops));
            g[(g.len() - 1) / 2].clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: &str, workload: &str, mops: f64) -> Record {
        Record {
            index: index.into(),
            dataset: "rand-8".into(),
            keys: 10,
            workload: workload.into(),
            distribution: "uniform".into(),
            mode: "independent".into(),
            threads: 1,
            batch: 1,
            ops: 10,
            seconds: 10.0 / mops / 1e6,
            mops,
            ns_per_op: 1e3 / mops,
            dram_rt_per_op: None,
            bytes_per_key: None,
            overhead_bytes_per_key: None,
            fpr: None,
            bits_per_key: None,
            compression_rate: None,
            encode_ns_per_byte: None,
            dictionary_bytes: None,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: None,
            provenance: None,
        }
    }

    #[test]
    fn median_round_is_kept_per_measurement() {
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
        let got: Vec<(&str, &str, f64)> = m
            .iter()
            .map(|r| (r.index.as_str(), r.workload.as_str(), r.mops))
            .collect();
        assert_eq!(got, [("a", "c", 2.0), ("b", "c", 4.0), ("a", "e", 5.0)]);
        // Even counts take the lower middle: never an average, always a measured record.
        let m = median_rounds(&[rec("a", "c", 1.0), rec("a", "c", 3.0)]);
        assert_eq!(m[0].mops, 1.0);
    }
}
