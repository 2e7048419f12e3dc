/* interpose.c: the PMPI interposer.
 *
 * Every wrapped call is one line in an X-macro list below; the wrapper bodies are generated from
 * one pattern per signature class. route() is the single place that decides whether a call is
 * served by the cache (cache.c) or forwarded unchanged to the MPI library. Calls nvcache does not
 * cache (shared/ordered pointers, split collectives) first move the file to bypass mode (its dirty
 * data is written to the real file) and then pass through. Works by LD_PRELOAD or by linking
 * libnvcache before libmpi. Also sets up the runtime (nodes, mailboxes, managers) in MPI_Init.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

struct nvc_runtime nvc_rt = {
    .slot_lock = PTHREAD_MUTEX_INITIALIZER, .world_group = MPI_GROUP_NULL, .self_dup = MPI_COMM_NULL};
static int pass_blocking; /* nonblocking file calls passed through run blocking (pass_eager) */

/* ------------------------------------------------------------------ runtime */

static void mailbox_name(char *buf, size_t n, int node)
{
    snprintf(buf, n, "/nvcache-%016" PRIx64 "-n%d", nvc_rt.jobid, node);
}

struct nvc_slot *nvc_my_slot(int node)
{
    if (!nvc_rt.mbox[node])
        return nvc_remote_slot(node); /* another host's node: the request travels over MPI */
    struct nvc_slot *s = nvc_mailbox_slot(nvc_rt.mbox[node], (uint32_t)nvc_rt.rank_slot[nvc_rt.world_rank]);
    nvc_mailbox_settle(s); /* a request posted without waiting (part removal at close) */
    return s;
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The host's first rank, in MPI_Init (NVCACHE_RECOVER on, NVCACHE_DIR a writable directory):
 * writes back what jobs that died left in NVCACHE_DIR (every node of the host keeps its parts
 * there), before any rank of this job opens a file, so that a job restarted after a crash reads
 * what the crashed job wrote and synced, as it would from the file under plain MPI-IO, rather than
 * the file's older bytes. The other ranks wait for it (the agreement that ends runtime_init, or a
 * barrier when caching is off). Parts of jobs that still run are left alone, and parts whose
 * file was replaced or that a later job marked are kept, as nvcache-recover keeps them. */
static void recover_at_start(void)
{
    if (nvc_rt.host_rank != 0 || !nvc_cfg.recover || access(nvc_cfg.dir, W_OK | X_OK) != 0)
        return;
    char who[64], prefix[80];
    snprintf(who, sizeof who, "nvcache[%d]: MPI_Init", nvc_rt.world_rank);
    snprintf(prefix, sizeof prefix, "%s: ", who);
    struct nvc_recover_opts o = {.out = stderr, .out_prefix = prefix, .who = who};
    struct nvc_recover_result res;
    uint64_t t0 = nvc_now_ns();
    nvc_recover_dir(nvc_cfg.dir, &o, &res);
    if (res.recovered || res.kept)
        nvc_msg("wrote back %d file(s) that jobs which died left in %s (%.2f s)%s", res.recovered, nvc_cfg.dir,
                (double)(nvc_now_ns() - t0) / 1e9,
                res.kept ? "; kept the parts of the others (see above; nvcache-recover --force writes them)" : "");
}

