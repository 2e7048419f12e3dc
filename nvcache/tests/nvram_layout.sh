# Sourced by the crash and recovery test scripts (crash.sh, recover_cases.sh) after they set
# $mpiexec and $recover: where a job's NVRAM lives and how nvcache-recover reaches it.
# Emulated hosts (MPIEXEC is emu_mpiexec.sh, NVCACHE_EMU_MPIEXEC set): every host keeps its parts
# and mailboxes in its own /dev/shm (NVCACHE_DIR under /dev/shm), and recovery runs on each host.
if [ -n "${NVCACHE_EMU_MPIEXEC:-}" ]; then
    export NVCACHE_EMU_ROOT
    NVCACHE_EMU_ROOT=$(mktemp -d /dev/shm/nvcache-emu-XXXXXX)
    trap 'rm -rf "$NVCACHE_EMU_ROOT"' EXIT
    shms() { ls -d "$NVCACHE_EMU_ROOT"/h*; }
    recover_all() { "$mpiexec" --each-host "$recover" --dir "$NVCACHE_DIR"; }
else
    rm -rf "$NVCACHE_DIR"
    shms() { echo /dev/shm; }
    recover_all() { "$recover" --dir "$NVCACHE_DIR"; }
fi
# The job mailboxes and the parts in every host's /dev/shm.
mailboxes() { for s in $(shms); do ls "$s" | grep -E '^nvcache-[0-9a-f]{16}-n[0-9]+$' | sed "s|^|$s/|"; done | sort; }
parts() { for s in $(shms); do ls "$s${NVCACHE_DIR#/dev/shm}"/*.part 2>/dev/null; done; }
# Removes every host's (empty) NVCACHE_DIR.
remove_nvram_dirs() { for s in $(shms); do rmdir "$s${NVCACHE_DIR#/dev/shm}" 2>/dev/null; done; }
