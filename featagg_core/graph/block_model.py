"""Block models of a graph: :class:`BlockModel` (``A ~ F M F^T`` by symmetric orthogonal
non-negative matrix tri-factorisation, ONMtF, Ding, Li, Peng & Park, KDD 2006) and what
belongs to a block model: its binary block image (block sizes, densities ``M`` and the
relative reconstruction error, RRE, of a partition), the spectral embedding its restarts
may start from, the rule that picks the number of blocks when nothing else says it, and
the check of how well candidate block models fit. :class:`featagg_core.graph.bmgufs.BMGUFS`
is guided by one of them.

* Number of blocks without labels: :func:`choose_n_blocks`. First the *eigengap* of the
  regularised normalised adjacency ``D_t^-1/2 A D_t^-1/2`` (``D_t = D + mean degree``, the
  matrix whose eigenvectors the spectral start of ONMtF uses) among k = 2 .. 20: the k
  with the largest ``lambda_k - lambda_{k+1}`` (von Luxburg, "A tutorial on spectral
  clustering", 2007, §8.3) — but only when that gap is clear, at least ``CLEAR_GAP``
  times the median gap. Otherwise the *modularity knee*: the smallest k whose spectral
  partition reaches ``KNEE_SHARE`` of the best :func:`modularity` over k = 2 .. 20. The
  sentence returned says which part decided, so a person can overrule it.

  Why this rule (``benchmarks/bmgufs_bench.py --no-labels``, figures in
  ``benchmarks/results/bmgufs_no_labels.md``): on planted-partition graphs (k = 2, 3, 5,
  8) and on one dense block in a sparse graph the eigengap finds the right k every time
  and its gap is tens to hundreds of times the median gap; the modularity argmax misses
  the single block, and the RRE elbow misses k = 2 (a knee cannot sit at the end of the
  curve). On Cora, Citeseer and BlogCatalog, and on random graphs without blocks, the
  largest gap is only 2–6 times the median gap — noise — and the eigengap's k (2 on Cora
  and Citeseer) guided selections that lost to variance / the Laplacian score there;
  the modularity knee's larger k did not lose on Cora and Citeseer, and a clear gap
  (planted graphs, the bundled synthetic graph) keeps the eigengap's k. No rule made
  BMGUFS win on BlogCatalog (see the results file).
* Fit of the block models: :func:`block_fit_quality` — the RRE of every candidate, the
  share of ``||A||^2`` the best one reconstructs (``1 - RRE^2``) and the same share for a
  random partition with the best model's block sizes (the mean of 5 permutations). A
  warning is raised when every candidate has ``RRE >= POOR_FIT_RRE`` (0.95: the block
  model reconstructs less than 10 % of ``||A||^2``); the message gives the lift over the
  random partition so the reader can tell "sparse but structured" from "no block
  structure" (about 1x; lifts measured in ``benchmarks/results/bmgufs.md``).
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from featagg_core._kernels import bmgufs as _k
from featagg_core.graph.inputs import BLOCK_INIT, RANDOM_STATE, check_adjacency
from featagg_core.utils.polling import call_polled, new_stop
from featagg_core.utils.validation import Interval, parameter_error, validate_params

__all__ = ["BlockModel", "block_image", "regularized_adjacency", "spectral_embedding",
           "choose_n_blocks", "modularity", "block_fit_quality", "POOR_FIT_RRE", "K_RANGE",
           "CLEAR_GAP", "KNEE_SHARE"]

#: every candidate at or above this RRE: the block models "fit poorly" (warning)
POOR_FIT_RRE = 0.95
#: the range of k the eigengap rule searches
K_RANGE = (2, 20)
#: the largest eigengap must be this many times the median gap to decide k
CLEAR_GAP = 6.5
#: the modularity knee: the smallest k reaching this share of the largest modularity
KNEE_SHARE = 0.9


def pinv_diag(v: np.ndarray) -> np.ndarray:
    """The pseudo-inverse of ``diag(v)`` for block sizes ``v``: 1/v, and 0 for empty blocks.

    Parameters
    ----------
    v : ndarray, shape (k,)
        Non-negative sizes.

    Returns
    -------
    ndarray of float64, shape (k,)
    """
    out = np.zeros_like(v, dtype=np.float64)
    nz = v > 0
    out[nz] = 1.0 / v[nz]
    return out


def block_image(A: sp.csr_matrix, labels: np.ndarray, k: int):
    """Block sizes D, image matrix M = D^-1 F^T A F D^-1 (block densities) and the RRE of
    the binary block model, all from O(nnz(A)) passes.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Checked adjacency (:func:`featagg_core.graph.inputs.check_adjacency`).
    labels : array of int, shape (n,)
        Block of every node.
    k : int
        Number of blocks.

    Returns
    -------
    tuple
        ``(sizes, M, rre)``: ndarray (k,), ndarray (k, k) and float.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    B = _k.block_edge_sums(A.indptr, A.indices, A.data, labels, k)
    dinv = pinv_diag(sizes)
    M = dinv[:, None] * B * dinv[None, :]
    # ||A - F M F^T||^2 = sum_nnz [(a - m)^2 - m^2] + sum_ab D_a D_b M_ab^2
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    m_nz = M[labels[rows], labels[A.indices]]
    err2 = float(np.sum((A.data - m_nz) ** 2 - m_nz ** 2)
                 + np.sum(sizes[:, None] * sizes[None, :] * M ** 2))
    norm2 = float(np.dot(A.data, A.data))
    rre = math.sqrt(max(err2, 0.0) / norm2)
    return sizes, M, rre