/* Called once after the real MPI_Init: nodes, mailboxes and the node's cache manager. */
static void runtime_init(void)
{
    struct nvc_runtime *rt = &nvc_rt;
    rt->job_lock = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rt->world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &rt->world_size);
    /* Also with caching off: the job names itself the last writer of the files it opens to write. */
    if (rt->world_rank == 0)
        rt->jobid = ((uint64_t)getpid() << 24) ^ nvc_now_ns();
    PMPI_Bcast(&rt->jobid, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Comm host;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    PMPI_Comm_rank(host, &rt->host_rank);
    PMPI_Comm_size(host, &rt->host_size);
    nvc_config_load(rt->host_size);
    nvc_progress_set_yield(nvc_cfg.yield);
    /* Settings that decide which collectives a rank makes, agreed before any is made: each rank
       reads its own environment, and a launcher may give ranks different ones (`mpiexec -n 1 env
       X=a prog : -n 1 env X=b prog`). Differing, they hung the job: a rank with caching off left
       MPI_Init while the others went on to its collectives; only ranks with NVCACHE_RECOVER on
       waited in a barrier; a rank whose application asked for MPI_THREAD_MULTIPLE opened files
       with other collectives than the rest; and mailboxes were mapped with another process's
       slot size (SIGBUS). So: caching is off when any rank has it off; all wait for the
       recovery when any rank recovers; files are opened as under MPI_THREAD_MULTIPLE when any
       rank asked for it; every rank uses rank 0's NVCACHE_SLOT_BYTES. */
    int64_t agree[7] = {nvc_cfg.enabled,
                        -(int64_t)nvc_cfg.enabled,
                        -(int64_t)nvc_cfg.recover,
                        -(int64_t)rt->app_thread_level,
                        (int64_t)nvc_cfg.slot_bytes,
                        -(int64_t)nvc_cfg.slot_bytes,
                        rt->world_rank == 0 ? (int64_t)nvc_cfg.slot_bytes : INT64_MAX};
    PMPI_Allreduce(MPI_IN_PLACE, agree, 7, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    if (rt->world_rank == 0 && agree[0] != -agree[1])
        nvc_msg("NVCACHE_ENABLE differs across the ranks; caching is off for the whole job");
    if (rt->world_rank == 0 && agree[4] != -agree[5])
        nvc_msg("NVCACHE_SLOT_BYTES differs across the ranks (%lld to %lld); every rank uses rank 0's",
                (long long)agree[4], (long long)-agree[5]);
    nvc_cfg.enabled = (int)agree[0];
    int any_recovers = agree[2] < 0;
    rt->job_thread_level = (int)-agree[3];
    nvc_cfg.slot_bytes = (uint64_t)agree[6];
    if (!nvc_cfg.enabled) {
        /* Switched off, nvcache still writes back what dead jobs left, as a switched-on job
           does: this job's plain MPI-IO then reads their data, and what it writes is not
           overwritten by their older bytes at a later job's recovery (a job that caches marks
           the dead jobs' parts of the files it opens; this one opens none through nvcache). */
        if (nvc_cfg.recover)
            recover_at_start();
        if (any_recovers)
            PMPI_Barrier(MPI_COMM_WORLD);
        PMPI_Comm_free(&host);
        return;
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &rt->world_group);
    if (PMPI_Comm_dup(MPI_COMM_SELF, &rt->self_dup) != MPI_SUCCESS)
        rt->self_dup = MPI_COMM_NULL;
    int host_leader = rt->world_rank;
    PMPI_Bcast(&host_leader, 1, MPI_INT, 0, host);
    int is_host_leader = rt->host_rank == 0, nhosts = 0;
    PMPI_Allreduce(&is_host_leader, &nhosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rt->multi_host = nhosts > 1;
    rt->nhosts = nhosts;
    int threads = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&threads);

    /* Node = (host, host_rank / NVCACHE_RANKS_PER_NODE); numbered globally in sorted order. */
    int n = rt->world_size;
    int mine[3] = {host_leader, nvc_cfg.ranks_per_node ? rt->host_rank / nvc_cfg.ranks_per_node : 0, rt->host_rank};
    int *all = malloc(sizeof(int) * 3 * (size_t)n), *keys = malloc(sizeof(int) * 2 * (size_t)n);
    rt->rank_node = malloc(sizeof(int) * (size_t)n);
    rt->rank_slot = malloc(sizeof(int) * (size_t)n);
    if (!all || !keys || !rt->rank_node || !rt->rank_slot) {
        nvc_msg("out of memory in MPI_Init; caching disabled");
        free(all);
        free(keys);
        PMPI_Comm_free(&host);
        return;
    }
    PMPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) {
        keys[2 * r] = all[3 * r];
        keys[2 * r + 1] = all[3 * r + 1];
    }
    qsort(keys, (size_t)n, 2 * sizeof(int), cmp_pair);
    int nn = 0;
    for (int r = 0; r < n; r++)
        if (!nn || cmp_pair(&keys[2 * r], &keys[2 * (nn - 1)]))
            memmove(&keys[2 * nn++], &keys[2 * r], 2 * sizeof(int));
    rt->nnodes = nn;
    int *leader = malloc(sizeof(int) * (size_t)nn);
    rt->mbox = calloc((size_t)nn, sizeof *rt->mbox);
    rt->node_agent = malloc(sizeof(int) * (size_t)nn);
    for (int k = 0; k < nn && rt->node_agent; k++)
        rt->node_agent[k] = keys[2 * k]; /* the first rank of the node's host */
    for (int r = 0; r < n; r++) {
        for (int k = 0; k < nn; k++)
            if (keys[2 * k] == all[3 * r] && keys[2 * k + 1] == all[3 * r + 1]) {
                rt->rank_node[r] = k;
                break;
            }
        rt->rank_slot[r] = all[3 * r + 2];
    }
    for (int k = 0; k < nn; k++)
        leader[k] = -1;
    for (int r = n - 1; r >= 0; r--)
        leader[rt->rank_node[r]] = r;
    rt->node = rt->rank_node[rt->world_rank];
    rt->is_leader = leader[rt->node] == rt->world_rank;

    char name[128];
    int ok = rt->node_agent != NULL;
    /* Another host's requests come through one more slot per mailbox: its agent's. */
    uint32_t nslots = (uint32_t)rt->host_size + (rt->multi_host ? 1u : 0u);
    if (rt->multi_host && threads < MPI_THREAD_MULTIPLE) {
        if (rt->world_rank == 0)
            nvc_msg("job spans %d hosts, but MPI gave thread level %d, not MPI_THREAD_MULTIPLE (needed by the agent that "
                    "serves other hosts; set NVCACHE_THREADS=multiple if the launcher's environment did not show the "
                    "hosts); files use plain MPI-IO",
                    nhosts, threads);
        ok = 0;
    }
    if (rt->is_leader && ok) {
        int e = nvc_mkdirs(nvc_cfg.dir);
        if (e || access(nvc_cfg.dir, W_OK | X_OK) != 0) {
            nvc_msg("NVCACHE_DIR %s is not a writable directory (%s); caching disabled, files use plain MPI-IO",
                    nvc_cfg.dir, strerror(e ? -e : errno));
            ok = 0;
        }
    }
    /* Also when caching cannot be set up: this job's plain MPI-IO must read the dead jobs' data too. */
    recover_at_start();
    if (rt->is_leader && ok) {
        mailbox_name(name, sizeof name, rt->node);
        rt->mbox[rt->node] = nvc_mailbox_map(name, nslots, nvc_cfg.slot_bytes, 1);
        ok = rt->mbox[rt->node] && nvc_manager_start(rt->mbox[rt->node], rt->jobid) == 0;
    }
    PMPI_Barrier(host);
    /* Before any part of this job exists: recovery tells a running job by this lock, which every
       process holds until it ends (without it, by the mailboxes' creator PIDs). */
    if (ok)
        rt->job_lock = nvc_job_lock_hold(nvc_cfg.dir, rt->jobid);
    for (int k = 0; k < nn && ok; k++) {
        if (keys[2 * k] != host_leader || rt->mbox[k])
            continue; /* other host, or my own (already mapped) */
        mailbox_name(name, sizeof name, k);
        rt->mbox[k] = nvc_mailbox_map(name, nslots, nvc_cfg.slot_bytes, 0);
        ok = rt->mbox[k] != NULL;
    }
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && rt->multi_host) {
        ok = nvc_remote_start() == 0;
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!ok)
            nvc_remote_stop();
