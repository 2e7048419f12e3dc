//! The system's ISA-L (`libisal.so.2`) loaded at run time with `dlopen`, for byte-for-byte
//! comparisons in tests and side-by-side benchmarks in the same process. Nothing links against
//! ISA-L at build time; if the library is absent, [`IsaL::get`] returns `None`.

use crate::error::{Error, Result};
use std::ffi::{c_int, c_uchar, c_void, CStr};
use std::sync::OnceLock;

type EncodeFn =
    unsafe extern "C" fn(c_int, c_int, c_int, *mut c_uchar, *mut *mut c_uchar, *mut *mut c_uchar);
type UpdateFn =
    unsafe extern "C" fn(c_int, c_int, c_int, c_int, *mut c_uchar, *mut c_uchar, *mut *mut c_uchar);
type InitTablesFn = unsafe extern "C" fn(c_int, c_int, *mut c_uchar, *mut c_uchar);
type GenFn = unsafe extern "C" fn(*mut c_uchar, c_int, c_int);
type InvertFn = unsafe extern "C" fn(*mut c_uchar, *mut c_uchar, c_int) -> c_int;
type MulFn = unsafe extern "C" fn(c_uchar, c_uchar) -> c_uchar;
type InvFn = unsafe extern "C" fn(c_uchar) -> c_uchar;
type VectMulInitFn = unsafe extern "C" fn(c_uchar, *mut c_uchar);
type VectMulFn = unsafe extern "C" fn(c_int, *mut c_uchar, *mut c_void, *mut c_void) -> c_int;
type DotProdFn = unsafe extern "C" fn(c_int, c_int, *mut c_uchar, *mut *mut c_uchar, *mut c_uchar);
type MadFn = unsafe extern "C" fn(c_int, c_int, c_int, *mut c_uchar, *mut c_uchar, *mut c_uchar);

/// One of ISA-L's `ec_encode_data` entry points.
#[derive(Clone, Copy)]
pub struct IsaLEncode(EncodeFn);

impl IsaLEncode {
    /// Call it.
    ///
    /// # Safety
    /// As [`IsaL::encode_raw`].
    pub unsafe fn call(
        &self,
        len: usize,
        k: usize,
        rows: usize,
        tables: *const u8,
        data: &[*const u8],
        coding: &[*mut u8],
    ) {
        (self.0)(
            len as c_int,
            k as c_int,
            rows as c_int,
            tables as *mut u8,
            data.as_ptr() as *mut *mut u8,
            coding.as_ptr() as *mut *mut u8,
        )
    }
}

/// Function table of a loaded ISA-L.
pub struct IsaL {
    path: String,
    handle: usize,
    encode: EncodeFn,
    update: UpdateFn,
    init_tables: InitTablesFn,
    gen_rs: GenFn,
    gen_cauchy: GenFn,
    invert: InvertFn,
    mul: MulFn,
    inv: InvFn,
    vect_mul_init: VectMulInitFn,
    vect_mul: VectMulFn,
    dot_prod: DotProdFn,
    mad: MadFn,
}

// SAFETY: the table holds plain function pointers into a library that is never unloaded.
unsafe impl Send for IsaL {}
// SAFETY: as above; ISA-L's functions are thread-safe for distinct buffers.
unsafe impl Sync for IsaL {}

