//! Crash-sweeps workloads with the reference persistence model and prints what it finds.
//!
//! ```text
//! cargo run --release -p pmwork --example sweep_debug -- [NAME...] [--fault] [--ops N] [--threads N] [--cuts N]
//! ```

use std::time::Instant;

fn main() {
    let mut names = Vec::new();
    let (mut fault, mut ops, mut threads, mut cuts) = (false, 60u64, 2u16, 100usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--fault" => fault = true,
            "--ops" => ops = args.next().and_then(|v| v.parse().ok()).expect("--ops N"),
            "--threads" => {
                threads = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--threads N")
            }
            "--cuts" => cuts = args.next().and_then(|v| v.parse().ok()).expect("--cuts N"),
            _ => names.push(a),
        }
    }
    for w in pmwork::registry() {
        let info = w.info();
        if !names.is_empty() && !names.iter().any(|n| n == info.name) {
            continue;
        }
        let p = pmwork::Params {
            ops,
            threads,
            seed: 5,
            remote_threads: 0,
            janus_hints: false,
            value_bytes: 8,
        };
        let cfg = pmwork::crashtest::SweepConfig {
            cuts,
            random_images: 3,
            fault: fault.then_some(pmwork::Fault::SkipLogFence),
            ..Default::default()
        };
        let t0 = Instant::now();
        match pmwork::crashtest::sweep(w.as_ref(), &p, &cfg) {
            Ok(r) => {
                println!(
                    "{:<14} {:<8} events {:>8} images {:>5} failures {:>5}  {:.2}s",
                    info.name,
                    info.model.name(),
                    r.events,
                    r.images,
                    r.failures.len(),
                    t0.elapsed().as_secs_f64()
                );
                for f in r.failures.iter().take(2) {
                    println!("    at {} ({}): {}", f.at_event, f.image, f.message);
                }
            }
            Err(e) => println!("{:<14} error: {e}", info.name),
        }
    }
}
