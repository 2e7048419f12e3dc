//! How to bring in a lone stripe (one stripe per call, nothing after it to prefetch): each
//! variant encodes stripes of a 1 GiB pool in random order, one call per stripe, 1 thread,
//! interleaved over 3 rounds (`ROUNDS`); median [min-max] GB/s of data.
//!
//! `cargo run --release -p pmec --example lone_stripe [K:M:BLOCK ...]`
//! (default 8:4:1024 24:4:1024 48:4:1024 8:4:4096)
//!
//! Variants: `move` / `move-nt` (read the k blocks, write their XOR to the m parity blocks with
//! regular / non-temporal stores: the plain move of the same bytes); `kernel` / `kernel-nt`
//! (pmec's best kernel in address order, 256 B bodies, hardware prefetching only);
//! `kernel-nt64` (the same with 64 B bodies); `pf-t0` / `pf-t1` (every
//! line of the stripe software-prefetched into L1 / L2 first, then `kernel-nt`); `touch`
//! (one byte of every line loaded, source by source, then `kernel-nt`: the schedule pmec's
//! coordinator gives such calls); `pipe-tH-D[-64][r]` (the stripe's own pipelined prefetch,
//! `Fetch::Pipelined`: the first D bytes of every source prefetched into L1 (`t0`) or L2
//! (`t1`), then the kernel prefetching D bytes ahead in each source as it loads it; `-64`: 64 B
//! bodies; `r`: regular stores).
//!
//! `VARIANTS=move,pipe-t0-512,...` picks variants, `ROUNDS=N` the interleaved rounds.

use pmec::dialga::prefetch::Fetch;
use pmec::kernels::{self, Coefs, Isa};
use std::time::Instant;

mod common;
use common::{plain_move, Pool};

fn prefetch_all<const HINT: i32>(srcs: &[*const u8], len: usize) {
    for &s in srcs {
        for o in (0..len).step_by(64) {
            // SAFETY: prefetching never faults.
            unsafe { core::arch::x86_64::_mm_prefetch::<HINT>(s.wrapping_add(o) as *const i8) };
        }
    }
}

