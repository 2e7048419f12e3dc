/* manager.c: the cache-manager thread of a node (one per node, run by the node's leader rank).
 *
 * It serves requests from any rank through the node mailbox for the node's NVRAM parts (the node's
 * own ranks read and write them directly, cache.c; the manager maps a part they created on demand):
 * open/close a part, write (persist, then mark dirty, then reply: synchronous write replies),
 * fill (prefetch, clean), read, size, set size, sync, dirty listing and the bypass (drain)
 * protocol. It never calls MPI and sleeps on a futex when idle.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

struct mpart {
    uint64_t fileid;
    int reply;                 /* enum nvc_reply_mode */
    struct nvc_part part;
    struct mpart *next;
};

static struct {
    pthread_t thread;
    int running;
    struct nvc_mailbox *mb;
    uint64_t jobid;
    uint64_t used;             /* NVRAM bytes reserved on this node */
    struct mpart *parts;
} mgr;

static struct mpart *find(uint64_t fileid)
{
    for (struct mpart *m = mgr.parts; m; m = m->next)
        if (m->fileid == fileid)
            return m;
    return NULL;
}

static void op_open(struct nvc_slot *s)
{
    if (find(s->fileid)) {
        s->status = NVC_OK;
        return;
    }
    struct mpart *m = calloc(1, sizeof *m);
    if (!m) {
        s->status = NVC_ERR;
        return;
    }
    /* The slot carries the path, then the identity of the file the ranks opened. */
    struct nvc_file_id id;
    memcpy(&id, nvc_slot_data(s) + NVC_PATH_MAX, sizeof id);
    int e = nvc_part_make(&m->part, mgr.jobid, s->fileid, (uint32_t)s->arg[0], (uint32_t)s->arg[1], s->arg[2], s->arg[3],
                          (int)(s->arg[4] & 1), (int)s->arg[5], (const char *)nvc_slot_data(s), &id);
    if (e) {
        free(m);
        s->status = e == -ENOSPC ? NVC_NOSPACE : NVC_ERR;
        return;
    }
    m->fileid = s->fileid;
    m->reply = (int)s->arg[5];
    m->next = mgr.parts;
    mgr.parts = m;
    s->status = NVC_OK;
}

/* The part of a request, mapped on first use when a rank of this node created it (direct access). */
static struct mpart *find_req(struct nvc_slot *s)
{
    struct mpart *m = find(s->fileid);
    if (m)
        return m;
    char file[1200];
    nvc_part_name(file, sizeof file, mgr.jobid, s->fileid, s->part);
    if (!(m = calloc(1, sizeof *m)))
        return NULL;
    if (nvc_part_attach(&m->part, file, 1) != 0 || m->part.hdr->fileid != s->fileid) {
        if (m->part.base)
            nvc_part_close(&m->part, 0);
        free(m);
        return NULL;
    }
    m->part.alloc_end = m->part.hdr->reserved;
    mgr.used += m->part.alloc_end;
    m->fileid = s->fileid;
    m->reply = (int)m->part.hdr->reply;
    m->next = mgr.parts;
    mgr.parts = m;
    return m;
}

/* Unmaps (and with remove, unlinks) the part of fileid, if this manager mapped it. */
static void close_part(uint64_t fileid, int remove)
{
    for (struct mpart **pp = &mgr.parts; *pp; pp = &(*pp)->next) {
        if ((*pp)->fileid != fileid)
            continue;
        struct mpart *m = *pp;
        *pp = m->next;
        mgr.used -= m->part.alloc_end;
        nvc_part_close(&m->part, remove);
        free(m);
        break;
    }
}

static void op_close(struct nvc_slot *s)
{
    close_part(s->fileid, 1);
    s->status = NVC_OK;
}

/* Drops the parts whose representatives posted close notices; returns how many. */
static int take_closed(struct nvc_mailbox *mb)
{
    int n = 0;
    for (uint32_t i = 0; i < NVC_CLOSE_RING; i++) {
        if (!atomic_load_explicit(&mb->closed[i], memory_order_relaxed))
            continue;
        uint64_t id = atomic_exchange_explicit(&mb->closed[i], 0, memory_order_acq_rel);
        if (id) {
            close_part(id, 0); /* its representative unlinked it */
            n++;
        }
    }
    return n;
}

