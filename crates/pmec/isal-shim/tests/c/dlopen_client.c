/* A client with a pluggable erasure-coding backend, as erasure-coding frameworks load ISA-L: it
 * links against nothing, dlopen()s "libisal.so.2" by name and looks the functions up in that
 * handle. It prints which file served ec_encode_data (dladdr), a parity digest and a CRC from
 * the same handle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*gen_fn)(unsigned char *, int, int);
typedef void (*init_fn)(int, int, unsigned char *, unsigned char *);
typedef void (*enc_fn)(int, int, int, unsigned char *, unsigned char **, unsigned char **);
typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, uint64_t);

int main(void)
{
    void *h = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    gen_fn gen = (gen_fn)dlsym(h, "gf_gen_rs_matrix");
    init_fn init = (init_fn)dlsym(h, "ec_init_tables");
    enc_fn enc = (enc_fn)dlsym(h, "ec_encode_data");
    crc_fn crc = (crc_fn)dlsym(h, "crc32_ieee");
    if (!gen || !init || !enc || !crc) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    Dl_info info;
    if (!dladdr((void *)enc, &info)) {
        fprintf(stderr, "dladdr failed\n");
        return 1;
    }
    enum { K = 8, P = 4, LEN = 1024 };
    unsigned char a[(K + P) * K], tbl[K * P * 32], *frag[K + P];
    uint64_t x = 88172645463325252ULL, d = 1469598103934665603ULL;
    for (int i = 0; i < K + P; i++) {
        frag[i] = malloc(LEN);
        for (int j = 0; j < LEN; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            frag[i][j] = (unsigned char)x;
        }
    }
    gen(a, K + P, K);
    init(K, P, &a[K * K], tbl);
    enc(LEN, K, P, tbl, frag, &frag[K]);
    for (int i = K; i < K + P; i++)
        for (int j = 0; j < LEN; j++)
            d = (d ^ frag[i][j]) * 0x100000001b3ULL;
    printf("ec_encode_data from %s\n", info.dli_fname);
    printf("parity %016llx crc32_ieee %08x\n", (unsigned long long)d, crc(0, frag[0], LEN));
    return 0;
}
