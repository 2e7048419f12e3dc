//! What the lone-stripe examples share: the pool they draw stripes from and the plain move
//! of the same bytes.

/// A 4 KiB-aligned pool filled with pseudo-random bytes (xorshift).
pub struct Pool {
    /// Its first byte.
    pub ptr: *mut u8,
    /// Its size.
    pub bytes: usize,
}

impl Pool {
    /// A pool of `bytes` (a multiple of 8).
    pub fn new(bytes: usize) -> Pool {
        let layout = std::alloc::Layout::from_size_align(bytes, 4096).expect("layout");
        // SAFETY: non-zero size; filled below before any read.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "cannot allocate the pool");
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (0..bytes).step_by(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // SAFETY: i + 8 <= bytes (bytes is a multiple of 8).
            unsafe { (ptr.add(i) as *mut u64).write_unaligned(x) };
        }
        Pool { ptr, bytes }
    }
}

/// The plain move of one stripe: every source read and XOR-folded (so no load is dead), the
/// fold stored to every destination, with non-temporal stores when `nt`.
///
/// # Safety
/// Sources readable and destinations writable for `len` bytes (a multiple of 64); AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn plain_move(srcs: &[*const u8], dsts: &[*mut u8], len: usize, nt: bool) {
    use core::arch::x86_64::*;
    let mut o = 0;
    while o < len {
        let mut acc = _mm512_loadu_si512(srcs[0].add(o) as *const _);
        for s in &srcs[1..] {
            acc = _mm512_xor_si512(acc, _mm512_loadu_si512(s.add(o) as *const _));
        }
        for d in dsts {
            if nt {
                _mm512_stream_si512(d.add(o) as *mut _, acc);
            } else {
                _mm512_storeu_si512(d.add(o) as *mut _, acc);
            }
        }
        o += 64;
    }
    if nt {
        _mm_sfence();
    }
}
