//! Every corruption class of a `.pmt` file gives an error (never a panic, never silent success),
//! located where it should be.

mod common;

use common::{pmt_bytes, read_all, sample_events};
use pmtrace::{flags, ErrorKind, PmtReader, TraceEvent, TraceHeader};

const TRAILER: usize = 25;
const BLOCK_HEADER: usize = 13;

fn sample() -> (TraceHeader, Vec<TraceEvent>, Vec<u8>) {
    let header = TraceHeader::new("corrupt-me", 3)
        .with_seed(5)
        .with_params("events=60")
        .with_flags(flags::STORE_VALUES);
    let events = sample_events(60);
    // Small blocks: several of them.
    let bytes = pmt_bytes(&header, &events, 256);
    (header, events, bytes)
}

fn header_len(h: &TraceHeader) -> usize {
    30 + h.workload.len() + h.params.len() + 4
}

/// (offset, total length) of every block frame.
fn frames(bytes: &[u8], start: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut p = start;
    while bytes[p] == 0x42 {
        let len = u32::from_le_bytes(bytes[p + 1..p + 5].try_into().unwrap()) as usize;
        out.push((p, BLOCK_HEADER + len));
        p += BLOCK_HEADER + len;
    }
    assert_eq!(bytes[p], 0x45);
    assert_eq!(p + TRAILER, bytes.len());
    out
}

#[test]
fn sample_has_several_blocks() {
    let (h, events, bytes) = sample();
    assert!(frames(&bytes, header_len(&h)).len() >= 4);
    assert_eq!(read_all(&bytes).unwrap().1, events);
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let (_, _, bytes) = sample();
    for cut in 0..bytes.len() {
        let err = read_all(&bytes[..cut]).expect_err(&format!("cut at {cut} must fail"));
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "multi-line message: {msg}");
        if cut == 0 {
            assert!(matches!(err.kind(), ErrorKind::BadMagic { .. }), "{msg}");
        } else {
            assert!(err.is_truncation(), "cut at {cut}: {msg}");
            let off = err.byte_offset().expect("binary errors carry an offset");
            assert!(off <= cut as u64, "cut at {cut}, offset {off}: {msg}");
        }
    }
}

#[test]
fn truncation_at_block_boundary_reports_missing_trailer() {
    let (h, _, bytes) = sample();
    let fr = frames(&bytes, header_len(&h));
    let (off, len) = fr[1];
    let err = read_all(&bytes[..off + len]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::MissingTrailer { blocks: 2, .. }),
        "{err}"
    );
    assert_eq!(err.byte_offset(), Some((off + len) as u64));
    // Also without the trailer only.
    let err = read_all(&bytes[..bytes.len() - TRAILER]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::MissingTrailer { .. }),
        "{err}"
    );
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let (_, _, bytes) = sample();
    let mut copy = bytes.clone();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            copy[i] ^= 1 << bit;
            let r = read_all(&copy);
            assert!(r.is_err(), "flipping bit {bit} of byte {i} went unnoticed");
            copy[i] ^= 1 << bit;
        }
    }
}

#[test]
fn every_byte_overwrite_is_an_error() {
    let (_, _, bytes) = sample();
    let mut copy = bytes.clone();
    for i in 0..bytes.len() {
        for v in [0x00, 0xff, 0x80, 0x7f] {
            if bytes[i] == v {
                continue;
            }
            copy[i] = v;
            assert!(
                read_all(&copy).is_err(),
                "byte {i} := {v:#x} went unnoticed"
            );
            copy[i] = bytes[i];
        }
    }
}

#[test]
fn payload_corruption_names_block_and_offset() {
    let (h, _, mut bytes) = sample();
    let fr = frames(&bytes, header_len(&h));
    let (off, _) = fr[2];
    bytes[off + BLOCK_HEADER + 3] ^= 0x55;
    let err = read_all(&bytes).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::BlockChecksum { .. }),
        "{err}"
    );
    assert_eq!(err.byte_offset(), Some(off as u64));
    let msg = err.to_string();
    assert!(msg.contains("block 2"), "{msg}");
    assert!(msg.contains("checksum mismatch"), "{msg}");
    assert!(msg.contains(&format!("byte {off}")), "{msg}");
}

#[test]
fn reordered_or_dropped_blocks_are_detected() {
    let (h, _, bytes) = sample();
    let hl = header_len(&h);
    let fr = frames(&bytes, hl);
    let block = |i: usize| &bytes[fr[i].0..fr[i].0 + fr[i].1];

    // Swap blocks 1 and 2 and fix nothing else: every block is valid on its own.
    let mut swapped = bytes[..hl].to_vec();
    swapped.extend_from_slice(block(0));
    swapped.extend_from_slice(block(2));
    swapped.extend_from_slice(block(1));
    for i in 3..fr.len() {
        swapped.extend_from_slice(block(i));
    }
    swapped.extend_from_slice(&bytes[bytes.len() - TRAILER..]);
    let err = read_all(&swapped).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BadTrailer { .. }), "{err}");
    assert!(err.to_string().contains("chain"), "{err}");

    // Drop block 1.
    let mut dropped = bytes[..hl].to_vec();
    dropped.extend_from_slice(block(0));
    for i in 2..fr.len() {
        dropped.extend_from_slice(block(i));
    }
    dropped.extend_from_slice(&bytes[bytes.len() - TRAILER..]);
    let err = read_all(&dropped).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BadTrailer { .. }), "{err}");
}

