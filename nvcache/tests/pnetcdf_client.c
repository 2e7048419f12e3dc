/* pnetcdf_client.c: a PnetCDF program (Debian's libpnetcdf, built on Open MPI) that knows nothing
 * about nvcache. client_cmp.sh runs it with and without LD_PRELOAD=libnvcache.so and compares the
 * files byte for byte. It writes a CDF-5 file in collective data mode (put_vara_all of each rank's
 * rows, a record variable that grows along the unlimited dimension) and in independent data mode
 * (begin_indep_data, put_vara and a strided put_vars), reopens it and checks a neighbour's data
 * read back in both modes. usage: pnetcdf_client FILE */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 37
#define COLS 1001

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int e_ = (call);                                                                             \
        if (e_ != NC_NOERR) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncmpi_strerror(e_));       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
        }                                                                                            \
    } while (0)

static double value(int r, long i, long j, int salt) { return r * 1e6 + i * COLS + j + salt * 0.25; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (!rank)
            fprintf(stderr, "usage: pnetcdf_client FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *buf = malloc(sizeof(double) * ROWS * COLS);
    int ncid, dims[3], grid, strided, series;
    CHECK(ncmpi_create(MPI_COMM_WORLD, argv[1], NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
    CHECK(ncmpi_def_dim(ncid, "y", (MPI_Offset)ROWS * size, &dims[1]));
    CHECK(ncmpi_def_dim(ncid, "x", COLS, &dims[2]));
    CHECK(ncmpi_def_var(ncid, "grid", NC_DOUBLE, 2, &dims[1], &grid));
    CHECK(ncmpi_def_var(ncid, "strided", NC_DOUBLE, 2, &dims[1], &strided));
    CHECK(ncmpi_def_var(ncid, "series", NC_INT, 2, (int[]){dims[0], dims[2]}, &series));
    CHECK(ncmpi_put_att_text(ncid, NC_GLOBAL, "title", 22, "nvcache PnetCDF client"));
    CHECK(ncmpi_enddef(ncid));

    /* Collective data mode: each rank's block of rows, and one record per rank. */
    for (long i = 0; i < ROWS; i++)
        for (long j = 0; j < COLS; j++)
            buf[i * COLS + j] = value(rank, i, j, 0);
    MPI_Offset start[2] = {(MPI_Offset)rank * ROWS, 0}, count[2] = {ROWS, COLS};
    CHECK(ncmpi_put_vara_double_all(ncid, grid, start, count, buf));
    int rec[COLS];
    for (int j = 0; j < COLS; j++)
        rec[j] = rank * 7 + j;
    MPI_Offset rstart[2] = {rank, 0}, rcount[2] = {1, COLS};
    CHECK(ncmpi_put_vara_int_all(ncid, series, rstart, rcount, rec));

    /* Independent data mode: every other column of my rows, then one row rewritten. */
    CHECK(ncmpi_begin_indep_data(ncid));
    MPI_Offset sstart[2] = {(MPI_Offset)rank * ROWS, 1}, scount[2] = {ROWS, COLS / 2}, stride[2] = {1, 2};
    for (long i = 0; i < ROWS * (COLS / 2); i++)
        buf[i] = value(rank, i / (COLS / 2), i % (COLS / 2), 1);
    CHECK(ncmpi_put_vars_double(ncid, strided, sstart, scount, stride, buf));
    for (long j = 0; j < COLS; j++)
        buf[j] = -value(rank, 0, j, 2);
    MPI_Offset one[2] = {(MPI_Offset)rank * ROWS + ROWS / 2, 0}, onec[2] = {1, COLS};
    CHECK(ncmpi_put_vara_double(ncid, grid, one, onec, buf));
    CHECK(ncmpi_end_indep_data(ncid));
    CHECK(ncmpi_close(ncid));

    /* Reopen: read a neighbour's rows collectively and its record independently. */
    int peer = (rank + 1) % size, bad = 0;
    CHECK(ncmpi_open(MPI_COMM_WORLD, argv[1], NC_NOWRITE, MPI_INFO_NULL, &ncid));
    MPI_Offset pstart[2] = {(MPI_Offset)peer * ROWS, 0};
    CHECK(ncmpi_get_vara_double_all(ncid, grid, pstart, count, buf));
    for (long i = 0; i < ROWS; i++)
        for (long j = 0; j < COLS; j++)
            bad += buf[i * COLS + j] != (i == ROWS / 2 ? -value(peer, 0, j, 2) : value(peer, i, j, 0));
    CHECK(ncmpi_begin_indep_data(ncid));
    MPI_Offset prs[2] = {peer, 0};
    CHECK(ncmpi_get_vara_int(ncid, series, prs, rcount, rec));
    for (int j = 0; j < COLS; j++)
        bad += rec[j] != peer * 7 + j;
    CHECK(ncmpi_end_indep_data(ncid));
    CHECK(ncmpi_close(ncid));
    if (bad)
        fprintf(stderr, "rank %d: %d values of rank %d read back wrong\n", rank, bad, peer);
    free(buf);
    MPI_Finalize();
    return bad != 0;
}
