/* mpi_compat.c: large counts on MPI 3.1 and MPI 4.
 *
 * MPICH 4 has the MPI 4 large-count calls; Open MPI 4.1 (Debian 12's) implements MPI 3.1, whose
 * file, pack and unpack calls take int counts and sizes. nvcache moves byte runs larger than that
 * (a part's dirty run drained in one call, a packed derived-type buffer), so these helpers split
 * them: nvcache's own byte runs into 1 GiB pieces by offset on every MPI (MPICH 4.0.2's
 * large-count file calls assert int counts), packed data by whole elements on MPI 3.1.
 */
#include "nvcache_internal.h"
#include <limits.h>

int nvc_file_rw_at(MPI_File fh, int write, MPI_Offset off, void *buf, MPI_Count count, MPI_Datatype dt,
                   MPI_Status *status)
{
#if NVC_MPI_LARGE_COUNT
    return write ? PMPI_File_write_at_c(fh, off, buf, count, dt, status)
                 : PMPI_File_read_at_c(fh, off, buf, count, dt, status);
#else
    if (count > INT_MAX)
        return MPI_ERR_COUNT; /* an application on MPI 3.1 cannot pass such a count */
    return write ? PMPI_File_write_at(fh, off, buf, (int)count, dt, status)
                 : PMPI_File_read_at(fh, off, buf, (int)count, dt, status);
#endif
}

int nvc_file_rw_bytes_at(MPI_File fh, int write, MPI_Offset off, void *buf, MPI_Count bytes, MPI_Status *status)
{
    /* Pieces of 1 GiB on every MPI: MPI 3.1 has int counts, and MPICH 4.0.2's ROMIO asserts
       count <= INT_MAX inside MPI_File_write_at_c (a drained run of a part whose stripe is over
       2 GiB aborted the close). The offset advances by bytes: only handles with the default view
       (nvcache's own) come here; an application's transfer goes in one call as it made it, its
       offset counted in its view's etypes (and an atomic-mode write must stay one call). */
    const MPI_Count piece = (MPI_Count)1 << 30;
    MPI_Count done = 0;
    while (done < bytes) {
        MPI_Count k = bytes - done > piece ? piece : bytes - done, got = 0;
        MPI_Status st;
        int rc = nvc_file_rw_at(fh, write, off + done, (uint8_t *)buf + done, k, MPI_BYTE, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        PMPI_Get_elements_x(&st, MPI_BYTE, &got);
        done += got;
        if (got < k)
            break; /* end of file on a read */
    }
    if (status != MPI_STATUS_IGNORE) {
        PMPI_Status_set_elements_x(status, MPI_BYTE, done);
        PMPI_Status_set_cancelled(status, 0);
    }
    return MPI_SUCCESS;
}

int nvc_pack(int pack, void *buf, MPI_Count count, MPI_Datatype dt, void *data, MPI_Count bytes)
{
#if NVC_MPI_LARGE_COUNT
    MPI_Count pos = 0;
    return pack ? PMPI_Pack_c(buf, count, dt, data, bytes, &pos, MPI_COMM_SELF)
                : PMPI_Unpack_c(data, bytes, &pos, buf, count, dt, MPI_COMM_SELF);
#else
    MPI_Count tsize, lb, ext;
    PMPI_Type_size_x(dt, &tsize);
    PMPI_Type_get_extent_x(dt, &lb, &ext);
    if (tsize <= 0 || count <= 0)
        return MPI_SUCCESS;
    if (tsize > INT_MAX)
        return MPI_ERR_COUNT; /* one element over 2 GiB: the caller passes the file through */
    (void)bytes;
    MPI_Count per = INT_MAX / tsize; /* elements per int-sized piece */
    for (MPI_Count e = 0; e < count; e += per) {
        int n = (int)(count - e < per ? count - e : per), pos = 0;
        uint8_t *mem = (uint8_t *)buf + e * ext, *packed = (uint8_t *)data + e * tsize;
        int rc = pack ? PMPI_Pack(mem, n, dt, packed, (int)(n * tsize), &pos, MPI_COMM_SELF)
                      : PMPI_Unpack(packed, (int)(n * tsize), &pos, mem, n, dt, MPI_COMM_SELF);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
#endif
}

int nvc_type_envelope(MPI_Datatype dt, int *ni, int *na, int *nd, int *comb, int *large)
{
#if NVC_MPI_LARGE_COUNT
    MPI_Count cni, cna, cnc, cnd;
    int rc = PMPI_Type_get_envelope_c(dt, &cni, &cna, &cnc, &cnd, comb);
    *ni = (int)cni;
    *na = (int)cna;
    *nd = (int)cnd;
    *large = cnc > 0;
    return rc;
#else
    *large = 0;
    return PMPI_Type_get_envelope(dt, ni, na, nd, comb);
#endif
}
