//! pmec against the system's ISA-L (loaded with dlopen): matrices, field arithmetic, matrix
//! inversion, and parity byte-identical for randomised k, m, lengths, alignments, kernels and
//! scheduling strategies. Skips with a notice if libisal.so.2 is absent (fails instead under
//! `PMEC_REQUIRE_ISAL=1`, as in `make test`).

mod common;
use common::{Blocks, Rng};
use pmec::dialga::coordinator::LONE_SCHEDULES;
use pmec::dialga::prefetch::Fetch;
use pmec::dialga::Strategy;
use pmec::isal_dl::IsaL;
use pmec::kernels::{Body, Hint};
use pmec::{gf, matrix, Codec, Isa, MatrixKind, Schedule};

fn isal() -> Option<&'static IsaL> {
    common::system_isal()
}

#[test]
fn matrices_identical() {
    let Some(l) = isal() else { return };
    for k in 1..=40 {
        for m in 0..=12 {
            let n = k + m;
            assert_eq!(
                matrix::gen_rs_matrix(n, k).as_bytes(),
                &l.gen_rs_matrix(n, k)[..],
                "rs {n},{k}"
            );
            assert_eq!(
                matrix::gen_cauchy1_matrix(n, k).as_bytes(),
                &l.gen_cauchy1_matrix(n, k)[..],
                "cauchy {n},{k}"
            );
        }
    }
    for (n, k) in [(255, 200), (255, 1), (255, 254), (128, 100)] {
        assert_eq!(
            matrix::gen_cauchy1_matrix(n, k).as_bytes(),
            &l.gen_cauchy1_matrix(n, k)[..]
        );
        assert_eq!(
            matrix::gen_rs_matrix(n, k).as_bytes(),
            &l.gen_rs_matrix(n, k)[..]
        );
    }
}

#[test]
fn field_and_tables_identical() {
    let Some(l) = isal() else { return };
    for a in 0..=255u8 {
        assert_eq!(gf::inv(a), l.gf_inv(a), "inv {a}");
        assert_eq!(gf::nibble_table(a), l.vect_mul_init(a), "table {a}");
        for b in 0..=255u8 {
            assert_eq!(gf::mul(a, b), l.gf_mul(a, b));
        }
    }
    let a = matrix::gen_cauchy1_matrix(20, 12);
    let prow: Vec<usize> = (12..20).collect();
    let sub = a.select_rows(&prow);
    let ours = pmec::isal_abi::init_tables(12, 8, sub.as_bytes());
    assert_eq!(ours, l.init_tables(12, 8, sub.as_bytes()));
}

#[test]
fn inversion_identical_including_destroyed_input() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(7);
    let mut singular = 0;
    for _ in 0..400 {
        let n = rng.range(1, 12);
        let mut m: Vec<u8> = rng.bytes(n * n);
        // make some matrices singular or sparse
        if rng.below(4) == 0 {
            for v in m.iter_mut() {
                if rng.below(3) != 0 {
                    *v = 0;
                }
            }
        }
        let theirs = l.invert_matrix(&m, n);
        let mut input = m.clone();
        let mut out = vec![0u8; n * n];
        let ok = matrix::invert_in_place(&mut input, &mut out, n);
        assert_eq!(ok, theirs.is_some(), "singularity of {m:?}");
        if let Some((inv, destroyed)) = theirs {
            assert_eq!(out, inv);
            assert_eq!(input, destroyed);
        } else {
            singular += 1;
        }
    }
    assert!(singular > 0, "test should exercise singular matrices");
}

fn isal_parity(l: &IsaL, gen: &pmec::Matrix, k: usize, data: &[&[u8]]) -> Vec<Vec<u8>> {
    let n = gen.rows();
    let prow: Vec<usize> = (k..n).collect();
    let tbl = l.init_tables(k, n - k, gen.select_rows(&prow).as_bytes());
    let len = data[0].len();
    let mut out = vec![vec![0u8; len]; n - k];
    let mut o: Vec<&mut [u8]> = out.iter_mut().map(|v| v.as_mut_slice()).collect();
    l.encode_data(k, &tbl, data, &mut o);
    out
}

