# Sourced by the crash and recovery test scripts (crash.sh, recover_cases.sh) after they set
# $mpiexec and $recover: where a job's NVRAM lives and how nvcache-recover reaches it.
# Emulated hosts (MPIEXEC is emu_mpiexec.sh, NVCACHE_EMU_MPIEXEC set): every host keeps its parts
# and mailboxes in its own /dev/shm (NVCACHE_DIR under /dev/shm), and recovery runs on each host.
if [ -n "${NVCACHE_EMU_MPIEXEC:-}" ]; then
    export NVCACHE_EMU_ROOT
    NVCACHE_EMU_ROOT=$(mktemp -d /dev/shm/nvcache-emu-XXXXXX)
    trap 'rm -rf "$NVCACHE_EMU_ROOT"' EXIT
    shms() { ls -d "$NVCACHE_EMU_ROOT"/h*; }
    recover_once() { "$mpiexec" --each-host "$recover" --dir "$NVCACHE_DIR"; }
    dry_run_all() { "$mpiexec" --each-host "$recover" --dir "$NVCACHE_DIR" --dry-run; }
else
    rm -rf "$NVCACHE_DIR"
    shms() { echo /dev/shm; }
    recover_once() { "$recover" --dir "$NVCACHE_DIR"; }
    dry_run_all() { "$recover" --dir "$NVCACHE_DIR" --dry-run; }
fi
# Recovery once the job is gone: nvcache-recover skips the parts of a job with a live process,
# and Open MPI's mpiexec may return while a killed rank is still being torn down (up to 20 s:
# seconds on a loaded machine).
recover_all() {
    local out rc
    for _ in $(seq 100); do
        out=$(recover_once 2>&1)
        rc=$?
        echo "$out"
        [ $rc -eq 0 ] || return $rc
        echo "$out" | grep -q "still running" || return 0
        sleep 0.2
    done
    echo "the job's processes did not end"
    return 1
}
# The job mailboxes and the parts in every host's /dev/shm.
mailboxes() { for s in $(shms); do ls "$s" | grep -E '^nvcache-[0-9a-f]{16}-n[0-9]+$' | sed "s|^|$s/|"; done | sort; }
parts() { for s in $(shms); do ls "$s${NVCACHE_DIR#/dev/shm}"/*.part 2>/dev/null; done; }
# Removes every host's (empty) NVCACHE_DIR.
remove_nvram_dirs() { for s in $(shms); do rmdir "$s${NVCACHE_DIR#/dev/shm}" 2>/dev/null; done; }
# One host: waits (up to 20 s) until no process of a killed job is left, as recover_all does, and
# prints nvcache-recover's last dry run.
wait_job_gone() {
    local dry
    for _ in $(seq 100); do
        dry=$("$recover" --dir "$NVCACHE_DIR" --dry-run 2>&1)
        echo "$dry" | grep -q "still running" || break
        sleep 0.2
    done
    echo "$dry"
}
# Every host: waits (up to 20 s) until no process of a killed job is left (a restarted job's
# MPI_Init leaves a live job's parts alone, as nvcache-recover does).
wait_job_gone_all() {
    for _ in $(seq 100); do
        dry_run_all 2>&1 | grep -q "still running" || return 0
        sleep 0.2
    done
    echo "the job's processes did not end"
    return 1
}