/* Checks the part state for data access; returns nonzero (status set) when the request must not proceed. */
static int refuse(struct mpart *m, struct nvc_slot *s, int writing)
{
    if (!m) {
        s->status = NVC_ERR;
        return 1;
    }
    uint32_t st = m->part.hdr->state;
    if (st == NVC_PART_BYPASS || st == NVC_PART_CLOSED) {
        s->status = NVC_BYPASS; /* closed: its open flushed or discarded it; only a drain by another handle asks */
        return 1;
    }
    if (st == NVC_PART_DRAINING && writing) {
        s->status = NVC_RETRY;
        return 1;
    }
    return 0;
}

static void op_write(struct nvc_slot *s, int fill)
{
    struct mpart *m = find_req(s);
    if (refuse(m, s, 1)) {
        nvc_mailbox_reply(s);
        return;
    }
    struct nvc_part *p = &m->part;
    uint64_t end = 0, total = 0;
    for (uint32_t i = 0; i < s->nseg; i++) {
        if (s->seg[i].off + s->seg[i].len > end)
            end = s->seg[i].off + s->seg[i].len;
        total += s->seg[i].len;
    }
    if (total > mgr.mb->slot_bytes || nvc_part_reserve(p, end, &mgr.used, nvc_cfg.capacity)) {
        s->status = NVC_NOSPACE;
        nvc_mailbox_reply(s);
        return;
    }
    const uint8_t *src = nvc_slot_data(s);
    for (uint32_t i = 0; i < s->nseg; i++) {
        memcpy(p->data + s->seg[i].off, src, s->seg[i].len);
        src += s->seg[i].len;
    }
    uint64_t file_end = s->arg[0];
    struct nvc_seg segs_copy[8];
    uint32_t nseg = s->nseg;
    int async = !fill && m->reply == NVC_REPLY_ASYNC && nseg <= 8;
    if (async) {
        /* Paper's original asynchronous reply: acknowledge before the data is persistent. */
        memcpy(segs_copy, s->seg, nseg * sizeof *segs_copy);
        s->status = NVC_OK;
        nvc_mailbox_reply(s);
    }
    const struct nvc_seg *segs = async ? segs_copy : s->seg;
    /* Data first, then the dirty bits that make it recoverable, then the reply. */
    nvc_part_persist_segments(p, segs, nseg);
    if (!fill) {
        nvc_part_mark_dirty_segments(p, segs, nseg);
        nvc_part_grow_size(p, file_end);
    }
    if (!async) {
        s->status = NVC_OK;
        nvc_mailbox_reply(s);
    }
}

static void op_read(struct nvc_slot *s)
{
    struct mpart *m = find_req(s);
    if (refuse(m, s, 0))
        return;
    struct nvc_part *p = &m->part;
    uint8_t *dst = nvc_slot_data(s);
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->nseg; i++) {
        uint64_t off = s->seg[i].off, len = nvc_seg_len(&s->seg[i]), data = nvc_seg_data(&s->seg[i]);
        int merge = (s->seg[i].len & NVC_SEG_MERGE) != 0;
        if (total + data > mgr.mb->slot_bytes || (merge && (!p->masks || off % NVC_PAGE || len % NVC_PAGE))) {
            s->status = NVC_ERR;
            return;
        }
        if (off + len > p->hdr->capacity) {
            s->status = NVC_NOSPACE; /* past what the part holds: the file leaves the cache */
            return;
        }
        nvc_part_read(p, off, len, __atomic_load_n(&p->hdr->reserved, __ATOMIC_ACQUIRE), dst);
        if (merge) /* pages to merge (op_dirty): their masks after them */
            memcpy(dst + len, p->masks + off / NVC_PAGE * NVC_MASK_BYTES, len / NVC_PAGE * NVC_MASK_BYTES);
        dst += data;
        total += data;
    }
    s->arg[0] = p->hdr->size;
    s->status = NVC_OK;
}

/* Zeroes cached bytes whose file offset is >= newsize (set_size shrinking the file). */
static void zero_beyond(struct nvc_part *p, uint64_t newsize)
{
    uint64_t stripe = p->hdr->stripe;
    for (uint64_t l = 0; l < p->alloc_end; l += stripe) {
        uint64_t f = nvc_part_to_file(l, stripe, p->hdr->nparts, p->hdr->index);
        if (f + stripe <= newsize)
            continue;
        /* [l + from, end): the block's bytes at or past newsize that are reserved (nothing past
           alloc_end was ever written; a cut past it underflowed the length and zeroed the whole
           sparse mapping). */
        uint64_t from = newsize > f ? newsize - f : 0;
        uint64_t end = l + stripe < p->alloc_end ? l + stripe : p->alloc_end;
        if (l + from >= end)
            continue;
        memset(p->data + l + from, 0, end - l - from);
        nvc_part_persist(p, p->data + l + from, end - l - from);
    }
}

