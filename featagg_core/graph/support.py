"""Helpers of BMGUFS (:mod:`featagg_core.graph.bmgufs`): the input checks, the binary block
image, the sparse ``H`` of the selection and the projected-gradient search on it, the
spectral embedding and the rule that picks the number of blocks when nothing else says it,
the check of how well the candidate block models fit, the parameter grids of the paper's
protocol, and BMGUFS's artifact state.

* Inputs: ``_check_adjacency`` / ``_check_features`` (graph and node-feature checks, the
  messages name the matrix); ``_block_image`` (block sizes, densities ``M`` and RRE of a
  partition, O(nnz(A))).
* ``H = (Y^T Y) o (Y^T Y)``: :func:`gram_squared` (numba, sparse or dense by fill), the
  precomputed pieces of the selection objective (``_SelectionProblem``) and the search
  for r on them (:func:`projected_gradient`).
* Number of blocks without labels: :func:`choose_n_blocks` — the largest *eigengap* of the
  regularised normalised adjacency ``D_t^-1/2 A D_t^-1/2`` (``D_t = D + mean degree``, the
  matrix whose eigenvectors the spectral start of ONMtF uses) among k = 2 .. 20: the k
  with the largest ``lambda_k - lambda_{k+1}`` (von Luxburg, "A tutorial on spectral
  clustering", 2007, §8.3). A graph with k well separated communities has k eigenvalues
  near the top and a gap after them; a graph without one (Cora, Citeseer) gets a small k,
  and the chosen k and its gap are reported so a person can overrule it.
* Fit of the block models: :func:`block_fit_quality` — the RRE of every candidate, the
  share of ``||A||^2`` the best one reconstructs (``1 - RRE^2``) and the same share for a
  random partition with the best model's block sizes (the mean of 5 permutations). A
  warning is raised when every candidate has ``RRE >= POOR_FIT_RRE`` (0.95: the block
  model reconstructs less than 10 % of ``||A||^2``); the message gives the lift over the
  random partition so the reader can tell "sparse but structured" (Cora: 5.7x) from "no
  block structure" (about 1x).
* Grids: the authors' script (github.com/ZilongBai/KDD2020BMGUFS,
  ``test_blogcatalog_ours_betas_gammas_k6.py``) searches ``gamma in {1, 2, 3}`` and
  ``beta_bar in {0, 0.1, ..., 1}``: :data:`PAPER_GAMMAS`, :data:`PAPER_BETAS`. To keep
  ``nnz(r) >= d`` the pipeline walks down :data:`GAMMA_GRID` (the paper's values, then
  0.5, 0.25, 0 — our extension for large d) from the requested gamma.
"""
from __future__ import annotations

import math
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.docstrings import fill_doc
from featagg_core._kernels import bmgufs as _k
from featagg_core.utils.polling import Throttle

__all__ = ["gram_squared", "_SelectionProblem", "projected_gradient", "regularized_adjacency",
           "spectral_embedding", "choose_n_blocks", "block_fit_quality", "gammas_from",
           "bmgufs_artifact_state", "bmgufs_from_artifact_state", "MAX_H_BYTES", "DENSE_H_FILL",
           "MAX_DENSE_H_BYTES",
           "PAPER_GAMMAS", "PAPER_BETAS", "GAMMA_GRID", "POOR_FIT_RRE", "K_RANGE"]

PAPER_GAMMAS = (1.0, 2.0, 3.0)
PAPER_BETAS = tuple(round(0.1 * i, 1) for i in range(11))
#: gamma values tried, largest first, when the selection must keep nnz(r) >= d
GAMMA_GRID = (3.0, 2.0, 1.0, 0.5, 0.25, 0.0)
#: every candidate at or above this RRE: the block models "fit poorly" (warning)
POOR_FIT_RRE = 0.95
#: the range of k the eigengap rule searches
K_RANGE = (2, 20)


