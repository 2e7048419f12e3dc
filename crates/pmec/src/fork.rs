//! Process-wide state that a `fork()` child starts afresh.
//!
//! A child of a multi-threaded process has only the thread that forked; a lock another thread
//! held at the fork stays held in the child for ever. ISA-L's entry points take no lock, so a
//! storage daemon may fork workers while other threads encode, and the child's first call of
//! a new geometry must not wait on the parent's calibration cache (it did: 28 of 3000 children
//! hung in one run of a fork-while-encoding program). [`ForkSafe`] holds such a value behind a
//! mutex that each fork generation creates anew: the child sees an empty value (a cache starts
//! over) and the parent's copy, possibly locked, is left unused in the child's memory.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// A number that changes with every `fork()` (in the child) from the first call on (a
/// [`ForkSafe`] value made before it has no earlier fork to forget).
pub fn generation() -> u64 {
    // Not a `Once`: a fork while another thread ran its set-up would leave the child's copy
    // running for ever, and every later call there waiting for it. Two threads may both
    // register the handler; then a fork moves the number on by two, which is as good.
    if !REGISTERED.load(Ordering::Acquire) && !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a child handler that only adds to an atomic (async-signal-safe).
        unsafe { libc::pthread_atfork(None, None, Some(forked)) };
    }
    GENERATION.load(Ordering::Acquire)
}

struct Slot<T> {
    generation: u64,
    value: Mutex<T>,
}

/// A process-wide value behind a mutex, made by `init` on first use and again in each forked
/// child (see the module documentation). For caches: a child loses their contents.
pub struct ForkSafe<T> {
    current: AtomicPtr<Slot<T>>,
    init: fn() -> T,
    _value: PhantomData<Mutex<T>>,
}

impl<T> ForkSafe<T> {
    /// A value that `init` makes when first locked (in each process).
    pub const fn new(init: fn() -> T) -> ForkSafe<T> {
        ForkSafe {
            current: AtomicPtr::new(std::ptr::null_mut()),
            init,
            _value: PhantomData,
        }
    }

    /// Locks this process's value (a poisoned lock is taken as it is).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let g = generation();
        let mut p = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is a leaked Box, never freed.
        while p.is_null() || unsafe { (*p).generation } != g {
            let fresh = Box::into_raw(Box::new(Slot {
                generation: g,
                value: Mutex::new((self.init)()),
            }));
            match self
                .current
                .compare_exchange(p, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // The slot replaced (an earlier fork generation's) is leaked: it may be locked.
                Ok(_) => p = fresh,
                Err(now) => {
                    // SAFETY: `fresh` was never shared.
                    drop(unsafe { Box::from_raw(fresh) });
                    p = now;
                }
            }
        }
        // SAFETY: as above; slots live as long as the process.
        let slot: &Slot<T> = unsafe { &*p };
        slot.value.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T> Drop for ForkSafe<T> {
    fn drop(&mut self) {
        let p = *self.current.get_mut();
        if !p.is_null() {
            // SAFETY: no guard outlives `&mut self`; slots of earlier fork generations stay
            // leaked (they may be locked).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn a_value_is_made_once_and_kept() {
        static V: ForkSafe<Vec<u32>> = ForkSafe::new(Vec::new);
        V.lock().push(7);
        V.lock().push(8);
        assert_eq!(*V.lock(), vec![7, 8]);
    }

    /// A child forked while another thread holds the lock gets its own value at once.
    #[test]
    fn a_child_does_not_wait_for_a_lock_held_at_the_fork() {
        static V: ForkSafe<u64> = ForkSafe::new(|| 5);
        *V.lock() = 9;
        let held = Barrier::new(2);
        let forked = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _g = V.lock();
                held.wait();
                forked.wait();
            });
            held.wait();
            // SAFETY: the child only locks V (no allocation: its value is a u64, the slot's
            // Box is the only allocation and the holder thread is parked on a barrier), then
            // leaves with _exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::alarm(5) };
                let v = *V.lock();
                unsafe { libc::_exit(if v == 5 { 0 } else { 1 }) };
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            forked.wait();
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child status {status:#x} (SIGALRM: it waited for the parent's lock)"
            );
        });
        assert_eq!(*V.lock(), 9, "the parent keeps its value");
    }
}