#[test]
fn parity_identical_randomised() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(42);
    let isas = Isa::available_all();
    let strategies = [
        Strategy::Auto,
        Strategy::Vanilla,
        Strategy::SoftwarePrefetch,
        Strategy::BufferFriendly,
        Strategy::NoHwPrefetch,
        Strategy::HighPressure,
        Strategy::StripeAhead,
    ];
    for case in 0..240 {
        let k = if case % 20 == 0 {
            rng.range(33, 120)
        } else {
            rng.range(1, 24)
        };
        let m = rng.range(1, 12.min(255 - k));
        let len = match case % 4 {
            0 => rng.range(1, 200),
            1 => 64 * rng.range(1, 40),
            2 => rng.range(1, 5000),
            _ => 256 * rng.range(1, 20) + rng.range(0, 63),
        };
        let align = rng.below(64);
        let kind = if matrix::vandermonde_is_mds(k, m) && case % 2 == 0 {
            MatrixKind::Vandermonde
        } else {
            MatrixKind::Cauchy
        };
        let isa = isas[case % isas.len()];
        let strategy = strategies[case % strategies.len()];
        let codec = Codec::builder(k, m)
            .matrix(kind)
            .isa(isa)
            .strategy(strategy)
            .build()
            .unwrap();
        let data = Blocks::new(k, len, align, &mut rng);
        let expect = isal_parity(l, codec.generator(), k, &data.slices());
        let mut par = Blocks::new(m, len, rng.below(64), &mut rng);
        codec.encode(&data.slices(), &mut par.slices_mut()).unwrap();
        assert_eq!(
            par.to_vecs(),
            expect,
            "k={k} m={m} len={len} align={align} isa={isa:?} strategy={strategy:?} {kind:?}"
        );
    }
}

/// Encodes `stripes` random stripes of `len`-byte blocks (data at `align`) in one batch and
/// checks each stripe's parity against ISA-L's.
fn batch_matches_isal(
    l: &IsaL,
    codec: &Codec,
    stripes: usize,
    len: usize,
    align: usize,
    rng: &mut Rng,
    ctx: &str,
) {
    let (k, m) = (codec.data_shards(), codec.parity_shards());
    let data = Blocks::new(k * stripes, len, align, rng);
    let mut par = Blocks::new(m * stripes, len, 0, rng);
    codec
        .encode_batch(&data.slices(), &mut par.slices_mut())
        .unwrap();
    let got = par.to_vecs();
    let ds = data.slices();
    for s in 0..stripes {
        let expect = isal_parity(l, codec.generator(), k, &ds[s * k..(s + 1) * k]);
        assert_eq!(&got[s * m..(s + 1) * m], &expect[..], "{ctx} stripe {s}");
    }
}

#[test]
fn batch_parity_identical_for_every_strategy_and_isa() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(9);
    let (k, m, len, stripes) = (8, 4, 1024 + 64 + 5, 7);
    for isa in Isa::available_all() {
        let lone = LONE_SCHEDULES.map(Strategy::Fixed);
        for strategy in lone.into_iter().chain([
            Strategy::SoftwarePrefetch,
            Strategy::BufferFriendly,
            Strategy::NoHwPrefetch,
            Strategy::HighPressure,
            Strategy::StripeAhead,
            // stripe-ahead with a shuffled order, 256 B bodies, L1 hint and the last three
            // stripes with nothing left to prefetch
            Strategy::Fixed(Schedule {
                ahead: 3,
                hint: Hint::L1,
                shuffle: true,
                body: Body::XpLine,
                nt: true,
                ..Schedule::VANILLA
            }),
        ]) {
            let codec = Codec::builder(k, m)
                .isa(isa)
                .strategy(strategy)
                .build()
                .unwrap();
            let ctx = format!("{isa:?} {strategy:?}");
            batch_matches_isal(l, &codec, stripes, len, 3, &mut rng, &ctx);
        }
    }
}

/// A codec fixed to `sched` encodes one stripe (the ISA-L entry points' case) and a batch of
/// three as ISA-L does.
fn fixed_schedule_matches_isal(
    l: &IsaL,
    isa: Isa,
    k: usize,
    m: usize,
    len: usize,
    sched: Schedule,
    rng: &mut Rng,
) {
    let codec = Codec::builder(k, m)
        .isa(isa)
        .strategy(Strategy::Fixed(sched))
        .build()
        .unwrap();
    for stripes in [1, 3] {
        let ctx = format!("{isa:?} k={k} m={m} len={len} {sched:?} {stripes} stripes");
        batch_matches_isal(l, &codec, stripes, len, 0, rng, &ctx);
    }
}

