//! Where a lone stripe's time goes on the path between the kernel and a caller: RS(k+4,k)
//! stripes (k data blocks then 4 parity blocks, contiguous) of a 1 GiB pool in random order,
//! one stripe per call, 1 thread, every variant in the same process over interleaved rounds
//! (`ROUNDS`, default 7); median [min-max] GB/s of data and the share of the plain move's.
//!
//! `cargo run --release -p pmec --example lone_path [K:BLOCK ...]` (default 8:1024 8:4096;
//! `POOL_KIB=256` for a cache-resident pool; `ONLY=5,9` runs only those variants, by their
//! number in the table, 0 = `move-nt`; the share column then needs 0 among them).
//! Needs AVX-512 + GFNI.
//!
//! Variants: `move-nt` (the plain move with non-temporal stores, as `percall`'s); `naive` /
//! `naive-pf256` (the simplest GFNI loop: one 64 B row of every source in turn, 4 accumulators,
//! non-temporal stores; without / with a prefetch 256 bytes ahead in each source);
//! `kernel-64` / `kernel-256` (pmec's kernel, 64 B / 256 B bodies, non-temporal stores, called
//! directly); `kernel-pipe256` (with the stripe's own prefetch 256 bytes ahead, as lone-stripe
//! schedule 5 runs it); `auto` (a `Codec` with the default strategy, one `encode_raw` per
//! stripe: the coordinator's choice, whose decisions are tallied below the table);
//! `coord+kernel-64` (`kernel-64` between the coordinator's `begin` and `end`, as a `Codec`
//! kept its books on every call before it reused decisions); `execute-lone3` / `execute-lone5`
//! (the schedule executor running lone schedule 3 / 5, without the coordinator: the latter
//! against `kernel-pipe256`, the same kernel and fetch); `kernel-by-source` (the source-major
//! order of lone schedule 6, `Fetch::BySource`, called directly as the ISA-L entry points call
//! it); `isal-entry` (pmec's `ec_encode_data`, the shim's entry point, with ISA-L tables of the
//! same matrix; `PMEC_STRATEGY=loneN` pins its schedule, so that it can be set against the same
//! schedule called directly); `kernel-pipe256-call` (`kernel-pipe256` in a function of its own,
//! not inlined); `lone0`..`lone8` (a `Codec` fixed to each of [`LONE_SCHEDULES`],
//! the coordinator's candidates for such calls).
//!
//! [`LONE_SCHEDULES`]: pmec::dialga::coordinator::LONE_SCHEDULES

use core::arch::x86_64::*;
use pmec::dialga::coordinator::LONE_SCHEDULES;
use pmec::dialga::prefetch::{Fetch, Schedule};
use pmec::kernels::{self, Body, Coefs, Hint, Isa};
use pmec::{Codec, Strategy};
use std::collections::HashMap;
use std::time::Instant;

mod common;
use common::{plain_move, Pool};

const M: usize = 4;

/// The stripe's own prefetch of lone schedule 5 (256 bytes ahead into L1).
const PIPE256: Fetch = Fetch::Pipelined {
    hint: Hint::L1,
    ahead: 256,
    rows: false,
};

/// A lone schedule's fetch and kernel called directly (64 B bodies, non-temporal stores), as
/// the ISA-L entry points call them.
///
/// # Safety
/// As `kernels::encode_available`.
#[inline(always)]
unsafe fn fetch_and_encode(
    isa: Isa,
    coefs: &Coefs,
    d: &[*const u8],
    p: &[*mut u8],
    len: usize,
    fetch: Fetch,
) {
    kernels::fetch(d, len, fetch);
    kernels::encode_available(isa, d, p, coefs, len, true, Body::Line, fetch);
}

/// `kernel-pipe256` in a function of its own (never inlined): the same machine code for the
/// fetch and the kernel call, reached through a call, as a library's entry point reaches it.
///
/// # Safety
/// As `kernels::encode_available`.
#[inline(never)]
unsafe fn pipe256_call(isa: Isa, coefs: &Coefs, d: &[*const u8], p: &[*mut u8], len: usize) {
    fetch_and_encode(isa, coefs, d, p, len, PIPE256);
}

