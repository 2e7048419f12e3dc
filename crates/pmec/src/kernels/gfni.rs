//! GFNI kernels: one `vgf2p8affineqb` per coefficient and vector (the 8x8 bit matrix of the
//! constant comes from [`crate::gf::affine_matrix`]), with AVX2 (32 B vectors) or AVX-512
//! (64 B vectors, matrix as a broadcast memory operand).

use super::avx2::store_ymm;
use super::avx512::store_zmm;
use super::{fast_bodies, fast_dispatch, fast_path, group, Body, Coefs, Plan, SourcePrefetch};
use core::arch::x86_64::*;

/// Run a plan with 32-byte GFNI vectors.
///
/// # Safety
/// As [`super::run_plan`]; the CPU must have AVX2 and GFNI.
#[target_feature(enable = "avx2,gfni")]
pub unsafe fn run256(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    acc: bool,
    nt: bool,
) {
    match plan.body {
        Body::Line => run256_r::<2>(srcs, dsts, coefs, plan, acc, nt, 8),
        Body::XpLine => run256_r::<8>(srcs, dsts, coefs, plan, acc, nt, 8),
    }
}

#[target_feature(enable = "avx2,gfni")]
#[allow(clippy::too_many_arguments)]
unsafe fn run256_r<const R: usize>(
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
    let mats = coefs.affine_ptr();
    if let Some((how, ahead)) = fast_path(plan, acc, nt, m, maxp) {
        fast_dispatch!(bodies256, R, m, how, (sp, k, dp, mats, plan, ahead));
        return;
    }
    for (i, &o) in plan.offs.iter().enumerate() {
        // the sources are prefetched once per body, with the first parity group's loads
        let mut spf = SourcePrefetch::begin_body(plan, i, k);
        let o = plan.base + o as usize;
        let mut r0 = 0;
        while r0 < m {
            let p = group(m - r0, maxp);
            let t = mats.add(r0);
            let d = dp.add(r0);
            match p {
                8 => body256::<8, R>(sp, k, m, d, t, o, acc, nt, spf),
                4 => body256::<4, R>(sp, k, m, d, t, o, acc, nt, spf),
                2 => body256::<2, R>(sp, k, m, d, t, o, acc, nt, spf),
                _ => body256::<1, R>(sp, k, m, d, t, o, acc, nt, spf),
            }
            spf = SourcePrefetch::NONE;
            r0 += p;
        }
    }
}

fast_bodies!(
    bodies256,
    "avx2,gfni",
    *const u64,
    |sp, k, dp, mats, o, acc, nt, spf| { body256::<P, R>(sp, k, P, dp, mats, o, acc, nt, spf) }
);

