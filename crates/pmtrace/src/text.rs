//! The human-readable trace dump: one line per event, parseable back into events.
//!
//! ```text
//! # pmtrace text v2
//! # workload=btree-insert
//! # threads=2
//! # seed=42
//! # params=keys=512 value_bytes=8
//! # flags=0x1
//! t0 store pc=0x401a2c addr=0x100000040 size=8 gap=3 value=0011223344556677
//! t0 clwb pc=0x401a30 addr=0x100000040 size=64 gap=0
//! t1 load pc=0x401b00 addr=0x7ffe0010 size=4 gap=12
//! t0 sfence pc=0x401a34 gap=0
//! # end events=4
//! ```
//!
//! * The last line, `# end events=N`, says the dump is whole: a `v2` dump without it, or whose
//!   count differs from the events read, is refused as cut short (a dump cut at a line end, or
//!   inside a number, would otherwise read as a shorter, different trace). `v1` dumps, which
//!   have no such line, are read as before.
//! * Header lines start with `#` and come before the first event: `# pmtrace text v2` (the
//!   format marker), then `# key=value` for `workload`, `threads`, `seed`, `params`, `flags`.
//!   `workload` and `params` escape `\` as `\\`, newline as `\n`, CR as `\r`, tab as `\t` and
//!   other control characters as `\u{..}`. A missing `threads` means 1. Any other `#` line, and
//!   any `#` line after the first event, is a comment; so is the rest of an event line from a
//!   `#` on. Blank lines are ignored.
//! * Event lines: `t<thread> <op>` then `key=value` fields in any order: `pc`, `gap` (default
//!   0), and for ops with an address `addr` (required) and `size` (required unless `value` is
//!   given, which then sets it). `value` (store-like ops only) is the stored bytes in *address
//!   order* as hex pairs: `value=0011` stores `0x00` at `addr` and `0x11` at `addr+1`.
//! * Numbers are decimal unless prefixed with `0x`; the writer prints `pc` and `addr` in hex.
//! * A UTF-8 byte-order mark before the first line is skipped (as for every text format).
//! * Op names are those of [`Op::name`](crate::Op::name) (`load`, `store`, `ntstore`, `clwb`,
//!   `clflushopt`, `sfence`, `mfence`, `txbegin`, `txend`, `rdmapwrite`, `compute`).

use std::fmt::Write as _;
use std::io::{self, BufRead, BufWriter, Write};

use crate::error::{excerpt, ErrorKind, Location, TraceError};
use crate::header::TraceHeader;
use crate::lines::{parse_num_u64, strip_comment, tokens, LineReader};
use crate::{EventItem, Op, TraceEvent, MAX_ACCESS_BYTES, MAX_VALUE_BYTES};

/// The first line of every text dump; identifies the format and its version.
pub const TEXT_MAGIC_LINE: &str = "# pmtrace text v2";

/// The start of a `v2` dump's last line, `# end events=N`.
const END_LINE: &str = "end events=";

/// Formats one event as a text-dump line (without newline).
pub fn format_event(ev: &TraceEvent) -> String {
    let mut s = String::with_capacity(96);
    push_event(&mut s, ev);
    s
}

fn push_event(s: &mut String, ev: &TraceEvent) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let _ = write!(s, "t{} {} pc={:#x}", ev.thread, ev.op.name(), ev.pc);
    if ev.op.has_address() {
        let _ = write!(s, " addr={:#x} size={}", ev.addr, ev.size);
    }
    if let Some((source, count)) = ev.awaited() {
        let _ = write!(s, " after=t{source}:{count}");
    }
    let _ = write!(s, " gap={}", ev.gap);
    let v = ev.value_bytes();
    if !v.is_empty() {
        s.push_str(" value=");
        for b in v {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// Escapes a header value so it fits on one line (see the module docs).
pub fn escape_header_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Reverses [`escape_header_value`].
pub fn unescape_header_value(v: &str) -> Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                if chars.next() != Some('{') {
                    return Err("expected `{` after `\\u`".into());
                }
                let mut hex = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(h) if h.is_ascii_hexdigit() && hex.len() < 6 => hex.push(h),
                        _ => return Err("malformed `\\u{..}` escape".into()),
                    }
                }
                let code = u32::from_str_radix(&hex, 16).map_err(|_| "empty `\\u{}` escape")?;
                out.push(char::from_u32(code).ok_or("`\\u{..}` escape is not a character")?);
            }
            Some(other) => return Err(format!("unknown escape `\\{other}`")),
            None => return Err("dangling `\\` at end of value".into()),
        }
    }
    Ok(out)
}

