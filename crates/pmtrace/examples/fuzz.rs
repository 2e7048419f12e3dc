//! A stable-Rust fuzzer for every pmtrace parser: the `.pmt` reader, the text reader, the
//! PMWeaver and plain importers, and format detection.
//!
//! ```text
//! # recommended: release speed with overflow checks and debug assertions on
//! CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
//!     cargo run --release -p pmtrace --example fuzz -- --seconds 60 [--seed N] [--crash-file PATH]
//! ```
//!
//! It builds seed inputs in-process (valid `.pmt` files of several shapes, text dumps, PMWeaver
//! and plain traces), then for the given time repeatedly mutates them with a deterministic PRNG
//! (bit flips, interesting byte and 32-bit values, truncation, insertion, deletion, duplication,
//! splicing of two inputs, format-specific tokens), usually repairs the checksums of mutated
//! `.pmt` inputs so that the record decoder is reached, and feeds each result to every parser inside
//! `catch_unwind`. Beyond "no panic" it checks invariants: every event a parser returns passes
//! [`TraceEvent::check`] against its header, every error message is one line with a location,
//! and whatever the `.pmt` or text reader accepts re-encodes and re-reads to the same events.
//! Inputs that produce a new (parser, outcome) class join the corpus (a crude feedback).
//!
//! On a panic it writes the input as hex to the crash file (default `pmtrace-fuzz-crash.hex`),
//! prints the panic message and exits with status 1. Otherwise it prints the execution count
//! and exits 0.

use std::collections::HashSet;
use std::io::Cursor;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pmtrace::{
    write_pmt, write_text, ErrorKind, ImportOptions, Location, Op, PlainReader, PmtReader,
    PmtWriter, PmweaverReader, TextReader, TraceError, TraceEvent, TraceHeader, TraceSource,
};

/// Largest input fed to the parsers.
const MAX_INPUT: usize = 256 * 1024;
/// Largest corpus kept.
const MAX_CORPUS: usize = 4096;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn seed_events(rng: &mut Rng, n: usize, threads: u16) -> Vec<TraceEvent> {
    // Events each thread has so far: an await names an event of another thread that is
    // already in the trace (a marker with no source and count 0 is no valid event).
    let mut per_thread = vec![0u64; threads as usize];
    (0..n)
        .map(|_| {
            let op = Op::ALL[rng.below(Op::ALL.len())];
            let thread = rng.below(threads as usize) as u16;
            per_thread[thread as usize] += 1;
            let pc = 0x40_1000 + rng.below(64) as u64 * 4;
            let gap = rng.below(50) as u32;
            if op == Op::Await {
                let source = rng.below(threads as usize) as u16;
                let count = per_thread[source as usize];
                return if source != thread && count > 0 {
                    TraceEvent::await_events(
                        thread,
                        pc,
                        source,
                        1 + rng.below(count as usize) as u64,
                        gap,
                    )
                } else {
                    TraceEvent::marker(Op::Compute, thread, pc, gap)
                };
            }
            if !op.has_address() {
                return TraceEvent::marker(op, thread, pc, gap);
            }
            let addr = if rng.chance(2) {
                0x1000 + rng.below(64) as u64 * 64
            } else {
                rng.next()
            };
            if op.carries_value() && rng.chance(2) {
                let len = 1 + rng.below(16);
                let v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                TraceEvent::store(op, thread, pc, addr, &v, gap)
            } else {
                TraceEvent::access(op, thread, pc, addr, [1, 4, 8, 64, 4096][rng.below(5)], gap)
            }
        })
        .collect()
}