/// The simplest GFNI loop; `mats` source-major (source j's 4 matrices at `4j..4j+4`).
#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn naive(d: &[*const u8], p: &[*mut u8], len: usize, mats: &[u64], ahead: usize) {
    let mut o = 0;
    while o < len {
        let mut acc = [_mm512_setzero_si512(); M];
        for (j, &s) in d.iter().enumerate() {
            if ahead > 0 && o + ahead < len {
                _mm_prefetch::<_MM_HINT_T0>(s.add(o + ahead) as *const i8);
            }
            let x = _mm512_loadu_si512(s.add(o) as *const _);
            for (r, a) in acc.iter_mut().enumerate() {
                let mtx = _mm512_set1_epi64(mats[j * M + r] as i64);
                *a = _mm512_xor_si512(*a, _mm512_gf2p8affine_epi64_epi8::<0>(x, mtx));
            }
        }
        for (q, a) in p.iter().zip(acc) {
            _mm512_stream_si512(q.add(o) as *mut _, a);
        }
        o += 64;
    }
    _mm_sfence();
}

fn main() {
    if !Isa::Avx512Gfni.available() {
        eprintln!("lone_path: needs AVX-512 and GFNI");
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let points: Vec<(usize, usize)> = if args.is_empty() {
        vec![(8, 1024), (8, 4096)]
    } else {
        args.iter()
            .map(|a| {
                let v: Vec<usize> = a.split(':').map(|x| x.parse().expect("K:BLOCK")).collect();
                assert!(
                    v.len() == 2 && v[0] >= 1 && v[1] >= 64 && v[1].is_multiple_of(64),
                    "want K:BLOCK, BLOCK a multiple of 64"
                );
                (v[0], v[1])
            })
            .collect()
    };
    // Variants by number (0 = move-nt, in the order of the table), e.g. `ONLY=5,9`: the others
    // are skipped (a variant's speed here can depend on which run beside it in the rounds).
    let only: Option<Vec<usize>> = std::env::var("ONLY")
        .ok()
        .map(|o| o.split(',').filter_map(|v| v.trim().parse().ok()).collect());
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7)
        .max(1);
    let pool = Pool::new(1 << 30);
    let (span, pool) = (pool.bytes, pool.ptr);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let isa = Isa::best();
    for (k, len) in points {
        let g = pmec::matrix::gen_cauchy1_matrix(k + M, k);
        let rows: Vec<usize> = (k..k + M).collect();
        let coefs = Coefs::new(&g.select_rows(&rows));
        let mats: Vec<u64> = (0..k)
            .flat_map(|j| (0..M).map(move |r| (j, r)))
            .map(|(j, r)| pmec::gf::affine_matrix(coefs.coef(r, j)))
            .collect();
        let stride = (k + M) * len;
        let pool_bytes = std::env::var("POOL_KIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(span, |kib| (kib << 10).min(span));
        let n = (pool_bytes / stride).max(1);
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let mut names: Vec<String> = [
            "move-nt",
            "naive",
            "naive-pf256",
            "kernel-64",
            "kernel-256",
            "kernel-pipe256",
            "auto",
            "coord+kernel-64",
            "execute-lone3",
            "execute-lone5",
            "kernel-by-source",
            "isal-entry",
            "kernel-pipe256-call",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (i, s) in LONE_SCHEDULES.iter().enumerate() {
            let stores = if s.nt { "nt" } else { "regular" };
            names.push(format!("lone{i} {:?} {stores} {:?}", s.body, s.fetch));
        }
        let auto = Codec::new(k, M).expect("codec");
        let fixed: Vec<Codec> = LONE_SCHEDULES
            .iter()
            .map(|s| {
                Codec::builder(k, M)
                    .strategy(Strategy::Fixed(*s))
                    .build()
                    .expect("codec")
            })
            .collect();
        // ISA-L tables of the same parity rows, for the ISA-L entry point
        let mut tables = vec![0u8; k * M * 32];
        let rows_bytes: Vec<u8> = (0..M)
            .flat_map(|r| (0..k).map(move |j| (r, j)))
            .map(|(r, j)| coefs.coef(r, j))
            .collect();
        // SAFETY: `rows_bytes` holds k * M coefficients, `tables` k * M * 32 bytes.
        unsafe {
            pmec::isal_abi::ec_init_tables(
                k as i32,
                M as i32,
                rows_bytes.as_ptr(),
                tables.as_mut_ptr(),
            )
        };
        let mut tally: HashMap<(bool, bool, Schedule), u64> = HashMap::new();
        let mut gbps = vec![Vec::new(); names.len()];
        let mut pos = 0;
        for _ in 0..rounds {
            for (v, g) in gbps.iter_mut().enumerate() {
                if only.as_ref().is_some_and(|o| !o.contains(&v)) {
                    g.push(f64::NAN);
                    continue;
                }
                let t = Instant::now();
                let mut done = 0usize;
                while t.elapsed().as_secs_f64() < 0.25 {
                    for _ in 0..64 {
                        let base = pool.wrapping_add(order[pos % n] * stride);
                        pos += 1;
                        let mut dv = [core::ptr::null::<u8>(); 256];
                        let mut pv = [core::ptr::null_mut::<u8>(); M];
                        for (j, s) in dv[..k].iter_mut().enumerate() {
                            *s = base.wrapping_add(j * len);
                        }
                        for (r, q) in pv.iter_mut().enumerate() {
                            *q = base.wrapping_add((k + r) * len);
                        }
                        let (d, p) = (&dv[..k], &pv[..]);
                        // SAFETY: each stripe's k + 4 blocks lie in the pool, none overlapping.
                        unsafe {
                            match v {
                                0 => plain_move(d, p, len, true),
                                1 => naive(d, p, len, &mats, 0),
                                2 => naive(d, p, len, &mats, 256),
                                3 | 4 => {
                                    let body = if v == 3 { Body::Line } else { Body::XpLine };
                                    kernels::encode_linear_body(
                                        isa, d, p, &coefs, len, false, true, body,
                                    )
                                }
                                5 => fetch_and_encode(isa, &coefs, d, p, len, PIPE256),
                                6 => {
                                    // Tallied by a copied key, formatted after the
                                    // rounds: a string built per call (formatting and a
                                    // map lookup) cost the timed calls about as much as
                                    // the coordinator itself.
                                    let dec = auto.encode_raw(len, d, p, 1);
                                    *tally
                                        .entry((dec.cache_resident, dec.measured, dec.schedule))
                                        .or_default() += 1;
                                }
                                7 => {
                                    let c = fixed[3].coordinator();
                                    let t = c.begin(len, 1, 1);
                                    kernels::encode_linear_body(
                                        isa,
                                        d,
                                        p,
                                        &coefs,
                                        len,
                                        false,
                                        true,
                                        Body::Line,
                                    );
                                    c.end(t, (k * len) as u64);
                                }
                                8 | 9 => {
                                    let set = pmec::dialga::prefetch::StripeSet {
                                        srcs: d,
                                        dsts: p,
                                        k,
                                        m: M,
                                        len,
                                    };
                                    pmec::dialga::prefetch::execute(
                                        isa,
                                        &coefs,
                                        &set,
                                        &LONE_SCHEDULES[if v == 8 { 3 } else { 5 }],
                                        false,
                                    );
                                }
                                10 => {
                                    let fetch = Fetch::BySource { group: 2, ahead: 2 };
                                    fetch_and_encode(isa, &coefs, d, p, len, fetch)
                                }
                                11 => pmec::isal_abi::ec_encode_data(
                                    len as i32,
                                    k as i32,
                                    M as i32,
                                    tables.as_ptr(),
                                    d.as_ptr(),
                                    p.as_ptr(),
                                ),
                                12 => pipe256_call(isa, &coefs, d, p, len),
                                _ => {
                                    fixed[v - 13].encode_raw(len, d, p, 1);
                                }
                            }
                        }
                    }
                    done += 64;
                }
                g.push((done * k * len) as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
        }
        for g in gbps.iter_mut() {
            g.sort_by(f64::total_cmp);
        }
        let mid = |g: &[f64]| g[g.len() / 2];
        let mv = mid(&gbps[0]);
        for (name, g) in names.iter().zip(&gbps) {
            if g[0].is_nan() {
                continue;
            }
            let share = if mv.is_nan() {
                "   - of move-nt".to_string()
            } else {
                format!("{:4.0}% of move-nt", 100.0 * mid(g) / mv)
            };
            println!(
                "RS({},{k}) {len} B  {name:44} {:6.2} GB/s [{:.2}-{:.2}]  {share}",
                k + M,
                mid(g),
                g[0],
                g[g.len() - 1],
            );
        }
        let mut tally: Vec<_> = tally.into_iter().collect();
        tally.sort_by_key(|&(_, calls)| std::cmp::Reverse(calls));
        for ((resident, measured, s), calls) in tally {
            println!(
                "  auto: {calls} calls resident={resident} measured={measured} {:?} nt={} {:?}",
                s.body, s.nt, s.fetch
            );
        }
    }
}