# ---------------------------------------------------------------------------
# input checks and the binary block image (used by featagg_core.graph.bmgufs)
# ---------------------------------------------------------------------------
# Deliberately not the shared featagg_core.utils.validation matrix helpers: every message about
# a matrix here reads "<name>: ..." (e.g. "A: the graph has no edges"), the matrices are
# float64 with stored zeros dropped, X must be non-negative with at least one non-zero, and
# A has graph checks (square, >= 2 nodes, edges, symmetric). Parameters are declared
# (BlockModel / BMGUFS ``_parameter_constraints``) and refused with the one wording.
def _check_adjacency(A) -> sp.csr_matrix:
    if A is None:
        raise ValueError("A: the adjacency matrix is missing")
    if sp.issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64)
    else:
        arr = np.asarray(A)
        if arr.ndim != 2:
            raise ValueError(f"A: expected a 2-D adjacency matrix, got {arr.ndim}-D")
        A = sp.csr_matrix(arr.astype(np.float64))
    n, m = A.shape
    if n != m:
        raise ValueError(f"A: the adjacency matrix must be square, got {n} x {m}")
    if n < 2:
        raise ValueError(f"A: need at least 2 nodes, got {n}")
    A.sum_duplicates()
    A.eliminate_zeros()
    if A.nnz == 0:
        raise ValueError("A: the graph has no edges")
    if not np.all(np.isfinite(A.data)):
        raise ValueError("A: contains NaN or infinite weights")
    if A.data.min() < 0:
        raise ValueError("A: edge weights must be non-negative (block models by ONMtF)")
    diff = abs(A - A.T)
    if diff.nnz and diff.max() > 1e-8 * max(abs(A).max(), 1.0):
        raise ValueError("A: the adjacency matrix must be symmetric (an undirected graph); "
                         "symmetrise it first, e.g. A.maximum(A.T)")
    A.sort_indices()
    return A


def _as_node_features(X) -> sp.csr_matrix:
    """``X`` (sparse, or dense 2-D) as a float64 csr node x feature matrix (a copy when
    it converts; also the feature selection baselines' first step)."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"X: expected a 2-D node x feature matrix, got {arr.ndim}-D")
    return sp.csr_matrix(arr)


def _check_features(X, n: int) -> sp.csr_matrix:
    if X is None:
        raise ValueError("X: the node feature matrix is missing")
    Y = _as_node_features(X)
    if Y.shape[0] != n:
        raise ValueError(f"X: has {Y.shape[0]} rows but the graph has {n} nodes")
    if Y.shape[1] < 1:
        raise ValueError("X: has no feature columns")
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if Y.nnz and not np.all(np.isfinite(Y.data)):
        raise ValueError("X: contains NaN or infinite values")
    if Y.nnz and Y.data.min() < 0:
        raise ValueError("X: BMGUFS needs non-negative node features (counts, 0/1, tf-idf)")
    if Y.nnz == 0:
        raise ValueError("X: all node features are zero")
    return Y


def _pinv(v: np.ndarray) -> np.ndarray:
    out = np.zeros_like(v, dtype=np.float64)
    nz = v > 0
    out[nz] = 1.0 / v[nz]
    return out


def _block_image(A: sp.csr_matrix, labels: np.ndarray, k: int):
    """Block sizes D, image matrix M = D^-1 F^T A F D^-1 (block densities) and the RRE of
    the binary block model, all from O(nnz(A)) passes."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    B = _k.block_edge_sums(A.indptr, A.indices, A.data, labels, k)
    dinv = _pinv(sizes)
    M = dinv[:, None] * B * dinv[None, :]
    # ||A - F M F^T||^2 = sum_nnz [(a - m)^2 - m^2] + sum_ab D_a D_b M_ab^2
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    m_nz = M[labels[rows], labels[A.indices]]
    err2 = float(np.sum((A.data - m_nz) ** 2 - m_nz ** 2)
                 + np.sum(sizes[:, None] * sizes[None, :] * M ** 2))
    norm2 = float(np.dot(A.data, A.data))
    rre = math.sqrt(max(err2, 0.0) / norm2)
    return sizes, M, rre


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


