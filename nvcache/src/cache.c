/* cache.c: one cached file as seen by a rank.
 *
 * Open (collective): the real file is opened through PMPI; the nodes of the communicator each own
 * one part (file blocks of `stripe` bytes round-robin over the parts; the stripe is the paper's
 * equal part, size/nparts rounded up to a page, but at least NVCACHE_STRIPE, so files can grow);
 * one representative rank per node asks its manager to create the part and prefetches it.
 * Reads and writes are cut at view and stripe boundaries; pieces of my node's part are copied to or
 * from its mapping directly (see "direct access"), the others are sent, batched, to the owning managers.
 * Close (collective) drains dirty pages to the real file and discards the parts. Anything the cache
 * cannot do (out of NVRAM, shared pointers, atomic mode, non-native data representations) moves
 * the file to bypass mode: its dirty data is drained first, then all I/O goes to the real file.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static struct nvc_file *files;
static void comm_release(struct nvc_file *f);
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;

#define NEED_BYPASS 0x7fff0001 /* NVRAM full: the file passes through, said once per part */
#define NEED_PASS 0x7fff0002   /* a part was bypassed by another rank or handle: the file passes through quietly */

static int bypass(struct nvc_file *f, const char *why, int quiet);

/* Whether this rank represents its node's part of f (the one rank that drains and sizes it). */
static int represents_part(const struct nvc_file *f)
{
    return f->my_part >= 0 && f->part_rep[f->my_part] == f->rank;
}

/* Whether f may still serve an operation from the cache: no other handle of its file opened since. */
static int still_owned(struct nvc_file *f)
{
    if (!f->reg_owner)
        return 1;
    if (f->reg)
        return nvc_reg_owned(f->reg, f->fileid);
    /* The table is on another host: a second handle's drain moves every part of this open out of
       ACTIVE before that handle's open returns, and requests to other parts see it there. */
    return !f->direct || __atomic_load_n(&f->direct->hdr->state, __ATOMIC_ACQUIRE) == NVC_PART_ACTIVE;
}

/* Moves f to pass-through once another handle of its file was opened (quietly: normal operation);
 * waits for that handle's drain of f's parts if it still runs. */
static void pass_if_shared(struct nvc_file *f)
{
    if (f->mode == NVC_MODE_CACHED && !still_owned(f))
        bypass(f, "another handle of the file was opened", 1);
}

struct nvc_file *nvc_file_lookup(MPI_File fh)
{
    if (fh == MPI_FILE_NULL)
        return NULL;
    pthread_mutex_lock(&files_lock);
    struct nvc_file *f = files;
    while (f && f->real != fh)
        f = f->next;
    pthread_mutex_unlock(&files_lock);
    return f;
}

void nvc_close_left_open(void)
{
    /* The files this rank opened, oldest first (the list is newest first): every rank of a file's
       group opened the group's files in one order (MPI_File_open is collective), so closing them
       in that order meets the close's collectives as the opens met theirs. Only files all ranks
       agreed to cache (a pass-through handle holds nothing in NVRAM); delete-on-close files stay
       open, as under plain MPI-IO, and their parts are removed by nvcache-recover. Threads of an
       MPI_THREAD_MULTIPLE application may have opened files on different communicators at once,
       in different orders on different ranks: closing them could deadlock, so their data stays
       in NVRAM for nvcache-recover, as before. */
    if (nvc_rt.job_thread_level == MPI_THREAD_MULTIPLE) {
        nvc_debug("files left open at MPI_Finalize by a multithreaded application stay in NVRAM");
        return;
    }
    pthread_mutex_lock(&files_lock);
    size_t n = 0;
    for (struct nvc_file *f = files; f; f = f->next)
        n++;
    struct nvc_file **left = n ? malloc(n * sizeof *left) : NULL;
    size_t k = 0;
    for (struct nvc_file *f = files; f && left; f = f->next)
        if (f->mode != NVC_MODE_PASS && !(f->amode & MPI_MODE_DELETE_ON_CLOSE))
            left[k++] = f;
    pthread_mutex_unlock(&files_lock);
    /* Closing one file frees its own state only: the others stay valid until their turn. */
    while (k > 0) {
        struct nvc_file *f = left[--k];
        MPI_File h = f->real;
        nvc_debug("%s: still open at MPI_Finalize; closing it (its cached data to the file)", f->path);
        MPI_File_close(&h);
    }
    free(left);
}

static void file_register(struct nvc_file *f)
{
    pthread_mutex_lock(&files_lock);
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_lock);
}

/* ------------------------------------------------------------------ communicators and collectives
 *
 * nvcache's own collectives on an open file (the close barrier or reductions, sync, set_size) meet
 * in shared memory (mailbox.c, "collectives in shared memory"; the transport is single-host), not on
 * a duplicate communicator: MPI_Comm_dup is a collective itself (0.25 ms with 4 ranks on 2 cores),
 * and on this MPICH (4.0.2, ch4:ucx) every extra live communicator made ROMIO's first
 * MPI_File_open on a Cartesian communicator 0.7 ms slower (measured with a plain MPI program and one
 * extra MPI_Comm_dup(MPI_COMM_WORLD); freeing it removed the effect). The entry is claimed by the
 * communicator's rank 0 and its index agreed in the open's single MPI collective, an Allreduce on
 * the application's communicator. That collective is issued inside MPI_File_open on that
 * communicator, which every rank calls in the same place of the communicator's collective order (it
 * is a collective on it; ROMIO itself calls MPI_Comm_dup on it there), and collectives never match
 * point-to-point traffic, so it cannot be confused with the application's own communication. The
 * collectives that follow on the entry are issued only inside blocking collective calls on that file
 * (close, sync, set_size, preallocate), which every rank of the file's group makes in the same order.
 *
 * File ids: parts are named by them, so representatives need the id before the agreement. For a
 * file whose group is the whole job (MPI_COMM_WORLD, or a Cartesian grid over it), the n-th such open
 * is the same file on every rank: blocking collective opens over one group must come in the same
 * order on all its ranks (else they could deadlock, MPI 4.1 section 6.14), so a per-process counter
 * names it, with no exchange. Other communicators get a block of ids from their rank 0 at their
 * first open (one Allreduce inside that open), cached as an attribute with the communicator's
 * layout. With MPI_THREAD_MULTIPLE two threads could open files on two communicators concurrently,
 * so there every open takes its id from its communicator's rank 0.
 *
 * The node layout of a communicator comes from the job-wide rank -> node table built in MPI_Init
 * (MPI_Group_translate_ranks is local), not from an Allgather. */
struct comm_cache {
    int world;                 /* the communicator's group is MPI_COMM_WORLD's (in any order) */
    uint32_t nparts;           /* the communicator's parts (nodes do not change) */
    int *part_node, *part_rep, my_part, layout_ok;
    uint64_t id_base, opens;   /* block of file ids reserved by its rank 0 */
    /* Jobs across hosts: one duplicate of the communicator for the collectives of all its cached
       files (mcomm_get), freed when the last of them closes. One per file halved the files a
       job could keep open: MPICH's communicator ids ran out at about 1700 open files, where
       ROMIO (one duplicate per file itself) crashed in MPI_File_open. */
    MPI_Comm mdup;
    int mdup_refs;
    struct comm_cache *next;   /* entries are few (one per communicator files are opened on) and never freed */
};
static struct comm_cache *comm_caches;
static int comm_keyval = MPI_KEYVAL_INVALID;
static int comm_threads = -1;

static int comm_cache_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr;
    (void)extra;
    return MPI_SUCCESS; /* the record stays on comm_caches (small) */
}

/* The file's collectives: the shared-memory entry agreed at open, or, when the job spans hosts
   (no memory is shared across them), a duplicate of the file's communicator made at open. */
static void coll_barrier(struct nvc_file *f)
{
    if (f->mcomm != MPI_COMM_NULL)
        PMPI_Barrier(f->mcomm);
    else
        nvc_coll_run(f->coll, f->size, NVC_COLL_BARRIER, NULL, 0);
}

static void coll_max(struct nvc_file *f, int64_t *v, int n)
{
    if (f->mcomm != MPI_COMM_NULL)
        PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, f->mcomm);
    else
        nvc_coll_run(f->coll, f->size, NVC_COLL_MAX, v, n);
}

/* Multi-host jobs: sets f->mcomm to the duplicate of comm for nvcache's collectives, shared by the
 * files open on comm (one duplicate per file where no record of comm is kept: MPI_THREAD_MULTIPLE).
 * Collective over comm: every rank of it calls this in the same open. */
