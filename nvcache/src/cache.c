/* cache.c: one cached file as seen by a rank.
 *
 * Open (collective): the real file is opened through PMPI; the nodes of the communicator each own
 * one part (file blocks of `stripe` bytes round-robin over the parts; the stripe is the paper's
 * equal part, size/nparts rounded up to a page, but at least NVCACHE_STRIPE, so files can grow);
 * one representative rank per node asks its manager to create the part and prefetches it.
 * Reads and writes are cut at view and stripe boundaries and sent, batched, to the owning managers.
 * Close (collective) drains dirty pages to the real file and discards the parts. Anything the cache
 * cannot do (out of NVRAM, shared pointers, atomic mode, non-native data representations) moves
 * the file to bypass mode: its dirty data is drained first, then all I/O goes to the real file.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct nvc_file *files;
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;

#define NEED_BYPASS 0x7fff0001

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

static void file_register(struct nvc_file *f)
{
    pthread_mutex_lock(&files_lock);
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_lock);
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
    if (f->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&f->comm);
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

/* ------------------------------------------------------------------ requests */

static struct nvc_slot *req(struct nvc_file *f, uint32_t part, uint32_t op)
{
    struct nvc_slot *s = nvc_my_slot(f->part_node[part]);
    s->op = op;
    s->fileid = f->fileid;
    s->nseg = 0;
    memset(s->arg, 0, sizeof s->arg);
    return s;
}

static uint32_t call(struct nvc_file *f, uint32_t part, struct nvc_slot *s)
{
    nvc_mailbox_call(nvc_rt.mbox[f->part_node[part]], s);
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
};

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

/* Global file size: maximum of all parts' views. Returns NEED_BYPASS if a part is bypassed. */
static int parts_size(struct nvc_file *f, int64_t *size)
{
    int64_t m = 0;
    for (uint32_t p = 0; p < f->nparts; p++) {
        struct nvc_slot *s = req(f, p, NVC_OP_SIZE);
        uint32_t st = call(f, p, s);
        if (st == NVC_BYPASS)
            return NEED_BYPASS;
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
    struct io_ctx c = {.f = f, .write = write, .data = data, .s0 = s0, .eof = INT64_MAX, .b = b, .status = NVC_OK};
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
    int mr = nvc_view_map(&f->view, s0, n, map_range, &c);
    if (mr != 1)
        for (uint32_t p = 0; p < f->nparts; p++)
            if (flush_batch(&c, p))
                break;
    if (c.status == NVC_BYPASS || c.status == NVC_NOSPACE)
        rc = NEED_BYPASS;
    else if (c.status != NVC_OK)
        rc = MPI_ERR_IO;
    *done = write ? n : c.done;
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
    int rc = write ? PMPI_File_write_at_c(f->real, off, buf, count, dt, &st)
                   : PMPI_File_read_at_c(f->real, off, buf, count, dt, &st);
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
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || ni > 1 || na || nd != 1)
        return 0;
    int ints[1];
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(dt, ni, na, nd, ints, NULL, &inner) != MPI_SUCCESS)
        return 0;
    int r = simple_type(inner);
    int ini, ina, ind, icomb;
    PMPI_Type_get_envelope(inner, &ini, &ina, &ind, &icomb);
    if (icomb != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    return r;
}

