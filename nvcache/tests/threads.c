/* threads DIR [ROUNDS]: two threads of each rank (MPI_THREAD_MULTIPLE) on one file of the rank's
 * own, opened on MPI_COMM_SELF: thread A opens it, writes 64 KiB of 'a' + round % 26 and closes
 * it, ROUNDS times; thread B meanwhile opens a second handle of the file and closes it, ROUNDS
 * times (legal MPI: a file may have several handles). B's open drains A's cache; a drain that
 * waited for A's close to finish held the lock that close needed to finish, and the process hung
 * (2-5 runs of 9 with 200 rounds). After both: the file holds A's last round. */
#include "test_util.h"
#include <pthread.h>

static int rank;
static char path[4096];
static int rounds = 1000;

static void *writer(void *x)
{
    (void)x;
    static unsigned char buf[65536];
    for (int i = 0; i < rounds; i++) {
        MPI_File f;
        memset(buf, 'a' + i % 26, sizeof buf);
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f));
        CHECK(MPI_File_write_at(f, 0, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE));
        CHECK(MPI_File_close(&f));
    }
    return NULL;
}

static void *opener(void *x)
{
    (void)x;
    for (int i = 0; i < rounds; i++) {
        MPI_File f;
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f));
        CHECK(MPI_File_close(&f));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2 || provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, argc < 2 ? "usage: threads DIR [ROUNDS]\n" : "threads: no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc > 2)
        rounds = atoi(argv[2]);
    snprintf(path, sizeof path, "%s/threads.r%d", argv[1], rank);
    remove(path);
    /* One open before the threads: MPICH's ROMIO makes the operator of its open's amode check at
       its first open, and two first opens at once in two threads let one use it before it was
       made (MPI_Allreduce with MPI_OP_NULL: 8 of 20 runs of 16 ranks without nvcache, 3 of 20
       with it, on the 16-vCPU device machine; 0 of 20 with nvcache and this first open). */
    MPI_File f0;
    CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f0));
    CHECK(MPI_File_close(&f0));
    pthread_t a, b;
    pthread_create(&a, NULL, writer, NULL);
    pthread_create(&b, NULL, opener, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int bad = 0;
    FILE *f = fopen(path, "rb");
    int c, n = 0;
    while (f && (c = fgetc(f)) != EOF)
        bad |= c != 'a' + (rounds - 1) % 26, n++;
    bad |= !f || n != 65536;
    if (f)
        fclose(f);
    remove(path);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("threads: %s\n", bad ? "file WRONG" : "ok");
    MPI_Finalize();
    return bad;
}
