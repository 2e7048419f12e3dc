/* fuzz_mpiio.c: one side of a differential MPI-IO fuzzer (the driver is fuzz_mpiio.py).
 *
 * Every rank generates the same random program of MPI-IO calls from SEED: views (four etypes, six
 * filetype kinds, partitioned between the ranks or not), independent, collective, split
 * collective, nonblocking and shared-pointer reads and writes through contiguous and
 * non-contiguous memory types, seeks, get_position/get_byte_offset/get_size, sync, set_size,
 * preallocate, atomicity, and several handles at once: f0 on MPI_COMM_WORLD and on every rank's
 * MPI_COMM_SELF, f1 on a second communicator (a duplicate, a reversed split, a subset or a
 * Cartesian one), and a delete-on-close file, opened and closed as the program goes, with random
 * access modes and striping_unit hints. A model of the files (which actor, a rank through one
 * handle, wrote or read each byte since the last sync-barrier-sync, and where each actor sees the
 * end of the file) keeps the program to accesses whose outcome MPI defines (MPI-3.1 §13.6), and
 * the model's own copy of the contents (the oracle) says what each read must return.
 *
 * Each rank logs every observation (return classes, counts, a hash of the bytes read, positions,
 * sizes) to LOGPREFIX.RANK, with "ORACLE-MISMATCH" where a read disagrees with the oracle; at the
 * end rank 0 writes the contents f0 and f1 must have to LOGPREFIX.expect.f0 and .f1. The driver
 * runs the program twice, plain MPI-IO (NVCACHE_ENABLE=0) and through nvcache, and compares the
 * logs, the files and the oracle.
 *
 * By hand (MPICH; the driver does all of this, see fuzz_mpiio.py):
 *   mkdir -p /tmp/fz/files && NVCACHE_ENABLE=0 LD_PRELOAD=build/libnvcache.so \
 *     mpiexec.mpich -n 3 build/tests/fuzz_mpiio 42 /tmp/fz/files /tmp/fz/log 60
 * Usage: fuzz_mpiio SEED DIR LOGPREFIX STEPS [KEEPFILE]   (at most 4 ranks)
 *   DIR        an empty directory for the files f0, f1 and fdoc
 *   KEEPFILE   step numbers to run (whitespace-separated); the other steps are skipped (the
 *              driver's --shrink finds a small set that still fails)
 *   FUZZ_MPIIO_TRACE=1  also logs each step's kind and each independent or collective access
 *              before it is issued (where a rank hangs)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RANKS 4
#define MODEL_BYTES (1L << 18) /* the model covers the first 256 KiB of each file */

/* Handles: f0 on MPI_COMM_WORLD, f1 on the second communicator, the delete-on-close file on
 * MPI_COMM_WORLD, and f0 on MPI_COMM_SELF of each rank r (H_SELF + r). */
enum { H_F0, H_F1, H_DOC, H_SELF, NUM_HANDLES = H_SELF + MAX_RANKS };
#define NUM_MAIN_HANDLES H_SELF
enum { F0, F1, FDOC, NUM_FILES };

/* An actor is one rank using one handle: accesses of different actors conflict. */
#define NUM_ACTORS (MAX_RANKS * NUM_HANDLES)
_Static_assert(NUM_ACTORS <= 32, "readers are a 32-bit mask of actors");

static int nprocs, rank;
static int open_mpi;     /* Open MPI's OMPIO rather than ROMIO underneath */
static uint64_t seed;
static int step;         /* the step running; -1 during setup, STEPS at the end */
static FILE *log_file;   /* LOGPREFIX.RANK */
static int trace;        /* FUZZ_MPIIO_TRACE */

#define LOG(...)                                                                                   \
    do {                                                                                           \
        fprintf(log_file, "%d ", step);                                                            \
        fprintf(log_file, __VA_ARGS__);                                                            \
        fputc('\n', log_file);                                                                     \
    } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* ---------- random numbers ---------- */

/* Every decision comes from a generator seeded by (SEED, step, stream), so that all ranks make
 * the same program, and skipping steps (KEEPFILE) leaves the other steps as they were. */
#define SETUP_STEP 999999
#define STREAM_STEP 0                 /* decisions of the whole step */
#define STREAM_RANK(r) (1 + (r))      /* rank r's own choices in the step */
#define STREAM_DATA(r) (100 + (r))    /* the bytes rank r writes in the step */

struct rng {
    uint64_t s;
};

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static uint64_t rng_next(struct rng *r)
{
    r->s = mix64(r->s);
    return r->s;
}

/* A number in [0, n); 0 when n <= 0. */
static long rng_below(struct rng *r, long n)
{
    return n <= 0 ? 0 : (long)(rng_next(r) % (uint64_t)n);
}

static struct rng rng_for(int at_step, int stream)
{
    struct rng r = {mix64(seed ^ mix64((uint64_t)at_step * 1000003ULL ^ mix64((uint64_t)stream + 77)))};
    return r;
}

/* ---------- etypes and views ---------- */

/* The etypes: bytes, ints, an 8-byte struct and a 7-byte struct of unaligned members. Each has a
 * non-contiguous memory type beside it: two etypes with a gap of one between them. */
#define NUM_ETYPES 4
struct etype {
    MPI_Datatype type, every_other;
    int size;
    const char *name;
};
static struct etype etypes[NUM_ETYPES];

static void init_etypes(void)
{
    etypes[0] = (struct etype){MPI_BYTE, MPI_DATATYPE_NULL, 1, "BYTE"};
    etypes[1] = (struct etype){MPI_INT, MPI_DATATYPE_NULL, 4, "INT"};
    int len8[2] = {1, 4}, len7[2] = {3, 1};
    MPI_Aint disp8[2] = {0, 4}, disp7[2] = {0, 3};
    MPI_Datatype types8[2] = {MPI_INT, MPI_CHAR}, types7[2] = {MPI_CHAR, MPI_INT}, t;
    MPI_Type_create_struct(2, len8, disp8, types8, &etypes[2].type);
    MPI_Type_commit(&etypes[2].type);
    etypes[2].size = 8;
    etypes[2].name = "S8";
    MPI_Type_create_struct(2, len7, disp7, types7, &t);
    MPI_Type_create_resized(t, 0, 7, &etypes[3].type);
    MPI_Type_commit(&etypes[3].type);
    MPI_Type_free(&t);
    etypes[3].size = 7;
    etypes[3].name = "S7";
    for (int i = 0; i < NUM_ETYPES; i++) {
        MPI_Type_vector(2, 1, 2, etypes[i].type, &etypes[i].every_other);
        MPI_Type_commit(&etypes[i].every_other);
    }
}

/* Byte offset in memory of data byte d of a buffer of `every_other` memory type (esize-byte
 * etypes, every second one skipped) or of a contiguous one. */
static long memory_offset(int every_other, long esize, long d)
{
    if (!every_other)
        return d;
    long pair = d / (2 * esize), j = d % (2 * esize);
    return pair * 3 * esize + (j < esize ? j : 2 * esize + (j - esize));
}

/* Filetype kinds. */
enum { VIEW_ETYPE, VIEW_CONTIGUOUS, VIEW_VECTOR, VIEW_INDEXED, VIEW_SUBARRAY, VIEW_STRUCT, NUM_VIEW_KINDS };
#define MAX_BLOCKS 8

/* A file view as the model sees it: one tile of the filetype is `extent` bytes holding the data
 * blocks [block_off, block_off + block_len), `data_size` bytes in all. A partitioned view gives
 * rank c of the handle's communicator the c-th of comm-size tiles in a row (the filetype resized
 * to extent x comm-size, the displacement moved on by c x extent). */
struct view {
    int etype, kind, partitioned, nblocks;
    long block_off[MAX_BLOCKS], block_len[MAX_BLOCKS];
    long extent, data_size, disp;
    int param[6]; /* the constructor's arguments, to build the MPI type from */
    int is_set;   /* set by MPI_File_set_view (else the default view of bytes) */
};

static void view_default(struct view *v)
{
    memset(v, 0, sizeof *v);
    v->nblocks = 1;
    v->block_len[0] = v->extent = v->data_size = 1;
}

static int view_contiguous(const struct view *v)
{
    return v->nblocks == 1 && v->block_off[0] == 0 && v->block_len[0] == v->extent && !v->partitioned;
}

