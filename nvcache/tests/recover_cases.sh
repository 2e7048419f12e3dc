#!/bin/bash
# Failure cases around nvcache-recover, driven by tests/lifecycle.c:
#   recover_cases.sh CASE MPIEXEC LIFECYCLE_BIN RECOVER_BIN DATA_DIR
# CASE drain-fail: a drain that fails while the file leaves the cache: the close reports it (each
#   failing call through the file's error handler, counted by the program), the
#   part stays, and nvcache-recover then writes the synced bytes (NVCACHE_RANKS_PER_NODE=1,
#   NVCACHE_PART_MAX=1M from the environment).
# CASE drain-fail-write: as drain-fail, and the rank whose drain failed then writes over the kept
#   part's dirty bytes, with an independent write and a split collective: a write that reports
#   success must not be undone by the recovery that writes the part's older bytes (it must fail
#   instead while the part cannot be drained); a shared-pointer write elsewhere is in the file
#   only if it reported success; a non-native view and a seek to its end fail too.
# CASE drain-fail-retry: as drain-fail-write, then the limit is lifted and the rank writes again:
#   the drain retried first now succeeds, so that write and the close succeed, no part is kept and
#   the file holds every byte without a recovery.
# CASE drain-fail-reopen: a close whose drain fails keeps its part; the same job then reopens the
#   file and writes newer bytes over the kept part's, syncs and closes: recovery must keep the
#   part (its older bytes would overwrite the newer ones) until --force. drain-fail-reopen-self:
#   one node of two ranks, the close on MPI_COMM_SELF of rank 1, the reopen on rank 0's.
# CASE second-handle: a second handle's open whose drain of the caching open fails (the file
#   cannot grow past 1.25 MiB) must fail on every rank, and the caching open goes on: its later
#   write, a later second open (the limit lifted) and its write all land in the file.
# CASE temporary: a job dies with a delete-on-close file open: nvcache-recover removes its parts
#   (never writes them) once the job is gone.
# CASE close-crash: a job is SIGKILLed in the middle of its close's drain (after a sync): the
#   part must still count every synced byte as dirty (nvcache-recover --dry-run), since the file
#   holds none of them durably before the close's fsync; recovery then restores them.
# CASE replaced: as close-crash, but the file is deleted and created again before the recovery:
#   nvcache-recover must not write the dead job's bytes into the new file (it keeps the parts and
#   fails), and --force then writes them there.
# CASE two-jobs: two jobs in turn write and sync the same 8 KiB of the file and are SIGKILLed,
#   with no recovery in between (NVCACHE_RECOVER=0: the second job's MPI_Init does not recover): one recovery then leaves the later job's bytes in the file, and
#   keeps the earlier job's part (the later job's open marked it).
# CASE superseded: a job writes and syncs 8 KiB and is SIGKILLed; before any recovery a second
#   job (NVCACHE_RECOVER=0, else its MPI_Init recovers first) writes other bytes there and closes the file: its open must say that the dead job's parts
#   are there, and recovery must keep them rather than write the older bytes over the second
#   job's (--force then writes them).
# CASE fewer-hosts: across 2 emulated hosts (MPIEXEC is emu_mpiexec.sh, 4 KiB stripes, so each
#   host holds half of the 8 KiB), a job writes and syncs and is SIGKILLed; it is restarted on the
#   first host only, whose MPI_Init writes that host's part back, and the restarted job writes
#   other bytes over all 8 KiB and closes the file. The second host's recovery must then keep its
#   part rather than write the older bytes over the restarted job's: the restarted job's open
#   marked the file itself (--force writes the part all the same). Once with the restarted job
#   caching, once with NVCACHE_ENABLE=0 (plain MPI-IO through nvcache, which marks the file too).
# CASE disabled-between: a job writes and syncs 8 KiB and is SIGKILLed; a second job runs with
#   NVCACHE_ENABLE=0 and writes other bytes there: its MPI_Init must still recover the dead job's
#   parts first (else nothing marks them, and the next recovery writes the older bytes over the
#   second job's), so the second job's bytes stay and no part is left.
# CASE disabled-norecover: as superseded, but the second job runs with NVCACHE_ENABLE=0 and
#   NVCACHE_RECOVER=0 (plain MPI-IO through nvcache, no recovery): it neither recovers nor marks
#   the parts, but names itself the file's last writer, so recovery must keep the parts.
# CASE big: one dirty run of 2 GiB + 8 KiB (a 3 GiB stripe), synced, then SIGKILL: recovery must
#   write it all back (one pwrite moves at most 0x7ffff000 bytes) and say so only then.
# CASE live: nvcache-recover runs while a job that synced is still running (NVCACHE_DIR is shared
#   by a user's jobs): it must leave that job's parts alone; another job opens the file for
#   writing and closes it without writing (its mark on the file must not make the running job's
#   later bytes look older, nor split its parts: with 8 KiB stripes only one part is written after
#   the mark); the job then syncs more and is SIGKILLed, and recovery afterwards restores every
#   synced byte.
# CASE shrink: across 2 emulated hosts (MPIEXEC is emu_mpiexec.sh), a shrinking set_size, writes
#   past it on the other host, sync, SIGKILL: every host's recovery together restores the synced
#   bytes and the size (a host's recovery never cuts what another's wrote back).
# CASE fsync-fail: the write-back's fsync fails (EIO, as a network file system reports a lost
#   write-back there; tests/fail_io.c, FAIL_IO_LIB from the environment): recovery must fail and
#   keep the part, the only durable copy; a later recovery then restores the synced bytes.
# CASE close-fail: (FAIL_IO_LIB) the close of the handle the close's drain wrote through fails (EIO,
#   as a network file system reports a deferred write-back error at close(2); the job's bytes were
#   not synced; the application's own handle then closes fine): MPI_File_close must report it and
#   keep the part, the only copy the job can trust; a recovery then writes the bytes back.
# CASE fifo: the job's file is replaced by a FIFO after the crash: recovery keeps the part and says
#   why, without blocking on the FIFO's open.
# CASE close-fail-reopen: (FAIL_IO_LIB) as close-fail, then the same job reopens the file and writes,
#   syncs and closes newer bytes over it: the reopen must not wait for the kept part (which its
#   failed close leaves DRAINING), and recovery must keep it rather than write its older bytes
#   over the newer ones (as in drain-fail-reopen), until --force.
# CASE bad-header: a dead job's part whose header is damaged (stripe 0, a bitmap offset far
#   beyond the file, a stripe with its high bit set) or that was truncated after its creation:
#   recovery must report it, keep it and not crash, and a job's MPI_Init (which recovers too)
#   must run; a part whose creation was cut short (no longer than its first two pages) is
#   removed, since it never held data.
# CASE whole-file-lock: a job writes and syncs 8 KiB and is SIGKILLed; another process holds a POSIX
#   lock over the whole file (lockf): recovery must still restore the synced bytes, and a job
#   opening the file for writing must still run (nvcache takes no lock on the file, and none for
#   a merge where another program holds a POSIX lock: an earlier lock there hung both, recovery
#   holding the directory's lock against every job's MPI_Init).
# CASE pid-reuse: a job is SIGKILLed after its sync and another process takes its manager's PID
#   (recorded in the job's mailbox): recovery must still see the job as dead (no process holds its
#   lock in NVCACHE_DIR) and restore the synced bytes (RECOVER_SIZES: tests/recover_sizes).
# CASE racing: a job writes and syncs 8 KiB and is SIGKILLed; nvcache-recover pauses just before
#   its write-back (FAIL_IO_LIB's PAUSE_PWRITE), and meanwhile a later job on another host (its own
#   NVCACHE_DIR) opens the file and writes other bytes: the later job must wait for the recovery
#   (the recovery's guard on the file) and say so, so that its bytes land after the dead job's and
#   stay. Once with the later job caching, once with NVCACHE_ENABLE=0. Then a guard a dead recovery
#   left (refreshed 28 s ago) holds an opener for at most the rest of its 30 s, and one older than
#   that not at all.
# CASE prealloc-sync: MPI_File_preallocate, then MPI_File_sync while the file's fsync fails
#   (FAIL_IO_LIB's FAIL_FSYNC): the sync must report it, as plain MPI-IO's does (the preallocated
#   size is not durable), with caching on and off.
# CASE shrink-crash: (FAIL_IO_LIB) a job SIGKILLed inside MPI_File_set_size, which shrinks a file
#   whose parts hold synced bytes past the new size, at four points: after the parts' flush
#   (fsync), before and after the file is cut (ftruncate), and after the call returned; after
#   nvcache-recover the file must be as before the call or as after it (a cut before the parts
#   took the size once left the file grown back with zeros over the cut bytes).
# CASE slot-bytes: (MPIEXEC is emu_mpiexec.sh, 2 hosts) NVCACHE_SLOT_BYTES=2G, a request slot too
#   large for one MPI message (its count overflowed an int and MPICH aborted the job at its first
#   request across hosts, losing the write): refused with a message, and the job runs with the
#   default slot, its bytes in the file.
# CASE page-share: two jobs write disjoint bytes of one 4 KiB page of an 8 KiB file of 'o' while
#   both have it open ('A' at 0, then 'B' at 100; the first job closes last): both jobs' bytes
#   and the file's own around them must be there, as with plain MPI-IO (the close wrote the page
#   back whole, the file's 'o' from the first job's open over the second job's 'B').
# CASE page-share-kill: as page-share, but the first job syncs and is SIGKILLed after the second
#   closed: recovery keeps its part (a later job opened the file), and --force must then write
#   only the bytes the dead job wrote, not its whole page over the second job's.
# CASE page-share-strided, page-share-strided-kill: as page-share and page-share-kill, each job
#   writing 4 bytes every 16 of the page ('A' from 0, 'B' from 8), 16 runs: more than nvcache
#   writes back one by one, so the page goes back merged with the file's current bytes (written
#   back whole from the first job's copy, the 'o' of its open went over every 'B').
# CASE page-share-nfs: (MPICH) page-share-strided through ROMIO's NFS driver (`nfs:` prefix), which
#   takes a POSIX lock around each read and write: a merge's own lock made that wait for ever.
# CASE page-share-locked: a dead job's rows, 4 bytes every 16 over 256 pages, recovered while
#   another program holds a POSIX lock over the whole file: recovery must not wait for it.
# CASE page-share-together: both jobs write 4 bytes every 16 over a 4 MiB file ('A' from 0, 'B'
#   from 8) and close at the same moment, five times: their drains merge the same pages at once,
#   and without the lock across each merge's read and write one job's rows went back to 'o' in
#   7 of 15 runs.
# CASE live-ns: a job runs in a private mount namespace with its own /dev/shm (a container on this
#   host sharing NVCACHE_DIR, which is then outside /dev/shm): a recovery outside must see it
#   running by its lock and leave its parts; afterwards it syncs more, is SIGKILLed, and recovery
#   restores every synced byte.
set -u
case=$1 mpiexec=$2 prog=$3 recover=$4 dir=$5
file=$dir/lifecycle-$case.dat
rm -f "$file"
. "$(dirname "$0")/nvram_layout.sh"
cleanup() { rm -f "$file" "$file.ready" "$file.go" "$file.job"; remove_nvram_dirs; }
# block_is N C MESSAGE: the file's 4 KiB block N holds only byte C, else MESSAGE and failure.
block_is() {
    local other
    other=$(dd if="$file" bs=4096 skip="$1" count=1 2>/dev/null | tr -d "$2" | wc -c)
    [ "$other" -eq 0 ] || { echo "$3"; exit 1; }
}
# A later job wrote 'y' over a dead job's synced 'x' (one host): recovery must keep the dead job's
# parts and leave the later bytes; --force then writes the parts.
kept_until_forced() {
    local out
    out=$(recover_once 2>&1) && { echo "$out"; echo "recovery wrote over the later job's file"; exit 1; }
    echo "$out"
    "$prog" has "$file" y || { echo "the dead job's older bytes were written over the later job's"; exit 1; }
    [ -n "$(parts)" ] || { echo "the parts were removed although nothing was written back"; exit 1; }
    "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force"; exit 1; }
    "$prog" has "$file" x || exit 1
}
# Cases whose guard is the file's user.nvcache.job attribute: skipped (exit 77) where the data
# directory's file system keeps no user extended attributes (NFSv3, tmpfs before Linux 6.6).
need_xattrs() {
    touch "$file"
    python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.nvcache.probe", b"1")' "$file" 2>/dev/null ||
        { echo "SKIPPED: $(dirname "$file") keeps no user extended attributes"; rm -f "$file"; exit 77; }
    rm -f "$file"
}
# Another program's POSIX lock over the whole of $file (lockf), held for 60 s in the background
# (PID in $holder) once this returns.
hold_lock() {
    python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)' "$file" &
    holder=$!
    for i in $(seq 100); do [ -e "$file.ready" ] && break; sleep 0.1; done
}

