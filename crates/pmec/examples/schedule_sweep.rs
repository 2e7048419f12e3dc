//! Sweep fixed DIALGA schedules (distance or stripes ahead x loop body x shuffle x prefetch hint) on random-stripe encoding and
//! print throughput beside ISA-L — the experiment behind the coordinator's defaults.
//!
//! `K=8 B=1024 T=1 DS=0,16,32,64,128 AHEAD=1,2,4 HINT=l1|l2 NT=1|0 cargo run --release -p pmec
//! --example schedule_sweep` (both hints when HINT is unset; NT=0: regular parity stores)

use pmec::bench::{self, BenchConfig, DataPool};
use pmec::kernels::{Body, Hint};
use pmec::{Schedule, Strategy};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let pool = DataPool::new(env("POOL_MB", 1024) << 20).expect("benchmark pool");
    let (k, m, block, threads) = (env("K", 8), env("M", 4), env("B", 1024), env("T", 1));
    let ds: Vec<usize> = std::env::var("DS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![0, 16, 32, 64, 128]);
    let aheads: Vec<usize> = std::env::var("AHEAD")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4]);
    // NT=0: regular parity stores instead of non-temporal ones
    let nt = env("NT", 1) != 0;
    let hints: Vec<Hint> = match std::env::var("HINT").as_deref() {
        Ok("l1") => vec![Hint::L1],
        Ok("l2") => vec![Hint::L2],
        _ => vec![Hint::L1, Hint::L2],
    };
    let mut schedules = Vec::new();
    for &hint in &hints {
        for &d in &ds {
            for (shuffle, body) in [
                (false, Body::Line),
                (true, Body::Line),
                (false, Body::XpLine),
                (true, Body::XpLine),
            ] {
                if d > 0 || hint == hints[0] {
                    schedules.push(Schedule {
                        distance: d,
                        hint,
                        shuffle,
                        body,
                        nt,
                        ..Schedule::VANILLA
                    });
                }
            }
        }
        for &a in &aheads {
            for (shuffle, body) in [
                (false, Body::Line),
                (true, Body::Line),
                (false, Body::XpLine),
            ] {
                schedules.push(Schedule {
                    ahead: a,
                    hint,
                    shuffle,
                    body,
                    nt,
                    ..Schedule::VANILLA
                });
            }
        }
    }
    let mut first = true;
    for s in schedules {
        let cfg = BenchConfig {
            k,
            m,
            block,
            threads,
            strategy: Strategy::Fixed(s),
            reps: 3,
            bytes_per_rep: 128 << 20,
            with_isal: first,
            ..BenchConfig::default()
        };
        match bench::run(&pool, &cfg) {
            Ok(r) => {
                if let Some(i) = &r.isal {
                    println!("ISA-L: {:.2} GB/s", i.gbps);
                }
                first = false;
                let what = if s.ahead > 0 {
                    format!("ahead={} shuffle={:5}", s.ahead, s.shuffle)
                } else {
                    format!("d={:4} shuffle={:5}", s.distance, s.shuffle)
                };
                println!(
                    "{what:24} {:?} {:?}: {:.2} GB/s (spread {:.0}%)",
                    s.body,
                    s.hint,
                    r.pmec.gbps,
                    r.pmec.spread() * 100.0
                );
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