/* A random view for a handle of comm_size ranks. */
static void gen_view(struct rng *R, struct view *v, int comm_size)
{
    memset(v, 0, sizeof *v);
    v->is_set = 1;
    v->etype = (int)rng_below(R, NUM_ETYPES);
    long es = etypes[v->etype].size;
    v->kind = (int)rng_below(R, NUM_VIEW_KINDS);
    v->partitioned = comm_size > 1 && rng_below(R, 3) != 0;
    v->disp = rng_below(R, 3) == 0 ? 0 : rng_below(R, 5000);
    switch (v->kind) {
    case VIEW_ETYPE:
        v->nblocks = 1;
        v->block_len[0] = v->extent = es;
        break;
    case VIEW_CONTIGUOUS: {
        int n = 1 + (int)rng_below(R, 16);
        v->param[0] = n;
        v->nblocks = 1;
        v->block_len[0] = v->extent = n * es;
        break;
    }
    case VIEW_VECTOR: {
        int count = 1 + (int)rng_below(R, 4), blocklen = 1 + (int)rng_below(R, 8);
        int stride = blocklen + (int)rng_below(R, 9), tail = rng_below(R, 2) ? (int)rng_below(R, 8) : 0;
        v->param[0] = count;
        v->param[1] = blocklen;
        v->param[2] = stride;
        v->param[3] = tail; /* etypes of gap after the last block (a resized type) */
        v->nblocks = count;
        for (int i = 0; i < count; i++) {
            v->block_off[i] = (long)i * stride * es;
            v->block_len[i] = blocklen * es;
        }
        v->extent = ((long)(count - 1) * stride + blocklen + tail) * es;
        break;
    }
    case VIEW_INDEXED:
    case VIEW_STRUCT: {
        int n = 1 + (int)rng_below(R, 5);
        long pos = rng_below(R, 3) ? 0 : rng_below(R, 4);
        v->nblocks = n;
        v->param[0] = n;
        for (int i = 0; i < n; i++) {
            long len = 1 + rng_below(R, 6);
            v->block_off[i] = pos * es;
            v->block_len[i] = len * es;
            pos += len + rng_below(R, 5);
        }
        v->extent = (pos + rng_below(R, 4)) * es;
        break;
    }
    case VIEW_SUBARRAY: {
        int rows = 2 + (int)rng_below(R, 5), cols = 2 + (int)rng_below(R, 7);
        int subrows = 1 + (int)rng_below(R, rows), subcols = 1 + (int)rng_below(R, cols);
        int row0 = (int)rng_below(R, rows - subrows + 1), col0 = (int)rng_below(R, cols - subcols + 1);
        int params[6] = {rows, cols, subrows, subcols, row0, col0};
        memcpy(v->param, params, sizeof params);
        v->nblocks = 0;
        for (int i = row0; i < row0 + subrows; i++) {
            v->block_off[v->nblocks] = ((long)i * cols + col0) * es;
            v->block_len[v->nblocks++] = (long)subcols * es;
        }
        v->extent = (long)rows * cols * es;
        break;
    }
    }
    /* adjacent blocks merged, so that view_contiguous() recognises a contiguous tile */
    int k = 0;
    for (int i = 0; i < v->nblocks; i++) {
        if (k > 0 && v->block_off[k - 1] + v->block_len[k - 1] == v->block_off[i]) {
            v->block_len[k - 1] += v->block_len[i];
        } else {
            v->block_off[k] = v->block_off[i];
            v->block_len[k++] = v->block_len[i];
        }
    }
    v->nblocks = k;
    v->data_size = 0;
    for (int i = 0; i < k; i++)
        v->data_size += v->block_len[i];
}

/* The committed MPI filetype of a view, for a communicator of comm_size ranks. */
static MPI_Datatype build_filetype(const struct view *v, int comm_size)
{
    MPI_Datatype e = etypes[v->etype].type, t = MPI_DATATYPE_NULL, t2;
    long es = etypes[v->etype].size;
    switch (v->kind) {
    case VIEW_ETYPE:
        MPI_Type_dup(e, &t);
        break;
    case VIEW_CONTIGUOUS:
        MPI_Type_contiguous(v->param[0], e, &t);
        break;
    case VIEW_VECTOR:
        MPI_Type_vector(v->param[0], v->param[1], v->param[2], e, &t2);
        if (v->param[3]) {
            MPI_Type_create_resized(t2, 0, v->extent, &t);
            MPI_Type_free(&t2);
        } else {
            t = t2;
        }
        break;
    case VIEW_INDEXED:
    case VIEW_STRUCT: {
        int lens[MAX_BLOCKS], displs[MAX_BLOCKS];
        MPI_Aint byte_displs[MAX_BLOCKS];
        MPI_Datatype types[MAX_BLOCKS];
        for (int i = 0; i < v->nblocks; i++) {
            lens[i] = (int)(v->block_len[i] / es);
            displs[i] = (int)(v->block_off[i] / es);
            byte_displs[i] = v->block_off[i];
            types[i] = e;
        }
        if (v->kind == VIEW_INDEXED)
            MPI_Type_indexed(v->nblocks, lens, displs, e, &t2);
        else
            MPI_Type_create_struct(v->nblocks, lens, byte_displs, types, &t2);
        MPI_Type_create_resized(t2, 0, v->extent, &t);
        MPI_Type_free(&t2);
        break;
    }
    case VIEW_SUBARRAY: {
        int sizes[2] = {v->param[0], v->param[1]}, subsizes[2] = {v->param[2], v->param[3]};
        int starts[2] = {v->param[4], v->param[5]};
        MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, e, &t);
        break;
    }
    }
    if (v->partitioned) {
        MPI_Type_create_resized(t, 0, v->extent * comm_size, &t2);
        MPI_Type_free(&t);
        t = t2;
    }
    MPI_Type_commit(&t);
    return t;
}

/* ---------- handles and the model of the files ---------- */

/* A file handle as the model sees it, the same on every rank (only members hold fh). */
struct handle {
    int open, file, rdonly, wronly;
    MPI_File fh;
    MPI_Comm comm;
    int comm_rank[MAX_RANKS]; /* each world rank's rank in comm, -1 if not a member */
    int comm_size;
    struct view view;
    long ptr[MAX_RANKS];  /* each rank's individual file pointer, in etypes */
    long shared_ptr;      /* in etypes */
    int shared_ptr_user;  /* the one rank that may move the shared pointer until the next
                             synchronisation (-1: none yet) */
};
static struct handle handles[NUM_HANDLES];

/* A file as the model sees it since the last sync-barrier-sync (the epoch). */
struct file_model {
    long size;                   /* size at the start of the epoch */
    long written_end;            /* end of the furthest byte written in the epoch */
    int grower;                  /* the one actor that may access past `size` in the epoch (-1: none yet) */
    long actor_end[NUM_ACTORS];  /* end of the furthest byte each actor wrote in the epoch */
    uint8_t *writer;             /* per byte: 1 + the actor that wrote it in the epoch, or 0 */
    uint32_t *readers;           /* per byte: mask of the actors that read it in the epoch */
    uint8_t *content;            /* the oracle: what the byte holds */
    long touched_lo, touched_hi; /* the bytes writer/readers mark this epoch lie within */
};
static struct file_model files[NUM_FILES];
static char file_path[NUM_FILES][600];

static int actor(int r, int h) { return r * NUM_HANDLES + h; }

static int member(int h, int r) { return handles[h].open && handles[h].comm_rank[r] >= 0; }

/* Rank r's displacement of handle h's view. */
static long view_disp(const struct handle *h, int r)
{
    return h->view.disp + (h->view.partitioned ? h->comm_rank[r] * h->view.extent : 0);
}

/* Bytes from one of a rank's tiles of handle h's view to its next. */
static long tile_stride(const struct handle *h)
{
    return h->view.extent * (h->view.partitioned ? h->comm_size : 1);
}

/* File offset of data byte d of rank r's view of handle h. */
static long file_offset(const struct handle *h, int r, long d)
{
    const struct view *v = &h->view;
    long tile = d / v->data_size, j = d % v->data_size;
    for (int i = 0; i < v->nblocks; i++) {
        if (j < v->block_len[i])
            return view_disp(h, r) + tile * tile_stride(h) + v->block_off[i] + j;
        j -= v->block_len[i];
    }
    abort();
}

/* A new epoch of file f (after sync-barrier-sync, or when no handle of it is open). */
static void epoch_reset(int f)
{
    struct file_model *m = &files[f];
    if (m->written_end > m->size)
        m->size = m->written_end;
    m->written_end = 0;
    m->grower = -1;
    memset(m->actor_end, 0, sizeof m->actor_end);
    if (m->touched_hi > m->touched_lo) {
        memset(m->writer + m->touched_lo, 0, (size_t)(m->touched_hi - m->touched_lo));
        memset(m->readers + m->touched_lo, 0, (size_t)(m->touched_hi - m->touched_lo) * sizeof(uint32_t));
    }
    m->touched_lo = MODEL_BYTES;
    m->touched_hi = 0;
    for (int h = 0; h < NUM_HANDLES; h++)
        if (handles[h].file == f)
            handles[h].shared_ptr_user = -1;
}

