//! Round trips: events → .pmt → events, events → text → events, and conversions between them.

mod common;

use common::{arb_event, arb_header, pmt_bytes, read_all, sample_events};
use pmtrace::{
    flags, format_event, parse_event_line, write_pmt, write_text, ErrorKind, Location, Op,
    PmtReader, PmtWriter, TextReader, TraceEvent, TraceFormat, TraceHeader, TraceSource,
    TraceStats,
};
use proptest::prelude::*;

fn events_and_header() -> impl Strategy<Value = (TraceHeader, Vec<TraceEvent>)> {
    arb_header().prop_flat_map(|h| {
        let t = h.threads;
        (Just(h), prop::collection::vec(arb_event(t), 0..300))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pmt_round_trip((header, events) in events_and_header(), block in 128usize..4096) {
        let bytes = pmt_bytes(&header, &events, block);
        let (h2, ev2) = read_all(&bytes).unwrap();
        prop_assert_eq!(h2, header);
        prop_assert_eq!(ev2, events);
    }

    #[test]
    fn pmt_round_trip_default_blocks((header, events) in events_and_header()) {
        let (bytes, n) = write_pmt(&header, &events, Vec::new()).unwrap();
        prop_assert_eq!(n, events.len() as u64);
        let mut r = PmtReader::new(&bytes[..]).unwrap();
        let back: Vec<TraceEvent> = r.by_ref().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, events);
        prop_assert_eq!(r.bytes_read(), bytes.len() as u64);
    }

    #[test]
    fn text_line_round_trip(ev in arb_event(16)) {
        let line = format_event(&ev);
        prop_assert!(!line.contains('\n'));
        prop_assert_eq!(parse_event_line(&line).unwrap(), ev);
    }

    #[test]
    fn text_dump_round_trip((header, events) in events_and_header()) {
        let mut out = Vec::new();
        let (_, n) = write_text(&header, &events, &mut out).unwrap();
        prop_assert_eq!(n, events.len() as u64);
        let mut r = TextReader::new(&out[..]).unwrap();
        prop_assert_eq!(r.header(), &header);
        let back: Vec<TraceEvent> = r.by_ref().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, events);
    }

    /// pmt → (detected) source → text → (detected) source → pmt gives the same bytes.
    #[test]
    fn conversions_are_lossless((header, events) in events_and_header()) {
        let pmt = pmt_bytes(&header, &events, 65536);
        let mut src = TraceSource::from_reader(std::io::Cursor::new(pmt.clone()), &Default::default()).unwrap();
        prop_assert_eq!(src.format(), TraceFormat::Pmt);
        let h = src.header().clone();
        let mut text = Vec::new();
        write_text(&h, &mut src, &mut text).unwrap();
        let mut src = TraceSource::from_reader(std::io::Cursor::new(text), &Default::default()).unwrap();
        prop_assert_eq!(src.format(), TraceFormat::Text);
        let h = src.header().clone();
        let (pmt2, _) = write_pmt(&h, &mut src, Vec::new()).unwrap();
        prop_assert_eq!(pmt2, pmt);
    }
}

#[test]
fn empty_trace_round_trips() {
    let header = TraceHeader::new("empty", 3).with_seed(9).with_params("n=0");
    let bytes = pmt_bytes(&header, &[], 65536);
    let (h, ev) = read_all(&bytes).unwrap();
    assert_eq!(h, header);
    assert!(ev.is_empty());
}

#[test]
fn multi_block_trace_has_many_blocks_and_reads_back() {
    let header = TraceHeader::new("blocks", 3).with_flags(flags::STORE_VALUES);
    let events = sample_events(5000);
    let small = pmt_bytes(&header, &events, 256);
    let big = pmt_bytes(&header, &events, 1 << 20);
    // Per-block delta resets and frame headers cost space: small blocks must be larger.
    assert!(small.len() > big.len(), "{} vs {}", small.len(), big.len());
    assert_eq!(read_all(&small).unwrap().1, events);
    assert_eq!(read_all(&big).unwrap().1, events);
}

