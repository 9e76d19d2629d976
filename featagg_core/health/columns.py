"""Column-level checks of a multi-label dataset: features absent from every training row or
present in every one; labels absent from training, present only in test; label-frequency
drift between train and test; near-duplicate labels.

Column counts are one ``bincount`` over the stored column indices. Drift: for each label
seen in training, the two-proportion z statistic of its training and test frequencies
(pooled variance); a label drifts when ``|z| >= 5`` and its frequency changes by at least
a factor of 2 (so large sets do not flag tiny, significant-but-harmless changes); the
alert also gives the total-variation distance between the two label distributions.
Near-duplicate labels: the co-occurrence counts ``C = Y^T Y`` as a sparse product (only
pairs that co-occur are stored; never a dense L x L), Jaccard ``C_ij / (n_i + n_j - C_ij)``
of each pair with at least :data:`MIN_COOCCUR` shared rows.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.health.alerts import Alert

__all__ = ["feature_alerts", "label_alerts", "label_pairs_alert", "MIN_COOCCUR"]

#: the fewest rows two labels must share to be called near-duplicates
MIN_COOCCUR = 3


def _name(names, j) -> str:
    if names is not None and 0 <= j < len(names):
        return str(names[j])
    return f"#{int(j)}"


def _counts(A, n_cols) -> np.ndarray:
    return np.bincount(A.indices, minlength=n_cols)[:n_cols]


def feature_alerts(X, feature_names: Optional[Sequence[str]] = None) -> List[Alert]:
    """``unused_features`` (in no training row) and ``constant_features`` (in every one).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Training features.
    feature_names : sequence of str, optional
        Names of the columns.

    Returns
    -------
    list of Alert
        Zero, one or two alerts (``info``).
    """
    n, d = X.shape
    cnt = _counts(X, d)
    out = []
    absent = np.flatnonzero(cnt == 0)
    if absent.size and d:
        out.append(Alert("unused_features", "info", int(absent.size),
                         f"{absent.size:,} of {d:,} features occur in no training row.",
                         "Nothing to fix for training; drop them to save memory, or check the "
                         "feature file if many are missing.",
                         examples=[_name(feature_names, j) for j in absent[:5]],
                         extra={"features": absent[:1000]}))
    full = np.flatnonzero(cnt >= n) if n > 1 else np.empty(0, np.int64)
    if full.size:
        out.append(Alert("constant_features", "info", int(full.size),
                         f"{full.size:,} features occur in every training row.",
                         "They cannot tell rows apart (unless their values vary): drop them, "
                         "or check whether they are a bias or a formatting artefact.",
                         examples=[_name(feature_names, j) for j in full[:5]],
                         extra={"features": full[:1000]}))
    return out


def label_alerts(Y, Y_test=None, label_names: Optional[Sequence[str]] = None,
                 test_ids=None) -> List[Alert]:
    """``label_only_in_test``, ``unused_labels`` (in no row at all), ``label_drift``.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix
        Training labels.
    Y_test : scipy.sparse.csr_matrix, optional
        Test labels.
    label_names : sequence of str, optional
        Names of the labels.
    test_ids : numpy.ndarray, optional
        The dataset index of each test row.

    Returns
    -------
    list of Alert
        The alerts found.
    """
    n, L = Y.shape
    c_tr = _counts(Y, L)
    out = []
    c_te = _counts(Y_test, L) if Y_test is not None else np.zeros(L, np.int64)
    only_test = np.flatnonzero((c_tr == 0) & (c_te > 0))
    if only_test.size:
        mask = np.zeros(L, bool)
        mask[only_test] = True
        t = np.flatnonzero(np.asarray(sp.csr_matrix(Y_test)[:, mask].getnnz(axis=1)) > 0)
        tids = np.arange(Y_test.shape[0]) if test_ids is None else np.asarray(test_ids)
        out.append(Alert(
            "label_only_in_test", "warning", int(only_test.size),
            f"{only_test.size:,} labels occur in test rows but in no training row "
            f"({t.size:,} test rows carry one): no model can predict them.",
            "Move some rows with these labels into training, or leave the labels out of the "
            "evaluation; otherwise they cap recall for every method alike.",
            test_rows=tids[t], examples=[_name(label_names, j) for j in only_test[:5]],
            extra={"labels": only_test[:1000]}))
    unused = np.flatnonzero((c_tr == 0) & (c_te == 0))
    if unused.size:
        out.append(Alert("unused_labels", "info", int(unused.size),
                         f"{unused.size:,} of {L:,} labels occur in no row at all.",
                         "Nothing to fix; they only make the label space look larger.",
                         examples=[_name(label_names, j) for j in unused[:5]],
                         extra={"labels": unused[:1000]}))
    if Y_test is not None and Y_test.shape[0] > 0 and n > 0:
        m = Y_test.shape[0]
        p1, p2 = c_tr / n, c_te / m
        pool = (c_tr + c_te) / (n + m)
        se = np.sqrt(np.maximum(pool * (1 - pool) * (1.0 / n + 1.0 / m), 1e-300))
        z = (p2 - p1) / se
        ratio = (p2 + 0.5 / m) / (p1 + 0.5 / n)
        seen = c_tr > 0
        drift = np.flatnonzero(seen & (np.abs(z) >= 5) & ((ratio >= 2) | (ratio <= 0.5)))
        tv = 0.5 * float(np.abs(c_tr / max(c_tr.sum(), 1) - c_te / max(c_te.sum(), 1)).sum())
        if drift.size:
            drift = drift[np.argsort(-np.abs(z[drift]), kind="stable")]
            sev = "warning" if drift.size >= max(3, 0.05 * seen.sum()) else "info"
            out.append(Alert(
                "label_drift", sev, int(drift.size),
                f"{drift.size:,} labels have a clearly different frequency in test than in "
                f"training (at least 2x, |z| >= 5); total-variation distance between the "
                f"two label distributions {tv:.3f}.",
                "Check how the split was made (by time? by source?); a drifted split "
                "measures a different task than training fits. A random split removes it.",
                examples=[f"{_name(label_names, j)}: {100 * p1[j]:.2f} % -> "
                          f"{100 * p2[j]:.2f} %" for j in drift[:5]],
                extra={"labels": drift[:1000], "total_variation": tv}))
    return out


def label_pairs_alert(Y, label_names: Optional[Sequence[str]] = None,
                      threshold: float = 0.9) -> Optional[Alert]:
    """``near_duplicate_labels``: label pairs whose rows overlap with Jaccard >= threshold.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix
        Training labels.
    label_names : sequence of str, optional
        Names of the labels.
    threshold : float
        The Jaccard threshold (0.9).

    Returns
    -------
    Alert or None
        The alert, or None when no pair qualifies.
    """
    Y = sp.csr_matrix(Y)
    L = Y.shape[1]
    if L < 2 or Y.nnz == 0:
        return None
    B = Y.copy()
    B.data = np.ones_like(B.data, dtype=np.float64)
    cnt = _counts(B, L).astype(np.float64)
    C = sp.triu(B.T.tocsr() @ B, k=1).tocoo()
    keep = C.data >= MIN_COOCCUR
    i, j, c = C.row[keep], C.col[keep], C.data[keep]
    jac = c / (cnt[i] + cnt[j] - c)
    hit = np.flatnonzero(jac >= threshold)
    if hit.size == 0:
        return None
    hit = hit[np.lexsort((-c[hit], -jac[hit]))]
    return Alert(
        "near_duplicate_labels", "info", int(hit.size),
        f"{hit.size:,} pairs of labels occur on nearly the same rows (Jaccard >= "
        f"{threshold:g}).",
        "Consider merging each pair into one label (synonyms, or a label and its parent): "
        "a model is scored twice for the same decision.",
        examples=[f"{_name(label_names, i[h])} ~ {_name(label_names, j[h])} "
                  f"(Jaccard {jac[h]:.2f})" for h in hit[:5]],
        extra={"pairs": [[int(i[h]), int(j[h]), round(float(jac[h]), 4)] for h in hit[:1000]]})
