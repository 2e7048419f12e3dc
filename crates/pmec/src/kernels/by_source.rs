//! Source-major encoding of a lone stripe ([`Fetch::BySource`]): the sources are read in
//! address order, a few at a time, each group multiplied into the parity held in a per-thread
//! scratch buffer that stays in L1, and the parity stored once at the end.
//!
//! The address-order kernel reads row `r` of every source before row `r + 1`: for a stripe of
//! short blocks (1 KiB: 16 lines per source) that is `k` streams too short for the hardware
//! prefetcher to train on, and the kernel's arithmetic fills the out-of-order window between
//! the loads, so fewer misses are in flight than a loop that only moves the bytes keeps
//! (validation §5). Read source by source, a contiguous stripe is one ascending stream, and each
//! group's kernel prefetches the same line of the group `ahead` groups later, so the fetch runs
//! a fixed distance ahead of the loads across the whole stripe. The price is the scratch
//! traffic (each group reads and writes the `m x len` parity in L1) and, for the kernels other
//! than the AVX-512 + GFNI pairs loop, which stores its last pair's sums directly, one copy
//! out.
//!
//! [`Fetch::BySource`]: crate::dialga::prefetch::Fetch::BySource

use super::{identity_offsets, prefetch_line, run_plan, Body, Coefs, Hint, Isa, Plan, Prefetch};
use std::cell::RefCell;

/// Largest parity (`m x len` bytes) kept in the scratch buffer: beyond it the scratch would
/// not stay in L1 beside the sources' lines, and a source-major call falls back.
pub const SCRATCH_MAX: usize = 32 << 10;

/// Most sources a group may have (the prefetch pointers of a short last group are padded on
/// the stack).
pub const MAX_GROUP: usize = 8;

/// One 64-byte line of scratch (aligned, so that the kernel's loads and stores never split a
/// line).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

thread_local! {
    /// This thread's parity scratch (grown on demand up to [`SCRATCH_MAX`]).
    static SCRATCH: RefCell<Vec<Line>> = const { RefCell::new(Vec::new()) };
}

/// Whether [`encode`] can serve a call of `k` sources, `m` parity rows of `len` bytes in
/// bodies of `body` and groups of `group` sources (otherwise the caller encodes in address
/// order).
pub fn applies(k: usize, m: usize, len: usize, body: Body, group: usize) -> bool {
    (1..=MAX_GROUP).contains(&group)
        && k > group
        && m > 0
        && len > 0
        && len.is_multiple_of(body.bytes())
        && len / body.bytes() <= super::IDENT_BODIES
        && m * len <= SCRATCH_MAX
}

/// Software-prefetches into L1 what a source-major call reads first: every line of the first
/// `ahead` groups of `group` sources (the groups after them are prefetched by the kernel).
pub fn prefetch_head(srcs: &[*const u8], len: usize, group: usize, ahead: usize) {
    for &s in &srcs[..(group * ahead).min(srcs.len())] {
        for o in (0..len).step_by(64) {
            prefetch_line(s.wrapping_add(o), Hint::L1);
        }
    }
}

