"""BMGUFS's selection objective and its search: ``H = (Y^T Y) o (Y^T Y)``
(:func:`gram_squared`, numba, sparse or dense by fill), the precomputed r-independent
pieces of ``L_b`` and ``L_m`` (:class:`SelectionProblem`), the projected-gradient search for
the feature weights r on them (:func:`projected_gradient`), and the gamma / beta grids of
the paper's protocol.

Grids: the authors' script (github.com/ZilongBai/KDD2020BMGUFS,
``test_blogcatalog_ours_betas_gammas_k6.py``) searches ``gamma in {1, 2, 3}`` and
``beta_bar in {0, 0.1, ..., 1}``: :data:`PAPER_GAMMAS`, :data:`PAPER_BETAS`. To keep
``nnz(r) >= d``, ``BMGUFS.select(d)`` and ``BMGUFS.fit_gamma_grid`` walk down
:data:`GAMMA_GRID` (the paper's values, then 0.5, 0.25, 0 — our extension for large d)
from the requested gamma (:func:`gammas_from`).
"""
from __future__ import annotations

import math
import warnings
from typing import List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import bmgufs as _k
from featagg_core.graph.block_model import pinv_diag
from featagg_core.utils.polling import Throttle

__all__ = ["gram_squared", "SelectionProblem", "projected_gradient", "gammas_from",
           "MAX_H_BYTES", "DENSE_H_FILL", "MAX_DENSE_H_BYTES", "PAPER_GAMMAS", "PAPER_BETAS",
           "GAMMA_GRID"]

PAPER_GAMMAS = (1.0, 2.0, 3.0)
PAPER_BETAS = tuple(round(0.1 * i, 1) for i in range(11))
#: gamma values tried, largest first, when the selection must keep nnz(r) >= d
GAMMA_GRID = (3.0, 2.0, 1.0, 0.5, 0.25, 0.0)

#: the largest H BMGUFS builds (bytes); H's entries are counted by a symbolic pass first,
#: so a too-dense H is refused before any memory is taken
MAX_H_BYTES = 8 * 2 ** 30
#: H is kept dense when at least this full and no larger than MAX_DENSE_H_BYTES
DENSE_H_FILL = 0.5
MAX_DENSE_H_BYTES = 2 ** 30


