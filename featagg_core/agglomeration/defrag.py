"""DEFRAG: balanced hierarchical clustering of features, then one summed feature per cluster.

Jalan & Kar, "Accelerating Extreme Classification via Adaptive Feature Agglomeration",
IJCAI 2019 (arXiv 1905.11769); behaviour follows the authors' C++ code
(github.com/purushottamkar/defrag, ``defrag/defrag.cpp``).

>>> import scipy.sparse as sp
>>> X = sp.random(200, 50, density=0.1, format="csr", random_state=0, dtype="float32")
>>> dfg = Defrag(d0=8, representation="X").fit(X)
>>> dfg.n_clusters_, dfg.transform(X).shape
(8, (200, 8))
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Optional

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError

from featagg_core.agglomeration.tree import DefragTree
from featagg_core._kernels import defrag as _k
from featagg_core.utils.polling import call_polled, new_stop
from featagg_core.utils.products import cluster_membership, exact_xt_y
from featagg_core.utils.validation import Interval, Options, as_csr, check_param, validate_params
from featagg_core.utils.docstrings import fill_doc

__all__ = ["Defrag", "feature_representation", "clustering_error",
           "balanced_depth_cap", "warmup"]

#: how :meth:`Defrag.transform` may combine a cluster's features
_AGGREGATIONS = ("sum", "avg")


# ------------------------------------------------------------------- helpers
def _n_chunks() -> int:
    return 4 * max(1, numba.get_num_threads())


def _as_csr(A, name: str) -> sp.csr_matrix:
    """DEFRAG's wording for non-2-D / non-numeric input (numeric is checked for sparse input
    too), then the shared float32 canonical csr (:func:`featagg_core.utils.validation.as_csr`):
    duplicates summed, stored zeros kept, NaN/inf refused, an empty matrix accepted."""
    if not sp.issparse(A):
        arr = np.asarray(A)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-d matrix, got an array of shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
        A = sp.csr_matrix(arr)
    elif A.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {A.dtype}")
    return as_csr(A, name, dtype=np.float32)


def _top_fraction(counts: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the ``floor(fraction * len)`` (at least 1) largest counts, ties to the larger
    index as in the original's reverse sort of (count, index) pairs; returned ascending."""
    n = counts.shape[0]
    k = max(1, int(math.floor(fraction * n + 1e-9)))
    if k >= n:
        return np.arange(n)
    idx = np.lexsort((-np.arange(n), -counts.astype(np.int64)))[:k]
    return np.sort(idx)


def feature_representation(X, Y=None, representation: str = "XY", sample_points: float = 1.0,
                           sample_labels: float = 1.0, prune_threshold: float = 0.0,
                           progress=None):
    """The L2-normalised sparse representation of every feature (one csr row per feature).

    ``"X"``: feature j is column j of X (over the data points); ``"XY"``: feature j is row j
    of ``Xᵀ Y`` (label-weighted aggregate). With ``sample_points < 1`` only that fraction of
    the points with the most non-zeros is used; with ``sample_labels < 1`` (XY only) only
    that fraction of the most frequent labels. Entries with ``|v| <= prune_threshold`` are
    dropped after normalising.

    Parameters
    ----------
    X : sparse or dense matrix (n, d)
        The data points.
    Y : sparse matrix (n, L) or None, default None
        The 0/1 labels (needed for ``"XY"``).
    representation : {"XY", "X"}, default "XY"
        Which representation (see above).
    sample_points : float in (0, 1], default 1.0
        Fraction of the points (those with the most non-zeros) used.
    sample_labels : float in (0, 1], default 1.0
        ``"XY"`` only: fraction of the most frequent labels used.
    prune_threshold : float, default 0.0
        Entries with ``|v| <= prune_threshold`` are dropped after normalising.
    progress : callable or None, default None
        If given, called as ``progress(fraction, message)`` at the start and about every
        0.1 s while ``Xᵀ Y`` is built; it may raise
        :class:`featagg_core.utils.cancel.Cancelled` to stop.

    Returns
    -------
    R : csr_matrix of float32 (d, c)
        One L2-normalised row per feature (``c = n`` for ``"X"``, ``L`` for ``"XY"``).
    sq_norms : float array (d,)
        The squared norms of the rows of R, as the kernel returns them.

    Raises
    ------
    ValueError
        For input that is not a 2-D numeric matrix or holds NaN / infinite values.
    """
    tick = None
    if progress is not None:
        progress(0.0, "feature representation")

        def tick():
            progress(0.0, "feature representation")
    X = _as_csr(X, "X")
    if sample_points < 1.0:
        rows = _top_fraction(np.diff(X.indptr), sample_points)
        X = X[rows]
        if Y is not None:
            Y = Y[rows]
    if representation == "X":
        R = X.T.tocsr()
    else:
        if sample_labels < 1.0:
            cols = _top_fraction(np.diff(Y.tocsc().indptr), sample_labels)
            Y = Y[:, cols]
        # exactly summed, correctly rounded entries: the same R for any split of the rows
        # (threads here, partitions in featagg_core.distributed.defrag_distributed)
        R = exact_xt_y(X, Y, tick=tick)
    R.sort_indices()
    indptr, indices, data, sq = _k.normalize_prune(
        R.indptr.astype(np.int64), R.indices.astype(np.int32), R.data.astype(np.float32),
        float(prune_threshold))
    return sp.csr_matrix((data, indices, indptr), shape=R.shape), sq


