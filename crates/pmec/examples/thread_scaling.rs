//! Two-thread scaling of pmec, window by window, beside what the memory system gave a second
//! core in the same window — the experiment behind the "2 threads" line of docs/validation.md §5.
//!
//! Each window measures, back to back: the sequential memory path (`bench::stream_gbps`) on one
//! and two threads, pmec encoding random RS(k+4, k) stripes of 1 KiB blocks (coordinator's
//! choice, batches of 64) on one thread and on two (each thread calling pmec per batch, and
//! each batch split by the pool API), and the same stripes' traffic moved by a plain
//! XOR loop (`bench::stripe_traffic_gbps`) on one and two threads. On a shared host the second
//! core's share of memory bandwidth changes from minute to minute; grouping the windows by what
//! the memory path gave shows how pmec scales when the machine lets anything scale.
//!
//! `WINDOWS=60 K=8 cargo run --release -p pmec --example thread_scaling`

use pmec::bench::{self, BenchConfig, DataPool};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One window's figures (GB/s of source data).
struct Window {
    stream: (f64, f64),
    pmec: (f64, f64),
    /// Two threads through the pool API, one split per batch.
    pmec_split: f64,
    reference: (f64, f64),
}

fn ratio(p: (f64, f64)) -> f64 {
    p.1 / p.0
}

/// The `q` quantile (0..=1) of `v`, nearest rank below.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(q * (v.len() - 1) as f64) as usize]
}

/// "median (10th-90th percentile)" of `v`.
fn spread(v: Vec<f64>) -> String {
    format!(
        "{:.2}x ({:.2}-{:.2})",
        quantile(v.clone(), 0.5),
        quantile(v.clone(), 0.1),
        quantile(v, 0.9)
    )
}

fn main() {
    let pool = DataPool::new(env("POOL_MB", 1024) << 20).expect("benchmark pool");
    let (windows, k) = (env("WINDOWS", 12), env("K", 8));
    let cfg = |threads: usize| BenchConfig {
        k,
        split_batches: false,
        m: 4,
        block: 1024,
        threads,
        reps: 3,
        with_isal: false,
        ..BenchConfig::default()
    };
    let per_rep = cfg(1).bytes_per_rep;
    println!(
        "window | memory path 1t -> 2t | pmec RS({},{k}) 1t -> 2t | pool API 2t | traffic reference \
         1t -> 2t | pmec 2t / reference 2t",
        k + 4
    );
    let mut all = Vec::new();
    for w in 0..windows {
        let stream = (
            bench::stream_gbps(&pool, per_rep, 1),
            bench::stream_gbps(&pool, per_rep, 2),
        );
        let pmec = (
            bench::run(&pool, &cfg(1))
                .expect("pmec, one thread")
                .pmec
                .gbps,
            bench::run(&pool, &cfg(2))
                .expect("pmec, two threads")
                .pmec
                .gbps,
        );
        let split = BenchConfig {
            split_batches: true,
            ..cfg(2)
        };
        let pmec_split = bench::run(&pool, &split).expect("pool API").pmec.gbps;
        let reference = (
            bench::stripe_traffic_gbps(&pool, &cfg(1)).expect("reference, one thread"),
            bench::stripe_traffic_gbps(&pool, &cfg(2)).expect("reference, two threads"),
        );
        println!(
            "{w:6} | {:5.1} -> {:5.1} ({:.2}x) | {:5.1} -> {:5.1} ({:.2}x) | {:5.1} ({:.2}x) | \
             {:5.1} -> {:5.1} ({:.2}x) | {:.2}",
            stream.0,
            stream.1,
            ratio(stream),
            pmec.0,
            pmec.1,
            ratio(pmec),
            pmec_split,
            pmec_split / pmec.0,
            reference.0,
            reference.1,
            ratio(reference),
            pmec.1 / reference.1,
        );
        all.push(Window {
            stream,
            pmec,
            pmec_split,
            reference,
        });
    }
    println!(
        "\nwindows grouped by the memory path's 2-thread scaling (medians; 10th-90th percentile):"
    );
    println!(
        "| memory path 2 / 1 | windows | memory path GB/s | pmec GB/s | pmec 2 / 1 | pool API per \
         batch 2 / 1 | reference 2 / 1 | pmec 2t / reference 2t |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (lo, hi) in [(0.0, 1.3), (1.3, 1.6), (1.6, 1.8), (1.8, f64::INFINITY)] {
        let group: Vec<&Window> = all
            .iter()
            .filter(|w| (lo..hi).contains(&ratio(w.stream)))
            .collect();
        if group.is_empty() {
            continue;
        }
        let label = if hi.is_finite() {
            format!("{lo:.1}-{hi:.1}x")
        } else {
            format!(">= {lo:.1}x")
        };
        let med = |f: &dyn Fn(&Window) -> f64| quantile(group.iter().map(|w| f(w)).collect(), 0.5);
        println!(
            "| {label} | {} | {:.1} -> {:.1} ({:.2}x) | {:.1} -> {:.1} | {} | {:.2}x | {} | {:.2} |",
            group.len(),
            med(&|w| w.stream.0),
            med(&|w| w.stream.1),
            med(&|w| ratio(w.stream)),
            med(&|w| w.pmec.0),
            med(&|w| w.pmec.1),
            spread(group.iter().map(|w| ratio(w.pmec)).collect()),
            med(&|w| w.pmec_split / w.pmec.0),
            spread(group.iter().map(|w| ratio(w.reference)).collect()),
            med(&|w| w.pmec.1 / w.reference.1),
        );
    }
}
