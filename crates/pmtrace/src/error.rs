//! [`TraceError`]: every way reading, writing or importing a trace can fail.
//!
//! An error always says *where* ([`Location`]: a byte offset for binary input, a line number and
//! the offending text for text input, an event index for writers) and *what* ([`ErrorKind`]).
//! Its [`Display`](fmt::Display) form is a single line a user can act on, e.g.
//!
//! ```text
//! byte 70 (block 0): checksum mismatch (stored 0x1c291ca3, computed 0x8a1f03b2)
//! line 12: invalid hex in value: `00zz` (line: `t0 store pc=0x10 addr=0x40 size=2 value=00zz`)
//! ```

use std::error::Error;
use std::fmt;
use std::io;

/// Longest excerpt of an offending input line kept in an error (in characters).
pub const MAX_EXCERPT_CHARS: usize = 80;

/// Where in the input (or output) an error was detected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// No meaningful position (e.g. opening a file failed).
    Unknown,
    /// A byte offset into binary input, with the block and record being decoded when known.
    Byte {
        /// Offset from the start of the input, in bytes.
        offset: u64,
        /// 0-based index of the block being read, when inside one.
        block: Option<u64>,
        /// 0-based index of the record within that block, when decoding one.
        record: Option<u32>,
    },
    /// A 1-based line number of text input and the (truncated, escaped) offending line.
    Line {
        /// 1-based line number.
        line: u64,
        /// The line's text, at most [`MAX_EXCERPT_CHARS`] characters, control characters escaped.
        text: String,
    },
    /// The 0-based index of the event a writer was given.
    Event(u64),
}

impl Location {
    /// A byte offset outside any block.
    pub fn byte(offset: u64) -> Location {
        Location::Byte {
            offset,
            block: None,
            record: None,
        }
    }