/// Writes the header lines of a text dump.
fn write_header_lines<W: Write>(w: &mut W, h: &TraceHeader) -> io::Result<()> {
    writeln!(w, "{TEXT_MAGIC_LINE}")?;
    writeln!(w, "# workload={}", escape_header_value(&h.workload))?;
    writeln!(w, "# threads={}", h.threads)?;
    writeln!(w, "# seed={}", h.seed)?;
    writeln!(w, "# params={}", escape_header_value(&h.params))?;
    writeln!(w, "# flags={:#x}", h.flags)
}

/// Writes a text dump: header lines, then one line per event. Events are validated like
/// [`PmtWriter`](crate::PmtWriter) does, so a dump always parses back.
pub struct TextWriter<W: Write> {
    out: BufWriter<W>,
    threads: u16,
    events: u64,
    line: String,
}

impl<W: Write> TextWriter<W> {
    /// Validates `header` and writes the header lines.
    pub fn new(w: W, header: &TraceHeader) -> Result<Self, TraceError> {
        header.validate().map_err(TraceError::from)?;
        let mut out = BufWriter::with_capacity(64 * 1024, w);
        write_header_lines(&mut out, header)
            .map_err(|e| TraceError::io("writing the text header", e, Location::Unknown))?;
        Ok(TextWriter {
            out,
            threads: header.threads,
            events: 0,
            line: String::with_capacity(256),
        })
    }

    /// Validates and writes one event line.
    pub fn write(&mut self, ev: &TraceEvent) -> Result<(), TraceError> {
        ev.check(self.threads)
            .map_err(|k| TraceError::new(k, Location::Event(self.events)))?;
        self.line.clear();
        push_event(&mut self.line, ev);
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes()).map_err(|e| {
            TraceError::io("writing an event line", e, Location::Event(self.events))
        })?;
        self.events += 1;
        Ok(())
    }

    /// Events written so far.
    pub fn events_written(&self) -> u64 {
        self.events
    }

    /// Writes the `# end events=N` line, flushes and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, TraceError> {
        let at = Location::Event(self.events);
        writeln!(self.out, "# {END_LINE}{}", self.events)
            .map_err(|e| TraceError::io("writing the text dump's end line", e, at.clone()))?;
        self.out
            .into_inner()
            .map_err(|e| TraceError::io("flushing the text dump", e.into_error(), at))
    }
}

/// Writes `header` and all `events` as a text dump to `out`; returns `out` and the number of
/// events. `events` may yield `TraceEvent`, `&TraceEvent` or `Result<TraceEvent, TraceError>`
/// (the first error stops the dump and is returned).
pub fn write_text<W, I>(header: &TraceHeader, events: I, out: W) -> Result<(W, u64), TraceError>
where
    W: Write,
    I: IntoIterator,
    I::Item: EventItem,
{
    let mut w = TextWriter::new(out, header)?;
    for item in events {
        w.write(&item.into_event()?)?;
    }
    let n = w.events_written();
    Ok((w.finish()?, n))
}

fn syntax(reason: impl Into<String>) -> TraceError {
    TraceError::from(ErrorKind::Syntax {
        reason: reason.into(),
    })
}

