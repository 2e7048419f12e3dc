//! Format detection and `open_trace` on files of every format.

mod common;

use std::path::PathBuf;

use common::{pmt_bytes, sample_events};
use pmtrace::{
    detect_format, open_trace, write_text, ErrorKind, ImportOptions, Op, TraceFormat, TraceHeader,
    TraceSource,
};

fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pmtrace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn detect(bytes: &[u8]) -> Result<TraceFormat, pmtrace::TraceError> {
    TraceSource::from_reader(
        std::io::Cursor::new(bytes.to_vec()),
        &ImportOptions::default(),
    )
    .map(|s| s.format())
}

#[test]
fn detects_every_format_from_content() {
    let header = TraceHeader::new("d", 3);
    let events = sample_events(50);
    let pmt = pmt_bytes(&header, &events, 65536);
    let mut txt = Vec::new();
    write_text(&header, &events, &mut txt).unwrap();

    assert_eq!(detect_format(&pmt).unwrap(), TraceFormat::Pmt);
    assert_eq!(detect(&pmt).unwrap(), TraceFormat::Pmt);
    assert_eq!(detect(&txt).unwrap(), TraceFormat::Text);
    // A text dump without the marker line, only event lines.
    assert_eq!(
        detect(b"\n# hand-written\nt0 load addr=0x40 size=8\n").unwrap(),
        TraceFormat::Text
    );
    // An empty text dump (header lines only).
    assert_eq!(
        detect(b"# pmtrace text v1\n# threads=2\n").unwrap(),
        TraceFormat::Text
    );
    assert_eq!(
        detect(b"# comment\n@0x401000 P W 0x40 0x8 0x1 0x10\n").unwrap(),
        TraceFormat::Pmweaver
    );
    assert_eq!(
        detect(b"0x7f64768e1c40 READ 12\n").unwrap(),
        TraceFormat::Plain
    );
    assert_eq!(detect(b"7f64768e1c40 w 12\n").unwrap(), TraceFormat::Plain);
    // No trailing newline.
    assert_eq!(detect(b"0x10 R").unwrap(), TraceFormat::Plain);
}

#[test]
fn detection_survives_long_comment_headers() {
    let mut input = Vec::new();
    for i in 0..5000 {
        input.extend_from_slice(format!("# comment line {i} padding padding padding\n").as_bytes());
    }
    input.extend_from_slice(b"0x1000 WRITE 3\n0x1040 READ 9\n");
    let mut src =
        TraceSource::from_reader(std::io::Cursor::new(input), &Default::default()).unwrap();
    assert_eq!(src.format(), TraceFormat::Plain);
    let ev: Vec<_> = src.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1].gap, 6);
}

#[test]
fn unknown_format_names_the_first_line() {
    let e = detect(b"# header\n\nhello world, this is not a trace\n").unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::UnknownFormat { line: 3, .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("line 3"), "{msg}");
    assert!(msg.contains("`hello world, this is not a trace`"), "{msg}");

    let e = detect(b"").unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let e = detect(b"# only\n# comments\n").unwrap_err();
    assert!(e.to_string().contains("only comments"), "{e}");
    let e = detect(&[0xde, 0xad, 0xbe, 0xef, 0, 1, 2]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::UnknownFormat { .. }), "{e}");
}

#[test]
fn truncated_pmt_is_detected_as_pmt_and_reported_truncated() {
    let header = TraceHeader::new("t", 3);
    let pmt = pmt_bytes(&header, &sample_events(10), 65536);
    for cut in [3, 20, pmt.len() - 1] {
        let r = TraceSource::from_reader(
            std::io::Cursor::new(pmt[..cut].to_vec()),
            &Default::default(),
        )
        .and_then(|s| s.collect::<Result<Vec<_>, _>>());
        let e = r.unwrap_err();
        assert!(e.is_truncation(), "cut {cut}: {e}");
    }
}

#[test]
fn open_trace_reads_files_of_every_format() {
    let header = TraceHeader::new("files", 3).with_params("n=40");
    let events = sample_events(40);
    let pmt = temp_file("a.pmt", &pmt_bytes(&header, &events, 65536));
    let mut txt = Vec::new();
    write_text(&header, &events, &mut txt).unwrap();
    let txt = temp_file("a.txt", &txt);
    let pmw = temp_file(
        "store_dump.log",
        b"@0x401000 P W 0x40 0x8 0x2a 0x0\n@0x401004 P C 0x40 0x1 0x0 0x29a\n",
    );
    let plain = temp_file("mem.trace", b"0x40 READ 1\n0x80 WRITE 2\n");

    for path in [&pmt, &txt] {
        let mut src = open_trace(path).unwrap();
        assert_eq!(src.header(), &header);
        let back: Vec<_> = src.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, events);
    }

    let mut src = open_trace(&pmw).unwrap();
    assert_eq!(src.format(), TraceFormat::Pmweaver);
    assert_eq!(src.header().workload, "store_dump.log");
    let ev: Vec<_> = src.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(ev[0].value_bytes(), &42u64.to_le_bytes());
    assert_eq!(ev[1].op, Op::Clwb);
    assert_eq!(ev[1].gap, 2); // 0x29a = 666 ticks = 2 cycles of 333

    let src = open_trace(&plain).unwrap();
    assert_eq!(src.format(), TraceFormat::Plain);
    assert_eq!(src.count(), 2);

    let e = open_trace(std::env::temp_dir().join("pmtrace-no-such-file.pmt"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("pmtrace-no-such-file.pmt"), "{e}");

    for p in [pmt, txt, pmw, plain] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn sources_and_readers_are_send() {
    fn assert_send<T: Send>() {}
    assert_send::<TraceSource>();
    assert_send::<pmtrace::PmtReader<std::fs::File>>();
    assert_send::<pmtrace::PmtWriter<std::fs::File>>();
    assert_send::<pmtrace::TraceError>();
}

#[test]
fn format_names_round_trip() {
    for f in TraceFormat::ALL {
        assert_eq!(TraceFormat::from_name(f.name()), Some(f));
    }
    assert_eq!(TraceFormat::from_name("csv"), None);
}

#[test]
fn binary_input_is_named_not_echoed() {
    // Random bytes (no .pmt magic): the message says what they are instead of printing them.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..3000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let e = detect_format(&bytes).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("binary data"), "{msg}");
    assert!(
        msg.chars().all(|c| !c.is_control() && c != '\u{fffd}'),
        "{msg:?}"
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    // Editors on Windows start text files with a UTF-8 BOM: such a dump or plain trace once
    // failed as an unknown format, the BOM invisible in the message.
    let (dump, _) = write_text(&TraceHeader::new("bom", 4), sample_events(20), Vec::new()).unwrap();
    let plain = b"0x40 READ 0\n0x80 WRITE 5\n".to_vec();
    for (body, format) in [(dump, TraceFormat::Text), (plain, TraceFormat::Plain)] {
        let want: Vec<_> =
            TraceSource::from_reader(std::io::Cursor::new(body.clone()), &Default::default())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
        let bom = [b"\xef\xbb\xbf".as_slice(), &body].concat();
        assert_eq!(detect(&bom).unwrap(), format);
        let got: Vec<_> = TraceSource::from_reader(std::io::Cursor::new(bom), &Default::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, want);
    }
}
