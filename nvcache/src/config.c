/* config.c: NVCACHE_* environment variables and nvcache_* MPI_Info hints (documented in README.md). */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

struct nvc_config nvc_cfg;

uint64_t nvc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void vmsg(const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "nvcache[%d]: %s\n", nvc_rt.world_rank, line);
}

void nvc_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

void nvc_debug(const char *fmt, ...)
{
    if (!nvc_cfg.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

/* Parses "123", "4k", "16M", "2G"; returns -1 on error. */
static int64_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; end++; break;
    case 't': case 'T': v *= 1024.0 * 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return -1;
    return (int64_t)v;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcasecmp(s, "enable"))
        return *out = 1, 0;
    if (!strcasecmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off") || !strcasecmp(s, "disable"))
        return *out = 0, 0;
    return -1;
}

static int parse_choice(const char *s, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (!strcasecmp(s, names[i]))
            return *out = i, 0;
    return -1;
}

static const char *const reply_names[] = {"sync", "async", NULL};
static const char *const flush_names[] = {"close", "sync", "never", NULL};

static void env_bool(const char *name, int *dst)
{
    const char *s = getenv(name);
    if (s && *s && parse_bool(s, dst))
        nvc_msg("%s=%s is not a boolean (use 0/1); keeping %d", name, s, *dst);
}

static void env_bytes(const char *name, uint64_t *dst)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return;
    int64_t v = parse_bytes(s);
    if (v < 0)
        nvc_msg("%s=%s is not a byte count (e.g. 64M); keeping %llu", name, s, (unsigned long long)*dst);
    else
        *dst = (uint64_t)v;
}

static void env_choice(const char *name, const char *const *names, int *dst)
{
    const char *s = getenv(name);
    if (s && *s && parse_choice(s, names, dst))
        nvc_msg("%s=%s is not one of the accepted values; keeping %s", name, s, names[*dst]);
}

static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void nvc_config_load(int ranks_on_host)
{
    struct nvc_config *c = &nvc_cfg;
    memset(c, 0, sizeof *c);
    c->enabled = 1;
    const char *user = getenv("USER");
    snprintf(c->dir, sizeof c->dir, "/dev/shm/nvcache-%s", user && *user ? user : "user");
    c->capacity = 0;
    c->part_max = 16ull << 30;
    c->min_stripe = 1ull << 20;
    c->reply = NVC_REPLY_SYNC;
    c->flush = NVC_FLUSH_CLOSE;
    c->slot_bytes = 1ull << 20;
    c->direct = 1;
    c->recover = 1;

    env_bool("NVCACHE_ENABLE", &c->enabled);
    const char *d = getenv("NVCACHE_DIR");
    if (d && *d && strlen(d) > NVC_DIR_MAX) {
        /* Cut short, it would name another directory than the one nvcache-recover is told. */
        nvc_msg("NVCACHE_DIR is %zu bytes long, at most %d are supported; caching and recovery disabled", strlen(d),
                NVC_DIR_MAX);
        c->enabled = 0;
        c->recover = 0;
    } else if (d && *d)
        snprintf(c->dir, sizeof c->dir, "%s", d);
    env_bytes("NVCACHE_CAPACITY", &c->capacity);
    env_bytes("NVCACHE_PART_MAX", &c->part_max);
    env_bytes("NVCACHE_STRIPE", &c->min_stripe);
    env_bytes("NVCACHE_SLOT_BYTES", &c->slot_bytes);
    env_choice("NVCACHE_REPLY", reply_names, &c->reply);
    env_choice("NVCACHE_FLUSH", flush_names, &c->flush);
    env_bool("NVCACHE_STATS", &c->stats);
    env_bool("NVCACHE_VERBOSE", &c->verbose);
    env_bool("NVCACHE_DIRECT", &c->direct);
    env_bool("NVCACHE_RECOVER", &c->recover);
    const char *rpn = getenv("NVCACHE_RANKS_PER_NODE");
    if (rpn && *rpn) {
        char *end;
        long v = strtol(rpn, &end, 10);
        if (*end || v < 0)
            nvc_msg("NVCACHE_RANKS_PER_NODE=%s is not a non-negative integer; using one node per host", rpn);
        else
            c->ranks_per_node = (int)v;
    }
    if (c->min_stripe < NVC_PAGE || c->min_stripe % NVC_PAGE) {
        nvc_msg("NVCACHE_STRIPE=%llu must be a multiple of %u; using 1M", (unsigned long long)c->min_stripe, NVC_PAGE);
        c->min_stripe = 1ull << 20;
    }
    /* At most 1G: a request crossing hosts is one MPI message of a slot's data plus its header,
       whose count is an int (2G aborted the job at its first remote request). */
    if (c->slot_bytes < 64 * 1024 || c->slot_bytes > (1ull << 30) || c->slot_bytes % NVC_PAGE) {
        nvc_msg("NVCACHE_SLOT_BYTES must be 64K to 1G and a multiple of 4K; using 1M");
        c->slot_bytes = 1ull << 20;
    }

    /* Yielding MPI progress when the ranks on this host plus a manager thread exceed the cores:
       a rank polling MPICH must not keep a woken manager off its core. */
    int cpus = online_cpus();
    c->yield = ranks_on_host + 1 > cpus;
    /* A sched_yield loop before the futex sleep (futex wake-ups cost 20-60 us on this VM), unless
       the ranks alone exceed the cores. The managers sleep while idle and the loop yields, so they
       do not count here: with 2 ranks on 2 cores, counting them took every durable write with a
       collective MPI_File_sync from 3.9 to 13-25 us (latency bench, 4 KiB, 2 ranks). */
    c->spin_us = ranks_on_host > cpus ? 0 : 100;
    const char *y = getenv("NVCACHE_YIELD");
    if (y && *y && strcasecmp(y, "auto") && parse_bool(y, &c->yield))
        nvc_msg("NVCACHE_YIELD=%s is not auto/0/1; using %d", y, c->yield);
    const char *th = getenv("NVCACHE_THREADS"); /* read before MPI_Init (interpose.c); checked here */
    if (th && strcmp(th, "multiple") && strcmp(th, "asked"))
        nvc_msg("NVCACHE_THREADS=%s is not multiple/asked; ignored", th);
    const char *sp = getenv("NVCACHE_SPIN_US");
    if (sp && *sp && strcasecmp(sp, "auto")) {
        char *end;
        long v = strtol(sp, &end, 10);
        if (*end || v < 0)
            nvc_msg("NVCACHE_SPIN_US=%s is not a non-negative integer; using %d", sp, c->spin_us);
        else
            c->spin_us = (int)v;
    }
}