#[test]
fn pipelined_fetch_parity_identical_at_every_distance_and_body() {
    // a stripe's own pipelined prefetch (Fetch::Pipelined): distances shorter than, equal to
    // and longer than the block, both bodies, levels and head orders, whole-body and ragged lengths, one
    // stripe (the ISA-L entry points' case) and batches
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(17);
    for isa in Isa::available_all() {
        for (k, m) in [(1, 1), (8, 4), (24, 4), (3, 2), (5, 8)] {
            for len in [64, 192, 256, 1024, 1024 + 64 + 5, 4096] {
                for ahead in [64, 256, 512, 1024, 8192] {
                    for (body, hint, nt) in [
                        (Body::XpLine, Hint::L1, true),
                        (Body::Line, Hint::L1, true),
                        (Body::Line, Hint::L2, true),
                        (Body::XpLine, Hint::L2, false),
                    ] {
                        let sched = Schedule {
                            body,
                            nt,
                            // the head in row order from 512 bytes on, source by source
                            // below
                            fetch: Fetch::Pipelined {
                                hint,
                                ahead,
                                rows: ahead >= 512,
                            },
                            ..Schedule::VANILLA
                        };
                        fixed_schedule_matches_isal(l, isa, k, m, len, sched, &mut rng);
                    }
                }
            }
        }
    }
}

#[test]
fn source_major_parity_identical_for_every_group_and_distance() {
    // Fetch::BySource: pairs with the GFNI loop (4 rows and others), other group sizes and
    // kernels through the group calls, odd source counts (a last group of one), prefetch
    // distances past the end, and the calls it cannot serve (ragged lengths, parity beyond the
    // scratch, k <= group), which run in address order
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(23);
    for isa in Isa::available_all() {
        for (k, m) in [(1, 1), (3, 2), (8, 4), (9, 4), (24, 4), (5, 8), (12, 3)] {
            for len in [64, 1024, 1024 + 64 + 5, 4096, 16384] {
                for (group, ahead, nt) in [(2, 2, true), (2, 0, false), (1, 5, true), (3, 1, true)]
                {
                    let sched = Schedule {
                        body: Body::Line,
                        nt,
                        fetch: Fetch::BySource { group, ahead },
                        ..Schedule::VANILLA
                    };
                    fixed_schedule_matches_isal(l, isa, k, m, len, sched, &mut rng);
                }
            }
        }
    }
}

#[test]
fn incremental_update_identical() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(5);
    for case in 0..30 {
        let k = rng.range(1, 20);
        let m = rng.range(1, 8);
        let len = if case % 2 == 0 {
            rng.range(1, 3000)
        } else {
            64 * rng.range(1, 30)
        };
        let codec = Codec::new(k, m).unwrap();
        let prow: Vec<usize> = (k..k + m).collect();
        let tbl = l.init_tables(k, m, codec.generator().select_rows(&prow).as_bytes());
        let mut ours = vec![vec![0u8; len]; m];
        let mut theirs = vec![vec![0u8; len]; m];
        for i in 0..k {
            let d = rng.bytes(len);
            let mut o: Vec<&mut [u8]> = ours.iter_mut().map(|v| v.as_mut_slice()).collect();
            codec.encode_incremental(i, &d, &mut o).unwrap();
            let mut t: Vec<&mut [u8]> = theirs.iter_mut().map(|v| v.as_mut_slice()).collect();
            l.encode_data_update(k, i, &tbl, &d, &mut t);
        }
        assert_eq!(ours, theirs, "k={k} m={m} len={len}");
    }
}

#[test]
fn isal_abi_functions_identical() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(11);
    for _ in 0..20 {
        let len = 32 * rng.range(1, 64);
        let c = rng.next() as u8;
        let tbl = l.vect_mul_init(c);
        let src = rng.bytes(len);
        let mut a = vec![0u8; len];
        let mut b = vec![0u8; len];
        assert_eq!(l.vect_mul(&tbl, &src, &mut a), 0);
        assert_eq!(pmec::isal_abi::vect_mul(&tbl, &src, &mut b), 0);
        assert_eq!(a, b);
        // ISA-L's vector dot-product/mad kernels need len >= 64 (shorter writes nothing)
        let len = 64 * rng.range(1, 32) + 32 * rng.below(2);
        let mut a = vec![0u8; len];
        let mut b = vec![0u8; len];
        let vlen = rng.range(1, 10);
        let coefs = rng.bytes(vlen);
        let tables = l.init_tables(vlen, 1, &coefs);
        let srcs: Vec<Vec<u8>> = (0..vlen).map(|_| rng.bytes(len)).collect();
        let s: Vec<&[u8]> = srcs.iter().map(|v| v.as_slice()).collect();
        l.vect_dot_prod(&tables, &s, &mut a);
        pmec::isal_abi::vect_dot_prod(&tables, &s, &mut b);
        assert_eq!(a, b);
        let vi = rng.below(vlen);
        l.vect_mad(vlen, vi, &tables, &srcs[0], &mut a);
        pmec::isal_abi::vect_mad(vlen, vi, &tables, &srcs[0], &mut b);
        assert_eq!(a, b);
    }
}