case $case in
drain-fail)
    "$mpiexec" -n 2 "$prog" drain-fail "$file" || { echo "the close did not report the failed drain, or a call failed without calling the file's error handler"; exit 1; }
    [ -n "$(parts)" ] || { echo "no part kept for nvcache-recover after the failed drain"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    # rank 1's 4 KiB at 1.5 MiB (block 384 of 4 KiB)
    got=$(dd if="$file" bs=4096 skip=384 count=1 2>/dev/null | tr -d D | wc -c)
    n=$(dd if="$file" bs=4096 skip=384 count=1 2>/dev/null | wc -c)
    [ "$n" -eq 4096 ] && [ "$got" -eq 0 ] || { echo "synced bytes lost: $n bytes at 1.5 MiB, $got not written"; exit 1; }
    echo "drain-fail: the close reported the error, the part was kept, recovery restored the synced bytes"
    ;;
drain-fail-reopen | drain-fail-reopen-self)
    # The job reopens the file whose close kept a part, writes 'N' over its synced 'D' and closes:
    # recovery must keep the part rather than write the older 'D' over 'N' (--force writes it).
    # -self: another process of the node than the one that failed to close reopens it.
    "$mpiexec" -n 2 "$prog" "$case" "$file" || { echo "the program's calls did not report what they should"; exit 1; }
    blk=384
    [ "$case" = drain-fail-reopen-self ] && blk=128
    [ -n "$(parts)" ] || { echo "no part kept after the failed drain"; exit 1; }
    block_is $blk N "the reopened file's synced bytes are not in the file"
    out=$(recover_once 2>&1) && { echo "$out"; echo "recovery wrote the kept part over the reopened file's bytes"; exit 1; }
    echo "$out"
    block_is $blk N "recovery wrote the kept part's older bytes over what the reopened file was written"
    [ -n "$(parts)" ] || { echo "the parts were removed although nothing was written back"; exit 1; }
    "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force"; exit 1; }
    block_is $blk D "--force did not write the kept part"
    echo "drain-fail-reopen: the kept part was marked, recovery kept it, --force wrote it"
    ;;