static int mcomm_get(struct nvc_file *f, MPI_Comm comm)
{
    struct comm_cache *cc = NULL;
    int found = 0;
    if (comm_keyval != MPI_KEYVAL_INVALID && (PMPI_Comm_get_attr(comm, comm_keyval, &cc, &found) != MPI_SUCCESS || !found))
        cc = NULL;
    if (!cc)
        return PMPI_Comm_dup(comm, &f->mcomm);
    if (cc->mdup_refs == 0) {
        int rc = PMPI_Comm_dup(comm, &cc->mdup);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    cc->mdup_refs++;
    f->mcomm = cc->mdup;
    f->mcomm_owner = cc;
    return MPI_SUCCESS;
}

static void comm_release(struct nvc_file *f)
{
    if (f->coll)
        nvc_coll_leave(f->coll, f->size);
    f->coll = NULL;
    struct comm_cache *cc = f->mcomm_owner;
    if (cc) {
        if (--cc->mdup_refs == 0)
            PMPI_Comm_free(&cc->mdup);
        f->mcomm = MPI_COMM_NULL;
        f->mcomm_owner = NULL;
    } else if (f->mcomm != MPI_COMM_NULL)
        PMPI_Comm_free(&f->mcomm);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* The parts of a communicator: one per node with ranks in it, in node order; each part's
 * representative is the node's lowest rank. From the job-wide table (local calls only). Returns
 * 0, or -1 when a rank is not in MPI_COMM_WORLD (dynamic processes) or memory is short. */
static int comm_layout(MPI_Comm comm, int size, int rank, uint32_t *nparts, int **part_node, int **part_rep, int *my_part)
{
    int *wr = malloc(sizeof(int) * (size_t)size * 3);
    *part_node = malloc(sizeof(int) * (size_t)size);
    *part_rep = malloc(sizeof(int) * (size_t)size);
    MPI_Group g = MPI_GROUP_NULL;
    int rc = -1;
    if (!wr || !*part_node || !*part_rep || PMPI_Comm_group(comm, &g) != MPI_SUCCESS)
        goto out;
    int *idx = wr + size, *sorted = wr + 2 * size;
    for (int r = 0; r < size; r++)
        idx[r] = r;
    if (PMPI_Group_translate_ranks(g, size, idx, nvc_rt.world_group, wr) != MPI_SUCCESS)
        goto out;
    for (int r = 0; r < size; r++) {
        if (wr[r] == MPI_UNDEFINED || wr[r] < 0 || wr[r] >= nvc_rt.world_size)
            goto out;
        sorted[r] = nvc_rt.rank_node[wr[r]];
    }
    qsort(sorted, (size_t)size, sizeof(int), cmp_int);
    uint32_t n = 0;
    for (int i = 0; i < size; i++)
        if (!n || (*part_node)[n - 1] != sorted[i])
            (*part_node)[n++] = sorted[i];
    *nparts = n;
    *my_part = -1;
    for (uint32_t p = 0; p < n; p++) {
        for (int r = 0; r < size; r++)
            if (nvc_rt.rank_node[wr[r]] == (*part_node)[p]) {
                (*part_rep)[p] = r;
                break;
            }
        if ((*part_node)[p] == nvc_rt.rank_node[wr[rank]])
            *my_part = (int)p;
    }
    rc = 0;
out:
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    free(wr);
    return rc;
}

static void file_free(struct nvc_file *f)
{
    pthread_mutex_lock(&files_lock);
    for (struct nvc_file **pp = &files; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    pthread_mutex_unlock(&files_lock);
    comm_release(f);
    if (f->direct) {
        nvc_part_close(f->direct, 0);
        free(f->direct);
    }
    free(f->dseg);
    nvc_flat_free(&f->view.ft);
    free(f->part_node);
    free(f->part_rep);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Maps the first bytes of a part's data area (ones that hold data: populating a hole of a tmpfs
 * part would allocate NVRAM) into this process's page tables at once: one call instead of a page
 * fault for every 4 KiB this rank touches first (reads of a prefetched file, measured below). */
static void populate(struct nvc_part *p, uint64_t bytes)
{
#ifdef MADV_POPULATE_READ
    uint64_t n = bytes < p->hdr->capacity ? bytes : p->hdr->capacity;
    n = n / NVC_PAGE * NVC_PAGE;
    if (n)
        madvise(p->data, n, MADV_POPULATE_READ); /* a hint: the faults happen anyway where it fails */
#else
    (void)p;
    (void)bytes;
#endif
}

/* ------------------------------------------------------------------ requests */

/* Starts request op in slot s: no segments, arguments zero. */
static struct nvc_slot *slot_start(struct nvc_slot *s, uint32_t op, uint64_t fileid, uint32_t part)
{
    s->op = op;
    s->fileid = fileid;
    s->part = part;
    s->nseg = 0;
    memset(s->arg, 0, sizeof s->arg);
    return s;
}

static struct nvc_slot *req(struct nvc_file *f, uint32_t part, uint32_t op)
{
    return slot_start(nvc_my_slot(f->part_node[part]), op, f->fileid, part);
}

static uint32_t call(struct nvc_file *f, uint32_t part, struct nvc_slot *s)
{
    nvc_node_call(f->part_node[part], s);
    return s->status;
}

/* ------------------------------------------------------------------ data path */

struct batch {
    struct nvc_slot *s;
    uint64_t bytes, file_end;
    uint8_t **dst;
};

struct io_ctx {
    struct nvc_file *f;
    int write;
    uint8_t *data;             /* packed user data (stream order) */
    int64_t s0;                /* stream offset of data[0] */
    int64_t eof;               /* reads: stop at this file offset */
    int64_t done;              /* reads: bytes before eof */
    struct batch *b;
    uint32_t status;
    int dpart;                 /* part served by direct access (-1: none, or it fell back to the manager) */
    int dopen;                 /* writes: a direct batch is open (this rank counts in hdr->writers) */
    uint32_t dn;               /* segments in the direct batch */
    uint64_t dend;             /* file end of the direct batch */
};

/* ------------------------------------------------------------------ direct access
 *
 * The ranks of a node map their node's parts themselves and serve their own requests to them
 * without a mailbox round trip: the same steps as the manager's write (copy, persist the data,
 * set and persist the dirty bits with atomic operations, raise the persistent size, then return),
 * so an acknowledged write is recoverable exactly as before. The manager still creates, reserves
 * (fallocate, capacity), drains for other ranks and removes parts; a direct writer asks it to
 * reserve when it reaches the end of the reserved space. Bypass: a direct writer announces itself
 * in hdr->writers before it checks that the part is ACTIVE; the drain of a DRAINING part waits
 * until writers is 0 and BYPASS_END retries while it is not, so no write can land after the drain. */

static int direct_begin(struct io_ctx *c)
{
    if (nvc_part_writer_enter(c->f->direct))
        return -1;
    c->dopen = 1;
    c->dn = 0;
    c->dend = 0;
    return 0;
}

/* Completes a direct write batch: data durable, then dirty bits, then size; then leaves. */
static void direct_end(struct io_ctx *c)
{
    if (!c->dopen)
        return;
    nvc_part_writer_leave(c->f->direct, c->f->dseg, c->dn, c->dend);
    c->dopen = 0;
    c->dn = 0;
}

static uint32_t call(struct nvc_file *f, uint32_t part, struct nvc_slot *s);
static struct nvc_slot *req(struct nvc_file *f, uint32_t part, uint32_t op);

/* Returns 0 when done, 1 on error (c->status set), -1 when the manager must serve this segment. */
static int direct_seg(struct io_ctx *c, uint64_t local, uint64_t len, uint8_t *ptr, uint64_t file_end)
{
    struct nvc_part *p = c->f->direct;
    if (!c->write) {
        if (__atomic_load_n(&p->hdr->state, __ATOMIC_ACQUIRE) == NVC_PART_BYPASS)
            return -1; /* the manager answers BYPASS */
        if (local + len > p->hdr->capacity) {
            /* Past what a part can hold (a file grown by set_size): as for a write there, the
               file leaves the cache and the read goes to MPI-IO. */
            c->status = NVC_NOSPACE;
            return 1;
        }
        nvc_part_read(p, local, len, __atomic_load_n(&p->hdr->reserved, __ATOMIC_ACQUIRE), ptr);
        if (c->f->st)
            c->f->st->direct_bytes += len;
        return 0;
    }
    if (local + len > __atomic_load_n(&p->hdr->reserved, __ATOMIC_ACQUIRE)) {
        direct_end(c);
        struct nvc_slot *s = req(c->f, (uint32_t)c->dpart, NVC_OP_RESERVE);
        s->arg[0] = local + len;
        uint32_t st = call(c->f, (uint32_t)c->dpart, s);
        if (st == NVC_NOSPACE) {
            c->status = st;
            return 1;
        }
        if (st != NVC_OK)
            return -1; /* draining or bypassed: the manager path retries or reports it */
    }
    if (!c->dopen && direct_begin(c))
        return -1;
    if (c->dn == NVC_MAXSEG) {
        direct_end(c);
        if (direct_begin(c))
            return -1;
    }
    memcpy(p->data + local, ptr, len);
    if (c->f->st)
        c->f->st->direct_bytes += len;
    c->f->dseg[c->dn].off = local;
    c->f->dseg[c->dn].len = len;
    c->dn++;
    if (file_end > c->dend)
        c->dend = file_end;
    return 0;
}

static int flush_batch(struct io_ctx *c, uint32_t part)
{
    struct batch *b = &c->b[part];
    if (!b->s || !b->s->nseg)
        return 0;
    struct nvc_slot *s = b->s;
    uint32_t st;
    for (;;) {
        s->arg[0] = b->file_end;
        st = call(c->f, part, s);
        if (st != NVC_RETRY)
            break;
        sleep_us(200); /* a drain is running; the part becomes bypassed */
    }
    if (st == NVC_OK && !c->write) {
        const uint8_t *src = nvc_slot_data(s);
        for (uint32_t i = 0; i < s->nseg; i++) {
            memcpy(b->dst[i], src, s->seg[i].len);
            src += s->seg[i].len;
        }
    }
    s->nseg = 0;
    b->bytes = 0;
    b->file_end = 0;
    if (st != NVC_OK) {
        c->status = st;
        return 1;
    }
    return 0;
}

static int add_seg(struct io_ctx *c, uint32_t part, uint64_t local, uint64_t len, uint8_t *ptr, uint64_t file_end)
{
    if ((int)part == c->dpart) {
        int r = direct_seg(c, local, len, ptr, file_end);
        if (r >= 0)
            return r;
        direct_end(c);
        c->dpart = -1; /* the rest of this transfer goes through the manager */
    }
    struct batch *b = &c->b[part];
    uint64_t cap = nvc_cfg.slot_bytes;
    if (!b->s) {
        b->s = req(c->f, part, c->write ? NVC_OP_WRITE : NVC_OP_READ);
        if (!c->write && !b->dst && !(b->dst = malloc(NVC_MAXSEG * sizeof *b->dst))) {
            c->status = NVC_ERR;
            return 1;
        }
    }
    while (len) {
        struct nvc_slot *s = b->s;
        if (s->nseg == NVC_MAXSEG || b->bytes == cap)
            if (flush_batch(c, part))
                return 1;
        uint64_t n = len < cap - b->bytes ? len : cap - b->bytes;
        s->seg[s->nseg].off = local;
        s->seg[s->nseg].len = n;
        if (c->write)
            memcpy(nvc_slot_data(s) + b->bytes, ptr, n);
        else
            b->dst[s->nseg] = ptr;
        s->nseg++;
        b->bytes += n;
        if (file_end > b->file_end)
            b->file_end = file_end;
        local += n;
        ptr += n;
        len -= n;
    }
    return 0;
}

static int map_range(int64_t foff, int64_t len, int64_t soff, void *arg)
{
    struct io_ctx *c = arg;
    struct nvc_file *f = c->f;
    if (!c->write) {
        if (foff >= c->eof)
            return 2;
        if (foff + len > c->eof)
            len = c->eof - foff;
        c->done += len;
    }
    uint8_t *ptr = c->data + (soff - c->s0);
    while (len > 0) {
        uint32_t part;
        uint64_t local;
        nvc_file_to_part((uint64_t)foff, f->stripe, f->nparts, &part, &local);
        int64_t n = (int64_t)(f->stripe - (uint64_t)foff % f->stripe);
        if (n > len)
            n = len;
        if (add_seg(c, part, local, (uint64_t)n, ptr, (uint64_t)(foff + n)))
            return 1;
        foff += n;
        ptr += n;
        len -= n;
    }
    return 0;
}

/* Global file size: maximum of all parts' views. Returns NEED_PASS if a part is bypassed. */
static int parts_size(struct nvc_file *f, int64_t *size)
{
    int64_t m = 0;
    for (uint32_t p = 0; p < f->nparts; p++) {
        if (f->direct && (int)p == f->my_part) {
            if (__atomic_load_n(&f->direct->hdr->state, __ATOMIC_ACQUIRE) == NVC_PART_BYPASS)
                return NEED_PASS;
            int64_t sz = (int64_t)__atomic_load_n(&f->direct->hdr->size, __ATOMIC_ACQUIRE);
            if (sz > m)
                m = sz;
            continue;
        }
        struct nvc_slot *s = req(f, p, NVC_OP_SIZE);
        uint32_t st = call(f, p, s);
        if (st == NVC_BYPASS)
            return NEED_PASS;
        if (st != NVC_OK) {
            nvc_msg("%s: size request to part %u failed", f->path, p);
            return MPI_ERR_IO;
        }
        if ((int64_t)s->arg[0] > m)
            m = (int64_t)s->arg[0];
    }
    *size = m;
    return MPI_SUCCESS;
}

/* Runs the cached transfer of bytes [s0, s0+n) of the view stream. */
static int cached_transfer(struct nvc_file *f, int write, uint8_t *data, int64_t s0, int64_t n, int64_t *done)
{
    struct batch *b = calloc(f->nparts, sizeof *b);
    if (!b)
        return MPI_ERR_NO_MEM;
    struct io_ctx c = {.f = f, .write = write, .data = data, .s0 = s0, .eof = INT64_MAX, .b = b, .status = NVC_OK,
                       .dpart = f->direct ? f->my_part : -1};
    int rc = MPI_SUCCESS;
    if (!write && n > 0) {
        int64_t end = nvc_view_file_offset(&f->view, s0 + n - 1) + 1;
        if (end > f->size_hint) {
            int64_t sz;
            rc = parts_size(f, &sz);
            if (rc != MPI_SUCCESS)
                goto out;
            f->size_hint = sz;
        }
        c.eof = f->size_hint;
    }
    if (write && c.dpart >= 0 && n > 0) {
        /* Reserve my part's share of this write's file span at once: one request to the manager
           instead of one per reservation step (a new file grows 64 KiB, 128 KiB, ...). */
        uint64_t e = (uint64_t)nvc_view_file_offset(&f->view, s0 + n - 1) + 1, local, bound;
        uint64_t fb = (uint64_t)nvc_view_file_offset(&f->view, s0) / f->stripe; /* first block of the span */
        uint32_t pp;
        nvc_file_to_part(e - 1, f->stripe, f->nparts, &pp, &local);
        if ((int)pp == c.dpart)
            bound = local + 1;
        else {
            uint64_t b = (e - 1) / f->stripe; /* last block of the span; mine are b % nparts == dpart */
            uint64_t back = (b % f->nparts + f->nparts - (uint64_t)c.dpart) % f->nparts;
            /* Only if one of my blocks lies in the span: a write that falls wholly in other
               parts' blocks far into the file must not fallocate my part up to there (review:
               1 byte at 65 MiB with 2 parts reserved 33 MiB of NVRAM in the untouched part). */
            bound = b >= back && b - back >= fb ? ((b - back) / f->nparts + 1) * f->stripe : 0;
        }
        if (bound > __atomic_load_n(&f->direct->hdr->reserved, __ATOMIC_ACQUIRE)) {
            struct nvc_slot *s = req(f, (uint32_t)c.dpart, NVC_OP_RESERVE);
            s->arg[0] = bound;
            call(f, (uint32_t)c.dpart, s); /* on failure the segments ask again and report it */
        }
    }
    int mr = nvc_view_map(&f->view, s0, n, map_range, &c);
    direct_end(&c);
    if (mr != 1)
        for (uint32_t p = 0; p < f->nparts; p++)
            if (flush_batch(&c, p))
                break;
    if (c.status == NVC_NOSPACE)
        rc = NEED_BYPASS;
    else if (c.status == NVC_BYPASS)
        rc = NEED_PASS;
    else if (c.status != NVC_OK)
        rc = MPI_ERR_IO;
    *done = write ? n : c.done;
    if (write && rc == MPI_SUCCESS && n > 0) {
        /* The file is at least as long as this write's end: later reads up to it need no size query. */
        int64_t end = nvc_view_file_offset(&f->view, s0 + n - 1) + 1;
        if (end > f->size_hint)
            f->size_hint = end;
    }
out:
    for (uint32_t p = 0; p < f->nparts; p++)
        free(b[p].dst);
    free(b);
    return rc;
}

static int bypass_io(struct nvc_file *f, int write, int64_t off, void *buf, MPI_Count count, MPI_Datatype dt,
                     MPI_Status *status, int64_t *done)
{
    MPI_Status st;
    int rc = nvc_file_rw_at(f->real, write, off, buf, count, dt, &st);
    MPI_Count bytes = 0;
    if (rc == MPI_SUCCESS)
        PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
    *done = bytes;
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return rc;
}

/* True for types whose typemap is in memory order: predefined, or contiguous/dup of predefined.
 * Other derived types can cover their extent exactly yet in a permuted order (HDF5 builds such
 * struct types), so they always go through MPI_Pack/MPI_Unpack. */
static int simple_type(MPI_Datatype dt)
{
    int ni, na, nd, comb, large;
    if (nvc_type_envelope(dt, &ni, &na, &nd, &comb, &large) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if (large || (comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || ni > 1 || na || nd != 1)
        return 0; /* packed (a large-count type's contents need MPI_Type_get_contents_c) */
    int ints[1];
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(dt, ni, na, nd, ints, NULL, &inner) != MPI_SUCCESS)
        return 0;
    int r = simple_type(inner);
    int ini, ina, ind, icomb, ilarge;
    if (nvc_type_envelope(inner, &ini, &ina, &ind, &icomb, &ilarge) == MPI_SUCCESS && icomb != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    return r;
}

/* Whether MPI-IO refuses transfers that are not a whole number of etypes: ROMIO does (MPICH). */
#ifdef OMPI_MAJOR_VERSION
#define NVC_INTEGRAL_ETYPES 0
#else
#define NVC_INTEGRAL_ETYPES 1
#endif

/* Whether dt is a predefined type (always committed). */
static int named_type(MPI_Datatype dt)
{
    int ni, na, nd, comb, large;
    return nvc_type_envelope(dt, &ni, &na, &nd, &comb, &large) == MPI_SUCCESS && comb == MPI_COMBINER_NAMED;
}

/* Bytes by which a transfer of `bytes` that moved `done` moves the individual file pointer. They
 * differ for a read that reached the end of the file, where plain MPI-IO moves it as follows, and
 * so does nvcache (a later write through the pointer lands where it would): OMPIO (Open MPI)
 * always by the whole request; ROMIO (MPICH) by the bytes read for a blocking call whose memory
 * type and file view are both contiguous (a memory type that covers its extent and starts at or
 * before its buffer address: ROMIO counts one with a positive true lower bound non-contiguous)
 * and by the whole request otherwise (a nonblocking call moves it when posted). Left different:
 * a collective read whose ranks' requests interleave (ROMIO's two-phase path moves it by the
 * whole request), a memory type whose typemap covers its extent out of order (MPICH counts it
 * non-contiguous), and an end of file inside an etype (ROMIO's pointer stops mid-etype). */
static int64_t pointer_moved(const struct nvc_file *f, MPI_Datatype dt, int use_fp, int64_t bytes, int64_t done)
{
    if (done >= bytes)
        return done;
#ifdef OMPI_MAJOR_VERSION
    (void)f;
    (void)dt;
    (void)use_fp;
    return bytes;
#else
    MPI_Count size, lb, ext, tlb, text;
    int contig_mem = use_fp != NVC_FP_NONBLOCKING && PMPI_Type_size_x(dt, &size) == MPI_SUCCESS &&
                     PMPI_Type_get_extent_x(dt, &lb, &ext) == MPI_SUCCESS &&
                     PMPI_Type_get_true_extent_x(dt, &tlb, &text) == MPI_SUCCESS && size == ext && size == text &&
                     tlb <= 0;
    return contig_mem && !f->view.opaque && f->view.ft.contiguous ? done : bytes;
#endif
}

int nvc_io(struct nvc_file *f, int write, int64_t explicit_off, int use_fp, void *buf, MPI_Count count,
           MPI_Datatype dt, MPI_Status *status)
{
    uint64_t t0 = nvc_now_ns();
    MPI_Count tsize, lb, ext, tlb, text;
    pthread_mutex_lock(&f->lock);
    int64_t off = use_fp ? f->fp : explicit_off;
    if (dt == MPI_DATATYPE_NULL || count < 0 || off < 0) {
        /* Erroneous arguments: MPI-IO reports them as it does without nvcache (its error class,
           the file's error handler), not as fatal errors of the calls nvcache would make with
           them; nothing is transferred. */
        pthread_mutex_unlock(&f->lock);
        return nvc_file_rw_at(f->real, write, off, buf, count, dt, status);
    }
    int rc = PMPI_Type_size_x(dt, &tsize);
    if (rc != MPI_SUCCESS) {
        pthread_mutex_unlock(&f->lock);
        return rc;
    }
    int64_t bytes = (int64_t)count * tsize, done = 0;
    if (f->mode == NVC_MODE_CACHED && !named_type(dt)) {
        /* A derived memory type that was never committed: MPI-IO refuses it (MPI_ERR_TYPE), but
           MPI_Type_size takes it, and the cache wrote a contiguous one and aborted the job in
           MPI_Pack on another. MPI-IO checks the type of a transfer of no elements too, and
           reports it through the file's handler, as it would the application's call. The lock is
           not held meanwhile: that handler may call this file's functions (or close it). The
           call then goes on as if it started after the check. */
        pthread_mutex_unlock(&f->lock);
        rc = nvc_file_rw_at(f->real, write, 0, buf, 0, dt, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        pthread_mutex_lock(&f->lock);
        off = use_fp ? f->fp : explicit_off;
    }
    if (f->mode == NVC_MODE_CACHED && NVC_INTEGRAL_ETYPES && bytes % f->view.etype_size) {
        /* Not a whole number of etypes: ROMIO refuses the transfer (MPI_ERR_IO, nothing written;
           after the type check, as ROMIO checks; OMPIO takes it, and so does the cache there). */
        pthread_mutex_unlock(&f->lock);
        return nvc_raise(f, MPI_ERR_IO);
    }
    pass_if_shared(f);
    int cached = f->mode == NVC_MODE_CACHED;
    if (cached && !NVC_MPI_LARGE_COUNT && tsize > INT_MAX && !simple_type(dt)) {
        nvc_bypass(f, "an element of over 2 GiB cannot be packed with MPI 3.1's int sizes");
        cached = 0;
    }
    if (cached && buf == MPI_BOTTOM && bytes > 0 && !simple_type(dt)) {
        /* Absolute addresses in the type: MPICH's MPI_Pack_c refuses MPI_BOTTOM as its buffer,
           so such a transfer cannot be staged; ROMIO takes it. */
        nvc_bypass(f, "a derived type relative to MPI_BOTTOM is not cached");
        cached = 0;
    }
    if (cached) {
        PMPI_Type_get_extent_x(dt, &lb, &ext);
        PMPI_Type_get_true_extent_x(dt, &tlb, &text);
        int contig = tsize == text && (count <= 1 || ext == text) && simple_type(dt);
        uint8_t *data = contig ? (uint8_t *)buf + tlb : NULL;
        if (!contig && bytes > 0) {
            data = malloc((size_t)bytes);
            if (!data) {
                pthread_mutex_unlock(&f->lock);
                return nvc_raise(f, MPI_ERR_NO_MEM);
            }
            /* MPI_Pack refusing the type (which MPI-IO took) is not expected; the staged bytes
               would then be garbage, so the transfer fails instead, writing nothing. */
            if (write && (rc = nvc_pack(1, buf, count, dt, data, bytes)) != MPI_SUCCESS) {
                free(data);
                pthread_mutex_unlock(&f->lock);
                nvc_msg("%s: MPI_Pack of the written data failed (error %d); nothing written", f->path, rc);
                return nvc_raise(f, rc);
            }
        }
        pthread_mutex_lock(&nvc_rt.slot_lock);
        rc = cached_transfer(f, write, data, off * f->view.etype_size, bytes, &done);
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        if (!contig && bytes > 0 && !write && rc == MPI_SUCCESS) {
            MPI_Count full = done / tsize, rem = done % tsize;
            rc = nvc_pack(0, buf, full, dt, data, full * tsize);
            if (rc != MPI_SUCCESS)
                nvc_msg("%s: MPI_Unpack of the read data failed (error %d)", f->path, rc);
            else if (rem) {
                /* Partial element at EOF: merge the bytes read into the element's current contents. */
                uint8_t *one = malloc((size_t)tsize);
                if (one) {
                    uint8_t *elem = (uint8_t *)buf + full * ext;
                    nvc_pack(1, elem, 1, dt, one, tsize);
                    memcpy(one, data + full * tsize, (size_t)rem);
                    nvc_pack(0, elem, 1, dt, one, tsize);
                    free(one);
                }
            }
        }
        if (!contig)
            free(data);
        if (rc == NEED_BYPASS || rc == NEED_PASS) {
            pass_if_shared(f); /* another handle was opened during this transfer */
            /* NEED_PASS: the rank or handle that bypassed the part has said why (a second handle
               on another host is only seen here: its table is there). */
            bypass(f,
                   rc == NEED_PASS ? "part bypassed by another rank or handle"
                   : write         ? "NVRAM full during write"
                                   : "read beyond the NVRAM parts' capacity",
                   rc == NEED_PASS);
            cached = 0;
        } else if (rc == MPI_SUCCESS && status != MPI_STATUS_IGNORE) {
            PMPI_Status_set_elements_x(status, MPI_BYTE, done);
            PMPI_Status_set_cancelled(status, 0);
        }
    }
    /* An error of the cache's own (a part that failed the request, a drain that failed before
       passing through) goes to the file's handler below; bypass_io's comes from MPI-IO's call on
       the application's handle, which gave it to the handler itself. */
    int own = rc != MPI_SUCCESS;
    if (!cached) {
        rc = nvc_pass_ready(f);
        own = rc != MPI_SUCCESS;
        if (!own)
            rc = bypass_io(f, write, off, buf, count, dt, status, &done);
    }
    if (rc == MPI_SUCCESS && use_fp)
        f->fp = off + pointer_moved(f, dt, use_fp, bytes, done) / f->view.etype_size;
    pthread_mutex_unlock(&f->lock);
    nvc_stats_add(f->st, write ? NVC_ST_WRITE : NVC_ST_READ, (uint64_t)done, nvc_now_ns() - t0, cached);
    return own ? nvc_raise(f, rc) : rc;
}

/* ------------------------------------------------------------------ draining */

/* Whether f's name still leads to the file f opened. A file deleted while open (MPI_File_delete,
 * or another program's unlink) keeps its handles, whose writes under plain MPI-IO go to the
 * unlinked file and vanish with it; a drain that opened the name instead wrote them into whatever
 * had that name now (a file created since: stale bytes in it) or failed (no file: the close
 * reported an error and the parts stayed for good). */
static int same_file(struct nvc_file *f)
{
    struct nvc_file_id now;
    if (!f->file_id.ino)
        return 1; /* not known: as before */
    if (nvc_file_id_get(f->path, &now) != 0)
        return 0;
    return nvc_file_id_same(&f->file_id, &now, !nvc_rt.multi_host);
}

/* Opens path for nvcache itself (the prefetch's and the drains' handles) on the process's own
 * duplicate of MPI_COMM_SELF. On MPI_COMM_SELF itself, Open MPI's open reset the shared file
 * pointer of the application's MPI_COMM_SELF handles of any file of the same base name (OMPIO
 * 4.1's sharedfp/sm keys its segment by base name, communicator id and process, and every open
 * starts it at 0), so an MPI_MODE_APPEND handle's write_shared went to the start of the file
 * over its bytes; the duplicate's id is nobody else's. */
static int open_beside(const char *path, int amode, MPI_File *h)
{
    MPI_Comm self = nvc_rt.self_dup != MPI_COMM_NULL ? nvc_rt.self_dup : MPI_COMM_SELF;
    return PMPI_File_open(self, path, amode, MPI_INFO_NULL, h);
}

/* Opens the COMM_SELF handle drains write through. When the name no longer leads to the file this
 * handle opened, sets f->file_gone (the drains then discard) and opens nothing. */
static int self_handle(struct nvc_file *f)
{
    if (f->self_fh != MPI_FILE_NULL || f->file_gone)
        return MPI_SUCCESS;
    /* Where the drains open the file: its name, or a descriptor's /proc/self/fd name (kept out
       of f->path, which messages and a later drain's identity check use). */
    char via[NVC_PATH_MAX + 32];
    int held = -1;
    snprintf(via, sizeof via, "%s", f->path);
    if (!same_file(f)) {
        /* Renamed (or linked elsewhere and unlinked here): the MPI-IO library's own descriptor
           still leads to the file, whose new name takes the drains, as plain MPI-IO's writes
           went to the file under whatever name it has. */
        char moved[NVC_PATH_MAX];
        if (nvc_file_find_open(&f->file_id, !nvc_rt.multi_host, f->path + f->path_off, moved, sizeof moved, &held) ==
                0 &&
            f->path_off + strlen(moved) < sizeof f->path) {
            if (held >= 0) {
                nvc_msg("%s was unlinked while open but is linked under another name: its cached writes go to "
                        "the file through a descriptor of it",
                        f->path + f->path_off);
                snprintf(via, sizeof via, "%.*s%s", (int)f->path_off, f->path, moved);
            } else {
                nvc_msg("%s was renamed while open: its cached writes go to %s", f->path + f->path_off, moved);
                snprintf(f->path + f->path_off, sizeof f->path - f->path_off, "%s", moved);
                snprintf(via, sizeof via, "%s", f->path);
            }
        } else {
            if (held >= 0)
                close(held);
            nvc_msg("%s was deleted (or replaced) while open: its cached writes are discarded, as they are "
                    "with the deleted file under MPI-IO",
                    f->path);
            f->file_gone = 1;
            return MPI_SUCCESS;
        }
    }
    /* Read-write where this process may read the file, for drain_merged; write-only otherwise.
       Asked of the file system first: a failed MPI_File_open reports to the application's
       MPI_FILE_NULL error handler, which may be fatal. */
    f->self_reads = faccessat(AT_FDCWD, via + f->path_off, R_OK, AT_EACCESS) == 0;
    int rc = open_beside(via, f->self_reads ? MPI_MODE_RDWR : MPI_MODE_WRONLY, &f->self_fh);
    if (rc != MPI_SUCCESS && f->self_reads) {
        f->self_reads = 0;
        rc = open_beside(via, MPI_MODE_WRONLY, &f->self_fh);
    }
    if (rc == MPI_SUCCESS && f->self_reads)
        f->lock_fd = open(via + f->path_off, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (held >= 0)
        close(held); /* the handle has a descriptor of its own now */
    if (rc != MPI_SUCCESS) {
        nvc_msg("%s: MPI_File_open(MPI_COMM_SELF, %s) for flushing failed (error %d)", f->path,
                f->self_reads ? "read-write" : "write-only", rc);
        f->self_fh = MPI_FILE_NULL;
    }
    return rc;
}

/* Closes the drains' handle, then the descriptor their locks are taken on; an error code when
 * either close fails (a write-back error that a network file system defers to close(2) may show
 * at the close of any descriptor of the file). */
static int self_close(struct nvc_file *f)
{
    int rc = f->self_fh != MPI_FILE_NULL ? PMPI_File_close(&f->self_fh) : MPI_SUCCESS;
    if (f->lock_fd >= 0 && close(f->lock_fd) != 0 && rc == MPI_SUCCESS)
        rc = MPI_ERR_IO;
    f->lock_fd = -1;
    f->lock_fd_wrote = 0;
    return rc;
}

/* Makes what the drains wrote durable in the file: through their MPI-IO handle, and through the
 * descriptor drain_merged wrote by (ROMIO skips the fsync of a handle it wrote nothing through). */
static int self_sync(struct nvc_file *f)
{
    int rc = f->self_fh != MPI_FILE_NULL ? PMPI_File_sync(f->self_fh) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && f->lock_fd >= 0 && f->lock_fd_wrote) {
        if (fsync(f->lock_fd) != 0)
            return MPI_ERR_IO;
        f->lock_fd_wrote = 0;
    }
    return rc;
}

/* Writes a run of part-local bytes [l, l+n) of part p to the real file, clamped to size. */
static int drain_run(struct nvc_file *f, uint32_t p, uint64_t l, uint64_t n, const uint8_t *q, uint64_t size,
                     uint64_t *flushed)
{
    if (f->file_gone)
        return MPI_SUCCESS; /* see same_file */
    while (n) {
        uint64_t fo, w, k = nvc_part_piece(l, n, f->stripe, f->nparts, p, size, &fo, &w);
        if (w) {
            int rc = nvc_file_rw_bytes_at(f->self_fh, 1, (MPI_Offset)fo, (void *)q, (MPI_Count)w, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                nvc_msg("%s: MPI_File_write_at(%llu, %llu bytes) while flushing failed (error %d); data stays in %s",
                        f->path, (unsigned long long)fo, (unsigned long long)w, rc, nvc_cfg.dir);
                return rc;
            }
            *flushed += w;
        }
        l += k;
        q += k;
        n -= k;
    }
    return MPI_SUCCESS;
}

/* Writes back pages [l, l + n * NVC_PAGE) of part p, each written in part by its job in many
 * separate runs: `src` holds the job's copy of the pages (n * NVC_PAGE bytes) and `mask` their
 * byte masks (n * NVC_MASK_BYTES), from the part's mapping or from the manager. The file's
 * current bytes of the pages with the job's over them go back, one read and one write, so that the
 * bytes the job did not write stay as the file has them (another job's among them, which the
 * pages' copies from this job's open would overwrite). The read and the write go through the
 * drains' plain descriptor of the file (f->lock_fd) under an OFD write lock on those bytes
 * (nvc_file_lock_range), so that two nvcache jobs' merges of one page never interleave; through
 * the MPI-IO handle, unlocked, where the file has no such descriptor (an MPI-IO driver without
 * kernel file names); run by run where it cannot be read at all. A program that writes the file
 * without that lock (or holds a POSIX lock over it: then no lock is taken) can still lose a
 * write landing between the read and the write. */
static int drain_merged(struct nvc_file *f, uint32_t p, uint64_t l, uint64_t n, const uint8_t *src,
                        const uint8_t *mask, uint64_t size, uint64_t *flushed)
{
    if (f->file_gone)
        return MPI_SUCCESS; /* see same_file */
    uint64_t bytes = n * NVC_PAGE;
    uint8_t *buf = f->self_reads ? calloc(1, bytes) : NULL;
    int rc = buf ? MPI_SUCCESS : MPI_ERR_NO_MEM, fd = f->lock_fd;
    uint64_t lo, hi;
    nvc_part_file_span(l, bytes, f->stripe, f->nparts, p, size, &lo, &hi);
    int locked = 0;
    if (buf && fd >= 0 && hi > lo && !f->lock_foreign) {
        int lk = nvc_file_lock_range(fd, lo, hi - lo, 1);
        locked = lk == 0;
        f->lock_foreign = lk == -2;
    }
    /* bytes past the file's end stay zero: a hole, as plain MPI-IO's write of later bytes
       leaves it */
    for (uint64_t at = 0, k, fo, w; rc == MPI_SUCCESS && at < bytes; at += k) {
        k = nvc_part_piece(l + at, bytes - at, f->stripe, f->nparts, p, size, &fo, &w);
        if (w)
            rc = fd >= 0 ? (nvc_fd_rw(fd, 0, fo, buf + at, w) ? MPI_ERR_IO : MPI_SUCCESS)
                         : nvc_file_rw_bytes_at(f->self_fh, 0, (MPI_Offset)fo, buf + at, (MPI_Count)w,
                                                MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) {
        for (uint64_t i = 0; i < n; i++)
            nvc_merge_masked(buf + i * NVC_PAGE, src + i * NVC_PAGE, mask + i * NVC_MASK_BYTES);
        if (fd >= 0) {
            for (uint64_t at = 0, k, fo, w; rc == MPI_SUCCESS && at < bytes; at += k) {
                k = nvc_part_piece(l + at, bytes - at, f->stripe, f->nparts, p, size, &fo, &w);
                if (w && nvc_fd_rw(fd, 1, fo, buf + at, w) != 0) {
                    nvc_msg("%s: pwrite(%llu, %llu bytes) while flushing failed: %s; data stays in %s", f->path,
                            (unsigned long long)fo, (unsigned long long)w, strerror(errno), nvc_cfg.dir);
                    rc = MPI_ERR_IO;
                }
                *flushed += w;
            }
            f->lock_fd_wrote = 1;
        } else {
            rc = drain_run(f, p, l, bytes, buf, size, flushed);
        }
        if (locked)
            nvc_file_lock_range(fd, lo, hi - lo, 0);
        free(buf);
        return rc;
    }
    if (locked)
        nvc_file_lock_range(fd, lo, hi - lo, 0);
    free(buf);
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t s, e = 0; nvc_mask_next_run(mask + i * NVC_MASK_BYTES, e, &s, &e);)
            if ((rc = drain_run(f, p, l + i * NVC_PAGE + s, e - s, src + i * NVC_PAGE + s, size, flushed)) !=
                MPI_SUCCESS)
                return rc;
    return MPI_SUCCESS;
}

/* The part-local ranges a drain wrote to the real file. Their dirty bits are cleared only once the
 * file holds them durably (clean_drained, after the fsync): cleared as each was written, a crash
 * of the node before the fsync lost them from both the part (clean) and the file (page cache). */
struct drained {
    struct nvc_seg *seg;
    size_t n, cap;
};

static int drained_add(struct drained *d, uint64_t off, uint64_t len)
{
    if (d->n && d->seg[d->n - 1].off + d->seg[d->n - 1].len == off) {
        d->seg[d->n - 1].len += len;
        return MPI_SUCCESS;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct nvc_seg *g = realloc(d->seg, cap * sizeof *g);
        if (!g)
            return MPI_ERR_NO_MEM;
        d->seg = g;
        d->cap = cap;
    }
    d->seg[d->n].off = off;
    d->seg[d->n++].len = len;
    return MPI_SUCCESS;
}

/* Clears the dirty bits of the ranges drained from part p (now durable in the file) and empties d. */
static void clean_drained(struct nvc_file *f, uint32_t p, struct drained *d)
{
    if (f->direct && (int)p == f->my_part) {
        for (size_t i = 0; i < d->n; i++)
            nvc_part_clear_dirty(f->direct, d->seg[i].off, d->seg[i].len);
    } else {
        for (size_t i = 0; i < d->n; i += NVC_MAXSEG) {
            struct nvc_slot *s = req(f, p, NVC_OP_CLEAN);
            s->nseg = (uint32_t)(d->n - i < NVC_MAXSEG ? d->n - i : NVC_MAXSEG);
            memcpy(s->seg, d->seg + i, s->nseg * sizeof *s->seg);
            call(f, p, s);
        }
    }
    d->n = 0;
}

/* Drains my node's part from its mapping: no copies through the mailbox. */
static int drain_direct(struct nvc_file *f, uint32_t p, struct drained *dr)
{
    struct nvc_part *d = f->direct;
    /* In DRAINING no new direct write starts; wait for the ones already running. */
    while (__atomic_load_n(&d->hdr->state, __ATOMIC_SEQ_CST) == NVC_PART_DRAINING &&
           __atomic_load_n(&d->hdr->writers, __ATOMIC_SEQ_CST))
        sleep_us(50);
    uint64_t cursor = 0, off, len, flushed = 0;
    uint64_t size = __atomic_load_n(&d->hdr->size, __ATOMIC_ACQUIRE);
    int rc = MPI_SUCCESS, merge;
    while (nvc_part_next_dirty(d, &cursor, &off, &len, &merge)) {
        if ((rc = self_handle(f)) != MPI_SUCCESS)
            break;
        if (merge) {
            /* with the pages to merge that follow this one: one read and one write */
            len = nvc_part_merge_extent(d, &cursor, off, len, NVC_MERGE_PAGES * NVC_PAGE);
            rc = drain_merged(f, p, off, len / NVC_PAGE, d->data + off, d->masks + off / NVC_PAGE * NVC_MASK_BYTES,
                              size, &flushed);
        } else
            rc = drain_run(f, p, off, len, d->data + off, size, &flushed);
        if (rc != MPI_SUCCESS ||
            (rc = drained_add(dr, off, len)) != MPI_SUCCESS)
            break;
    }
    if (f->st)
        f->st->flush_bytes += flushed;
    return rc;
}

/* Writes all dirty pages of part p to the real file (clamped to the file size) and adds them to dr
 * (their dirty bits stay set: clean_drained). gone_ok: a part that its open closes meanwhile (the
 * drain of another handle, drain_other_open) ends the drain quietly: that close flushed it
 * itself, or discarded it on purpose. */
static int drain_part(struct nvc_file *f, uint32_t p, int gone_ok, struct drained *dr)
{
    if (f->direct && (int)p == f->my_part)
        return drain_direct(f, p, dr);
    uint64_t cursor = 0, flushed = 0;
    int rc = MPI_SUCCESS;
    for (;;) {
        struct nvc_slot *s = req(f, p, NVC_OP_DIRTY);
        s->arg[0] = cursor;
        uint32_t st;
        while ((st = call(f, p, s)) == NVC_RETRY) {
            sleep_us(200); /* direct writes that began before the drain are finishing */
            s = req(f, p, NVC_OP_DIRTY);
            s->arg[0] = cursor;
        }
        if (st == NVC_BYPASS || (st == NVC_ERR && gone_ok))
            break; /* closed meanwhile (or its mapping is gone): nothing left to drain */
        if (st != NVC_OK) {
            nvc_msg("%s: dirty listing of part %u failed", f->path, p);
            return MPI_ERR_IO;
        }
        if (!s->nseg)
            break;
        cursor = s->arg[0];
        uint64_t size = s->arg[1];
        s->op = NVC_OP_READ;
        if ((st = call(f, p, s)) != NVC_OK) {
            if (st == NVC_BYPASS || gone_ok)
                break;
            nvc_msg("%s: reading dirty data of part %u failed", f->path, p);
            return MPI_ERR_IO;
        }
        if ((rc = self_handle(f)) != MPI_SUCCESS)
            return rc;
        const uint8_t *src = nvc_slot_data(s);
        for (uint32_t i = 0; i < s->nseg; i++) {
            uint64_t off = s->seg[i].off, len = nvc_seg_len(&s->seg[i]);
            rc = s->seg[i].len & NVC_SEG_MERGE
                     ? drain_merged(f, p, off, len / NVC_PAGE, src, src + len, size, &flushed)
                     : drain_run(f, p, off, len, src, size, &flushed);
            if (rc != MPI_SUCCESS || (rc = drained_add(dr, off, len)) != MPI_SUCCESS)
                return rc;
            src += nvc_seg_data(&s->seg[i]);
        }
    }
    if (f->st)
        f->st->flush_bytes += flushed;
    return rc;
}

/* The close of the open that caches f takes its part from ACTIVE to DRAINING before draining it, as
 * a drain by another handle of the file begins (bypass: NVC_OP_BYPASS_BEGIN), so the two never run
 * at once. Otherwise both listed the same dirty pages, the other handle's open returned after its
 * drain and wrote through MPI-IO, and this close's drain then wrote its copy of a page shared by
 * both handles' bytes over them (the bytes the part never held were zeros): consistency's "reopen"
 * lost a rank's tail page about once in 50 runs on Open MPI. Returns 1 when this close drains the
 * part (it holds DRAINING, or the manager cannot tell and the drain reports why), 0 when another
 * handle drained it meanwhile. Called without nvc_rt.slot_lock, which it leaves held on return:
 * the lock is released only while the part waits for another drain (another thread of this rank
 * may be that drainer), never between the claim and the drain, where another thread that takes
 * the lock and waits for the part to leave DRAINING would wait for ever (MPI_THREAD_MULTIPLE). */
static int claim_own_drain(struct nvc_file *f)
{
    uint32_t p = (uint32_t)f->my_part;
    for (;;) {
        pthread_mutex_lock(&nvc_rt.slot_lock);
        uint32_t st = call(f, p, req(f, p, NVC_OP_BYPASS_BEGIN));
        if (st != NVC_RETRY)
            return st != NVC_BYPASS;
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        sleep_us(200);
    }
}

/* Drains every part of f and marks it bypassed; quiet: no message per part (a second handle of the
 * file, which is normal operation, not a fallback the user should hear about).
 *
 * A part whose drain failed goes back to ACTIVE with its dirty bytes, which are newer than the
 * real file's (f->drain_failed). Passing I/O to MPI-IO then would read those stale bytes, and
 * bytes written there would be overwritten by the part's older ones when it is drained at a close
 * or by nvcache-recover: a write reported as done, lost. So while f->drain_failed, every call here
 * (each pass-through asks first) retries the drain, and the caller fails with its error, leaving
 * the real file alone, until a retry succeeds. */
static int bypass(struct nvc_file *f, const char *why, int quiet)
{
    if (f->mode == NVC_MODE_BYPASSED && f->drain_failed) {
        f->mode = NVC_MODE_CACHED; /* the parts left ACTIVE: drain them again */
        why = "retrying the drain that failed";
        quiet = 1;
    }
    if (f->mode != NVC_MODE_CACHED)
        return MPI_SUCCESS;
    nvc_debug("%s: switching to pass-through (%s)", f->path, why);
    f->drain_failed = 0;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    for (uint32_t p = 0; p < f->nparts; p++) {
        for (;;) {
            struct nvc_slot *s = req(f, p, NVC_OP_BYPASS_BEGIN);
            uint32_t st = call(f, p, s);
            if (st == NVC_OK) {
                if (!quiet)
                    nvc_msg("%s: %s; flushing part %u and passing through to MPI-IO from now on", f->path, why, p);
                int prc = MPI_SUCCESS;
                struct drained dr = {0};
                do {
                    if ((prc = drain_part(f, p, quiet, &dr)) != MPI_SUCCESS)
                        break;
                    /* Bytes an MPI_File_sync made durable in NVRAM must be durable in the real
                       file before the part stops holding them; and so must bytes not synced yet,
                       since a later MPI_File_sync reaches only the application's handle, which
                       MPI-IO does not fsync when it wrote nothing through it (ROMIO), so the bytes
                       drained here would never be made durable. */
                    if ((f->synced || dr.n) && f->self_fh != MPI_FILE_NULL && (prc = self_sync(f)) != MPI_SUCCESS) {
                        nvc_msg("%s: fsync after flushing part %u failed (error %d); the part is kept", f->path, p, prc);
                        break;
                    }
                    clean_drained(f, p, &dr);
                    s = req(f, p, NVC_OP_BYPASS_END);
                } while (call(f, p, s) == NVC_RETRY);
                free(dr.seg);
                if (prc != MPI_SUCCESS) {
                    /* The part keeps its dirty pages, ACTIVE again (as after a failed drain at
                       close): its close keeps it for nvcache-recover and reports the error. */
                    s = req(f, p, NVC_OP_BYPASS_END);
                    s->arg[0] = NVC_BYPASS_ABANDON;
                    call(f, p, s);
                    f->drain_failed = 1;
                    rc = prc;
                }
                break;
            }
            if (st == NVC_BYPASS || st == NVC_ERR)
                break;
            /* DRAINING: another drain holds the part, possibly the close of its open in another
               thread of this process, which needs the lock to finish (it hung the process):
               wait without it (this drain has claimed nothing here). */
            pthread_mutex_unlock(&nvc_rt.slot_lock);
            sleep_us(200);
            pthread_mutex_lock(&nvc_rt.slot_lock);
        }
    }
    self_close(f);
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    f->mode = NVC_MODE_BYPASSED;
    return rc;
}

int nvc_bypass(struct nvc_file *f, const char *why) { return bypass(f, why, 0); }

int nvc_raise(struct nvc_file *f, int rc)
{
    if (rc != MPI_SUCCESS)
        PMPI_File_call_errhandler(f->real, rc);
    return rc;
}

int nvc_pass_ready(struct nvc_file *f)
{
    return f->drain_failed ? bypass(f, "retrying the drain that failed", 1) : MPI_SUCCESS;
}

/* ------------------------------------------------------------------ several handles of one file
 *
 * registry.c keeps one cache state per file: a file is cached by one open only while it has no
 * other handle in the job. Before the other handle's open returns, its rank drains the caching
 * open's parts here (through their managers, like a bypass by one of the caching ranks), so that
 * no stale page can later be written over what the other handle writes; the caching open's ranks
 * see the entry change before their next cached operation and pass through too. */

static struct nvc_reg_table *reg_table(void) { return nvc_reg_table(nvc_rt.mbox[0]); }

/* The table is in node 0's mailbox: mapped on node 0's host, asked for over MPI elsewhere. */
static int reg_local(void) { return nvc_rt.mbox[0] != NULL; }

/* A request to the table on node 0's host (entry idx, -1: none); returns the reply's arg[1]. */
static uint64_t reg_remote(uint32_t op, int64_t idx, uint64_t a1)
{
    pthread_mutex_lock(&nvc_rt.slot_lock);
    struct nvc_slot *s = slot_start(nvc_remote_slot(0), op, 0, 0);
    s->arg[0] = idx < 0 ? UINT64_MAX : (uint64_t)idx;
    s->arg[1] = a1;
    nvc_remote_call(0, s);
    /* A refused or malformed reply is no answer (its arguments are the refusal's zeros, which
       would read as "drained" or "not owned"): UINT64_MAX. */
    uint64_t r = s->status == NVC_OK ? s->arg[1] : UINT64_MAX;
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    return r;
}

/* A handle nvcache cannot follow: no file may be cached until it closes (never left). */
static void reg_untrack(void)
{
    if (reg_local())
        nvc_reg_untrack(reg_table());
    else
        reg_remote(NVC_OP_REG_UNTRACK, -1, 0);
}

static void reg_disown(struct nvc_file *f)
{
    if (f->reg)
        nvc_reg_disown(reg_table(), f->reg, f->fileid);
    else if (f->reg_idx >= 0)
        reg_remote(NVC_OP_REG_DISOWN, f->reg_idx, f->fileid);
}

static void reg_leave(struct nvc_reg *e, int64_t idx)
{
    if (reg_local())
        nvc_reg_leave(reg_table(), e);
    else
        reg_remote(NVC_OP_REG_LEAVE, idx, 0);
}

/* Joins the table on node 0's host from another host: the verdict, f->reg_idx, and for
   NVC_REG_PASS_DRAIN the caching open's layout in *lay; -1 when the request failed (the handle
   is then not entered). */
static int reg_join_remote(struct nvc_file *f, uint64_t dev, uint64_t ino, int want_cache, struct nvc_reg *lay)
{
    pthread_mutex_lock(&nvc_rt.slot_lock);
    struct nvc_slot *s = slot_start(nvc_remote_slot(0), NVC_OP_REG_JOIN, f->fileid, 0);
    uint64_t a[6] = {dev, ino, f->fileid, f->nparts, (uint64_t)want_cache, f->stripe};
    memcpy(s->arg, a, sizeof a);
    uint16_t *pn = (uint16_t *)nvc_slot_data(s);
    for (uint32_t p = 0; p < f->nparts; p++)
        pn[p] = (uint16_t)f->part_node[p];
    nvc_remote_call(0, s);
    int v = s->status <= NVC_REG_PASS_WAIT ? (int)s->status : -1;
    f->reg_idx = v >= 0 && s->arg[0] < NVC_REG_ENTRIES ? (int64_t)s->arg[0] : -1;
    if (v == NVC_REG_PASS_DRAIN) {
        atomic_store(&lay->owner, s->arg[1]);
        lay->stripe = s->arg[2];
        lay->nparts = (uint32_t)s->arg[3] < NVC_REG_MAXPARTS ? (uint32_t)s->arg[3] : NVC_REG_MAXPARTS;
        atomic_store(&lay->synced, (uint32_t)s->arg[4]);
        for (uint32_t p = 0; p < lay->nparts; p++)
            lay->part_node[p] = pn[p];
    }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    return v;
}

/* Drains the parts of the open that cached the file (layout from the table) through their
 * managers; MPI_SUCCESS, or the error of a drain that failed (its parts keep their dirty data). */
static int drain_other_open(const char *path, const struct nvc_reg *lay)
{
    struct nvc_file *s = calloc(1, sizeof *s);
    int nodes[NVC_REG_MAXPARTS];
    if (!s) {
        nvc_msg("%s: out of memory while draining another handle's cache", path);
        return MPI_ERR_NO_MEM;
    }
    for (uint32_t p = 0; p < lay->nparts; p++)
        nodes[p] = lay->part_node[p];
    s->part_node = nodes;
    s->nparts = lay->nparts;
    s->stripe = lay->stripe;
    s->fileid = atomic_load_explicit(&lay->owner, memory_order_relaxed);
    s->synced = (int)atomic_load_explicit(&lay->synced, memory_order_relaxed);
    s->mode = NVC_MODE_CACHED;
    s->my_part = -1;
    s->self_fh = MPI_FILE_NULL;
    s->lock_fd = -1;
    s->lock_fd_wrote = s->lock_foreign = 0;
    s->mcomm = MPI_COMM_NULL;
    snprintf(s->path, sizeof s->path, "%s", path);
    int rc = bypass(s, "another handle of the file was opened", 1);
    if (rc != MPI_SUCCESS)
        nvc_msg("%s: draining the cache of another handle of the file failed; this open fails, and the open that "
                "caches the file goes on caching it",
                path);
    free(s);
    return rc;
}

/* Raises a failed MPI_File_open's error as the MPI library does, on the error handler of
 * MPI_FILE_NULL (MPI_ERRORS_RETURN unless the program set another), and returns it. Open MPI
 * refuses MPI_File_call_errhandler on MPI_FILE_NULL (it raises MPI_ERR_ARG on the world's fatal
 * handler and the job aborts), so the handler is looked at first and called only when it is not
 * MPI_ERRORS_RETURN. (So under Open MPI a program's own handler on MPI_FILE_NULL is not called:
 * the job aborts with MPI_ERR_ARG instead, as with MPI_ERRORS_ARE_FATAL.) */
static int raise_open_error(int code)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_File_get_errhandler(MPI_FILE_NULL, &eh) != MPI_SUCCESS)
        eh = MPI_ERRHANDLER_NULL;
    int ret = eh == MPI_ERRORS_RETURN;
    if (eh != MPI_ERRHANDLER_NULL && eh != MPI_ERRORS_RETURN && eh != MPI_ERRORS_ARE_FATAL)
        PMPI_Errhandler_free(&eh); /* the reference the query returned */
    if (!ret)
        PMPI_File_call_errhandler(MPI_FILE_NULL, code);
    return code;
}

/* Enters this rank's handle of f in the job's file table; returns whether this open may cache the
 * file. A handle that makes the file shared drains the caching open first (or waits for the rank
 * that does), so the file is complete when the open returns. */
static int reg_enter(struct nvc_file *f, int want_cache)
{
    f->reg_joined = 1;
    f->reg = NULL;
    f->reg_idx = -1;
    if (nvc_file_id_get(f->path, &f->file_id) != 0) {
        nvc_debug("%s: cannot stat the file; not cached", f->path);
        reg_untrack();
        return 0;
    }
    uint64_t ino = f->file_id.ino;
    uint64_t dev = nvc_rt.multi_host ? nvc_reg_host_free_dev(&f->file_id) : f->file_id.dev;
    struct nvc_reg lay;
    int v;
    if (reg_local())
        v = nvc_reg_join(reg_table(), dev, ino, f->fileid, want_cache, f->nparts, f->part_node, f->stripe, &f->reg,
                         &lay);
    else if ((v = reg_join_remote(f, dev, ino, want_cache, &lay)) < 0) {
        /* The table may never have heard of this handle (the agent refused the request), or may
           have entered it, even as the drainer of another open's cache (the reply was lost): it
           cannot pass through, since an open of the file may cache it meanwhile (its ranks and
           the table's host are not this host; counting the handle as untracked here keeps
           nobody there from caching) and its reads would miss that cache's bytes, its writes be
           overwritten by the cache's later drain. So the open fails, on every rank of its
           communicator, as after a failed drain; an entry the table made for it stays taken, which
           only keeps the file from being cached again in this job. */
        nvc_msg("%s: the job's file table on node 0's host did not answer; the open fails", f->path);
        f->reg_joined = 0;
        f->open_error = MPI_ERR_IO;
        return 0;
    }
    /* A drain that fails leaves the caching open's dirty bytes in its parts, newer than the file's:
       this handle's I/O on the file would read stale bytes, and its writes would be overwritten
       when those parts are drained or recovered. So the open fails (open_parts: on every rank of
       its communicator), and the caching open goes on caching as if this open had not been made. */
    if (v == NVC_REG_PASS_DRAIN) {
        nvc_debug("%s: a second handle: draining the cache of the open that has it", f->path);
        f->open_error = drain_other_open(f->path, &lay);
        if (f->open_error != MPI_SUCCESS && f->reg)
            nvc_reg_drain_failed(f->reg);
        else if (f->open_error != MPI_SUCCESS)
            reg_remote(NVC_OP_REG_DRAIN_FAILED, f->reg_idx, 0);
        else if (f->reg)
            nvc_reg_drained(f->reg);
        else
            reg_remote(NVC_OP_REG_DRAINED, f->reg_idx, 0);
    } else if (v == NVC_REG_PASS_WAIT && f->reg) {
        nvc_reg_wait_drained(f->reg);
        /* This handle holds the entry: CACHED again means the drain failed. */
        if (atomic_load_explicit(&f->reg->state, memory_order_acquire) == NVC_REG_CACHED)
            f->open_error = MPI_ERR_IO;
    } else if (v == NVC_REG_PASS_WAIT) {
        uint64_t w;
        while ((w = reg_remote(NVC_OP_REG_WAIT, f->reg_idx, 0)) == 1)
            sleep_us(100);
        if (w == 2 || w == UINT64_MAX) /* the drain failed, or the table did not say it ended */
            f->open_error = MPI_ERR_IO;
    }
    f->reg_owner = v == NVC_REG_CACHE;
    return f->reg_owner;
}

/* ------------------------------------------------------------------ open / close */

#define NVC_IDS_PER_COMM 65536ull
/* Values of the open's one agreement (open_parts); a rank that cannot take part sends zeros. */
#define NVC_AGREE_VALS 12
static int open_parts(struct nvc_file *f, const char *path, int amode, int ok_local, uint64_t t0, MPI_Comm acomm);

/* Representative of part p: prefetches the file's bytes of that part into NVRAM. */
static int prefetch_part(struct nvc_file *f, uint32_t p, int64_t size)
{
    MPI_File h;
    int rc = open_beside(f->path, MPI_MODE_RDONLY, &h);
    if (rc != MPI_SUCCESS) {
        nvc_msg("%s: MPI_File_open(MPI_COMM_SELF, read-only) for prefetch failed (error %d)", f->path, rc);
        return NVC_ERR;
    }
    uint32_t st = NVC_OK;
    uint64_t cap = nvc_cfg.slot_bytes;
    for (uint64_t l = 0; st == NVC_OK; l += f->stripe) {
        uint64_t fo = nvc_part_to_file(l, f->stripe, f->nparts, p);
        if ((int64_t)fo >= size)
            break;
        uint64_t n = (uint64_t)size - fo < f->stripe ? (uint64_t)size - fo : f->stripe;
        for (uint64_t x = 0; x < n && st == NVC_OK; x += cap) {
            uint64_t k = n - x < cap ? n - x : cap;
            struct nvc_slot *s = req(f, p, NVC_OP_FILL);
            rc = nvc_file_rw_bytes_at(h, 0, (MPI_Offset)(fo + x), nvc_slot_data(s), (MPI_Count)k, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                nvc_msg("%s: MPI_File_read_at(%llu) during prefetch failed (error %d)", f->path, (unsigned long long)(fo + x), rc);
                st = NVC_ERR;
                break;
            }
            s->nseg = 1;
            s->seg[0].off = l + x;
            s->seg[0].len = k;
            st = call(f, p, s);
            if (f->st)
                f->st->prefetch_bytes += k;
        }
    }
    PMPI_File_close(&h);
    if (st == NVC_NOSPACE)
        nvc_msg("%s: NVRAM in %s is full during prefetch", f->path, nvc_cfg.dir);
    return (int)st;
}

/* Writes to out (n bytes) the name path as nvcache keeps it: ROMIO's "fs:" prefix, if any, then
 * the file's absolute path, so that the drain's and the prefetch's own opens still find the file
 * after the application changed its working directory, and nvcache-recover (run anywhere; it
 * knows no prefixes) gets out + *off. Returns 0, or -1 when the name does not fit. */
static int canonical_path(char *out, size_t n, const char *path, size_t *off)
{
    size_t pre = nvc_fs_prefix_len(path);
    const char *rest = path + pre;
    char abs[PATH_MAX], cwd[PATH_MAX];
    int len;
    *off = pre;
    if (rest[0] == '/')
        len = snprintf(out, n, "%s", path);
    else if (realpath(rest, abs))
        len = snprintf(out, n, "%.*s%s", (int)pre, path, abs);
    else if (getcwd(cwd, sizeof cwd))
        len = snprintf(out, n, "%.*s%s/%s", (int)pre, path, cwd, rest);
    else
        len = -1;
    if (len < 0 || (size_t)len >= n) {
        snprintf(out, n, "%s", path);
        return -1;
    }
    return 0;
}

/* The state every handle starts with (pass-through until its open decides otherwise). */
static void file_init(struct nvc_file *f, MPI_File fh, const char *path, int amode)
{
    f->real = fh;
    f->self_fh = MPI_FILE_NULL;
    f->lock_fd = -1;
    f->lock_fd_wrote = f->lock_foreign = 0;
    f->amode = amode;
    f->my_part = -1;
    f->mcomm = MPI_COMM_NULL;
    f->reg_idx = -1;
    pthread_mutex_init(&f->lock, NULL);
    f->path_ok = canonical_path(f->path, sizeof f->path, path, &f->path_off) == 0;
}

static void view_default(struct nvc_view *v)
{
    v->disp = 0;
    v->etype = MPI_BYTE;
    v->filetype = MPI_BYTE;
    v->etype_size = 1;
    v->native = 1;
    nvc_flatten(MPI_BYTE, &v->ft);
}

/* Whether comm's group holds exactly the job's ranks (local). */
static int comm_is_world(MPI_Comm comm)
{
    MPI_Group g;
    int res = MPI_UNEQUAL;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS)
        return 0;
    PMPI_Group_compare(g, nvc_rt.world_group, &res);
    PMPI_Group_free(&g);
    return res == MPI_IDENT || res == MPI_SIMILAR;
}

/* MPI_MODE_APPEND: MPI-IO put the file pointers at the end of the file as it was at the real
 * open, before this open drained the cached bytes of another handle of the file into it
 * (reg_enter): they go to the end the file has now, where plain MPI-IO's open would have put
 * them (an append through a second handle overwrote the start of the file). Collective (the
 * shared pointer): every rank of the open calls it, with the same amode. Sequential opens,
 * whose pointers cannot be moved, drain before their real open instead (nvc_open). */
static void append_at_end(MPI_File fh, int amode)
{
    if (!(amode & MPI_MODE_APPEND))
        return;
    PMPI_File_seek(fh, 0, MPI_SEEK_END);
    PMPI_File_seek_shared(fh, 0, MPI_SEEK_END);
}

/* After a successful open of path on comm that may write: the communicator's rank 0 names this job,
 * now, the file's last writer (NVC_WRITER_XATTR), so that no later recovery on any host writes a
 * dead job's part whose last write is older over what this job writes. Every other rank makes sure
 * the file names this job (a rank may return from the open before rank 0 marks), and then every
 * rank waits while a recovery holds a guard on the file (NVC_GUARD_XATTR_PREFIX): a recovery sets
 * its guard before it reads the mark, so either it sees this job's mark and keeps the dead job's
 * part, or this rank writes nothing (directly, or later through its node's write-back of what it
 * wrote) before that recovery ends. A mark naming this job from an earlier open does not do: it may
 * be older than a dead job's last write. Every process of the job finished its host's recovery in
 * MPI_Init before this open, so no part this job's own hosts recover is judged by this mark. No
 * collective: ranks of the open may have differing results (ROMIO's append mode). A file system
 * without user attributes keeps no mark and no guard: recovery then writes such parts back as
 * before; any other failure is said once per process. */
static void mark_writer(MPI_Comm comm, const char *path, int amode, uint64_t opened_ns)
{
    int rank = 0, inter = 0;
    if ((amode & MPI_MODE_RDONLY) || comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
        inter || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return;
    static int said;
    const char *file = path + nvc_fs_prefix_len(path);
    struct stat sb;
    if (stat(file, &sb) == 0 && !S_ISREG(sb.st_mode))
        return; /* a FIFO or a device: never cached, nothing to recover (and no user attributes) */
    int e = rank == 0 ? nvc_file_mark_writer(file, nvc_rt.jobid) : nvc_file_ensure_writer(file, nvc_rt.jobid, opened_ns);
    if (e == -ENOTSUP || e == -EOPNOTSUPP)
        return;
    if (e && !said) {
        said = 1;
        nvc_msg("%s: cannot name this job the file's last writer (%s: %s): a dead job's NVRAM part of it on a host "
                "outside this job could later be written back over this job's bytes (said once)",
                path, NVC_WRITER_XATTR, strerror(-e));
    }
    nvc_file_wait_recoveries(file);
}

int nvc_open(MPI_Comm comm, const char *path, int amode, MPI_Info info, MPI_File *fh)
{
    uint64_t t0 = nvc_now_ns();
    const uint64_t opened_ns = nvc_realtime_ns(); /* before the open: a mark from this open is later */
    /* The same on every rank (environment; agreed in MPI_Init; amode): plain MPI-IO, no handshake. */
    if (!nvc_cfg.enabled || !nvc_rt.ready) {
        int rc = PMPI_File_open(comm, path, amode, info, fh);
        if (rc == MPI_SUCCESS)
            mark_writer(comm, path, amode, opened_ns);
        return rc;
    }
    /* An invalid or inter-communicator is erroneous for MPI_File_open: let MPICH report it through
       the file error handler (MPI_ERRORS_RETURN by default). The calls on comm below would raise
       a fatal error on MPI_COMM_WORLD instead (MPI_File_open(MPI_COMM_NULL, ...) aborted the job). */
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return PMPI_File_open(comm, path, amode, info, fh);
    if (amode & MPI_MODE_SEQUENTIAL) {
        /* Not cached, but a handle of the file all the same: entered in the file table. An
           append open enters it before the real open, which drains another handle's cached
           bytes into the file first: MPI-IO puts the shared pointer at the end of the file it
           finds, and a sequential file's pointer cannot be moved afterwards. */
        struct nvc_file *f = calloc(1, sizeof *f);
        struct nvc_file_id id;
        int early = f && (amode & MPI_MODE_APPEND) && nvc_file_id_get(path, &id) == 0;
        if (early) {
            file_init(f, MPI_FILE_NULL, path, amode);
            reg_enter(f, 0);
        }
        int rc = PMPI_File_open(comm, path, amode, info, fh);
        if (rc == MPI_SUCCESS)
            mark_writer(comm, path, amode, opened_ns);
        if (rc == MPI_SUCCESS && f) {
            if (early)
                f->real = *fh;
            else {
                file_init(f, *fh, path, amode);
                reg_enter(f, 0);
            }
        }
        if (rc == MPI_SUCCESS) {
            /* As in open_parts: a rank's failed drain of the open that caches the file, or its
               failed join of the file table, fails this open on every rank. */
            int64_t bad = f && f->open_error != MPI_SUCCESS;
            PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_MAX, comm);
            if (bad) {
                if (f && f->reg_joined)
                    reg_leave(f->reg, f->reg_idx);
                PMPI_File_close(fh);
                if (f)
                    file_free(f);
                return raise_open_error(MPI_ERR_IO);
            }
        }
        if (rc == MPI_SUCCESS && f) {
            file_register(f);
        } else {
            if (early && f->reg_joined)
                reg_leave(f->reg, f->reg_idx); /* joined for an open that failed */
            if (rc == MPI_SUCCESS)
                reg_untrack(); /* never left: no file may be cached from now on */
            free(f);
        }
        return rc;
    }
    if (comm_threads < 0)
        comm_threads = nvc_rt.job_thread_level; /* the application's threads (any rank's), not the agent's */
    int shared = comm_threads != MPI_THREAD_MULTIPLE;
    if (shared && comm_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_cache_delete, &comm_keyval, NULL) != MPI_SUCCESS)
        comm_keyval = MPI_KEYVAL_INVALID;
    shared = shared && comm_keyval != MPI_KEYVAL_INVALID;
    struct comm_cache *cc = NULL;
    int found = 0;
    if (shared && (PMPI_Comm_get_attr(comm, comm_keyval, &cc, &found) != MPI_SUCCESS || !found))
        cc = NULL;
    int crank = 0, csize = 1;
    PMPI_Comm_rank(comm, &crank);
    PMPI_Comm_size(comm, &csize);
    /* Everything below depends only on the communicator and on earlier collective opens on it
       (see "communicators and collectives"): every rank takes the same branches. */
    if (!cc && shared && (cc = calloc(1, sizeof *cc))) {
        cc->world = comm_is_world(comm);
        cc->layout_ok = comm_layout(comm, csize, crank, &cc->nparts, &cc->part_node, &cc->part_rep, &cc->my_part) == 0;
        cc->opens = NVC_IDS_PER_COMM; /* no id block yet */
        if (PMPI_Comm_set_attr(comm, comm_keyval, cc) == MPI_SUCCESS) {
            cc->next = comm_caches;
            comm_caches = cc;
        } else {
            free(cc->part_node);
            free(cc->part_rep);
            free(cc);
            cc = NULL;
        }
    }
    uint64_t fileid = 0;
    if (cc && cc->world)
        fileid = (1ull << 63) | ++nvc_rt.world_opens; /* the n-th whole-job open on every rank, failed ones too */
    int rc = PMPI_File_open(comm, path, amode, info, fh);
    if (rc != MPI_SUCCESS)
        return rc;
    mark_writer(comm, path, amode, opened_ns);
    if (!(cc && cc->world)) {
        if (!cc || cc->opens + 1 >= NVC_IDS_PER_COMM) {
            /* A block of file ids from the communicator's rank 0 (its world rank makes it unique). */
            int64_t id = crank ? 0
                               : (int64_t)(((uint64_t)nvc_rt.world_rank << 40) |
                                           (__atomic_fetch_add(&nvc_rt.next_fileid, NVC_IDS_PER_COMM, __ATOMIC_RELAXED) + 1));
            PMPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT64_T, MPI_MAX, comm);
            if (cc) {
                cc->id_base = (uint64_t)id;
                cc->opens = 0;
            } else
                fileid = (uint64_t)id;
        }
        if (cc)
            fileid = cc->id_base + ++cc->opens;
    }
    struct nvc_file *f = calloc(1, sizeof *f);
    if (f) {
        f->part_node = malloc(sizeof(int) * (size_t)csize);
        f->part_rep = malloc(sizeof(int) * (size_t)csize);
    }
    if (!f || !f->part_node || !f->part_rep) {
        /* Every other rank is about to agree on caching: tell them no, then pass through. */
        nvc_msg("%s: out of memory; not cached, and no file is cached from now on", path);
        reg_untrack(); /* a handle nvcache cannot follow: never left */
        append_at_end(*fh, amode); /* the other ranks' collective seek in open_parts */
        int64_t no[NVC_AGREE_VALS] = {0};
        PMPI_Allreduce(MPI_IN_PLACE, no, NVC_AGREE_VALS, MPI_INT64_T, MPI_MIN, comm);
        if (f) {
            free(f->part_node);
            free(f->part_rep);
            free(f);
        }
        return MPI_SUCCESS;
    }
    file_init(f, *fh, path, amode);
    f->rank = crank;
    f->size = csize;
    f->fileid = fileid;
    view_default(&f->view);
    nvc_config_file(info, path, &f->opts);
    f->st = nvc_cfg.stats ? nvc_stats_get(path) : NULL;
    int ok;
    if (cc) {
        ok = cc->layout_ok;
        if (ok) {
            memcpy(f->part_node, cc->part_node, sizeof(int) * cc->nparts);
            memcpy(f->part_rep, cc->part_rep, sizeof(int) * cc->nparts);
            f->nparts = cc->nparts;
            f->my_part = cc->my_part;
        }
    } else {
        free(f->part_node);
        free(f->part_rep);
        ok = comm_layout(comm, csize, crank, &f->nparts, &f->part_node, &f->part_rep, &f->my_part) == 0;
    }
    if (!ok)
        f->my_part = -1;
    if (!f->path_ok)
        nvc_msg("%s: the absolute name of the file is longer than %d bytes; not cached", path, NVC_PATH_MAX - 1);
    ok = ok && f->opts.enabled && f->path_ok;
    rc = open_parts(f, path, amode, ok, t0, comm);
    if (rc != MPI_SUCCESS)
        *fh = MPI_FILE_NULL; /* closed there */
    return rc;
}

/* Parts of this file that a job which ended without writing them back left on this node (its
 * representative asks), and that MPI_Init did not write back (recover_at_start: NVCACHE_RECOVER=0,
 * the job still ran then, or the parts were kept): the file lacks their data, which nvcache-recover
 * would write later, over whatever this job writes. Said at each such open; an open that may write
 * marks them, so that recovery keeps them (--force writes them all the same). Recovering them here
 * instead would change the file under ranks of other nodes that have read its size already. */
static int kept_at_close; /* a close of this process failed to drain and kept its parts */

/* A close failed to drain and kept its parts: said in this process and in its node's mailbox,
   which every process of the job on the host maps. */
static void note_kept_at_close(void)
{
    __atomic_store_n(&kept_at_close, 1, __ATOMIC_RELAXED);
    if (nvc_rt.mbox && nvc_rt.node >= 0 && nvc_rt.node < nvc_rt.nnodes && nvc_rt.mbox[nvc_rt.node])
        atomic_store_explicit(&nvc_rt.mbox[nvc_rt.node]->kept_parts, 1, memory_order_relaxed);
}

/* Whether a close of this job on this host kept parts it could not drain. */
static int kept_on_host(void)
{
    if (__atomic_load_n(&kept_at_close, __ATOMIC_RELAXED))
        return 1;
    for (int n = 0; nvc_rt.mbox && n < nvc_rt.nnodes; n++)
        if (nvc_rt.mbox[n] && atomic_load_explicit(&nvc_rt.mbox[n]->kept_parts, memory_order_relaxed))
            return 1;
    return 0;
}

static void warn_dead_parts(struct nvc_file *f)
{
    uint64_t job = 0;
    int w = !(f->amode & MPI_MODE_RDONLY);
    int n = nvc_dead_parts(nvc_cfg.dir, nvc_rt.jobid, &f->file_id, w ? nvc_rt.jobid : 0, &job);
    if (n)
        nvc_msg("%s: %d NVRAM part(s) of job %016llx, which ended without writing them back, are in %s: this "
                "open does not see their data (MPI_Init writes such parts back only when NVCACHE_RECOVER is on, "
                "their job had ended and this host made them; else run nvcache-recover before reopening a file a "
                "crashed job wrote)%s",
                f->path, n, (unsigned long long)job, nvc_cfg.dir,
                w ? "; they are marked, and nvcache-recover keeps them rather than write their older bytes over "
                    "this job's (--force writes them)"
                  : "");
    /* This job's own parts of the file that an earlier open kept when its drain failed at its
       close: the same, or their recovery (whose later-writer checks see one job) would write
       their older bytes over what this open writes and syncs. Not while another handle's drain
       failed here (this open fails): that handle still caches, its parts are not kept ones. Only
       once such a close happened on the host (its mailboxes say so): a directory scan at every
       open would cost O(files^2) with many files open. */
    if (f->open_error != MPI_SUCCESS || !kept_on_host())
        return;
    n = nvc_own_kept_parts(nvc_cfg.dir, nvc_rt.jobid, &f->file_id, f->fileid, w);
    if (n)
        nvc_msg("%s: %d NVRAM part(s) that an earlier close of this file by this job could not drain are in %s: "
                "this open does not see their data%s",
                f->path, n, nvc_cfg.dir,
                w ? "; they are marked, and nvcache-recover keeps them rather than write their older bytes over "
                    "this open's (--force writes them)"
                  : "");
}

/* Second half of the open: part creation and prefetch by the representatives, then agreement. */
static int open_parts(struct nvc_file *f, const char *path, int amode, int ok_local, uint64_t t0, MPI_Comm acomm)
{
    MPI_Offset size = 0;
    PMPI_File_get_size(f->real, &size);
    uint64_t per = ((uint64_t)size + f->nparts - 1) / f->nparts;
    per = (per + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
    f->stripe = per > f->opts.min_stripe ? per : f->opts.min_stripe;
    if (f->opts.striping_unit)
        f->stripe = f->opts.striping_unit;
    /* Only a regular file is cached. A FIFO, a device or a socket has no bytes to prefetch or
       size to keep: cached, MPI_File_get_size and reads of a FIFO succeeded where MPI-IO fails
       them, and /dev/null would read back what was written to it and have its size set at close.
       Every rank opened the same name, so every rank finds the same. */
    struct stat sb;
    if (ok_local && (stat(f->path + f->path_off, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        nvc_debug("%s: not a regular file; not cached", path);
        ok_local = 0;
    }
    /* One cache state per file: only an open with no other handle of the file in the job caches. */
    ok_local = reg_enter(f, ok_local);
    append_at_end(f->real, amode);
    if (represents_part(f) && f->file_id.ino)
        warn_dead_parts(f);
    /* The size again, now that no other handle can write without draining this open first: a
       handle that wrote and closed between the first look and the join (the table's entry was
       free again) left a longer file, and a prefetch of the old size would make this open drain
       stale bytes over what that handle wrote (consistency self-100 across emulated hosts,
       where joining the table takes a round trip over MPI). The stripe stays: ranks agreed on it. */
    if (ok_local)
        PMPI_File_get_size(f->real, &size);

    int rep = ok_local && represents_part(f);
    uint32_t st = ok_local ? NVC_OK : NVC_ERR;
    int direct = nvc_cfg.direct && f->opts.reply == NVC_REPLY_SYNC;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    if (rep && direct) {
        /* The representative creates its node's part itself (no round trip to the manager, which
           maps it when a request for it first arrives) and keeps the mapping for direct access. */
        struct nvc_part *d = calloc(1, sizeof *d);
        f->dseg = malloc(NVC_MAXSEG * sizeof *f->dseg);
        int e = d && f->dseg ? nvc_part_make(d, nvc_rt.jobid, f->fileid, f->nparts, (uint32_t)f->my_part, f->stripe,
                                             (uint64_t)size, (amode & MPI_MODE_DELETE_ON_CLOSE) ? 1 : 0,
                                             f->opts.reply, f->path + f->path_off, &f->file_id)
                              : -ENOMEM;
        if (e) {
            free(d);
            st = e == -ENOSPC ? NVC_NOSPACE : NVC_ERR;
        } else {
            close(d->fd); /* the manager reserves NVRAM with its own descriptor */
            d->fd = -1;
            f->direct = d;
            if (size > 0)
                st = (uint32_t)prefetch_part(f, (uint32_t)f->my_part, size);
            if (size > 0 && st == NVC_OK)
                populate(d, (uint64_t)size);
        }
    } else if (rep) {
        struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_OPEN);
        s->arg[0] = f->nparts;
        s->arg[1] = (uint64_t)f->my_part;
        s->arg[2] = f->stripe;
        s->arg[3] = (uint64_t)size;
        s->arg[4] = (amode & MPI_MODE_DELETE_ON_CLOSE) ? 1 : 0;
        s->arg[5] = (uint64_t)f->opts.reply;
        snprintf((char *)nvc_slot_data(s), NVC_PATH_MAX, "%s", f->path + f->path_off);
        memcpy(nvc_slot_data(s) + NVC_PATH_MAX, &f->file_id, sizeof f->file_id);
        st = call(f, (uint32_t)f->my_part, s);
        if (st == NVC_OK && size > 0)
            st = (uint32_t)prefetch_part(f, (uint32_t)f->my_part, size);
    }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    /* A second handle that joined the table before this representative created its part found
       no part to drain: the table, asked after the part exists, says whether this open still
       caches (a later handle's drain finds every part). Ranks of node 0's host also check the
       table before each operation; elsewhere only this check and the parts' states stand. */
    /* Asked also when the part's setup failed: a prefetch refused because that handle drained the
       part is no failure either. A table that does not answer counts as lost: passing through
       is safe either way. */
    int lost = rep && f->reg_owner &&
               !(f->reg ? nvc_reg_owned(f->reg, f->fileid) : reg_remote(NVC_OP_REG_OWNED, f->reg_idx, f->fileid) == 1);
    if (lost)
        st = NVC_BYPASS;
    /* The open's one collective: every rank may cache; every part was set up; and the index of
       the shared-memory entry for this file's later collectives, claimed by rank 0 (as -(index+1),
       so that the minimum carries it; 0: none free). */
    /* Jobs across hosts meet on a duplicate communicator instead (made below; index 0 stands for it). */
    int coll = f->rank == 0 && ok_local ? nvc_rt.multi_host ? 0 : nvc_coll_claim(nvc_rt.mbox[0], f->fileid) : -1;
    if (f->rank == 0 && ok_local && coll < 0)
        nvc_msg("%s: %d cached files are open already; using plain MPI-IO for this file", path, NVC_COLL_ENTRIES);
    /* ... and the stripe, as its minimum and (negated) maximum: ranks whose hints differ would
       otherwise place the same file offset in different parts; and whether a representative found
       that another handle was opened meanwhile (the file is then shared: no failure to report). */
    /* Jobs across hosts: the duplicate for this file's collectives, made (or shared) before the
       agreement, by every rank of acomm, so that a failure to make it is agreed on too. */
    int mcomm_ok = !nvc_rt.multi_host || mcomm_get(f, acomm) == MPI_SUCCESS;
    if (!mcomm_ok && f->rank == 0)
        nvc_msg("%s: MPI_Comm_dup for nvcache's collectives failed; using plain MPI-IO for this file", path);
    /* ... and nvcache_flush: its smallest and largest value, and rank 0's (the others send the
       largest value, so that the minimum carries it). Every rank follows rank 0's, as MPI-IO
       libraries take hints from rank 0: a rank whose own said `never` dropped its part at close
       while the others wrote theirs back, in other collectives (the job hung). */
    int64_t flush = (int64_t)f->opts.flush;
    /* ... and the file size limit (RLIMIT_FSIZE) as its smallest and largest value: a part is
       drained under its representative's limit, also the bytes other ranks wrote into it, and
       a write is checked against none. With limits that differ, a write past the writer's own
       limit succeeded (plain MPI-IO fails it), and an unlimited rank's write into a limited
       rank's part failed the close. So ranks whose limits differ use plain MPI-IO. */
    struct rlimit fsz;
    int64_t fsize_limit = getrlimit(RLIMIT_FSIZE, &fsz) == 0 && fsz.rlim_cur != RLIM_INFINITY &&
                                  fsz.rlim_cur < (rlim_t)INT64_MAX
                              ? (int64_t)fsz.rlim_cur
                              : INT64_MAX;
    int64_t ok[NVC_AGREE_VALS] = {ok_local && mcomm_ok, !ok_local || st == NVC_OK, f->rank == 0 ? -(int64_t)(coll + 1) : 0,
                                  (int64_t)f->stripe, -(int64_t)f->stripe, -(int64_t)lost,
                                  -(int64_t)(f->open_error != MPI_SUCCESS), flush, -flush,
                                  f->rank == 0 ? flush : INT64_MAX, fsize_limit, -fsize_limit};
    PMPI_Allreduce(MPI_IN_PLACE, ok, NVC_AGREE_VALS, MPI_INT64_T, MPI_MIN, acomm);
    int stripes_differ = ok[3] != -ok[4];
    int limits_differ = ok[10] != -ok[11];
    if (!ok[0] || !ok[1] || ok[2] >= 0 || stripes_differ || limits_differ) {
        if (coll >= 0 && !nvc_rt.multi_host) /* nobody else learnt the index */
            __atomic_store_n(&nvc_coll_entry(nvc_rt.mbox[0], coll)->fileid, 0, __ATOMIC_RELEASE);
        /* A part drained by another handle of the file during this open (its prefetch was refused)
           is no failure to report: the file is shared and passes through. */
        int shared = ok[5] < 0 || !still_owned(f);
        if (f->reg_owner) /* its handles stay open, uncached: no other open may cache the file meanwhile */
            reg_disown(f);
        f->reg_owner = 0;
        comm_release(f); /* every rank is here (the agreement): the shared duplicate's count stays equal */
        if (f->direct) {
            nvc_part_close(f->direct, 1);
            free(f->direct);
            f->direct = NULL;
        }
        if (rep) {
            pthread_mutex_lock(&nvc_rt.slot_lock);
            struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_CLOSE);
            call(f, (uint32_t)f->my_part, s);
            pthread_mutex_unlock(&nvc_rt.slot_lock);
        }
        if (ok[6] < 0) {
            /* A rank's drain of the open that caches the file failed, or its join of the file
               table did (reg_enter): no rank of this open may use the file. MPI_File_open raises
               on MPI_FILE_NULL's handler. */
            if (f->reg_joined)
                reg_leave(f->reg, f->reg_idx);
            PMPI_File_close(&f->real);
            int first = f->rank == 0;
            file_free(f);
            if (first)
                nvc_msg("%s: the open fails: another open caches the file and its cache could not be written back "
                        "to it, or the job's file table could not be reached (see above)",
                        path);
            return raise_open_error(MPI_ERR_IO);
        }
        if (f->rank == 0 && ok[0] && !ok[1] && shared)
            nvc_debug("%s: another handle of the file was opened during this open; using plain MPI-IO", path);
        else if (f->rank == 0 && ok[0] && !ok[1])
            nvc_msg("%s: cannot cache in %s (see messages above); using plain MPI-IO for this file", path, nvc_cfg.dir);
        else if (f->rank == 0 && ok[0] && ok[1] && ok[2] < 0 && limits_differ)
            nvc_msg("%s: the ranks' file size limits (RLIMIT_FSIZE) differ; using plain MPI-IO for this file", path);
        else if (f->rank == 0 && ok[0] && ok[1] && ok[2] < 0 && stripes_differ)
            nvc_msg("%s: ranks passed different stripe hints (%lld to %lld bytes); using plain MPI-IO for this file",
                    path, (long long)ok[3], (long long)-ok[4]);
        file_register(f);
        return MPI_SUCCESS;
    }
    if (direct && f->my_part >= 0 && !f->direct) {
        /* Direct access to my node's part (the paper's asynchronous replies keep the manager path). */
        char file[1200];
        nvc_part_name(file, sizeof file, nvc_rt.jobid, f->fileid, (uint32_t)f->my_part);
        struct nvc_part *d = calloc(1, sizeof *d);
        f->dseg = malloc(NVC_MAXSEG * sizeof *f->dseg);
        if (d && f->dseg && nvc_part_attach(d, file, 0) == 0)
            f->direct = d;
        else {
            nvc_debug("%s: cannot map part %s; requests go through the manager", path, file);
            free(d);
        }
    }
    if (ok[7] != -ok[8] && f->rank == 0)
        nvc_msg("%s: the hint nvcache_flush differs across the ranks; every rank uses rank 0's (%s)", path,
                ok[9] == NVC_FLUSH_NEVER ? "never" : ok[9] == NVC_FLUSH_SYNC ? "sync" : "close");
    f->opts.flush = (int)ok[9];
    if (!nvc_rt.multi_host) /* else f->mcomm, made before the agreement */
        f->coll = nvc_coll_entry(nvc_rt.mbox[0], (int)(-ok[2] - 1));
    MPI_Offset pos = 0;
    PMPI_File_get_position(f->real, &pos);
    f->fp = pos;
    f->size_hint = size;
    f->mode = NVC_MODE_CACHED;
    file_register(f);
    nvc_stats_add(f->st, NVC_ST_OPEN, (uint64_t)size, nvc_now_ns() - t0, 1);
    nvc_debug("%s: cached in %u part(s), stripe %llu", path, f->nparts, (unsigned long long)f->stripe);
    return MPI_SUCCESS;
}

/* Whether a delete-on-close handle's file outlives its close: the close removes one name, and a
 * file linked under another too (before the open or since) keeps what was written, as under plain
 * MPI-IO, so its cache must be flushed, not discarded. */
static int64_t outlives_delete(struct nvc_file *f)
{
    const char *name = f->path + f->path_off;
    struct nvc_file_id now;
    struct stat sb;
    char moved[NVC_PATH_MAX];
    if (nvc_file_id_get(f->path, &now) == 0 && nvc_file_id_same(&f->file_id, &now, !nvc_rt.multi_host))
        return stat(name, &sb) == 0 && sb.st_nlink > 1;
    /* The name leads elsewhere or nowhere: the file survives if it is linked anywhere. */
    int held;
    if (!f->file_id.ino || nvc_file_find_open(&f->file_id, !nvc_rt.multi_host, name, moved, sizeof moved, &held) != 0)
        return 0;
    if (held >= 0)
        close(held);
    return 1;
}

int nvc_close(MPI_File *fh)
{
    struct nvc_file *f = nvc_file_lookup(*fh);
    if (!f)
        return PMPI_File_close(fh);
    uint64_t t0 = nvc_now_ns();
    int rc = MPI_SUCCESS;
    pass_if_shared(f); /* another handle drained (or is draining) this open's parts */
    nvc_pass_ready(f);  /* a drain that failed before may succeed now; else every part is kept */
    if (f->mode != NVC_MODE_PASS) {
        int discard = (f->amode & MPI_MODE_RDONLY) || f->opts.flush == NVC_FLUSH_NEVER;
        if (!discard && (f->amode & MPI_MODE_DELETE_ON_CLOSE)) {
            int64_t kept = outlives_delete(f);
            coll_max(f, &kept, 1);
            discard = !kept;
        }
        int rep = represents_part(f);
        int failed = 0;
        if (!discard) {
            /* Flush: everyone has finished writing before the representatives drain; then the
               real size becomes the largest size any part saw. */
            int64_t byp = f->mode == NVC_MODE_BYPASSED;
            coll_max(f, &byp, 1);
            int64_t psize = 0;
            int ok = 1;
            int drains = 0;
            if (rep && !byp)
                drains = claim_own_drain(f); /* returns holding nvc_rt.slot_lock */
            else
                pthread_mutex_lock(&nvc_rt.slot_lock);
            /* The drained pages stay dirty: the part is marked CLOSED below once they are
               durable in the file, or kept whole for nvcache-recover. */
            struct drained dr = {0};
            if (rep && !byp) {
                if (drains && drain_part(f, (uint32_t)f->my_part, 0, &dr) != MPI_SUCCESS) {
                    ok = 0;
                    struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_BYPASS_END);
                    s->arg[0] = NVC_BYPASS_ABANDON;
                    call(f, (uint32_t)f->my_part, s);
                }
                /* The part is removed below: bytes an MPI_File_sync (collective, so every rank
                   saw it) made durable in NVRAM must now be durable in the real file. Through
                   the handle that wrote them: ROMIO skips the fsync on a handle without writes. */
                else if (f->synced && f->self_fh != MPI_FILE_NULL && self_sync(f) != MPI_SUCCESS) {
                    nvc_msg("%s: fsync of the flushed part %d failed; it is kept for nvcache-recover", f->path,
                            f->my_part);
                    ok = 0;
                }
                /* The part's size counts only when this close drained it. A part another handle
                   drained (BYPASS) still reports the size it had, and a set_size through that
                   handle may have cut the file since: taking it grew the file back (a rank
                   without a mapping of its part, whose file table is on another host, cannot
                   tell above that its open lost the file). */
                if (drains && f->direct)
                    psize = (int64_t)__atomic_load_n(&f->direct->hdr->size, __ATOMIC_ACQUIRE);
                else if (drains) {
                    struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_SIZE);
                    uint32_t st = call(f, (uint32_t)f->my_part, s);
                    if (st == NVC_OK)
                        psize = (int64_t)s->arg[0];
                    else if (st != NVC_BYPASS) {
                        nvc_msg("%s: size request to part %d failed at close; it is kept for nvcache-recover",
                                f->path, f->my_part);
                        ok = 0;
                    }
                }
            }
            pthread_mutex_unlock(&nvc_rt.slot_lock);
            free(dr.seg);
            /* The handle the drain wrote through: a write-back error that a file system defers to
               close(2) (NFS) shows here, and then the drained bytes may not be in the file: keep
               the part (its close had been ignored, and the part removed with the only copy). */
            if (self_close(f) != MPI_SUCCESS && drains) {
                nvc_msg("%s: closing the handle that flushed part %d failed; it is kept for nvcache-recover",
                        f->path, f->my_part);
                ok = 0;
            }
            /* A rank whose bypass could not drain a part left its data there: keep every part. */
            int64_t v[2] = {psize, ok && !f->drain_failed ? 0 : 1};
            coll_max(f, v, 2);
            if (!byp && !v[1]) {
                /* Only ever grows the real file: a shrinking set_size reached it at once
                   (nvc_set_size), and a close never cuts off what anyone else wrote. */
                MPI_Offset real = 0;
                PMPI_File_get_size(f->real, &real);
                /* set_size is collective: the ranks decide together, from the largest and the
                   smallest size any of them sees (sizes seen may differ: an NFS client's cached
                   attributes; OMPIO's size of a file deleted while open, 0 on one rank and 400 on
                   the other here), and never cut below the largest. Decided per rank, only some
                   called it and the job hung. */
                int64_t w[2] = {(int64_t)real, -(int64_t)real};
                coll_max(f, w, 2);
                if (-w[1] < v[0])
                    rc = PMPI_File_set_size(f->real, v[0] > w[0] ? v[0] : w[0]);
            }
            failed = v[1] != 0;
        } else {
            /* Delete-on-close or read-only: nothing is written back (the paper's no-flush modes).
               One barrier: no rank still reads a part when it is removed. */
            coll_barrier(f);
        }
        if (failed) {
            note_kept_at_close(); /* every rank of the close: warn_dead_parts */
            if (f->rank == 0)
                nvc_msg("%s: flush at close failed; NVRAM parts kept in %s for nvcache-recover", f->path, nvc_cfg.dir);
            rc = nvc_raise(f, MPI_ERR_IO); /* before the handle is freed; the parts are kept */
        } else if (rep) {
            /* The part is clean (or temporary): mark it CLOSED, so that recovery never uses it,
               and let the manager unmap and remove it while this rank goes on (the reply is
               collected at the next request through this slot, or at MPI_Finalize). */
            pthread_mutex_lock(&nvc_rt.slot_lock);
            if (f->direct) {
                __atomic_store_n(&f->direct->hdr->state, NVC_PART_CLOSED, __ATOMIC_SEQ_CST);
                nvc_part_persist(f->direct, &f->direct->hdr->state, sizeof f->direct->hdr->state);
                /* Representatives created their parts themselves (direct): they remove them; the
                   manager only drops its mapping if it made one. */
                if (unlink(f->direct->file) != 0 && errno != ENOENT)
                    nvc_msg("unlink(%s) failed: %s", f->direct->file, strerror(errno));
            }
            struct nvc_mailbox *mb = nvc_rt.mbox[f->part_node[f->my_part]];
            if (f->direct && nvc_mailbox_notify_closed(mb, f->fileid) == 0)
                ; /* the manager drops its mapping, if it made one, at its next wake-up */
            else if (f->direct)
                nvc_mailbox_post(mb, req(f, (uint32_t)f->my_part, NVC_OP_CLOSE));
            else
                /* The manager made this part (NVCACHE_DIRECT=0, async replies) and nobody marked
                   it CLOSED: wait until it is removed, or a crash right after this close would
                   leave an ACTIVE part that recovery applies to the file (its data and size, even
                   to a file rewritten since). */
                nvc_mailbox_call(mb, req(f, (uint32_t)f->my_part, NVC_OP_CLOSE));
            pthread_mutex_unlock(&nvc_rt.slot_lock);
        }
    }
    struct nvc_stats *st = f->st;
    int cached = f->mode == NVC_MODE_CACHED;
    struct nvc_reg *reg = f->reg;
    int64_t reg_idx = f->reg_idx;
    int joined = f->reg_joined;
    file_free(f);
    int rc2 = PMPI_File_close(fh);
    if (joined) /* after the drain and the real close: a later open finds the file complete */
        reg_leave(reg, reg_idx);
    nvc_stats_add(st, NVC_ST_CLOSE, 0, nvc_now_ns() - t0, cached);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ------------------------------------------------------------------ metadata */

int nvc_get_size(struct nvc_file *f, MPI_Offset *size)
{
    pthread_mutex_lock(&f->lock);
    pass_if_shared(f);
    pthread_mutex_unlock(&f->lock);
    if (f->mode == NVC_MODE_CACHED) {
        int64_t s = 0;
        pthread_mutex_lock(&f->lock);
        pthread_mutex_lock(&nvc_rt.slot_lock);
        int rc = parts_size(f, &s);
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        if (rc == MPI_SUCCESS) {
            f->size_hint = s;
            *size = s;
            pthread_mutex_unlock(&f->lock);
            return MPI_SUCCESS;
        }
        if (rc == NEED_PASS)
            bypass(f, "part bypassed by another rank or handle", 1); /* that one said why */
        pthread_mutex_unlock(&f->lock);
    }
    pthread_mutex_lock(&f->lock);
    int rc = nvc_pass_ready(f); /* the real file lacks a kept part's bytes: its size may too */
    pthread_mutex_unlock(&f->lock);
    return rc != MPI_SUCCESS ? nvc_raise(f, rc) : PMPI_File_get_size(f->real, size);
}

/* Writes the dirty bytes of the part this rank represents to the real file, fsyncs them through
 * the flushing handle and marks them clean (a sync under NVCACHE_FLUSH=sync, a shrinking set_size),
 * holding the part DRAINING meanwhile, as a close does (claim_own_drain), and ACTIVE again after:
 * the open goes on caching. Drained without the claim, a second handle's open could drain the same
 * pages at once, return and write through MPI-IO, and this drain then wrote its copy of a page
 * shared with those bytes over them (all 100 bytes of such a write lost with one rank delayed
 * before its drain's first write). Returns NEED_PASS when another handle drained the part first
 * (its bytes are in the file). Called without nvc_rt.slot_lock. */
static int drain_own_part(struct nvc_file *f)
{
    if (!claim_own_drain(f)) { /* (which returns holding nvc_rt.slot_lock) */
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        return NEED_PASS;
    }
    uint32_t p = (uint32_t)f->my_part;
    struct drained dr = {0};
    int rc = drain_part(f, p, 0, &dr);
    if (rc == MPI_SUCCESS && f->self_fh != MPI_FILE_NULL)
        rc = self_sync(f);
    if (rc == MPI_SUCCESS)
        clean_drained(f, p, &dr);
    free(dr.seg);
    /* ACTIVE again, with whatever the drain left dirty (all of it if it failed). */
    struct nvc_slot *s = req(f, p, NVC_OP_BYPASS_END);
    s->arg[0] = NVC_BYPASS_ABANDON;
    call(f, p, s);
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    return rc;
}

/* drain_own_part, if the part's size exceeds `beyond` (only then can it hold bytes past it); a
 * rank that represents no part, or a read-only open, has nothing to do. */
static int flush_own_part(struct nvc_file *f, int64_t beyond)
{
    if (!represents_part(f) || (f->amode & MPI_MODE_RDONLY))
        return MPI_SUCCESS;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    uint32_t p = (uint32_t)f->my_part;
    int64_t size = INT64_MAX; /* unknown: flushed */
    if (f->direct)
        size = (int64_t)__atomic_load_n(&f->direct->hdr->size, __ATOMIC_ACQUIRE);
    else {
        struct nvc_slot *s = req(f, p, NVC_OP_SIZE);
        if (call(f, p, s) == NVC_OK)
            size = (int64_t)s->arg[0];
    }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    return size > beyond ? drain_own_part(f) : MPI_SUCCESS;
}

/* The part this rank represents takes size `size` (set_size: bytes beyond it dropped) or, with
 * `grow_only`, at least that size (preallocate); nothing on other ranks. */
static void set_own_part_size(struct nvc_file *f, MPI_Offset size, int grow_only)
{
    if (!represents_part(f))
        return;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_SETSIZE);
    s->arg[0] = (uint64_t)size;
    s->arg[1] = (uint64_t)grow_only;
    call(f, (uint32_t)f->my_part, s);
    pthread_mutex_unlock(&nvc_rt.slot_lock);
}