# ----------------------------------------------------------------------------- selection
class _SelectionProblem:
    """Precomputed, r-independent pieces of L_b and L_m (all small or sparse)."""

    def __init__(self, Y: sp.csr_matrix, labels: np.ndarray, M: np.ndarray, delta: float):
        n, f = Y.shape
        k = M.shape[0]
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        sizes = np.bincount(labels, minlength=k).astype(np.float64)
        FtY = _k.block_feature_sums(Y.indptr, Y.indices, Y.data, labels, k, f)
        dinv = _pinv(sizes)
        self.Dbar = np.ascontiguousarray(dinv[:, None] * FtY)          # D^-1 F^T Y
        self.S = np.ascontiguousarray(np.sqrt(dinv)[:, None] * FtY)    # D^-1/2 F^T Y
        self.St = np.ascontiguousarray(self.S.T)                         # f x k
        self.Dbart = np.ascontiguousarray(self.Dbar.T)
        self.H = gram_squared(Y)                            # f x f, sparse or dense
        Mp = np.asarray(M, dtype=np.float64) + delta
        self.P = Mp / Mp.sum(axis=1, keepdims=True)
        self.delta = float(delta)
        self.n_features = f

    def H_matvec(self, r: np.ndarray, active: np.ndarray) -> np.ndarray:
        """``H r`` from the rows of the active features only (``r`` is zero elsewhere),
        so the cost shrinks as the weights become sparse."""
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


def projected_gradient(prob: "_SelectionProblem", beta: float, gamma: float, max_iter: int,
                       eta: float, progress=None):
    """BMGUFS's projected-gradient search for the feature weights r on a precomputed
    problem (the update of the :mod:`featagg_core.graph.bmgufs` module docstring).

    Parameters
    ----------
    prob : _SelectionProblem
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
    """
    f = prob.n_features
    clock = Throttle(0.25)
    r = np.full(f, 1.0 / math.sqrt(f))
    spars = gamma / math.sqrt(f)
    hist_b, hist_m, hist_nnz = [], [], []
    active = np.arange(f, dtype=np.int64)
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
        if progress is not None and (n_done % 10 == 0 or n_done == max_iter
                                     or clock.due()):
            progress("selection", n_done / max(max_iter, 1),
                     f"iteration {n_done}/{max_iter}: L_b {Lb:.4f}, L_m {Lm:.4f}, "
                     f"{active.size} non-zero weights")
    history = {"L_b": np.array(hist_b), "L_m": np.array(hist_m),
               "nnz": np.array(hist_nnz, dtype=np.int64)}
    return r, history, n_done, Q


def regularized_adjacency(A: sp.csr_matrix) -> sp.csr_matrix:
    """``D_t^-1/2 A D_t^-1/2`` with ``D_t = D + t I``, ``t`` the mean degree (Qin & Rohe
    2013; without it sparse graphs with many small components give one leading
    eigenvector per tiny component).

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric adjacency.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n)
    """
    d = np.asarray(A.sum(axis=1)).ravel()
    d = d + d.mean()
    s = np.zeros_like(d)
    s[d > 0] = d[d > 0] ** -0.5
    return (sp.diags(s) @ A @ sp.diags(s)).tocsr()


def spectral_embedding(A: sp.csr_matrix, k: int) -> np.ndarray:
    """Rows of the k leading eigenvectors of the regularised ``D_t^-1/2 A D_t^-1/2`` with
    ``D_t = D + t I``, ``t`` the mean degree (Qin & Rohe 2013: without it, sparse graphs
    with many small components - Cora, Citeseer - give one eigenvector per tiny component),
    from sparse ``eigsh``, rows L2-normalised (Ng, Jordan & Weiss); isolated nodes get a
    zero row.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric adjacency.
    k : int
        Eigenvectors wanted (at most n - 1 are computed).

    Returns
    -------
    ndarray, shape (n, min(k, n - 1))
        The embedding.
    """
    from scipy.sparse.linalg import eigsh
    n = A.shape[0]
    N = regularized_adjacency(A)
    kk = min(k, n - 1)
    v0 = np.random.RandomState(0).random_sample(n)
    _, V = eigsh(N, k=kk, which="LA", v0=v0)
    norm = np.linalg.norm(V, axis=1)
    V = V / np.where(norm > 0, norm, 1.0)[:, None]
    return V


