//! Helpers shared by the simulator benchmarks.

use pmsim::config::DEFAULT_PM_BASE;
use pmsim::pmtrace::{Op, TraceError, TraceEvent};

/// The benchmarks' pseudo-random generator: one xorshift64 step (13, 7, 17) on `x`.
#[allow(dead_code)] // see `pm_program`
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The command line's positional arguments (those not starting with `--`).
#[allow(dead_code)] // see `pm_program`
pub fn positional_args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect()
}

/// Peak resident set size of this process in KiB (`VmHWM`), 0 where /proc is unavailable.
#[allow(dead_code)] // see `pm_program`
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse().unwrap_or(0)))
        })
        .unwrap_or(0)
}

/// A synthetic PM program of `n` events over `threads` threads (round robin): 45% loads, 30%
/// stores with values, 8% clwb, 5% sfence, 12% compute; `hot` percent of accesses go to a
/// 16 KiB hot set per thread (half PM, half DRAM), the rest over 8 MiB of PM and 8 MiB of
/// DRAM. Deterministic.
#[allow(dead_code)] // each benchmark compiles this module on its own and uses part of it
pub fn pm_program(
    n: u64,
    threads: u64,
    hot: u64,
) -> impl Iterator<Item = Result<TraceEvent, TraceError>> {
    let mut x = 0x243f6a8885a308d3u64;
    let mut value = 0u64;
    (0..n).map(move |i| {
        xorshift(&mut x);
        let t = (i % threads) as u16;
        let region = t as u64 * (16 << 20);
        let base = if x & 0x100 == 0 {
            DEFAULT_PM_BASE
        } else {
            0x0100_0000_0000
        } + region;
        let off = if x % 100 < hot {
            (x >> 20) % (8 << 10)
        } else {
            (x >> 20) % (8 << 20)
        } & !7;
        let addr = base + off;
        let gap = ((x >> 40) % 8) as u32;
        let pc = 0x401000 + (x >> 50) % 64;
        Ok(match (x >> 32) % 100 {
            0..=44 => TraceEvent::access(Op::Load, t, pc, addr, 8, gap),
            45..=74 => {
                value += 1;
                TraceEvent::store(Op::Store, t, pc + 0x1000, addr, &value.to_le_bytes(), gap)
            }
            75..=82 => TraceEvent::access(Op::Clwb, t, 0x403000, addr, 64, gap),
            83..=87 => TraceEvent::marker(Op::Sfence, t, 0x404000, gap),
            _ => TraceEvent::marker(Op::Compute, t, 0x405000, 20),
        })
    })
}

/// Host cost of plug-in designs: every workload of `workloads` (`threads` threads, `ops`
/// operations, generated once in memory) runs on the full system under `preset` with each
/// design's overrides (`key=value` strings), interleaved over `rounds` rounds (only
/// `System::run` is timed). Prints, per workload and design, the median, minimum and maximum
/// host time and the median's ratio to the first design's; `label` names the benchmark in each
/// line. `PMSIM_BENCH_ONLY=NAME` restricts the run to one workload (for profiling).
#[allow(dead_code)] // used by the plug-in speed benchmarks only
#[allow(clippy::too_many_arguments)]
pub fn plugin_host_cost(
    label: &str,
    workloads: &[&'static dyn pmwork::Workload],
    preset: &str,
    designs: &[&[&str]],
    threads: u16,
    ops: u64,
    rounds: usize,
) {
    use pmwork::{GenOptions, VecSink};
    use std::time::Instant;
    let names: Vec<String> = designs.iter().map(|d| d.join(",")).collect();
    let only = std::env::var("PMSIM_BENCH_ONLY").ok();
    for w in workloads {
        let name = w.info().name;
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut p = w.info().default_params(1);
        p.ops = ops;
        p.threads = threads;
        let ev = w
            .generate(&p, Box::<VecSink>::default(), GenOptions::default())
            .expect("generate")
            .into_events();
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); designs.len()];
        for _ in 0..rounds {
            for (i, d) in designs.iter().enumerate() {
                let sets: Vec<String> = d.iter().map(|s| s.to_string()).collect();
                let cfg = pmsim::SimConfig::preset(preset)
                    .and_then(|c| c.with_overrides(&sets))
                    .expect("config");
                let mut sys = pmsim::System::new(&cfg).expect("system");
                let start = Instant::now();
                sys.run(ev.iter().copied().map(Ok), |_| {}).expect("run");
                times[i].push(start.elapsed().as_secs_f64());
            }
        }
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let base = median(&times[0]);
        for (i, v) in names.iter().enumerate() {
            let lo = times[i].iter().cloned().fold(f64::MAX, f64::min);
            let hi = times[i].iter().cloned().fold(0.0, f64::max);
            let m = median(&times[i]);
            println!(
                "{label} workload={name} design={v} ops={ops} events={} rounds={rounds} \
                 host_s_median={m:.4} host_s_min={lo:.4} host_s_max={hi:.4} ratio_to_first={:.2}",
                ev.len(),
                m / base
            );
        }
    }
}