fn seeds(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (n, threads, block) in [
        (0, 1, 256),
        (1, 1, 256),
        (20, 2, 256),
        (200, 4, 300),
        (50, 300, 1 << 16),
    ] {
        let header = TraceHeader::new("fuzz-seed", threads)
            .with_seed(n as u64)
            .with_params("k=v\tnote=\\x")
            .with_flags(pmtrace::flags::STORE_VALUES);
        let events = seed_events(rng, n, threads);
        let mut w = PmtWriter::with_block_payload(Vec::new(), header.clone(), block).unwrap();
        for ev in &events {
            w.write(ev).unwrap();
        }
        out.push(w.finish().unwrap());
        let mut text = Vec::new();
        write_text(&header, &events, &mut text).unwrap();
        out.push(text);
    }
    out.push(
        b"# PMWeaver dump\n@0x0000000000401a2c P W 0x0000100000000040 0x8 0x1122334455667788 0x00000000000003e8\n\
@0x0000000000401a30 V W 0x00007ffffffde010 0x4 0xdeadbeef 0x0000000000000535\n\
@0x0000000000401a40 P C 0x0000100000000040 0x1 0x0 0x00000000000007d0\n"
            .to_vec(),
    );
    out.push(
        b"# plain\n0x1000 READ 10\n0x2040 WRITE 15\n1000 r 15\n0X3000 w\n0x4000 P_MEM_WR 0x20\n"
            .to_vec(),
    );
    out.push(
        b"# pmtrace text v1\n# threads=2\n# workload=a\\u{7}b\nt1 store addr=0x40 value=0102 pc=7\nt0 sfence\nt1 compute gap=9\n"
            .to_vec(),
    );
    out
}

const TOKENS: &[&[u8]] = &[
    b"0x",
    b"@",
    b"t0",
    b"t1",
    b"t65535",
    b"store",
    b"load",
    b"clwb",
    b"sfence",
    b"rdmapwrite",
    b"value=",
    b"addr=",
    b"size=",
    b"gap=",
    b"pc=",
    b"=",
    b" ",
    b"\n",
    b"\r\n",
    b"#",
    b"# pmtrace text v1\n",
    b"# threads=",
    b"READ",
    b"WRITE",
    b"P",
    b"V",
    b"W",
    b"C",
    b"ff",
    b"ffffffffffffffffff",
    b"4096",
    b"4097",
    b"65",
    b"0",
    b"-1",
    b"\\u{",
    b"\\",
    b"PMTRACE\0",
    b"\xff\xfe",
    b"\t",
];

const INTERESTING_U32: &[u32] = &[
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xffff,
    0x10000,
    0x10_0000,
    0x10_0001,
    0x7fff_ffff,
    0x8000_0000,
    u32::MAX,
];

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = input.len();
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = [0, 0xff, 0x7f, 0x80, 0x42, 0x45, 0x10, 0x20, 0x40][rng.below(9)];
            }
            2 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            3 if len >= 4 => {
                let i = rng.below(len - 3);
                let v = INTERESTING_U32[rng.below(INTERESTING_U32.len())];
                input[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            4 => {
                input.truncate(rng.below(len + 1));
            }
            5 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(64)).min(len);
                input.drain(start..end);
            }
            6 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                input.splice(at..at, bytes);
            }
            7 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(256)).min(len);
                let chunk = input[start..end].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, chunk);
            }
            8 if !corpus.is_empty() => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                input.truncate(cut);
                input.extend_from_slice(&other[from..]);
            }
            9 => {
                let at = rng.below(len + 1);
                let tok = TOKENS[rng.below(TOKENS.len())];
                input.splice(at..at, tok.iter().copied());
            }
            _ if len > 0 => {
                // Replace a whitespace-delimited token with a dictionary token.
                let i = rng.below(len);
                let start = input[..i]
                    .iter()
                    .rposition(|b| b.is_ascii_whitespace())
                    .map_or(0, |p| p + 1);
                let end = input[i..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .map_or(len, |p| i + p);
                let tok = TOKENS[rng.below(TOKENS.len())];
                input.splice(start..end, tok.iter().copied());
            }
            _ => input.push(rng.next() as u8),
        }
    }
    input.truncate(MAX_INPUT);
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    if let Some(dst) = buf.get_mut(at..at + 4) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

