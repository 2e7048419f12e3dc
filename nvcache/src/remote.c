/* remote.c: requests to the cache managers of other hosts, over MPI.
 *
 * On one host every rank maps every node's mailbox and part files (shared memory). Across hosts
 * nothing is shared but MPI: a rank that needs another host's part sends the request (the slot's
 * header, its segments and, for writes, the data) on nvcache's private request communicator to
 * that host's agent, a thread of the host's first rank; the agent posts it in the owning node's
 * mailbox, through a slot of its own, exactly as a rank of that host would, and sends the reply
 * (header, segments, and for reads the data) back on the reply communicator. A write is
 * acknowledged only once the owning manager has persisted it, as on one host. The job's file
 * table (registry.c) stays on node 0's host; ranks of other hosts join and leave it through the
 * agent there (NVC_OP_REG_*), by entry index.
 *
 * The agent serves reads, and writes into space its part already has reserved, itself, from its
 * own mapping of the part, the way a rank of the host does (cache.c, "direct access": the same
 * persist-then-dirty-then-size order and the same writers/state protocol with a drain), so the
 * common request costs no hand-off to the manager thread; everything else (reservation, fill,
 * size, sync, bypass, a part it cannot map) still goes through the node's mailbox.
 *
 * Why point-to-point with an agent rather than one-sided windows over the parts: parts are
 * created, grown (fallocate) and removed while the file is open, so a window would have to be
 * re-attached on the owning side anyway, and a put is not persistent until the owner flushes it;
 * the agent gives that flush (the manager's own write path) and the capacity checks for free.
 *
 * Waiting: the agent must not busy-poll (tests run 8 ranks on 2 cores), and a blocking MPI_Recv
 * polls in both MPICH and Open MPI. It probes (MPI_Improbe) and, when nothing came, yields for
 * NVC_AGENT_BURST_NS after the last request, then sleeps between probes, the sleep doubling from
 * 20 us to NVC_AGENT_IDLE_US; requesters wait for replies the same way (wait_all). The agent
 * does not wait for a reply to arrive before it serves the next request: up to
 * NVC_AGENT_REPLIES replies are in flight, each from its own buffer, so one requester still asleep
 * when its 64 KiB reply is ready (a rendezvous transfer needs both sides to make progress) holds
 * up nobody else; while replies are in flight the agent keeps testing them. Two
 * communicators (duplicates of MPI_COMM_WORLD) keep the agent's MPI_ANY_SOURCE/ANY_TAG probe
 * away from replies its own process is waiting for.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

/* Request tags are the target node (< NVC_TAG_STOP); the stop tag ends an agent. */
#define NVC_TAG_STOP 30000
#define NVC_TAG_REPLY 30001
/* Between requests the agent sleeps, the sleep doubling from 20 us up to NVC_AGENT_IDLE_US, and
 * once requests have stopped for longer (the application computes, or does its I/O on its own
 * host) up to 1/NVC_AGENT_QUIET_SHARE of the time since the last one, at most
 * NVC_AGENT_DEEP_IDLE_US: the first request after a quiet spell then waits at most 4% of that
 * spell longer. Polling every 200 us forever cost each idle agent 24-29 ms of CPU per second
 * (tests/idle_cpu.c, 8 ranks on 2 emulated hosts on 2 cores), 2 ms sleeps still 8-10 ms; with
 * this bound 2-5 ms in the first idle second, 8-10 ms over three. */
#define NVC_AGENT_IDLE_US 200
#define NVC_AGENT_DEEP_IDLE_US 20000
#define NVC_AGENT_QUIET_SHARE 25
/* After a request the agent keeps probing, yielding the core between probes, this long: I/O comes
 * in bursts, and a sleep of 60 us or more (this VM's shortest nanosleep) per request made a
 * 64 KiB transfer to another host take about 1 ms. Not longer: with 8 ranks on 2 cores, 2 ms of
 * yielding agents (and requesters that only yielded) made the pattern battery across 2 emulated
 * hosts 2-4x slower than with these bounds. */