/* What the model says of an access. */
struct access {
    int ok;       /* MPI defines its outcome */
    int hits_eof; /* a read reaching past the end of the file (as its actor sees it) */
    long valid;   /* bytes a read gets before that end */
};

/* Whether rank r may read (is_write 0) or write n etypes at etype offset off of handle hi's view
 * in this epoch: no byte another actor wrote (or, for a write, read) in the epoch, and past the
 * end of the file only if no other actor went there (nor asked for the size). With commit, the
 * access is recorded. */
static struct access check_access(int hi, int r, long off, long n, int is_write, int commit)
{
    struct handle *h = &handles[hi];
    struct file_model *m = &files[h->file];
    int a = actor(r, hi);
    long es = etypes[h->view.etype].size;
    struct access c = {1, 0, 0};
    if (n == 0)
        return c;
    if (off < 0) {
        c.ok = 0;
        return c;
    }
    long eof = (m->grower == a && m->actor_end[a] > m->size) ? m->actor_end[a] : m->size;
    int past = 0;
    for (long d = off * es; d < (off + n) * es; d++) {
        long p = file_offset(h, r, d);
        if (p >= MODEL_BYTES - 8 || (m->writer[p] && m->writer[p] != a + 1) ||
            (is_write && (m->readers[p] & ~(1u << a)))) {
            c.ok = 0;
            return c;
        }
        if (p >= m->size)
            past = 1;
        if (!is_write) {
            if (p < eof)
                c.valid++;
            else
                c.hits_eof = 1;
        }
    }
    if (past && m->grower != -1 && m->grower != a) {
        c.ok = 0;
        return c;
    }
    if (!commit)
        return c;
    if (past)
        m->grower = a;
    for (long d = off * es; d < (off + n) * es; d++) {
        long p = file_offset(h, r, d);
        if (p < m->touched_lo)
            m->touched_lo = p;
        if (p + 1 > m->touched_hi)
            m->touched_hi = p + 1;
        if (is_write) {
            m->writer[p] = (uint8_t)(a + 1);
            if (p + 1 > m->written_end)
                m->written_end = p + 1;
            if (p + 1 > m->actor_end[a])
                m->actor_end[a] = p + 1;
        } else {
            m->readers[p] |= 1u << a;
        }
    }
    return c;
}

/* The bytes of rank r's write buffer in this step: what the write and the oracle both use. */
static unsigned char *write_buffer(int r, long bytes)
{
    unsigned char *b = xmalloc((size_t)bytes);
    struct rng R = rng_for(step, STREAM_DATA(r));
    for (long i = 0; i < bytes; i++)
        b[i] = (unsigned char)rng_next(&R);
    return b;
}

/* Bytes of a buffer of n etypes of handle hi's etype, of the contiguous or the every-other memory
 * type, with 16 bytes of guard after it. */
static long buffer_bytes(int hi, long n, int every_other)
{
    long es = etypes[handles[hi].view.etype].size;
    return (every_other ? n / 2 * 3 * es : n * es) + 16;
}

/* Applies rank r's write of n etypes at off through handle hi to the oracle. */
static void oracle_write(int hi, int r, long off, long n, int every_other)
{
    struct handle *h = &handles[hi];
    long es = etypes[h->view.etype].size;
    unsigned char *buf = write_buffer(r, buffer_bytes(hi, n, every_other));
    for (long d = 0; d < n * es; d++)
        files[h->file].content[file_offset(h, r, off * es + d)] = buf[memory_offset(every_other, es, d)];
    free(buf);
}

/* The buffer a read of n etypes at off must fill: the oracle's bytes, the rest left 0xEE. */
static void oracle_read(int hi, int r, long off, long n, int every_other, unsigned char *expect, long bytes)
{
    struct handle *h = &handles[hi];
    long es = etypes[h->view.etype].size;
    memset(expect, 0xEE, (size_t)bytes);
    for (long d = 0; d < n * es; d++)
        expect[memory_offset(every_other, es, d)] = files[h->file].content[file_offset(h, r, off * es + d)];
}

/* For an access that depends on the file's size (get_size, seek to the end): like an access past
 * the end, only one actor per epoch. Returns 0 if another took that, else 1 and the size. */
static int claim_size(int hi, int r, long *size)
{
    struct file_model *m = &files[handles[hi].file];
    int a = actor(r, hi);
    if (m->grower != -1 && m->grower != a)
        return 0;
    m->grower = a;
    *size = m->actor_end[a] > m->size ? m->actor_end[a] : m->size;
    return 1;
}

/* ---------- data accesses ---------- */

/* What an access is (flags of ops[]). */
enum {
    IS_WRITE = 1, IS_EXPLICIT = 2, IS_SHARED = 4, IS_NONBLOCKING = 8, IS_COLLECTIVE = 16, IS_SPLIT = 32
};
enum {
    /* independent data accesses */
    OP_READ_AT, OP_WRITE_AT, OP_READ, OP_WRITE, OP_IREAD_AT, OP_IWRITE_AT, OP_IREAD, OP_IWRITE,
    OP_READ_SHARED, OP_WRITE_SHARED, OP_IREAD_SHARED, OP_IWRITE_SHARED,
    /* independent, no data */
    OP_SEEK, OP_GET_POSITION, OP_GET_BYTE_OFFSET, OP_GET_SIZE,
    /* collective data accesses */
    OP_READ_AT_ALL, OP_WRITE_AT_ALL, OP_READ_ALL, OP_WRITE_ALL, OP_IREAD_AT_ALL, OP_IWRITE_AT_ALL,
    OP_IREAD_ALL, OP_IWRITE_ALL, OP_READ_AT_ALL_BEGIN, OP_WRITE_AT_ALL_BEGIN, OP_READ_ALL_BEGIN,
    OP_WRITE_ALL_BEGIN, OP_READ_ORDERED, OP_WRITE_ORDERED, OP_READ_ORDERED_BEGIN, OP_WRITE_ORDERED_BEGIN,
    NUM_OPS
};
#define NUM_INDEPENDENT_DATA_OPS OP_SEEK
#define NUM_INDEPENDENT_OPS OP_READ_AT_ALL
#define NUM_POINTER_OPS OP_READ_SHARED /* the first ops: no shared pointer */
#define NUM_UNORDERED_COLLECTIVE_OPS (OP_READ_ORDERED - OP_READ_AT_ALL)
#define NUM_WHOLE_COLLECTIVE_OPS (OP_READ_AT_ALL_BEGIN - OP_READ_AT_ALL) /* neither split nor ordered */

/* FUZZ_MPIIO_MIX=cached: only calls that nvcache serves from its cache (no shared file pointer,
 * split collectives, atomic mode or SELF handles beside the WORLD one, each of which passes a file
 * through to MPI-IO), so that the cached paths get most of the program. */
static int cached_mix;

static const struct {
    const char *name;
    int flags;
} ops[NUM_OPS] = {
    {"read_at", IS_EXPLICIT},
    {"write_at", IS_WRITE | IS_EXPLICIT},
    {"read", 0},
    {"write", IS_WRITE},
    {"iread_at", IS_EXPLICIT | IS_NONBLOCKING},
    {"iwrite_at", IS_WRITE | IS_EXPLICIT | IS_NONBLOCKING},
    {"iread", IS_NONBLOCKING},
    {"iwrite", IS_WRITE | IS_NONBLOCKING},
    {"read_shared", IS_SHARED},
    {"write_shared", IS_WRITE | IS_SHARED},
    {"iread_shared", IS_SHARED | IS_NONBLOCKING},
    {"iwrite_shared", IS_WRITE | IS_SHARED | IS_NONBLOCKING},
    {"seek", 0},
    {"get_position", 0},
    {"get_byte_offset", 0},
    {"get_size", 0},
    {"read_at_all", IS_COLLECTIVE | IS_EXPLICIT},
    {"write_at_all", IS_COLLECTIVE | IS_WRITE | IS_EXPLICIT},
    {"read_all", IS_COLLECTIVE},
    {"write_all", IS_COLLECTIVE | IS_WRITE},
    {"iread_at_all", IS_COLLECTIVE | IS_EXPLICIT | IS_NONBLOCKING},
    {"iwrite_at_all", IS_COLLECTIVE | IS_WRITE | IS_EXPLICIT | IS_NONBLOCKING},
    {"iread_all", IS_COLLECTIVE | IS_NONBLOCKING},
    {"iwrite_all", IS_COLLECTIVE | IS_WRITE | IS_NONBLOCKING},
    {"read_at_all_begin", IS_COLLECTIVE | IS_EXPLICIT | IS_SPLIT},
    {"write_at_all_begin", IS_COLLECTIVE | IS_WRITE | IS_EXPLICIT | IS_SPLIT},
    {"read_all_begin", IS_COLLECTIVE | IS_SPLIT},
    {"write_all_begin", IS_COLLECTIVE | IS_WRITE | IS_SPLIT},
    {"read_ordered", IS_COLLECTIVE | IS_SHARED},
    {"write_ordered", IS_COLLECTIVE | IS_WRITE | IS_SHARED},
    {"read_ordered_begin", IS_COLLECTIVE | IS_SHARED | IS_SPLIT},
    {"write_ordered_begin", IS_COLLECTIVE | IS_WRITE | IS_SHARED | IS_SPLIT},
};

