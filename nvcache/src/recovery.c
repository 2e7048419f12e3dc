/* recovery.c: writes the data that NVRAM parts of dead jobs hold back to their files.
 *
 * Used by nvcache-recover (recover.c) and by MPI_Init (interpose.c), where one process per host
 * recovers its host's NVCACHE_DIR before any rank of the new job opens a file: a job restarted
 * after a crash then reads what the crashed job wrote, as it would from the file under plain
 * MPI-IO, instead of the file's older bytes.
 *
 * Every part in the directory that is still active or draining has its dirty pages written to the
 * real file recorded in its header (an absolute name; the file must exist) and fsynced; the file is
 * grown to the largest size any part of that file saw, never shrunk, and fsynced again; only then
 * are the parts removed (a part whose write-back, fsync or close failed stays). A part whose header
 * is damaged is reported and kept, never read; one whose creation was cut short (it never held
 * data) is removed. Whether a job still runs is its lock in the directory (nvc_job_alive). Parts
 * of files opened with MPI_MODE_DELETE_ON_CLOSE are removed once no process of their job runs (opts->temporary recovers
 * them instead). Recovered parts are removed unless opts->keep; a part that cannot be written back
 * is kept. So is a part whose file was replaced since (deleted and created again, or another file
 * moved to its name: a different inode or creation time than the job opened), or that a later job
 * opened for writing before this recovery (its open marked the part when it ran on the part's
 * node, and named itself in the file's NVC_WRITER_XATTR wherever it ran, later than the part's
 * last write: the part's older bytes would overwrite that job's; a clean part of such a file
 * does not grow it), unless opts->force. Each file written into is guarded (NVC_GUARD_XATTR_PREFIX)
 * from before its writer mark is read until the end of the recovery, so a job opening it meanwhile
 * writes only afterwards. Parts of several dead jobs are written back oldest first. Mailboxes
 * in /dev/shm of the recovered jobs, and of any job whose creating manager process is gone, are
 * removed (not in a dry run). Parts that another host made (a NVCACHE_DIR shared between hosts,
 * where whether their job runs cannot be seen from here) are left to that host unless
 * opts->any_host. Two recoveries of one directory (two jobs starting, or the tool run
 * beside a starting job) take turns: each holds a lock on the directory while it works.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line: an error (error = 1) to stderr as "<who>: ...", what was done to o->out after
   o->out_prefix. */
static void say(const struct nvc_recover_opts *o, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const struct nvc_recover_opts *o, int error, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    FILE *to = error ? stderr : o->out;
    fprintf(to, "%s%s%s\n", error ? o->who : o->out_prefix, error ? ": " : "", line);
    fflush(to);
}

struct target {
    char path[NVC_PATH_MAX];
    uint64_t fileid, jobid, size;
    int parts;
    int replaced;   /* another file, or a later job's writes: nothing written, size left */
    int failed;     /* a part could not be written back (kept) */
    int rewritten;  /* a later job wrote the file; the parts hold nothing dirty: size left */
    int later;      /* recover_part's decision on a later writer: -1 not yet taken, 0, 1 */
    uint64_t bytes; /* dirty bytes below the file size (written back, or would be with a dry run) */
};

struct sibling {
    char path[NVC_PATH_MAX];
    uint64_t fileid, jobid, size;
};

/* A part file to remove once what it holds is durable in its file: after its target's data was
   written back, the file grown and both fsynced (target: its index in the targets), or, for a
   closed or bypassed part (target SIZE_MAX), once no target of the same open was kept. */
struct removal {
    char file[2048];
    size_t target;
    uint64_t fileid, jobid;
};

/* The file name a part records, without the "fs:" prefix ROMIO accepts (parts of older versions
   kept it; a POSIX open does not know it). */
static const char *real_name(const char *path)
{
    return path + nvc_fs_prefix_len(path);
}

/* nvc_job_alive, asked once per job of the directory's parts (during one recovery). */
struct alive_cache {
    struct {
        uint64_t jobid;
        int alive;
    } seen[64];
    size_t n;
};

static int job_alive_cached(struct alive_cache *c, const char *dir, uint64_t jobid)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->seen[i].jobid == jobid)
            return c->seen[i].alive;
    int alive = nvc_job_alive(dir, jobid);
    if (c->n < sizeof c->seen / sizeof c->seen[0]) {
        c->seen[c->n].jobid = jobid;
        c->seen[c->n++].alive = alive;
    }
    return alive;
}

