//! `cargo bench -p pmec --bench ec`: pmec beside the system's ISA-L on the acceptance points.
//! Environment: PMEC_BENCH_POOL_MB (default 1024), PMEC_BENCH_REPS (5), PMEC_BENCH_MB_PER_REP
//! (256), PMEC_BENCH_ONLY (substring filter on the point label).

use pmec::bench::{self, BenchConfig, BenchResult, DataPool, Workload};
use pmec::{Codec, ThreadPool};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let pool_mb = env("PMEC_BENCH_POOL_MB", 1024);
    let reps = env("PMEC_BENCH_REPS", 5);
    let per_rep = env("PMEC_BENCH_MB_PER_REP", 256) << 20;
    let only = std::env::var("PMEC_BENCH_ONLY").ok();
    eprintln!(
        "pmec bench: kernel {}, pool {pool_mb} MiB, {reps} reps of {} MiB",
        pmec::Isa::best().name(),
        per_rep >> 20
    );
    let pool = DataPool::new(pool_mb << 20).expect("map benchmark pool");
    let base = BenchConfig {
        reps,
        bytes_per_rep: per_rep,
        ..BenchConfig::default()
    };
    let rs = |k: usize, m: usize, block: usize| BenchConfig {
        k,
        m,
        block,
        ..base.clone()
    };
    let mut points: Vec<(&str, BenchConfig)> = vec![
        ("RS(12,8) 1KiB", rs(8, 4, 1024)),
        (
            "RS(12,8) 1KiB single-call",
            BenchConfig {
                batch: 1,
                ..rs(8, 4, 1024)
            },
        ),
        ("RS(12,8) 4KiB", rs(8, 4, 4096)),
        ("RS(28,24) 1KiB", rs(24, 4, 1024)),
        ("RS(52,48) 1KiB", rs(48, 4, 1024)),
        (
            "RS(12,8) 1KiB in-cache",
            BenchConfig {
                in_cache: true,
                ..rs(8, 4, 1024)
            },
        ),
        (
            "RS(12,8) 4KiB in-cache",
            BenchConfig {
                in_cache: true,
                ..rs(8, 4, 4096)
            },
        ),
        (
            "RS(28,24) 1KiB in-cache",
            BenchConfig {
                in_cache: true,
                ..rs(24, 4, 1024)
            },
        ),
        (
            "RS(52,48) 1KiB in-cache",
            BenchConfig {
                in_cache: true,
                ..rs(48, 4, 1024)
            },
        ),
        (
            "RS(12,8) 1KiB decode 4",
            BenchConfig {
                workload: Workload::Decode { erasures: 4 },
                ..rs(8, 4, 1024)
            },
        ),
        (
            "RS(12,8) 1KiB 2 threads",
            BenchConfig {
                threads: 2,
                ..rs(8, 4, 1024)
            },
        ),
        (
            "RS(28,24) 1KiB 2 threads",
            BenchConfig {
                threads: 2,
                ..rs(24, 4, 1024)
            },
        ),
        (
            "RS(12,8) 1KiB 2 threads, pool API per batch",
            BenchConfig {
                threads: 2,
                split_batches: true,
                ..rs(8, 4, 1024)
            },
        ),
        (
            "LRC(24,2,4) 1KiB",
            BenchConfig {
                workload: Workload::Lrc { l: 4 },
                ..rs(24, 2, 1024)
            },
        ),
    ];
    if let Some(f) = &only {
        points.retain(|(n, _)| n.contains(f.as_str()));
    }
    let mut results: Vec<(&str, BenchResult)> = Vec::new();
    // Points that failed: printed on stderr as they fail, and the run exits 1 at the end (a
    // point missing from the table is not a result).
    let mut failed: Vec<String> = Vec::new();
    for (name, cfg) in points {
        match bench::run(&pool, &cfg) {
            Ok(r) => {
                let isal = r
                    .isal
                    .as_ref()
                    .map_or("-".into(), |i| format!("{:.2}", i.gbps));
                eprintln!(
                    "{name:28} pmec {:6.2} GB/s (spread {:3.0}%)  ISA-L {isal:>6} GB/s  ratio {}  [{}]",
                    r.pmec.gbps,
                    r.pmec.spread() * 100.0,
                    r.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                    r.schedule
                );
                if let Some(n) = &r.isal_note {
                    eprintln!("  note: {n}");
                }
                results.push((name, r));
            }
            Err(e) => {
                eprintln!("{name}: error: {e}");
                failed.push(name.to_string());
            }
        }
    }
    // ceilings: out-of-memory pmec vs pmec in-cache for the same code and block
    println!(
        "{}",
        bench::markdown(&results.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>())
    );
    let find = |n: &str| {
        results
            .iter()
            .find(|(x, _)| *x == n)
            .map(|(_, r)| r.pmec.gbps)
    };
    for (mem, cache) in [
        ("RS(12,8) 1KiB", "RS(12,8) 1KiB in-cache"),
        ("RS(12,8) 4KiB", "RS(12,8) 4KiB in-cache"),
        ("RS(28,24) 1KiB", "RS(28,24) 1KiB in-cache"),
        ("RS(52,48) 1KiB", "RS(52,48) 1KiB in-cache"),
    ] {
        if let (Some(a), Some(b)) = (find(mem), find(cache)) {
            println!(
                "{mem}: {:.0}% of pmec's in-cache ceiling ({a:.2} / {b:.2} GB/s)",
                100.0 * a / b
            );
        }
    }
    for (t2, t1) in [
        ("RS(12,8) 1KiB 2 threads", "RS(12,8) 1KiB"),
        ("RS(28,24) 1KiB 2 threads", "RS(28,24) 1KiB"),
        (
            "RS(12,8) 1KiB 2 threads, pool API per batch",
            "RS(12,8) 1KiB",
        ),
    ] {
        if let (Some(a), Some(b)) = (find(t2), find(t1)) {
            println!("{t2}: {:.2}x one thread", a / b);
        }
    }
    if only.is_none() {
        // Two-thread scaling measured in pairs (one thread, then two, back to back, on the same
        // stripes), each pair beside the same two runs of the traffic reference (the stripes'
        // reads and writes by a plain XOR loop with stripe-ahead prefetch): what the memory
        // system gave a second core in that window.
        for k in [8, 24] {
            let cfg = BenchConfig {
                reps: 3,
                with_isal: false,
                ..rs(k, 4, 1024)
            };
            let with = |threads: usize| BenchConfig {
                threads,
                ..cfg.clone()
            };
            let mut ratios = Vec::new();
            let mut refs = Vec::new();
            for _ in 0..reps.max(1) {
                let one = bench::run(&pool, &with(1));
                let two = bench::run(&pool, &with(2));
                let r1 = bench::stripe_traffic_gbps(&pool, &with(1));
                let r2 = bench::stripe_traffic_gbps(&pool, &with(2));
                match (one, two, r1, r2) {
                    (Ok(a), Ok(b), Ok(c), Ok(d)) => {
                        ratios.push(b.pmec.gbps / a.pmec.gbps);
                        refs.push((d / c, c, d));
                    }
                    (a, b, c, d) => {
                        let e = [a.err(), b.err(), c.err(), d.err()]
                            .into_iter()
                            .flatten()
                            .next()
                            .map_or(String::new(), |e| e.to_string());
                        eprintln!("RS({},{k}) 1KiB 2 threads, paired: error: {e}", k + 4);
                        failed.push(format!("RS({},{k}) 1KiB 2 threads, paired", k + 4));
                    }
                }
            }
            if !ratios.is_empty() {
                let (lo, hi) = (
                    ratios.iter().copied().fold(f64::INFINITY, f64::min),
                    ratios.iter().copied().fold(0.0, f64::max),
                );
                let n = ratios.len();
                let r = bench::median(ratios);
                let q = bench::median(refs.iter().map(|x| x.0).collect());
                let one = bench::median(refs.iter().map(|x| x.1).collect());
                let two = bench::median(refs.iter().map(|x| x.2).collect());
                println!(
                    "RS({},{k}) 1KiB 2 threads, paired: {r:.2}x one thread (median of {n} pairs, \
                     range {lo:.2}-{hi:.2}); the same stripes' traffic without GF arithmetic: \
                     {q:.2}x ({one:.2} -> {two:.2} GB/s) in the same windows",
                    k + 4,
                );
            }
        }
        pool_hand_off();
        let s1 = bench::stream_gbps(&pool, per_rep, 1);
        let s2 = bench::stream_gbps(&pool, per_rep, 2);
        println!(
            "memory path, sequential reads + half as many non-temporal writes (encoding's traffic, \
             nothing random): {s1:.2} GB/s read on 1 thread, {s2:.2} GB/s on 2 ({:.2}x)",
            s2 / s1
        );
    }
    if !failed.is_empty() {
        eprintln!(
            "ec bench: {} point(s) failed: {}",
            failed.len(),
            failed.join("; ")
        );
        std::process::exit(1);
    }
}

