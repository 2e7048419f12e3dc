//! The number of encode calls the shim served, counted per thread: a locked add on one shared
//! counter in every call waited for the previous call's parity stores to drain and was about 2%
//! of all samples of in-cache RS(12,8) 1 KiB single calls (perf, docs/validation.md §5).

use pmec::fork::{generation, ForkSafe};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;

/// Counters of the threads that have counted calls and are still running, counters of ended
/// threads ready for reuse, and the calls of ended threads.
struct Registry {
    live: Vec<&'static AtomicU64>,
    free: Vec<&'static AtomicU64>,
    ended: u64,
}

/// Fork-safe (a thread of the parent may have held it at the fork): a forked child starts an
/// empty registry, into which the forking thread's counter, with the calls it counted before
/// the fork, is entered again at its next call.
static REGISTRY: ForkSafe<Registry> = ForkSafe::new(|| Registry {
    live: Vec::new(),
    free: Vec::new(),
    ended: 0,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock()
}

/// This thread's counter, and the fork generation whose registry holds it; only this thread
/// writes the counter, so it needs no locked instruction.
struct Local(Cell<Option<&'static AtomicU64>>, Cell<u64>);

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(c) = self.0.get() {
            let mut r = registry();
            r.ended += c.swap(0, Ordering::Relaxed);
            r.live.retain(|l| !std::ptr::eq(*l, c));
            r.free.push(c);
        }
    }
}

thread_local! {
    static LOCAL: Local = const { Local(Cell::new(None), Cell::new(0)) };
}

/// Counts one call on this thread.
#[inline]
pub fn count() {
    let counted = LOCAL.try_with(|l| {
        let g = generation();
        let c = match l.0.get() {
            Some(c) if l.1.get() == g => c,
            Some(c) => {
                // forked since this thread registered: enter it in the child's registry
                registry().live.push(c);
                l.1.set(g);
                c
            }
            None => {
                let mut r = registry();
                let c = r
                    .free
                    .pop()
                    .unwrap_or_else(|| Box::leak(Box::new(AtomicU64::new(0))));
                r.live.push(c);
                l.0.set(Some(c));
                l.1.set(g);
                c
            }
        };
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