#[test]
fn trailing_data_is_an_error() {
    let (_, _, mut bytes) = sample();
    let len = bytes.len();
    bytes.push(0);
    let err = read_all(&bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TrailingData), "{err}");
    assert_eq!(err.byte_offset(), Some(len as u64));
}

/// Re-encodes a header with arbitrary field values and a correct CRC.
fn raw_header(version: u16, threads: u16, flags: u32, name: &[u8], params: &[u8]) -> Vec<u8> {
    let mut h = b"PMTRACE\0".to_vec();
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&threads.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&7u64.to_le_bytes());
    h.extend_from_slice(&(name.len() as u16).to_le_bytes());
    h.extend_from_slice(&(params.len() as u32).to_le_bytes());
    h.extend_from_slice(name);
    h.extend_from_slice(params);
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

fn header_error(bytes: &[u8]) -> pmtrace::TraceError {
    PmtReader::new(bytes)
        .err()
        .expect("header must be rejected")
}

#[test]
fn bad_header_fields() {
    // Sanity: the raw encoder matches the real one.
    let good = raw_header(1, 2, 0, b"w", b"p");
    let r = PmtReader::new(&good[..]).unwrap();
    assert_eq!(
        r.header(),
        &TraceHeader::new("w", 2).with_seed(7).with_params("p")
    );

    let e = header_error(b"NOTATRACE and more bytes here.................");
    assert!(matches!(e.kind(), ErrorKind::BadMagic { .. }), "{e}");
    assert_eq!(e.byte_offset(), Some(0));
    assert!(e.to_string().contains("bad magic"), "{e}");

    let e = header_error(&raw_header(2, 1, 0, b"w", b""));
    assert!(
        matches!(
            e.kind(),
            ErrorKind::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        ),
        "{e}"
    );
    assert_eq!(e.byte_offset(), Some(8));

    let e = header_error(&raw_header(1, 0, 0, b"w", b""));
    assert!(matches!(e.kind(), ErrorKind::BadHeader { .. }), "{e}");
    assert!(e.to_string().contains("thread count is 0"), "{e}");

    let e = header_error(&raw_header(1, 1, 1 << 18, b"w", b""));
    assert!(e.to_string().contains("unknown required flag"), "{e}");

    // The memory clock of a program trace (not a memory-request stream) means nothing: the
    // full-system replay would ignore it without a word.
    let e = header_error(&raw_header(1, 1, flags::MEMORY_CLOCK, b"w", b""));
    assert!(e.to_string().contains("without MEMORY_REQUESTS"), "{e}");
    let both = flags::MEMORY_CLOCK | flags::MEMORY_REQUESTS;
    assert!(PmtReader::new(&raw_header(1, 1, both, b"w", b"")[..]).is_ok());

    let e = header_error(&raw_header(1, 1, 0, &[0xff, 0xfe], b""));
    assert!(e.to_string().contains("UTF-8"), "{e}");

    let e = header_error(&raw_header(1, 1, 0, &[b'n'; 300], b""));
    assert!(e.to_string().contains("workload name length 300"), "{e}");
    assert_eq!(e.byte_offset(), Some(24));

    // A huge params length must be rejected before any allocation or read.
    let mut huge = raw_header(1, 1, 0, b"w", b"");
    huge[26..30].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = header_error(&huge);
    assert!(e.to_string().contains("params length"), "{e}");
    assert_eq!(e.byte_offset(), Some(26));

    let mut crc_bad = raw_header(1, 1, 0, b"w", b"");
    crc_bad[16] ^= 1; // seed
    let e = header_error(&crc_bad);
    assert!(matches!(e.kind(), ErrorKind::HeaderChecksum { .. }), "{e}");
}