    /// A line of text input; `text` is truncated and escaped here.
    pub fn line(line: u64, text: &str) -> Location {
        Location::Line {
            line,
            text: excerpt(text),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Unknown => Ok(()),
            Location::Byte {
                offset,
                block,
                record,
            } => {
                write!(f, "byte {offset}")?;
                match (block, record) {
                    (Some(b), Some(r)) => write!(f, " (block {b}, record {r})"),
                    (Some(b), None) => write!(f, " (block {b})"),
                    _ => Ok(()),
                }
            }
            Location::Line { line, .. } => write!(f, "line {line}"),
            Location::Event(i) => write!(f, "event #{i}"),
        }
    }
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader or writer failed (other than by ending early).
    Io {
        /// What was being done (e.g. "reading block header", "opening `t.pmt`").
        context: String,
        /// The I/O error.
        source: io::Error,
    },
    /// The input does not start with the `.pmt` magic bytes.
    BadMagic {
        /// The first bytes found (at most 8).
        found: Vec<u8>,
    },
    /// The `.pmt` format version is not one this library reads.
    UnsupportedVersion {
        /// The version stored in the file.
        found: u32,
        /// The version this library supports.
        supported: u32,
    },
    /// A header field is invalid (zero threads, over-long name, invalid UTF-8, unknown flags...).
    BadHeader {
        /// Which field and why.
        reason: String,
    },
    /// The header's CRC32 does not match its contents.
    HeaderChecksum {
        /// CRC stored in the file.
        stored: u32,
        /// CRC computed over the header bytes read.
        computed: u32,
    },
    /// The input ends in the middle of a structure.
    Truncated {
        /// The structure that was cut short.
        what: String,
    },
    /// The input ends cleanly after a block but the trailer is missing (a truncated trace).
    MissingTrailer {
        /// Blocks read before the end.
        blocks: u64,
        /// Events read before the end.
        events: u64,
    },
    /// A block frame is malformed (unknown frame kind, zero or over-large length, bad count).
    BadBlock {
        /// Why.
        reason: String,
    },
    /// A block's payload CRC32 does not match.
    BlockChecksum {
        /// CRC stored in the block header.
        stored: u32,
        /// CRC computed over the payload.
        computed: u32,
    },
    /// A record inside a block cannot be decoded (truncated, over-long varint, reserved bits).
    BadRecord {
        /// Why.
        reason: String,
    },
    /// An operation code or name that is not an [`Op`](crate::Op).
    UnknownOp {
        /// The code (binary) or name (text) found.
        found: String,
    },
    /// An event names a thread the header does not declare.
    ThreadOutOfRange {
        /// The thread found.
        thread: u64,
        /// The header's thread count.
        threads: u16,
    },
    /// A store value is longer than the access size.
    ValueLongerThanSize {
        /// Value bytes.
        value_len: usize,
        /// Access size.
        size: u64,
    },
    /// An access size above [`MAX_ACCESS_BYTES`](crate::MAX_ACCESS_BYTES).
    SizeTooLarge {
        /// The size found.
        size: u64,
        /// The largest allowed.
        max: u64,
    },
    /// An event whose fields do not fit its operation (e.g. a fence with an address).
    InvalidEvent {
        /// Why.
        reason: String,
    },
    /// The trailer is malformed or disagrees with what was read.
    BadTrailer {
        /// Why.
        reason: String,
    },
    /// Bytes follow the trailer.
    TrailingData,
    /// A text line does not follow the expected syntax.
    Syntax {
        /// What was expected.
        reason: String,
    },
    /// A field that must be hexadecimal is not.
    InvalidHex {
        /// The field.
        field: &'static str,
        /// The offending text (truncated).
        text: String,
    },
    /// A numeric field cannot be parsed or does not fit its type.
    InvalidNumber {
        /// The field.
        field: &'static str,
        /// The offending text (truncated).
        text: String,
    },
    /// A time stamp (cycle, tick) goes backwards.
    NonMonotonic {
        /// The time stamp's name.
        what: &'static str,
        /// The previous value.
        previous: u64,
        /// The (smaller) value found.
        current: u64,
    },
    /// A text line is longer than the parser accepts.
    LineTooLong {
        /// The limit in bytes.
        max: usize,
    },
    /// A text line is not valid UTF-8.
    InvalidUtf8,
    /// The content matches no known trace format.
    UnknownFormat {
        /// 1-based number of the first non-comment line (0: there is none).
        line: u64,
        /// That line (truncated, escaped); empty if there is none.
        first_line: String,
    },
    /// A writer was used after it had already failed.
    WriterFailed,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io { context, source } => write!(f, "I/O error while {context}: {source}"),
            ErrorKind::BadMagic { found } => {
                write!(f, "bad magic: not a .pmt trace (found ")?;
                write_bytes_hex(f, found)?;
                write!(f, ", expected ")?;
                write_bytes_hex(f, crate::header::MAGIC)?;
                write!(f, ")")
            }
            ErrorKind::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported format version {found} (this library reads version {supported})"
            ),
            ErrorKind::BadHeader { reason } => write!(f, "bad header: {reason}"),
            ErrorKind::HeaderChecksum { stored, computed } => write!(
                f,
                "header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
            ErrorKind::Truncated { what } => write!(f, "truncated input: {what}"),
            ErrorKind::MissingTrailer { blocks, events } => write!(
                f,
                "truncated trace: input ends after {blocks} blocks ({events} events) without the trailer"
            ),
            ErrorKind::BadBlock { reason } => write!(f, "bad block: {reason}"),
            ErrorKind::BlockChecksum { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
            ErrorKind::BadRecord { reason } => write!(f, "bad record: {reason}"),
            ErrorKind::UnknownOp { found } => write!(f, "unknown op `{found}`"),
            ErrorKind::ThreadOutOfRange { thread, threads } => write!(
                f,
                "thread {thread} out of range (the trace declares {threads} thread(s))"
            ),
            ErrorKind::ValueLongerThanSize { value_len, size } => write!(
                f,
                "value longer than size ({value_len} value bytes for a {size}-byte access)"
            ),
            ErrorKind::SizeTooLarge { size, max } => {
                write!(f, "access size {size} too large (max {max})")
            }
            ErrorKind::InvalidEvent { reason } => write!(f, "invalid event: {reason}"),
            ErrorKind::BadTrailer { reason } => write!(f, "bad trailer: {reason}"),
            ErrorKind::TrailingData => write!(f, "unexpected bytes after the trailer"),
            ErrorKind::Syntax { reason } => write!(f, "syntax error: {reason}"),
            ErrorKind::InvalidHex { field, text } => {
                write!(f, "invalid hex in {field}: `{text}`")
            }
            ErrorKind::InvalidNumber { field, text } => {
                write!(f, "invalid number in {field}: `{text}`")
            }
            ErrorKind::NonMonotonic {
                what,
                previous,
                current,
            } => write!(
                f,
                "{what} goes backwards ({current} after {previous}); {what}s must be non-decreasing"
            ),
            ErrorKind::LineTooLong { max } => write!(f, "line longer than {max} bytes"),
            ErrorKind::InvalidUtf8 => write!(f, "line is not valid UTF-8"),
            ErrorKind::UnknownFormat { line, first_line } => {
                write!(
                    f,
                    "unrecognised trace format (expected .pmt, a pmlab text dump `t0 store pc=..`, \
                     a PMWeaver dump `@PC P|V C|W vaddr size data tick` or `hexaddr READ|WRITE cycle`)"
                )?;
                if *line == 0 && first_line.is_empty() {
                    write!(f, "; the input is empty or holds only comments")
                } else if *line == 0 {
                    write!(f, "; {first_line}")
                } else {
                    write!(f, "; first non-comment line (line {line}): `{first_line}`")
                }
            }
            ErrorKind::WriterFailed => write!(f, "writer used after an earlier error"),
        }
    }
}

