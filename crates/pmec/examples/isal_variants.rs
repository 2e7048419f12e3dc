//! ISA-L's per-ISA entry points beside pmec's kernels, in-cache and from a large pool:
//! `cargo run --release -p pmec --example isal_variants`.

use pmec::bench::{self, BenchConfig, DataPool};
use pmec::Isa;

fn main() {
    let pool = DataPool::new(1024 << 20).expect("pool");
    for in_cache in [true, false] {
        for (k, m) in [(8, 4), (24, 4), (48, 4)] {
            for (variant, isa) in [
                (None, None),
                (Some("avx2"), Some(Isa::Avx2)),
                (Some("sse"), Some(Isa::Ssse3)),
            ] {
                let cfg = BenchConfig {
                    k,
                    m,
                    in_cache,
                    isa,
                    isal_variant: variant.map(String::from),
                    reps: 3,
                    bytes_per_rep: 128 << 20,
                    ..BenchConfig::default()
                };
                match bench::run(&pool, &cfg) {
                    Ok(r) => println!(
                        "{:40} ISA-L {:>8}: {:6.2} GB/s   pmec {:12}: {:6.2} GB/s   ratio {:.2}x",
                        cfg.label(),
                        variant.unwrap_or("dispatch"),
                        r.isal.as_ref().map_or(0.0, |i| i.gbps),
                        isa.unwrap_or_else(Isa::best).name(),
                        r.pmec.gbps,
                        r.ratio.unwrap_or(0.0)
                    ),
                    Err(e) => println!("{}: {e}", cfg.label()),
                }
            }
        }
    }
}
