/* view.c: datatype flattening and the mapping between a file view's data stream and file bytes.
 *
 * A datatype is flattened once into sorted (offset, length) byte blocks by walking its envelope
 * (MPI_Type_get_envelope/contents). Combiners without a dedicated case (Fortran types, pair types) are
 * flattened generically by unpacking a marker buffer into one extent and scanning the touched bytes,
 * which is exact for file types (their displacements must be monotonically nondecreasing).
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

struct blist {
    int64_t *off, *len;
    size_t n, cap;
    int oom;
};

static void badd(struct blist *b, int64_t off, int64_t len)
{
    if (len <= 0 || b->oom)
        return;
    if (b->n && b->off[b->n - 1] + b->len[b->n - 1] == off) {
        b->len[b->n - 1] += len;
        return;
    }
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16;
        int64_t *no = realloc(b->off, nc * sizeof *no), *nl;
        if (!no) { b->oom = 1; return; }
        b->off = no;
        nl = realloc(b->len, nc * sizeof *nl);
        if (!nl) { b->oom = 1; return; }
        b->len = nl;
        b->cap = nc;
    }
    b->off[b->n] = off;
    b->len[b->n] = len;
    b->n++;
}

/* Appends a flattened child, replicated at byte displacement d. */
static void bcopy_at(struct blist *b, const struct blist *c, int64_t d)
{
    for (size_t i = 0; i < c->n; i++)
        badd(b, d + c->off[i], c->len[i]);
}

static int flatten_into(MPI_Datatype dt, struct blist *b);

static int generic_flatten(MPI_Datatype dt, struct blist *b)
{
    MPI_Count lb, extent, tlb, textent, size;
    PMPI_Type_get_extent_x(dt, &lb, &extent);
    PMPI_Type_get_true_extent_x(dt, &tlb, &textent);
    PMPI_Type_size_x(dt, &size);
    if (size == 0)
        return MPI_SUCCESS;
    uint8_t *mark = calloc((size_t)textent, 1), *ones = malloc((size_t)size);
    if (!mark || !ones) {
        free(mark);
        free(ones);
        return MPI_ERR_NO_MEM;
    }
    memset(ones, 1, (size_t)size);
    int pos = 0;
    int rc = PMPI_Unpack(ones, (int)size, &pos, mark - tlb, 1, dt, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS) {
        for (int64_t i = 0; i < textent;) {
            if (!mark[i]) { i++; continue; }
            int64_t j = i;
            while (j < textent && mark[j]) j++;
            badd(b, tlb + i, j - i);
            i = j;
        }
    }
    free(mark);
    free(ones);
    return rc;
}

static void free_if_derived(MPI_Datatype t)
{
    int ni, na, nd, comb;
    PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        PMPI_Type_free(&t);
}

static int64_t type_extent(MPI_Datatype t)
{
    MPI_Count lb, ext;
    PMPI_Type_get_extent_x(t, &lb, &ext);
    return (int64_t)ext;
}

/* Replicates child (flattened) count times with the given byte stride, blocklen children per block. */
static void repl(struct blist *b, const struct blist *c, int64_t child_ext, int64_t base, int64_t blocklen)
{
    if (c->n == 1 && c->off[0] == 0 && c->len[0] == child_ext) {
        /* Contiguous child (e.g. MPI_BYTE): one block instead of blocklen merges (a 240x240
           subarray of bytes took 57,600 merges, 0.3 ms per set_view). */
        badd(b, base, blocklen * child_ext);
        return;
    }
    for (int64_t j = 0; j < blocklen; j++)
        bcopy_at(b, c, base + j * child_ext);
}

/* The indices [start, start + len) of one darray dimension of global size g that process
 * coordinate c of p owns (MPI 4.0 section 5.1.4). Returns the number of runs written to st/ln
 * (room for g), or -1 for a distribution nvcache does not know (and MPI_DISTRIBUTE_NONE over
 * more than one process, which MPICH accepts). */
