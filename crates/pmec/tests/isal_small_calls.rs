//! The single-row and single-column ISA-L entry points (`gf_vect_mul`, `gf_vect_dot_prod`,
//! `gf_vect_mad`, `ec_encode_data_update`) allocate nothing once their thread has run one of
//! the same size, whatever tables a call brings, as ISA-L's allocate nothing at all; and one
//! that interrupts another (a signal handler does, and the interrupted call may be inside
//! `malloc`, whose lock an allocating handler would wait for forever) allocates nothing either.
//! (They built their prepared coefficients on the heap on every call: a signal handler calling
//! them while the program was in `malloc` deadlocked.)
//!
//! This binary's global allocator counts the allocations of the thread while it is armed, and
//! can run a nested call at the first allocation of an armed call, inside the allocator. Every
//! result must equal a plain GF(2^8) reference.

use pmec::{gf, isal_abi};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u32> = const { Cell::new(0) };
    /// A nested call to run at the next allocation (a function pointer: no allocation).
    static NESTED: Cell<Option<fn()>> = const { Cell::new(None) };
    static IN_NESTED: Cell<bool> = const { Cell::new(false) };
    static NESTED_ALLOCS: Cell<u32> = const { Cell::new(0) };
}

fn on_alloc() {
    let _ = IN_NESTED.try_with(|inside| {
        if inside.get() {
            let _ = NESTED_ALLOCS.try_with(|n| n.set(n.get() + 1));
            return;
        }
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        }
        if let Some(f) = NESTED.try_with(|n| n.take()).ok().flatten() {
            inside.set(true);
            f();
            inside.set(false);
        }
    });
}

struct Counting;

// SAFETY: forwards to the system allocator; the hook allocates nothing itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const LEN: usize = 4096 + 32;
const K: usize = 5;
const ROWS: usize = 3;

fn data(seed: usize) -> Vec<Vec<u8>> {
    (0..K)
        .map(|j| {
            (0..LEN)
                .map(|i| (i * 7 + j * 31 + seed * 13 + (i >> 8)) as u8)
                .collect()
        })
        .collect()
}

/// ISA-L tables (`rows x cols`, 32 bytes each) of coefficients that depend on `seed`.
fn tables(rows: usize, cols: usize, seed: u8) -> (Vec<u8>, Vec<u8>) {
    let coef: Vec<u8> = (0..rows * cols)
        .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed) | 1)
        .collect();
    (coef.clone(), isal_abi::init_tables(cols, rows, &coef))
}

/// `gf_vect_dot_prod` of the K sources `srcs` with tables `t` into `dest` (LEN bytes each).
fn dot_prod(t: &[u8], srcs: &[*const u8], dest: &mut [u8]) {
    assert!(t.len() >= K * 32 && srcs.len() == K && dest.len() == LEN);
    // SAFETY: K tables, K sources of LEN bytes (made by `data`) and a destination of LEN bytes.
    unsafe {
        isal_abi::gf_vect_dot_prod(
            LEN as i32,
            K as i32,
            t.as_ptr(),
            srcs.as_ptr(),
            dest.as_mut_ptr(),
        )
    };
}

/// Runs all four entry points once with tables of `seed`, checks each result against the
/// reference.
fn run_all(seed: u8) {
    let src = data(seed as usize);
    let srcs: Vec<*const u8> = src.iter().map(|d| d.as_ptr()).collect();
    // gf_vect_mul: dest = c x src[0]
    let (c, t) = tables(1, 1, seed);
    let mut dest = vec![0u8; LEN];
    // SAFETY: a 32-byte table, LEN bytes each way (LEN a multiple of 32).
    let rc = unsafe { isal_abi::gf_vect_mul(LEN as i32, t.as_ptr(), srcs[0], dest.as_mut_ptr()) };
    assert_eq!(rc, 0);
    let want: Vec<u8> = src[0].iter().map(|&x| gf::mul(c[0], x)).collect();
    assert!(dest == want, "gf_vect_mul, seed {seed}");
    // gf_vect_dot_prod: dest = sum c_j x src[j]
    let (c, t) = tables(1, K, seed);
    dot_prod(&t, &srcs, &mut dest);
    let dot = |i: usize| (0..K).fold(0u8, |a, j| a ^ gf::mul(c[j], src[j][i]));
    assert!(
        (0..LEN).all(|i| dest[i] == dot(i)),
        "gf_vect_dot_prod, seed {seed}"
    );
    // gf_vect_mad: dest ^= c_2 x src[2]
    let before = dest.clone();
    // SAFETY: tables for sources 0..K, LEN bytes each way.
    unsafe {
        isal_abi::gf_vect_mad(
            LEN as i32,
            K as i32,
            2,
            t.as_ptr(),
            srcs[2],
            dest.as_mut_ptr(),
        )
    };
    assert!(
        (0..LEN).all(|i| dest[i] == before[i] ^ gf::mul(c[2], src[2][i])),
        "gf_vect_mad, seed {seed}"
    );
    // ec_encode_data_update: coding[r] ^= c(r, 3) x src[3]
    let (c, t) = tables(ROWS, K, seed);
    let mut coding: Vec<Vec<u8>> = (0..ROWS).map(|r| vec![r as u8 + seed; LEN]).collect();
    let old = coding.clone();
    let dsts: Vec<*mut u8> = coding.iter_mut().map(|p| p.as_mut_ptr()).collect();
    // SAFETY: K x ROWS tables, one source and ROWS destinations of LEN bytes.
    unsafe {
        isal_abi::ec_encode_data_update(
            LEN as i32,
            K as i32,
            ROWS as i32,
            3,
            t.as_ptr(),
            srcs[3],
            dsts.as_ptr(),
        )
    };
    for r in 0..ROWS {
        let ok = (0..LEN).all(|i| coding[r][i] == old[r][i] ^ gf::mul(c[r * K + 3], src[3][i]));
        assert!(ok, "ec_encode_data_update row {r}, seed {seed}");
    }
}

