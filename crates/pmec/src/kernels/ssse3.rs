//! SSSE3 split-nibble kernel: 16 bytes per vector, up to 4 parity rows per pass.
//! XPLine plans run as four line bodies (16 xmm registers are too few for a 256 B body).

use super::{group, Coefs, Plan, SourcePrefetch};
use core::arch::x86_64::*;

const MAXP: usize = 4;

/// Run a plan.
///
/// # Safety
/// As [`super::run_plan`]; the CPU must have SSSE3.
#[target_feature(enable = "ssse3")]
pub unsafe fn run(srcs: &[*const u8], dsts: &[*mut u8], coefs: &Coefs, plan: &Plan, acc: bool) {
    let k = srcs.len();
    let m = dsts.len();
    let sp = srcs.as_ptr();
    let dp = dsts.as_ptr();
    let tbl = coefs.nibble_ptr();
    let lines = plan.body.lines();
    for (i, &o) in plan.offs.iter().enumerate() {
        // the sources are prefetched once per body, with the first line's first parity group
        let mut spf = SourcePrefetch::begin_body(plan, i, k);
        for l in 0..lines {
            let o = plan.base + o as usize + l * 64;
            let mut r0 = 0;
            while r0 < m {
                let p = group(m - r0, MAXP);
                let t = tbl.add(r0 * k * 32);
                match p {
                    4 => body::<4>(sp, k, dp.add(r0), t, o, acc, spf),
                    2 => body::<2>(sp, k, dp.add(r0), t, o, acc, spf),
                    _ => body::<1>(sp, k, dp.add(r0), t, o, acc, spf),
                }
                spf = SourcePrefetch::NONE;
                r0 += p;
            }
        }
    }
}

#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn body<const P: usize>(
    sp: *const *const u8,
    k: usize,
    dp: *const *mut u8,
    tbl: *const u8,
    o: usize,
    acc_in: bool,
    spf: SourcePrefetch,
) {
    let mask = _mm_set1_epi8(0x0f);
    // one 16-byte column of the line at a time: P accumulators + tables fit 16 xmm registers
    for r in 0..4 {
        let mut acc = [_mm_setzero_si128(); P];
        for j in 0..k {
            if r == 0 {
                spf.source(j);
            }
            let x = _mm_loadu_si128((*sp.add(j)).add(o + 16 * r) as *const __m128i);
            let lo = _mm_and_si128(x, mask);
            let hi = _mm_and_si128(_mm_srli_epi16(x, 4), mask);
            for (p, a) in acc.iter_mut().enumerate() {
                let t = tbl.add((p * k + j) * 32);
                let tlo = _mm_loadu_si128(t as *const __m128i);
                let thi = _mm_loadu_si128(t.add(16) as *const __m128i);
                let v = _mm_xor_si128(_mm_shuffle_epi8(tlo, lo), _mm_shuffle_epi8(thi, hi));
                *a = _mm_xor_si128(*a, v);
            }
        }
        for (p, a) in acc.iter().enumerate() {
            let q = (*dp.add(p)).add(o + 16 * r) as *mut __m128i;
            let mut v = *a;
            if acc_in {
                v = _mm_xor_si128(v, _mm_loadu_si128(q));
            }
            _mm_storeu_si128(q, v);
        }
    }
}
