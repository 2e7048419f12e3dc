/* multicomm.c: many files open at once on several communicators (MPI_COMM_WORLD, a duplicate, a
 * reordered copy, a split, a subset made with MPI_Comm_create_group, MPI_COMM_SELF on one rank and
 * on all ranks at different places between collective opens), with interleaved opens, closes,
 * syncs and set_size, then more files open at once than nvcache has shared-memory collective
 * entries (the rest must fall back to plain MPI-IO). Everything runs twice, through nvcache and
 * with the hint nvcache_enable=false; files must be byte-identical and reads equal. Also: a
 * write-only file (get_size, sync) and MPI_File_open(MPI_COMM_NULL) returning an error.
 * Usage: mpiexec -n P multicomm DIR
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int rank, nprocs;
static const char *dir;
static uint64_t readsum[2];

#define BLK 5000 /* not a multiple of 4 KiB: ranks share pages */

static void name(char *buf, size_t n, int pass, const char *what, int id)
{
    snprintf(buf, n, "%s/mc-%s-%s-%d", dir, pass ? "plain" : "cache", what, id);
}

static MPI_File open_on(MPI_Comm c, MPI_Info info, int pass, const char *what, int id, int amode)
{
    char p[1024];
    name(p, sizeof p, pass, what, id);
    MPI_File fh;
    CHECK(MPI_File_open(c, p, amode, info, &fh));
    return fh;
}

