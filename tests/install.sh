#!/bin/bash
# make install into a fresh prefix, then, with only that prefix on PATH for pmlab's tools:
#   * every command of README's "Using pmlab" block runs as printed (inputs it names are made
#     first; the `reproduce` synopsis line is skipped),
#   * nvcache-run runs an MPI-IO job through nvcache, nvcache-recover --help works,
#   * a C program builds against pmec with pkg-config and runs,
#   * an ISA-L program runs on the installed shim via LD_LIBRARY_PATH;
# then make uninstall must leave the prefix empty. Last, the same under a prefix with spaces,
# installed twice over (nvcache-run serves a job, a C program builds with pkg-config, and
# uninstall leaves that prefix empty too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -rf "$prefix"' EXIT
cd "$root"
make -s install PREFIX="$prefix" >/dev/null
export PATH="$prefix/bin:$PATH"
[ "$(command -v pmlab)" = "$prefix/bin/pmlab" ] || { echo "install: pmlab not first on PATH"; exit 1; }

# README's usage block, run in a scratch folder holding the inputs it names.
cd "$work"
cp -r "$prefix/share/pmlab/configs" configs
# the repository files it names, as installed
mkdir -p docs && cp -r "$prefix/share/pmlab/examples" docs/examples
cmp "$root/docs/examples/persist-epochs.txt" docs/examples/persist-epochs.txt
for i in $(seq 0 199); do printf '0x%x %s %d\n' $((i * 4160)) $([ $((i % 3)) = 0 ] && echo WRITE || echo READ) $((i * 10)); done > my.trace
pmlab trace gen --workload btree --ops 200 --out t.pmt 2>/dev/null
pmlab trace dump t.pmt > dump.txt
head -c 3000000 /dev/urandom > big.iso
commands=$(awk '/^## Using pmlab/{f=1} f && /^```sh/{b=1; next} b && /^```/{exit} b' "$root/README.md" |
    sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | sed 's/[[:space:]]\{2,\}#.*$//')
[ "$(echo "$commands" | grep -c '^pmlab ')" -ge 15 ] || { echo "install: README usage block not found"; exit 1; }
while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    case $cmd in
        "pmlab reproduce ["*) continue ;;                 # a synopsis, not a command
        target/release/*) (cd "$root" && eval "$cmd") >/dev/null 2>"$work/err" ;;
        *) eval "$cmd" >/dev/null 2>"$work/err" ;;
    esac || { echo "install: README command failed: $cmd"; cat "$work/err"; exit 1; }
done <<< "$commands"
echo "install: README usage commands ran ($(echo "$commands" | grep -c .) lines)"

# The installed nvcache tools.
nvcache-recover --help | grep -q "usage: nvcache-recover"
nvcache-run --help | grep -q "usage: nvcache-run"
# nvcache-run picks the library built for the job's MPI from the launcher (or the program):
# Cannon's app (linked with MPI only, verified against its serial reference) on each MPI, and
# through the generic `mpiexec` alternative whichever MPI it points to. NVCACHE_STATS proves
# nvcache served the I/O (a library of the other MPI would not even load).
export NVCACHE_DIR="$work/nvram" NVCACHE_STATS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
runs="mpiexec.mpich:nvcache/build mpiexec.openmpi:nvcache/build-openmpi"
case $(readlink -f "$(command -v mpiexec)") in
    *openmpi* | */orterun) runs="$runs mpiexec:nvcache/build-openmpi" ;;
    *) runs="$runs mpiexec:nvcache/build" ;;
