/* consistency.c: MPI-IO consistency semantics (MPI-3.1 §13.6.1) with several handles of one file.
 *
 * Every case runs twice in one job: through nvcache, and with the hint nvcache_enable=false (plain
 * MPI-IO, ROMIO). Afterwards rank 0 compares the two files byte for byte, and every rank compares
 * what it read in the two runs (only reads the standard defines: after sync-barrier-sync, or after
 * close and a new open). Atomic mode is nondeterministic in both, so there each run must give the
 * result of *some* serial order of the overlapping writes.
 *
 * Cases: every rank opens the same file on MPI_COMM_SELF (strides of 100 and 8192 bytes); the
 * file open on MPI_COMM_WORLD and on MPI_COMM_SELF at once (with and without sync-barrier-sync,
 * closed in both orders); two MPI_COMM_SELF handles per rank; handles opened and closed
 * interleaved; a handle opened after another closed; atomic mode with concurrent overlapping
 * writes through the ranks' handles of one open; a file grown through one handle and read through another; set_size
 * through one handle while another is open; read-only and delete-on-close handles mixed with
 * writers; a second handle opened while the first handle's ranks are writing; set_size through a
 * second handle of a file cached by a subset of the ranks.
 * Usage: mpiexec -n P consistency DIR
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static int rank, nprocs;
static const char *dir;
#define NCASES 14
static uint64_t readsum[2][NCASES]; /* what each case read, per run */
static int cur;                     /* the case running */
static int failures;

#define RDWR (MPI_MODE_CREATE | MPI_MODE_RDWR)

static void path(char *buf, size_t n, int pass, const char *what)
{
    snprintf(buf, n, "%s/cons-%s-%s", dir, pass ? "plain" : "cache", what);
}

static MPI_File open_on(MPI_Comm c, MPI_Info info, int pass, const char *what, int amode)
{
    char p[1024];
    path(p, sizeof p, pass, what);
    MPI_File fh;
    CHECK(MPI_File_open(c, p, amode, info, &fh));
    return fh;
}

/* Writes n bytes of the pattern `seed` at off (independent). */
static void put(MPI_File fh, MPI_Offset off, int n, int seed)
{
    unsigned char *b = malloc((size_t)n);
    fill(b, (size_t)n, seed);
    CHECK(MPI_File_write_at(fh, off, b, n, MPI_BYTE, MPI_STATUS_IGNORE));
    free(b);
}

/* Reads [off, off+n) and folds the bytes read (and their count) into this pass's checksum. */
static void take(MPI_File fh, MPI_Offset off, int n, int pass)
{
    unsigned char *b = calloc(1, (size_t)n + 1);
    MPI_Status st;
    CHECK(MPI_File_read_at(fh, off, b, n, MPI_BYTE, &st));
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    uint64_t h = 1469598103934665603ull ^ (uint64_t)got;
    for (int i = 0; i < got; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    readsum[pass][cur] = readsum[pass][cur] * 31 + h;
    if (getenv("CONSISTENCY_DEBUG"))
        fprintf(stderr, "%s rank %d case %d: read %d of %d bytes at %lld: %016llx\n", pass ? "plain" : "cache", rank, cur,
                got, n, (long long)off, (unsigned long long)h);
    free(b);
}

/* Reads the whole file through fh (its size as fh sees it) into the checksum. */
static void take_all(MPI_File fh, int pass)
{
    MPI_Offset sz;
    CHECK(MPI_File_get_size(fh, &sz));
    readsum[pass][cur] = readsum[pass][cur] * 31 + (uint64_t)sz;
    take(fh, 0, (int)sz, pass);
}

/* MPI_File_sync, except on a read-only handle (ROMIO refuses it there; its reads go to the file). */
static void sync_rw(MPI_File fh)
{
    int amode;
    CHECK(MPI_File_get_amode(fh, &amode));
    if (!(amode & MPI_MODE_RDONLY))
        CHECK(MPI_File_sync(fh));
}

/* MPI-3.1 §13.6.1: writes through one handle are visible through another after sync-barrier-sync. */
static void sync_barrier_sync(MPI_File a, MPI_File b)
{
    sync_rw(a);
    sync_rw(b);
    MPI_Barrier(MPI_COMM_WORLD);
    sync_rw(a);
    sync_rw(b);
}

/* ------------------------------------------------------------------ cases */

/* The first case: every rank opens the same file on MPI_COMM_SELF, writes its 50 bytes at
 * rank * stride, closes; after a barrier rank 0 reads the file through a new handle. */
static void self_each(int pass, MPI_Info info, int stride, const char *what)
{
    MPI_File fh = open_on(MPI_COMM_SELF, info, pass, what, RDWR);
    put(fh, (MPI_Offset)rank * stride, 50, 1000 + rank);
    CHECK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        fh = open_on(MPI_COMM_SELF, info, pass, what, MPI_MODE_RDONLY);
        take_all(fh, pass);
        CHECK(MPI_File_close(&fh));
    }
}

