/* nvcache internal interfaces.
 *
 * nvcache is a transparent MPI-IO cache on node-local NVRAM (see README.md).
 * Concepts, one file each:
 *   interpose.c  PMPI wrappers (X-macro lists) and the single cache-or-pass routing decision
 *   cache.c      a cached file: open/prefetch, read/write through the owners, size, sync, bypass, close
 *   manager.c    the per-node cache-manager thread and the request protocol it serves
 *   mailbox.c    the shared-memory request/reply channel between ranks and managers (futex based)
 *   registry.c   the job-wide table of open files: one cache state per file, however many handles
 *   part.c       one NVRAM part of a file: libpmem mapping, persistent header and dirty bitmap
 *   view.c       file views: datatype flattening and view-stream <-> file-offset mapping
 *   config.c     environment variables and MPI_Info hints
 *   stats.c      per-file counters printed at MPI_Finalize with NVCACHE_STATS=1
 *   progress.c   yielding progress hook for MPICH's busy-polling UCX progress engine
 */
#ifndef NVCACHE_INTERNAL_H
#define NVCACHE_INTERNAL_H

#include <mpi.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdatomic.h>
#include <pthread.h>

#define NVC_PAGE 4096u
#define NVC_MAXSEG 4096u
#define NVC_PATH_MAX 3072
/* Longest NVCACHE_DIR: part and mailbox names add up to 64 bytes to it within 1200- and 2048-byte
   buffers. */
#define NVC_DIR_MAX 960

/* ---------------------------------------------------------------- MPI versions
 *
 * nvcache builds for MPICH 4 (MPI 4.0) and Open MPI 4.1 (MPI 3.1). MPI 3.1 has no large-count
 * (_c) calls: the application cannot pass a count above INT_MAX there, so nvcache neither wraps
 * them nor needs them for the application's own calls; its internal transfers of byte runs
 * (drains, prefetch) and its packing of derived types go through these helpers, which split
 * what does not fit an int on MPI 3.1. */
#if MPI_VERSION >= 4
#define NVC_MPI_LARGE_COUNT 1
#else
#define NVC_MPI_LARGE_COUNT 0
#endif
/** MPI_File_read_at/write_at with an MPI_Count count, in one call (MPI_ERR_COUNT above INT_MAX
 *  on MPI 3.1): an application's transfer, offset in its view's etypes. */
int nvc_file_rw_at(MPI_File fh, int write, MPI_Offset off, void *buf, MPI_Count count, MPI_Datatype dt,
                   MPI_Status *status);
/** Reads or writes `bytes` bytes at byte offset off of a handle with the default view (nvcache's
 *  own: drains, prefetch) in pieces of 1 GiB; the status counts them all. */
int nvc_file_rw_bytes_at(MPI_File fh, int write, MPI_Offset off, void *buf, MPI_Count bytes, MPI_Status *status);
/** MPI_Pack (pack=1) / MPI_Unpack of count elements of dt between buf and the packed bytes data
 *  (element by element in int-sized groups on MPI 3.1); returns an MPI error code. */
int nvc_pack(int pack, void *buf, MPI_Count count, MPI_Datatype dt, void *data, MPI_Count bytes);
/** MPI_Type_get_envelope that also takes types built by MPI 4's _c constructors (whose plain
 *  envelope MPICH refuses with a fatal error): *large is 1 when dt has large-count arguments. */
int nvc_type_envelope(MPI_Datatype dt, int *ni, int *na, int *nd, int *comb, int *large);

/* ---------------------------------------------------------------- config.c */

/** Reply mode of cached writes (paper section 3.2). */
enum nvc_reply_mode { NVC_REPLY_SYNC = 0, NVC_REPLY_ASYNC = 1 };
/** When dirty cache data is written to the real file. */
enum nvc_flush_policy { NVC_FLUSH_CLOSE = 0, NVC_FLUSH_SYNC = 1, NVC_FLUSH_NEVER = 2 };

/** Process-wide configuration read once from the environment at MPI_Init. */
struct nvc_config {
    int enabled;               /* NVCACHE_ENABLE (default 1) */
    char dir[NVC_DIR_MAX + 1]; /* NVCACHE_DIR (default /dev/shm/nvcache-$USER) */
    uint64_t capacity;         /* NVCACHE_CAPACITY: bytes of NVRAM per node (0 = until full) */
    uint64_t part_max;         /* NVCACHE_PART_MAX: virtual size of one part mapping */
    uint64_t min_stripe;       /* NVCACHE_STRIPE: minimum stripe (part block) size */
    int reply;                 /* NVCACHE_REPLY=sync|async */
    int flush;                 /* NVCACHE_FLUSH=close|sync|never */
    int ranks_per_node;        /* NVCACHE_RANKS_PER_NODE (0 = one node per host) */
    int stats;                 /* NVCACHE_STATS=1 */
    int verbose;               /* NVCACHE_VERBOSE=1 */
    int yield;                 /* NVCACHE_YIELD=auto|0|1 resolved to 0/1 */
    int spin_us;               /* NVCACHE_SPIN_US: spin before futex sleep (auto) */
    uint64_t slot_bytes;       /* NVCACHE_SLOT_BYTES: data bytes per request slot */
    int direct;                /* NVCACHE_DIRECT (default 1): ranks access their own node's part mapping directly */
    int recover;               /* NVCACHE_RECOVER (default 1): MPI_Init writes back what dead jobs left in dir */
};

/** Per-file options: the process config overridden by MPI_Info hints. */
struct nvc_file_opts {
    int enabled, reply, flush;
    uint64_t min_stripe;
    uint64_t striping_unit; /* MPI reserved hint striping_unit in bytes (0: not given): the stripe, exactly */
};

extern struct nvc_config nvc_cfg;

/** Reads NVCACHE_* environment variables into nvc_cfg; prints one line per bad value. */
void nvc_config_load(int ranks_on_host);
/** Derives per-file options from nvc_cfg and the nvcache_* hints of info (unknown nvcache_ hints warn). */
void nvc_config_file(MPI_Info info, const char *path, struct nvc_file_opts *o);

/* ---------------------------------------------------------------- logging */

/** Prints "nvcache[rank]: <msg>" to stderr (always: errors and fallbacks). */
void nvc_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Like nvc_msg but only with NVCACHE_VERBOSE=1. */
void nvc_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Monotonic clock in nanoseconds. */
uint64_t nvc_now_ns(void);

/* ---------------------------------------------------------------- part.c */

enum nvc_part_state { NVC_PART_ACTIVE = 1, NVC_PART_DRAINING = 2, NVC_PART_BYPASS = 3, NVC_PART_CLOSED = 4 };

/* Part header layout version: 2 added reserved, writers and reply before path (direct access);
 * 3 added exact writes (which bytes of a partly written page to write back: partial and whole
 * bits beside each dirty bit, byte masks after the data at mask_off).
 * Version 2 parts are still recovered, a dirty page whole. */
