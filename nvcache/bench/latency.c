/* latency: small random MPI-IO read/write latency, one CSV line per (case, size).
 *
 * Cases (each rank works on its own region of a shared file, P ranks), per size in this order:
 *   durable_write  MPI_File_write_at + MPI_File_sync per operation (nvcache: persisted in NVRAM)
 *   warm_write     MPI_File_write_at only (not durable)
 *   cold_read      MPI_File_read_at after posix_fadvise(DONTNEED) evicted the file from the page cache
 *   warm_read      MPI_File_read_at of the same offsets again: the data is now cached
 * and first, once, `open`: the MPI_File_open before all of them (size_bytes: the file's size;
 * each rank's time, so ops = P): nvcache's open reads the whole file into NVRAM there, which is
 * why its cold reads find their data in NVRAM.
 * Before each size's writes the whole file is read once (untimed), so writes smaller than a page
 * find their pages cached at every size (an earlier cold_read evicted them) instead of reading
 * them from disk first.
 * usage: mpiexec -n P latency -f FILE [-m MB] [-o OPS] [-l LABEL] [-s SIZES]
 * CSV: bench,label,case,size_bytes,procs,ops,mean_us,p50_us,p99_us (p50: the upper middle sample;
 * p99: the sample below which 99% lie, the 4th largest of 300)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* Reads the whole file once, so its pages are in the page cache. */
static void warm(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    char *b = malloc(1 << 20);
    while (b && read(fd, b, 1 << 20) > 0)
        ;
    free(b);
    close(fd);
}

static void report(const char *label, const char *cas, int size, int np, double *t, int ops)
{
    /* gather all ranks' samples on rank 0 */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *all = rank ? NULL : malloc(sizeof(double) * (size_t)ops * np);
    MPI_Gather(t, ops, MPI_DOUBLE, all, ops, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank)
        return;
    int n = ops * np;
    qsort(all, (size_t)n, sizeof *all, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += all[i];
    printf("latency,%s,%s,%d,%d,%d,%.2f,%.2f,%.2f\n", label, cas, size, np, n, sum / n * 1e6, all[n / 2] * 1e6,
           all[(int)(n * 0.99)] * 1e6);
    fflush(stdout);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = "latency.dat", *label = "run", *sizes_s = "64,512,4096,65536";
    long mb = 64;
    int ops = 500, opt;
    while ((opt = getopt(argc, argv, "f:m:o:l:s:")) != -1) {
        switch (opt) {
        case 'f': path = optarg; break;
        case 'm': mb = atol(optarg); break;
        case 'o': ops = atoi(optarg); break;
        case 'l': label = optarg; break;
        case 's': sizes_s = optarg; break;
        default:
            if (!rank)
                fprintf(stderr, "usage: latency -f FILE [-m MB] [-o OPS] [-l LABEL] [-s SIZES]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long long region = mb * 1024 * 1024 / np;
    /* prefill with plain POSIX so both configurations start from the same file on disk */
    if (!rank) {
        int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        char *chunk = malloc(1 << 20);
        memset(chunk, 7, 1 << 20);
        for (long i = 0; i < mb; i++)
            if (write(fd, chunk, 1 << 20) != 1 << 20) {
                perror("prefill");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        fsync(fd);
        close(fd);
        free(chunk);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    double open_t = MPI_Wtime();
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    open_t = MPI_Wtime() - open_t;
    report(label, "open", (int)(mb < 2047 ? mb * 1024 * 1024 : 0), np, &open_t, 1);
    double *t = malloc(sizeof(double) * (size_t)ops);
    char *buf = malloc(65536);
    memset(buf, rank + 1, 65536);
    uint64_t x = 88172645463325252ull ^ (uint64_t)rank * 7919;
    const char *cases[4] = {"durable_write", "warm_write", "cold_read", "warm_read"};
    char sizes_copy[256];
    snprintf(sizes_copy, sizeof sizes_copy, "%s", sizes_s);
    for (char *tok = strtok(sizes_copy, ","); tok; tok = strtok(NULL, ",")) {
        int size = atoi(tok);
        if (size <= 0 || size > 65536)
            continue;
        uint64_t read_seed = 0;
        for (int c = 0; c < 4; c++) {
            if (c == 0) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (!rank)
                    warm(path);
            }
            if (c == 2) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (!rank)
                    evict(path);
                read_seed = x;
            }
            if (c == 3)
                x = read_seed; /* warm_read: the offsets cold_read just read */
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < ops; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                long long off = (long long)rank * region + (long long)(x % (uint64_t)((region - size) / 4096)) * 4096;
                double t0 = MPI_Wtime();
                if (c < 2) {
                    MPI_File_write_at(fh, off, buf, size, MPI_BYTE, MPI_STATUS_IGNORE);
                    if (c == 0)
                        MPI_File_sync(fh);
                } else {
                    MPI_File_read_at(fh, off, buf, size, MPI_BYTE, MPI_STATUS_IGNORE);
                }
                t[i] = MPI_Wtime() - t0;
            }
            report(label, cases[c], size, np, t, ops);
        }
    }
    MPI_File_close(&fh);
    if (!rank)
        unlink(path);
    free(t);
    free(buf);
    MPI_Finalize();
    return 0;
}
