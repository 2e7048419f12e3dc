/* lifecycle.c: the file's life around the cache, where a slip loses or misplaces data.
 *
 *   lifecycle chdir DIR            a relative file name, and the application changes its working
 *                                  directory before the close: the close must write the file it
 *                                  opened (DIR/rel.dat), not DIR/other/rel.dat.
 *   lifecycle past-capacity FILE   MPI_File_set_size past what the parts can hold (run with
 *                                  NVCACHE_PART_MAX=1M), then a read there: zeros, as plain MPI-IO.
 *   lifecycle drain-fail FILE      (2 ranks, 2 nodes, NVCACHE_PART_MAX=1M) rank 1 writes and syncs
 *                                  4 KiB at 1.5 MiB; the real file cannot grow past 1.25 MiB
 *                                  (RLIMIT_FSIZE, standing for ENOSPC or EIO); rank 0 calls
 *                                  MPI_File_get_position_shared, which takes the file out of the
 *                                  cache, and that drain fails. The close must report the error
 *                                  and leave the part for nvcache-recover. Exit 0 when it did.
 *   lifecycle drain-fail-reopen FILE  (as drain-fail) rank 1 writes and syncs 'D' at 1.5 MiB; the
 *                                  real file cannot grow past 1.25 MiB, so the close's drain fails
 *                                  and keeps the part; the limit is lifted, the file reopened,
 *                                  and rank 1 writes 'N' over the same 4 KiB, syncs and closes
 *                                  (it must succeed). Recovery must then not write the kept
 *                                  part's older 'D' over the newer 'N'. Exit 0 when the calls
 *                                  reported what they should.
 *   lifecycle drain-fail-reopen-self FILE  (one node of 2 ranks) the same at 512 KiB, the file
 *                                  limited to 256 KiB, on MPI_COMM_SELF: rank 1 writes and fails
 *                                  to close, rank 0 reopens: a process outside the failed close.
 *   lifecycle shrink write|verify FILE   (2 ranks on 2 hosts) rank 1 writes at 1 MiB, the file is
 *                                  shrunk to 1 MiB + 4 KiB, rank 0 writes 4 KiB at 2 MiB, sync,
 *                                  SIGKILL; after each host's nvcache-recover, verify checks that
 *                                  rank 0's synced bytes and the size 2 MiB + 4 KiB are there.
 *   lifecycle shrink-crash FILE    (2 ranks) each rank writes 64 KiB of 'a' at rank * 64 KiB and
 *                                  closes (the bytes reach the file); reopened, each writes 8 KiB
 *                                  of 'b' 32 KiB into its 64 KiB and syncs (dirty in the parts);
 *                                  rank 0 creates FILE.armed (fail_io's KILL_CALL kills a rank at
 *                                  its point inside the call) and the file is shrunk to 16 KiB.
 *                                  Exit 0 if the call returned.
 *   lifecycle shrink-crash-verify FILE   prints `before` (every byte as before the shrink), `after`
 *                                  (16 KiB of 'a') or `torn` (neither, exit 1).
 *   lifecycle temporary FILE       a delete-on-close file is open and written when the job is
 *                                  SIGKILLed (its parts are debris for nvcache-recover).
 *   lifecycle close-crash FILE     (1 rank) writes 4 runs of 8 KiB, syncs, and is SIGKILLed at the
 *                                  second write to the real file of the close's drain: the part
 *                                  must still hold all 32 KiB as dirty (a page may leave the dirty
 *                                  set only once the file holds it durably, after the fsync), which
 *                                  `nvcache-recover --dry-run` reports.
 *   lifecycle live FILE            (2 ranks) each writes and syncs 4 KiB, rank 0 creates FILE.ready
 *                                  and waits for FILE.go (meanwhile nvcache-recover runs and must
 *                                  leave the running job's parts alone), then each writes and syncs
 *                                  4 KiB more, and the job is SIGKILLed; `lifecycle live-verify
 *                                  FILE` then checks that all 16 KiB synced are in FILE.
 *   lifecycle bypass-sync FILE     each rank writes 10000 bytes (cached), the file leaves the cache
 *                                  (MPI_File_set_atomicity), then MPI_File_sync: some process must
 *                                  fsync the file between the write and the sync's return (plain
 *                                  MPI-IO: every rank in the sync), or a node failure loses the
 *                                  synced bytes from both NVRAM (drained) and the file.
 *   lifecycle sync-kill FILE C     (1 rank) writes 8 KiB of the byte C at offset 0, syncs, and is
 *                                  SIGKILLed; run twice with different bytes and no recovery in
 *                                  between, `lifecycle has FILE C` then checks that the later
 *                                  job's bytes are the ones recovered (exit 0 when they are).
 *   lifecycle sync-close FILE C    the same, closing the file instead of being killed.
 *   lifecycle page-share FILE OFF C wait|nowait close|sync-kill   (1 rank) writes 100 bytes of C
 *                                  at OFF; with wait it makes FILE.ready-C and waits for FILE.go;
 *                                  then it closes the file, or syncs it and is SIGKILLed. Two jobs
 *                                  doing so at 0 and 100 in one page of an 8 KiB file of 'o':
 *                                  `lifecycle page-share-verify FILE` checks that both jobs' bytes
 *                                  and the file's own 'o' around them are there. With `strided`
 *                                  (and `page-share-verify FILE strided`) it writes 4 bytes every
 *                                  16, 16 times, from OFF (the jobs at 0 and 8): more runs in the
 *                                  page than nvcache writes back one by one; `strided:ROWS` ROWS
 *                                  times (over a file of 16 * ROWS bytes of 'o').
 *   lifecycle close-fail FILE C    (1 rank) writes 8 KiB of the byte C at offset 0, not synced, and
 *                                  closes the file while FILE.armed exists (fail_io's FAIL_CLOSE:
 *                                  close(2) of FILE fails, a write-back error that a network file
 *                                  system reports there). Exit 0 when MPI_File_close reported it.
 *   lifecycle limit-one-rank FILE  (2 ranks, 2 nodes) rank 1 alone has a 100,000-byte file size
 *                                  limit: rank 0's write into rank 1's part and its close must
 *                                  succeed, rank 1's write past its limit must fail, as plain.
 *   lifecycle close-fail-reopen FILE C  the same, then the job reopens the file, writes 8 KiB of
 *                                  C + 1 over it, syncs and closes. Exit 0 when the first close
 *                                  reported its error and the reopened file's calls succeeded.
 *   lifecycle open-close FILE      opens FILE for reading and writing and closes it, writing nothing.
 *   lifecycle prealloc-sync FILE   MPI_File_preallocate of 1 MiB, then MPI_File_sync: prints whether
 *                                  the sync failed (run where the file's fsync fails: plain MPI-IO's
 *                                  sync reports it, and so must nvcache's, whose sync otherwise
 *                                  reaches only NVRAM).
 *   lifecycle renamed FILE rename|relink  each rank writes and syncs 64 KiB, rank 0 renames FILE
 *                                  to FILE.moved (or links FILE.moved and unlinks FILE), then each
 *                                  writes and syncs 64 KiB more and the file is closed: FILE.moved
 *                                  must hold all of it, as under plain MPI-IO, whose handle keeps
 *                                  the file whatever its name (the close's drain once took the
 *                                  missing name for a deleted file and discarded every byte).
 *                                  relink-dir: the link is made in the folder FILE.dir.
 *   lifecycle doc-link FILE before|during  FILE gets a second link FILE.keep before its
 *                                  delete-on-close open (or while open); each rank writes 64 KiB;
 *                                  after the close FILE is gone and FILE.keep holds every byte.
 *   lifecycle two-files FILE FILE2  FILE and FILE2 opened in turn, written, closed: each must hold
 *                                  its own bytes (same_inode.sh).
 *   lifecycle big FILE close|kill  (1 rank) a part whose stripe is 3 GiB (striping_unit) gets
 *                                  2 GiB + 8 KiB written in 512 MiB calls, one dirty run over
 *                                  INT_MAX bytes; then the file is closed (its drain moves the run)
 *                                  or, after a sync, the rank is SIGKILLed (nvcache-recover moves
 *                                  it); `lifecycle big-verify FILE` checks size and bytes.
 *   lifecycle big-view FILE        (1 rank, MPI 4) one MPI_File_write_at_c of 1 GiB + 4 KiB of
 *                                  MPI_BYTE through an int view in atomic mode (passed through);
 *                                  `lifecycle big-view-verify FILE` checks where it landed.
 *   lifecycle noclose FILE         (2 ranks) each writes 1000 bytes of the shared FILE and 100 of
 *                                  its own FILE.self<rank> (opened on MPI_COMM_SELF between two
 *                                  shared files' opens), then MPI_Finalize with all files open;
 *   lifecycle noclose-verify FILE  then checks, with no nvcache-recover run, that every byte is in
 *                                  the files, as plain MPI-IO leaves them.
 *   lifecycle grow-shrink FILE     rank r writes 100 bytes at r * 100 of a new file, which is then
 *                                  grown to 1 MiB (set_size) and shrunk to 500 KiB, inside the
 *                                  first stripe but past the NVRAM the part has reserved: size and
 *                                  bytes must be what plain MPI-IO leaves (a cut past the reserved
 *                                  space once zeroed the whole sparse part mapping and crashed).
 *   lifecycle shrink-mixed FILE    (2 ranks) rank 1 alone leaves the cache (write_shared), then
 *                                  the file is shrunk to 4 KiB: no hang, size and bytes as set.
 *   lifecycle append-second FILE   (2 ranks) rank 0 writes 1000 bytes through a cached handle on
 *                                  MPI_COMM_WORLD; after sync-barrier-sync it opens the file again
 *                                  on MPI_COMM_SELF with MPI_MODE_APPEND (FILE, read-write; and
 *                                  FILE.seq, write-only and sequential) and writes 10 bytes through
 *                                  the individual (shared) pointer: they must land at the end, as
 *                                  in plain MPI-IO (they once overwrote the start: the pointers were
 *                                  set before the cached bytes reached the file).
 *   lifecycle holes FILE           (2 ranks, 2 nodes) one byte each, the file grown to 64 MiB, rank
 *                                  1 reads all of it (node 0's part through node 0's manager):
 *                                  zeros where nothing was written, and the part must not take
 *                                  NVRAM for the holes read (each read page once took a page).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MIB (1 << 20)

static int fail(const char *what)
{
    fprintf(stderr, "lifecycle: %s\n", what);
    return 1;
}

/* Opens path on MPI_COMM_WORLD, created read-write (plus extra_amode); 0 on success. Errors of
 * the file's calls return (MPI's default for files, set here so the checks below see them). */