/// Encodes `dsts = coefs x srcs` source-major, `group` sources per kernel call, each call
/// prefetching the same bodies of the group `ahead` groups later; the parity is accumulated in
/// this thread's scratch and then stored to `dsts` (non-temporal where `nt` and the
/// destinations are 64-byte aligned). Returns false, having written nothing, where it cannot
/// serve the call ([`applies`] false, no column groups or scratch memory to be had, or the
/// scratch in use by an interrupted call of this thread); the caller then encodes in address
/// order. The caller has issued [`prefetch_head`].
///
/// # Safety
/// As [`super::encode_linear`]; `isa` available on this CPU.
#[allow(clippy::too_many_arguments)]
pub unsafe fn encode(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    nt: bool,
    body: Body,
    group: usize,
    ahead: usize,
) -> bool {
    let (k, m) = (srcs.len(), dsts.len());
    if !applies(k, m, len, body, group) {
        return false;
    }
    let nt = super::nt_usable(nt, dsts);
    // the GFNI pairs loop reads the source-major matrices directly; the others call the
    // kernel per group with that group's coefficients
    let groups = if isa == Isa::Avx512Gfni && group == 2 {
        None
    } else {
        let Some(g) = coefs.column_groups(group) else {
            return false;
        };
        Some(g)
    };
    let lines = m * len / 64;
    SCRATCH
        .try_with(|cell| {
            let Ok(mut scratch) = cell.try_borrow_mut() else {
                return false;
            };
            if scratch.len() < lines {
                let more = lines - scratch.len();
                if scratch.try_reserve_exact(more).is_err() {
                    return false;
                }
                scratch.resize(lines, Line([0; 64]));
            }
            let base = scratch.as_mut_ptr().cast::<u8>();
            let Some(groups) = groups else {
                pairs_gfni512(srcs, dsts, coefs.affine_ptr(), base, len, ahead, nt);
                return true;
            };
            let mut rows = [core::ptr::null_mut::<u8>(); 256];
            if m > rows.len() {
                return false;
            }
            for (p, r) in rows.iter_mut().enumerate().take(m) {
                *r = base.add(p * len);
            }
            let rows = &rows[..m];
            let offs = &identity_offsets(body)[..len / body.bytes()];
            for (gi, cg) in groups.iter().enumerate() {
                let j0 = gi * group;
                let here = &srcs[j0..j0 + cg.cols()];
                // the same bodies of the group `ahead` groups on (a short last group's pointers
                // padded with its last source)
                let a0 = j0 + ahead * group;
                let mut later = [core::ptr::null::<u8>(); MAX_GROUP];
                let prefetch = if a0 < k {
                    for (i, l) in later.iter_mut().enumerate().take(here.len()) {
                        *l = srcs[(a0 + i).min(k - 1)];
                    }
                    Prefetch::Ahead(&later[..here.len()])
                } else {
                    Prefetch::None
                };
                let plan = Plan {
                    offs,
                    base: 0,
                    prefetch,
                    hint: Hint::L1,
                    body,
                };
                run_plan(isa, here, rows, cg, &plan, gi > 0, false);
            }
            store_rows(isa, rows, dsts, len, nt);
            true
        })
        .unwrap_or(false)
}

/// Copies each scratch row to its destination (`len` bytes, a multiple of 64), with
/// non-temporal stores of `isa`'s vector width where `nt`, then fenced.
///
/// # Safety
/// Rows readable and destinations writable for `len` bytes, not overlapping; `isa` available;
/// with `nt`, destinations 64-byte aligned.
unsafe fn store_rows(isa: Isa, rows: &[*mut u8], dsts: &[*mut u8], len: usize, nt: bool) {
    if nt && matches!(isa, Isa::Avx512 | Isa::Avx512Gfni) {
        for (&r, &d) in rows.iter().zip(dsts) {
            stream512(r, d, len);
        }
        super::fence();
    } else if nt && matches!(isa, Isa::Avx2 | Isa::Avx2Gfni) {
        for (&r, &d) in rows.iter().zip(dsts) {
            stream256(r, d, len);
        }
        super::fence();
    } else {
        for (&r, &d) in rows.iter().zip(dsts) {
            core::ptr::copy_nonoverlapping(r, d, len);
        }
    }
}

/// `len` bytes (a multiple of 64) from 64-byte aligned `src` to 64-byte aligned `dst` with
/// non-temporal stores.
#[target_feature(enable = "avx512f")]
unsafe fn stream512(src: *const u8, dst: *mut u8, len: usize) {
    use core::arch::x86_64::*;
    for o in (0..len).step_by(64) {
        let v = _mm512_load_si512(src.add(o) as *const _);
        _mm512_stream_si512(dst.add(o) as *mut _, v);
    }
}

/// [`stream512`] with 32-byte vectors.
#[target_feature(enable = "avx2")]
unsafe fn stream256(src: *const u8, dst: *mut u8, len: usize) {
    use core::arch::x86_64::*;
    for o in (0..len).step_by(32) {
        let v = _mm256_load_si256(src.add(o) as *const __m256i);
        _mm256_stream_si256(dst.add(o) as *mut __m256i, v);
    }
}