/// Counts the allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u32 {
    ALLOCS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.with(Cell::get)
}

#[test]
fn warm_small_calls_allocate_nothing_whatever_their_tables() {
    std::thread::spawn(|| {
        run_all(1);
        // New tables on every call (the buffers are made outside the counted calls: count
        // the entry points only).
        for seed in 2..6u8 {
            let src = data(seed as usize);
            let (_, t) = tables(ROWS, K, seed);
            let mut dest = vec![0u8; LEN];
            let srcs: Vec<*const u8> = src.iter().map(|d| d.as_ptr()).collect();
            let mut coding: Vec<Vec<u8>> = (0..ROWS).map(|_| vec![0u8; LEN]).collect();
            let dsts: Vec<*mut u8> = coding.iter_mut().map(|p| p.as_mut_ptr()).collect();
            let n = allocations(|| {
                // SAFETY: as in run_all.
                unsafe {
                    isal_abi::gf_vect_mul(LEN as i32, t.as_ptr(), srcs[0], dest.as_mut_ptr());
                    let (v, tp, d) = (K as i32, t.as_ptr(), dest.as_mut_ptr());
                    isal_abi::gf_vect_dot_prod(LEN as i32, v, tp, srcs.as_ptr(), d);
                    isal_abi::gf_vect_mad(LEN as i32, v, 4, tp, srcs[1], d);
                    let (k, rows) = (K as i32, ROWS as i32);
                    isal_abi::ec_encode_data_update(
                        LEN as i32,
                        k,
                        rows,
                        1,
                        tp,
                        srcs[1],
                        dsts.as_ptr(),
                    );
                }
            });
            assert_eq!(n, 0, "warm calls with the tables of seed {seed} allocated");
            run_all(seed);
        }
    })
    .join()
    .unwrap();
}

fn nested_mad() {
    let src: [u8; 64] = std::array::from_fn(|i| (i * 5 + 3) as u8);
    let mut dest: [u8; 64] = std::array::from_fn(|i| i as u8);
    let t = gf::nibble_table(0x1d);
    // SAFETY: a 32-byte table, 64 bytes each way.
    unsafe { isal_abi::gf_vect_mad(64, 1, 0, t.as_ptr(), src.as_ptr(), dest.as_mut_ptr()) };
    let ok = (0..64).all(|i| dest[i] == i as u8 ^ gf::mul(0x1d, src[i]));
    assert!(ok, "the nested gf_vect_mad's result");
    NESTED_DONE.with(|d| d.set(true));
}

thread_local! {
    static NESTED_DONE: Cell<bool> = const { Cell::new(false) };
}

#[test]
fn a_small_call_interrupting_another_allocates_nothing_and_computes_right() {
    std::thread::spawn(|| {
        let src = data(7);
        let srcs: Vec<*const u8> = src.iter().map(|d| d.as_ptr()).collect();
        let (c, t) = tables(1, K, 7);
        let (_, t1) = tables(1, 1, 7);
        let mut dest = vec![0u8; LEN];
        // One 1 x 1 call sets the thread's scratch up (and registers its destructor).
        // SAFETY: a 32-byte table, LEN bytes each way.
        unsafe { isal_abi::gf_vect_mul(LEN as i32, t1.as_ptr(), srcs[0], dest.as_mut_ptr()) };
        // A call with K tables has no room for them yet: it allocates while it holds the
        // scratch, and the nested call runs there.
        NESTED.with(|n| n.set(Some(nested_mad)));
        dot_prod(&t, &srcs, &mut dest);
        assert!(
            NESTED_DONE.with(Cell::get),
            "the outer call allocated nothing, so no nested call ran"
        );
        assert_eq!(
            NESTED_ALLOCS.with(Cell::get),
            0,
            "the interrupting call allocated"
        );
        let dot = |i: usize| (0..K).fold(0u8, |a, j| a ^ gf::mul(c[j], src[j][i]));
        assert!(
            (0..LEN).all(|i| dest[i] == dot(i)),
            "the outer gf_vect_dot_prod's result"
        );
    })
    .join()
    .unwrap();
}