static void op_setsize(struct nvc_slot *s)
{
    struct mpart *m = find_req(s);
    if (!m) {
        s->status = NVC_ERR;
        return;
    }
    struct nvc_part_hdr *h = m->part.hdr;
    uint64_t n = s->arg[0];
    if (s->arg[1]) {
        if (n > h->size)
            h->size = n;
    } else {
        if (n < h->size) {
            zero_beyond(&m->part, n);
            h->size_set = 1;
        }
        h->size = n;
    }
    nvc_part_persist(&m->part, h, sizeof *h);
    s->status = h->state == NVC_PART_BYPASS ? NVC_BYPASS : NVC_OK;
}

static void op_dirty(struct nvc_slot *s)
{
    struct mpart *m = find_req(s);
    if (!m) {
        s->status = NVC_ERR;
        return;
    }
    if (m->part.hdr->state == NVC_PART_DRAINING && __atomic_load_n(&m->part.hdr->writers, __ATOMIC_SEQ_CST)) {
        s->status = NVC_RETRY; /* a direct write that began before DRAINING is still running */
        return;
    }
    if (m->part.hdr->state == NVC_PART_CLOSED) {
        s->status = NVC_BYPASS; /* flushed by its own close meanwhile: nothing left to drain */
        return;
    }
    uint64_t cursor = s->arg[0], off, len, total = 0;
    uint32_t n = 0;
    uint64_t limit = mgr.mb->slot_bytes;
    int merge;
    while (n < NVC_MAXSEG && total < limit) {
        uint64_t at = cursor;
        if (!nvc_part_next_dirty(&m->part, &cursor, &off, &len, &merge))
            break;
        if (merge) {
            /* Pages to merge, with the pages to merge that follow, as many as the slot holds with
               their masks; where not even one fits, the page's runs instead. */
            uint64_t room = (limit - total) / (NVC_PAGE + NVC_MASK_BYTES) * NVC_PAGE;
            if (room > NVC_MERGE_PAGES * NVC_PAGE)
                room = NVC_MERGE_PAGES * NVC_PAGE;
            if (room) {
                len = nvc_part_merge_extent(&m->part, &cursor, off, len, room);
                s->seg[n].off = off;
                s->seg[n].len = len | NVC_SEG_MERGE;
                total += nvc_seg_data(&s->seg[n]);
                n++;
                continue;
            }
            cursor = at;
            if (n)
                break; /* the next listing starts with it */
            if (!nvc_part_next_dirty(&m->part, &cursor, &off, &len, NULL))
                break;
        }
        if (total + len > limit) {
            len = limit - total;
            cursor = off + len;
        }
        s->seg[n].off = off;
        s->seg[n].len = len;
        total += len;
        n++;
    }
    s->nseg = n;
    s->arg[0] = cursor;
    s->arg[1] = m->part.hdr->size;
    s->status = NVC_OK;
}

static void op_clean(struct nvc_slot *s)
{
    struct mpart *m = find_req(s);
    if (!m) {
        s->status = NVC_ERR;
        return;
    }
    for (uint32_t i = 0; i < s->nseg; i++)
        nvc_part_clear_dirty(&m->part, s->seg[i].off, s->seg[i].len);
    s->status = NVC_OK;
}

/* Direct access from the node's ranks (cache.c): reserves NVRAM for part bytes [0, arg[0]). */
static void op_reserve(struct nvc_slot *s)
{
    struct mpart *m = find_req(s);
    if (refuse(m, s, 1))
        return;
    s->status = nvc_part_reserve(&m->part, s->arg[0], &mgr.used, nvc_cfg.capacity) ? NVC_NOSPACE : NVC_OK;
}

static void set_state(struct mpart *m, uint32_t st)
{
    __atomic_store_n(&m->part.hdr->state, st, __ATOMIC_SEQ_CST); /* direct writers check it after announcing themselves */
    nvc_part_persist(&m->part, &m->part.hdr->state, sizeof m->part.hdr->state);
}