#ifdef OMPI_MAJOR_VERSION
        pass_blocking = ok; /* see pass_eager */
#endif
    }
    rt->ready = ok;
    if (!ok && rt->world_rank == 0)
        nvc_msg("cache runtime setup failed (see above); all files use plain MPI-IO");
    if (!ok && rt->is_leader && rt->mbox[rt->node]) {
        nvc_manager_stop();
        mailbox_name(name, sizeof name, rt->node);
        nvc_mailbox_unmap(rt->mbox[rt->node], name, 1);
        rt->mbox[rt->node] = NULL;
    }
    nvc_debug("node %d of %d, leader %d, slot %d, yield %d, spin %d us", rt->node, nn, rt->is_leader,
              rt->rank_slot[rt->world_rank], nvc_cfg.yield, nvc_cfg.spin_us);
    free(leader);
    free(all);
    free(keys);
    PMPI_Comm_free(&host);
}

/* Called before the real MPI_Finalize. */
static void runtime_fini(void)
{
    struct nvc_runtime *rt = &nvc_rt;
    nvc_stats_print(rt->world_rank);
    if (rt->world_group != MPI_GROUP_NULL)
        PMPI_Group_free(&rt->world_group);
    if (!rt->mbox)
        return;
    for (int k = 0; k < rt->nnodes; k++)
        if (rt->mbox[k] && rt->ready)
            nvc_my_slot(k); /* collects replies still outstanding */
    PMPI_Barrier(MPI_COMM_WORLD); /* nobody uses a manager any more */
    if (rt->multi_host && rt->ready)
        nvc_remote_stop();
    if (rt->is_leader && rt->mbox[rt->node] && rt->ready)
        nvc_manager_stop();
    char name[128];
    for (int k = 0; k < rt->nnodes; k++) {
        if (!rt->mbox[k])
            continue;
        mailbox_name(name, sizeof name, k);
        nvc_mailbox_unmap(rt->mbox[k], name, k == rt->node && rt->is_leader);
    }
    free(rt->mbox);
    rt->mbox = NULL;
    /* Every file is closed and every part gone (the barrier above): the job's lock is done with. */
    if (rt->job_lock >= 0) {
        close(rt->job_lock);
        rt->job_lock = -1;
        if (rt->is_leader)
            nvc_job_lock_remove(nvc_cfg.dir, rt->jobid);
    }
    free(rt->node_agent);
    rt->node_agent = NULL;
    rt->ready = 0;
}

/* The thread level to ask MPI for. Managers never call MPI, but the agent that serves other
 * hosts (remote.c) does, beside the application: MPI_THREAD_MULTIPLE when the job spans hosts.
 * That is known only after MPI_Init, so it is read from the launcher's environment (MPICH's
 * Hydra: MPI_LOCALNRANKS < PMI_SIZE; Open MPI: OMPI_COMM_WORLD_LOCAL_SIZE < OMPI_COMM_WORLD_SIZE;
 * Slurm: SLURM_JOB_NUM_NODES > 1), or set with NVCACHE_THREADS=multiple|asked. */
static int thread_level(int asked)
{
    const char *e = getenv("NVCACHE_THREADS"), *en = getenv("NVCACHE_ENABLE");
    if (asked >= MPI_THREAD_MULTIPLE || (en && !strcmp(en, "0")))
        return asked;
    if (e && !strcmp(e, "multiple"))
        return MPI_THREAD_MULTIPLE;
    if (e && !strcmp(e, "asked"))
        return asked;
    const char *pairs[][2] = {{"MPI_LOCALNRANKS", "PMI_SIZE"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *l = getenv(pairs[i][0]), *w = getenv(pairs[i][1]);
        if (l && w && atol(l) < atol(w))
            return MPI_THREAD_MULTIPLE;
    }
    const char *nodes = getenv("SLURM_JOB_NUM_NODES");
    return nodes && atol(nodes) > 1 ? MPI_THREAD_MULTIPLE : asked;
}

/** MPI_Init: real init (at MPI_THREAD_MULTIPLE when the job spans hosts), then the nvcache runtime. */
int MPI_Init(int *argc, char ***argv)
{
    int level = thread_level(MPI_THREAD_SINGLE), provided;
    int rc = level == MPI_THREAD_SINGLE ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, level, &provided);
    nvc_rt.app_thread_level = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS)
        runtime_init();
    return rc;
}

/** MPI_Init_thread: the level the application asked for, or MPI_THREAD_MULTIPLE when the job spans
 *  hosts; *provided reports what MPI gave (at least what was asked for, where MPI has it). */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, thread_level(required), provided);
    nvc_rt.app_thread_level = required < *provided ? required : *provided;
    if (rc == MPI_SUCCESS)
        runtime_init();
    return rc;
}

/** MPI_Finalize: prints statistics, stops the manager, then finalizes MPI. */
int MPI_Finalize(void)
{
    if (nvc_rt.ready)
        nvc_close_left_open();
    runtime_fini();
    return PMPI_Finalize();
}

/* ------------------------------------------------------------------ routing */

/* The one decision point: returns the cache state that serves this call, or NULL to forward it. */
static struct nvc_file *route(MPI_File fh, int write)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    if (!f || f->mode == NVC_MODE_PASS)
        return NULL;
    if (write ? (f->amode & MPI_MODE_RDONLY) : (f->amode & MPI_MODE_WRONLY))
        return NULL; /* the MPI library reports the access-mode error */
    return f;
}

/* Generalized request for eagerly completed nonblocking operations. */
struct greq {
    MPI_Count bytes;
};

