/* far_write.c: a write that lies wholly in another node's part must not reserve NVRAM in mine.
 * 2 ranks, 1 rank per node, new file (1 MiB stripe): rank 0 writes 1 byte in block 65 (part 1's);
 * part 0 must stay at its header (cache.c reserved it up to 33 MiB before the fix). */
#include <mpi.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s/far_write.dat", argc > 1 ? argv[1] : ".");
    if (rank == 0)
        remove(path);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    char c = 'x';
    if (rank == 0)
        MPI_File_write_at(fh, (MPI_Offset)65 << 20, &c, 1, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        const char *d = getenv("NVCACHE_DIR");
        DIR *dd = d ? opendir(d) : NULL;
        struct dirent *e;
        int seen = 0;
        while (dd && (e = readdir(dd))) {
            size_t L = strlen(e->d_name);
            if (L < 8 || strcmp(e->d_name + L - 8, "-p0.part"))
                continue;
            char p[2048];
            struct stat sb;
            snprintf(p, sizeof p, "%s/%s", d, e->d_name);
            if (stat(p, &sb) != 0)
                continue;
            seen = 1;
            printf("far_write: untouched part 0 holds %lld KiB\n", (long long)sb.st_blocks / 2);
            bad = sb.st_blocks / 2 > 1024;
        }
        if (dd)
            closedir(dd);
        if (!seen) {
            printf("far_write: no part 0 in %s (not cached?)\n", d ? d : "(NVCACHE_DIR unset)");
            bad = 1;
        }
    }
    MPI_File_close(&fh);
    MPI_Finalize();
    return bad;
}
