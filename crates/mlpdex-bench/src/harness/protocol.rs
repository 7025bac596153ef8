//! The parent–child protocol: JSON objects, one per line each way.
//!
//! 1. The parent starts `mlpdex-bench child` and writes one [`ChildSpec`] line.
//! 2. The child builds the dataset and its round's operations and answers
//!    [`FromChild::Ready`], or [`FromChild::Failed`] when it cannot serve (an index that cannot
//!    take the dataset's keys, say).
//! 3. The parent then writes [`Request`]s: `load` is answered [`FromChild::Loaded`], `run`
//!    with [`FromChild::Measured`] or [`FromChild::Skipped`]; any request may be answered
//!    [`FromChild::Failed`].
//! 4. The parent closes the child's stdin; the child exits.
//!
//! Notes for the user (load time, memory) travel inside the answers; the child's stderr is the
//! user's terminal, for progress bars and diagnostics only.
//!
//! [`ChildSpec`]: super::spec::ChildSpec
//! [`Request`]: crate::exec::Request

use std::io::{BufRead, Write};

use anyhow::{Context, Result, bail};
use serde::{Serialize, de::DeserializeOwned};

use crate::record::Record;

/// What a child says.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
#[allow(clippy::large_enum_variant)] // one message per measurement: its size does not matter
pub enum FromChild {
    /// Dataset and operations are prepared; send requests.
    Ready,
    /// The index is loaded: the load's record when `load` is reported, and notes.
    Loaded {
        /// The load measurement, when the spec reports `load`.
        record: Option<Record>,
        /// Facts worth printing beside the results (load time, memory, structure).
        notes: Vec<String>,
    },
    /// One measurement.
    Measured {
        /// The measurement.
        record: Record,
    },
    /// The index cannot serve this run.
    Skipped {
        /// Why, in a sentence naming the index.
        why: String,
    },
    /// The child cannot go on.
    Failed {
        /// What went wrong.
        message: String,
    },
}

/// Writes `msg` as one line and flushes.
pub fn send<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<()> {
    serde_json::to_writer(&mut *w, msg).context("encoding a protocol message")?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// Reads one message; `None` at the end of input.
pub fn recv<R: BufRead, T: DeserializeOwned>(r: &mut R) -> Result<Option<T>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    match serde_json::from_str(line.trim_end()) {
        Ok(m) => Ok(Some(m)),
        Err(e) => bail!("malformed protocol message {:?}: {e}", line.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Request;

    #[test]
    fn every_message_round_trips_on_one_line() {
        let record = crate::record::tests::index_rec("fst", "c", 3.5);
        let replies = vec![
            FromChild::Ready,
            FromChild::Loaded {
                record: None,
                notes: vec!["fst: loaded\nin 2 s".into()],
            },
            FromChild::Measured {
                record: record.clone(),
            },
            FromChild::Skipped { why: "no".into() },
            FromChild::Failed {
                message: "x".into(),
            },
        ];
        let mut wire = Vec::new();
        for m in &replies {
            send(&mut wire, m).unwrap();
        }
        let requests = [Request::Load, Request::Run { run: 4, threads: 2 }];
        for m in &requests {
            send(&mut wire, m).unwrap();
        }
        let text = String::from_utf8(wire.clone()).unwrap();
        assert_eq!(text.lines().count(), replies.len() + requests.len());
        let mut r = std::io::Cursor::new(wire);
        for m in &replies {
            assert_eq!(recv::<_, FromChild>(&mut r).unwrap().as_ref(), Some(m));
        }
        for m in &requests {
            assert_eq!(recv::<_, Request>(&mut r).unwrap().as_ref(), Some(m));
        }
        assert_eq!(recv::<_, Request>(&mut r).unwrap(), None);
    }

    #[test]
    fn a_malformed_line_is_an_error_that_quotes_it() {
        let mut r = std::io::Cursor::new(b"run 3 1\n".to_vec());
        let e = recv::<_, Request>(&mut r).unwrap_err();
        assert!(e.to_string().contains("run 3 1"), "{e}");
    }
}