drain-fail-write)
    out=$("$mpiexec" -n 2 "$prog" drain-fail-write "$file")
    st=$?
    echo "$out"
    [ $st -eq 0 ] || { echo "a call failed without calling the file's error handler, or the close did not fail"; exit 1; }
    echo "$out" | grep -q "rank 0 .*close rc [1-9]" || { echo "the close did not report the failed drain"; exit 1; }
    late=$(echo "$out" | sed -n 's/.*late rc \([0-9]*\).*/\1/p')
    [ -n "$late" ] || { echo "no late write"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    # The 4 KiB at 1 MiB: 'E' if the late write reported success, else rank 1's synced 'D'.
    want=D
    [ "$late" -eq 0 ] && want=E
    block_is 256 "$want" "late write rc $late, but the 4 KiB at 1 MiB are not all '$want' after recovery"
    block_is 384 D "synced bytes at 1.5 MiB lost"
    # The shared-pointer write of 'S' at 1 MiB + 64 KiB: in the file only if it reported success.
    shared=$(echo "$out" | sed -n 's/.*shared rc \([0-9]*\).*/\1/p')
    s=$(dd if="$file" bs=4096 skip=272 count=1 2>/dev/null | tr -cd S | wc -c)
    { [ "$shared" -eq 0 ] && [ "$s" -eq 4096 ]; } || { [ "$shared" -ne 0 ] && [ "$s" -eq 0 ]; } ||
        { echo "write_shared rc $shared, but $s bytes 'S' at 1 MiB + 64 KiB"; exit 1; }
    echo "drain-fail-write: late write rc $late, the bytes at 1 MiB after recovery are '$want'; write_shared rc $shared"
    ;;
drain-fail-retry)
    "$mpiexec" -n 2 "$prog" drain-fail-retry "$file" || { echo "the write after the limit was lifted or the close failed"; exit 1; }
    [ -z "$(parts)" ] || { echo "parts kept although the retried drain succeeded"; exit 1; }
    block_is 256 E "the later write at 1 MiB is not in the file"
    block_is 384 D "synced bytes at 1.5 MiB lost"
    echo "drain-fail-retry: the drain retried before the later write succeeded; every byte in the file, no part kept"
    ;;