static int open_rw(const char *path, int extra_amode, MPI_File *fh)
{
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | extra_amode, MPI_INFO_NULL, fh) !=
        MPI_SUCCESS)
        return fail("open failed");
    MPI_File_set_errhandler(*fh, MPI_ERRORS_RETURN);
    return 0;
}

/* open_rw of a new file: rank 0 deletes path first (a new file each run). */
static int open_new(int rank, const char *path, MPI_File *fh)
{
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    return open_rw(path, 0, fh);
}

/* Bytes [off, off + n) of path all equal c. */
static int file_has(const char *path, long off, int n, int c)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int bad = fseek(f, off, SEEK_SET) != 0;
    for (int i = 0; i < n && !bad; i++)
        bad = fgetc(f) != c;
    fclose(f);
    return !bad;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int renamed_case(int rank, int np, const char *path, const char *how)
{
    char moved[4200];
    /* relink-dir: the other link is in another directory, where the drain cannot find it by
       looking beside the old name (it wrote nothing: the file was taken for deleted). */
    int other_dir = !strcmp(how, "relink-dir");
    snprintf(moved, sizeof moved, other_dir ? "%s.dir/moved" : "%s.moved", path);
    if (rank == 0 && other_dir) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s.dir", path);
        mkdir(dir, 0755);
    }
    if (rank == 0)
        unlink(moved);
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    static char buf[65536];
    int bad = 0;
    memset(buf, 'a' + rank, sizeof buf);
    bad |= MPI_File_write_at(fh, (MPI_Offset)rank * 65536, buf, 65536, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= MPI_File_sync(fh) != MPI_SUCCESS;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && (!strcmp(how, "rename") ? rename(path, moved) : (link(path, moved) || unlink(path))) != 0)
        bad |= fail("rename or relink failed");
    MPI_Barrier(MPI_COMM_WORLD);
    memset(buf, 'A' + rank, sizeof buf);
    bad |= MPI_File_write_at(fh, (MPI_Offset)(np + rank) * 65536, buf, 65536, MPI_BYTE, MPI_STATUS_IGNORE) !=
           MPI_SUCCESS;
    bad |= MPI_File_sync(fh) != MPI_SUCCESS;
    bad |= MPI_File_close(&fh) != MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (bad)
        return fail("a call failed");
    if (rank)
        return 0;
    int ok = file_size(moved) == 2L * np * 65536;
    for (int r = 0; r < np && ok; r++)
        ok = file_has(moved, (long)r * 65536, 65536, 'a' + r) && file_has(moved, (long)(np + r) * 65536, 65536, 'A' + r);
    printf("lifecycle renamed (%s): %s\n", how, ok ? "every byte is in the file under its new name" : "bytes MISSING");
    unlink(moved);
    if (other_dir) {
        snprintf(moved, sizeof moved, "%s.dir", path);
        rmdir(moved);
    }
    return !ok;
}

/* A delete-on-close open of a file that has another link (made before the open, or while it is
 * open): the close removes the name it was opened by, and the other link keeps every byte written,
 * as under plain MPI-IO (the cache was discarded at the close, as for a file the close deletes). */