/* fsync(2) of the real file through its path: MPI_File_sync does not fsync a handle nothing was
 * written through (ROMIO), so it would leave a set_size's new length in the page cache. Called on
 * one rank. A path that no longer names the open file (renamed or replaced meanwhile) is left
 * alone: the cut is then as durable as plain MPI-IO leaves it. */
static int fsync_real(struct nvc_file *f)
{
    int fd = open(f->path + f->path_off, O_RDONLY | O_CLOEXEC);
    struct nvc_file_id now;
    if (fd < 0 || nvc_file_id_fd(fd, &now) != 0 || !nvc_file_id_same(&f->file_id, &now, !nvc_rt.multi_host)) {
        if (fd >= 0)
            close(fd);
        nvc_msg("%s: the path no longer names the open file: its new size is not fsynced", f->path);
        return MPI_SUCCESS;
    }
    int rc = fsync(fd) == 0 ? MPI_SUCCESS : MPI_ERR_IO;
    if (rc != MPI_SUCCESS)
        nvc_msg("%s: fsync after MPI_File_set_size failed: %s", f->path, strerror(errno));
    close(fd);
    return rc;
}

int nvc_set_size(struct nvc_file *f, MPI_Offset size, int grow_only)
{
    if (f->mode == NVC_MODE_PASS)
        return grow_only ? PMPI_File_preallocate(f->real, size) : PMPI_File_set_size(f->real, size);
    /* Not while a rank keeps parts it could not drain (nvc_pass_ready): their bytes, newer than
       the real file's, would be written over the new size by their drain or recovery. Every rank
       learns it before the collective call on the real file. */
    pthread_mutex_lock(&f->lock);
    int rc = nvc_pass_ready(f);
    pthread_mutex_unlock(&f->lock);
    int64_t kept = rc != MPI_SUCCESS;
    coll_max(f, &kept, 1);
    if (kept)
        return nvc_raise(f, rc != MPI_SUCCESS ? rc : MPI_ERR_IO);
    /* The ranks take one path below, whose collectives differ: one rank may have left the cache
       on its own (an uncached call, another handle). Everyone agrees first, as at a sync; a
       drain that fails on the way fails the call before the file is touched. */
    int64_t byp[2] = {f->mode == NVC_MODE_BYPASSED || !still_owned(f), 0};
    coll_max(f, byp, 1);
    if (byp[0]) {
        int brc = bypass(f, "file bypassed by another rank or handle", !still_owned(f));
        byp[1] = brc != MPI_SUCCESS;
        coll_max(f, byp + 1, 1);
        if (byp[1])
            return nvc_raise(f, brc != MPI_SUCCESS ? brc : MPI_ERR_IO);
    }
    int cached = f->mode == NVC_MODE_CACHED;
    if (!grow_only && cached) {
        /* A crash anywhere in a set_size must leave the file as before the call or as after it.
           nvcache-recover only grows files (a part knows only its own writes' sizes) and writes
           back the parts' dirty bytes below each part's size; so first every part that may hold
           bytes past the new size writes its dirty bytes to the real file, durably, and then
           every part takes the new size (dropping what lies beyond it), all before the real file
           is cut. A crash before the cut recovers the file as it was (no part holds anything past
           the new size that the file lacks); after it, as set. A set_size that grows the file
           flushes nothing. */
        int frc = flush_own_part(f, size);
        int64_t st[2] = {frc != MPI_SUCCESS && frc != NEED_PASS, frc == NEED_PASS};
        coll_max(f, st, 2);
        if (st[0])
            return nvc_raise(f, MPI_ERR_IO);
        if (st[1]) {
            /* Another handle's open drained a part meanwhile: the file holds its bytes, and the
               file leaves the cache (as it would have at the agreement above, a moment later). */
            int brc = bypass(f, "file bypassed by another rank or handle", 1);
            int64_t b = brc != MPI_SUCCESS;
            coll_max(f, &b, 1);
            if (b)
                return nvc_raise(f, brc != MPI_SUCCESS ? brc : MPI_ERR_IO);
            cached = 0;
        }
    }
    if (!grow_only && cached) {
        set_own_part_size(f, size, 0);
        coll_barrier(f); /* every part has the new size before the file is cut */
        rc = PMPI_File_set_size(f->real, size);
        int64_t r[2] = {rc != MPI_SUCCESS, 0};
        /* ROMIO cuts the file on one rank and tells the others: it is cut when the call returns. */
        if (rc == MPI_SUCCESS && f->rank == 0)
            r[1] = fsync_real(f) != MPI_SUCCESS;
        coll_max(f, r, 2);
        if (r[0]) {
            /* The parts took the size, the file did not: the file holds every byte (the parts
               were flushed), so the file is read and written directly from now on. */
            int brc = bypass(f, "MPI_File_set_size failed on the file", 1);
            return brc != MPI_SUCCESS ? nvc_raise(f, brc) : rc;
        }
        f->size_hint = size;
        return r[1] ? nvc_raise(f, MPI_ERR_IO) : MPI_SUCCESS;
    }
    rc = grow_only ? PMPI_File_preallocate(f->real, size) : PMPI_File_set_size(f->real, size);
    /* The call may fail on some ranks only (ROMIO preallocates on one rank): every rank goes
       on to the same collectives below, and the parts change only if it succeeded everywhere. */
    int64_t bad = rc != MPI_SUCCESS;
    coll_max(f, &bad, 1);
    if (bad)
        return rc;
    if (!grow_only) {
        /* A file out of the cache: its shrink is durable too before the call returns, as
           nvcache-recover, which only grows files, assumes of every shrink. */
        int64_t s = f->rank == 0 && fsync_real(f) != MPI_SUCCESS;
        coll_max(f, &s, 1);
        if (s)
            return nvc_raise(f, MPI_ERR_IO);
    }
    if (cached)
        set_own_part_size(f, size, grow_only);
    coll_barrier(f); /* every part has the new size before anyone reads */
    /* A preallocation is made durable by the next MPI_File_sync, as with plain MPI-IO, whose sync
       fsyncs the file; a cached sync reaches only NVRAM (nvc_sync). */
    f->grown_unsynced |= grow_only;
    if (!grow_only)
        f->size_hint = size;
    else if (size > f->size_hint)
        f->size_hint = size;
    return MPI_SUCCESS;
}