/// Parses one event line of a text dump (no thread-range check: there is no header here).
/// Errors carry no location; [`TextReader`] adds the line number.
pub fn parse_event_line(line: &str) -> Result<TraceEvent, TraceError> {
    // At most: thread, op, pc, addr, size, gap, value.
    let (toks, n) = tokens::<7>(line).map_err(|_| {
        syntax("too many fields (expected `t<thread> <op> pc= addr= size= gap= value=`)")
    })?;
    if n < 2 {
        return Err(syntax("expected `t<thread> <op> ...`"));
    }
    let thread_text = toks[0];
    let thread = thread_text
        .strip_prefix('t')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            syntax(format!(
                "expected `t<thread>`, found `{}`",
                excerpt(thread_text)
            ))
        })?;
    let thread: u64 = thread.parse().map_err(|_| {
        TraceError::from(ErrorKind::InvalidNumber {
            field: "thread",
            text: excerpt(thread_text),
        })
    })?;
    // Beyond any header's count: said as the number it is (it was "out of range (the trace
    // declares 65535 threads)", whatever the header declared).
    let thread = u16::try_from(thread).map_err(|_| {
        TraceError::from(ErrorKind::InvalidNumber {
            field: "thread",
            text: format!("{thread} (max {})", u16::MAX - 1),
        })
    })?;
    let op_text = toks[1];
    let op = Op::ALL
        .iter()
        .copied()
        .find(|op| op.name().eq_ignore_ascii_case(op_text))
        .ok_or_else(|| {
            TraceError::from(ErrorKind::UnknownOp {
                found: excerpt(op_text),
            })
        })?;

    let mut pc = None;
    let mut addr = None;
    let mut size = None;
    let mut gap = None;
    let mut after: Option<u64> = None;
    let mut value: Option<([u8; MAX_VALUE_BYTES], usize)> = None;
    for tok in &toks[2..n] {
        let (key, val) = tok
            .split_once('=')
            .ok_or_else(|| syntax(format!("expected `key=value`, found `{}`", excerpt(tok))))?;
        let num = |field: &'static str| {
            parse_num_u64(val).ok_or_else(|| {
                TraceError::from(ErrorKind::InvalidNumber {
                    field,
                    text: excerpt(val),
                })
            })
        };
        let dup = |field: &str| syntax(format!("field `{field}` given twice"));
        match key {
            "pc" => {
                if pc.replace(num("pc")?).is_some() {
                    return Err(dup(key));
                }
            }
            "addr" => {
                if addr.replace(num("addr")?).is_some() {
                    return Err(dup(key));
                }
            }
            "size" => {
                if size.replace(num("size")?).is_some() {
                    return Err(dup(key));
                }
            }
            "gap" => {
                if gap.replace(num("gap")?).is_some() {
                    return Err(dup(key));
                }
            }
            "value" => {
                if value.replace(parse_value_hex(val)?).is_some() {
                    return Err(dup(key));
                }
            }
            "after" => {
                if after.replace(parse_after(val)?).is_some() {
                    return Err(dup(key));
                }
            }
            other => {
                return Err(syntax(format!(
                    "unknown field `{}` (expected pc, addr, size, gap, value, after)",
                    excerpt(other)
                )))
            }
        }
    }

    let gap = gap.unwrap_or(0);
    let gap = u32::try_from(gap).map_err(|_| {
        TraceError::from(ErrorKind::InvalidNumber {
            field: "gap",
            text: format!("{gap} (max {})", u32::MAX),
        })
    })?;
    let mut ev = TraceEvent::marker(op, thread, pc.unwrap_or(0), gap);
    match (op == Op::Await, after) {
        (true, Some(edge)) => ev.addr = edge,
        (true, None) => return Err(syntax("await needs `after=tSOURCE:COUNT`")),
        (false, Some(_)) => {
            return Err(TraceError::from(ErrorKind::InvalidEvent {
                reason: format!("{op} takes no `after`"),
            }))
        }
        (false, None) => {}
    }
    if !op.has_address() {
        for (name, present) in [
            ("addr", addr.is_some()),
            ("size", size.is_some()),
            ("value", value.is_some()),
        ] {
            if present {
                return Err(TraceError::from(ErrorKind::InvalidEvent {
                    reason: format!("{op} takes no `{name}`"),
                }));
            }
        }
        return Ok(ev);
    }
    ev.addr = addr.ok_or_else(|| syntax(format!("{op} needs `addr=`")))?;
    let size = match (size, &value) {
        (Some(s), _) => s,
        (None, Some((_, len))) => *len as u64,
        (None, None) => return Err(syntax(format!("{op} needs `size=`"))),
    };
    if size == 0 {
        return Err(TraceError::from(crate::zero_size(op, ev.addr)));
    }
    if size > MAX_ACCESS_BYTES as u64 {
        return Err(TraceError::from(ErrorKind::SizeTooLarge {
            size,
            max: MAX_ACCESS_BYTES.into(),
        }));
    }
    ev.size = size as u16;
    if let Some((bytes, len)) = value {
        if !op.carries_value() {
            return Err(TraceError::from(ErrorKind::InvalidEvent {
                reason: format!("{op} cannot carry a value"),
            }));
        }
        if len as u64 > size {
            return Err(TraceError::from(ErrorKind::ValueLongerThanSize {
                value_len: len,
                size,
            }));
        }
        ev.value = bytes;
        ev.value_len = len as u8;
    }
    Ok(ev)
}

