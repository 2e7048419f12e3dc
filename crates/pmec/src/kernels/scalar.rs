//! Portable kernel: one 256-entry multiplication-table row per coefficient.

use super::{Coefs, Plan, SourcePrefetch};
use crate::gf;

/// Run a plan with table lookups.
///
/// # Safety
/// As [`super::run_plan`].
pub unsafe fn run(srcs: &[*const u8], dsts: &[*mut u8], coefs: &Coefs, plan: &Plan, acc: bool) {
    let bytes = plan.body.bytes();
    let k = srcs.len();
    for (i, &o) in plan.offs.iter().enumerate() {
        let spf = SourcePrefetch::begin_body(plan, i, k);
        for j in 0..k {
            spf.source(j);
        }
        let start = plan.base + o as usize;
        range(srcs, dsts, coefs, start, start + bytes, acc);
    }
}

/// Compute bytes `[start, end)` of every destination.
///
/// # Safety
/// Sources readable and destinations writable over `[start, end)`, no overlap between them.
pub unsafe fn range(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    start: usize,
    end: usize,
    acc: bool,
) {
    if end <= start {
        return;
    }
    let len = end - start;
    for (p, &d) in dsts.iter().enumerate() {
        let dst = std::slice::from_raw_parts_mut(d.add(start), len);
        if !acc {
            dst.fill(0);
        }
        for (j, &s) in srcs.iter().enumerate() {
            let c = coefs.coef(p, j);
            if c == 0 {
                continue;
            }
            let src = std::slice::from_raw_parts(s.add(start), len);
            if c == 1 {
                for (x, y) in dst.iter_mut().zip(src) {
                    *x ^= *y;
                }
            } else {
                let t = &gf::MUL[c as usize];
                for (x, y) in dst.iter_mut().zip(src) {
                    *x ^= t[*y as usize];
                }
            }
        }
    }
}