#define NVC_AGENT_BURST_NS 200000u
/* While idle, the agent drops its mappings of removed parts at most this often. */
#define NVC_AGENT_SWEEP_NS 5000000u
/* A requester yields this many times while its reply is outstanding, then sleeps 20 us between tests. */
#define NVC_WAIT_YIELDS 16
/* Replies an agent keeps in flight (each a wire buffer of its own, allocated on first use).
 * Waiting for each reply to complete before the next request capped the reads of a shared file
 * across emulated hosts at 31 000-36 000 requests/s of 64 KiB on 16 idle vCPUs, a quarter to a
 * third of what one MPI server moves in the same pattern; with 8 in flight, 1.85-3.21x that
 * (validation.md §4). */
#define NVC_AGENT_REPLIES 8

/** The fixed part of a request or reply on the wire; segments and data follow. */
struct nvc_wire {
    uint32_t op, status, nseg, part;
    uint64_t fileid;
    uint64_t arg[6];
    uint64_t ndata;
};

/** A part of this host mapped by the agent for direct service. */
struct apart {
    uint64_t fileid;
    uint32_t part;
    struct nvc_part p;         /* mapped with its descriptor kept: fstat tells when it was removed */
    uint64_t mapped;           /* data bytes [0, mapped) are in the agent's page tables */
    struct apart *next;
};

static struct {
    MPI_Comm req, rep;         /* requests to agents; replies to requesters */
    struct apart *parts;       /* the agent's mappings (agent thread only) */
    uint64_t served_direct, served_mailbox; /* the agent's data requests, by path */
    uint64_t serve_ns;         /* the agent's time from a request's receipt to its reply sent */
    struct nvc_slot **slot;    /* node -> this process's slot for requests to it (made on first use: a
                                  transfer fills the slots of several parts before it sends them) */
    uint8_t *buf, *rbuf, *abuf; /* wire buffers: the requester's request and reply, the agent's
                                   request */
    uint8_t *out[NVC_AGENT_REPLIES];      /* the agent's reply buffers */
    MPI_Request sent[NVC_AGENT_REPLIES];  /* their sends (MPI_REQUEST_NULL: the buffer is free) */
    int in_flight;                        /* sends not yet found complete */
    size_t cap;
    struct nvc_slot *aslot;    /* the agent's slot for table requests (no mailbox involved) */
    pthread_t thread;
    int running;
} rm = {.req = MPI_COMM_NULL, .rep = MPI_COMM_NULL};

static uint64_t seg_bytes(const struct nvc_slot *s)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < s->nseg; i++)
        t += nvc_seg_data(&s->seg[i]);
    return t;
}

/* Data bytes a request carries. */
static uint64_t request_data(const struct nvc_slot *s)
{
    switch (s->op) {
    case NVC_OP_WRITE:
    case NVC_OP_FILL: return seg_bytes(s);
    case NVC_OP_OPEN: return NVC_PATH_MAX + sizeof(struct nvc_file_id); /* the path, then the file's identity */
    case NVC_OP_REG_JOIN: return s->arg[3] * sizeof(uint16_t); /* the caching open's part -> node */
    default: return 0;
    }
}

/* Data bytes a reply carries. */
static uint64_t reply_data(const struct nvc_slot *s)
{
    if (s->op == NVC_OP_READ && s->status == NVC_OK)
        return seg_bytes(s);
    if (s->op == NVC_OP_REG_JOIN && s->status == NVC_REG_PASS_DRAIN)
        return s->arg[3] * sizeof(uint16_t);
    return 0;
}

static size_t pack(uint8_t *buf, const struct nvc_slot *s, uint64_t ndata)
{
    struct nvc_wire w = {s->op, s->status, s->nseg, s->part, s->fileid, {0}, ndata};
    memcpy(w.arg, s->arg, sizeof w.arg);
    memcpy(buf, &w, sizeof w);
    size_t n = sizeof w;
    memcpy(buf + n, s->seg, s->nseg * sizeof *s->seg);
    n += s->nseg * sizeof *s->seg;
    memcpy(buf + n, nvc_slot_data((struct nvc_slot *)s), ndata);
    return n + ndata;
}

/* Copies a message into slot s; returns 0, or -1 when it is malformed (never trusted blindly:
 * a mismatch between builds of the two hosts must not overrun a slot). */
