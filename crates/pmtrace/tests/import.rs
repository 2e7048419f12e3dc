//! Importers and the text parser on small hand-written inputs, including malformed lines whose
//! line numbers must appear in the error.

use pmtrace::{
    flags, ErrorKind, ImportOptions, Op, PlainReader, PmweaverReader, TextReader, TraceError,
    TraceEvent,
};

fn pmweaver(input: &str) -> Result<Vec<TraceEvent>, TraceError> {
    PmweaverReader::new(input.as_bytes(), &ImportOptions::default()).collect()
}

fn plain(input: &str) -> Result<Vec<TraceEvent>, TraceError> {
    PlainReader::new(input.as_bytes(), &ImportOptions::default()).collect()
}

fn text(input: &str) -> Result<Vec<TraceEvent>, TraceError> {
    TextReader::new(input.as_bytes())?.collect()
}

/// Asserts `r` failed at `line` with a message containing `needle`.
fn assert_line_error<T: std::fmt::Debug>(r: Result<T, TraceError>, line: u64, needle: &str) {
    let e = r.expect_err("input must be rejected");
    let msg = e.to_string();
    assert_eq!(e.line(), Some(line), "wrong line in: {msg}");
    assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
    assert!(msg.contains(needle), "expected `{needle}` in: {msg}");
    assert!(!msg.contains('\n'), "multi-line message: {msg}");
}

// Lines as the artifact's dumpTrace prints them (print_ptr = "0x" + zero-padded hex).
const ARTIFACT_DUMP: &str = "\
@0x0000000000401a2c P W 0x0000100000000040 0x8 0x1122334455667788 0x00000000000003e8
@0x0000000000401a30 V W 0x00007ffffffde010 0x4 0xdeadbeef 0x0000000000000535
@0x0000000000401a40 P C 0x0000100000000040 0x1 0x0 0x00000000000007d0
";

#[test]
fn pmweaver_artifact_lines() {
    let ev = pmweaver(ARTIFACT_DUMP).unwrap();
    assert_eq!(ev.len(), 3);

    // W, 8 bytes: the number's least significant byte is stored at vaddr.
    assert_eq!(ev[0].op, Op::Store);
    assert_eq!(ev[0].pc, 0x401a2c);
    assert_eq!(ev[0].addr, 0x1000_0000_0040);
    assert_eq!(ev[0].size, 8);
    assert_eq!(
        ev[0].value_bytes(),
        &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
    );
    assert_eq!(ev[0].gap, 0);
    assert_eq!(ev[0].thread, 0);

    // Volatile store kept; ticks 1000 -> 1333: floor(1333/333) - floor(1000/333) = 4 - 3.
    assert_eq!(ev[1].addr, 0x7fff_fffd_e010);
    assert_eq!(ev[1].value_bytes(), &[0xef, 0xbe, 0xad, 0xde]);
    assert_eq!(ev[1].gap, 1);

    // C -> clwb of the line; size column ignored; tick 2000: 6 - 4.
    assert_eq!(
        ev[2],
        TraceEvent::access(Op::Clwb, 0, 0x401a40, 0x1000_0000_0040, 64, 2)
    );
}

#[test]
fn pmweaver_clwb_is_of_the_line_holding_its_address() {
    // Unaligned, and in the address space's last line (refused as running past its end).
    let input =
        "@0x10 P C 0x1000000000048 0x1 0x0 0x10\n@0x14 P C 0xffffffffffffffc8 0x1 0x0 0x20\n";
    let ev = pmweaver(input).unwrap();
    assert_eq!(ev[0].addr, 0x1_0000_0000_0040);
    assert_eq!(ev[1].addr, 0xffff_ffff_ffff_ffc0);
    assert!(ev.iter().all(|e| e.op == Op::Clwb && e.size == 64));
}

#[test]
fn pmweaver_header_and_options() {
    let opts = ImportOptions {
        ticks_per_gap_unit: 1,
        workload: Some("dump.txt".into()),
    };
    let mut r = PmweaverReader::new(ARTIFACT_DUMP.as_bytes(), &opts);
    assert_eq!(r.header().threads, 1);
    assert_eq!(r.header().workload, "dump.txt");
    assert!(r.header().has_flag(flags::IMPORTED | flags::STORE_VALUES));
    assert!(r.header().params.contains("ticks_per_gap_unit=1"));
    let ev: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        ev.iter().map(|e| e.gap).collect::<Vec<_>>(),
        vec![0, 333, 667]
    );
}

