//! Memory-only replay speed: N random 64 B requests (2/3 reads, 1/3 writes) over a 1 GiB
//! footprint, generated on the fly (no trace file), replayed on a preset.
//!
//! `cargo bench -p pmsim --bench replay_speed -- [REQUESTS] [PRESET]` prints requests per second
//! of host time and the peak resident set size, so running it for 1M and 50M requests shows
//! whether memory grows with trace length.

use pmsim::pmtrace::{Op, TraceEvent};
use pmsim::{Replay, SimConfig};
use std::time::Instant;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse().unwrap_or(0)))
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let preset = args.get(1).map(String::as_str).unwrap_or("nvm-ppo");
    let cfg = SimConfig::preset(preset).expect("preset");
    let mut x = 0x243f6a8885a308d3u64;
    let events = (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let addr = ((x >> 16) % (1 << 30)) & !63;
        let op = if x.is_multiple_of(3) {
            Op::Store
        } else {
            Op::Load
        };
        Ok(TraceEvent::access(op, 0, 0, addr, 64, 2))
    });
    let mut replay = Replay::new(&cfg).expect("config");
    let start = Instant::now();
    let summary = replay.run(events, |_| {}).expect("replay");
    let secs = start.elapsed().as_secs_f64();
    let stats = replay.stats();
    println!(
        "replay_speed preset={preset} requests={} host_s={secs:.3} requests_per_s={:.0} \
         sim_time_us={:.1} bandwidth_gbps={:.3} events_scheduled={} decisions={} peak_rss_kib={}",
        summary.reads + summary.writes,
        (summary.reads + summary.writes) as f64 / secs,
        summary.sim_time as f64 / 1e6,
        stats.value("replay.bandwidth_gbps").unwrap_or(0.0),
        stats.counter("sim.events_scheduled"),
        stats.counter("mc.decisions"),
        peak_rss_kib()
    );
}