static int wanted(const struct nvc_recover_opts *o, const char *path)
{
    if (o->nfiles <= 0)
        return 1;
    char rp[4096];
    for (int i = 0; i < o->nfiles; i++) {
        if (!strcmp(o->files[i], path))
            return 1;
        if (realpath(o->files[i], rp) && !strcmp(rp, path))
            return 1;
    }
    return 0;
}

/* A part file of the directory, with its creation time (list_parts). */
struct listed {
    char file[2048];
    int64_t sec;
    uint32_t nsec;
};

/* The latest last_write_ns of job `jobid`'s parts of file `fileid` among the listed parts: the
   parts of one open on this host are judged together (one whose last write came before another
   job's open, another's after, must not be split: the file would get half the job's bytes). */
struct latest {
    uint64_t jobid, fileid, ns;
};
static uint64_t job_latest_write(const struct listed *l, size_t n, uint64_t jobid, uint64_t fileid, struct latest **cache,
                                 size_t *ncache)
{
    if (!*cache) {
        /* One pass over every listed part's header, the first time (then only lookups). */
        struct nvc_part_hdr *h = malloc(sizeof *h);
        size_t cap = 0;
        for (size_t i = 0; h && i < n; i++) {
            int fd = open(l[i].file, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                continue;
            int ok = pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && !memcmp(h->magic, "NVCPART1", 8) &&
                     nvc_part_version_known(h->version);
            close(fd);
            if (!ok)
                continue;
            size_t k = 0;
            while (k < *ncache && ((*cache)[k].jobid != h->jobid || (*cache)[k].fileid != h->fileid))
                k++;
            if (k == *ncache) {
                if (*ncache == cap) {
                    struct latest *nc = realloc(*cache, (cap = cap ? 2 * cap : 16) * sizeof **cache);
                    if (!nc)
                        break;
                    *cache = nc;
                }
                (*cache)[(*ncache)++] = (struct latest){h->jobid, h->fileid, 0};
            }
            if (h->last_write_ns > (*cache)[k].ns)
                (*cache)[k].ns = h->last_write_ns;
        }
        free(h);
    }
    for (size_t i = 0; i < *ncache; i++)
        if ((*cache)[i].jobid == jobid && (*cache)[i].fileid == fileid)
            return (*cache)[i].ns;
    return 0;
}

/* The files this recovery guards (NVC_GUARD_XATTR_PREFIX): each from before its first part's look at
   the file's writer mark until the end of the recovery, when every target's bytes and size are
   durable. A job that opens such a file for writing meanwhile waits (nvc_file_wait_recoveries).
   A thread refreshes the guards every NVC_GUARD_REFRESH_NS, however long a write-back or fsync
   takes, so that openers never take them for a dead recovery's. */
struct guards {
    char name[64]; /* this recovery's attribute */
    char (*path)[NVC_PATH_MAX];
    size_t n;
    pthread_mutex_t lock; /* path, n, stop */
    pthread_cond_t wake;
    pthread_t beat;
    int beating, stop;
};

static void guards_init(struct guards *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    char host[64];
    nvc_host_name(host, sizeof host);
    uint64_t id = nvc_fnv1a(nvc_realtime_ns() ^ ((uint64_t)getpid() << 40), host);
    snprintf(g->name, sizeof g->name, "%s%016llx", NVC_GUARD_XATTR_PREFIX, (unsigned long long)id);
}

static void *guards_beat(void *arg)
{
    struct guards *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + NVC_GUARD_REFRESH_NS;
        until.tv_sec += (time_t)(ns / 1000000000ull);
        until.tv_nsec = (long)(ns % 1000000000ull);
        if (pthread_cond_timedwait(&g->wake, &g->lock, &until) == 0 || g->stop)
            continue;
        for (size_t i = 0; i < g->n; i++)
            nvc_file_guard_set(-1, g->path[i], g->name);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* Guards path (once per recovery). 0, or -1 when the guard could not be set for another reason
   than a file system without user attributes (said; the part is then kept: its bytes could land
   after those of a job opening the file now). */
static int guard(const struct nvc_recover_opts *o, struct guards *g, int fd, const char *path)
{
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->path[i], path))
            return 0;
    int e = nvc_file_guard_set(fd, path, g->name); /* on the file this recovery opened */
    if (e == -ENOTSUP || e == -EOPNOTSUPP)
        return 0;
    if (e) {
        say(o, 1, "cannot guard %s against a job opening it during this recovery (%s: %s); the part is kept", path,
            g->name, strerror(-e));
        return -1;
    }
    pthread_mutex_lock(&g->lock);
    char (*np)[NVC_PATH_MAX] = realloc(g->path, (g->n + 1) * sizeof *g->path);
    if (np) {
        g->path = np;
        snprintf(g->path[g->n++], NVC_PATH_MAX, "%s", path);
    }
    pthread_mutex_unlock(&g->lock);
    if (!np) {
        nvc_file_guard_clear(path, g->name);
        say(o, 1, "out of memory guarding %s; the part is kept", path);
        return -1;
    }
    if (!g->beating && pthread_create(&g->beat, NULL, guards_beat, g) == 0)
        g->beating = 1;
    return 0;
}