#[test]
fn pmweaver_accepts_no_prefix_comments_and_short_data() {
    let input = "# dumped by hand\n\n@401000 p w 1000 4 ab 10\n@401004 P W 0x1004 0x2 0x0 0x20\n";
    let ev = pmweaver(input).unwrap();
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0].addr, 0x1000);
    assert_eq!(ev[0].value_bytes(), &[0xab, 0, 0, 0]);
    assert_eq!(ev[1].value_bytes(), &[0, 0]);
}

#[test]
fn pmweaver_malformed_lines_name_their_line() {
    let ok = "@0x10 P W 0x40 0x8 0x1 0x10\n";
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 X W 0x40 0x8 0x1 0x20\n")),
        2,
        "P (persistent) or V",
    );
    assert_line_error(
        pmweaver(&format!("{ok}{ok}@0x10 P Q 0x40 0x8 0x1 0x20\n")),
        3,
        "W (write) or C",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x8 0x1\n")),
        2,
        "6 fields",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x8 0x1 0x20 extra\n")),
        2,
        "too many fields",
    );
    assert_line_error(
        pmweaver(&format!("{ok}0x10 P W 0x40 0x8 0x1 0x20\n")),
        2,
        "`@PC`",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0xzz 0x8 0x1 0x20\n")),
        2,
        "invalid hex in vaddr: `0xzz`",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x4 0x1ffffffff 0x20\n")),
        2,
        "wider than the 4-byte store",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x41 0x1 0x20\n")),
        2,
        "store size 65",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x0 0x1 0x20\n")),
        2,
        "store size 0",
    );
    assert_line_error(
        pmweaver(&format!("{ok}@0x10 P W 0x40 0x8 0xq 0x20\n")),
        2,
        "invalid hex in data",
    );
    // Tick going backwards (0x10 after 0x20).
    assert_line_error(
        pmweaver("@0x10 P W 0x40 0x8 0x1 0x20\n# c\n@0x10 P W 0x40 0x8 0x1 0x10\n"),
        3,
        "tick goes backwards (16 after 32)",
    );
    // Long offending lines are truncated in the message.
    let long = format!("{ok}@0x10 P W 0x40 0x8 0x1 {}\n", "9".repeat(500));
    let e = pmweaver(&long).unwrap_err();
    assert_eq!(e.line(), Some(2));
    assert!(e.to_string().len() < 400, "{e}");
}

#[test]
fn a_pmweaver_gap_too_large_for_a_gap_is_an_error() {
    // It saturated at u32::MAX without a word, shortening the trace's time.
    let input = "@0x10 P W 0x40 0x8 0x1 0x0\n@0x10 P W 0x40 0x8 0x1 0xffffffffffffffff\n";
    assert_line_error(pmweaver(input), 2, "tick gap");
    // The largest gap still fits.
    let t = u32::MAX as u64 * 333;
    let ev = pmweaver(&format!(
        "@0x10 P W 0x40 0x8 0x1 0x0\n@0x10 P W 0x40 0x8 0x1 {t:#x}\n"
    ))
    .unwrap();
    assert_eq!(ev[1].gap, u32::MAX);
}

#[test]
fn plain_trace() {
    let input = "# a plain trace\n0x1000 READ 10 # first\n\n0x2040 WRITE 15\n1000 r 15\n0X3000 w\n0x4000 P_MEM_WR 0x20\n";
    let ev = plain(input).unwrap();
    assert_eq!(
        ev,
        vec![
            TraceEvent::access(Op::Load, 0, 0, 0x1000, 64, 0),
            TraceEvent::access(Op::Store, 0, 0, 0x2040, 64, 5),
            TraceEvent::access(Op::Load, 0, 0, 0x1000, 64, 0),
            TraceEvent::access(Op::Store, 0, 0, 0x3000, 64, 0),
            TraceEvent::access(Op::Store, 0, 0, 0x4000, 64, 17),
        ]
    );
    let r = PlainReader::new(input.as_bytes(), &ImportOptions::default());
    assert!(r.header().has_flag(flags::IMPORTED));
    assert!(!r.header().has_flag(flags::STORE_VALUES));
}

/// An address inside a line is a request for that line, one request (as DRAMsim3 reads it),
/// the address space's last line included; it once made a 64-byte access spanning two lines.
#[test]
fn plain_addresses_name_their_line() {
    let ev = plain(
        "0x1010 READ 1
0x107f WRITE 2
0xffffffffffffffff READ 3
",
    )
    .unwrap();
    assert_eq!(
        ev,
        vec![
            TraceEvent::access(Op::Load, 0, 0, 0x1000, 64, 0),
            TraceEvent::access(Op::Store, 0, 0, 0x1040, 64, 1),
            TraceEvent::access(Op::Load, 0, 0, 0xffff_ffff_ffff_ffc0, 64, 1),
        ]
    );
}