#define NVC_PART_VERSION 3u
/** Whether a part header of version v is one this build reads (the current one, or 2). */
static inline int nvc_part_version_known(uint32_t v)
{
    return v == NVC_PART_VERSION || v == 2u;
}

/** Persistent header at offset 0 of every part file (crash-consistent metadata). */
/** What tells one file from another that later took its name: the inode number with the device
 *  and, where the file system keeps it, the creation time (inode numbers are reused: ext4 hands a
 *  deleted file's number to the next file created). All zero: unknown. */
struct nvc_file_id {
    uint64_t dev, ino;
    int64_t btime_sec;
    uint32_t btime_nsec, has_btime;
};

/** Reads the identity of the file at path (also a ROMIO "prefix:" path); 0 or -1 (cannot stat). */
int nvc_file_id_get(const char *path, struct nvc_file_id *id);
/** Length of the file-system prefix MPI-IO strips from a file name ("ufs:", "lustre:", ... before
 *  the first slash; MPICH's ROMIO strips every name it knows and refuses others), 0 when there is
 *  none; in an Open MPI build also 0 when a file of the whole name exists (OMPIO opens "ufs:a.dat"
 *  as a file of that name). */
size_t nvc_fs_prefix_len(const char *path);
/** True if `name` (an entry of /dev/shm) is an nvcache mailbox, nvcache-<16 hex>-n<node>. */
int nvc_is_mailbox_name(const char *name);
/** True if mailbox /dev/shm/`name` was created by a process that no longer exists. */
int nvc_mailbox_is_stale(const char *name);
/** True if job `jobid` still runs: a process of it holds the job's lock in dir (see
 *  nvc_job_lock_hold), or, where dir has no lock file of the job (it could not be made), a
 *  process of it still holds one of its mailboxes in /dev/shm on this host. */
int nvc_job_alive(const char *dir, uint64_t jobid);
/** Takes this process's share of job `jobid`'s lock in dir (nvcache-<job>.lock, a shared open
 *  file description lock, released only when the process ends): while any process of the job
 *  lives, recovery counts the job as running, whatever its PIDs, namespaces or /dev/shm.
 *  Returns the descriptor to keep, or -1. */
int nvc_job_lock_hold(const char *dir, uint64_t jobid);
/** Removes dir's lock files of jobs that no process holds and that left no part in dir (a job
 *  that died; one that ended removes its own). */
void nvc_job_locks_prune(const char *dir);
/** Removes job `jobid`'s lock file from dir (the job ends: its last use of dir is over). */
void nvc_job_lock_remove(const char *dir, uint64_t jobid);
/** Counts the ACTIVE or DRAINING parts in dir of jobs other than own_job that were dead when the
 *  process first asked and hold data of the file with identity id (inode and creation time);
 *  when by is nonzero marks them superseded by job `by`; *job (if given) gets one such job's id. */
int nvc_dead_parts(const char *dir, uint64_t own_job, const struct nvc_file_id *id, uint64_t by, uint64_t *job);
/** Counts this job's own parts in dir of the file with identity id that an earlier open of it
 *  (a file id other than open_fileid) kept with dirty data when its drain failed at its close:
 *  the file lacks their bytes, and their recovery would write them over what the open
 *  open_fileid writes. With mark, marks them superseded by own_job, so that recovery keeps them
 *  (--force writes them). Call only once no other handle of the file caches it (after the
 *  open's registry entry). */
int nvc_own_kept_parts(const char *dir, uint64_t own_job, const struct nvc_file_id *id, uint64_t open_fileid,
                       int mark);
/** How nvc_recover_dir works and where it reports. */
struct nvc_recover_opts {
    int keep;                 /* keep the parts after writing them back */
    int dry;                  /* only say what would be recovered (implies keep) */
    int temporary;            /* write back delete-on-close files too (else their parts are removed) */
    int force;                /* write into a replaced file, or over a later job's writes */
    int any_host;             /* also parts another host made (see nvc_part_elsewhere) */
    int nfiles;               /* only parts of these files (0: all) */
    char *const *files;
    uint64_t own_job;         /* a job whose parts are left alone as a running job's (0: none) */
    FILE *out;                /* what was done, one line each after out_prefix */
    const char *out_prefix;
    const char *who;          /* error lines go to stderr as "<who>: ..." */
};
/** What nvc_recover_dir did: whether it read the directory, files written back (or that would
 *  be), files whose parts were kept, active parts of running jobs and of other hosts left alone,
 *  files seen in all. */
struct nvc_recover_result {
    int listed, recovered, kept, skipped, elsewhere, targets;
};
/** Writes the dirty data of the parts that dead jobs left in dir back to their files and removes
 *  the parts and stale job mailboxes (recovery.c says exactly what). 0, or 1 when something could
 *  not be recovered (kept) or dir cannot be read. */
int nvc_recover_dir(const char *dir, const struct nvc_recover_opts *o, struct nvc_recover_result *res);
/** The extended attribute naming the last job that opened a file for writing through nvcache and
 *  when ("<16 hex digits> <CLOCK_REALTIME ns>"): recovery keeps a dead job's part instead of
 *  writing it back when another job opened the file for writing after the part's last write (its
 *  older bytes would overwrite that job's). */
#define NVC_WRITER_XATTR "user.nvcache.job"
/** Wall-clock time (CLOCK_REALTIME) in ns: comparable between hosts and across reboots. */
uint64_t nvc_realtime_ns(void);
/** Names job `jobid`, now, as the file's last writer (NVC_WRITER_XATTR); 0, or -errno (ENOTSUP:
 *  the file system keeps no user attributes). */
int nvc_file_mark_writer(const char *path, uint64_t jobid);
/** Names job `jobid` the file's last writer unless the file names it already with a time at or
 *  after since_ns (the mark then stays); 0, or -errno as nvc_file_mark_writer. */
int nvc_file_ensure_writer(const char *path, uint64_t jobid, uint64_t since_ns);
/** The job the open file fd names as its last writer, and when it opened the file: 1 with *jobid
 *  and *when_ns set, 0 when it names none, -1 when it cannot be read. */
int nvc_file_writer(int fd, uint64_t *jobid, uint64_t *when_ns);
/** Extended attributes a recovery holds on a file while it writes a dead job's bytes back into
 *  it ("<prefix><16 hex digits of the recovery>" = "<CLOCK_REALTIME ns of its last refresh> <pid>
 *  <host>"): set before the recovery reads NVC_WRITER_XATTR, removed at the end of the recovery
 *  (when every file's bytes and size are durable), or at once from a file whose parts it keeps. A job that opens the file for writing names itself in NVC_WRITER_XATTR first
 *  and then waits while such a guard is fresh, so either the recovery sees the job's mark (and
 *  keeps the part) or the job writes only after the recovery: never the older bytes over the
 *  newer. */
