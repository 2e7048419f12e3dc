#!/bin/bash
# Crash test: ranks are SIGKILLed after MPI_File_sync; nvcache-recover must restore every synced byte.
# usage: crash.sh MPIEXEC NP CRASH_BIN RECOVER_BIN DATA_DIR   (NVCACHE_DIR and NVCACHE_RANKS_PER_NODE from env;
# CRASH_MODE=abort ends the job in MPI_Abort instead of SIGKILL)
# After recovery neither parts nor the job's mailboxes in /dev/shm may be left.
set -u
mpiexec=$1 np=$2 crash=$3 recover=$4 dir=$5
mode=${CRASH_MODE:-write}
file=$dir/crash-np$np.dat
rm -f "$file"; rm -rf "$NVCACHE_DIR"
mailboxes() { ls /dev/shm | grep -E '^nvcache-[0-9a-f]{16}-n[0-9]+$' | sort; }
before=$(mailboxes)
"$mpiexec" -n "$np" "$crash" "$mode" "$file"
rc=$?
[ $rc -ne 0 ] || { echo "expected the ranks to be killed, got rc 0"; exit 1; }
ls "$NVCACHE_DIR"/*.part >/dev/null 2>&1 || { echo "no NVRAM parts left in $NVCACHE_DIR"; exit 1; }
# before recovery the real file must not have the data (it lives only in NVRAM)
"$crash" verify "$file" "$np" >/dev/null 2>&1 && echo "note: file already complete before recovery"
"$recover" --dir "$NVCACHE_DIR" || exit 1
ls "$NVCACHE_DIR"/*.part >/dev/null 2>&1 && { echo "parts not removed after recovery"; exit 1; }
left=$(comm -13 <(echo "$before") <(mailboxes))
[ -z "$left" ] || { echo "mailboxes left in /dev/shm after recovery: $left"; exit 1; }
"$crash" verify "$file" "$np" || exit 1
rm -f "$file"
rmdir "$NVCACHE_DIR"
