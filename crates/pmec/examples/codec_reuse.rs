//! One codec used on one thread and then on two, beside fresh codecs used on two threads only:
//! the experiment behind the coordinator's handling of high pressure (docs/validation.md §5).
//! Without hardware counters the pressure signal (latency above 110% of the one-thread
//! baseline, with concurrency) fires as soon as a second thread shares the memory; a codec that
//! has a one-thread baseline then runs its high-pressure entry, which must not be slower than
//! what a fresh codec finds.
//!
//! `B=64 cargo run --release -p pmec --example codec_reuse` (B: stripes per call; 1 = single
//! calls, as the ISA-L shim makes them). RS(12,8), 1 KiB blocks, random blocks of a 1 GiB
//! buffer (not huge-page backed, so absolute figures are below `make bench`'s).

use pmec::{Codec, ThreadPool};
use std::time::Instant;

/// Stripe pointers, shared read-only by the threads (each writes its own stripes' parity).
struct Stripes(Vec<*const u8>, Vec<*mut u8>);
// SAFETY: the pointer lists are only read; shares write disjoint parity blocks.
unsafe impl Sync for Stripes {}

fn main() {
    let batch: usize = std::env::var("B")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
        .max(1);
    let (k, m, len, n) = (8usize, 4usize, 1024usize, 32768usize);
    let data = vec![1u8; 1 << 30];
    // non-zero fill: every page is faulted in before anything is timed
    let mut parity = vec![1u8; n * m * len];
    let slots = data.len() / len;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize
    };
    // SAFETY (both): offsets stay within the buffers (slot < slots, i < n * m).
    let srcs = (0..n * k)
        .map(|_| unsafe { data.as_ptr().add(next() % slots * len) })
        .collect();
    let dsts = (0..n * m)
        .map(|i| unsafe { parity.as_mut_ptr().add(i * len) })
        .collect();
    let st = Stripes(srcs, dsts);
    let st = &st;
    let runs: [(&str, &[usize]); 3] = [
        ("fresh codec", &[2, 2, 2]),
        ("one codec", &[1, 2, 2, 1, 2]),
        ("fresh codec", &[2, 2, 2]),
    ];
    for (name, threads) in runs {
        let codec = Codec::new(k, m).expect("RS(12,8)");
        for &t in threads {
            let tp = ThreadPool::new(t);
            let t0 = Instant::now();
            for _ in 0..4 {
                tp.split(n, |first, count| {
                    for s in (first..first + count).step_by(batch) {
                        let c = batch.min(first + count - s);
                        // SAFETY: blocks of `len` bytes; parity blocks distinct per stripe.
                        unsafe {
                            codec.encode_raw(
                                len,
                                &st.0[s * k..(s + c) * k],
                                &st.1[s * m..(s + c) * m],
                                t,
                            )
                        };
                    }
                });
            }
            let gbps = (4 * n * k * len) as f64 / t0.elapsed().as_secs_f64() / 1e9;
            let pressure: u64 = codec
                .coordinator()
                .stats()
                .iter()
                .map(|(_, s)| s.pressure_calls)
                .sum();
            println!(
                "{name}, {t} thread(s): {gbps:6.2} GB/s (high-pressure calls so far: {pressure})"
            );
        }
    }
}
