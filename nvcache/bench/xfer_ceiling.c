/* xfer_ceiling: what MPI alone moves in nvcache's cross-host read pattern, without nvcache. The
 * first half of the ranks are clients, the second half servers (under tests/emu_mpiexec.sh with 2
 * hosts: ranks 0..P/2-1 on h0, P/2..P-1 on h1). Each client sends a 16-byte request and receives a
 * BYTES reply, ITERS times, blocking. -s 1: one server rank (P/2) serves every client in turn, as
 * one agent per host serves remote requests; -s 0: client i has its own server P/2+i. Prints the
 * aggregate reply bandwidth in MiB/s (validation.md, "Access patterns").
 *
 * usage: mpiexec -n P xfer_ceiling [-s 1|0] [-b BYTES] [-n ITERS]   (P even) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np, opt, single = 1;
    long bytes = 65536, iters = 2000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((opt = getopt(argc, argv, "s:b:n:")) != -1) {
        switch (opt) {
        case 's': single = atoi(optarg); break;
        case 'b': bytes = atol(optarg); break;
        case 'n': iters = atol(optarg); break;
        default: bytes = 0; break; /* reported below */
        }
    }
    if (np < 2 || np % 2 != 0 || bytes < 1 || bytes > (1L << 30) || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "xfer_ceiling: needs an even number of ranks, -b in 1..2^30, -n >= 1\n");
        MPI_Finalize();
        return 2;
    }
    int half = np / 2;
    char *buf = malloc((size_t)bytes);
    long req[2] = {0, 0};
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < bytes; i++) buf[i] = (char)i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank < half) {
        int server = single ? half : half + rank;
        for (long i = 0; i < iters; i++) {
            req[0] = 1;
            MPI_Send(req, 2, MPI_LONG, server, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, server, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        req[0] = 0;
        MPI_Send(req, 2, MPI_LONG, server, 1, MPI_COMM_WORLD);
    } else if (!single || rank == half) {
        int clients = single ? half : 1;
        while (clients > 0) {
            MPI_Status st;
            MPI_Recv(req, 2, MPI_LONG, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
            if (req[0] == 0) {
                clients--;
                continue;
            }
            MPI_Send(buf, (int)bytes, MPI_BYTE, st.MPI_SOURCE, 2, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("xfer_ceiling,np=%d,servers=%s,bytes=%ld,iters=%ld,seconds=%.4f,MiB_per_s=%.1f\n", np,
               single ? "one" : "pairs", bytes, iters, t, (double)half * iters * bytes / t / 1048576.0);
    free(buf);
    MPI_Finalize();
    return 0;
}
