//! Signals, handled as Unix tools handle them: a reader closing pmlab's standard output
//! (`pmlab trace stats x.pmt | head`) ends pmlab quietly on SIGPIPE, and an interrupt (SIGINT,
//! SIGTERM, SIGHUP) or a write past the file-size limit (SIGXFSZ, `ulimit -f`) removes the
//! temporary files of outputs still being written (see `atomic_file`), and `reproduce`'s staging
//! folder of the section being written, before pmlab ends with that signal, so that no partial
//! file is left behind. A child that pmlab runs in a process group of its own
//! (`forward_to_group`: the nvcache benchmark driver) gets the interrupt too, so that it ends its
//! MPI jobs and cleans up after them instead of running on unattended.

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
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn rmdir(path: *const c_char) -> c_int;
    fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
    fn getdents64(fd: c_int, dirp: *mut u8, count: usize) -> isize;
}

/// open(2) flags for a folder that is not a symbolic link (the values differ by architecture).
#[cfg(target_arch = "x86_64")]
const O_DIR_NOFOLLOW: c_int = 0o200000 | 0o400000 | 0o2000000; // O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
#[cfg(target_arch = "aarch64")]
const O_DIR_NOFOLLOW: c_int = 0o40000 | 0o100000 | 0o2000000;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const O_DIR_NOFOLLOW: c_int = -1; // unknown: the tree is left (see `remove_tree`)
const AT_REMOVEDIR: c_int = 0x200;
const DT_DIR: u8 = 4;

/// A folder that an interrupt removes with everything in it (one at a time: `reproduce`'s
/// staging folder of the section being written); null = none.
static TREE: [AtomicPtr<c_char>; 1] = [AtomicPtr::new(null_mut())];

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
    let tree = TREE[0].load(Ordering::SeqCst);
    if !tree.is_null() {
        // SAFETY: a NUL-terminated name that is never freed (see `TreeGuard`).
        unsafe { remove_tree(tree) };
    }
    // SAFETY: as in `install`; the default action then ends the process with this signal.
    unsafe {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/// A temporary file that an interrupt removes, as long as the guard lives.
pub struct TempGuard(Option<usize>);

/// Puts `path`, NUL-terminated, in the first free slot of `slots` for the interrupt handler;
/// returns the slot (none when all are taken).
fn claim_slot(slots: &[AtomicPtr<c_char>], path: &Path) -> Option<usize> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let p = c.into_raw();
    for (i, slot) in slots.iter().enumerate() {
        if slot
            .compare_exchange(null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Some(i);
        }
    }
    // SAFETY: `p` came from `into_raw` above and was never shared.
    drop(unsafe { CString::from_raw(p) });
    None
}

/// Registers `path` for removal on an interrupt (beyond `SLOTS` files at once, it is not).
pub fn remove_on_interrupt(path: &Path) -> TempGuard {
    TempGuard(claim_slot(&TEMPS, path))
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

/// Removes folder `path` and everything in it, with async-signal-safe calls only (open, getdents64,
/// unlinkat, close, rmdir: no allocation, no lock), never following a symbolic link.
///
/// # Safety
/// `path` is a NUL-terminated name.
unsafe fn remove_tree(path: *const c_char) {
    if O_DIR_NOFOLLOW < 0 {
        return;
    }
    let fd = open(path, O_DIR_NOFOLLOW);
    if fd < 0 {
        return;
    }
    empty_folder(fd, 0);
    close(fd);
    rmdir(path);
}

/// Removes everything in the open folder `fd` (folders at most 16 deep).
///
/// # Safety
/// `fd` is an open folder.
unsafe fn empty_folder(fd: c_int, depth: u32) {
    if depth > 16 {
        return;
    }
    // 4 KiB, aligned for the records.
    let mut buf = [0u64; 512];
    // Removing entries while reading may make a pass skip some: read again until a pass
    // removes nothing.
    for _pass in 0..8 {
        if lseek(fd, 0, 0) < 0 {
            return;
        }
        let mut removed = 0;
        loop {
            let n = getdents64(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf));
            if n <= 0 {
                break;
            }
            let bytes = buf.as_ptr().cast::<u8>();
            let mut at = 0usize;
            while at + 19 < n as usize {
                // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
                let rec = bytes.add(at);
                let reclen = u16::from_ne_bytes([*rec.add(16), *rec.add(17)]) as usize;
                let kind = *rec.add(18);
                let name = rec.add(19).cast::<c_char>();
                at += reclen.max(1);
                let dot = *name == b'.' as c_char
                    && (*name.add(1) == 0 || (*name.add(1) == b'.' as c_char && *name.add(2) == 0));
                if dot {
                    continue;
                }
                if kind == DT_DIR || unlinkat(fd, name, 0) != 0 {
                    let sub = openat(fd, name, O_DIR_NOFOLLOW);
                    if sub >= 0 {
                        empty_folder(sub, depth + 1);
                        close(sub);
                    }
                    unlinkat(fd, name, AT_REMOVEDIR);
                }
                removed += 1;
            }
        }
        if removed == 0 {
            return;
        }
    }
}

/// A folder that an interrupt removes, as long as the guard lives.
pub struct TreeGuard(bool);

/// Registers folder `path` for removal with its contents on an interrupt (one at a time: while
/// another is registered, this one is not).
pub fn remove_tree_on_interrupt(path: &Path) -> TreeGuard {
    TreeGuard(claim_slot(&TREE, path).is_some())
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.0 {
            // The name is not freed, as `TempGuard`'s.
            TREE[0].store(null_mut(), Ordering::SeqCst);
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