second-handle)
    "$mpiexec" -n 2 "$prog" second-handle "$file" ||
        { echo "the second open did not fail while the first open's cache could not be drained, or a later call failed"; exit 1; }
    [ -z "$(parts)" ] || { echo "parts kept although every close succeeded"; exit 1; }
    block_is 256 E "the first open's write at 1 MiB is not in the file"
    block_is 384 F "the second open's write at 1.5 MiB is not in the file"
    echo "second-handle: the open failed while the drain failed; afterwards every write is in the file"
    ;;
temporary)
    "$mpiexec" -n 2 "$prog" temporary "$file" && { echo "expected the ranks to be killed"; exit 1; }
    [ -n "$(parts)" ] || { echo "no parts left by the killed job"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts of the dead job's delete-on-close file left: $(parts)"; exit 1; }
    echo "temporary: the dead job's delete-on-close parts were removed"
    ;;
close-crash)
    "$mpiexec" -n 1 "$prog" close-crash "$file" && { echo "expected the rank to be killed"; exit 1; }
    dry=$(wait_job_gone)
    echo "$dry"
    echo "$dry" | grep -q "would recover $file: 1 part(s), 32768 dirty byte(s)" ||
        { echo "the part no longer holds all 32 KiB synced as dirty after a crash in the close's drain"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" close-crash-verify "$file" || exit 1
    ;;
replaced)
    "$mpiexec" -n 1 "$prog" close-crash "$file" && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    rm -f "$file"
    head -c 8192 /dev/zero | tr '\0' N >"$file"
    sum=$(cksum <"$file")
    out=$(recover_once 2>&1) && { echo "$out"; echo "recovery succeeded into a file that replaced the job's"; exit 1; }
    echo "$out"
    echo "$out" | grep -q "is not the file the job wrote" || { echo "no message about the replaced file"; exit 1; }
    [ "$(cksum <"$file")" = "$sum" ] || { echo "the new file was changed by the recovery"; exit 1; }
    [ -n "$(parts)" ] || { echo "the parts were removed although nothing was written back"; exit 1; }
    "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force"; exit 1; }
    "$prog" close-crash-verify "$file" || exit 1
    echo "replaced: the parts were kept for the replaced file, and --force wrote them there"
    ;;
fifo)
    # The job's file replaced by a FIFO after the crash: recovery must keep the part and say why
    # (its open blocked for ever, and so did every later job's MPI_Init in this NVCACHE_DIR).
    "$mpiexec" -n 1 "$prog" close-crash "$file" && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    rm -f "$file"
    mkfifo "$file"
    out=$(timeout 20 "$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -ne 124 ] || { echo "recovery hung on the FIFO"; exit 1; }
    [ $rc -ne 0 ] || { echo "recovery reported success into a FIFO"; exit 1; }
    echo "$out" | grep -q "is not a regular file" || { echo "no message about the FIFO"; exit 1; }
    [ -n "$(parts)" ] || { echo "the parts were removed although nothing was written back"; exit 1; }
    rm -f "$file"
    : >"$file"
    "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force"; exit 1; }
    "$prog" close-crash-verify "$file" || exit 1
    echo "fifo: the part was kept for a file replaced by a FIFO, recovery did not block, and --force wrote it back"
    ;;
two-jobs)
    for c in x y; do
        NVCACHE_RECOVER=0 "$mpiexec" -n 1 "$prog" sync-kill "$file" $c && { echo "expected the rank to be killed"; exit 1; }
        wait_job_gone >/dev/null # the second job's open must find the first one dead
    done
    [ "$(parts | wc -l)" -eq 2 ] || { echo "expected a part of each job: $(parts)"; exit 1; }
    out=$(recover_once 2>&1) && { echo "$out"; echo "recovery did not report the part it kept"; exit 1; }
    echo "$out"
    # One line per job: the later one's part recovered, the earlier one's kept.
    echo "$out" | grep -q "^recovered $file: 1 part(s), 8192 dirty byte(s)" ||
        { echo "no recovery reported for the later job"; exit 1; }
    echo "$out" | grep -q "^kept the parts of $file" || { echo "the kept part was not reported"; exit 1; }
    echo "$out" | grep -q "still holds data not in the files: .* 1 file(s) whose parts were kept" ||
        { echo "nvcache-recover did not end saying the directory still holds the kept part"; exit 1; }
    "$prog" has "$file" y || { echo "the earlier job's bytes were written back over the later job's"; exit 1; }
    [ "$(parts | wc -l)" -eq 1 ] || { echo "expected the earlier job's part kept, and only it: $(parts)"; exit 1; }
    # a user who removes a kept part by hand: the next recovery removes the dead job's lock file
    rm -f $(parts)
    recover_once >/dev/null || { echo "recovery after the kept part was removed failed"; exit 1; }
    ;;
superseded)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    out=$(NVCACHE_RECOVER=0 "$mpiexec" -n 1 "$prog" sync-close "$file" y 2>&1) || { echo "$out"; echo "the second job failed"; exit 1; }
    echo "$out"
    echo "$out" | grep -q "which ended without writing them back" || { echo "the second job's open did not warn"; exit 1; }
    "$prog" has "$file" y || exit 1
    kept_until_forced
    ;;