def gram_squared(Y: sp.csr_matrix, max_bytes: int = MAX_H_BYTES):
    """``H = (Y^T Y) o (Y^T Y)`` (f x f, symmetric) with ``||Y diag(r) Y^T||_F^2 = r^T H r``.

    numba kernels: a symbolic pass counts H's entries (Gustavson's row-by-row product,
    parallel over fixed chunks of feature rows), then a numeric pass fills it. Bag-of-words
    attributes make H fill towards f^2 (two words co-occur in some node); when it is at
    least ``DENSE_H_FILL`` full and fits in ``MAX_DENSE_H_BYTES`` it is returned as a dense
    float64 array (8 bytes an entry against CSR's 12, and the mat-vecs of the selection
    stream contiguous rows), otherwise as a CSR matrix with int32 indices. A ValueError
    names the size when H would exceed ``max_bytes``.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (n, f)
        Node features.
    max_bytes : int, default=MAX_H_BYTES
        The largest H built.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix, shape (f, f)
        H, dense or sparse by fill.

    Raises
    ------
    ValueError
        When H would need more than ``max_bytes``.
    """
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Y.sort_indices()
    f = Y.shape[1]
    Yt = Y.T.tocsr()
    Yt.sort_indices()
    yi = Y.indptr.astype(np.int64)
    yti = Yt.indptr.astype(np.int64)
    counts = _k.gram_squared_counts(yti, Yt.indices, Yt.data, yi, Y.indices, Y.data, f)
    nnz = int(counts.sum())
    dense = nnz >= DENSE_H_FILL * f * f and 8 * f * f <= MAX_DENSE_H_BYTES
    need = 8 * f * f if dense else 12 * nnz + 8 * (f + 1)
    if need > max_bytes:
        raise ValueError(
            f"X: the attribute co-occurrence matrix BMGUFS needs ((X^T X) squared entrywise, "
            f"{f:,} x {f:,}) has {nnz:,} non-zeros ({need / 2 ** 30:.1f} GiB, the limit is "
            f"{max_bytes / 2 ** 30:.1f} GiB): drop attributes that occur in most nodes, or "
            f"select among fewer attributes")
    if dense:
        return _k.gram_squared_dense(yti, Yt.indices, Yt.data, yi, Y.indices, Y.data, f)
    indptr = np.zeros(f + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices, data = _k.gram_squared_fill(yti, Yt.indices, Yt.data, yi, Y.indices, Y.data,
                                         f, indptr)
    H = sp.csr_matrix((data, indices, indptr), shape=(f, f))
    H.has_sorted_indices = True
    return H


class SelectionProblem:
    """The precomputed, r-independent pieces of L_b and L_m (all small or sparse) for one
    block model: ``Dbar = D^-1 F^T Y``, ``S = D^-1/2 F^T Y``, ``H`` and ``P``.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix, shape (n, f)
        Checked node features (:func:`featagg_core.graph.inputs.check_node_features`).
    labels : array of int, shape (n,)
        The block model's partition.
    M : ndarray, shape (k, k)
        Its image matrix.
    delta : float
        Smoothing added to both image matrices before row normalisation.
    """

    def __init__(self, Y: sp.csr_matrix, labels: np.ndarray, M: np.ndarray, delta: float):
        n, f = Y.shape
        k = M.shape[0]
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        sizes = np.bincount(labels, minlength=k).astype(np.float64)
        FtY = _k.block_feature_sums(Y.indptr, Y.indices, Y.data, labels, k, f)
        dinv = pinv_diag(sizes)
        self.Dbar = np.ascontiguousarray(dinv[:, None] * FtY)          # D^-1 F^T Y
        self.S = np.ascontiguousarray(np.sqrt(dinv)[:, None] * FtY)    # D^-1/2 F^T Y
        self.St = np.ascontiguousarray(self.S.T)                         # f x k
        self.Dbart = np.ascontiguousarray(self.Dbar.T)
        self.H = gram_squared(Y)                            # f x f, sparse or dense
        Mp = np.asarray(M, dtype=np.float64) + delta
        self.P = Mp / Mp.sum(axis=1, keepdims=True)
        self.delta = float(delta)
        self.n_features = f
        self.Y = Y                                          # a reference, for the gamma path

    def H_matvec(self, r: np.ndarray, active: np.ndarray) -> np.ndarray:
        """``H r`` from the rows of the active features only (``r`` is zero elsewhere),
        so the cost shrinks as the weights become sparse.

        Parameters
        ----------
        r : ndarray, shape (f,)
            Feature weights.
        active : ndarray of int
            The features whose weight is non-zero.

        Returns
        -------
        ndarray, shape (f,)
        """
        H = self.H
        active = np.ascontiguousarray(active, dtype=np.int64)
        if isinstance(H, np.ndarray):
            return _k.dense_sym_matvec_active(H, r, active)
        return _k.sym_matvec_active(H.indptr, H.indices, H.data, r, active)

    def losses(self, r: np.ndarray, active: Optional[np.ndarray] = None, grad: bool = True):
        """L_b, L_m and (optionally) their gradients with respect to r.

        Derivation. With ``K = S R S^T`` (k x k), ``a = ||K||^2``, ``b = r^T H r``:
        ``L_b = 1 - a / b``; ``da/dr_l = 2 s_l^T K s_l``, ``db/dr = 2 H r``, hence
        ``dL_b/dr = -(da/dr) / b + a (db/dr) / b^2``.
        With ``T = Dbar R Dbar^T + delta``, ``t_i = sum_j T_ij``, ``Q = T / t``:
        ``L_m = sum_ij P_ij (log P_ij - log T_ij + log t_i)``, so (rows of P sum to 1)
        ``dL_m/dT_ij = -P_ij / T_ij + 1 / t_i =: W_ij`` and, as ``dT/dr_l = dbar_l dbar_l^T``,
        ``dL_m/dr_l = dbar_l^T W dbar_l``.

        Parameters
        ----------
        r : ndarray, shape (f,)
            Feature weights.
        active : ndarray of int, optional
            The features whose weight is non-zero (default: computed from ``r``).
        grad : bool, default=True
            Whether to compute the gradients.

        Returns
        -------
        tuple
            ``(L_b, L_m, dL_b/dr, dL_m/dr, Q)``; the gradients are None without ``grad``.
        """
        if active is None:
            active = np.flatnonzero(r)
        active = np.ascontiguousarray(active, dtype=np.int64)
        Hr = self.H_matvec(r, active)
        b = float(r @ Hr)
        # the k x k and k x f products in numba (serial): BLAS threads cost more than these
        # small products on a busy machine
        K = _k.weighted_gram(self.St, r, active)
        a = float(np.sum(K * K))
        Lb = 1.0 - a / b if b > 0 else 0.0
        T = _k.weighted_gram(self.Dbart, r, active) + self.delta
        t = T.sum(axis=1)
        Q = T / t[:, None]
        P = self.P
        Lm = float(np.sum(P * (np.log(P) - np.log(Q))))
        if not grad:
            return Lb, Lm, None, None, Q
        if b > 0:
            ga = 2.0 * _k.quad_diag(self.St, K)
            gLb = -ga / b + (2.0 * a / (b * b)) * Hr
        else:
            gLb = np.zeros_like(r)
        W = -P / T + (1.0 / t)[:, None]
        gLm = _k.quad_diag(self.Dbart, np.ascontiguousarray(W))
        return Lb, Lm, gLb, gLm, Q


def projected_gradient(prob: SelectionProblem, beta: float, gamma: float, max_iter: int,
                       eta: float, progress=None, return_alive: bool = False):
    """BMGUFS's projected-gradient search for the feature weights r on a precomputed
    problem (the update of the :mod:`featagg_core.graph.bmgufs` module docstring).

    Parameters
    ----------
    prob : SelectionProblem
        The precomputed pieces of the objective.
    beta : float
        ``beta_bar``, the weight of the normalised ``L_m`` gradient.
    gamma : float
        The sparsity push (``gamma / sqrt(f)`` added to every component).
    max_iter : int
        Updates to make.
    eta : float
        Step size.
    progress : callable(stage, fraction, message), optional
        Called every 10 iterations or 0.25 s (stage ``"selection"``); it may raise to stop.
    return_alive : bool, default=False
        Also return, for every feature, the number of updates after which its weight was
        still non-zero the last time (``max_iter``-ish for the survivors, 0 for a feature
        zeroed by the first update): how long it held on, the order in which
        :meth:`featagg_core.graph.bmgufs.BMGUFS.select` fills past the non-zero weights.

    Returns
    -------
    r : ndarray, shape (f,)
        The weights (non-negative, unit norm).
    history : dict of ndarrays
        ``"L_b"``, ``"L_m"``, ``"nnz"`` at r_0 and after every update.
    n_iter : int
        Updates made (fewer than ``max_iter`` when every weight reached 0: that update is
        not kept, and a ``UserWarning`` says so).
    Q : ndarray, shape (k, k)
        The induced image distribution at the returned r.
    alive : ndarray of int64, shape (f,)
        Only with ``return_alive``: see above.
    """
    f = prob.n_features
    clock = Throttle(0.25)
    r = np.full(f, 1.0 / math.sqrt(f))
    spars = gamma / math.sqrt(f)
    hist_b, hist_m, hist_nnz = [], [], []
    active = np.arange(f, dtype=np.int64)
    alive = np.zeros(f, dtype=np.int64)
    n_done = 0
    Q = None
    for it in range(max_iter + 1):
        Lb, Lm, gLb, gLm, Q = prob.losses(r, active, grad=it < max_iter)
        hist_b.append(Lb)
        hist_m.append(Lm)
        hist_nnz.append(active.size)
        if it == max_iter:
            break
        nb = np.linalg.norm(gLb)
        nm = np.linalg.norm(gLm)
        g = np.full(f, spars)
        if nb > 0:
            g += (1.0 - beta) / nb * gLb
        if nm > 0:
            g += beta / nm * gLm
        r_new = np.maximum(r - eta * g, 0.0)
        norm = np.linalg.norm(r_new)
        if norm == 0.0:
            warnings.warn(f"BMGUFS: every feature weight reached 0 at iteration {it + 1}; "
                          f"keeping the weights of iteration {it} (gamma={gamma} is too "
                          "large for this data)", UserWarning, stacklevel=4)
            break
        r = r_new / norm
        active = np.flatnonzero(r).astype(np.int64)
        n_done = it + 1
        alive[active] = n_done
        if progress is not None and (n_done % 10 == 0 or n_done == max_iter
                                     or clock.due()):
            progress("selection", n_done / max(max_iter, 1),
                     f"iteration {n_done}/{max_iter}: L_b {Lb:.4f}, L_m {Lm:.4f}, "
                     f"{active.size} non-zero weights")
    history = {"L_b": np.array(hist_b), "L_m": np.array(hist_m),
               "nnz": np.array(hist_nnz, dtype=np.int64)}
    if return_alive:
        return r, history, n_done, Q, alive
    return r, history, n_done, Q


def gammas_from(gamma: float, grid: Sequence[float] = GAMMA_GRID) -> List[float]:
    """``gamma`` itself, then the values of ``grid`` below it (largest first).

    Parameters
    ----------
    gamma : float
        The requested gamma.
    grid : sequence of float, default=GAMMA_GRID
        The values to walk down.

    Returns
    -------
    list of float
    """
    g = float(gamma)
    return [g] + [float(x) for x in sorted(set(grid), reverse=True) if x < g]
