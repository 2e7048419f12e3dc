/* strided: the cost of a strided view of short rows, whose pages the cache writes back by their
 * byte masks or, past 8 runs a page, whole (src/part.c). Each rank writes ROWS rows of 8 bytes at
 * a 16-byte stride (its own region of one shared file, collectively), then closes the file.
 * usage: mpiexec -n P strided FILE [ROWS]   (ROWS default 131072)
 * Prints one line: the write and the close, seconds of the slowest rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) {
        if (!rank)
            fprintf(stderr, "usage: strided FILE [ROWS]\n");
        MPI_Finalize();
        return 2;
    }
    int rows = argc > 2 ? atoi(argv[2]) : 131072;
    if (rows < 1) {
        if (!rank)
            fprintf(stderr, "strided: ROWS must be a positive number\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Datatype vec;
    MPI_Type_vector(rows, 8, 16, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "strided: cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, (MPI_Offset)rank * rows * 16, MPI_BYTE, vec, "native", MPI_INFO_NULL);
    char *b = malloc((size_t)rows * 8);
    for (long i = 0; i < (long)rows * 8; i++)
        b[i] = (char)i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File_write_all(fh, b, rows * 8, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    if (!rank)
        printf("strided rows=%d write_s=%.4f close_s=%.4f\n", rows, t1 - t0, t2 - t1);
    free(b);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return 0;
}
