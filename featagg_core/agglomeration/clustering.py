"""Baseline feature clusterings to compare DEFRAG with: k-means, Ward, random balanced.

Signatures (called by ``experiment.run_pipeline`` for the spec
``{"feature_clustering": {"kind": "kmeans" | "random_balanced" | "ward", "n_clusters": K,
"representation": "XY", "max_features": N, "random_state": 0}}`` and by the pages)::

    kmeans_feature_labels(R, n_clusters, random_state=0, max_features=None, progress=None,
                          *, batch_size=None, max_iter=10, init="auto",
                          return_centers=False) -> labels (int64, d)  [, centers]
    random_balanced_labels(d, n_clusters, random_state=0) -> labels (int64, d)
    ward_feature_labels(R, n_clusters, max_features=None, progress=None, *,
                        random_state=0, return_centroids=False) -> labels [, centroids]
    KMEANS_MAX_FEATURES = 20_000, WARD_MAX_FEATURES = 2_000, WARD_LIMIT = 5_000

``R`` is the L2-normalised feature representation (one csr row per feature) from
:func:`featagg_core.agglomeration.defrag.feature_representation`; ``progress(fraction, message)`` may
raise :class:`featagg_core.utils.cancel.Cancelled`, which propagates (nothing keeps running).

Choices (see each function): k-means is scikit-learn's ``MiniBatchKMeans`` driven batch by
batch through ``partial_fit`` with exactly the random stream of ``MiniBatchKMeans.fit``
(so on inputs needing no sampling the labels equal
``MiniBatchKMeans(n_init=1, max_no_improvement=None, ...).fit(R).labels_``), for a fixed
number of passes (no early stopping, so its cost is predictable). Above ``max_features``
features it is fitted on a seeded sample and every other feature goes to its nearest
centre. Ward is scikit-learn's (scipy's) Ward linkage on a bounded sample of features,
the distances computed from sparse products chunk by chunk, the other features assigned to
the nearest cluster centroid; nothing d x d is ever formed and the only dense blocks are
(chunk x K) and the sample's condensed distance vector.
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.validation import Interval, Options, check_param

__all__ = ["kmeans_feature_labels", "random_balanced_labels", "ward_feature_labels",
           "default_batch_size", "KMEANS_MAX_FEATURES", "WARD_MAX_FEATURES", "WARD_LIMIT",
           "MAX_CENTRE_BYTES"]

#: default size guard the pages and the spec use for k-means (features fitted on)
KMEANS_MAX_FEATURES = 20_000
#: Ward's sample when ``max_features`` is None, and the largest sample it accepts
WARD_MAX_FEATURES = 2_000
WARD_LIMIT = 5_000
#: k-means keeps K dense centres over R's columns; refuse more than this many bytes
MAX_CENTRE_BYTES = 1 << 30


# ----------------------------------------------------------------------------- checks
def _check_R(R) -> sp.csr_matrix:
    if not sp.issparse(R):
        arr = np.asarray(R)
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise ValueError("R must be a 2-D numeric matrix (one row per feature), got "
                             f"shape {arr.shape}")
        R = sp.csr_matrix(arr)
    R = sp.csr_matrix(R)
    if R.dtype not in (np.float32, np.float64):
        R = R.astype(np.float64)
    if R.shape[0] < 1:
        raise ValueError("R has no rows (no features to cluster)")
    R.sort_indices()
    return R


_COUNT = Interval(Integral, 1, None, closed="left")       # an integer >= 1
_SEED = Interval(Integral, 0, None, closed="left")        # a non-negative integer


def _check_k(n_clusters, d: int) -> int:
    check_param("n_clusters", n_clusters, [_COUNT])
    if n_clusters > d:      # against the data: its own wording (pages and tests match it)
        raise ValueError(f"n_clusters={n_clusters} is more than the {d:,} features")
    return int(n_clusters)


def _check_seed(random_state) -> int:
    return int(check_param("random_state", random_state, [_SEED]))


def _check_max_features(max_features, name="max_features"):
    check_param(name, max_features, [None, _COUNT])
    return None if max_features is None else int(max_features)


def _sample_rows(d: int, m: int, random_state: int) -> np.ndarray:
    """The seeded sample of ``m`` of ``d`` features (sorted), the same for every method."""
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(d, size=m, replace=False)).astype(np.int64)


def _report(progress, fraction, message):
    if progress is not None:
        progress(float(min(1.0, max(0.0, fraction))), message)


# ----------------------------------------------------------------------------- random
def random_balanced_labels(d: int, n_clusters: int, random_state: int = 0) -> np.ndarray:
    """A random partition of ``d`` features into ``n_clusters`` clusters whose sizes differ by
    at most one (feature ``perm[i]`` goes to cluster ``i mod K``, ``perm`` a seeded
    permutation): the floor any clustering must beat.

    Parameters
    ----------
    d : int
        Number of features, >= 1.
    n_clusters : int
        K, in ``[1, d]``.
    random_state : int, default 0
        Seed (>= 0) of ``numpy.random.default_rng``.

    Returns
    -------
    int64 array (d,)
        The cluster of every feature.

    Raises
    ------
    ValueError
        For ``d``, ``n_clusters`` or ``random_state`` out of range (naming it).
    """
    check_param("d", d, [_COUNT])
    K = _check_k(n_clusters, int(d))
    rng = np.random.default_rng(_check_seed(random_state))
    lab = np.empty(int(d), np.int64)
    lab[rng.permutation(int(d))] = np.arange(int(d)) % K
    return lab


# ----------------------------------------------------------------------------- k-means
def _kmeans_plusplus(X: sp.csr_matrix, K: int, rs: np.random.RandomState, progress,
                     lo_frac: float, hi_frac: float) -> np.ndarray:
    """k-means++ seeding exactly as scikit-learn's ``_kmeans_plusplus`` (greedy, with
    ``2 + int(ln K)`` local trials; unit sample weights; same random draws and the same
    distance routine), but reporting progress every ~0.25 s so a cancel lands while K is in
    the thousands (scikit-learn's own loop cannot be interrupted)."""
    from sklearn.metrics.pairwise import euclidean_distances
    from sklearn.utils.extmath import row_norms

    from featagg_core.utils.polling import Throttle
    n = X.shape[0]
    x_sq = row_norms(X, squared=True)[np.newaxis, :]
    w = np.ones(n, dtype=X.dtype)
    centers = np.empty((K, X.shape[1]), dtype=X.dtype)
    n_trials = 2 + int(np.log(K))
    first = rs.choice(n, p=w / w.sum())
    centers[0] = X[[first]].toarray()
    closest = euclidean_distances(centers[0, np.newaxis], X, Y_norm_squared=x_sq,
                                  squared=True)
    pot = closest @ w
    clock = Throttle(0.25)
    for c in range(1, K):
        rand_vals = rs.uniform(size=n_trials) * pot
        cand = np.searchsorted(np.cumsum(w * closest), rand_vals)
        np.clip(cand, None, closest.size - 1, out=cand)
        dist = euclidean_distances(X[cand], X, Y_norm_squared=x_sq, squared=True)
        np.minimum(closest, dist, out=dist)
        cand_pot = dist @ w.reshape(-1, 1)
        best = np.argmin(cand_pot)
        pot = cand_pot[best]
        closest = dist[best]
        centers[c] = X[[cand[best]]].toarray()
        if progress is not None and clock.due():
            _report(progress, lo_frac + (hi_frac - lo_frac) * c / K,
                    f"k-means: k-means++ centre {c + 1:,}/{K:,}")
    return centers


def _init_share(method: str, K: int, n_init: int, max_iter: int, n_fit: int) -> float:
    """Share of the progress bar the initial centres take (by their work)."""
    if method != "k-means++":
        return 0.0
    pp = (2.0 + math.log(max(K, 2))) * n_init
    return 0.99 * pp / (pp + max_iter * n_fit + n_fit)


def kmeans_feature_labels(R, n_clusters, random_state=0, max_features=None, progress=None,
                          *, batch_size=None, max_iter=10, init="auto",
                          return_centers=False):
    """Cluster the features (rows of ``R``) with scikit-learn's MiniBatchKMeans.

    Parameters
    ----------
    R : sparse (d, c)
        Feature representation (rows L2-normalised, as DEFRAG's).
    n_clusters : int
        K, at most the number of features fitted on.
    random_state : int
        Seeds the feature sample, the initial centres, the batches and the reassignments.
    max_features : int or None
        Size guard: with more features than this, k-means is fitted on a seeded sample of
        ``max_features`` features and every other feature goes to its nearest centre
        (``KMEANS_MAX_FEATURES`` is the pages' default). None fits on every feature.
    progress : callable(fraction, message), optional
        Called after every batch and every chunk of assignments; may raise to stop.
    batch_size : int or None
        Rows per mini-batch. None: :func:`default_batch_size` (scikit-learn's 1024 up to
        K = 7812, then fewer, down to 64, so one batch stays short).
    max_iter : int
        Passes over the fitted features: ``max_iter * n // batch_size`` batches, no early
        stopping (a fixed amount of work, so the estimate is right; scikit-learn's ``fit``
        stops when its smoothed inertia stalls).
    init : {"auto", "k-means++", "random"}
        "k-means++": scikit-learn's default seeding (same draws, but interruptible);
        "random": K random features; "auto": k-means++ unless it would cost more than the
        mini-batch passes themselves (``(2 + ln K) * init_size > max_iter * n``, i.e. K
        above ~3000 for 10 passes over all features), then "random".
    return_centers : bool
        Also return the dense (K, c) centres.

    Returns
    -------
    labels : int64 array (d,), and the centres when ``return_centers``.

    Notes
    -----
    The loop is ``MiniBatchKMeans.fit``'s, one batch at a time with a progress call in
    between: one ``RandomState(random_state)`` draws the validation indices, the init
    sample, the initial centres, every batch (uniform, with replacement) and the
    reassignments of small clusters, and each batch is one call of the step function
    ``partial_fit`` itself calls (scikit-learn's ``_mini_batch_step``). ``partial_fit``
    is not called directly: its first batch must hold at least K rows, which at K in the
    thousands makes one uninterruptible batch cost K² distances (timed in
    ``benchmarks/results/agglomeration_notes.md``). So
    with ``d <= max_features`` the labels are exactly those of
    ``MiniBatchKMeans(n_clusters=K, init=init, n_init=1, batch_size=b, max_iter=max_iter,
    max_no_improvement=None, random_state=random_state).fit(R)`` (the tests pin this).
    The centres are dense, K x c; more than ``MAX_CENTRE_BYTES`` is refused with a
    message.
    """
    from sklearn.cluster._kmeans import _labels_inertia_threadpool_limit, _mini_batch_step
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    R = _check_R(R)
    d, c = R.shape
    seed = _check_seed(random_state)
    max_features = _check_max_features(max_features)
    check_param("max_iter", max_iter, [_COUNT])
    check_param("init", init, [Options(str, ("auto", "k-means++", "random"))])
    sampled = max_features is not None and d > max_features
    n_fit = max_features if sampled else d
    if isinstance(n_clusters, (int, np.integer)) and not isinstance(n_clusters, bool) \
            and sampled and n_clusters > n_fit:
        raise ValueError(f"n_clusters={n_clusters} is more than the {n_fit:,} features "
                         "k-means is fitted on (max_features); raise max_features or "
                         "lower n_clusters")
    K = _check_k(n_clusters, n_fit)
    bytes_needed = K * c * R.dtype.itemsize
    if bytes_needed > MAX_CENTRE_BYTES:
        raise ValueError(
            f"k-means keeps {K:,} dense centres of {c:,} entries each "
            f"({bytes_needed / 2**30:.1f} GiB), more than this server allows "
            f"({MAX_CENTRE_BYTES / 2**30:.0f} GiB); use fewer clusters or a representation "
            "with fewer columns (XY has one column per label)")
    check_param("batch_size", batch_size, [None, _COUNT])
    b = default_batch_size(K) if batch_size is None else batch_size
    b = min(int(b), n_fit)

    _report(progress, 0.0, "k-means: preparing")
    rows = _sample_rows(d, n_fit, seed) if sampled else None
    Rf = R[rows] if sampled else R
    rs = np.random.RandomState(seed)
    # MiniBatchKMeans.fit's bookkeeping, in its order: init size, validation draw, init
    init_size = 3 * b
    if init_size < K:
        init_size = 3 * K
    init_size = min(init_size, n_fit)
    rs.randint(0, n_fit, init_size)                       # fit()'s validation indices
    Xi = Rf
    if init_size < n_fit:
        Xi = Rf[rs.randint(0, n_fit, init_size)]
    method = init
    if method == "auto":
        pp_work = (2.0 + math.log(max(K, 2))) * Xi.shape[0]
        method = "k-means++" if pp_work <= int(max_iter) * n_fit else "random"
    _report(progress, 0.01, f"k-means: initial centres ({method})")
    init_share = _init_share(method, K, Xi.shape[0], int(max_iter), n_fit)
    if method == "k-means++":
        centers = _kmeans_plusplus(Xi, K, rs, progress, 0.01, 0.01 + init_share)
    else:
        ones = np.ones(Xi.shape[0], dtype=Rf.dtype)
        seeds = rs.choice(Xi.shape[0], size=K, replace=False, p=ones / ones.sum())
        centers = Xi[seeds].toarray()
    centers = np.ascontiguousarray(centers, dtype=Rf.dtype)
    counts = np.zeros(K, dtype=Rf.dtype)
    n_threads = _openmp_effective_n_threads()
    n_steps = max(1, (int(max_iter) * n_fit) // b)
    p_uniform = np.full(n_fit, 1.0 / n_fit)
    unit = np.ones(b, dtype=Rf.dtype)
    since_reassign = 0
    # progress shares by work: init, the batches, one assignment pass over all d features
    lo = 0.01 + init_share
    fit_share = (1.0 - lo) * int(max_iter) * n_fit / (int(max_iter) * n_fit + d)
    for step in range(n_steps):
        idx = rs.choice(n_fit, b, p=p_uniform, replace=True)
        since_reassign += b               # MiniBatchKMeans._random_reassign
        reassign = bool((counts == 0).any()) or since_reassign >= 10 * K
        if reassign:
            since_reassign = 0
        # in place, as partial_fit does (fit() double-buffers; the arithmetic is the same
        # and it saves a K x c copy per batch)
        _mini_batch_step(X=Rf[idx], sample_weight=unit, centers=centers,
                         centers_new=centers, weight_sums=counts, random_state=rs,
                         random_reassign=reassign, reassignment_ratio=0.01,
                         n_threads=n_threads)
        _report(progress, lo + fit_share * (step + 1) / n_steps,
                f"k-means: batch {step + 1:,}/{n_steps:,}")
    labels = np.empty(d, np.int64)
    chunk = default_batch_size(K, low=16, high=100_000, pairs=3_000_000)
    for start in range(0, d, chunk):
        stop = min(d, start + chunk)
        part = R[start:stop]
        labels[start:stop] = _labels_inertia_threadpool_limit(
            part, np.ones(part.shape[0], dtype=R.dtype), centers, n_threads=n_threads)[0]
        _report(progress, lo + fit_share + (1.0 - lo - fit_share) * stop / d,
                f"k-means: assigning features {stop:,}/{d:,}")
    if return_centers:
        return labels, centers
    return labels


def default_batch_size(n_clusters: int, low: int = 64, high: int = 1024,
                       pairs: int = 8_000_000) -> int:
    """Rows per k-means batch: scikit-learn's 1024, fewer when K is above ~7800 so that one
    batch is at most ``pairs`` row-centre distances (a cancel waits for at most one batch;
    timed in ``benchmarks/results/agglomeration_notes.md``). Also sizes assignment chunks.

    Parameters
    ----------
    n_clusters : int
        K.
    low : int, default 64
        Smallest batch.
    high : int, default 1024
        Largest batch (scikit-learn's default).
    pairs : int, default 8_000_000
        Row-centre distances one batch may cost.

    Returns
    -------
    int
    """
    return int(max(low, min(high, int(pairs) // max(int(n_clusters), 1))))


# ----------------------------------------------------------------------------- Ward
def _condensed_distances(Rs: sp.csr_matrix, progress, lo_frac, hi_frac) -> np.ndarray:
    """Euclidean distances between the rows of ``Rs`` in scipy's condensed order, from
    sparse Gram blocks ``Rs[i0:i1] Rs^T`` (float64), chunk by chunk."""
    m = Rs.shape[0]
    A = sp.csr_matrix(Rs, dtype=np.float64)
    At = A.T.tocsc()
    sq = np.asarray(A.multiply(A).sum(axis=1)).ravel()
    out = np.empty(m * (m - 1) // 2, np.float64)
    chunk = max(1, min(m, int(4e6 // max(m, 1))))
    for i0 in range(0, m, chunk):
        i1 = min(m, i0 + chunk)
        G = (A[i0:i1] @ At).toarray()
        for i in range(i0, i1):
            row = G[i - i0, i + 1:]
            dist2 = sq[i] + sq[i + 1:] - 2.0 * row
            np.maximum(dist2, 0.0, out=dist2)
            start = i * m - i * (i + 1) // 2
            out[start:start + (m - i - 1)] = np.sqrt(dist2)
        _report(progress, lo_frac + (hi_frac - lo_frac) * i1 / m,
                f"Ward: distances {i1:,}/{m:,}")
    return out


def _cut_tree(children: np.ndarray, n_leaves: int, K: int) -> np.ndarray:
    """scikit-learn's ``_hc_cut``: split the largest-id node K - 1 times (a heap of the
    current nodes) and number the clusters in heap order."""
    from heapq import heappush, heappushpop
    nodes = [-(int(max(children[-1])) + 1)]
    for _ in range(K - 1):
        kids = children[-nodes[0] - n_leaves]
        heappush(nodes, -int(kids[0]))
        heappushpop(nodes, -int(kids[1]))
    lab = np.full(2 * n_leaves - 1, -1, np.int64)
    for i, node in enumerate(nodes):
        lab[-node] = i
    for node in range(2 * n_leaves - 2, n_leaves - 1, -1):   # parents before children
        if lab[node] >= 0:
            a, b = children[node - n_leaves]
            lab[a] = lab[node]
            lab[b] = lab[node]
    return lab[:n_leaves]


def _nearest_rows(R: sp.csr_matrix, rows: np.ndarray, centres: sp.csr_matrix, progress,
                  lo_frac, hi_frac, what: str) -> np.ndarray:
    """Index of the nearest (squared Euclidean) row of ``centres`` for each of ``R[rows]``,
    ties to the lower index, in chunks of ~3·10^6 row-centre pairs."""
    K = centres.shape[0]
    C = sp.csr_matrix(centres, dtype=np.float64)
    Ct = C.T.tocsc()
    csq = np.asarray(C.multiply(C).sum(axis=1)).ravel()
    out = np.empty(rows.shape[0], np.int64)
    chunk = default_batch_size(K, low=16, high=100_000, pairs=3_000_000)
    for lo in range(0, rows.shape[0], chunk):
        part = rows[lo:lo + chunk]
        B = sp.csr_matrix(R[part], dtype=np.float64)
        dots = (B @ Ct).toarray()
        dist2 = csq[None, :] - 2.0 * dots          # + ||x||^2, the same for every centre
        out[lo:lo + part.shape[0]] = np.argmin(dist2, axis=1)
        _report(progress, lo_frac + (hi_frac - lo_frac) * min(rows.shape[0], lo + chunk)
                / rows.shape[0], f"{what}: assigning features "
                f"{min(rows.shape[0], lo + chunk):,}/{rows.shape[0]:,}")
    return out


def ward_feature_labels(R, n_clusters, max_features=None, progress=None, *, random_state=0,
                        return_centroids=False):
    """Ward agglomerative clustering of the features (rows of ``R``) on a bounded sample.

    Parameters
    ----------
    R : sparse matrix (d, c)
        The feature representation.
    n_clusters : int
        K (at most the sample size).
    max_features : int or None
        Features Ward is run on (None: ``WARD_MAX_FEATURES``; at most ``WARD_LIMIT``, as its
        condensed distance matrix has m (m - 1) / 2 entries). With ``d`` at most this, Ward
        runs on every feature and the labels equal scikit-learn's
        ``AgglomerativeClustering(n_clusters=K, linkage="ward").fit(R.toarray()).labels_``.
    progress : callable(fraction, message), optional
        May raise to stop.
    random_state : int, default 0
        Seeds the sample.
    return_centroids : bool, default False
        Also return the (K, c) sparse centroids of the Ward clusters.

    Returns
    -------
    labels : int64 array (d,)
        The cluster of every feature.
    centroids : csr_matrix (K, c)
        Only with ``return_centroids``.

    Raises
    ------
    ValueError
        For a parameter out of range (naming it), ``max_features`` above ``WARD_LIMIT``, or
        more clusters than the features Ward runs on.

    Notes
    -----
    Ward's merge tree comes from ``scipy.cluster.hierarchy.linkage(..., "ward")`` (what
    scikit-learn calls) on Euclidean distances computed from sparse Gram blocks, and it is
    cut into K clusters the way scikit-learn's ``_hc_cut`` does. Features outside the
    sample go to the nearest centroid (mean of the cluster's sampled rows), so a sampled
    Ward is "Ward on m features, then nearest centroid"; nothing d x d or m x c is dense.
    """
    from scipy.cluster.hierarchy import linkage

    R = _check_R(R)
    d = R.shape[0]
    seed = _check_seed(random_state)
    mf = _check_max_features(max_features)
    mf = WARD_MAX_FEATURES if mf is None else mf
    if mf > WARD_LIMIT:
        raise ValueError(f"max_features={mf:,} is above Ward's limit of {WARD_LIMIT:,} "
                         "features (its distance matrix grows with the square)")
    sampled = d > mf
    m = mf if sampled else d
    if isinstance(n_clusters, (int, np.integer)) and not isinstance(n_clusters, bool) \
            and n_clusters > m and sampled:
        raise ValueError(f"n_clusters={n_clusters:,} is more than the {m:,} features Ward "
                         "runs on; Ward cannot make more clusters than that (use k-means "
                         "or fewer clusters)")
    K = _check_k(n_clusters, m)
    _report(progress, 0.0, "Ward: preparing")
    rows = _sample_rows(d, m, seed) if sampled else np.arange(d, dtype=np.int64)
    Rs = R[rows]
    if m == 1:
        lab_s = np.zeros(1, np.int64)
    else:
        dist = _condensed_distances(Rs, progress, 0.0, 0.6 if sampled else 0.9)
        Z = linkage(dist, method="ward")
        del dist
        children = Z[:, :2].astype(np.int64)
        lab_s = _cut_tree(children, m, K)
    _report(progress, 0.65 if sampled else 0.95, "Ward: tree cut")
    sizes = np.bincount(lab_s, minlength=K).astype(np.float64)
    G = sp.csr_matrix((1.0 / sizes[lab_s], (lab_s, np.arange(m))), shape=(K, m))
    centroids = (G @ sp.csr_matrix(Rs, dtype=np.float64)).tocsr()
    labels = np.empty(d, np.int64)
    labels[rows] = lab_s
    if sampled:
        rest = np.setdiff1d(np.arange(d, dtype=np.int64), rows, assume_unique=True)
        labels[rest] = _nearest_rows(R, rest, centroids, progress, 0.65, 1.0, "Ward")
    _report(progress, 1.0, "Ward: done")
    if return_centroids:
        return labels, centroids
    return labels