whole-file-lock)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    hold_lock
    out=$(timeout 30 "$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || { kill $holder; echo "recovery failed or hung on the locked file (rc $rc)"; exit 1; }
    "$prog" has "$file" x || { kill $holder; exit 1; }
    out=$(timeout 30 "$mpiexec" -n 1 "$prog" open-close "$file" 2>&1)
    rc=$?
    echo "$out"
    kill $holder
    wait $holder 2>/dev/null
    rm -f "$file.ready"
    [ $rc -eq 0 ] || { echo "the job opening the locked file failed or hung (rc $rc)"; exit 1; }
    [ -z "$(parts)" ] || { echo "parts left: $(parts)"; exit 1; }
    ;;
fewer-hosts)
    need_xattrs
    for enable in 1 0; do
        rm -f "$file"
        NVCACHE_STRIPE=4096 "$mpiexec" -n 2 "$prog" sync-kill "$file" x && { echo "expected the ranks to be killed"; exit 1; }
        wait_job_gone_all || exit 1
        [ "$(parts | wc -l)" -eq 2 ] || { echo "expected a part on each host: $(parts)"; exit 1; }
        out=$(NVCACHE_ENABLE=$enable "$mpiexec" -n 1 "$prog" sync-close "$file" y 2>&1) ||
            { echo "$out"; echo "the restarted job (NVCACHE_ENABLE=$enable) failed"; exit 1; }
        echo "$out"
        "$prog" has "$file" y || exit 1
        [ "$(parts | wc -l)" -eq 1 ] || { echo "expected only the second host's part left: $(parts)"; exit 1; }
        out=$(recover_once 2>&1) &&
            { echo "$out"; echo "the second host's recovery wrote over the restarted job's file (NVCACHE_ENABLE=$enable)"; exit 1; }
        echo "$out"
        "$prog" has "$file" y ||
            { echo "the second host's older bytes were written over the restarted job's (NVCACHE_ENABLE=$enable)"; exit 1; }
        [ "$(parts | wc -l)" -eq 1 ] || { echo "the part was removed although nothing was written back"; exit 1; }
        "$mpiexec" --each-host "$recover" --dir "$NVCACHE_DIR" --force || exit 1
        [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force: $(parts)"; exit 1; }
    done
    ;;
racing)
    need_xattrs
    [ -n "${FAIL_IO_LIB:-}" ] || { echo "FAIL_IO_LIB is not set"; exit 1; }
    other=$NVCACHE_DIR-otherhost
    waiting="is writing a dead job's bytes back"
    for enable in 1 0; do
        # The last round's job output goes first: the job below is started in the background and
        # truncates $file.job only once it runs, so a stale copy would show its wait before it waited.
        rm -f "$file" "$file.paused" "$file.go" "$file.job"
        "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
        wait_job_gone >/dev/null
        LD_PRELOAD=$FAIL_IO_LIB PAUSE_PWRITE="$(basename "$file")" "$recover" --dir "$NVCACHE_DIR" >"$file.rec" 2>&1 &
        rec=$!
        for _ in $(seq 300); do [ -e "$file.paused" ] && break; sleep 0.1; done
        [ -e "$file.paused" ] || { cat "$file.rec"; kill $rec; echo "the recovery never reached its write-back"; exit 1; }
        NVCACHE_DIR=$other NVCACHE_ENABLE=$enable "$mpiexec" -n 1 "$prog" sync-close "$file" y >"$file.job" 2>&1 &
        job=$!
        for _ in $(seq 300); do
            grep -qs "$waiting" "$file.job" && break
            kill -0 $job 2>/dev/null || break
            sleep 0.1
        done
        touch "$file.go"
        wait $rec; rrc=$?
        wait $job; jrc=$?
        cat "$file.rec" "$file.job"
        rm -rf "$other" "$file.rec" "$file.paused" "$file.go"
        [ $rrc -eq 0 ] || { echo "the recovery failed (NVCACHE_ENABLE=$enable)"; exit 1; }
        [ $jrc -eq 0 ] || { echo "the later job failed (NVCACHE_ENABLE=$enable)"; exit 1; }
        grep -q "$waiting" "$file.job" ||
            { echo "the later job did not wait for the recovery writing the file (NVCACHE_ENABLE=$enable)"; exit 1; }
        "$prog" has "$file" y ||
            { echo "the recovery wrote the dead job's older bytes over the later job's (NVCACHE_ENABLE=$enable)"; exit 1; }
        [ -z "$(parts)" ] || { echo "parts left after the recovery: $(parts)"; exit 1; }
    done
    # Guards of recoveries that died: one refreshed 28 s ago holds an opener for about 2 s, an older
    # one not at all.
    for age in 28 40; do
        python3 -c 'import os, sys, time
os.setxattr(sys.argv[1], "user.nvcache.rec.00000000000000aa",
            b"%d 1 gone.example" % int((time.time() - float(sys.argv[2])) * 1e9))' "$file" $age
        start=$(date +%s)
        out=$(NVCACHE_DIR=$other timeout 60 "$mpiexec" -n 1 "$prog" sync-close "$file" y 2>&1) ||
            { echo "$out"; echo "a job failed or hung on a dead recovery's guard ($age s old)"; exit 1; }
        took=$(($(date +%s) - start))
        echo "$out"
        rm -rf "$other"
        if [ $age = 28 ]; then
            echo "$out" | grep -q "$waiting" || { echo "the job did not wait for a guard refreshed $age s ago"; exit 1; }
        else
            echo "$out" | grep -q "$waiting" && { echo "the job waited for a guard older than 30 s"; exit 1; }
        fi
        [ $took -le 20 ] || { echo "the job took $took s beside a guard $age s old"; exit 1; }
        python3 -c 'import os, sys; os.removexattr(sys.argv[1], "user.nvcache.rec.00000000000000aa")' "$file"
    done
    ;;
