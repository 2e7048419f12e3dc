/* drain_race.c: a sync (NVCACHE_FLUSH=sync) or a shrinking set_size that drains the caching
 * open's part, against a second handle's open of the file, which drains the same part.
 *
 * Ranks 0 and 1 open FILE on their own communicator (cached); rank 0 writes 10 bytes at 0 and at
 * 4000, and both call MPI_File_set_size(4005), or MPI_File_sync with `sync`. Rank 0's drain is
 * held at its first write to FILE (fail_io.so's PAUSE_PWRITE, which only ranks 0 keeps in its
 * environment); meanwhile rank 2 opens FILE on MPI_COMM_SELF, writes 100 'Z' at [100, 200) and
 * closes it, and a thread of rank 2 lets the drain go on 1.5 s after it was held. The writes
 * never overlap: plain MPI-IO keeps all of them. A drain that did not hold the part against the
 * second handle's (as a close does) wrote its copy of the page [0, 4096) over the 'Z' bytes once
 * let go: all 100 were lost (when rank 2's open, write and close took under 1.5 s; with the claim
 * the open waits for the drain, and the test cannot fail for timing).
 * Usage: mpiexec -n 3 drain_race FILE setsize|sync
 *        (with LD_PRELOAD=fail_io.so PAUSE_PWRITE=the file's name)
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static int rank;
static char go[4096 + 8];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

/* Lets the held drain go on after 1.5 s: with the drain holding the part, rank 2's open waits
   for it, so rank 2 cannot be the one to let it go. */
static void *let_go_later(void *arg)
{
    (void)arg;
    sleep_ms(1500);
    touch(go);
    return NULL;
}

int main(int argc, char **argv)
{
    int np = test_start(&argc, &argv, &rank, 2, "drain_race FILE setsize|sync");
    const char *file = argv[1];
    int sync_mode = !strcmp(argv[2], "sync");
    if (np != 3) {
        if (rank == 0)
            fprintf(stderr, "drain_race needs 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank != 0)
        unsetenv("PAUSE_PWRITE"); /* only rank 0's drain is held */
    /* fail_io names its files after the path its descriptor resolves to: resolve FILE's
       directory the same way (a link on the way there had the test wait for a file that
       fail_io made under another name). */
    char dir[4096], real[4096];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : file;
    if (slash)
        *slash = 0;
    if (!realpath(slash ? (dir[0] ? dir : "/") : ".", real)) {
        fprintf(stderr, "drain_race: cannot resolve the directory of %s\n", file);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(go, sizeof go, "%s/%s.go", real, base);
    char paused[4096 + 8];
    snprintf(paused, sizeof paused, "%s/%s.paused", real, base);
    if (rank == 0) {
        remove(file);
        remove(go);
        remove(paused);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm a;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &a);
    MPI_File fh;
    char buf[100];
    if (rank < 2) {
        CHECK(MPI_File_open(a, file, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
        if (rank == 0) {
            memset(buf, 'A', 10);
            CHECK(MPI_File_write_at(fh, 0, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE));
            CHECK(MPI_File_write_at(fh, 4000, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        CHECK(sync_mode ? MPI_File_sync(fh) : MPI_File_set_size(fh, 4005));
    } else {
        for (int i = 0; i < 3000 && access(paused, F_OK) != 0; i++)
            sleep_ms(10);
        if (access(paused, F_OK) != 0) {
            fprintf(stderr, "rank 2: rank 0's drain never wrote to %s\n", file);
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        pthread_t t;
        pthread_create(&t, NULL, let_go_later, NULL);
        MPI_File f2;
        CHECK(MPI_File_open(MPI_COMM_SELF, file, MPI_MODE_RDWR, MPI_INFO_NULL, &f2));
        memset(buf, 'Z', sizeof buf);
        CHECK(MPI_File_write_at(f2, 100, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE));
        CHECK(MPI_File_close(&f2));
        pthread_join(t, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2) {
        CHECK(MPI_File_close(&fh));
        MPI_Comm_free(&a);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 0) {
        FILE *f = fopen(file, "rb");
        size_t n = 0;
        if (f && fseek(f, 100, SEEK_SET) == 0)
            n = fread(buf, 1, sizeof buf, f);
        if (f)
            fclose(f);
        int z = 0;
        for (size_t i = 0; i < n; i++)
            z += buf[i] == 'Z';
        if (z != (int)sizeof buf) {
            fprintf(stderr, "drain_race %s: %d of the 100 bytes rank 2 wrote at [100, 200) are in the file\n", argv[2],
                    z);
            bad = 1;
        }
        remove(file);
        remove(go);
        remove(paused);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}