int nvc_sync(struct nvc_file *f)
{
    uint64_t t0 = nvc_now_ns();
    int rc = MPI_SUCCESS;
    int first = !f->synced;
    f->synced = 1;
    if (f->reg_owner && f->reg) /* a drain by another handle fsyncs */
        atomic_store_explicit(&f->reg->synced, 1, memory_order_seq_cst);
    else if (f->reg_owner && first)
        reg_remote(NVC_OP_REG_SYNCED, f->reg_idx, 0);
    int64_t byp = f->mode == NVC_MODE_BYPASSED || !still_owned(f);
    coll_max(f, &byp, 1);
    if (byp) {
        /* Everyone agrees before the collective call on the real file. */
        int brc = bypass(f, "file bypassed by another rank or handle", !still_owned(f));
        rc = PMPI_File_sync(f->real);
        return brc != MPI_SUCCESS ? nvc_raise(f, brc) : rc;
    }
    pthread_mutex_lock(&nvc_rt.slot_lock);
    if (f->opts.reply == NVC_REPLY_ASYNC)
        for (uint32_t p = 0; p < f->nparts; p++) {
            struct nvc_slot *s = req(f, p, NVC_OP_SYNC);
            call(f, p, s); /* served after this rank's earlier writes were persisted */
        }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    if (f->opts.flush == NVC_FLUSH_SYNC && represents_part(f) && !(f->amode & MPI_MODE_RDONLY)) {
        rc = drain_own_part(f);
        /* Another handle drained the part: its drain fsynced it (f->reg->synced, set above). */
        if (rc == NEED_PASS)
            rc = MPI_SUCCESS;
    }
    /* Every rank has the flag (set_size and preallocate are collective): the call on the real
       file is too. */
    int prc = MPI_SUCCESS; /* an error of the call on the application's handle: MPI handled it */
    if (f->grown_unsynced) {
        prc = PMPI_File_sync(f->real);
        if (prc != MPI_SUCCESS)
            nvc_msg("%s: fsync after MPI_File_preallocate failed (error %d)", f->path, prc);
        else
            f->grown_unsynced = 0;
        if (rc == MPI_SUCCESS)
            rc = prc;
    }
    if (f->opts.flush == NVC_FLUSH_SYNC) {
        int64_t r = rc;
        coll_max(f, &r, 1);
        rc = (int)r;
    }
    nvc_stats_add(f->st, NVC_ST_SYNC, 0, nvc_now_ns() - t0, 1);
    return rc != MPI_SUCCESS && rc != prc ? nvc_raise(f, rc) : rc;
}

