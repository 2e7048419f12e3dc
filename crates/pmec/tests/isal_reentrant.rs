//! An `ec_encode_data` that interrupts another `ec_encode_data` of its thread, as a signal
//! handler does, allocates nothing: the interrupted call may be inside `malloc`, whose lock an
//! allocating handler would wait for forever (ISA-L's `ec_encode_data` allocates nothing).
//!
//! This binary's global allocator plays the signal: while armed, the first allocation the
//! outer call makes runs the inner call right there, inside the allocator, and every
//! allocation the inner call makes is counted. Its parity, and the outer call's, must equal a
//! plain GF(2^8) reference.

use pmec::{gf, isal_abi, matrix};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};

const K: usize = 6;
const ROWS: usize = 3;
const LEN: usize = 4096 + 37;

/// The inner call's buffers, made before the allocator is armed.
struct Inner {
    data: [[u8; LEN]; K],
    parity: [[u8; LEN]; ROWS],
    tables: [u8; K * ROWS * 32],
}

struct Shared(UnsafeCell<Inner>);
// SAFETY: only the test's one thread touches it, at the points the test orders.
unsafe impl Sync for Shared {}

static INNER: Shared = Shared(UnsafeCell::new(Inner {
    data: [[0; LEN]; K],
    parity: [[0; LEN]; ROWS],
    tables: [0; K * ROWS * 32],
}));

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static IN_INNER: Cell<bool> = const { Cell::new(false) };
    static INNER_ALLOCS: Cell<u32> = const { Cell::new(0) };
    static FIRED: Cell<bool> = const { Cell::new(false) };
}

fn inner_call() {
    let inner = INNER.0.get();
    // SAFETY: the buffers are static and sized as the call says; nothing else touches them
    // while it runs.
    unsafe {
        let srcs: [*const u8; K] = std::array::from_fn(|j| (*inner).data[j].as_ptr());
        let dsts: [*mut u8; ROWS] = std::array::from_fn(|r| (*inner).parity[r].as_mut_ptr());
        isal_abi::ec_encode_data(
            LEN as i32,
            K as i32,
            ROWS as i32,
            (*inner).tables.as_ptr(),
            srcs.as_ptr(),
            dsts.as_ptr(),
        );
    }
}

fn on_alloc() {
    let _ = IN_INNER.try_with(|inside| {
        if inside.get() {
            let _ = INNER_ALLOCS.try_with(|n| n.set(n.get() + 1));
        } else if ARMED.try_with(|a| a.replace(false)).unwrap_or(false) {
            inside.set(true);
            inner_call();
            inside.set(false);
            let _ = FIRED.try_with(|f| f.set(true));
        }
    });
}

struct Interrupting;

// SAFETY: forwards to the system allocator; the hook allocates nothing itself.
unsafe impl GlobalAlloc for Interrupting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Interrupting = Interrupting;

fn parity(coef: &[u8], k: usize, data: &[&[u8]], len: usize, r: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (0..k).fold(0u8, |acc, j| acc ^ gf::mul(coef[r * k + j], data[j][i])))
        .collect()
}

#[test]
fn a_call_interrupting_another_allocates_nothing_and_encodes_right() {
    // the inner call's stripe and tables
    let inner_coef = matrix::gen_cauchy1_matrix(K + ROWS, K).as_bytes()[K * K..].to_vec();
    let inner_tables = isal_abi::init_tables(K, ROWS, &inner_coef);
    let inner = INNER.0.get();
    // SAFETY: nothing else touches the buffers before the call.
    unsafe {
        (*inner).tables.copy_from_slice(&inner_tables);
        for (j, d) in (*inner).data.iter_mut().enumerate() {
            for (i, b) in d.iter_mut().enumerate() {
                *b = (i * 7 + j * 31 + (i >> 8)) as u8;
            }
        }
    }
    // the outer call: a geometry this thread has not used, so preparing it allocates
    let (k, rows, len) = (10usize, 4usize, 8192usize);
    let coef = matrix::gen_rs_matrix(k + rows, k).as_bytes()[k * k..].to_vec();
    let tables = isal_abi::init_tables(k, rows, &coef);
    let data: Vec<Vec<u8>> = (0..k)
        .map(|j| (0..len).map(|i| (i * 13 + j * 5 + 1) as u8).collect())
        .collect();
    let mut par = vec![vec![0u8; len]; rows];
    let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
    let dsts: Vec<*mut u8> = par.iter_mut().map(|p| p.as_mut_ptr()).collect();
    ARMED.with(|a| a.set(true));
    // SAFETY: k sources and `rows` destinations of `len` bytes; tables of k * rows * 32 bytes.
    unsafe {
        isal_abi::ec_encode_data(
            len as i32,
            k as i32,
            rows as i32,
            tables.as_ptr(),
            srcs.as_ptr(),
            dsts.as_ptr(),
        );
    }
    ARMED.with(|a| a.set(false));
    assert!(
        FIRED.with(Cell::get),
        "the outer call allocated nothing, so no inner call ran"
    );
    assert_eq!(
        INNER_ALLOCS.with(Cell::get),
        0,
        "the interrupting call allocated"
    );
    let refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
    for (r, p) in par.iter().enumerate() {
        assert!(*p == parity(&coef, k, &refs, len, r), "outer row {r}");
    }
    // SAFETY: the inner call is over.
    let (inner_data, inner_parity) = unsafe { (&(*inner).data, &(*inner).parity) };
    let refs: Vec<&[u8]> = inner_data.iter().map(|d| &d[..]).collect();
    for (r, p) in inner_parity.iter().enumerate() {
        assert!(
            p[..] == parity(&inner_coef, K, &refs, LEN, r)[..],
            "inner row {r}"
        );
    }
}
