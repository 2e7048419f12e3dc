//! Generates one workload into a counting sink (for profiling).
//!
//! ```text
//! cargo run --release -p pmwork --example gen_one -- NAME OPS [THREADS]
//! ```

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let w = pmwork::workload(a.get(1).map_or("btree", |s| s.as_str())).expect("workload");
    let ops = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let threads = a
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(w.info().default_threads);
    let p = pmwork::Params {
        ops,
        threads,
        seed: 1,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    let t0 = std::time::Instant::now();
    let g = w
        .generate(
            &p,
            Box::<pmwork::CountingSink>::default(),
            pmwork::GenOptions::default(),
        )
        .expect("generate");
    let s = t0.elapsed().as_secs_f64();
    println!(
        "{} events in {s:.3} s: {:.1} M events/s, {} MB resident",
        g.events,
        g.events as f64 / s / 1e6,
        g.resident_bytes >> 20
    );
}