int nvc_io(struct nvc_file *f, int write, int64_t explicit_off, int use_fp, void *buf, MPI_Count count,
           MPI_Datatype dt, MPI_Status *status)
{
    uint64_t t0 = nvc_now_ns();
    MPI_Count tsize, lb, ext, tlb, text;
    int rc = PMPI_Type_size_x(dt, &tsize);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 0)
        return MPI_ERR_COUNT;
    pthread_mutex_lock(&f->lock);
    int64_t off = use_fp ? f->fp : explicit_off;
    int64_t bytes = (int64_t)count * tsize, done = 0;
    int cached = f->mode == NVC_MODE_CACHED;
    if (cached) {
        PMPI_Type_get_extent_x(dt, &lb, &ext);
        PMPI_Type_get_true_extent_x(dt, &tlb, &text);
        int contig = tsize == text && (count <= 1 || ext == text) && simple_type(dt);
        uint8_t *data = contig ? (uint8_t *)buf + tlb : NULL;
        if (!contig && bytes > 0) {
            data = malloc((size_t)bytes);
            if (!data) {
                pthread_mutex_unlock(&f->lock);
                return MPI_ERR_NO_MEM;
            }
            MPI_Count pos = 0;
            if (write)
                PMPI_Pack_c(buf, count, dt, data, bytes, &pos, MPI_COMM_SELF);
        }
        pthread_mutex_lock(&nvc_rt.slot_lock);
        rc = cached_transfer(f, write, data, off * f->view.etype_size, bytes, &done);
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        if (!contig && bytes > 0 && !write && rc == MPI_SUCCESS) {
            MPI_Count full = done / tsize, rem = done % tsize, pos = 0;
            PMPI_Unpack_c(data, bytes, &pos, buf, full, dt, MPI_COMM_SELF);
            if (rem) {
                /* Partial element at EOF: merge the bytes read into the element's current contents. */
                uint8_t *one = malloc((size_t)tsize);
                if (one) {
                    uint8_t *elem = (uint8_t *)buf + full * ext;
                    MPI_Count p2 = 0;
                    PMPI_Pack_c(elem, 1, dt, one, tsize, &p2, MPI_COMM_SELF);
                    memcpy(one, data + full * tsize, (size_t)rem);
                    p2 = 0;
                    PMPI_Unpack_c(one, tsize, &p2, elem, 1, dt, MPI_COMM_SELF);
                    free(one);
                }
            }
        }
        if (!contig)
            free(data);
        if (rc == NEED_BYPASS) {
            nvc_bypass(f, write ? "NVRAM full or part bypassed during write" : "part bypassed during read");
            cached = 0;
        } else if (rc == MPI_SUCCESS && status != MPI_STATUS_IGNORE) {
            PMPI_Status_set_elements_x(status, MPI_BYTE, done);
            PMPI_Status_set_cancelled(status, 0);
        }
    }
    if (!cached)
        rc = bypass_io(f, write, off, buf, count, dt, status, &done);
    if (rc == MPI_SUCCESS && use_fp)
        f->fp = off + done / f->view.etype_size;
    pthread_mutex_unlock(&f->lock);
    nvc_stats_add(f->st, write ? NVC_ST_WRITE : NVC_ST_READ, (uint64_t)done, nvc_now_ns() - t0, cached);
    return rc;
}

/* ------------------------------------------------------------------ draining */

static int self_handle(struct nvc_file *f)
{
    if (f->self_fh != MPI_FILE_NULL)
        return MPI_SUCCESS;
    int rc = PMPI_File_open(MPI_COMM_SELF, f->path, MPI_MODE_WRONLY, MPI_INFO_NULL, &f->self_fh);
    if (rc != MPI_SUCCESS) {
        nvc_msg("%s: MPI_File_open(MPI_COMM_SELF, write-only) for flushing failed (error %d)", f->path, rc);
        f->self_fh = MPI_FILE_NULL;
    }
    return rc;
}