#[test]
fn encoding_is_compact_for_typical_events() {
    // Sequential 64-byte loads of one thread from one pc: tag, pc delta 0, addr delta +64
    // (2 bytes), size, gap = 6 bytes each, plus framing.
    let header = TraceHeader::new("seq", 1);
    let events: Vec<_> = (0..10_000u64)
        .map(|i| TraceEvent::access(Op::Load, 0, 0x401000, 0x1000_0000 + i * 64, 64, 2))
        .collect();
    let bytes = pmt_bytes(&header, &events, 65536);
    assert!(bytes.len() <= 10_000 * 6 + 200, "{} bytes", bytes.len());
}

#[test]
fn writer_rejects_invalid_events_and_stays_usable() {
    let header = TraceHeader::new("w", 2);
    let mut w = PmtWriter::new(Vec::new(), header).unwrap();
    let good = TraceEvent::access(Op::Load, 1, 0x10, 0x40, 8, 0);
    w.write(&good).unwrap();

    type Expect = fn(&ErrorKind) -> bool;
    let cases: Vec<(TraceEvent, Expect)> = vec![
        (TraceEvent::access(Op::Load, 2, 0, 0x40, 8, 0), |k| {
            matches!(
                k,
                ErrorKind::ThreadOutOfRange {
                    thread: 2,
                    threads: 2
                }
            )
        }),
        (
            {
                let mut e = TraceEvent::store(Op::Store, 0, 0, 0x40, &[1; 8], 0);
                e.size = 4;
                e
            },
            |k| {
                matches!(
                    k,
                    ErrorKind::ValueLongerThanSize {
                        value_len: 8,
                        size: 4
                    }
                )
            },
        ),
        (
            TraceEvent::access(Op::Load, 0, 0, 0x40, 0, 0),
            |k| matches!(k, ErrorKind::InvalidEvent { reason } if reason.contains("0 bytes")),
        ),
        (TraceEvent::access(Op::Store, 0, 0, 0x40, 5000, 0), |k| {
            matches!(k, ErrorKind::SizeTooLarge { size: 5000, .. })
        }),
        (
            TraceEvent {
                addr: 0x40,
                ..TraceEvent::marker(Op::Sfence, 0, 0, 0)
            },
            |k| matches!(k, ErrorKind::InvalidEvent { .. }),
        ),
        (
            {
                let mut e = TraceEvent::store(Op::Store, 0, 0, 0x40, &[1; 8], 0);
                e.op = Op::Clwb;
                e
            },
            |k| matches!(k, ErrorKind::InvalidEvent { .. }),
        ),
    ];
    for (ev, expect) in &cases {
        let e = w.write(ev).unwrap_err();
        assert!(expect(e.kind()), "unexpected error {e}");
        // Location: the index of the rejected event (1 event accepted so far).
        assert_eq!(e.location(), &Location::Event(1), "{e}");
    }
    w.write(&good).unwrap();
    assert_eq!(w.events_written(), 2);
    let bytes = w.finish().unwrap();
    assert_eq!(read_all(&bytes).unwrap().1, vec![good, good]);
}

#[test]
fn writer_rejects_bad_headers() {
    for h in [
        TraceHeader::new("x", 0),
        TraceHeader::new("n".repeat(300), 1),
        TraceHeader::new("x", 1).with_params("p".repeat(70_000)),
        TraceHeader::new("x", 1).with_flags(1 << 20),
    ] {
        let e = PmtWriter::new(Vec::new(), h).err().expect("must fail");
        assert!(matches!(e.kind(), ErrorKind::BadHeader { .. }), "{e}");
    }
    // Advisory flags unknown to this version are fine.
    PmtWriter::new(Vec::new(), TraceHeader::new("x", 1).with_flags(1 << 9)).unwrap();
}

