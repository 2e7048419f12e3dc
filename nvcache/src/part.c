/* part.c: one NVRAM part of a cached file.
 *
 * A part file (in NVCACHE_DIR) is mapped with libpmem: [header 4 KiB][bitmap][data][byte masks].
 * Data bytes are written and persisted first, then which of a page's bytes they are (for a page
 * written in part), then their dirty bits (one per 4 KiB page), then the write is
 * acknowledged, so every acknowledged write is recoverable (recover.c). Space is reserved with
 * posix_fallocate before it is touched so that a full device gives ENOSPC instead of SIGBUS.
 *
 * Exact writes: a drain or a recovery writes back only the bytes the job wrote. Written back
 * whole, a page partly written carried its other bytes -- the file's contents when the job
 * opened it, or zeros -- over what another job wrote into that page meanwhile (two jobs writing
 * disjoint bytes of one page: the last close undid the other's bytes, where plain MPI-IO keeps
 * both). Per page a "partial" bit (its mask says which bytes), a "whole" bit (a write covered all
 * of it; it wins, so that a write racing a partial one is never cut to the mask) and a mask of a
 * bit per byte after the data. The bitmap words interleave (dirty, partial, whole for each 64
 * pages), so one persist covers a write's three; the mask is persisted before them. A mask page
 * (the masks of 8 data pages) is allocated only when a partial write first touches it, so parts
 * written in whole pages take no mask space. Where one cannot be (the device is full) the page
 * is marked whole, as before exact writes. Version 2 parts have dirty words only.
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

/* NVRAM is reserved in steps that grow with the part: the first reservation rounds up to
 * RESERVE_MIN, later ones to the space already reserved, never more than RESERVE_STEP at a time.
 * Small files then cost a small fallocate (and a small unlink at close) instead of 4 MiB. */
#define RESERVE_MIN (64ull << 10)
#define RESERVE_STEP (4ull << 20)

void nvc_part_persist(struct nvc_part *p, const void *addr, size_t len)
{
    if (!len)
        return;
    if (p->is_pmem)
        pmem_persist(addr, len);
    else if (pmem_msync(addr, len) != 0)
        nvc_msg("pmem_msync(%s) failed: %s", p->file, strerror(errno));
}

/* Bytes of one page's mask of written bytes. */
#define MASK_BYTES NVC_MASK_BYTES

/* Bitmap words per 64 pages: dirty only (version 2), or dirty, partial and whole. */
static uint64_t bitmap_stride(uint32_t version)
{
    return version >= 3 ? 3 : 1;
}

/* Bytes of the bitmap words of the first `pages` pages, in whole pages of the file. */
static uint64_t bitmap_bytes(uint64_t pages, uint32_t version)
{
    uint64_t bm = (pages + 63) / 64 * 8 * bitmap_stride(version);
    return (bm + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
}

/* The offsets of a header's regions from its capacity and version. */
static void layout(struct nvc_part_hdr *h)
{
    h->bitmap_off = NVC_PAGE;
    h->data_off = NVC_PAGE + bitmap_bytes(h->capacity / NVC_PAGE, h->version);
    h->mask_off = h->version >= 3 ? h->data_off + h->capacity : 0;
}

/* The length of a part file with header h (its layout set). */
static uint64_t layout_len(const struct nvc_part_hdr *h)
{
    if (!h->mask_off)
        return h->data_off + h->capacity;
    return h->mask_off + h->capacity / NVC_PAGE * MASK_BYTES;
}

static void attach(struct nvc_part *p)
{
    p->hdr = (struct nvc_part_hdr *)p->base;
    p->dirty = (uint64_t *)(p->base + p->hdr->bitmap_off);
    p->stride = (unsigned)bitmap_stride(p->hdr->version);
    p->data = p->base + p->hdr->data_off;
    p->masks = p->hdr->mask_off ? p->base + p->hdr->mask_off : NULL;
}

/* The dirty, partial and whole bitmap words of pages 64 i .. 64 i + 63 (the last two only with
 * masks). */
static inline uint64_t *dirty_word(const struct nvc_part *p, uint64_t i)
{
    return &p->dirty[i * p->stride];
}

static inline uint64_t *partial_word(const struct nvc_part *p, uint64_t i)
{
    return &p->dirty[i * 3 + 1];
}

static inline uint64_t *whole_word(const struct nvc_part *p, uint64_t i)
{
    return &p->dirty[i * 3 + 2];
}

/* Maps len bytes of an open part file. Like pmem_map_file: MAP_SYNC first (a DAX file system:
 * stores are durable after a cache flush, is_pmem = 1), else a plain shared mapping (pmem_msync).
 * Whether the directory supports MAP_SYNC is learnt once per process: parts live in one
 * directory, and the refused attempt was one syscall per mapping. The kernel aligns DAX and tmpfs
 * mappings for huge pages itself (libpmem's reserve-and-realign took two more syscalls). */
static void *map_fd(int fd, size_t len, int *is_pmem)
{
    static int map_sync = -1; /* -1 unknown, 0 refused, 1 works */
    void *b = MAP_FAILED;
    if (map_sync != 0) {
        b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
        if (b != MAP_FAILED) {
            map_sync = 1;
            *is_pmem = 1;
            return b;
        }
        if (errno != EOPNOTSUPP && errno != EINVAL)
            return NULL;
        map_sync = 0;
    }
    b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *is_pmem = 0;
    return b == MAP_FAILED ? NULL : b;
}

int nvc_part_create(struct nvc_part *p, const char *file, const struct nvc_part_hdr *init)
{
    memset(p, 0, sizeof *p);
    snprintf(p->file, sizeof p->file, "%s", file);
    p->fd = -1;
    /* Header page and the first bitmap page (the dirty bits of the first 128 MiB of data; 42 MiB
       with the partial and whole bits beside them). */
    static __thread uint8_t first[2 * NVC_PAGE];
    struct nvc_part_hdr *h = (struct nvc_part_hdr *)first;
    memset(first, 0, sizeof first);
    *h = *init;
    layout(h);
    size_t len = layout_len(h);
    int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT && nvc_mkdirs(nvc_cfg.dir) == 0) /* the directory went away */
        fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        nvc_msg("open(%s) failed: %s", file, strerror(e));
        return -e;
    }
    /* The header and the first bitmap page are written, not mapped and stored: a full device says
       ENOSPC here instead of SIGBUS later, with no fallocate. Durability: on a DAX file system
       (is_pmem below) write() itself makes the bytes durable; through the page cache the header
       page is msync'ed by the first reservation (nvc_part_reserve persists `reserved`, in the same
       page), which precedes every write of data, so no acknowledged write depends on an msync here.
       The rest of the file is sparse: the data area and further bitmap pages are reserved with
       fallocate before they are touched. */
    ssize_t w = pwrite(fd, first, sizeof first, 0);
    int e = w == (ssize_t)sizeof first ? 0 : w < 0 ? errno : ENOSPC;
    if (!e && ftruncate(fd, (off_t)len) != 0)
        e = errno;
    void *base = NULL;
    if (!e && !(base = map_fd(fd, len, &p->is_pmem)))
        e = errno ? errno : EIO;
    if (e) {
        nvc_msg("creating part %s (%zu bytes, sparse) failed: %s", file, len, strerror(e));
        close(fd);
        unlink(file);
        return -e;
    }
    p->base = base;
    p->map_len = len;
    p->fd = fd;
    p->bm_alloc = NVC_PAGE;
    p->own_map = 1;
    attach(p);
    return 0;
}

