/* bandwidth: sequential MPI-IO bandwidth, one CSV line per case.
 * Each rank writes then reads its contiguous region in REQ-byte requests.
 *   durable_write  all writes, then MPI_File_sync (nvcache: data persistent in NVRAM)
 *   cold_read      after posix_fadvise(DONTNEED) on the file
 *   warm_read      again, page cache warm
 * usage: mpiexec -n P bandwidth -f FILE [-m MB] [-r REQ_KB] [-l LABEL]
 * CSV: bench,label,case,req_bytes,procs,total_bytes,seconds,MiB_per_s
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A failed transfer is not a bandwidth: the run stops with the call's error. */
static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, msg, &n);
        fprintf(stderr, "bandwidth: %s failed: %s\n", what, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, opt;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = "bandwidth.dat", *label = "run";
    long mb = 256, req_kb = 1024;
    while ((opt = getopt(argc, argv, "f:m:r:l:")) != -1) {
        switch (opt) {
        case 'f': path = optarg; break;
        case 'm': mb = atol(optarg); break;
        case 'r': req_kb = atol(optarg); break;
        case 'l': label = optarg; break;
        default:
            if (!rank)
                fprintf(stderr, "usage: bandwidth -f FILE [-m MB] [-r REQ_KB] [-l LABEL]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long long req = req_kb * 1024, region = mb * 1024 * 1024 / np / req * req;
    char *buf = malloc((size_t)req);
    memset(buf, rank + 3, (size_t)req);
    if (!rank)
        unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const char *cases[3] = {"durable_write", "cold_read", "warm_read"};
    for (int c = 0; c < 3; c++) {
        if (c == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (!rank) {
                int fd = open(path, O_RDONLY);
                if (fd >= 0) {
                    fdatasync(fd);
                    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                    close(fd);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long long off = 0; off < region; off += req) {
            int rc = c == 0 ? MPI_File_write_at(fh, (long long)rank * region + off, buf, (int)req, MPI_BYTE,
                                                MPI_STATUS_IGNORE)
                            : MPI_File_read_at(fh, (long long)rank * region + off, buf, (int)req, MPI_BYTE,
                                               MPI_STATUS_IGNORE);
            check(rc, cases[c]);
        }
        if (c == 0)
            check(MPI_File_sync(fh), "MPI_File_sync");
        MPI_Barrier(MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        if (!rank)
            printf("bandwidth,%s,%s,%lld,%d,%lld,%.4f,%.1f\n", label, cases[c], req, np, region * np, dt,
                   (double)region * np / dt / 1048576.0);
        fflush(stdout);
    }
    /* the close of every rank: from a barrier to the barrier after it */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    check(MPI_File_close(&fh), "MPI_File_close");
    MPI_Barrier(MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    if (!rank) {
        printf("bandwidth,%s,close_flush,%lld,%d,%lld,%.4f,%.1f\n", label, req, np, region * np, dt,
               (double)region * np / dt / 1048576.0);
        unlink(path);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
