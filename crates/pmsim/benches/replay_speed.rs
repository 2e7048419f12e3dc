//! Memory-only replay speed: N random 64 B requests (2/3 reads, 1/3 writes) over a 1 GiB
//! footprint, generated on the fly (no trace file), replayed on a preset.
//!
//! `cargo bench -p pmsim --bench replay_speed -- [REQUESTS] [PRESET]` prints requests per second
//! of host time (the median of 5 runs, with their range, up to 10M requests; one run above;
//! `--runs=N` sets the count) and the peak resident set size, so running it for 1M and 50M
//! requests shows whether memory grows with trace length.
//!
//! `cargo bench -p pmsim --bench replay_speed -- --fingerprint [REQUESTS]` instead prints, for
//! every preset and a set of variants (ADR flipped, FCFS, two channels, tiny queues, a
//! multi-thread workload with values, fences and unaligned stores, and a full-system run), the
//! simulated time, event and decision counts and hashes of every acknowledgement (in order),
//! of all statistics and of the durable image. Speed work on the simulator must leave this
//! output byte-identical.

use pmsim::pmtrace::{Op, TraceError, TraceEvent};
use pmsim::{Replay, SimConfig, System};
use std::time::Instant;

mod common;
use common::{peak_rss_kib, pm_program, positional_args, xorshift};

/// The benchmark's request stream: random 64 B lines over 1 GiB, 2/3 loads, 1/3 stores.
fn random_requests(n: u64) -> impl Iterator<Item = Result<TraceEvent, TraceError>> {
    let mut x = 0x243f6a8885a308d3u64;
    (0..n).map(move |_| {
        xorshift(&mut x);
        let addr = ((x >> 16) % (1 << 30)) & !63;
        let op = if x.is_multiple_of(3) {
            Op::Store
        } else {
            Op::Load
        };
        Ok(TraceEvent::access(op, 0, 0, addr, 64, 2))
    })
}

/// A harder stream for the fingerprint: 4 threads, a 64 KiB hot set (coalescing, forwarding,
/// read-buffer hits), stores with values (some unaligned, spanning two lines), fences and
/// compute gaps.
fn mixed_events(n: u64) -> impl Iterator<Item = Result<TraceEvent, TraceError>> {
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut value = 0u64;
    (0..n).map(move |i| {
        xorshift(&mut x);
        let t = (i % 4) as u16;
        let addr = if x.is_multiple_of(4) {
            (x >> 20) % (64 << 10)
        } else {
            (x >> 20) % (256 << 20)
        };
        let gap = ((x >> 40) % 16) as u32;
        Ok(match (x >> 32) % 100 {
            0..=49 => TraceEvent::access(Op::Load, t, 0, addr & !7, 8, gap),
            50..=79 => {
                value += 1;
                TraceEvent::store(Op::Store, t, 0, addr & !7, &value.to_le_bytes(), gap)
            }
            80..=84 => {
                value += 1;
                let v = [value as u8; 24];
                TraceEvent::store(Op::NtStore, t, 0, (addr | 60) & !3, &v, gap)
            }
            85..=89 => TraceEvent::marker(Op::Sfence, t, 0, gap),
            90..=91 => TraceEvent::marker(Op::Mfence, t, 0, gap),
            92..=94 => TraceEvent::access(Op::Clwb, t, 0, addr & !63, 64, gap),
            _ => TraceEvent::marker(Op::Compute, t, 0, 40),
        })
    })
}

