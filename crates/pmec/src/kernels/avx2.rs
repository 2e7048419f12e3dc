//! AVX2 split-nibble kernel: 32 bytes per vector, up to 4 parity rows in registers; bodies
//! (64 B lines or 256 B XPLines) are computed one 32-byte column at a time.

use super::{fast_bodies, fast_dispatch, fast_path, group, Body, Coefs, Plan, SourcePrefetch};
use core::arch::x86_64::*;

/// Run a plan.
///
/// # Safety
/// As [`super::run_plan`]; the CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn run(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    acc: bool,
    nt: bool,
) {
    match plan.body {
        Body::Line => run_r::<2>(srcs, dsts, coefs, plan, acc, nt, 4),
        Body::XpLine => run_r::<8>(srcs, dsts, coefs, plan, acc, nt, 4),
    }
}

#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_r<const R: usize>(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    acc: bool,
    nt: bool,
    maxp: usize,
) {
    let k = srcs.len();
    let m = dsts.len();
    let sp = srcs.as_ptr();
    let dp = dsts.as_ptr();
    let tbl = coefs.nibble_ptr();
    if let Some((how, ahead)) = fast_path(plan, acc, nt, m, maxp) {
        fast_dispatch!(bodies, R, m, how, (sp, k, dp, tbl, plan, ahead));
        return;
    }
    for (i, &o) in plan.offs.iter().enumerate() {
        // the sources are prefetched once per body, with the first parity group's loads
        let mut spf = SourcePrefetch::begin_body(plan, i, k);
        let o = plan.base + o as usize;
        let mut r0 = 0;
        while r0 < m {
            let p = group(m - r0, maxp);
            let t = tbl.add(r0 * k * 32);
            let d = dp.add(r0);
            match p {
                4 => body::<4, R>(sp, k, d, t, o, acc, nt, spf),
                2 => body::<2, R>(sp, k, d, t, o, acc, nt, spf),
                _ => body::<1, R>(sp, k, d, t, o, acc, nt, spf),
            }
            spf = SourcePrefetch::NONE;
            r0 += p;
        }
    }
}

fast_bodies!(
    bodies,
    "avx2",
    *const u8,
    |sp, k, dp, tbl, o, acc, nt, spf| { body::<P, R>(sp, k, dp, tbl, o, acc, nt, spf) }
);

// Not `#[target_feature]` (which cannot be `#[inline(always)]`): only ever inlined into the
// functions above, so that each body is part of their loops (see `gfni::body512`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn body<const P: usize, const R: usize>(
    sp: *const *const u8,
    k: usize,
    dp: *const *mut u8,
    tbl: *const u8,
    o: usize,
    acc_in: bool,
    nt: bool,
    spf: SourcePrefetch,
) {
    // Two 32-byte columns of the body at a time: each table pair loaded serves both, so a
    // 64 B line costs one load of the k x P tables instead of two (2P accumulators, the two
    // columns' nibbles, the table pair and the mask fill the 16 ymm registers at P = 4). Both
    // bodies (64 B, 256 B) have an even number of columns.
    const { assert!(R.is_multiple_of(2)) };
    let mask = _mm256_set1_epi8(0x0f);
    let mut r = 0;
    while r < R {
        let mut acc0 = [_mm256_setzero_si256(); P];
        let mut acc1 = [_mm256_setzero_si256(); P];
        for j in 0..k {
            if r == 0 {
                spf.source(j);
            }
            let s = (*sp.add(j)).add(o + 32 * r);
            let x0 = _mm256_loadu_si256(s as *const __m256i);
            let x1 = _mm256_loadu_si256(s.add(32) as *const __m256i);
            let lo0 = _mm256_and_si256(x0, mask);
            let hi0 = _mm256_and_si256(_mm256_srli_epi16(x0, 4), mask);
            let lo1 = _mm256_and_si256(x1, mask);
            let hi1 = _mm256_and_si256(_mm256_srli_epi16(x1, 4), mask);
            for p in 0..P {
                let t = tbl.add((p * k + j) * 32);
                let tlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(t as *const __m128i));
                let thi = _mm256_broadcastsi128_si256(_mm_loadu_si128(t.add(16) as *const __m128i));
                acc0[p] = _mm256_xor_si256(
                    acc0[p],
                    _mm256_xor_si256(_mm256_shuffle_epi8(tlo, lo0), _mm256_shuffle_epi8(thi, hi0)),
                );
                acc1[p] = _mm256_xor_si256(
                    acc1[p],
                    _mm256_xor_si256(_mm256_shuffle_epi8(tlo, lo1), _mm256_shuffle_epi8(thi, hi1)),
                );
            }
        }
        for p in 0..P {
            let q = (*dp.add(p)).add(o + 32 * r) as *mut __m256i;
            for (c, a) in [acc0[p], acc1[p]].into_iter().enumerate() {
                store_ymm(q.add(c), a, acc_in, nt);
            }
        }
        r += 2;
    }
}

/// Stores parity vector `v` at `q`: XORed into what `q` holds first when `acc_in`, with a
/// non-temporal store when `nt`.
///
/// # Safety
/// AVX2; `q` valid for reading and writing 32 bytes (32-byte aligned when `nt`).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn store_ymm(q: *mut __m256i, v: __m256i, acc_in: bool, nt: bool) {
    let v = if acc_in {
        _mm256_xor_si256(v, _mm256_loadu_si256(q))
    } else {
        v
    };
    if nt {
        _mm256_stream_si256(q, v);
    } else {
        _mm256_storeu_si256(q, v);
    }
}
