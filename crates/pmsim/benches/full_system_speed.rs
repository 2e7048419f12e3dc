//! Full-system replay speed: a synthetic PM program (45% loads, 30% stores with values, 8% clwb,
//! 5% sfence, 12% compute; HOT% of accesses to a 16 KiB hot set per thread (half PM, half
//! DRAM), the rest spread over 8 MiB of PM and 8 MiB of DRAM), generated on the fly, on
//! cores + caches + DRAM + PM.
//!
//! `cargo bench -p pmsim --bench full_system_speed -- [EVENTS] [THREADS] [HOT%] [PRESET]` prints trace
//! events per second of host time and the peak resident set size (run it for 1M and 20M
//! events to see whether memory grows with trace length).

use pmsim::{SimConfig, System};
use std::time::Instant;

mod common;
use common::{peak_rss_kib, pm_program, positional_args};

fn main() {
    let args = positional_args();
    let n: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let threads: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let hot: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(90);
    let preset = args.get(3).map(String::as_str).unwrap_or("nvm-lalea");
    let cfg = SimConfig::preset(preset).expect("preset");
    let events = pm_program(n, threads, hot);
    let mut sys = System::new(&cfg).expect("config");
    let start = Instant::now();
    let summary = sys.run(events, |_| {}).expect("run");
    let secs = start.elapsed().as_secs_f64();
    let s = sys.stats();
    println!(
        "full_system_speed preset={preset} threads={threads} hot={hot}% events={} host_s={secs:.3} \
         events_per_s={:.0} sim_time_us={:.1} ipc={:.3} l1d_miss_rate={:.3} pm_reads={} \
         pm_writes={} peak_rss_kib={}",
        summary.events,
        summary.events as f64 / secs,
        summary.sim_time as f64 / 1e6,
        s.value("cpu.ipc").unwrap_or(0.0),
        s.counter("cache.l1d.misses") as f64
            / (s.counter("cache.l1d.hits") + s.counter("cache.l1d.misses")).max(1) as f64,
        s.counter("pm.reads"),
        s.counter("pm.writebacks") + s.counter("pm.evictions"),
        peak_rss_kib()
    );
}