class BlockModel(BaseEstimator):
    """Block model of an undirected graph by orthogonal non-negative tri-factorisation.

    Fits ``A ~ F S F^T`` (``F >= 0`` n x k, ``S >= 0`` k x k) with Ding et al.'s (2006)
    multiplicative updates for the symmetric case, binarises ``F`` by row argmax (ties to
    the lower block), and recomputes the image matrix from the binary ``F`` as block
    densities ``M = D^-1 F^T A F D^-1`` with ``D = F^T F`` (the least-squares ``M`` for
    that partition). Everything is computed from sparse products; nothing n x n is formed.

    Parameters
    ----------
    n_blocks : int
        Number of blocks k.
    n_iter : int, default 100
        Multiplicative-update iterations (the paper uses 100).
    random_state : int, RandomState or None, default 0
        Seed of the initial ``F`` (the k-means seed for ``init="spectral"``).
    init : {"spectral", "random"}, default "random"
        ``"random"``: ``F_0`` uniform(0.1, 1.1). ``"spectral"``: one-hot k-means labels of
        the spectral embedding of ``A`` plus 0.2 (Ding et al. start ONMtF from k-means
        labels the same way); different seeds give different restarts.

    Attributes
    ----------
    labels_ : ndarray of int64, shape (n,)
        Block of each node (row argmax of the soft ``F``).
    M_ : ndarray, shape (k, k)
        Image matrix: edge density between blocks (0 rows/columns for empty blocks).
    rre_ : float
        Relative reconstruction error ``||A - F M F^T||_F / ||A||_F`` of the binary model.
    block_sizes_ : ndarray, shape (k,)
        Nodes per block (the diagonal of ``D``).
    F_ : ndarray, shape (n, k)
        Soft memberships from ONMtF.
    S_ : ndarray, shape (k, k)
        ONMtF's own (soft) image matrix.
    objective_ : ndarray, shape (n_iter_ + 1,)
        ``||A - F S F^T||_F^2`` before the first and after each kept update.
    n_iter_ : int
        Updates kept: ``n_iter``, or fewer when an update would have raised the objective
        (the orthogonality-constrained updates can creep up near a partition; that update
        is undone and the fit stops).

    Notes
    -----
    Follows the paper: ONMtF with 100 iterations, argmax binarisation, RRE. Ours: the
    initial ``F`` (random or spectral, unit-norm columns) with ``S_0 = F_0^T A F_0`` (its
    least-squares value for orthonormal ``F_0``); ``F`` is updated before ``S``. From a
    random start 100 iterations often stay near the symmetric saddle (on a clear planted
    SBM the blocks came out barely better than chance); the spectral start reaches a
    lower RRE on every graph we tried, so :class:`BMGUFS` uses it by default. It is not
    better for the selection everywhere: on BlogCatalog the random-start models (no real
    block structure) guided better selections (benchmarks/results/bmgufs.md).
    Nodes without edges keep a zero row in ``F`` and land in block 0.
    """

    _parameter_constraints: dict = {
        "n_blocks": [Interval(Integral, 1, None, closed="left")],
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
        "init": BLOCK_INIT,
    }

    def __init__(self, n_blocks=2, n_iter=100, random_state=0, init="random"):
        self.n_blocks = n_blocks
        self.n_iter = n_iter
        self.random_state = random_state
        self.init = init

    def fit(self, A, y=None, _embedding=None, progress: Optional[Callable] = None):
        """Fit the block model to the adjacency matrix ``A`` (n x n, symmetric, >= 0).

        Parameters
        ----------
        A : sparse or dense matrix, shape (n, n)
            Symmetric non-negative adjacency matrix with at least one edge.
        y : None
            Ignored (scikit-learn's signature).
        _embedding : ndarray, shape (n, k), optional
            A spectral embedding of ``A`` computed by the caller (``init="spectral"``;
            :class:`BMGUFS` computes it once for all its restarts).
        progress : callable(fraction, message), optional
            Called at the start, after the initialisation and about every 0.1 s while
            ONMtF runs; it may raise (e.g. :class:`featagg_core.utils.cancel.Cancelled`) to
            stop: ONMtF then ends after its current update and the exception propagates.

        Returns
        -------
        BlockModel
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints``, more blocks than nodes, or
            a bad ``A`` (not square or symmetric, negative weights, no edges).
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        if progress is not None:
            progress(0.0, "block model: starting")
        A = check_adjacency(A)
        n = A.shape[0]
        k = int(self.n_blocks)
        if k > n:
            raise parameter_error("n_blocks", f"at most the number of nodes ({n})", k)
        n_iter = int(self.n_iter)
        rng = check_random_state(self.random_state)
        if self.init == "random":
            F = rng.random_sample((n, k)) + 0.1
        else:
            from sklearn.cluster import KMeans
            emb = spectral_embedding(A, k) if _embedding is None else _embedding
            lab = KMeans(n_clusters=k, n_init=1,
                         random_state=rng.randint(2 ** 31 - 1)).fit_predict(emb)
            F = np.full((n, k), 0.2)
            F[np.arange(n), lab] += 1.0
        F /= np.linalg.norm(F, axis=0)[None, :]
        F = np.ascontiguousarray(F)
        S = np.ascontiguousarray(F.T @ (A @ F))
        norm_a2 = float(np.dot(A.data, A.data))
        tick = None
        if progress is not None:
            progress(0.1, "block model: ONMtF")

            def tick():
                progress(0.1, "block model: ONMtF")
        stop = new_stop()
        objective = call_polled(_k.onmtf_symmetric,
                                (A.indptr, A.indices, A.data, norm_a2, F, S, n_iter, 1e-300,
                                 stop), stop, tick)
        self.F_ = F
        self.S_ = S
        self.objective_ = objective
        self.n_iter_ = objective.shape[0] - 1
        self.labels_ = np.argmax(F, axis=1).astype(np.int64)
        self.block_sizes_, self.M_, self.rre_ = block_image(A, self.labels_, k)
        self.n_nodes_ = n
        if progress is not None:
            progress(1.0, f"block model: RRE {self.rre_:.4f}")
        return self

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("This BlockModel is not fitted yet: call fit(A) first")

    @classmethod
    def from_labels(cls, A, labels, n_blocks=None):
        """A binary block model with the given node partition (no ONMtF): ``M_`` and
        ``rre_`` are computed from ``A``. Useful to guide BMGUFS by known communities.

        Parameters
        ----------
        A : sparse or dense matrix, shape (n, n)
            Symmetric non-negative adjacency matrix.
        labels : array of int, shape (n,)
            Block id of every node (>= 0).
        n_blocks : int, optional
            Number of blocks (default: the largest id + 1; empty blocks are allowed).

        Returns
        -------
        BlockModel
            Fitted, with ``n_iter_ = 0``, ``F_`` the one-hot memberships and ``S_ = M_``.

        Raises
        ------
        ValueError
            For a bad ``A`` or labels that are not ``n`` integer ids below ``n_blocks``.
        """
        A = check_adjacency(A)
        labels = np.asarray(labels)
        if labels.shape != (A.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels: expected {A.shape[0]} integer block ids")
        if labels.min() < 0:
            raise ValueError("labels: block ids must be >= 0")
        k = int(labels.max()) + 1 if n_blocks is None else int(n_blocks)
        if labels.max() >= k:
            raise ValueError(f"labels: block id {labels.max()} >= n_blocks={k}")
        bm = cls(n_blocks=k, n_iter=0)
        bm.labels_ = labels.astype(np.int64)
        bm.block_sizes_, bm.M_, bm.rre_ = block_image(A, bm.labels_, k)
        F = np.zeros((A.shape[0], k))
        F[np.arange(A.shape[0]), bm.labels_] = 1.0
        bm.F_ = F
        bm.S_ = bm.M_.copy()
        bm.objective_ = np.array([(bm.rre_ ** 2) * float(np.dot(A.data, A.data))])
        bm.n_iter_ = 0
        bm.n_nodes_ = A.shape[0]
        return bm

    # artifacts protocol -------------------------------------------------------
    def _artifact_state(self):
        self._check_fitted()
        meta = {"rre_": float(self.rre_), "n_nodes_": int(self.n_nodes_),
                "n_iter_": int(self.objective_.shape[0] - 1)}
        arrays = {"labels_": self.labels_, "M_": self.M_, "block_sizes_": self.block_sizes_,
                  "F_": self.F_, "S_": self.S_, "objective_": self.objective_}
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        obj.rre_ = float(meta["rre_"])
        obj.n_nodes_ = int(meta["n_nodes_"])
        obj.n_iter_ = int(meta.get("n_iter_", 0))
        for name in ("labels_", "M_", "block_sizes_", "F_", "S_", "objective_"):
            setattr(obj, name, np.asarray(arrays[name]))
        obj.labels_ = obj.labels_.astype(np.int64)
        return obj


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


def modularity(A: sp.csr_matrix, labels: np.ndarray, k: int) -> float:
    """Newman's modularity of a partition: ``sum_c (e_cc / 2m - (d_c / 2m)^2)``, from the
    k x k block edge sums (one pass over the non-zeros of ``A``).

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Checked symmetric adjacency (:func:`featagg_core.graph.inputs.check_adjacency`).
    labels : array of int, shape (n,)
        Block of every node, in ``0 .. k-1``.
    k : int
        Number of blocks.

    Returns
    -------
    float
        The modularity (0 for a graph without edges).
    """
    B = _k.block_edge_sums(A.indptr, A.indices, A.data,
                           np.ascontiguousarray(labels, dtype=np.int64), int(k))
    two_m = float(B.sum())
    if two_m <= 0:
        return 0.0
    dc = B.sum(axis=1) / two_m
    return float(np.trace(B) / two_m - np.sum(dc * dc))


def _leading_eigen(A: sp.csr_matrix, m: int):
    """The ``m`` largest eigenvalues (descending) of :func:`regularized_adjacency` and their
    eigenvectors (dense ``eigh`` up to 400 nodes, sparse ``eigsh`` with a fixed start
    vector above)."""
    from scipy.sparse.linalg import eigsh
    n = A.shape[0]
    N = regularized_adjacency(A)
    if n <= 400:
        w, V = np.linalg.eigh(N.toarray())
    else:
        w, V = eigsh(N, k=m, which="LA", v0=np.random.RandomState(0).random_sample(n))
    order = np.argsort(-w, kind="stable")[:m]
    return w[order], V[:, order]


def choose_n_blocks(A: sp.csr_matrix, k_range: Tuple[int, int] = K_RANGE
                    ) -> Tuple[int, np.ndarray, str]:
    """The number of blocks without labels (module docstring): ``(k, leading eigenvalues,
    sentence)``.

    The eigengap first: the gaps ``lambda_k - lambda_{k+1}`` over ``k_range`` (clipped to
    the graph size) of the largest ``k_max + 1`` eigenvalues of
    :func:`regularized_adjacency`, in descending order. When the largest gap is at least
    ``CLEAR_GAP`` times the median gap the spectrum shows blocks, and ``k`` is where that
    gap is (the first of equal gaps). Otherwise there is no spectral evidence for any k
    and ``k`` is the **modularity knee**: the smallest k in ``k_range`` whose spectral
    partition (k-means, one start, seed 0, on the rows of the k leading eigenvectors,
    L2-normalised — the partition the block models start from) has a
    :func:`modularity` of at least ``KNEE_SHARE`` of the largest over ``k_range``: the k
    after which more blocks add little community structure.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric adjacency.
    k_range : (int, int), default=K_RANGE
        The smallest and largest k considered.

    Returns
    -------
    tuple
        ``(k, leading eigenvalues, sentence saying how k was chosen)``; the sentence
        names the rule ("eigengap rule" or "modularity knee").
    """
    n = A.shape[0]
    k_lo, k_hi = int(k_range[0]), int(k_range[1])
    k_hi = min(k_hi, n - 2)
    if k_hi < k_lo:
        return max(1, min(k_lo, n)), np.zeros(0), (
            f"k = {max(1, min(k_lo, n))}: the graph is too small for the eigengap rule")
    w, V = _leading_eigen(A, k_hi + 1)
    ks = np.arange(k_lo, k_hi + 1)
    gaps = w[ks - 1] - w[ks]                      # lambda_k - lambda_{k+1} (1-based)
    j = int(np.argmax(gaps))
    med = float(np.median(gaps))
    clear = gaps[j] >= CLEAR_GAP * med if med > 0 else gaps[j] > 0
    if clear or ks.size < 3:
        k = int(ks[j])
        return k, w, (f"k = {k} blocks by the eigengap rule: the largest gap between "
                      f"consecutive eigenvalues of the normalised adjacency among k = "
                      f"{k_lo}..{k_hi} is after the {k}th ({w[k - 1]:.3f} - {w[k]:.3f} = "
                      f"{gaps[j]:.3f}, {gaps[j] / med if med > 0 else math.inf:.0f}x the "
                      "median gap)")
    from sklearn.cluster import KMeans
    mods = []
    for k in ks:
        E = V[:, :k]
        norm = np.linalg.norm(E, axis=1)
        E = E / np.where(norm > 0, norm, 1.0)[:, None]
        lab = KMeans(n_clusters=int(k), n_init=1, random_state=0).fit_predict(E)
        mods.append(modularity(A, lab, int(k)))
    mods = np.asarray(mods)
    i = int(np.flatnonzero(mods >= KNEE_SHARE * mods.max())[0]) if mods.max() > 0 else 0
    k = int(ks[i])
    return k, w, (f"k = {k} blocks by the modularity knee: the spectrum shows no clear gap "
                  f"(the largest, after the {int(ks[j])}th eigenvalue, is only "
                  f"{gaps[j] / med:.1f}x the median gap), and k = {k} is the smallest k in "
                  f"{k_lo}..{k_hi} whose spectral partition reaches "
                  f"{100 * KNEE_SHARE:.0f} % of the largest modularity ({mods[i]:.3f} of "
                  f"{mods.max():.3f})")


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
    null = float(np.mean([block_image(A, rng.permutation(best.labels_), k)[2]
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
