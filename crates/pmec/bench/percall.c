/* percall: an ISA-L client that encodes one stripe per ec_encode_data call, as storage
 * systems with an ISA-L backend do, for comparing ISA-L builds and pmec's ISA-L shim.
 *
 * Built against libisal.so.2 (`-lisal`); which implementation runs is chosen at run time
 * with LD_LIBRARY_PATH, so the same unmodified binary measures Debian's ISA-L 2.30, ISA-L
 * 2.32.1 and pmec's shim. Beside each point it measures a plain move of the same bytes per
 * stripe (read the k data blocks, write the m parity blocks, no GF arithmetic), the physical
 * reference an encoder can be held against.
 *
 *   percall [--in-cache] [--seconds S] [--pool-mib N] [--seed N] K:M:BLOCK ...
 *
 * PERCALL_ENTRY=avx512|avx2|avx|sse|avx2_gfni|avx512_gfni in the environment calls ISA-L's
 * kernel of that name (`ec_encode_data_avx512`, ...) instead of the dispatched
 * `ec_encode_data`. The split-nibble kernels get split-nibble tables (c x {0..15}, then
 * c x {0x00, 0x10, .., 0xf0}, from `gf_mul`): what ISA-L runs on a host without GFNI (on a
 * GFNI host ISA-L 2.32's `ec_init_tables` and `gf_vect_mul_init` write GFNI tables, which those
 * kernels cannot read); the `_gfni` kernels get `ec_init_tables`' (on a GFNI host). A library
 * without that entry point is an error.
 *
 * For each point it prints one line:
 *   point=RS(K+M,K) block=B in_cache=0|1 encode_gbps=G move_gbps=G move_nt_gbps=G
 *   parity_crc=H
 * Throughput counts data bytes (k x block per stripe). Out of cache (default), stripes lie
 * contiguously (k data blocks, then m parity blocks) in a pool of N MiB, encoded in a random
 * order; in cache, the first 256 KiB of stripes are encoded over and over. parity_crc is a
 * checksum of the parity of the first 64 stripes, so runs on different libraries can be
 * compared byte for byte.
 */
#define _DEFAULT_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <immintrin.h>
#include <isa-l/erasure_code.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_K 128
#define MAX_M 32