/* Each rank of c writes its block at (base + crank) * BLK, collectively or not. */
static void put(MPI_File fh, MPI_Comm c, int seed, int base, int coll)
{
    int cr;
    MPI_Comm_rank(c, &cr);
    unsigned char b[BLK];
    fill(b, sizeof b, seed * 131 + cr);
    MPI_Offset off = (MPI_Offset)(base + cr) * BLK;
    if (getenv("MULTICOMM_DEBUG"))
        fprintf(stderr, "rank %d: put seed %d base %d coll %d\n", rank, seed, base, coll);
    if (coll)
        CHECK(MPI_File_write_at_all(fh, off, b, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
    else
        CHECK(MPI_File_write_at(fh, off, b, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
}

/* Reads the whole file independently and folds it into this pass's checksum. */
static void sum(MPI_File fh, int pass)
{
    MPI_Offset sz;
    CHECK(MPI_File_get_size(fh, &sz));
    unsigned char *b = malloc((size_t)sz + 1);
    MPI_Status st;
    CHECK(MPI_File_read_at(fh, 0, b, (int)sz, MPI_BYTE, &st));
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    uint64_t h = 1469598103934665603ull ^ (uint64_t)sz;
    for (int i = 0; i < got; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    readsum[pass] = readsum[pass] * 31 + h + (uint64_t)got;
    if (getenv("MULTICOMM_DEBUG"))
        fprintf(stderr, "pass %d rank %d: size %lld read %d hash %016llx\n", pass, rank, (long long)sz, got,
                (unsigned long long)h);
    free(b);
}

#define NMANY 72 /* per rank, on MPI_COMM_SELF: with 4 ranks more than nvcache's 256 entries */

static void run(int pass, MPI_Info info)
{
    const int CW = MPI_MODE_CREATE | MPI_MODE_RDWR;
    MPI_Comm dupw, rev, half, sub = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dupw);
    MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - rank, &rev); /* same group, reversed order */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Group wg, sg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int excl[1] = {0};
    MPI_Group_excl(wg, 1, excl, &sg);
    if (nprocs > 1 && rank > 0)
        MPI_Comm_create_group(MPI_COMM_WORLD, sg, 7, &sub);
    int color = rank % 2;

    MPI_File w1 = open_on(MPI_COMM_WORLD, info, pass, "w1", 0, CW);
    put(w1, MPI_COMM_WORLD, 1, 0, 1);
    MPI_File h1 = open_on(half, info, pass, "h1", color, CW);
    put(h1, half, 2, 0, 0);
    MPI_File s0 = MPI_FILE_NULL;
    if (rank == 0) { /* MPI_COMM_SELF on one rank only, between collective opens */
        s0 = open_on(MPI_COMM_SELF, info, pass, "s0", 0, CW);
        put(s0, MPI_COMM_SELF, 3, 2, 0);
    }
    MPI_File d1 = open_on(dupw, info, pass, "d1", 0, CW);
    put(d1, dupw, 4, 1, 1);
    MPI_File r1 = open_on(rev, info, pass, "r1", 0, CW);
    put(r1, rev, 5, 0, 0);
    put(w1, MPI_COMM_WORLD, 6, nprocs, 0);
    CHECK(MPI_File_close(&h1));
    MPI_File h2 = open_on(half, info, pass, "h2", color, CW);
    put(h2, half, 7, 3, 1);
    MPI_File u1 = MPI_FILE_NULL;
    if (sub != MPI_COMM_NULL) {
        u1 = open_on(sub, info, pass, "u1", 0, CW);
        put(u1, sub, 8, 0, 1);
        /* Block 2 is written by two ranks in turn: sync-barrier-sync orders them (MPI-3.1
           §13.6.1). With one sync only, plain MPICH across emulated hosts sometimes kept the first
           write's block: its two-phase aggregator was still writing when the other rank wrote. */
        CHECK(MPI_File_sync(u1));
        MPI_Barrier(sub);
        CHECK(MPI_File_sync(u1));
        put(u1, sub, 9, 2, 0);
    }
    CHECK(MPI_File_sync(w1));
    CHECK(MPI_File_set_size(d1, (MPI_Offset)BLK * nprocs + 777)); /* shrinks: cuts d1's last block */
    put(d1, dupw, 10, nprocs + 2, 0);
    /* MPI_COMM_SELF files on every rank, at different places between the world opens. */
    MPI_File sa = MPI_FILE_NULL, sb;
    if (rank % 2 == 0)
        sa = open_on(MPI_COMM_SELF, info, pass, "sa", rank, CW);
    MPI_File w2 = open_on(MPI_COMM_WORLD, info, pass, "w2", 0, CW);
    if (rank % 2 == 1)
        sa = open_on(MPI_COMM_SELF, info, pass, "sa", rank, CW);
    put(sa, MPI_COMM_SELF, 11 + rank, 1, 0);
    put(w2, MPI_COMM_WORLD, 12, 0, 1);
    CHECK(MPI_File_close(&r1));
    /* Write-only: get_size and sync must still see the cached bytes. */
    MPI_File wo = open_on(half, info, pass, "wo", color, MPI_MODE_CREATE | MPI_MODE_WRONLY);
    put(wo, half, 17, 1, 0);
    CHECK(MPI_File_sync(wo));
    MPI_Barrier(half);
    CHECK(MPI_File_sync(wo));
    MPI_Offset wosz = -1;
    CHECK(MPI_File_get_size(wo, &wosz));
    readsum[pass] = readsum[pass] * 31 + (uint64_t)wosz;
    if (getenv("MULTICOMM_DEBUG"))
        fprintf(stderr, "pass %d rank %d: write-only size %lld\n", pass, rank, (long long)wosz);
    CHECK(MPI_File_close(&wo));
    sb = open_on(MPI_COMM_SELF, info, pass, "sb", rank, CW);
    put(sb, MPI_COMM_SELF, 13 + rank, 0, 0);
    CHECK(MPI_File_close(&w1));
    if (rank == 0) {
        put(s0, MPI_COMM_SELF, 14, 0, 0);
        CHECK(MPI_File_close(&s0));
    }
    /* Reopen a closed file on another communicator with the same group and read it back. */
    MPI_File w1b = open_on(rev, info, pass, "w1", 0, MPI_MODE_RDWR);
    sum(w1b, pass);
    MPI_Barrier(rev); /* nvcache's write_at_all does not wait for the others: all have read first */
    put(w1b, rev, 15, 2 * nprocs, 1);
    if (u1 != MPI_FILE_NULL)
        CHECK(MPI_File_close(&u1));
    CHECK(MPI_File_close(&d1));
    CHECK(MPI_File_close(&sa));
    CHECK(MPI_File_close(&w1b));
    CHECK(MPI_File_close(&h2));
    CHECK(MPI_File_close(&w2));
    CHECK(MPI_File_close(&sb));

    /* More files open at once than there are collective entries: the last ones use plain MPI-IO. */
    MPI_File many[NMANY];
    for (int i = 0; i < NMANY; i++) {
        many[i] = open_on(MPI_COMM_SELF, info, pass, "many", rank * NMANY + i, CW);
        put(many[i], MPI_COMM_SELF, 100 + rank * NMANY + i, i % 3, 0);
    }
    MPI_File wm = open_on(MPI_COMM_WORLD, info, pass, "wm", 0, CW); /* maybe past the limit too */
    put(wm, MPI_COMM_WORLD, 16, 0, 1);
    for (int i = NMANY - 1; i >= 0; i--) {
        if (i % 2)
            sum(many[i], pass);
        CHECK(MPI_File_close(&many[i]));
    }
    CHECK(MPI_File_sync(wm)); /* sync-barrier-sync: every rank sees the others' blocks */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_sync(wm));
    sum(wm, pass);
    CHECK(MPI_File_close(&wm));

    if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    MPI_Group_free(&sg);
    MPI_Group_free(&wg);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dupw);
}

static unsigned char *slurp(const char *p, long *n)
{
    FILE *f = fopen(p, "rb");
    if (!f) {
        *n = -1;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*n + 1);
    if (fread(b, 1, (size_t)*n, f) != (size_t)*n)
        *n = -2;
    fclose(f);
    return b;
}

static int compare(const char *what, int id)
{
    char a[1024], b[1024];
    name(a, sizeof a, 0, what, id);
    name(b, sizeof b, 1, what, id);
    long na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int bad = na < 0 || na != nb || memcmp(x, y, (size_t)na) != 0;
    if (bad)
        fprintf(stderr, "multicomm: %s differs from %s (%ld vs %ld bytes)\n", a, b, na, nb);
    free(x);
    free(y);
    return bad;
}

int main(int argc, char **argv)
{
    nprocs = test_start(&argc, &argv, &rank, 1, "multicomm DIR");
    dir = argv[1];
    MPI_Info on, off;
    MPI_Info_create(&on);
    MPI_Info_set(on, "nvcache_enable", "true");
    MPI_Info_create(&off);
    MPI_Info_set(off, "nvcache_enable", "false");
    if (rank == 0) { /* stale files of an earlier run */
        static const char *ws[] = {"w1", "d1", "r1", "w2", "wm", "u1"};
        char p[1024];
        for (int pass = 0; pass < 2; pass++) {
            for (unsigned i = 0; i < sizeof ws / sizeof *ws; i++)
                name(p, sizeof p, pass, ws[i], 0), remove(p);
            for (int i = 0; i < 2; i++)
                name(p, sizeof p, pass, "h1", i), remove(p), name(p, sizeof p, pass, "h2", i), remove(p),
                    name(p, sizeof p, pass, "wo", i), remove(p);
            name(p, sizeof p, pass, "s0", 0), remove(p);
            for (int r = 0; r < nprocs; r++) {
                name(p, sizeof p, pass, "sa", r), remove(p);
                name(p, sizeof p, pass, "sb", r), remove(p);
                for (int i = 0; i < NMANY; i++)
                    name(p, sizeof p, pass, "many", r * NMANY + i), remove(p);
            }
        }
    }
    /* Erroneous calls return an error, no abort: MPICH raises MPI_File_open(MPI_COMM_NULL) on the
       file error handler (ERRORS_RETURN), Open MPI on MPI_COMM_WORLD's, so both return here. */
    MPI_File nf;
    char np_[1024];
    name(np_, sizeof np_, 0, "null", 0);
#ifdef MPICH
    /* Under MPICH it returns whatever MPI_COMM_WORLD's handler: nvcache must not ask the null
       communicator anything that raises on MPI_COMM_WORLD's (a rank query once did, with caching
       off, and the job aborted). */
    if (MPI_File_open(MPI_COMM_NULL, np_, MPI_MODE_CREATE | MPI_MODE_RDWR, on, &nf) == MPI_SUCCESS) {
        fprintf(stderr, "multicomm: MPI_File_open(MPI_COMM_NULL) succeeded\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPI_File_open(MPI_COMM_NULL, np_, MPI_MODE_CREATE | MPI_MODE_RDWR, on, &nf) == MPI_SUCCESS) {
        fprintf(stderr, "multicomm: MPI_File_open(MPI_COMM_NULL) succeeded\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(MPI_COMM_WORLD);
    run(0, on);
    run(1, off);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = readsum[0] != readsum[1];
    if (bad)
        fprintf(stderr, "multicomm: rank %d read different bytes through nvcache\n", rank);
    if (rank == 0) {
        static const char *ws[] = {"w1", "d1", "r1", "w2", "wm"};
        for (unsigned i = 0; i < sizeof ws / sizeof *ws; i++)
            bad |= compare(ws[i], 0);
        if (nprocs > 1)
            bad |= compare("u1", 0);
        for (int i = 0; i < (nprocs > 1 ? 2 : 1); i++)
            bad |= compare("h1", i) | compare("h2", i) | compare("wo", i);
        bad |= compare("s0", 0);
        for (int r = 0; r < nprocs; r++) {
            bad |= compare("sa", r) | compare("sb", r);
            for (int i = 0; i < NMANY; i++)
                bad |= compare("many", r * NMANY + i);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("multicomm: %s\n", bad ? "FAILED" : "ok");
    MPI_Info_free(&on);
    MPI_Info_free(&off);
    MPI_Finalize();
    return bad;
}