def clustering_error(R, labels, n_clusters: Optional[int] = None) -> float:
    """Mean over features of the squared Euclidean distance of each row of ``R`` to the mean
    of its cluster's rows (sparse; features with ``labels < 0`` are ignored).

    Parameters
    ----------
    R : sparse matrix (d, c)
        The feature representation (e.g. from :func:`feature_representation`).
    labels : int array (d,)
        The cluster of every feature; negative entries are ignored.
    n_clusters : int or None, default None
        Number of clusters (default ``labels.max() + 1``).

    Returns
    -------
    float
        The mean squared distance (0.0 when no feature has a cluster).

    Raises
    ------
    ValueError
        When ``labels`` does not have one entry per row of ``R``.
    """
    R = sp.csr_matrix(R)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape[0] != R.shape[0]:
        raise ValueError(f"labels has {labels.shape[0]} entries, R has {R.shape[0]} rows")
    valid = labels >= 0
    if not valid.any():
        return 0.0
    K = int(labels.max()) + 1 if n_clusters is None else int(n_clusters)
    order = np.flatnonzero(valid)
    order = order[np.argsort(labels[order], kind="stable")].astype(np.int64)
    sizes = np.bincount(labels[valid], minlength=K).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    sse = _k.cluster_sse(R.indptr.astype(np.int64), R.indices.astype(np.int32),
                         R.data.astype(np.float32), R.shape[1], order, starts, sizes,
                         _n_chunks())
    return float(sse.sum() / order.shape[0])


def balanced_depth_cap(d: int, d0: int) -> int:
    """The original code's depth cap ``ceil(log2(d / d0))`` (levels of splits below the root;
    its ``max_depth - 1``).

    With balanced halving every node at that depth already holds at most ``d0`` features,
    so the cap never makes a leaf larger than ``d0``.

    Parameters
    ----------
    d : int
        Number of features.
    d0 : int
        Largest leaf size.

    Returns
    -------
    int
        0 when ``d <= d0``.
    """
    if d <= d0:
        return 0
    return int(math.ceil(math.log2(d / d0) - 1e-12))


def _build_tree(R: sp.csr_matrix, d0: int, seed: int, eps: float, max_iter: int,
                progress=None) -> DefragTree:
    """Grow the tree level by level. ``progress(levels_done, n_levels)`` is called after
    every level and, while a level's kernel runs, about every 0.1 s with the same values
    (a heartbeat: that is where a cancel is raised; the kernel then stops after its
    current 2-means round)."""
    indptr = R.indptr.astype(np.int64)
    indices = R.indices.astype(np.int32)
    data = R.data.astype(np.float32)

    def split_level(order, s_start, s_size, s_ids, tick):
        stop = new_stop()
        return call_polled(_k.split_level,
                           (indptr, indices, data, R.shape[1], order, s_start, s_size,
                            s_ids, seed, eps, max_iter, _n_chunks(), stop), stop, tick)

    return _grow_tree(R.shape[0], d0, split_level, progress)