const DEFAULT_VARIANTS: [&str; 14] = [
    "move",
    "move-nt",
    "kernel",
    "kernel-nt",
    "kernel-nt64",
    "pf-t0",
    "pf-t1",
    "touch",
    "pipe-t0-256",
    "pipe-t0-512",
    "pipe-t1-512",
    "pipe-t0-512r",
    "pipe-t0-1024",
    "pipe-t0-512-64",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let points: Vec<(usize, usize, usize)> = if args.is_empty() {
        vec![(8, 4, 1024), (24, 4, 1024), (48, 4, 1024), (8, 4, 4096)]
    } else {
        args.iter()
            .map(|a| {
                let v: Vec<usize> = a
                    .split(':')
                    .map(|x| x.parse().expect("K:M:BLOCK"))
                    .collect();
                assert!(
                    v.len() == 3 && v[2].is_multiple_of(64),
                    "want K:M:BLOCK, BLOCK a multiple of 64"
                );
                (v[0], v[1], v[2])
            })
            .collect()
    };
    if !Isa::Avx512.available() {
        eprintln!("lone_stripe: needs AVX-512 for the plain move");
        return;
    }
    let pool = Pool::new(1 << 30);
    let isa = Isa::best();
    let variants: Vec<String> = match std::env::var("VARIANTS") {
        Ok(v) => v.split(',').map(str::to_string).collect(),
        Err(_) => DEFAULT_VARIANTS.iter().map(|v| v.to_string()).collect(),
    };
    for (k, m, len) in points {
        let g = pmec::matrix::gen_cauchy1_matrix(k + m, k);
        let rows: Vec<usize> = (k..k + m).collect();
        let coefs = Coefs::new(&g.select_rows(&rows));
        let stride = (k + m) * len;
        let n = pool.bytes / stride;
        let mut order: Vec<usize> = (0..n).collect();
        let mut x = 12345u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut gbps = vec![Vec::new(); variants.len()];
        let mut next = 0;
        let rounds: usize = std::env::var("ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(3)
            .max(1);
        for _round in 0..rounds {
            for (v, name) in variants.iter().enumerate() {
                let t = Instant::now();
                let mut done = 0usize;
                while t.elapsed().as_secs_f64() < 0.3 {
                    for _ in 0..64 {
                        let base = pool.ptr.wrapping_add(order[next] * stride);
                        next = (next + 1) % n;
                        let srcs: Vec<*const u8> = (0..k)
                            .map(|j| base.wrapping_add(j * len) as *const u8)
                            .collect();
                        let dsts: Vec<*mut u8> =
                            (0..m).map(|p| base.wrapping_add((k + p) * len)).collect();
                        // SAFETY: the stripe lies in the pool; sources and parity are disjoint
                        // blocks of it; parity blocks are 64-byte aligned (pool and block are).
                        unsafe {
                            match name.as_str() {
                                "move" => plain_move(&srcs, &dsts, len, false),
                                "move-nt" => plain_move(&srcs, &dsts, len, true),
                                "kernel" => kernels::encode_linear(
                                    isa, &srcs, &dsts, &coefs, len, false, false,
                                ),
                                "kernel-nt" => kernels::encode_linear(
                                    isa, &srcs, &dsts, &coefs, len, false, true,
                                ),
                                "kernel-nt64" => kernels::encode_linear_body(
                                    isa,
                                    &srcs,
                                    &dsts,
                                    &coefs,
                                    len,
                                    false,
                                    true,
                                    kernels::Body::Line,
                                ),
                                "pf-t0" | "pf-t1" => {
                                    if name == "pf-t0" {
                                        prefetch_all::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                                            &srcs, len,
                                        );
                                    } else {
                                        prefetch_all::<{ core::arch::x86_64::_MM_HINT_T1 }>(
                                            &srcs, len,
                                        );
                                    }
                                    kernels::encode_linear(
                                        isa, &srcs, &dsts, &coefs, len, false, true,
                                    )
                                }
                                v if v.starts_with("pipe-") => {
                                    // pipe-tH-D[-64][r]: level, distance, 64 B bodies, regular stores
                                    let f: Vec<&str> = v.split('-').collect();
                                    let hint = if f[1] == "t1" {
                                        kernels::Hint::L2
                                    } else {
                                        kernels::Hint::L1
                                    };
                                    let ahead: u32 =
                                        f[2].trim_end_matches('r').parse().expect("pipe distance");
                                    let body = if f.get(3).is_some_and(|b| b.starts_with("64")) {
                                        kernels::Body::Line
                                    } else {
                                        kernels::Body::XpLine
                                    };
                                    let fetch = Fetch::Pipelined {
                                        hint,
                                        ahead,
                                        rows: false,
                                    };
                                    kernels::fetch(&srcs, len, fetch);
                                    kernels::encode_available(
                                        isa,
                                        &srcs,
                                        &dsts,
                                        &coefs,
                                        len,
                                        !v.ends_with('r'),
                                        body,
                                        fetch,
                                    )
                                }
                                _ => {
                                    kernels::touch(&srcs, len);
                                    kernels::encode_linear(
                                        isa, &srcs, &dsts, &coefs, len, false, true,
                                    )
                                }
                            }
                        }
                        done += 1;
                    }
                }
                gbps[v].push((done * k * len) as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
        }
        for (v, name) in variants.iter().enumerate() {
            let mut s = gbps[v].clone();
            s.sort_by(f64::total_cmp);
            println!(
                "RS({},{k}) {len} B  {name:10} {:6.2} GB/s [{:.2}-{:.2}]",
                k + m,
                s[s.len() / 2],
                s[0],
                s[s.len() - 1]
            );
        }
    }
}
