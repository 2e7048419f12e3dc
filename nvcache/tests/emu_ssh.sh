#!/bin/bash
# emu_ssh.sh: the "remote shell" of emulated hosts (emu_mpiexec.sh). MPI launchers start their
# per-host daemon with `ssh [OPTIONS] HOST COMMAND...`; this runs COMMAND on this machine, in a
# private mount namespace whose /dev/shm is HOST's own folder $NVCACHE_EMU_ROOT/HOST: processes
# of different emulated hosts share no /dev/shm file (nvcache's mailboxes and parts, MPI's own
# shared memory), only MPI's network channel.
set -u
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    case $1 in -o | -p | -l | -i | -F) shift 2 ;; *) shift ;; esac
done
host=$1
shift
[ -n "${NVCACHE_EMU_ROOT:-}" ] || { echo "emu_ssh.sh: NVCACHE_EMU_ROOT is not set" >&2; exit 2; }
mkdir -p "$NVCACHE_EMU_ROOT/$host"
# ssh hands the remote shell one command line: so does this. Each host also gets its own TMPDIR
# (launcher daemons of one machine would otherwise share, and remove, one session folder).
exec unshare --mount --propagation private sh -c \
    'mount --bind "$0" /dev/shm && mkdir -p /dev/shm/tmp && TMPDIR=/dev/shm/tmp exec sh -c "$1"' \
    "$NVCACHE_EMU_ROOT/$host" "$*"
