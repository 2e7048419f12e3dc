#!/bin/bash
# An unmodified MPI-IO client (a program nobody here wrote the I/O library of: parallel HDF5,
# h5py, PnetCDF) run twice under mpiexec, plain and through LD_PRELOAD=libnvcache.so: the files
# must be byte-identical, and nvcache must have served some of the I/O.
# usage: client_cmp.sh NAME MPIEXEC NP LIBNVCACHE DATA_DIR COMMAND...   (COMMAND gets the output
#        file as its last argument; NVCACHE_DIR and NVCACHE_RANKS_PER_NODE come from the environment)
set -u
name=$1 mpiexec=$2 np=$3 lib=$4 dir=$5
shift 5
plain=$dir/$name-np$np.plain out=$dir/$name-np$np.nvcache stats=$dir/$name-np$np.stats
rm -f "$plain" "$out"
"$mpiexec" -n "$np" "$@" "$plain" || { echo "$name: the plain run failed"; exit 1; }
NVCACHE_STATS=1 "$mpiexec" -n "$np" env LD_PRELOAD="$lib" "$@" "$out" 2>"$stats" || { cat "$stats"; echo "$name: the run through nvcache failed"; exit 1; }
grep -q 'nvcache-stats .*hits=[1-9]' "$stats" || { echo "$name: nvcache did not serve any I/O:"; cat "$stats"; exit 1; }
grep -h 'hit_ratio' "$stats" | head -n 2
cmp "$plain" "$out" || { echo "$name: files differ"; exit 1; }
echo "$name: files byte-identical ($(stat -c %s "$out") bytes)"
rm -f "$plain" "$out" "$stats"