/* The file on MPI_COMM_WORLD and on MPI_COMM_SELF at once, different bytes through each handle
 * (sharing pages); with the sync-barrier-sync rule every rank reads everything through both. */
static void world_self(int pass, MPI_Info info, int rule, int self_first, const char *what)
{
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, what, RDWR);
    put(w, (MPI_Offset)rank * 100, 50, 2000 + rank);
    MPI_File s = open_on(MPI_COMM_SELF, info, pass, what, RDWR);
    put(s, (MPI_Offset)rank * 100 + 50, 50, 3000 + rank);
    put(w, 100000 + (MPI_Offset)rank * 100, 30, 4000 + rank);
    if (rule) {
        sync_barrier_sync(w, s);
        take_all(w, pass);
        take_all(s, pass);
    }
    if (self_first) {
        CHECK(MPI_File_close(&s));
        CHECK(MPI_File_close(&w));
    } else {
        CHECK(MPI_File_close(&w));
        CHECK(MPI_File_close(&s));
    }
}

/* Two MPI_COMM_SELF handles per rank on one file shared by all ranks. */
static void two_self(int pass, MPI_Info info)
{
    MPI_File a = open_on(MPI_COMM_SELF, info, pass, "two-self", RDWR);
    MPI_File b = open_on(MPI_COMM_SELF, info, pass, "two-self", RDWR);
    put(a, (MPI_Offset)rank * 300, 100, 5000 + rank);
    put(b, (MPI_Offset)rank * 300 + 100, 100, 6000 + rank);
    sync_barrier_sync(a, b);
    take_all(a, pass);
    take_all(b, pass);
    CHECK(MPI_File_close(&b));
    CHECK(MPI_File_close(&a));
}

/* Handles opened and closed interleaved: A (world), B (self), close A, C (world), close B, D after
 * all closed (the file is cached again then) reads everything and writes more. */
static void interleaved(int pass, MPI_Info info)
{
    MPI_File a = open_on(MPI_COMM_WORLD, info, pass, "interleaved", RDWR);
    put(a, (MPI_Offset)rank * 4096, 1000, 7000 + rank);
    MPI_File b = open_on(MPI_COMM_SELF, info, pass, "interleaved", RDWR);
    put(b, (MPI_Offset)rank * 4096 + 1000, 1000, 7100 + rank);
    CHECK(MPI_File_close(&a));
    MPI_File c = open_on(MPI_COMM_WORLD, info, pass, "interleaved", RDWR);
    put(c, (MPI_Offset)rank * 4096 + 2000, 1000, 7200 + rank);
    sync_barrier_sync(b, c);
    take_all(b, pass);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone has read before anyone writes again */
    CHECK(MPI_File_close(&b));
    put(c, (MPI_Offset)(nprocs + rank) * 4096, 500, 7300 + rank);
    CHECK(MPI_File_close(&c));
    MPI_File d = open_on(MPI_COMM_WORLD, info, pass, "interleaved", RDWR);
    take_all(d, pass);
    MPI_Barrier(MPI_COMM_WORLD);
    put(d, (MPI_Offset)rank * 4096 + 3000, 96, 7400 + rank);
    CHECK(MPI_File_close(&d));
}

