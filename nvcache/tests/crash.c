/* crash.c: crash-recovery test program.
 *   crash write FILE   (under mpiexec, through nvcache) writes a pattern, MPI_File_sync, writes
 *                      more, then every rank dies by SIGKILL without closing the file
 *                      (CRASH_STRIPING_UNIT=N passes MPI's striping_unit hint at the open;
 *                      CRASH_HANDLES=1 writes the synced region through three handles, two at once).
 *   crash abort FILE   the same, but the job ends in MPI_Abort instead.
 *   crash verify FILE NPROCS  checks that every synced byte is in FILE (after nvcache-recover).
 *   crash restart FILE (under mpiexec, through nvcache, with as many ranks as the crashed job) a job
 *                      restarted after the crash, with no nvcache-recover run: each rank reads its
 *                      synced region back through MPI-IO and checks every byte.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION 300007   /* bytes per rank in phase 1 (synced) */
#define EXTRA 5003      /* bytes per rank in phase 2 (acknowledged, not synced) */

static unsigned char val(long long off, int phase) { return (unsigned char)((off * 2654435761u >> 7) + phase * 101); }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: crash write|abort|restart FILE | crash verify FILE NPROCS\n");
        return 2;
    }
    if (!strcmp(argv[1], "verify")) {
        int np = argc > 3 ? atoi(argv[3]) : 1;
        FILE *f = fopen(argv[2], "rb");
        if (!f) {
            perror(argv[2]);
            return 1;
        }
        long long n = (long long)REGION * np, bad = 0, extra_ok = 0;
        for (long long i = 0; i < n; i++) {
            int c = fgetc(f);
            if (c != val(i, 1) && !bad++)
                fprintf(stderr, "synced byte %lld lost: %d instead of %d\n", i, c, val(i, 1));
        }
        for (long long i = 0; i < (long long)EXTRA * np; i++)
            extra_ok += fgetc(f) == val(n + i, 2);
        fclose(f);
        printf("crash verify: %lld synced bytes, %lld lost; %lld of %lld unsynced acknowledged bytes present\n", n, bad,
               extra_ok, (long long)EXTRA * np);
        return bad ? 1 : 0;
    }
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_File fh;
    if (!strcmp(argv[1], "restart")) {
        unsigned char *r = malloc(REGION);
        long long bad = 0, r0 = (long long)rank * REGION;
        if (MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        memset(r, 0, REGION);
        MPI_File_read_at_all(fh, r0, r, REGION, MPI_BYTE, MPI_STATUS_IGNORE);
        for (int i = 0; i < REGION; i++)
            if (r[i] != val(r0 + i, 1) && !bad++)
                fprintf(stderr, "rank %d: synced byte %lld read as %d instead of %d\n", rank, r0 + i, r[i],
                        val(r0 + i, 1));
        MPI_File_close(&fh);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("crash restart: %lld synced bytes read back, %lld wrong\n", (long long)np * REGION, bad);
        free(r);
        MPI_Finalize();
        return bad ? 1 : 0;
    }
    /* CRASH_STRIPING_UNIT: MPI's striping_unit hint, which nvcache takes as its part stripe (a
       value that is not a whole number of pages puts two file blocks in one dirty page). */
    MPI_Info info = MPI_INFO_NULL;
    const char *unit = getenv("CRASH_STRIPING_UNIT");
    if (unit && *unit) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "striping_unit", unit);
    }
    if (MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    unsigned char *b = malloc(REGION);
    const char *hv = getenv("CRASH_HANDLES");
    int handles = hv && atoi(hv) > 0;
    if (handles) {
        /* Several handles: the first third of each rank's region through the open handle (cached)
           and synced; the second through a second handle on MPI_COMM_SELF (the file is shared
           from its open on: the first handle's cache is drained) and synced; both closed; the
           last third through a new handle on MPI_COMM_WORLD (cached again) and synced. */
        long long r0 = (long long)rank * REGION;
        int t1 = REGION / 3, t2 = 2 * (REGION / 3);
        for (int i = 0; i < REGION; i++)
            b[i] = val(r0 + i, 1);
        MPI_File_write_at(fh, r0, b, t1, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
        MPI_File h2;
        if (MPI_File_open(MPI_COMM_SELF, argv[2], MPI_MODE_RDWR, info, &h2) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_File_write_at(h2, r0 + t1, b + t1, t2 - t1, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(h2);
        MPI_File_close(&h2);
        MPI_File_close(&fh);
        if (MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_File_write_at_all(fh, r0 + t2, b + t2, REGION - t2, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    /* phase 1: rank r writes its region in 4 KiB pieces of a permutation order, then syncs */
    for (int k = 0; k < REGION && !handles; k += 4096) {
        int piece = (int)(((long long)k * 7919) % REGION) / 4096 * 4096;
        int len = REGION - piece < 4096 ? REGION - piece : 4096;
        long long off = (long long)rank * REGION + piece;
        for (int i = 0; i < len; i++)
            b[i] = val(off + i, 1);
        MPI_File_write_at(fh, off, b, len, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    /* rewrite the whole region once more so every page is dirty with the final content */
    if (!handles) {
        for (int i = 0; i < REGION; i++)
            b[i] = val((long long)rank * REGION + i, 1);
        MPI_File_write_at_all(fh, (long long)rank * REGION, b, REGION, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* phase 2: acknowledged but never synced */
    long long base = (long long)np * REGION + (long long)rank * EXTRA;
    for (int i = 0; i < EXTRA; i++)
        b[i] = val(base + i, 2);
    MPI_File_write_at(fh, base, b, EXTRA, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    int abort_job = !strcmp(argv[1], "abort");
    if (rank == 0)
        printf("crash %s: synced %lld bytes, %s\n", argv[1], (long long)np * REGION,
               abort_job ? "aborting the job" : "killing all ranks");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (abort_job)
        MPI_Abort(MPI_COMM_WORLD, 3);
    raise(SIGKILL);
    return 0;
}