static int greq_query(void *extra, MPI_Status *status)
{
    struct greq *g = extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, g->bytes);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    free(extra);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* The request of an operation already done (rc, status st): a completed generalized request that
 * reports st's byte count to any Wait/Test, or MPI_REQUEST_NULL with the error. */
static int completed(int rc, MPI_Status *st, MPI_Request *request)
{
    if (rc != MPI_SUCCESS) {
        *request = MPI_REQUEST_NULL;
        return rc;
    }
    struct greq *g = malloc(sizeof *g);
    if (!g)
        return MPI_ERR_NO_MEM;
    PMPI_Get_elements_x(st, MPI_BYTE, &g->bytes);
    rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g, request);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Grequest_complete(*request);
    return rc;
}

/* Performs the operation now and returns a completed generalized request (any Wait/Test works). */
static int eager(struct nvc_file *f, int write, MPI_Offset off, int use_fp, const void *buf, MPI_Count count,
                 MPI_Datatype dt, MPI_Request *request)
{
    MPI_Status st;
    int rc = nvc_io(f, write, off, use_fp, (void *)buf, count, dt, &st);
    return completed(rc, &st, request);
}

/* Open MPI 4.1's OMPIO advances nonblocking file I/O from its progress callback, which is not
 * thread-safe: while a second thread calls MPI (nvcache's agent, in jobs across hosts), a plain MPI
 * program (no nvcache) crashed in MPI_Waitall on MPI_File_iwrite_at / iwrite_at_all in 4 of 5 runs
 * here, and the passed-through split collective MPI_File_read_all_begin/end of `patterns split`
 * crashed in its end in 3 of 30 runs across 4 emulated hosts. So there the nonblocking
 * calls nvcache passes through run as their blocking counterparts and return a completed request
 * (as cached files' do; a nonblocking collective then completes inside the call, which every rank
 * makes in the same order anyway), and split collectives complete in their begin (split_keep):
 * pass_blocking, set in MPI_Init. */
static int pass_eager(MPI_File fh, int write, int all, MPI_Offset off, int use_fp, const void *buf, MPI_Count count,
                      MPI_Datatype dt, MPI_Request *request)
{
    MPI_Status st;
    void *b = (void *)buf;
    int n = (int)count, rc; /* only MPI 3.1 (Open MPI 4.1) gets here: counts are ints */
    if (use_fp)
        rc = write ? (all ? PMPI_File_write_all(fh, b, n, dt, &st) : PMPI_File_write(fh, b, n, dt, &st))
                   : (all ? PMPI_File_read_all(fh, b, n, dt, &st) : PMPI_File_read(fh, b, n, dt, &st));
    else
        rc = write ? (all ? PMPI_File_write_at_all(fh, off, b, n, dt, &st) : PMPI_File_write_at(fh, off, b, n, dt, &st))
                   : (all ? PMPI_File_read_at_all(fh, off, b, n, dt, &st) : PMPI_File_read_at(fh, off, b, n, dt, &st));
    return completed(rc, &st, request);
}

/* Split collectives under pass_blocking: the begin runs the whole blocking operation (as ROMIO
 * does anyway; MPI 4.1 section 14.4.5 lets an implementation do the work in either call) and its
 * result waits here for the end. A handle has at most one split collective outstanding. */
struct split_done {
    MPI_File fh;
    int rc;
    MPI_Status st;
    struct split_done *next;
};
static struct split_done *split_done;
static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keeps the result (rc, st) of fh's begin for its end; 0, or -1 without memory. */
static int split_push(MPI_File fh, int rc, const MPI_Status *st)
{
    struct split_done *d = malloc(sizeof *d);
    if (!d)
        return -1;
    d->fh = fh;
    d->rc = rc;
    d->st = *st;
    pthread_mutex_lock(&split_lock);
    d->next = split_done;
    split_done = d;
    pthread_mutex_unlock(&split_lock);
    return 0;
}

/* Keeps the result (rc, st) of fh's begin for its end; returns rc. */
static int split_keep(MPI_File fh, int rc, const MPI_Status *st)
{
    if (rc != MPI_SUCCESS)
        return rc; /* no split collective started: its end reports that */
    return split_push(fh, rc, st) ? MPI_ERR_NO_MEM : rc;
}

/* A split collective's begin on f failed with rc, an error of the cache's own (its collective
 * ran with no data from this rank): keeps rc for the end, gives it to the handler, returns it. */
