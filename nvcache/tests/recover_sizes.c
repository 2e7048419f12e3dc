/* recover_sizes.c: nvcache-recover must set a file's size from ALL parts of one open.
 *   recover_sizes make DIR FILE   writes FILE (3 pages) and the parts a crash in the middle of a
 *                                 close (or of a bypass) leaves: part 0 already CLOSED (its data
 *                                 flushed, size 3 pages), part 1 still ACTIVE, clean, with a smaller
 *                                 size and size_set (the application shrank the file earlier).
 *   recover_sizes check FILE      FILE must still be 3 pages long after nvcache-recover.
 *   recover_sizes order DIR FILE  the parts two dead jobs left of FILE, each with its first page
 *                                 dirty ('x' for the older job, 'y' for the newer), unmarked (as
 *                                 when the second job ran on other nodes).
 *   recover_sizes newer FILE      FILE's first page must be the newer job's after nvcache-recover
 *                                 (recovery writes parts back oldest first).
 *   recover_sizes elsewhere DIR FILE  a dead job's part of FILE with its first page dirty ('z'),
 *                                 recorded as made on another host (a NVCACHE_DIR shared between
 *                                 hosts): nvcache-recover must leave it, --any-host recover it.
 *   recover_sizes rewritten DIR FILE  a dead job's clean part of FILE that saw it 1 MiB long, then
 *                                 FILE (2 pages) named as written by a later job (user.nvcache.job):
 *                                 nvcache-recover must remove the part without growing FILE.
 *   recover_sizes v2 DIR FILE     a dead job's part of FILE as the build before exact writes made
 *                                 it (header version 2, no exact-write region), its first page
 *                                 dirty ('v'): nvcache-recover must write the page back whole.
 *   recover_sizes merge DIR FILE  (property test, no recovery) 2000 random sets of writes into
 *                                 the pages of one part, as the cache marks them: the dirty
 *                                 listing must give every written byte exactly once, a page of
 *                                 more than 8 runs whole and alone to merge, and the merge of
 *                                 such a page over other bytes must hold the written bytes where
 *                                 written and the other bytes elsewhere.
 *   recover_sizes size FILE N     FILE is N bytes long.
 *   recover_sizes first FILE C    FILE's first byte is C.
 *   recover_sizes creator MAILBOX PID  records PID as the creator of /dev/shm/MAILBOX (a dead job's
 *                                 mailbox whose manager's PID another process now has; made if gone).
 */
#include "nvcache_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nvc_runtime nvc_rt;
struct nvc_config nvc_cfg;
void nvc_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define BIG (3 * (int)NVC_PAGE)

/* Parts go to NVRAM directory dir; writes file path with `bytes` bytes (0, 1, 2...) and reads
   its identity into id. 0, or 1 on failure. */
static int new_file(const char *dir, const char *path, int bytes, struct nvc_file_id *id)
{
    snprintf(nvc_cfg.dir, sizeof nvc_cfg.dir, "%s", dir);
    nvc_cfg.part_max = 1ull << 24;
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    for (int i = 0; i < bytes; i++)
        fputc(i & 0xff, f);
    fclose(f);
    return nvc_file_id_get(path, id) != 0;
}

/* Makes the part of job `job` of file `path` (identity `id`) with its first page reserved. */
static int one_page_part(struct nvc_part *p, uint64_t job, const char *path, const struct nvc_file_id *id)
{
    if (nvc_part_make(p, job, 0x99, 1, 0, NVC_PAGE, 0, 0, 0, path, id))
        return 1;
    uint64_t used = 0;
    return nvc_part_reserve(p, NVC_PAGE, &used, UINT64_MAX) != 0;
}

