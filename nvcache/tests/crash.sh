#!/bin/bash
# Crash test: ranks are SIGKILLed after MPI_File_sync; nvcache-recover must restore every synced byte.
# usage: crash.sh MPIEXEC NP CRASH_BIN RECOVER_BIN DATA_DIR   (NVCACHE_DIR and NVCACHE_RANKS_PER_NODE from env;
# CRASH_MODE=abort ends the job in MPI_Abort instead of SIGKILL)
# After recovery neither parts nor the job's mailboxes in /dev/shm may be left.
# Emulated hosts (MPIEXEC is emu_mpiexec.sh): see nvram_layout.sh.
# CRASH_RECOVERY=restart: instead of nvcache-recover, the job is started again (crash restart) and
# must read every synced byte back through nvcache; its MPI_Init recovers. CRASH_RECOVERY=restart-twice:
# two such jobs started at once.
# CRASH_NAME=relative: the job opens the file by a name relative to its working directory (DATA_DIR)
# and recovery runs in /; CRASH_NAME=prefix: the job opens "ufs:" + the path (ROMIO's prefix).
set -u
mpiexec=$1 np=$2 crash=$3 recover=$4 dir=$5
mode=${CRASH_MODE:-write}
file=$dir/crash-np$np.dat
case ${CRASH_NAME:-} in
relative) name=crash-np$np.dat ;;
prefix) name=ufs:$file ;;
*) name=$file ;;
esac
rm -f "$file"
. "$(dirname "$0")/nvram_layout.sh"
before=$(mailboxes)
(cd "$dir" && "$mpiexec" -n "$np" "$crash" "$mode" "$name")
rc=$?
[ $rc -ne 0 ] || { echo "expected the ranks to be killed, got rc 0"; exit 1; }
[ -n "$(parts)" ] || { echo "no NVRAM parts left in $NVCACHE_DIR"; exit 1; }
echo "parts before recovery: $(parts | wc -l)"
# before recovery the real file must not have the data (it lives only in NVRAM)
"$crash" verify "$file" "$np" >/dev/null 2>&1 && echo "note: file already complete before recovery"
if [ "${CRASH_RECOVERY:-tool}" = restart-twice ]; then
    # Two jobs restarted at once on the same NVCACHE_DIR: their MPI_Init recoveries take turns on
    # the directory's lock, so one writes the dead job's parts back and the other finds none left;
    # both must read every synced byte.
    (cd / && wait_job_gone_all) || exit 1
    out1=$(mktemp) out2=$(mktemp)
    (cd "$dir" && "$mpiexec" -n "$np" "$crash" restart "$name" >"$out1" 2>&1) &
    pid1=$!
    (cd "$dir" && "$mpiexec" -n "$np" "$crash" restart "$name" >"$out2" 2>&1) &
    pid2=$!
    wait $pid1
    rc1=$?
    wait $pid2
    rc2=$?
    echo "--- first job"; cat "$out1"; echo "--- second job"; cat "$out2"
    recovered=$(cat "$out1" "$out2" | grep -c "MPI_Init: recovered $file: ")
    rm -f "$out1" "$out2"
    [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || { echo "a restarted job did not read the synced bytes back (rc $rc1, $rc2)"; exit 1; }
    [ "$recovered" -ge 1 ] || { echo "neither restarted job's MPI_Init reported the recovery"; exit 1; }
elif [ "${CRASH_RECOVERY:-tool}" = restart ]; then
    # No nvcache-recover: the job is started again and must read every synced byte (its MPI_Init
    # writes the dead job's parts back on every host), as it would from the file under plain MPI-IO.
    (cd / && wait_job_gone_all) || exit 1
    out=$(cd "$dir" && "$mpiexec" -n "$np" "$crash" restart "$name" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || { echo "the restarted job did not read the synced bytes back"; exit 1; }
    echo "$out" | grep -q "MPI_Init: recovered $file: " || { echo "the restarted job's MPI_Init reported no recovery"; exit 1; }
else
    (cd / && recover_all) || exit 1
fi
[ -z "$(parts)" ] || { echo "parts not removed after recovery"; exit 1; }
left=$(comm -13 <(echo "$before") <(mailboxes))
[ -z "$left" ] || { echo "mailboxes left in /dev/shm after recovery: $left"; exit 1; }
"$crash" verify "$file" "$np" || exit 1
rm -f "$file"
remove_nvram_dirs
exit 0
