//! Helpers shared by the integration tests.
#![allow(dead_code)]

use pmtrace::{Op, PmtWriter, TraceEvent, TraceHeader, MAX_ACCESS_BYTES, MAX_VALUE_BYTES};
use proptest::prelude::*;

/// Any valid event for a trace of `threads` threads (canonical: value bytes past `value_len` are
/// zero, as a reader returns them).
pub fn arb_event(threads: u16) -> impl Strategy<Value = TraceEvent> {
    (
        prop::sample::select(Op::ALL.to_vec()),
        0..threads,
        any::<u64>(),
        any::<u64>(),
        1..=MAX_ACCESS_BYTES,
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..=MAX_VALUE_BYTES),
        // Bias toward small/clustered pcs and addresses too, to exercise short deltas.
        any::<bool>(),
    )
        .prop_map(move |(op, thread, pc, addr, size, gap, value, small)| {
            let (pc, addr) = if small {
                (pc % 64, addr % 4096)
            } else {
                (pc, addr)
            };
            if op == Op::Await {
                // A valid edge needs another thread; a one-thread trace gets a fence instead.
                return if threads > 1 {
                    let source = (thread + 1 + (addr % u64::from(threads - 1)) as u16) % threads;
                    TraceEvent::await_events(thread, pc, source, 1 + (addr >> 20), gap)
                } else {
                    TraceEvent::marker(Op::Sfence, thread, pc, gap)
                };
            }
            if !op.has_address() {
                return TraceEvent::marker(op, thread, pc, gap);
            }
            let mut ev = TraceEvent::access(op, thread, pc, addr, size, gap);
            if op.writes_memory() {
                let len = value.len().min(size as usize);
                ev.value[..len].copy_from_slice(&value[..len]);
                ev.value_len = len as u8;
            }
            ev
        })
}

/// Any valid header.
pub fn arb_header() -> impl Strategy<Value = TraceHeader> {
    (
        1u16..=8,
        "\\PC{0,40}",
        any::<u64>(),
        "(\\PC|[\\n\\t\\r\\\\=# ]){0,80}",
        any::<u16>(),
    )
        .prop_map(|(threads, workload, seed, params, flags)| TraceHeader {
            threads,
            workload,
            seed,
            params,
            flags: flags as u32,
        })
}

/// A valid `.pmt` file holding `events`, with blocks of at most `block` payload bytes.
pub fn pmt_bytes(header: &TraceHeader, events: &[TraceEvent], block: usize) -> Vec<u8> {
    let mut w = PmtWriter::with_block_payload(Vec::new(), header.clone(), block).unwrap();
    for ev in events {
        w.write(ev).unwrap();
    }
    w.finish().unwrap()
}

/// A small deterministic multi-thread trace exercising every op, values and multiple blocks.
pub fn sample_events(n: usize) -> Vec<TraceEvent> {
    let mut out = Vec::new();
    let mut x = 0x1234_5678_9abc_def0u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let thread = (x % 3) as u16;
        let op = Op::ALL[i % Op::ALL.len()];
        let pc = 0x40_1000 + (x >> 50);
        let ev = if op == Op::Await {
            TraceEvent::await_events(thread, pc, (thread + 1) % 3, 1 + (x >> 30), 2)
        } else if !op.has_address() {
            TraceEvent::marker(op, thread, pc, (x >> 40) as u32 % 100)
        } else if op.carries_value() {
            let v = x.to_le_bytes();
            TraceEvent::store(
                op,
                thread,
                pc,
                0x1_0000_0000 + (x >> 40) * 8,
                &v[..1 + i % 8],
                3,
            )
        } else {
            TraceEvent::access(op, thread, pc, 0x1_0000_0000 + ((x >> 30) << 6), 64, 1)
        };
        out.push(ev);
    }
    out
}

/// Reads a whole `.pmt` from bytes.
pub fn read_all(bytes: &[u8]) -> Result<(TraceHeader, Vec<TraceEvent>), pmtrace::TraceError> {
    let mut r = pmtrace::PmtReader::new(bytes)?;
    let header = r.header().clone();
    let events = r.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok((header, events))
}