static int doc_link_case(int rank, int np, const char *path, const char *when)
{
    char keep[4200];
    snprintf(keep, sizeof keep, "%s.keep", path);
    int before = !strcmp(when, "before");
    if (rank == 0) {
        unlink(path);
        unlink(keep);
        FILE *c = fopen(path, "w");
        if (!c)
            return fail("cannot create the file");
        fclose(c);
        if (before && link(path, keep) != 0)
            return fail("link failed");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    if (open_rw(path, MPI_MODE_DELETE_ON_CLOSE, &fh))
        return 1;
    static char buf[65536];
    int bad = 0;
    memset(buf, 'a' + rank, sizeof buf);
    bad |= MPI_File_write_at_all(fh, (MPI_Offset)rank * 65536, buf, 65536, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && !before && link(path, keep) != 0)
        bad |= fail("link failed");
    MPI_Barrier(MPI_COMM_WORLD);
    bad |= MPI_File_close(&fh) != MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (bad)
        return fail("a call failed");
    if (rank)
        return 0;
    int ok = file_size(keep) == (long)np * 65536 && access(path, F_OK) != 0;
    for (int r = 0; r < np && ok; r++)
        ok = file_has(keep, (long)r * 65536, 65536, 'a' + r);
    printf("lifecycle doc-link (%s): %s\n", when,
           ok ? "the name is gone and the other link holds every byte" : "bytes MISSING (or the name is left)");
    unlink(keep);
    return !ok;
}

/* Two files opened one after the other, both on MPI_COMM_WORLD, each written by every rank, then
 * closed: each must hold its own bytes. Run with two files of different file systems that share
 * an inode number, across hosts (same_inode.sh): the second open was taken for a second handle of
 * the first, whose cache it drained into the second file (the first ended empty). */
static int two_files_case(int rank, int np, const char *a, const char *b)
{
    static char buf[20000];
    MPI_File fa, fb;
    int bad = open_rw(a, 0, &fa);
    memset(buf, 'a' + rank, sizeof buf);
    bad |= MPI_File_write_at_all(fa, (MPI_Offset)rank * 20000, buf, 20000, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= open_rw(b, 0, &fb);
    memset(buf, 'A' + rank, 5000);
    bad |= MPI_File_write_at_all(fb, (MPI_Offset)rank * 5000, buf, 5000, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= MPI_File_close(&fb) != MPI_SUCCESS;
    bad |= MPI_File_close(&fa) != MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (bad)
        return fail("a call failed");
    if (rank)
        return 0;
    int ok = file_size(a) == (long)np * 20000 && file_size(b) == (long)np * 5000;
    for (int r = 0; r < np && ok; r++)
        ok = file_has(a, (long)r * 20000, 20000, 'a' + r) && file_has(b, (long)r * 5000, 5000, 'A' + r);
    printf("lifecycle two-files: %s (sizes %ld and %ld)\n", ok ? "each file holds its own bytes" : "bytes WRONG",
           file_size(a), file_size(b));
    return !ok;
}

static int chdir_case(int rank, const char *dir)
{
    char other[4096], decoy[4200];
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(decoy, sizeof decoy, "%s/rel.dat", other);
    if (rank == 0) {
        char real[4200];
        snprintf(real, sizeof real, "%s/rel.dat", dir);
        remove(real);
        mkdir(other, 0755);
        FILE *d = fopen(decoy, "wb");
        if (!d || fputs("decoy", d) < 0 || fclose(d) != 0)
            return fail("cannot write the decoy file");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (chdir(dir) != 0)
        return fail("chdir DIR failed");
    MPI_File fh;
    if (open_rw("rel.dat", 0, &fh))
        return 1;
    char buf[4096];
    memset(buf, 'A' + rank, sizeof buf);
    MPI_File_write_at(fh, (MPI_Offset)rank * 4096, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    if (chdir("other") != 0)
        return fail("chdir other failed");
    int rc = MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    int size, ok = rc == MPI_SUCCESS;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            ok = ok && file_has("../rel.dat", (long)r * 4096, 4096, 'A' + r);
        char d[6] = {0};
        FILE *dc = fopen("rel.dat", "rb");
        ok = ok && file_size("../rel.dat") == (long)size * 4096 && dc && fread(d, 1, 5, dc) == 5 &&
             !strcmp(d, "decoy") && file_size("rel.dat") == 5;
        if (dc)
            fclose(dc);
        printf("lifecycle chdir: %s\n", ok ? "the opened file holds every rank's bytes, the decoy is untouched"
                                            : "FAILED: the close wrote elsewhere");
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return !ok;
}

static int past_capacity_case(const char *path)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL); /* a new, empty file: cached, nothing prefetched */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[100];
    memset(buf, 'x', sizeof buf);
    MPI_File_write_at_all(fh, 0, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_set_size(fh, 4 * MIB);
    MPI_Status st;
    memset(buf, 'y', sizeof buf);
    int n = -1, rc = MPI_File_read_at(fh, 3 * MIB, buf, 100, MPI_BYTE, &st);
    if (rc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &n);
    int zeros = 1;
    for (int i = 0; i < 100; i++)
        zeros = zeros && buf[i] == 0;
    memset(buf, 'y', sizeof buf);
    int rc2 = MPI_File_read_at(fh, 0, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    int head = rc2 == MPI_SUCCESS && buf[0] == 'x' && buf[99] == 'x';
    int rc3 = MPI_File_close(&fh);
    int ok = rc == MPI_SUCCESS && n == 100 && zeros && head && rc3 == MPI_SUCCESS;
    printf("lifecycle past-capacity: read at 3 MiB rc %d count %d %s; head %s\n", rc, n, zeros ? "zeros" : "NOT zeros",
           head ? "intact" : "WRONG");
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return !ok;
}

/* late 1: after the failed drain, rank 0 (whose bypass failed) writes 'E' over the first 4 KiB of
 * the kept part's dirty bytes (at 1 MiB, below the limit, so the real file would take it).
 * Whatever that write returns, nvcache-recover must not undo it if it succeeded: the test script
 * checks the bytes at 1 MiB against the code it prints ("late rc").
 * late 2: as 1, then the limit is lifted and rank 0 writes 'E' again: the drain retried before
 * that write now succeeds, so the write and the close succeed and the file holds 'E' at 1 MiB and
 * rank 1's 'D' at 1.5 MiB without any recovery. */
/* Sets this process's soft limit on file sizes to bytes (writes past it fail with EFBIG, not
 * SIGXFSZ) and returns the limit it had; the hard limit stays, so the old one can be restored. */
static rlim_t limit_file_size(rlim_t bytes)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &rl);
    return old;
}

/* limit-one-rank: (2 ranks, NVCACHE_RANKS_PER_NODE=1) rank 1 alone has a 100,000-byte file size
   limit. Rank 0 writes 4 KiB at 151,552 (a stripe of rank 1's part with striping_unit 4096): it
   must succeed, with the sync and the close, and the bytes be in the file (the limited rank's
   drain of its part failed the close). Rank 1 writes 4 KiB at 200,000: it must fail, as plain
   MPI-IO fails it (the cache took it). Exit 0 when the calls reported what they should. */
static int limit_one_rank_case(int rank, const char *path)
{
    if (rank == 1)
        limit_file_size(100000);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_unit", "4096");
    MPI_File fh;
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS)
        return fail("open failed");
    MPI_Info_free(&info);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    char buf[4096];
    memset(buf, 'L', sizeof buf);
    int rc = MPI_File_write_at(fh, rank == 0 ? 151552 : 200000, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    int rc_sync = MPI_File_sync(fh), rc_close = MPI_File_close(&fh);
    if (rank == 0 && (rc != MPI_SUCCESS || rc_sync != MPI_SUCCESS || rc_close != MPI_SUCCESS))
        return fail("the unlimited rank's write, sync or close failed");
    if (rank == 1 && rc == MPI_SUCCESS)
        return fail("a write past the rank's file size limit succeeded");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && !file_has(path, 151552, 4096, 'L'))
        return fail("the unlimited rank's bytes are not in the file");
    if (rank == 0)
        printf("lifecycle limit-one-rank: the calls reported what plain MPI-IO reports\n");
    return 0;
}

/* drain-fail-reopen: the same job reopens a file whose close kept a part it could not drain.
   self: rank 1 alone opens and fails to close it, rank 0 alone reopens it (both on MPI_COMM_SELF,
   one node: NVCACHE_RANKS_PER_NODE=2), so the reopening process took no part in that close. */
static int drain_fail_reopen_case(int rank, const char *path, int self)
{
    MPI_Comm comm = self ? MPI_COMM_SELF : MPI_COMM_WORLD;
    MPI_Offset at = self ? 1 << 19 : 3 << 19; /* within the 1 MiB part(s), past the limit */
    rlim_t limit = self ? 1 << 18 : 5 << 18;
    int writer = 1, reopener = self ? 0 : 1;
    MPI_File fh;
    char buf[4096];
    int rc = MPI_SUCCESS, rc_sync = MPI_SUCCESS, rc_close = MPI_ERR_IO;
    if (!self || rank == writer) {
        if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
            return fail("open failed");
        MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
        rlim_t before = limit_file_size(limit);
        memset(buf, 'D', sizeof buf);
        if (rank == writer)
            rc = MPI_File_write_at(fh, at, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
        rc_sync = MPI_File_sync(fh);
        rc_close = MPI_File_close(&fh);
        limit_file_size(before);
    }
    if (rc != MPI_SUCCESS || rc_sync != MPI_SUCCESS || rc_close == MPI_SUCCESS)
        return fail("the first write or sync failed, or the close did not report the failed drain");
    MPI_Barrier(MPI_COMM_WORLD);
    rc_close = MPI_SUCCESS;
    if (!self || rank == reopener) {
        if (MPI_File_open(comm, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
            return fail("reopen failed");
        MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
        memset(buf, 'N', sizeof buf);
        if (rank == reopener)
            rc = MPI_File_write_at(fh, at, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
        rc_sync = MPI_File_sync(fh);
        rc_close = MPI_File_close(&fh);
    }
    if (rc != MPI_SUCCESS || rc_sync != MPI_SUCCESS || rc_close != MPI_SUCCESS)
        return fail("a write, sync or close through the reopened file failed");
    if (rank == 0)
        printf("lifecycle drain-fail-reopen: the close kept the part; the reopened file was written, synced, closed\n");
    return 0;
}

/* Calls of the file error handler drain_fail_case installs (MPI_ERRORS_RETURN's behaviour,
 * counted). */
static int errhandler_calls;

static void count_errhandler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    (void)code;
    errhandler_calls++;
}

/* Counts rc in *failed when it is an error. */
static int counted(int rc, int *failed)
{
    *failed += rc != MPI_SUCCESS;
    return rc;
}

static int drain_fail_case(int rank, const char *path, int late)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    /* Every file call that fails must have called the file's error handler once, as MPI-IO does
       with its own errors: those nvcache raises (a failed drain) as well as MPI-IO's. */
    MPI_Errhandler eh;
    MPI_File_create_errhandler(count_errhandler, &eh);
    MPI_File_set_errhandler(fh, eh);
    int failed = 0;
    /* The real file cannot grow past 1.25 MiB (the 1 MiB parts still fit); late 2 lifts it. */
    rlim_t before = limit_file_size(5 << 18);
    char buf[4096];
    memset(buf, 'D', sizeof buf);
    int rc = MPI_SUCCESS, rc_late = MPI_SUCCESS;
    if (rank == 1) {
        rc = counted(MPI_File_write_at(fh, 3 << 19, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
        if (late && rc == MPI_SUCCESS)
            rc = counted(MPI_File_write_at(fh, MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
    }
    int rc_sync = counted(MPI_File_sync(fh), &failed);
    if (rank == 0) {
        MPI_Offset pos;
        /* not cached: the file leaves the cache */
        counted(MPI_File_get_position_shared(fh, &pos), &failed);
        if (late) {
            memset(buf, 'E', sizeof buf);
            rc_late = counted(MPI_File_write_at(fh, MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
            if (late == 2)
                printf("lifecycle drain-fail: late rc %d\n", rc_late);
        }
        if (late == 2) {
            limit_file_size(before);
            rc_late = counted(MPI_File_write_at(fh, MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
            printf("lifecycle drain-fail: write after the limit was lifted rc %d\n", rc_late);
            /* An error of MPI-IO itself (the file now passes through): its handler call only. */
            limit_file_size(5 << 18);
            int rc_past = counted(MPI_File_write_at(fh, 2 * MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
            printf("lifecycle drain-fail: pass-through write past the limit rc %d\n", rc_past);
        }
    }
    int views_ok = 1;
    if (late == 1) {
        /* Calls nvcache does not cache, after the failed drain: a split collective writing 'E' at
           1 MiB (rank 0's data; rank 1's own retry fails too), a shared-pointer write of 'S' at
           1 MiB + 64 KiB (where the part holds nothing), a non-native view and a seek to its end.
           None may do I/O on the real file while the part stays undrained. */
        memset(buf, 'E', sizeof buf);
        int rb = counted(MPI_File_write_at_all_begin(fh, MIB, buf, rank == 0 ? 4096 : 0, MPI_BYTE), &failed);
        int re = counted(MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE), &failed);
        counted(MPI_File_seek_shared(fh, MIB + 65536, MPI_SEEK_SET), &failed);
        if (rank == 0) {
            memset(buf, 'S', sizeof buf);
            int rs = counted(MPI_File_write_shared(fh, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE), &failed);
            printf("lifecycle drain-fail: split rc %d/%d, shared rc %d\n", rb, re, rs);
            if (rb == MPI_SUCCESS && re == MPI_SUCCESS)
                rc_late = MPI_SUCCESS; /* 'E' written at 1 MiB, reported done */
            printf("lifecycle drain-fail: late rc %d\n", rc_late);
        }
        int rv = counted(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL), &failed);
        MPI_Offset end_pos = 0;
        int rk = counted(MPI_File_seek(fh, 0, MPI_SEEK_END), &failed);
        MPI_File_get_position(fh, &end_pos);
        printf("lifecycle drain-fail: rank %d set_view rc %d, seek to the end rc %d (position %lld)\n", rank, rv, rk,
               (long long)end_pos);
        views_ok = rv != MPI_SUCCESS && rk != MPI_SUCCESS;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rc_close = counted(MPI_File_close(&fh), &failed);
    MPI_Errhandler_free(&eh);
    printf("lifecycle drain-fail: rank %d write rc %d, sync rc %d, close rc %d; %d call(s) failed, error handler "
           "called %d time(s)\n",
           rank, rc, rc_sync, rc_close, failed, errhandler_calls);
    int ok = rc == MPI_SUCCESS && rc_sync == MPI_SUCCESS && errhandler_calls == failed && views_ok &&
             (late == 2 ? rc_late == MPI_SUCCESS && rc_close == MPI_SUCCESS : rc_close != MPI_SUCCESS);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return !ok;
}

/* A second handle's open must drain the open that caches the file; when that drain fails (the
 * file cannot grow past 1.25 MiB, as in drain_fail_case) the second open fails on every rank
 * (MPI_ERR_IO through MPI_FILE_NULL's error handler), and the first open goes on caching. With the limit lifted
 * the first open's write 'E' at 1 MiB succeeds, a second open then succeeds (its drain works) and
 * writes 'F' at 1.5 MiB, and both closes succeed: the test script finds 'E' and 'F' there and no
 * part left. (Before, the failed open succeeded and its writes were later overwritten by the
 * first open's older bytes.) */
static int second_handle_case(int rank, const char *path)
{
    MPI_File a, b = MPI_FILE_NULL;
    if (open_new(rank, path, &a))
        return 1;
    char buf[4096];
    memset(buf, 'D', sizeof buf);
    int rc = MPI_SUCCESS;
    if (rank == 1) {
        rc = MPI_File_write_at(a, MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = MPI_File_write_at(a, 3 << 19, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    int rc_sync = MPI_File_sync(a);
    rlim_t before = limit_file_size(5 << 18);
    /* (Its call of MPI_FILE_NULL's handler is not counted here: with a handler of the program's
       own there, MPICH 4.0.2 asserts at the next close of any file, a negative reference count.) */
    int rc_b = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &b);
    if (rc_b == MPI_SUCCESS)
        MPI_File_close(&b);
    limit_file_size(before);
    int rc_a = MPI_SUCCESS;
    if (rank == 0) {
        memset(buf, 'E', sizeof buf);
        rc_a = MPI_File_write_at(a, MIB, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    int rc_b2 = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &b);
    if (rc_b2 == MPI_SUCCESS) {
        MPI_File_set_errhandler(b, MPI_ERRORS_RETURN);
        if (rank == 0) {
            memset(buf, 'F', sizeof buf);
            rc_b2 = MPI_File_write_at(b, 3 << 19, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        int rc_close_b = MPI_File_close(&b);
        if (rc_b2 == MPI_SUCCESS)
            rc_b2 = rc_close_b;
    }
    int rc_close = MPI_File_close(&a);
    printf("lifecycle second-handle: rank %d writes rc %d, sync rc %d; second open under the limit rc %d; write "
           "through the first open rc %d; second open after the limit rc %d; close rc %d\n",
           rank, rc, rc_sync, rc_b, rc_a, rc_b2, rc_close);
    int ok = rc == MPI_SUCCESS && rc_sync == MPI_SUCCESS && rc_b != MPI_SUCCESS && rc_a == MPI_SUCCESS &&
             rc_b2 == MPI_SUCCESS && rc_close == MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return !ok;
}

static int shrink_case(int rank, const char *path)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[8192];
    if (rank == 1) {
        memset(buf, 'B', sizeof buf);
        MPI_File_write_at(fh, MIB, buf, 8192, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_File_set_size(fh, MIB + 4096);
    if (rank == 0) {
        memset(buf, 'C', sizeof buf);
        MPI_File_write_at(fh, 2 * MIB, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("lifecycle shrink: synced; killing\n");
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    kill(getpid(), SIGKILL);
    return 1;
}

static int shrink_crash_case(int rank, const char *path)
{
    MPI_File fh;
    char buf[65536];
    if (open_new(rank, path, &fh))
        return 1;
    memset(buf, 'a', sizeof buf);
    int rc = MPI_File_write_at(fh, (MPI_Offset)rank << 16, buf, 65536, MPI_BYTE, MPI_STATUS_IGNORE);
    rc |= MPI_File_close(&fh);
    if (rc != MPI_SUCCESS || open_rw(path, 0, &fh))
        return fail("first write or reopen failed");
    memset(buf, 'b', 8192);
    rc = MPI_File_write_at(fh, ((MPI_Offset)rank << 16) + 32768, buf, 8192, MPI_BYTE, MPI_STATUS_IGNORE);
    rc |= MPI_File_sync(fh);
    char armed[4096];
    snprintf(armed, sizeof armed, "%s.armed", path);
    if (rank == 0)
        close(open(armed, O_WRONLY | O_CREAT, 0644));
    MPI_Barrier(MPI_COMM_WORLD);
    rc |= MPI_File_set_size(fh, 16384);
    if (rank == 0) {
        unlink(armed);
        printf("lifecycle shrink-crash: the call returned %d\n", rc);
    }
    rc |= MPI_File_close(&fh);
    return rc != MPI_SUCCESS;
}

static int temporary_case(const char *path)
{
    MPI_File fh;
    if (open_rw(path, MPI_MODE_DELETE_ON_CLOSE, &fh))
        return 1;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char buf[65536];
    memset(buf, 't', sizeof buf);
    MPI_File_write_at(fh, (MPI_Offset)rank * sizeof buf, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    kill(getpid(), SIGKILL);
    return 1;
}

/* bypass-sync: this program's own fsync and fdatasync come first too, and count. */
static int fsyncs_seen;
int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    fsyncs_seen++;
    return real(fd);
}
int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    fsyncs_seen++;
    return real(fd);
}

static int bypass_sync_case(int rank, const char *path)
{
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    char buf[10000];
    memset(buf, 'a' + rank, sizeof buf);
    fsyncs_seen = 0;
    MPI_File_write_at(fh, (MPI_Offset)rank * sizeof buf, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD); /* every write cached before any rank takes the file out */
    MPI_File_set_atomicity(fh, 1);
    if (MPI_File_sync(fh) != MPI_SUCCESS)
        return fail("sync failed");
    int n = fsyncs_seen;
    MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0)
        printf("lifecycle bypass-sync: %d fsync(s) between the write and the end of MPI_File_sync\n", n);
    return n == 0;
}

static int grow_shrink_case(int rank, int np, const char *path)
{
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    char buf[100];
    memset(buf, 'a' + rank, sizeof buf);
    int bad = MPI_File_write_at(fh, rank * 100, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= MPI_File_set_size(fh, MIB) != MPI_SUCCESS;
    bad |= MPI_File_set_size(fh, 500 << 10) != MPI_SUCCESS;
    MPI_Offset size = 0;
    MPI_File_get_size(fh, &size);
    /* What every rank reads back before the close, through the cache. */
    char *r = malloc(500 << 10);
    MPI_File_read_at_all(fh, 0, r, 500 << 10, MPI_BYTE, MPI_STATUS_IGNORE);
    for (int i = 0; i < (500 << 10) && !bad; i++)
        bad = r[i] != (i < np * 100 ? 'a' + i / 100 : 0);
    free(r);
    bad |= MPI_File_close(&fh) != MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int k = 0; k < np && !bad; k++)
            bad = !file_has(path, k * 100, 100, 'a' + k);
        bad |= !file_has(path, np * 100, (500 << 10) - np * 100, 0) || file_size(path) != 500 << 10;
        printf("lifecycle grow-shrink: size %lld in the cache, %ld in the file; bytes %s\n", (long long)size,
               file_size(path), bad ? "WRONG" : "as written");
    }
    return bad || size != 500 << 10;
}

/* Rank 1 alone leaves the cache (a shared-pointer write, which nvcache passes through) before a
 * shrink: the ranks must still take one path through MPI_File_set_size (they once took two whose
 * collectives differed, and hung). */
static int shrink_mixed_case(int rank, const char *path)
{
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    char buf[8192];
    memset(buf, 'a' + rank, sizeof buf);
    int bad = MPI_File_write_at(fh, (MPI_Offset)rank * 8192, buf, 8192, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= MPI_File_sync(fh) != MPI_SUCCESS;
    if (rank == 1)
        bad |= MPI_File_write_shared(fh, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad |= MPI_File_set_size(fh, 4096) != MPI_SUCCESS;
    bad |= MPI_File_close(&fh) != MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        /* the shared pointer's 10 bytes of 'b' at 0, then rank 0's 'a' */
        bad |= file_size(path) != 4096 || !file_has(path, 0, 10, 'b') || !file_has(path, 10, 4086, 'a');
        printf("lifecycle shrink-mixed: size %ld, bytes %s\n", file_size(path), bad ? "WRONG" : "as set");
    }
    return bad;
}

static int append_second_case(int rank, const char *path)
{
    char seq[4200];
    snprintf(seq, sizeof seq, "%s.seq", path);
    int bad = 0;
    for (int sequential = 0; sequential < 2; sequential++) {
        const char *p = sequential ? seq : path;
        MPI_File fw;
        if (open_new(rank, p, &fw))
            return 1;
        char buf[1000];
        memset(buf, 'a', sizeof buf);
        if (rank == 0)
            MPI_File_write_at(fw, 0, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fw);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fw);
        if (rank == 0) {
            MPI_File fs;
            int amode = sequential ? MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_SEQUENTIAL
                                   : MPI_MODE_RDWR | MPI_MODE_APPEND;
            if (MPI_File_open(MPI_COMM_SELF, p, amode, MPI_INFO_NULL, &fs) != MPI_SUCCESS)
                return fail("append open failed");
            MPI_Offset pos = -1, spos = -1;
            if (!sequential) {
                MPI_File_get_position(fs, &pos);
                MPI_File_get_position_shared(fs, &spos);
            }
            memset(buf, 'b', 10);
            if (sequential)
                MPI_File_write_shared(fs, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE);
            else
                MPI_File_write(fs, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE);
            MPI_File_close(&fs);
            if (!sequential && (pos != 1000 || spos != 1000)) {
                printf("lifecycle append-second: the append handle's pointers at %lld (shared %lld), not 1000\n",
                       (long long)pos, (long long)spos);
                bad = 1;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_close(&fw);
        if (rank == 0) {
            int ok = file_size(p) == 1010 && file_has(p, 0, 1000, 'a') && file_has(p, 1000, 10, 'b');
            printf("lifecycle append-second%s: size %ld, %s\n", sequential ? " (sequential)" : "", file_size(p),
                   ok ? "the appended bytes at the end" : "the appended bytes NOT at the end");
            bad |= !ok;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return bad;
}

/* NVRAM bytes the part files in NVCACHE_DIR take (allocated blocks). */
static long long nvram_taken(void)
{
    char cmd[1200];
    const char *d = getenv("NVCACHE_DIR");
    snprintf(cmd, sizeof cmd, "du -k -c %s/*.part 2>/dev/null | tail -1", d ? d : "/nonexistent");
    FILE *p = popen(cmd, "r");
    long long kib = -1;
    if (!p || fscanf(p, "%lld", &kib) != 1)
        kib = -1;
    if (p)
        pclose(p);
    return kib * 1024;
}

static int holes_case(int rank, const char *path)
{
    const long total = 64L * MIB;
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    MPI_File_write_at(fh, rank * 4096, "x", 1, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_set_size(fh, total);
    long bad = 0, got = 0;
    char *b = malloc(MIB);
    for (long o = 0; rank == 1 && o < total; o += MIB) {
        MPI_Status st;
        int c = 0;
        MPI_File_read_at(fh, o, b, MIB, MPI_BYTE, &st);
        MPI_Get_count(&st, MPI_BYTE, &c);
        got += c;
        for (int i = 0; i < c; i++)
            bad += b[i] != (o + i == 0 || o + i == 4096 ? 'x' : 0);
    }
    free(b);
    long long taken = rank == 1 ? nvram_taken() : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank != 1)
        return 0;
    /* Two parts of a 2-byte file: a few reservations, far below the 64 MiB of holes. */
    printf("lifecycle holes: read %ld bytes, %ld wrong; the parts take %lld KiB of NVRAM\n", got, bad, taken / 1024);
    return got != total || bad || taken < 0 || taken > 8 * MIB;
}

/* close-crash: this program's own pwrite, pwrite64 and pwritev come before the C library's for
 * the MPI-IO library too; once armed, the kill_at-th such write kills the process (a crash in the
 * middle of a drain to the real file). */
static int kill_at, writes_seen;
static void count_write(void)
{
    if (kill_at && ++writes_seen == kill_at)
        kill(getpid(), SIGKILL);
}
ssize_t pwrite(int fd, const void *b, size_t n, off_t o)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    count_write();
    return real(fd, b, n, o);
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    count_write();
    return real(fd, b, n, o);
}
ssize_t pwritev(int fd, const struct iovec *v, int c, off_t o)
{
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real)
        real = (ssize_t(*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
    count_write();
    return real(fd, v, c, o);
}

static int close_crash_case(const char *path)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[8192];
    for (int k = 0; k < 4; k++) {
        memset(buf, 'a' + k, sizeof buf);
        MPI_File_write_at(fh, k * 65536, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    if (MPI_File_sync(fh) != MPI_SUCCESS)
        return fail("sync failed");
    kill_at = 2;
    MPI_File_close(&fh);
    return fail("the close did not write to the file twice");
}

static int prealloc_sync_case(int rank, const char *path)
{
    MPI_File fh;
    if (open_new(rank, path, &fh))
        return 1;
    if (MPI_File_preallocate(fh, 1 << 20) != MPI_SUCCESS)
        return fail("preallocate failed");
    int rc = MPI_File_sync(fh);
    if (rank == 0)
        printf("lifecycle prealloc-sync: the sync %s\n", rc == MPI_SUCCESS ? "succeeded" : "failed");
    MPI_File_close(&fh);
    return 0;
}

static int sync_kill_case(const char *path, int c, int kill_it)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[8192];
    memset(buf, c, sizeof buf);
    MPI_File_write_at(fh, 0, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    if (MPI_File_sync(fh) != MPI_SUCCESS)
        return fail("sync failed");
    if (kill_it)
        kill(getpid(), SIGKILL);
    return MPI_File_close(&fh) != MPI_SUCCESS;
}

/* (1 rank) Writes 100 bytes of c at off into a file of another job's (or that another job writes
 * too). With `wait`, it then makes FILE.ready-C and waits for FILE.go before it ends; `close`
 * closes the file, `sync-kill` syncs it and is SIGKILLed. */
/* Rows of a `strided` or `strided:ROWS` argument (16 when not given); 0 for anything else. */
static long strided_rows(const char *a)
{
    if (!strcmp(a, "strided"))
        return 16;
    long rows = strncmp(a, "strided:", 8) ? 0 : atol(a + 8);
    return rows > 0 ? rows : 0;
}

static int page_share_case(const char *path, long off, int c, int wait_go, int kill_it, long rows)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[100];
    memset(buf, c, sizeof buf);
    /* rows > 0 (strided): 4 bytes every 16, `rows` times (16 a page: more runs in the page than
       its mask is written back by) */
    for (long i = 0; i < (rows ? rows : 1); i++)
        if (MPI_File_write_at(fh, off + 16 * i, buf, rows ? 4 : (int)sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            return fail("write failed");
    if (kill_it && MPI_File_sync(fh) != MPI_SUCCESS)
        return fail("sync failed");
    if (wait_go) {
        /* (the file's name without an MPI-IO driver prefix such as ROMIO's "nfs:") */
        const char *plain = strncmp(path, "nfs:", 4) ? path : path + 4;
        char name[4096 + 16];
        snprintf(name, sizeof name, "%s.ready-%c", plain, c);
        FILE *r = fopen(name, "w");
        if (r)
            fclose(r);
        snprintf(name, sizeof name, "%s.go", plain);
        for (int i = 0; access(name, F_OK) != 0; i++) {
            if (i == 6000)
                return fail("no FILE.go within 60 s");
            usleep(10000);
        }
    }
    if (kill_it)
        kill(getpid(), SIGKILL);
    return MPI_File_close(&fh) != MPI_SUCCESS;
}

static int close_fail_case(const char *path, int c, int reopen)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[8192];
    memset(buf, c, sizeof buf);
    if (MPI_File_write_at(fh, 0, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return fail("write failed");
    char armed[4096 + 8];
    snprintf(armed, sizeof armed, "%s.armed", path);
    FILE *a = fopen(armed, "w");
    if (a)
        fclose(a);
    int rc = MPI_File_close(&fh);
    remove(armed);
    printf("lifecycle close-fail: close rc %d\n", rc);
    if (rc == MPI_SUCCESS || !reopen)
        return rc == MPI_SUCCESS;
    /* The same job opens the file again and writes c + 1 over the 8 KiB: the kept part must
       neither hold the new open up nor be written over the newer bytes later. */
    if (open_rw(path, 0, &fh))
        return 1;
    memset(buf, c + 1, sizeof buf);
    if (MPI_File_write_at(fh, 0, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        MPI_File_sync(fh) != MPI_SUCCESS || MPI_File_close(&fh) != MPI_SUCCESS)
        return fail("a write, sync or close through the reopened file failed");
    printf("lifecycle close-fail: the reopened file was written, synced, closed\n");
    return 0;
}

#define BIG_CALL ((MPI_Offset)512 << 20)
#define BIG_SIZE (4 * BIG_CALL + 8192)
static int big_byte(MPI_Offset off) { return 'A' + (int)(off / BIG_CALL) % 26; }

static int big_case(const char *path, int kill_it)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_unit", "3221225472");
    MPI_File fh;
    MPI_File_delete(path, MPI_INFO_NULL);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS)
        return fail("open failed");
    MPI_Info_free(&info);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    char *buf = malloc((size_t)BIG_CALL);
    if (!buf)
        return fail("out of memory");
    for (MPI_Offset off = 0; off < BIG_SIZE; off += BIG_CALL) {
        int n = (int)(BIG_SIZE - off < BIG_CALL ? BIG_SIZE - off : BIG_CALL);
        memset(buf, big_byte(off), (size_t)n);
        if (MPI_File_write_at(fh, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return fail("write failed");
    }
    free(buf);
    if (kill_it) {
        if (MPI_File_sync(fh) != MPI_SUCCESS)
            return fail("sync failed");
        kill(getpid(), SIGKILL);
    }
    return MPI_File_close(&fh) != MPI_SUCCESS ? fail("close failed") : 0;
}

#if MPI_VERSION >= 4
/* big-view: an application's own transfer over 1 GiB (MPI_BYTE) through a view whose etype is
 * an int, on a file that left the cache (atomic mode): it must land where the view puts it, in
 * one call (nvcache once split it in 1 GiB pieces advancing the etype offset by bytes). */
static int big_view_case(const char *path)
{
    MPI_File fh;
    MPI_File_delete(path, MPI_INFO_NULL);
    if (open_rw(path, 0, &fh))
        return 1;
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_set_atomicity(fh, 1);
    size_t n = ((size_t)1 << 30) + 4096;
    char *buf = malloc(n);
    if (!buf)
        return fail("out of memory");
    memset(buf, 'v', n);
    MPI_Count count = (MPI_Count)n;
    int rc = MPI_File_write_at_c(fh, 0, buf, count, MPI_BYTE, MPI_STATUS_IGNORE);
    free(buf);
    if (rc != MPI_SUCCESS)
        return fail("write failed");
    return MPI_File_close(&fh) != MPI_SUCCESS ? fail("close failed") : 0;
}
#endif

static int noclose_case(int rank, const char *path)
{
    MPI_File a, self, b;
    char p[4096], buf[1000];
    if (open_rw(path, 0, &a))
        return 1;
    snprintf(p, sizeof p, "%s.self%d", path, rank);
    if (MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &self) != MPI_SUCCESS)
        return fail("open failed");
    snprintf(p, sizeof p, "%s.b", path);
    if (open_rw(p, 0, &b))
        return 1;
    memset(buf, 'a' + rank, sizeof buf);
    MPI_File_write_at(a, rank * 1000, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_write_at(b, rank * 1000, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_write_at(self, 0, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    return 0; /* MPI_Finalize follows with the three files open */
}

static int live_case(int rank, const char *path)
{
    MPI_File fh;
    if (open_rw(path, 0, &fh))
        return 1;
    char buf[4096], flag[4096];
    for (int phase = 0; phase < 2; phase++) {
        memset(buf, (phase ? 'A' : 'a') + rank, sizeof buf);
        MPI_File_write_at(fh, (MPI_Offset)(phase * 2 + rank) * 4096, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
        if (MPI_File_sync(fh) != MPI_SUCCESS)
            return fail("sync failed");
        MPI_Barrier(MPI_COMM_WORLD);
        if (phase == 0 && rank == 0) {
            snprintf(flag, sizeof flag, "%s.ready", path);
            fclose(fopen(flag, "w"));
            snprintf(flag, sizeof flag, "%s.go", path);
            for (int i = 0; i < 600 && access(flag, F_OK) != 0; i++)
                usleep(50000);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("lifecycle live: synced twice; killing\n");
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    kill(getpid(), SIGKILL);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "close-crash-verify")) {
        int ok = file_size(argv[2]) == 3 * 65536 + 8192;
        for (int k = 0; k < 4; k++)
            ok &= file_has(argv[2], k * 65536L, 8192, 'a' + k);
        printf("lifecycle close-crash verify: %s\n", ok ? "all 32 KiB synced are in the file" : "synced bytes MISSING");
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "live-verify")) {
        int ok = 1;
        for (int block = 0; block < 4; block++) {
            int c = (block < 2 ? 'a' : 'A') + block % 2;
            if (!file_has(argv[2], block * 4096L, 4096, c)) {
                printf("lifecycle live verify: synced block %d (4 KiB of '%c') missing\n", block, c);
                ok = 0;
            }
        }
        if (ok)
            printf("lifecycle live verify: all 16 KiB synced are in the file\n");
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "shrink-crash-verify")) {
        /* np = 2: 'a' everywhere but 8 KiB of 'b' at 32 KiB and at 96 KiB, 128 KiB in all */
        long size = file_size(argv[2]);
        int before = size == 131072 && file_has(argv[2], 0, 32768, 'a') && file_has(argv[2], 32768, 8192, 'b') &&
                     file_has(argv[2], 40960, 57344, 'a') && file_has(argv[2], 98304, 8192, 'b') &&
                     file_has(argv[2], 106496, 24576, 'a');
        int after = size == 16384 && file_has(argv[2], 0, 16384, 'a');
        printf("lifecycle shrink-crash-verify: %s (size %ld)\n", before ? "before" : after ? "after" : "torn", size);
        return !(before || after);
    }
    if (argc == 4 && !strcmp(argv[1], "shrink") && !strcmp(argv[2], "verify")) {
        long size = file_size(argv[3]);
        int ok = size == 2 * MIB + 4096 && file_has(argv[3], 2 * MIB, 4096, 'C') && file_has(argv[3], MIB, 4096, 'B');
        printf("lifecycle shrink verify: size %ld (expected %d), rank 0's synced bytes %s, rank 1's %s\n", size,
               2 * MIB + 4096, file_has(argv[3], 2 * MIB, 4096, 'C') ? "present" : "MISSING",
               file_has(argv[3], MIB, 4096, 'B') ? "present" : "MISSING");
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "big-verify")) {
        long long size = file_size(argv[2]);
        int ok = size == BIG_SIZE;
        /* Each call's first and last bytes, and both sides of 0x7ffff000 (one pwrite's most). */
        MPI_Offset at[] = {0, BIG_CALL - 1, BIG_CALL, 2 * BIG_CALL, 0x7ffff000 - 1, 0x7ffff000, 4 * BIG_CALL,
                           BIG_SIZE - 1};
        for (size_t i = 0; ok && i < sizeof at / sizeof at[0]; i++)
            ok = file_has(argv[2], (long)at[i], 1, big_byte(at[i]));
        printf("lifecycle big verify: size %lld (expected %lld), bytes %s\n", size, (long long)BIG_SIZE,
               ok ? "right" : "WRONG");
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "big-view-verify")) {
        long long size = file_size(argv[2]), want = (1LL << 30) + 4096;
        int ok = size == want && file_has(argv[2], (long)(want - 1), 1, 'v') && file_has(argv[2], 0, 1, 'v');
        printf("lifecycle big-view verify: size %lld (expected %lld), bytes %s\n", size, want, ok ? "right" : "WRONG");
        return !ok;
    }
    if (argc == 3 && !strcmp(argv[1], "noclose-verify")) {
        char p[4096];
        int ok = file_size(argv[2]) == 2000 && file_has(argv[2], 0, 1000, 'a') && file_has(argv[2], 1000, 1000, 'b');
        snprintf(p, sizeof p, "%s.b", argv[2]);
        ok &= file_size(p) == 2000 && file_has(p, 0, 1000, 'a') && file_has(p, 1000, 1000, 'b');
        for (int r = 0; r < 2; r++) {
            snprintf(p, sizeof p, "%s.self%d", argv[2], r);
            ok &= file_size(p) == 100 && file_has(p, 0, 100, 'a' + r);
        }
        printf("lifecycle noclose verify: %s\n", ok ? "every byte written before MPI_Finalize is in the files"
                                                     : "bytes MISSING from the files left open");
        return !ok;
    }
    if ((argc == 3 || (argc == 4 && strided_rows(argv[3]))) && !strcmp(argv[1], "page-share-verify")) {
        /* Two jobs' bytes of the first page, the file's own around them. */
        const char *f = argv[2];
        int ok;
        if (argc == 4) {
            long rows = strided_rows(argv[3]), size = rows * 16 > 8192 ? rows * 16 : 8192;
            char *d = malloc((size_t)size + 1);
            FILE *in = fopen(f, "rb");
            ok = d && in && file_size(f) == size && fread(d, 1, (size_t)size, in) == (size_t)size;
            for (long b = 0; ok && b < size; b++)
                ok = d[b] == (b >= rows * 16 || b % 16 / 4 % 2 ? 'o' : b % 16 < 4 ? 'A' : 'B');
            if (in)
                fclose(in);
            free(d);
        } else {
            ok = file_size(f) == 8192;
            ok = ok && file_has(f, 0, 100, 'A') && file_has(f, 100, 100, 'B') && file_has(f, 200, 8192 - 200, 'o');
        }
        printf("lifecycle page-share: %s\n", ok ? "both jobs' bytes, and the file's own around them"
                                                   : argc == 4 ? "bytes WRONG (A at 16i, B at 16i + 8, o elsewhere expected)"
                                                               : "bytes WRONG (A at 0, B at 100, o elsewhere expected)");
        return !ok;
    }
    if (argc == 4 && !strcmp(argv[1], "has")) {
        int ok = file_has(argv[2], 0, 8192, argv[3][0]);
        printf("lifecycle has: the first 8 KiB are %s'%c'\n", ok ? "" : "NOT all ", argv[3][0]);
        return !ok;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: lifecycle chdir DIR | past-capacity FILE | drain-fail FILE | drain-fail-write FILE | drain-fail-retry FILE | drain-fail-reopen[-self] FILE | second-handle FILE | shrink write|verify FILE"
                        " | shrink-crash FILE | shrink-crash-verify FILE"
                        " | temporary FILE | live FILE | live-verify FILE | close-crash FILE | close-crash-verify FILE"
                        " | bypass-sync FILE | sync-kill FILE C | sync-close FILE C | close-fail[-reopen] FILE C | limit-one-rank FILE | open-close FILE | has FILE C"
                        " | noclose FILE | noclose-verify FILE | big FILE close|kill | big-verify FILE"
                        " | big-view FILE | big-view-verify FILE | grow-shrink FILE | shrink-mixed FILE | holes FILE"
                        " | append-second FILE | renamed FILE rename|relink|relink-dir | doc-link FILE before|during"
                        " | two-files FILE FILE2 | page-share FILE OFF C wait|nowait close|sync-kill [strided[:ROWS]]"
                        " | page-share-verify FILE [strided[:ROWS]]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, rc = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!strcmp(argv[1], "chdir"))
        rc = chdir_case(rank, argv[2]);
    else if (!strcmp(argv[1], "past-capacity"))
        rc = past_capacity_case(argv[2]);
    else if (!strcmp(argv[1], "drain-fail"))
        rc = drain_fail_case(rank, argv[2], 0);
    else if (!strcmp(argv[1], "drain-fail-write"))
        rc = drain_fail_case(rank, argv[2], 1);
    else if (!strcmp(argv[1], "drain-fail-retry"))
        rc = drain_fail_case(rank, argv[2], 2);
    else if (!strcmp(argv[1], "drain-fail-reopen"))
        rc = drain_fail_reopen_case(rank, argv[2], 0);
    else if (!strcmp(argv[1], "drain-fail-reopen-self"))
        rc = drain_fail_reopen_case(rank, argv[2], 1);
    else if (!strcmp(argv[1], "second-handle"))
        rc = second_handle_case(rank, argv[2]);
    else if (!strcmp(argv[1], "shrink") && argc == 4 && !strcmp(argv[2], "write"))
        rc = shrink_case(rank, argv[3]);
    else if (!strcmp(argv[1], "shrink-crash"))
        rc = shrink_crash_case(rank, argv[2]);
    else if (!strcmp(argv[1], "temporary"))
        rc = temporary_case(argv[2]);
    else if (!strcmp(argv[1], "live"))
        rc = live_case(rank, argv[2]);
    else if (!strcmp(argv[1], "close-crash"))
        rc = close_crash_case(argv[2]);
    else if (!strcmp(argv[1], "big") && argc == 4)
        rc = big_case(argv[2], !strcmp(argv[3], "kill"));
    else if (!strcmp(argv[1], "grow-shrink")) {
        int np;
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        rc = grow_shrink_case(rank, np, argv[2]);
    } else if (!strcmp(argv[1], "shrink-mixed"))
        rc = shrink_mixed_case(rank, argv[2]);
    else if (!strcmp(argv[1], "append-second"))
        rc = append_second_case(rank, argv[2]);
    else if (!strcmp(argv[1], "holes"))
        rc = holes_case(rank, argv[2]);
    else if (!strcmp(argv[1], "noclose"))
        rc = noclose_case(rank, argv[2]);
#if MPI_VERSION >= 4
    else if (!strcmp(argv[1], "big-view"))
        rc = big_view_case(argv[2]);
#endif
    else if (!strcmp(argv[1], "bypass-sync"))
        rc = bypass_sync_case(rank, argv[2]);
    else if (!strcmp(argv[1], "sync-kill") && argc == 4)
        rc = sync_kill_case(argv[2], argv[3][0], 1);
    else if (!strcmp(argv[1], "sync-close") && argc == 4)
        rc = sync_kill_case(argv[2], argv[3][0], 0);
    else if (!strcmp(argv[1], "limit-one-rank"))
        rc = limit_one_rank_case(rank, argv[2]);
    else if (!strcmp(argv[1], "page-share") && (argc == 7 || (argc == 8 && strided_rows(argv[7]))))
        rc = page_share_case(argv[2], atol(argv[3]), argv[4][0], !strcmp(argv[5], "wait"),
                             !strcmp(argv[6], "sync-kill"), argc == 8 ? strided_rows(argv[7]) : 0);
    else if (!strcmp(argv[1], "close-fail") && argc == 4)
        rc = close_fail_case(argv[2], argv[3][0], 0);
    else if (!strcmp(argv[1], "close-fail-reopen") && argc == 4)
        rc = close_fail_case(argv[2], argv[3][0], 1);
    else if (!strcmp(argv[1], "renamed") && argc == 4) {
        int np;
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        rc = renamed_case(rank, np, argv[2], argv[3]);
    } else if (!strcmp(argv[1], "doc-link") && argc == 4) {
        int np;
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        rc = doc_link_case(rank, np, argv[2], argv[3]);
    } else if (!strcmp(argv[1], "two-files") && argc == 4) {
        int np;
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        rc = two_files_case(rank, np, argv[2], argv[3]);
    } else if (!strcmp(argv[1], "prealloc-sync"))
        rc = prealloc_sync_case(rank, argv[2]);
    else if (!strcmp(argv[1], "open-close")) {
        MPI_File fh;
        rc = open_rw(argv[2], 0, &fh) || MPI_File_close(&fh) != MPI_SUCCESS;
    }
    MPI_Finalize();
    return rc;
}
