//! Hardware counters through `perf_event_open` (generic events: cycles, cache misses, L1D
//! prefetch misses). Virtual machines usually refuse them; then [`HwCounters::open`] returns
//! `None` and the coordinator falls back to timing.

use std::io;

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
// cache id L1D (0) | op PREFETCH (2) << 8 | result MISS (1) << 16
const L1D_PREFETCH_MISS: u64 = (2 << 8) | (1 << 16);
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

fn open_event(type_: u32, config: u64) -> io::Result<i32> {
    let attr = PerfEventAttr {
        type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        // disabled=0, exclude_kernel=1 (bit 5), exclude_hv=1 (bit 6)
        flags: (1 << 5) | (1 << 6),
        ..Default::default()
    };
    // SAFETY: perf_event_open reads `attr` (a valid, fully initialised struct of the size it
    // declares); pid 0 = this thread, cpu -1 = any, no group; close-on-exec, so a program that
    // runs another never hands it our descriptors.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
}

/// What `fstat` says a descriptor is (device, inode, type): a perf event's until the program
/// closes the number and reuses it for one of its own files.
fn identity(fd: i32) -> Option<(u64, u64, u32)> {
    // SAFETY: fstat writes a `stat` we own; an invalid descriptor only makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino, st.st_mode))
}

fn read_fd(fd: i32) -> u64 {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a u64 from a perf event fd we own.
    let n = unsafe { libc::read(fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

/// One sample of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// CPU cycles.
    pub cycles: u64,
    /// Last-level cache misses.
    pub cache_misses: u64,
    /// L1D prefetches that missed (a proxy for useless/late prefetch traffic).
    pub prefetch_misses: u64,
}

/// Open per-thread counters. The descriptors live in the application's table, which it may
/// close behind the library's back (a daemon closing every descriptor, then opening its own
/// files under the same numbers): each one's identity is checked before it is read or closed,
/// and counters that lost theirs are never read or closed again.
#[derive(Debug)]
pub struct HwCounters {
    fds: [i32; 3],
    ids: [Option<(u64, u64, u32)>; 3],
    lost: std::cell::Cell<bool>,
}

impl HwCounters {
    /// Open the counters for the calling thread, or `None` if the kernel refuses
    /// (`perf_event_paranoid`, a VM without a virtual PMU, ...).
    pub fn open() -> Option<HwCounters> {
        let a = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES).ok()?;
        let close = |fd: i32| {
            // SAFETY: closing a descriptor we opened.
            unsafe { libc::close(fd) };
        };
        let b = match open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES) {
            Ok(b) => b,
            Err(_) => {
                close(a);
                return None;
            }
        };
        let c = match open_event(PERF_TYPE_HW_CACHE, L1D_PREFETCH_MISS) {
            Ok(c) => c,
            Err(_) => {
                close(a);
                close(b);
                return None;
            }
        };
        Some(HwCounters {
            fds: [a, b, c],
            ids: [identity(a), identity(b), identity(c)],
            lost: std::cell::Cell::new(false),
        })
    }

    /// Whether this machine lets us count (tries once and closes).
    pub fn available() -> bool {
        HwCounters::open().is_some()
    }

    /// Whether every descriptor is still the counter opened under its number.
    fn ours(&self) -> bool {
        if !self.lost.get()
            && !self
                .fds
                .iter()
                .zip(&self.ids)
                .all(|(&fd, id)| id.is_some() && identity(fd) == *id)
        {
            self.lost.set(true);
        }
        !self.lost.get()
    }

    /// Current totals; `None` once the program took the descriptors over.
    pub fn read(&self) -> Option<Sample> {
        self.ours().then(|| Sample {
            cycles: read_fd(self.fds[0]),
            cache_misses: read_fd(self.fds[1]),
            prefetch_misses: read_fd(self.fds[2]),
        })
    }
}

impl Drop for HwCounters {
    fn drop(&mut self) {
        if !self.ours() {
            return;
        }
        for &fd in &self.fds {
            // SAFETY: closing descriptors we opened, still ours, exactly once.
            unsafe { libc::close(fd) };
        }
    }
}
