/* hdf5_client.c: a parallel HDF5 program (Debian's libhdf5-mpich, MPI-IO driver) that knows
 * nothing about nvcache. hdf5.sh runs it with and without LD_PRELOAD=libnvcache.so and compares
 * the files byte for byte. It writes a contiguous and a chunked 2-D dataset with collective and
 * independent hyperslab transfers, an attribute, then reopens the file and checks every value; then
 * opens it read-write on MPI_COMM_WORLD and, at the same time, read-only on MPI_COMM_SELF on every
 * rank (two MPI-IO handles of one file), and reads through the second what the first wrote.
 * usage: mpiexec -n P hdf5_client FILE
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS_PER_RANK 37
#define COLS 301

static double value(long r, long c, int which) { return r * 1000.0 + c + which * 0.5; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 2) {
        if (!rank)
            fprintf(stderr, "usage: hdf5_client FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    hsize_t dims[2] = {(hsize_t)ROWS_PER_RANK * np, COLS};
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    double *buf = malloc(sizeof(double) * ROWS_PER_RANK * COLS);
    int bad = 0;

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0); /* no timestamps: files are comparable byte for byte */
    hid_t dcpl_chunk = H5Pcopy(dcpl);
    hsize_t chunk[2] = {16, 64};
    H5Pset_chunk(dcpl_chunk, 2, chunk);
    hid_t d1 = H5Dcreate2(file, "contiguous", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t d2 = H5Dcreate2(file, "chunked", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl_chunk, H5P_DEFAULT);
    hid_t mem = H5Screate_simple(2, count, NULL);
    hid_t fsel = H5Scopy(space);
    H5Sselect_hyperslab(fsel, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), indep = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE);
    H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT);
    for (int which = 0; which < 2; which++) {
        for (long r = 0; r < ROWS_PER_RANK; r++)
            for (long c = 0; c < COLS; c++)
                buf[r * COLS + c] = value(start[0] + r, c, which);
        if (H5Dwrite(which ? d2 : d1, H5T_NATIVE_DOUBLE, mem, fsel, which ? indep : coll, buf) < 0)
            bad = 1;
    }
    int attr_val = 42 + np;
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(d1, "ranks_plus_42", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_INT, &attr_val);
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Dclose(d1);
    H5Dclose(d2);
    H5Fclose(file);

    /* reopen and read back, each rank reading its neighbour's rows */
    file = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
    long peer = (rank + 1) % np;
    hsize_t pstart[2] = {(hsize_t)peer * ROWS_PER_RANK, 0};
    H5Sselect_hyperslab(fsel, H5S_SELECT_SET, pstart, NULL, count, NULL);
    const char *names[2] = {"contiguous", "chunked"};
    for (int which = 0; which < 2; which++) {
        hid_t d = H5Dopen2(file, names[which], H5P_DEFAULT);
        if (d < 0 || H5Dread(d, H5T_NATIVE_DOUBLE, mem, fsel, which ? coll : indep, buf) < 0)
            bad = 1;
        for (long r = 0; r < ROWS_PER_RANK && !bad; r++)
            for (long c = 0; c < COLS; c++)
                if (buf[r * COLS + c] != value(pstart[0] + r, c, which)) {
                    fprintf(stderr, "rank %d: %s[%ld][%ld] = %g, expected %g\n", rank, names[which],
                            (long)pstart[0] + r, c, buf[r * COLS + c], value(pstart[0] + r, c, which));
                    bad = 1;
                    break;
                }
        H5Dclose(d);
    }
    H5Fclose(file);

    /* Two handles of one file at once, as HDF5 applications get when they open a file a second
       time: a read-write file on MPI_COMM_WORLD adds a dataset and flushes (H5Fflush: metadata out,
       MPI_File_sync); after a barrier every rank opens the same file read-only on MPI_COMM_SELF (a
       second MPI-IO handle, MPI-IO's sync-barrier-sync rule) and reads the new dataset whole; then
       the first handle rewrites it and closes. */
    file = H5Fopen(argv[1], H5F_ACC_RDWR, fapl);
    hid_t d3 = H5Dcreate2(file, "second_handle", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sselect_hyperslab(fsel, H5S_SELECT_SET, start, NULL, count, NULL);
    for (long r = 0; r < ROWS_PER_RANK; r++)
        for (long c = 0; c < COLS; c++)
            buf[r * COLS + c] = value(start[0] + r, c, 2);
    if (d3 < 0 || H5Dwrite(d3, H5T_NATIVE_DOUBLE, mem, fsel, coll, buf) < 0 || H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
        bad = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    hid_t fapl_self = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl_self, MPI_COMM_SELF, MPI_INFO_NULL);
    hid_t file2 = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl_self);
    hid_t d3r = file2 < 0 ? -1 : H5Dopen2(file2, "second_handle", H5P_DEFAULT);
    double *all = malloc(sizeof(double) * ROWS_PER_RANK * COLS * (size_t)np);
    if (d3r < 0 || H5Dread(d3r, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) < 0) {
        fprintf(stderr, "rank %d: reading through a second handle failed\n", rank);
        bad = 1;
    }
    for (long r = 0; r < (long)ROWS_PER_RANK * np && !bad; r++)
        for (long c = 0; c < COLS; c++)
            if (all[r * COLS + c] != value(r, c, 2)) {
                fprintf(stderr, "rank %d: second handle: second_handle[%ld][%ld] = %g, expected %g\n", rank, r, c,
                        all[r * COLS + c], value(r, c, 2));
                bad = 1;
                break;
            }
    free(all);
    if (d3r >= 0)
        H5Dclose(d3r);
    if (file2 >= 0)
        H5Fclose(file2);
    H5Pclose(fapl_self);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long r = 0; r < ROWS_PER_RANK; r++)
        for (long c = 0; c < COLS; c++)
            buf[r * COLS + c] = value(start[0] + r, c, 3);
    if (H5Dwrite(d3, H5T_NATIVE_DOUBLE, mem, fsel, indep, buf) < 0)
        bad = 1;
    H5Dclose(d3);
    H5Fclose(file);
    H5Pclose(coll);
    H5Pclose(indep);
    H5Sclose(fsel);
    H5Sclose(mem);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(dcpl_chunk);
    H5Pclose(fapl);
    free(buf);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!rank)
        printf("hdf5_client: %d ranks, %s\n", np, bad ? "FAILED" : "all values read back correctly");
    MPI_Finalize();
    return bad;
}
