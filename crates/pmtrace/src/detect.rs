//! Opening a trace of any supported format, detected from its content: [`open_trace`],
//! [`TraceSource`], [`detect_format`].
//!
//! Detection rules, in order:
//!
//! 1. the input starts with the `.pmt` magic `PMTRACE\0` (or is a non-empty prefix of it, so a
//!    truncated `.pmt` reports truncation) → [`TraceFormat::Pmt`];
//! 2. a comment line `# pmtrace text ...` before any other non-comment line →
//!    [`TraceFormat::Text`] (so an event-less text dump is still recognised);
//! 3. otherwise the first line that is neither blank nor a `#` comment decides:
//!    * starts with `@` → [`TraceFormat::Pmweaver`];
//!    * `t<digits> <op name> ...` → [`TraceFormat::Text`];
//!    * `<hex address> READ|WRITE|R|W|P_MEM_RD|P_MEM_WR|P_FETCH ...` → [`TraceFormat::Plain`];
//!    * anything else → [`ErrorKind::UnknownFormat`] naming that line.
//!
//! Detection reads at most 1 MiB ahead (comments included); the bytes read are replayed to the
//! chosen parser, so line numbers and byte offsets in later errors are those of the input.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;

use crate::error::{excerpt, ErrorKind, Location, TraceError};
use crate::header::{read_up_to, TraceHeader, MAGIC};
use crate::import::{plain_op, ImportOptions, PlainReader, PmweaverReader};
use crate::lines::parse_hex_u64;
use crate::reader::PmtReader;
use crate::text::TextReader;
use crate::{Op, TraceEvent};

/// The UTF-8 byte-order mark, skipped at the start of a text trace.
pub(crate) const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Bytes read for detection at first.
const DETECT_INITIAL_BYTES: usize = 64 * 1024;
/// Most bytes read for detection (a file with more leading comments than this is rejected).
const DETECT_MAX_BYTES: usize = 1 << 20;
/// Buffer size of the reader handed to the parsers.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// A trace file format pmtrace can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// The binary `.pmt` format ([`PmtReader`]).
    Pmt,
    /// The pmlab text dump ([`TextReader`]).
    Text,
    /// The PMWeaver artifact store dump ([`PmweaverReader`]).
    Pmweaver,
    /// A plain `hexaddr READ|WRITE cycle` memory trace ([`PlainReader`]).
    Plain,
}

impl TraceFormat {
    /// Every format.
    pub const ALL: [TraceFormat; 4] = [
        TraceFormat::Pmt,
        TraceFormat::Text,
        TraceFormat::Pmweaver,
        TraceFormat::Plain,
    ];

    /// Short name: `pmt`, `text`, `pmweaver`, `plain`.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Pmt => "pmt",
            TraceFormat::Text => "text",
            TraceFormat::Pmweaver => "pmweaver",
            TraceFormat::Plain => "plain",
        }
    }

    /// Parses a name produced by [`TraceFormat::name`].
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

enum Classified {
    Format(TraceFormat),
    /// No non-comment line yet; more input might decide.
    NeedMore,
    Unknown {
        line: u64,
        text: String,
    },
}