/// FNV-1a over 64-bit words.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf29ce484222325)
    }

    fn word(&mut self, w: u64) {
        for b in w.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }

    fn bytes(&mut self, bs: &[u8]) {
        for &b in bs {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
}

/// One memory-only run's fingerprint line.
fn fingerprint_replay<I>(label: &str, cfg: &SimConfig, events: I)
where
    I: IntoIterator<Item = Result<TraceEvent, TraceError>>,
{
    let mut replay = Replay::new(cfg).expect("config").record_acks();
    let summary = replay.run(events, |_| {}).expect("replay");
    let stats = replay.stats();
    let mut acks = Fnv::new();
    for a in replay.ack_log() {
        acks.word(a.id);
        acks.word(a.is_write as u64);
        acks.word(a.issued);
        acks.word(a.time);
    }
    let mut st = Fnv::new();
    st.bytes(stats.to_json().as_bytes());
    let image = replay.durable_image();
    let mut im = Fnv::new();
    for line in image.line_addrs() {
        im.word(line);
        im.bytes(image.line(line).expect("listed line"));
    }
    println!(
        "{label} requests={} sim_time_ps={} events_scheduled={} decisions={} acks={} \
         ack_hash={:016x} stats_hash={:016x} image_lines={} image_hash={:016x}",
        summary.reads + summary.writes,
        summary.sim_time,
        stats.counter("sim.events_scheduled"),
        stats.counter("mc.decisions"),
        replay.ack_log().len(),
        acks.0,
        st.0,
        image.len(),
        im.0
    );
}

/// Prints the fingerprint of every preset and variant (see the module docs).
fn fingerprint(n: u64) {
    let variants: [(&str, &[&str]); 6] = [
        ("base", &[]),
        ("adr-on", &["controller.adr=true"]),
        ("adr-off", &["controller.adr=false"]),
        ("fcfs", &["controller.scheduler=\"fcfs\""]),
        ("2ch", &["device.channels=2"]),
        (
            "tinyq",
            &[
                "controller.read_queue=2",
                "controller.write_queue=3",
                "controller.drain_high=2",
                "controller.drain_low=1",
            ],
        ),
    ];
    for preset in pmsim::config::preset_names() {
        let base = SimConfig::preset(preset).expect("preset");
        for (name, sets) in variants {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let cfg = base.with_overrides(&sets).expect("override");
            fingerprint_replay(&format!("{preset} {name} random"), &cfg, random_requests(n));
            fingerprint_replay(&format!("{preset} {name} mixed"), &cfg, mixed_events(n / 2));
        }
        let mut sys = System::new(&base).expect("config");
        let summary = sys.run(pm_program(n / 2, 2, 50), |_| {}).expect("run");
        let mut st = Fnv::new();
        st.bytes(sys.stats().to_json().as_bytes());
        println!(
            "{preset} full-system events={} sim_time_ps={} stats_hash={:016x}",
            summary.events, summary.sim_time, st.0
        );
    }
}

fn main() {
    let fingerprint_mode = std::env::args().any(|a| a == "--fingerprint");
    let args = positional_args();
    let n: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    if fingerprint_mode {
        fingerprint(n);
        return;
    }
    let preset = args.get(1).map(String::as_str).unwrap_or("nvm-ppo");
    let cfg = SimConfig::preset(preset).expect("preset");
    // A run of 1M requests takes about 0.1 s: one run is at the mercy of whatever else the
    // machine does, so short runs are repeated and the median reported (with the range).
    let runs = std::env::args()
        .find_map(|a| a.strip_prefix("--runs=").and_then(|r| r.parse().ok()))
        .unwrap_or(if n <= 10_000_000 { 5 } else { 1 })
        .max(1);
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let mut replay = Replay::new(&cfg).expect("config");
        let start = Instant::now();
        let summary = replay.run(random_requests(n), |_| {}).expect("replay");
        let secs = start.elapsed().as_secs_f64();
        rates.push((summary.reads + summary.writes) as f64 / secs);
        last = Some((replay, summary));
    }
    rates.sort_by(f64::total_cmp);
    let (replay, summary) = last.expect("at least one run");
    let stats = replay.stats();
    println!(
        "replay_speed preset={preset} requests={} runs={runs} requests_per_s={:.0} \
         (min {:.0}, max {:.0}) sim_time_us={:.1} bandwidth_gbps={:.3} events_scheduled={} \
         decisions={} peak_rss_kib={}",
        summary.reads + summary.writes,
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        summary.sim_time as f64 / 1e6,
        stats.value("replay.bandwidth_gbps").unwrap_or(0.0),
        stats.counter("sim.events_scheduled"),
        stats.counter("mc.decisions"),
        peak_rss_kib()
    );
}
