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
