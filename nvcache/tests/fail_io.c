/* fail_io.so: an LD_PRELOAD library that makes fsync fail for chosen files, to test that
 * nvcache-recover keeps a part whose write-back did not become durable.
 *
 *   FAIL_FSYNC=SUBSTRING   fsync and fdatasync of a descriptor whose path contains SUBSTRING fail
 *                          with EIO (as a network file system reports a failed write-back there)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether descriptor fd's path contains the value of environment variable var. */
static int chosen(int fd, const char *var)
{
    const char *pat = getenv(var);
    if (!pat || !*pat)
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    return strstr(path, pat) != NULL;
}

/* EIO for a chosen descriptor, else the C library's `call` (fsync or fdatasync) on it. */
static int fail_or_call(int fd, const char *call)
{
    if (chosen(fd, "FAIL_FSYNC")) {
        errno = EIO;
        return -1;
    }
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, call);
    return real(fd);
}

int fsync(int fd)
{
    return fail_or_call(fd, "fsync");
}

int fdatasync(int fd)
{
    return fail_or_call(fd, "fdatasync");
}