/* Removes this recovery's guard from path, saying so when it cannot. */
static void unguard(const struct nvc_recover_opts *o, const struct guards *g, const char *path)
{
    int e = nvc_file_guard_clear(path, g->name);
    if (e)
        say(o, 1, "cannot remove this recovery's guard %s from %s (%s): a job opening the file for writing waits up to "
                  "%llu s for it",
            g->name, path, strerror(-e), (unsigned long long)(NVC_GUARD_STALE_NS / 1000000000ull));
}

/* Removes this recovery's guard from path now (a target decided not to write there). */
static void guard_drop(const struct nvc_recover_opts *o, struct guards *g, const char *path)
{
    int held = 0;
    pthread_mutex_lock(&g->lock);
    for (size_t i = 0; i < g->n && !held; i++)
        if (!strcmp(g->path[i], path)) {
            memmove(g->path[i], g->path[g->n - 1], sizeof *g->path);
            g->n--;
            held = 1;
        }
    pthread_mutex_unlock(&g->lock);
    if (held)
        unguard(o, g, path);
}

static void guards_release(const struct nvc_recover_opts *o, struct guards *g)
{
    if (g->beating) {
        pthread_mutex_lock(&g->lock);
        g->stop = 1;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->beat, NULL);
    }
    for (size_t i = 0; i < g->n; i++)
        unguard(o, g, g->path[i]);
    free(g->path);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
}

/* Reads the file's current bytes of part p's page at part-local offset l into page (NVC_PAGE
 * bytes; those past the file's end as zeros, the hole a write of later bytes leaves); 0 when the
 * file cannot be read. */
static int read_page(int fd, const struct nvc_part *p, uint64_t l, uint8_t *page)
{
    const struct nvc_part_hdr *h = p->hdr;
    memset(page, 0, NVC_PAGE);
    for (uint64_t at = 0, k, fo, n; at < NVC_PAGE; at += k) {
        k = nvc_part_piece(l + at, NVC_PAGE - at, h->stripe, h->nparts, h->index, h->size, &fo, &n);
        if (n && nvc_fd_rw(fd, 0, fo, page + at, n) != 0)
            return 0;
    }
    return 1;
}

/* Writes a part's dirty data back; 0, -1 (failed; the part is kept), -2 (the name leads to
   another file than the job opened, or a later job opened the file before this recovery;
   nothing written, the part is kept) or 1 (a later job wrote the file and this part holds
   nothing dirty: nothing to write, and its size must not grow that job's file). last_write_ns:
   the latest write of the part's job to the file in any of its parts here (job_latest_write).
   *later_decided is the decision for the part's target (its job's parts of its file) on a later
   writer: -1 until its first part looks at the file's mark, then 1 when a later job opened the
   file, else 0; the target's other parts keep it, so a job opening the file meanwhile (waiting
   for this recovery's guard, set on the file first) splits no target. */
