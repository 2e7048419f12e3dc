//! The number of encode calls the shim served, counted per thread: a locked add on one shared
//! counter in every call waited for the previous call's parity stores to drain and was about 2%
//! of all samples of in-cache RS(12,8) 1 KiB single calls (perf, docs/validation.md §5).

use pmec::fork::ForkSafe;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::MutexGuard;

/// Counters of the threads that have counted calls and are still running, counters of ended
/// threads ready for reuse, and the calls of ended threads.
struct Registry {
    live: Vec<&'static AtomicU64>,
    free: Vec<&'static AtomicU64>,
    ended: u64,
}

/// Fork-safe (a thread of the parent may have held it at the fork): a forked child starts a
/// registry of its own, holding the counter of the thread that forked (the only thread the
/// child has), whose calls, before and after the fork, it goes on counting.
static REGISTRY: ForkSafe<Registry> = ForkSafe::new(|| Registry {
    // SAFETY: FORKER is null or a leaked counter.
    live: unsafe { FORKER.load(Ordering::Acquire).as_ref() }
        .into_iter()
        .collect(),
    free: Vec::new(),
    ended: 0,
});

/// In a forked child, the counter of the thread that forked (set by [`in_child`]).
static FORKER: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static AT_FORK: AtomicBool = AtomicBool::new(false);

/// Child handler of `fork()`: runs on the forking thread, and only reads a thread-local
/// without a destructor and stores an atomic (async-signal-safe; nothing is allocated, so the
/// forking thread's next call does not either).
extern "C" fn in_child() {
    FORKER.store(MINE.with(|m| m.get()), Ordering::Release);
}

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock()
}

/// This thread's counter; only this thread writes it, so it needs no locked instruction.
struct Local(Cell<Option<&'static AtomicU64>>);

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(c) = self.0.get() {
            MINE.with(|m| m.set(std::ptr::null_mut()));
            let mut r = registry();
            r.ended += c.swap(0, Ordering::Relaxed);
            r.live.retain(|l| !std::ptr::eq(*l, c));
            r.free.push(c);
        }
    }
}

thread_local! {
    static LOCAL: Local = const { Local(Cell::new(None)) };
    /// This thread's counter for the fork handler, which may not touch [`LOCAL`] (reaching a
    /// thread-local with a destructor may register it, which allocates).
    static MINE: Cell<*mut AtomicU64> = const { Cell::new(std::ptr::null_mut()) };
}

/// Counts one call on this thread.
#[inline]
pub fn count() {
    let counted = LOCAL.try_with(|l| {
        let c = l.0.get().unwrap_or_else(|| {
            if !AT_FORK.load(Ordering::Acquire) && !AT_FORK.swap(true, Ordering::AcqRel) {
                // SAFETY: registers a handler that is async-signal-safe (see in_child).
                unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
            }
            let mut r = registry();
            let c = r
                .free
                .pop()
                .unwrap_or_else(|| Box::leak(Box::new(AtomicU64::new(0))));
            r.live.push(c);
            l.0.set(Some(c));
            MINE.with(|m| m.set(c as *const AtomicU64 as *mut AtomicU64));
            c
        });
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
    if counted.is_err() {
        // a call from a thread's own destructors, after its counter went
        registry().ended += 1;
    }
}

/// Calls counted so far, on every thread.
pub fn total() -> u64 {
    let r = registry();
    r.ended
        + r.live
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread holds the registry counts on at once, and its
    /// total holds the forking thread's calls from before the fork.
    #[test]
    fn a_forked_child_counts_on_without_the_parents_lock() {
        for _ in 0..3 {
            count();
        }
        let mine = LOCAL.with(|l| l.0.get().expect("registered").load(Ordering::Relaxed));
        let held = std::sync::Barrier::new(2);
        let forked = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _r = registry();
                held.wait();
                forked.wait();
            });
            held.wait();
            // SAFETY: the child counts, reads the total and leaves with _exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::alarm(5) };
                count();
                let ok = total() == mine + 1;
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            forked.wait();
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child status {status:#x} (SIGALRM: it waited for the parent's lock; exit 1: its total \
                 lost the forking thread's calls)"
            );
        });
    }

    #[test]
    fn calls_of_ended_and_running_threads_are_all_counted() {
        let before = total();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..1000 {
                        count();
                    }
                })
            })
            .collect();
        for _ in 0..10 {
            count();
        }
        for t in threads {
            t.join().unwrap();
        }
        // other tests of this binary may count too, never fewer
        assert!(total() >= before + 4010);
        // the ended threads' counts moved to `ended`; their counters were reused, not leaked
        // once per thread (at most one per thread alive at a time: 4 + this one)
        let r = registry();
        assert!(r.ended >= 4000, "{}", r.ended);
        assert!(
            r.live.len() + r.free.len() <= 5,
            "{} {}",
            r.live.len(),
            r.free.len()
        );
    }
}
