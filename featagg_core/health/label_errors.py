"""Likely label errors of a multi-label training set, from out-of-fold scores.

Scores: :func:`out_of_fold_scores` trains featagg's default classifier (KTXMLC with its
default settings, as ``featagg train`` and the dashboard use it) on k-1 folds of the training
rows and scores the held-out fold, so no row is scored by a model that saw its labels.
KTXMLC keeps each row's top-``k`` calibrated scores; a label outside them scores 0.

Rule (confident learning's per-class thresholds, Northcutt, Jiang & Chuang 2021, applied
to each label as a binary task as cleanlab's multi-label mode does): the threshold of label
j is its average self-confidence, ``t_j`` = the mean out-of-fold score of the rows that
carry j. A given label scoring below ``t_j`` is *given but unlikely*, a missing label
scoring at or above ``t_j`` is *likely but missing*. A row is flagged when it has both
(the swapped-label pattern: one label wrong, the right one missing) or a given label
scoring below ``t_j / 4``; its score is the margin ``max_given (t_j - s_ij) / t_j +
max_missing (s_ij - t_j) / t_j`` (relative to each label's threshold, so rare labels with
low thresholds are not drowned by frequent ones), and rows are ranked by it, most likely
first. ``benchmarks/health_bench.py`` compares the ranking and the flags with cleanlab's
``find_label_issues`` given the same scores (``benchmarks/results/health.md``).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core.health.alerts import Alert

__all__ = ["out_of_fold_scores", "label_issue_scores", "label_error_alert"]


def out_of_fold_scores(X, Y, n_folds: int = 5, random_state: int = 0, k: Optional[int] = None,
                       classifier=None) -> sp.csr_matrix:
    """Out-of-fold label scores of every training row.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Training features, n x d.
    Y : scipy.sparse.csr_matrix
        Training labels, n x L (0/1).
    n_folds : int
        Folds (>= 2); rows are assigned by a seeded permutation.
    random_state : int
        Seed of the folds and of the classifier.
    k : int, optional
        Scores kept per row (default ``min(L, max(20, 3 * the most labels of a row))``).
    classifier : estimator, optional
        An unfitted estimator with ``fit(X, Y)`` and ``predict_scores(X, k)`` (default
        ``KTXMLC(random_state=random_state)``); cloned for every fold.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32 n x L: row i's scores from the model that did not see row i; labels outside
        its top ``k`` are not stored (score 0).

    Raises
    ------
    ValueError
        When there are fewer rows than folds or ``n_folds < 2``.
    """
    from sklearn.base import clone
    from featagg_core.xmlc.ktxmlc import KTXMLC
    X = sp.csr_matrix(X)
    Y = sp.csr_matrix(Y)
    n, L = Y.shape
    if n_folds < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    if n < n_folds:
        raise ValueError(f"out-of-fold scores need at least {n_folds} rows, got {n}")
    if k is None:
        most = int(np.diff(Y.indptr).max()) if n else 1
        k = min(L, max(20, 3 * most))
    base = classifier if classifier is not None else KTXMLC(random_state=random_state)
    fold = np.empty(n, np.int64)
    fold[np.random.default_rng(random_state).permutation(n)] = np.arange(n) % n_folds
    parts = []
    for f in range(n_folds):
        test = np.flatnonzero(fold == f)
        train = np.flatnonzero(fold != f)
        model = clone(base).fit(X[train], Y[train])
        S = sp.csr_matrix(model.predict_scores(X[test], k=k))
        S.resize(test.size, L)
        parts.append((test, S))
    rows = np.concatenate([t for t, _ in parts])
    S = sp.vstack([s for _, s in parts], format="csr")
    inv = np.empty(n, np.int64)
    inv[rows] = np.arange(n)
    out = S[inv]
    out = sp.csr_matrix(out, dtype=np.float32)
    out.sort_indices()
    return out


def label_issue_scores(Y, scores) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-row label-issue scores under the rule of the module docstring.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix
        Training labels (0/1), n x L.
    scores : scipy.sparse.csr_matrix or numpy.ndarray
        Out-of-fold scores, n x L (absent = 0).

    Returns
    -------
    score : numpy.ndarray
        float64 per row: the margin (0 for a row without a suspect label).
    flagged : numpy.ndarray
        bool per row: the rule flags it.
    given_worst : numpy.ndarray
        int64 per row: its given label furthest below threshold (-1 when none is below).
    missing_best : numpy.ndarray
        int64 per row: its missing label furthest above threshold (-1 when none).
    """
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Y.sum_duplicates()
    Y.data[:] = 1.0
    S = sp.csr_matrix(scores, dtype=np.float64)
    n, L = Y.shape
    row_of = np.repeat(np.arange(n), np.diff(Y.indptr))
    # s_ij on the given labels, aligned with Y's entries (0 when not scored)
    sg = (np.asarray(S[row_of, Y.indices]).ravel() if Y.nnz else np.zeros(0))
    cnt = np.bincount(Y.indices, minlength=L).astype(np.float64)
    tot = np.bincount(Y.indices, weights=sg, minlength=L)
    t = np.where(cnt > 0, tot / np.maximum(cnt, 1), np.inf)
    tpos = np.where(np.isfinite(t) & (t > 0), t, np.inf)
    # given but unlikely
    gm = (tpos[Y.indices] - sg) / tpos[Y.indices]
    gm[~np.isfinite(gm)] = 0.0
    gm = np.maximum(gm, 0.0)
    given = np.zeros(n)
    given_worst = np.full(n, -1, np.int64)
    if gm.size:
        o = np.lexsort((-gm, row_of))
        first = np.r_[True, row_of[o][1:] != row_of[o][:-1]]
        sel = o[first]
        given[row_of[sel]] = gm[sel]
        ok = gm[sel] > 0
        given_worst[row_of[sel][ok]] = Y.indices[sel][ok]
    # likely but missing: scored entries not in Y at or above their label's threshold
    S = S.tocsr()
    srow = np.repeat(np.arange(n), np.diff(S.indptr))
    in_y = np.asarray(Y[srow, S.indices]).ravel() > 0 if S.nnz else np.zeros(0, bool)
    thr = t[S.indices]
    mm = np.where(~in_y & np.isfinite(thr) & (S.data >= thr), (S.data - thr) / np.where(
        thr > 0, thr, 1.0), -1.0)
    missing = np.full(n, -1.0)
    missing_best = np.full(n, -1, np.int64)
    if mm.size:
        o = np.lexsort((-mm, srow))
        first = np.r_[True, srow[o][1:] != srow[o][:-1]]
        sel = o[first]
        missing[srow[sel]] = mm[sel]
        ok = mm[sel] >= 0
        missing_best[srow[sel][ok]] = S.indices[sel][ok]
    has_missing = missing >= 0
    score = given + np.maximum(missing, 0.0) + np.where(has_missing, 1e-9, 0.0)
    flagged = ((given > 0) & has_missing) | (given >= 0.75)
    score = np.where(flagged | (given > 0) | has_missing, score, 0.0)
    return score, flagged, given_worst, missing_best