/* Writes all dirty pages of part p to the real file (clamped to the file size), then cleans them. */
static int drain_part(struct nvc_file *f, uint32_t p)
{
    uint64_t cursor = 0, flushed = 0;
    int rc = MPI_SUCCESS;
    for (;;) {
        struct nvc_slot *s = req(f, p, NVC_OP_DIRTY);
        s->arg[0] = cursor;
        if (call(f, p, s) != NVC_OK) {
            nvc_msg("%s: dirty listing of part %u failed", f->path, p);
            return MPI_ERR_IO;
        }
        if (!s->nseg)
            break;
        cursor = s->arg[0];
        uint64_t size = s->arg[1];
        s->op = NVC_OP_READ;
        if (call(f, p, s) != NVC_OK) {
            nvc_msg("%s: reading dirty data of part %u failed", f->path, p);
            return MPI_ERR_IO;
        }
        if ((rc = self_handle(f)) != MPI_SUCCESS)
            return rc;
        const uint8_t *src = nvc_slot_data(s);
        for (uint32_t i = 0; i < s->nseg; i++) {
            uint64_t l = s->seg[i].off, n = s->seg[i].len;
            const uint8_t *q = src;
            while (n) {
                uint64_t fo = nvc_part_to_file(l, f->stripe, f->nparts, p);
                uint64_t k = f->stripe - l % f->stripe;
                if (k > n)
                    k = n;
                if (fo < size) {
                    uint64_t w = fo + k > size ? size - fo : k;
                    rc = PMPI_File_write_at_c(f->self_fh, (MPI_Offset)fo, q, (MPI_Count)w, MPI_BYTE, MPI_STATUS_IGNORE);
                    if (rc != MPI_SUCCESS) {
                        nvc_msg("%s: MPI_File_write_at(%llu, %llu bytes) while flushing failed (error %d); data stays in %s",
                                f->path, (unsigned long long)fo, (unsigned long long)w, rc, nvc_cfg.dir);
                        return rc;
                    }
                    flushed += w;
                }
                l += k;
                q += k;
                n -= k;
            }
            src += s->seg[i].len;
        }
        s->op = NVC_OP_CLEAN;
        call(f, p, s);
    }
    if (f->st)
        f->st->flush_bytes += flushed;
    return rc;
}

int nvc_bypass(struct nvc_file *f, const char *why)
{
    if (f->mode != NVC_MODE_CACHED)
        return MPI_SUCCESS;
    nvc_debug("%s: switching to pass-through (%s)", f->path, why);
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    for (uint32_t p = 0; p < f->nparts; p++) {
        for (;;) {
            struct nvc_slot *s = req(f, p, NVC_OP_BYPASS_BEGIN);
            uint32_t st = call(f, p, s);
            if (st == NVC_OK) {
                nvc_msg("%s: %s; flushing part %u and passing through to MPI-IO from now on", f->path, why, p);
                do {
                    if ((rc = drain_part(f, p)) != MPI_SUCCESS)
                        break;
                    s = req(f, p, NVC_OP_BYPASS_END);
                } while (call(f, p, s) == NVC_RETRY);
                break;
            }
            if (st == NVC_BYPASS || st == NVC_ERR)
                break;
            sleep_us(200);
        }
    }
    if (f->self_fh != MPI_FILE_NULL)
        PMPI_File_close(&f->self_fh);
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    f->mode = NVC_MODE_BYPASSED;
    return rc;
}

