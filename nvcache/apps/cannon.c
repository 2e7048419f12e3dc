/* cannon: powers of a random graph's adjacency matrix with Cannon's algorithm, through MPI-IO.
 *
 * The paper's application (Malinowski & Czarnul, CISIM 2017): n vertices, each directed edge with
 * probability 2%, 1-byte cells (walk counts saturate at 255), file size n^2. Every step reads the
 * previous power and the adjacency matrix from files (2-D subarray views, collective reads),
 * multiplies them with Cannon's algorithm on a sqrt(P) x sqrt(P) grid and writes the new power
 * back (collective write). Reports walk counts, triangles (trace(A^3)/3) and shortest path
 * lengths, and for small n verifies all three against a serial reference.
 *
 * usage: cannon [-n N] [-k POWER] [-d DIR] [-D] [-s SEED] [-v] [-c]
 *   -D  open the power file with MPI_MODE_DELETE_ON_CLOSE (temporary), -v verify (n <= 2048),
 *   -c  print one CSV line: app,n,procs,power,delete_on_close,total_s,io_s,triangles,checksum
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, nprocs;

static uint32_t hash3(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 0x165667B1u) * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return h;
}

/* Edge i->j with probability 2% (no self loops). */
static uint8_t edge(uint32_t seed, int i, int j) { return i != j && hash3(seed, (uint32_t)i, (uint32_t)j) % 10000 < 200; }

static uint8_t sat(uint32_t v) { return v > 255 ? 255 : (uint8_t)v; }

/* c += a * b on b x b blocks with saturation (acc holds the exact sums). */
static void block_mul(const uint8_t *a, const uint8_t *b, uint32_t *acc, int bs)
{
    for (int i = 0; i < bs; i++)
        for (int k = 0; k < bs; k++) {
            uint32_t x = a[(size_t)i * bs + k];
            if (!x)
                continue;
            const uint8_t *brow = b + (size_t)k * bs;
            uint32_t *crow = acc + (size_t)i * bs;
            for (int j = 0; j < bs; j++)
                crow[j] += x * brow[j];
        }
}