esac
for run in $runs; do
    launcher=${run%%:*} build=$root/${run#*:}
    nvcache-run --ranks-per-node 2 "$launcher" -n 4 "$build/cannon" -v -n 48 -k 2 -d "$work" >"$work/out" 2>&1 &&
        grep -q "nvcache-stats .*hits=[1-9]" "$work/out" ||
        { echo "install: nvcache-run $launcher job failed"; cat "$work/out"; exit 1; }
    ls "$NVCACHE_DIR"/*.part >/dev/null 2>&1 && { echo "install: parts left after the $launcher job"; exit 1; }
done
nvcache-run --mpi lam true 2>/dev/null && { echo "install: nvcache-run accepted --mpi lam"; exit 1; }
# The --opt=value forms too.
[ "$(nvcache-run --dir=/x/y --mpi=mpich sh -c 'echo "$NVCACHE_DIR"' 2>/dev/null)" = /x/y ] ||
    { echo "install: nvcache-run --dir=/x/y did not set NVCACHE_DIR"; exit 1; }
# No command: one line, not the whole help.
[ "$(nvcache-run 2>&1 | wc -l)" = 1 ] || { echo "install: nvcache-run with no command:"; nvcache-run; exit 1; }
# After an Open MPI launcher, nvcache-run names LD_PRELOAD and the NVCACHE_* settings with -x
# (Open MPI passes ranks on other hosts nothing else): a stand-in launcher prints what it got.
printf '#!/bin/sh\necho "$@"\n' > "$work/fake-openmpi-launcher"; chmod +x "$work/fake-openmpi-launcher"
args=$(nvcache-run "$work/fake-openmpi-launcher" -n 2 ./app)
case $args in "-x LD_PRELOAD "*"-x NVCACHE_DIR "*"-n 2 ./app") ;;
    *) echo "install: nvcache-run passed Open MPI's launcher: $args"; exit 1 ;; esac
# ... also behind `env NAME=VALUE` (where the launcher is not the first word).
args=$(nvcache-run env A=1 "B=2 3" "$work/fake-openmpi-launcher" -n 2 ./app)
case $args in "-x LD_PRELOAD "*"-x NVCACHE_DIR "*"-n 2 ./app") ;;
    *) echo "install: nvcache-run passed env and Open MPI's launcher: $args"; exit 1 ;; esac
# A command that names no MPI (a job script) gets the library of the mpiexec on PATH, which
# such a script most likely calls, and is told so (it got MPICH's, whose ranks crashed under
# Open MPI's mpiexec).
case $(readlink -f "$(command -v mpiexec)") in
    *openmpi* | */orterun | */prterun) want=openmpi ;;
    *) want=mpich ;;
esac
nvcache-run sh -c true 2>&1 | grep -q "using libnvcache-$want.so" ||
    { echo "install: nvcache-run did not say which MPI a job script gets"; exit 1; }
got=$(nvcache-run sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
case $got in */libnvcache-$want.so) ;;
    *) echo "install: a job script under nvcache-run got LD_PRELOAD=$got, not libnvcache-$want.so"; exit 1 ;; esac
unset NVCACHE_DIR NVCACHE_STATS
echo "install: nvcache-run served jobs on MPICH and Open MPI ($runs)"

# Each installed libnvcache's SONAME is its own name: a program linked with the Open MPI one
# loads that one (not libnvcache.so, the MPICH one), and ldconfig leaves libnvcache.so alone.
for m in mpich openmpi; do
    readelf -d "$prefix/lib/libnvcache-$m.so" | grep -q "SONAME.*\[libnvcache-$m.so\]" ||
        { echo "install: libnvcache-$m.so has SONAME $(readelf -d "$prefix/lib/libnvcache-$m.so" | grep SONAME)"; exit 1; }
done
ldconfig=$(PATH="$PATH:/sbin:/usr/sbin" command -v ldconfig)
mkdir "$work/ldc" && cp -a "$prefix"/lib/libnvcache*.so "$work/ldc/" && "$ldconfig" -n "$work/ldc"
[ "$(readlink "$work/ldc/libnvcache.so")" = libnvcache-mpich.so ] ||
    { echo "install: after ldconfig, libnvcache.so -> $(readlink "$work/ldc/libnvcache.so")"; exit 1; }

# pmec from C, through pkg-config.
cat > ec.c <<'C'
#include <pmec.h>
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    pmec_codec *c;
    if (pmec_codec_new(4, 2, PMEC_MATRIX_CAUCHY, &c) != PMEC_OK) return 1;
    uint8_t *blk[6];
    for (int i = 0; i < 6; i++) { blk[i] = malloc(64); for (int j = 0; j < 64; j++) blk[i][j] = (uint8_t)(i * 64 + j); }
    int rc = pmec_encode(c, 64, 1, (const uint8_t *const *)blk, blk + 4, 1);
    printf("pmec %s rc=%d parity0=%02x\n", pmec_isa_name(), rc, blk[4][0]);
    pmec_codec_free(c);
    return rc != 0;
}
C
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc -o ec ec.c $(pkg-config --cflags --libs pmec) -Wl,-rpath,"$prefix/lib"
./ec | grep -q "rc=0" || { echo "install: pmec C program failed"; exit 1; }
# ... linked by its SONAME, which the installed link names.
readelf -d ec | grep -q "NEEDED.*\[libpmec.so.0\]" ||
    { echo "install: the pmec program needs $(readelf -d ec | grep 'NEEDED.*pmec'), not libpmec.so.0"; exit 1; }
