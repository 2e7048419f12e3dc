/* recover.c: nvcache-recover, rebuilds files from NVRAM parts left by processes that died.
 *
 * Usage: nvcache-recover [--dir DIR] [--keep] [--dry-run] [--temporary] [--force] [--any-host] [FILE...]
 * Every part in DIR (default $NVCACHE_DIR or /dev/shm/nvcache-$USER) that is still active or
 * draining has its dirty pages written to the real file recorded in its header (an absolute
 * name; the file must exist); the file is grown to the largest size any part of that file saw,
 * never shrunk. Parts of files opened with MPI_MODE_DELETE_ON_CLOSE are removed once no process
 * of their job runs (--temporary recovers them instead). Recovered parts are removed unless
 * --keep; a part that cannot be written back is kept. So is a part whose file was replaced since
 * (deleted and created again, or another file moved to its name: a different inode or creation
 * time than the job opened), or that a later job opened before this recovery (its open marked the
 * part, whose older bytes would overwrite that job's), unless --force. Parts of several dead jobs
 * are written back oldest first. Parts another host made (NVCACHE_DIR shared between hosts) are
 * left to that host unless --any-host. With FILE arguments only parts of those files are considered.
 * Mailboxes in /dev/shm of the recovered jobs, and of any job whose creating manager process is
 * gone, are removed (not with --dry-run).
 */
#define _GNU_SOURCE
#include "nvcache_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: nvcache-recover [--dir DIR] [--keep] [--dry-run] [--temporary] [--force] [--any-host] [FILE...]\n"
    "Writes the dirty data that NVRAM parts of dead jobs hold back to their files, then removes\n"
    "the parts and the dead jobs' mailboxes in /dev/shm. Parts of jobs still running are skipped.\n"
    "  --dir DIR     NVRAM directory (default $NVCACHE_DIR, else /dev/shm/nvcache-$USER)\n"
    "  --keep        keep the parts after recovering\n"
    "  --dry-run     only say what would be recovered (implies --keep)\n"
    "  --temporary   recover files opened with MPI_MODE_DELETE_ON_CLOSE too (else their parts\n"
    "                are removed once their job is gone)\n"
    "  --force       write back into a file that replaced the job's (deleted and created again,\n"
    "                or moved there: not the inode the job opened), or that a later job opened\n"
    "                before this recovery; else such parts are kept\n"
    "  --any-host    also parts that another host made (a NVCACHE_DIR shared between hosts:\n"
    "                whether their job still runs is known only there; else they are left)\n"
    "  FILE...       only parts of these files\n"
    "  -h, --help    this text\n"
    "Exit status: 0 when nothing failed; 1 when a part was not written back (an error, or a file\n"
    "replaced since: the part is kept) or not removed, or DIR cannot be read; 2 on a usage error.\n"
    "Parts of jobs still running and of other hosts are left with status 0: a last line then says\n"
    "DIR still holds data (do not remove it).\n";

/* The recovery tool does not initialize MPI; these satisfy part.c's logging. The work is
   recovery.c's nvc_recover_dir, which MPI_Init runs too. */
struct nvc_runtime nvc_rt;
struct nvc_config nvc_cfg;
void nvc_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nvcache-recover: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("NVCACHE_DIR");
    char defdir[1024];
    if (!dir || !*dir) {
        const char *u = getenv("USER");
        snprintf(defdir, sizeof defdir, "/dev/shm/nvcache-%s", u && *u ? u : "user");
        dir = defdir;
    }
    struct nvc_recover_opts o = {.out = stdout, .out_prefix = "", .who = "nvcache-recover"};
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[first], "--dir") && first + 1 < argc)
            dir = argv[++first];
        else if (!strcmp(argv[first], "--keep"))
            o.keep = 1;
        else if (!strcmp(argv[first], "--dry-run"))
            o.dry = o.keep = 1;
        else if (!strcmp(argv[first], "--temporary"))
            o.temporary = 1;
        else if (!strcmp(argv[first], "--force"))
            o.force = 1;
        else if (!strcmp(argv[first], "--any-host"))
            o.any_host = 1;
        else {
            fprintf(stderr, "nvcache-recover: unknown option %s\n%s", argv[first], usage);
            return 2;
        }
    }
    if (strlen(dir) > NVC_DIR_MAX) {
        nvc_msg("the directory is %zu bytes long, at most %d are supported (nvcache never used it)", strlen(dir),
                NVC_DIR_MAX);
        return 2;
    }
    o.nfiles = argc - first;
    o.files = argv + first;
    struct nvc_recover_result res;
    int failed = nvc_recover_dir(dir, &o, &res);
    if (res.listed && !res.targets)
        printf(failed ? "nothing recovered in %s (see the errors above)\n" : "nothing to recover in %s\n", dir);
    /* Exit status 0 says only that nothing failed: a script must not take it for "the directory
       holds nothing more" (removing it would drop what is left, listed above). */
    if (!o.dry && (res.skipped || res.elsewhere || res.kept))
        printf("%s still holds data not in the files: %d part(s) of running jobs, %d made on other hosts, "
               "%d file(s) whose parts were kept (see above)\n",
               dir, res.skipped, res.elsewhere, res.kept);
    return failed;
}