static void die(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int l;
    MPI_Error_string(rc, s, &l);
    fprintf(stderr, "cannon rank %d: %s failed: %s\n", rank, what, s);
    MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(call, what)                 \
    do {                               \
        int rc_ = (call);              \
        if (rc_ != MPI_SUCCESS)        \
            die(what, rc_);            \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int n = 512, power = 4, doc = 0, verify = 0, csv = 0;
    uint32_t seed = 12345;
    const char *dir = ".";
    int opt;
    while ((opt = getopt(argc, argv, "n:k:d:Ds:vc")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'k': power = atoi(optarg); break;
        case 'd': dir = optarg; break;
        case 'D': doc = 1; break;
        case 's': seed = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'v': verify = 1; break;
        case 'c': csv = 1; break;
        default:
            if (!rank)
                fprintf(stderr, "usage: cannon [-n N] [-k POWER] [-d DIR] [-D] [-s SEED] [-v] [-c]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int q = 1;
    while ((q + 1) * (q + 1) <= nprocs)
        q++;
    if (q * q != nprocs || n % q || power < 1) {
        if (!rank)
            fprintf(stderr, "cannon: need a square number of ranks (got %d), n divisible by sqrt(P), power >= 1\n", nprocs);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bs = n / q;
    int dims[2] = {q, q}, periods[2] = {1, 1}, coords[2];
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid);
    MPI_Comm_rank(grid, &rank);
    MPI_Cart_coords(grid, rank, 2, coords);
    int row = coords[0], col = coords[1];
    size_t bb = (size_t)bs * bs;
    uint8_t *blkA = malloc(bb), *blkM = malloc(bb), *blkC = malloc(bb), *dist = malloc(bb);
    uint32_t *acc = malloc(bb * sizeof *acc);
    int sizes[2] = {n, n}, subs[2] = {bs, bs}, starts[2] = {row * bs, col * bs};
    MPI_Datatype ft;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);

    char adj_path[4096], pow_path[4096];
    snprintf(adj_path, sizeof adj_path, "%s/cannon-adj-%d.dat", dir, n);
    snprintf(pow_path, sizeof pow_path, "%s/cannon-power-%d.dat", dir, n);
    double t_start = MPI_Wtime(), t_io = 0, t0;

    /* The adjacency matrix file (input), written once. */
    for (int i = 0; i < bs; i++)
        for (int j = 0; j < bs; j++)
            blkA[(size_t)i * bs + j] = edge(seed, row * bs + i, col * bs + j);
    MPI_File fa, fp;
    /* MPI's striping_unit hint: one block row of the grid (bs rows of n cells) is what a grid row of
       ranks reads and writes. ROMIO passes it to striped file systems; nvcache uses it as the stripe
       of its per-node parts, so the ranks of a node find their rows in their own node's part. */
    MPI_Info hints;
    MPI_Info_create(&hints);
    char unit[32];
    snprintf(unit, sizeof unit, "%zu", (size_t)bs * (size_t)n);
    MPI_Info_set(hints, "striping_unit", unit);
    t0 = MPI_Wtime();
    CK(MPI_File_open(grid, adj_path, MPI_MODE_CREATE | MPI_MODE_RDWR, hints, &fa), "MPI_File_open(adjacency)");
    CK(MPI_File_set_view(fa, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL), "MPI_File_set_view(adjacency)");
    CK(MPI_File_write_all(fa, blkA, (int)bb, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_write_all(adjacency)");
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR | (doc ? MPI_MODE_DELETE_ON_CLOSE : 0);
    CK(MPI_File_open(grid, pow_path, amode, hints, &fp), "MPI_File_open(power)");
    CK(MPI_File_set_view(fp, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL), "MPI_File_set_view(power)");
    CK(MPI_File_write_all(fp, blkA, (int)bb, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_write_all(power)"); /* A^1 */
    t_io += MPI_Wtime() - t0;
    for (size_t x = 0; x < bb; x++)
        dist[x] = blkA[x] ? 1 : 0;
    uint8_t *trace3 = NULL;
    int left, right, up, down;
    MPI_Cart_shift(grid, 1, 1, &left, &right);
    MPI_Cart_shift(grid, 0, 1, &up, &down);
    for (int s = 2; s <= power; s++) {
        MPI_Barrier(grid); /* the previous power is complete in the file */
        t0 = MPI_Wtime();
        CK(MPI_File_read_at_all(fp, 0, blkM, (int)bb, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_read_at_all(power)");
        CK(MPI_File_read_at_all(fa, 0, blkA, (int)bb, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_read_at_all(adjacency)");
        t_io += MPI_Wtime() - t0;
        /* Cannon: skew M left by row, A up by col, then q multiply-shift steps. */
        int src, dst;
        MPI_Cart_shift(grid, 1, -row, &src, &dst);
        MPI_Sendrecv_replace(blkM, (int)bb, MPI_BYTE, dst, 1, src, 1, grid, MPI_STATUS_IGNORE);
        MPI_Cart_shift(grid, 0, -col, &src, &dst);
        MPI_Sendrecv_replace(blkA, (int)bb, MPI_BYTE, dst, 2, src, 2, grid, MPI_STATUS_IGNORE);
        memset(acc, 0, bb * sizeof *acc);
        for (int step = 0; step < q; step++) {
            block_mul(blkM, blkA, acc, bs);
            MPI_Sendrecv_replace(blkM, (int)bb, MPI_BYTE, left, 3, right, 3, grid, MPI_STATUS_IGNORE);
            MPI_Sendrecv_replace(blkA, (int)bb, MPI_BYTE, up, 4, down, 4, grid, MPI_STATUS_IGNORE);
        }
        for (size_t x = 0; x < bb; x++) {
            blkC[x] = sat(acc[x]);
            if (blkC[x] && !dist[x])
                dist[x] = (uint8_t)s;
        }
        if (s == 3) {
            trace3 = malloc(bb);
            memcpy(trace3, blkC, bb);
        }
        MPI_Barrier(grid); /* everyone has read the previous power before it is overwritten */
        t0 = MPI_Wtime();
        CK(MPI_File_write_at_all(fp, 0, blkC, (int)bb, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_write_at_all(power)");
        t_io += MPI_Wtime() - t0;
    }
    /* Results: final power checksum, triangles from A^3's diagonal. */
    if (power == 1)
        memcpy(blkC, blkA, bb);
    uint64_t local[2] = {0, 0};
    for (size_t x = 0; x < bb; x++)
        local[0] = local[0] * 1000003u + blkC[x] + x * 7 + (uint64_t)rank * 131;
    if (trace3 && row == col)
        for (int i = 0; i < bs; i++)
            local[1] += trace3[(size_t)i * bs + i];
    uint64_t sum[2];
    MPI_Allreduce(local, sum, 2, MPI_UINT64_T, MPI_SUM, grid);
    t0 = MPI_Wtime();
    CK(MPI_File_close(&fp), "MPI_File_close(power)");
    CK(MPI_File_close(&fa), "MPI_File_close(adjacency)");
    t_io += MPI_Wtime() - t0;
    double total = MPI_Wtime() - t_start;
    double io_max;
    MPI_Reduce(&t_io, &io_max, 1, MPI_DOUBLE, MPI_MAX, 0, grid);
    long long triangles = power >= 3 ? (long long)(sum[1] / 3) : -1;

    int bad = 0;
    if (verify) {
        /* Gather the final power and distances, compute the serial reference on rank 0. */
        uint8_t *allC = NULL, *allD = NULL;
        if (!rank) {
            allC = malloc((size_t)n * n * 2);
            allD = allC + (size_t)n * n;
        }
        uint8_t *pack = malloc(bb * 2);
        memcpy(pack, blkC, bb);
        memcpy(pack + bb, dist, bb);
        uint8_t *gath = !rank ? malloc((size_t)nprocs * bb * 2) : NULL;
        MPI_Gather(pack, (int)(bb * 2), MPI_BYTE, gath, (int)(bb * 2), MPI_BYTE, 0, grid);
        if (!rank) {
            for (int r = 0; r < nprocs; r++) {
                int c2[2];
                MPI_Cart_coords(grid, r, 2, c2);
                for (int i = 0; i < bs; i++) {
                    memcpy(allC + (size_t)(c2[0] * bs + i) * n + c2[1] * bs, gath + (size_t)r * bb * 2 + (size_t)i * bs, bs);
                    memcpy(allD + (size_t)(c2[0] * bs + i) * n + c2[1] * bs, gath + (size_t)r * bb * 2 + bb + (size_t)i * bs, bs);
                }
            }
            /* serial reference: repeated saturating products, BFS distances, direct 3-cycle count */
            uint8_t *A = malloc((size_t)n * n), *P = malloc((size_t)n * n), *Q = malloc((size_t)n * n);
            uint32_t *row_acc = malloc((size_t)n * sizeof *row_acc);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    A[(size_t)i * n + j] = P[(size_t)i * n + j] = edge(seed, i, j);
            long long ref_tri = 0;
            for (int s = 2; s <= power; s++) {
                for (int i = 0; i < n; i++) {
                    memset(row_acc, 0, (size_t)n * sizeof *row_acc);
                    for (int k = 0; k < n; k++) {
                        uint32_t x = P[(size_t)i * n + k];
                        if (x)
                            for (int j = 0; j < n; j++)
                                row_acc[j] += x * A[(size_t)k * n + j];
                    }
                    for (int j = 0; j < n; j++)
                        Q[(size_t)i * n + j] = sat(row_acc[j]);
                }
                uint8_t *t = P;
                P = Q;
                Q = t;
                if (s == 3)
                    for (int i = 0; i < n; i++)
                        ref_tri += P[(size_t)i * n + i];
            }
            ref_tri = power >= 3 ? ref_tri / 3 : -1;
            long long direct = 0; /* i->j->k->i, each cycle counted once per rotation */
            for (int i = 0; i < n && power >= 3; i++)
                for (int j = 0; j < n; j++)
                    if (A[(size_t)i * n + j])
                        for (int k = 0; k < n; k++)
                            direct += A[(size_t)j * n + k] && A[(size_t)k * n + i];
            if (power >= 3 && direct / 3 != ref_tri) {
                fprintf(stderr, "cannon: saturation makes trace(A^3)/3 (%lld) differ from the direct count (%lld)\n",
                        ref_tri, direct / 3);
            }
            if (memcmp(allC, P, (size_t)n * n)) {
                fprintf(stderr, "cannon verify: walk counts of A^%d differ from the serial reference\n", power);
                bad = 1;
            }
            if (triangles != ref_tri || (power >= 3 && triangles != direct / 3)) {
                fprintf(stderr, "cannon verify: triangles %lld, reference %lld (direct %lld)\n", triangles, ref_tri, direct / 3);
                bad = 1;
            }
            /* BFS shortest path lengths up to `power` */
            int *d = malloc((size_t)n * sizeof *d), *queue = malloc((size_t)n * sizeof *queue);
            for (int src = 0; src < n && !bad; src++) {
                for (int i = 0; i < n; i++)
                    d[i] = -1;
                int head = 0, tail = 0;
                for (int j = 0; j < n; j++)
                    if (A[(size_t)src * n + j] && d[j] < 0) {
                        d[j] = 1;
                        queue[tail++] = j;
                    }
                while (head < tail) {
                    int u = queue[head++];
                    for (int j = 0; j < n; j++)
                        if (A[(size_t)u * n + j] && d[j] < 0) {
                            d[j] = d[u] + 1;
                            queue[tail++] = j;
                        }
                }
                for (int j = 0; j < n; j++) {
                    int want = d[j] > 0 && d[j] <= power ? d[j] : 0;
                    if (allD[(size_t)src * n + j] != want) {
                        fprintf(stderr, "cannon verify: shortest path %d->%d is %d, computed %d\n", src, j, want,
                                allD[(size_t)src * n + j]);
                        bad = 1;
                        break;
                    }
                }
            }
            /* with delete-on-close off, the power file must hold A^power */
            if (!doc && !bad) {
                FILE *f = fopen(pow_path, "rb");
                uint8_t *filec = malloc((size_t)n * n);
                if (!f || fread(filec, 1, (size_t)n * n, f) != (size_t)n * n || memcmp(filec, P, (size_t)n * n)) {
                    fprintf(stderr, "cannon verify: %s does not hold A^%d\n", pow_path, power);
                    bad = 1;
                }
                if (f)
                    fclose(f);
                free(filec);
            } else if (doc && access(pow_path, F_OK) == 0) {
                fprintf(stderr, "cannon verify: delete-on-close file %s still exists\n", pow_path);
                bad = 1;
            }
            printf("cannon verify: n=%d power=%d triangles=%lld %s\n", n, power, triangles, bad ? "FAILED" : "ok");
            free(d);
            free(queue);
            free(A);
            free(P);
            free(Q);
            free(row_acc);
            free(allC);
            free(gath);
        }
        free(pack);
        MPI_Bcast(&bad, 1, MPI_INT, 0, grid);
    }
    if (!rank) {
        if (csv)
            printf("app,n,procs,power,delete_on_close,total_s,io_s,triangles,checksum\n"
                   "cannon,%d,%d,%d,%d,%.6f,%.6f,%lld,%llu\n",
                   n, nprocs, power, doc, total, io_max, triangles, (unsigned long long)sum[0]);
        else
            printf("cannon: n=%d P=%d power=%d delete_on_close=%d time %.3f s (I/O %.3f s) triangles %lld\n", n,
                   nprocs, power, doc, total, io_max, triangles);
    }
    if (!doc && !rank && !verify)
        remove(pow_path);
    if (!rank)
        remove(adj_path);
    MPI_Type_free(&ft);
    free(blkA);
    free(blkM);
    free(blkC);
    free(dist);
    free(acc);
    free(trace3);
    MPI_Comm_free(&grid);
    MPI_Info_free(&hints);
    MPI_Finalize();
    return bad;
}
