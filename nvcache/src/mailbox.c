/* mailbox.c: the request channel between client ranks and a node's cache manager.
 *
 * A mailbox is a shared-memory segment (/dev/shm) per node with one request slot per rank of the
 * host. A client fills its slot, sets state=posted, bumps the doorbell and wakes the manager with a
 * futex; the manager serves the request (data is already persistent when it replies, in sync reply
 * mode) and wakes the client with a futex on the slot state. Nobody busy-spins: waits are futex
 * sleeps, optionally preceded by a short bounded sched_yield() loop (NVCACHE_SPIN_US).
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

static size_t mailbox_bytes(uint32_t nslots, uint64_t slot_bytes, uint64_t *stride)
{
    uint64_t s = (sizeof(struct nvc_slot) + slot_bytes + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
    *stride = s;
    return NVC_PAGE + NVC_COLL_BYTES + NVC_REG_BYTES + (size_t)s * nslots;
}

struct nvc_mailbox *nvc_mailbox_map(const char *name, uint32_t nslots, uint64_t slot_bytes, int creator)
{
    uint64_t stride;
    size_t len = mailbox_bytes(nslots, slot_bytes, &stride);
    int fd = shm_open(name, creator ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
    if (fd < 0) {
        nvc_msg("shm_open(%s) failed: %s", name, strerror(errno));
        return NULL;
    }
    /* Every page reserved now (posix_fallocate, not a sparse ftruncate): a /dev/shm that fills
       up later (parts in NVCACHE_DIR there) must not SIGBUS a manager at its first touch of a
       slot page; a full one fails here, and the job runs on plain MPI-IO. */
    int e = creator ? posix_fallocate(fd, 0, (off_t)len) : 0;
    if (e) {
        nvc_msg("posix_fallocate(/dev/shm%s, %zu) failed: %s", name, len, strerror(e));
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        nvc_msg("mmap(/dev/shm%s) failed: %s", name, strerror(errno));
        if (creator)
            shm_unlink(name);
        return NULL;
    }
    struct nvc_mailbox *mb = p;
    if (creator) {
        mb->nslots = nslots;
        mb->slot_stride = stride;
        mb->slot_bytes = slot_bytes;
        mb->creator_pid = (int32_t)getpid();
        atomic_store(&mb->alive, 1);
    }
    return mb;
}

void nvc_mailbox_unmap(struct nvc_mailbox *mb, const char *name, int creator)
{
    if (!mb)
        return;
    uint64_t stride;
    size_t len = mailbox_bytes(mb->nslots, mb->slot_bytes, &stride);
    munmap(mb, len);
    if (creator)
        shm_unlink(name);
}

struct nvc_slot *nvc_mailbox_slot(struct nvc_mailbox *mb, uint32_t i)
{
    return (struct nvc_slot *)((uint8_t *)mb + NVC_PAGE + NVC_COLL_BYTES + NVC_REG_BYTES + (size_t)mb->slot_stride * i);
}

void nvc_mailbox_post(struct nvc_mailbox *mb, struct nvc_slot *s)
{
    atomic_store_explicit(&s->state, 1, memory_order_release);
    atomic_fetch_add_explicit(&mb->doorbell, 1, memory_order_acq_rel);
    if (atomic_load_explicit(&mb->manager_sleeping, memory_order_acquire))
        futex_wake(&mb->doorbell);
}

