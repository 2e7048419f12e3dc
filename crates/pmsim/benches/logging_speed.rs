//! Host cost of hardware logging: each of the six hardware-transaction workloads (pmwork
//! `btree-hw` ... `tatp-hw`, 4 threads) on the full system under `nvm-lalea` with
//! `controller.logging` = none, redu and lalea+blom, interleaved over several rounds (only
//! `System::run` is timed; the trace is generated once, in memory). Prints each scheme's
//! median host time per workload and its ratio to `none` (target: lalea+blom at most 2x).
//!
//! `cargo bench -p pmsim --bench logging_speed -- [OPS] [ROUNDS]`

use pmsim::pmtrace::TraceEvent;
use pmsim::{SimConfig, System};
use pmwork::{GenOptions, Suite, VecSink, Workload};
use std::time::Instant;

mod common;
use common::positional_args;

const SCHEMES: [&str; 3] = ["none", "redu", "lalea+blom"];

fn events(w: &dyn Workload, ops: u64) -> Vec<TraceEvent> {
    let mut p = w.info().default_params(1);
    p.ops = ops;
    p.threads = 4;
    let g = w
        .generate(&p, Box::<VecSink>::default(), GenOptions::default())
        .expect("generate");
    g.sink
        .into_any()
        .downcast::<VecSink>()
        .expect("VecSink")
        .events
}

fn main() {
    let args = positional_args();
    let ops: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    for w in pmwork::suite(Suite::Lalea) {
        let name = w.info().name;
        let ev = events(w, ops);
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); SCHEMES.len()];
        for _ in 0..rounds {
            for (i, s) in SCHEMES.iter().enumerate() {
                let cfg = SimConfig::preset("nvm-lalea")
                    .and_then(|c| c.with_overrides(&[format!("controller.logging={s}")]))
                    .expect("config");
                let mut sys = System::new(&cfg).expect("system");
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
        for (i, s) in SCHEMES.iter().enumerate() {
            let lo = times[i].iter().cloned().fold(f64::MAX, f64::min);
            let hi = times[i].iter().cloned().fold(0.0, f64::max);
            let m = median(&times[i]);
            println!(
                "logging_speed workload={name} logging={s} ops={ops} events={} rounds={rounds} \
                 host_s_median={m:.4} host_s_min={lo:.4} host_s_max={hi:.4} ratio_to_none={:.2}",
                ev.len(),
                m / base
            );
        }
    }
}
