//! The cost of a decode plan: RS(10,4) with 4 KiB blocks, every two-erasure pattern (91)
//! decoded once, when each needs a new plan (the survivors' inverse and a coordinator), then
//! 20 more times from the cached plans; mean microseconds per decode (docs/validation.md §5).
//!
//! `cargo run --release -p pmec --example decode_patterns`

use pmec::Codec;
use std::time::Instant;

fn main() {
    let (k, m, len) = (10usize, 4usize, 4096usize);
    let codec = Codec::new(k, m).expect("RS(10,4)");
    let mut shards: Vec<Vec<u8>> = (0..k + m).map(|i| vec![i as u8; len]).collect();
    let patterns: Vec<[usize; 2]> = (0..k + m)
        .flat_map(|a| (a + 1..k + m).map(move |b| [a, b]))
        .collect();
    let mut decode_all = |rounds: usize| {
        let start = Instant::now();
        for _ in 0..rounds {
            for p in &patterns {
                let mut s: Vec<&mut [u8]> = shards.iter_mut().map(|v| v.as_mut_slice()).collect();
                codec.decode(&mut s, p).expect("two erasures of RS(10,4)");
            }
        }
        start.elapsed().as_secs_f64() * 1e6 / (rounds * patterns.len()) as f64
    };
    let first = decode_all(1);
    let cached = decode_all(20);
    println!(
        "decode_patterns RS(10,4) 4 KiB, {} patterns: first decode {first:.1} us, cached {cached:.2} us",
        patterns.len()
    );
}