#define NVC_GUARD_XATTR_PREFIX "user.nvcache.rec."
/** A guard not refreshed for this long belongs to a recovery that died: openers ignore it. */
#define NVC_GUARD_STALE_NS (30ull * 1000 * 1000 * 1000)
/** How often a recovery refreshes its guards while it works. */
#define NVC_GUARD_REFRESH_NS (2ull * 1000 * 1000 * 1000)
#define NVC_GUARD_VALUE_MAX 128
/** Sets (or refreshes) guard attribute `name` on the open file fd, or on path when fd < 0; 0 or
 *  -errno. */
int nvc_file_guard_set(int fd, const char *path, const char *name);
/** Removes guard attribute `name` from path (absent already: 0); 0 or -errno. */
int nvc_file_guard_clear(const char *path, const char *name);
/** Waits (sleeping, 10 ms a poll) while a recovery holds a fresh guard on path; says so once
 *  after 1 s. A file system without user attributes has no guards. */
void nvc_file_wait_recoveries(const char *path);
/** FNV-1a of string s continuing hash h (start with NVC_FNV1A_BASIS). */
#define NVC_FNV1A_BASIS 0xcbf29ce484222325ull
uint64_t nvc_fnv1a(uint64_t h, const char *s);
/** The current name of file `id` (compared as nvc_file_id_same), found through a descriptor of
 *  this process that has it open (the MPI-IO library's own, for a file the application renamed
 *  while it had it open), or, when that descriptor's name was removed after the file was linked
 *  elsewhere, in the directory of `near` (its old name), or else "/proc/self/fd/N" of a copy of
 *  that descriptor made here, N in *held (the file is still linked somewhere; the caller closes
 *  *held once done with the name, else *held is -1): 0 with the name in path (n bytes), or -1 when
 *  the file has no name any more (deleted) or is not open here. */
int nvc_file_find_open(const struct nvc_file_id *id, int with_dev, const char *near, char *path, size_t n, int *held);
/** Takes (lock = 1) or drops (0) a write lock on file bytes [off, off + len) of descriptor fd (an
 *  open-file-description lock, F_OFD_SETLK): drains and recoveries that merge pages with the
 *  file's bytes take it across their read and write (both through fd: an MPI-IO library that
 *  locks with POSIX locks, as ROMIO's NFS driver does, would wait for ever on it), so that two
 *  of them never interleave on a page. 0 when held; -1 when not (another merge held it for 1 s,
 *  or the file system has no such locks); -2 at once when another program holds a POSIX lock
 *  over the bytes (the caller goes on without locking, and need not try again). */
int nvc_file_lock_range(int fd, uint64_t off, uint64_t len, int lock);
/** Reads (write = 0) or writes file bytes [off, off + n) through descriptor fd, retrying short
 *  transfers and EINTR; 0, or -1 on an error (a read stops at the file's end, leaving the rest of
 *  buf as it was). */
int nvc_fd_rw(int fd, int write, uint64_t off, uint8_t *buf, uint64_t n);
/** Reads the identity of the open file fd; 0 or -1. */
int nvc_file_id_fd(int fd, struct nvc_file_id *id);
/** Whether b is the file a names, comparing the device only when with_dev is set (one file
 *  system's device number differs between hosts and can change when it is mounted again).
 *  An unknown a (never recorded) matches anything. */
int nvc_file_id_same(const struct nvc_file_id *a, const struct nvc_file_id *b, int with_dev);

struct nvc_part_hdr {
    char magic[8];             /* "NVCPART1" */
    uint32_t version, state;   /* enum nvc_part_state */
    uint64_t jobid, fileid;
    uint32_t nparts, index;    /* this part's index among nparts */
    uint64_t stripe;           /* file block size; block b belongs to part b % nparts */
    uint64_t capacity;         /* data bytes addressable in this part */
    uint64_t size;             /* file size as seen by this part (grows with writes, set by set_size) */
    uint32_t size_set;         /* 1 once set_size shrank the file */
    uint32_t temporary;        /* opened with MPI_MODE_DELETE_ON_CLOSE: never recovered */
    uint64_t bitmap_off, data_off;
    /* Shared between the processes of a node that map the part (not needed by recovery): */
    uint64_t reserved;         /* data bytes [0, reserved) are backed by fallocate (atomic; grows only) */
    uint32_t writers;          /* direct writes in progress (atomic); a drain completes only at 0 */
    uint32_t reply;            /* enum nvc_reply_mode of the file (the manager maps parts it did not create) */
    char path[NVC_PATH_MAX];   /* the real file */
    struct nvc_file_id file_id; /* which file the path led to when the part was made (zero: unknown) */
    uint64_t superseded_by;    /* a later job that opened the file before this dead job's part was
                                  recovered (0: none); nvcache-recover keeps the part unless --force */
    char host[64];             /* uname() node name (cut to 63 characters) of the host that made the
                                  part ("": unknown, parts of earlier builds): whether its job runs
                                  is known only there */
    uint64_t last_write_ns;    /* CLOCK_REALTIME of the part's last dirtying write (its creation before
                                  any); recovery keeps the part when its file names another job that
                                  opened it for writing later (NVC_WRITER_XATTR). Not persisted with
                                  each write: an older value keeps a dirty part that could have been
                                  written back, or removes a clean one without growing the file (it
                                  holds no data). 0: unknown (parts of earlier builds), no check */
    uint64_t mask_off;         /* version 3: offset of the byte masks after the data, per page a bit
                                  per byte written (NVC_PAGE / 8 bytes), read where the page's
                                  partial bit is set and its whole bit is not; the bitmap then has
                                  three words per 64 pages (dirty, partial, whole). 0 (version 2):
                                  dirty words only, dirty pages written back whole */
};

_Static_assert(sizeof(struct nvc_part_hdr) <= NVC_PAGE, "part header fits its page");

/** This host's name as parts record it (uname node name cut to fit, "" if unknown). */
void nvc_host_name(char *out, size_t n);
/** True if part header h was made on another host than this one: whether its job still runs
 *  cannot be told here (NVCACHE_DIR shared between hosts), so recovery leaves it alone. */
int nvc_part_elsewhere(const struct nvc_part_hdr *h);

/** One NVRAM part mapped in the manager. */
struct nvc_part {
    struct nvc_part_hdr *hdr;
    uint8_t *base;             /* mapping start */
    size_t map_len;
    int is_pmem, fd;
    uint64_t *dirty;           /* persistent bitmap: one dirty bit per page, in word 0 of each
                                  `stride` words per 64 pages (1, or 3 with masks: then partial and
                                  whole bits in words 1 and 2) */
    unsigned stride;
    uint8_t *masks;            /* per page, a bit per byte written (NVC_PAGE / 8 bytes); NULL for
                                  a version 2 part */
    uint64_t *mask_known;      /* volatile, this process: mask pages known to be allocated */
    size_t mask_known_words;
    int mask_fd;               /* a descriptor plus one (0: none yet, -1: could not be opened) that
                                  a process without fd opened to allocate mask pages */
    uint8_t *data;
    uint64_t alloc_end;        /* bytes of data area reserved with fallocate */
    uint64_t bm_alloc;         /* bytes of the bitmap known to be allocated */
    int own_map;               /* mapped by part.c itself (munmap), not by pmem_map_file */
    char file[1200];           /* part file name */
};