fn write_bytes_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    if bytes.is_empty() {
        return write!(f, "no bytes");
    }
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

/// An error reading, writing, importing or detecting a trace: a [`Location`] and an [`ErrorKind`].
#[derive(Debug)]
pub struct TraceError {
    kind: ErrorKind,
    location: Location,
}

impl TraceError {
    /// An error of `kind` at `location`.
    pub fn new(kind: ErrorKind, location: Location) -> TraceError {
        TraceError { kind, location }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Where it went wrong.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The byte offset, for errors in binary input.
    pub fn byte_offset(&self) -> Option<u64> {
        match self.location {
            Location::Byte { offset, .. } => Some(offset),
            _ => None,
        }
    }

    /// The 1-based line number, for errors in text input.
    pub fn line(&self) -> Option<u64> {
        match self.location {
            Location::Line { line, .. } => Some(line),
            _ => None,
        }
    }

    /// True when the input ended early (truncated structure or missing trailer).
    pub fn is_truncation(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Truncated { .. } | ErrorKind::MissingTrailer { .. }
        )
    }

    pub(crate) fn io(context: impl Into<String>, source: io::Error, location: Location) -> Self {
        TraceError::new(
            ErrorKind::Io {
                context: context.into(),
                source,
            },
            location,
        )
    }

    /// Replaces an unknown location (used by parsers that find the problem before the line).
    pub(crate) fn at(mut self, location: Location) -> Self {
        if self.location == Location::Unknown {
            self.location = location;
        }
        self
    }
}

impl From<ErrorKind> for TraceError {
    fn from(kind: ErrorKind) -> Self {
        TraceError::new(kind, Location::Unknown)
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Location::Unknown => write!(f, "{}", self.kind),
            // (an error found at the end of input has no line to quote: "(line: ``)" said
            // nothing)
            Location::Line { text, .. } if !text.is_empty() => {
                write!(f, "{}: {} (line: `{}`)", self.location, self.kind, text)
            }
            loc => write!(f, "{}: {}", loc, self.kind),
        }
    }
}

impl Error for TraceError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.kind {
            ErrorKind::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Truncates `text` to [`MAX_EXCERPT_CHARS`] characters and escapes control characters so an
/// error message stays on one line.
pub(crate) fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == MAX_EXCERPT_CHARS {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