int nvc_set_view(struct nvc_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep)
{
    struct nvc_flat ft;
    int rc = nvc_flatten(filetype, &ft);
    if (rc != MPI_SUCCESS)
        nvc_msg("%s: cannot flatten the file type (error %d)", f->path, rc);
    int esz = 1;
    PMPI_Type_size(etype, &esz);
    /* The view changes and the pointer goes back to 0 whatever follows: pass-through calls with the
       individual pointer address the real handle's new view from etype 0 (ROMIO's set_view). */
    pthread_mutex_lock(&f->lock);
    nvc_flat_free(&f->view.ft);
    if (rc == MPI_SUCCESS)
        f->view.ft = ft;
    f->view.disp = disp;
    f->view.etype = etype;
    f->view.filetype = filetype;
    f->view.etype_size = esz > 0 ? esz : 1;
    f->view.native = datarep && !strcmp(datarep, "native");
    f->view.opaque = rc != MPI_SUCCESS || !f->view.native;
    f->fp = 0;
    pthread_mutex_unlock(&f->lock);
    int brc = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        brc = nvc_bypass(f, "file type cannot be flattened");
    else if (!f->view.native)
        brc = nvc_bypass(f, "non-native data representation");
    return nvc_raise(f, brc); /* the view is set either way (the real handle's, by the caller) */
}

