"""The clustering protocol used to judge unsupervised feature selection on attributed graphs.

As in Bai, Nguyen & Davidson (KDD 2020) and the feature-selection literature they compare
with: run k-means (k = number of node classes) on the selected feature columns with several
seeds and score each clustering against the node classes by clustering accuracy (best
one-to-one matching of clusters to classes) and normalised mutual information; report mean
and standard deviation over the seeds.

Only nodes with a known class take part (``y`` entries equal to -1, NaN or None are dropped).
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.validation import parameter_error
from featagg_core.utils.docstrings import fill_doc

__all__ = ["kmeans_scores", "evaluate_selection", "known_class_mask"]


def known_class_mask(y) -> np.ndarray:
    """Boolean mask of the nodes whose class is known (not -1 / NaN / None).

    Parameters
    ----------
    y : array-like of shape (n,)
        The class of every node.

    Returns
    -------
    ndarray of bool, shape (n,)
        True where the class is known.

    Raises
    ------
    ValueError
        When ``y`` is not one class per node.
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be one class per node (a 1-D vector), got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        return arr >= 0
    if arr.dtype.kind == "f":
        return np.isfinite(arr) & (arr >= 0)
    return np.array([v is not None and v == v and str(v) != "-1" for v in arr], dtype=bool)


def _as_matrix(X):
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"X must be a 2-D node x feature matrix, got {arr.ndim}-D")
    return arr


@fill_doc
def kmeans_scores(X, y, n_clusters: Optional[int] = None, n_seeds: int = 10,
                  random_state: int = 0, n_init: int = 1, max_iter: int = 300,
                  progress=None) -> dict:
    """k-means on the rows of ``X`` with ``n_seeds`` seeds, scored against ``y``.

    An ``X`` with no columns scores as a single cluster (every node in cluster 0).

    Parameters
    ----------
    {graph_X_y}
    n_clusters : int, optional
        The number of clusters; default the number of known classes.
    n_seeds : int, default=10
        How many k-means runs (the scores are their mean and sd).
    random_state : int, default=0
        Seeds the generator that draws each run's seed.
    n_init : int, default=1
        scikit-learn's ``n_init`` of each run.
    max_iter : int, default=300
        scikit-learn's ``max_iter`` of each run.
    progress : callable, optional
        ``progress(fraction, message)``, if given, is called before every seed's k-means; it
        may raise (e.g. :class:`featagg_core.utils.cancel.Cancelled`), which propagates.

    Returns
    -------
    dict
        ``acc_mean``, ``acc_sd``, ``nmi_mean``, ``nmi_sd``, the per-seed lists ``acc`` and
        ``nmi``, ``n_clusters`` and ``n_nodes`` (nodes with a known class).

    Raises
    ------
    ValueError
        When ``y`` does not fit ``X``, fewer than two nodes have a known class, or
        ``n_clusters`` / ``n_seeds`` is below 1.
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    from featagg_core.metrics import clustering_accuracy, normalized_mutual_info

    X = _as_matrix(X)
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y: has {y.shape[0]} entries but X has {X.shape[0]} rows")
    mask = known_class_mask(y)
    if mask.sum() < 2:
        raise ValueError("y: fewer than two nodes with a known class")
    Xk = X[mask]
    yk = y[mask]
    k = int(np.unique(yk).size) if n_clusters is None else int(n_clusters)
    if k < 1:
        raise parameter_error("n_clusters", "an integer >= 1", k)
    if n_seeds < 1:
        raise parameter_error("n_seeds", "an integer >= 1", n_seeds)
    seeds = np.random.RandomState(random_state).randint(0, 2 ** 31 - 1, size=n_seeds)
    accs, nmis = [], []
    for i, s in enumerate(seeds):
        if progress is not None:
            progress(i / len(seeds), f"k-means seed {i + 1}/{len(seeds)}")
        if Xk.shape[1] == 0:
            pred = np.zeros(Xk.shape[0], dtype=np.int64)
        else:
            km = KMeans(n_clusters=k, n_init=n_init, max_iter=max_iter, random_state=int(s))
            with warnings.catch_warnings():
                # few distinct rows (tiny d on binary data) -> duplicate centres: still valid
                warnings.simplefilter("ignore", ConvergenceWarning)
                pred = km.fit_predict(Xk)
        accs.append(clustering_accuracy(yk, pred))
        nmis.append(normalized_mutual_info(yk, pred))
    accs = np.array(accs)
    nmis = np.array(nmis)
    return {"acc_mean": float(accs.mean()), "acc_sd": float(accs.std()),
            "nmi_mean": float(nmis.mean()), "nmi_sd": float(nmis.std()),
            "acc": accs.tolist(), "nmi": nmis.tolist(), "n_clusters": k,
            "n_nodes": int(Xk.shape[0])}


@fill_doc
def evaluate_selection(X, y, selected: Sequence[int], n_clusters: Optional[int] = None,
                       n_seeds: int = 10, random_state: int = 0, progress=None) -> dict:
    """:func:`kmeans_scores` on the columns ``selected`` of ``X``.

    Parameters
    ----------
    {graph_X_y}
    selected : sequence of int
        The feature (column) indices to keep.
    n_clusters : int, optional
        The number of clusters; default the number of known classes.
    n_seeds : int, default=10
        How many k-means runs.
    random_state : int, default=0
        Seeds the generator that draws each run's seed.
    progress : callable, optional
        ``progress(fraction, message)``, called before every seed's k-means.

    Returns
    -------
    dict
        :func:`kmeans_scores`' dict plus ``d``, the number of columns used.

    Raises
    ------
    ValueError
        When an index of ``selected`` is outside the features.
    """
    X = _as_matrix(X)
    idx = np.asarray(selected, dtype=np.int64).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= X.shape[1]):
        raise ValueError(f"selected must be feature indices in [0, {X.shape[1]}), got "
                         f"{int(idx.min())}..{int(idx.max())}")
    Xs = X[:, idx]
    out = kmeans_scores(Xs, y, n_clusters=n_clusters, n_seeds=n_seeds,
                        random_state=random_state, progress=progress)
    out["d"] = int(idx.size)
    return out