static int split_fail(struct nvc_file *f, int rc)
{
    MPI_Status st;
    PMPI_Status_set_elements_x(&st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(&st, 0);
    split_push(f->real, rc, &st); /* without memory the end goes to MPI-IO, which fails it */
    return nvc_raise(f, rc);
}

/* Takes fh's kept result, if any (1), and removes it; status may be MPI_STATUS_IGNORE, and
 * status and rc may be NULL (dropping a result, as close does). */
static int split_take(MPI_File fh, MPI_Status *status, int *rc)
{
    pthread_mutex_lock(&split_lock);
    struct split_done **p = &split_done;
    while (*p && (*p)->fh != fh)
        p = &(*p)->next;
    struct split_done *d = *p;
    if (d)
        *p = d->next;
    pthread_mutex_unlock(&split_lock);
    if (!d)
        return 0;
    if (status && status != MPI_STATUS_IGNORE)
        *status = d->st;
    if (rc)
        *rc = d->rc;
    free(d);
    return 1;
}

/* ------------------------------------------------------------------ X-macro lists */

/* Explicit-offset blocking data access: X(name, buffer type, count type, is_write) */
#define NVC_IO_AT_CALLS(X)                         \
    X(MPI_File_read_at, void *, int, 0)            \
    X(MPI_File_read_at_all, void *, int, 0)        \
    X(MPI_File_write_at, const void *, int, 1)     \
    X(MPI_File_write_at_all, const void *, int, 1)
#define NVC_IO_AT_LARGE_CALLS(X)                           \
    X(MPI_File_read_at_c, void *, MPI_Count, 0)            \
    X(MPI_File_read_at_all_c, void *, MPI_Count, 0)        \
    X(MPI_File_write_at_c, const void *, MPI_Count, 1)     \
    X(MPI_File_write_at_all_c, const void *, MPI_Count, 1)

/* Individual-pointer blocking data access. */
#define NVC_IO_FP_CALLS(X)                      \
    X(MPI_File_read, void *, int, 0)            \
    X(MPI_File_read_all, void *, int, 0)        \
    X(MPI_File_write, const void *, int, 1)     \
    X(MPI_File_write_all, const void *, int, 1)
#define NVC_IO_FP_LARGE_CALLS(X)                        \
    X(MPI_File_read_c, void *, MPI_Count, 0)            \
    X(MPI_File_read_all_c, void *, MPI_Count, 0)        \
    X(MPI_File_write_c, const void *, MPI_Count, 1)     \
    X(MPI_File_write_all_c, const void *, MPI_Count, 1)

/* Explicit-offset nonblocking data access: X(name, buffer type, count type, is_write, is_collective) */
#define NVC_IIO_AT_CALLS(X)                            \
    X(MPI_File_iread_at, void *, int, 0, 0)            \
    X(MPI_File_iread_at_all, void *, int, 0, 1)        \
    X(MPI_File_iwrite_at, const void *, int, 1, 0)     \
    X(MPI_File_iwrite_at_all, const void *, int, 1, 1)
#define NVC_IIO_AT_LARGE_CALLS(X)                              \
    X(MPI_File_iread_at_c, void *, MPI_Count, 0, 0)            \
    X(MPI_File_iread_at_all_c, void *, MPI_Count, 0, 1)        \
    X(MPI_File_iwrite_at_c, const void *, MPI_Count, 1, 0)     \
    X(MPI_File_iwrite_at_all_c, const void *, MPI_Count, 1, 1)

/* Individual-pointer nonblocking data access. */
#define NVC_IIO_FP_CALLS(X)                         \
    X(MPI_File_iread, void *, int, 0, 0)            \
    X(MPI_File_iread_all, void *, int, 0, 1)        \
    X(MPI_File_iwrite, const void *, int, 1, 0)     \
    X(MPI_File_iwrite_all, const void *, int, 1, 1)
#define NVC_IIO_FP_LARGE_CALLS(X)                           \
    X(MPI_File_iread_c, void *, MPI_Count, 0, 0)            \
    X(MPI_File_iread_all_c, void *, MPI_Count, 0, 1)        \
    X(MPI_File_iwrite_c, const void *, MPI_Count, 1, 0)     \
    X(MPI_File_iwrite_all_c, const void *, MPI_Count, 1, 1)

/* Calls that are not cached: bypass (flush) first, then forward. X(name, (params), (args), on_fail):
   on_fail runs when the bypass failed (a drain the file system refused, nvc_pass_ready): the rank
   must leave the real file alone, so an independent call is not made (NVC_SKIP), a collective one
   takes part with no data (NVC_NO_DATA) or as it is when it moves no data (NVC_TAKE_PART). */
#define NVC_SKIP return nvc_raise(f, brc)
#define NVC_NO_DATA c = 0
#define NVC_TAKE_PART (void)0
#define NVC_UNCACHED_CALLS(X)                                                                                       \
    X(MPI_File_read_shared, (MPI_File fh, void *b, int c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),          \
      NVC_SKIP)                                                                                                     \
    X(MPI_File_write_shared, (MPI_File fh, const void *b, int c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),   \
      NVC_SKIP)                                                                                                     \
    X(MPI_File_read_ordered, (MPI_File fh, void *b, int c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),         \
      NVC_NO_DATA)                                                                                                  \
    X(MPI_File_write_ordered, (MPI_File fh, const void *b, int c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),  \
      NVC_NO_DATA)                                                                                                  \
    X(MPI_File_seek_shared, (MPI_File fh, MPI_Offset o, int w), (fh, o, w), NVC_TAKE_PART)                          \
    X(MPI_File_get_position_shared, (MPI_File fh, MPI_Offset *o), (fh, o), NVC_SKIP)
#define NVC_UNCACHED_LARGE_CALLS(X)                                                                                   \
    X(MPI_File_read_shared_c, (MPI_File fh, void *b, MPI_Count c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),   \
      NVC_SKIP)                                                                                                       \
    X(MPI_File_write_shared_c, (MPI_File fh, const void *b, MPI_Count c, MPI_Datatype d, MPI_Status *s),              \
      (fh, b, c, d, s), NVC_SKIP)                                                                                     \
    X(MPI_File_read_ordered_c, (MPI_File fh, void *b, MPI_Count c, MPI_Datatype d, MPI_Status *s), (fh, b, c, d, s),  \
      NVC_NO_DATA)                                                                                                    \
    X(MPI_File_write_ordered_c, (MPI_File fh, const void *b, MPI_Count c, MPI_Datatype d, MPI_Status *s),             \
      (fh, b, c, d, s), NVC_NO_DATA)

/* Nonblocking and split-collective calls that are not cached: X(name, (params), (args), blocking
   counterpart run under pass_blocking, with its status in st). The split collectives through the
   individual file pointer are apart (nvcache keeps that pointer). */
#define NVC_UNCACHED_NB_CALLS(X)                                                                                    \
    X(MPI_File_iread_shared, (MPI_File fh, void *b, int c, MPI_Datatype d, MPI_Request *r), (fh, b, c, d, r),        \
      PMPI_File_read_shared(fh, b, c, d, &st))                                                                      \
    X(MPI_File_iwrite_shared, (MPI_File fh, const void *b, int c, MPI_Datatype d, MPI_Request *r), (fh, b, c, d, r), \
      PMPI_File_write_shared(fh, b, c, d, &st))
#define NVC_UNCACHED_NB_LARGE_CALLS(X)                                                                                    \
    X(MPI_File_iread_shared_c, (MPI_File fh, void *b, MPI_Count c, MPI_Datatype d, MPI_Request *r), (fh, b, c, d, r),        \
      PMPI_File_read_shared_c(fh, b, c, d, &st))                                                                            \
    X(MPI_File_iwrite_shared_c, (MPI_File fh, const void *b, MPI_Count c, MPI_Datatype d, MPI_Request *r), (fh, b, c, d, r), \
      PMPI_File_write_shared_c(fh, b, c, d, &st))
#define NVC_SPLIT_BEGIN_CALLS(X)                                                                                 \
    X(MPI_File_read_at_all_begin, (MPI_File fh, MPI_Offset o, void *b, int c, MPI_Datatype d), (fh, o, b, c, d), \
      PMPI_File_read_at_all(fh, o, b, c, d, &st))                                                               \
    X(MPI_File_write_at_all_begin, (MPI_File fh, MPI_Offset o, const void *b, int c, MPI_Datatype d),            \
      (fh, o, b, c, d), PMPI_File_write_at_all(fh, o, b, c, d, &st))                                            \
    X(MPI_File_read_ordered_begin, (MPI_File fh, void *b, int c, MPI_Datatype d), (fh, b, c, d),                 \
      PMPI_File_read_ordered(fh, b, c, d, &st))                                                                 \
    X(MPI_File_write_ordered_begin, (MPI_File fh, const void *b, int c, MPI_Datatype d), (fh, b, c, d),          \
      PMPI_File_write_ordered(fh, b, c, d, &st))
#define NVC_SPLIT_BEGIN_LARGE_CALLS(X)                                                                                 \
    X(MPI_File_read_at_all_begin_c, (MPI_File fh, MPI_Offset o, void *b, MPI_Count c, MPI_Datatype d),                 \
      (fh, o, b, c, d), PMPI_File_read_at_all_c(fh, o, b, c, d, &st))                                                 \
    X(MPI_File_write_at_all_begin_c, (MPI_File fh, MPI_Offset o, const void *b, MPI_Count c, MPI_Datatype d),          \
      (fh, o, b, c, d), PMPI_File_write_at_all_c(fh, o, b, c, d, &st))                                                \
    X(MPI_File_read_ordered_begin_c, (MPI_File fh, void *b, MPI_Count c, MPI_Datatype d), (fh, b, c, d),               \
      PMPI_File_read_ordered_c(fh, b, c, d, &st))                                                                     \
    X(MPI_File_write_ordered_begin_c, (MPI_File fh, const void *b, MPI_Count c, MPI_Datatype d), (fh, b, c, d),        \
      PMPI_File_write_ordered_c(fh, b, c, d, &st))

/* Split collectives through the individual file pointer. */
#define NVC_SPLIT_BEGIN_FP_CALLS(X)                                                                             \
    X(MPI_File_read_all_begin, (MPI_File fh, void *b, int c, MPI_Datatype d), (fh, b, c, d),                     \
      PMPI_File_read_all(fh, b, c, d, &st))                                                                     \
    X(MPI_File_write_all_begin, (MPI_File fh, const void *b, int c, MPI_Datatype d), (fh, b, c, d),              \
      PMPI_File_write_all(fh, b, c, d, &st))
#define NVC_SPLIT_BEGIN_FP_LARGE_CALLS(X)                                                                      \
    X(MPI_File_read_all_begin_c, (MPI_File fh, void *b, MPI_Count c, MPI_Datatype d), (fh, b, c, d),            \
      PMPI_File_read_all_c(fh, b, c, d, &st))                                                                  \
    X(MPI_File_write_all_begin_c, (MPI_File fh, const void *b, MPI_Count c, MPI_Datatype d), (fh, b, c, d),     \
      PMPI_File_write_all_c(fh, b, c, d, &st))

/* The ends of split collectives: X(name, buffer type) */
#define NVC_SPLIT_END_CALLS(X)                  \
    X(MPI_File_read_at_all_end, void *)         \
    X(MPI_File_write_at_all_end, const void *)  \
    X(MPI_File_read_all_end, void *)            \
    X(MPI_File_write_all_end, const void *)     \
    X(MPI_File_read_ordered_end, void *)        \
    X(MPI_File_write_ordered_end, const void *)

/* ------------------------------------------------------------------ generated wrappers */

#define NVC_GEN_IO_AT(name, BUF, CT, W)                                                              \
    int name(MPI_File fh, MPI_Offset off, BUF buf, CT count, MPI_Datatype dt, MPI_Status *status)    \
    {                                                                                                \
        struct nvc_file *f = route(fh, W);                                                           \
        if (!f)                                                                                      \
            return P##name(fh, off, buf, count, dt, status);                                         \
        return nvc_io(f, W, off, 0, (void *)buf, count, dt, status);                                 \
    }
#define NVC_GEN_IO_FP(name, BUF, CT, W)                                                              \
    int name(MPI_File fh, BUF buf, CT count, MPI_Datatype dt, MPI_Status *status)                    \
    {                                                                                                \
        struct nvc_file *f = route(fh, W);                                                           \
        if (!f)                                                                                      \
            return P##name(fh, buf, count, dt, status);                                              \
        return nvc_io(f, W, 0, NVC_FP, (void *)buf, count, dt, status);                              \
    }
#define NVC_GEN_IIO_AT(name, BUF, CT, W, ALL)                                                        \
    int name(MPI_File fh, MPI_Offset off, BUF buf, CT count, MPI_Datatype dt, MPI_Request *request)  \
    {                                                                                                \
        struct nvc_file *f = route(fh, W);                                                           \
        if (!f && pass_blocking)                                                                     \
            return pass_eager(fh, W, ALL, off, 0, buf, count, dt, request);                          \
        if (!f)                                                                                      \
            return P##name(fh, off, buf, count, dt, request);                                        \
        return eager(f, W, off, 0, buf, count, dt, request);                                         \
    }
#define NVC_GEN_IIO_FP(name, BUF, CT, W, ALL)                                                        \
    int name(MPI_File fh, BUF buf, CT count, MPI_Datatype dt, MPI_Request *request)                  \
    {                                                                                                \
        struct nvc_file *f = route(fh, W);                                                           \
        if (!f && pass_blocking)                                                                     \
            return pass_eager(fh, W, ALL, 0, 1, buf, count, dt, request);                            \
        if (!f)                                                                                      \
            return P##name(fh, buf, count, dt, request);                                             \
        return eager(f, W, 0, NVC_FP_NONBLOCKING, buf, count, dt, request);                          \
    }
#define NVC_GEN_UNCACHED(name, params, args, on_fail)                                                \
    int name params                                                                                  \
    {                                                                                                \
        struct nvc_file *f = nvc_file_lookup(fh);                                                    \
        int brc = f ? nvc_bypass(f, #name " is not cached") : MPI_SUCCESS;                           \
        if (brc != MPI_SUCCESS) {                                                                    \
            on_fail;                                                                                 \
        }                                                                                            \
        int rc = P##name args;                                                                       \
        /* An error of the call itself went to the handler from MPI-IO. */                          \
        return brc == MPI_SUCCESS || rc != MPI_SUCCESS ? rc : nvc_raise(f, brc);                     \
    }

/* An independent nonblocking call that is not cached: under pass_blocking its blocking counterpart,
   done now (status in st, result in rc), as a completed request. Not made at all when the bypass
   failed (see NVC_UNCACHED_CALLS). */
#define NVC_GEN_UNCACHED_NB(name, params, args, blocking)                                            \
    int name params                                                                                  \
    {                                                                                                \
        struct nvc_file *f = nvc_file_lookup(fh);                                                    \
        int brc = f ? nvc_bypass(f, #name " is not cached") : MPI_SUCCESS;                           \
        if (brc != MPI_SUCCESS) {                                                                    \
            *r = MPI_REQUEST_NULL;                                                                   \
            return nvc_raise(f, brc);                                                                \
        }                                                                                            \
        if (!pass_blocking)                                                                          \
            return P##name args;                                                                     \
        MPI_Status st;                                                                               \
        int rc = blocking;                                                                           \
        return completed(rc, &st, r);                                                                \
    }

/* A split collective's begin: the whole operation (its blocking counterpart, status in st), its
   result kept for the end (split_keep). When the bypass failed the rank takes part with no data,
   and the begin and its end report the bypass's error. */
#define NVC_GEN_SPLIT_BEGIN(name, params, args, blocking)                                            \
    int name params                                                                                  \
    {                                                                                                \
        struct nvc_file *f = nvc_file_lookup(fh);                                                    \
        int brc = f ? nvc_bypass(f, #name " is not cached") : MPI_SUCCESS;                           \
        MPI_Status st;                                                                               \
        if (brc != MPI_SUCCESS) {                                                                    \
            c = 0;                                                                                   \
            int rc = blocking;                                                                       \
            return rc != MPI_SUCCESS ? rc : split_fail(f, brc);                                      \
        }                                                                                            \
        if (!pass_blocking)                                                                          \
            return P##name args;                                                                     \
        int rc = blocking;                                                                           \
        return split_keep(fh, rc, &st);                                                              \
    }

/* nvcache keeps the individual file pointer itself (the real handle's stays where the open left
   it): the real one is set from it before such a call and read back after, or the call would
   read or write at a stale position. A failed bypass as in NVC_GEN_SPLIT_BEGIN. */
#define NVC_GEN_SPLIT_BEGIN_FP(name, params, args, blocking)                                         \
    int name params                                                                                  \
    {                                                                                                \
        struct nvc_file *f = nvc_file_lookup(fh);                                                    \
        if (f && f->mode == NVC_MODE_PASS)                                                           \
            f = NULL;                                                                                \
        int rc = MPI_SUCCESS, brc = MPI_SUCCESS;                                                     \
        if (f) {                                                                                     \
            brc = nvc_bypass(f, #name " is not cached");                                             \
            rc = PMPI_File_seek(fh, f->fp, MPI_SEEK_SET);                                            \
        }                                                                                            \
        if (rc != MPI_SUCCESS)                                                                       \
            return rc;                                                                               \
        MPI_Status st;                                                                               \
        if (brc != MPI_SUCCESS) {                                                                    \
            c = 0;                                                                                   \
            rc = blocking;                                                                           \
            return rc != MPI_SUCCESS ? rc : split_fail(f, brc);                                      \
        }                                                                                            \
        if (pass_blocking) {                                                                         \
            rc = blocking;                                                                           \
            rc = split_keep(fh, rc, &st);                                                            \
        } else {                                                                                     \
            rc = P##name args;                                                                       \
        }                                                                                            \
        MPI_Offset pos;                                                                              \
        if (f && PMPI_File_get_position(fh, &pos) == MPI_SUCCESS)                                    \
            f->fp = pos;                                                                             \
        return rc;                                                                                   \
    }

/* A split collective's end: the result split_keep or split_fail kept (an error of the cache's
   own given to the handler again: a failed call each), or MPI-IO's own end. */
#define NVC_GEN_SPLIT_END(name, BUF)                                                                 \
    int name(MPI_File fh, BUF buf, MPI_Status *status)                                               \
    {                                                                                                \
        int rc;                                                                                      \
        if (split_take(fh, status, &rc)) {                                                           \
            if (rc != MPI_SUCCESS)                                                                   \
                PMPI_File_call_errhandler(fh, rc);                                                   \
            return rc;                                                                               \
        }                                                                                            \
        return P##name(fh, buf, status);                                                             \
    }

NVC_IO_AT_CALLS(NVC_GEN_IO_AT)
NVC_IO_FP_CALLS(NVC_GEN_IO_FP)
NVC_IIO_AT_CALLS(NVC_GEN_IIO_AT)
NVC_IIO_FP_CALLS(NVC_GEN_IIO_FP)
NVC_UNCACHED_CALLS(NVC_GEN_UNCACHED)
NVC_UNCACHED_NB_CALLS(NVC_GEN_UNCACHED_NB)
NVC_SPLIT_BEGIN_CALLS(NVC_GEN_SPLIT_BEGIN)
NVC_SPLIT_BEGIN_FP_CALLS(NVC_GEN_SPLIT_BEGIN_FP)
NVC_SPLIT_END_CALLS(NVC_GEN_SPLIT_END)
#if NVC_MPI_LARGE_COUNT /* MPI 4 large-count variants (MPICH 4; Open MPI 4.1 implements MPI 3.1) */
NVC_IO_AT_LARGE_CALLS(NVC_GEN_IO_AT)
NVC_IO_FP_LARGE_CALLS(NVC_GEN_IO_FP)
NVC_IIO_AT_LARGE_CALLS(NVC_GEN_IIO_AT)
NVC_IIO_FP_LARGE_CALLS(NVC_GEN_IIO_FP)
NVC_UNCACHED_LARGE_CALLS(NVC_GEN_UNCACHED)
NVC_UNCACHED_NB_LARGE_CALLS(NVC_GEN_UNCACHED_NB)
NVC_SPLIT_BEGIN_LARGE_CALLS(NVC_GEN_SPLIT_BEGIN)
NVC_SPLIT_BEGIN_FP_LARGE_CALLS(NVC_GEN_SPLIT_BEGIN_FP)
#endif

/* ------------------------------------------------------------------ file management */

/** MPI_File_open: real open plus collective cache setup (cache.c). */
int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    return nvc_open(comm, filename, amode, info, fh);
}

/** MPI_File_close: flush and discard the cache, then close the real file. */
int MPI_File_close(MPI_File *fh)
{
    /* A begin without its end is erroneous; its result must not reach a later handle that
       reuses this one's value. */
    split_take(*fh, NULL, NULL);
    return nvc_close(fh);
}

/** MPI_File_sync: cached writes are already persistent in NVRAM; see nvc_sync for flush policies. */
int MPI_File_sync(MPI_File fh)
{
    /* Not route(fh, 0): sync and get_size are no reads, so a write-only file must reach nvcache too
       (else get_size reported the real file's stale size, and sync neither waited for async
       replies, flushed with NVCACHE_FLUSH=sync, nor made close fsync the drained data). */
    struct nvc_file *f = nvc_file_lookup(fh);
    /* Read-only: nothing to sync, and MPI-IO reports the error MPI_File_sync is for such a file. */
    if (f && (f->mode == NVC_MODE_PASS || (f->amode & MPI_MODE_RDONLY)))
        f = NULL;
    return f ? nvc_sync(f) : PMPI_File_sync(fh);
}

/** MPI_File_get_size: the largest size any part has seen. */
int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    struct nvc_file *f = nvc_file_lookup(fh); /* write-only files too (see MPI_File_sync) */
    if (f && f->mode == NVC_MODE_PASS)
        f = NULL;
    return f ? nvc_get_size(f, size) : PMPI_File_get_size(fh, size);
}

/** MPI_File_set_size: real file and all parts. */
int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    return f ? nvc_set_size(f, size, 0) : PMPI_File_set_size(fh, size);
}

/** MPI_File_preallocate: real file, and parts grow their size view. */
int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    return f ? nvc_set_size(f, size, 1) : PMPI_File_preallocate(fh, size);
}

/** MPI_File_set_view: the real handle gets the view too (it serves get_view and pass-through calls). */
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep,
                      MPI_Info info)
{
    int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    struct nvc_file *f = nvc_file_lookup(fh);
    if (rc != MPI_SUCCESS || !f || f->mode == NVC_MODE_PASS)
        return rc;
    return nvc_set_view(f, disp, etype, filetype, datarep);
}