static int64_t darray_runs(int64_t g, int distrib, int darg, int64_t p, int64_t c, int64_t *st, int64_t *ln)
{
    int64_t k, step;
    if (distrib == MPI_DISTRIBUTE_NONE) {
        if (p != 1)
            return -1; /* MPICH lays it out as a block distribution: the generic way follows it */
        k = g;
        step = g;
        c = 0;
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        k = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        step = g > k * p ? g : k * p; /* one block per process */
    } else if (distrib == MPI_DISTRIBUTE_CYCLIC) {
        k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        step = k * p;
    } else
        return -1;
    if (k <= 0 || step <= 0)
        return -1;
    int64_t n = 0;
    for (int64_t s = c * k; s < g; s += step) {
        st[n] = s;
        ln[n] = s + k <= g ? k : g - s;
        n++;
    }
    return n;
}

/* A darray of child c (extent ext): the blocks of this rank's part of the global array, in file
 * order, without touching memory of the array's size (the generic way allocates the whole extent:
 * 80 GB for a 100000 x 100000 array of doubles, where MPI-IO's own flattening needs nothing). */
static int darray_flatten(const int *ints, const struct blist *c, int64_t ext, struct blist *b)
{
    int rank = ints[1], nd = ints[2];
    const int *gs = ints + 3, *dist = ints + 3 + nd, *dargs = ints + 3 + 2 * nd, *ps = ints + 3 + 3 * nd;
    int order = ints[3 + 4 * nd];
    if (nd < 1 || nd > 32)
        return MPI_ERR_TYPE;
    int64_t coord[32], stride[32], nruns[32], pos[32], sub[32];
    int64_t *st[32] = {0}, *ln[32] = {0};
    int rc = MPI_SUCCESS;
    /* Process coordinates: the process grid is row-major whatever the array's order. */
    for (int k = nd - 1, r = rank; k >= 0; k--) {
        coord[k] = ps[k] > 0 ? r % ps[k] : 0;
        r = ps[k] > 0 ? r / ps[k] : 0;
    }
    /* Element strides: the fastest dimension is the last in C order, the first in Fortran's. */
    int64_t acc = 1;
    for (int j = 0; j < nd; j++) {
        int k = order == MPI_ORDER_C ? nd - 1 - j : j;
        stride[k] = acc;
        acc *= gs[k];
    }
    for (int k = 0; k < nd && rc == MPI_SUCCESS; k++) {
        st[k] = malloc(sizeof(int64_t) * (size_t)(gs[k] + 1));
        ln[k] = malloc(sizeof(int64_t) * (size_t)(gs[k] + 1));
        if (!st[k] || !ln[k])
            rc = MPI_ERR_NO_MEM;
        else if ((nruns[k] = darray_runs(gs[k], dist[k], dargs[k], ps[k], coord[k], st[k], ln[k])) < 0)
            rc = MPI_ERR_TYPE;
    }
    int fast = order == MPI_ORDER_C ? nd - 1 : 0;
    int empty = 0;
    for (int k = 0; k < nd && rc == MPI_SUCCESS; k++) {
        pos[k] = 0; /* run index */
        sub[k] = 0; /* index within the run */
        empty |= nruns[k] == 0;
    }
    /* Every combination of owned indices of the other dimensions, slowest outermost; each run of
       the fastest dimension is one stretch of children. */
    while (rc == MPI_SUCCESS && !empty && !b->oom) {
        int64_t base = 0;
        for (int k = 0; k < nd; k++)
            if (k != fast)
                base += (st[k][pos[k]] + sub[k]) * stride[k];
        for (int64_t r = 0; r < nruns[fast]; r++)
            repl(b, c, ext, (base + st[fast][r]) * ext, ln[fast][r]);
        int j;
        for (j = 0; j < nd; j++) {
            int k = order == MPI_ORDER_C ? nd - 1 - j : j; /* fastest first */
            if (k == fast)
                continue;
            if (++sub[k] < ln[k][pos[k]])
                break;
            sub[k] = 0;
            if (++pos[k] < nruns[k])
                break;
            pos[k] = 0;
        }
        if (j == nd)
            break;
    }
    for (int k = 0; k < nd; k++) {
        free(st[k]);
        free(ln[k]);
    }
    return rc;
}

