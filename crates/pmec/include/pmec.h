/* pmec: erasure coding for persistent memory (RS + LRC over GF(2^8), poly 0x11d; matrices
 * identical to ISA-L's; SIMD kernels with DIALGA prefetch scheduling).
 * Link with -lpmec (libpmec.so or libpmec.a; the static library also needs -lpthread -ldl -lm).
 * All functions return 0 (PMEC_OK) on success or a negative PMEC_E* code; pmec_last_error()
 * describes the calling thread's last failure.
 *
 * Threads: a handle may be used by any number of threads at once (encode, decode, update,
 * verify); pmec_*_free must not run while another call uses the handle, and freeing a handle
 * twice is undefined, as for free(3).
 * Buffers: every block is len bytes; the blocks a call writes (parity, erased shards) must not
 * overlap each other or any block it reads, and no pointer may appear twice in a call's arrays
 * (not checked: the result is undefined, as with ISA-L). Pointer arrays may be NULL only when
 * they hold no pointers (m = 0 parity, stripes = 0). A len above PTRDIFF_MAX, or a stripe
 * count whose pointer arrays could not fit in memory, is PMEC_EINVAL. */
#ifndef PMEC_H
#define PMEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMEC_OK 0
#define PMEC_EINVAL (-1)   /* invalid parameter */
#define PMEC_ELEN (-2)     /* length/count mismatch */
#define PMEC_ETOOMANY (-3) /* too many erasures */
#define PMEC_ENOTMDS (-4)  /* matrix not MDS / singular */
#define PMEC_EISA (-5)     /* instruction set unavailable */
#define PMEC_EOTHER (-6)
#define PMEC_ENULL (-7)    /* null pointer argument */

#define PMEC_MATRIX_CAUCHY 0
#define PMEC_MATRIX_VANDERMONDE 1

typedef struct PmecCodec pmec_codec;
typedef struct PmecLrc pmec_lrc;

/* Valid until the next pmec call on this thread; a static string when called while the
 * thread's storage is being destroyed (pthread key destructors, atexit handlers). */
const char *pmec_last_error(void);
const char *pmec_isa_name(void);

/* RS(k + m, k): shards 0..k-1 data, k..k+m-1 parity. */
int pmec_codec_new(int k, int m, int matrix, pmec_codec **out);
void pmec_codec_free(pmec_codec *c);
/* data: stripes*k pointers, parity: stripes*m pointers (stripe-major), all blocks len bytes.
 * threads > 1 splits the batch into contiguous shares of stripes over worker threads (capped at
 * the cores available and at the stripe count; persistent, process-wide, started on first use;
 * a forked child starts its own); threads <= 1 encodes on the calling thread. The workers serve
 * one call at a time: a call made while another thread's call uses them encodes on its own
 * thread alone (same result). Prefetching runs across stripe boundaries. stripes = 0 or
 * len = 0 does nothing. */
int pmec_encode(const pmec_codec *c, size_t len, size_t stripes, const uint8_t *const *data,
                uint8_t *const *parity, int threads);
/* shards: k+m pointers; the nerased listed shards (distinct indices in 0..k+m-1, at most m)
 * are rebuilt in place from the others. */
int pmec_decode(const pmec_codec *c, size_t len, uint8_t *const *shards, const int *erased,
                int nerased);
/* parity ^= column(index) x (old ^ new) */
int pmec_update(const pmec_codec *c, size_t len, int index, const uint8_t *old_data,
                const uint8_t *new_data, uint8_t *const *parity);
/* 1 = consistent, 0 = not, < 0 error */
int pmec_verify(const pmec_codec *c, size_t len, const uint8_t *const *shards);

/* LRC(k, m, l): data 0..k-1, global parity k..k+m-1, local parity k+m..k+m+l-1. */
int pmec_lrc_new(int k, int m, int l, pmec_lrc **out);
void pmec_lrc_free(pmec_lrc *c);
int pmec_lrc_encode(const pmec_lrc *c, size_t len, const uint8_t *const *data, uint8_t *const *parity);
/* returns the number of shards repaired from their local group (>= 0), or < 0 on error */
int pmec_lrc_decode(const pmec_lrc *c, size_t len, uint8_t *const *shards, const int *erased,
                    int nerased);

#ifdef __cplusplus
}
#endif
#endif /* PMEC_H */
