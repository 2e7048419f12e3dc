/* samestripe: the per-call cost of ec_encode_data on one RS(k+m,k) stripe that stays in L1,
 * encoded over and over: the best of BATCHES timed batches of 2000 calls, in nanoseconds per
 * call. Which libisal.so.2 runs is chosen with LD_LIBRARY_PATH (ISA-L or pmec's shim), as for
 * percall.c; docs/validation.md §5 uses it for blocks below 1 KiB and under callgrind (the
 * instructions of BATCHES = 10 minus those of BATCHES = 0, over 20 000 calls).
 *
 *   cc -O2 -o samestripe crates/pmec/bench/samestripe.c -lisal
 *   LD_LIBRARY_PATH=target/pmec-isal ./samestripe K M BLOCK [BATCHES]   (default 300)
 */
#define _DEFAULT_SOURCE
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PER_BATCH 2000

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: samestripe K M BLOCK [BATCHES]\n");
        return 2;
    }
    int k = atoi(argv[1]), m = atoi(argv[2]), len = atoi(argv[3]);
    int batches = argc > 4 ? atoi(argv[4]) : 300;
    if (k < 1 || k > 128 || m < 1 || m > 32 || len < 1 || len % 64 || batches < 0) {
        fprintf(stderr, "samestripe: need 1 <= K <= 128, 1 <= M <= 32, BLOCK a multiple of 64\n");
        return 2;
    }
    static unsigned char a[160 * 128];
    unsigned char *tables = malloc((size_t)32 * k * m), *data[128], *parity[32];
    gf_gen_cauchy1_matrix(a, k + m, k);
    ec_init_tables(k, m, a + k * k, tables);
    for (int i = 0; i < k; i++) {
        data[i] = aligned_alloc(64, len);
        for (int j = 0; j < len; j++)
            data[i][j] = (unsigned char)rand();
    }
    for (int i = 0; i < m; i++)
        parity[i] = aligned_alloc(64, len);
    double best = 1e30;
    for (int b = 0; b < batches; b++) {
        double t0 = now_s();
        for (int i = 0; i < PER_BATCH; i++)
            ec_encode_data(len, k, m, tables, data, parity);
        double t = (now_s() - t0) / PER_BATCH * 1e9;
        if (t < best)
            best = t;
    }
    printf("samestripe RS(%d,%d) block=%d best_ns_per_call=%.1f\n", k + m, k, len, batches ? best : 0.0);
    return 0;
}
