/* fail_io.so: an LD_PRELOAD library that makes fsync fail, or pwrite slow, for chosen files, to
 * test that nvcache-recover keeps a part whose write-back did not become durable, and that a job
 * opening a file waits for a write-back of it in progress.
 *
 *   FAIL_FSYNC=SUBSTRING   fsync and fdatasync of a descriptor whose path contains SUBSTRING fail
 *                          with EIO (as a network file system reports a failed write-back there)
 *   SLOW_PWRITE=SUBSTRING  the first pwrite to such a descriptor creates the file named by
 *                          SLOW_PWRITE_FLAG (if set), then sleeps 2 s before writing
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

static ssize_t slow_or_write(int fd, const void *buf, size_t n, off_t off, const char *call)
{
    static int slept;
    if (!slept && chosen(fd, "SLOW_PWRITE")) {
        slept = 1;
        const char *flag = getenv("SLOW_PWRITE_FLAG");
        FILE *f = flag ? fopen(flag, "w") : NULL;
        if (f)
            fclose(f);
        sleep(2);
    }
    ssize_t (*real)(int, const void *, size_t, off_t) =
        (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, call);
    return real(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return slow_or_write(fd, buf, n, off, "pwrite");
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return slow_or_write(fd, buf, n, off, "pwrite64");
}

int fsync(int fd)
{
    return fail_or_call(fd, "fsync");
}

int fdatasync(int fd)
{
    return fail_or_call(fd, "fdatasync");
}