/* A handle opened after another closed reads what it wrote (close makes it visible to any later
 * open, ROMIO's behaviour that programs rely on): per-rank SELF writers, then a WORLD reader. */
static void reopen(int pass, MPI_Info info)
{
    MPI_File s = open_on(MPI_COMM_SELF, info, pass, "reopen", RDWR);
    put(s, (MPI_Offset)rank * 6000, 6000, 8000 + rank);
    CHECK(MPI_File_close(&s));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, "reopen", RDWR);
    take_all(w, pass);
    MPI_Barrier(MPI_COMM_WORLD);
    put(w, (MPI_Offset)((rank + 1) % nprocs) * 6000 + 10, 20, 8100 + rank);
    CHECK(MPI_File_close(&w));
    /* and the same rank reads its own bytes back through a new handle */
    s = open_on(MPI_COMM_SELF, info, pass, "reopen", MPI_MODE_RDONLY);
    take(s, (MPI_Offset)rank * 6000, 6000, pass);
    CHECK(MPI_File_close(&s));
}

/* Atomic mode (MPI_File_set_atomicity(fh, 1)): concurrent overlapping writes through the handles of
 * one open must leave the result of some serial order: the region holds one rank's bytes only. */
static void atomic_overlap(int pass, MPI_Info info)
{
    enum { REGION = 3 * 4096 + 123 };
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, "atomic", RDWR);
    CHECK(MPI_File_set_atomicity(w, 1));
    unsigned char *b = malloc(REGION);
    for (int round = 0; round < 3; round++) {
        memset(b, 'A' + rank, REGION);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_File_write_at(w, 17, b, REGION, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        memset(b, 0, REGION);
        CHECK(MPI_File_read_at(w, 17, b, REGION, MPI_BYTE, MPI_STATUS_IGNORE));
        int ok = b[0] >= 'A' && b[0] < 'A' + nprocs;
        for (int i = 1; i < REGION && ok; i++)
            ok = b[i] == b[0];
        if (!ok) {
            fprintf(stderr, "rank %d: %s atomic round %d: region is not the result of a serial order\n", rank,
                    pass ? "plain" : "cache", round);
            failures++;
        }
    }
    free(b);
    CHECK(MPI_File_close(&w));
}

/* A file grown through one handle and read through another; set_size through one handle while
 * another is open. */
static void grow_and_set_size(int pass, MPI_Info info)
{
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, "grow", RDWR);
    MPI_File s = open_on(MPI_COMM_SELF, info, pass, "grow", RDWR);
    put(w, (MPI_Offset)rank * 100, 100, 9000 + rank);
    if (rank == nprocs - 1)
        put(w, 250000, 77, 9100);
    sync_barrier_sync(w, s);
    take_all(s, pass);
    CHECK(MPI_File_close(&s));
    CHECK(MPI_File_close(&w));

    MPI_File a = open_on(MPI_COMM_WORLD, info, pass, "setsize", RDWR);
    MPI_File b = open_on(MPI_COMM_WORLD, info, pass, "setsize", RDWR);
    put(a, (MPI_Offset)rank * 5000, 5000, 9200 + rank);
    sync_barrier_sync(a, b);
    CHECK(MPI_File_set_size(b, 7000));
    sync_barrier_sync(b, a);
    MPI_Offset sz;
    CHECK(MPI_File_get_size(a, &sz));
    readsum[pass][cur] = readsum[pass][cur] * 31 + (uint64_t)sz;
    MPI_Barrier(MPI_COMM_WORLD);
    put(a, 9000 + (MPI_Offset)rank * 10, 10, 9300 + rank);
    CHECK(MPI_File_close(&b));
    CHECK(MPI_File_close(&a));
}

/* set_size through a second handle of a file that the upper half of the ranks caches: under
 * emulated hosts that half has no rank on node 0's host, where the file table is, and its close
 * once grew the file back to the size its parts had seen (with NVCACHE_DIRECT=0: nothing there
 * told the close that the second handle's open had drained them). */