static void op_bypass(struct nvc_slot *s, int begin)
{
    struct mpart *m = find_req(s);
    if (!m) {
        s->status = NVC_ERR;
        return;
    }
    uint32_t st = m->part.hdr->state;
    if (begin) {
        if (st == NVC_PART_ACTIVE) {
            set_state(m, NVC_PART_DRAINING);
            s->status = NVC_OK;
        } else {
            /* DRAINING: another rank or handle drains it, wait; BYPASS or CLOSED: nothing to drain. */
            s->status = st == NVC_PART_DRAINING ? NVC_RETRY : NVC_BYPASS;
        }
        return;
    }
    if (st == NVC_PART_CLOSED) { /* its open closed it while another handle drained it */
        s->status = NVC_OK;
        return;
    }
    if (s->arg[0] == NVC_BYPASS_ABANDON) {
        /* The drain that began failed (the close of its own open: the part is kept for
           nvcache-recover): ACTIVE again, so that another handle's drain waits no longer. */
        if (st == NVC_PART_DRAINING)
            set_state(m, NVC_PART_ACTIVE);
        s->status = NVC_OK;
        return;
    }
    uint64_t cursor = 0, off, len;
    /* A direct write that started before DRAINING may still be marking pages dirty: drain again. */
    if (__atomic_load_n(&m->part.hdr->writers, __ATOMIC_SEQ_CST) || nvc_part_next_dirty(&m->part, &cursor, &off, &len, NULL)) {
        s->status = NVC_RETRY;
        return;
    }
    set_state(m, NVC_PART_BYPASS);
    s->status = NVC_OK;
}

/* Serves one posted slot. Write ops reply themselves (async mode replies early). */
static int serve(struct nvc_slot *s)
{
    struct mpart *m;
    switch (s->op) {
    case NVC_OP_OPEN: op_open(s); break;
    case NVC_OP_CLOSE: op_close(s); break;
    case NVC_OP_WRITE: op_write(s, 0); return 0;
    case NVC_OP_FILL: op_write(s, 1); return 0;
    case NVC_OP_READ: op_read(s); break;
    case NVC_OP_SIZE:
        m = find_req(s);
        s->status = !m ? NVC_ERR : m->part.hdr->state == NVC_PART_BYPASS ? NVC_BYPASS : NVC_OK;
        s->arg[0] = m ? m->part.hdr->size : 0;
        break;
    case NVC_OP_SETSIZE: op_setsize(s); break;
    case NVC_OP_RESERVE: op_reserve(s); break;
    case NVC_OP_SYNC:
        m = find_req(s);
        s->status = m ? NVC_OK : NVC_ERR;
        break;
    case NVC_OP_DIRTY: op_dirty(s); break;
    case NVC_OP_CLEAN: op_clean(s); break;
    case NVC_OP_BYPASS_BEGIN: op_bypass(s, 1); break;
    case NVC_OP_BYPASS_END: op_bypass(s, 0); break;
    case NVC_OP_SHUTDOWN:
        s->status = NVC_OK;
        nvc_mailbox_reply(s);
        return 1;
    default: s->status = NVC_ERR; break;
    }
    nvc_mailbox_reply(s);
    return 0;
}

static void *manager_main(void *arg)
{
    (void)arg;
    struct nvc_mailbox *mb = mgr.mb;
    uint32_t next = 0;
    for (;;) {
        uint32_t seen = atomic_load_explicit(&mb->doorbell, memory_order_acquire);
        int served = take_closed(mb);
        for (uint32_t k = 0; k < mb->nslots; k++) {
            uint32_t i = (next + k) % mb->nslots;
            struct nvc_slot *s = nvc_mailbox_slot(mb, i);
            if (atomic_load_explicit(&s->state, memory_order_acquire) != 1)
                continue;
            served = 1;
            next = i + 1;
            if (serve(s))
                goto out;
        }
        if (!served)
            nvc_mailbox_wait(mb, seen);
    }
out:
    take_closed(mb); /* notices posted before the shutdown request */
    while (mgr.parts) {
        struct mpart *m = mgr.parts;
        mgr.parts = m->next;
        nvc_msg("part %s still open at MPI_Finalize; kept for nvcache-recover", m->part.file);
        nvc_part_close(&m->part, 0);
        free(m);
    }
    return NULL;
}

int nvc_manager_start(struct nvc_mailbox *mb, uint64_t jobid)
{
    mgr.mb = mb;
    mgr.jobid = jobid;
    int e = pthread_create(&mgr.thread, NULL, manager_main, NULL);
    if (e) {
        nvc_msg("pthread_create(cache manager) failed: %s", strerror(e));
        return -1;
    }
    mgr.running = 1;
    return 0;
}

void nvc_manager_stop(void)
{
    if (!mgr.running)
        return;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    struct nvc_slot *s = nvc_my_slot(nvc_rt.node);
    s->op = NVC_OP_SHUTDOWN;
    nvc_mailbox_call(mgr.mb, s);
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    pthread_join(mgr.thread, NULL);
    mgr.running = 0;
}
