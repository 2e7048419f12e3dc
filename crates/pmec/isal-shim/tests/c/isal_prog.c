/* An ordinary ISA-L program (built against /usr/include/isa-l, linked with -lisal). It encodes,
 * erases, decodes with the textbook ISA-L flow, computes CRCs (which the shim forwards to the
 * system ISA-L) and prints digests of every output; run once as
 * is and once with LD_PRELOAD=libpmec_isal.so, the two outputs must be identical. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>
#include <isa-l/gf_vect_mul.h>

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return h;
}

static uint64_t rng = 88172645463325252ULL;
static unsigned char rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned char)rng; }

static int run_case(int k, int p, int len, int cauchy, int nerrs) {
    int m = k + p;
    unsigned char *a = malloc(m * k), *dm = malloc(k * k), *inv = malloc(k * k), *c = malloc(k * p);
    unsigned char *tbl = malloc(k * p * 32), *dtbl = malloc(k * p * 32);
    unsigned char **frag = malloc(sizeof(void *) * m), **rec = malloc(sizeof(void *) * p);
    unsigned char *src_in_err = calloc(m, 1), err_list[255], *recov[255];
    for (int i = 0; i < m; i++) { frag[i] = malloc(len); for (int j = 0; j < len; j++) frag[i][j] = rnd(); }
    for (int i = 0; i < p; i++) rec[i] = malloc(len);
    if (cauchy) gf_gen_cauchy1_matrix(a, m, k); else gf_gen_rs_matrix(a, m, k);
    ec_init_tables(k, p, &a[k * k], tbl);
    ec_encode_data(len, k, p, tbl, frag, &frag[k]);
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < p; i++) h = fnv(h, frag[k + i], len);
    /* erase nerrs distinct fragments */
    int ne = 0;
    while (ne < nerrs) { int e = rnd() % m; if (!src_in_err[e]) { src_in_err[e] = 1; err_list[ne++] = e; } }
    /* sort err_list */
    for (int i = 0; i < ne; i++) for (int j = i + 1; j < ne; j++) if (err_list[j] < err_list[i]) { unsigned char t = err_list[i]; err_list[i] = err_list[j]; err_list[j] = t; }
    for (int i = 0, r = 0; i < k; i++, r++) { while (src_in_err[r]) r++; recov[i] = frag[r]; memcpy(&dm[k * i], &a[k * r], k); }
    if (gf_invert_matrix(dm, inv, k) < 0) { printf("singular k=%d p=%d\n", k, p); return 1; }
    for (int i = 0; i < ne; i++) {
        if (err_list[i] < k) { for (int j = 0; j < k; j++) c[k * i + j] = inv[k * err_list[i] + j]; }
        else { for (int j = 0; j < k; j++) { unsigned char s = 0; for (int t = 0; t < k; t++) s ^= gf_mul(inv[t * k + j], a[k * err_list[i] + t]); c[k * i + j] = s; } }
    }
    ec_init_tables(k, ne, c, dtbl);
    ec_encode_data(len, k, ne, dtbl, recov, rec);
    int ok = 1;
    for (int i = 0; i < ne; i++) if (memcmp(rec[i], frag[err_list[i]], len)) ok = 0;
    /* incremental encode must equal full encode */
    for (int i = 0; i < p; i++) memset(rec[i], 0, len);
    for (int i = 0; i < k; i++) ec_encode_data_update(len, k, p, i, tbl, frag[i], rec);
    for (int i = 0; i < p; i++) if (memcmp(rec[i], frag[k + i], len)) ok = 0;
    printf("k=%d p=%d len=%d %s parity=%016llx decode=%s\n", k, p, len, cauchy ? "cauchy" : "rs",
           (unsigned long long)h, ok ? "ok" : "FAIL");
    for (int i = 0; i < m; i++) free(frag[i]);
    for (int i = 0; i < p; i++) free(rec[i]);
    free(a); free(dm); free(inv); free(c); free(tbl); free(dtbl); free(frag); free(rec); free(src_in_err);
    return ok ? 0 : 1;
}

int main(void) {
    int fails = 0;
    int ks[] = {1, 4, 8, 10, 24, 48, 100};
    int ps[] = {1, 2, 4, 4, 4, 4, 8};
    int lens[] = {64, 1000, 1024, 4096, 4097, 33, 8192};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++)
            fails += run_case(ks[i], ps[i], lens[j], (i + j) % 2 || ks[i] > 21, 1 + (i + j) % ps[i]);
    unsigned char t[32], t2[64], s[512], d[512];
    for (int i = 0; i < 512; i++) s[i] = rnd();
    uint64_t h = 1469598103934665603ULL;
    for (int c = 0; c < 256; c++) {
        gf_vect_mul_init((unsigned char)c, t);
        h = fnv(h, t, 32);
        h ^= gf_mul((unsigned char)c, 0x53) + 256u * gf_inv((unsigned char)c);
        if (gf_vect_mul(512, t, s, d) != 0) fails++;
        h = fnv(h, d, 512);
    }
    gf_vect_mul_init(7, t2); gf_vect_mul_init(9, t2 + 32);
    unsigned char *srcs[2] = {s, d};
    unsigned char out[512];
    gf_vect_dot_prod(512, 2, t2, srcs, out); h = fnv(h, out, 512);
    gf_vect_mad(512, 2, 1, t2, s, out); h = fnv(h, out, 512);
    printf("gf digest %016llx\n", (unsigned long long)h);
    /* functions the shim forwards to the system ISA-L */
    printf("crc32_ieee %08x crc32_iscsi %08x crc64_ecma_refl %016llx\n", crc32_ieee(0, s, 512),
           crc32_iscsi(s, 512, 0), (unsigned long long)crc64_ecma_refl(0, s, 512));
    void *f = dlsym(RTLD_DEFAULT, "pmec_isal_shim_calls");
    if (f) fprintf(stderr, "shim calls: %llu\n", (unsigned long long)((uint64_t (*)(void))f)());
    else fprintf(stderr, "shim calls: none (system ISA-L)\n");
    printf("failures %d\n", fails);
    return fails != 0;
}