static int recover_part(const struct nvc_recover_opts *o, struct nvc_part *p, uint64_t last_write_ns,
                        struct guards *g, int *later_decided, uint64_t *bytes)
{
    struct nvc_part_hdr *h = p->hdr;
    const char *name = real_name(h->path);
    int dry = o->dry;
    /* Never O_CREAT: the job created the file at its open, so a missing file was removed since
       (or the name is wrong), and the data must stay in the part rather than go elsewhere. */
    if (h->superseded_by == h->jobid && !o->force) {
        say(o, 1,
            "job %016llx reopened %s after a close of it could not drain this part; the part's older bytes would "
            "overwrite what was written through the reopened file, so it is kept (--force writes it there)",
            (unsigned long long)h->jobid, name);
        return -2;
    }
    if (h->superseded_by && !o->force) {
        say(o, 1,
            "job %016llx opened %s after this part's job %016llx ended and before its recovery; the part's older "
            "bytes would overwrite what that job wrote, so it is kept (--force writes it there)",
            (unsigned long long)h->superseded_by, name, (unsigned long long)h->jobid);
        return -2;
    }
    /* Only a regular file takes the bytes: a FIFO that took the file's name blocked the open for
       ever (and with it every later job's MPI_Init, which recovers too). Looked at before the
       open, and the open does not block, should the name change in between. */
    struct stat fsb;
    if (stat(name, &fsb) == 0 && !S_ISREG(fsb.st_mode)) {
        say(o, 1, "%s is not a regular file (a directory, a FIFO, a device or a socket has its name); the part is kept",
            name);
        return -1;
    }
    /* Read-write where the file lets us read it: pages written in many runs are merged with the
       file's current bytes (read_page, nvc_part_merge_page); write-only otherwise. */
    int fd = open(name, (dry ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_CLOEXEC), reads = fd >= 0;
    if (!dry && fd < 0 && errno == EACCES)
        fd = open(name, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (!dry && fd < 0) {
        say(o, 1, "open(%s) failed: %s; the part is kept", name, strerror(errno));
        return -1;
    }
    if (fd >= 0 && (fstat(fd, &fsb) != 0 || !S_ISREG(fsb.st_mode))) {
        say(o, 1, "%s is not a regular file (a directory, a FIFO, a device or a socket has its name); the part is kept",
            name);
        close(fd);
        return -1;
    }
    /* Nor into a file that took the name since: the job's file was deleted (its data is gone
       under plain MPI-IO too) or replaced, and its bytes would overwrite another file's. The
       device is not compared: one file system's device number changes when it is mounted again
       (after the reboot that precedes most recoveries) and differs between hosts. */
    struct nvc_file_id now;
    if (fd >= 0 && !o->force && nvc_file_id_fd(fd, &now) == 0 && !nvc_file_id_same(&h->file_id, &now, 0)) {
        if (now.ino == h->file_id.ino)
            say(o, 1,
                "%s is not the file the job wrote (created again since: its inode number, another creation time); "
                "the part is kept (--force writes it there)",
                name);
        else
            say(o, 1, "%s is not the file the job wrote (inode %llu, the job's was %llu); the part is kept (--force "
                   "writes it there)",
                name, (unsigned long long)now.ino, (unsigned long long)h->file_id.ino);
        close(fd);
        return -2;
    }
    /* Nor over what a later job wrote: a job that opened the file for writing after the part's last
       write (on any host, this recovery's host among them or not, through nvcache with caching on
       or off) named itself in the file's attribute. A job that opened it while the part's job
       still wrote is no later writer: the part's bytes are the newer ones. Host clocks are taken
       to agree to better than the time from a crash to the next job's open. A part with nothing
       dirty writes nothing over anybody's bytes, but its size must not grow that job's file. The
       guard goes on before the mark is read: a job whose open comes later waits for this
       recovery (struct guards). */
    uint64_t writer = 0, when = 0, first = 0, doff, dlen;
    if (!dry && guard(o, g, fd, name) != 0) {
        close(fd);
        return -1;
    }
    int later = *later_decided;
    if (later < 0) {
        later = fd >= 0 && !o->force && last_write_ns && nvc_file_writer(fd, &writer, &when) == 1 && writer &&
                writer != h->jobid && when > last_write_ns;
        if (!dry)
            *later_decided = later;
    }
    if (later && !nvc_part_next_dirty(p, &first, &doff, &dlen, NULL)) {
        close(fd);
        return 1;
    }
    if (later) {
        if (writer)
            say(o, 1,
                "job %016llx opened %s for writing %.3f s after this part's job %016llx last wrote to it here (the "
                "file's %s says so); the part's older bytes would overwrite what that job wrote, so it is kept "
                "(--force writes it there)",
                (unsigned long long)writer, name, (double)(when - last_write_ns) / 1e9, (unsigned long long)h->jobid,
                NVC_WRITER_XATTR);
        else
            say(o, 1,
                "a later job opened %s for writing after this part's job %016llx last wrote to it here; the part's "
                "older bytes would overwrite what that job wrote, so it is kept (--force writes it there)",
                name, (unsigned long long)h->jobid);
        close(fd);
        return -2;
    }
    if (dry && fd >= 0) {
        close(fd);
        fd = -1;
    }
    uint64_t cursor = 0, off, len;
    uint8_t page[NVC_PAGE];
    int merge, foreign = 0;
    while (nvc_part_next_dirty(p, &cursor, &off, &len, &merge)) {
        const uint8_t *src = p->data + off;
        uint64_t lo = 0, hi = 0;
        int locked = 0;
        if (merge && !dry) {
            /* A page the job wrote in many separate runs: the file's current bytes of it with the
               job's over them (the bytes the job did not write stay as the file has them, another
               job's among them), locked across the read and the write as a drain does; run by run
               where the file cannot be read. */
            nvc_part_file_span(off, NVC_PAGE, h->stripe, h->nparts, h->index, h->size, &lo, &hi);
            if (reads && hi > lo && !foreign) {
                int lk = nvc_file_lock_range(fd, lo, hi - lo, 1);
                locked = lk == 0;
                foreign = lk == -2; /* another program's POSIX lock: none taken from now on */
            }
            if (reads && read_page(fd, p, off, page)) {
                nvc_part_merge_page(p, off / NVC_PAGE, page);
                src = page;
            } else {
                cursor = off;
                if (!nvc_part_next_dirty(p, &cursor, &off, &len, NULL))
                    break;
                src = p->data + off;
            }
        }
        for (uint64_t l = off, k, fo, n; l < off + len; l += k) {
            k = nvc_part_piece(l, off + len - l, h->stripe, h->nparts, h->index, h->size, &fo, &n);
            if (!n)
                continue;
            if (dry) {
                *bytes += n;
                continue;
            }
            /* One pwrite moves at most 0x7ffff000 bytes (Linux): a piece of a stripe over 2 GiB
               takes several. */
            for (uint64_t done = 0; done < n;) {
                ssize_t w = pwrite(fd, src + (l - off) + done, n - done, (off_t)(fo + done));
                if (w <= 0) {
                    say(o, 1, "pwrite(%s, offset %llu) failed: %s; the part is kept", name,
                        (unsigned long long)(fo + done), w < 0 ? strerror(errno) : "nothing written");
                    close(fd);
                    return -1;
                }
                done += (uint64_t)w;
                *bytes += (uint64_t)w;
            }
        }
        if (locked)
            nvc_file_lock_range(fd, lo, hi - lo, 0);
    }
    /* The part is the only durable copy of its data until the file's is: a write-back whose fsync
       or close reports an error (quota, ENOSPC or EIO on a network file system surface there) has
       not made it durable, so the part stays. */
    if (fd >= 0) {
        const char *call = NULL;
        int e = 0;
        if (fsync(fd) != 0)
            call = "fsync", e = errno;
        if (close(fd) != 0 && !call)
            call = "close", e = errno;
        if (call) {
            say(o, 1, "%s(%s) failed: %s; the part is kept", call, name, strerror(e));
            return -1;
        }
    }
    return 0;
}

/* Grows file `path` to `size` bytes if it is shorter, never shrinks it, and makes the size
   durable. fallocate of the last byte extends a shorter file and leaves a longer one and every
   byte in it alone, so another host's recovery writing back beyond the old end at the same moment
   (every host recovers its own parts of a file on a shared file system) keeps its bytes. Where the
   file system has no fallocate, the size is looked at and set under a write lock on the whole
   file, which keeps two growing recoveries from cutting each other short. 0 or -1. */
static int grow_file(const struct nvc_recover_opts *o, const char *path, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* (a FIFO blocks: recover_part) */
    if (fd < 0) {
        say(o, 1, "open(%s) to set its size failed: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size < size && fallocate(fd, 0, (off_t)(size - 1), 1) != 0) {
        if (errno != EOPNOTSUPP && errno != ENOSYS) {
            say(o, 1, "fallocate(%s) to size %llu failed: %s", path, (unsigned long long)size, strerror(errno));
            rc = -1;
        } else {
            /* Polled for at most 5 s: another process's lock over the file (lockf) must not hang
               this recovery, which holds the directory's lock against every job's MPI_Init. */
            struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
            int locked = 0, busy = 0;
            for (int waited = 0;; waited += 10) {
                if (fcntl(fd, F_SETLK, &lk) == 0) {
                    locked = 1;
                    break;
                }
                if ((errno != EAGAIN && errno != EACCES && errno != EINTR) || waited >= 5000) {
                    busy = errno == EAGAIN || errno == EACCES || errno == EINTR;
                    break; /* a file system without locks: grown all the same */
                }
                usleep(10000);
            }
            if (busy) {
                say(o, 1, "%s stayed locked by another process for 5 s; its size is not set (%llu bytes) and its parts "
                          "are kept for a later recovery",
                    path, (unsigned long long)size);
                rc = -1;
            } else if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size < size && ftruncate(fd, (off_t)size) != 0) {
                say(o, 1, "ftruncate(%s, %llu) failed: %s", path, (unsigned long long)size, strerror(errno));
                rc = -1;
            }
            if (locked) {
                lk.l_type = F_UNLCK;
                fcntl(fd, F_SETLK, &lk);
            }
        }
    }
    if (!rc && fsync(fd) != 0) {
        say(o, 1, "fsync(%s) after setting its size failed: %s", path, strerror(errno));
        rc = -1;
    }
    if (close(fd) != 0 && !rc) {
        say(o, 1, "close(%s) after setting its size failed: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* Notes part file `file` for removal at the end of the recovery (see struct removal); 0, or 1
   when out of memory (the part then stays). */
static int defer_removal(struct removal **rm, size_t *n, const char *file, size_t target, uint64_t fileid,
                         uint64_t jobid)
{
    struct removal *r = realloc(*rm, (*n + 1) * sizeof **rm);
    if (!r)
        return 1;
    *rm = r;
    snprintf(r[*n].file, sizeof r[*n].file, "%s", file);
    r[*n].target = target;
    r[*n].fileid = fileid;
    r[*n].jobid = jobid;
    (*n)++;
    return 0;
}

static int by_age(const void *a, const void *b)
{
    const struct listed *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec < y->sec ? -1 : 1;
    if (x->nsec != y->nsec)
        return x->nsec < y->nsec ? -1 : 1;
    return strcmp(x->file, y->file);
}

/* The part files in dir, oldest first (creation time where the file system keeps it, else the
   last change). Parts of two dead jobs that wrote the same file are then written back in the
   order the jobs made them, so the later job's bytes end up in the file, as they did in the
   file under plain MPI-IO, instead of in whatever order the directory lists them (tmpfs: newest
   first, which put the older job's bytes last). Returns NULL with *n 0 for an empty directory. */
static struct listed *list_parts(DIR *d, const char *dir, size_t *n)
{
    struct listed *l = NULL;
    size_t cap = 0;
    struct dirent *e;
    *n = 0;
    while ((e = readdir(d))) {
        if (!nvc_is_part_name(e->d_name))
            continue;
        if (*n == cap) {
            struct listed *nl = realloc(l, (cap = cap ? 2 * cap : 64) * sizeof *l);
            if (!nl) {
                free(l);
                return NULL;
            }
            l = nl;
        }
        struct listed *x = &l[(*n)++];
        snprintf(x->file, sizeof x->file, "%s/%s", dir, e->d_name);
        struct statx sx;
        x->sec = 0;
        x->nsec = 0;
        if (statx(AT_FDCWD, x->file, 0, STATX_BTIME | STATX_CTIME, &sx) == 0) {
            const struct statx_timestamp *t = (sx.stx_mask & STATX_BTIME) ? &sx.stx_btime : &sx.stx_ctime;
            x->sec = t->tv_sec;
            x->nsec = t->tv_nsec;
        }
    }
    if (*n)
        qsort(l, *n, sizeof *l, by_age);
    return l;
}

/* Removes the mailboxes in /dev/shm of the jobs in t[0..nt) and of every job whose creating
   manager is gone (a job ended by MPI_Abort or a signal): stale shared memory. */
static void remove_stale_mailboxes(const struct nvc_recover_opts *o, const struct target *t, size_t nt)
{
    struct dirent *e;
    DIR *shm = opendir("/dev/shm");
    while (shm && (e = readdir(shm))) {
        if (!nvc_is_mailbox_name(e->d_name))
            continue;
        int stale = nvc_mailbox_is_stale(e->d_name);
        for (size_t i = 0; i < nt && !stale; i++) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "nvcache-%016llx-n", (unsigned long long)t[i].jobid);
            stale = !strncmp(e->d_name, prefix, strlen(prefix));
        }
        if (stale) {
            char m[512];
            snprintf(m, sizeof m, "/dev/shm/%s", e->d_name);
            if (unlink(m) == 0)
                say(o, 0, "removed stale mailbox %s", m);
        }
    }
    if (shm)
        closedir(shm);
}

int nvc_recover_dir(const char *dir, const struct nvc_recover_opts *o, struct nvc_recover_result *res)
{
    memset(res, 0, sizeof *res);
    DIR *d = opendir(dir);
    if (!d) {
        say(o, 1, "cannot open %s: %s", dir, strerror(errno));
        return 1;
    }
    /* One recovery of the directory at a time (a dry run only reads: it shares the lock). */
    if (flock(dirfd(d), o->dry ? LOCK_SH : LOCK_EX) != 0)
        say(o, 1, "cannot lock %s: %s; recovering without the lock", dir, strerror(errno));
    struct alive_cache alive = {.n = 0};
    struct target *t = NULL;
    size_t nt = 0;
    struct sibling *sib = NULL; /* sizes of the CLOSED and BYPASS parts seen */
    size_t nsib = 0;
    struct removal *rm = NULL;
    size_t nrm = 0;
    struct latest *latest = NULL;
    size_t nlatest = 0;
    struct guards guards;
    guards_init(&guards);
    int failed = 0;
    size_t nlist = 0;
    struct listed *list = list_parts(d, dir, &nlist);
    if (!list && nlist) {
        say(o, 1, "out of memory listing %s", dir);
        closedir(d);
        return 1;
    }
    res->listed = 1;
    for (size_t li = 0; li < nlist; li++) {
        const char *file = list[li].file;
        struct nvc_part p;
        const char *problem;
        if (nvc_part_open(&p, file, &problem)) {
            /* A part that cannot be used: left alone while its job may still be making it;
               removed when its creation was cut short (it never held data); else kept and
               reported, never read (a damaged header must not crash a recovery). */
            uint64_t job;
            int named = nvc_part_name_job(file, &job) == 0;
            if (named && ((o->own_job && job == o->own_job) || job_alive_cached(&alive, dir, job)))
                continue;
            if (named && problem == nvc_part_incomplete) {
                say(o, 0, "%s %s: %s", o->keep ? "leaving" : "removing", file, problem);
                if (!o->keep && unlink(file) != 0 && errno != ENOENT) {
                    say(o, 1, "unlink(%s) failed: %s", file, strerror(errno));
                    failed = 1;
                }
                continue;
            }
            say(o, 1, "%s: %s; it is kept and not read", file, problem);
            failed = 1;
            continue;
        }
        struct nvc_part_hdr *h = p.hdr;
        const char *name = real_name(h->path);
        int active = h->state == NVC_PART_ACTIVE || h->state == NVC_PART_DRAINING;
        if (nvc_part_elsewhere(h) && !o->any_host) {
            /* NVCACHE_DIR is shared with another host (a network file system): a process of the
               part's job may run there, unseen from here, and recovering (then removing) the
               part under it would lose what it syncs afterwards. That host recovers it. */
            if (active && wanted(o, name)) {
                char me[sizeof h->host];
                nvc_host_name(me, sizeof me);
                say(o, 0, "leaving %s: part of %s of job %016llx made on host %s, not this one (%s); recovered there "
                        "(nvcache-recover --any-host recovers it here)",
                     file, name, (unsigned long long)h->jobid, h->host, me);
                res->elsewhere++;
            }
            nvc_part_close(&p, 0);
            continue;
        }
        if ((o->own_job && h->jobid == o->own_job) || job_alive_cached(&alive, dir, h->jobid)) {
            /* The job still runs (NVCACHE_DIR is shared by a user's jobs on a node): its parts
               are its own to drain; written back and removed here, the data it syncs into them
               afterwards would be lost. */
            if (active && wanted(o, name)) {
                say(o, 0, "skipping %s: part of %s of job %016llx, which is still running", file, name,
                     (unsigned long long)h->jobid);
                res->skipped++;
            }
            nvc_part_close(&p, 0);
            continue;
        }
        if (!active) {
            /* A bypassed or closed part holds nothing its file lacks: removed, never used (its
               size must not re-extend a file the application truncated or removed since). Its
               size is remembered for an ACTIVE sibling of the same open (a crash during a bypass
               or between two representatives' CLOSED marks): that file's size is the maximum over
               all its parts. */
            struct sibling *ns = realloc(sib, (nsib + 1) * sizeof *sib);
            if (ns) {
                sib = ns;
                sib[nsib].fileid = h->fileid;
                sib[nsib].jobid = h->jobid;
                sib[nsib].size = h->size;
                snprintf(sib[nsib].path, sizeof sib[nsib].path, "%s", name);
                nsib++;
            }
            if (!o->keep && wanted(o, name) && ns)
                failed |= defer_removal(&rm, &nrm, file, SIZE_MAX, h->fileid, h->jobid);
            nvc_part_close(&p, 0);
            continue;
        }
        if (!wanted(o, name)) {
            nvc_part_close(&p, 0);
            continue;
        }
        if (h->temporary && !o->temporary) {
            /* A delete-on-close file's data is never written back; its part is debris once its
               job is gone (parts of running jobs were kept above). */
            say(o, 0, "%s %s: part of temporary (delete-on-close) file %s", o->keep ? "skipping" : "removing", file, name);
            nvc_part_close(&p, !o->keep);
            continue;
        }
        if (name[0] != '/') {
            say(o, 1, "%s names its file relative to a directory unknown here (%s); the part is kept", file, name);
            nvc_part_close(&p, 0);
            failed = 1;
            continue;
        }
        size_t i;
        for (i = 0; i < nt; i++) /* per job: file ids are per-process open counts */
            if (t[i].fileid == h->fileid && t[i].jobid == h->jobid && !strcmp(t[i].path, name))
                break;
        if (i == nt) {
            struct target *nt2 = realloc(t, (nt + 1) * sizeof *t);
            if (!nt2) {
                nvc_part_close(&p, 0);
                failed = 1;
                break;
            }
            t = nt2;
            memset(&t[nt], 0, sizeof *t);
            snprintf(t[nt].path, sizeof t[nt].path, "%s", name);
            t[nt].fileid = h->fileid;
            t[nt].jobid = h->jobid;
            t[nt].later = -1;
            nt++;
        }
        t[i].parts++;
        int rc = recover_part(o, &p, job_latest_write(list, nlist, h->jobid, h->fileid, &latest, &nlatest), &guards,
                              &t[i].later, &t[i].bytes);
        if (rc < 0)
            failed = 1;
        if (rc == -2)
            t[i].replaced = 1;
        if (rc == -1)
            t[i].failed = 1;
        if (rc == 1)
            t[i].rewritten = 1;
        if (t[i].later == 1) {
            /* Nothing of this target goes into the file: unless another target of the path does,
               a job opening it need not wait for this recovery. */
            size_t j = 0;
            while (j < nt && (strcmp(t[j].path, name) || t[j].later != 0))
                j++;
            if (j == nt)
                guard_drop(o, &guards, name);
        }
        if (!rc && h->size > t[i].size)
            t[i].size = h->size;
        if (rc >= 0 && !o->keep && !o->dry)
            failed |= defer_removal(&rm, &nrm, file, i, h->fileid, h->jobid);
        nvc_part_close(&p, 0);
    }
    free(list);
    free(latest);
    for (size_t k = 0; k < nsib; k++)
        for (size_t i = 0; i < nt; i++)
            if (t[i].fileid == sib[k].fileid && t[i].jobid == sib[k].jobid && !strcmp(t[i].path, sib[k].path) &&
                sib[k].size > t[i].size)
                t[i].size = sib[k].size;
    free(sib);
    for (size_t i = 0; i < nt; i++) {
        if (t[i].replaced) {
            say(o, 0, "kept the parts of %s: the file there now is not the one job %016llx wrote, or a later job wrote it",
                 t[i].path, (unsigned long long)t[i].jobid);
            res->kept++;
            continue;
        }
        if (t[i].rewritten && !t[i].bytes && !t[i].failed) {
            say(o, 0, "%s %s: job %016llx's parts hold nothing dirty and a later job wrote the file; its size is left "
                      "as that job left it",
                 o->dry || o->keep ? "would remove the parts of" : "removed the parts of", t[i].path,
                 (unsigned long long)t[i].jobid);
            res->recovered++;
            continue;
        }
        /* Only ever grows the file: a part sees its own writes, not those of parts closed or on
           other hosts, and a shrinking set_size was made durable in the file when it ran
           (nvc_set_size), so cutting the file to a part's size would drop synced data. */
        if (!o->dry && grow_file(o, t[i].path, t[i].size) != 0) {
            failed = 1;
            t[i].failed = 1;
        }
        if (t[i].failed)
            res->kept++;
        else
            res->recovered++;
        say(o, 0, "%s %s: %d part(s), %llu dirty byte(s) written back, size %llu",
             o->dry ? "would recover" : t[i].failed ? "partly recovered (a part that failed is kept)" : "recovered",
             t[i].path, t[i].parts, (unsigned long long)t[i].bytes, (unsigned long long)t[i].size);
    }
    guards_release(o, &guards); /* every target's bytes and size are durable, or kept in its parts */
    /* Only now, with every target's bytes and size durable, are the parts that held them
       removed; a part of a target that failed (or was kept) stays, and so does a closed or
       bypassed part whose size a kept target of the same open may need. */
    for (size_t r = 0; r < nrm; r++) {
        int keep = 0;
        for (size_t i = 0; i < nt && !keep; i++)
            keep = (rm[r].target == i || (rm[r].target == SIZE_MAX && t[i].fileid == rm[r].fileid &&
                                          t[i].jobid == rm[r].jobid)) &&
                   (t[i].failed || t[i].replaced);
        if (!keep && unlink(rm[r].file) != 0 && errno != ENOENT) {
            say(o, 1, "unlink(%s) failed: %s", rm[r].file, strerror(errno));
            failed = 1;
        }
    }
    free(rm);
    res->targets = (int)nt;
    if (!o->dry) {
        remove_stale_mailboxes(o, t, nt);
        nvc_job_locks_prune(dir);
    }
    free(t);
    closedir(d); /* releases the lock */
    return failed;
}
