//! Importers for other simulators' traces, streaming, with line-numbered errors.
//!
//! # PMWeaver artifact store dump ([`PmweaverReader`])
//!
//! The PMWeaver artifact (a gem5 fork, `github.com/Systems-ShiftLab/pmweaver_pact21_ae`) writes
//! this dump from `PredictorFrontend::dumpTrace` (`gem5/src/mem/predictor_frontend.cc`) when the
//! environment variable `ENABLE_VOLATILE_DUMP` names an output file. Every request that reaches
//! the predictor frontend (between core and L1) and is a 4- or 8-byte write, or a cache
//! write-back to the point of coherence (CLWB), produces one line:
//!
//! ```text
//! @0x0000000000401a2c P W 0x0000100000000040 0x8 0x1122334455667788 0x00000000001e8480
//! @0x0000000000401a40 P C 0x0000100000000040 0x1 0x0 0x00000000001e84e3
//! ```
//!
//! Fields, all hexadecimal (the artifact prints `0x` + zero-padded hex through its
//! `print_ptr(width)` macro; this importer accepts them with or without `0x` and with any
//! padding):
//!
//! | field | meaning | import |
//! |---|---|---|
//! | `@PC` | PC of the instruction | `pc` |
//! | `P`/`V` | address in the PM range / volatile | validated, not stored: volatile stores are kept (they are predictor history), and the address tells PM from DRAM later |
//! | `C`/`W` | CLWB / write | `C` → [`Op::Clwb`] of the 64-byte line, `W` → [`Op::Store`] |
//! | vaddr | virtual address | `addr` |
//! | size | access size in bytes (hex: `0x8`) | `W`: the store size (1..=64); `C`: ignored (gem5's CLWB packet has size 1; the event covers the whole line, `size = 64`) |
//! | data | stored value as **one hex number** | `W`: the value. The artifact prints `*(uint32_t*)` or `*(uint64_t*)` of the packet data on an x86 (little-endian) host, so the number's *least significant* byte is the byte stored at `vaddr`: `0x1122334455667788` at `0x40` stores `88` at `0x40` ... `11` at `0x47`. Fewer digits are zero-extended; more significant non-zero digits than the size allows are an error. `C`: ignored (the artifact prints `0x0`) |
//! | tick | gem5 tick (1 tick = 1 ps) | `gap` (below) |
//!
//! **Gap.** `gap = floor(tick / T) − floor(previous tick / T)` with `T` =
//! [`ImportOptions::ticks_per_gap_unit`] (default 333: one cycle of a 3 GHz core in ps), so the
//! gap counts core cycles, rounding never drifts over a long trace, and the first event's gap is
//! 0. The header carries [`flags::GAP_CYCLES`], so that a replay advances the clock by the gaps
//! instead of retiring them as instructions. A gap larger than `u32::MAX` is an error naming its line. Ticks must be non-decreasing (the artifact emits in
//! simulation order); a decrease is an error naming the line.
//!
//! The dump has no thread id: everything is thread 0 and the header declares 1 thread. Blank
//! lines are skipped, and `#` starts a comment (whole line or end of line).
//!
//! # Plain memory traces ([`PlainReader`])
//!
//! One access per line, as in DRAMSim2/Ramulator-style memory traces:
//!
//! ```text
//! 0x7f64768e1c40 READ 12
//! 7f64768e1c80 WRITE 15
//! 0x1000 r 15
//! ```
//!
//! * address: hexadecimal, with or without `0x`;
//! * operation, case-insensitive: `READ`, `R`, `P_MEM_RD`, `P_FETCH` → [`Op::Load`] of 64 bytes;
//!   `WRITE`, `W`, `P_MEM_WR` → [`Op::Store`] of 64 bytes with unknown value;
//! * cycle: decimal, or hexadecimal with `0x`; optional (a line without one happens in the same
//!   cycle as the previous line). `gap = cycle − previous cycle` (0 for the first line; more
//!   than `u32::MAX` is an error naming the line); cycles must be non-decreasing.
//!
//! `pc` is 0 and the thread is 0. Blank lines are skipped, and `#` starts a comment (whole line
//! or end of line).

use std::io::BufRead;