int nvc_mailbox_notify_closed(struct nvc_mailbox *mb, uint64_t fileid)
{
    for (uint32_t i = 0; i < NVC_CLOSE_RING; i++) {
        uint64_t zero = 0;
        if (atomic_load_explicit(&mb->closed[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&mb->closed[i], &zero, fileid, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            atomic_fetch_add_explicit(&mb->doorbell, 1, memory_order_acq_rel);
            if (atomic_load_explicit(&mb->manager_sleeping, memory_order_acquire))
                futex_wake(&mb->doorbell);
            return 0;
        }
    }
    return -1;
}

void nvc_mailbox_call(struct nvc_mailbox *mb, struct nvc_slot *s)
{
    nvc_mailbox_post(mb, s);
    nvc_mailbox_settle(s);
}

void nvc_mailbox_settle(struct nvc_slot *s)
{
    if (atomic_load_explicit(&s->state, memory_order_acquire) == 0)
        return;
    uint64_t deadline = nvc_cfg.spin_us ? nvc_now_ns() + (uint64_t)nvc_cfg.spin_us * 1000u : 0;
    for (;;) {
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == 2)
            break;
        if (deadline && nvc_now_ns() < deadline) {
            sched_yield(); /* gives the core away at once if anyone else (the manager) can run */
            continue;
        }
        futex_wait(&s->state, 1);
    }
    atomic_store_explicit(&s->state, 0, memory_order_relaxed);
}

void nvc_mailbox_wait(struct nvc_mailbox *mb, uint32_t seen)
{
    uint64_t deadline = nvc_cfg.spin_us ? nvc_now_ns() + (uint64_t)nvc_cfg.spin_us * 1000u : 0;
    while (deadline && nvc_now_ns() < deadline) {
        if (atomic_load_explicit(&mb->doorbell, memory_order_acquire) != seen)
            return;
        sched_yield();
    }
    atomic_store(&mb->manager_sleeping, 1);
    if (atomic_load(&mb->doorbell) == seen)
        futex_wait(&mb->doorbell, seen);
    atomic_store(&mb->manager_sleeping, 0);
}

void nvc_mailbox_reply(struct nvc_slot *s)
{
    atomic_store_explicit(&s->state, 2, memory_order_release);
    futex_wake(&s->state);
}

/* ------------------------------------------------------------------ collectives in shared memory
 *
 * A generation counter per entry: a rank reads gen (g), folds its values into the buffers of
 * parity g, and arrives; the last arriver resets the other parity's buffers (collective g-1's:
 * every rank has read them, since every rank has arrived at g), clears `arrived`, bumps gen and
 * wakes the sleepers; the others sleep on gen until it changes, then read parity g. A fast rank
 * may start collective g+1 while a slow one still reads g's results: they use different buffers. */

struct nvc_coll *nvc_coll_entry(struct nvc_mailbox *mb, int idx)
{
    return (struct nvc_coll *)((uint8_t *)mb + NVC_PAGE) + idx;
}

static void coll_reset(struct nvc_coll *c, int parity)
{
    for (int i = 0; i < NVC_COLL_VALS; i++) {
        atomic_store_explicit(&c->mn[parity][i], INT64_MAX, memory_order_relaxed);
        atomic_store_explicit(&c->mx[parity][i], INT64_MIN, memory_order_relaxed);
    }
}

int nvc_coll_claim(struct nvc_mailbox *mb, uint64_t fileid)
{
    for (int i = 0; i < NVC_COLL_ENTRIES; i++) {
        struct nvc_coll *c = nvc_coll_entry(mb, i);
        uint64_t zero = 0;
        if (atomic_load_explicit(&c->fileid, memory_order_relaxed) != 0 ||
            !atomic_compare_exchange_strong_explicit(&c->fileid, &zero, fileid, memory_order_acq_rel, memory_order_relaxed))
            continue;
        /* Nobody else touches it before the open's agreement tells them its index. */
        atomic_store_explicit(&c->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&c->left, 0, memory_order_relaxed);
        atomic_store_explicit(&c->gen, 0, memory_order_relaxed);
        coll_reset(c, 0);
        coll_reset(c, 1);
        atomic_thread_fence(memory_order_release);
        return i;
    }
    return -1;
}

void nvc_coll_run(struct nvc_coll *c, int nranks, int op, int64_t *v, int n)
{
    uint32_t g = atomic_load_explicit(&c->gen, memory_order_acquire);
    int p = (int)(g & 1);
    for (int i = 0; i < n && op != NVC_COLL_BARRIER; i++) {
        _Atomic int64_t *a = op == NVC_COLL_MIN ? &c->mn[p][i] : &c->mx[p][i];
        int64_t cur = atomic_load_explicit(a, memory_order_relaxed);
        while ((op == NVC_COLL_MIN ? v[i] < cur : v[i] > cur) &&
               !atomic_compare_exchange_weak_explicit(a, &cur, v[i], memory_order_acq_rel, memory_order_relaxed))
            ;
    }
    if (atomic_fetch_add_explicit(&c->arrived, 1, memory_order_acq_rel) + 1 == (uint32_t)nranks) {
        coll_reset(c, p ^ 1);
        atomic_store_explicit(&c->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&c->gen, g + 1, memory_order_release);
        futex_wake(&c->gen);
    } else {
        uint64_t deadline = nvc_cfg.spin_us ? nvc_now_ns() + (uint64_t)nvc_cfg.spin_us * 1000u : 0;
        while (atomic_load_explicit(&c->gen, memory_order_acquire) == g) {
            if (deadline && nvc_now_ns() < deadline)
                sched_yield();
            else
                futex_wait(&c->gen, g);
        }
    }
    for (int i = 0; i < n && op != NVC_COLL_BARRIER; i++)
        v[i] = atomic_load_explicit(op == NVC_COLL_MIN ? &c->mn[p][i] : &c->mx[p][i], memory_order_relaxed);
}

void nvc_coll_leave(struct nvc_coll *c, int nranks)
{
    if (atomic_fetch_add_explicit(&c->left, 1, memory_order_acq_rel) + 1 == (uint32_t)nranks)
        atomic_store_explicit(&c->fileid, 0, memory_order_release);
}