def choose_n_blocks(A: sp.csr_matrix, k_range: Tuple[int, int] = K_RANGE
                    ) -> Tuple[int, np.ndarray, str]:
    """The eigengap rule (module docstring): ``(k, leading eigenvalues, sentence)``.

    ``k`` maximises ``lambda_k - lambda_{k+1}`` over ``k_range`` (clipped to the graph
    size; the first of equal gaps wins); the eigenvalues are the largest ``k_max + 1`` of
    :func:`regularized_adjacency`, in descending order (sparse ``eigsh``, fixed start
    vector).

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric adjacency.
    k_range : (int, int), default=K_RANGE
        The smallest and largest k considered.

    Returns
    -------
    tuple
        ``(k, leading eigenvalues, sentence saying how k was chosen)``.
    """
    from scipy.sparse.linalg import eigsh
    n = A.shape[0]
    k_lo, k_hi = int(k_range[0]), int(k_range[1])
    k_hi = min(k_hi, n - 2)
    if k_hi < k_lo:
        return max(1, min(k_lo, n)), np.zeros(0), (
            f"k = {max(1, min(k_lo, n))}: the graph is too small for the eigengap rule")
    N = regularized_adjacency(A)
    v0 = np.random.RandomState(0).random_sample(n)
    if n <= 400:                                  # small graphs: exact, dense eigvalsh
        w = np.linalg.eigvalsh(N.toarray())[::-1][:k_hi + 1]
    else:
        w = np.sort(eigsh(N, k=k_hi + 1, which="LA", v0=v0, return_eigenvectors=False))[::-1]
    ks = np.arange(k_lo, k_hi + 1)
    gaps = w[ks - 1] - w[ks]                      # lambda_k - lambda_{k+1} (1-based)
    j = int(np.argmax(gaps))
    k = int(ks[j])
    return k, w, (f"k = {k} blocks by the eigengap rule: the largest gap between "
                  f"consecutive eigenvalues of the normalised adjacency among k = "
                  f"{k_lo}..{k_hi} is after the {k}th ({w[k - 1]:.3f} - {w[k]:.3f} = "
                  f"{gaps[j]:.3f})")


def block_fit_quality(A: sp.csr_matrix, candidates: Sequence, random_state: int = 0
                      ) -> Tuple[Dict[str, float], Optional[str]]:
    """How well the candidate block models reconstruct ``A`` (module docstring):
    ``({"best_rre", "worst_rre", "null_rre", "explained", "null_explained", "lift"},
    warning or None)``.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric adjacency.
    candidates : sequence of fitted BlockModel
        The candidates (at least one).
    random_state : int, default=0
        Seeds the random partitions of the null model.

    Returns
    -------
    tuple
        ``(quality dict, warning sentence or None)``.
    """
    rre = np.array([bm.rre_ for bm in candidates], dtype=np.float64)
    best = candidates[int(np.argmin(rre))]
    k = int(best.M_.shape[0])
    rng = np.random.default_rng(random_state)
    null = float(np.mean([_block_image(A, rng.permutation(best.labels_), k)[2]
                          for _ in range(5)]))
    explained = 1.0 - float(rre.min()) ** 2
    null_explained = 1.0 - null ** 2
    lift = explained / null_explained if null_explained > 0 else math.inf
    out = {"best_rre": float(rre.min()), "worst_rre": float(rre.max()), "null_rre": null,
           "explained": explained, "null_explained": null_explained, "lift": float(lift)}
    warning = None
    if rre.min() >= POOR_FIT_RRE:
        lift_text = (f"{lift:.1f}x what a random partition of the same block sizes "
                     f"reconstructs" if math.isfinite(lift) else "")
        verdict = ("barely better than chance: the graph shows little block structure at "
                   f"k = {k}" if lift < 1.5 else
                   "the graph is sparse; the blocks still beat chance")
        warning = (f"every candidate block model fits poorly: the best of {rre.size} has "
                   f"RRE {rre.min():.4f} (worst {rre.max():.4f}) and reconstructs "
                   f"{100 * explained:.1f} % of ||A||^2, {lift_text} — {verdict}. The "
                   "selection is only as good as this guidance; try another number of "
                   "blocks or compare with the baselines")
    return out, warning


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