struct point {
    int k, m, block;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The plain move of one stripe: every data vector read (xor-folded so no load is dead), the
 * fold written to each parity block. */
__attribute__((target("avx512f"))) static void move_avx512(unsigned char **d, unsigned char **p,
                                                            int k, int m, int len, int nt)
{
    for (int o = 0; o < len; o += 64) {
        __m512i acc = _mm512_loadu_si512((const void *)(d[0] + o));
        for (int i = 1; i < k; i++)
            acc = _mm512_xor_si512(acc, _mm512_loadu_si512((const void *)(d[i] + o)));
        for (int j = 0; j < m; j++) {
            if (nt)
                _mm512_stream_si512((void *)(p[j] + o), acc);
            else
                _mm512_storeu_si512((void *)(p[j] + o), acc);
        }
    }
    if (nt)
        _mm_sfence();
}

__attribute__((target("avx2"))) static void move_avx2(unsigned char **d, unsigned char **p, int k,
                                                      int m, int len, int nt)
{
    for (int o = 0; o < len; o += 32) {
        __m256i acc = _mm256_loadu_si256((const __m256i *)(d[0] + o));
        for (int i = 1; i < k; i++)
            acc = _mm256_xor_si256(acc, _mm256_loadu_si256((const __m256i *)(d[i] + o)));
        for (int j = 0; j < m; j++) {
            if (nt)
                _mm256_stream_si256((__m256i *)(p[j] + o), acc);
            else
                _mm256_storeu_si256((__m256i *)(p[j] + o), acc);
        }
    }
    if (nt)
        _mm_sfence();
}

static void plain_move(unsigned char **d, unsigned char **p, int k, int m, int len, int nt)
{
    if (__builtin_cpu_supports("avx512f"))
        move_avx512(d, p, k, m, len, nt);
    else
        move_avx2(d, p, k, m, len, nt);
}

enum mode { ENCODE, MOVE, MOVE_NT };

typedef void (*encode_fn)(int, int, int, unsigned char *, unsigned char **, unsigned char **);
/* The encoder called: ec_encode_data, or the kernel PERCALL_ENTRY names. */
static encode_fn encode = ec_encode_data;

/* Runs `mode` over the stripes in `order` (repeating the order) for at least `seconds`;
 * returns data GB/s. */
static double run(enum mode mode, const struct point *pt, unsigned char *pool, size_t stride,
                  const uint32_t *order, size_t n, double seconds, unsigned char *tables)
{
    unsigned char *d[MAX_K], *p[MAX_M];
    size_t done = 0;
    double t0 = now_s(), t = t0;
    do {
        for (size_t s = 0; s < n; s++) {
            unsigned char *base = pool + (size_t)order[s] * stride;
            for (int i = 0; i < pt->k; i++)
                d[i] = base + (size_t)i * pt->block;
            for (int j = 0; j < pt->m; j++)
                p[j] = base + (size_t)(pt->k + j) * pt->block;
            if (mode == ENCODE)
                encode(pt->block, pt->k, pt->m, tables, d, p);
            else
                plain_move(d, p, pt->k, pt->m, pt->block, mode == MOVE_NT);
        }
        done += n;
        t = now_s();
    } while (t - t0 < seconds);
    return (double)done * pt->k * pt->block / (t - t0) / 1e9;
}

static int parse_point(const char *s, struct point *pt)
{
    char tail;
    if (sscanf(s, "%d:%d:%d%c", &pt->k, &pt->m, &pt->block, &tail) != 3)
        return -1;
    if (pt->k < 1 || pt->k > MAX_K || pt->m < 1 || pt->m > MAX_M || pt->k + pt->m > 255)
        return -1;
    if (pt->block < 64 || pt->block % 64 != 0)
        return -1;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: percall [--in-cache] [--seconds S] [--pool-mib N] [--seed N] "
                    "K:M:BLOCK ...\n  (1 <= K <= %d, 1 <= M <= %d, BLOCK a multiple of 64)\n",
            MAX_K, MAX_M);
}