static void subset_shrink(int pass, MPI_Info info)
{
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, rank >= nprocs / 2, rank, &c);
    if (rank >= nprocs / 2) {
        int cr;
        MPI_Comm_rank(c, &cr);
        MPI_File w = open_on(c, info, pass, "subset-shrink", RDWR);
        put(w, (MPI_Offset)cr * 4096, 4096, 9900 + cr);
        sync_rw(w);
        /* Sync-barrier before another handle cuts the file (§13.6.1): MPI_File_sync need not
           wait for the other ranks, and ROMIO's does not, so rank 1's write could land after
           the cut in the plain pass (8192 bytes instead of 100 about once in 35 runs). */
        MPI_Barrier(c);
        if (cr == 0) {
            MPI_File s = open_on(MPI_COMM_SELF, info, pass, "subset-shrink", RDWR);
            CHECK(MPI_File_set_size(s, 100));
            CHECK(MPI_File_close(&s));
        }
        MPI_Barrier(c);
        CHECK(MPI_File_close(&w));
    }
    MPI_Comm_free(&c);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Read-only and delete-on-close handles beside writers. */
static void rdonly_and_doc(int pass, MPI_Info info)
{
    /* an existing file, a read-only handle on WORLD, writers on SELF */
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, "rdonly", RDWR);
    put(w, (MPI_Offset)rank * 3000, 3000, 9400 + rank);
    CHECK(MPI_File_close(&w));
    MPI_File r = open_on(MPI_COMM_WORLD, info, pass, "rdonly", MPI_MODE_RDONLY);
    take_all(r, pass);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File s = open_on(MPI_COMM_SELF, info, pass, "rdonly", MPI_MODE_RDWR);
    put(s, (MPI_Offset)rank * 3000 + 1000, 500, 9500 + rank);
    sync_barrier_sync(s, r);
    take_all(r, pass);
    CHECK(MPI_File_close(&s));
    CHECK(MPI_File_close(&r));

    /* a delete-on-close file with a second, read-only handle on each rank */
    MPI_File t = open_on(MPI_COMM_WORLD, info, pass, "doc", RDWR | MPI_MODE_DELETE_ON_CLOSE);
    put(t, (MPI_Offset)rank * 2000, 2000, 9600 + rank);
    MPI_File u = open_on(MPI_COMM_SELF, info, pass, "doc", MPI_MODE_RDONLY);
    sync_barrier_sync(t, u);
    take_all(u, pass);
    CHECK(MPI_File_close(&u));
    CHECK(MPI_File_close(&t));
    MPI_Barrier(MPI_COMM_WORLD);
    char p[1024];
    path(p, sizeof p, pass, "doc");
    if (rank == 0 && access(p, F_OK) == 0) {
        fprintf(stderr, "%s: delete-on-close file still exists\n", p);
        failures++;
    }
}

/* A second handle opened while the first handle's ranks are writing (no synchronisation between
 * them; every byte is written once, so the final file is defined): rank P-1 opens the file on
 * MPI_COMM_SELF halfway through, writes bytes between the others' bytes in the same pages, closes. */
static void concurrent(int pass, MPI_Info info)
{
    enum { PIECES = 64, PIECE = 64 };
    MPI_File w = open_on(MPI_COMM_WORLD, info, pass, "concurrent", RDWR);
    MPI_Offset base = (MPI_Offset)rank * PIECES * 2 * PIECE;
    for (int i = 0; i < PIECES; i++) {
        put(w, base + (MPI_Offset)i * 2 * PIECE, PIECE, 9700 + rank * PIECES + i);
        if (i == PIECES / 2 && rank == nprocs - 1) {
            MPI_File s = open_on(MPI_COMM_SELF, info, pass, "concurrent", RDWR);
            for (int r = 0; r < nprocs; r++)
                for (int j = 0; j < PIECES; j += 3)
                    put(s, (MPI_Offset)r * PIECES * 2 * PIECE + (MPI_Offset)j * 2 * PIECE + PIECE, PIECE, 9800 + j);
            CHECK(MPI_File_close(&s));
        }
    }
    CHECK(MPI_File_close(&w));
}

