//! Signals, handled as Unix tools handle them: a reader closing pmlab's standard output
//! (`pmlab trace stats x.pmt | head`) ends pmlab quietly on SIGPIPE, and an interrupt (SIGINT,
//! SIGTERM, SIGHUP) or a write past the file-size limit (SIGXFSZ, `ulimit -f`) removes the
//! temporary files of outputs still being written (see `atomic_file`) before pmlab ends with
//! that signal, so that no partial file is left behind. A child that pmlab runs in a process
//! group of its own (`forward_to_group`: the nvcache benchmark driver) gets the interrupt too,
//! so that it ends its MPI jobs and cleans up after them instead of running on unattended.

use std::ffi::{c_char, c_int, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

const SIGHUP: c_int = 1;
const SIGINT: c_int = 2;
const SIGPIPE: c_int = 13;
const SIGTERM: c_int = 15;
const SIGXFSZ: c_int = 25;
const SIG_DFL: usize = 0;

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
    fn unlink(path: *const c_char) -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
}

/// The process group an interrupt is passed on to (0: none).
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// Temporary files being written (NUL-terminated names); null = free slot. Lock-free, so that
/// the signal handler may read it. Enough for `ec encode` of the widest code pmec takes (255
/// shards and the manifest) beside pmlab's own outputs.
const SLOTS: usize = 320;
static TEMPS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];

/// Sets the dispositions; called first thing in `main`, before any other thread exists.
pub fn install() {
    // SAFETY: signal(2) of the C library pmlab links anyway; `on_interrupt` only calls the
    // async-signal-safe unlink, signal and raise, and reads atomics.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
        for sig in [SIGHUP, SIGINT, SIGTERM, SIGXFSZ] {
            signal(sig, on_interrupt as extern "C" fn(c_int) as usize);
        }
    }
}

extern "C" fn on_interrupt(sig: c_int) {
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    if group > 0 {
        // (pmlab's own file-size limit is no reason for the child to dump core: it is asked
        // to end as on a SIGTERM)
        let pass = if sig == SIGXFSZ { SIGTERM } else { sig };
        // SAFETY: kill(2) is async-signal-safe; a negative pid names the process group.
        unsafe { kill(-group, pass) };
    }
    for slot in &TEMPS {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a NUL-terminated name that is never freed (see `TempGuard`).
            unsafe { unlink(p) };
        }
    }
    // SAFETY: as in `install`; the default action then ends the process with this signal.
    unsafe {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/// A temporary file that an interrupt removes, as long as the guard lives.
pub struct TempGuard(Option<usize>);

/// Registers `path` for removal on an interrupt (beyond `SLOTS` files at once, it is not).
pub fn remove_on_interrupt(path: &Path) -> TempGuard {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return TempGuard(None);
    };
    let p = c.into_raw();
    for (i, slot) in TEMPS.iter().enumerate() {
        if slot
            .compare_exchange(null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return TempGuard(Some(i));
        }
    }
    // SAFETY: `p` came from `into_raw` above and was never shared.
    drop(unsafe { CString::from_raw(p) });
    TempGuard(None)
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // The name is not freed: a handler running on another thread may still read it
            // (a few bytes per output file).
            TEMPS[i].store(null_mut(), Ordering::SeqCst);
        }
    }
}

/// Passes interrupts on to process group `group` (a child spawned as the leader of a group of
/// its own) as long as the guard lives.
pub fn forward_to_group(group: u32) -> GroupGuard {
    CHILD_GROUP.store(group as i32, Ordering::SeqCst);
    GroupGuard
}

/// Ends [`forward_to_group`]'s forwarding when dropped.
pub struct GroupGuard;

impl Drop for GroupGuard {
    fn drop(&mut self) {
        CHILD_GROUP.store(0, Ordering::SeqCst);
    }
}
