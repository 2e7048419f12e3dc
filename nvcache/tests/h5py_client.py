"""Parallel h5py (Debian's python3-h5py-mpi, built on Open MPI) as an unmodified MPI-IO client.

client_cmp.sh runs it with and without LD_PRELOAD=libnvcache.so and compares the files byte for
byte. Every rank writes its slice of a contiguous dataset independently and of a chunked one
collectively, a neighbour's slice is read back through a second open of the file, and the read
values are checked here (a wrong read fails the run). usage: h5py_client.py FILE
"""
import sys

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path = sys.argv[1]
n = 40_000  # elements per rank: not a multiple of any stripe or chunk


def values(r, salt):
    return (np.arange(n, dtype=np.float64) * (r + 1) + salt).astype(np.float64)


with h5py.File(path, "w", driver="mpio", comm=comm) as f:
    f.attrs["ranks"] = size
    contig = f.create_dataset("independent", (size * n,), dtype="f8", track_times=False)
    chunked = f.create_dataset("collective", (size, n), dtype="i4", chunks=(1, 4096), track_times=False)
    grp = f.create_group("meta")
    grp.create_dataset("sizes", (size,), dtype="i8", track_times=False)
    contig[rank * n:(rank + 1) * n] = values(rank, 0.5)  # independent I/O
    with chunked.collective:
        chunked[rank, :] = (values(rank, 3) % 100_000).astype(np.int32)
    with grp["sizes"].collective:
        grp["sizes"][rank:rank + 1] = [n * (rank + 1)]
    comm.Barrier()

with h5py.File(path, "r+", driver="mpio", comm=comm) as f:
    peer = (rank + 1) % size
    got = f["independent"][peer * n:(peer + 1) * n]
    if not np.array_equal(got, values(peer, 0.5)):
        sys.exit(f"rank {rank}: independent read of rank {peer}'s slice differs")
    with f["collective"].collective:
        row = f["collective"][peer, :]
    if not np.array_equal(row, (values(peer, 3) % 100_000).astype(np.int32)):
        sys.exit(f"rank {rank}: collective read of rank {peer}'s row differs")
    comm.Barrier()  # every neighbour has read my slice before I overwrite part of it
    f["independent"][rank * n + 7:rank * n + 107] = np.full(100, -1.0)