#[test]
fn partial_values_round_trip() {
    let header = TraceHeader::new("partial", 1);
    let mut ev = TraceEvent::access(Op::NtStore, 0, 1, 0x80, 64, 0);
    ev.value[..3].copy_from_slice(&[7, 8, 9]);
    ev.value_len = 3;
    let bytes = pmt_bytes(&header, &[ev], 65536);
    assert_eq!(read_all(&bytes).unwrap().1, vec![ev]);
    let line = format_event(&ev);
    assert_eq!(
        line,
        "t0 ntstore pc=0x1 addr=0x80 size=64 gap=0 value=070809"
    );
    assert_eq!(parse_event_line(&line).unwrap(), ev);
    // One line alone is checked as a trace line is: more value than size, or a size of 0.
    for bad in [
        "t0 store pc=0 addr=0x0 size=1 value=0011",
        "t0 load pc=0 addr=0x40 size=0",
    ] {
        assert!(parse_event_line(bad).is_err(), "{bad}");
    }
}

#[test]
fn stats_count_what_they_should() {
    let events = vec![
        TraceEvent::access(Op::Load, 0, 0, 0x1000, 64, 5),
        TraceEvent::access(Op::Load, 1, 0, 0x1020, 8, 1), // same line as above
        TraceEvent::store(Op::Store, 1, 0, 0x103c, &[1, 2, 3, 4, 5, 6, 7, 8], 2), // spans 2 lines
        TraceEvent::access(Op::Store, 0, 0, 0x5000, 64, 0),
        TraceEvent::access(Op::Clwb, 0, 0, 0x1000, 64, 0),
        TraceEvent::marker(Op::Sfence, 2, 0, 10),
    ];
    let s = TraceStats::from_events(&events);
    assert_eq!(s.events, 6);
    assert_eq!(s.count(Op::Load), 2);
    assert_eq!(s.count(Op::Store), 2);
    assert_eq!(s.count(Op::Sfence), 1);
    assert_eq!(s.per_thread, vec![3, 2, 1]);
    assert_eq!(s.bytes_loaded, 72);
    assert_eq!(s.bytes_stored, 72);
    assert_eq!(s.stores, 2);
    assert_eq!(s.stores_with_value, 1);
    assert_eq!(s.distinct_lines(), 3); // 0x1000, 0x1040, 0x5000
    assert_eq!(s.total_gap, 18);
    let table = s.to_string();
    assert!(table.contains("distinct 64 B lines"), "{table}");
    assert!(table.contains("sfence"), "{table}");
}

#[test]
fn awaits_round_trip_and_bad_edges_are_refused() {
    let ev = TraceEvent::await_events(2, 0x40, 0, 12345, 7);
    assert_eq!(ev.awaited(), Some((0, 12345)));
    let line = format_event(&ev);
    assert_eq!(line, "t2 await pc=0x40 after=t0:12345 gap=7");
    assert_eq!(parse_event_line(&line).unwrap(), ev);
    let header = TraceHeader::new("awaits", 3);
    let (bytes, _) = write_pmt(&header, [ev], Vec::new()).unwrap();
    assert_eq!(read_all(&bytes).unwrap().1, vec![ev]);
    // An edge to the thread itself, to a thread past the trace's, or to event 0.
    for (bad, why) in [
        (
            TraceEvent::await_events(1, 0, 1, 5, 0),
            "awaits its own events",
        ),
        (
            TraceEvent::await_events(1, 0, 3, 5, 0),
            "the trace has 3 thread(s)",
        ),
        (
            TraceEvent {
                addr: 0,
                ..TraceEvent::marker(Op::Await, 1, 0, 0)
            },
            "counts start at 1",
        ),
    ] {
        let e = bad.check(3).unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    }
    // Text: `after` only on awaits, and every await has one.
    for (text, why) in [
        ("t0 await pc=0x1 gap=0", "await needs `after=tSOURCE:COUNT`"),
        ("t0 sfence after=t1:3", "sfence takes no `after`"),
        ("t0 await after=1:3", "expected tSOURCE:COUNT"),
        ("t0 await after=t1:x", "expected tSOURCE:COUNT"),
    ] {
        let e = parse_event_line(text).unwrap_err().to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
}
