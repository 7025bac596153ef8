//! The child's side: read the spec, prepare the round's operations (or queries, or sample),
//! load the index (build the filter or dictionary), answer.

use std::io::{BufRead, StdinLock, StdoutLock, Write};
use std::time::Instant;

use anyhow::{Context, Result};

use super::protocol::{FromChild, recv, send};
use super::spec::{ChildSpec, Experiment, RunSpec};
use crate::exec::{self, Plan, Reply, Request};
use crate::record::Record;
use crate::{dataset, filter, registry};

/// A [`exec::Driver`] over the protocol: requests from the parent, answers to it.
struct Pipe<R, W> {
    input: R,
    output: W,
}

impl<R: BufRead, W: Write> exec::Driver for Pipe<R, W> {
    fn next(&mut self) -> Result<Option<Request>> {
        recv(&mut self.input)
    }

    fn loaded(&mut self, record: Option<Record>, notes: Vec<String>) -> Result<()> {
        send(&mut self.output, &FromChild::Loaded { record, notes })
    }

    fn reply(&mut self, reply: Reply) -> Result<()> {
        let msg = match reply {
            Reply::Record(record) => FromChild::Measured { record },
            Reply::Skipped(why) => FromChild::Skipped { why },
        };
        send(&mut self.output, &msg)
    }
}

/// `mlpdex-bench child`: serves one index for one round on stdin and stdout (the parent starts
/// it; see [`super::protocol`]).
pub fn serve() -> Result<()> {
    die_with_parent();
    let mut pipe: Pipe<StdinLock<'static>, StdoutLock<'static>> = Pipe {
        input: std::io::stdin().lock(),
        output: std::io::stdout().lock(),
    };
    let spec: ChildSpec = recv(&mut pipe.input)?
        .context("the parent sent no spec (this subcommand is run by `mlpdex-bench run`)")?;
    let result = serve_spec(&spec, &mut pipe);
    if let Err(e) = result {
        // The parent reads this in place of `ready`, `loaded` or a reply.
        let message = format!("{e:#}").replace('\n', " ");
        send(&mut pipe.output, &FromChild::Failed { message })?;
    }
    Ok(())
}

/// Asks the kernel to end this child when its parent ends. Without it, a child of a killed
/// `run` or `suite` goes on loading (up to a minute of CPU and gigabytes of memory, on a
/// machine whose next measurement wants it quiet) until it first writes to the dead pipe.
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_PDEATHSIG, signal) reads its integer arguments only and touches
        // no memory of this process; getppid cannot fail.
        let orphaned = unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            libc::getppid() == 1
        };
        // The parent may have ended before the request took effect.
        if orphaned {
            std::process::exit(1);
        }
    }
}

fn serve_spec<R: BufRead, W: Write>(spec: &ChildSpec, pipe: &mut Pipe<R, W>) -> Result<()> {
    match &spec.spec {
        Experiment::Run(run) => serve_index(run, spec, pipe),
        Experiment::Filter(f) => {
            let prepared = filter::Prepared::new(f, &spec.index)?;
            send(&mut pipe.output, &FromChild::Ready)?;
            prepared.serve(pipe)
        }
        Experiment::Hope(h) => {
            let prepared = crate::ours::hope::PreparedEncoder::new(h, &spec.index)?;
            send(&mut pipe.output, &FromChild::Ready)?;
            prepared.serve(pipe)
        }
    }
}

fn serve_index<R: BufRead, W: Write>(
    run: &RunSpec,
    spec: &ChildSpec,
    pipe: &mut Pipe<R, W>,
) -> Result<()> {
    let entry = registry::resolve(&spec.index).map_err(anyhow::Error::msg)?;
    let [entry] = entry.as_slice() else {
        anyhow::bail!("a child serves exactly one index, not {:?}", spec.index);
    };
    let t = Instant::now();
    let ds = dataset::load(&run.dataset, run.keys, run.seed)?;
    eprintln!(
        "{}: dataset {}: {} keys (mean {:.1} bytes), {} in reserve, built in {:.1} s",
        entry.name,
        ds.name,
        ds.keys.len(),
        ds.keys.mean_len(),
        ds.reserve.len(),
        t.elapsed().as_secs_f64()
    );
    let plan = Plan::prepare(
        ds,
        &run.plan_spec(Some(spec.round)),
        run.dram_ns,
        spec.progress,
    )?;
    prefault_heap(plan.dataset.keys.len());
    send(&mut pipe.output, &FromChild::Ready)?;
    (entry.run)(entry.name, &plan, pipe)
}

/// Faults in heap pages before the timed load: allocates, touches and frees a block of about
/// 128 bytes per key (at most 2 GiB). jemalloc keeps the freed pages (purging is off, see
/// `alloc.rs`) and serves the index's allocations from them, so the load times insertion rather
/// than the kernel's first-touch page faults and compaction, without the layout history a
/// previous instance of the index would leave.
fn prefault_heap(keys: usize) {
    let bytes = keys.saturating_mul(128).clamp(64 << 20, 2 << 30);
    let mut block = vec![0u8; bytes];
    for page in block.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(&block);
}