/* ------------------------------------------------------------------ open / close */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* Representative of part p: prefetches the file's bytes of that part into NVRAM. */
static int prefetch_part(struct nvc_file *f, uint32_t p, int64_t size)
{
    MPI_File h;
    int rc = PMPI_File_open(MPI_COMM_SELF, f->path, MPI_MODE_RDONLY, MPI_INFO_NULL, &h);
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
            rc = PMPI_File_read_at_c(h, (MPI_Offset)(fo + x), nvc_slot_data(s), (MPI_Count)k, MPI_BYTE, MPI_STATUS_IGNORE);
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

static void view_default(struct nvc_view *v)
{
    v->disp = 0;
    v->etype = MPI_BYTE;
    v->filetype = MPI_BYTE;
    v->etype_size = 1;
    v->native = 1;
    nvc_flatten(MPI_BYTE, &v->ft);
}

int nvc_open(MPI_Comm comm, const char *path, int amode, MPI_Info info, MPI_File *fh)
{
    uint64_t t0 = nvc_now_ns();
    int rc = PMPI_File_open(comm, path, amode, info, fh);
    if (rc != MPI_SUCCESS)
        return rc;
    struct nvc_file *f = calloc(1, sizeof *f);
    if (!f) {
        nvc_msg("%s: out of memory; not cached", path);
        return MPI_SUCCESS;
    }
    f->real = *fh;
    f->comm = MPI_COMM_NULL;
    f->self_fh = MPI_FILE_NULL;
    f->amode = amode;
    f->my_part = -1;
    pthread_mutex_init(&f->lock, NULL);
    snprintf(f->path, sizeof f->path, "%s", path);
    view_default(&f->view);
    nvc_config_file(info, path, &f->opts);
    f->st = nvc_cfg.stats ? nvc_stats_get(path) : NULL;
    if (PMPI_Comm_dup(comm, &f->comm) != MPI_SUCCESS) {
        nvc_msg("%s: MPI_Comm_dup failed; not cached", path);
        f->comm = MPI_COMM_NULL;
        file_register(f);
        return MPI_SUCCESS;
    }
    PMPI_Comm_rank(f->comm, &f->rank);
    PMPI_Comm_size(f->comm, &f->size);

    int ok = nvc_rt.ready && f->opts.enabled && !(amode & MPI_MODE_SEQUENTIAL) && !nvc_rt.multi_host;
    f->part_node = malloc(sizeof(int) * (size_t)f->size);
    f->part_rep = malloc(sizeof(int) * (size_t)f->size);
    if (!f->part_node || !f->part_rep) {
        nvc_msg("%s: out of memory; not cached", path);
        ok = 0;
    }
    /* One collective tells every rank what the open needs from all of them: whether each can
       cache, each rank's node, and rank 0's new file id (one Allgather instead of the three
       reductions and a broadcast it took before: collectives dominate small opens). */
    int64_t small[3 * 64];
    int64_t *all = f->size <= 64 ? small : malloc(sizeof(int64_t) * 3 * (size_t)f->size);
    if (!all) {
        nvc_msg("%s: out of memory for the open handshake", path);
        PMPI_Abort(comm, 1);
    }
    int64_t mine[3] = {ok, nvc_rt.node, 0};
    if (f->rank == 0)
        mine[2] = (int64_t)(((uint64_t)nvc_rt.world_rank << 40) | ++nvc_rt.next_fileid);
    PMPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, f->comm);
    for (int r = 0; r < f->size; r++)
        ok = ok && all[3 * r] != 0;
    if (!ok) {
        if (all != small)
            free(all);
        file_register(f);
        return MPI_SUCCESS;
    }
    /* Parts: one per node that has ranks in the communicator, in node order; each part's
       representative is the node's lowest rank. */
    int *sorted = f->part_rep;
    for (int r = 0; r < f->size; r++)
        sorted[r] = (int)all[3 * r + 1];
    qsort(sorted, (size_t)f->size, sizeof(int), cmp_int);
    uint32_t n = 0;
    for (int i = 0; i < f->size; i++)
        if (!n || f->part_node[n - 1] != sorted[i])
            f->part_node[n++] = sorted[i];
    f->nparts = n;
    for (uint32_t p = 0; p < n; p++) {
        for (int r = 0; r < f->size; r++)
            if ((int)all[3 * r + 1] == f->part_node[p]) {
                f->part_rep[p] = r;
                break;
            }
        if (f->part_node[p] == nvc_rt.node)
            f->my_part = (int)p;
    }
    f->fileid = (uint64_t)all[2];
    if (all != small)
        free(all);
    MPI_Offset size = 0;
    PMPI_File_get_size(f->real, &size);
    uint64_t per = ((uint64_t)size + f->nparts - 1) / f->nparts;
    per = (per + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
    f->stripe = per > f->opts.min_stripe ? per : f->opts.min_stripe;

    int rep = f->my_part >= 0 && f->part_rep[f->my_part] == f->rank;
    uint32_t st = NVC_OK;
    pthread_mutex_lock(&nvc_rt.slot_lock);
    if (rep) {
        struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_OPEN);
        s->arg[0] = f->nparts;
        s->arg[1] = (uint64_t)f->my_part;
        s->arg[2] = f->stripe;
        s->arg[3] = (uint64_t)size;
        s->arg[4] = (amode & MPI_MODE_DELETE_ON_CLOSE) ? 1 : 0;
        s->arg[5] = (uint64_t)f->opts.reply;
        snprintf((char *)nvc_slot_data(s), NVC_PATH_MAX, "%s", path);
        st = call(f, (uint32_t)f->my_part, s);
        if (st == NVC_OK && size > 0)
            st = (uint32_t)prefetch_part(f, (uint32_t)f->my_part, size);
    }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    ok = st == NVC_OK;
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, f->comm);
    if (!ok) {
        if (rep) {
            pthread_mutex_lock(&nvc_rt.slot_lock);
            struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_CLOSE);
            call(f, (uint32_t)f->my_part, s);
            pthread_mutex_unlock(&nvc_rt.slot_lock);
        }
        if (f->rank == 0)
            nvc_msg("%s: cannot cache in %s (see messages above); using plain MPI-IO for this file", path, nvc_cfg.dir);
        file_register(f);
        return MPI_SUCCESS;
    }
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