/* Makes that part with its first page dirty, all bytes c (a dead job's synced page). */
static int dirty_page_part(struct nvc_part *p, uint64_t job, const char *path, const struct nvc_file_id *id, int c)
{
    if (one_page_part(p, job, path, id))
        return 1;
    memset(p->data, c, NVC_PAGE);
    nvc_part_persist(p, p->data, NVC_PAGE);
    p->dirty[0] |= 1;
    nvc_part_persist(p, p->dirty, sizeof p->dirty[0]);
    nvc_part_grow_size(p, NVC_PAGE);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "make")) {
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], BIG, &id))
            return 1;
        for (uint32_t k = 0; k < 2; k++) {
            struct nvc_part p;
            if (nvc_part_make(&p, 0x77, 0x99, 2, k, NVC_PAGE, 0, 0, 0, argv[3], &id))
                return 1;
            p.hdr->size = k == 0 ? BIG : NVC_PAGE;
            p.hdr->size_set = 1;
            p.hdr->state = k == 0 ? NVC_PART_CLOSED : NVC_PART_ACTIVE;
            nvc_part_persist(&p, p.hdr, sizeof *p.hdr);
            nvc_part_close(&p, 0);
        }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "order")) {
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], 0, &id))
            return 1;
        for (int k = 0; k < 2; k++) {
            struct nvc_part p;
            /* Job ids in the opposite order to the ages, so that neither the names nor the ids
               sort the newer part last. */
            if (dirty_page_part(&p, k ? 0x11 : 0x22, argv[3], &id, k ? 'y' : 'x'))
                return 1;
            nvc_part_close(&p, 0);
            if (!k)
                usleep(20000); /* creation times apart */
        }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "elsewhere")) {
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], 0, &id))
            return 1;
        struct nvc_part p;
        if (dirty_page_part(&p, 0x33, argv[3], &id, 'z'))
            return 1;
        snprintf(p.hdr->host, sizeof p.hdr->host, "another-host.example");
        nvc_part_persist(&p, p.hdr, sizeof *p.hdr);
        nvc_part_close(&p, 0);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "v2")) {
        /* A part as the build before exact writes left it: header version 2, one dirty word per
           64 pages (so its data starts a bitmap page earlier for this capacity), no masks, the
           file that long. Made as a current part, then rewritten into that layout. */
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], 0, &id))
            return 1;
        struct nvc_part p;
        if (one_page_part(&p, 0x66, argv[3], &id))
            return 1;
        uint64_t cap = p.hdr->capacity, bm = ((cap / NVC_PAGE + 63) / 64 * 8 + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE;
        uint64_t data_off = NVC_PAGE + bm;
        memset(p.base + data_off, 'v', NVC_PAGE);
        memset(p.base + NVC_PAGE, 0, 8);
        p.base[NVC_PAGE] = 1; /* page 0 dirty */
        nvc_part_persist(&p, p.base + NVC_PAGE, data_off);
        nvc_part_grow_size(&p, NVC_PAGE);
        p.hdr->version = 2;
        p.hdr->data_off = data_off;
        p.hdr->mask_off = 0;
        nvc_part_persist(&p, p.hdr, sizeof *p.hdr);
        char file[sizeof p.file];
        snprintf(file, sizeof file, "%s", p.file);
        nvc_part_close(&p, 0);
        return truncate(file, (off_t)(data_off + cap)) != 0;
    }
    if (argc == 4 && !strcmp(argv[1], "merge")) {
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], 0, &id))
            return 1;
        enum { PAGES = 8 };
        struct nvc_part p;
        if (nvc_part_make(&p, 0x88, 0x99, 1, 0, PAGES * NVC_PAGE, 0, 0, 0, argv[3], &id))
            return 1;
        uint64_t used = 0;
        if (nvc_part_reserve(&p, PAGES * NVC_PAGE, &used, UINT64_MAX) != 0)
            return 1;
        static uint8_t written[PAGES * NVC_PAGE], seen[PAGES * NVC_PAGE], other[NVC_PAGE];
        uint64_t x = 0x9e3779b97f4a7c15ull;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
        unsigned merged = 0;
        for (int trial = 0; trial < 2000; trial++) {
            memset(written, 0, sizeof written);
            /* 1-40 writes, short or long, some across page boundaries, now and then a whole page;
               half of them in the first page, whose runs then often pass 8 */
            int n = 1 + (int)(RND() % 40);
            for (int i = 0; i < n; i++) {
                uint64_t len = RND() % 4 ? 1 + RND() % 24 : 1 + RND() % (2 * NVC_PAGE);
                uint64_t off = RND() % 2 ? RND() % NVC_PAGE : RND() % (PAGES * NVC_PAGE);
                if (off + len > PAGES * NVC_PAGE)
                    len = PAGES * NVC_PAGE - off;
                for (uint64_t b = off; b < off + len; b++)
                    p.data[b] = (uint8_t)RND(), written[b] = 1;
                struct nvc_seg seg = {off, len};
                nvc_part_mark_dirty_segments(&p, &seg, 1);
            }
            memset(seen, 0, sizeof seen);
            uint64_t cursor = 0, off, len;
            int merge;
            while (nvc_part_next_dirty(&p, &cursor, &off, &len, &merge)) {
                if (merge) {
                    uint64_t pg = off / NVC_PAGE, runs = 0;
                    for (uint64_t b = 0; b < NVC_PAGE; b++)
                        runs += written[pg * NVC_PAGE + b] && (b == 0 || !written[pg * NVC_PAGE + b - 1]);
                    if (off % NVC_PAGE || len != NVC_PAGE || runs <= 8) {
                        printf("recover_sizes merge: trial %d: page %llu listed to merge with %llu runs\n", trial,
                               (unsigned long long)pg, (unsigned long long)runs);
                        return 1;
                    }
                    for (uint64_t b = 0; b < NVC_PAGE; b++)
                        other[b] = (uint8_t)RND();
                    uint8_t page[NVC_PAGE];
                    memcpy(page, other, NVC_PAGE);
                    nvc_part_merge_page(&p, pg, page);
                    for (uint64_t b = 0; b < NVC_PAGE; b++) {
                        uint8_t want = written[pg * NVC_PAGE + b] ? p.data[pg * NVC_PAGE + b] : other[b];
                        if (page[b] != want) {
                            printf("recover_sizes merge: trial %d: page %llu byte %llu merged wrong\n", trial,
                                   (unsigned long long)pg, (unsigned long long)b);
                            return 1;
                        }
                    }
                    merged++;
                }
                for (uint64_t b = off; b < off + len; b++)
                    if (written[b] && seen[b]++) {
                        printf("recover_sizes merge: trial %d: byte %llu listed twice\n", trial, (unsigned long long)b);
                        return 1;
                    }
            }
            for (uint64_t b = 0; b < PAGES * NVC_PAGE; b++)
                if (written[b] && !seen[b]) {
                    printf("recover_sizes merge: trial %d: written byte %llu not listed\n", trial, (unsigned long long)b);
                    return 1;
                }
            nvc_part_clear_dirty(&p, 0, PAGES * NVC_PAGE);
        }