static int flatten_into(MPI_Datatype dt, struct blist *b)
{
    int ni, na, nd, comb;
    int rc = PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    if (rc != MPI_SUCCESS)
        return rc;
    if (comb == MPI_COMBINER_NAMED) {
        MPI_Count lb, ext, sz;
        PMPI_Type_get_true_extent_x(dt, &lb, &ext);
        PMPI_Type_size_x(dt, &sz);
        if (lb != 0 || ext != sz)
            return generic_flatten(dt, b); /* pair types with a gap: MPI_SHORT_INT, MPI_DOUBLE_INT... */
        badd(b, 0, sz);
        return MPI_SUCCESS;
    }
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    if (!ints || !aints || !types) {
        free(ints); free(aints); free(types);
        return MPI_ERR_NO_MEM;
    }
    rc = PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types);
    if (rc != MPI_SUCCESS)
        goto out;
    if (getenv("NVCACHE_DEBUG_TYPES"))
        fprintf(stderr, "flatten: combiner %d ni %d na %d nd %d ints[0..2] %d %d %d\n", comb, ni, na, nd,
                ni > 0 ? ints[0] : -1, ni > 1 ? ints[1] : -1, ni > 2 ? ints[2] : -1);
    struct blist c = {0};
    switch (comb) {
    case MPI_COMBINER_DUP:
        rc = flatten_into(types[0], b);
        break;
    case MPI_COMBINER_RESIZED:
        rc = flatten_into(types[0], b);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        rc = flatten_into(types[0], &c);
        repl(b, &c, type_extent(types[0]), 0, ints[0]);
        break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
        rc = flatten_into(types[0], &c);
        int64_t ext = type_extent(types[0]);
        int64_t stride = comb == MPI_COMBINER_VECTOR ? (int64_t)ints[2] * ext : (int64_t)aints[0];
        for (int i = 0; i < ints[0]; i++)
            repl(b, &c, ext, i * stride, ints[1]);
        break;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED: {
        rc = flatten_into(types[0], &c);
        int64_t ext = type_extent(types[0]);
        int n = ints[0];
        for (int i = 0; i < n; i++) {
            int64_t d = comb == MPI_COMBINER_INDEXED ? (int64_t)ints[1 + n + i] * ext : (int64_t)aints[i];
            repl(b, &c, ext, d, ints[1 + i]);
        }
        break;
    }
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
        rc = flatten_into(types[0], &c);
        int64_t ext = type_extent(types[0]);
        int n = ints[0];
        for (int i = 0; i < n; i++) {
            int64_t d = comb == MPI_COMBINER_INDEXED_BLOCK ? (int64_t)ints[2 + i] * ext : (int64_t)aints[i];
            repl(b, &c, ext, d, ints[1]);
        }
        break;
    }
    case MPI_COMBINER_STRUCT: {
        int n = ints[0];
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
            struct blist ci = {0};
            rc = flatten_into(types[i], &ci);
            repl(b, &ci, type_extent(types[i]), (int64_t)aints[i], ints[1 + i]);
            free(ci.off);
            free(ci.len);
        }
        break;
    }
    case MPI_COMBINER_SUBARRAY: {
        int nd_ = ints[0];
        const int *sizes = ints + 1, *subs = ints + 1 + nd_, *starts = ints + 1 + 2 * nd_;
        int order = ints[1 + 3 * nd_];
        rc = flatten_into(types[0], &c);
        int64_t ext = type_extent(types[0]);
        /* Dimension strides in elements, fastest dimension last in C order. */
        int64_t stride[32], idx[32];
        if (nd_ > 32) { rc = generic_flatten(dt, b); break; }
        int64_t acc = 1;
        for (int k = 0; k < nd_; k++) {
            int d = order == MPI_ORDER_C ? nd_ - 1 - k : k;
            stride[d] = acc;
            acc *= sizes[d];
        }
        int fast = order == MPI_ORDER_C ? nd_ - 1 : 0;
        int64_t total = 1;
        for (int k = 0; k < nd_; k++) {
            if (subs[k] == 0) total = 0;
            idx[k] = 0;
        }
        for (int64_t it = 0; total && it >= 0; it++) {
            int64_t e = 0;
            for (int k = 0; k < nd_; k++)
                e += (starts[k] + (k == fast ? 0 : idx[k])) * stride[k];
            repl(b, &c, ext, e * ext, subs[fast]);
            /* advance the index over all dimensions except the fastest */
            int k;
            if (order == MPI_ORDER_C) {
                for (k = nd_ - 2; k >= 0; k--) {
                    if (++idx[k] < subs[k]) break;
                    idx[k] = 0;
                }
            } else {
                for (k = 1; k < nd_; k++) {
                    if (++idx[k] < subs[k]) break;
                    idx[k] = 0;
                }
                if (k == nd_) k = -1;
            }
            if (k < 0) break;
        }
        break;
    }
    case MPI_COMBINER_DARRAY:
        rc = flatten_into(types[0], &c);
        if (rc == MPI_SUCCESS)
            rc = darray_flatten(ints, &c, type_extent(types[0]), b);
        if (rc == MPI_ERR_TYPE) /* parameters it does not take (nothing added): as MPI lays them out */
            rc = generic_flatten(dt, b);
        break;
    default:
        rc = generic_flatten(dt, b);
        break;
    }
    free(c.off);
    free(c.len);
    for (int i = 0; i < nd; i++)
        free_if_derived(types[i]);