int nvc_close(MPI_File *fh)
{
    struct nvc_file *f = nvc_file_lookup(*fh);
    if (!f)
        return PMPI_File_close(fh);
    uint64_t t0 = nvc_now_ns();
    int rc = MPI_SUCCESS;
    if (f->mode != NVC_MODE_PASS) {
        int byp = f->mode == NVC_MODE_BYPASSED;
        PMPI_Allreduce(MPI_IN_PLACE, &byp, 1, MPI_INT, MPI_MAX, f->comm);
        int discard = (f->amode & (MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_RDONLY)) || f->opts.flush == NVC_FLUSH_NEVER;
        int rep = f->my_part >= 0 && f->part_rep[f->my_part] == f->rank;
        int64_t psize = 0;
        int ok = 1;
        pthread_mutex_lock(&nvc_rt.slot_lock);
        if (rep && !byp) {
            if (!discard && drain_part(f, (uint32_t)f->my_part) != MPI_SUCCESS)
                ok = 0;
            struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_SIZE);
            call(f, (uint32_t)f->my_part, s);
            psize = (int64_t)s->arg[0];
        }
        pthread_mutex_unlock(&nvc_rt.slot_lock);
        if (f->self_fh != MPI_FILE_NULL)
            PMPI_File_close(&f->self_fh);
        int64_t v[2] = {psize, ok ? 0 : 1};
        PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, f->comm);
        if (!byp && !discard && !v[1]) {
            MPI_Offset real = 0;
            PMPI_File_get_size(f->real, &real);
            if (real != v[0])
                rc = PMPI_File_set_size(f->real, v[0]);
        }
        if (v[1]) {
            if (f->rank == 0)
                nvc_msg("%s: flush at close failed; NVRAM parts kept in %s for nvcache-recover", f->path, nvc_cfg.dir);
            rc = MPI_ERR_IO;
        } else if (rep) {
            pthread_mutex_lock(&nvc_rt.slot_lock);
            struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_CLOSE);
            call(f, (uint32_t)f->my_part, s);
            pthread_mutex_unlock(&nvc_rt.slot_lock);
        }
    }
    struct nvc_stats *st = f->st;
    int cached = f->mode == NVC_MODE_CACHED;
    file_free(f);
    int rc2 = PMPI_File_close(fh);
    nvc_stats_add(st, NVC_ST_CLOSE, 0, nvc_now_ns() - t0, cached);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ------------------------------------------------------------------ metadata */

int nvc_get_size(struct nvc_file *f, MPI_Offset *size)
{
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
        if (rc == NEED_BYPASS)
            nvc_bypass(f, "part bypassed");
        pthread_mutex_unlock(&f->lock);
    }
    return PMPI_File_get_size(f->real, size);
}