# ---------------------------------------------------------------------------
# BMGUFS's artifact state
# ---------------------------------------------------------------------------
@fill_doc
def bmgufs_artifact_state(model):
    """``(meta, arrays)`` of a fitted :class:`featagg_core.graph.bmgufs.BMGUFS` (its
    ``_artifact_state``): the selection, the candidates' own states prefixed
    ``cand<c>_``.

    Parameters
    ----------
    model : BMGUFS
        Fitted.

    {artifact_state_returns}
    """
    model._check_fitted()
    meta = {"n_iter_": int(model.n_iter_), "candidate_index_": int(model.candidate_index_),
            "n_features_in_": int(model.n_features_in_),
            "timings_": {k: float(v) for k, v in model.timings_.items()},
            "n_candidates_fitted": len(model.candidates_),
            "candidates": [bm.get_params() for bm in model.candidates_],
            "candidate_meta": [bm._artifact_state()[0] for bm in model.candidates_]}
    meta.update({"n_blocks_": int(model.n_blocks_), "n_blocks_rule_": model.n_blocks_rule_,
                 "gamma_": float(model.gamma_),
                 "gamma_path_": [[float(g), int(z)] for g, z in model.gamma_path_],
                 "fit_quality_": {k: float(v) for k, v in model.fit_quality_.items()},
                 "fit_warning_": model.fit_warning_})
    arrays = {"scores_": model.scores_, "target_similarity_": model.target_similarity_,
              "induced_similarity_": model.induced_similarity_,
              "candidate_rre_": model.candidate_rre_}
    for key, val in model.history_.items():
        arrays[f"history_{key}"] = val
    for c, bm in enumerate(model.candidates_):
        for name, arr in bm._artifact_state()[1].items():
            arrays[f"cand{c}_{name}"] = arr
    return meta, arrays


def bmgufs_from_artifact_state(cls, params, meta, arrays):
    """A fitted ``cls`` (:class:`featagg_core.graph.bmgufs.BMGUFS`) from
    :func:`bmgufs_artifact_state`'s output (its ``_from_artifact_state``).

    Parameters
    ----------
    cls : type
        BMGUFS.
    params, meta, arrays : dict
        The estimator's parameters and :func:`bmgufs_artifact_state`'s output.

    Returns
    -------
    BMGUFS
        Fitted.
    """
    from featagg_core.graph.bmgufs import BlockModel

    obj = cls(**params)
    obj.scores_ = np.asarray(arrays["scores_"], dtype=np.float64)
    obj.history_ = {key: np.asarray(arrays[f"history_{key}"])
                    for key in ("L_b", "L_m", "nnz")}
    obj.n_iter_ = int(meta["n_iter_"])
    obj.n_features_in_ = int(meta["n_features_in_"])
    obj.timings_ = dict(meta.get("timings_", {}))
    obj.target_similarity_ = np.asarray(arrays["target_similarity_"])
    obj.induced_similarity_ = np.asarray(arrays["induced_similarity_"])
    obj.candidate_rre_ = np.asarray(arrays["candidate_rre_"])
    cands = []
    for c in range(int(meta["n_candidates_fitted"])):
        sub = {name[len(f"cand{c}_"):]: arr for name, arr in arrays.items()
               if name.startswith(f"cand{c}_")}
        cands.append(BlockModel._from_artifact_state(meta["candidates"][c],
                                                     meta["candidate_meta"][c], sub))
    obj.candidates_ = cands
    obj.candidate_index_ = int(meta["candidate_index_"])
    obj.block_model_ = cands[obj.candidate_index_]
    # artifacts written before these attributes existed get what can be rebuilt
    obj.n_blocks_ = int(meta.get("n_blocks_", obj.block_model_.M_.shape[0]))
    obj.n_blocks_rule_ = meta.get("n_blocks_rule_", f"k = {obj.n_blocks_} blocks")
    obj.gamma_ = float(meta.get("gamma_", obj.gamma))
    obj.gamma_path_ = [(float(g), int(z)) for g, z in
                       meta.get("gamma_path_", [[obj.gamma_, int(np.count_nonzero(
                           obj.scores_))]])]
    obj.fit_quality_ = dict(meta.get("fit_quality_", {}))
    obj.fit_warning_ = meta.get("fit_warning_")
    return obj