int nvc_mkdirs(const char *dir)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static void file_id_fill(const struct statx *sx, struct nvc_file_id *id)
{
    memset(id, 0, sizeof *id);
    id->dev = ((uint64_t)sx->stx_dev_major << 32) | sx->stx_dev_minor;
    id->ino = sx->stx_ino;
    if (sx->stx_mask & STATX_BTIME) {
        id->has_btime = 1;
        id->btime_sec = sx->stx_btime.tv_sec;
        id->btime_nsec = sx->stx_btime.tv_nsec;
    }
}

size_t nvc_fs_prefix_len(const char *path)
{
    const char *colon = strchr(path, ':'), *slash = strchr(path, '/');
    if (!colon || colon == path || (slash && slash < colon))
        return 0;
#ifdef OMPI_MAJOR_VERSION
    /* Open MPI's OMPIO opens "ufs:a.dat" as a file of that name, its ROMIO component as "a.dat":
       the file that exists after the open tells which. */
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
#endif
    /* MPICH's ROMIO strips any file-system name it knows (in any case) and refuses the others. */
    return (size_t)(colon - path) + 1;
}

int nvc_file_id_get(const char *path, struct nvc_file_id *id)
{
    struct statx sx;
    const unsigned want = STATX_INO | STATX_BTIME;
    memset(id, 0, sizeof *id);
    if (statx(AT_FDCWD, path + nvc_fs_prefix_len(path), 0, want, &sx) != 0)
        return -1;
    file_id_fill(&sx, id);
    return 0;
}

int nvc_file_id_fd(int fd, struct nvc_file_id *id)
{
    struct statx sx;
    memset(id, 0, sizeof *id);
    if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) != 0)
        return -1;
    file_id_fill(&sx, id);
    return 0;
}

int nvc_file_id_same(const struct nvc_file_id *a, const struct nvc_file_id *b, int with_dev)
{
    if (!a->ino)
        return 1;
    if (a->ino != b->ino || (with_dev && a->dev != b->dev))
        return 0;
    return !(a->has_btime && b->has_btime) || (a->btime_sec == b->btime_sec && a->btime_nsec == b->btime_nsec);
}