int nvc_set_size(struct nvc_file *f, MPI_Offset size, int grow_only)
{
    int rc = grow_only ? PMPI_File_preallocate(f->real, size) : PMPI_File_set_size(f->real, size);
    if (rc != MPI_SUCCESS || f->mode == NVC_MODE_PASS)
        return rc;
    int rep = f->my_part >= 0 && f->part_rep[f->my_part] == f->rank;
    if (rep && f->mode == NVC_MODE_CACHED) {
        pthread_mutex_lock(&nvc_rt.slot_lock);
        struct nvc_slot *s = req(f, (uint32_t)f->my_part, NVC_OP_SETSIZE);
        s->arg[0] = (uint64_t)size;
        s->arg[1] = (uint64_t)grow_only;
        call(f, (uint32_t)f->my_part, s);
        pthread_mutex_unlock(&nvc_rt.slot_lock);
    }
    PMPI_Barrier(f->comm); /* every part has the new size before anyone reads */
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
    int byp = f->mode == NVC_MODE_BYPASSED;
    PMPI_Allreduce(MPI_IN_PLACE, &byp, 1, MPI_INT, MPI_MAX, f->comm);
    if (byp) {
        /* Everyone agrees before the collective call on the real file. */
        nvc_bypass(f, "file bypassed by another rank");
        return PMPI_File_sync(f->real);
    }
    pthread_mutex_lock(&nvc_rt.slot_lock);
    if (f->opts.reply == NVC_REPLY_ASYNC)
        for (uint32_t p = 0; p < f->nparts; p++) {
            struct nvc_slot *s = req(f, p, NVC_OP_SYNC);
            call(f, p, s); /* served after this rank's earlier writes were persisted */
        }
    int rep = f->my_part >= 0 && f->part_rep[f->my_part] == f->rank;
    if (f->opts.flush == NVC_FLUSH_SYNC && rep && !(f->amode & MPI_MODE_RDONLY)) {
        rc = drain_part(f, (uint32_t)f->my_part);
        if (rc == MPI_SUCCESS && f->self_fh != MPI_FILE_NULL)
            rc = PMPI_File_sync(f->self_fh);
    }
    pthread_mutex_unlock(&nvc_rt.slot_lock);
    if (f->opts.flush == NVC_FLUSH_SYNC)
        PMPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, f->comm);
    nvc_stats_add(f->st, NVC_ST_SYNC, 0, nvc_now_ns() - t0, 1);
    return rc;
}

int nvc_set_view(struct nvc_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep)
{
    struct nvc_flat ft;
    int rc = nvc_flatten(filetype, &ft);
    if (rc != MPI_SUCCESS) {
        nvc_msg("%s: cannot flatten the file type (error %d)", f->path, rc);
        nvc_bypass(f, "file type cannot be flattened");
        return MPI_SUCCESS;
    }
    int esz = 1;
    PMPI_Type_size(etype, &esz);
    pthread_mutex_lock(&f->lock);
    nvc_flat_free(&f->view.ft);
    f->view.ft = ft;
    f->view.disp = disp;
    f->view.etype = etype;
    f->view.filetype = filetype;
    f->view.etype_size = esz > 0 ? esz : 1;
    f->view.native = datarep && !strcmp(datarep, "native");
    f->fp = 0;
    pthread_mutex_unlock(&f->lock);
    if (!f->view.native)
        nvc_bypass(f, "non-native data representation");
    return MPI_SUCCESS;
}

int nvc_seek(struct nvc_file *f, MPI_Offset offset, int whence)
{
    int64_t base;
    if (whence == MPI_SEEK_SET)
        base = 0;
    else if (whence == MPI_SEEK_CUR)
        base = f->fp;
    else if (whence == MPI_SEEK_END) {
        MPI_Offset size;
        int rc = nvc_get_size(f, &size);
        if (rc != MPI_SUCCESS)
            return rc;
        int64_t sb = nvc_view_stream_before(&f->view, size);
        base = (sb + f->view.etype_size - 1) / f->view.etype_size;
    } else
        return MPI_ERR_ARG;
    if (base + offset < 0)
        return MPI_ERR_ARG;
    f->fp = base + offset;
    return MPI_SUCCESS;
}

MPI_Offset nvc_byte_offset(struct nvc_file *f, MPI_Offset offset)
{
    return nvc_view_file_offset(&f->view, offset * f->view.etype_size);
}