/// A file with `header` and one block whose payload is `payload` (valid CRC), no trailer.
fn with_block(payload: &[u8], count: u32) -> Vec<u8> {
    let mut f = raw_header(1, 1, 0, b"w", b"");
    f.push(0x42);
    f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    f.extend_from_slice(&count.to_le_bytes());
    f.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

fn record_error(payload: &[u8], count: u32) -> pmtrace::TraceError {
    read_all(&with_block(payload, count)).expect_err("record must be rejected")
}

#[test]
fn bad_records_inside_valid_blocks() {
    let payload_start = (30 + 1 + 4 + BLOCK_HEADER) as u64;

    let e = record_error(&[0x0d, 0, 0], 1);
    assert!(matches!(e.kind(), ErrorKind::UnknownOp { .. }), "{e}");
    assert_eq!(e.byte_offset(), Some(payload_start));
    assert!(e.to_string().contains("block 0, record 0"), "{e}");

    // Second record bad: location points at it.
    let e = record_error(&[0x05, 0, 0, 0x0f, 0, 0], 2);
    assert!(matches!(e.kind(), ErrorKind::UnknownOp { .. }), "{e}");
    assert_eq!(e.byte_offset(), Some(payload_start + 3));
    assert!(e.to_string().contains("record 1"), "{e}");

    // Thread 5 in a 1-thread trace.
    let e = record_error(&[0x10 | 0x05, 5, 0, 0], 1);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::ThreadOutOfRange {
                thread: 5,
                threads: 1
            }
        ),
        "{e}"
    );

    // Store of size 4 with an explicit 8-byte value.
    let mut p = vec![0x01 | 0x40, 0, 0, 4, 0, 8];
    p.extend_from_slice(&[1; 8]);
    let e = record_error(&p, 1);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::ValueLongerThanSize {
                value_len: 8,
                size: 4
            }
        ),
        "{e}"
    );

    // Size above the maximum (varint 5000 = 0x88 0x27).
    let e = record_error(&[0x00, 0, 0, 0x88, 0x27, 0], 1);
    assert!(
        matches!(e.kind(), ErrorKind::SizeTooLarge { size: 5000, .. }),
        "{e}"
    );

    // Reserved tag bit, value mode 3, value on a load, over-long varint, gap > u32.
    for (payload, needle) in [
        (vec![0x80 | 0x05, 0, 0], "reserved"),
        (vec![0x01 | 0x60, 0, 0, 8, 0], "value mode 3"),
        (vec![0x20, 0, 0, 8, 0], "value flag set on a load"), // load = op 0
        (
            vec![
                0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0,
            ],
            "over-long",
        ),
        (vec![0x05, 0, 0x80, 0x80, 0x80, 0x80, 0x10], "32 bits"),
        (vec![0x01 | 0x20, 0, 0, 8, 0, 1, 2, 3], "truncated record"),
    ] {
        let e = record_error(&payload, 1);
        assert!(e.to_string().contains(needle), "expected `{needle}`: {e}");
    }

    // Count says 2 but the payload holds 1 record; count says 1 but 2 are there.
    let e = record_error(&[0x05, 0, 0], 2);
    assert!(e.to_string().contains("truncated record"), "{e}");
    let e = record_error(&[0x05, 0, 0, 0x05, 0, 0], 1);
    assert!(e.to_string().contains("bytes left"), "{e}");

    // Block length and count fields.
    let e = record_error(&[], 1);
    assert!(e.to_string().contains("payload length 0"), "{e}");
    let e = record_error(&[0x05, 0, 0], 4);
    assert!(e.to_string().contains("record count 4"), "{e}");
    let mut big = raw_header(1, 1, 0, b"w", b"");
    big.push(0x42);
    big.extend_from_slice(&u32::MAX.to_le_bytes());
    big.extend_from_slice(&1u32.to_le_bytes());
    big.extend_from_slice(&0u32.to_le_bytes());
    let e = read_all(&big).unwrap_err();
    assert!(e.to_string().contains("payload length"), "{e}");

    // Unknown frame kind.
    let mut f = raw_header(1, 1, 0, b"w", b"");
    f.push(0x99);
    let e = read_all(&f).unwrap_err();
    assert!(e.to_string().contains("unknown frame kind 0x99"), "{e}");
}

#[test]
fn reader_is_fused_after_an_error() {
    let (_, _, bytes) = sample();
    let cut = &bytes[..bytes.len() - 5];
    let mut r = PmtReader::new(cut).unwrap();
    let mut errors = 0;
    let mut total = 0;
    for item in r.by_ref() {
        total += 1;
        if item.is_err() {
            errors += 1;
        }
        assert!(total < 1000, "iterator does not end");
    }
    assert_eq!(errors, 1);
    assert!(r.next().is_none());
}

#[test]
fn a_record_of_an_access_of_0_bytes_is_an_error() {
    // Found by the fuzzer: a block whose record decodes to a clflushopt of 0 bytes came out of
    // the reader as an event (the reader checks fields inline, and had no size-0 test).
    let hex: String = [
        "504d5452414345000100020001000000140000000000000009000b0000006675",
        "7a7a2d736565646b3d76096e6f74653d5c788446b5b442a9000000130000007a",
        "cb6ec91901b8c28004804c012b21b702ff030619a31e3887b07e1600e0c28004",
        "140a4f15294fdad0cebc82b1bcac4e0a058d44beee9a76fdcc282d1601502704",
        "0fa9e4b6e8c1ffcaadd80108281900d801fafd90f1e18dc086cb01041d056702",
        "069f01181401e802aaefb6e8c1ffcaadd80180000000363c23cbc6400d06372b",
        "0c47020906bf01221c00c80187808080808040021201f801c6d9ea92db8d98c6",
        "45042b053f2306172d1c00a7028a80808080804031420d000000010000006dba",
        "2de20cc0c3800485808080808040194514000000000000000200000000000000",
        "0f4e122b84823b8d",
    ]
    .concat();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let e = read_all(&bytes).unwrap_err();
    assert!(e.to_string().contains("of 0 bytes at"), "{e}");
}
