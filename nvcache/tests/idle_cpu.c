/* idle_cpu.c: no thread of nvcache spins. Every rank writes 64 KiB blocks to a shared file, syncs,
 * reads a neighbour's blocks back (checked; across emulated hosts that goes through the other
 * host's agent), and then, with the file still open, sleeps outside MPI for IDLE_MS. What the
 * process uses of the CPU meanwhile (getrusage, all its threads) is what nvcache's manager and
 * agent threads and MPI's own threads use while the application does nothing. Rank 0 prints each
 * rank's figure and fails when the job's sum exceeds LIMIT_PCT percent of one core.
 * With the ranks oversubscribing the cores (8 on 2), a polling thread would take a core's share.
 * Usage: mpiexec -n P idle_cpu DIR [IDLE_MS=1000] [LIMIT_PCT=5]
 */
#define _DEFAULT_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "test_util.h"

static int rank;

#define BLK 65536
#define PER_RANK 4

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int nprocs = test_start(&argc, &argv, &rank, 1, "idle_cpu DIR [IDLE_MS] [LIMIT_PCT]");
    char *end;
    long idle = argc > 2 ? strtol(argv[2], &end, 10) : 1000;
    if (argc > 2 && (*end || idle < 10 || idle > 60000)) {
        if (rank == 0)
            fprintf(stderr, "idle_cpu: IDLE_MS \"%s\" is not an integer in 10..60000\n", argv[2]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double limit = argc > 3 ? strtod(argv[3], &end) : 5.0;
    if (argc > 3 && (*end || !(limit > 0))) {
        if (rank == 0)
            fprintf(stderr, "idle_cpu: LIMIT_PCT \"%s\" is not a positive number\n", argv[3]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    char path[1024];
    snprintf(path, sizeof path, "%s/idle-cpu", argv[1]);
    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int bad = write_read_neighbour(fh, rank, nprocs, PER_RANK, BLK, 0, "idle-cpu");
    MPI_Barrier(MPI_COMM_WORLD);

    /* The measured interval: this thread sleeps, outside MPI. */
    double c0 = cpu_ms(), w0 = wall_ms();
    struct timespec ts = {idle / 1000, (idle % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    double used[2] = {cpu_ms() - c0, wall_ms() - w0};

    double *all = rank == 0 ? malloc(sizeof used * (size_t)nprocs) : NULL;
    MPI_Gather(used, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int fail = bad != 0;
    if (rank == 0) {
        double sum = 0, wall = 0;
        printf("idle_cpu ranks=%d idle_ms=%ld cpu_ms_per_rank=", nprocs, idle);
        for (int r = 0; r < nprocs; r++) {
            printf("%s%.1f", r ? "," : "", all[2 * r]);
            sum += all[2 * r];
            wall = all[2 * r + 1] > wall ? all[2 * r + 1] : wall;
        }
        double pct = 100.0 * sum / wall;
        printf(" total_cpu_ms=%.1f share_of_one_core=%.2f%% limit=%.2f%%\n", sum, pct, limit);
        if (pct > limit) {
            fprintf(stderr, "idle_cpu: the idle job used %.2f%% of one core (limit %.2f%%)\n", pct, limit);
            fail = 1;
        }
        free(all);
    }
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(MPI_File_close(&fh));
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Finalize();
    return fail;
}
