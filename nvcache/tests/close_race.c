/* close_race.c: the close of the open that caches a file against a second handle's drain of it.
 *
 * Every rank opens one file on MPI_COMM_SELF, writes 6000 bytes at rank x 6000 (so neighbours
 * share a 4 KiB page) and closes it, all at once: the first open caches the file, the others
 * drain it when they open and pass through, while the caching open's close drains its own part.
 * Then a MPI_COMM_WORLD open reads the whole file back, which must hold every rank's bytes. When
 * the close drained at the same time as another handle, it wrote its copy of the shared page
 * (zeros where the other rank's bytes go) after that rank's own write, which lost the rank's tail
 * page about once in 50 rounds on Open MPI (consistency's "reopen" case).
 * Usage: mpiexec -n P close_race DIR [ROUNDS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int rank;

enum { BLOCK = 6000 };

int main(int argc, char **argv)
{
    int np = test_start(&argc, &argv, &rank, 1, "close_race DIR [ROUNDS]");
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    unsigned char *mine = malloc(BLOCK), *all = malloc((size_t)np * BLOCK), *want = malloc((size_t)np * BLOCK);
    for (int r = 0; r < np; r++)
        fill(want + (size_t)r * BLOCK, BLOCK, 100 + r);
    memcpy(mine, want + (size_t)rank * BLOCK, BLOCK);
    int bad = 0;
    for (int round = 0; round < rounds && !bad; round++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/close-race-%d", argv[1], round);
        MPI_File fh;
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
        CHECK(MPI_File_write_at(fh, (MPI_Offset)rank * BLOCK, mine, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
        CHECK(MPI_File_close(&fh));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
        memset(all, 0, (size_t)np * BLOCK);
        CHECK(MPI_File_read_at(fh, 0, all, np * BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
        CHECK(MPI_File_close(&fh));
        for (int i = 0; i < np * BLOCK; i++)
            if (all[i] != want[i]) {
                int last = i;
                for (int j = i; j < np * BLOCK; j++)
                    if (all[j] != want[j])
                        last = j;
                fprintf(stderr, "rank %d, round %d: bytes %d-%d of the file differ from what rank %d wrote\n", rank,
                        round, i, last, i / BLOCK);
                bad = 1;
                break;
            }
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("close_race: %d rank(s), %s\n", np, bad ? "FAILED" : "every round complete");
    free(mine);
    free(all);
    free(want);
    MPI_Finalize();
    return bad;
}