#undef RND
        printf("recover_sizes merge: 2000 trials, %u pages merged, every written byte listed once\n", merged);
        nvc_part_close(&p, 0);
        return merged == 0;
    }
    if (argc == 4 && !strcmp(argv[1], "rewritten")) {
        struct nvc_file_id id;
        if (new_file(argv[2], argv[3], 2 * NVC_PAGE, &id))
            return 1;
        struct nvc_part p;
        if (nvc_part_make(&p, 0x44, 0x99, 1, 0, 1 << 20, 1 << 20, 0, 0, argv[3], &id))
            return 1;
        nvc_part_close(&p, 0);
        usleep(20000);
        if (nvc_file_mark_writer(argv[3], 0x55) == -ENOTSUP) {
            printf("recover_sizes: SKIPPED: the file system keeps no user extended attributes\n");
            return 77;
        }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "size")) {
        struct stat st;
        long want = atol(argv[3]);
        int ok = stat(argv[2], &st) == 0 && st.st_size == want;
        printf("recover_sizes: %s is %lld bytes (expected %ld)\n", argv[2], ok ? (long long)want : (long long)st.st_size,
               want);
        return !ok;
    }
    if (argc == 4 && !strcmp(argv[1], "first")) {
        FILE *f = fopen(argv[2], "rb");
        int c = f ? fgetc(f) : EOF;
        if (f)
            fclose(f);
        printf("recover_sizes: first byte '%c' (expected '%c')\n", c == EOF ? '?' : c, argv[3][0]);
        return c != argv[3][0];
    }
    if (argc == 4 && !strcmp(argv[1], "creator")) {
        /* made again if gone: any recovery on the host removes mailboxes whose creator is gone */
        char path[512];
        snprintf(path, sizeof path, "/dev/shm/%s", argv[2]);
        int fd = open(path, O_RDWR | O_CREAT, 0600);
        int32_t pid = (int32_t)atoi(argv[3]);
        struct stat sb;
        int ok = fd >= 0 && fstat(fd, &sb) == 0 &&
                 ((size_t)sb.st_size >= sizeof(struct nvc_mailbox) ||
                  ftruncate(fd, (off_t)sizeof(struct nvc_mailbox)) == 0) &&
                 pwrite(fd, &pid, sizeof pid, (off_t)offsetof(struct nvc_mailbox, creator_pid)) == (ssize_t)sizeof pid;
        if (fd >= 0)
            ok = close(fd) == 0 && ok;
        if (!ok)
            fprintf(stderr, "recover_sizes creator: cannot write %s\n", path);
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "newer")) {
        FILE *f = fopen(argv[2], "rb");
        int c = f ? fgetc(f) : EOF;
        if (f)
            fclose(f);
        printf("recover_sizes: first byte after recovery '%c' (the newer job's: 'y')\n", c == EOF ? '?' : c);
        return c != 'y';
    }
    if (argc == 3 && !strcmp(argv[1], "check")) {
        struct stat sb;
        if (stat(argv[2], &sb) != 0 || sb.st_size != BIG) {
            fprintf(stderr, "%s: size %lld after recovery, expected %d (flushed data truncated)\n", argv[2],
                    (long long)sb.st_size, BIG);
            return 1;
        }
        printf("recover_sizes: size %d kept\n", BIG);
        return 0;
    }
    fprintf(stderr, "usage: recover_sizes make|order|elsewhere DIR FILE | recover_sizes check|newer FILE"
                    " | recover_sizes first FILE C\n");
    return 2;
}