use crate::error::{excerpt, ErrorKind, Location, TraceError};
use crate::header::{flags, TraceHeader};
use crate::lines::{
    parse_hex_u64, parse_num_u64, strip_comment, strip_hex_prefix, tokens, LineReader,
};
use crate::text::hex_digit;
use crate::{Op, TraceEvent, MAX_VALUE_BYTES};

/// Options for the importers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Simulator ticks per unit of `gap` for the PMWeaver importer (default 333: gem5 ticks
    /// are picoseconds, so this makes `gap` count cycles of a 3 GHz core). Values below 1 are
    /// treated as 1.
    pub ticks_per_gap_unit: u64,
    /// Workload name for the synthesised header (default: `pmweaver-import` /
    /// `plain-import`; [`open_trace`](crate::open_trace) uses the file name).
    pub workload: Option<String>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            ticks_per_gap_unit: 333,
            workload: None,
        }
    }
}

/// Converts a time-stamp delta to a gap; a delta no gap can hold is an error (a saturated gap
/// shortened the trace's time without a word).
fn gap_from(delta: u64, what: &'static str) -> Result<u32, TraceError> {
    u32::try_from(delta).map_err(|_| {
        TraceError::from(ErrorKind::InvalidNumber {
            field: what,
            text: format!("{delta} since the previous event (max {})", u32::MAX),
        })
    })
}

/// Reads a PMWeaver artifact store dump (see the module docs).
pub struct PmweaverReader<R: BufRead> {
    lines: LineReader<R>,
    header: TraceHeader,
    ticks_per_unit: u64,
    prev_tick: Option<u64>,
    done: bool,
}

impl<R: BufRead> PmweaverReader<R> {
    /// A reader over `r`; nothing is read until the first event is requested.
    pub fn new(r: R, options: &ImportOptions) -> Self {
        let tpu = options.ticks_per_gap_unit.max(1);
        let header = TraceHeader::new(
            options
                .workload
                .clone()
                .unwrap_or_else(|| "pmweaver-import".into()),
            1,
        )
        .with_params(format!(
            "source=pmweaver-store-dump ticks_per_gap_unit={tpu}"
        ))
        .with_flags(flags::IMPORTED | flags::STORE_VALUES | flags::GAP_CYCLES);
        PmweaverReader {
            lines: LineReader::new(r),
            header,
            ticks_per_unit: tpu,
            prev_tick: None,
            done: false,
        }
    }

    /// The synthesised header (1 thread, flags `IMPORTED | STORE_VALUES`).
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The next event; `Ok(None)` at end of input. After an error the reader is finished.
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let r = self.read_event();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }

    fn read_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        let Some((line_no, line)) = self.lines.next_record_line()? else {
            return Ok(None);
        };
        let trimmed = line.trim();
        let at = |e: TraceError| e.at(Location::line(line_no, line));
        let (ev, tick) = parse_pmweaver_line(strip_comment(trimmed)).map_err(at)?;
        let gap = match self.prev_tick {
            None => 0,
            Some(prev) if tick < prev => {
                return Err(at(TraceError::from(ErrorKind::NonMonotonic {
                    what: "tick",
                    previous: prev,
                    current: tick,
                })))
            }
            Some(prev) => gap_from(
                tick / self.ticks_per_unit - prev / self.ticks_per_unit,
                "tick gap (in gap units)",
            )
            .map_err(at)?,
        };
        self.prev_tick = Some(tick);
        Ok(Some(TraceEvent { gap, ..ev }))
    }
}

impl<R: BufRead> Iterator for PmweaverReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

fn syntax(reason: impl Into<String>) -> TraceError {
    TraceError::from(ErrorKind::Syntax {
        reason: reason.into(),
    })
}

fn hex_field(field: &'static str, text: &str) -> Result<u64, TraceError> {
    parse_hex_u64(text).ok_or_else(|| {
        TraceError::from(ErrorKind::InvalidHex {
            field,
            text: excerpt(text),
        })
    })
}

