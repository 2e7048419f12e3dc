/* regjoin_fail.c: a handle whose join of the job's file table (on node 0's host, asked for over
 * MPI by ranks of other hosts) fails must not coexist with an open that caches its file.
 *
 * The last rank (on another host than node 0's, under emu_mpiexec.sh) opens the file on
 * MPI_COMM_SELF while its table join is made to fail; then every rank opens it on MPI_COMM_WORLD.
 * The join fails by injection: this program defines PMPI_Isend and PMPI_Get_count (exported, so
 * libnvcache's calls reach them first) and, while `inject` is set, either truncates the join
 * request on the wire (mode `request`: the agent on node 0's host refuses it, the table never
 * hears of the handle) or truncates the reply (mode `reply`: the table entered the handle, its
 * requester cannot tell). The first handle's open may fail (the safe answer); if it succeeds, its
 * bytes and the second handle's must follow MPI-IO's sync-barrier-sync rules (MPI-3.1 §13.6.1):
 *   - a write through the self handle, then sync-barrier-sync, is what a read through the
 *     world handle returns (a cached world open would read its own older copy);
 *   - non-overlapping writes of the two handles in one page both reach the file.
 * Usage: mpiexec -n P regjoin_fail FILE request|reply   (P >= 2, two or more hosts)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int rank;

/* The wire's first field is the request's op (src/remote.c, struct nvc_wire); NVC_OP_REG_JOIN in
   src/nvcache_internal.h. Requests carry the target node as their tag (< 30000). */
#define OP_REG_JOIN 15u
#define TAG_REQUEST_MAX 30000

static volatile int inject;      /* 1: request, 2: reply */
static volatile int injected;    /* joins made to fail */
static volatile int corrupt_next_count;

int PMPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *rq)
{
    static int (*real)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    if (!real)
        real = (int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *))dlsym(RTLD_NEXT, "PMPI_Isend");
    uint32_t op = 0;
    if (inject && type == MPI_BYTE && count >= 4 && tag < TAG_REQUEST_MAX && buf) {
        memcpy(&op, buf, sizeof op);
        if (op == OP_REG_JOIN) {
            injected++;
            if (inject == 1)
                count = 4; /* too short for a request: the agent refuses it */
            else
                corrupt_next_count = 1; /* served; its reply is then cut short */
        }
    }
    return real(buf, count, type, dest, tag, comm, rq);
}

int PMPI_Get_count(const MPI_Status *st, MPI_Datatype type, int *count)
{
    static int (*real)(const MPI_Status *, MPI_Datatype, int *);
    if (!real)
        real = (int (*)(const MPI_Status *, MPI_Datatype, int *))dlsym(RTLD_NEXT, "PMPI_Get_count");
    int rc = real(st, type, count);
    if (corrupt_next_count && rc == MPI_SUCCESS && *count > 4) {
        corrupt_next_count = 0;
        *count = 4;
    }
    return rc;
}

#define PG 4096

static void put(MPI_File fh, MPI_Offset off, int len, int seed)
{
    unsigned char *b = malloc((size_t)len);
    memset(b, seed, (size_t)len);
    CHECK(MPI_File_write_at(fh, off, b, len, MPI_BYTE, MPI_STATUS_IGNORE));
    free(b);
}

/* Counts the bytes of [off, off+len) of fh that are not `seed`. */
static int wrong(MPI_File fh, MPI_Offset off, int len, int seed)
{
    unsigned char *b = calloc(1, (size_t)len);
    CHECK(MPI_File_read_at(fh, off, b, len, MPI_BYTE, MPI_STATUS_IGNORE));
    int n = 0;
    for (int i = 0; i < len; i++)
        n += b[i] != seed;
    free(b);
    return n;
}

int main(int argc, char **argv)
{
    int np = test_start(&argc, &argv, &rank, 2, "regjoin_fail FILE request|reply");
    const char *path = argv[1];
    int mode = strcmp(argv[2], "reply") == 0 ? 2 : 1;
    int self = np - 1, bad = 0;
    if (rank == 0) {
        MPI_File fh;
        MPI_File_delete(path, MPI_INFO_NULL);
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
        put(fh, 0, 4 * PG, 0); /* zeros: the world open caches (prefetches) these */
        CHECK(MPI_File_close(&fh));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* The self handle, its table join failing. */
    MPI_File a = MPI_FILE_NULL;
    int a_ok = 0;
    if (rank == self) {
        inject = mode;
        int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, MPI_INFO_NULL, &a);
        inject = 0;
        a_ok = rc == MPI_SUCCESS;
        printf("rank %d: self open with a failed table join (%s): %s\n", rank, argv[2],
               a_ok ? "opened" : "failed (refused)");
        if (injected != 1) {
            fprintf(stderr, "rank %d: %d join(s) failed by injection, not 1: is this rank on another host than "
                            "rank 0 (emu_mpiexec.sh)?\n",
                    rank, injected);
            bad++;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &a_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    /* The world handle: it may cache only if the table knows of no other handle. */
    MPI_File w;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &w));
    if (a_ok) {
        /* World writes page 0 and half of page 1; sync-barrier-sync; self sees them. */
        if (rank == 0) {
            put(w, 0, PG, 1);
            put(w, PG, PG / 2, 5);
        }
        CHECK(MPI_File_sync(w));
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == self) {
            CHECK(MPI_File_sync(a));
            int n = wrong(a, 0, PG, 1);
            if (n)
                fprintf(stderr, "rank %d: self handle reads %d stale bytes of the world handle's synced write\n",
                        rank, n);
            bad += n != 0;
            /* Self writes page 0 and the other half of page 1, then sync-barrier-sync. */
            put(a, 0, PG, 2);
            put(a, PG + PG / 2, PG / 2, 6);
            CHECK(MPI_File_sync(a));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_File_sync(w));
        if (rank == 0) {
            int n = wrong(w, 0, PG, 2);
            if (n)
                fprintf(stderr, "rank %d: world handle reads %d stale bytes where the self handle wrote and synced\n",
                        rank, n);
            bad += n != 0;
        }
        if (rank == self)
            CHECK(MPI_File_close(&a));
    } else if (rank == 0) {
        put(w, 0, PG, 2);
        put(w, PG, PG / 2, 5);
        put(w, PG + PG / 2, PG / 2, 6);
    }
    CHECK(MPI_File_close(&w));
    MPI_Barrier(MPI_COMM_WORLD);

    /* The file, plainly: page 0 is 2, page 1 is 5 then 6. */
    if (rank == 0) {
        MPI_Info off;
        MPI_Info_create(&off);
        MPI_Info_set(off, "nvcache_enable", "false");
        MPI_File fh;
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, off, &fh));
        int n0 = wrong(fh, 0, PG, 2), n1 = wrong(fh, PG, PG / 2, 5), n2 = wrong(fh, PG + PG / 2, PG / 2, 6);
        if (n0 || n1 || n2)
            fprintf(stderr, "rank 0: the file has %d/%d/%d wrong bytes in page 0 / page 1's halves after both "
                            "handles closed\n",
                    n0, n1, n2);
        bad += n0 || n1 || n2;
        CHECK(MPI_File_close(&fh));
        MPI_Info_free(&off);
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("regjoin_fail %s: %s\n", argv[2], bad ? "FAILED" : "ok");
        MPI_File_delete(path, MPI_INFO_NULL);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}
