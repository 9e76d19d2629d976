"""Sparse products ``AᵀB`` with exactly summed, correctly rounded float32 entries.

Used by the single-machine fits (DEFRAG's ``XᵀY``, KTXMLC's label vectors ``Yᵀ X``) and by
their Dask twins (:mod:`featagg_core.distributed`), which compute one :class:`Partial`
per row partition, merge the partials in any order and round once: exact sums make the
result independent of how the rows were split (see :mod:`featagg_core._kernels.exact`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import exact as _ke
from featagg_core.utils.polling import call_polled, new_stop

__all__ = ["cluster_membership", "exact_xt_y", "ExactRows", "Partial", "partial_xt_y", "merge",
           "rounded"]


def cluster_membership(labels, n_clusters: int, n_features: int) -> sp.csr_matrix:
    """The 0/1 d x K matrix G with ``G[j, labels[j]] = 1``, so ``X @ G`` sums each cluster.

    Parameters
    ----------
    labels : int array (d,)
        The cluster of every feature, in ``[0, n_clusters)``.
    n_clusters : int
        K.
    n_features : int
        d, the length of ``labels``.

    Returns
    -------
    csr_matrix of float32 (d, K)
    """
    d = n_features
    return sp.csr_matrix((np.ones(d, np.float32), labels, np.arange(d + 1)),
                         shape=(d, n_clusters))


def _n_chunks() -> int:
    return 4 * max(1, numba.get_num_threads())


def _operands(A, B):
    """``Aᵀ`` as csr (= A in csc) and ``B`` as csr, float32 with sorted indices."""
    A = sp.csr_matrix(A)
    B = sp.csr_matrix(B)
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"A has {A.shape[0]} rows but B has {B.shape[0]}")
    At = A.T.tocsr()
    At.sort_indices()
    B.sort_indices()
    return (At.indptr.astype(np.int64), At.indices.astype(np.int32),
            At.data.astype(np.float32, copy=False), B.indptr.astype(np.int64),
            B.indices.astype(np.int32), B.data.astype(np.float32, copy=False), B.shape[1])


def exact_xt_y(A, B, return_inexact: bool = False, tick=None):
    """``AᵀB`` as a float32 csr matrix with correctly rounded exact entries.

    Every entry is the correctly rounded exact sum of its float32 products (A and B are
    cast to float32 first). With ``return_inexact`` also the number of additions that could
    not be carried out exactly in double-double (0 on any realistic data; see the kernel
    module). ``tick``, if given, is called about every 0.1 s while the kernel runs and may
    raise to stop it (:func:`featagg_core.utils.polling.call_polled`).

    Parameters
    ----------
    A : sparse matrix of shape (n, d)
        The left factor (rows = the shared rows).
    B : sparse matrix of shape (n, L)
        The right factor.
    return_inexact : bool, default=False
        Also return the inexact-addition count.
    tick : callable, optional
        Called while the kernel runs.

    Returns
    -------
    scipy.sparse.csr_matrix or (scipy.sparse.csr_matrix, int)
        ``AᵀB`` (sorted indices), and the count with ``return_inexact``.

    Raises
    ------
    ValueError
        When A and B have different numbers of rows.
    """
    ops = _operands(A, B)
    stop = new_stop()
    ptr, ind, dat, bad = call_polled(_ke.xt_y_rounded, (*ops, _n_chunks(), stop), stop, tick)
    M = sp.csr_matrix((dat, ind, ptr), shape=(A.shape[1], B.shape[1]))
    return (M, int(bad)) if return_inexact else M


class ExactRows:
    """Row ranges of the exact ``AᵀB`` (as :func:`exact_xt_y`), with both operands converted
    once: ``rows(lo, hi)`` equals ``exact_xt_y(A, B)[lo:hi]`` bit for bit (each entry is
    the correctly rounded exact sum, so cutting the product by rows changes nothing) and
    copies nothing of the operands (a row range of ``Aᵀ`` is a view of its index pointer).

    For products too long for one kernel call between two progress reports (KTXMLC's
    label vectors, computed in label blocks with a cancel check between them)."""

    def __init__(self, A, B):
        self._ops = _operands(A, B)
        self.shape = (int(self._ops[0].shape[0] - 1), int(self._ops[6]))

    def cumulative_work(self) -> np.ndarray:
        """``c[j]``: the ``B`` non-zeros touched by the products of rows ``0 .. j-1`` of ``AᵀB``.

        For sizing blocks of rows by their work.

        Returns
        -------
        ndarray of int64
            Length rows + 1.
        """
        xt_ptr, xt_ind, _, y_ptr = self._ops[:4]
        per_term = np.diff(y_ptr)[xt_ind]
        return np.r_[0, np.cumsum(per_term)][xt_ptr]

    def rows(self, lo: int, hi: int, tick=None) -> sp.csr_matrix:
        """Rows ``lo:hi`` of ``AᵀB`` (float32 csr, sorted indices).

        Parameters
        ----------
        lo, hi : int
            The row range.
        tick : callable, optional
            As in :func:`exact_xt_y`.

        Returns
        -------
        scipy.sparse.csr_matrix
            Those rows.
        """
        xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols = self._ops
        stop = new_stop()
        ptr, ind, dat, _ = call_polled(
            _ke.xt_y_rounded, (xt_ptr[lo:hi + 1], xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols,
                               _n_chunks(), stop), stop, tick)
        return sp.csr_matrix((dat, ind, ptr), shape=(int(hi) - int(lo), n_cols))


@dataclass
class Partial:
    """An unrounded partial product: csr structure, ``hi`` parts and the rarely non-zero
    ``lo`` parts stored sparsely (``lo_pos``, ``lo_val``), plus the inexact-addition count.
    Compact on the wire: float64 ``hi`` + int32 index per entry (12 bytes)."""
    shape: tuple
    indptr: np.ndarray
    indices: np.ndarray
    hi: np.ndarray
    lo_pos: np.ndarray
    lo_val: np.ndarray
    n_inexact: int = 0

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    def rows(self, lo: int, hi: int, keep_count: bool = True) -> "Partial":
        """Rows ``lo:hi`` (a partial of shape ``(hi - lo, n_cols)``).

        The inexact count stays with the slice only if ``keep_count`` (so slices do not count
        it twice).

        Parameters
        ----------
        lo, hi : int
            The row range.
        keep_count : bool, default=True
            Keep the inexact-addition count on the slice.

        Returns
        -------
        Partial
            The slice.
        """
        a, b = int(self.indptr[lo]), int(self.indptr[hi])
        keep = (self.lo_pos >= a) & (self.lo_pos < b)
        return Partial((hi - lo, self.shape[1]), self.indptr[lo:hi + 1] - a,
                       self.indices[a:b].copy(), self.hi[a:b].copy(),
                       self.lo_pos[keep] - a, self.lo_val[keep].copy(),
                       self.n_inexact if keep_count else 0)

    def lo_dense(self) -> np.ndarray:
        """The ``lo`` parts as a dense array (empty when they are all zero).

        Returns
        -------
        ndarray of float64
            One entry per stored value, or length 0.
        """
        if self.lo_pos.shape[0] == 0:
            return np.zeros(0, np.float64)
        lo = np.zeros(self.hi.shape[0], np.float64)
        lo[self.lo_pos] = self.lo_val
        return lo


def _pack(shape, ptr, ind, hi, lo, bad) -> Partial:
    pos = np.flatnonzero(lo).astype(np.int64)
    return Partial(tuple(int(s) for s in shape), ptr, ind, hi, pos, lo[pos].copy(), int(bad))


def partial_xt_y(A, B) -> Partial:
    """The unrounded ``AᵀB`` of one row partition.

    A and B hold the same rows; they may be lists of row blocks, stacked here.

    Parameters
    ----------
    A : sparse matrix or list of row blocks
        The left factor (rows = the shared rows).
    B : sparse matrix or list of row blocks
        The right factor.

    Returns
    -------
    Partial
        The partial product.
    """
    if isinstance(A, (list, tuple)):
        A = sp.vstack(A, format="csr") if len(A) > 1 else A[0]
        B = sp.vstack(B, format="csr") if len(B) > 1 else B[0]
    ops = _operands(A, B)
    ptr, ind, hi, lo, bad = _ke.xt_y_partial(*ops, _n_chunks(), new_stop())
    return _pack((A.shape[1], B.shape[1]), ptr, ind, hi, lo, bad)


def merge(a: Partial, b: Partial) -> Partial:
    """Exact sum of two partials of the same shape (any order gives the same value).

    Parameters
    ----------
    a, b : Partial
        The partials.

    Returns
    -------
    Partial
        Their sum.

    Raises
    ------
    ValueError
        When the shapes differ.
    """
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"partials of different shapes: {a.shape} and {b.shape}")
    ptr, ind, hi, lo, bad = _ke.merge_partials(a.indptr, a.indices, a.hi, a.lo_dense(),
                                               b.indptr, b.indices, b.hi, b.lo_dense())
    return _pack(a.shape, ptr, ind, hi, lo, a.n_inexact + b.n_inexact + bad)


def rounded(p: Partial) -> sp.csr_matrix:
    """The float32 csr matrix of a (fully reduced) partial: each entry rounded once.

    Parameters
    ----------
    p : Partial
        The reduced partial.

    Returns
    -------
    scipy.sparse.csr_matrix
        The rounded product.
    """
    lo = p.lo_dense()
    dat = _ke.round_partial(p.hi, lo if lo.shape[0] else np.zeros(p.hi.shape[0], np.float64))
    return sp.csr_matrix((dat, p.indices, p.indptr), shape=p.shape)


def warmup() -> None:
    """Compile the kernels on a tiny input."""
    A = sp.csr_matrix(np.array([[1.0, 0.0], [0.5, 2.0]], np.float32))
    exact_xt_y(A, A)
    rounded(merge(partial_xt_y(A[:1], A[:1]), partial_xt_y(A[1:], A[1:])))