void nvc_config_file(MPI_Info info, const char *path, struct nvc_file_opts *o)
{
    o->enabled = nvc_cfg.enabled;
    o->reply = nvc_cfg.reply;
    o->flush = nvc_cfg.flush;
    o->min_stripe = nvc_cfg.min_stripe;
    o->striping_unit = 0;
    if (info == MPI_INFO_NULL)
        return;
    int nkeys = 0;
    if (PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return;
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[256];
        int flag = 0;
        if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            continue;
        int striping = !strcmp(key, "striping_unit");
        if (strncmp(key, "nvcache", 7) && !striping)
            continue; /* other hints belong to the MPI library */
        if (PMPI_Info_get(info, key, sizeof val - 1, val, &flag) != MPI_SUCCESS || !flag)
            continue;
        if (striping) {
            /* The MPI standard's striping unit: the application's access granularity. It is the
               part stripe, exactly: rounded up to a page, a block row of 460,800 bytes put the
               first 2 KiB of every other node's rows in the previous node's part, so each of
               their I/O calls made a request to another node's manager. Dirty pages are tracked
               in part coordinates, so a page may hold the end of one block and the start of the
               next; draining and recovery split runs where blocks end. The hint also goes on to
               the MPI library. */
            int64_t v = parse_bytes(val);
            if (v <= 0)
                nvc_msg("%s: bad value in hint striping_unit=%s ignored", path, val);
            else
                o->striping_unit = (uint64_t)v;
            continue;
        }
        int bad = 0;
        if (!strcmp(key, "nvcache") || !strcmp(key, "nvcache_enable"))
            bad = parse_bool(val, &o->enabled);
        else if (!strcmp(key, "nvcache_reply"))
            bad = parse_choice(val, reply_names, &o->reply);
        else if (!strcmp(key, "nvcache_flush"))
            bad = parse_choice(val, flush_names, &o->flush);
        else if (!strcmp(key, "nvcache_stripe")) {
            int64_t v = parse_bytes(val);
            if (v < NVC_PAGE || v % NVC_PAGE)
                bad = 1;
            else
                o->min_stripe = (uint64_t)v;
        } else {
            nvc_msg("%s: unknown hint %s=%s ignored (known: nvcache_enable, nvcache_reply, nvcache_flush, "
                    "nvcache_stripe)", path, key, val);
            continue;
        }
        if (bad)
            nvc_msg("%s: bad value in hint %s=%s ignored", path, key, val);
    }
}
