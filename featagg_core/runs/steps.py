"""Fitting one pipeline step on training rows (used by ``runs.run.run_pipeline`` and by
the sweeps that fit, so both fit a step the same way).

Here or on a cluster is decided here: without a ``scheduler`` a step is fitted by its
estimator's own ``fit``; with one, DEFRAG and KTXMLC are fitted by their Dask twins
(:mod:`featagg_core.distributed`, the same models) and the other steps here.

Every function takes the *training* arrays only; the caller slices them from the split.
``progress`` is a ``callback(fraction, message)`` (``featagg_core.utils.cancel.cancelling_progress``
in a run, so it raises ``Cancelled`` once the user asked to stop); each estimator's own
callback signature is adapted here.
"""
from __future__ import annotations

import time
import warnings
from typing import Callable, Optional, Tuple

import numpy as np

from featagg_core.utils.cancel import check_cancel
from featagg_core.utils.docstrings import fill_doc

Progress = Optional[Callable[[float, str], None]]


def _call(progress: Progress, fraction: float, message: str) -> None:
    if progress is not None:
        progress(fraction, message)


def flexible_progress(progress: Progress, what: str):
    """An estimator callback reporting ``progress(fraction, "<what>: <message>")``.

    It accepts ``(fraction, message)``, ``(done, total)``, ``(stage, fraction, message)``
    or ``(level, n_levels)``.

    Parameters
    ----------
    progress : callable or None
        ``progress(fraction, message)``; None gives None.
    what : str
        The step's name, put before every message.

    Returns
    -------
    callable or None
        The callback.
    """
    if progress is None:
        return None

    def report(*args):
        if not args:
            return progress(0.0, what)
        if isinstance(args[0], str):                      # (stage, fraction, message)
            frac = float(args[1]) if len(args) > 1 else 0.0
            msg = str(args[2]) if len(args) > 2 else args[0]
        elif len(args) > 1 and isinstance(args[1], str):  # (fraction, message)
            frac, msg = float(args[0]), args[1]
        elif len(args) > 1:                               # (done, total)
            total = float(args[1])
            frac = float(args[0]) / total if total > 0 else 1.0
            msg = f"{int(args[0])}/{int(args[1])}"
        else:
            frac, msg = float(args[0]), ""
        return progress(min(1.0, max(0.0, frac)), f"{what}: {msg}" if msg else what)
    return report


# ----------------------------------------------------------------------------- multilabel
@fill_doc
def fit_defrag(X, Y, params: dict, progress: Progress = None, scheduler=None):
    """A Defrag fitted on training rows X, Y.

    With a ``scheduler`` by its Dask twin (the same model).

    Parameters
    ----------
    {train_XY}
    params : dict
        Defrag's parameters (no ``per_tree``).
    {progress}
    scheduler : None, "serial", str or dask.distributed.Client, optional
        Where to fit (None: here).

    Returns
    -------
    Defrag
        The fitted model.
    """
    params = {k: v for k, v in params.items() if k != "per_tree"}

    def levels(level, n_levels):
        _call(progress, level / max(n_levels, 1), f"DEFRAG: level {level} of {n_levels}")

    _call(progress, 0.0, f"DEFRAG: agglomerating {X.shape[1]:,} features")
    Y = Y if params["representation"] == "XY" else None
    report = levels if progress is not None else None
    if scheduler is None:
        from featagg_core.agglomeration.defrag import Defrag
        return Defrag(**params).fit(X, Y, progress=report)
    from featagg_core.distributed.defrag import defrag_distributed
    return defrag_distributed(scheduler, X, Y, progress=report, **params)