/** Creates and maps a part file; fills the header; returns 0 or -errno (message printed). */
int nvc_part_create(struct nvc_part *p, const char *file, const struct nvc_part_hdr *init);
/** Creates part `index` of file `path` of this job (header from the arguments; id: the identity of
 *  the file the job opened, NULL: unknown); returns 0 or -errno. */
int nvc_part_make(struct nvc_part *p, uint64_t jobid, uint64_t fileid, uint32_t nparts, uint32_t index, uint64_t stripe,
                  uint64_t size, int temporary, int reply, const char *path, const struct nvc_file_id *id);
/** Maps an existing part file read/write (recovery); returns 0, or -errno with *problem saying
 *  what is wrong (nvc_part_incomplete: its creation was interrupted, it holds no data). */
int nvc_part_open(struct nvc_part *p, const char *file, const char **problem);
/** What nvc_part_open reports for a part whose creation was interrupted (shorter than its layout);
 *  compared by address. */
extern const char nvc_part_incomplete[];
/** NULL if the header of a part mapped over `mapped` bytes is one this build can use (magic,
 *  version, the layout its capacity gives, stripe, part count and index, state, terminated
 *  names, the file long enough), else what is wrong: a damaged header must not crash anyone. */
const char *nvc_part_hdr_problem(const struct nvc_part_hdr *h, size_t mapped);
/** The job id in part file name `name` (a path or a base name); 0, or -1 if it is not one. */
int nvc_part_name_job(const char *name, uint64_t *job);
/** Maps a live part of this job from a rank of the owning node (direct access) or its manager
 *  (keep_fd: the descriptor stays open for fallocate); returns 0 or -errno (quiet). */
int nvc_part_attach(struct nvc_part *p, const char *file, int keep_fd);
/** Whether directory entry `name` is a part file (nvcache-<job>-<file>-p<index>.part). */
int nvc_is_part_name(const char *name);
/** Name of the part file of (job, file, part index). */
void nvc_part_name(char *buf, size_t n, uint64_t jobid, uint64_t fileid, uint32_t index);
/** Unmaps; unlinks the file when remove is set. */
void nvc_part_close(struct nvc_part *p, int remove);
/** Makes [addr, addr+len) of the mapping durable (pmem_persist or pmem_msync). */
void nvc_part_persist(struct nvc_part *p, const void *addr, size_t len);
/** Reserves NVRAM for data bytes [0,end); returns 0, or -ENOSPC when the device/capacity is full. */
int nvc_part_reserve(struct nvc_part *p, uint64_t end, uint64_t *node_used, uint64_t node_cap);
struct nvc_seg;
/** Persists the data of several segments of a part (one msync per run of pages off real PM). */
void nvc_part_persist_segments(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n);
/** Marks the pages of several segments dirty and persists the bitmap words once. */
void nvc_part_mark_dirty_segments(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n);
/** Raises the part's file size to at least end (atomic maximum) and persists it. */
void nvc_part_grow_size(struct nvc_part *p, uint64_t end);
/** A direct writer (a rank of the part's node, or its host's agent) announces itself in
 *  hdr->writers, then checks that the part is ACTIVE: 0 when it may write, -1 (announcement
 *  withdrawn) when a drain or bypass has begun. A drain waits until writers is 0. */
int nvc_part_writer_enter(struct nvc_part *p);
/** Copies part bytes [off, off + len) to dst: those below `reserved` (the header's reserved, as
 *  the caller loaded it) from NVRAM, the rest as zeros. Bytes past the reserved space were never
 *  written, and reading them from the sparse mapping would allocate a page each (past
 *  NVCACHE_CAPACITY; SIGBUS on a full device). */
void nvc_part_read(const struct nvc_part *p, uint64_t off, uint64_t len, uint64_t reserved, uint8_t *dst);
/** Completes a direct writer's segments: data durable, then their dirty bits, then the size
 *  raised to end; then the writer leaves hdr->writers. */
void nvc_part_writer_leave(struct nvc_part *p, const struct nvc_seg *segs, uint32_t n, uint64_t end);
/** Clears dirty bits (and the exact-write marks) for pages fully or partly in [off, off+len) and
 *  persists them: the caller has written every dirty byte of those pages back. */
void nvc_part_clear_dirty(struct nvc_part *p, uint64_t off, uint64_t len);
/** Finds the next run of dirty bytes at or after *cursor (bytes): whole dirty pages, or within a
 *  page written in part only the bytes its writes covered; returns 0 when none. With merge
 *  non-NULL, a page written in part in many separate runs comes alone and whole with *merge = 1
 *  (the caller writes back nvc_part_merge_page over the file's current bytes of the page, or its
 *  runs one by one when it cannot read them); *merge = 0 for every other run. With merge NULL such
 *  a page is listed run by run too. */
int nvc_part_next_dirty(const struct nvc_part *p, uint64_t *cursor, uint64_t *off, uint64_t *len, int *merge);
/** Copies the bytes the job wrote of dirty page pg (a page nvc_part_next_dirty gave with *merge
 *  set) over `page`, NVC_PAGE bytes holding the file's current contents of that page: written
 *  back, the page keeps every byte the job did not write as the file has it now (another job's
 *  among them), as plain MPI-IO's writes of those bytes alone would. */
void nvc_part_merge_page(const struct nvc_part *p, uint64_t pg, uint8_t *page);
/** Most pages one merge covers (NVC_MERGE_PAGES * NVC_PAGE bytes read and written at once). */
#define NVC_MERGE_PAGES 64u
/** Extends pages to merge [off, off + len) that nvc_part_next_dirty gave with *merge set (*cursor
 *  its cursor after them) over the pages to merge that directly follow, up to max bytes in all;
 *  returns the new length, *cursor after it. */
uint64_t nvc_part_merge_extent(const struct nvc_part *p, uint64_t *cursor, uint64_t off, uint64_t len, uint64_t max);
/** Bytes of a page's byte mask (a bit per byte, bit j of byte i for the page's byte 8i + j). */
#define NVC_MASK_BYTES (NVC_PAGE / 8)
/** nvc_part_merge_page from a copy: the bytes of `src` (NVC_PAGE) whose bits are set in `mask`
 *  (NVC_MASK_BYTES, any alignment) over `page`. */
