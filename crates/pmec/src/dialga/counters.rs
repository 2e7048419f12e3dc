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
    // declares); pid 0 = this thread, cpu -1 = any, no group, no flags.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
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

/// Open per-thread counters.
#[derive(Debug)]
pub struct HwCounters {
    fds: [i32; 3],
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
        Some(HwCounters { fds: [a, b, c] })
    }

    /// Whether this machine lets us count (tries once and closes).
    pub fn available() -> bool {
        HwCounters::open().is_some()
    }

    /// Current totals.
    pub fn read(&self) -> Sample {
        Sample {
            cycles: read_fd(self.fds[0]),
            cache_misses: read_fd(self.fds[1]),
            prefetch_misses: read_fd(self.fds[2]),
        }
    }
}

impl Drop for HwCounters {
    fn drop(&mut self) {
        for &fd in &self.fds {
            // SAFETY: closing descriptors we own exactly once.
            unsafe { libc::close(fd) };
        }
    }
}
