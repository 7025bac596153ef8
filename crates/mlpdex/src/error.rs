//! The one error type of the library.
//!
//! Every fallible operation returns [`Error`]. Variants carry the data a caller needs to act
//! (the offending key, the sizes involved) and their `Display` says what to do about it. The enum
//! is `#[non_exhaustive]`: structures added later may add variants.

use core::fmt;

/// Errors returned by mlpdex structures and builders.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A builder received keys out of order: `got` came after `previous` but sorts before it.
    OutOfOrder {
        /// The key added before the offending one.
        previous: Vec<u8>,
        /// The offending key.
        got: Vec<u8>,
    },
    /// A builder received the same key twice in a row.
    DuplicateKey {
        /// The repeated key.
        key: Vec<u8>,
    },
    /// A key is longer than the structure supports.
    KeyTooLong {
        /// Length of the rejected key in bytes.
        len: usize,
        /// Largest length the structure accepts.
        max: usize,
    },
    /// A key does not have the width an integer-keyed structure requires.
    KeyWidth {
        /// Length of the rejected key in bytes.
        len: usize,
        /// The width the structure requires.
        expected: usize,
    },
    /// The operating system refused memory.
    OutOfMemory {
        /// Size of the refused request in bytes.
        bytes: usize,
    },
    /// A serialized buffer is not in the expected format.
    Format {
        /// What was wrong, e.g. "bad magic", "truncated level 3".
        what: &'static str,
        /// Byte offset in the buffer where the problem was found.
        offset: usize,
    },
    /// A serialized buffer has a format version this build cannot read.
    Version {
        /// Version found in the buffer.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// The input is larger than the structure's format can address.
    Capacity {
        /// What overflowed, e.g. "LOUDS-Sparse labels exceed 2^32".
        what: &'static str,
    },
    /// A configuration value is outside the range the structure supports.
    InvalidConfig {
        /// Which setting, and the range it accepts, e.g. "symbol_bits must be 1..=5".
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfOrder { previous, got } => write!(
                f,
                "keys out of order: {} was added after {}; sort the input (lexicographic byte order) before building",
                crate::key::Escaped(got),
                crate::key::Escaped(previous)
            ),
            Error::DuplicateKey { key } => write!(
                f,
                "duplicate key {}; remove duplicates before building",
                crate::key::Escaped(key)
            ),
            Error::KeyTooLong { len, max } => {
                write!(
                    f,
                    "key of {len} bytes exceeds this structure's limit of {max} bytes"
                )
            }
            Error::KeyWidth { len, expected } => write!(
                f,
                "key of {len} bytes given to a structure that takes only {expected}-byte keys (see mlpdex::key::u64_to_key)"
            ),
            Error::OutOfMemory { bytes } => {
                write!(f, "the operating system refused a mapping of {bytes} bytes")
            }
            Error::Format { what, offset } => {
                write!(f, "malformed buffer at byte {offset}: {what}")
            }
            Error::Version { found, supported } => write!(
                f,
                "buffer has format version {found}, this build reads versions up to {supported}; rebuild the structure or upgrade mlpdex"
            ),
            Error::Capacity { what } => {
                write!(
                    f,
                    "input too large: {what}; split it into several structures"
                )
            }
            Error::InvalidConfig { what } => write!(f, "invalid configuration: {what}"),
        }
    }
}

impl std::error::Error for Error {}