static int op_is(int op, int flag) { return (ops[op].flags & flag) != 0; }

/* Through the individual file pointer. */
static int op_uses_ptr(int op) { return !op_is(op, IS_EXPLICIT | IS_SHARED); }

/* One rank's part of a step's access. For data accesses off is the etype offset (explicit, or
 * where the pointer is), n the etypes; for seeks off is the offset and n the position the model
 * expects; for get_size n is the size it expects. */
struct access_op {
    int op, h;
    int every_other; /* non-contiguous memory type */
    int mode;        /* completion of a nonblocking access (MPI_Wait, MPI_Test, MPI_Waitall), or
                        a seek's whence */
    int forbidden;   /* against the access mode: must fail */
    long off, n;
    struct access acc;
};

static uint64_t fnv1a(const unsigned char *b, long n)
{
    uint64_t h = 1469598103934665603ULL;
    for (long i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* An MPI return code as its error class. */
static int err_class(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &c);
    return c;
}

/* Issues this rank's data access o and logs what it saw: return classes, the count where MPI
 * defines it, a hash of the bytes read (only those before the end of the file) and, where a read
 * disagrees with the oracle, the first wrong byte. */
static void do_data(const struct access_op *o)
{
    struct handle *h = &handles[o->h];
    const struct etype *e = &etypes[h->view.etype];
    MPI_Datatype mt = o->every_other ? e->every_other : e->type;
    int count = (int)(o->every_other ? o->n / 2 : o->n);
    long bytes = buffer_bytes(o->h, o->n, o->every_other);
    int w = op_is(o->op, IS_WRITE);
    unsigned char *buf;
    if (w) {
        buf = write_buffer(rank, bytes);
    } else {
        buf = xmalloc((size_t)bytes);
        memset(buf, 0xEE, (size_t)bytes);
    }
    MPI_Status st;
    memset(&st, 0, sizeof st);
    MPI_Request rq = MPI_REQUEST_NULL;
    int rc = 0, rc2 = 0;
    MPI_File fh = h->fh;
    MPI_Offset off = o->off;
    switch (o->op) {
    case OP_READ_AT: rc = MPI_File_read_at(fh, off, buf, count, mt, &st); break;
    case OP_WRITE_AT: rc = MPI_File_write_at(fh, off, buf, count, mt, &st); break;
    case OP_READ: rc = MPI_File_read(fh, buf, count, mt, &st); break;
    case OP_WRITE: rc = MPI_File_write(fh, buf, count, mt, &st); break;
    case OP_IREAD_AT: rc = MPI_File_iread_at(fh, off, buf, count, mt, &rq); break;
    case OP_IWRITE_AT: rc = MPI_File_iwrite_at(fh, off, buf, count, mt, &rq); break;
    case OP_IREAD: rc = MPI_File_iread(fh, buf, count, mt, &rq); break;
    case OP_IWRITE: rc = MPI_File_iwrite(fh, buf, count, mt, &rq); break;
    case OP_READ_SHARED: rc = MPI_File_read_shared(fh, buf, count, mt, &st); break;
    case OP_WRITE_SHARED: rc = MPI_File_write_shared(fh, buf, count, mt, &st); break;
    case OP_IREAD_SHARED: rc = MPI_File_iread_shared(fh, buf, count, mt, &rq); break;
    case OP_IWRITE_SHARED: rc = MPI_File_iwrite_shared(fh, buf, count, mt, &rq); break;
    case OP_READ_AT_ALL: rc = MPI_File_read_at_all(fh, off, buf, count, mt, &st); break;
    case OP_WRITE_AT_ALL: rc = MPI_File_write_at_all(fh, off, buf, count, mt, &st); break;
    case OP_READ_ALL: rc = MPI_File_read_all(fh, buf, count, mt, &st); break;
    case OP_WRITE_ALL: rc = MPI_File_write_all(fh, buf, count, mt, &st); break;
    case OP_IREAD_AT_ALL: rc = MPI_File_iread_at_all(fh, off, buf, count, mt, &rq); break;
    case OP_IWRITE_AT_ALL: rc = MPI_File_iwrite_at_all(fh, off, buf, count, mt, &rq); break;
    case OP_IREAD_ALL: rc = MPI_File_iread_all(fh, buf, count, mt, &rq); break;
    case OP_IWRITE_ALL: rc = MPI_File_iwrite_all(fh, buf, count, mt, &rq); break;
    case OP_READ_AT_ALL_BEGIN:
        rc = MPI_File_read_at_all_begin(fh, off, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_read_at_all_end(fh, buf, &st);
        break;
    case OP_WRITE_AT_ALL_BEGIN:
        rc = MPI_File_write_at_all_begin(fh, off, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_write_at_all_end(fh, buf, &st);
        break;
    case OP_READ_ALL_BEGIN:
        rc = MPI_File_read_all_begin(fh, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_read_all_end(fh, buf, &st);
        break;
    case OP_WRITE_ALL_BEGIN:
        rc = MPI_File_write_all_begin(fh, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_write_all_end(fh, buf, &st);
        break;
    case OP_READ_ORDERED: rc = MPI_File_read_ordered(fh, buf, count, mt, &st); break;
    case OP_WRITE_ORDERED: rc = MPI_File_write_ordered(fh, buf, count, mt, &st); break;
    case OP_READ_ORDERED_BEGIN:
        rc = MPI_File_read_ordered_begin(fh, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_read_ordered_end(fh, buf, &st);
        break;
    case OP_WRITE_ORDERED_BEGIN:
        rc = MPI_File_write_ordered_begin(fh, buf, count, mt);
        if (rc == MPI_SUCCESS)
            rc2 = MPI_File_write_ordered_end(fh, buf, &st);
        break;
    }
    if (op_is(o->op, IS_NONBLOCKING) && rc == MPI_SUCCESS) {
        if (o->mode == 0) {
            rc2 = MPI_Wait(&rq, &st);
        } else if (o->mode == 1) {
            int done = 0;
            while (!done && rc2 == MPI_SUCCESS)
                rc2 = MPI_Test(&rq, &done, &st);
        } else {
            rc2 = MPI_Waitall(1, &rq, &st);
        }
    }
    int got = -1;
    if (rc == MPI_SUCCESS && rc2 == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &got);
    /* At the end of the file ROMIO reports the requested count for collective, nonblocking and
     * non-contiguous reads; the count is compared where every implementation gets it right. A
     * view of the struct etypes (S8, S7) counts as non-contiguous there even when its bytes are
     * not: a read through one entirely past the end reported all 56 bytes asked for (MPICH
     * 4.0.2, seed 88 with FUZZ_MPIIO_MIX=cached). */
    int show_count = !o->forbidden && (w || !o->acc.hits_eof ||
                                       (!op_is(o->op, IS_COLLECTIVE | IS_NONBLOCKING) &&
                                        view_contiguous(&h->view) && h->view.etype < 2 && !o->every_other));
    uint64_t hash = 0;
    long hashed = 0;
    char mismatch[64] = "";
    if (!w && !o->forbidden) {
        hashed = o->acc.hits_eof ? o->acc.valid : bytes;
        hash = fnv1a(buf, hashed);
        if (rc == MPI_SUCCESS && rc2 == MPI_SUCCESS) {
            unsigned char *expect = xmalloc((size_t)bytes);
            oracle_read(o->h, rank, o->off, o->n, o->every_other, expect, bytes);
            for (long i = 0; i < hashed; i++) {
                if (expect[i] != buf[i]) {
                    snprintf(mismatch, sizeof mismatch, " ORACLE-MISMATCH@%ld(got %d want %d)", i, buf[i], expect[i]);
                    break;
                }
            }
            free(expect);
        }
    }
    char count_str[32] = "?";
    if (show_count)
        snprintf(count_str, sizeof count_str, "%d", got);
    LOG("h%d %s off=%ld n=%ld mnc=%d rc=%d/%d count=%s hash[%ld]=%016llx%s%s", o->h, ops[o->op].name, o->off,
        o->n, o->every_other, err_class(rc), err_class(rc2), count_str, hashed, (unsigned long long)hash,
        o->acc.hits_eof ? " eof" : "", mismatch);
    free(buf);
}

/* After this rank's data access o: puts the individual pointer back where the model has it when
 * MPI leaves it elsewhere (logging what MPI reported first). */
static void fix_pointer_after(const struct access_op *o)
{
    struct handle *h = &handles[o->h];
    if (!op_uses_ptr(o->op))
        return;
    if (!op_is(o->op, IS_WRITE) && o->acc.hits_eof) {
        /* a read at the end of the file: ROMIO advances by the requested count */
        int rc = MPI_File_seek(h->fh, h->ptr[rank], MPI_SEEK_SET);
        LOG("h%d reseek %ld rc=%d", o->h, h->ptr[rank], err_class(rc));
    } else if (!open_mpi && op_is(o->op, IS_WRITE) && o->n > 0 && !o->forbidden &&
               !view_contiguous(&h->view)) {
        /* MPICH 4.0.2's ROMIO with romio_ds_write=disable: after a write through a
         * non-contiguous view the pointer's byte offset is at the end of the last block written,
         * not at the next data byte, so the next access starts in the filetype's hole, although
         * MPI_File_get_position reports the right etype */
        MPI_Offset pos = -1;
        MPI_File_get_position(h->fh, &pos);
        int rc = MPI_File_seek(h->fh, h->ptr[rank], MPI_SEEK_SET);
        LOG("h%d position %lld reseek %ld rc=%d", o->h, (long long)pos, h->ptr[rank], err_class(rc));
    }
}

/* ---------- choosing accesses ---------- */

/* A random count of etypes of esize bytes: mostly small, some up to 2 KB and 20 KB. */
static long pick_count(struct rng *R, int esize)
{
    long k = rng_below(R, 20);
    if (k == 0)
        return 0;
    if (k < 10)
        return 1 + rng_below(R, 16);
    if (k < 18)
        return 1 + rng_below(R, 2000 / esize + 1);
    return 1 + rng_below(R, 20000 / esize + 1);
}

/* A random etype offset of handle h's view: mostly within the file or a little past its end,
 * sometimes up to 100 KB out. */
static long pick_offset(struct rng *R, const struct handle *h)
{
    long es = etypes[h->view.etype].size;
    double density = (double)h->view.data_size / (double)tile_stride(h);
    long limit = (long)((files[h->file].size + 6000) * density / es) + 1;
    if (rng_below(R, 10) == 0)
        limit = (long)(100000 * density / es) + 1;
    return rng_below(R, limit);
}

/* Makes rank r's data access o one whose outcome MPI defines: tries other offsets (explicit
 * offsets only) and smaller counts, else none at all (n = 0). Then records it in the model and,
 * for a write, in the oracle. An access against the handle's mode is kept as it is (it must fail
 * and changes nothing). */
static void settle_access(struct access_op *o, int r, struct rng *R)
{
    struct handle *h = &handles[o->h];
    int w = op_is(o->op, IS_WRITE);
    if ((w && h->rdonly) || (!w && h->wronly)) {
        o->forbidden = 1;
        o->acc.ok = 1;
        return;
    }
    o->acc = check_access(o->h, r, o->off, o->n, w, 0);
    for (int t = 0; t < 8 && !o->acc.ok; t++) {
        if (op_is(o->op, IS_EXPLICIT)) {
            long es = etypes[h->view.etype].size;
            double density = (double)h->view.data_size / (double)tile_stride(h);
            o->off = rng_below(R, (long)(files[h->file].size * density / es) + 1);
        }
        if (t & 1) {
            o->n /= 2;
            if (o->every_other && (o->n & 1))
                o->n++;
        }
        o->acc = check_access(o->h, r, o->off, o->n, w, 0);
    }
    if (!o->acc.ok) {
        o->n = 0;
        o->acc = check_access(o->h, r, o->off, 0, w, 0);
    }
    /* No read past the end of the file into a non-contiguous memory type (the bytes of it a read
     * fills are not defined); on Open MPI none through a nonblocking or split collective read
     * either: OMPIO 4.1's never completes. */
    if (!w && o->acc.hits_eof &&
        (o->every_other || (open_mpi && op_is(o->op, IS_NONBLOCKING | IS_SPLIT)))) {
        o->n = 0;
        o->acc = check_access(o->h, r, o->off, 0, 0, 0);
    }
    check_access(o->h, r, o->off, o->n, w, 1);
    if (w && o->n)
        oracle_write(o->h, r, o->off, o->n, o->every_other);
}

/* Rank r's part of a data access op through handle hi, with its pointers moved on as the access
 * will move them. */
static void choose_data_access(struct access_op *o, int op, int hi, int r, struct rng *R)
{
    struct handle *h = &handles[hi];
    o->op = op;
    o->h = hi;
    o->n = pick_count(R, etypes[h->view.etype].size);
    if (op_is(op, IS_COLLECTIVE) && rng_below(R, 10) == 0)
        o->n = 0;
    o->every_other = rng_below(R, 5) == 0;
    if (o->every_other && (o->n & 1))
        o->n++;
    o->mode = (int)rng_below(R, 3);
    o->off = op_is(op, IS_EXPLICIT) ? pick_offset(R, h) : op_is(op, IS_SHARED) ? h->shared_ptr : h->ptr[r];
    settle_access(o, r, R);
    if (!o->forbidden && !op_is(op, IS_EXPLICIT)) {
        if (op_is(op, IS_SHARED))
            h->shared_ptr += o->n;
        else
            h->ptr[r] += o->n;
    }
}

/* ---------- opening, closing, views, synchronisation ---------- */

/* Sync-barrier-sync on every handle of file f, a new epoch, and each handle's size logged. */
static void sync_barrier_sync(int f)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int hi = 0; hi < NUM_HANDLES; hi++) {
            if (handles[hi].file == f && member(hi, rank) && !handles[hi].rdonly) {
                int rc = MPI_File_sync(handles[hi].fh);
                if (rc != MPI_SUCCESS)
                    LOG("h%d sync%s rc=%d", hi, pass ? "2" : "", err_class(rc));
            }
        }
        if (pass == 0)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    epoch_reset(f);
    for (int hi = 0; hi < NUM_HANDLES; hi++) {
        if (handles[hi].file == f && member(hi, rank)) {
            MPI_Offset s = -1;
            int rc = MPI_File_get_size(handles[hi].fh, &s);
            LOG("h%d bsize=%lld rc=%d", hi, (long long)s, err_class(rc));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Gives handle hi the view v (pointers back to 0); the members call MPI_File_set_view. */
static void set_view(int hi, const struct view *v)
{
    struct handle *h = &handles[hi];
    h->view = *v;
    for (int r = 0; r < nprocs; r++)
        h->ptr[r] = 0;
    h->shared_ptr = 0;
    h->shared_ptr_user = -1;
    if (!member(hi, rank))
        return;
    MPI_Datatype ft = build_filetype(v, h->comm_size);
    int rc = MPI_File_set_view(h->fh, view_disp(h, rank), etypes[v->etype].type, ft, "native", MPI_INFO_NULL);
    LOG("h%d set_view ek=%s kind=%d part=%d disp=%ld nb=%d ext=%ld size=%ld gen=%d,%d,%d,%d,%d,%d rc=%d", hi,
        etypes[v->etype].name, v->kind, v->partitioned, view_disp(h, rank), v->nblocks, v->extent, v->data_size,
        v->param[0], v->param[1], v->param[2], v->param[3], v->param[4], v->param[5], err_class(rc));
    MPI_Type_free(&ft);
}

/* Opens handle hi (its members call MPI_File_open): a new file (create), or the delete-on-close
 * file (doc), or an existing one with a random access mode; append mode sometimes, and a random
 * striping_unit hint. */
static void open_handle(int hi, struct rng *R, int create, int doc)
{
    struct handle *h = &handles[hi];
    struct file_model *m = &files[h->file];
    int amode = MPI_MODE_RDWR;
    h->rdonly = h->wronly = 0;
    if (!create && !doc) {
        long k = rng_below(R, 20);
        if (k == 0) {
            amode = MPI_MODE_RDONLY;
            h->rdonly = 1;
        } else if (k == 1) {
            amode = MPI_MODE_WRONLY;
            h->wronly = 1;
        }
    }
    /* not on MPI_COMM_SELF: ROMIO's shared pointer file of rank 0's SELF handle is the WORLD
     * handle's, and append mode moves that shared pointer */
    int append = !doc && rng_below(R, 10) == 0 && hi < H_SELF;
    if (append)
        amode |= MPI_MODE_APPEND;
    if (create || doc)
        amode |= MPI_MODE_CREATE;
    if (doc)
        amode |= MPI_MODE_DELETE_ON_CLOSE;
    static const long striping_units[] = {0, 4096, 1000, 8192, 65536};
    long su = striping_units[rng_below(R, 5)];
    MPI_Info info = MPI_INFO_NULL;
    if (!open_mpi) {
        /* ROMIO's read-modify-write of the gaps of a non-contiguous write (data sieving, two-phase
         * collective buffering) would write other ranks' bytes of the same epoch back */
        MPI_Info_create(&info);
        MPI_Info_set(info, "romio_ds_write", "disable");
        MPI_Info_set(info, "romio_cb_write", "disable");
    }
    if (su) {
        char b[32];
        if (info == MPI_INFO_NULL)
            MPI_Info_create(&info);
        snprintf(b, sizeof b, "%ld", su);
        MPI_Info_set(info, "striping_unit", b);
    }
    view_default(&h->view);
    for (int r = 0; r < nprocs; r++)
        h->ptr[r] = append ? m->size : 0;
    h->shared_ptr = append ? m->size : 0;
    h->shared_ptr_user = -1;
    h->open = 1;
    if (member(hi, rank)) {
        int rc = MPI_File_open(h->comm, file_path[h->file], amode, info, &h->fh);
        LOG("h%d open amode=%d su=%ld rc=%d", hi, amode, su, err_class(rc));
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: step %d: MPI_File_open of %s failed\n", rank, step, file_path[h->file]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Offset p = -1;
        MPI_File_get_position(h->fh, &p);
        LOG("h%d open pos=%lld", hi, (long long)p);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
}

static void close_handle(int hi)
{
    struct handle *h = &handles[hi];
    if (member(hi, rank)) {
        int rc = MPI_File_close(&h->fh);
        LOG("h%d close rc=%d", hi, err_class(rc));
    }
    h->open = 0;
}

/* ---------- the steps ---------- */

/* Up to one independent access per rank (each rank's own choice, on any handle it is in); what
 * one rank does the others only model. */
static void step_independent(void)
{
    struct access_op all[MAX_RANKS];
    for (int r = 0; r < nprocs; r++) {
        struct rng Rr = rng_for(step, STREAM_RANK(r));
        struct access_op *o = &all[r];
        memset(o, 0, sizeof *o);
        o->op = -1;
        if (rng_below(&Rr, 10) < 3)
            continue;
        int usable[NUM_HANDLES], nusable = 0;
        for (int hi = 0; hi < NUM_HANDLES; hi++)
            if (member(hi, r))
                usable[nusable++] = hi;
        if (!nusable)
            continue;
        int hi = usable[rng_below(&Rr, nusable)];
        struct handle *h = &handles[hi];
        long es = etypes[h->view.etype].size;
        int op = (int)rng_below(&Rr, NUM_INDEPENDENT_OPS);
        if (cached_mix && op_is(op, IS_SHARED))
            op = (int)rng_below(&Rr, NUM_POINTER_OPS);
        /* one rank at a time on the shared pointer; none on partitioned views (every rank's
         * shared-pointer accesses would go to its own tiles) nor on SELF handles (ROMIO: rank 0's
         * shares the WORLD handle's shared pointer file) */
        if (op_is(op, IS_SHARED) &&
            ((h->shared_ptr_user != -1 && h->shared_ptr_user != r) || h->view.partitioned || hi >= H_SELF))
            op = (int)rng_below(&Rr, NUM_POINTER_OPS);
        /* ROMIO hangs on a shared-pointer access against the access mode */
        if (op_is(op, IS_SHARED) && (h->rdonly || h->wronly))
            op = OP_GET_POSITION;
        o->op = op;
        o->h = hi;
        if (op < NUM_INDEPENDENT_DATA_OPS) {
            if (op_is(op, IS_SHARED))
                h->shared_ptr_user = r;
            choose_data_access(o, op, hi, r, &Rr);
        } else if (op == OP_SEEK) {
            int whence = (int)rng_below(&Rr, 3);
            long base = 0, size = 0;
            if (whence == 1) {
                base = h->ptr[r];
                o->off = rng_below(&Rr, 200) - 100;
            } else if (whence == 2) {
                /* MPI_SEEK_END needs the size; on Open MPI only through the default view: OMPIO
                 * 4.1 puts the end wrong through any other filetype, even a contiguous one */
                if (!claim_size(hi, r, &size) || (open_mpi && h->view.is_set)) {
                    whence = 0;
                } else {
                    /* the end in etypes as the standard puts it: the data bytes before the end
                     * of the file, rounded up to whole etypes */
                    long data = 0;
                    if (view_contiguous(&h->view)) {
                        data = size > view_disp(h, r) ? size - view_disp(h, r) : 0;
                    } else {
                        while (file_offset(h, r, data) < size)
                            data++;
                    }
                    base = (data + es - 1) / es;
                    o->off = rng_below(&Rr, 200) - 100;
                }
            }
            if (whence == 0)
                o->off = pick_offset(&Rr, h);
            else if (base + o->off < 0)
                o->off = -base;
            o->mode = whence;
            o->n = base + o->off;
            h->ptr[r] = o->n;
        } else if (op == OP_GET_SIZE) {
            long size;
            if (!claim_size(hi, r, &size))
                o->op = OP_GET_POSITION;
            else
                o->n = size;
        } else if (op == OP_GET_BYTE_OFFSET) {
            o->off = rng_below(&Rr, 5000);
        }
    }

    struct access_op *o = &all[rank];
    if (o->op >= 0) {
        struct handle *h = &handles[o->h];
        if (trace)
            LOG("begin %s h%d off=%ld n=%ld", ops[o->op].name, o->h, o->off, o->n);
        if (o->op < NUM_INDEPENDENT_DATA_OPS) {
            do_data(o);
            fix_pointer_after(o);
        } else if (o->op == OP_SEEK) {
            static const int whence[3] = {MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END};
            int rc = MPI_File_seek(h->fh, o->off, whence[o->mode]);
            MPI_Offset p = -1;
            int rc2 = MPI_File_get_position(h->fh, &p);
            LOG("h%d seek %ld whence=%d rc=%d pos=%lld rc=%d", o->h, o->off, o->mode, err_class(rc), (long long)p,
                err_class(rc2));
            if (p != o->n)
                LOG("h%d note model pos %ld", o->h, o->n);
            /* the end of a non-contiguous view is where implementations differ: go on from the
             * model's position */
            if (o->mode == 2 && !view_contiguous(&h->view))
                MPI_File_seek(h->fh, o->n, MPI_SEEK_SET);
        } else if (o->op == OP_GET_POSITION) {
            MPI_Offset p = -1, b = -1;
            int rc = MPI_File_get_position(h->fh, &p);
            LOG("h%d get_position=%lld rc=%d", o->h, (long long)p, err_class(rc));
            rc = MPI_File_get_byte_offset(h->fh, p, &b);
            LOG("h%d byte_offset(%lld)=%lld rc=%d", o->h, (long long)p, (long long)b, err_class(rc));
        } else if (o->op == OP_GET_BYTE_OFFSET) {
            MPI_Offset b = -1;
            int rc = MPI_File_get_byte_offset(h->fh, o->off, &b);
            LOG("h%d byte_offset(%ld)=%lld rc=%d", o->h, o->off, (long long)b, err_class(rc));
        } else if (o->op == OP_GET_SIZE) {
            MPI_Offset s = -1;
            int rc = MPI_File_get_size(h->fh, &s);
            LOG("h%d get_size=%lld rc=%d", o->h, (long long)s, err_class(rc));
        }
    }
    /* after a read through the shared pointer reaching the end of the file, where the pointer
     * stands is up to the implementation: the handle's members put it where the model has it */
    for (int r = 0; r < nprocs; r++) {
        struct access_op *q = &all[r];
        if (q->op >= 0 && q->op < NUM_INDEPENDENT_DATA_OPS && op_is(q->op, IS_SHARED) &&
            !op_is(q->op, IS_WRITE) && q->acc.hits_eof) {
            MPI_Barrier(MPI_COMM_WORLD);
            struct handle *h = &handles[q->h];
            if (member(q->h, rank)) {
                int rc = MPI_File_seek_shared(h->fh, h->shared_ptr, MPI_SEEK_SET);
                LOG("h%d reseek_shared %ld rc=%d", q->h, h->shared_ptr, err_class(rc));
            }
            h->shared_ptr_user = -1;
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
}

/* The handles of f0, f1 and the delete-on-close file that are open, in usable[]; returns how many. */
static int open_main_handles(int usable[NUM_MAIN_HANDLES], int skip_partitioned)
{
    int n = 0;
    for (int hi = 0; hi < NUM_MAIN_HANDLES; hi++)
        if (handles[hi].open && !(skip_partitioned && handles[hi].view.partitioned))
            usable[n++] = hi;
    return n;
}

/* One collective data access on one of the main handles, each member's part its own. */
static void step_collective(struct rng *R)
{
    int usable[NUM_MAIN_HANDLES], nusable = open_main_handles(usable, 0);
    if (!nusable)
        return;
    int hi = usable[rng_below(R, nusable)];
    struct handle *h = &handles[hi];
    int op = OP_READ_AT_ALL + (int)rng_below(R, cached_mix ? NUM_WHOLE_COLLECTIVE_OPS : NUM_OPS - OP_READ_AT_ALL);
    if (op_is(op, IS_SHARED) && h->view.partitioned)
        op = OP_READ_AT_ALL + (int)rng_below(R, NUM_UNORDERED_COLLECTIVE_OPS);
    int w = op_is(op, IS_WRITE);
    /* against the access mode mostly not, sometimes to see the error; never ordered (ROMIO
     * hangs) nor split: after a *_begin that failed, ROMIO and OMPIO fail every later split
     * collective of the handle at once ("only one split collective at a time"), and ROMIO's
     * begin fails only where the count is not 0, so another rank waits in the next one */
    if (((h->rdonly && w) || (h->wronly && !w)) && (rng_below(R, 3) || op_is(op, IS_SHARED | IS_SPLIT)))
        return;
    if (op_is(op, IS_SHARED))
        MPI_Barrier(MPI_COMM_WORLD);
    struct access_op all[MAX_RANKS];
    int any_eof = 0;
    /* in the communicator's rank order: ordered accesses take the shared pointer in that order */
    for (int c = 0; c < nprocs; c++) {
        for (int r = 0; r < nprocs; r++) {
            if (h->comm_rank[r] != c)
                continue;
            struct rng Rr = rng_for(step, STREAM_RANK(r));
            memset(&all[r], 0, sizeof all[r]);
            choose_data_access(&all[r], op, hi, r, &Rr);
            if (!w && all[r].acc.hits_eof)
                any_eof = 1;
        }
    }
    if (member(hi, rank)) {
        if (trace)
            LOG("begin %s h%d off=%ld n=%ld eof=%d", ops[op].name, hi, all[rank].off, all[rank].n,
                all[rank].acc.hits_eof);
        do_data(&all[rank]);
        fix_pointer_after(&all[rank]);
    }
    if (op_is(op, IS_SHARED)) {
        if (any_eof && member(hi, rank)) {
            int rc = MPI_File_seek_shared(h->fh, h->shared_ptr, MPI_SEEK_SET);
            LOG("h%d reseek_shared %ld rc=%d", hi, h->shared_ptr, err_class(rc));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        h->shared_ptr_user = -1;
    }
}

/* A new view on one of the main handles (all its members). */
static void step_set_view_main(struct rng *R)
{
    int usable[NUM_MAIN_HANDLES], nusable = open_main_handles(usable, 0);
    if (!nusable)
        return;
    int hi = usable[rng_below(R, nusable)];
    struct view v;
    gen_view(R, &v, handles[hi].comm_size);
    MPI_Barrier(MPI_COMM_WORLD);
    set_view(hi, &v);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A new view on each open SELF handle. */
static void step_set_view_self(void)
{
    for (int r = 0; r < nprocs; r++) {
        struct rng Rr = rng_for(step, STREAM_RANK(r));
        if (!handles[H_SELF + r].open)
            continue;
        struct view v;
        gen_view(&Rr, &v, 1);
        set_view(H_SELF + r, &v);
    }
}

/* set_size (to 0 or a random size) or preallocate through f0's or f1's handle. */
static void step_set_size(struct rng *R)
{
    int hi = (int)rng_below(R, 2);
    struct handle *h = &handles[hi];
    if (!h->open || h->rdonly)
        return;
    int f = h->file;
    long n = rng_below(R, 4) == 0 ? 0 : rng_below(R, 60000);
    /* OMPIO 4.1's preallocate that grows the file reads each rank's size after rank 0 started
     * writing the new bytes, so only some ranks enter its last collective, and the job hangs */
    int prealloc = rng_below(R, 3) == 0 && !open_mpi;
    sync_barrier_sync(f);
    if (member(hi, rank)) {
        int rc = prealloc ? MPI_File_preallocate(h->fh, n) : MPI_File_set_size(h->fh, n);
        LOG("h%d %s %ld rc=%d", hi, prealloc ? "preallocate" : "set_size", n, err_class(rc));
    }
    struct file_model *m = &files[f];
    if (prealloc) {
        if (n > m->size)
            m->size = n;
    } else {
        if (n < MODEL_BYTES)
            memset(m->content + n, 0, (size_t)(MODEL_BYTES - n));
        m->size = n;
    }
    m->written_end = 0;
    if (open_mpi && !prealloc) {
        /* OMPIO: after a shrink other ranks may still report the old size (no sizes logged) */
        for (int pass = 0; pass < 2; pass++) {
            for (int x = 0; x < NUM_HANDLES; x++)
                if (handles[x].file == f && member(x, rank) && !handles[x].rdonly)
                    MPI_File_sync(handles[x].fh);
            if (pass == 0)
                MPI_Barrier(MPI_COMM_WORLD);
        }
        epoch_reset(f);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        sync_barrier_sync(f);
    }
}

/* Atomic mode on or off on one of the main handles (the model stays with the rules of
 * nonatomic mode, which are stricter). */
static void step_atomicity(struct rng *R)
{
    int usable[NUM_MAIN_HANDLES], nusable = open_main_handles(usable, 0);
    if (!nusable)
        return;
    int hi = usable[rng_below(R, nusable)];
    int flag = (int)rng_below(R, 2);
    if (member(hi, rank)) {
        int got = -1;
        int rc = MPI_File_set_atomicity(handles[hi].fh, flag);
        int rc2 = MPI_File_get_atomicity(handles[hi].fh, &got);
        LOG("h%d atomicity %d rc=%d get=%d rc=%d", hi, flag, err_class(rc), got, err_class(rc2));
    }
}

/* f0's or f1's main handle closed (if open) and opened again. */
static void step_reopen(struct rng *R)
{
    int hi = (int)rng_below(R, 2);
    int f = handles[hi].file;
    sync_barrier_sync(f);
    if (handles[hi].open)
        close_handle(hi);
    MPI_Barrier(MPI_COMM_WORLD);
    epoch_reset(f);
    open_handle(hi, R, 0, 0);
    sync_barrier_sync(f);
}

/* Each rank's SELF handle of f0 opened or closed, or left as it is. */
static void step_self_handles(void)
{
    sync_barrier_sync(F0);
    for (int r = 0; r < nprocs; r++) {
        struct rng Rr = rng_for(step, STREAM_RANK(r));
        int hi = H_SELF + r;
        if (!rng_below(&Rr, 2))
            continue;
        if (handles[hi].open)
            close_handle(hi);
        else
            open_handle(hi, &Rr, 0, 0);
    }
    sync_barrier_sync(F0);
}

/* The delete-on-close file closed (rank 0 logs whether it is gone), or created and opened. */
static void step_delete_on_close(struct rng *R)
{
    struct file_model *m = &files[FDOC];
    if (handles[H_DOC].open) {
        sync_barrier_sync(FDOC);
        close_handle(H_DOC);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            LOG("fdoc exists after close: %d", access(file_path[FDOC], F_OK) == 0);
        MPI_Barrier(MPI_COMM_WORLD);
        m->size = 0;
        epoch_reset(FDOC);
    } else {
        m->size = 0;
        epoch_reset(FDOC);
        memset(m->content, 0, MODEL_BYTES);
        open_handle(H_DOC, R, 1, 1);
        sync_barrier_sync(FDOC);
    }
}

/* The shared pointer of one main handle (not partitioned) read, and sometimes moved. */
static void step_shared_pointer(struct rng *R)
{
    int usable[NUM_MAIN_HANDLES], nusable = open_main_handles(usable, 1);
    if (!nusable)
        return;
    int hi = usable[rng_below(R, nusable)];
    struct handle *h = &handles[hi];
    MPI_Barrier(MPI_COMM_WORLD);
    long to = rng_below(R, 3) ? pick_offset(R, h) : -1;
    if (member(hi, rank)) {
        MPI_Offset p = -1;
        int rc = MPI_File_get_position_shared(h->fh, &p);
        LOG("h%d get_position_shared=%lld rc=%d", hi, (long long)p, err_class(rc));
        MPI_Barrier(h->comm);
        if (to >= 0) {
            rc = MPI_File_seek_shared(h->fh, to, MPI_SEEK_SET);
            MPI_File_get_position_shared(h->fh, &p);
            LOG("h%d seek_shared %ld rc=%d pos=%lld", hi, to, err_class(rc), (long long)p);
        }
    }
    if (to >= 0)
        h->shared_ptr = to;
    h->shared_ptr_user = -1;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------- setup and main ---------- */

/* The second communicator (for f1): a duplicate of MPI_COMM_WORLD, its ranks reversed, a subset
 * of the first ranks, or a 1-D Cartesian communicator; each world rank's rank in it goes to
 * comm_rank (-1 outside). */
static MPI_Comm make_second_comm(struct rng *R, int comm_rank[MAX_RANKS])
{
    MPI_Comm c = MPI_COMM_NULL;
    int kind = (int)rng_below(R, 4), subset = 1 + (int)rng_below(R, nprocs);
    if (kind == 0) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else if (kind == 1) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - 1 - rank, &c);
    } else if (kind == 2) {
        MPI_Comm_split(MPI_COMM_WORLD, rank < subset ? 0 : MPI_UNDEFINED, rank, &c);
    } else {
        int dims[1] = {nprocs}, periods[1] = {0};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 1, &c);
    }
    int mine = -1;
    if (c != MPI_COMM_NULL)
        MPI_Comm_rank(c, &mine);
    MPI_Allgather(&mine, 1, MPI_INT, comm_rank, 1, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0)
        LOG("P=%d c1kind=%d sub=%d", nprocs, kind, subset);
    return c;
}

/* The steps to run: all, or those KEEPFILE lists. */
static char *read_keep(const char *keepfile, int nsteps)
{
    char *keep = xmalloc((size_t)nsteps + 1);
    memset(keep, 0, (size_t)nsteps + 1);
    if (!keepfile) {
        memset(keep, 1, (size_t)nsteps);
        return keep;
    }
    FILE *kf = fopen(keepfile, "r");
    if (!kf) {
        fprintf(stderr, "fuzz_mpiio: cannot read %s\n", keepfile);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int s;
    while (fscanf(kf, "%d", &s) == 1)
        if (s >= 0 && s < nsteps)
            keep[s] = 1;
    fclose(kf);
    return keep;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 5 || argc > 6 || nprocs > MAX_RANKS) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n P fuzz_mpiio SEED DIR LOGPREFIX STEPS [KEEPFILE]   (P <= %d)\n",
                    MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#ifdef OPEN_MPI
    open_mpi = 1;
#endif
    seed = strtoull(argv[1], NULL, 10);
    const char *dir = argv[2], *logprefix = argv[3];
    int nsteps = atoi(argv[4]);
    char *keep = read_keep(argc > 5 ? argv[5] : NULL, nsteps);
    trace = getenv("FUZZ_MPIIO_TRACE") && atoi(getenv("FUZZ_MPIIO_TRACE"));
    cached_mix = getenv("FUZZ_MPIIO_MIX") && !strcmp(getenv("FUZZ_MPIIO_MIX"), "cached");
    char path[700];
    snprintf(path, sizeof path, "%s.%d", logprefix, rank);
    log_file = fopen(path, "w");
    if (!log_file) {
        fprintf(stderr, "fuzz_mpiio: cannot write %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    setvbuf(log_file, NULL, _IOLBF, 0);
    init_etypes();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    static const char *names[NUM_FILES] = {"f0", "f1", "fdoc"};
    for (int f = 0; f < NUM_FILES; f++) {
        snprintf(file_path[f], sizeof file_path[f], "%s/%s", dir, names[f]);
        files[f].writer = calloc(MODEL_BYTES, 1);
        files[f].content = calloc(MODEL_BYTES, 1);
        files[f].readers = calloc(MODEL_BYTES, sizeof(uint32_t));
        if (!files[f].writer || !files[f].content || !files[f].readers)
            MPI_Abort(MPI_COMM_WORLD, 1);
        files[f].touched_lo = MODEL_BYTES;
        files[f].grower = -1;
    }
    step = -1;
    struct rng R0 = rng_for(SETUP_STEP, STREAM_STEP);
    int second_rank[MAX_RANKS];
    MPI_Comm second = make_second_comm(&R0, second_rank);
    for (int hi = 0; hi < NUM_HANDLES; hi++) {
        struct handle *h = &handles[hi];
        memset(h, 0, sizeof *h);
        h->shared_ptr_user = -1;
        view_default(&h->view);
        for (int r = 0; r < MAX_RANKS; r++)
            h->comm_rank[r] = -1;
        if (hi == H_F0 || hi == H_DOC) {
            h->file = hi == H_F0 ? F0 : FDOC;
            h->comm = MPI_COMM_WORLD;
            h->comm_size = nprocs;
            for (int r = 0; r < nprocs; r++)
                h->comm_rank[r] = r;
        } else if (hi == H_F1) {
            h->file = F1;
            h->comm = second;
            for (int r = 0; r < nprocs; r++) {
                h->comm_rank[r] = second_rank[r];
                h->comm_size += second_rank[r] >= 0;
            }
        } else {
            h->file = F0;
            h->comm = MPI_COMM_SELF;
            h->comm_size = 1;
            h->comm_rank[hi - H_SELF] = 0;
        }
    }
    /* f0 and f1 start empty or with a prefix rank 0 writes */
    for (int f = F0; f <= F1; f++) {
        long n = rng_below(&R0, 3) ? rng_below(&R0, 30000) : 0;
        files[f].size = n;
        for (long i = 0; i < n; i++)
            files[f].content[i] = (uint8_t)((i * 7 + f) & 0xff);
        if (rank == 0) {
            FILE *fp = fopen(file_path[f], "w");
            if (!fp || fwrite(files[f].content, 1, (size_t)n, fp) != (size_t)n || fclose(fp) != 0) {
                fprintf(stderr, "fuzz_mpiio: cannot write %s\n", file_path[f]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int f = 0; f < NUM_FILES; f++)
        epoch_reset(f);
    open_handle(H_F0, &R0, 1, 0);
    open_handle(H_F1, &R0, 1, 0);

    for (step = 0; step < nsteps; step++) {
        if (!keep[step])
            continue;
        struct rng R = rng_for(step, STREAM_STEP);
        long kind = rng_below(&R, 100);
        if (trace)
            LOG("kind %ld", kind);
        if (kind < 40)
            step_independent();
        else if (kind < 62)
            step_collective(&R);
        else if (kind < 70)
            sync_barrier_sync((int)rng_below(&R, NUM_FILES));
        else if (kind < 74)
            step_set_view_main(&R);
        else if (kind < 77)
            step_set_view_self();
        else if (kind < 82)
            step_set_size(&R);
        else if (kind < 85 && !cached_mix)
            step_atomicity(&R);
        else if (kind < 89)
            step_reopen(&R);
        else if (kind < 93 && !cached_mix)
            step_self_handles();
        else if (kind < 97)
            step_delete_on_close(&R);
        else if (!cached_mix)
            step_shared_pointer(&R);
    }

    step = nsteps;
    for (int hi = NUM_HANDLES - 1; hi >= 0; hi--)
        if (handles[hi].open)
            close_handle(hi);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        LOG("final fdoc exists: %d", access(file_path[FDOC], F_OK) == 0);
        for (int f = F0; f <= F1; f++) {
            epoch_reset(f);
            snprintf(path, sizeof path, "%s.expect.%s", logprefix, names[f]);
            FILE *ef = fopen(path, "w");
            if (!ef || fwrite(files[f].content, 1, (size_t)files[f].size, ef) != (size_t)files[f].size ||
                fclose(ef) != 0) {
                fprintf(stderr, "fuzz_mpiio: cannot write %s\n", path);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
    }
    LOG("done");
    fclose(log_file);
    free(keep);
    if (second != MPI_COMM_NULL)
        MPI_Comm_free(&second);
    MPI_Finalize();
    return 0;
}
