//! Sweep fixed DIALGA schedules (distance x loop body x shuffle) on random-stripe encoding and
//! print throughput beside ISA-L — the experiment behind the coordinator's defaults.
//!
//! `K=8 B=1024 T=1 DS=0,16,32,64,128 cargo run --release -p pmec --example schedule_sweep`

use pmec::bench::{self, BenchConfig, DataPool};
use pmec::kernels::Body;
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
    let mut first = true;
    for &d in &ds {
        for (shuffle, body) in [
            (false, Body::Line),
            (true, Body::Line),
            (false, Body::XpLine),
            (true, Body::XpLine),
        ] {
            let s = Schedule {
                distance: d,
                xpline_distance: None,
                shuffle,
                body,
                nt: true,
            };
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
                    println!(
                        "d={d:4} shuffle={shuffle:5} {body:?}: {:.2} GB/s (spread {:.0}%)",
                        r.pmec.gbps,
                        r.pmec.spread() * 100.0
                    );
                }
                Err(e) => eprintln!("error: {e}"),
            }
        }
    }
}