/// Parses one non-comment PMWeaver dump line into an event (gap 0) and its tick.
fn parse_pmweaver_line(line: &str) -> Result<(TraceEvent, u64), TraceError> {
    const EXPECTED: &str = "expected `@PC P|V C|W vaddr size data tick`";
    let (t, n) = tokens::<7>(line).map_err(|_| syntax(format!("too many fields ({EXPECTED})")))?;
    if n < 7 {
        return Err(syntax(format!("{n} fields, {EXPECTED}")));
    }
    let pc_text = t[0]
        .strip_prefix('@')
        .ok_or_else(|| syntax(format!("line must start with `@PC` ({EXPECTED})")))?;
    let pc = hex_field("pc", pc_text)?;
    match t[1] {
        "P" | "p" | "V" | "v" => {}
        other => {
            return Err(syntax(format!(
                "second field must be P (persistent) or V (volatile), found `{}`",
                excerpt(other)
            )))
        }
    }
    let op = match t[2] {
        "W" | "w" => Op::Store,
        "C" | "c" => Op::Clwb,
        other => {
            return Err(syntax(format!(
                "third field must be W (write) or C (clwb), found `{}`",
                excerpt(other)
            )))
        }
    };
    let addr = hex_field("vaddr", t[3])?;
    let size = hex_field("size", t[4])?;
    let tick = hex_field("tick", t[6])?;
    if op == Op::Clwb {
        // Validate the data column too, so a shifted column is caught.
        hex_field("data", t[5])?;
        // CLWB writes back the one line holding the address: an unaligned address is that
        // line's (a 64-byte access from it spanned two, and in the address space's last line
        // ran past its end and was refused).
        let ev = TraceEvent::access(Op::Clwb, 0, pc, addr & !63, 64, 0);
        return Ok((ev, tick));
    }
    if size == 0 || size > MAX_VALUE_BYTES as u64 {
        return Err(TraceError::from(ErrorKind::InvalidEvent {
            reason: format!(
                "store size {size} outside 1..={MAX_VALUE_BYTES} (a PMWeaver store is at most one line)"
            ),
        }));
    }
    let mut value = [0u8; MAX_VALUE_BYTES];
    le_bytes_from_hex_number(t[5], size as usize, &mut value)?;
    let ev = TraceEvent::store(Op::Store, 0, pc, addr, &value[..size as usize], 0);
    ev.check(1)?; // the store fits in the address space
    Ok((ev, tick))
}

/// Converts a hex number into its `size` least significant bytes, least significant first.
fn le_bytes_from_hex_number(
    text: &str,
    size: usize,
    out: &mut [u8; MAX_VALUE_BYTES],
) -> Result<(), TraceError> {
    let digits = strip_hex_prefix(text).as_bytes();
    if digits.is_empty() || !digits.iter().all(|b| b.is_ascii_hexdigit()) {
        return Err(TraceError::from(ErrorKind::InvalidHex {
            field: "data",
            text: excerpt(text),
        }));
    }
    let first_nonzero = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let significant = &digits[first_nonzero..];
    if significant.len() > 2 * size {
        return Err(TraceError::from(ErrorKind::InvalidNumber {
            field: "data",
            text: format!("{} is wider than the {size}-byte store", excerpt(text)),
        }));
    }
    // Walk from the least significant digit; byte i gets digits (2i+1, 2i) from the right.
    for (i, byte) in out.iter_mut().enumerate().take(size) {
        let lo_idx = significant.len().checked_sub(2 * i + 1);
        let hi_idx = significant.len().checked_sub(2 * i + 2);
        let lo = lo_idx.and_then(|j| hex_digit(significant[j])).unwrap_or(0);
        let hi = hi_idx.and_then(|j| hex_digit(significant[j])).unwrap_or(0);
        *byte = hi << 4 | lo;
    }
    Ok(())
}

/// Reads a plain `hexaddr READ|WRITE [cycle]` memory trace (see the module docs).
pub struct PlainReader<R: BufRead> {
    lines: LineReader<R>,
    header: TraceHeader,
    prev_cycle: Option<u64>,
    done: bool,
}

impl<R: BufRead> PlainReader<R> {
    /// A reader over `r`; nothing is read until the first event is requested.
    pub fn new(r: R, options: &ImportOptions) -> Self {
        let header = TraceHeader::new(
            options
                .workload
                .clone()
                .unwrap_or_else(|| "plain-import".into()),
            1,
        )
        .with_params("source=plain-memory-trace gap_unit=cycle")
        .with_flags(flags::IMPORTED | flags::MEMORY_REQUESTS);
        PlainReader {
            lines: LineReader::new(r),
            header,
            prev_cycle: None,
            done: false,
        }
    }