@fill_doc
def fit_classifier(X, Y, params: dict, progress: Progress = None, scheduler=None):
    """KTXMLC or OneVsAll (``params["kind"]``) fitted on training rows.

    KTXMLC with a ``scheduler`` by its Dask twin (the same model; OneVsAll has none and
    fits here).

    Parameters
    ----------
    {train_XY}
    params : dict
        The classifier sub-spec (``kind`` and the estimator's parameters).
    {progress}
    scheduler : None, "serial", str or dask.distributed.Client, optional
        Where to fit (None: here).

    Returns
    -------
    KTXMLC or OneVsAll
        The fitted model.
    """
    from featagg_core.xmlc.ktxmlc import KTXMLC, OneVsAll
    kw = {k: v for k, v in params.items() if k != "kind"}
    model = KTXMLC(**kw) if params["kind"] == "ktxmlc" else OneVsAll(**kw)
    _call(progress, 0.0, f"{type(model).__name__}: training on {X.shape[0]:,} points")
    report = flexible_progress(progress, type(model).__name__)
    if scheduler is not None and params["kind"] == "ktxmlc":
        from featagg_core.distributed.ktxmlc import ktxmlc_distributed
        return ktxmlc_distributed(scheduler, X, Y, progress=report, **kw)
    model.fit(X, Y, progress=report)
    return model


@fill_doc
def fit_per_tree(X, Y, defrag: dict, classifier: dict, progress: Progress = None):
    """The DEFRAG paper's ensemble: one Defrag and one single-tree KTXMLC per tree.

    Parameters
    ----------
    {train_XY}
    defrag : dict
        The DEFRAG sub-spec.
    classifier : dict
        The KTXMLC sub-spec (``n_trees`` trees).
    {progress}

    Returns
    -------
    DefragKTXMLC
        The fitted ensemble.
    """
    from featagg_core.xmlc.ktxmlc import DefragKTXMLC
    model = DefragKTXMLC(d0=defrag["d0"], defrag_representation=defrag["representation"],
                         per_tree=True, n_clusters=classifier["n_clusters"],
                         n_trees=classifier["n_trees"], max_depth=classifier["max_depth"],
                         max_leaf_labels=classifier["max_leaf_labels"], C=classifier["C"],
                         beam_width=classifier["beam_width"],
                         random_state=classifier["random_state"])
    _call(progress, 0.0, "DEFRAG + KTXMLC per tree: training")
    model.fit(X, Y, progress=flexible_progress(progress, "DEFRAG + KTXMLC per tree"))
    return model


@fill_doc
def fit_refrag(X, Y, params: dict, clustering):
    """REFRAG prototypes from training rows and a fitted feature clustering.

    Parameters
    ----------
    {train_XY}
    params : dict
        The rerank sub-spec (``shortlist`` and REFRAG's parameters).
    clustering : Defrag or FeatureClusters
        The fitted feature clustering.

    Returns
    -------
    Refrag
        The fitted re-ranker.
    """
    from featagg_core.agglomeration.refrag import Refrag
    kw = {k: v for k, v in params.items()
          if k not in ("kind", "shortlist", "defrag", "tune", "tune_max_drop")}
    return Refrag(shortlist_size=params["shortlist"], **kw).fit(X, Y, clustering)


def fit_fiat(X, params: dict, clustering):
    """FIAT's C^F and imputation operator from training rows and a feature clustering.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n, d)
        The training rows' features.
    params : dict
        The impute sub-spec (FIAT's parameters).
    clustering : Defrag or FeatureClusters
        The fitted feature clustering.

    Returns
    -------
    Fiat
        The fitted imputer.
    """
    from featagg_core.agglomeration.fiat import Fiat
    kw = {k: v for k, v in params.items() if k not in ("kind", "defrag")}
    return Fiat(clustering, **kw).fit(X)


