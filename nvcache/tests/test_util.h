/* Helpers shared by the MPI test programs: a checked-call macro and a deterministic filler.
   A file including this defines `static int rank;` (the macro prints it) before using CHECK. */
#ifndef NVC_TEST_UTIL_H
#define NVC_TEST_UTIL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aborts the job with a message naming the call, file, line and MPI error string. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS) {                                                                  \
            char s_[MPI_MAX_ERROR_STRING];                                                         \
            int l_;                                                                                \
            MPI_Error_string(rc_, s_, &l_);                                                        \
            fprintf(stderr, "rank %d: %s:%d %s failed: %s\n", rank, __FILE__, __LINE__, #call, s_); \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                          \
        }                                                                                          \
    } while (0)

/* Starts MPI, stores this process's rank in *rank and returns the job's size; when fewer than
   nargs arguments follow the program name, rank 0 prints "usage: USAGE" and the job aborts. */
static inline int test_start(int *argc, char ***argv, int *rank, int nargs, const char *usage)
{
    /* TEST_THREAD_LEVEL=single|funneled|serialized|multiple: MPI_Init_thread at that level (per
       rank in an MPMD launch), else MPI_Init. */
    const char *tl = getenv("TEST_THREAD_LEVEL");
    if (tl) {
        int want = !strcmp(tl, "multiple")     ? MPI_THREAD_MULTIPLE
                   : !strcmp(tl, "serialized") ? MPI_THREAD_SERIALIZED
                   : !strcmp(tl, "funneled")   ? MPI_THREAD_FUNNELED
                                               : MPI_THREAD_SINGLE;
        int provided;
        MPI_Init_thread(argc, argv, want, &provided);
    } else
        MPI_Init(argc, argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (*argc < nargs + 1) {
        if (*rank == 0)
            fprintf(stderr, "usage: %s\n", usage);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return size;
}

/* Fills b[0..n) with xorshift bytes that depend only on seed. */
static inline void fill(unsigned char *b, size_t n, int seed)
{
    uint32_t x = 2463534242u ^ (uint32_t)(seed * 7919 + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

/* Every rank of fh's communicator (rank of size) writes `blocks` blocks of blk bytes, block k at
   (k * size + rank) * blk filled with seed seed0 + rank * blocks + k; all sync, wait for each
   other and sync again, so every block is durable and visible; then each reads back the blocks
   of rank + 1 and compares them. Returns how many differ (each reported on stderr as "LABEL
   block K of rank R read back wrong"). */
static inline int write_read_neighbour(MPI_File fh, int rank, int size, int blocks, int blk, int seed0,
                                       const char *label)
{
    unsigned char *b = malloc((size_t)blk), *want = malloc((size_t)blk);
    if (!b || !want)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int k = 0; k < blocks; k++) {
        fill(b, (size_t)blk, seed0 + rank * blocks + k);
        CHECK(MPI_File_write_at(fh, ((MPI_Offset)k * size + rank) * blk, b, blk, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    CHECK(MPI_File_sync(fh));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(MPI_File_sync(fh));
    int peer = (rank + 1) % size, bad = 0;
    for (int k = 0; k < blocks; k++) {
        fill(want, (size_t)blk, seed0 + peer * blocks + k);
        CHECK(MPI_File_read_at(fh, ((MPI_Offset)k * size + peer) * blk, b, blk, MPI_BYTE, MPI_STATUS_IGNORE));
        if (memcmp(b, want, (size_t)blk) != 0) {
            fprintf(stderr, "rank %d: %s block %d of rank %d read back wrong\n", rank, label, k, peer);
            bad++;
        }
    }
    free(b);
    free(want);
    return bad;
}

#endif
