"""Unsupervised feature-selection baselines for attributed graphs (the peers of BMGUFS).

Every scorer returns one score per feature; :func:`rank_features` turns scores into a
ranking (best first, ties to the lower index). Everything stays sparse: per-feature
quadratic forms ``x_l^T A x_l`` come from one O(sum over edges of nnz(x_j)) kernel pass,
never from ``A X`` or a dense Gram matrix.

- :func:`laplacian_score` — He, Cai & Niyogi, NIPS 2005 (smaller is better), on any
  affinity graph: the given graph, or :func:`knn_graph` of the features.
- :func:`spec_score` — Zhao & Liu, ICML 2007, the three ranking functions of
  scikit-feature's ``SPEC.spec`` (``style=-1``: phi1, ``0``: phi2, ``>=2``: phi3 with that
  many leading eigenvectors). phi2 equals the Laplacian score algebraically, so the
  benchmark uses phi3.
- :func:`ndfs_score` — Li et al., AAAI 2012 (non-negative discriminative feature selection),
  with the ``(X^T X + beta D)^-1`` solves done by preconditioned conjugate gradients on the
  sparse ``X`` (nothing f x f or n x n is formed).
- :func:`variance_score`, :func:`random_scores`; "all features" needs no scorer.

The scorers that take time (:func:`knn_graph`, :func:`laplacian_score`,
:func:`spec_score`, :func:`ndfs_score`) accept ``progress=None``, a
``callback(fraction, message)`` called between their steps (per chunk of kNN queries, per
NDFS iteration); it may raise :class:`featagg_core.utils.cancel.Cancelled`, which propagates.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from featagg_core._kernels.bmgufs import quad_diag_csr
from featagg_core.utils.validation import Interval, Options, check_param
from featagg_core.utils.docstrings import fill_doc

__all__ = ["knn_graph", "laplacian_score", "spec_score", "ndfs_score", "variance_score",
           "random_scores", "rank_features", "BASELINES"]

#: method name -> whether larger scores are better
BASELINES = {"laplacian_graph": False, "laplacian_knn": False, "spec_knn": True,
             "spec_graph": True, "ndfs": True, "variance": True, "random": True}


def _features(X) -> sp.csr_matrix:
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"X: expected a 2-D node x feature matrix, got {arr.ndim}-D")
        X = sp.csr_matrix(arr)
    if X.nnz and not np.all(np.isfinite(X.data)):
        raise ValueError("X: contains NaN or infinite values")
    X.sum_duplicates()
    X.sort_indices()
    return X


def _graph(W, n) -> sp.csr_matrix:
    W = sp.csr_matrix(W, dtype=np.float64)
    if W.shape != (n, n):
        raise ValueError(f"W: expected an {n} x {n} affinity matrix, got {W.shape}")
    if W.nnz and W.data.min() < 0:
        raise ValueError("W: affinities must be non-negative")
    W.sum_duplicates()
    W.sort_indices()
    return W


def _say(progress, fraction, message):
    if progress is not None:
        progress(float(fraction), message)


@fill_doc
def knn_graph(X, n_neighbors: int = 5, metric: str = "cosine",
              progress=None) -> sp.csr_matrix:
    """Symmetric kNN affinity graph of the rows of ``X`` (``max(W, W^T)``).

    ``metric="cosine"``: weight = cosine similarity (scikit-feature's ``weight_mode=
    "cosine"``, the usual choice for bag-of-words node features); ``"heat"``: Euclidean
    neighbours with the heat kernel ``exp(-d^2 / t)``, ``t`` the mean squared neighbour
    distance. Rows that are all zero get no edges. The queries run in chunks of rows
    (each row's neighbours do not depend on the others), with ``progress`` in between.

    Parameters
    ----------
    {fs_X}
    n_neighbors : int, default 5
        Neighbours per node (at most ``n - 1`` are used), >= 1.
    metric : {"cosine", "heat"}, default "cosine"
        The weighting (see above).
    {fs_progress}

    Returns
    -------
    csr_matrix of float64 (n, n)
        Symmetric, non-negative, no self loops.

    Raises
    ------
    ValueError
        For bad X, ``n_neighbors < 1`` or an unknown ``metric``.
    """
    from sklearn.neighbors import NearestNeighbors
    X = _features(X)
    n = X.shape[0]
    check_param("n_neighbors", n_neighbors, [Interval(Integral, 1, None, closed="left")])
    k = min(int(n_neighbors), n - 1)
    check_param("metric", metric, [Options(str, ("cosine", "heat"))])
    nonzero = np.diff(X.indptr) > 0
    rows = np.flatnonzero(nonzero)
    Xn = X[rows]
    if rows.size < 2:
        return sp.csr_matrix((n, n))
    k = min(k, rows.size - 1)
    nn = NearestNeighbors(n_neighbors=k + 1, metric="cosine" if metric == "cosine"
                          else "euclidean", algorithm="brute")
    nn.fit(Xn)
    m = rows.size
    chunk = max(64, min(m, 4_000_000 // max(m, 1)))
    dist = np.empty((m, k + 1))
    ind = np.empty((m, k + 1), dtype=np.int64)
    for lo in range(0, m, chunk):
        _say(progress, 0.9 * lo / m, f"{k}-NN graph: {lo:,}/{m:,} nodes")
        dist[lo:lo + chunk], ind[lo:lo + chunk] = nn.kneighbors(Xn[lo:lo + chunk])
    src = np.repeat(np.arange(rows.size), k + 1)
    dst = ind.ravel()
    d = dist.ravel()
    keep = dst != src
    src, dst, d = src[keep], dst[keep], d[keep]
    if metric == "cosine":
        w = np.clip(1.0 - d, 0.0, None)
    else:
        t = float(np.mean(d ** 2)) or 1.0
        w = np.exp(-(d ** 2) / t)
    W = sp.csr_matrix((w, (rows[src], rows[dst])), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    _say(progress, 1.0, f"{k}-NN graph: done")
    return W


def _quad_parts(X: sp.csr_matrix, W: sp.csr_matrix):
    """Per feature: x^T W x, x^T D x, x^T d and sum(d) for the degree vector d of W."""
    d = np.asarray(W.sum(axis=1)).ravel()
    xWx = quad_diag_csr(W.indptr, W.indices, W.data, X.indptr, X.indices, X.data,
                        X.shape[1])
    X2 = X.multiply(X).tocsc()
    xDx = X2.T @ d
    xd = X.T @ d
    return d, xWx, np.asarray(xDx).ravel(), np.asarray(xd).ravel()


@fill_doc
def laplacian_score(X, W, progress=None) -> np.ndarray:
    """Laplacian score of every column of ``X`` on the affinity graph ``W`` (smaller =
    better): ``f~^T L f~ / f~^T D f~`` with ``f~ = f - (f^T D 1 / 1^T D 1) 1``.

    Computed as ``(x^T D x - x^T W x) / (x^T D x - (x^T d)^2 / sum(d))``; features that are
    constant on the graph (zero denominator) get ``inf`` (ranked last).

    Parameters
    ----------
    {fs_X}
    {fs_W}
    {fs_progress}

    Returns
    -------
    float64 array (f,)
        Smaller is better.

    Raises
    ------
    ValueError
        For bad X, a W of another shape, negative affinities or a graph without edges.
    """
    _say(progress, 0.0, "Laplacian score: quadratic forms")
    X = _features(X)
    W = _graph(W, X.shape[0])
    d, xWx, xDx, xd = _quad_parts(X, W)
    _say(progress, 0.9, "Laplacian score: ratios")
    total = d.sum()
    if total <= 0:
        raise ValueError("W: the affinity graph has no edges")
    num = xDx - xWx
    den = xDx - xd ** 2 / total
    out = np.full(X.shape[1], np.inf)
    ok = den > 1e-12 * np.maximum(xDx, 1e-300)
    out[ok] = np.maximum(num[ok], 0.0) / den[ok]
    return out


@fill_doc
def spec_score(X, W, style: int = -1, progress=None) -> np.ndarray:
    """SPEC feature scores (Zhao & Liu 2007) on the affinity graph ``W``.

    With ``f^ = D^1/2 f / ||D^1/2 f||`` and the normalised Laplacian
    ``L_n = I - D^-1/2 W D^-1/2`` (eigenpairs ``(lambda_j, xi_j)`` ascending):

    - ``style=-1``: phi1 = ``f^T L_n f^`` (smaller = better; returned negated so that
      larger is better for every style),
    - ``style=0``: phi2 = ``phi1 / (1 - (f^T xi_1)^2)`` (also negated),
    - ``style=k>=2``: phi3 = ``sum_{j=2..k} (2 - lambda_j) (f^T xi_j)^2`` (larger = better).

    Larger returned values are always better. Nodes of degree 0 are left out.

    Parameters
    ----------
    {fs_X}
    {fs_W}
    style : int, default -1
        -1, 0 or an integer >= 2 (see above).
    {fs_progress}

    Returns
    -------
    float64 array (f,)
        Larger is better; ``-inf`` for features without mass on the graph.

    Raises
    ------
    ValueError
        For bad X or W, a bad ``style``, or a graph without edges.
    """
    from scipy.sparse.linalg import eigsh
    X = _features(X)
    W = _graph(W, X.shape[0])
    check_param("style", style, [Interval(Integral, -1, 0, closed="both"),
                                 Interval(Integral, 2, None, closed="left")])
    _say(progress, 0.0, "SPEC: quadratic forms")
    d, xWx, xDx, xd = _quad_parts(X, W)
    _say(progress, 0.3, "SPEC: spectrum" if style >= 2 else "SPEC: ratios")
    if d.sum() <= 0:
        raise ValueError("W: the affinity graph has no edges")
    out = np.full(X.shape[1], -np.inf)
    ok = xDx > 0
    if style == -1:
        out[ok] = -(xDx[ok] - xWx[ok]) / xDx[ok]
        return out
    if style == 0:
        den = xDx - xd ** 2 / d.sum()
        ok2 = ok & (den > 1e-12 * np.maximum(xDx, 1e-300))
        out[ok2] = -(xDx[ok2] - xWx[ok2]) / den[ok2]
        return out
    keep = d > 0
    idx = np.flatnonzero(keep)
    dk = d[idx]
    Wk = W[idx][:, idx]
    s = 1.0 / np.sqrt(dk)
    Nk = sp.diags(s) @ Wk @ sp.diags(s)
    k = min(int(style), idx.size - 1)
    # largest eigenvalues of D^-1/2 W D^-1/2 = smallest of L_n (mu = 1 - lambda)
    rng = np.random.RandomState(0)
    mu, V = eigsh(Nk, k=k, which="LA", v0=rng.random_sample(idx.size))
    order = np.argsort(-mu)
    mu, V = mu[order], V[:, order]
    lam = 1.0 - mu
    Xk = X[idx]
    proj = np.asarray((Xk.T @ (V * np.sqrt(dk)[:, None])))      # f x k: (D^1/2 f)^T xi_j
    norm2 = xDx                                                   # ||D^1/2 f||^2 (same nodes)
    with np.errstate(divide="ignore", invalid="ignore"):
        coef = (proj ** 2) / norm2[:, None]
    phi3 = (coef[:, 1:] * (2.0 - lam[None, 1:])).sum(axis=1)
    out[ok] = phi3[ok]
    return out


@fill_doc
def variance_score(X) -> np.ndarray:
    """Column variance (population) of ``X``, computed from sparse sums.

    Parameters
    ----------
    {fs_X}

    Returns
    -------
    float64 array (f,)
        Larger is better.
    """
    X = _features(X)
    n = X.shape[0]
    mean = np.asarray(X.sum(axis=0)).ravel() / n
    mean2 = np.asarray(X.multiply(X).sum(axis=0)).ravel() / n
    return np.maximum(mean2 - mean ** 2, 0.0)


def random_scores(n_features: int, random_state=0) -> np.ndarray:
    """Uniform random scores: a random ranking.

    Parameters
    ----------
    n_features : int
        How many scores.
    random_state : int, RandomState or None, default 0
        As :func:`sklearn.utils.check_random_state`.

    Returns
    -------
    float64 array (n_features,)
    """
    return check_random_state(random_state).random_sample(int(n_features))


def _block_pcg(matvec, B, diag, tol=1e-6, max_iter=200, X0=None):
    """Jacobi-preconditioned CG for the SPD system ``A X = B`` with several right-hand sides
    (columns, solved together). A column stops once its residual is below ``tol`` times
    its right-hand side, or when its recurrence breaks down (round-off on an extremely
    ill-conditioned system); the iterate is then kept as it is."""
    X = np.zeros_like(B) if X0 is None else X0.copy()
    R = B - matvec(X)
    Minv = 1.0 / diag
    Z = Minv[:, None] * R
    P = Z.copy()
    rz = np.sum(R * Z, axis=0)
    bnorm = np.linalg.norm(B, axis=0)
    bnorm[bnorm == 0] = 1.0
    live = np.linalg.norm(R, axis=0) > tol * bnorm
    for _ in range(max_iter):
        if not live.any():
            break
        AP = matvec(P)
        pap = np.sum(P * AP, axis=0)
        ok = live & (pap > 0) & (rz > 0) & np.isfinite(pap)
        alpha = np.zeros_like(rz)
        alpha[ok] = rz[ok] / pap[ok]
        X += P * alpha[None, :]
        R -= AP * alpha[None, :]
        Z = Minv[:, None] * R
        rz_new = np.sum(R * Z, axis=0)
        beta = np.zeros_like(rz)
        beta[ok] = rz_new[ok] / rz[ok]
        P = Z + P * beta[None, :]
        rz = rz_new
        live = ok & (np.linalg.norm(R, axis=0) > tol * bnorm)
    return X


@fill_doc
def ndfs_score(X, W, n_clusters: int, alpha: float = 1.0, beta: float = 1.0,
               gamma: float = 1e8, n_iter: int = 30, random_state=0, cg_tol: float = 1e-6,
               cg_max_iter: int = 300, progress=None) -> np.ndarray:
    """NDFS (Li, Yang, Liu, Zhou & Lu, AAAI 2012): feature scores ``||w_l||_2``.

    Minimises ``tr(F^T L F) + alpha (||X W - F||^2 + beta ||W||_{2,1})`` over ``F >= 0``
    with ``F^T F = I`` (``gamma`` weighs the orthogonality penalty of the multiplicative
    update) as in the paper / scikit-feature's ``NDFS.ndfs``::

        F <- F * (gamma F) / (M F + gamma F F^T F),  M F = L F + alpha (F - X W(F))
        W  = (X^T X + beta D)^-1 X^T F,              D_ll = 1 / (2 ||w_l||)

    ``M F`` uses ``X (X^T X + beta D)^-1 X^T F = X W`` so no n x n matrix is formed.
    ``M F`` has mixed signs, so the update is applied in its split form
    ``F * (gamma F + W_aff F + alpha [XW]+) / (Deg F + alpha F + alpha [XW]- + gamma F F^T F)``
    (numerator minus denominator equals the paper's ``gamma F - M F - gamma F F^T F``: the
    same fixed points, but F stays positive where the paper's ratio can hit a non-positive
    denominator). The solve is a Jacobi-preconditioned block CG with the sparse ``X`` (warm-started). ``F``
    starts from k-means labels of the spectral embedding of ``W``, one-hot plus 0.2 with
    unit-norm columns (scikit-feature does the same with k-means labels of ``X``).

    Parameters
    ----------
    {fs_X}
    {fs_W}
    n_clusters : int
        k, the number of pseudo-classes (columns of F), >= 1.
    alpha : float, default 1.0
        Weight of the regression term, > 0.
    beta : float, default 1.0
        Weight of the ``l2,1`` penalty on W, > 0.
    gamma : float, default 1e8
        Weight of the orthogonality penalty of the multiplicative update, > 0.
    n_iter : int, default 30
        Outer iterations.
    random_state : int, RandomState or None, default 0
        Seeds the spectral start and its k-means.
    cg_tol : float, default 1e-6
        Relative residual at which a CG column stops.
    cg_max_iter : int, default 300
        CG iterations per solve.
    progress : callable(fraction, message) or None, default None
        Called before every iteration; it may raise
        :class:`featagg_core.utils.cancel.Cancelled`, which propagates.

    Returns
    -------
    float64 array (f,)
        ``||w_l||_2`` of every feature (larger is better).

    Raises
    ------
    ValueError
        For bad X or W, ``n_clusters < 1``, or a non-positive ``alpha`` / ``beta`` /
        ``gamma`` (naming it).
    """
    from scipy.sparse.linalg import eigsh
    X = _features(X)
    n, f = X.shape
    W = _graph(W, n)
    check_param("n_clusters", n_clusters, [Interval(Integral, 1, None, closed="left")])
    k = int(n_clusters)
    for name, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        check_param(name, v, [Interval(Real, 0, None, closed="neither")])
    d = np.asarray(W.sum(axis=1)).ravel()
    _say(progress, 0.0, "NDFS: spectral start")
    # initial F: leading eigenvectors of the normalised affinity, made non-negative
    s = np.zeros(n)
    s[d > 0] = 1.0 / np.sqrt(d[d > 0])
    Nrm = sp.diags(s) @ W @ sp.diags(s)
    rng = check_random_state(random_state)
    _, V = eigsh(Nrm, k=min(k, n - 1), which="LA", v0=rng.random_sample(n))
    from sklearn.cluster import KMeans
    lab = KMeans(n_clusters=k, n_init=3, random_state=rng.randint(2 ** 31 - 1)).fit_predict(V)
    F = np.zeros((n, k))
    F[np.arange(n), lab] = 1.0
    F += 0.2
    # unit-norm columns (as scikit-feature's k-means initialisation): the gamma-dominated
    # update maps a scale a of F to 1/a, so an unnormalised start oscillates for ever
    F /= np.linalg.norm(F, axis=0)[None, :]
    Xt = X.T.tocsr()
    colsq = np.asarray(X.multiply(X).sum(axis=0)).ravel()
    Dw = np.ones(f)
    Wm = None
    scores = np.zeros(f)

    def solve(F, Dw, W0):
        def matvec(V):
            return Xt @ (X @ V) + beta * Dw[:, None] * V
        return _block_pcg(matvec, np.asarray(Xt @ F), colsq + beta * Dw, tol=cg_tol,
                          max_iter=cg_max_iter, X0=W0)

    for it in range(int(n_iter)):
        _say(progress, 0.05 + 0.95 * it / max(int(n_iter), 1),
             f"NDFS: iteration {it + 1}/{int(n_iter)}")
        # scikit-feature's order: F update with M(D), then W with the new F, then D
        Wm = solve(F, Dw, Wm)
        XW = X @ Wm
        num = gamma * F + W @ F + alpha * np.maximum(XW, 0.0)
        den = d[:, None] * F + alpha * F + alpha * np.maximum(-XW, 0.0) \
            + gamma * F @ (F.T @ F)
        F_new = F * num / np.maximum(den, 1e-300)
        W_new = solve(F_new, Dw, Wm)
        if not (np.all(np.isfinite(F_new)) and np.all(np.isfinite(W_new))):
            break                                    # keep the last finite iterate
        F, Wm = F_new, W_new
        scores = np.sqrt(np.sum(Wm * Wm, axis=1))
        # smoothed re-weighting: ||w|| floored at 1e-6 of the largest keeps the CG system
        # conditioned (a row at exactly 0 would get an infinite weight)
        Dw = 0.5 / np.maximum(scores, 1e-6 * max(scores.max(), 1e-300))
    return scores


def rank_features(scores, larger_is_better: bool = True) -> np.ndarray:
    """Feature indices ordered from best to worst (stable: ties to the lower index;
    non-finite scores last).

    Parameters
    ----------
    scores : array-like (f,)
        One score per feature.
    larger_is_better : bool, default True
        Direction of the scores.

    Returns
    -------
    int64 array (f,)
    """
    s = np.asarray(scores, dtype=np.float64)
    key = -s if larger_is_better else s.copy()
    key[~np.isfinite(key)] = np.inf
    return np.argsort(key, kind="stable").astype(np.int64)
