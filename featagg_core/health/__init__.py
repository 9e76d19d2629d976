"""Data-health checks: is this data sound before any score is trusted?

:func:`check` runs every check that fits the dataset's kind and returns the alerts sorted by
severity (error, warning, info). Modules: ``alerts`` (the :class:`Alert`, the severity
order, JSON and plain-text forms), ``rows`` (duplicate rows, conflicting labels, empty
rows, train/test overlap by exact hashing and SimHash banding), ``columns`` (features and
labels: unused, constant, only in test, drift, near-duplicate labels), ``label_errors``
(out-of-fold scores and confident learning's per-label thresholds), ``graph`` and
``table`` (the checks of the other two kinds). The kernels are in
:mod:`featagg_core._kernels.health`.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from featagg_core.health.alerts import (MAX_LIST, SEVERITIES, Alert, alerts_to_json,
                                        format_alerts, sort_alerts)
from featagg_core.health.label_errors import out_of_fold_scores

__all__ = ["check", "Alert", "alerts_to_json", "format_alerts", "sort_alerts",
           "out_of_fold_scores", "SEVERITIES", "MAX_LIST", "warmup"]


def _train_test(data, split):
    """(train row ids of X, test matrix source, test row ids) for a multi-label dataset."""
    X_test = getattr(data, "X_test", None)
    own = X_test is not None and X_test.shape[0] > 0
    if split is None:
        return np.arange(data.X.shape[0]), ("own" if own else None), None
    train = np.sort(np.concatenate([np.asarray(split.train, np.int64),
                                    np.asarray(split.valid, np.int64)]))
    test = np.asarray(split.test, np.int64)
    return train, ("own" if split.own_test else "x"), test


def check(data, split=None, *, label_errors: bool = True, n_folds: int = 5,
          random_state: int = 0, threshold: float = 0.95) -> List[Alert]:
    """Every data-health check for the dataset's kind, sorted by severity.

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
        The dataset.
    split : featagg_core.runs.split.Split, optional
        Which rows train and test. When None, a multi-label dataset's own test part (if it
        has one) is the test set; otherwise only the checks of the training rows run.
        ``rows`` index the dataset's rows (``data.X``, nodes, table rows); ``test_rows``
        index its test part (``data.X_test`` for an own test part, else the dataset's rows).
    label_errors : bool
        Also look for likely label errors (multi-label; trains the default classifier
        ``n_folds`` times, by far the slowest check).
    n_folds : int
        Folds of the out-of-fold scores.
    random_state : int
        Seed of the folds, the classifier and the hashes.
    threshold : float
        Cosine at or above which a test row near-duplicates a training row.

    Returns
    -------
    list of Alert
        Error first, then warning, then info.

    Raises
    ------
    ValueError
        When ``data`` is not a multilabel, graph or table dataset.
    """
    kind = getattr(data, "kind", None)
    if kind == "multilabel":
        alerts = _multilabel(data, split, label_errors, n_folds, random_state, threshold)
    elif kind == "graph":
        from featagg_core.health.graph import graph_alerts
        alerts = graph_alerts(data)
    elif kind == "table":
        from featagg_core.health.table import table_alerts
        alerts = table_alerts(data, None if split is None else split.test)
    else:
        raise ValueError("health checks need a multi-label dataset, a graph or a table")
    return sort_alerts(alerts)


def _multilabel(data, split, label_errors, n_folds, random_state, threshold):
    from featagg_core.health import columns, rows
    from featagg_core.health.label_errors import label_error_alert
    train, test_src, test_ids = _train_test(data, split)
    whole = train.size == data.X.shape[0]
    X = rows.canonical_csr(data.X if whole else data.X[train])
    Y = rows.canonical_csr(data.Y if whole else data.Y[train])
    if test_src == "own":
        Xt, Yt = data.X_test, data.Y_test
        if test_ids is not None:
            Xt, Yt = Xt[test_ids], Yt[test_ids]
    elif test_src == "x":
        Xt, Yt = data.X[test_ids], data.Y[test_ids]
    else:
        Xt = Yt = None
    if Xt is not None:
        Xt, Yt = rows.canonical_csr(Xt), rows.canonical_csr(Yt)
    ids = None if whole else train
    alerts = []
    alerts += rows.duplicate_alerts(X, Y, offset_rows=ids)
    alerts += rows.empty_alerts(X, Y, Xt, Yt, offset_rows=ids)
    if Xt is not None and Xt.shape[0] and X.shape[0]:
        a = rows.overlap_alert(X, Xt, threshold, offset_rows=ids, test_ids=test_ids,
                               seed=random_state)
        if a is not None:
            alerts.append(a)
    alerts += columns.feature_alerts(X, data.feature_names)
    alerts += columns.label_alerts(Y, Yt, data.label_names, test_ids=test_ids)
    a = columns.label_pairs_alert(Y, data.label_names)
    if a is not None:
        alerts.append(a)
    if label_errors and X.shape[0] >= max(50, 2 * n_folds) and Y.shape[1] >= 2 and Y.nnz:
        a = label_error_alert(X, Y, data.label_names, offset_rows=ids, n_folds=n_folds,
                              random_state=random_state)
        if a is not None:
            alerts.append(a)
    return alerts


def warmup() -> None:
    """Compile the health kernels on tiny inputs (numba caches them on disk)."""
    from featagg_core._kernels.health import warmup as _warm
    _warm()