@fill_doc
def fit_feature_clustering(X, Y, params: dict, progress: Progress = None):
    """A flat feature clustering of the training rows.

    k-means, random balanced or Ward on the L2-normalised feature representation
    (:func:`featagg_core.agglomeration.defrag.feature_representation`, no sampling), as a
    :class:`featagg_core.runs.pipeline.FeatureClusters`.

    Parameters
    ----------
    {train_XY}
    params : dict
        The feature_clustering sub-spec.
    {progress}

    Returns
    -------
    FeatureClusters
        The fitted clustering.
    """
    from featagg_core.agglomeration import clustering as fcl
    from featagg_core.agglomeration.defrag import feature_representation
    from featagg_core.runs.pipeline import FeatureClusters
    kind, K = params["kind"], int(params["n_clusters"])
    d = X.shape[1]
    cb = flexible_progress(progress, {"kmeans": "k-means", "ward": "Ward",
                                      "random_balanced": "random balanced"}[kind])
    _call(progress, 0.0, f"feature clustering: {d:,} features into {K:,} clusters")
    if kind == "random_balanced":
        labels = fcl.random_balanced_labels(d, K, random_state=params["random_state"])
    else:
        R, _ = feature_representation(X, Y if params["representation"] == "XY" else None,
                                      params["representation"])
        if kind == "kmeans":
            labels = fcl.kmeans_feature_labels(R, K, random_state=params["random_state"],
                                               max_features=params["max_features"],
                                               progress=cb)
        else:
            labels = fcl.ward_feature_labels(R, K, max_features=params["max_features"],
                                             progress=cb, random_state=params["random_state"])
    model = FeatureClusters(**{k: v for k, v in params.items() if k != "kind"}, kind=kind)
    return model._set(labels, d)


# ----------------------------------------------------------------------------- graphs
def _n_classes(y) -> int:
    if y is None:
        return 0
    from featagg_core.graph.evaluation import known_class_mask
    y = np.asarray(y)
    return int(np.unique(y[known_class_mask(y)]).size)


@fill_doc
def fit_selector(A, X, y, params: dict, progress: Progress = None) -> Tuple[object, np.ndarray,
                                                                            Optional[str]]:
    """A graph feature selection fitted on the training nodes' induced subgraph.

    BMGUFS uses ``y`` only for the number of blocks when ``n_blocks`` is None.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix of shape (n, n)
        The training nodes' induced subgraph.
    X : scipy.sparse.csr_matrix of shape (n, d)
        Their features.
    y : ndarray of shape (n,) or None
        Their classes.
    params : dict
        The feature_selection sub-spec.
    {progress}

    Returns
    -------
    selector : BMGUFS or FeatureRanking
        The fitted selection.
    selected : ndarray of int64
        The selected columns.
    warning : str or None
        A note for the user, or None.
    """
    import scipy.sparse as sp

    from featagg_core.graph import baselines as fsb
    from featagg_core.runs.pipeline import FeatureRanking
    kind, d = params["kind"], params["d"]
    f = X.shape[1]
    if kind == "bmgufs":
        from featagg_core.graph.bmgufs import BMGUFS
        kw = {k: v for k, v in params.items() if k not in ("kind", "d", "keep_d")}
        model = BMGUFS(**kw)
        _call(progress, 0.0, f"BMGUFS: {A.shape[0]:,} training nodes, {f:,} features")
        labels = y if _n_classes(y) > 0 else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if params.get("keep_d", True):
                model.fit_gamma_grid(A, X, d, labels, progress=_bmgufs_progress(progress))
            else:
                model.fit(A, X, labels, progress=_bmgufs_progress(progress))
            selected = model.select(d)
        notes = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        if model.gamma_ != float(params["gamma"]):
            notes.insert(0, f"gamma lowered from {params['gamma']:g} to {model.gamma_:g} so "
                            f"that {d} features keep a non-zero weight (nnz(r) = "
                            f"{model.n_nonzero_})")
        if labels is None and params["n_blocks"] is None:
            notes.insert(0, model.n_blocks_rule_)
        return model, np.asarray(selected, np.int64), "; ".join(notes) or None
    Xf = sp.csr_matrix(X, dtype=np.float64)
    k = _n_classes(y)

    def affinity():
        if params["affinity"] == "graph":
            return sp.csr_matrix(A, dtype=np.float64)
        _call(progress, 0.1, f"{kind}: {params['n_neighbors']}-NN feature graph")
        return fsb.knn_graph(Xf, n_neighbors=params["n_neighbors"])

    _call(progress, 0.0, f"{kind}: scoring {f:,} features on {A.shape[0]:,} training nodes")
    if kind == "laplacian":
        scores, larger = fsb.laplacian_score(Xf, affinity()), False
    elif kind == "spec":
        style = params["style"] if params["style"] is not None else max(k, 2)
        scores, larger = fsb.spec_score(Xf, affinity(), style=style), True
    elif kind == "ndfs":
        nc = params["n_clusters"] if params["n_clusters"] is not None else k
        scores = fsb.ndfs_score(Xf, affinity(), n_clusters=nc, alpha=params["alpha"],
                                beta=params["beta"], gamma=params["gamma"],
                                n_iter=params["n_iter"], random_state=params["random_state"])
        larger = True
    elif kind == "variance":
        scores, larger = fsb.variance_score(Xf), True
    elif kind == "random":
        scores, larger = fsb.random_scores(f, params["random_state"]), True
    else:                                                   # "all"
        scores, larger = np.zeros(f), True
    model = FeatureRanking(kind=kind, params={k_: v for k_, v in params.items()
                                              if k_ != "kind"})._set(scores, larger)
    return model, model.select(None if kind == "all" else d), None