/** MPI_File_seek: the individual pointer nvcache keeps. */
int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    if (!f || f->mode == NVC_MODE_PASS)
        return PMPI_File_seek(fh, offset, whence);
    return nvc_seek(f, offset, whence);
}

/** MPI_File_get_position: the individual pointer nvcache keeps. */
int MPI_File_get_position(MPI_File fh, MPI_Offset *offset)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    if (!f || f->mode == NVC_MODE_PASS)
        return PMPI_File_get_position(fh, offset);
    *offset = f->fp;
    return MPI_SUCCESS;
}

/** MPI_File_get_byte_offset: through nvcache's copy of the view. */
int MPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    if (!f || f->mode == NVC_MODE_PASS || offset < 0) /* a negative offset: MPI-IO's error */
        return PMPI_File_get_byte_offset(fh, offset, disp);
    return nvc_byte_offset(f, offset, disp);
}

/** MPI_File_set_atomicity: atomic mode is served by the real file (bypass). */
int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    struct nvc_file *f = nvc_file_lookup(fh);
    int brc = f && flag ? nvc_bypass(f, "atomic mode requested") : MPI_SUCCESS;
    int rc = PMPI_File_set_atomicity(fh, flag); /* collective: called whatever the drain did */
    return brc != MPI_SUCCESS ? nvc_raise(f, brc) : rc;
}