#[test]
fn hand_made_tables_give_the_same_tail_as_isal() {
    // ISA-L uses a caller's 32-byte tables as they are, whatever they hold. pmec's vector kernels
    // do so for tables ec_init_tables did not build; the bytes after the last whole 64-byte
    // block (len not a multiple of 64) must follow the same tables (they took the coefficient
    // from byte 1 of each table instead).
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(23);
    for len in [65usize, 100, 127, 4095] {
        for k in [1usize, 3, 8] {
            let rows = 2;
            let coefs = rng.bytes(k * rows);
            let mut tables = l.init_tables(k, rows, &coefs);
            for t in tables.chunks_exact_mut(32) {
                t[16 + rng.range(1, 15)] ^= rng.range(1, 255) as u8; // a high-nibble entry
            }
            let srcs: Vec<Vec<u8>> = (0..k).map(|_| rng.bytes(len)).collect();
            let s: Vec<&[u8]> = srcs.iter().map(|v| v.as_slice()).collect();
            let mut a = vec![vec![0u8; len]; rows];
            {
                let mut ar: Vec<&mut [u8]> = a.iter_mut().map(|v| v.as_mut_slice()).collect();
                l.encode_data(k, &tables, &s, &mut ar);
            }
            let b = common::isal_encode(&tables, k, rows, &srcs, len);
            assert_eq!(a, b, "len {len}, k {k}");
        }
    }
}

/// `ec_encode_data` in place (the first parity block is the first data block, as ISA-L allows),
/// over enough calls that the coordinator probes cache residency on some of them: each call's
/// parity as ISA-L's from the same data (the probe once zeroed a byte of every destination
/// line before the sources were read).
#[test]
fn encode_in_place_as_isal() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(31);
    for (k, m, len) in [(1usize, 1usize, 1024usize), (8, 4, 1024), (4, 2, 4096)] {
        let gen = matrix::gen_cauchy1_matrix(k + m, k);
        let prow: Vec<usize> = (k..k + m).collect();
        let mut tbl = vec![0u8; 32 * k * m];
        // SAFETY: an m x k coefficient matrix, a 32 * k * m table.
        unsafe {
            pmec::isal_abi::ec_init_tables(
                k as i32,
                m as i32,
                gen.select_rows(&prow).as_bytes().as_ptr(),
                tbl.as_mut_ptr(),
            )
        };
        for call in 0..40 {
            let data = Blocks::new(k, len, 0, &mut rng);
            let expect = isal_parity(l, &gen, k, &data.slices());
            let mut bufs: Vec<Vec<u8>> = data.to_vecs();
            bufs.extend((1..m).map(|_| vec![0u8; len]));
            let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
            let srcs: Vec<*const u8> = ptrs[..k].iter().map(|&p| p as *const u8).collect();
            let mut dsts = vec![ptrs[0]];
            dsts.extend_from_slice(&ptrs[k..]);
            // SAFETY: k sources and m destinations of len bytes; destination 0 is source 0.
            unsafe {
                pmec::isal_abi::ec_encode_data(
                    len as i32,
                    k as i32,
                    m as i32,
                    tbl.as_ptr(),
                    srcs.as_ptr(),
                    dsts.as_ptr(),
                )
            };
            let got: Vec<Vec<u8>> = std::iter::once(bufs[0].clone())
                .chain(bufs[k..].iter().cloned())
                .collect();
            assert_eq!(got, expect, "k={k} m={m} len={len} call {call}");
        }
    }
}

