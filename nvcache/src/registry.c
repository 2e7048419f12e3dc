/* registry.c: one cache state per file, however many handles a job opens on it.
 *
 * Every rank-handle of a file the interposer sees (cached or not) is entered in a job-wide table in
 * node 0's mailbox, keyed by the file's device and inode. The first open of a file with no other
 * handle in the job may cache it (its ranks find their own file id as the entry's owner). Any other
 * handle, on any communicator and any rank, makes the file shared: it marks the entry DRAINING, drains
 * the caching open's dirty pages to the real file through the owning managers (cache.c), marks it
 * SHARED and only then returns from its open; handles arriving meanwhile wait for that. The caching
 * open's ranks check the entry before each cached operation (two atomic loads) and pass through from
 * then on. The entry is freed when the file's last handle closes, so the next open caches again.
 *
 * Why not share one cache between handles: parts are laid out over the nodes of the opening
 * communicator, and two handles may have different node sets (a COMM_SELF handle on one node, a
 * COMM_WORLD handle on all), different views of which bytes are whose, and different close times;
 * MPI-IO's own consistency rules (MPI-3.1 §13.6.1) make a second handle's writes visible only after
 * sync-barrier-sync or close/open, which ROMIO gives for free once both handles reach the real file.
 * Files with several handles are rare in applications and common in I/O libraries' metadata paths,
 * where correctness matters and volume does not.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <sched.h>
#include <string.h>
#include <time.h>

struct nvc_reg_table *nvc_reg_table(struct nvc_mailbox *mb)
{
    return (struct nvc_reg_table *)((uint8_t *)mb + NVC_PAGE + NVC_COLL_BYTES);
}

/* The critical sections are a few loads and stores: a yielding spin lock is enough. */
static void lock(struct nvc_reg_table *t)
{
    uint32_t zero = 0;
    while (!atomic_compare_exchange_weak_explicit(&t->lock, &zero, 1, memory_order_acquire, memory_order_relaxed)) {
        zero = 0;
        sched_yield();
    }
}

static void unlock(struct nvc_reg_table *t) { atomic_store_explicit(&t->lock, 0, memory_order_release); }

int nvc_reg_same_dev(uint64_t a, uint64_t b)
{
    /* A multi-host key without a creation time (0) matches any: a host whose kernel or file
       system reports none cannot tell the files apart, and treating one file as two would let
       two opens cache it. */
    return a == b || (!a && (b & NVC_REG_BTIME)) || (!b && (a & NVC_REG_BTIME));
}

int nvc_reg_join(struct nvc_reg_table *t, uint64_t dev, uint64_t ino, uint64_t fileid, int want_cache, uint32_t nparts,
                 const int *part_node, uint64_t stripe, struct nvc_reg **out, struct nvc_reg *drain)
{
    lock(t);
    struct nvc_reg *e = NULL, *free_e = NULL;
    for (int i = 0; i < NVC_REG_ENTRIES; i++) {
        struct nvc_reg *x = &t->e[i];
        if (!x->refs) {
            if (!free_e)
                free_e = x;
        } else if (x->ino == ino && nvc_reg_same_dev(x->dev, dev)) {
            e = x;
            break;
        }
    }
    int verdict = NVC_REG_PASS;
    if (!e && !free_e) {
        /* Untracked: no open may cache any file until this handle closes (it could be a handle of it). */
        t->untracked++;
        *out = NULL;
        unlock(t);
        return NVC_REG_PASS;
    }
    if (!e) {
        e = free_e;
        e->dev = dev;
        e->ino = ino;
        e->refs = 0;
        if (want_cache && !t->untracked && nparts <= NVC_REG_MAXPARTS) {
            e->stripe = stripe;
            e->nparts = nparts;
            for (uint32_t p = 0; p < nparts; p++)
                e->part_node[p] = (uint16_t)part_node[p];
            atomic_store_explicit(&e->synced, 0, memory_order_relaxed);
            atomic_store_explicit(&e->owner, fileid, memory_order_relaxed);
            atomic_store_explicit(&e->state, NVC_REG_CACHED, memory_order_release);
            verdict = NVC_REG_CACHE;
        } else {
            atomic_store_explicit(&e->owner, 0, memory_order_relaxed);
            atomic_store_explicit(&e->state, NVC_REG_SHARED, memory_order_release);
        }
    } else {
        uint32_t st = atomic_load_explicit(&e->state, memory_order_acquire);
        if (st == NVC_REG_CACHED && atomic_load_explicit(&e->owner, memory_order_relaxed) == fileid && want_cache)
            verdict = NVC_REG_CACHE; /* another rank of the caching open */
        else if (st == NVC_REG_CACHED) {
            /* A second handle: this rank drains the caching open, the file is shared from now on. */
            drain->owner = atomic_load_explicit(&e->owner, memory_order_relaxed);
            drain->stripe = e->stripe;
            drain->nparts = e->nparts;
            atomic_store_explicit(&drain->synced, atomic_load_explicit(&e->synced, memory_order_relaxed),
                                  memory_order_relaxed);
            memcpy(drain->part_node, e->part_node, sizeof e->part_node);
            atomic_store_explicit(&e->state, NVC_REG_DRAINING, memory_order_seq_cst);
            verdict = NVC_REG_PASS_DRAIN;
        } else if (st == NVC_REG_DRAINING)
            verdict = NVC_REG_PASS_WAIT;
    }
    e->refs++;
    *out = e;
    unlock(t);
    return verdict;
}

void nvc_reg_drained(struct nvc_reg *e)
{
    atomic_store_explicit(&e->owner, 0, memory_order_relaxed);
    atomic_store_explicit(&e->state, NVC_REG_SHARED, memory_order_seq_cst);
}

void nvc_reg_drain_failed(struct nvc_reg *e)
{
    atomic_store_explicit(&e->state, NVC_REG_CACHED, memory_order_seq_cst); /* the owner is still set */
}

void nvc_reg_wait_drained(struct nvc_reg *e)
{
    while (atomic_load_explicit(&e->state, memory_order_acquire) == NVC_REG_DRAINING) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

void nvc_reg_disown(struct nvc_reg_table *t, struct nvc_reg *e, uint64_t fileid)
{
    if (!e)
        return;
    lock(t);
    if (atomic_load_explicit(&e->state, memory_order_relaxed) == NVC_REG_CACHED &&
        atomic_load_explicit(&e->owner, memory_order_relaxed) == fileid) {
        atomic_store_explicit(&e->owner, 0, memory_order_relaxed);
        atomic_store_explicit(&e->state, NVC_REG_SHARED, memory_order_release);
    }
    unlock(t);
}

void nvc_reg_untrack(struct nvc_reg_table *t)
{
    lock(t);
    t->untracked++;
    unlock(t);
}

void nvc_reg_leave(struct nvc_reg_table *t, struct nvc_reg *e)
{
    lock(t);
    if (!e)
        t->untracked--;
    else if (!--e->refs) {
        atomic_store_explicit(&e->owner, 0, memory_order_relaxed);
        atomic_store_explicit(&e->state, NVC_REG_FREE, memory_order_release);
    }
    unlock(t);
}