void nvc_merge_masked(uint8_t *page, const uint8_t *src, const uint8_t *mask);
/** The first run [*s, *e) of set bits at or after byte `from` of a page's mask copy; 0 if none. */
int nvc_mask_next_run(const uint8_t *mask, uint64_t from, uint64_t *s, uint64_t *e);
/** Maps a file offset to (part index, part-local offset). */
static inline void nvc_file_to_part(uint64_t off, uint64_t stripe, uint32_t nparts, uint32_t *part, uint64_t *local)
{
    uint64_t b = off / stripe;
    *part = (uint32_t)(b % nparts);
    *local = (b / nparts) * stripe + off % stripe;
}
/** Maps a part-local offset of part index back to its file offset. */
static inline uint64_t nvc_part_to_file(uint64_t local, uint64_t stripe, uint32_t nparts, uint32_t index)
{
    return ((local / stripe) * nparts + index) * stripe + local % stripe;
}

/** The piece of a run of part-local bytes [local, local+left) that lies in one file block (a run
 *  is contiguous in the part, not in the file, and a block need not be whole pages): returns its
 *  length, up to the block's end; sets *fo to its file offset and *w to how many of its bytes lie
 *  below the file size `size` (0 when none). Draining and recovery write runs piece by piece. */
static inline uint64_t nvc_part_piece(uint64_t local, uint64_t left, uint64_t stripe, uint32_t nparts, uint32_t index,
                                      uint64_t size, uint64_t *fo, uint64_t *w)
{
    uint64_t k = stripe - local % stripe;
    if (k > left)
        k = left;
    *fo = nvc_part_to_file(local, stripe, nparts, index);
    *w = *fo >= size ? 0 : *fo + k > size ? size - *fo : k;
    return k;
}
/** The file bytes [*lo, *hi) that part-local bytes [local, local + len) of part `index` land
 *  on, clamped to the file size as nvc_part_piece clamps them (*lo >= *hi when none do): with
 *  several stripes, the span covers the other parts' blocks between them. */
static inline void nvc_part_file_span(uint64_t local, uint64_t len, uint64_t stripe, uint32_t nparts, uint32_t index,
                                      uint64_t size, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint64_t at = 0, k, fo, w; at < len; at += k) {
        k = nvc_part_piece(local + at, len - at, stripe, nparts, index, size, &fo, &w);
        if (w && fo < *lo)
            *lo = fo;
        if (w && fo + w > *hi)
            *hi = fo + w;
    }
}

/* ---------------------------------------------------------------- mailbox.c */

enum nvc_op {
    NVC_OP_OPEN = 1, NVC_OP_CLOSE, NVC_OP_WRITE, NVC_OP_FILL, NVC_OP_READ, NVC_OP_SIZE,
    NVC_OP_SETSIZE, NVC_OP_SYNC, NVC_OP_DIRTY, NVC_OP_CLEAN, NVC_OP_BYPASS_BEGIN,
    NVC_OP_BYPASS_END, NVC_OP_SHUTDOWN, NVC_OP_RESERVE,
    /* The job's file table on node 0's host, asked for by ranks of other hosts (remote.c): */
    NVC_OP_REG_JOIN, NVC_OP_REG_DRAINED, NVC_OP_REG_WAIT, NVC_OP_REG_DISOWN, NVC_OP_REG_LEAVE,
    NVC_OP_REG_UNTRACK, NVC_OP_REG_SYNCED, NVC_OP_REG_OWNED, NVC_OP_REG_DRAIN_FAILED
};
enum nvc_status { NVC_OK = 0, NVC_ERR = 1, NVC_NOSPACE = 2, NVC_BYPASS = 3, NVC_RETRY = 4 };
/* arg[0] of NVC_OP_BYPASS_END: the drain begun with NVC_OP_BYPASS_BEGIN failed; back to ACTIVE. */
#define NVC_BYPASS_ABANDON 1

struct nvc_seg { uint64_t off, len; };
/** In a dirty listing through the manager (NVC_OP_DIRTY), a segment's len with this bit set is
 *  pages to merge (see nvc_part_next_dirty): their NVC_OP_READ data is the pages, then their
 *  masks. nvc_seg_len and nvc_seg_data give a segment's bytes in the part and in the slot. */
#define NVC_SEG_MERGE (1ull << 63)
static inline uint64_t nvc_seg_len(const struct nvc_seg *g) { return g->len & ~NVC_SEG_MERGE; }
static inline uint64_t nvc_seg_data(const struct nvc_seg *g)
{
    return g->len & NVC_SEG_MERGE ? nvc_seg_len(g) / NVC_PAGE * (NVC_PAGE + NVC_MASK_BYTES) : g->len;
}

/** One request slot: written by exactly one client rank, served by the node's manager. */
struct nvc_slot {
    _Atomic uint32_t state;    /* 0 free, 1 posted, 2 done */
    uint32_t op, status, nseg;
    uint64_t fileid;
    uint32_t part, pad;        /* part index (a manager maps on demand a part that a node rank created) */
    uint64_t arg[6];
    struct nvc_seg seg[NVC_MAXSEG];
    /* data follows (nvc_cfg.slot_bytes) */
};

/** A node's mailbox: a doorbell the manager sleeps on, and one slot per client rank on the host. */
#define NVC_CLOSE_RING 256
struct nvc_mailbox {
    _Atomic uint32_t doorbell;
    _Atomic uint32_t manager_sleeping;
    _Atomic uint32_t alive;
    uint32_t nslots;
    uint64_t slot_stride, slot_bytes;
    /* File ids whose parts were closed (marked CLOSED and unlinked by their representative): the
       manager drops its mapping of them at its next wake-up. 0 = free entry. Unlike a CLOSE
       request in the rank's slot, a notice needs no reply, so the rank's next request does not
       wait for the manager to have served it. */
    _Atomic uint64_t closed[NVC_CLOSE_RING];
    /* The creating manager's process id: nvcache-recover removes a mailbox whose creator is gone
       (a job killed or ended by MPI_Abort before its managers unlinked it). 0 = unknown. */
    int32_t creator_pid;
    /* A close on this node failed to drain and kept its parts: later opens on the host look for
       them (cache.c, warn_dead_parts). */
    _Atomic uint32_t kept_parts;
};
_Static_assert(sizeof(struct nvc_mailbox) <= NVC_PAGE, "mailbox header fits its page");

/* Collectives of open files in shared memory (the transport is single-host): one entry per cached
 * open file in node 0's mailbox, claimed by the communicator's rank 0 at open and agreed on in the
 * open's one MPI collective; close, sync and set_size then meet there instead of on a duplicate
 * communicator. Waiting is a futex sleep. */