    /// The synthesised header (1 thread, flags `IMPORTED | MEMORY_REQUESTS`).
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The next event; `Ok(None)` at end of input. After an error the reader is finished.
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let r = self.read_event();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }

    fn read_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        // The common line (`0xADDR READ|WRITE CYCLE`, cycles not going backwards) straight from
        // the read buffer; everything else, errors included, through the general parser below.
        let prev = self.prev_cycle;
        if let Some((op, addr, cycle, gap)) = self.lines.parse_buffered(|b| {
            let ((op, addr, cycle), used) = parse_plain_fast(b)?;
            let gap = plain_gap(prev, cycle).ok()?;
            Some(((op, addr, cycle, gap), used))
        }) {
            if cycle.is_some() {
                self.prev_cycle = cycle;
            }
            return Ok(Some(TraceEvent::access(op, 0, 0, addr & !63, 64, gap)));
        }
        let Some((line_no, line)) = self.lines.next_record_line()? else {
            return Ok(None);
        };
        let trimmed = line.trim();
        let at = |e: TraceError| e.at(Location::line(line_no, line));
        let (op, addr, cycle) = parse_plain_line(strip_comment(trimmed)).map_err(at)?;
        let gap = plain_gap(self.prev_cycle, cycle).map_err(at)?;
        if let Some(c) = cycle {
            self.prev_cycle = Some(c);
        }
        // One request for the 64 B line holding the address, as DRAMsim3's and Ramulator's
        // trace front ends make it: an unaligned address made a 64-byte access spanning two
        // lines, two requests (and the last line's one ran past the address space).
        Ok(Some(TraceEvent::access(op, 0, 0, addr & !63, 64, gap)))
    }
}

/// The gap of a plain trace line with `cycle` after one with `prev` (0 where either has none);
/// an error where the cycle goes back or the gap does not fit.
fn plain_gap(prev: Option<u64>, cycle: Option<u64>) -> Result<u32, TraceError> {
    match (prev, cycle) {
        (_, None) | (None, Some(_)) => Ok(0),
        (Some(prev), Some(c)) if c < prev => Err(TraceError::from(ErrorKind::NonMonotonic {
            what: "cycle",
            previous: prev,
            current: c,
        })),
        (Some(prev), Some(c)) => gap_from(c - prev, "cycle gap"),
    }
}

/// Recognises the operation column of a plain trace.
pub(crate) fn plain_op(text: &str) -> Option<Op> {
    // The common spellings first, without the case-folding loop.
    match text {
        "READ" | "R" | "read" | "r" => return Some(Op::Load),
        "WRITE" | "W" | "write" | "w" => return Some(Op::Store),
        _ => {}
    }
    const READS: [&str; 4] = ["READ", "R", "P_MEM_RD", "P_FETCH"];
    const WRITES: [&str; 3] = ["WRITE", "W", "P_MEM_WR"];
    if READS.iter().any(|r| r.eq_ignore_ascii_case(text)) {
        Some(Op::Load)
    } else if WRITES.iter().any(|w| w.eq_ignore_ascii_case(text)) {
        Some(Op::Store)
    } else {
        None
    }
}

/// A plain trace line's operation, address and cycle (if it has one).
type PlainFields = (Op, u64, Option<u64>);

