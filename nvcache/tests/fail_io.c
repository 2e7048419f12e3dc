/* fail_io.so: an LD_PRELOAD library that makes fsync fail for chosen files, to test that
 * nvcache-recover keeps a part whose write-back did not become durable, or pauses a write-back, to
 * test what runs beside it.
 *
 *   FAIL_FSYNC=SUBSTRING   fsync and fdatasync of a descriptor whose path contains SUBSTRING fail
 *                          with EIO (as a network file system reports a failed write-back there)
 *   PAUSE_PWRITE=SUBSTRING the process's first pwrite(64) to a file whose path P contains SUBSTRING
 *                          creates P.paused and waits (at most 60 s) until P.go exists
 *   FAIL_CLOSE=SUBSTRING   the process's first close of a descriptor of P while P.armed exists,
 *                          for a file whose path P contains SUBSTRING, closes it and fails with
 *                          EIO (a write-back error that a network file system reports at close)
 *   KILL_PATH=SUBSTRING, KILL_CALL=ftruncate|ftruncated|fsync
 *                          while P.armed exists for a file whose path P contains SUBSTRING, the
 *                          process SIGKILLs itself at the first such call on P: before ftruncate
 *                          (`ftruncate`), after it (`ftruncated`), or after an fsync/fdatasync
 *                          (`fsync`): a crash at a chosen point of an MPI-IO call
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether descriptor fd's path contains the value of environment variable var; the path in path
   (4096 bytes) if it does. */
static int chosen_path(int fd, const char *var, char *path)
{
    const char *pat = getenv(var);
    if (!pat || !*pat)
        return 0;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, 4096 - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    return strstr(path, pat) != NULL;
}

static int chosen(int fd, const char *var)
{
    char path[4096];
    return chosen_path(fd, var, path);
}

/* SIGKILL of this process if KILL_CALL is `call` and fd's file is KILL_PATH's, armed. */
static void kill_if_armed(int fd, const char *call)
{
    const char *want = getenv("KILL_CALL");
    char path[4096 + 8];
    if (!want || strcmp(want, call) || !chosen_path(fd, "KILL_PATH", path))
        return;
    strcat(path, ".armed");
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "fail_io: SIGKILL at %s\n", call);
        kill(getpid(), SIGKILL);
    }
}

/* EIO for a chosen descriptor, else the C library's `call` (fsync or fdatasync) on it. */
static int fail_or_call(int fd, const char *call)
{
    if (chosen(fd, "FAIL_FSYNC")) {
        errno = EIO;
        return -1;
    }
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, call);
    int rc = real(fd);
    kill_if_armed(fd, "fsync");
    return rc;
}

/* `call` (ftruncate or ftruncate64) with the kill points around it. */
static int truncate_call(int fd, off_t len, const char *call)
{
    kill_if_armed(fd, "ftruncate");
    int (*real)(int, off_t) = (int (*)(int, off_t))dlsym(RTLD_NEXT, call);
    int rc = real(fd, len);
    kill_if_armed(fd, "ftruncated");
    return rc;
}

int ftruncate(int fd, off_t len)
{
    return truncate_call(fd, len, "ftruncate");
}

int ftruncate64(int fd, off_t len)
{
    return truncate_call(fd, len, "ftruncate64");
}

int fsync(int fd)
{
    return fail_or_call(fd, "fsync");
}

int fdatasync(int fd)
{
    return fail_or_call(fd, "fdatasync");
}

/* PAUSE_PWRITE (see the top), for the process's first pwrite or pwrite64 to such a file. */
static void pause_if_chosen(int fd)
{
    static int paused;
    char path[4096 + 8];
    if (!paused && chosen_path(fd, "PAUSE_PWRITE", path)) {
        paused = 1;
        size_t len = strlen(path);
        strcpy(path + len, ".paused");
        close(open(path, O_WRONLY | O_CREAT, 0644));
        strcpy(path + len, ".go");
        for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    pause_if_chosen(fd);
    ssize_t (*real)(int, const void *, size_t, off_t) =
        (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    return real(fd, buf, n, off);
}

/* MPI-IO libraries built with 64-bit file offsets call this name. */
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    pause_if_chosen(fd);
    ssize_t (*real)(int, const void *, size_t, off_t) =
        (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    return real(fd, buf, n, off);
}

int close(int fd)
{
    static int failed_once;
    char path[4096 + 8];
    int fail = 0;
    if (!failed_once && chosen_path(fd, "FAIL_CLOSE", path)) {
        strcat(path, ".armed");
        fail = failed_once = access(path, F_OK) == 0;
    }
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");
    int rc = real(fd);
    if (fail) {
        fprintf(stderr, "fail_io: close of %.*s fails\n", (int)(strlen(path) - 6), path);
        errno = EIO;
        return -1;
    }
    return rc;
}