[ "$(readlink "$prefix/lib/libpmec.so.0")" = "libpmec.so.$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)" ] ||
    { echo "install: libpmec.so.0 -> $(readlink "$prefix/lib/libpmec.so.0")"; exit 1; }

# An ISA-L program on the installed shim, put first on the library path.
if [ -f /usr/include/isa-l/erasure_code.h ]; then
    cc -O2 -o isal_prog "$root/crates/pmec/isal-shim/tests/c/isal_prog.c" -lisal -ldl
    plain=$(./isal_prog 2>/dev/null)
    shim=$(LD_LIBRARY_PATH="$prefix/lib/pmec-isal" ./isal_prog 2>"$work/err")
    [ "$plain" = "$shim" ] || { echo "install: ISA-L program differs on the shim"; exit 1; }
    grep -q "shim calls: [1-9]" "$work/err" || { echo "install: the shim did not serve the calls"; cat "$work/err"; exit 1; }
fi
echo "install: installed tools work"

cd "$root"
make -s uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || { echo "install: uninstall left:"; echo "$left"; exit 1; }
echo "install: uninstall left $prefix empty"

# A prefix with spaces, installed twice (the second install must keep the folders the first made
# in its manifest): nvcache-run preloads nvcache there, pkg-config's paths survive the shell.
rmdir "$prefix"   # empty now; the exit trap removes the prefix named below
prefix="$work/pre fix"
make -s install PREFIX="$prefix" >/dev/null
make -s install PREFIX="$prefix" >/dev/null
NVCACHE_DIR="$work/nvram" NVCACHE_STATS=1 "$prefix/bin/nvcache-run" mpiexec.mpich -n 4 \
    nvcache/build/cannon -v -n 16 -k 2 -d "$work" >"$work/out" 2>&1 && grep -q "nvcache-stats .*hits=[1-9]" "$work/out" ||
    { echo "install: nvcache-run under '$prefix' did not serve the job"; cat "$work/out"; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
(cd "$work" && eval "cc -o ec2 ec.c $(pkg-config --cflags --libs pmec) -Wl,-rpath,$(pkg-config --variable=libdir pmec)" &&
    ./ec2 | grep -q "rc=0") || { echo "install: pmec C program under '$prefix' failed"; exit 1; }
make -s uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || { echo "install: reinstall, then uninstall left:"; echo "$left"; exit 1; }
echo "install: reinstall and uninstall under '$prefix' work"

# Under a restrictive umask the installed folders and data files are still readable by all
# (they were drwx------ and -rw-------); an install that fails half-way records what it
# installed, so uninstall removes it (it left files and no manifest).
prefix="$work/umask"
(umask 077; make -s install PREFIX="$prefix" >/dev/null)
for f in "$prefix/lib/pkgconfig" "$prefix/lib/pkgconfig/pmec.pc" "$prefix/share/pmlab/configs/optane.toml"; do
    case $(stat -c %A "$f") in
        drwxr-xr-x | -rw-r--r--) ;;
        *) echo "install: under umask 077, $f is $(stat -c %A "$f")"; exit 1 ;;
    esac
done
make -s uninstall PREFIX="$prefix" >/dev/null
mkdir -p "$prefix" && : > "$prefix/include"   # a file where install makes a folder
if make -s install PREFIX="$prefix" >/dev/null 2>&1; then echo "install: installed over a file named include"; exit 1; fi
rm "$prefix/include"
make -s uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || { echo "install: after a failed install and uninstall:"; echo "$left"; exit 1; }
make -s uninstall PREFIX="$prefix" >/dev/null || { echo "install: a second uninstall failed"; exit 1; }
echo "install: a restrictive umask and a failed install are handled"
