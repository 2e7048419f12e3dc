//! Measures `.pmt` write and read throughput.
//!
//! ```text
//! cargo run --release -p pmtrace --example throughput [-- --events N --threads T]
//! ```
//!
//! Workloads: random 64-byte loads/stores (2:1) without values, and the same with 8-byte stored
//! values (8-byte stores). Events come from a pre-generated 64 Ki-entry ring so generation cost
//! is not measured. `write` and `read` use memory buffers ([`PmtWriter`] into a `Vec`,
//! [`PmtReader`] over a slice); `open_trace` reads the same trace from a temporary file through
//! format detection and [`TraceSource`](pmtrace::TraceSource) (page-cache speed, not disk).
//! Each figure is the best of 3 runs.

use std::time::Instant;

use pmtrace::{open_trace, Op, PmtReader, PmtWriter, TraceEvent, TraceHeader};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn ring(threads: u16, with_values: bool) -> Vec<TraceEvent> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pcs: Vec<u64> = (0..64).map(|i| 0x40_1000 + i * 12).collect();
    (0..1 << 16)
        .map(|_| {
            let r = rng.next();
            let thread = (r % threads as u64) as u16;
            let pc = pcs[(r >> 8) as usize % pcs.len()];
            // Random line in a 16 GiB region.
            let addr = 0x1_0000_0000 + ((rng.next() >> 30) << 6);
            let gap = (r >> 40) as u32 % 16;
            let is_store = (r >> 20).is_multiple_of(3);
            match (is_store, with_values) {
                (false, _) => TraceEvent::access(Op::Load, thread, pc, addr, 64, gap),
                (true, false) => TraceEvent::access(Op::Store, thread, pc, addr, 64, gap),
                (true, true) => TraceEvent::store(
                    Op::Store,
                    thread,
                    pc,
                    addr + (r & 7) * 8,
                    &rng.next().to_le_bytes(),
                    gap,
                ),
            }
        })
        .collect()
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), pmtrace::TraceError> {
    let events = arg("--events", 5_000_000);
    let threads = arg("--threads", 4).clamp(1, u16::MAX as u64) as u16;
    println!("pmtrace throughput: {events} events, {threads} threads, best of 3\n");
    println!(
        "{:<32}{:>13}{:>13}{:>13}{:>10}",
        "workload", "write ev/s", "read ev/s", "open_trace", "bytes/ev"
    );
    let path = std::env::temp_dir().join(format!("pmtrace-throughput-{}.pmt", std::process::id()));
    for (name, with_values) in [
        ("64 B random loads/stores", false),
        ("same, stores with 8 B values", true),
    ] {
        let ring = ring(threads, with_values);
        let header = TraceHeader::new("throughput", threads);
        let mut best_write = f64::MAX;
        let mut best_read = f64::MAX;
        let mut best_open = f64::MAX;
        let mut bytes = Vec::new();
        for _ in 0..3 {
            let buf = Vec::with_capacity(events as usize * 16);
            let t = Instant::now();
            let mut w = PmtWriter::new(buf, header.clone())?;
            for i in 0..events as usize {
                w.write(&ring[i & 0xffff])?;
            }
            bytes = w.finish()?;
            best_write = best_write.min(t.elapsed().as_secs_f64());

            let t = Instant::now();
            let mut r = PmtReader::new(&bytes[..])?;
            let mut n = 0u64;
            let mut check = 0u64;
            while let Some(ev) = r.next_event()? {
                n += 1;
                check = check.wrapping_add(ev.addr ^ ev.gap as u64);
            }
            best_read = best_read.min(t.elapsed().as_secs_f64());
            assert_eq!(n, events);
            std::hint::black_box(check);

            std::fs::write(&path, &bytes).expect("write temporary trace");
            let t = Instant::now();
            let mut src = open_trace(&path)?;
            let mut n = 0u64;
            while let Some(ev) = src.next_event()? {
                n += 1;
                check = check.wrapping_add(ev.addr);
            }
            best_open = best_open.min(t.elapsed().as_secs_f64());
            assert_eq!(n, events);
            std::hint::black_box(check);
        }
        println!(
            "{:<32}{:>12.1}M{:>12.1}M{:>12.1}M{:>10.2}",
            name,
            events as f64 / best_write / 1e6,
            events as f64 / best_read / 1e6,
            events as f64 / best_open / 1e6,
            bytes.len() as f64 / events as f64
        );
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}
