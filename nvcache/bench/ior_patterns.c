/* ior_patterns: the access patterns HPC I/O studies measure (IOR's segmented layout), one CSV line
 * per phase. Each rank writes SEGMENTS segments of a BLOCK-byte block in XFER-byte transfers, then
 * MPI_File_sync (the write phase ends when every rank's data is durable), then every rank reads a
 * neighbour's blocks (so reads do not hit the writer's own cache) and checks them. Variants:
 *   indep       one shared file, MPI_File_write_at / read_at
 *   coll        one shared file, MPI_File_write_at_all / read_at_all
 *   fpp         one file per process (MPI_COMM_SELF), independent calls
 *   random      shared file, transfers in a random order
 *   random_fpp  file per process, transfers in a random order
 * Layout (IOR -s SEGMENTS -b BLOCK -t XFER): segment s of rank r at (s * nprocs + r) * BLOCK in a
 * shared file, s * BLOCK in a file per process. The file is kept (deleted by rank 0 afterwards).
 * usage: mpiexec -n P ior_patterns -d DIR [-v VARIANT] [-s SEGMENTS] [-b BLOCK_KIB] [-t XFER_KIB] [-l LABEL]
 * CSV: bench,label,hosts,variant,phase,procs,xfer_bytes,total_bytes,seconds,MiB_per_s (hosts: as MPI
 * sees them, MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char val(int r, long long off) { return (unsigned char)(r * 29 + (off >> 6) * 7 + off); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, opt;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = ".", *label = "run", *variant = "indep";
    long segments = 4, block_kib = 4096, xfer_kib = 64;
    while ((opt = getopt(argc, argv, "d:v:s:b:t:l:")) != -1) {
        switch (opt) {
        case 'd': dir = optarg; break;
        case 'v': variant = optarg; break;
        case 's': segments = atol(optarg); break;
        case 'b': block_kib = atol(optarg); break;
        case 't': xfer_kib = atol(optarg); break;
        case 'l': label = optarg; break;
        default: segments = 0; break;
        }
    }
    int fpp = strstr(variant, "fpp") != NULL, coll = !strcmp(variant, "coll"), rnd = !strncmp(variant, "random", 6);
    if (segments <= 0 || block_kib <= 0 || xfer_kib <= 0 || block_kib % xfer_kib ||
        (strcmp(variant, "indep") && strcmp(variant, "coll") && strcmp(variant, "fpp") && strcmp(variant, "random") &&
         strcmp(variant, "random_fpp"))) {
        if (!rank)
            fprintf(stderr, "usage: ior_patterns -d DIR [-v indep|coll|fpp|random|random_fpp] [-s SEGMENTS] "
                            "[-b BLOCK_KIB] [-t XFER_KIB, dividing BLOCK_KIB] [-l LABEL]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long block = block_kib * 1024, xfer = xfer_kib * 1024, per_block = block / xfer, n = segments * per_block;
    /* The transfer order: 0..n-1, or a permutation of it the same on every run (seeded by rank). */
    long long *order = malloc(sizeof *order * (size_t)n);
    for (long long i = 0; i < n; i++)
        order[i] = i;
    if (rnd) {
        uint64_t x = 88172645463325252ull ^ (uint64_t)(rank + 1);
        for (long long i = n - 1; i > 0; i--) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            long long j = (long long)(x % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    unsigned char *buf = malloc((size_t)xfer);
    char path[4096];
    int peer = (rank + 1) % np;
    /* Offset of transfer i of rank r's data in its file. */
#define OFFSET(r, i) (fpp ? ((i) / per_block) * block + ((i) % per_block) * xfer                                  \
                          : (((i) / per_block) * np + (r)) * block + ((i) % per_block) * xfer)
    MPI_File fh;
    if (fpp)
        snprintf(path, sizeof path, "%s/ior-%s.%d", dir, variant, rank);
    else
        snprintf(path, sizeof path, "%s/ior-%s", dir, variant);
    if (!rank || fpp)
        unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm comm = fpp ? MPI_COMM_SELF : MPI_COMM_WORLD;
    if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long long k = 0; k < n; k++) {
        long long i = order[k], off = OFFSET(rank, i);
        for (long long b = 0; b < xfer; b++)
            buf[b] = val(rank, off + b);
        if (coll)
            MPI_File_write_at_all(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
        else
            MPI_File_write_at(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double tw = MPI_Wtime() - t0;
    /* The neighbour's data: its file (file per process) or its blocks of the shared file. */
    MPI_File rfh = fh;
    if (fpp) {
        MPI_File_close(&fh);
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(path, sizeof path, "%s/ior-%s.%d", dir, variant, peer);
        if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &rfh) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    long long bad = 0;
    for (long long k = 0; k < n; k++) {
        long long i = order[k], off = OFFSET(peer, i);
        if (coll)
            MPI_File_read_at_all(rfh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
        else
            MPI_File_read_at(rfh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
        bad += buf[0] != val(peer, off) || buf[xfer - 1] != val(peer, off + xfer - 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double tr = MPI_Wtime() - t0;
    MPI_File_close(&rfh);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (bad) {
        if (!rank)
            fprintf(stderr, "ior_patterns: %lld transfers read back wrong\n", bad);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm host;
    int host_rank, hosts = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &host_rank);
    host_rank = host_rank == 0;
    MPI_Allreduce(&host_rank, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&host);
    if (!rank) {
        double total = (double)n * xfer * np;
        printf("ior,%s,%d,%s,write_sync,%d,%lld,%.0f,%.6f,%.1f\n", label, hosts, variant, np, xfer, total, tw,
               total / tw / 1048576);
        printf("ior,%s,%d,%s,read,%d,%lld,%.0f,%.6f,%.1f\n", label, hosts, variant, np, xfer, total, tr,
               total / tr / 1048576);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (fpp) {
        snprintf(path, sizeof path, "%s/ior-%s.%d", dir, variant, rank);
        unlink(path);
    } else if (!rank)
        unlink(path);
    free(buf);
    free(order);
    MPI_Finalize();
    return 0;
}
