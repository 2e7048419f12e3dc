//! The ISA-L entry points where memory cannot be had. ISA-L's allocate nothing, so a client may
//! call them under a tight address-space limit; the shim's first call of a geometry prepares
//! tables and calibrates the coordinator (256 KiB), and a failed allocation there aborted the
//! process. Each case runs in a forked child whose `RLIMIT_AS` is set just above what it has
//! mapped (and whose free chunks of 64 KiB or more are taken first), and must exit normally
//! with the parity of a plain GF(2^8) product.

mod common;

use pmec::{gf, isal_abi};

/// `rows x k` coefficients and the parity they give over `data` (k blocks), byte by byte.
fn reference(a: &[u8], k: usize, rows: usize, data: &[Vec<u8>]) -> Vec<Vec<u8>> {
    (0..rows)
        .map(|r| {
            (0..data[0].len())
                .map(|i| (0..k).fold(0u8, |acc, j| acc ^ gf::mul(a[r * k + j], data[j][i])))
                .collect()
        })
        .collect()
}

fn vm_size_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb << 10
}

/// Runs `case` in a child limited to what it has mapped plus `margin` bytes; its exit status.
fn in_limited_child(margin: u64, case: impl FnOnce() -> bool) -> i32 {
    // SAFETY: the child runs `case` and leaves with _exit; glibc's fork makes malloc usable in
    // the child.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        unsafe { libc::alarm(20) };
        let lim = libc::rlimit {
            rlim_cur: vm_size_bytes() + margin,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: a plain system call.
        unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) };
        // Free chunks the process already has mapped would still serve large requests: take
        // every one of 64 KiB or more (kept, never freed) so that none does.
        loop {
            let mut hog = Vec::<u8>::new();
            if hog.try_reserve_exact(64 << 10).is_err() {
                break;
            }
            std::mem::forget(hog);
        }
        // SAFETY: leaves the child without running anything of the parent's.
        unsafe { libc::_exit(if case() { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    status
}

#[test]
fn entry_points_encode_without_memory_to_spare() {
    let (k, rows, len) = (10usize, 4usize, 4096usize);
    let a: Vec<u8> = (0..k * rows).map(|i| (i * 37 + 11) as u8).collect();
    let data: Vec<Vec<u8>> = (0..k)
        .map(|j| (0..len).map(|i| (i * 131 + j * 7 + 3) as u8).collect())
        .collect();
    let want = reference(&a, k, rows, &data);
    let tables = isal_abi::init_tables(k, rows, &a);
    // Warm this thread's state with another geometry (its thread-locals exist then, as in a
    // client that has encoded before).
    {
        let small = isal_abi::init_tables(2, 1, &[3, 5]);
        let src = [data[0].as_ptr(), data[1].as_ptr()];
        let mut out = vec![0u8; 64];
        let dst = [out.as_mut_ptr()];
        // SAFETY: 2 sources and 1 destination of 64 bytes, tables of 2 x 1 x 32 bytes.
        unsafe { isal_abi::ec_encode_data(64, 2, 1, small.as_ptr(), src.as_ptr(), dst.as_ptr()) };
    }
    for margin in [0u64, 64 << 10] {
        let status = in_limited_child(margin, || {
            let parity = common::isal_encode(&tables, k, rows, &data, len);
            let src: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
            // The dot product of all k sources into one block (the scratch coefficients).
            let mut dot = vec![0u8; len];
            // SAFETY: k tables of 32 bytes (the first row's), k sources and one destination.
            unsafe {
                isal_abi::gf_vect_dot_prod(
                    len as i32,
                    k as i32,
                    tables.as_ptr(),
                    src.as_ptr(),
                    dot.as_mut_ptr(),
                )
            };
            parity == want && dot == want[0]
        });
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "margin {margin}: child status {status:#x} (signal 6: a failed allocation aborted it; exit 1: wrong parity)"
        );
    }
}
