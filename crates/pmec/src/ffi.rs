//! C ABI (`include/pmec.h`): opaque codec handles, encode/decode/update/verify, batch and
//! multi-threaded batch encode, LRC. Every function returns 0 on success or a negative
//! `PMEC_E*` code; `pmec_last_error()` gives the message of the calling thread's last failure.

use crate::codec::Codec;
use crate::error::Error;
use crate::lrc::Lrc;
use crate::matrix::MatrixKind;
use crate::pool::ThreadPool;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};

/// Success.
pub const PMEC_OK: c_int = 0;
/// Invalid parameter.
pub const PMEC_EINVAL: c_int = -1;
/// Length or count mismatch.
pub const PMEC_ELEN: c_int = -2;
/// Too many erasures.
pub const PMEC_ETOOMANY: c_int = -3;
/// Matrix not MDS / singular.
pub const PMEC_ENOTMDS: c_int = -4;
/// Instruction set unavailable.
pub const PMEC_EISA: c_int = -5;
/// Other (I/O, format).
pub const PMEC_EOTHER: c_int = -6;
/// A null pointer was passed.
pub const PMEC_ENULL: c_int = -7;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(e: Error) -> c_int {
    let code = match e {
        Error::InvalidParameter(_) => PMEC_EINVAL,
        Error::LengthMismatch(_) => PMEC_ELEN,
        Error::TooManyErasures { .. } | Error::TooManyBadShards { .. } => PMEC_ETOOMANY,
        Error::NotMds(_) | Error::Singular => PMEC_ENOTMDS,
        Error::UnsupportedIsa(_) => PMEC_EISA,
        Error::Io(_) | Error::Format(_) => PMEC_EOTHER,
    };
    let msg = CString::new(e.to_string().replace('\0', " ")).unwrap_or_default();
    // `try_with`: a call made while the thread's locals are being destroyed (a pthread key
    // destructor, an atexit handler) returns its code without a message; `with` panicked
    // there, which aborted the C program.
    let _ = LAST.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            *l = msg;
        }
    });
    code
}

/// What [`pmec_last_error`] returns where the thread's message no longer exists.
const NO_MESSAGE: &std::ffi::CStr =
    c"no message: pmec was called while this thread's storage was being destroyed";

/// `PMEC_ENULL`, with a message naming the argument.
fn null(what: &str) -> c_int {
    fail(Error::InvalidParameter(format!(
        "null pointer argument: {what}"
    )));
    PMEC_ENULL
}

/// `len` as a block length, or `PMEC_EINVAL` (with its message) for one no buffer can have:
/// a slice of more than `isize::MAX` bytes is undefined behaviour to form.
fn block_len(len: usize) -> Result<usize, c_int> {
    if len > isize::MAX as usize {
        return Err(fail(Error::InvalidParameter(format!(
            "block length {len} exceeds the largest object size ({})",
            isize::MAX
        ))));
    }
    Ok(len)
}

/// `stripes * per` pointers, or `PMEC_EINVAL` (with its message) where that many cannot exist:
/// the product overflowed and wrapped to a small count, so a call claiming 2^62 + 1 stripes of
/// RS(4+4) encoded one and succeeded.
fn pointer_count(stripes: usize, per: usize) -> Result<usize, c_int> {
    stripes
        .checked_mul(per)
        .filter(|&n| n <= isize::MAX as usize / std::mem::size_of::<*const u8>())
        .ok_or_else(|| {
            fail(Error::InvalidParameter(format!(
                "{stripes} stripes of {per} blocks: more pointers than memory can hold"
            )))
        })
}

/// The `nerased` shard indices at `erased`, or the error code (with its message) for a negative
/// count or index, or a missing array.
///
/// # Safety
/// `erased` valid for `nerased` ints when it is not null.
unsafe fn erased_list(erased: *const c_int, nerased: c_int) -> Result<Vec<usize>, c_int> {
    if nerased < 0 {
        return Err(fail(Error::InvalidParameter(format!(
            "nerased {nerased} is negative"
        ))));
    }
    if nerased > 0 && erased.is_null() {
        return Err(null("erased"));
    }
    if nerased == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: by the caller, nerased ints at a non-null `erased`.
    let raw = unsafe { std::slice::from_raw_parts(erased, nerased as usize) };
    raw.iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| {
                fail(Error::InvalidParameter(format!(
                    "erased shard {x} is negative"
                )))
            })
        })
        .collect()
}

