//! `libpmec_isal.so`: ISA-L's erasure-code ABI (Debian libisal 2.30 names and signatures)
//! implemented by pmec, so an existing ISA-L program runs on pmec with
//! `LD_PRELOAD=libpmec_isal.so`. Set `PMEC_SHIM_VERBOSE=1` to have it announce itself on
//! stderr when loaded. `pmec_isal_shim_calls()` returns how many encode calls it served.

use std::ffi::{c_int, c_uchar, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

static CALLS: AtomicU64 = AtomicU64::new(0);

extern "C" fn announce() {
    if std::env::var_os("PMEC_SHIM_VERBOSE").is_some_and(|v| v != "0") {
        eprintln!(
            "pmec-isal-shim: active (kernel {})",
            pmec::Isa::best().name()
        );
    }
}

/// Runs `announce` when the library is loaded.
#[used]
#[link_section = ".init_array"]
static ANNOUNCE: extern "C" fn() = announce;

/// Number of `ec_encode_data` / `ec_encode_data_update` calls served (proof of interposition).
#[no_mangle]
pub extern "C" fn pmec_isal_shim_calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// ISA-L `ec_init_tables`.
///
/// # Safety
/// As ISA-L: `a` has k*rows bytes, `gftbls` k*rows*32.
#[no_mangle]
pub unsafe extern "C" fn ec_init_tables(
    k: c_int,
    rows: c_int,
    a: *mut c_uchar,
    gftbls: *mut c_uchar,
) {
    pmec::isal_abi::ec_init_tables(k, rows, a, gftbls)
}

/// ISA-L `ec_encode_data`.
///
/// # Safety
/// As ISA-L.
#[no_mangle]
pub unsafe extern "C" fn ec_encode_data(
    len: c_int,
    k: c_int,
    rows: c_int,
    gftbls: *mut c_uchar,
    data: *mut *mut c_uchar,
    coding: *mut *mut c_uchar,
) {
    CALLS.fetch_add(1, Ordering::Relaxed);
    pmec::isal_abi::ec_encode_data(
        len,
        k,
        rows,
        gftbls,
        data as *const *const u8,
        coding as *const *mut u8,
    )
}

/// ISA-L `ec_encode_data_update`.
///
/// # Safety
/// As ISA-L.
#[no_mangle]
pub unsafe extern "C" fn ec_encode_data_update(
    len: c_int,
    k: c_int,
    rows: c_int,
    vec_i: c_int,
    gftbls: *mut c_uchar,
    data: *mut c_uchar,
    coding: *mut *mut c_uchar,
) {
    CALLS.fetch_add(1, Ordering::Relaxed);
    pmec::isal_abi::ec_encode_data_update(
        len,
        k,
        rows,
        vec_i,
        gftbls,
        data,
        coding as *const *mut u8,
    )
}

/// ISA-L `gf_gen_rs_matrix`.
///
/// # Safety
/// `a` has m*k bytes.
#[no_mangle]
pub unsafe extern "C" fn gf_gen_rs_matrix(a: *mut c_uchar, m: c_int, k: c_int) {
    pmec::isal_abi::gf_gen_rs_matrix(a, m, k)
}

/// ISA-L `gf_gen_cauchy1_matrix`.
///
/// # Safety
/// `a` has m*k bytes.
#[no_mangle]
pub unsafe extern "C" fn gf_gen_cauchy1_matrix(a: *mut c_uchar, m: c_int, k: c_int) {
    pmec::isal_abi::gf_gen_cauchy1_matrix(a, m, k)
}

/// ISA-L `gf_invert_matrix`.
///
/// # Safety
/// Both matrices have n*n bytes.
#[no_mangle]
pub unsafe extern "C" fn gf_invert_matrix(
    input: *mut c_uchar,
    out: *mut c_uchar,
    n: c_int,
) -> c_int {
    pmec::isal_abi::gf_invert_matrix(input, out, n)
}

/// ISA-L `gf_mul`.
#[no_mangle]
pub extern "C" fn gf_mul(a: c_uchar, b: c_uchar) -> c_uchar {
    pmec::gf::mul(a, b)
}

/// ISA-L `gf_inv` (0 maps to 0).
#[no_mangle]
pub extern "C" fn gf_inv(a: c_uchar) -> c_uchar {
    pmec::gf::inv(a)
}

/// ISA-L `gf_vect_mul_init`.
///
/// # Safety
/// `gftbl` has 32 bytes.
#[no_mangle]
pub unsafe extern "C" fn gf_vect_mul_init(c: c_uchar, gftbl: *mut c_uchar) {
    pmec::isal_abi::gf_vect_mul_init(c, gftbl)
}

/// ISA-L `gf_vect_mul` (len a positive multiple of 32, else -1).
///
/// # Safety
/// As ISA-L.
#[no_mangle]
pub unsafe extern "C" fn gf_vect_mul(
    len: c_int,
    gftbl: *mut c_uchar,
    src: *mut c_void,
    dest: *mut c_void,
) -> c_int {
    pmec::isal_abi::gf_vect_mul(len, gftbl, src as *const u8, dest as *mut u8)
}

/// ISA-L `gf_vect_dot_prod`.
///
/// # Safety
/// As ISA-L.
#[no_mangle]
pub unsafe extern "C" fn gf_vect_dot_prod(
    len: c_int,
    vlen: c_int,
    gftbls: *mut c_uchar,
    src: *mut *mut c_uchar,
    dest: *mut c_uchar,
) {
    pmec::isal_abi::gf_vect_dot_prod(len, vlen, gftbls, src as *const *const u8, dest)
}

/// ISA-L `gf_vect_mad`.
///
/// # Safety
/// As ISA-L.
#[no_mangle]
pub unsafe extern "C" fn gf_vect_mad(
    len: c_int,
    vec: c_int,
    vec_i: c_int,
    gftbls: *mut c_uchar,
    src: *mut c_uchar,
    dest: *mut c_uchar,
) {
    pmec::isal_abi::gf_vect_mad(len, vec, vec_i, gftbls, src, dest)
}
