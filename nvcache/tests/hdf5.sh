#!/bin/bash
# Parallel HDF5 (Debian's library, unmodified) through LD_PRELOAD=libnvcache.so must produce a file
# byte-identical to the run without nvcache.
# usage: hdf5.sh MPIEXEC NP CLIENT LIBNVCACHE DATA_DIR
set -u
mpiexec=$1 np=$2 client=$3 lib=$4 dir=$5
plain=$dir/hdf5-np$np.plain.h5 cached=$dir/hdf5-np$np.nvcache.h5
rm -f "$plain" "$cached"
"$mpiexec" -n "$np" "$client" "$plain" || exit 1
NVCACHE_STATS=1 "$mpiexec" -n "$np" env LD_PRELOAD="$lib" "$client" "$cached" 2>stats.$np.txt || { cat stats.$np.txt; exit 1; }
grep -q 'nvcache-stats .*hits=[1-9]' stats.$np.txt || { echo "nvcache did not serve any HDF5 I/O:"; cat stats.$np.txt; exit 1; }
grep -h 'hit_ratio' stats.$np.txt | head -n 2
cmp "$plain" "$cached" || { echo "HDF5 files differ"; exit 1; }
echo "hdf5: files byte-identical ($(stat -c %s "$cached") bytes)"
rm -f "$plain" "$cached" stats.$np.txt