def label_error_alert(X, Y, label_names: Optional[Sequence[str]] = None, offset_rows=None,
                      n_folds: int = 5, random_state: int = 0, scores=None) -> Optional[Alert]:
    """``label_errors``: training rows whose labels look wrong, most likely first.

    Parameters
    ----------
    X, Y : scipy.sparse.csr_matrix
        Training features and labels.
    label_names : sequence of str, optional
        Names of the labels.
    offset_rows : numpy.ndarray, optional
        The dataset row index of each training row.
    n_folds : int
        Folds of the out-of-fold scores.
    random_state : int
        Seed of the folds and the classifier.
    scores : scipy.sparse.csr_matrix, optional
        Out-of-fold scores already computed (default: :func:`out_of_fold_scores`).

    Returns
    -------
    Alert or None
        The alert (rows ranked most likely first), or None when no row is flagged.
    """
    if scores is None:
        scores = out_of_fold_scores(X, Y, n_folds=n_folds, random_state=random_state)
    score, flagged, gw, mb = label_issue_scores(Y, scores)
    rows = np.flatnonzero(flagged)
    if rows.size == 0:
        return None
    rows = rows[np.argsort(-score[rows], kind="stable")]
    ids = np.arange(Y.shape[0]) if offset_rows is None else np.asarray(offset_rows)

    def nm(j):
        if j < 0:
            return None
        return str(label_names[j]) if label_names is not None and j < len(label_names) \
            else f"#{int(j)}"

    ex = []
    for i in rows[:5]:
        bits = []
        if gw[i] >= 0:
            bits.append(f"'{nm(gw[i])}' given but unlikely")
        if mb[i] >= 0:
            bits.append(f"'{nm(mb[i])}' likely but missing")
        ex.append(f"row {int(ids[i])}: " + "; ".join(bits))
    n = Y.shape[0]
    return Alert(
        "label_errors", "warning" if rows.size > 0.01 * n else "info", int(rows.size),
        f"{rows.size:,} training rows{' (%.1f %%)' % (100.0 * rows.size / max(n, 1))} have "
        f"labels that out-of-fold predictions of the default classifier disagree with "
        f"(a given label scoring below its label's average, and a missing one above it).",
        "Review the first rows of the list (most likely first) and correct their labels; "
        "on naturally noisy tag data many flags are honest ambiguity, so look before you "
        "drop.",
        rows=ids[rows], examples=ex,
        extra={"rule": "confident learning per-label thresholds (mean out-of-fold score of "
                       "the rows carrying the label)",
               "scores": np.round(score[rows][:1000], 4)})