fn classify(prefix: &[u8], at_eof: bool) -> Classified {
    if prefix.starts_with(MAGIC) || (!prefix.is_empty() && MAGIC.starts_with(prefix) && at_eof) {
        return Classified::Format(TraceFormat::Pmt);
    }
    if prefix.len() < MAGIC.len() && MAGIC.starts_with(prefix) && !at_eof {
        return Classified::NeedMore;
    }
    let mut rest = prefix;
    let mut line_no = 0u64;
    while !rest.is_empty() {
        let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let l = &rest[..i];
                rest = &rest[i + 1..];
                (l, true)
            }
            None => {
                let l = rest;
                rest = &[];
                (l, at_eof)
            }
        };
        line_no += 1;
        // A UTF-8 byte-order mark (editors on Windows write one) is no part of the first line.
        let line = if line_no == 1 {
            line.strip_prefix(UTF8_BOM).unwrap_or(line)
        } else {
            line
        };
        if !complete {
            // A partial last line is classified only if its first two tokens are complete.
            let text = String::from_utf8_lossy(line);
            if text.split_ascii_whitespace().count() < 3 {
                return Classified::NeedMore;
            }
        }
        if is_binary(line) {
            // Echoing it would print garbage: say what it is.
            return Classified::Unknown {
                line: 0,
                text: format!(
                    "line {line_no} holds binary data (not text), and the input does not start \
                     with the .pmt magic"
                ),
            };
        }
        let text = String::from_utf8_lossy(line);
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(body) = trimmed.strip_prefix('#') {
            if body.trim_start().starts_with("pmtrace text") {
                return Classified::Format(TraceFormat::Text);
            }
            continue;
        }
        return match classify_line(trimmed) {
            Some(f) => Classified::Format(f),
            None => Classified::Unknown {
                line: line_no,
                text: excerpt(trimmed),
            },
        };
    }
    if at_eof {
        Classified::Unknown {
            line: 0,
            text: String::new(),
        }
    } else {
        Classified::NeedMore
    }
}

/// True if `line` is not text: invalid UTF-8 (a sequence cut at the end of a partial line
/// does not count), or control bytes other than tab and CR.
fn is_binary(line: &[u8]) -> bool {
    let invalid = std::str::from_utf8(line).is_err_and(|e| e.error_len().is_some());
    invalid || line.iter().any(|&b| b < 0x20 && b != b'\t' && b != b'\r')
}

fn classify_line(line: &str) -> Option<TraceFormat> {
    if line.starts_with('@') {
        return Some(TraceFormat::Pmweaver);
    }
    let mut toks = line.split_ascii_whitespace();
    let first = toks.next()?;
    let second = toks.next()?;
    if let Some(digits) = first.strip_prefix('t') {
        if !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && Op::ALL
                .iter()
                .any(|op| op.name().eq_ignore_ascii_case(second))
        {
            return Some(TraceFormat::Text);
        }
    }
    if parse_hex_u64(first).is_some() && plain_op(second).is_some() {
        return Some(TraceFormat::Plain);
    }
    None
}

/// Detects the format of a trace from its first bytes (`prefix` is taken to be the whole input
/// if it holds no complete non-comment line). See the [module docs](self) for the rules.
pub fn detect_format(prefix: &[u8]) -> Result<TraceFormat, TraceError> {
    match classify(prefix, true) {
        Classified::Format(f) => Ok(f),
        // Never answered when the prefix is taken as the whole input; no panic either way.
        Classified::NeedMore => Err(unknown(0, String::new())),
        Classified::Unknown { line, text } => Err(unknown(line, text)),
    }
}

fn unknown(line: u64, first_line: String) -> TraceError {
    TraceError::new(
        ErrorKind::UnknownFormat { line, first_line },
        Location::Unknown,
    )
}

type Input = BufReader<io::Chain<Cursor<Vec<u8>>, Box<dyn Read + Send>>>;

enum Inner {
    Pmt(PmtReader<Input>),
    Text(TextReader<Input>),
    Pmweaver(PmweaverReader<Input>),
    Plain(PlainReader<Input>),
}

/// A trace of any supported format: a header (read from `.pmt` and text dumps, synthesised for
/// imports: 1 thread, flag `IMPORTED`) and a stream of events.
///
/// Iterating yields `Result<TraceEvent, TraceError>`; after the first error it yields `None`.
/// Memory use does not grow with trace length.
pub struct TraceSource {
    format: TraceFormat,
    inner: Inner,
}

