#!/bin/bash
# `percall` on a named ISA-L kernel (PERCALL_ENTRY, the non-GFNI comparison of `make bench-ec`)
# must give the parity of the dispatched entry point on every library: `pmlab ec percall` refuses
# libraries whose parity differs, so its success is the check. An entry point a library lacks
# must be refused with one line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sys=$(dirname "$(ldconfig -p | sed -n 's/.*libisal.so.2 (libc6,x86-64) => //p' | head -1)")
grep -qw avx2 /proc/cpuinfo || { echo "percall_entry: this CPU has no AVX2; nothing to check"; exit 0; }
libs=(--lib "isal=$sys" --lib "isal-avx2=$sys,PERCALL_ENTRY=avx2" --lib "pmec=target/pmec-isal"
      --lib "pmec-avx2=target/pmec-isal,PMEC_ISA=avx2" --lib "pmec-entry=target/pmec-isal,PERCALL_ENTRY=avx2")
new=target/isa-l-2.32.1/inst/lib
if [ -f "$new/libisal.so.2" ]; then
    libs+=(--lib "isal-2.32.1=$new" --lib "isal-2.32.1-avx2=$new,PERCALL_ENTRY=avx2")
    grep -qw gfni /proc/cpuinfo && libs+=(--lib "isal-2.32.1-avx2_gfni=$new,PERCALL_ENTRY=avx2_gfni"
                                          --lib "pmec-avx2-gfni=target/pmec-isal,PMEC_ISA=avx2-gfni")
fi
target/release/pmlab ec percall --rounds 1 --seconds 0.02 --pool-mb 16 "${libs[@]}" 8:4:1024 24:4:4096 >/dev/null
if out=$(PERCALL_ENTRY=nosuch LD_LIBRARY_PATH="$sys" target/percall --seconds 0.01 --pool-mib 8 8:4:1024 2>&1); then
    echo "percall_entry: an unknown entry point was accepted"; exit 1
fi
[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "no ec_encode_data_nosuch" ||
    { echo "percall_entry: unclear error: $out"; exit 1; }
echo "percall_entry: named ISA-L kernels give the dispatched parity on $(( ${#libs[@]} / 2 )) libraries"
