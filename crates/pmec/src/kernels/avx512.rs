//! AVX-512BW split-nibble kernel: 64 bytes per vector; up to 8 parity rows per line body,
//! 4 per XPLine (256 B) body.

use super::{fast_bodies, fast_dispatch, fast_path, group, Body, Coefs, Plan, SourcePrefetch};
use core::arch::x86_64::*;

/// Run a plan.
///
/// # Safety
/// As [`super::run_plan`]; the CPU must have AVX-512F and AVX-512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn run(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    acc: bool,
    nt: bool,
) {
    match plan.body {
        Body::Line => run_r::<1>(srcs, dsts, coefs, plan, acc, nt, 8),
        Body::XpLine => run_r::<4>(srcs, dsts, coefs, plan, acc, nt, 4),
    }
}

#[target_feature(enable = "avx512f,avx512bw")]
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
                8 => body::<8, R>(sp, k, d, t, o, acc, nt, spf),
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
    "avx512f,avx512bw",
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
    let mask = _mm512_set1_epi8(0x0f);
    let mut acc = [[_mm512_setzero_si512(); R]; P];
    for j in 0..k {
        spf.source(j);
        let s = (*sp.add(j)).add(o);
        for r in 0..R {
            let x = _mm512_loadu_si512(s.add(64 * r) as *const _);
            let lo = _mm512_and_si512(x, mask);
            let hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), mask);
            for (p, a) in acc.iter_mut().enumerate() {
                let t = tbl.add((p * k + j) * 32);
                let tlo = _mm512_broadcast_i32x4(_mm_loadu_si128(t as *const __m128i));
                let thi = _mm512_broadcast_i32x4(_mm_loadu_si128(t.add(16) as *const __m128i));
                let v =
                    _mm512_xor_si512(_mm512_shuffle_epi8(tlo, lo), _mm512_shuffle_epi8(thi, hi));
                a[r] = _mm512_xor_si512(a[r], v);
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

/// Stores parity vector `v` at `q`: XORed into what `q` holds first when `acc_in`, with a
/// non-temporal store when `nt`.
///
/// # Safety
/// AVX-512F; `q` valid for reading and writing 64 bytes (64-byte aligned when `nt`).
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn store_zmm(q: *mut u8, v: __m512i, acc_in: bool, nt: bool) {
    let v = if acc_in {
        _mm512_xor_si512(v, _mm512_loadu_si512(q as *const _))
    } else {
        v
    };
    if nt {
        _mm512_stream_si512(q as *mut _, v);
    } else {
        _mm512_storeu_si512(q as *mut _, v);
    }
}
