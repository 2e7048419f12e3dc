/* progress.c: yielding progress for MPICH ch4:ucx.
 *
 * Debian's MPICH 4.0.2 waits for completion by calling ucp_worker_progress() in a tight loop and
 * never yields the CPU. With more ranks than cores every blocking MPI call then costs scheduler time
 * slices (measured: 300 barriers on 4 ranks / 2 cores took 2.5 s; 6 ms with this hook). libnvcache
 * interposes ucp_worker_progress (it precedes libucp in symbol lookup, by LD_PRELOAD or link order)
 * and calls sched_yield() whenever a progress call found nothing to do. Enabled automatically when
 * the host is oversubscribed; NVCACHE_YIELD=0/1 forces it. Without UCX this code is never called.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*ucp_progress_fn)(void *worker);
static ucp_progress_fn real_progress;
static _Atomic int yield_on;

void nvc_progress_set_yield(int on) { atomic_store(&yield_on, on); }

/** Interposed UCX progress: forwards to the real one and yields the CPU when nothing progressed. */
unsigned ucp_worker_progress(void *worker);
unsigned ucp_worker_progress(void *worker)
{
    if (!real_progress) {
        real_progress = (ucp_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!real_progress) {
            fprintf(stderr, "nvcache: dlsym(ucp_worker_progress) failed: %s\n", dlerror());
            abort();
        }
    }
    unsigned n = real_progress(worker);
    if (!n && atomic_load_explicit(&yield_on, memory_order_relaxed))
        sched_yield();
    return n;
}
