//! The experiment engine: one protocol between the parent process and the child processes that
//! each hold one index.
//!
//! - [`spec`]: what an experiment is ([`spec::RunSpec`]), serialized whole to each child. The
//!   child never re-parses the command line: the spec is the protocol.
//! - [`protocol`]: the messages, one JSON object per line each way.
//! - [`parent`]: starts a child per index and round, schedules the measurements round-robin,
//!   keeps the median round of each measurement with its spread.
//! - [`child`]: builds the dataset and operations from the spec, loads its index and answers.
//!
//! Why a process per index and round, and why round-robin: see [`parent`].

pub mod child;
pub mod parent;
pub mod protocol;
pub mod spec;