// Not `#[target_feature]` (which cannot be `#[inline(always)]`): only ever inlined into the
// AVX2 + GFNI functions above (see `body512`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn body256<const P: usize, const R: usize>(
    sp: *const *const u8,
    k: usize,
    stride: usize,
    dp: *const *mut u8,
    mats: *const u64,
    o: usize,
    acc_in: bool,
    nt: bool,
    spf: SourcePrefetch,
) {
    // Up to 4 parity rows: two 32-byte columns at a time, each matrix broadcast serving both
    // (2P accumulators, two source vectors and the matrix fit the 16 registers).
    if P <= 4 && R.is_multiple_of(2) {
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
                for p in 0..P {
                    let mtx = _mm256_set1_epi64x(*mats.add(j * stride + p) as i64);
                    acc0[p] =
                        _mm256_xor_si256(acc0[p], _mm256_gf2p8affine_epi64_epi8::<0>(x0, mtx));
                    acc1[p] =
                        _mm256_xor_si256(acc1[p], _mm256_gf2p8affine_epi64_epi8::<0>(x1, mtx));
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
        return;
    }
    // More rows: one 32-byte column at a time (P accumulators plus the source vector fit 16
    // registers).
    for r in 0..R {
        let mut acc = [_mm256_setzero_si256(); P];
        for j in 0..k {
            if r == 0 {
                spf.source(j);
            }
            let x = _mm256_loadu_si256((*sp.add(j)).add(o + 32 * r) as *const __m256i);
            for (p, a) in acc.iter_mut().enumerate() {
                let mtx = _mm256_set1_epi64x(*mats.add(j * stride + p) as i64);
                *a = _mm256_xor_si256(*a, _mm256_gf2p8affine_epi64_epi8::<0>(x, mtx));
            }
        }
        for (p, a) in acc.iter().enumerate() {
            store_ymm((*dp.add(p)).add(o + 32 * r) as *mut __m256i, *a, acc_in, nt);
        }
    }
}

/// Run a plan with 64-byte GFNI vectors.
///
/// # Safety
/// As [`super::run_plan`]; the CPU must have AVX-512F/BW and GFNI.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
pub unsafe fn run512(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    acc: bool,
    nt: bool,
) {
    match plan.body {
        Body::Line => run512_r::<1>(srcs, dsts, coefs, plan, acc, nt, 8),
        Body::XpLine => run512_r::<4>(srcs, dsts, coefs, plan, acc, nt, 4),
    }
}

#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[allow(clippy::too_many_arguments)]
unsafe fn run512_r<const R: usize>(
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
    let mats = coefs.affine_ptr();
    if let Some((how, ahead)) = fast_path(plan, acc, nt, m, maxp) {
        fast_dispatch!(bodies512, R, m, how, (sp, k, dp, mats, plan, ahead));
        return;
    }
    for (i, &o) in plan.offs.iter().enumerate() {
        // the sources are prefetched once per body, with the first parity group's loads
        let mut spf = SourcePrefetch::begin_body(plan, i, k);
        let o = plan.base + o as usize;
        let mut r0 = 0;
        while r0 < m {
            let p = group(m - r0, maxp);
            let t = mats.add(r0);
            let d = dp.add(r0);
            match p {
                8 => body512::<8, R>(sp, k, m, d, t, o, acc, nt, spf),
                4 => body512::<4, R>(sp, k, m, d, t, o, acc, nt, spf),
                2 => body512::<2, R>(sp, k, m, d, t, o, acc, nt, spf),
                _ => body512::<1, R>(sp, k, m, d, t, o, acc, nt, spf),
            }
            spf = SourcePrefetch::NONE;
            r0 += p;
        }
    }
}

fast_bodies!(
    bodies512,
    "avx512f,avx512bw,gfni",
    *const u64,
    |sp, k, dp, mats, o, acc, nt, spf| { body512::<P, R>(sp, k, P, dp, mats, o, acc, nt, spf) }
);

// Not `#[target_feature]` (which cannot be `#[inline(always)]`): only ever inlined into the
// AVX-512 + GFNI functions above, so that each body is part of their loops instead of a call
// with nine arguments (validation §5).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn body512<const P: usize, const R: usize>(
    sp: *const *const u8,
    k: usize,
    stride: usize,
    dp: *const *mut u8,
    mats: *const u64,
    o: usize,
    acc_in: bool,
    nt: bool,
    spf: SourcePrefetch,
) {
    let mut acc = [[_mm512_setzero_si512(); R]; P];
    // `mj` walks the source-major matrices: source j's P rows are `mj[0..P]`.
    let mtx = |mj: *const u64, p: usize| _mm512_set1_epi64(*mj.add(p) as i64);
    // Two sources per step: their products fold into the accumulator with one three-way XOR
    // (`vpternlogq 0x96`) instead of two XORs, a quarter fewer vector operations per column
    // (validation §5).
    let mut j = 0;
    let mut mj = mats;
    while j + 1 < k {
        spf.source(j);
        spf.source(j + 1);
        let s0 = (*sp.add(j)).add(o);
        let s1 = (*sp.add(j + 1)).add(o);
        let mk = mj.add(stride);
        for r in 0..R {
            let x = _mm512_loadu_si512(s0.add(64 * r) as *const _);
            let y = _mm512_loadu_si512(s1.add(64 * r) as *const _);
            for (p, a) in acc.iter_mut().enumerate() {
                let px = _mm512_gf2p8affine_epi64_epi8::<0>(x, mtx(mj, p));
                let py = _mm512_gf2p8affine_epi64_epi8::<0>(y, mtx(mk, p));
                a[r] = _mm512_ternarylogic_epi64::<0x96>(a[r], px, py);
            }
        }
        j += 2;
        mj = mk.add(stride);
    }
    if j < k {
        spf.source(j);
        let s = (*sp.add(j)).add(o);
        for r in 0..R {
            let x = _mm512_loadu_si512(s.add(64 * r) as *const _);
            for (p, a) in acc.iter_mut().enumerate() {
                a[r] = _mm512_xor_si512(a[r], _mm512_gf2p8affine_epi64_epi8::<0>(x, mtx(mj, p)));
            }
        }
    }
    for (p, a) in acc.iter().enumerate() {
        let d = (*dp.add(p)).add(o);
        for (r, v) in a.iter().enumerate() {
            store_zmm(d.add(64 * r), *v, acc_in, nt);
        }
    }
}