/// The source-major loop for pairs of sources with 64-byte GFNI vectors, in one function (no
/// kernel call per group): per line of a pair, both sources' products fold into each parity
/// row's line of `scratch` (`m` rows of `len` bytes) with one three-way XOR, the last pair's
/// sums going straight to the destinations; each line loaded prefetches the same line of the
/// pair `ahead` pairs later. Four parity rows (RS(k+4,k)) have their own loop with the eight
/// matrices of a pair in registers.
///
/// # Safety
/// As [`encode`]; `mats` the source-major affine matrices of `m = dsts.len()` rows; `scratch`
/// writable for `m * len` bytes and 64-byte aligned; with `nt`, destinations 64-byte aligned.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn pairs_gfni512(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    mats: *const u64,
    scratch: *mut u8,
    len: usize,
    ahead: usize,
    nt: bool,
) {
    let k = srcs.len();
    let mut j = 0;
    while j < k {
        let (first, last) = (j == 0, j + 2 >= k);
        let pass: PassFn = match (dsts.len() == 4, first, last, nt) {
            (true, true, false, _) => pass::<4, true, false, false>,
            (true, false, false, _) => pass::<4, false, false, false>,
            (true, false, true, true) => pass::<4, false, true, true>,
            (true, false, true, false) => pass::<4, false, true, false>,
            (true, true, true, true) => pass::<4, true, true, true>,
            (true, true, true, false) => pass::<4, true, true, false>,
            (false, true, false, _) => pass::<0, true, false, false>,
            (false, false, false, _) => pass::<0, false, false, false>,
            (false, false, true, true) => pass::<0, false, true, true>,
            (false, false, true, false) => pass::<0, false, true, false>,
            (false, true, true, true) => pass::<0, true, true, true>,
            (false, true, true, false) => pass::<0, true, true, false>,
        };
        pass(srcs, dsts, mats, scratch, len, j, ahead);
        j += 2;
    }
    if nt {
        super::fence();
    }
}

/// A monomorphised [`pass`].
type PassFn = unsafe fn(&[*const u8], &[*mut u8], *const u64, *mut u8, usize, usize, usize);

/// One pair (sources `j`, `j + 1`; `j` alone where it is the last) of [`pairs_gfni512`]: `P`
/// parity rows known at compile time (4), or 0 for `dsts.len()` rows in a loop; `FIRST`: the
/// scratch holds nothing yet; `LAST`: the sums go to the destinations (non-temporal if `NT`).
#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn pass<const P: usize, const FIRST: bool, const LAST: bool, const NT: bool>(
    srcs: &[*const u8],
    dsts: &[*mut u8],
    mats: *const u64,
    scratch: *mut u8,
    len: usize,
    j: usize,
    ahead: usize,
) {
    use core::arch::x86_64::*;
    let (k, m) = (srcs.len(), dsts.len());
    let pair = j + 1 < k;
    let s0 = srcs[j];
    let s1 = if pair { srcs[j + 1] } else { srcs[j] };
    let a = j + 2 * ahead;
    let f0 = if a < k { srcs[a] } else { core::ptr::null() };
    let f1 = if a + 1 < k { srcs[a + 1] } else { f0 };
    let mtx = |jj: usize, p: usize| _mm512_set1_epi64(*mats.add(jj * m + p) as i64);
    // the second source's matrices are zero where there is none (its loads then repeat the
    // first source's, and its products vanish)
    let mtx1 = |p: usize| {
        if pair {
            mtx(j + 1, p)
        } else {
            _mm512_setzero_si512()
        }
    };
    let fold = |o: usize, p: usize, x: __m512i, y: __m512i, mx: __m512i, my: __m512i| {
        let q = scratch.add(p * len + o);
        let before = if FIRST {
            _mm512_setzero_si512()
        } else {
            _mm512_load_si512(q as *const _)
        };
        let v = _mm512_ternarylogic_epi64::<0x96>(
            before,
            _mm512_gf2p8affine_epi64_epi8::<0>(x, mx),
            _mm512_gf2p8affine_epi64_epi8::<0>(y, my),
        );
        if !LAST {
            _mm512_store_si512(q as *mut _, v);
        } else if NT {
            _mm512_stream_si512(dsts[p].add(o) as *mut _, v);
        } else {
            _mm512_storeu_si512(dsts[p].add(o) as *mut _, v);
        }
    };
    let (mut mx, mut my) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
    if P == 4 {
        for p in 0..4 {
            mx[p] = mtx(j, p);
            my[p] = mtx1(p);
        }
    }
    for o in (0..len).step_by(64) {
        if !f0.is_null() {
            prefetch_line(f0.wrapping_add(o), Hint::L1);
            prefetch_line(f1.wrapping_add(o), Hint::L1);
        }
        let x = _mm512_loadu_si512(s0.add(o) as *const _);
        let y = _mm512_loadu_si512(s1.add(o) as *const _);
        if P == 4 {
            for p in 0..4 {
                fold(o, p, x, y, mx[p], my[p]);
            }
        } else {
            for p in 0..m {
                fold(o, p, x, y, mtx(j, p), mtx1(p));
            }
        }
    }
}