disabled-between)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    out=$(NVCACHE_ENABLE=0 "$mpiexec" -n 1 "$prog" sync-close "$file" y 2>&1) || { echo "$out"; echo "the second job failed"; exit 1; }
    echo "$out"
    echo "$out" | grep -q "MPI_Init: recovered $file" || { echo "the disabled job's MPI_Init did not recover"; exit 1; }
    [ -z "$(parts)" ] || { echo "the dead job's parts are left for a later recovery: $(parts)"; exit 1; }
    recover_all || exit 1
    "$prog" has "$file" y || { echo "the dead job's older bytes were written over the second job's"; exit 1; }
    ;;
disabled-norecover)
    need_xattrs
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    out=$(NVCACHE_ENABLE=0 NVCACHE_RECOVER=0 "$mpiexec" -n 1 "$prog" sync-close "$file" y 2>&1) ||
        { echo "$out"; echo "the second job failed"; exit 1; }
    echo "$out"
    [ -n "$(parts)" ] || { echo "the second job recovered although NVCACHE_RECOVER=0"; exit 1; }
    kept_until_forced
    ;;
fsync-fail)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    out=$(FAIL_FSYNC=$(basename "$file") LD_PRELOAD=$FAIL_IO_LIB "$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -ne 0 ] || { echo "recovery reported success although the write-back's fsync failed"; exit 1; }
    [ -n "$(parts)" ] || { echo "the part was removed although its write-back is not durable"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" has "$file" x || { echo "the synced bytes are not in the file"; exit 1; }
    ;;
close-fail)
    FAIL_CLOSE=$(basename "$file") LD_PRELOAD=$FAIL_IO_LIB "$mpiexec" -n 1 "$prog" close-fail "$file" c || { echo "the close did not report the failed close of the file"; exit 1; }
    [ -n "$(parts)" ] || { echo "the part was removed although its write-back may not be in the file"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" has "$file" c || { echo "the written bytes are not in the file"; exit 1; }
    ;;
close-fail-reopen)
    FAIL_CLOSE=$(basename "$file") LD_PRELOAD=$FAIL_IO_LIB timeout 60 "$mpiexec" -n 1 "$prog" close-fail-reopen "$file" c ||
        { echo "the close did not report its failed close, or the reopened file's calls failed or hung"; exit 1; }
    "$prog" has "$file" d || { echo "the reopened file's bytes are not in the file"; exit 1; }
    [ -n "$(parts)" ] || { echo "the part was removed although its write-back may not be in the file"; exit 1; }
    out=$(recover_once 2>&1) && { echo "$out"; echo "recovery wrote the kept part over the reopened file's bytes"; exit 1; }
    echo "$out"
    "$prog" has "$file" d || { echo "recovery wrote the kept part's older bytes over the reopened file's"; exit 1; }
    "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery with --force"; exit 1; }
    ;;
slot-bytes)
    out=$(NVCACHE_SLOT_BYTES=2G "$mpiexec" -n 2 "$prog" sync-close "$file" z 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || { echo "the job failed with NVCACHE_SLOT_BYTES=2G"; exit 1; }
    echo "$out" | grep -q "NVCACHE_SLOT_BYTES must be 64K to 1G" || { echo "NVCACHE_SLOT_BYTES=2G was not refused"; exit 1; }
    "$prog" has "$file" z || { echo "the job's bytes are not in the file"; exit 1; }
    ;;
prealloc-sync)
    [ -n "${FAIL_IO_LIB:-}" ] || { echo "FAIL_IO_LIB is not set"; exit 1; }
    for enable in 1 0; do
        out=$(NVCACHE_ENABLE=$enable FAIL_FSYNC=$(basename "$file") LD_PRELOAD=$FAIL_IO_LIB "$mpiexec" -n 2 "$prog" prealloc-sync "$file" 2>&1)
        echo "$out"
        echo "$out" | grep -q "lifecycle prealloc-sync: the sync failed" || {
            echo "MPI_File_sync after MPI_File_preallocate did not report the file's failed fsync (NVCACHE_ENABLE=$enable)"
            exit 1
        }
    done
    ;;
