/* reopen.c: one file opened in turn by different communicators, across hosts.
 *   reopen FILE [ITERATIONS]   (under mpiexec, several hosts, through nvcache) each iteration:
 *     (1) opens FILE on MPI_COMM_WORLD; every rank writes 4 KiB at rank * 4 KiB; close;
 *     (2) each host's ranks open it on their host's communicator at the same time (two handles of
 *         one file in the job, one caching, the other draining it); each rank writes 4 KiB at
 *         (np + rank) * 4 KiB, odd iterations also MPI_File_sync; close;
 *     (3) every rank opens it on MPI_COMM_SELF and writes 4 KiB at (2 np + rank) * 4 KiB; close;
 *     (4) rank 0 reads every block back and checks it.
 * Prints each block that differs and exits 1 on any; prints `reopen: ok` otherwise. Stripes of
 * 4 KiB (the striping_unit hint) put every rank's blocks in several parts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define BS 4096
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = argv[1];
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_unit", "4096");
    char buf[BS];
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < iters && !bad; it++) {
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
        memset(buf, 'A' + (it + rank) % 20, BS);
        MPI_File_write_at(fh, (MPI_Offset)rank * BS, buf, BS, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        MPI_File_open(host, path, MPI_MODE_RDWR, info, &fh);
        memset(buf, 'a' + (it + rank) % 20, BS);
        MPI_File_write_at(fh, (MPI_Offset)(np + rank) * BS, buf, BS, MPI_BYTE, MPI_STATUS_IGNORE);
        if (it & 1)
            MPI_File_sync(fh);
        MPI_File_close(&fh);
        MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, info, &fh);
        memset(buf, '0' + (it + rank) % 10, BS);
        MPI_File_write_at(fh, (MPI_Offset)(2 * np + rank) * BS, buf, BS, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
            for (int r = 0; r < np; r++)
                for (int k = 0; k < 3; k++) {
                    char want = k == 0 ? 'A' + (it + r) % 20 : k == 1 ? 'a' + (it + r) % 20 : '0' + (it + r) % 10;
                    memset(buf, 0, BS);
                    MPI_File_read_at(fh, (MPI_Offset)(k * np + r) * BS, buf, BS, MPI_BYTE, MPI_STATUS_IGNORE);
                    int n = 0;
                    for (int i = 0; i < BS; i++)
                        n += buf[i] != want;
                    if (n) {
                        printf("it %d region %d rank %d: %d bytes differ (want %c, got %c@0 %c@4095)\n", it, k, r, n,
                               want, buf[0] ? buf[0] : '0', buf[BS - 1] ? buf[BS - 1] : '0');
                        bad = 1;
                    }
                }
            MPI_File_close(&fh);
        }
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("reopen: %s\n", bad ? "MISMATCH" : "ok");
    MPI_Finalize();
    return bad;
}