static int unpack(const uint8_t *buf, size_t len, struct nvc_slot *s)
{
    struct nvc_wire w;
    if (len < sizeof w)
        return -1;
    memcpy(&w, buf, sizeof w);
    if (w.nseg > NVC_MAXSEG || w.ndata > nvc_cfg.slot_bytes || len != sizeof w + w.nseg * sizeof *s->seg + w.ndata)
        return -1;
    s->op = w.op;
    s->status = w.status;
    s->nseg = w.nseg;
    s->part = w.part;
    s->fileid = w.fileid;
    memcpy(s->arg, w.arg, sizeof w.arg);
    memcpy(s->seg, buf + sizeof w, w.nseg * sizeof *s->seg);
    memcpy(nvc_slot_data(s), buf + sizeof w + w.nseg * sizeof *s->seg, w.ndata);
    return 0;
}

static struct nvc_slot *slot_alloc(void)
{
    return calloc(1, sizeof(struct nvc_slot) + nvc_cfg.slot_bytes);
}

struct nvc_slot *nvc_remote_slot(int node)
{
    if (!rm.slot[node] && !(rm.slot[node] = slot_alloc())) {
        nvc_msg("out of memory for a request slot to node %d", node);
        abort(); /* nothing sensible left to do: the request cannot even be refused */
    }
    return rm.slot[node];
}

/* The pause after the i-th (from 0) unsuccessful test of something MPI must complete: a yield
 * for the first NVC_WAIT_YIELDS, then 20 us sleeps. */
