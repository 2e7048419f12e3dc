//! The kernels against the scalar reference, on every path through them.

/// Every available kernel's `run_plan`, for every m in 1..=9 (one parity group or several),
/// both bodies, every store and prefetch kind (the fast path and the general loop), with and
/// without accumulating, gives the scalar kernel's bytes.
#[test]
fn run_plan_matches_scalar_for_every_kind() {
    use pmec::kernels::{self, Body, Coefs, Hint, Isa, Plan, Prefetch};
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    };
    let len = 4096;
    for isa in Isa::available_all() {
        for k in [1usize, 3, 8, 13] {
            for m in 1..=9usize {
                let g = pmec::matrix::gen_cauchy1_matrix(k + m, k);
                let rows: Vec<usize> = (k..k + m).collect();
                let coefs = Coefs::new(&g.select_rows(&rows));
                // 64-byte aligned buffers
                let mut src = vec![0u8; k * len + 64];
                let so = src.as_ptr().align_offset(64);
                for b in src.iter_mut() {
                    *b = rnd();
                }
                let srcs: Vec<*const u8> = (0..k).map(|j| src[so + j * len..].as_ptr()).collect();
                let other: Vec<*const u8> = srcs.iter().rev().copied().collect();
                let mut want = vec![0u8; m * len];
                let wd: Vec<*mut u8> = (0..m).map(|p| want[p * len..].as_mut_ptr()).collect();
                // SAFETY: k readable source blocks and m writable blocks of len bytes.
                unsafe {
                    kernels::encode_linear(Isa::Scalar, &srcs, &wd, &coefs, len, false, false)
                };
                for body in [Body::Line, Body::XpLine] {
                    let offs = &kernels::identity_offsets(body)[..len / body.bytes()];
                    for (pf, nt, hint) in [
                        (0, false, Hint::L1),
                        (0, true, Hint::L1),
                        (1, true, Hint::L1),
                        (1, true, Hint::L2),
                        (1, false, Hint::L2),
                    ] {
                        for acc in [false, true] {
                            let mut got = vec![0u8; m * len + 64];
                            let go = got.as_ptr().align_offset(64);
                            let gd: Vec<*mut u8> =
                                (0..m).map(|p| got[go + p * len..].as_mut_ptr()).collect();
                            if acc {
                                // accumulate over a block: expect want ^ pattern
                                for p in 0..m {
                                    for i in 0..len {
                                        got[go + p * len + i] = (i as u8) ^ 0x5a;
                                    }
                                }
                            }
                            let plan = Plan {
                                offs,
                                base: 0,
                                prefetch: if pf == 1 {
                                    Prefetch::Ahead(&other)
                                } else {
                                    Prefetch::None
                                },
                                hint,
                                body,
                            };
                            // SAFETY: as above, destinations 64-byte aligned for nt.
                            unsafe { kernels::run_plan(isa, &srcs, &gd, &coefs, &plan, acc, nt) };
                            kernels::fence();
                            for p in 0..m {
                                for i in 0..len {
                                    let w =
                                        want[p * len + i] ^ if acc { (i as u8) ^ 0x5a } else { 0 };
                                    assert_eq!(
                                        got[go + p * len + i], w,
                                        "{isa:?} k {k} m {m} {body:?} pf {pf} nt {nt} {hint:?} acc {acc} row {p} byte {i}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