/// Message of the calling thread's last error (empty if none). Valid until the next pmec call
/// on this thread. Called while the thread's storage is being destroyed (from a pthread key
/// destructor or an `atexit` handler), it returns a static string saying so.
#[no_mangle]
pub extern "C" fn pmec_last_error() -> *const c_char {
    LAST.try_with(|l| l.try_borrow().map(|m| m.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(NO_MESSAGE.as_ptr())
}

/// Opaque RS codec.
pub struct PmecCodec(Codec);
/// Opaque LRC codec.
pub struct PmecLrc(Lrc);

/// Create an RS codec with k data and m parity blocks; `matrix` 0 = Cauchy, 1 = Vandermonde.
///
/// # Safety
/// `out` must be a valid pointer to store the handle.
#[no_mangle]
pub unsafe extern "C" fn pmec_codec_new(
    k: c_int,
    m: c_int,
    matrix: c_int,
    out: *mut *mut PmecCodec,
) -> c_int {
    if out.is_null() {
        return null("out");
    }
    if k < 0 || m < 0 {
        return fail(Error::InvalidParameter(format!(
            "k = {k}, m = {m} must not be negative"
        )));
    }
    let kind = match matrix {
        0 => MatrixKind::Cauchy,
        1 => MatrixKind::Vandermonde,
        x => {
            return fail(Error::InvalidParameter(format!(
                "matrix kind {x} (0 = Cauchy, 1 = Vandermonde)"
            )))
        }
    };
    match Codec::builder(k as usize, m as usize).matrix(kind).build() {
        Ok(c) => {
            *out = Box::into_raw(Box::new(PmecCodec(c)));
            PMEC_OK
        }
        Err(e) => fail(e),
    }
}

/// Free a codec (null is ignored).
///
/// # Safety
/// `c` must come from `pmec_codec_new` and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn pmec_codec_free(c: *mut PmecCodec) {
    if !c.is_null() {
        drop(Box::from_raw(c));
    }
}

/// The `n` pointers at `p`, or None if `p` or one of them is null. An empty array may be null
/// (an RS code without parity, or no stripes, has nothing to point to).
///
/// # Safety
/// `p` valid for `n` pointers when it is not null.
unsafe fn ptrs<'a, T>(p: *const *const T, n: usize) -> Option<&'a [*const T]> {
    if n == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    let s = std::slice::from_raw_parts(p, n);
    s.iter().all(|x| !x.is_null()).then_some(s)
}

/// Encode `stripes` stripes of `len`-byte blocks: `data` holds stripes*k pointers, `parity`
/// stripes*m; `threads` > 1 splits the batch across worker threads.
///
/// # Safety
/// Pointer arrays of the stated sizes; each block readable (data) or writable (parity) for
/// `len` bytes; parity blocks distinct and not overlapping data.
#[no_mangle]
pub unsafe extern "C" fn pmec_encode(
    c: *const PmecCodec,
    len: usize,
    stripes: usize,
    data: *const *const u8,
    parity: *const *mut u8,
    threads: c_int,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    let (k, m) = (c.0.data_shards(), c.0.parity_shards());
    let counts = block_len(len)
        .and_then(|_| pointer_count(stripes, k))
        .and_then(|nd| pointer_count(stripes, m).map(|np| (nd, np)));
    let (nd, np) = match counts {
        Ok(n) => n,
        Err(code) => return code,
    };
    let Some(d) = ptrs(data, nd) else {
        return null("data (the array or one of its pointers)");
    };
    let Some(p) = ptrs(parity as *const *const u8, np) else {
        return null("parity (the array or one of its pointers)");
    };
    if stripes == 0 || len == 0 {
        return PMEC_OK;
    }
    let p = std::slice::from_raw_parts(p.as_ptr() as *const *mut u8, p.len());
    ThreadPool::new(threads.max(1) as usize).encode_raw(&c.0, len, d, p);
    PMEC_OK
}

/// Rebuild the shards listed in `erased` (n of them) of one stripe in place: `shards` holds
/// k + m pointers to `len`-byte blocks.
///
/// # Safety
/// `shards` has k+m valid pointers to distinct `len`-byte blocks; `erased` has `nerased` ints.
#[no_mangle]
pub unsafe extern "C" fn pmec_decode(
    c: *const PmecCodec,
    len: usize,
    shards: *const *mut u8,
    erased: *const c_int,
    nerased: c_int,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    if let Err(code) = block_len(len) {
        return code;
    }
    let n = c.0.total_shards();
    let Some(sp) = ptrs(shards as *const *const u8, n) else {
        return null("shards (the array or one of its pointers)");
    };
    let e = match erased_list(erased, nerased) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut views: Vec<&mut [u8]> = sp
        .iter()
        .map(|&p| std::slice::from_raw_parts_mut(p as *mut u8, len))
        .collect();
    match c.0.decode(&mut views, &e) {
        Ok(()) => PMEC_OK,
        Err(err) => fail(err),
    }
}

/// Update parity after data block `index` changed from `old_data` to `new_data`.
///
/// # Safety
/// `old_data`/`new_data` readable and the m `parity` blocks writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pmec_update(
    c: *const PmecCodec,
    len: usize,
    index: c_int,
    old_data: *const u8,
    new_data: *const u8,
    parity: *const *mut u8,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    if let Err(code) = block_len(len) {
        return code;
    }
    let m = c.0.parity_shards();
    let Some(pp) = ptrs(parity as *const *const u8, m) else {
        return null("parity (the array or one of its pointers)");
    };
    if old_data.is_null() || new_data.is_null() {
        return null("old_data or new_data");
    }
    if index < 0 {
        return fail(Error::InvalidParameter(format!(
            "index {index} is negative"
        )));
    }
    let old = std::slice::from_raw_parts(old_data, len);
    let new = std::slice::from_raw_parts(new_data, len);
    let mut p: Vec<&mut [u8]> = pp
        .iter()
        .map(|&x| std::slice::from_raw_parts_mut(x as *mut u8, len))
        .collect();
    match c.0.update(index as usize, old, new, &mut p) {
        Ok(()) => PMEC_OK,
        Err(e) => fail(e),
    }
}