static void wait_pause(int i)
{
    if (i < NVC_WAIT_YIELDS)
        sched_yield();
    else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* Completes requests without blocking inside MPI: a blocking call polls while holding MPICH's
 * global lock under MPI_THREAD_MULTIPLE, so the agent thread of the same process could not take
 * it to serve (and the agent's own blocking send would keep a requester waiting the same way);
 * testing and yielding in between leaves the lock free. */
static void wait_all(int n, MPI_Request *rq, MPI_Status *st)
{
    int done = 0;
    for (int i = 0;; i++) {
        PMPI_Testall(n, rq, &done, st);
        if (done)
            return;
        wait_pause(i);
    }
}

void nvc_remote_call(int node, struct nvc_slot *s)
{
    size_t n = pack(rm.buf, s, request_data(s));
    MPI_Status st[2];
    MPI_Request rq[2];
    int len = 0, agent = nvc_rt.node_agent[node];
    PMPI_Irecv(rm.rbuf, (int)rm.cap, MPI_BYTE, agent, NVC_TAG_REPLY, rm.rep, &rq[0]);
    PMPI_Isend(rm.buf, (int)n, MPI_BYTE, agent, node, rm.req, &rq[1]);
    wait_all(2, rq, st);
    PMPI_Get_count(&st[0], MPI_BYTE, &len);
    /* An agent that refuses a request (malformed: builds that differ, a message cut short)
       replies with op 0 and NVC_ERR, which for a join would read as the verdict NVC_REG_PASS of
       entry 0: a reply for another op is no answer to this request either. */
    uint32_t op = s->op;
    if (unpack(rm.rbuf, (size_t)len, s) != 0 || s->op != op) {
        nvc_msg("malformed or refused reply from the agent of node %d (rank %d); request failed", node, agent);
        s->op = op;
        s->nseg = 0;
        s->status = op == NVC_OP_REG_JOIN ? UINT32_MAX : NVC_ERR; /* a join's status is its verdict */
    }
}

void nvc_node_call(int node, struct nvc_slot *s)
{
    if (nvc_rt.mbox[node])
        nvc_mailbox_call(nvc_rt.mbox[node], s);
    else
        nvc_remote_call(node, s);
}

/* ------------------------------------------------------------------ the agent */

/* A table request from another host, served on node 0's mailbox's table. */
static void serve_table(struct nvc_slot *s)
{
    struct nvc_reg_table *t = nvc_rt.mbox[0] ? nvc_reg_table(nvc_rt.mbox[0]) : NULL;
    struct nvc_reg *e = NULL;
    if (!t) {
        s->status = UINT32_MAX; /* no verdict: distinct from every nvc_reg_verdict */
        return;
    }
    if (s->op != NVC_OP_REG_JOIN && s->op != NVC_OP_REG_UNTRACK && s->arg[0] != UINT64_MAX) {
        if (s->arg[0] >= NVC_REG_ENTRIES) {
            s->status = NVC_ERR;
            return;
        }
        e = &t->e[s->arg[0]];
    }
    s->status = NVC_OK;
    switch (s->op) {
    case NVC_OP_REG_JOIN: {
        int nodes[NVC_REG_MAXPARTS];
        uint32_t nparts = (uint32_t)s->arg[3];
        const uint16_t *pn = (const uint16_t *)nvc_slot_data(s);
        for (uint32_t p = 0; p < nparts && p < NVC_REG_MAXPARTS; p++)
            nodes[p] = pn[p];
        struct nvc_reg lay;
        int v = nvc_reg_join(t, s->arg[0], s->arg[1], s->arg[2], (int)s->arg[4], nparts, nodes, s->arg[5], &e, &lay);
        s->status = (uint32_t)v;
        s->arg[0] = e ? (uint64_t)(e - t->e) : UINT64_MAX;
        if (v == NVC_REG_PASS_DRAIN) {
            s->arg[1] = atomic_load(&lay.owner);
            s->arg[2] = lay.stripe;
            s->arg[3] = lay.nparts;
            s->arg[4] = atomic_load(&lay.synced);
            uint16_t *out = (uint16_t *)nvc_slot_data(s);
            for (uint32_t p = 0; p < lay.nparts; p++)
                out[p] = lay.part_node[p];
        }
        break;
    }
    case NVC_OP_REG_DRAINED:
        if (e)
            nvc_reg_drained(e);
        break;
    case NVC_OP_REG_WAIT: { /* polled by the requester: the agent never blocks on a drain */
        /* 1: still draining; 2: the drain failed (the caching open caches again); 0: drained. */
        uint32_t st = e ? atomic_load_explicit(&e->state, memory_order_acquire) : NVC_REG_SHARED;
        s->arg[1] = st == NVC_REG_DRAINING ? 1 : st == NVC_REG_CACHED ? 2 : 0;
        break;
    }
    case NVC_OP_REG_DRAIN_FAILED:
        if (e)
            nvc_reg_drain_failed(e);
        break;
    case NVC_OP_REG_DISOWN: nvc_reg_disown(t, e, s->arg[1]); break;
    case NVC_OP_REG_LEAVE: nvc_reg_leave(t, e); break;
    case NVC_OP_REG_UNTRACK: nvc_reg_untrack(t); break;
    case NVC_OP_REG_SYNCED:
        if (e)
            atomic_store_explicit(&e->synced, 1, memory_order_seq_cst);
        break;
    case NVC_OP_REG_OWNED: s->arg[1] = e && nvc_reg_owned(e, s->arg[1]); break;
    default: s->status = NVC_ERR; break;
    }
}

/* The agent's mapping of part `part` of file `fileid` (a part of this host's nodes), mapped on
 * first use; NULL when it cannot be mapped (the mailbox path then answers). */
static struct apart *agent_part(uint64_t fileid, uint32_t part)
{
    for (struct apart *a = rm.parts; a; a = a->next)
        if (a->fileid == fileid && a->part == part)
            return a;
    char file[1200];
    nvc_part_name(file, sizeof file, nvc_rt.jobid, fileid, part);
    struct apart *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (nvc_part_attach(&a->p, file, 1) != 0 || a->p.hdr->fileid != fileid) {
        if (a->p.base)
            nvc_part_close(&a->p, 0);
        free(a);
        return NULL;
    }
    a->fileid = fileid;
    a->part = part;
    a->next = rm.parts;
    rm.parts = a;
    return a;
}

/* Enters the part's reserved data bytes up to `end` into the agent's page tables in one call
 * (a fresh mapping would otherwise fault on every 4 KiB page a request touches, which cost
 * more than the hand-off to the manager saved); only reserved bytes, which are backed, so no
 * NVRAM is allocated by it. */
static void agent_populate(struct apart *a, uint64_t end, uint64_t reserved)
{
#if defined(MADV_POPULATE_WRITE)
    if (end > reserved)
        end = reserved;
    end = (end + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
    if (end > reserved)
        end = reserved / NVC_PAGE * NVC_PAGE;
    if (end <= a->mapped)
        return;
    /* Ahead by the larger of what is mapped and 1 MiB, within the reserved space. */
    uint64_t ahead = a->mapped > (1u << 20) ? a->mapped : (1u << 20);
    uint64_t to = end + ahead < reserved ? end + ahead : reserved / NVC_PAGE * NVC_PAGE;
    if (to < end)
        to = end;
    madvise(a->p.data + a->mapped, to - a->mapped, MADV_POPULATE_WRITE); /* a hint: faults happen anyway where it fails */
    a->mapped = to;
#else
    (void)a;
    (void)end;
    (void)reserved;
#endif
}

/* Drops the mappings of parts that were removed (the file closed), so that their NVRAM is
 * freed; called when the agent is idle, at most every NVC_AGENT_SWEEP_NS. */
static void agent_sweep(void)
{
    for (struct apart **pp = &rm.parts; *pp;) {
        struct apart *a = *pp;
        struct stat sb;
        if (fstat(a->p.fd, &sb) != 0 || sb.st_nlink == 0) {
            *pp = a->next;
            nvc_part_close(&a->p, 0);
            free(a);
        } else
            pp = &a->next;
    }
}

/* Serves a read or a write of slot s from the part itself, as a rank of this host would
 * (cache.c, direct access); returns 0 when served (status set), -1 when the mailbox must serve
 * it (the manager then also gives the right answer for a bypassed, draining or unmapped part). */
static int serve_direct(struct nvc_slot *s)
{
    if (s->op != NVC_OP_READ && s->op != NVC_OP_WRITE)
        return -1;
    struct apart *a = agent_part(s->fileid, s->part);
    if (!a)
        return -1;
    struct nvc_part *p = &a->p;
    uint64_t res = __atomic_load_n(&p->hdr->reserved, __ATOMIC_ACQUIRE), total = 0, end = 0;
    for (uint32_t i = 0; i < s->nseg; i++) {
        uint64_t off = s->seg[i].off, len = s->seg[i].len;
        if (len & NVC_SEG_MERGE)
            return -1; /* pages to merge, with their masks: the manager's read */
        total += len;
        if (off + len > end)
            end = off + len;
        if (off > p->hdr->capacity || len > p->hdr->capacity - off || total > nvc_cfg.slot_bytes)
            return -1; /* the manager refuses it */
        if (s->op == NVC_OP_WRITE && off + len > res)
            return -1; /* needs a reservation: the manager's write makes it */
    }
    agent_populate(a, end, res);
    if (s->op == NVC_OP_READ) {
        if (__atomic_load_n(&p->hdr->state, __ATOMIC_ACQUIRE) != NVC_PART_ACTIVE)
            return -1;
        uint8_t *dst = nvc_slot_data(s);
        for (uint32_t i = 0; i < s->nseg; i++) {
            nvc_part_read(p, s->seg[i].off, s->seg[i].len, res, dst);
            dst += s->seg[i].len;
        }
        s->arg[0] = __atomic_load_n(&p->hdr->size, __ATOMIC_ACQUIRE);
        s->status = NVC_OK;
        return 0;
    }
    /* As a direct writer of the host's ranks (cache.c): a drain that begins now waits for it. */
    if (nvc_part_writer_enter(p))
        return -1;
    const uint8_t *src = nvc_slot_data(s);
    for (uint32_t i = 0; i < s->nseg; i++) {
        memcpy(p->data + s->seg[i].off, src, s->seg[i].len);
        src += s->seg[i].len;
    }
    nvc_part_writer_leave(p, s->seg, s->nseg, s->arg[0]);
    s->status = NVC_OK;
    return 0;
}

/* Marks the agent's completed reply sends free; returns how many are still in flight. */
static int reap_replies(void)
{
    if (rm.in_flight == 0)
        return 0;
    int done = 0;
    int idx[NVC_AGENT_REPLIES];
    MPI_Status st[NVC_AGENT_REPLIES];
    PMPI_Testsome(NVC_AGENT_REPLIES, rm.sent, &done, idx, st);
    if (done != MPI_UNDEFINED)
        rm.in_flight -= done;
    return rm.in_flight;
}

/* A free reply buffer (waiting, as wait_all does, for a send to complete when all are in
 * flight); -1 when one cannot be allocated. */
static int reply_buffer(void)
{
    for (int i = 0;; i++) {
        reap_replies();
        for (int b = 0; b < NVC_AGENT_REPLIES; b++) {
            if (rm.sent[b] != MPI_REQUEST_NULL)
                continue;
            if (!rm.out[b] && !(rm.out[b] = malloc(rm.cap)))
                return -1;
            return b;
        }
        wait_pause(i);
    }
}

/* Serves one request from rank src for node (the message's tag). */
static void serve(int node, size_t len, int src)
{
    struct nvc_slot *s = rm.aslot;
    int table = 0;
    if (len >= sizeof(struct nvc_wire)) {
        uint32_t op;
        memcpy(&op, rm.abuf, sizeof op);
        table = op >= NVC_OP_REG_JOIN && op <= NVC_OP_REG_DRAIN_FAILED;
    }
    if (!table && node >= 0 && node < nvc_rt.nnodes && nvc_rt.mbox[node])
        s = nvc_mailbox_slot(nvc_rt.mbox[node], (uint32_t)nvc_rt.host_size); /* the agent's slot */
    if (unpack(rm.abuf, len, s) != 0) {
        nvc_msg("malformed request from rank %d for node %d; refused", src, node);
        memset(s, 0, sizeof *s);
        s->status = NVC_ERR;
    } else if (table)
        serve_table(s);
    else if (s == rm.aslot) {
        nvc_msg("request from rank %d for node %d, which is not on this host; refused", src, node);
        s->status = NVC_ERR;
    } else if (serve_direct(s) == 0)
        rm.served_direct++;
    else {
        rm.served_mailbox++;
        nvc_mailbox_call(nvc_rt.mbox[node], s);
    }
    int b = reply_buffer();
    if (b < 0) {
        nvc_msg("out of memory for a reply to rank %d; the agent stops", src);
        abort(); /* the requester would wait forever */
    }
    size_t n = pack(rm.out[b], s, reply_data(s));
    PMPI_Isend(rm.out[b], (int)n, MPI_BYTE, src, NVC_TAG_REPLY, rm.rep, &rm.sent[b]);
    rm.in_flight++;
}

static void *agent_main(void *arg)
{
    (void)arg;
    uint64_t last = nvc_now_ns(), swept = last;
    long idle_us = 20;
    for (;;) {
        int flag = 0, len = 0;
        MPI_Message msg;
        MPI_Status st;
        PMPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, rm.req, &flag, &msg, &st);
        if (!flag) {
            int pending = reap_replies();
            if (nvc_now_ns() - last < NVC_AGENT_BURST_NS) {
                sched_yield(); /* within a burst of requests: answer the next one at once */
                continue;
            }
            if (pending) {
                /* replies still moving: test them again soon, as a requester waits for its own */
                wait_pause(NVC_WAIT_YIELDS);
                continue;
            }
            if (rm.parts && nvc_now_ns() - swept > NVC_AGENT_SWEEP_NS) {
                agent_sweep();
                swept = nvc_now_ns();
            }
            struct timespec ts = {0, idle_us * 1000};
            nanosleep(&ts, NULL);
            /* Doubling, up to the bound for the time since the last request (which only grows
               while idle, so idle_us never exceeds it). */
            uint64_t bound = (nvc_now_ns() - last) / 1000u / NVC_AGENT_QUIET_SHARE;
            long cap = bound > NVC_AGENT_DEEP_IDLE_US ? NVC_AGENT_DEEP_IDLE_US : (long)bound;
            if (cap < NVC_AGENT_IDLE_US)
                cap = NVC_AGENT_IDLE_US;
            idle_us = idle_us * 2 < cap ? idle_us * 2 : cap;
            continue;
        }
        PMPI_Get_count(&st, MPI_BYTE, &len);
        if (len < 0 || (size_t)len > rm.cap) {
            /* Received whole and dropped (a truncated receive would be an MPI error); the
               requester gets an error reply, not silence. */
            void *junk = malloc(len > 0 ? (size_t)len : 1);
            PMPI_Mrecv(junk, len, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            free(junk);
            len = 0;
        } else
            PMPI_Mrecv(rm.abuf, len, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == NVC_TAG_STOP) {
            MPI_Status sst[NVC_AGENT_REPLIES];
            wait_all(NVC_AGENT_REPLIES, rm.sent, sst);
            rm.in_flight = 0;
            break;
        }
        uint64_t t0 = nvc_now_ns();
        serve(st.MPI_TAG, (size_t)len, st.MPI_SOURCE);
        last = nvc_now_ns();
        rm.serve_ns += last - t0;
        idle_us = 20;
    }
    return NULL;
}

int nvc_remote_start(void)
{
    rm.cap = sizeof(struct nvc_wire) + NVC_MAXSEG * sizeof(struct nvc_seg) + nvc_cfg.slot_bytes;
    rm.slot = calloc((size_t)nvc_rt.nnodes, sizeof *rm.slot);
    rm.buf = malloc(rm.cap);
    rm.rbuf = malloc(rm.cap);
    int ok = rm.slot && rm.buf && rm.rbuf;
    for (int b = 0; b < NVC_AGENT_REPLIES; b++)
        rm.sent[b] = MPI_REQUEST_NULL;
    rm.in_flight = 0;
    if (ok && nvc_rt.host_rank == 0) {
        rm.aslot = slot_alloc();
        rm.abuf = malloc(rm.cap);
        ok = rm.aslot && rm.abuf;
    }
    PMPI_Comm_dup(MPI_COMM_WORLD, &rm.req);
    PMPI_Comm_dup(MPI_COMM_WORLD, &rm.rep);
    if (ok && nvc_rt.host_rank == 0) {
        int e = pthread_create(&rm.thread, NULL, agent_main, NULL);
        if (e)
            nvc_msg("pthread_create(agent) failed: %s", strerror(e));
        rm.running = e == 0;
        ok = rm.running;
    }
    if (!ok)
        nvc_msg("cannot set up requests to other hosts (out of memory or threads)");
    return ok ? 0 : -1;
}

void nvc_remote_stop(void)
{
    if (rm.running) {
        PMPI_Send(NULL, 0, MPI_BYTE, nvc_rt.world_rank, NVC_TAG_STOP, rm.req);
        pthread_join(rm.thread, NULL);
        rm.running = 0;
        if (nvc_cfg.stats)
            fprintf(stderr, "nvcache-stats rank=%d agent direct=%llu mailbox=%llu mean_serve_us=%.1f\n",
                    nvc_rt.world_rank, (unsigned long long)rm.served_direct, (unsigned long long)rm.served_mailbox,
                    rm.served_direct + rm.served_mailbox
                        ? (double)rm.serve_ns / 1e3 / (double)(rm.served_direct + rm.served_mailbox)
                        : 0.0);
    }
    if (rm.req != MPI_COMM_NULL)
        PMPI_Comm_free(&rm.req);
    if (rm.rep != MPI_COMM_NULL)
        PMPI_Comm_free(&rm.rep);
    while (rm.parts) {
        struct apart *a = rm.parts;
        rm.parts = a->next;
        nvc_part_close(&a->p, 0);
        free(a);
    }
    for (int k = 0; rm.slot && k < nvc_rt.nnodes; k++)
        free(rm.slot[k]);
    free(rm.slot);
    free(rm.buf);
    free(rm.rbuf);
    free(rm.aslot);
    free(rm.abuf);
    for (int b = 0; b < NVC_AGENT_REPLIES; b++) {
        free(rm.out[b]);
        rm.out[b] = NULL;
    }
    rm.slot = NULL;
    rm.aslot = NULL;
    rm.buf = rm.rbuf = rm.abuf = NULL;
}