int main(int argc, char **argv)
{
    int in_cache = 0;
    double seconds = 0.5;
    size_t pool_mib = 1024;
    uint64_t seed = 1;
    int first = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
        const char *a = argv[first];
        if (strcmp(a, "--in-cache") == 0) {
            in_cache = 1;
            continue;
        }
        if (first + 1 >= argc) {
            usage();
            return 2;
        }
        char *end;
        const char *v = argv[++first];
        errno = 0;
        if (strcmp(a, "--seconds") == 0)
            seconds = strtod(v, &end);
        else if (strcmp(a, "--pool-mib") == 0)
            pool_mib = strtoull(v, &end, 10);
        else if (strcmp(a, "--seed") == 0)
            seed = strtoull(v, &end, 10);
        else {
            fprintf(stderr, "percall: unknown option %s\n", a);
            usage();
            return 2;
        }
        if (errno || *end || end == v || seconds <= 0 || pool_mib == 0) {
            fprintf(stderr, "percall: bad value '%s' for %s\n", v, a);
            return 2;
        }
    }
    if (first >= argc) {
        usage();
        return 2;
    }
    const char *entry = getenv("PERCALL_ENTRY");
    if (entry && *entry) {
        char name[64];
        snprintf(name, sizeof name, "ec_encode_data_%s", entry);
        encode = (encode_fn)dlsym(RTLD_DEFAULT, name);
        if (!encode) {
            fprintf(stderr, "percall: PERCALL_ENTRY=%s: this libisal.so.2 has no %s\n", entry,
                    name);
            return 2;
        }
    }
    size_t pool_bytes = pool_mib << 20;
    unsigned char *pool =
        mmap(NULL, pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pool == MAP_FAILED) {
        fprintf(stderr, "percall: cannot map a %zu MiB pool: %s\n", pool_mib, strerror(errno));
        return 1;
    }
    uint64_t fill = seed;
    for (size_t i = 0; i < pool_bytes; i += 8) {
        uint64_t v = rng_next(&fill);
        memcpy(pool + i, &v, 8);
    }
    for (int a = first; a < argc; a++) {
        struct point pt;
        if (parse_point(argv[a], &pt) != 0) {
            fprintf(stderr, "percall: bad point '%s' (want K:M:BLOCK)\n", argv[a]);
            usage();
            return 2;
        }
        size_t stride = (size_t)(pt.k + pt.m) * pt.block;
        size_t n = (in_cache ? (256u << 10) : pool_bytes) / stride;
        if (n == 0)
            n = 1;
        if (n * stride > pool_bytes) {
            fprintf(stderr, "percall: a %d:%d:%d stripe does not fit the pool\n", pt.k, pt.m,
                    pt.block);
            return 2;
        }
        uint32_t *order = malloc(n * sizeof *order);
        unsigned char *a_mat = malloc((size_t)(pt.k + pt.m) * pt.k);
        unsigned char *tables = malloc((size_t)32 * pt.k * pt.m);
        if (!order || !a_mat || !tables) {
            fprintf(stderr, "percall: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
        if (!in_cache) {
            uint64_t s = seed ^ ((uint64_t)pt.k << 32 | (uint64_t)pt.block);
            for (size_t i = n - 1; i > 0; i--) {
                size_t j = rng_next(&s) % (i + 1);
                uint32_t x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
        }
        gf_gen_cauchy1_matrix(a_mat, pt.k + pt.m, pt.k);
        if (entry && *entry && !strstr(entry, "gfni"))
            for (int i = 0; i < pt.k * pt.m; i++) {
                unsigned char c = a_mat[(size_t)pt.k * pt.k + i], *t = tables + (size_t)32 * i;
                for (int j = 0; j < 16; j++) {
                    t[j] = gf_mul(c, (unsigned char)j);
                    t[16 + j] = gf_mul(c, (unsigned char)(j << 4));
                }
            }
        else
            ec_init_tables(pt.k, pt.m, a_mat + (size_t)pt.k * pt.k, tables);

        /* Parity of the first stripes in pool order, checksummed (FNV-1a). */
        unsigned char *d[MAX_K], *p[MAX_M];
        uint64_t crc = 0xcbf29ce484222325ULL;
        size_t check = n < 64 ? n : 64;
        for (size_t s = 0; s < check; s++) {
            unsigned char *base = pool + s * stride;
            for (int i = 0; i < pt.k; i++)
                d[i] = base + (size_t)i * pt.block;
            for (int j = 0; j < pt.m; j++)
                p[j] = base + (size_t)(pt.k + j) * pt.block;
            encode(pt.block, pt.k, pt.m, tables, d, p);
            for (size_t b = 0; b < (size_t)pt.m * pt.block; b++) {
                crc ^= p[0][b];
                crc *= 0x100000001b3ULL;
            }
        }
        /* Warm up (page tables, library dispatch), then measure. */
        run(ENCODE, &pt, pool, stride, order, n < 256 ? n : 256, 0.01, tables);
        double enc = run(ENCODE, &pt, pool, stride, order, n, seconds, tables);
        double mv = run(MOVE, &pt, pool, stride, order, n, seconds, tables);
        double mvnt = run(MOVE_NT, &pt, pool, stride, order, n, seconds, tables);
        printf("point=RS(%d,%d) block=%d in_cache=%d encode_gbps=%.3f move_gbps=%.3f "
               "move_nt_gbps=%.3f parity_crc=%016llx\n",
               pt.k + pt.m, pt.k, pt.block, in_cache, enc, mv, mvnt, (unsigned long long)crc);
        fflush(stdout);
        free(order);
        free(a_mat);
        free(tables);
    }
    munmap(pool, pool_bytes);
    return 0;
}
