//! Error values returned by every fallible pmec operation.

use std::fmt;

/// Everything that can go wrong in pmec. Messages name the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A code parameter (k, m, l, ...) is out of range; the string says which and why.
    InvalidParameter(String),
    /// Shard/buffer lengths or counts do not match what the code expects.
    LengthMismatch(String),
    /// More shards are missing than the code can rebuild.
    TooManyErasures {
        /// Number of missing shards.
        erased: usize,
        /// Maximum the code tolerates for this pattern.
        max: usize,
    },
    /// A file's shards: more are missing or corrupt than the code can rebuild.
    TooManyBadShards {
        /// Indices of the shards whose files are absent or of the wrong size.
        missing: Vec<usize>,
        /// Indices of the shards whose checksums do not match.
        corrupt: Vec<usize>,
        /// Maximum the code tolerates.
        max: usize,
    },
    /// The chosen generator matrix is not MDS for these parameters (ISA-L's
    /// Vandermonde construction beyond its documented bounds), or a decode
    /// sub-matrix turned out singular.
    NotMds(String),
    /// A matrix that had to be inverted is singular.
    Singular,
    /// The requested SIMD instruction set is not available on this CPU.
    UnsupportedIsa(String),
    /// An I/O error (file tool), with the path it concerns.
    Io(String),
    /// A manifest or shard file is malformed.
    Format(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParameter(s) => write!(f, "invalid parameter: {s}"),
            Error::LengthMismatch(s) => write!(f, "length mismatch: {s}"),
            // A locally repairable code rebuilds some patterns of up to `max` erasures, not all.
            Error::TooManyErasures { erased, max } if erased <= max => write!(
                f,
                "unrecoverable erasures: these {erased} missing shards cannot be rebuilt (the \
                 code rebuilds up to {max}, but not every pattern of that many)"
            ),
            Error::TooManyErasures { erased, max } => write!(
                f,
                "too many erasures: {erased} shards missing, at most {max} can be rebuilt"
            ),
            Error::TooManyBadShards {
                missing,
                corrupt,
                max,
            } => write!(
                f,
                "too many erasures: {} shard(s) missing {missing:?} and {} corrupt {corrupt:?}, \
                 at most {max} can be rebuilt",
                missing.len(),
                corrupt.len()
            ),
            Error::NotMds(s) => write!(f, "matrix not MDS: {s}"),
            Error::Singular => write!(f, "matrix is singular"),
            Error::UnsupportedIsa(s) => write!(f, "unsupported instruction set: {s}"),
            Error::Io(s) => write!(f, "I/O error: {s}"),
            Error::Format(s) => write!(f, "format error: {s}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result alias used throughout pmec.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidParameter(msg.into()))
}

pub(crate) fn mismatch<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::LengthMismatch(msg.into()))
}