shrink-crash)
    [ -n "${FAIL_IO_LIB:-}" ] || { echo "FAIL_IO_LIB is not set"; exit 1; }
    for point in ftruncated:after ftruncate:before fsync:before none:after; do
        call=${point%%:*} want=${point##*:}
        out=$(KILL_PATH=$(basename "$file") KILL_CALL=$call LD_PRELOAD=$FAIL_IO_LIB "$mpiexec" -n 2 "$prog" shrink-crash "$file" 2>&1)
        st=$?
        rm -f "$file.armed"
        echo "$out"
        if [ "$call" = none ]; then
            [ $st -eq 0 ] || { echo "the shrink or a call around it failed"; exit 1; }
        else
            echo "$out" | grep -q "SIGKILL at $call" || { echo "no rank was killed at $call"; exit 1; }
            recover_all || exit 1
        fi
        [ -z "$(parts)" ] || { echo "parts left after the recovery: $(parts)"; exit 1; }
        got=$("$prog" shrink-crash-verify "$file")
        echo "$got"
        echo "$got" | grep -q ": $want " || { echo "killed at $call: the file is not as $want the shrink"; exit 1; }
    done
    ;;
bad-header)
    # offsets in struct nvc_part_hdr (nvcache_internal.h): stripe at 40, bitmap_off at 72
    poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
    zero8='\0\0\0\0\0\0\0\0' far='\0\0\0\0\0\1\0\0'
    # (47: the stripe's top byte; a stripe with its high bit set maps the part's bytes past any
    # file offset, which wrapped onto other parts' blocks.)
    for damage in "40 $zero8 stripe" "72 $far bitmap" "47 \200 stripe-top-bit"; do
        set -- $damage
        "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
        wait_job_gone >/dev/null
        part=$(parts)
        poke "$part" "$1" "$2"
        out=$("$recover" --dir "$NVCACHE_DIR" 2>&1)
        rc=$?
        echo "$out"
        [ $rc -eq 1 ] || { echo "recovery of a part with a damaged $3 header field: rc $rc, expected 1"; exit 1; }
        echo "$out" | grep -q "corrupt header" || { echo "recovery did not say the header is damaged"; exit 1; }
        [ -e "$part" ] || { echo "the damaged part was removed"; exit 1; }
        out=$("$mpiexec" -n 1 "$prog" sync-close "$file.other" y 2>&1)
        rc=$?
        echo "$out"
        [ $rc -eq 0 ] || { echo "a job beside a part with a damaged $3 header field failed (rc $rc)"; exit 1; }
        rm -f "$part" "$file.other"
        recover_once >/dev/null || { echo "recovery after the damaged part was removed failed"; exit 1; }
    done
    # cut after its creation (longer than its first two pages, shorter than its layout): its
    # synced dirty pages may be the only copy: kept and reported, not removed as "incomplete"
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    part=$(parts)
    truncate -s 12288 "$part"
    out=$("$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 1 ] || { echo "recovery of a truncated part: rc $rc, expected 1"; exit 1; }
    [ -e "$part" ] || { echo "the truncated part was removed"; exit 1; }
    rm -f "$part"
    recover_once >/dev/null || { echo "recovery after the truncated part was removed failed"; exit 1; }
    # creation cut short: the header page only (the file is extended to its layout after it)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    part=$(parts)
    truncate -s 4096 "$part"
    : >"$(dirname "$part")/nvcache-00000000000000ff-0000000000000001-p0.part"
    out=$("$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || { echo "recovery of parts whose creation was cut short failed (rc $rc)"; exit 1; }
    [ -z "$(parts)" ] || { echo "parts whose creation was cut short were left: $(parts)"; exit 1; }
    ;;
big)
    "$mpiexec" -n 1 "$prog" big "$file" kill && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" big-verify "$file" || exit 1
    ;;
live)
    rm -f "$file.ready" "$file.go"
    # 8 KiB stripes over the two nodes: the first sync's blocks live in one part, the second's in
    # the other, so the open in between falls after one part's last write and before the other's.
    NVCACHE_STRIPE=8192 "$mpiexec" -n 2 "$prog" live "$file" &
    job=$!
    for i in $(seq 300); do [ -e "$file.ready" ] && break; sleep 0.1; done
    [ -e "$file.ready" ] || { echo "the job did not reach its first sync"; touch "$file.go"; wait $job; exit 1; }
    out=$(recover_once 2>&1)
    echo "$out"
    # Another job opens the file for writing while this one runs, and writes nothing: the running
    # job's later writes are still the newest, and recovery must write them back.
    "$mpiexec" -n 1 "$prog" open-close "$file" || { echo "the job opening the file failed"; touch "$file.go"; exit 1; }
    touch "$file.go"
    wait $job && { echo "expected the ranks to be killed"; exit 1; }
    recover_all || exit 1
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" live-verify "$file" || exit 1
    echo "$out" | grep -q "still running" || { echo "nvcache-recover did not say it skipped the running job"; exit 1; }
    echo "$out" | grep -q "still holds data not in the files: [1-9][0-9]* part(s) of running jobs" ||
        { echo "nvcache-recover did not end saying the directory still holds the running job's part"; exit 1; }
    ;;
pid-reuse)
    "$mpiexec" -n 1 "$prog" sync-kill "$file" x && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    job=$(basename "$(parts)" | sed 's/^nvcache-\([0-9a-f]*\)-.*/\1/')
    mbox=nvcache-$job-n0
    sleep 60 &
    holder=$!
    "$RECOVER_SIZES" creator "$mbox" $holder || { kill $holder; exit 1; }
    out=$(recover_once 2>&1)
    rc=$?
    kill $holder
    echo "$out"
    [ $rc -eq 0 ] || { echo "recovery failed"; exit 1; }
    echo "$out" | grep -q "still running" && { echo "a dead job was taken for running by its manager's reused PID"; exit 1; }
    [ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
    "$prog" has "$file" x || { echo "the synced bytes are not in the file"; exit 1; }
    rm -f "/dev/shm/$mbox"
    ;;
live-ns)
    export NVCACHE_DIR=$dir/nvram-live-ns
    rm -rf "$NVCACHE_DIR" "$file.ready" "$file.go"
    unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /dev/shm && exec "$@"' sh \
        # 8 KiB stripes over the two nodes: the first sync's blocks live in one part, the second's in
    # the other, so the open in between falls after one part's last write and before the other's.
    NVCACHE_STRIPE=8192 "$mpiexec" -n 2 "$prog" live "$file" &
    job=$!
    for i in $(seq 300); do [ -e "$file.ready" ] && break; sleep 0.1; done
    [ -e "$file.ready" ] || { echo "the job did not reach its first sync"; touch "$file.go"; wait $job; exit 1; }
    out=$("$recover" --dir "$NVCACHE_DIR" 2>&1)
    echo "$out"
    touch "$file.go"
    wait $job && { echo "expected the ranks to be killed"; exit 1; }
    for i in $(seq 100); do
        out2=$("$recover" --dir "$NVCACHE_DIR" 2>&1) && ! echo "$out2" | grep -q "still running" && break
        sleep 0.2
    done
    echo "$out2"
    [ -z "$(ls "$NVCACHE_DIR")" ] || { echo "left in NVCACHE_DIR after recovery: $(ls "$NVCACHE_DIR")"; exit 1; }
    rmdir "$NVCACHE_DIR"
    "$prog" live-verify "$file" || exit 1
    echo "$out" | grep -q "still running" || { echo "nvcache-recover did not see the job in the other namespace running"; exit 1; }
    ;;