/// A PMWeaver store running past the address space is an error naming its line (a clwb is of
/// the line holding its address: `pmweaver_clwb_is_of_the_line_holding_its_address`).
#[test]
fn pmweaver_accesses_past_the_address_space_are_refused() {
    assert_line_error(
        pmweaver("@0x1 P W 0xfffffffffffffffc 8 0011223344556677 1000\n"),
        1,
        "runs past the end of the 64-bit address space",
    );
}

#[test]
fn plain_malformed_lines_name_their_line() {
    assert_line_error(
        plain("0x1000 READ 10\n0x1040 READ 9\n"),
        2,
        "cycle goes backwards (9 after 10)",
    );
    assert_line_error(
        plain("0x1000 READ 10\n\n0x1040 FETCH 11\n"),
        3,
        "READ/R or WRITE/W, found `FETCH`",
    );
    assert_line_error(plain("zz READ 1\n"), 1, "invalid hex in address: `zz`");
    assert_line_error(plain("0x10 READ 1 2\n"), 1, "too many fields");
    assert_line_error(plain("0x10\n"), 1, "missing operation");
    assert_line_error(plain("0x10 READ 1x\n"), 1, "invalid number in cycle: `1x`");
    assert_line_error(plain("0x10 READ -1\n"), 1, "invalid number in cycle");
}

#[test]
fn text_parser_accepts_hand_edits() {
    let input = "\
# pmtrace text v1
# workload=hand
# threads=2
   # indented comment
t1 STORE addr=0x40 value=0102 pc=7
t0 load pc=0x10 addr=64 size=8
t0 sfence   # end-of-line comment
# trailing comment with threads=9 is ignored
t1 compute gap=1000
";
    let mut r = TextReader::new(input.as_bytes()).unwrap();
    assert_eq!(r.header().threads, 2);
    assert_eq!(r.header().workload, "hand");
    let ev: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        ev,
        vec![
            TraceEvent::store(Op::Store, 1, 7, 0x40, &[1, 2], 0),
            TraceEvent::access(Op::Load, 0, 0x10, 64, 8, 0),
            TraceEvent::marker(Op::Sfence, 0, 0, 0),
            TraceEvent::marker(Op::Compute, 1, 0, 1000),
        ]
    );
}

#[test]
fn text_malformed_lines_name_their_line() {
    let h = "# pmtrace text v1\n# threads=2\n";
    let t = |body: &str| text(&format!("{h}{body}"));
    assert_line_error(
        t("t0 load addr=0x40 size=8\nt2 load addr=0x40 size=8\n"),
        4,
        "thread 2 out of range",
    );
    assert_line_error(t("t0 jump addr=0x40\n"), 3, "unknown op `jump`");
    assert_line_error(
        t("t0 store addr=0x40 size=2 value=00zz\n"),
        3,
        "invalid hex in value: `00zz`",
    );
    assert_line_error(
        t("t0 store addr=0x40 size=2 value=001\n"),
        3,
        "invalid hex in value",
    );
    assert_line_error(
        t("t0 store addr=0x40 size=2 value=001122\n"),
        3,
        "value longer than size",
    );
    assert_line_error(
        t("t0 load addr=0x40 size=9000\n"),
        3,
        "access size 9000 too large",
    );
    assert_line_error(
        t("t0 load addr=0x40 size=0\n"),
        3,
        "load of 0 bytes at 0x40",
    );
    assert_line_error(
        t("t0 clwb addr=0x40 size=0\n"),
        3,
        "clwb of 0 bytes at 0x40",
    );
    assert_line_error(t("t0 load size=8\n"), 3, "load needs `addr=`");
    assert_line_error(t("t0 load addr=0x40\n"), 3, "load needs `size=`");
    assert_line_error(t("t0 sfence addr=0x40\n"), 3, "sfence takes no `addr`");
    assert_line_error(
        t("t0 load addr=0x40 size=8 value=00\n"),
        3,
        "load cannot carry a value",
    );
    assert_line_error(t("t0 load addr=0x40 size=8 pc=1 pc=2\n"), 3, "given twice");
    assert_line_error(
        t("t0 load addr=0x40 size=8 color=red\n"),
        3,
        "unknown field `color`",
    );
    assert_line_error(
        t("t0 load addr=0x40 size=8 gap=5000000000\n"),
        3,
        "invalid number in gap",
    );
    assert_line_error(t("t0 load addr=0x4g size=8\n"), 3, "invalid number in addr");
    assert_line_error(t("x0 load\n"), 3, "expected `t<thread>`");
    let e = t("t70000 load addr=0x40 size=8\n").unwrap_err().to_string();
    assert!(
        e.contains("invalid number in thread: `70000 (max 65534)`") && !e.contains("declares"),
        "{e}"
    );
    assert_line_error(t("t0 load addr\n"), 3, "expected `key=value`");
    assert_line_error(
        text("# pmtrace text v3\n"),
        1,
        "unsupported format version 3",
    );
    assert_line_error(
        text("# pmtrace text v1\n# threads=0\n"),
        2,
        "thread count is 0",
    );
    assert_line_error(
        text("# pmtrace text v1\n# threads=1\n# threads=2\n"),
        3,
        "given twice",
    );
    assert_line_error(
        text("# pmtrace text v1\n# workload=a\\qb\n"),
        2,
        "unknown escape",
    );
    // Without a threads line, only t0 is valid, and the error says so.
    assert_line_error(text("t0 sfence\nt1 sfence\n"), 2, "declares 1 thread");
}

