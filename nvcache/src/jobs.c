/* jobs.c: whether an nvcache job still runs on this host, and the parts that jobs which ended
 * without writing them back left of a file.
 *
 * Every process of a job holds a shared lock on NVCACHE_DIR/nvcache-<job>.lock; the job runs while
 * anyone holds it (the lock goes with the last process of the job, whatever its PID, PID namespace
 * or /dev/shm). Where a job has no lock file, its manager's mailbox /dev/shm/nvcache-<job>-n<node>
 * says: the job runs while the PID it records lives. Used by nvcache-recover (which leaves running
 * jobs' parts alone) and by the open of a file (which finds a dead job's unrecovered parts).
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* True if /dev/shm entry `name` is an nvcache mailbox (nvcache-<16 hex>-n<node>). */
int nvc_is_mailbox_name(const char *name)
{
    if (strncmp(name, "nvcache-", 8))
        return 0;
    const char *p = name + 8;
    for (int i = 0; i < 16; i++, p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    if (strncmp(p, "-n", 2) || !p[2])
        return 0;
    for (p += 2; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* True if process pid runs (a zombie, killed and not yet reaped, does not). */
static int process_alive(int32_t pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* The PID of the process that created mailbox /dev/shm/`name` (0 when unknown or unreadable). */
static int32_t mailbox_creator(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    struct stat sb;
    int32_t pid = 0;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(struct nvc_mailbox)) {
        void *p = mmap(NULL, sizeof(struct nvc_mailbox), PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            pid = ((const struct nvc_mailbox *)p)->creator_pid;
            munmap(p, sizeof(struct nvc_mailbox));
        }
    }
    close(fd);
    return pid;
}

/* True if mailbox /dev/shm/`name` was created by a process that no longer exists (0 when the
   creator is alive, unknown or the mailbox cannot be read). */
int nvc_mailbox_is_stale(const char *name)
{
    int32_t pid = mailbox_creator(name);
    return pid > 0 && !process_alive(pid);
}

/* Job `jobid`'s lock file in dir. */
static void lock_name(char *buf, size_t n, const char *dir, uint64_t jobid)
{
    snprintf(buf, n, "%s/nvcache-%016llx.lock", dir, (unsigned long long)jobid);
}

int nvc_job_lock_hold(const char *dir, uint64_t jobid)
{
    char name[NVC_DIR_MAX + 64];
    lock_name(name, sizeof name, dir, jobid);
    /* A recovery removes lock files nobody holds: one it removed between this open and the lock
       is not the file at the name any more, so take the lock again on a new one. */
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        struct flock lk = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        struct stat held, now;
        if (fcntl(fd, F_OFD_SETLK, &lk) != 0) {
            close(fd);
            return -1;
        }
        if (fstat(fd, &held) == 0 && stat(name, &now) == 0 && held.st_ino == now.st_ino && held.st_dev == now.st_dev)
            return fd;
        close(fd);
    }
    return -1;
}

/* 1: a process holds job `jobid`'s lock in dir; 0: the lock file is there and nobody holds it
   (every process of the job ended); -1: no lock file (or it cannot be asked). */
static int job_lock_state(const char *dir, uint64_t jobid)
{
    char name[NVC_DIR_MAX + 64];
    lock_name(name, sizeof name, dir, jobid);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int r = fcntl(fd, F_OFD_GETLK, &lk);
    close(fd);
    return r != 0 ? -1 : lk.l_type != F_UNLCK;
}

void nvc_job_lock_remove(const char *dir, uint64_t jobid)
{
    char name[NVC_DIR_MAX + 64];
    lock_name(name, sizeof name, dir, jobid);
    unlink(name);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A growable list of job ids. */
struct ids {
    uint64_t *v;
    size_t n, cap;
};

/* Appends id to l; 0, or -1 when out of memory (l unchanged). */
static int ids_push(struct ids *l, uint64_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        uint64_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return 0;
}

void nvc_job_locks_prune(const char *dir)
{
    /* One pass over the directory: the jobs with a lock file nobody holds, and the jobs with a
       part left (kept by a failed recovery, or of a file not recovered), whose lock file still
       tells that the job is dead. */
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct ids dead = {0}, with_parts = {0};
    int ok = 1;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        unsigned long long job;
        char tail[8];
        uint64_t pjob;
        if (nvc_is_part_name(e->d_name) && nvc_part_name_job(e->d_name, &pjob) == 0)
            ok = ids_push(&with_parts, pjob) == 0;
        else if (sscanf(e->d_name, "nvcache-%16llx%7s", &job, tail) == 2 && !strcmp(tail, ".lock") &&
                 job_lock_state(dir, job) == 0)
            ok = ids_push(&dead, job) == 0;
    }
    closedir(d);
    if (ok && dead.n) {
        if (with_parts.n)
            qsort(with_parts.v, with_parts.n, sizeof *with_parts.v, cmp_u64);
        for (size_t i = 0; i < dead.n; i++)
            if (!with_parts.n || !bsearch(&dead.v[i], with_parts.v, with_parts.n, sizeof *with_parts.v, cmp_u64))
                nvc_job_lock_remove(dir, dead.v[i]);
    }
    free(dead.v);
    free(with_parts.v);
}

/* True if job `jobid` still runs (see nvcache_internal.h): its lock, else its mailboxes' creators. */
int nvc_job_alive(const char *dir, uint64_t jobid)
{
    int held = job_lock_state(dir, jobid);
    if (held >= 0)
        return held;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "nvcache-%016llx-n", (unsigned long long)jobid);
    DIR *shm = opendir("/dev/shm");
    struct dirent *e;
    int alive = 0;
    while (shm && !alive && (e = readdir(shm))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) || !nvc_is_mailbox_name(e->d_name))
            continue;
        alive = process_alive(mailbox_creator(e->d_name));
    }
    if (shm)
        closedir(shm);
    return alive;
}

