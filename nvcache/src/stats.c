/* stats.c: per-file operation counters, printed at MPI_Finalize when NVCACHE_STATS=1. */
#include "nvcache_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct nvc_stats *all_stats;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const op_names[NVC_ST_NOPS] = {"read", "write", "sync", "open", "close"};

struct nvc_stats *nvc_stats_get(const char *path)
{
    pthread_mutex_lock(&stats_lock);
    struct nvc_stats *s;
    for (s = all_stats; s; s = s->next)
        if (!strcmp(s->path, path))
            break;
    if (!s && (s = calloc(1, sizeof *s))) {
        snprintf(s->path, sizeof s->path, "%s", path);
        s->next = all_stats;
        all_stats = s;
    }
    pthread_mutex_unlock(&stats_lock);
    return s;
}

void nvc_stats_add(struct nvc_stats *s, int op, uint64_t bytes, uint64_t ns, int cached)
{
    if (!s)
        return;
    pthread_mutex_lock(&stats_lock);
    s->calls[op]++;
    s->bytes[op] += bytes;
    s->ns[op] += ns;
    if (op == NVC_ST_READ || op == NVC_ST_WRITE) {
        if (cached)
            s->cached_calls++;
        else
            s->bypass_calls++;
    }
    pthread_mutex_unlock(&stats_lock);
}

void nvc_stats_print(int rank)
{
    if (!nvc_cfg.stats)
        return;
    pthread_mutex_lock(&stats_lock);
    for (struct nvc_stats *s = all_stats; s; s = s->next) {
        uint64_t io = s->cached_calls + s->bypass_calls;
        fprintf(stderr, "nvcache-stats rank=%d file=%s hits=%llu passthrough=%llu hit_ratio=%.3f prefetch_bytes=%llu flush_bytes=%llu direct_bytes=%llu\n",
                rank, s->path, (unsigned long long)s->cached_calls, (unsigned long long)s->bypass_calls,
                io ? (double)s->cached_calls / (double)io : 0.0, (unsigned long long)s->prefetch_bytes,
                (unsigned long long)s->flush_bytes, (unsigned long long)s->direct_bytes);
        for (int op = 0; op < NVC_ST_NOPS; op++) {
            if (!s->calls[op])
                continue;
            fprintf(stderr, "nvcache-stats rank=%d file=%s op=%s calls=%llu bytes=%llu mean_us=%.2f\n", rank, s->path,
                    op_names[op], (unsigned long long)s->calls[op], (unsigned long long)s->bytes[op],
                    (double)s->ns[op] / 1e3 / (double)s->calls[op]);
        }
    }
    pthread_mutex_unlock(&stats_lock);
}