def _bmgufs_progress(progress: Progress):
    if progress is None:
        return None

    def report(stage, fraction, message):
        lo, hi = (0.0, 0.5) if stage == "block models" else (0.5, 1.0)
        progress(lo + (hi - lo) * min(1.0, max(0.0, float(fraction))), f"BMGUFS: {message}")
    return report


# ----------------------------------------------------------------------------- tables
@fill_doc
def fit_vocabulary(table, labels, params: dict, cancel=None, progress: Progress = None):
    """A :class:`featagg_core.vocab.compressor.ColumnCompression` of the training rows.

    ``budget`` buckets per column; ``allocation="per_column"`` compresses each column on
    its own, the others share ``budget * n_columns`` buckets
    (:func:`featagg_core.vocab.compressor.compress_columns`).

    Parameters
    ----------
    table : pandas.DataFrame
        The training rows' categorical columns.
    labels : ndarray of shape (n,)
        Their 0/1 labels.
    params : dict
        The vocabulary sub-spec.
    cancel : threading.Event-like, optional
        Stops the fit (raises ``Cancelled``).
    {progress}

    Returns
    -------
    compression : ColumnCompression
        The fitted compressors.
    columns : list
        The columns compressed.
    """
    from featagg_core.vocab.compressor import (
        ColumnCompression,
        VocabularyCompressor,
        compress_columns,
    )
    columns = list(params["columns"]) if params["columns"] is not None else list(table.columns)
    kw = {k: v for k, v in params.items()
          if k not in ("method", "budget", "columns", "allocation")}
    t0 = time.perf_counter()
    if params["allocation"] == "per_column":
        comps = {}
        for i, col in enumerate(columns):
            check_cancel(cancel)
            _call(progress, i / max(len(columns), 1), f"vocabulary: column {col}")
            comps[col] = VocabularyCompressor(params["budget"], method=params["method"],
                                              **kw).fit(table[col].to_numpy(), labels)
        cc = ColumnCompression(comps, {c: comps[c].n_buckets_ for c in columns},
                               params["method"], int(params["budget"]) * len(columns),
                               time.perf_counter() - t0)
    else:
        _call(progress, 0.0, f"vocabulary: {len(columns)} columns")
        cc = compress_columns(table, labels, int(params["budget"]) * len(columns),
                              method=params["method"], allocation=params["allocation"],
                              columns=columns, **kw)
    return cc, columns