#[test]
fn multiply_in_place_and_degenerate_calls_as_isal() {
    let Some(l) = isal() else { return };
    let mut rng = Rng::new(29);
    // gf_vect_mul with dest == src (ISA-L allows it), lengths whose last 32 bytes are a tail
    for len in [32usize, 96, 160, 4064] {
        let c = rng.range(2, 255) as u8;
        let tbl = l.vect_mul_init(c);
        let src = rng.bytes(len);
        let mut want = vec![0u8; len];
        assert_eq!(l.vect_mul(&tbl, &src, &mut want), 0);
        let mut buf = src.clone();
        let p = buf.as_mut_ptr();
        // SAFETY: a len-byte buffer used as source and destination, a 32-byte table.
        assert_eq!(
            unsafe { pmec::isal_abi::gf_vect_mul(len as i32, tbl.as_ptr(), p, p) },
            0
        );
        assert_eq!(buf, want, "in place, len {len}");
    }
    // A length that is not a multiple of 32: nothing written, 1 returned (ISA-L 2.32.1's x86
    // kernels; the shim returned -1, as only ISA-L's C fallback does).
    for len in [0usize, 31, 33] {
        let tbl = l.vect_mul_init(7);
        let src = vec![1u8; len.max(1)];
        let mut dst = vec![0xeeu8; len.max(1)];
        // SAFETY: buffers of at least len bytes, a 32-byte table.
        let rc = unsafe {
            pmec::isal_abi::gf_vect_mul(len as i32, tbl.as_ptr(), src.as_ptr(), dst.as_mut_ptr())
        };
        assert_eq!(rc, 1, "len {len}");
        assert!(dst.iter().all(|&b| b == 0xee), "len {len}: written");
    }
    // ec_encode_data without sources: parity is the empty sum; gf_invert_matrix of 0 x 0
    let mut parity = vec![0xa5u8; 40];
    let cp = [parity.as_mut_ptr()];
    let dp: [*const u8; 0] = [];
    // SAFETY: no sources are read; one 40-byte output.
    unsafe {
        pmec::isal_abi::ec_encode_data(40, 0, 1, [0u8; 32].as_ptr(), dp.as_ptr(), cp.as_ptr())
    };
    assert_eq!(parity, vec![0u8; 40]);
    let (mut i, mut o) = ([0u8; 1], [0u8; 1]);
    // SAFETY: n = 0 touches nothing.
    assert_eq!(
        unsafe { pmec::isal_abi::gf_invert_matrix(i.as_mut_ptr(), o.as_mut_ptr(), 0) },
        0
    );
}

/// `gf_vect_mad` takes the table at `gftbls + 32 * vec_i` whatever `vec` says, as ISA-L does
/// (its single-destination versions never read `vec`): `vec` 0, negative, or not above
/// `vec_i` (a caller passing one source's table, or a count of 0) updates `dest` as ISA-L does.
/// The shim returned without writing for those.
#[test]
fn vect_mad_ignores_vec_as_isal() {
    if isal().is_none() {
        return;
    }
    type MadFn = unsafe extern "C" fn(i32, i32, i32, *mut u8, *mut u8, *mut u8);
    // SAFETY: a NUL-terminated name; isal() loaded the same library, so it is present.
    let h = unsafe { libc::dlopen(c"libisal.so.2".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!h.is_null());
    // SAFETY: a live handle and a NUL-terminated name; ISA-L's gf_vect_mad has this signature.
    let mad: MadFn = unsafe {
        let p = libc::dlsym(h, c"gf_vect_mad".as_ptr());
        assert!(!p.is_null());
        std::mem::transmute::<*mut libc::c_void, MadFn>(p)
    };
    let mut rng = Rng::new(41);
    let coefs = rng.bytes(4);
    let tables = pmec::isal_abi::init_tables(4, 1, &coefs);
    for (vec, vec_i) in [(0, 0), (1, 2), (-1, 0), (2, 3), (4, 1)] {
        for len in [64usize, 100, 4096] {
            let src = rng.bytes(len);
            let start = rng.bytes(len);
            let mut want = start.clone();
            let mut got = start.clone();
            // SAFETY: tables of 4 * 32 bytes cover vec_i <= 3; src and dest have len bytes.
            unsafe {
                mad(
                    len as i32,
                    vec,
                    vec_i,
                    tables.as_ptr() as *mut u8,
                    src.as_ptr() as *mut u8,
                    want.as_mut_ptr(),
                );
                pmec::isal_abi::gf_vect_mad(
                    len as i32,
                    vec,
                    vec_i,
                    tables.as_ptr(),
                    src.as_ptr(),
                    got.as_mut_ptr(),
                );
            }
            assert_ne!(
                want, start,
                "ISA-L wrote (vec {vec}, vec_i {vec_i}, len {len})"
            );
            assert_eq!(got, want, "vec {vec}, vec_i {vec_i}, len {len}");
        }
    }
}
