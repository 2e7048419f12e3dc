//! In-L1 speed of every kernel for one code (no memory effects): `K=8 M=4 LEN=1024 cargo run
//! --release -p pmec --example kernel_speed`.

use pmec::kernels::{self, Coefs, Isa};
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (k, m, len) = (env("K", 8), env("M", 4), env("LEN", 1024));
    let src = vec![7u8; k * len];
    let mut dst = vec![0u8; m * len];
    let sp: Vec<*const u8> = (0..k).map(|j| src[j * len..].as_ptr()).collect();
    let dp: Vec<*mut u8> = (0..m).map(|p| dst[p * len..].as_mut_ptr()).collect();
    let g = pmec::matrix::gen_cauchy1_matrix(k + m, k);
    let rows: Vec<usize> = (k..k + m).collect();
    let coefs = Coefs::new(&g.select_rows(&rows));
    for isa in Isa::available_all() {
        let n = (200_000_000 / (k * len)).max(10);
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: k sources and m destinations of `len` bytes, disjoint.
            unsafe { kernels::encode_linear(isa, &sp, &dp, &coefs, len, false, false) };
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:12} {:7.2} GB/s",
            isa.name(),
            (n * k * len) as f64 / s / 1e9
        );
    }
}
