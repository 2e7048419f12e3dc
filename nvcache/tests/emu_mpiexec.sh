#!/bin/bash
# emu_mpiexec.sh: runs an MPI job over emulated hosts on this machine, for tests of nvcache across
# hosts. Each host's ranks live in a private mount namespace with a /dev/shm of their own
# (emu_ssh.sh, the launcher's remote shell), and MPI itself sees separate hosts
# (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) splits by them): ranks of different hosts share
# nothing but MPI, so any cross-host shared-memory access of nvcache fails.
#
# usage: emu_mpiexec.sh -n NP COMMAND...            a drop-in for mpiexec: NP ranks, in blocks,
#                                                     on hosts h0..h{N-1}
#        emu_mpiexec.sh --each-host COMMAND...       COMMAND once in each host's namespace (e.g.
#                                                     nvcache-recover after a crash)
# Environment: NVCACHE_EMU_MPIEXEC (the real launcher, mpiexec.mpich or mpiexec.openmpi),
# NVCACHE_EMU_HOSTS (N, default 2), NVCACHE_EMU_ROOT (the folder holding each host's /dev/shm;
# default: made and removed here; given: kept, for --each-host later). Between hosts MPI itself
# uses TCP (Open MPI: btl tcp) or what UCX picks among shared memory and TCP (MPICH:
# UCX_TLS=sm,tcp,self; with tcp alone MPICH 4.0.2's MPI_Finalize hung in 3-5 of 15 runs of a
# plain MPI program, nvcache or not). Open MPI's daemons skip sharing their hwloc topology through
# /dev/shm (rtc ^hwloc): a daemon of an emulated host crashed writing it in 1 of about 20 starts.
set -u
here=$(cd "$(dirname "$0")" && pwd)
hosts=${NVCACHE_EMU_HOSTS:-2}
if [ "${1:-}" = --each-host ]; then
    shift
    [ -n "${NVCACHE_EMU_ROOT:-}" ] || { echo "emu_mpiexec.sh --each-host: NVCACHE_EMU_ROOT is not set" >&2; exit 2; }
    rc=0
    for h in $(seq 0 $((hosts - 1))); do
        "$here/emu_ssh.sh" "h$h" "$(printf '%q ' "$@")" || rc=1
    done
    exit $rc
fi
mpiexec=${NVCACHE_EMU_MPIEXEC:?emu_mpiexec.sh: NVCACHE_EMU_MPIEXEC (the real mpiexec) is not set}
[ "${1:-}" = -n ] || { echo "usage: emu_mpiexec.sh -n NP COMMAND..." >&2; exit 2; }
np=$2
shift 2
own_root=
if [ -z "${NVCACHE_EMU_ROOT:-}" ]; then
    own_root=$(mktemp -d /dev/shm/nvcache-emu-XXXXXX)
    export NVCACHE_EMU_ROOT=$own_root
    # The hosts' /dev/shm goes however the job ends (an interrupt reaches the launcher and the
    # ranks too; the trap runs once they are gone).
    trap 'rm -rf "$own_root"' EXIT
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
fi
per=$(((np + hosts - 1) / hosts))
list=
for h in $(seq 0 $((hosts - 1))); do
    mkdir -p "$NVCACHE_EMU_ROOT/h$h"
    list="$list${list:+,}h$h:$per"
done
case $(basename "$(readlink -f "$(command -v "$mpiexec")")") in
    *openmpi* | orterun)
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        "$mpiexec" --mca plm_rsh_agent "$here/emu_ssh.sh" --mca btl tcp,self --mca pml ob1 --mca rtc ^hwloc --host "$list" \
            -n "$np" "$@" ;;
    *)
        UCX_TLS=${UCX_TLS:-sm,tcp,self} "$mpiexec" -launcher ssh -launcher-exec "$here/emu_ssh.sh" -hosts "$list" \
            -n "$np" "$@" ;;
esac
exit $?