/* A part that a job which ended without writing it back left in NVCACHE_DIR. */
struct dead_part {
    char file[2048];
    struct nvc_file_id id;
    uint64_t jobid;
};

static struct {
    pthread_mutex_t lock;
    int scanned;
    struct dead_part *p;
    size_t n;
} dead = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0};

/* Appends part file `file` to dead.p if a dead job other than own_job left data in it. A part
   another host made counts too (its job runs, if at all, where this host cannot see it): marking
   it only makes recovery keep it, while leaving it unmarked let that host's next recovery write
   its older bytes over what this job writes. */
static void scan_part(const char *dir, const char *file, uint64_t own_job)
{
    int fd = open(file, O_RDONLY);
    if (fd < 0)
        return;
    struct nvc_part_hdr *h = malloc(sizeof *h);
    if (h && pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && !memcmp(h->magic, "NVCPART1", 8) &&
        nvc_part_version_known(h->version) && h->jobid != own_job && !h->temporary &&
        (h->state == NVC_PART_ACTIVE || h->state == NVC_PART_DRAINING) && h->file_id.ino && !nvc_job_alive(dir, h->jobid)) {
        struct dead_part *np = realloc(dead.p, (dead.n + 1) * sizeof *np);
        if (np) {
            dead.p = np;
            snprintf(np[dead.n].file, sizeof np[dead.n].file, "%s", file);
            np[dead.n].id = h->file_id;
            np[dead.n].jobid = h->jobid;
            dead.n++;
        }
    }
    free(h);
    close(fd);
}

int nvc_dead_parts(const char *dir, uint64_t own_job, const struct nvc_file_id *id, uint64_t by, uint64_t *job)
{
    pthread_mutex_lock(&dead.lock);
    if (!dead.scanned) {
        /* Once per process: dead jobs stay dead, and a directory of many open files' parts read
           at every open cost O(files^2) (many_files: 1900 opens). A job that dies while this one
           runs is not seen. */
        dead.scanned = 1;
        DIR *d = opendir(dir);
        char own[32];
        snprintf(own, sizeof own, "nvcache-%016llx-", (unsigned long long)own_job);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            /* This job's own parts (nvc_part_name) need no look inside. */
            if (!nvc_is_part_name(e->d_name) || !strncmp(e->d_name, own, strlen(own)))
                continue;
            char file[2048];
            snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
            scan_part(dir, file, own_job);
        }
        if (d)
            closedir(d);
    }
    int n = 0;
    for (size_t i = 0; i < dead.n; i++) {
        /* The device is not compared, as in nvcache-recover: a file system's device number
           changes when it is mounted again (NVRAM that survived a reboot). */
        if (!nvc_file_id_same(&dead.p[i].id, id, 0))
            continue;
        n++;
        if (job)
            *job = dead.p[i].jobid;
        int fd = by ? open(dead.p[i].file, O_RDWR) : -1;
        uint64_t v = by;
        if (fd >= 0 && pwrite(fd, &v, sizeof v, (off_t)offsetof(struct nvc_part_hdr, superseded_by)) == (ssize_t)sizeof v)
            fdatasync(fd);
        if (fd >= 0)
            close(fd);
    }
    pthread_mutex_unlock(&dead.lock);
    return n;
}

int nvc_own_kept_parts(const char *dir, uint64_t own_job, const struct nvc_file_id *id, uint64_t open_fileid,
                       int mark)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char own[32];
    snprintf(own, sizeof own, "nvcache-%016llx-", (unsigned long long)own_job);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!nvc_is_part_name(e->d_name) || strncmp(e->d_name, own, strlen(own)))
            continue;
        char file[2048];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        struct nvc_part p;
        const char *problem;
        if (nvc_part_open(&p, file, &problem))
            continue;
        struct nvc_part_hdr *h = p.hdr;
        uint64_t cursor = 0, off, len;
        if (h->jobid == own_job && h->fileid != open_fileid && !h->temporary && !h->superseded_by &&
            (h->state == NVC_PART_ACTIVE || h->state == NVC_PART_DRAINING) && h->file_id.ino &&
            nvc_file_id_same(&h->file_id, id, 0) && nvc_part_next_dirty(&p, &cursor, &off, &len, NULL)) {
            n++;
            if (mark) {
                h->superseded_by = own_job;
                nvc_part_persist(&p, &h->superseded_by, sizeof h->superseded_by);
            }
        }
        nvc_part_close(&p, 0);
    }
    closedir(d);
    return n;
}
