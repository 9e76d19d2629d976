"""Likely label errors of a multi-label training set, from out-of-fold scores.

Scores: :func:`out_of_fold_scores` trains featagg's default classifier (KTXMLC with its
default settings, as ``featagg train`` and the dashboard use it) on k-1 folds of the training
rows and scores the held-out fold, so no row is scored by a model that saw its labels.
KTXMLC keeps each row's top-``k`` calibrated scores; a label outside them scores 0.

Flag (confident learning's confident joint, Northcutt, Jiang & Chuang 2021, with each label
a binary task as in cleanlab's multi-label mode): a given label j of row i is *confidently
absent* when its out-of-fold score is at most the label's negative threshold, the mean
score of the rows that do not carry j (CL's per-class threshold of the "absent" class:
``1 - s_ij >= mean(1 - s)`` over those rows); a row with such a label is flagged. A
missing label scoring at or above the positive threshold ``t_j`` (the mean score of the
rows that carry j, the label's average self-confidence) is shown as *likely but missing*.
Rank: ``log((best missing score + eps) / (worst given score + eps))`` -- how much more the
model believes the row's most likely absent label than its least likely given one; an
injected swap (a right label removed, a wrong one added) moves both terms. It ranked
injected swaps higher than the worst given score alone, per-label-normalised margins or
label ranks in trials on Bibtex and Delicious (benchmarks/results/health_notes.md).
``benchmarks/health_bench.py`` compares the ranking and the flags with cleanlab's
``find_label_issues`` given the same scores (``benchmarks/results/health.md``).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core.health.alerts import Alert

__all__ = ["out_of_fold_scores", "label_issue_scores", "label_error_alert", "FULL_SCORES"]

#: rows x labels up to which the out-of-fold scores keep every label (2e7 stored scores:
#: about 160 MB as csr)
FULL_SCORES = 20_000_000


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
        Scores kept per row (default: every label when ``n * L <=`` :data:`FULL_SCORES`,
        else ``min(L, max(100, 3 * the most labels of a row))``). A label outside a row's
        top ``k`` scores 0, so a truncated list ties every weak given label at 0 and blunts
        the ranking (benchmarks/results/health_notes.md).
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
        if n * L <= FULL_SCORES:
            k = L
        else:
            most = int(np.diff(Y.indptr).max()) if n else 1
            k = min(L, max(100, 3 * most))
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
    """Per-row label-issue scores and flags under the rule of the module docstring.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix
        Training labels (0/1), n x L.
    scores : scipy.sparse.csr_matrix or numpy.ndarray
        Out-of-fold scores, n x L (absent = 0).

    Returns
    -------
    score : numpy.ndarray
        float64 per row, larger = more likely wrong: ``log`` of (the best score of a
        missing label + eps) over (the worst score of a given label + eps).
    flagged : numpy.ndarray
        bool per row: some given label is confidently absent (its score at most the mean
        score of the rows without that label).
    given_worst : numpy.ndarray
        int64 per row: its lowest-scored given label (-1 for a row without labels).
    missing_best : numpy.ndarray
        int64 per row: its highest-scored missing label at or above that label's
        threshold ``t_j`` (-1 when none).
    """
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    Y.data[:] = 1.0
    S = sp.csr_matrix(scores, dtype=np.float64)
    S.sum_duplicates()
    n, L = Y.shape
    eps = 1e-6
    row_of = np.repeat(np.arange(n), np.diff(Y.indptr))
    # s_ij on the given labels, aligned with Y's entries (0 when not scored)
    sg = (np.asarray(S[row_of, Y.indices]).ravel() if Y.nnz else np.zeros(0))
    cnt = np.bincount(Y.indices, minlength=L).astype(np.float64)
    pos_sum = np.bincount(Y.indices, weights=sg, minlength=L)
    all_sum = np.bincount(S.indices, weights=S.data, minlength=L)[:L]
    t_pos = np.where(cnt > 0, pos_sum / np.maximum(cnt, 1), np.inf)
    t_neg = (all_sum - pos_sum) / np.maximum(n - cnt, 1)
    # the worst given label of each row, and the confident-joint flag
    worst = np.ones(n)
    given_worst = np.full(n, -1, np.int64)
    flagged = np.zeros(n, bool)
    if Y.nnz:
        o = np.lexsort((sg, row_of))
        first = np.r_[True, row_of[o][1:] != row_of[o][:-1]]
        sel = o[first]
        worst[row_of[sel]] = sg[sel]
        given_worst[row_of[sel]] = Y.indices[sel]
        conf_neg = sg <= t_neg[Y.indices]
        flagged[row_of[conf_neg]] = True
    # the best missing label of each row
    best = np.zeros(n)
    missing_best = np.full(n, -1, np.int64)
    if S.nnz:
        srow = np.repeat(np.arange(n), np.diff(S.indptr))
        in_y = np.asarray(Y[srow, S.indices]).ravel() > 0
        keep = ~in_y
        r, j, v = srow[keep], S.indices[keep], S.data[keep]
        if r.size:
            o = np.lexsort((-v, r))
            first = np.r_[True, r[o][1:] != r[o][:-1]]
            sel = o[first]
            best[r[sel]] = v[sel]
            ok = v[sel] >= t_pos[j[sel]]
            missing_best[r[sel][ok]] = j[sel][ok]
    score = np.log(best + eps) - np.log(worst + eps)
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
            bits.append(f"'{nm(gw[i])}' given but scored low")
        if mb[i] >= 0:
            bits.append(f"'{nm(mb[i])}' likely but missing")
        ex.append(f"row {int(ids[i])}: " + "; ".join(bits))
    n = Y.shape[0]
    return Alert(
        "label_errors", "warning" if rows.size > 0.01 * n else "info", int(rows.size),
        f"{rows.size:,} training rows{' (%.1f %%)' % (100.0 * rows.size / max(n, 1))} have "
        f"a label that out-of-fold predictions of the default classifier score as "
        f"confidently absent (at most the label's average score on rows without it).",
        "Review the first rows of the list (most likely first) and correct their labels; "
        "on naturally noisy tag data many flags are honest ambiguity, so look before you "
        "drop.",
        rows=ids[rows], examples=ex,
        extra={"rule": "confident learning: a given label scoring at most the mean "
                       "out-of-fold score of the rows without it; ranked by log(best missing "
                       "score / worst given score)",
               "scores": np.round(score[rows][:1000], 4)})