/// [`parse_plain_line`] for the common spelling only, on the raw bytes of a buffer that starts
/// with the line: a hex address (`0x` optional, at most 16 digits), blanks, an operation
/// [`plain_op`] takes that is all letters (`READ`, `w`, ...), and optionally blanks and a
/// decimal cycle (at most 19 digits),
/// then `\n` (or `\r\n`), with nothing else on the line. Returns the fields and the bytes up
/// to and including the `\n`; `None` for anything else, which [`parse_plain_line`] then reads,
/// accepts or refuses with its message (the two agree where both take a line: tests
/// `fast_and_general_plain_parsers_agree` and
/// `plain_reader_gives_the_same_events_with_and_without_the_fast_path`).
#[inline]
fn parse_plain_fast(b: &[u8]) -> Option<(PlainFields, usize)> {
    let mut i = 0;
    if b.len() > 2 && b[0] == b'0' && (b[1] | 0x20) == b'x' {
        i = 2;
    }
    let start = i;
    let mut addr: u64 = 0;
    while let Some(d) = b.get(i).and_then(|&c| hex_digit(c)) {
        addr = addr << 4 | u64::from(d);
        i += 1;
    }
    if i == start || i - start > 16 {
        return None;
    }
    let blank = |c: u8| c == b' ' || c == b'\t';
    let op_start = i;
    while b.get(i).copied().is_some_and(blank) {
        i += 1;
    }
    if i == op_start {
        return None;
    }
    let word = i;
    while b.get(i).is_some_and(u8::is_ascii_alphabetic) {
        i += 1;
    }
    // Letters only (ASCII): the general parser's spellings without `_` (`P_MEM_RD` is left
    // to it).
    let op = plain_op(std::str::from_utf8(&b[word..i]).ok()?)?;
    let after_op = i;
    while b.get(i).copied().is_some_and(blank) {
        i += 1;
    }
    let mut cycle = None;
    if i > after_op && b.get(i).is_some_and(u8::is_ascii_digit) {
        let digits = i;
        let mut c: u64 = 0;
        while let Some(&d) = b.get(i).filter(|d| d.is_ascii_digit()) {
            // 19 digits cannot overflow; longer numbers are left to the general parser.
            if i - digits == 19 {
                return None;
            }
            c = c * 10 + u64::from(d - b'0');
            i += 1;
        }
        // A hex cycle (`0x...`) is left to the general parser too.
        if b.get(i) == Some(&b'x') || b.get(i) == Some(&b'X') {
            return None;
        }
        cycle = Some(c);
        while b.get(i).copied().is_some_and(blank) {
            i += 1;
        }
    }
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    (b.get(i) == Some(&b'\n')).then_some(((op, addr, cycle), i + 1))
}

fn parse_plain_line(line: &str) -> Result<PlainFields, TraceError> {
    const EXPECTED: &str = "expected `hexaddr READ|WRITE cycle`";
    let (t, n) = tokens::<3>(line).map_err(|_| syntax(format!("too many fields ({EXPECTED})")))?;
    if n < 2 {
        return Err(syntax(format!("missing operation ({EXPECTED})")));
    }
    let addr = hex_field("address", t[0])?;
    let op = plain_op(t[1]).ok_or_else(|| {
        syntax(format!(
            "operation must be READ/R or WRITE/W, found `{}`",
            excerpt(t[1])
        ))
    })?;
    let cycle = if n == 3 {
        Some(parse_num_u64(t[2]).ok_or_else(|| {
            TraceError::from(ErrorKind::InvalidNumber {
                field: "cycle",
                text: excerpt(t[2]),
            })
        })?)
    } else {
        None
    };
    Ok((op, addr, cycle))
}