/* A seek nvcache finds erroneous (an unknown whence, a position before the view's start), or one
 * to the end of a view it does not map: the real handle is asked the same, so MPI-IO reports an
 * error as it would without nvcache (error class, the file's error handler); should it accept it,
 * nvcache takes the position it set. */
static int seek_real(struct nvc_file *f, MPI_Offset offset, int whence)
{
    int rc = PMPI_File_seek(f->real, offset, whence);
    MPI_Offset pos;
    if (rc == MPI_SUCCESS && PMPI_File_get_position(f->real, &pos) == MPI_SUCCESS)
        f->fp = pos;
    return rc;
}

int nvc_seek(struct nvc_file *f, MPI_Offset offset, int whence)
{
    int64_t base;
    if (whence == MPI_SEEK_SET)
        base = 0;
    else if (whence == MPI_SEEK_CUR)
        base = f->fp;
    else if (whence == MPI_SEEK_END) {
        if (f->view.opaque) {
            /* The real file's end, which lacks a kept part's bytes while its drain fails. */
            pthread_mutex_lock(&f->lock);
            int rc = nvc_pass_ready(f);
            pthread_mutex_unlock(&f->lock);
            return rc != MPI_SUCCESS ? nvc_raise(f, rc) : seek_real(f, offset, whence);
        }
        MPI_Offset size;
        int rc = nvc_get_size(f, &size);
        if (rc != MPI_SUCCESS)
            return rc;
        if (size < f->view.disp)
            return seek_real(f, offset, whence); /* the end lies before the view */
        int64_t sb = nvc_view_stream_before(&f->view, size);
        base = (sb + f->view.etype_size - 1) / f->view.etype_size;
    } else
        return seek_real(f, offset, whence);
    if (base + offset < 0)
        return seek_real(f, base + offset, MPI_SEEK_SET);
    f->fp = base + offset;
    return MPI_SUCCESS;
}

int nvc_byte_offset(struct nvc_file *f, MPI_Offset offset, MPI_Offset *disp)
{
    if (f->view.opaque)
        return PMPI_File_get_byte_offset(f->real, offset, disp);
    *disp = nvc_view_file_offset(&f->view, offset * f->view.etype_size);
    return MPI_SUCCESS;
}
