#!/bin/sh
# mixed_env.sh MPIEXEC PATTERNS DIR: two ranks launched with different nvcache environments
# (`mpiexec -n 1 env A prog : -n 1 env B prog`, as a launcher may give them), each run the
# collective-write pattern of tests/patterns (which compares the file with plain MPI-IO's). Every
# job must finish (each hung before the ranks agreed on these settings in MPI_Init, or died of
# SIGBUS) with identical files, and say what it did where it overrides a rank's setting.
set -u
mpiexec=$1 prog=$2 dir=$3
failed=0
# case NAME EXPECTED-OUTPUT-REGEX|- ENV-OF-RANK-0 ENV-OF-RANK-1 (space-separated VAR=VALUE lists)
case_() {
    name=$1 expect=$2 a=$3 b=$4
    out=$(timeout 60 "$mpiexec" -n 1 env $a "$prog" "$dir" contig_coll : -n 1 env $b "$prog" "$dir" contig_coll 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$out" | tail -5
        echo "$name: the job failed or hung (exit status $rc)"
        failed=1
    elif [ "$expect" != - ] && ! echo "$out" | grep -Eq "$expect"; then
        echo "$out" | tail -5
        echo "$name: no line matching '$expect'"
        failed=1
    else
        echo "$name: ok"
    fi
}
case_ enable "NVCACHE_ENABLE differs across the ranks" NVCACHE_ENABLE=1 NVCACHE_ENABLE=0
case_ enable-reversed "NVCACHE_ENABLE differs across the ranks" NVCACHE_ENABLE=0 NVCACHE_ENABLE=1
case_ recover-uncached - "NVCACHE_ENABLE=0 NVCACHE_RECOVER=1" "NVCACHE_ENABLE=0 NVCACHE_RECOVER=0"
case_ thread-levels - TEST_THREAD_LEVEL=multiple TEST_THREAD_LEVEL=single
case_ thread-levels-reversed - TEST_THREAD_LEVEL=single TEST_THREAD_LEVEL=multiple
case_ slot-bytes-two-nodes "NVCACHE_SLOT_BYTES differs across the ranks" \
    "NVCACHE_RANKS_PER_NODE=1 NVCACHE_SLOT_BYTES=64K" "NVCACHE_RANKS_PER_NODE=1 NVCACHE_SLOT_BYTES=1M"
case_ slot-bytes-one-node "NVCACHE_SLOT_BYTES differs across the ranks" \
    "NVCACHE_RANKS_PER_NODE=0 NVCACHE_SLOT_BYTES=1M" "NVCACHE_RANKS_PER_NODE=0 NVCACHE_SLOT_BYTES=64K"
exit $failed
