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
/// Destinations may overlap sources (ISA-L's `gf_vect_mul` is used in place): the sources' bytes
/// are then copied first, so every output is computed from the inputs as they were. Hand-made
/// ISA-L tables are used as given, byte by byte (the split-nibble lookups ISA-L's code does), so
/// that the tail matches what the vector kernels computed before it.
///
/// # Safety
/// Sources readable and destinations writable over `[start, end)`.
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
    let overlaps = |a: *const u8, b: *const u8| {
        let (a, b) = (a as usize + start, b as usize + start);
        a < b + len && b < a + len
    };
    let aliased = dsts
        .iter()
        .any(|&d| srcs.iter().any(|&s| overlaps(s, d as *const u8)));
    let copies: Vec<u8> = if aliased {
        srcs.iter()
            .flat_map(|&s| {
                std::slice::from_raw_parts(s.add(start), len)
                    .iter()
                    .copied()
            })
            .collect()
    } else {
        Vec::new()
    };
    for (p, &d) in dsts.iter().enumerate() {
        let dst = std::slice::from_raw_parts_mut(d.add(start), len);
        if !acc {
            dst.fill(0);
        }
        for (j, &s) in srcs.iter().enumerate() {
            let c = coefs.coef(p, j);
            let src = if aliased {
                &copies[j * len..(j + 1) * len]
            } else {
                std::slice::from_raw_parts(s.add(start), len)
            };
            if !coefs.canonical() {
                let t = coefs.nibble_table(p, j);
                for (x, y) in dst.iter_mut().zip(src) {
                    *x ^= t[(*y & 15) as usize] ^ t[16 + (*y >> 4) as usize];
                }
            } else if c == 1 {
                for (x, y) in dst.iter_mut().zip(src) {
                    *x ^= *y;
                }
            } else if c != 0 {
                let t = &gf::MUL[c as usize];
                for (x, y) in dst.iter_mut().zip(src) {
                    *x ^= t[*y as usize];
                }
            }
        }
    }
}