#define NVC_COLL_ENTRIES 256
#define NVC_COLL_VALS 4
struct nvc_coll {
    _Atomic uint64_t fileid;   /* 0: free */
    _Atomic uint32_t arrived, gen, left, pad;
    _Atomic int64_t mn[2][NVC_COLL_VALS], mx[2][NVC_COLL_VALS]; /* per generation parity */
};
#define NVC_COLL_BYTES ((sizeof(struct nvc_coll) * NVC_COLL_ENTRIES + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE)
enum nvc_coll_op { NVC_COLL_BARRIER = 0, NVC_COLL_MIN, NVC_COLL_MAX };
/** Claims a free collective entry for fileid (the communicator's rank 0); returns its index or -1 when all are in use. */
int nvc_coll_claim(struct nvc_mailbox *mb, uint64_t fileid);
/** The collective entry idx of a mailbox. */
struct nvc_coll *nvc_coll_entry(struct nvc_mailbox *mb, int idx);
/** One collective of nranks ranks on entry c: reduces v[0..n) in place (MIN or MAX), or only meets (BARRIER). */
void nvc_coll_run(struct nvc_coll *c, int nranks, int op, int64_t *v, int n);
/** Called by every rank after its last collective on c; the last one frees the entry. */
void nvc_coll_leave(struct nvc_coll *c, int nranks);

/* ---------------------------------------------------------------- registry.c
 *
 * One cache state per file, not per handle: a job-wide table (in node 0's mailbox, so single-host
 * like the rest of the transport) of the files that have handles open, keyed by device and inode.
 * A file is cached by at most one open at a time, and only while no other handle of it is open
 * anywhere in the job; a second handle (any communicator, any rank) makes the file shared: the
 * caching open's dirty data is drained to the real file before the second handle's open returns,
 * and every handle of the file passes through to plain MPI-IO until all of them are closed. */
#define NVC_REG_ENTRIES 512
#define NVC_REG_MAXPARTS 64
enum nvc_reg_state { NVC_REG_FREE = 0, NVC_REG_CACHED, NVC_REG_DRAINING, NVC_REG_SHARED };
/** One file with handles open in the job. */
struct nvc_reg {
    uint64_t dev, ino;         /* the file (valid while refs > 0); dev: see nvc_reg_host_free_dev */
    uint32_t refs;             /* rank-handles open on it in the job (every rank of every open counts) */
    _Atomic uint32_t state;    /* enum nvc_reg_state */
    _Atomic uint64_t owner;    /* file id of the caching open (CACHED, DRAINING) */
    uint64_t stripe;           /* the caching open's layout, for a drain by another handle */
    uint32_t nparts;
    _Atomic uint32_t synced;   /* the caching open was MPI_File_sync'ed: a drain by another handle fsyncs */
    uint16_t part_node[NVC_REG_MAXPARTS];
};
/** The table: a spin lock, the count of handles that could not be entered (while > 0 no open
 *  may cache: one of them could be a handle of the file), and the entries. */
struct nvc_reg_table {
    _Atomic uint32_t lock;
    uint32_t untracked;
    struct nvc_reg e[NVC_REG_ENTRIES];
};
#define NVC_REG_BYTES ((sizeof(struct nvc_reg_table) + NVC_PAGE - 1) / NVC_PAGE * NVC_PAGE)
/** What an open must do after joining the table. */
enum nvc_reg_verdict {
    NVC_REG_CACHE = 0,         /* this open may cache the file (it owns the entry) */
    NVC_REG_PASS,              /* pass through: other handles are open */
    NVC_REG_PASS_DRAIN,        /* pass through, after draining the caching open (layout in *drain), then nvc_reg_drained */
    NVC_REG_PASS_WAIT          /* pass through, after nvc_reg_wait_drained: another handle is draining the caching open */
};
/** The table in a mailbox (node 0's is the job's). */
struct nvc_reg_table *nvc_reg_table(struct nvc_mailbox *mb);
/** Set in a multi-host key's dev (nvc_reg_host_free_dev): it holds the file's creation time. */
#define NVC_REG_BTIME (1ull << 63)
/** The table's dev for a file in a job across hosts, where one file system's device numbers differ
 *  between its mounts: the file's creation time (flagged NVC_REG_BTIME) where the host reports one,
 *  else 0. So files of different file systems that share an inode number are told apart whenever
 *  creation times are known (before, they were taken for one file: a second file's open drained
 *  the first one's cache into it). */
static inline uint64_t nvc_reg_host_free_dev(const struct nvc_file_id *id)
{
    if (!id->has_btime)
        return 0;
    return NVC_REG_BTIME | ((((uint64_t)id->btime_sec << 30) ^ id->btime_nsec) & ~NVC_REG_BTIME);
}
/** Whether two table devs name one device: equal, or one of them a multi-host key without a
 *  creation time (which cannot tell files apart, so must match any). */
int nvc_reg_same_dev(uint64_t a, uint64_t b);
/** Enters one rank-handle of file (dev, ino) opened with file id fileid; want_cache says whether this
 *  open could cache it, with its layout (nparts, part_node, stripe). *out is the entry (NULL when the
 *  table was full: the handle counts as untracked); *drain receives the caching open's layout for
 *  NVC_REG_PASS_DRAIN. */
int nvc_reg_join(struct nvc_reg_table *t, uint64_t dev, uint64_t ino, uint64_t fileid, int want_cache, uint32_t nparts,
                 const int *part_node, uint64_t stripe, struct nvc_reg **out, struct nvc_reg *drain);
/** The drainer of NVC_REG_PASS_DRAIN is done: the file is shared from now on. */
void nvc_reg_drained(struct nvc_reg *e);
/** The drainer of NVC_REG_PASS_DRAIN failed (the caching open's parts keep bytes the file lacks):
 *  the caching open goes on caching, and the opens that wanted the drain fail. */
void nvc_reg_drain_failed(struct nvc_reg *e);
/** Waits until no drain of the file runs (NVC_REG_PASS_WAIT). */
void nvc_reg_wait_drained(struct nvc_reg *e);
/** The open fileid, which owns e, did not cache after all: the file is shared while its handles are open. */
void nvc_reg_disown(struct nvc_reg_table *t, struct nvc_reg *e, uint64_t fileid);
/** Counts a handle whose file cannot be identified as untracked (left with nvc_reg_leave(t, NULL)). */
void nvc_reg_untrack(struct nvc_reg_table *t);
/** Leaves: one rank-handle of e (NULL: an untracked handle) is closed. */
void nvc_reg_leave(struct nvc_reg_table *t, struct nvc_reg *e);
/** Whether the open fileid still caches the file of e (no other handle has been opened since). */
static inline int nvc_reg_owned(const struct nvc_reg *e, uint64_t fileid)
{
    return atomic_load_explicit(&e->state, memory_order_acquire) == NVC_REG_CACHED &&
           atomic_load_explicit(&e->owner, memory_order_acquire) == fileid;
}