def _grow_tree(d: int, d0: int, split_level, progress=None) -> DefragTree:
    """The level loop of the tree build: ``split_level(order, starts, sizes, node_ids,
    tick)`` splits the given nodes of one level (rewriting their ranges of ``order``),
    calling ``tick()`` (None without progress) about every 0.1 s while it runs, and
    returns their rounds of 2-means. The Dask twin passes a ``split_level`` that runs the
    nodes on workers (:func:`featagg_core.distributed.defrag_distributed`)."""
    order = np.arange(d, dtype=np.int64)
    cap = balanced_depth_cap(d, d0)
    # level-by-level growth; node ids are given in creation order (deterministic)
    parent = [np.array([-1], np.int64)]
    depth = [np.array([0], np.int64)]
    start = [np.array([0], np.int64)]
    size = [np.array([d], np.int64)]
    n_iter = []
    split_flags = []
    level_ids = np.array([0], np.int64)
    level_start = start[0]
    level_size = size[0]
    next_id = 1
    lev = 0
    while True:
        splits = (level_size > d0) & (lev < cap)
        split_flags.append(splits)
        it = np.zeros(level_size.shape[0], np.int32)
        if not splits.any():
            n_iter.append(it)
            break
        s_ids = level_ids[splits]
        s_start = level_start[splits]
        s_size = level_size[splits]
        tick = None if progress is None else (lambda lv=lev: progress(lv, cap))
        it[splits] = split_level(order, s_start, s_size, s_ids, tick)
        n_iter.append(it)
        m = s_ids.shape[0]
        half = s_size // 2
        c_start = np.empty(2 * m, np.int64)
        c_size = np.empty(2 * m, np.int64)
        c_start[0::2], c_start[1::2] = s_start, s_start + half
        c_size[0::2], c_size[1::2] = half, s_size - half
        c_ids = next_id + np.arange(2 * m, dtype=np.int64)
        next_id += 2 * m
        parent.append(np.repeat(s_ids, 2))
        depth.append(np.full(2 * m, lev + 1, np.int64))
        start.append(c_start)
        size.append(c_size)
        level_ids, level_start, level_size = c_ids, c_start, c_size
        lev += 1
        if progress is not None:
            progress(lev, cap)
    parent = np.concatenate(parent)
    n_nodes = parent.shape[0]
    depth = np.concatenate(depth)
    start = np.concatenate(start)
    size = np.concatenate(size)
    n_iter_all = np.concatenate(n_iter).astype(np.int32)
    is_split = np.concatenate(split_flags)
    left = np.full(n_nodes, -1, np.int64)
    right = np.full(n_nodes, -1, np.int64)
    inner = np.flatnonzero(is_split)
    # children were created in the order of their parents' ids: 1, 2 | 3, 4 | ...
    child_first = 1 + 2 * np.arange(inner.shape[0], dtype=np.int64)
    left[inner] = child_first
    right[inner] = child_first + 1
    cluster = np.full(n_nodes, -1, np.int64)
    leaf = np.flatnonzero(~is_split)
    leaf = leaf[np.argsort(start[leaf], kind="stable")]
    cluster[leaf] = np.arange(leaf.shape[0], dtype=np.int64)
    return DefragTree(parent=parent, left=left, right=right, depth=depth, start=start,
                      n_members=size, n_iter=n_iter_all, cluster=cluster, order=order)