/* A name in the directory of `near` that leads to file `id`, into path (n bytes); 0 or -1. */
static int find_in_dir(const struct nvc_file_id *id, int with_dev, const char *near, char *path, size_t n)
{
    char dir[NVC_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", near);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *(slash == dir ? slash + 1 : slash) = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int found = -1;
    struct dirent *e;
    while (found && (e = readdir(d))) {
        if (e->d_ino != id->ino || (size_t)snprintf(path, n, "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name) >= n)
            continue;
        struct nvc_file_id now;
        if (nvc_file_id_get(path, &now) == 0 && nvc_file_id_same(id, &now, with_dev))
            found = 0;
    }
    closedir(d);
    return found;
}

int nvc_file_find_open(const struct nvc_file_id *id, int with_dev, const char *near, char *path, size_t n, int *held)
{
    *held = -1;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int found = -1;
    long linked = -1;
    struct dirent *e;
    while (found && (e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || fd == dirfd(d))
            continue;
        struct stat sb;
        struct nvc_file_id now;
        if (fstat((int)fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink == 0 || nvc_file_id_fd((int)fd, &now) != 0 ||
            !id->ino || !nvc_file_id_same(id, &now, with_dev))
            continue;
        /* Still linked: the name this descriptor was opened by leads there unless it was
           renamed (the kernel then gives the new name) or removed after the file was linked
           elsewhere (given as "... (deleted)": looked for beside the old name, below). */
        linked = fd;
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%ld", fd);
        ssize_t len = readlink(link, path, n - 1);
        struct nvc_file_id again;
        if (len > 0 && (size_t)len < n - 1 && path[0] == '/') {
            path[len] = 0;
            if (nvc_file_id_get(path, &again) == 0 && nvc_file_id_same(id, &again, with_dev))
                found = 0;
        }
    }
    closedir(d);
    if (!found || linked < 0)
        return found;
    if (find_in_dir(id, with_dev, near, path, n) == 0)
        return 0;
    /* Linked only in a directory not searched (the name was removed after a link elsewhere):
       a descriptor leads to the file. A copy of our own, checked again, since another thread
       of the program may close that descriptor and reuse its number for another file. */
    int dup = fcntl((int)linked, F_DUPFD_CLOEXEC, 0);
    struct nvc_file_id again;
    if (dup < 0)
        return -1;
    if (nvc_file_id_fd(dup, &again) != 0 || !nvc_file_id_same(id, &again, with_dev) ||
        (size_t)snprintf(path, n, "/proc/self/fd/%d", dup) >= n) {
        close(dup);
        return -1;
    }
    *held = dup;
    return 0;
}

uint64_t nvc_fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

uint64_t nvc_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int nvc_file_mark_writer(const char *path, uint64_t jobid)
{
    char v[64];
    int n = snprintf(v, sizeof v, "%016llx %llu", (unsigned long long)jobid, (unsigned long long)nvc_realtime_ns());
    return setxattr(path, NVC_WRITER_XATTR, v, (size_t)n, 0) == 0 ? 0 : -errno;
}

/* The job and time of attribute value v (n bytes, or -1 with errno set by its read): as
   nvc_file_writer. */
static int parse_writer(char *v, ssize_t n, uint64_t *jobid, uint64_t *when_ns)
{
    if (n < 0)
        return errno == ENODATA ? 0 : -1;
    v[n] = 0;
    unsigned long long j, t;
    int used = 0;
    if (sscanf(v, "%16llx %llu%n", &j, &t, &used) != 2 || used != n)
        return -1;
    *jobid = j;
    *when_ns = t;
    return 1;
}

int nvc_fd_rw(int fd, int write, uint64_t off, uint8_t *buf, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        ssize_t r = write ? pwrite(fd, buf + done, n - done, (off_t)(off + done))
                          : pread(fd, buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (r == 0 && write))
            return -1;
        if (r == 0)
            break;
        done += (uint64_t)r;
    }
    return 0;
}

int nvc_file_lock_range(int fd, uint64_t off, uint64_t len, int lock)
{
    if (fd < 0 || !len)
        return -1;
    struct flock fl = {.l_type = (short)(lock ? F_WRLCK : F_UNLCK), .l_whence = SEEK_SET, .l_start = (off_t)off,
                       .l_len = (off_t)len};
    if (!lock)
        return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -1;
    /* Not a blocking wait. Another nvcache merge (an OFD lock) is waited for, up to 1 s; a lock
       another program holds (a process's POSIX lock: whole-file locks are common) is not waited
       for at all, as plain MPI-IO's writes do not wait for it. */
    for (int i = 0; i < 2000; i++) {
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
            return 0;
        if (errno != EAGAIN && errno != EACCES && errno != EINTR)
            return -1;
        struct flock q = fl;
        if (errno != EINTR && fcntl(fd, F_OFD_GETLK, &q) == 0 && q.l_type != F_UNLCK && q.l_pid != -1)
            return -2;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

int nvc_file_writer(int fd, uint64_t *jobid, uint64_t *when_ns)
{
    char v[64];
    return parse_writer(v, fgetxattr(fd, NVC_WRITER_XATTR, v, sizeof v - 1), jobid, when_ns);
}

int nvc_file_ensure_writer(const char *path, uint64_t jobid, uint64_t since_ns)
{
    char v[64];
    uint64_t j = 0, t = 0;
    if (parse_writer(v, getxattr(path, NVC_WRITER_XATTR, v, sizeof v - 1), &j, &t) == 1 && j == jobid && t >= since_ns)
        return 0;
    return nvc_file_mark_writer(path, jobid);
}

int nvc_file_guard_set(int fd, const char *path, const char *name)
{
    char v[NVC_GUARD_VALUE_MAX], host[64];
    nvc_host_name(host, sizeof host);
    int n = snprintf(v, sizeof v, "%llu %d %s", (unsigned long long)nvc_realtime_ns(), (int)getpid(), host);
    if (n >= (int)sizeof v)
        n = (int)sizeof v - 1;
    int rc = fd >= 0 ? fsetxattr(fd, name, v, (size_t)n, 0) : setxattr(path, name, v, (size_t)n, 0);
    return rc == 0 ? 0 : -errno;
}

int nvc_file_guard_clear(const char *path, const char *name)
{
    return removexattr(path, name) == 0 || errno == ENODATA ? 0 : -errno;
}

/* The names of path's extended attributes ("a\0b\0"): in stack (of n bytes) when they fit, else
   in *heap (malloc'ed here, freed by the caller); their total length, or -1 (errno set). */
static ssize_t list_names(const char *path, char *stack, size_t n, char **heap, char **names)
{
    ssize_t len = listxattr(path, stack, n);
    *names = stack;
    for (int tries = 0; len < 0 && errno == ERANGE && tries < 4; tries++) {
        ssize_t need = listxattr(path, NULL, 0);
        if (need < 0)
            return -1;
        free(*heap);
        if (!(*heap = malloc((size_t)need + 256)))
            return -1;
        *names = *heap;
        len = listxattr(path, *heap, (size_t)need + 256);
    }
    return len;
}

/* The number of guards on path that a recovery refreshed less than NVC_GUARD_STALE_NS ago by their
   own clock, a hash of their names and values in *sig, the first one's value in value (of n
   bytes); never blocks. */
static int fresh_guards(const char *path, uint64_t *sig, char *value, size_t n)
{
    char stack[1024], *heap = NULL, *names, v[NVC_GUARD_VALUE_MAX];
    ssize_t len = list_names(path, stack, sizeof stack, &heap, &names);
    static int said;
    if (len < 0 && errno != ENOTSUP && errno != EOPNOTSUPP && !said) {
        said = 1;
        nvc_msg("%s: cannot list its extended attributes (%s): this job does not wait for a recovery writing a dead "
                "job's bytes back into it (said once)",
                path, strerror(errno));
    }
    const size_t plen = strlen(NVC_GUARD_XATTR_PREFIX);
    uint64_t now = nvc_realtime_ns(), h = NVC_FNV1A_BASIS;
    int fresh = 0;
    for (char *nm = names; len > 0 && nm < names + len; nm += strlen(nm) + 1) {
        if (strncmp(nm, NVC_GUARD_XATTR_PREFIX, plen))
            continue;
        ssize_t got = getxattr(path, nm, v, sizeof v - 1);
        if (got <= 0)
            continue; /* removed since the listing */
        v[got] = 0;
        unsigned long long beat;
        if (sscanf(v, "%llu", &beat) != 1 || beat + NVC_GUARD_STALE_NS <= now)
            continue;
        if (!fresh++)
            snprintf(value, n, "%s", v);
        h = nvc_fnv1a(nvc_fnv1a(h, nm), v);
    }
    free(heap);
    *sig = h;
    return fresh;
}

void nvc_file_wait_recoveries(const char *path)
{
    char value[NVC_GUARD_VALUE_MAX];
    uint64_t sig, last_sig = 0, waited_ns = 0, unchanged_ns = 0;
    const uint64_t poll_ns = 10 * 1000 * 1000;
    int said = 0;
    while (fresh_guards(path, &sig, value, sizeof value)) {
        /* A recovery refreshes its guard every NVC_GUARD_REFRESH_NS: guards that stay the same
           for NVC_GUARD_STALE_NS of this process's time are a dead recovery's (whose host's clock
           may run ahead of this one's). */
        unchanged_ns = sig == last_sig ? unchanged_ns + poll_ns : 0;
        last_sig = sig;
        if (unchanged_ns >= NVC_GUARD_STALE_NS) {
            nvc_msg("%s: a recovery's guard (%s) was not refreshed for %llu s; taking it for a dead recovery's", path,
                    value, (unsigned long long)(NVC_GUARD_STALE_NS / 1000000000ull));
            break;
        }
        if (waited_ns >= 1000000000ull && !said) {
            said = 1;
            unsigned long long beat;
            int pid = 0, used = 0;
            sscanf(value, "%llu %d %n", &beat, &pid, &used);
            nvc_msg("%s: a recovery of it (process %d on host %s) is writing a dead job's bytes back; waiting "
                    "for it to end before writing here",
                    path, pid, used ? value + used : "?");
        }
        struct timespec ts = {0, (long)poll_ns};
        nanosleep(&ts, NULL);
        waited_ns += poll_ns;
    }
}

int nvc_part_make(struct nvc_part *p, uint64_t jobid, uint64_t fileid, uint32_t nparts, uint32_t index, uint64_t stripe,
                  uint64_t size, int temporary, int reply, const char *path, const struct nvc_file_id *id)
{
    static int dir_made; /* once per process; nvc_part_create makes it again if it went away */
    int e = dir_made ? 0 : nvc_mkdirs(nvc_cfg.dir);
    if (e) {
        nvc_msg("cannot create NVCACHE_DIR %s: %s", nvc_cfg.dir, strerror(-e));
        return e;
    }
    dir_made = 1;
    struct nvc_part_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, "NVCPART1", 8);
    h.version = NVC_PART_VERSION;
    h.state = NVC_PART_ACTIVE;
    h.jobid = jobid;
    h.fileid = fileid;
    h.nparts = nparts;
    h.index = index;
    h.stripe = stripe;
    h.size = size;
    h.temporary = (uint32_t)(temporary & 1);
    h.reply = (uint32_t)reply;
    h.capacity = nvc_cfg.part_max / NVC_PAGE * NVC_PAGE;
    /* The part file (header, bitmap, data: sparse, up to its capacity) must stay within the
       process's file size limit, or its ftruncate raises SIGXFSZ, which kills the job where
       plain MPI-IO under the same `ulimit -f` runs: a smaller part (writes past it go to the
       file directly, as past any part's capacity). */
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY) {
        /* The data and the masks take 9/8 of the capacity; the header and the bitmap words (three
           per 64 pages) the rest, in whole pages: shrink by pages until the layout fits. */
        uint64_t lim = (uint64_t)fsize.rlim_cur, room = 6 * NVC_PAGE + 3 * (lim / (8 * NVC_PAGE));
        uint64_t fit = lim > room ? (lim - room) / 9 * 8 / NVC_PAGE * NVC_PAGE : 0;
        if (fit < h.capacity)
            h.capacity = fit;
        for (;;) {
            layout(&h);
            if (!h.capacity || layout_len(&h) <= lim)
                break;
            h.capacity -= NVC_PAGE;
        }
        if (!h.capacity)
            return -EFBIG;
    }
    snprintf(h.path, sizeof h.path, "%s", path);
    if (id)
        h.file_id = *id;
    nvc_host_name(h.host, sizeof h.host);
    h.last_write_ns = nvc_realtime_ns();
    char file[1200];
    nvc_part_name(file, sizeof file, jobid, fileid, index);
    return nvc_part_create(p, file, &h);
}

void nvc_host_name(char *out, size_t n)
{
    /* uname, not gethostname: a name as long as the buffer or longer (Linux allows 64
       characters) made gethostname fail, which recorded "" (unknown) and disabled the other-host
       check both ways. Names are cut to the buffer the same way wherever they are compared. */
    struct utsname u;
    if (uname(&u) != 0)
        u.nodename[0] = 0;
    snprintf(out, n, "%s", u.nodename);
}

int nvc_part_elsewhere(const struct nvc_part_hdr *h)
{
    char me[sizeof h->host];
    nvc_host_name(me, sizeof me);
    return h->host[0] && me[0] && strncmp(h->host, me, sizeof me) != 0;
}

int nvc_is_part_name(const char *name)
{
    size_t L = strlen(name);
    return L >= 5 && !strcmp(name + L - 5, ".part");
}

void nvc_part_name(char *buf, size_t n, uint64_t jobid, uint64_t fileid, uint32_t index)
{
    snprintf(buf, n, "%s/nvcache-%016llx-%016llx-p%u.part", nvc_cfg.dir, (unsigned long long)jobid,
             (unsigned long long)fileid, index);
}

const char nvc_part_incomplete[] = "incomplete: its creation was interrupted before it could hold data";

const char *nvc_part_hdr_problem(const struct nvc_part_hdr *h, size_t mapped)
{
    if (mapped < sizeof *h || memcmp(h->magic, "NVCPART1", 8))
        return "not an nvcache part (bad magic or size)";
    if (!nvc_part_version_known(h->version))
        /* Version 1 (before direct access) had no reserved/writers/reply fields: its path and
           every later field would be read 16 bytes off. Version 2 has no exact-write region. */
        return "a header version this build does not read";
    struct nvc_part_hdr want = {.capacity = h->capacity, .version = h->version};
    layout(&want);
    if (h->capacity == 0 || h->capacity % NVC_PAGE || h->bitmap_off != want.bitmap_off ||
        h->data_off != want.data_off || h->mask_off != want.mask_off)
        return "corrupt header (capacity, bitmap, data or exact-write offset)";
    if (h->stripe == 0 || h->nparts == 0 || h->index >= h->nparts)
        return "corrupt header (stripe, part count or index)";
    /* Every byte the part can hold maps to a file offset (nvc_part_to_file) that an off_t holds,
       and so does the size: a flipped high bit of the stripe wrapped those offsets onto other
       parts' blocks, and recovery wrote there. */
    uint64_t far;
    if (__builtin_mul_overflow((h->capacity - 1) / h->stripe, (uint64_t)h->nparts, &far) ||
        __builtin_add_overflow(far, (uint64_t)h->index + 1, &far) || __builtin_mul_overflow(far, h->stripe, &far) ||
        far > (uint64_t)INT64_MAX || h->size > (uint64_t)INT64_MAX)
        return "corrupt header (stripe, part count or size beyond the largest file offset)";
    if (h->state < NVC_PART_ACTIVE || h->state > NVC_PART_CLOSED)
        return "corrupt header (state)";
    if (!memchr(h->path, 0, sizeof h->path) || !memchr(h->host, 0, sizeof h->host))
        return "corrupt header (file or host name not terminated)";
    if (h->capacity > mapped || h->data_off > mapped - h->capacity || layout_len(h) > mapped)
        /* Written last at creation (the file is extended to its full length after its first two
           pages, header and bitmap): a file no longer than those is a creation that was
           interrupted before any data could be written. A longer one was cut afterwards, and
           its dirty data may be all there is of synced bytes: kept, not removed. */
        return mapped <= 2 * NVC_PAGE ? nvc_part_incomplete : "damaged: shorter than its layout (truncated)";
    return NULL;
}

int nvc_part_name_job(const char *name, uint64_t *job)
{
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    char *end;
    if (strncmp(b, "nvcache-", 8))
        return -1;
    errno = 0;
    unsigned long long j = strtoull(b + 8, &end, 16);
    if (errno || end != b + 24 || *end != '-')
        return -1;
    *job = j;
    return 0;
}

int nvc_part_attach(struct nvc_part *p, const char *file, int keep_fd)
{
    memset(p, 0, sizeof *p);
    snprintf(p->file, sizeof p->file, "%s", file);
    p->fd = -1;
    int fd = open(file, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    void *base = NULL;
    size_t mapped = 0;
    if (fstat(fd, &sb) == 0 && sb.st_size >= (off_t)sizeof(struct nvc_part_hdr)) {
        mapped = (size_t)sb.st_size;
        base = map_fd(fd, mapped, &p->is_pmem);
    }
    if (!base) {
        close(fd);
        return -EINVAL;
    }
    if (nvc_part_hdr_problem((const struct nvc_part_hdr *)base, mapped)) {
        munmap(base, mapped);
        close(fd);
        return -EINVAL;
    }
    if (keep_fd)
        p->fd = fd;
    else
        close(fd);
    p->base = base;
    p->map_len = mapped;
    p->bm_alloc = NVC_PAGE; /* written at creation */
    p->own_map = 1;
    attach(p);
    return 0;
}

int nvc_part_open(struct nvc_part *p, const char *file, const char **problem)
{
    memset(p, 0, sizeof *p);
    snprintf(p->file, sizeof p->file, "%s", file);
    *problem = NULL;
    int fd = open(file, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        *problem = strerror(errno);
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    if ((uint64_t)sb.st_size < sizeof(struct nvc_part_hdr)) {
        /* Created, then killed before its header was written: it never held data. */
        close(fd);
        *problem = nvc_part_incomplete;
        return -EINVAL;
    }
    size_t mapped = (size_t)sb.st_size;
    void *base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        *problem = strerror(errno);
        return -EIO;
    }
    if ((*problem = nvc_part_hdr_problem((const struct nvc_part_hdr *)base, mapped))) {
        munmap(base, mapped);
        return -EINVAL;
    }
    p->base = base;
    p->map_len = mapped;
    p->fd = -1;
    p->own_map = 1;
    attach(p);
    return 0;
}

void nvc_part_close(struct nvc_part *p, int remove)
{
    if (p->base && p->own_map)
        munmap(p->base, p->map_len);
    else if (p->base)
        pmem_unmap(p->base, p->map_len);
    p->base = NULL;
    free(p->mask_known);
    p->mask_known = NULL;
    p->mask_known_words = 0;
    if (p->mask_fd > 0)
        close(p->mask_fd - 1); /* (-1: none was opened) */
    p->mask_fd = 0;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (remove && unlink(p->file) != 0 && errno != ENOENT)
        nvc_msg("unlink(%s) failed: %s", p->file, strerror(errno));
}

int nvc_part_reserve(struct nvc_part *p, uint64_t end, uint64_t *node_used, uint64_t node_cap)
{
    if (end <= p->alloc_end)
        return 0;
    if (end > p->hdr->capacity)
        return -ENOSPC;
    uint64_t step = p->alloc_end < RESERVE_MIN ? RESERVE_MIN : p->alloc_end;
    if (step > RESERVE_STEP)
        step = RESERVE_STEP;
    uint64_t want = (end + step - 1) / step * step;
    if (want > p->hdr->capacity)
        want = p->hdr->capacity;
    uint64_t grow = want - p->alloc_end;
    if (node_cap && *node_used + grow > node_cap) {
        /* Try the exact amount before giving up. */
        want = (end + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
        grow = want - p->alloc_end;
        if (*node_used + grow > node_cap)
            return -ENOSPC;
    }
    /* The bitmap words of the new pages first, then the data. */
    uint64_t bm_end = bitmap_bytes(want / NVC_PAGE, p->hdr->version);
    int e = 0;
    if (bm_end > p->bm_alloc) { /* the first bitmap page was written at creation */
        e = posix_fallocate(p->fd, (off_t)p->hdr->bitmap_off, (off_t)bm_end);
        if (!e)
            p->bm_alloc = bm_end;
    }
    if (!e)
        e = posix_fallocate(p->fd, (off_t)(p->hdr->data_off + p->alloc_end), (off_t)grow);
    if (e)
        return -e;
    *node_used += grow;
    p->alloc_end = want;
    /* Persisted before any byte of the new space is written: dirty bits exist only below it, so
       dirty scans (recovery included) stop there. Direct writers may now touch it. */
    __atomic_store_n(&p->hdr->reserved, want, __ATOMIC_RELEASE);
    nvc_part_persist(p, &p->hdr->reserved, sizeof p->hdr->reserved);
    return 0;
}

void nvc_part_persist_segments(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n)
{
    if (p->is_pmem) {
        for (uint32_t i = 0; i < n; i++)
            nvc_part_persist(p, p->data + segs[i].off, segs[i].len);
        return;
    }
    /* msync works on whole pages: one call per run of touched pages instead of one per segment
     * (a strided view writes hundreds of short rows into the same few pages). */
    uint64_t lo = 0, hi = 0;
    int have = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!segs[i].len)
            continue;
        uint64_t a = segs[i].off / NVC_PAGE * NVC_PAGE;
        uint64_t b = (segs[i].off + segs[i].len + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
        if (have && a <= hi && b >= lo) {
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
            continue;
        }
        if (have)
            nvc_part_persist(p, p->data + lo, hi - lo);
        lo = a;
        hi = b;
        have = 1;
    }
    if (have)
        nvc_part_persist(p, p->data + lo, hi - lo);
}

/* Mask pages allocated at once: the masks of 512 KiB of data (random small writes over a large
 * file paid a fallocate for nearly every write with one mask page at a time). */
#define MASK_CHUNK_PAGES 16u

/* Whether mask page mp (the masks of data pages 8 mp .. 8 mp + 7) is allocated, allocating its
 * chunk first if this process has not seen it allocated (any process's fallocate counts). */
static int mask_page_ready(struct nvc_part *p, uint64_t mp)
{
    size_t w = (size_t)(mp / 64);
    if (w < p->mask_known_words && (p->mask_known[w] >> (mp % 64) & 1))
        return 1;
    if (w >= p->mask_known_words) {
        size_t n = w + 1 > 2 * p->mask_known_words ? w + 1 : 2 * p->mask_known_words;
        uint64_t *k = realloc(p->mask_known, n * sizeof *k);
        if (!k)
            return 0;
        memset(k + p->mask_known_words, 0, (n - p->mask_known_words) * sizeof *k);
        p->mask_known = k;
        p->mask_known_words = n;
    }
    /* A rank writing directly holds no descriptor of the part (only its mapping): it opens one
       for this the first time. */
    if (p->fd < 0 && p->mask_fd == 0) {
        int fd = open(p->file, O_RDWR | O_CLOEXEC);
        p->mask_fd = fd >= 0 ? fd + 1 : -1; /* -1: it could not be opened; not tried again */
    }
    if (p->fd < 0 && p->mask_fd < 0)
        return 0;
    int fd = p->fd >= 0 ? p->fd : p->mask_fd - 1;
    uint64_t first = mp / MASK_CHUNK_PAGES * MASK_CHUNK_PAGES, end = first + MASK_CHUNK_PAGES;
    uint64_t all = (p->hdr->capacity / NVC_PAGE + 7) / 8; /* mask pages of the part */
    if (end > all)
        end = all;
    /* (the last mask page may hold fewer than 8 pages' masks: the file ends with them) */
    uint64_t at = p->hdr->mask_off + first * NVC_PAGE, to = p->hdr->mask_off + end * NVC_PAGE;
    if (to > layout_len(p->hdr))
        to = layout_len(p->hdr);
    if (posix_fallocate(fd, (off_t)at, (off_t)(to - at)) != 0)
        return 0;
#ifdef MADV_POPULATE_WRITE
    /* Mapped into this process at once: random small writes over a large file otherwise took a
       page fault on nearly every write, the first touch of its page's mask (a hint: the faults
       happen anyway where it fails). */
    madvise(p->base + at, to - at, MADV_POPULATE_WRITE);
#endif
    for (uint64_t q = first; q < end; q++)
        p->mask_known[q / 64] |= 1ull << (q % 64);
    return 1;
}

/* Sets the mask bits of bytes [s, e) of page pg (0 <= s < e <= NVC_PAGE); returns the mask
 * bytes touched, [*lo, *hi) of the mapping, for the caller to persist. */
static void mask_set(struct nvc_part *p, uint64_t pg, uint64_t s, uint64_t e, uint8_t **lo, uint8_t **hi)
{
    uint64_t *m = (uint64_t *)(p->masks + pg * MASK_BYTES);
    for (uint64_t w = s / 64; w <= (e - 1) / 64; w++) {
        uint64_t a = s > w * 64 ? s - w * 64 : 0, b = e < (w + 1) * 64 ? e - w * 64 : 64;
        uint64_t bits = b - a == 64 ? ~0ull : ((1ull << (b - a)) - 1) << a;
        __atomic_fetch_or(&m[w], bits, __ATOMIC_RELAXED);
    }
    *lo = (uint8_t *)&m[s / 64];
    *hi = (uint8_t *)&m[(e - 1) / 64 + 1];
}

/* Mask bytes written by one call and not yet persisted: one range, persisted when the next
 * mask lies more than a page away (a strided view's thousands of short rows in a few pages
 * persist once, not once each). */
struct mask_span {
    uint8_t *lo, *hi;
};

/* Persists the span's bytes, if any. */
static void mask_span_flush(struct nvc_part *p, struct mask_span *sp)
{
    if (sp->hi)
        nvc_part_persist(p, sp->lo, (size_t)(sp->hi - sp->lo));
}

static void mask_span_add(struct nvc_part *p, struct mask_span *sp, uint8_t *lo, uint8_t *hi)
{
    if (sp->hi && lo + NVC_PAGE >= sp->lo && lo <= sp->hi + NVC_PAGE) {
        sp->lo = lo < sp->lo ? lo : sp->lo;
        sp->hi = hi > sp->hi ? hi : sp->hi;
        return;
    }
    mask_span_flush(p, sp);
    sp->lo = lo;
    sp->hi = hi;
}

/* Records which bytes of their pages the segments wrote: a page covered whole gets its whole bit;
 * a page written in part gets its bytes in its mask and its partial bit (or the whole bit when
 * its mask page cannot be had). The masks are persisted here, the bits with the dirty bits (one
 * persist: a crash that keeps a dirty bit without its partial bit writes the page back whole,
 * one that keeps a partial bit without its dirty bit nothing, both as before exact writes). */
static void mark_exact(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n)
{
    struct mask_span span = {0};
    for (uint32_t i = 0; i < n; i++) {
        if (!segs[i].len)
            continue;
        uint64_t a = segs[i].off, b = segs[i].off + segs[i].len;
        uint64_t first = a / NVC_PAGE, last = (b - 1) / NVC_PAGE;
        for (uint64_t pg = first; pg <= last; pg++) {
            uint64_t lo = pg * NVC_PAGE, s = a > lo ? a - lo : 0, e = b < lo + NVC_PAGE ? b - lo : NVC_PAGE;
            uint64_t bit = 1ull << (pg % 64);
            if ((s == 0 && e == NVC_PAGE) || !mask_page_ready(p, pg / 8)) {
                if (!(__atomic_load_n(whole_word(p, pg / 64), __ATOMIC_RELAXED) & bit))
                    __atomic_fetch_or(whole_word(p, pg / 64), bit, __ATOMIC_RELAXED);
            } else {
                /* The partial bit before the mask bits: a drain's clear that runs between them
                   (nvc_part_clear_dirty: masks, then bits) leaves this page dirty without a
                   partial bit, written back whole, never dirty with an empty mask. (A strided
                   view sets the same bit for each of its rows in the page: a read first spares
                   the locked operation.) */
                if (!(__atomic_load_n(partial_word(p, pg / 64), __ATOMIC_SEQ_CST) & bit))
                    __atomic_fetch_or(partial_word(p, pg / 64), bit, __ATOMIC_SEQ_CST);
                uint8_t *lo, *hi;
                mask_set(p, pg, s, e, &lo, &hi);
                mask_span_add(p, &span, lo, hi);
            }
        }
    }
    mask_span_flush(p, &span);
}

void nvc_part_mark_dirty_segments(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n)
{
    if (p->masks)
        mark_exact(p, segs, n);
    uint64_t first_word = UINT64_MAX, last_word = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!segs[i].len)
            continue;
        uint64_t first = segs[i].off / NVC_PAGE, last = (segs[i].off + segs[i].len - 1) / NVC_PAGE;
        for (uint64_t pg = first; pg <= last; pg++)
            __atomic_fetch_or(dirty_word(p, pg / 64), 1ull << (pg % 64), __ATOMIC_RELAXED);
        if (first / 64 < first_word)
            first_word = first / 64;
        if (last / 64 > last_word)
            last_word = last / 64;
    }
    if (first_word != UINT64_MAX)
        nvc_part_persist(p, dirty_word(p, first_word), (last_word - first_word + 1) * p->stride * sizeof(uint64_t));
    /* A racy maximum over the node's writers (any recent time will do; see last_write_ns). */
    uint64_t now = nvc_realtime_ns();
    if (__atomic_load_n(&p->hdr->last_write_ns, __ATOMIC_RELAXED) < now)
        __atomic_store_n(&p->hdr->last_write_ns, now, __ATOMIC_RELAXED);
}
void nvc_part_clear_dirty(struct nvc_part *p, uint64_t off, uint64_t len)
{
    if (!len)
        return;
    uint64_t first = off / NVC_PAGE, last = (off + len - 1) / NVC_PAGE;
    /* The masks first (a crash then leaves a dirty page whose mask says nothing more to write:
       it was written back), then the three bits together (a crash that keeps only the dirty
       bit's clearing leaves a stale partial bit on a clean page with an empty mask, where the
       next write's marks are all that count; one that keeps only the others' writes the page
       back whole once more). A mask is read or cleared only where its page's partial bit says
       it exists. */
    if (p->masks) {
        struct mask_span span = {0}; /* (neighbouring masks persisted together, as written) */
        for (uint64_t pg = first; pg <= last; pg++) {
            if (!(__atomic_load_n(partial_word(p, pg / 64), __ATOMIC_RELAXED) >> (pg % 64) & 1))
                continue;
            uint64_t *m = (uint64_t *)(p->masks + pg * MASK_BYTES);
            for (uint64_t w = 0; w < MASK_BYTES / sizeof *m; w++)
                __atomic_store_n(&m[w], 0, __ATOMIC_RELAXED);
            mask_span_add(p, &span, (uint8_t *)m, (uint8_t *)m + MASK_BYTES);
        }
        mask_span_flush(p, &span);
    }
    /* Atomic: ranks of the node may set other bits of the same words meanwhile (direct access). */
    for (uint64_t pg = first; pg <= last; pg++) {
        uint64_t keep = ~(1ull << (pg % 64));
        __atomic_fetch_and(dirty_word(p, pg / 64), keep, __ATOMIC_RELAXED);
        if (p->masks) {
            __atomic_fetch_and(partial_word(p, pg / 64), keep, __ATOMIC_RELAXED);
            __atomic_fetch_and(whole_word(p, pg / 64), keep, __ATOMIC_RELAXED);
        }
    }
    nvc_part_persist(p, dirty_word(p, first / 64), (last / 64 - first / 64 + 1) * p->stride * sizeof(uint64_t));
}

void nvc_part_grow_size(struct nvc_part *p, uint64_t end)
{
    uint64_t cur = __atomic_load_n(&p->hdr->size, __ATOMIC_ACQUIRE);
    int grew = end > cur;
    while (end > cur && !__atomic_compare_exchange_n(&p->hdr->size, &cur, end, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    /* Persist also when another writer's CAS raised the size past end first: it may not have
       persisted it yet, and this write is acknowledged on return. On real PM a size raised by
       another writer just before the load is persisted here too (one cache line, cheap); through
       msync that narrow window remains. */
    if (grew || p->is_pmem)
        nvc_part_persist(p, &p->hdr->size, sizeof p->hdr->size);
}

void nvc_part_read(const struct nvc_part *p, uint64_t off, uint64_t len, uint64_t reserved, uint8_t *dst)
{
    uint64_t n = off >= reserved ? 0 : reserved - off < len ? reserved - off : len;
    memcpy(dst, p->data + off, n);
    memset(dst + n, 0, len - n);
}

int nvc_part_writer_enter(struct nvc_part *p)
{
    __atomic_add_fetch(&p->hdr->writers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->hdr->state, __ATOMIC_SEQ_CST) != NVC_PART_ACTIVE) {
        __atomic_sub_fetch(&p->hdr->writers, 1, __ATOMIC_SEQ_CST);
        return -1;
    }
    return 0;
}

void nvc_part_writer_leave(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n, uint64_t end)
{
    nvc_part_persist_segments(p, segs, n);
    nvc_part_mark_dirty_segments(p, segs, n);
    nvc_part_grow_size(p, end);
    __atomic_sub_fetch(&p->hdr->writers, 1, __ATOMIC_SEQ_CST);
}

/* A page whose mask holds more separate runs of written bytes than this is written back by a
 * merge (nvc_part_merge_page: the file's current bytes of the page under the job's), where the
 * caller can read the file: a strided view of 8-byte rows made each page 128 writes to the file at
 * the close, about 70x slower (validation §4). */
#define MAX_MASK_RUNS 8u

/* Whether page pg's mask holds at most MAX_MASK_RUNS runs of set bits. */
static int mask_runs_few(const struct nvc_part *p, uint64_t pg)
{
    const uint64_t *m = (const uint64_t *)(p->masks + pg * MASK_BYTES);
    uint64_t runs = 0, carry = 0;
    for (unsigned w = 0; w < MASK_BYTES / sizeof *m; w++) {
        uint64_t x = __atomic_load_n(&m[w], __ATOMIC_RELAXED);
        runs += (uint64_t)__builtin_popcountll(x & ~(x << 1 | carry)); /* bits that start a run */
        carry = x >> 63;
        if (runs > MAX_MASK_RUNS)
            return 0;
    }
    return 1;
}

/* Whether dirty page pg has a byte mask to go by: written in part, never whole. */
static int page_masked(const struct nvc_part *p, uint64_t pg)
{
    return p->masks && (__atomic_load_n(partial_word(p, pg / 64), __ATOMIC_RELAXED) >> (pg % 64) & 1) &&
           !(__atomic_load_n(whole_word(p, pg / 64), __ATOMIC_RELAXED) >> (pg % 64) & 1);
}

/* The first run [*s, *e) of set bits at or after byte `from` in page pg's mask; 0 if none. */
static int mask_run(const struct nvc_part *p, uint64_t pg, uint64_t from, uint64_t *s, uint64_t *e)
{
    const uint64_t *m = (const uint64_t *)(p->masks + pg * MASK_BYTES);
    uint64_t b = from;
    while (b < NVC_PAGE) {
        uint64_t w = __atomic_load_n(&m[b / 64], __ATOMIC_RELAXED) >> (b % 64);
        if (w) {
            b += (uint64_t)__builtin_ctzll(w);
            break;
        }
        b = (b / 64 + 1) * 64;
    }
    if (b >= NVC_PAGE)
        return 0;
    *s = b;
    while (b < NVC_PAGE) {
        /* the first clear bit: the bits shifted in above the word's are past its end */
        uint64_t w = ~__atomic_load_n(&m[b / 64], __ATOMIC_RELAXED) >> (b % 64);
        if (w) {
            b += (uint64_t)__builtin_ctzll(w);
            break;
        }
        b = (b / 64 + 1) * 64;
    }
    *e = b < NVC_PAGE ? b : NVC_PAGE;
    return 1;
}

int nvc_part_next_dirty(const struct nvc_part *p, uint64_t *cursor, uint64_t *off, uint64_t *len, int *merge)
{
    uint64_t pages = p->hdr->capacity / NVC_PAGE;
    /* Nothing beyond the reserved space was ever written (nvc_part_reserve), and the bitmap is
       backed only that far. */
    uint64_t r = (__atomic_load_n(&p->hdr->reserved, __ATOMIC_ACQUIRE) / NVC_PAGE + 63) / 64 * 64;
    if (r < pages)
        pages = r;
    if (merge)
        *merge = 0;
    /* The cursor may stop inside a page (after a run of its mask, or where a caller cut a run):
       the page's bytes before it were listed already. */
    uint64_t pg = *cursor / NVC_PAGE, within = *cursor % NVC_PAGE;
    for (;;) {
        uint64_t from = pg;
        while (pg < pages) {
            uint64_t w = __atomic_load_n(dirty_word(p, pg / 64), __ATOMIC_RELAXED) >> (pg % 64);
            if (!w) {
                pg = (pg / 64 + 1) * 64;
                continue;
            }
            pg += (uint64_t)__builtin_ctzll(w);
            break;
        }
        if (pg >= pages)
            return 0;
        if (pg != from)
            within = 0;
        if (page_masked(p, pg)) {
            if (merge && within == 0 && !mask_runs_few(p, pg)) {
                *off = pg * NVC_PAGE;
                *len = NVC_PAGE;
                *cursor = (pg + 1) * NVC_PAGE;
                *merge = 1;
                return 1;
            }
            uint64_t s, e;
            if (mask_run(p, pg, within, &s, &e)) {
                *off = pg * NVC_PAGE + s;
                *len = e - s;
                *cursor = pg * NVC_PAGE + e;
                return 1;
            }
            pg++;
            within = 0;
            continue;
        }
        uint64_t start = pg * NVC_PAGE + within;
        pg++;
        while (pg < pages && (__atomic_load_n(dirty_word(p, pg / 64), __ATOMIC_RELAXED) >> (pg % 64) & 1) &&
               !page_masked(p, pg))
            pg++;
        *off = start;
        *len = pg * NVC_PAGE - start;
        *cursor = pg * NVC_PAGE;
        return 1;
    }
}

uint64_t nvc_part_merge_extent(const struct nvc_part *p, uint64_t *cursor, uint64_t off, uint64_t len, uint64_t max)
{
    uint64_t next = *cursor, o2, l2;
    int m2;
    while (len + NVC_PAGE <= max && nvc_part_next_dirty(p, &next, &o2, &l2, &m2) && m2 && o2 == off + len) {
        len += l2;
        *cursor = next;
    }
    return len;
}

void nvc_merge_masked(uint8_t *page, const uint8_t *src, const uint8_t *mask)
{
    /* 8 bytes at a time: each mask byte widened to a byte select (a strided page holds hundreds
       of runs, which copied one by one cost more than the read of the page). The mask's bit j of
       byte i is the page's byte 8i + j, as the part's little-endian mask words lay it out. */
    for (unsigned i = 0; i < NVC_PAGE / 8; i++) {
        uint64_t b = mask[i];
        if (!b)
            continue;
        /* byte j of t: bit j of b, in place; then each non-zero byte made 0xff */
        uint64_t t = (b * 0x0101010101010101ull) & 0x8040201008040201ull;
        uint64_t sel = ((((t + 0x7f7f7f7f7f7f7f7full) | t) & 0x8080808080808080ull) >> 7) * 0xffu;
        uint64_t a, c;
        memcpy(&a, page + 8 * i, 8);
        memcpy(&c, src + 8 * i, 8);
        a = (a & ~sel) | (c & sel);
        memcpy(page + 8 * i, &a, 8);
    }
}

int nvc_mask_next_run(const uint8_t *mask, uint64_t from, uint64_t *s, uint64_t *e)
{
    uint64_t b = from;
    while (b < NVC_PAGE && !(mask[b / 8] >> (b % 8) & 1))
        b++;
    if (b >= NVC_PAGE)
        return 0;
    *s = b;
    while (b < NVC_PAGE && (mask[b / 8] >> (b % 8) & 1))
        b++;
    *e = b;
    return 1;
}

void nvc_part_merge_page(const struct nvc_part *p, uint64_t pg, uint8_t *page)
{
    nvc_merge_masked(page, p->data + pg * NVC_PAGE, p->masks + pg * MASK_BYTES);
}
