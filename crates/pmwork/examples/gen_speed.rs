//! Generation speed: events per second of each workload into a counting sink (generation
//! alone) and into a `.pmt` file (generator thread + writer, as `pmlab trace gen` does).
//!
//! ```text
//! cargo run --release -p pmwork --example gen_speed                 # every workload
//! cargo run --release -p pmwork --example gen_speed -- btree tpcc   # some
//! PMWORK_EVENTS=5000000 cargo run --release -p pmwork --example gen_speed
//! ```
//!
//! Each workload runs with its default threads and enough operations for about
//! `PMWORK_EVENTS` (default 4 M) events; the best of three runs is reported, then the median
//! and the slowest workload.

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use pmtrace::PmtWriter;
use pmwork::{CountingSink, EventStream, GenOptions, Params, Workload};

fn counting(w: &dyn Workload, p: &Params) -> (u64, f64) {
    let t0 = Instant::now();
    let g = w
        .generate(p, Box::<CountingSink>::default(), GenOptions::default())
        .expect("generate");
    (g.events, t0.elapsed().as_secs_f64())
}

fn to_file(w: &'static dyn Workload, p: &Params, path: &std::path::Path) -> (u64, f64) {
    let t0 = Instant::now();
    let mut s = EventStream::spawn(w, p.clone(), false);
    let f = BufWriter::with_capacity(1 << 20, File::create(path).expect("create"));
    let mut out = PmtWriter::new(f, s.header().clone()).expect("writer");
    for ev in s.by_ref() {
        out.write(&ev).expect("write");
    }
    out.finish().expect("finish");
    let sum = s.finish().expect("generator");
    (sum.events, t0.elapsed().as_secs_f64())
}

fn main() {
    let target: u64 = std::env::var("PMWORK_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000_000);
    let names: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::env::temp_dir().join(format!("pmwork-gen-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "{:<14} {:>7} {:>10} {:>10} {:>14} {:>14}",
        "workload", "model", "ops", "events", "count Mev/s", "file Mev/s"
    );
    let mut rates: Vec<(f64, f64, &str)> = Vec::new();
    for w in pmwork::registry() {
        let w: &'static dyn Workload = w.as_ref();
        let info = w.info();
        if !names.is_empty() && !names.iter().any(|n| n == info.name) {
            continue;
        }
        // Calibrate ops to about `target` events.
        let probe = Params {
            ops: info.default_ops.clamp(1, 2000),
            threads: info.default_threads,
            seed: 1,
            remote_threads: 0,
            janus_hints: false,
            value_bytes: 8,
        };
        let (ev, _) = counting(w, &probe);
        let base = Params {
            ops: 0,
            ..probe.clone()
        };
        let (ev0, _) = counting(w, &base);
        let per_op = ((ev.saturating_sub(ev0)) as f64 / probe.ops as f64).max(1.0);
        let mut ops = (((target.saturating_sub(ev0)) as f64 / per_op) as u64).max(1);
        // Events per operation may grow with the structure: refine twice.
        for _ in 0..2 {
            let (ev, _) = counting(
                w,
                &Params {
                    ops,
                    ..probe.clone()
                },
            );
            if ev > target + target / 4 || ev < target - target / 4 {
                let per_op = ((ev.saturating_sub(ev0)) as f64 / ops as f64).max(1e-3);
                ops = (((target.saturating_sub(ev0)) as f64 / per_op) as u64).max(1);
            }
        }
        let p = Params { ops, ..probe };
        let best = |f: &dyn Fn() -> (u64, f64)| {
            (0..3)
                .map(|_| f())
                .fold((0u64, f64::MAX), |a, b| (b.0, a.1.min(b.1)))
        };
        let (n, tc) = best(&|| counting(w, &p));
        let path = dir.join(format!("{}.pmt", info.name));
        let (nf, tf) = best(&|| to_file(w, &p, &path));
        assert_eq!(n, nf, "same events both ways");
        rates.push((n as f64 / tc / 1e6, n as f64 / tf / 1e6, info.name));
        println!(
            "{:<14} {:>7} {:>10} {:>10} {:>14.1} {:>14.1}",
            info.name,
            info.model.name(),
            ops,
            n,
            n as f64 / tc / 1e6,
            n as f64 / tf / 1e6
        );
    }
    if !rates.is_empty() {
        let stat = |f: fn(&(f64, f64, &str)) -> f64| {
            let mut v: Vec<(f64, &str)> = rates.iter().map(|r| (f(r), r.2)).collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (v[v.len() / 2].0, v[0])
        };
        let (cm, cmin) = stat(|r| r.0);
        let (fm, fmin) = stat(|r| r.1);
        println!(
            "median: count {cm:.1} M events/s, file {fm:.1} M events/s; slowest: count {:.1} ({}), file {:.1} ({})",
            cmin.0, cmin.1, fmin.0, fmin.1
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