/// What a [`ThreadPool`] call costs beyond the work: an empty split, and one RS(12,8) batch of
/// 64 cached 1 KiB stripes (the same buffers every call, each thread always the same half) on
/// one and on two threads. Helpers are persistent; spawning threads per call had cost ~35 µs.
fn pool_hand_off() {
    use std::time::Instant;
    let (k, m, len, stripes, calls) = (8, 4, 1024, 64, 20_000);
    let codec = Codec::new(k, m).expect("RS(12,8)");
    let data = vec![0x5au8; stripes * k * len];
    let mut parity = vec![0u8; stripes * m * len];
    let per_call = |t: usize, parity: &mut [u8]| {
        let pool = ThreadPool::new(t);
        let d: Vec<&[u8]> = data.chunks(len).collect();
        let mut p: Vec<&mut [u8]> = parity.chunks_mut(len).collect();
        for _ in 0..calls / 10 {
            pool.encode_batch(&codec, &d, &mut p).expect("encode");
        }
        let t0 = Instant::now();
        for _ in 0..calls {
            pool.encode_batch(&codec, &d, &mut p).expect("encode");
        }
        t0.elapsed().as_secs_f64() / calls as f64 * 1e6
    };
    let two = ThreadPool::new(2);
    let t0 = Instant::now();
    for _ in 0..calls {
        two.split(2, |a, b| {
            std::hint::black_box((a, b));
        });
    }
    let empty = t0.elapsed().as_secs_f64() / calls as f64 * 1e6;
    let one_thread = per_call(1, &mut parity);
    let two_threads = per_call(2, &mut parity);
    println!(
        "thread pool hand-off ({} threads usable): empty split {empty:.2} µs; RS(12,8) batch of \
         {stripes} cached 1 KiB stripes {one_thread:.2} µs on 1 thread, {two_threads:.2} µs on 2 \
         ({:.2}x)",
        two.effective_threads(),
        one_thread / two_threads
    );
}