/// Parses `after=tSOURCE:COUNT` (an await's edge) into the packed form [`TraceEvent::awaited`]
/// reads.
fn parse_after(text: &str) -> Result<u64, TraceError> {
    let bad = || {
        TraceError::from(ErrorKind::InvalidNumber {
            field: "after",
            text: format!("{} (expected tSOURCE:COUNT)", excerpt(text)),
        })
    };
    let (source, count) = text
        .strip_prefix('t')
        .and_then(|r| r.split_once(':'))
        .ok_or_else(bad)?;
    let source: u16 = source.parse().map_err(|_| bad())?;
    let count = parse_num_u64(count).ok_or_else(bad)?;
    if count >= crate::AWAIT_COUNT_LIMIT {
        return Err(bad());
    }
    Ok(u64::from(source) << 48 | count)
}

/// Parses `value=` hex pairs (address order) into bytes.
fn parse_value_hex(text: &str) -> Result<([u8; MAX_VALUE_BYTES], usize), TraceError> {
    let bad = || {
        TraceError::from(ErrorKind::InvalidHex {
            field: "value",
            text: excerpt(text),
        })
    };
    let digits = text.as_bytes();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return Err(bad());
    }
    if digits.len() > 2 * MAX_VALUE_BYTES {
        return Err(TraceError::from(ErrorKind::InvalidEvent {
            reason: format!(
                "value has {} bytes (max {MAX_VALUE_BYTES})",
                digits.len() / 2
            ),
        }));
    }
    let mut out = [0u8; MAX_VALUE_BYTES];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        let hi = hex_digit(pair[0]).ok_or_else(bad)?;
        let lo = hex_digit(pair[1]).ok_or_else(bad)?;
        out[i] = hi << 4 | lo;
    }
    Ok((out, digits.len() / 2))
}

pub(crate) fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Reads a text dump (see the module docs) back into events, streaming, with line-numbered
/// errors. After an error the reader is finished.
pub struct TextReader<R: BufRead> {
    lines: LineReader<R>,
    header: TraceHeader,
    /// The first event line, parsed while reading the header.
    pending: Option<TraceEvent>,
    done: bool,
    /// A `v2` dump, which must end with `# end events=N`.
    needs_end: bool,
    /// The count of the `# end events=N` line, once read.
    end: Option<u64>,
    /// Events returned so far.
    events: u64,
}