fn sym<T: Copy>(h: *mut c_void, name: &CStr) -> Result<T> {
    // SAFETY: `h` is a live handle from dlopen and `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    if p.is_null() {
        return Err(Error::Io(format!("symbol {name:?} missing from ISA-L")));
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: T is a function-pointer type of the symbol's C signature (declared above from
    // ISA-L's headers) and has pointer size.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl IsaL {
    /// Load ISA-L from `path` (e.g. "libisal.so.2").
    pub fn load(path: &str) -> Result<IsaL> {
        let c = std::ffi::CString::new(path).map_err(|_| Error::Io("bad library path".into()))?;
        // SAFETY: dlopen with a valid C string; RTLD_LOCAL keeps its symbols out of our namespace.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(Error::Io(format!(
                "cannot dlopen {path} (is libisal installed?)"
            )));
        }
        Ok(IsaL {
            path: path.to_string(),
            handle: h as usize,
            encode: sym(h, c"ec_encode_data")?,
            update: sym(h, c"ec_encode_data_update")?,
            init_tables: sym(h, c"ec_init_tables")?,
            gen_rs: sym(h, c"gf_gen_rs_matrix")?,
            gen_cauchy: sym(h, c"gf_gen_cauchy1_matrix")?,
            invert: sym(h, c"gf_invert_matrix")?,
            mul: sym(h, c"gf_mul")?,
            inv: sym(h, c"gf_inv")?,
            vect_mul_init: sym(h, c"gf_vect_mul_init")?,
            vect_mul: sym(h, c"gf_vect_mul")?,
            dot_prod: sym(h, c"gf_vect_dot_prod")?,
            mad: sym(h, c"gf_vect_mad")?,
        })
    }

    /// The process-wide instance of the system's `libisal.so.2`, or `None` if it is absent.
    pub fn get() -> Option<&'static IsaL> {
        static LIB: OnceLock<Option<IsaL>> = OnceLock::new();
        LIB.get_or_init(|| IsaL::load("libisal.so.2").ok()).as_ref()
    }

    /// The process-wide instance loaded from `path` (any ISA-L build, e.g. a newer release
    /// built from source, or pmec's own shim); loaded once per path and never unloaded.
    pub fn get_path(path: &str) -> Result<&'static IsaL> {
        static LIBS: OnceLock<std::sync::Mutex<Vec<&'static IsaL>>> = OnceLock::new();
        let mut libs = LIBS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(l) = libs.iter().find(|l| l.path == path) {
            return Ok(l);
        }
        let l: &'static IsaL = Box::leak(Box::new(IsaL::load(path)?));
        libs.push(l);
        Ok(l)
    }

    /// ISA-L's per-ISA `ec_encode_data_<variant>` entry ("sse", "avx", "avx2", "avx512",
    /// "base"), for SIMD-width comparisons; `None` if this build lacks it.
    pub fn encode_variant(&self, variant: &str) -> Option<IsaLEncode> {
        let name = std::ffi::CString::new(format!("ec_encode_data_{variant}")).ok()?;
        sym::<EncodeFn>(self.handle as *mut c_void, &name)
            .ok()
            .map(IsaLEncode)
    }

    /// The dispatched `ec_encode_data`.
    pub fn encode_fn(&self) -> IsaLEncode {
        IsaLEncode(self.encode)
    }

    /// Path it was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `gf_gen_rs_matrix(a, n, k)`.
    pub fn gen_rs_matrix(&self, n: usize, k: usize) -> Vec<u8> {
        let mut a = vec![0u8; n * k];
        // SAFETY: `a` holds n*k bytes, what ISA-L writes.
        unsafe { (self.gen_rs)(a.as_mut_ptr(), n as c_int, k as c_int) };
        a
    }

    /// `gf_gen_cauchy1_matrix(a, n, k)`.
    pub fn gen_cauchy1_matrix(&self, n: usize, k: usize) -> Vec<u8> {
        let mut a = vec![0u8; n * k];
        // SAFETY: `a` holds n*k bytes.
        unsafe { (self.gen_cauchy)(a.as_mut_ptr(), n as c_int, k as c_int) };
        a
    }

    /// `gf_invert_matrix`: returns the inverse and the destroyed input, or None if singular.
    pub fn invert_matrix(&self, m: &[u8], n: usize) -> Option<(Vec<u8>, Vec<u8>)> {
        assert_eq!(m.len(), n * n);
        let mut input = m.to_vec();
        let mut out = vec![0u8; n * n];
        // SAFETY: both buffers hold n*n bytes.
        let rc = unsafe { (self.invert)(input.as_mut_ptr(), out.as_mut_ptr(), n as c_int) };
        (rc == 0).then_some((out, input))
    }

    /// `gf_mul`.
    pub fn gf_mul(&self, a: u8, b: u8) -> u8 {
        // SAFETY: pure function.
        unsafe { (self.mul)(a, b) }
    }

    /// `gf_inv`.
    pub fn gf_inv(&self, a: u8) -> u8 {
        // SAFETY: pure function.
        unsafe { (self.inv)(a) }
    }

    /// `gf_vect_mul_init`.
    pub fn vect_mul_init(&self, c: u8) -> [u8; 32] {
        let mut t = [0u8; 32];
        // SAFETY: t has 32 bytes.
        unsafe { (self.vect_mul_init)(c, t.as_mut_ptr()) };
        t
    }

    /// `gf_vect_mul(len, tbl, src, dest)`; returns ISA-L's status.
    pub fn vect_mul(&self, tbl: &[u8; 32], src: &[u8], dst: &mut [u8]) -> i32 {
        assert_eq!(src.len(), dst.len());
        // SAFETY: buffers of len bytes; ISA-L does not write the table or source.
        unsafe {
            (self.vect_mul)(
                src.len() as c_int,
                tbl.as_ptr() as *mut u8,
                src.as_ptr() as *mut c_void,
                dst.as_mut_ptr() as *mut c_void,
            )
        }
    }

    /// `gf_vect_dot_prod`.
    pub fn vect_dot_prod(&self, tables: &[u8], srcs: &[&[u8]], dst: &mut [u8]) {
        let len = dst.len();
        assert!(srcs.iter().all(|s| s.len() == len) && tables.len() >= srcs.len() * 32);
        let mut sp: Vec<*mut u8> = srcs.iter().map(|s| s.as_ptr() as *mut u8).collect();
        // SAFETY: all buffers hold len bytes, tables 32 per source; ISA-L reads srcs only.
        unsafe {
            (self.dot_prod)(
                len as c_int,
                srcs.len() as c_int,
                tables.as_ptr() as *mut u8,
                sp.as_mut_ptr(),
                dst.as_mut_ptr(),
            )
        }
    }

    /// `gf_vect_mad`.
    pub fn vect_mad(&self, vec: usize, vec_i: usize, tables: &[u8], src: &[u8], dst: &mut [u8]) {
        assert_eq!(src.len(), dst.len());
        assert!(tables.len() >= vec * 32 && vec_i < vec);
        // SAFETY: buffers of len bytes; tables cover vec entries.
        unsafe {
            (self.mad)(
                dst.len() as c_int,
                vec as c_int,
                vec_i as c_int,
                tables.as_ptr() as *mut u8,
                src.as_ptr() as *mut u8,
                dst.as_mut_ptr(),
            )
        }
    }

    /// `ec_init_tables(k, rows, a, tables)`: 32 bytes per coefficient.
    pub fn init_tables(&self, k: usize, rows: usize, a: &[u8]) -> Vec<u8> {
        assert!(a.len() >= k * rows);
        let mut t = vec![0u8; k * rows * 32];
        // SAFETY: a has k*rows coefficients, t has room for 32 bytes each.
        unsafe {
            (self.init_tables)(
                k as c_int,
                rows as c_int,
                a.as_ptr() as *mut u8,
                t.as_mut_ptr(),
            )
        };
        t
    }

    /// `ec_encode_data` on slices.
    pub fn encode_data(&self, k: usize, tables: &[u8], data: &[&[u8]], coding: &mut [&mut [u8]]) {
        let len = coding.first().map_or(0, |c| c.len());
        assert!(data.len() == k && data.iter().all(|d| d.len() == len));
        assert!(coding.iter().all(|c| c.len() == len) && tables.len() >= k * coding.len() * 32);
        let dp: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
        let cp: Vec<*mut u8> = coding.iter_mut().map(|c| c.as_mut_ptr()).collect();
        // SAFETY: pointers reference len-byte buffers checked above.
        unsafe { self.encode_raw(len, k, coding.len(), tables.as_ptr(), &dp, &cp) }
    }

    /// `ec_encode_data` on raw pointers (for benchmarks).
    ///
    /// # Safety
    /// `data` has k readable, `coding` rows writable buffers of `len` bytes; tables has
    /// `k * rows * 32` bytes.
    pub unsafe fn encode_raw(
        &self,
        len: usize,
        k: usize,
        rows: usize,
        tables: *const u8,
        data: &[*const u8],
        coding: &[*mut u8],
    ) {
        (self.encode)(
            len as c_int,
            k as c_int,
            rows as c_int,
            tables as *mut u8,
            data.as_ptr() as *mut *mut u8,
            coding.as_ptr() as *mut *mut u8,
        )
    }

    /// `ec_encode_data_update` on slices.
    pub fn encode_data_update(
        &self,
        k: usize,
        vec_i: usize,
        tables: &[u8],
        data: &[u8],
        coding: &mut [&mut [u8]],
    ) {
        let len = data.len();
        assert!(coding.iter().all(|c| c.len() == len) && vec_i < k);
        let mut cp: Vec<*mut u8> = coding.iter_mut().map(|c| c.as_mut_ptr()).collect();
        // SAFETY: all buffers hold len bytes, tables k*rows*32.
        unsafe {
            (self.update)(
                len as c_int,
                k as c_int,
                coding.len() as c_int,
                vec_i as c_int,
                tables.as_ptr() as *mut u8,
                data.as_ptr() as *mut u8,
                cp.as_mut_ptr(),
            )
        }
    }
}
