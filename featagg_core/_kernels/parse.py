"""numba kernels for the text readers and writers of :mod:`featagg_core.data`.

Every kernel takes numpy arrays (the raw bytes of a file as ``uint8``) and returns
arrays; errors are reported as integer codes plus the line number and byte offset,
and turned into :class:`~featagg_core.data.DatasetError` messages by the caller.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def first_duplicate(indptr, indices, n_cols):
    """First (row, column) of a csr structure whose row names a column twice, or (-1, -1).

    One stamp array of ``n_cols`` entries: O(nnz + n_cols), no sorting.
    """
    stamp = np.full(max(n_cols, 1), -1, np.int64)
    n = indptr.shape[0] - 1
    for r in range(n):
        for p in range(indptr[r], indptr[r + 1]):
            c = indices[p]
            if stamp[c] == r:
                return r, c
            stamp[c] = r
    return -1, -1