out:
    free(ints);
    free(aints);
    free(types);
    if (b->oom)
        rc = MPI_ERR_NO_MEM;
    return rc;
}

static int cmp_idx(const void *a, const void *b, void *ctx)
{
    const int64_t *off = ctx;
    int64_t x = off[*(const size_t *)a], y = off[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

int nvc_flatten(MPI_Datatype dt, struct nvc_flat *out)
{
    memset(out, 0, sizeof *out);
    struct blist b = {0};
    int rc = flatten_into(dt, &b);
    if (rc != MPI_SUCCESS) {
        free(b.off);
        free(b.len);
        return rc;
    }
    /* Sort by offset (file types are monotonic already; this only normalizes) and merge. */
    int sorted = 1;
    for (size_t i = 1; i < b.n; i++)
        if (b.off[i] < b.off[i - 1]) sorted = 0;
    if (!sorted) {
        size_t *ix = malloc(b.n * sizeof *ix);
        int64_t *no = malloc(b.n * sizeof *no), *nl = malloc(b.n * sizeof *nl);
        if (!ix || !no || !nl) {
            free(ix); free(no); free(nl); free(b.off); free(b.len);
            return MPI_ERR_NO_MEM;
        }
        for (size_t i = 0; i < b.n; i++) ix[i] = i;
        qsort_r(ix, b.n, sizeof *ix, cmp_idx, b.off);
        for (size_t i = 0; i < b.n; i++) { no[i] = b.off[ix[i]]; nl[i] = b.len[ix[i]]; }
        free(ix); free(b.off); free(b.len);
        b.off = no; b.len = nl;
    }
    struct blist m = {0};
    for (size_t i = 0; i < b.n; i++)
        badd(&m, b.off[i], b.len[i]);
    free(b.off);
    free(b.len);
    if (m.oom)
        return MPI_ERR_NO_MEM;
    MPI_Count lb, ext, size;
    PMPI_Type_get_extent_x(dt, &lb, &ext);
    PMPI_Type_size_x(dt, &size);
    out->lb = lb;
    out->extent = ext;
    out->size = size;
    out->n = m.n;
    out->off = m.off;
    out->len = m.len;
    out->pre = malloc((m.n + 1) * sizeof *out->pre);
    if (!out->pre) {
        nvc_flat_free(out);
        return MPI_ERR_NO_MEM;
    }
    int64_t acc = 0;
    for (size_t i = 0; i < m.n; i++) {
        out->pre[i] = acc;
        acc += m.len[i];
    }
    out->pre[m.n] = acc;
    out->contiguous = m.n == 1 && m.off[0] == 0 && m.len[0] == ext;
    return MPI_SUCCESS;
}

void nvc_flat_free(struct nvc_flat *f)
{
    free(f->off);
    free(f->len);
    free(f->pre);
    memset(f, 0, sizeof *f);
}

/* Block index containing stream byte r of one filetype instance (0 <= r < size). */
static size_t find_block(const struct nvc_flat *ft, int64_t r)
{
    size_t lo = 0, hi = ft->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (ft->pre[mid] <= r) lo = mid; else hi = mid;
    }
    return lo;
}

int64_t nvc_view_file_offset(const struct nvc_view *v, int64_t s)
{
    const struct nvc_flat *ft = &v->ft;
    if (ft->contiguous || ft->size == 0)
        return v->disp + s;
    int64_t k = s / ft->size, r = s % ft->size;
    size_t i = find_block(ft, r);
    return v->disp + k * ft->extent + ft->off[i] + (r - ft->pre[i]);
}

int nvc_view_map(const struct nvc_view *v, int64_t s, int64_t n,
                 int (*fn)(int64_t file_off, int64_t len, int64_t stream_off, void *arg), void *arg)
{
    const struct nvc_flat *ft = &v->ft;
    if (n <= 0)
        return 0;
    if (ft->contiguous || ft->size == 0)
        return fn(v->disp + s, n, s, arg);
    int64_t k = s / ft->size, r = s % ft->size;
    size_t i = find_block(ft, r);
    int64_t pend_off = -1, pend_len = 0, pend_s = 0, done = 0;
    while (done < n) {
        int64_t within = r - ft->pre[i];
        int64_t take = ft->len[i] - within;
        if (take > n - done)
            take = n - done;
        int64_t fo = v->disp + k * ft->extent + ft->off[i] + within;
        if (pend_off >= 0 && pend_off + pend_len == fo) {
            pend_len += take;
        } else {
            if (pend_off >= 0) {
                int rc = fn(pend_off, pend_len, pend_s, arg);
                if (rc) return rc;
            }
            pend_off = fo;
            pend_len = take;
            pend_s = s + done;
        }
        done += take;
        if (within + take == ft->len[i]) {
            if (++i == ft->n) {
                i = 0;
                k++;
            }
            r = ft->pre[i];
        } else {
            r += take;
        }
    }
    return pend_off >= 0 ? fn(pend_off, pend_len, pend_s, arg) : 0;
}

int64_t nvc_view_stream_before(const struct nvc_view *v, int64_t file_off)
{
    const struct nvc_flat *ft = &v->ft;
    int64_t rel = file_off - v->disp;
    if (rel <= 0)
        return 0;
    if (ft->contiguous || ft->size == 0)
        return rel;
    /* Instance k of the filetype covers [disp + lb + k * extent, + extent): its blocks' offsets
       count from its origin, so lb is taken off before the division and put back after. */
    int64_t x = rel - ft->lb;
    if (x <= 0)
        return 0;
    int64_t k = ft->extent > 0 ? x / ft->extent : 0;
    int64_t w = (ft->extent > 0 ? x % ft->extent : x) + ft->lb;
    int64_t acc = k * ft->size;
    for (size_t i = 0; i < ft->n; i++) {
        if (ft->off[i] >= w) break;
        int64_t part = w - ft->off[i];
        acc += part < ft->len[i] ? part : ft->len[i];
    }
    return acc;
}