/// Structure-aware fix-up of a mutated `.pmt`: recomputes the header CRC, every block's payload
/// CRC and the trailer's chain CRC and CRC (and, if `fix_counts`, its event and block counts),
/// so that mutations reach the record decoder instead of all dying at a checksum.
fn fix_checksums(buf: &mut [u8], fix_counts: bool) {
    if buf.len() < 34 || &buf[..8] != pmtrace::MAGIC {
        return;
    }
    let name_len = u16::from_le_bytes([buf[24], buf[25]]) as usize;
    let Some(params_len) = u32_at(buf, 26) else {
        return;
    };
    let crc_off = 30 + name_len + params_len as usize;
    if crc_off + 4 > buf.len() {
        return;
    }
    let crc = crc32fast::hash(&buf[..crc_off]);
    put_u32(buf, crc_off, crc);
    let mut p = crc_off + 4;
    let mut chain = crc32fast::Hasher::new();
    let (mut blocks, mut events) = (0u64, 0u64);
    while p < buf.len() {
        match buf[p] {
            0x42 => {
                let (Some(len), Some(count)) = (u32_at(buf, p + 1), u32_at(buf, p + 5)) else {
                    return;
                };
                let end = p + 13 + len as usize;
                if end > buf.len() {
                    return;
                }
                let crc = crc32fast::hash(&buf[p + 13..end]);
                put_u32(buf, p + 9, crc);
                chain.update(&buf[p + 1..p + 13]);
                blocks += 1;
                events += count as u64;
                p = end;
            }
            0x45 => {
                if p + 25 > buf.len() {
                    return;
                }
                if fix_counts {
                    buf[p + 1..p + 9].copy_from_slice(&events.to_le_bytes());
                    buf[p + 9..p + 17].copy_from_slice(&blocks.to_le_bytes());
                }
                put_u32(buf, p + 17, chain.clone().finalize());
                let crc = crc32fast::hash(&buf[p..p + 21]);
                put_u32(buf, p + 21, crc);
                return;
            }
            _ => return,
        }
    }
}

/// Checks an error's invariants.
fn check_error(e: &TraceError) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "multi-line error message: {msg:?}");
    assert!(!msg.is_empty());
    if let ErrorKind::Io { .. } = e.kind() {
        panic!("I/O error from an in-memory input: {msg}");
    }
    if matches!(e.kind(), ErrorKind::UnknownFormat { .. }) {
        return;
    }
    assert!(
        !matches!(e.location(), Location::Unknown),
        "error without a location: {msg}"
    );
}

/// Drains a parser, checking every event against `threads`; returns (events, error class).
fn drain(
    threads: u16,
    it: impl Iterator<Item = Result<TraceEvent, TraceError>>,
    mut keep: Option<&mut Vec<TraceEvent>>,
) -> (usize, String) {
    let mut n = 0;
    for item in it {
        match item {
            Ok(ev) => {
                if let Err(k) = ev.check(threads) {
                    panic!("parser returned an invalid event {ev:?}: {k}");
                }
                if let Some(v) = keep.as_deref_mut() {
                    v.push(ev);
                }
                n += 1;
            }
            Err(e) => {
                check_error(&e);
                return (n, kind_name(&e));
            }
        }
    }
    (n, "ok".into())
}

fn kind_name(e: &TraceError) -> String {
    let dbg = format!("{:?}", e.kind());
    dbg.split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("")
        .to_string()
}

fn bucket(n: usize) -> usize {
    match n {
        0 => 0,
        1 => 1,
        2..=7 => 2,
        _ => 3,
    }
}

/// Feeds `input` to every parser; returns outcome classes (for corpus feedback).
fn run_one(input: &[u8]) -> Vec<String> {
    let mut classes = Vec::with_capacity(5);
    let opts = ImportOptions::default();

    // .pmt reader, plus round trip of accepted input.
    match PmtReader::new(input) {
        Ok(mut r) => {
            let header = r.header().clone();
            let mut events = Vec::new();
            let (n, class) = drain(header.threads, r.by_ref(), Some(&mut events));
            if class == "ok" {
                let (bytes, m) = write_pmt(&header, &events, Vec::new())
                    .expect("accepted .pmt events must re-encode");
                assert_eq!(m as usize, n);
                let mut again = PmtReader::new(&bytes[..]).expect("re-encoded header must read");
                let back: Vec<TraceEvent> = again
                    .by_ref()
                    .collect::<Result<_, _>>()
                    .expect("re-encoded trace must read");
                assert_eq!(back, events, "pmt round trip changed events");
            }
            classes.push(format!("pmt:{}:{class}", bucket(n)));
        }
        Err(e) => {
            check_error(&e);
            classes.push(format!("pmt-h:{}", kind_name(&e)));
        }
    }

    // Text reader, plus round trip of accepted input.
    match TextReader::new(input) {
        Ok(mut r) => {
            let header = r.header().clone();
            let mut events = Vec::new();
            let (n, class) = drain(header.threads, r.by_ref(), Some(&mut events));
            if class == "ok" {
                let mut text = Vec::new();
                write_text(&header, &events, &mut text).expect("accepted text must re-dump");
                let mut again = TextReader::new(&text[..]).expect("re-dumped header must parse");
                assert_eq!(again.header(), &header, "text header round trip");
                let back: Vec<TraceEvent> = again
                    .by_ref()
                    .collect::<Result<_, _>>()
                    .expect("re-dumped text must parse");
                assert_eq!(back, events, "text round trip changed events");
            }
            classes.push(format!("text:{}:{class}", bucket(n)));
        }
        Err(e) => {
            check_error(&e);
            classes.push(format!("text-h:{}", kind_name(&e)));
        }
    }

    let (n, class) = drain(1, PmweaverReader::new(input, &opts), None);
    classes.push(format!("pmw:{}:{class}", bucket(n)));
    let (n, class) = drain(1, PlainReader::new(input, &opts), None);
    classes.push(format!("plain:{}:{class}", bucket(n)));

    match TraceSource::from_reader(Cursor::new(input.to_vec()), &opts) {
        Ok(src) => {
            let threads = src.header().threads;
            let format = src.format();
            let (n, class) = drain(threads, src, None);
            classes.push(format!("src-{format}:{}:{class}", bucket(n)));
        }
        Err(e) => {
            check_error(&e);
            classes.push(format!("src-h:{}", kind_name(&e)));
        }
    }
    classes
}

fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2 + bytes.len() / 32 + 1);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 && i % 32 == 0 {
            s.push('\n');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s.push('\n');
    s
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

fn main() {
    let seconds: u64 = arg("--seconds").and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = arg("--seed").and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let crash_file = arg("--crash-file").unwrap_or_else(|| "pmtrace-fuzz-crash.hex".into());
    let mut rng = Rng(seed);
    // The seeds are built before the quiet panic hook goes in: a panic there is a bug of this
    // program, reported as usual.
    let mut corpus = seeds(&mut rng);

    panic::set_hook(Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic".into()
        };
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = format!("{msg}{loc}");
        }
    }));

    let mut seen: HashSet<String> = HashSet::new();
    // Seeds must pass untouched.
    for s in corpus.clone() {
        if panic::catch_unwind(AssertUnwindSafe(|| run_one(&s))).is_err() {
            report_crash(&s, &crash_file);
        }
    }
    for s in &corpus {
        for c in run_one(s) {
            seen.insert(c);
        }
    }

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut execs: u64 = 0;
    let mut next_report = start + Duration::from_secs(10);
    let mut input = Vec::new();
    loop {
        // Check the clock every 64 executions.
        if execs.is_multiple_of(64) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if now >= next_report {
                eprintln!(
                    "fuzz: {:>4.0}s {execs} execs, corpus {}, classes {}",
                    (now - start).as_secs_f64(),
                    corpus.len(),
                    seen.len()
                );
                next_report += Duration::from_secs(10);
            }
        }
        input.clear();
        input.extend_from_slice(&corpus[rng.below(corpus.len())]);
        mutate(&mut rng, &mut input, &corpus);
        if !rng.chance(4) {
            fix_checksums(&mut input, rng.chance(2));
        }
        execs += 1;
        match panic::catch_unwind(AssertUnwindSafe(|| run_one(&input))) {
            Ok(classes) => {
                let mut new = false;
                for c in classes {
                    if !seen.contains(&c) {
                        seen.insert(c);
                        new = true;
                    }
                }
                if new || (corpus.len() < MAX_CORPUS && rng.chance(512)) {
                    if corpus.len() >= MAX_CORPUS {
                        let victim = rng.below(corpus.len());
                        corpus[victim] = input.clone();
                    } else {
                        corpus.push(input.clone());
                    }
                }
            }
            Err(_) => report_crash(&input, &crash_file),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz: {execs} executions in {secs:.1} s ({:.0}/s), 0 crashes; corpus {}, outcome classes {}",
        execs as f64 / secs,
        corpus.len(),
        seen.len()
    );
}

fn report_crash(input: &[u8], crash_file: &str) -> ! {
    let msg = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
    let written = std::fs::write(crash_file, to_hex(input));
    eprintln!("fuzz: PANIC: {msg}");
    match written {
        Ok(()) => eprintln!(
            "fuzz: reproducing input ({} bytes) written as hex to {crash_file}",
            input.len()
        ),
        Err(e) => eprintln!("fuzz: could not write {crash_file}: {e}"),
    }
    std::process::exit(1);
}