impl TraceSource {
    /// Detects the format of `r` (reading ahead at most 1 MiB) and prepares to read it.
    pub fn from_reader<R: Read + Send + 'static>(
        r: R,
        options: &ImportOptions,
    ) -> Result<TraceSource, TraceError> {
        let mut r: Box<dyn Read + Send> = Box::new(r);
        let mut prefix = vec![0u8; DETECT_INITIAL_BYTES];
        let mut filled = 0;
        let format = loop {
            let got = read_up_to(&mut r, &mut prefix[filled..]).map_err(|e| {
                TraceError::io("reading the input", e, Location::byte(filled as u64))
            })?;
            filled += got;
            let at_eof = filled < prefix.len();
            match classify(&prefix[..filled], at_eof) {
                Classified::Format(f) => break f,
                Classified::Unknown { line, text } => return Err(unknown(line, text)),
                Classified::NeedMore if prefix.len() >= DETECT_MAX_BYTES => {
                    return Err(unknown(
                        0,
                        format!("no event line in the first {DETECT_MAX_BYTES} bytes"),
                    ))
                }
                Classified::NeedMore => {
                    let new_len = (prefix.len() * 2).min(DETECT_MAX_BYTES);
                    prefix.resize(new_len, 0);
                }
            }
        };
        prefix.truncate(filled);
        Self::assemble(format, prefix, r, options)
    }

    /// Reads `r` as `format`, without detection.
    pub fn with_format<R: Read + Send + 'static>(
        r: R,
        format: TraceFormat,
        options: &ImportOptions,
    ) -> Result<TraceSource, TraceError> {
        Self::assemble(format, Vec::new(), Box::new(r), options)
    }

    fn assemble(
        format: TraceFormat,
        prefix: Vec<u8>,
        rest: Box<dyn Read + Send>,
        options: &ImportOptions,
    ) -> Result<TraceSource, TraceError> {
        let input = BufReader::with_capacity(READ_BUFFER_BYTES, Cursor::new(prefix).chain(rest));
        let inner = match format {
            TraceFormat::Pmt => Inner::Pmt(PmtReader::new(input)?),
            TraceFormat::Text => Inner::Text(TextReader::new(input)?),
            TraceFormat::Pmweaver => Inner::Pmweaver(PmweaverReader::new(input, options)),
            TraceFormat::Plain => Inner::Plain(PlainReader::new(input, options)),
        };
        Ok(TraceSource { format, inner })
    }

    /// The detected (or given) format.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// The trace's header.
    pub fn header(&self) -> &TraceHeader {
        match &self.inner {
            Inner::Pmt(r) => r.header(),
            Inner::Text(r) => r.header(),
            Inner::Pmweaver(r) => r.header(),
            Inner::Plain(r) => r.header(),
        }
    }

    /// The next event; `Ok(None)` at the (verified) end of the trace.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        match &mut self.inner {
            Inner::Pmt(r) => r.next_event(),
            Inner::Text(r) => r.next_event(),
            Inner::Pmweaver(r) => r.next_event(),
            Inner::Plain(r) => r.next_event(),
        }
    }
}

impl Iterator for TraceSource {
    type Item = Result<TraceEvent, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

/// Opens the trace at `path`, detecting its format from the content, with default
/// [`ImportOptions`] (imported traces take the file name as workload name).
pub fn open_trace(path: impl AsRef<Path>) -> Result<TraceSource, TraceError> {
    open_trace_with(path, &ImportOptions::default())
}

/// As [`open_trace`] with explicit import options.
pub fn open_trace_with(
    path: impl AsRef<Path>,
    options: &ImportOptions,
) -> Result<TraceSource, TraceError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| {
        TraceError::io(
            format!("opening `{}`", path.display()),
            e,
            Location::Unknown,
        )
    })?;
    let mut options = options.clone();
    if options.workload.is_none() {
        options.workload = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n.len() <= crate::header::MAX_WORKLOAD_NAME_BYTES);
    }
    TraceSource::from_reader(file, &options)
}
