/* agent_parts.c: the agent of each host serves other hosts' reads and writes from its own
 * mapping of the host's parts; once the files are closed and their parts removed, it must let
 * those mappings go, or the removed parts' NVRAM stays allocated until MPI_Finalize.
 * Each rank writes 64 KiB blocks spread over every part of three files in turn, syncs, reads a
 * neighbour's blocks back (checked), closes; then every rank waits until its process maps no
 * removed nvcache file (at most 2 s) and fails if one is still mapped.
 * Usage: mpiexec -n P agent_parts DIR   (meant for emulated hosts: emu_mpiexec.sh)
 */
#define _DEFAULT_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static int rank;

#define BLK 65536
#define PER_RANK 8

/* nvcache files this process maps that were removed. */
static int removed_mappings(void)
{
    FILE *m = fopen("/proc/self/maps", "r");
    if (!m)
        return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, m))
        n += strstr(line, "nvcache") && strstr(line, "(deleted)");
    fclose(m);
    return n;
}

int main(int argc, char **argv)
{
    int np = test_start(&argc, &argv, &rank, 1, "agent_parts DIR");
    int bad = 0;
    for (int it = 0; it < 3; it++) {
        char path[1024], label[32];
        snprintf(path, sizeof path, "%s/agent-parts-%d", argv[1], it);
        snprintf(label, sizeof label, "file %d", it);
        MPI_File fh;
        CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE * (it == 2),
                            MPI_INFO_NULL, &fh));
        bad |= write_read_neighbour(fh, rank, np, PER_RANK, BLK, it * np * PER_RANK, label) != 0;
        CHECK(MPI_File_close(&fh));
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    int left = removed_mappings();
    for (int i = 0; i < 200 && left; i++) {
        usleep(10000);
        left = removed_mappings();
    }
    if (left) {
        fprintf(stderr, "rank %d: %d removed nvcache files still mapped 2 s after the last close\n", rank, left);
        bad = 1;
    }
    int any = 0;
    CHECK(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (rank == 0 && !any)
        printf("agent_parts: %d ranks, data read back across hosts, no removed part left mapped\n", np);
    MPI_Finalize();
    return any;
}