impl<R: BufRead> TextReader<R> {
    /// Reads the header lines (up to the first event line).
    pub fn new(r: R) -> Result<Self, TraceError> {
        let mut lines = LineReader::new(r);
        let mut header = TraceHeader::new("", 1);
        let mut seen: Vec<&'static str> = Vec::new();
        let mut pending = None;
        let mut done = false;
        let mut needs_end = false;
        let mut end = None;
        loop {
            let Some((line_no, line)) = lines.next_line()? else {
                done = true;
                break;
            };
            let at = |e: TraceError| e.at(Location::line(line_no, line));
            let trimmed = line.trim_start();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(body) = trimmed.strip_prefix('#') {
                let body = body.trim_start();
                if let Some(version) = body.strip_prefix("pmtrace text") {
                    let version = version.trim();
                    if version != "v1" && version != "v2" {
                        let found = version
                            .strip_prefix('v')
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        return Err(at(TraceError::from(ErrorKind::UnsupportedVersion {
                            found,
                            supported: 2,
                        })));
                    }
                    needs_end = version == "v2";
                    continue;
                }
                if needs_end && read_end_line(&mut end, body).map_err(at)? {
                    continue;
                }
                let Some((key, value)) = body.split_once('=') else {
                    continue;
                };
                let key: &'static str = match key.trim() {
                    "workload" => "workload",
                    "threads" => "threads",
                    "seed" => "seed",
                    "params" => "params",
                    "flags" => "flags",
                    _ => continue,
                };
                if seen.contains(&key) {
                    return Err(at(syntax(format!("header key `{key}` given twice"))));
                }
                seen.push(key);
                let number = |field: &'static str| {
                    parse_num_u64(value.trim()).ok_or_else(|| {
                        at(TraceError::from(ErrorKind::InvalidNumber {
                            field,
                            text: excerpt(value),
                        }))
                    })
                };
                let unescape = |v: &str| {
                    unescape_header_value(v).map_err(|reason| {
                        at(TraceError::from(ErrorKind::BadHeader {
                            reason: format!("{key}: {reason}"),
                        }))
                    })
                };
                match key {
                    "workload" => header.workload = unescape(value)?,
                    "params" => header.params = unescape(value)?,
                    "seed" => header.seed = number("seed")?,
                    "threads" => {
                        let t = number("threads")?;
                        header.threads = u16::try_from(t).map_err(|_| {
                            at(TraceError::from(ErrorKind::BadHeader {
                                reason: format!("threads={t} exceeds {}", u16::MAX),
                            }))
                        })?;
                    }
                    _ => {
                        let f = number("flags")?;
                        header.flags = u32::try_from(f).map_err(|_| {
                            at(TraceError::from(ErrorKind::BadHeader {
                                reason: format!("flags={f:#x} exceed 32 bits"),
                            }))
                        })?;
                    }
                }
                header.validate().map_err(|k| at(TraceError::from(k)))?;
                continue;
            }
            if end.is_some() {
                return Err(at(syntax("an event after the `# end` line")));
            }
            let ev = parse_event_line(strip_comment(trimmed)).map_err(at)?;
            ev.check(header.threads)
                .map_err(|k| at(TraceError::from(k)))?;
            pending = Some(ev);
            break;
        }
        header
            .validate()
            .map_err(|k| TraceError::new(k, Location::line(lines.line_no(), "")))?;
        Ok(TextReader {
            lines,
            header,
            pending,
            done,
            needs_end,
            end,
            events: 0,
        })
    }

    /// The header assembled from the `#` lines (defaults where absent).
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The next event; `Ok(None)` at end of input.
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if let Some(ev) = self.pending.take() {
            self.events += 1;
            return Ok(Some(ev));
        }
        if self.done {
            // Also an empty dump, whose header loop met the end of input.
            return self.at_end();
        }
        match self.read_event() {
            Ok(None) => {
                self.done = true;
                self.at_end()
            }
            Ok(Some(ev)) => {
                self.events += 1;
                Ok(Some(ev))
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// At the end of input: `Ok(None)`, or (once) the error of a `v2` dump whose end line is
    /// missing or counts other events than were read.
    fn at_end(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if !std::mem::take(&mut self.needs_end) {
            return Ok(None);
        }
        let at = Location::line(self.lines.line_no(), "");
        let reason = match self.end {
            None => format!(
                "the dump ends after {} events without its `# {END_LINE}N` line: it was cut short",
                self.events
            ),
            Some(n) if n != self.events => format!(
                "the `# {END_LINE}{n}` line counts {n} events, but {} were read: the dump was cut \
                 or edited",
                self.events
            ),
            Some(_) => return Ok(None),
        };
        Err(TraceError::new(ErrorKind::Truncated { what: reason }, at))
    }

    fn read_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        let threads = self.header.threads;
        let Some((line_no, line)) = (if self.needs_end {
            self.next_v2_line()?
        } else {
            self.lines.next_record_line()?
        }) else {
            return Ok(None);
        };
        let trimmed = line.trim_start();
        let ev = parse_event_line(strip_comment(trimmed))
            .map_err(|e| e.at(Location::line(line_no, line)))?;
        ev.check(threads)
            .map_err(|k| TraceError::new(k, Location::line(line_no, line)))?;
        Ok(Some(ev))
    }
}

impl<R: BufRead> TextReader<R> {
    /// A `v2` dump's next event line, reading its `# end events=N` line on the way; an event
    /// after that line is an error.
    fn next_v2_line(&mut self) -> Result<Option<(u64, &str)>, TraceError> {
        let line_no = loop {
            let Some((line_no, line)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let t = line.trim_start();
            if t.is_empty() {
                continue;
            }
            if let Some(body) = t.strip_prefix('#') {
                read_end_line(&mut self.end, body.trim_start())
                    .map_err(|e| e.at(Location::line(line_no, line)))?;
                continue;
            }
            if self.end.is_some() {
                return Err(
                    syntax("an event after the `# end` line").at(Location::line(line_no, line))
                );
            }
            break line_no;
        };
        Ok(Some((line_no, self.lines.current())))
    }
}

/// Whether the `#` line `body` (after the `#`, leading blanks trimmed) is the end line
/// `# end events=N`; its count goes to `end`, and a second end line is an error.
fn read_end_line(end: &mut Option<u64>, body: &str) -> Result<bool, TraceError> {
    let Some(n) = body.strip_prefix(END_LINE) else {
        return Ok(false);
    };
    if end.is_some() {
        return Err(syntax("a second `# end` line"));
    }
    let count = parse_num_u64(n.trim()).ok_or_else(|| {
        TraceError::from(ErrorKind::InvalidNumber {
            field: "end events",
            text: excerpt(n),
        })
    })?;
    *end = Some(count);
    Ok(true)
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}
