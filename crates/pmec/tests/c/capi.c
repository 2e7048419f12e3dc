/* The C API through include/pmec.h: encode, erase two shards, decode, verify, update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pmec.h"

int main(void) {
    enum { K = 6, M = 3, LEN = 4096 + 17 };
    pmec_codec *c = NULL;
    if (pmec_codec_new(K, M, PMEC_MATRIX_CAUCHY, &c) != PMEC_OK) { printf("new: %s\n", pmec_last_error()); return 1; }
    uint8_t *bufs[K + M], *orig[K + M];
    for (int i = 0; i < K + M; i++) {
        bufs[i] = malloc(LEN); orig[i] = malloc(LEN);
        for (int j = 0; j < LEN; j++) bufs[i][j] = (uint8_t)(i * 31 + j * 7);
    }
    if (pmec_encode(c, LEN, 1, (const uint8_t *const *)bufs, bufs + K, 2) != PMEC_OK) return 2;
    if (pmec_verify(c, LEN, (const uint8_t *const *)bufs) != 1) return 3;
    for (int i = 0; i < K + M; i++) memcpy(orig[i], bufs[i], LEN);
    int erased[2] = {1, 7};
    memset(bufs[1], 0, LEN); memset(bufs[7], 0, LEN);
    if (pmec_decode(c, LEN, bufs, erased, 2) != PMEC_OK) return 4;
    for (int i = 0; i < K + M; i++) if (memcmp(bufs[i], orig[i], LEN)) return 5;
    int four[4] = {0, 1, 2, 3};
    if (pmec_decode(c, LEN, bufs, four, 4) != PMEC_ETOOMANY) return 6;
    uint8_t *nw = malloc(LEN); memset(nw, 0x5a, LEN);
    if (pmec_update(c, LEN, 2, bufs[2], nw, bufs + K) != PMEC_OK) return 7;
    memcpy(bufs[2], nw, LEN);
    if (pmec_verify(c, LEN, (const uint8_t *const *)bufs) != 1) return 8;
    /* Negative counts and indices are invalid parameters (once reported as null pointers). */
    int neg[1] = {-1};
    if (pmec_decode(c, LEN, bufs, neg, 1) != PMEC_EINVAL) return 10;
    if (pmec_decode(c, LEN, bufs, erased, -1) != PMEC_EINVAL) return 11;
    if (pmec_update(c, LEN, -1, bufs[2], nw, bufs + K) != PMEC_EINVAL) return 12;
    if (!strstr(pmec_last_error(), "index -1")) return 13;
    pmec_codec *bad = NULL;
    if (pmec_codec_new(0, 3, PMEC_MATRIX_CAUCHY, &bad) != PMEC_EINVAL || bad) return 9;
    printf("capi ok (%s) last error: %s\n", pmec_isa_name(), pmec_last_error());
    pmec_codec_free(c);
    for (int i = 0; i < K + M; i++) { free(bufs[i]); free(orig[i]); }
    free(nw);
    return 0;
}
