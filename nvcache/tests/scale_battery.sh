#!/bin/bash
# scale_battery.sh: nvcache's byte-identity and crash batteries at a rank count CTest does not use
# (CTest runs 1-4 ranks on 2 cores), for machines with cores to spare: the access patterns against
# plain MPI-IO on one host and over emulated hosts, the consistency and multi-communicator suites,
# reopen through the managers, crash + nvcache-recover on one host and across hosts, and Cannon
# with and without nvcache (its checksum must not change).
#
# usage: scale_battery.sh [NP [HOSTS]]     NP ranks (default 16; Cannon needs a square),
#                                          HOSTS emulated hosts (default 4)
# Environment: NVCACHE_BUILD (default nvcache/build beside this script), MPIEXEC (default
# mpiexec.mpich; mpiexec.openmpi with an Open MPI build), SCALE_LOG (folder for each test's log,
# default a temporary one, removed), SCALE_DATA (the files' folder, default a temporary one).
# Prints one line per test (PASS/FAIL, seconds), Cannon's two CSV rows, and exits 1 if any failed.
set -u
np=${1:-16}
hosts=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
build=${NVCACHE_BUILD:-$here/../build}
mpiexec=${MPIEXEC:-mpiexec.mpich}
emu=$here/emu_mpiexec.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=${SCALE_LOG:-$tmp/log}
data=${SCALE_DATA:-$tmp/data}
mkdir -p "$log" "$data"
lib=$(ls "$build"/libnvcache-*.so 2>/dev/null | head -1)
[ -x "$build/tests/patterns" ] && [ -n "$lib" ] || {
    echo "scale_battery.sh: no nvcache build with tests in $build (make build-nvcache)" >&2
    exit 2
}
failed=0

# run NAME HOSTS COMMAND...: HOSTS 0 runs on this host alone.
run() {
    local name=$1 h=$2 rc start
    shift 2
    start=$(date +%s%N)
    (
        export NVCACHE_DIR=/dev/shm/nvcache-scale-$$-$name NVCACHE_RANKS_PER_NODE=0
        if [ "$h" = 0 ]; then
            unset NVCACHE_EMU_HOSTS NVCACHE_EMU_MPIEXEC
        else
            export NVCACHE_EMU_HOSTS=$h NVCACHE_EMU_MPIEXEC=$mpiexec
        fi
        timeout 300 "$@"
        rc=$?
        rm -rf "$NVCACHE_DIR"
        exit $rc
    ) >"$log/$name.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        printf '%-36s PASS %6.1f s\n' "$name" "$((($(date +%s%N) - start) / 1000000))e-3"
    else
        printf '%-36s FAIL (exit %d) %6.1f s; last lines of %s:\n' "$name" $rc \
            "$((($(date +%s%N) - start) / 1000000))e-3" "$log/$name.log"
        tail -n 5 "$log/$name.log" | sed 's/^/    /'
        failed=1
    fi
}

tag=np${np}_hosts$hosts
run "patterns_np${np}_1host" 0 "$mpiexec" -n "$np" "$build/tests/patterns" "$data"
run "patterns_$tag" "$hosts" "$emu" -n "$np" "$build/tests/patterns" "$data"
run "consistency_$tag" "$hosts" "$emu" -n "$np" "$build/tests/consistency" "$data"
run "multicomm_$tag" "$hosts" "$emu" -n "$np" "$build/tests/multicomm" "$data"
NVCACHE_DIRECT=0 run "reopen_${tag}_managers" "$hosts" "$emu" -n "$np" "$build/tests/reopen" "$data/reopen.dat" 12
run "crash_recover_np${np}_1host" 0 "$here/crash.sh" "$mpiexec" "$np" "$build/tests/crash" \
    "$build/nvcache-recover" "$data"
run "crash_recover_$tag" "$hosts" "$here/crash.sh" "$emu" "$np" "$build/tests/crash" \
    "$build/nvcache-recover" "$data"
side=$(awk -v n="$np" 'BEGIN { s = int(sqrt(n) + 0.5); print (s * s == n) ? s : 0 }')
if [ "$side" -gt 0 ]; then
    for mode in plain nvcache; do
        pre=()
        [ $mode = nvcache ] && pre=(env "LD_PRELOAD=$lib")
        run "cannon_${tag}_$mode" "$hosts" "$emu" -n "$np" "${pre[@]}" "$build/cannon" -c -v \
            -n $((240 * side)) -k 4 -d "$data"
        grep -h ',' "$log/cannon_${tag}_$mode.log" | grep -v '^app,' | tail -n 1
    done
    a=$(grep -h ',' "$log/cannon_${tag}_plain.log" | grep -v '^app,' | tail -n 1 | cut -d, -f8-9)
    b=$(grep -h ',' "$log/cannon_${tag}_nvcache.log" | grep -v '^app,' | tail -n 1 | cut -d, -f8-9)
    if [ -z "$a" ] || [ "$a" != "$b" ]; then
        echo "cannon: triangles,checksum differ with nvcache ($b) from plain ($a)"
        failed=1
    fi
else
    echo "cannon: skipped ($np ranks is not a square)"
fi
exit $failed