#[test]
fn invalid_utf8_and_overlong_lines() {
    let mut bad = b"0x10 READ 1\n0x20 READ ".to_vec();
    bad.extend_from_slice(&[0xff, 0xfe, b'\n']);
    let e = PlainReader::new(&bad[..], &ImportOptions::default())
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidUtf8), "{e}");
    assert_eq!(e.line(), Some(2));

    let long = vec![b'0'; 2 << 20];
    let e = PlainReader::new(&long[..], &ImportOptions::default())
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LineTooLong { .. }), "{e}");
}

#[test]
fn a_text_dump_cut_short_is_refused() {
    // A v2 dump ends with `# end events=N`: a dump cut at a line end, or inside a number, is
    // refused rather than read as a shorter, different trace (found by an audit: a dump cut
    // inside `gap=31` read back as `gap=3`). v1 dumps have no such line and read as before.
    let events = [
        TraceEvent::access(Op::Load, 0, 0x40, 0x1000, 8, 31),
        TraceEvent::access(Op::Load, 0, 0x44, 0x1040, 8, 7),
    ];
    let header = pmtrace::TraceHeader::new("cut", 1);
    let (dump, n) = pmtrace::write_text(&header, events, Vec::new()).unwrap();
    assert_eq!(n, 2);
    let dump = String::from_utf8(dump).unwrap();
    assert!(dump.ends_with("# end events=2\n"), "{dump}");
    assert_eq!(text(&dump).unwrap(), events);
    // Cut after the first event's line, and inside its gap.
    let first_end = dump.find("gap=31").unwrap() + "gap=31".len();
    for cut in [first_end + 1, first_end - 1] {
        let e = text(&dump[..cut]).expect_err("a cut dump must be refused");
        assert!(e.to_string().contains("cut short"), "{e}");
    }
    // A count that differs, an event after the end line, a second end line.
    let edited = dump.replace("# end events=2", "# end events=3");
    let e = text(&edited).unwrap_err().to_string();
    assert!(e.contains("counts 3 events"), "{e}");
    // (found at the end of input: no empty "(line: ``)" quoted after it)
    assert!(!e.contains("(line:"), "{e}");
    let after = format!("{dump}t0 load addr=0x40 size=8\n");
    assert!(text(&after)
        .unwrap_err()
        .to_string()
        .contains("after the `# end` line"));
    let twice = format!("{dump}# end events=2\n");
    assert!(text(&twice)
        .unwrap_err()
        .to_string()
        .contains("second `# end` line"));
    // The same before the first event (the header's lines).
    let early = "# pmtrace text v2\n# end events=1\nt0 load addr=0x40 size=8\n";
    assert!(text(early)
        .unwrap_err()
        .to_string()
        .contains("after the `# end` line"));
    let early2 = "# pmtrace text v2\n# end events=0\n# end events=0\n";
    assert!(text(early2)
        .unwrap_err()
        .to_string()
        .contains("second `# end` line"));
    // An empty v2 dump has its end line too; a v1 dump needs none.
    let (empty, _) = pmtrace::write_text(&header, &[] as &[TraceEvent], Vec::new()).unwrap();
    assert!(text(std::str::from_utf8(&empty).unwrap())
        .unwrap()
        .is_empty());
    assert!(text("# pmtrace text v2\n")
        .unwrap_err()
        .to_string()
        .contains("cut short"));
    let v1 = dump
        .replace("# pmtrace text v2", "# pmtrace text v1")
        .replace("# end events=2\n", "");
    assert_eq!(text(&v1[..first_end + 1]).unwrap(), events[..1]);
}