/** Creates (creator=1) or maps a node's mailbox shared-memory segment. Returns NULL on error. */
struct nvc_mailbox *nvc_mailbox_map(const char *name, uint32_t nslots, uint64_t slot_bytes, int creator);
/** Unmaps a mailbox; the creator also unlinks it. */
void nvc_mailbox_unmap(struct nvc_mailbox *mb, const char *name, int creator);
/** Returns slot i of a mailbox. */
struct nvc_slot *nvc_mailbox_slot(struct nvc_mailbox *mb, uint32_t i);
/** Data area of a slot. */
static inline uint8_t *nvc_slot_data(struct nvc_slot *s) { return (uint8_t *)(s + 1); }
/** Posts the filled slot to the manager and waits for the reply (spins NVCACHE_SPIN_US, then sleeps). */
void nvc_mailbox_call(struct nvc_mailbox *mb, struct nvc_slot *s);
/** Posts the filled slot without waiting (the reply is collected by nvc_mailbox_settle). */
void nvc_mailbox_post(struct nvc_mailbox *mb, struct nvc_slot *s);
/** Waits for the reply to a posted slot, if one is outstanding, and frees the slot. */
void nvc_mailbox_settle(struct nvc_slot *s);
/** Tells the manager that the part of fileid is closed (no reply); returns 0, or -1 when the ring is full. */
int nvc_mailbox_notify_closed(struct nvc_mailbox *mb, uint64_t fileid);
/** Manager side: blocks until some slot is posted or the doorbell changes (futex sleep). */
void nvc_mailbox_wait(struct nvc_mailbox *mb, uint32_t seen_doorbell);
/** Manager side: marks a slot done and wakes its client. */
void nvc_mailbox_reply(struct nvc_slot *s);

/* ---------------------------------------------------------------- remote.c
 *
 * Requests for the parts of nodes on other hosts travel over MPI: a rank sends the request (the
 * slot's header, segments and data) to the agent of the owning host, a thread of that host's
 * first rank, which posts it in the node's mailbox like a local rank would and sends the reply
 * back. The job's file table lives on node 0's host; ranks of other hosts reach it the same way
 * (NVC_OP_REG_*). Needs MPI_THREAD_MULTIPLE (the agent calls MPI beside the application). */

/** Sets up the channel (collective over MPI_COMM_WORLD; every rank, once nodes are known) and
 *  starts this host's agent in the host's first rank; returns 0, or -1 (caching impossible). */
int nvc_remote_start(void);
/** Stops the agent (after a barrier: no request is in flight) and frees the channel. */
void nvc_remote_stop(void);
/** This process's slot for requests to node on another host (caller holds nvc_rt.slot_lock). */
struct nvc_slot *nvc_remote_slot(int node);
/** Sends the filled slot s to node's host and waits for the reply, written back into s. */
void nvc_remote_call(int node, struct nvc_slot *s);
/** Posts s to node and waits for the reply: node's mailbox on this host, the agent elsewhere. */
void nvc_node_call(int node, struct nvc_slot *s);

/* ---------------------------------------------------------------- manager.c */

/** mkdir -p with mode 0700; returns 0 or -errno. */
int nvc_mkdirs(const char *dir);
/** Starts the node's manager thread serving mailbox mb (called by the node leader). */
int nvc_manager_start(struct nvc_mailbox *mb, uint64_t jobid);
/** Stops and joins the manager thread; closes all parts still open. */
void nvc_manager_stop(void);

/* ---------------------------------------------------------------- runtime (interpose.c) */

/** Process-wide runtime state set up in MPI_Init. */
struct nvc_runtime {
    int ready;                 /* caching possible in this process */
    int world_rank, world_size;
    int host_rank, host_size;  /* rank within MPI_COMM_TYPE_SHARED */
    int multi_host;            /* job spans several hosts (requests to other hosts go through remote.c) */
    int nhosts;
    int *node_agent;           /* node -> world rank of its host's agent (multi_host only) */
    int app_thread_level;      /* the thread level the application asked for (nvcache may ask for more) */
    int job_thread_level;      /* the highest app_thread_level of the job's ranks: how files are opened */
    int node;                  /* global node index of this rank */
    int nnodes;
    int *rank_node;            /* world rank -> node */
    MPI_Group world_group;     /* MPI_COMM_WORLD's group: a communicator's ranks -> world ranks (local) */
    MPI_Comm self_dup;         /* a duplicate of MPI_COMM_SELF, where nvcache opens its own file handles
                                  (cache.c, open_beside); MPI_COMM_NULL before the setup or if it failed */
    int *rank_slot;            /* world rank -> slot index in every mailbox on its host */
    struct nvc_mailbox **mbox; /* node -> mapped mailbox (NULL for other hosts) */
    int is_leader;
    uint64_t jobid;
    int job_lock;              /* this process's hold on the job's lock in NVCACHE_DIR (-1: none) */
    uint64_t next_fileid;
    uint64_t world_opens;      /* opens of files whose group is the whole job (their file ids) */
    pthread_mutex_t slot_lock; /* serializes this rank's slot use between threads */
};
extern struct nvc_runtime nvc_rt;

/** Fills this rank's slot in node's mailbox (caller holds nvc_rt.slot_lock) and calls. */
struct nvc_slot *nvc_my_slot(int node);

/* ---------------------------------------------------------------- view.c */

/** A flattened datatype: sorted (offset,len) byte blocks within one extent. */
struct nvc_flat {
    int64_t lb, extent;        /* true lb and extent of the type (resized extent used for tiling) */
    int64_t size;              /* bytes of data per instance */
    size_t n;
    int64_t *off, *len;
    int64_t *pre;              /* pre[i] = data bytes before block i */
    int contiguous;            /* one block starting at 0 with len == extent */
};

/** Flattens datatype into blocks; returns 0 or an MPI error code. */
int nvc_flatten(MPI_Datatype dt, struct nvc_flat *out);
/** Frees a flattened type. */
void nvc_flat_free(struct nvc_flat *f);

/** A file view as nvcache tracks it. */
struct nvc_view {
    MPI_Offset disp;
    MPI_Datatype etype, filetype;
    int64_t etype_size;
    struct nvc_flat ft;
    int native;                /* datarep is "native" */
    int opaque;                /* not mapped by nvcache (type not flattened, or not native): the real
                                  handle computes byte offsets and the end of the view */
};

/** Calls fn(file_off, len, stream_off, arg) for each file byte range of view stream [s, s+n). Stops if fn returns nonzero. */
int nvc_view_map(const struct nvc_view *v, int64_t s, int64_t n,
                 int (*fn)(int64_t file_off, int64_t len, int64_t stream_off, void *arg), void *arg);
/** Number of view-stream bytes that lie in the file before byte offset file_off. */
int64_t nvc_view_stream_before(const struct nvc_view *v, int64_t file_off);
/** File byte offset of view stream position s. */
int64_t nvc_view_file_offset(const struct nvc_view *v, int64_t s);

/* ---------------------------------------------------------------- cache.c */

enum nvc_mode { NVC_MODE_PASS = 0, NVC_MODE_CACHED = 1, NVC_MODE_BYPASSED = 2 };

struct nvc_stats;

