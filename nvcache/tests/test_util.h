/* Helpers shared by the MPI test programs: a checked-call macro and a deterministic filler.
   A file including this defines `static int rank;` (the macro prints it) before using CHECK. */
#ifndef NVC_TEST_UTIL_H
#define NVC_TEST_UTIL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
