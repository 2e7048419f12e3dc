#!/bin/bash
# Two files of different file systems with the same inode number, in one job across emulated hosts:
# each open must cache (or pass) its own file. The job's file table keys files across hosts by
# inode and creation time (device numbers differ between one file system's mounts on different
# hosts); keyed by the inode alone, the second open was taken for a second handle of the first
# file and drained the first file's cache into the second (the first ended empty).
# usage: same_inode.sh EMU_MPIEXEC LIFECYCLE DIR   (in a private mount namespace: two tmpfs under DIR)
set -u
if [ "${SAME_INODE_INNER:-}" != 1 ]; then
    unshare --mount --propagation private true 2>/dev/null || { echo "SKIP: no private mount namespace here"; exit 77; }
    exec env SAME_INODE_INNER=1 unshare --mount --propagation private "$0" "$@"
fi
emu=$1 lifecycle=$2 dir=$3/same-inode
mkdir -p "$dir/a" "$dir/b"
mount -t tmpfs nvc-a "$dir/a" && mount -t tmpfs nvc-b "$dir/b" || { echo "cannot mount tmpfs"; exit 1; }
trap 'umount "$dir/a" "$dir/b" 2>/dev/null; rm -rf "$dir"' EXIT
touch "$dir/a/f"
# Creation times come from a coarse clock: make the second file's differ. Each try makes the
# second file system afresh, so that its file is again its first (a file made again in the same
# file system took the next inode number, and the case skipped about every other run).
for _ in $(seq 100); do
    sleep 0.01
    touch "$dir/b/f"
    [ "$(stat -c %w "$dir/a/f")" != "$(stat -c %w "$dir/b/f")" ] && break
    umount "$dir/b" && mount -t tmpfs nvc-b "$dir/b" || { echo "cannot mount tmpfs"; exit 1; }
done
[ "$(stat -c %w "$dir/a/f")" != "$(stat -c %w "$dir/b/f")" ] || { echo "the two files kept one creation time"; exit 1; }
ia=$(stat -c %i "$dir/a/f") ib=$(stat -c %i "$dir/b/f")
if [ "$ia" != "$ib" ]; then
    # (kernels before 5.9 numbered every tmpfs's inodes from one counter)
    echo "SKIP: the two tmpfs gave their first files inodes $ia and $ib"
    exit 77
fi
"$emu" -n 4 "$lifecycle" two-files "$dir/a/f" "$dir/b/f"