page-share|page-share-kill|page-share-strided|page-share-strided-kill)
    end=close
    case "$case" in *-kill) need_xattrs; end=sync-kill ;; esac
    strided= offb=100
    case "$case" in *-strided*) strided=strided offb=8 ;; esac
    rm -f "$file" "$file.ready-A" "$file.go"
    head -c 8192 /dev/zero | tr '\0' o >"$file"
    "$mpiexec" -n 1 "$prog" page-share "$file" 0 A wait $end $strided &
    first=$!
    for i in $(seq 600); do [ -e "$file.ready-A" ] && break; sleep 0.1; done
    [ -e "$file.ready-A" ] || { echo "the first job did not write"; kill $first; exit 1; }
    "$mpiexec" -n 1 "$prog" page-share "$file" $offb B nowait close $strided || { touch "$file.go"; echo "the second job failed"; exit 1; }
    touch "$file.go"
    if [ $end = close ]; then
        wait $first || { echo "the first job failed"; exit 1; }
    else
        wait $first && { echo "expected the first job to be killed"; exit 1; }
        wait_job_gone >/dev/null
        recover_once >/dev/null 2>&1 && { echo "recovery wrote the dead job's part over the later job's file"; exit 1; }
        [ -n "$(parts)" ] || { echo "the dead job's part was removed although it was kept"; exit 1; }
        "$recover" --dir "$NVCACHE_DIR" --force || exit 1
    fi
    rm -f "$file.ready-A" "$file.go"
    "$prog" page-share-verify "$file" $strided || exit 1
    ;;
page-share-nfs)
    # as page-share-strided, both jobs through ROMIO's NFS driver (the `nfs:` prefix), which
    # takes a POSIX lock around every read and write
    rm -f "$file" "$file.ready-A" "$file.go"
    head -c 8192 /dev/zero | tr '\0' o >"$file"
    "$mpiexec" -n 1 "$prog" page-share "nfs:$file" 0 A wait close strided &
    first=$!
    for i in $(seq 600); do [ -e "$file.ready-A" ] && break; sleep 0.1; done
    [ -e "$file.ready-A" ] || { echo "the first job did not write"; kill $first; exit 1; }
    timeout 30 "$mpiexec" -n 1 "$prog" page-share "nfs:$file" 8 B nowait close strided ||
        { touch "$file.go"; echo "the second job failed or hung"; exit 1; }
    touch "$file.go"
    wait $first || { echo "the first job failed"; exit 1; }
    rm -f "$file.ready-A" "$file.go"
    "$prog" page-share-verify "$file" strided || exit 1
    ;;
page-share-locked)
    # a dead job's strided rows over 256 pages, recovered while another program holds a POSIX
    # lock over the whole file: no merge may wait for it (0.1 s each made this 26 s)
    rows=65536
    rm -f "$file"
    head -c $((16 * rows)) /dev/zero | tr '\0' o >"$file"
    "$mpiexec" -n 1 "$prog" page-share "$file" 0 A nowait sync-kill strided:$rows && { echo "expected the rank to be killed"; exit 1; }
    wait_job_gone >/dev/null
    hold_lock
    start=$(date +%s%N)
    out=$(timeout 30 "$recover" --dir "$NVCACHE_DIR" 2>&1)
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    kill $holder
    wait $holder 2>/dev/null
    rm -f "$file.ready"
    echo "$out"
    echo "recovery took $ms ms"
    [ $rc -eq 0 ] || { echo "recovery failed (rc $rc)"; exit 1; }
    [ $ms -lt 5000 ] || { echo "recovery waited for the other program's lock"; exit 1; }
    python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
sys.exit(0 if d == (b"AAAA" + b"o" * 12) * n else 1)' "$file" $rows ||
        { echo "the recovered rows are wrong"; exit 1; }
    ;;
page-share-together)
    # 5 times: a fresh file, both jobs write their rows, then close at once
    rows=262144
    for r in 1 2 3 4 5; do
        rm -f "$file" "$file.ready-A" "$file.ready-B" "$file.go"
        head -c $((16 * rows)) /dev/zero | tr '\0' o >"$file"
        "$mpiexec" -n 1 "$prog" page-share "$file" 0 A wait close strided:$rows &
        a=$!
        "$mpiexec" -n 1 "$prog" page-share "$file" 8 B wait close strided:$rows &
        b=$!
        for i in $(seq 600); do [ -e "$file.ready-A" ] && [ -e "$file.ready-B" ] && break; sleep 0.1; done
        touch "$file.go"
        wait $a || { echo "run $r: the first job failed"; exit 1; }
        wait $b || { echo "run $r: the second job failed"; exit 1; }
        "$prog" page-share-verify "$file" strided:$rows || { echo "run $r of 5"; exit 1; }
    done
    rm -f "$file.ready-A" "$file.ready-B" "$file.go"
    ;;
shrink)
    "$mpiexec" -n 2 "$prog" shrink write "$file" && { echo "expected the ranks to be killed"; exit 1; }
    [ -n "$(parts)" ] || { echo "no parts left by the killed job"; exit 1; }
    recover_all || exit 1
    "$prog" shrink verify "$file" || exit 1
    ;;
*)
    echo "unknown case $case"; exit 2 ;;
esac
cleanup
exit 0