/** Per-rank state of one opened file. */
struct nvc_file {
    MPI_File real;             /* the real handle (returned to the application) */
    int mode;                  /* enum nvc_mode */
    struct nvc_coll *coll;     /* where nvcache's collectives on this file meet (shared memory) */
    int rank, size;
    int amode;
    /* The file's name as opened, made absolute (ROMIO's "fs:" prefix kept, see file_init):
       valid after a chdir() of the application and for nvcache-recover, which gets path +
       path_off (no prefix). path_ok is 0 when it did not fit (the file is then not cached). */
    char path[NVC_PATH_MAX];
    size_t path_off;
    int path_ok;
    int drain_failed;          /* a drain of this rank's bypass failed: its parts keep the data */
    int open_error;            /* this open's drain of another open's cache failed: the open fails */
    struct nvc_file_id file_id; /* the file this handle opened (stat at the open; zero: unknown) */
    int file_gone;             /* path no longer names that file (deleted, maybe re-created): drains
                                  discard, as plain MPI-IO's writes went to the unlinked file */
    struct nvc_file_opts opts;
    struct nvc_view view;
    int64_t fp;                /* individual file pointer, etype units */
    uint64_t fileid, stripe;
    uint32_t nparts;
    int *part_node;            /* part -> node */
    int *part_rep;             /* part -> comm rank that represents it (open/prefetch/flush) */
    int my_part;               /* part index of my node (-1 if none) */
    int atomic;
    int64_t size_hint;         /* lower bound of the file size (sizes only grow between collective set_size) */
    MPI_File self_fh;          /* lazily opened COMM_SELF byte handle for drains */
    int self_reads;            /* self_fh was opened read-write: drains can merge pages (drain_merged) */
    int lock_fd;               /* a read-write descriptor of the file beside self_fh, through which
                                  drain_merged reads, writes and locks; -1 none */
    int lock_fd_wrote;         /* drain_merged wrote through lock_fd since its last fsync */
    int lock_foreign;          /* another program holds POSIX locks over the file: merges take none */
    int synced;                /* MPI_File_sync was called: drained data must stay durable (fsync) */
    int grown_unsynced;        /* a preallocate reached the real file since the last MPI_File_sync */
    struct nvc_part *direct;   /* my node's part mapped in this process (NULL: every request goes to the manager) */
    struct nvc_seg *dseg;      /* segments of a direct write batch (NVC_MAXSEG) */
    struct nvc_stats *st;
    struct nvc_reg *reg;       /* this handle's entry in the job's file table (NULL: untracked or on another host) */
    int64_t reg_idx;           /* the entry's index in node 0's host's table (ranks of other hosts; -1: untracked) */
    MPI_Comm mcomm;            /* multi-host jobs: a duplicate of the file's communicator for nvcache's collectives */
    void *mcomm_owner;         /* the communicator record (cache.c) whose shared duplicate mcomm is; NULL: f's own */
    int reg_joined;            /* the handle was entered in the table (left at close) */
    int reg_owner;             /* this open cached the file when it was opened (checked before cached operations) */
    pthread_mutex_t lock;
    struct nvc_file *next;
};

/** Finds the nvcache state of a handle (NULL if unknown). */
struct nvc_file *nvc_file_lookup(MPI_File fh);

/** MPI_File_open: opens the real file and, if eligible, sets up the cache collectively. */
int nvc_open(MPI_Comm comm, const char *path, int amode, MPI_Info info, MPI_File *fh);
/** MPI_File_close: flushes (unless temporary/read-only), discards parts, closes the real file. */
int nvc_close(MPI_File *fh);
/** nvc_io's use_fp for a blocking and a nonblocking call through the individual pointer. */
#define NVC_FP 1
#define NVC_FP_NONBLOCKING 2
/** Data access on a cached or bypassed file at explicit_off, or (use_fp nonzero) at and advancing the
 * individual pointer: NVC_FP for a blocking call, NVC_FP_NONBLOCKING for a nonblocking one (they
 * move it differently at the end of the file, as MPI-IO does). */
int nvc_io(struct nvc_file *f, int write, int64_t explicit_off, int use_fp, void *buf, MPI_Count count,
           MPI_Datatype dt, MPI_Status *status);
/** Moves a cached file to bypass mode: drains dirty data to the real file; later I/O goes to the real file. */
int nvc_bypass(struct nvc_file *f, const char *why);
/* MPI_SUCCESS when f's I/O may pass to MPI-IO: no drain of this rank failed, or a retry of it now
   succeeded; else the drain's error, and the caller must leave the real file alone. */
int nvc_pass_ready(struct nvc_file *f);
/* Gives rc, an error nvcache raised itself (not one of a call on the application's handle, which
   MPI gave to the handler already), to f's error handler as MPI-IO does with its own errors, and
   returns it (when the handler returns). Call without f->lock: a handler may use the file. */
int nvc_raise(struct nvc_file *f, int rc);
/** MPI_File_get_size on a cached file. */
int nvc_get_size(struct nvc_file *f, MPI_Offset *size);
/** MPI_File_set_size / MPI_File_preallocate (grow_only) on a cached file (collective). */
int nvc_set_size(struct nvc_file *f, MPI_Offset size, int grow_only);
/** MPI_File_sync on a cached file (collective). */
int nvc_sync(struct nvc_file *f);
/** MPI_File_set_view: records the view (the real handle gets it too). */
int nvc_set_view(struct nvc_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep);
/** At MPI_Finalize: closes the cached files the application left open (an erroneous program),
 *  oldest first, so that their data reaches the files as it would have under plain MPI-IO. */
void nvc_close_left_open(void);
/** MPI_File_seek on the individual pointer. */
int nvc_seek(struct nvc_file *f, MPI_Offset offset, int whence);
/** Converts an etype offset of the view into an absolute byte offset. */
int nvc_byte_offset(struct nvc_file *f, MPI_Offset offset, MPI_Offset *disp);

/* ---------------------------------------------------------------- stats.c */

enum nvc_stat_op { NVC_ST_READ = 0, NVC_ST_WRITE, NVC_ST_SYNC, NVC_ST_OPEN, NVC_ST_CLOSE, NVC_ST_NOPS };

struct nvc_stats {
    char path[NVC_PATH_MAX];
    uint64_t calls[NVC_ST_NOPS], bytes[NVC_ST_NOPS], ns[NVC_ST_NOPS];
    uint64_t cached_calls, bypass_calls, prefetch_bytes, flush_bytes;
    uint64_t direct_bytes;     /* read or written through this rank's own mapping of its node's part */
    struct nvc_stats *next;
};

/** Returns the statistics record of path (created on first use). */
struct nvc_stats *nvc_stats_get(const char *path);
/** Adds one operation of kind op. */
void nvc_stats_add(struct nvc_stats *s, int op, uint64_t bytes, uint64_t ns, int cached);
/** Prints all records (NVCACHE_STATS=1) to stderr, one line per file and op. */
void nvc_stats_print(int rank);

/* ---------------------------------------------------------------- progress.c */

/** Enables or disables yielding in the progress hook. */
void nvc_progress_set_yield(int on);

#endif