/// 1 if the k+m shards are consistent, 0 if not, negative on error.
///
/// # Safety
/// `shards` has k+m pointers to readable `len`-byte blocks.
#[no_mangle]
pub unsafe extern "C" fn pmec_verify(
    c: *const PmecCodec,
    len: usize,
    shards: *const *const u8,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    if let Err(code) = block_len(len) {
        return code;
    }
    let Some(sp) = ptrs(shards, c.0.total_shards()) else {
        return null("shards (the array or one of its pointers)");
    };
    let v: Vec<&[u8]> = sp
        .iter()
        .map(|&p| std::slice::from_raw_parts(p, len))
        .collect();
    match c.0.verify(&v) {
        Ok(b) => c_int::from(b),
        Err(e) => fail(e),
    }
}

/// Create an LRC(k, m, l) codec.
///
/// # Safety
/// `out` must be valid.
#[no_mangle]
pub unsafe extern "C" fn pmec_lrc_new(
    k: c_int,
    m: c_int,
    l: c_int,
    out: *mut *mut PmecLrc,
) -> c_int {
    if out.is_null() {
        return null("out");
    }
    if k < 0 || m < 0 || l < 0 {
        return fail(Error::InvalidParameter("negative LRC parameter".into()));
    }
    match Lrc::new(k as usize, m as usize, l as usize) {
        Ok(x) => {
            *out = Box::into_raw(Box::new(PmecLrc(x)));
            PMEC_OK
        }
        Err(e) => fail(e),
    }
}

/// Free an LRC codec.
///
/// # Safety
/// `c` from `pmec_lrc_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn pmec_lrc_free(c: *mut PmecLrc) {
    if !c.is_null() {
        drop(Box::from_raw(c));
    }
}

/// LRC encode of one stripe: k data pointers, m + l parity pointers (global then local).
///
/// # Safety
/// Valid pointer arrays of `len`-byte blocks, parity distinct and not overlapping data.
#[no_mangle]
pub unsafe extern "C" fn pmec_lrc_encode(
    c: *const PmecLrc,
    len: usize,
    data: *const *const u8,
    parity: *const *mut u8,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    if let Err(code) = block_len(len) {
        return code;
    }
    let (k, r) = (
        c.0.data_shards(),
        c.0.global_parities() + c.0.local_parities(),
    );
    let Some(d) = ptrs(data, k) else {
        return null("data (the array or one of its pointers)");
    };
    let Some(p) = ptrs(parity as *const *const u8, r) else {
        return null("parity (the array or one of its pointers)");
    };
    let d: Vec<&[u8]> = d
        .iter()
        .map(|&x| std::slice::from_raw_parts(x, len))
        .collect();
    let mut p: Vec<&mut [u8]> = p
        .iter()
        .map(|&x| std::slice::from_raw_parts_mut(x as *mut u8, len))
        .collect();
    match c.0.encode(&d, &mut p) {
        Ok(()) => PMEC_OK,
        Err(e) => fail(e),
    }
}

/// LRC decode of one stripe in place (local repair where possible). Returns the number of
/// shards repaired locally (>= 0) or a negative error.
///
/// # Safety
/// `shards` has k+m+l pointers to distinct `len`-byte blocks; `erased` has `nerased` ints.
#[no_mangle]
pub unsafe extern "C" fn pmec_lrc_decode(
    c: *const PmecLrc,
    len: usize,
    shards: *const *mut u8,
    erased: *const c_int,
    nerased: c_int,
) -> c_int {
    let Some(c) = c.as_ref() else {
        return null("the codec handle");
    };
    if let Err(code) = block_len(len) {
        return code;
    }
    let Some(sp) = ptrs(shards as *const *const u8, c.0.total_shards()) else {
        return null("shards (the array or one of its pointers)");
    };
    let e = match erased_list(erased, nerased) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut views: Vec<&mut [u8]> = sp
        .iter()
        .map(|&p| std::slice::from_raw_parts_mut(p as *mut u8, len))
        .collect();
    match c.0.decode(&mut views, &e) {
        Ok(n) => n as c_int,
        Err(err) => fail(err),
    }
}

/// Name of the kernel pmec uses on this CPU (static string).
#[no_mangle]
pub extern "C" fn pmec_isa_name() -> *const c_char {
    match crate::Isa::best() {
        crate::Isa::Scalar => c"scalar".as_ptr(),
        crate::Isa::Ssse3 => c"ssse3".as_ptr(),
        crate::Isa::Avx2 => c"avx2".as_ptr(),
        crate::Isa::Avx512 => c"avx512".as_ptr(),
        crate::Isa::Avx2Gfni => c"avx2-gfni".as_ptr(),
        crate::Isa::Avx512Gfni => c"avx512-gfni".as_ptr(),
    }
}
