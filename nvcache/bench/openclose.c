/* openclose: per-open and per-close cost of MPI-IO on one communicator.
 *
 * Each iteration opens a delete-on-close file on MPI_COMM_WORLD, writes 57.6 KB per rank with
 * write_at_all, and closes it (Cannon's power-file pattern at n = 480 on 4 ranks). Reports the mean
 * open, write and close times over the iterations after the first (the communicator is then
 * known), the first iteration's open separately, and the time MPI_Init took (CLOCK_MONOTONIC
 * around it; the maximum over ranks), so job-wide setup done in MPI_Init is visible too.
 *
 * usage: openclose FILE [ITERATIONS]      (run with LD_PRELOAD=libnvcache.so NVCACHE_ENABLE=0|1)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double ti = now();
    MPI_Init(&argc, &argv);
    double init = now() - ti;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) {
        if (!rank)
            fprintf(stderr, "usage: openclose FILE [ITERATIONS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = argc > 2 ? atoi(argv[2]) : 30;
    if (n < 2)
        n = 2;
    static char buf[57600];
    memset(buf, 1, sizeof buf);
    double to = 0, tw = 0, tc = 0, first = 0;
    for (int i = 0; i < n; i++) {
        MPI_File fh;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                      MPI_INFO_NULL, &fh);
        double t1 = MPI_Wtime();
        MPI_File_write_at_all(fh, (MPI_Offset)rank * (MPI_Offset)sizeof buf, buf, (int)sizeof buf, MPI_BYTE,
                              MPI_STATUS_IGNORE);
        double t2 = MPI_Wtime();
        MPI_File_close(&fh);
        double t3 = MPI_Wtime();
        if (i) {
            to += t1 - t0;
            tw += t2 - t1;
            tc += t3 - t2;
        } else
            first = t1 - t0;
    }
    double v[5] = {to / (n - 1), tw / (n - 1), tc / (n - 1), first, init}, m[5];
    MPI_Reduce(v, m, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("openclose,open_us=%.0f,write_all_us=%.0f,close_us=%.0f,first_open_us=%.0f,mpi_init_us=%.0f\n",
               m[0] * 1e6, m[1] * 1e6, m[2] * 1e6, m[3] * 1e6, m[4] * 1e6);
    MPI_Finalize();
    return 0;
}