/* ------------------------------------------------------------------ driver */

static const char *const compared[] = {"self-100", "self-8192", "ws-norule", "ws-rule", "ws-rule-selffirst",
                                       "ws-norule-selffirst", "two-self", "interleaved", "reopen", "grow",
                                       "setsize", "rdonly", "concurrent", "subset-shrink"};

static const char *const case_names[] = {"self-100", "self-8192", "ws-norule", "ws-rule", "ws-rule-selffirst",
                                         "ws-norule-selffirst", "two-self", "interleaved", "reopen", "atomic",
                                         "grow/setsize", "rdonly/doc", "concurrent", "subset-shrink"};
_Static_assert(sizeof case_names / sizeof *case_names == NCASES, "one name per case");

static void run(int pass, MPI_Info info)
{
    cur = 0;
    self_each(pass, info, 100, "self-100");
    cur++;
    self_each(pass, info, 8192, "self-8192");
    cur++;
    world_self(pass, info, 0, 0, "ws-norule");
    cur++;
    world_self(pass, info, 1, 0, "ws-rule");
    cur++;
    world_self(pass, info, 1, 1, "ws-rule-selffirst");
    cur++;
    world_self(pass, info, 0, 1, "ws-norule-selffirst");
    cur++;
    two_self(pass, info);
    cur++;
    interleaved(pass, info);
    cur++;
    reopen(pass, info);
    cur++;
    atomic_overlap(pass, info);
    cur++;
    grow_and_set_size(pass, info);
    cur++;
    rdonly_and_doc(pass, info);
    cur++;
    concurrent(pass, info);
    cur++;
    subset_shrink(pass, info);
    MPI_Barrier(MPI_COMM_WORLD);
}

static long file_size(FILE *f)
{
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    return n;
}

/* Byte-for-byte comparison of the cached and the plain file of a case (rank 0). */
static void compare(const char *what)
{
    char a[1024], b[1024];
    path(a, sizeof a, 0, what);
    path(b, sizeof b, 1, what);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    if (!fa || !fb) {
        fprintf(stderr, "%s: cannot open %s or %s\n", what, a, b);
        failures++;
    } else {
        long na = file_size(fa), nb = file_size(fb), bad = 0, first = -1;
        for (long i = 0; i < (na < nb ? na : nb); i++)
            if (fgetc(fa) != fgetc(fb) && !bad++)
                first = i;
        if (na != nb || bad) {
            fprintf(stderr, "%s: nvcache file differs from plain MPI-IO: size %ld vs %ld, %ld bytes differ (first at %ld)\n",
                    what, na, nb, bad, first);
            failures++;
        }
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    remove(a);
    remove(b);
}

int main(int argc, char **argv)
{
    nprocs = test_start(&argc, &argv, &rank, 1, "consistency DIR");
    dir = argv[1];
    MPI_Info plain;
    MPI_Info_create(&plain);
    MPI_Info_set(plain, "nvcache_enable", "false");
    if (rank == 0)
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < sizeof compared / sizeof *compared; i++) {
                char p[1024];
                path(p, sizeof p, pass, compared[i]);
                remove(p);
            }
    MPI_Barrier(MPI_COMM_WORLD);
    run(0, MPI_INFO_NULL);
    run(1, plain);
    MPI_Info_free(&plain);
    for (int c = 0; c < NCASES; c++)
        if (readsum[0][c] != readsum[1][c]) {
            fprintf(stderr, "rank %d: %s: reads through nvcache differ from plain MPI-IO\n", rank, case_names[c]);
            failures++;
        }
    if (rank == 0)
        for (size_t i = 0; i < sizeof compared / sizeof *compared; i++)
            compare(compared[i]);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("consistency: %d ranks, %zu files compared with plain MPI-IO, %d failure(s)\n", nprocs,
               sizeof compared / sizeof *compared, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