impl<R: BufRead> Iterator for PlainReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of plain-trace lines: the common spellings the fast parser takes and the
    /// variants it must leave to the general one (or refuse as it does).
    fn plain_line() -> impl Strategy<Value = String> {
        let addr = prop_oneof![
            "(0x|0X)?[0-9a-fA-F]{1,16}",
            "(0x)?0{0,6}[0-9a-f]{1,18}",
            "0x",
            "0x[0-9a-f]{0,4}[g#.][0-9]{0,2}",
            "[ \t]{1,2}0x[0-9a-f]{1,8}",
        ];
        let blank = prop_oneof![Just(" "), Just("\t"), Just("  "), Just(""), Just("\u{c}")];
        let op = prop_oneof![
            Just("READ"),
            Just("WRITE"),
            Just("R"),
            Just("w"),
            Just("read"),
            Just("Write"),
            Just("P_MEM_RD"),
            Just("READX"),
            Just(""),
        ];
        let cycle = prop_oneof![
            "[0-9]{1,3}",
            "[0-9]{17,21}",
            "0x[0-9a-f]{1,4}",
            "[0-9]{1,2}[a-z]",
            Just(String::new()),
        ];
        let tail = prop_oneof![Just(""), Just(" "), Just(" # c"), Just("\r"), Just(" x")];
        (addr, blank.clone(), op, blank, cycle, tail)
            .prop_map(|(a, b1, o, b2, c, t)| format!("{a}{b1}{o}{b2}{c}{t}"))
    }

    proptest! {
        /// Where the fast parser takes a line, the general one reads the same fields from it.
        #[test]
        fn fast_and_general_plain_parsers_agree(line in plain_line()) {
            let buffered = format!("{line}\n0x40 READ 1\n");
            if let Some((fields, used)) = parse_plain_fast(buffered.as_bytes()) {
                prop_assert_eq!(used, line.len() + 1);
                let general = parse_plain_line(strip_comment(line.trim()));
                prop_assert_eq!(general.ok(), Some(fields));
            }
        }

        /// A reader whose buffer never holds a whole line (every line through the general
        /// parser) and one with the default buffer (most lines through the fast one) give the
        /// same events and the same error, at the same line.
        #[test]
        fn plain_reader_gives_the_same_events_with_and_without_the_fast_path(
            lines in proptest::collection::vec(plain_line(), 1..40)
        ) {
            let text = lines.join("\n");
            let read = |cap: usize| -> Vec<Result<TraceEvent, String>> {
                let r = std::io::BufReader::with_capacity(cap, text.as_bytes());
                PlainReader::new(r, &ImportOptions::default())
                    .map(|e| e.map_err(|e| e.to_string()))
                    .collect()
            };
            prop_assert_eq!(read(1), read(8192));
        }
    }

    #[test]
    fn the_fast_plain_parser_takes_the_common_lines() {
        for (line, fields) in [
            (
                "0x7f64768e1c40 READ 12\n",
                (Op::Load, 0x7f64_768e_1c40, Some(12)),
            ),
            (
                "7F64768E1C80\tWRITE\t15\r\n",
                (Op::Store, 0x7f64_768e_1c80, Some(15)),
            ),
            ("0x1000 w\n", (Op::Store, 0x1000, None)),
            (
                "0X10 r  9999999999999999999 \n",
                (Op::Load, 0x10, Some(9_999_999_999_999_999_999)),
            ),
        ] {
            assert_eq!(
                parse_plain_fast(line.as_bytes()),
                Some((fields, line.len())),
                "{line:?}"
            );
        }
        // Left to the general parser: a comment, a hex cycle, a line not yet ended.
        for line in ["0x10 READ 5 # c\n", "0x10 READ 0x5\n", "0x10 READ 5"] {
            assert_eq!(parse_plain_fast(line.as_bytes()), None, "{line:?}");
        }
        // A line over the length limit is refused even where the buffer holds all of it (a
        // slice reader's does): the fast parser never sees past the limit.
        let long = format!("0x10{}READ 5\n", " ".repeat(crate::lines::MAX_LINE_BYTES));
        let r: Vec<_> = PlainReader::new(long.as_bytes(), &ImportOptions::default()).collect();
        let e = r[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("longer than"), "{e}");
    }

    #[test]
    fn data_number_to_le_bytes() {
        let mut out = [0u8; MAX_VALUE_BYTES];
        le_bytes_from_hex_number("0x1122334455667788", 8, &mut out).unwrap();
        assert_eq!(&out[..8], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        le_bytes_from_hex_number("0x00000000abc", 4, &mut out).unwrap();
        assert_eq!(&out[..4], &[0xbc, 0x0a, 0, 0]);
        assert!(le_bytes_from_hex_number("0x1ffffffff", 4, &mut out).is_err());
        assert!(le_bytes_from_hex_number("0x", 4, &mut out).is_err());
    }

    #[test]
    fn a_gap_larger_than_a_gap_can_hold_is_an_error_naming_its_line() {
        // 2^32 cycles after the previous line: it used to be clamped to 2^32 - 1.
        let text = "0x1000 READ 0\n0x1000 READ 4294967295\n0x1040 READ 8589934591\n";
        let events: Vec<_> = PlainReader::new(text.as_bytes(), &ImportOptions::default()).collect();
        assert_eq!(events[1].as_ref().unwrap().gap, u32::MAX);
        let e = events[2].as_ref().unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("cycle gap"), "{e}");
        assert_eq!(events.len(), 3);
    }
}
