#!/bin/bash
# Cannon's algorithm under two labels in back-to-back pairs (A B B A A B ...), one CSV line per
# run: figure,label,cannon,n,procs,power,delete_on_close,total_s,io_s,triangles,checksum.
# run_bench.sh uses it for its 4-rank figures; on a machine with more cores run it directly, e.g.
# paper Fig. 8 with 16 ranks in 4 nodes of 4:
#   cannon_pairs.sh nvcache/build fig8 plain nvcache 16 4 -- -c -n 2880 -k 2 -d /tmp
# usage: cannon_pairs.sh BUILD_DIR FIGURE LABEL_A LABEL_B NP RANKS_PER_NODE [VAR=VALUE ...] -- CANNON_ARGS...
# Labels: plain (NVCACHE_ENABLE=0: every MPI-IO call forwarded to MPICH unchanged), nvcache,
# nvcache-async (asynchronous write replies). Environment: NVCACHE_BENCH_REPEAT (pairs, default 7),
# NVCACHE_BENCH_BIND (mpiexec -bind-to level, default core; empty: the kernel places ranks).
set -u
[ $# -ge 7 ] || { echo "usage: $0 BUILD_DIR FIGURE LABEL_A LABEL_B NP RANKS_PER_NODE [VAR=VALUE ...] -- CANNON_ARGS..." >&2; exit 2; }
build=$(cd "$1" && pwd) fig=$2 la=$3 lb=$4 np=$5 rpn=$6
shift 6
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "$0: missing -- before the cannon arguments" >&2; exit 2; }
shift
for label in "$la" "$lb"; do
    case $label in plain | nvcache | nvcache-async) ;;
        *) echo "$0: unknown label $label (plain, nvcache, nvcache-async)" >&2; exit 2 ;;
    esac
done
repeat=${NVCACHE_BENCH_REPEAT:-7}
bind=${NVCACHE_BENCH_BIND-core}
# The launcher of the MPI the build is for (mpiexec.mpich, mpiexec.openmpi), never the
# mpiexec alternative, which may belong to the other MPI.
mpiexec=${MPIEXEC:-$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")}
export NVCACHE_DIR=${NVCACHE_DIR:-/dev/shm/nvcache-bench-${USER:-user}}
for i in $(seq "$repeat"); do
    order="$la $lb"; [ $((i % 2)) = 0 ] && order="$lb $la"
    for label in $order; do
        e=("${envs[@]}")
        case $label in
            plain) e+=(NVCACHE_ENABLE=0) ;;
            nvcache) e+=(NVCACHE_ENABLE=1) ;;
            nvcache-async) e+=(NVCACHE_ENABLE=1 NVCACHE_REPLY=async) ;;
        esac
        env NVCACHE_RANKS_PER_NODE="$rpn" "${e[@]}" "$mpiexec" ${bind:+-bind-to "$bind"} -n "$np" \
            env LD_PRELOAD="$build/libnvcache.so" "$build/cannon" "$@" 2> >(grep -v 'yaksa' >&2) |
            sed "/^app,/d; s/^/$fig,$label,/"
    done
done
