/* many_files.c: a job keeps many files open at once (default 1900), each written by every rank,
 * then closes them and checks every file's bytes. Across hosts nvcache made one duplicate of
 * the communicator per cached open, beside ROMIO's own: MPICH's communicator ids ran out at about
 * 1700 open files and every rank crashed in MPI_File_open, where plain MPI-IO keeps 1900 open.
 * The count is lowered to what the process may keep open (RLIMIT_NOFILE).
 *   many_files DIR [N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        fprintf(stderr, "usage: many_files DIR [N]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = argc > 2 ? atoi(argv[2]) : 1900;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)n > rl.rlim_cur / 2)
        n = (int)(rl.rlim_cur / 2); /* each open file holds descriptors of MPI-IO and of nvcache */
    MPI_File *fh = malloc(sizeof *fh * (size_t)n);
    char p[4096];
    int bad = 0;
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/many-%d.dat", argv[1], i);
        if (rank == 0)
            unlink(p);
        MPI_Barrier(MPI_COMM_WORLD);
        if (MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh[i]) != MPI_SUCCESS) {
            fprintf(stderr, "many_files: rank %d: open %d failed\n", rank, i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int v = i * 16 + rank;
        MPI_File_write_at(fh[i], rank * (MPI_Offset)sizeof v, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < n; i++)
        if (MPI_File_close(&fh[i]) != MPI_SUCCESS)
            bad = 1;
    if (rank == 0)
        for (int i = 0; i < n && !bad; i++) {
            snprintf(p, sizeof p, "%s/many-%d.dat", argv[1], i);
            FILE *f = fopen(p, "rb");
            for (int r = 0; r < nprocs && f; r++) {
                int v = -1;
                if (fread(&v, sizeof v, 1, f) != 1 || v != i * 16 + r)
                    bad = 1;
            }
            if (!f)
                bad = 1;
            else
                fclose(f);
            unlink(p);
        }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("many_files: %d files open at once, %s\n", n, bad ? "WRONG bytes or a failed close" : "all bytes right");
    free(fh);
    MPI_Finalize();
    return bad;
}