# ------------------------------------------------------------------- estimator
class Defrag(TransformerMixin, BaseEstimator):
    """DEFRAG feature agglomeration: balanced hierarchical clustering of features.

    Each feature gets a sparse representation (``"X"``: its column of X; ``"XY"``: its row
    of ``XᵀY``), L2-normalised. The root holds all features; a node with more than ``d0``
    features is split in two halves by balanced spherical 2-means; the leaves are the
    clusters, and :meth:`transform` replaces every cluster by one feature, the sum (or the
    average) of its members.

    Parameters
    ----------
    d0 : int, default 8
        Largest number of features in a leaf cluster (the original's ``-cml``), >= 1.
    representation : {"XY", "X"}, default "XY"
        Feature representation; ``"XY"`` needs label matrix ``Y`` in :meth:`fit`.
    random_state : int, default 0
        Seed of the initial centres (each node's pair depends only on the seed and the
        node's id, so results are identical for any number of threads).
    sample_points : float in (0, 1], default 1.0
        Fraction of the data points, those with the most non-zeros, used to build the
        representation (the original's ``-cds``, 20 % there: ``sample_points=0.2``).
    sample_labels : float in (0, 1], default 1.0
        ``"XY"`` only: fraction of the most frequent labels used (the original's ``-cls``,
        5 % there: ``sample_labels=0.05``).
    prune_threshold : float >= 0, default 0.0
        Entries of the normalised representation with ``|v| <= prune_threshold`` are
        dropped (the original's ``centroid_threshold``).
    eps : float, default 1e-4
        A node's 2-means stops when the mean cosine to the own centre grows by less.
    max_iter : int, default 50
        Cap on the rounds of one node's 2-means (the original has none).
    aggregation : {"sum", "avg"}, default "sum"
        How :meth:`transform` combines a cluster's features: their sum, or their sum
        divided by the number of the row's non-zero members (the original's ``avg``).

    Attributes
    ----------
    labels_ : int64 array (d,)
        Cluster of every feature (clusters numbered left to right in the tree).
    n_clusters_ : int
    tree_ : DefragTree
        The hierarchy (walk it with ``children``/``iter_nodes``, export with ``to_plotly``).
    clustering_error_ : float
        Mean squared Euclidean distance of the normalised feature representations (the
        ones the tree was built from) to their cluster mean.
    cluster_sizes_ : int64 array (K,)
    zero_features_ : int64 array
        Features whose representation is empty (never non-zero in the training points used).
    n_features_in_ : int
    n_iter_ : int
        Total rounds of 2-means over all inner nodes.

    Notes
    -----
    Choices following the paper / the original code: the balanced split (sort by
    ``cos(r, c0) - cos(r, c1)``, first ``⌊n/2⌋`` left), centres as normalised sums,
    stopping on a mean-cosine gain below ``eps``, leaves at ``<= d0`` features and the
    depth cap ``⌈log2(d/d0)⌉`` (which, with exact halving, never binds before the size
    rule: on Bibtex, d = 1836, d0 = 8 give 256 clusters of 7 or 8), the data/label
    sampling rules and the ``avg`` aggregation. Departures: an iteration cap
    (``max_iter``), stable tie-breaking by feature order, a per-node seed instead of one
    sequential generator (for thread-count-independent results), and no sampling by
    default and no pruning: both speed up the build little and raise the clustering error
    on the full representation, the original's 5 % label sample most (measured in
    ``benchmarks/results/defrag.md``).

    Edge cases: ``d <= d0`` (including d = 1) gives one cluster holding every feature;
    features with an all-zero representation (never seen in training) score 0 against
    both centres and are spread by the balanced split like any other feature, so leaves
    stay balanced (they are listed in ``zero_features_``); at transform time their
    values are summed into the cluster they were assigned to. ``transform`` requires the
    same number of columns as in ``fit``.
    """

    def __init__(self, d0=8, representation="XY", random_state=0, sample_points=1.0,
                 sample_labels=1.0, prune_threshold=0.0, eps=1e-4, max_iter=50,
                 aggregation="sum"):
        self.d0 = d0
        self.representation = representation
        self.random_state = random_state
        self.sample_points = sample_points
        self.sample_labels = sample_labels
        self.prune_threshold = prune_threshold
        self.eps = eps
        self.max_iter = max_iter
        self.aggregation = aggregation

    #: what every ``__init__`` parameter may be (checked at the start of :meth:`fit`)
    _parameter_constraints = {
        "d0": [Interval(Integral, 1, None, closed="left")],
        "representation": [Options(str, {"X", "XY"})],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "sample_points": [Interval(Real, 0, 1, closed="right")],
        "sample_labels": [Interval(Real, 0, 1, closed="right")],
        "prune_threshold": [Interval(Real, 0, 1, closed="left")],
        "eps": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "aggregation": [Options(str, _AGGREGATIONS)],
    }

    # -- validation
    def _check_params(self):
        """The declared constraints (also called by the spec checks, the artifact checks
        and the Dask twin before they fit)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    def _check_fit_input(self, X, Y):
        """Validated ``(X, Y)`` for :meth:`fit` (``Y`` is None unless ``"XY"``); also applied
        by the Dask twin to in-memory input."""
        X = _as_csr(X, "X")
        if self.representation == "XY":
            if Y is None:
                raise ValueError("representation='XY' needs the label matrix Y in fit(X, Y); "
                                 "pass Y or use representation='X'")
            Y = _as_csr(Y, "Y")
            if Y.shape[0] != X.shape[0]:
                raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
        else:
            Y = None
        if X.shape[1] < 1:
            raise ValueError("X has no features (0 columns)")
        if X.shape[0] < 1:
            raise ValueError("X has no rows")
        return X, Y

    def fit(self, X, Y=None, progress=None):
        """Build the tree on X (n x d, sparse or dense) and, for ``"XY"``, labels Y (n x L).

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            The training points.
        Y : sparse or dense matrix (n, L) or None, default None
            Their 0/1 labels; needed for ``representation="XY"``, ignored for ``"X"``.
        progress : callable or None, default None
            If given, called as ``progress(level, n_levels)``: ``(0, n)`` at the start, after
            each level, and about every 0.1 s in between while a kernel runs (repeating the
            last values). It may raise (e.g. :class:`featagg_core.utils.cancel.Cancelled`): the
            running kernel then stops after its current 2-means round, no thread is left
            running, and the exception propagates (the estimator keeps its previous state).

        Returns
        -------
        Defrag
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside its declared constraint (``"<name> must be ..., got
            ..."``), ``"XY"`` without ``Y``, input that is not numeric 2-D, holds NaN or has no
            rows / columns, or ``Y`` with another number of rows.
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        X, Y = self._check_fit_input(X, Y)
        d = X.shape[1]
        cap = balanced_depth_cap(d, int(self.d0))
        rep_progress = None
        if progress is not None:
            progress(0, cap)

            def rep_progress(fraction, message):
                progress(0, cap)
        R, sq = feature_representation(X, Y, self.representation, float(self.sample_points),
                                       float(self.sample_labels), float(self.prune_threshold),
                                       progress=rep_progress)
        seed = int(self.random_state) & 0xFFFFFFFFFFFFFFFF
        tree = _build_tree(R, int(self.d0), seed, float(self.eps), int(self.max_iter),
                           progress)
        leaves = tree.leaves()
        sse = _k.cluster_sse(R.indptr.astype(np.int64), R.indices.astype(np.int32),
                             R.data.astype(np.float32), R.shape[1], tree.order,
                             tree.start[leaves], tree.n_members[leaves], _n_chunks())
        zero = np.flatnonzero(np.diff(R.indptr) == 0).astype(np.int64)
        return self._set_fitted(tree, sse, zero)

    def _set_fitted(self, tree: DefragTree, leaf_sse: np.ndarray, zero_features: np.ndarray):
        """Fitted state from the tree, the SSE of every leaf (in cluster order) and the
        features with an empty representation (shared with the Dask twin)."""
        d = tree.order.shape[0]
        leaves = tree.leaves()
        K = leaves.shape[0]
        labels = np.empty(d, np.int64)
        for_leaf_sizes = tree.n_members[leaves]
        labels[tree.order] = np.repeat(np.arange(K, dtype=np.int64), for_leaf_sizes)
        sse = np.asarray(leaf_sse, np.float64)
        self.labels_ = labels
        self.n_clusters_ = int(K)
        self.tree_ = tree
        self.cluster_sizes_ = for_leaf_sizes.astype(np.int64)
        self.clustering_error_ = float(sse.sum() / d)
        self.zero_features_ = np.asarray(zero_features, np.int64)
        self.n_features_in_ = int(d)
        self.n_iter_ = int(tree.n_iter.sum())
        return self

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("this Defrag is not fitted yet; call fit(X, Y) first")

    @fill_doc
    def transform(self, X, aggregation=None):
        """Agglomerate X (n x d) into n x K: each cluster's features summed (or averaged).

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            Points with the features the Defrag was fitted on.
        aggregation : {"sum", "avg"} or None, default None
            Overrides the ``aggregation`` parameter for this call.

        Returns
        -------
        csr_matrix of float32 (n, K)

        Raises
        ------
        {not_fitted}
        ValueError
            For another number of columns than in ``fit`` or a bad ``aggregation``.
        """
        self._check_fitted()
        agg = self.aggregation if aggregation is None else aggregation
        check_param("aggregation", agg, self._parameter_constraints["aggregation"])
        X = _as_csr(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but this Defrag was fitted on "
                             f"{self.n_features_in_}")
        ptr, ind, dat = _k.agglomerate(X.indptr.astype(np.int64), X.indices.astype(np.int32),
                                       X.data, self.labels_, self.n_clusters_, agg == "avg",
                                       _n_chunks())
        return sp.csr_matrix((dat, ind, ptr), shape=(X.shape[0], self.n_clusters_))

    def fit_transform(self, X, Y=None, **fit_params):
        """:meth:`fit` on ``X`` (and ``Y``), then :meth:`transform` of ``X``.

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            The training points.
        Y : sparse or dense matrix (n, L) or None, default None
            Their labels (for ``"XY"``).
        **fit_params
            Passed on to :meth:`fit` (``progress``).

        Returns
        -------
        csr_matrix of float32 (n, K)
        """
        return self.fit(X, Y, **fit_params).transform(X)

    @fill_doc
    def membership_matrix(self) -> sp.csr_matrix:
        """The 0/1 d x K matrix G with ``G[j, labels_[j]] = 1`` (``transform(X) == X @ G``).

        {membership_returns}

        Raises
        ------
        {not_fitted}
        """
        self._check_fitted()
        return cluster_membership(self.labels_, self.n_clusters_, self.n_features_in_)

    @fill_doc
    def cluster_members(self, cluster: int) -> np.ndarray:
        """Feature indices of one cluster (ascending).

        Parameters
        ----------
        cluster : int
            A cluster id in ``[0, n_clusters_)``.

        Returns
        -------
        int64 array

        Raises
        ------
        {not_fitted}
        ValueError
            For a cluster id out of range.
        """
        self._check_fitted()
        if not 0 <= int(cluster) < self.n_clusters_:
            raise ValueError(f"cluster must be in [0, {self.n_clusters_}), got {cluster!r}")
        return self.tree_.members(int(self.tree_.leaves()[int(cluster)]))

    # -- artifacts protocol
    def _artifact_state(self):
        self._check_fitted()
        meta = {"n_clusters_": self.n_clusters_, "clustering_error_": self.clustering_error_,
                "n_features_in_": self.n_features_in_, "n_iter_": self.n_iter_}
        arrays = {"labels_": self.labels_, "cluster_sizes_": self.cluster_sizes_,
                  "zero_features_": self.zero_features_}
        arrays.update(self.tree_._arrays())
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        obj.labels_ = np.asarray(arrays["labels_"], np.int64)
        obj.cluster_sizes_ = np.asarray(arrays["cluster_sizes_"], np.int64)
        obj.zero_features_ = np.asarray(arrays["zero_features_"], np.int64)
        obj.tree_ = DefragTree._from_arrays(arrays)
        obj.n_clusters_ = int(meta["n_clusters_"])
        obj.clustering_error_ = float(meta["clustering_error_"])
        obj.n_features_in_ = int(meta["n_features_in_"])
        obj.n_iter_ = int(meta["n_iter_"])
        return obj


def warmup() -> None:
    """Compile (or load from cache) every DEFRAG kernel on a tiny input.

    The X representation comes first and the XY one (whose exact XᵀY product,
    :mod:`featagg_core.utils.products`, is the slowest kernel to compile) last: the server's
    second compile worker compiles the products group meanwhile
    (:mod:`featagg_app.server.warmup`), so by the time this reaches the XY fit its kernels are
    usually in numba's cache already and are only loaded."""
    rng = np.random.default_rng(0)
    X = sp.random(12, 20, density=0.3, format="csr", random_state=rng, dtype=np.float32)
    Y = sp.random(12, 4, density=0.5, format="csr", random_state=rng, dtype=np.float32)
    Y.data[:] = 1.0
    m = Defrag(d0=4, representation="X").fit(X, Y)
    m.transform(X)
    m.transform(X, aggregation="avg")
    clustering_error(feature_representation(X, representation="X")[0], m.labels_)
    Defrag(d0=4, representation="XY").fit(X, Y)
    Xt = X.T.tocsr()
    _k.xt_y_nnz(Xt.indptr.astype(np.int64), Xt.indices.astype(np.int32),
                Y.indptr.astype(np.int64), Y.indices.astype(np.int32), Y.shape[1])
