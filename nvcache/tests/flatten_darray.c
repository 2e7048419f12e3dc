/* flatten_darray.c: nvcache's flattening of MPI_Type_create_darray file types against an
 * independent reference, MPI_Unpack of a marker buffer over the type's whole extent (the way
 * nvcache flattened darrays before, which needs memory of the global array's size). Random
 * global sizes, 1-4 dimensions, block / cyclic(k) / none distributions, default and given
 * arguments, C and Fortran order, every rank of the process grid, contiguous and strided
 * element types. Then a darray over a 100000 x 100000 array of doubles (80 GB of extent): it
 * must flatten without that memory, to the one block a block-row distribution gives.
 *   flatten_darray [SEED]
 */
#include "nvcache_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reference(MPI_Datatype dt, int64_t **off, int64_t **len, size_t *n)
{
    MPI_Count lb, ext, size;
    MPI_Type_get_true_extent_x(dt, &lb, &ext);
    MPI_Type_size_x(dt, &size);
    unsigned char *mark = calloc((size_t)ext + 1, 1), *ones = malloc((size_t)size + 1);
    *off = malloc(sizeof(int64_t) * ((size_t)size + 1));
    *len = malloc(sizeof(int64_t) * ((size_t)size + 1));
    memset(ones, 1, (size_t)size);
    int pos = 0;
    MPI_Unpack(ones, (int)size, &pos, mark - lb, 1, dt, MPI_COMM_SELF);
    *n = 0;
    for (int64_t i = 0; i < ext; i++) {
        if (!mark[i])
            continue;
        if (*n && (*off)[*n - 1] + (*len)[*n - 1] == lb + i)
            (*len)[*n - 1]++;
        else {
            (*off)[*n] = lb + i;
            (*len)[*n] = 1;
            (*n)++;
        }
    }
    free(mark);
    free(ones);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    srand(argc > 1 ? (unsigned)atoi(argv[1]) : 7u);
    int cases = 0, bad = 0;
    const int dists[3] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
    for (int t = 0; t < 300 && bad < 5; t++) {
        int nd = 1 + rand() % 4, gs[4], dist[4], darg[4], ps[4], nprocs = 1;
        for (int k = 0; k < nd; k++) {
            gs[k] = 1 + rand() % (nd > 2 ? 7 : 13);
            dist[k] = dists[rand() % 3];
            /* NONE over 2 processes too: MPICH accepts it (as a block distribution) */
            ps[k] = dist[k] == MPI_DISTRIBUTE_NONE ? 1 + rand() % 2 : 1 + rand() % 3;
            darg[k] = MPI_DISTRIBUTE_DFLT_DARG;
            if (dist[k] == MPI_DISTRIBUTE_CYCLIC && rand() % 2)
                darg[k] = 1 + rand() % 3;
            if (dist[k] == MPI_DISTRIBUTE_BLOCK && rand() % 2)
                darg[k] = (gs[k] + ps[k] - 1) / ps[k] + rand() % 2; /* darg * psize >= gsize */
            nprocs *= ps[k];
        }
        int order = rand() % 2 ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        MPI_Datatype elem = MPI_INT, strided = MPI_DATATYPE_NULL;
        if (rand() % 3 == 0) {
            MPI_Type_vector(2, 1, 2, MPI_INT, &strided); /* an element with a hole in it */
            elem = strided;
        }
        for (int r = 0; r < nprocs; r++) {
            MPI_Datatype dt;
            if (MPI_Type_create_darray(nprocs, r, nd, gs, dist, darg, ps, order, elem, &dt) != MPI_SUCCESS)
                continue;
            MPI_Type_commit(&dt);
            struct nvc_flat f;
            int64_t *off, *len;
            size_t n;
            int rc = nvc_flatten(dt, &f);
            reference(dt, &off, &len, &n);
            int same = rc == MPI_SUCCESS && f.n == n;
            for (size_t i = 0; same && i < n; i++)
                same = f.off[i] == off[i] && f.len[i] == len[i];
            if (!same) {
                bad++;
                fprintf(stderr, "darray case %d rank %d (ndims %d, order %s): nvcache %zu blocks (rc %d), reference %zu\n", t, r, nd,
                        order == MPI_ORDER_C ? "C" : "Fortran", rc == MPI_SUCCESS ? f.n : 0, rc, n);
            }
            cases++;
            if (rc == MPI_SUCCESS)
                nvc_flat_free(&f);
            free(off);
            free(len);
            MPI_Type_free(&dt);
        }
        if (strided != MPI_DATATYPE_NULL)
            MPI_Type_free(&strided);
    }
    /* 100000 x 100000 doubles over a 2 x 1 grid, block rows: rank 1 owns the second half. */
    int gs[2] = {100000, 100000}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
    int darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 1};
    MPI_Datatype big;
    MPI_Type_create_darray(2, 1, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_DOUBLE, &big);
    MPI_Type_commit(&big);
    struct nvc_flat f;
    int rc = nvc_flatten(big, &f);
    int big_ok = rc == MPI_SUCCESS && f.n == 1 && f.off[0] == 50000LL * 100000 * 8 && f.len[0] == 50000LL * 100000 * 8;
    if (rc == MPI_SUCCESS)
        nvc_flat_free(&f);
    MPI_Type_free(&big);
    printf("flatten_darray: %d darray types, %d differ from the reference; 80 GB array %s\n", cases, bad,
           big_ok ? "flattened to its one block" : "NOT flattened right");
    MPI_Finalize();
    return bad || !big_ok || cases < 100;
}
