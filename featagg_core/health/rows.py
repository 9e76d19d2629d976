"""Row-level checks of a multi-label dataset: exact duplicate rows, conflicting labels,
rows without features or labels, and train/test overlap (exact and near-duplicate).

Exact equality: every csr row's (column, value) pairs are hashed to 64 bits
(:func:`featagg_core._kernels.health.row_hashes`), the hashes sorted, and each run of equal
hashes verified by comparing the rows themselves, so a hash collision never merges two
different rows. Linear in the non-zeros plus one sort of n hashes.

Near-duplicates (cosine >= 0.95 between L2-normalised rows): Charikar's SimHash
(random-hyperplane signatures, 320 bits per row) cut into 20 bands of 16 bits; a test and a
training row that agree on all bits of some band become a candidate pair, and every
candidate is verified by its exact cosine, so nothing below the threshold is reported.
Two rows at cosine c differ in a bit with probability arccos(c) / pi, so a pair at 0.95
shares a given band with probability 0.899^16 = 0.18 and at least one of the 20 bands
with probability 0.98 (0.998 at cosine 0.97); unrelated rows (near 90 degrees) share a
band with probability 20 * 2^-16. A band bucket larger than :data:`MAX_GROUP` items
(e.g. many near-identical rows) is not compared all-against-all: its items are sorted by
the next three bands' bits (so rows that share band b+1 too, as near-duplicates mostly do,
sit side by side) and each test row is compared with the :data:`WINDOW` training rows
either side of it (the sorted-neighbourhood method), so the candidate work is at most
``n_test * max(MAX_GROUP, 2 * WINDOW)`` per band -- never quadratic. Rows without
features take no part (they are reported as empty). Exact copies are found besides by the
exact hashing above. This is the LSH scheme of Charikar (2002) with the banding of
Leskovec, Rajaraman & Ullman (Mining of Massive Datasets, ch. 3); SimHash rather than
MinHash because the threshold is on the weighted cosine, not on the Jaccard of the
feature sets (datasketch's MinHash LSH, the peer of ``benchmarks/health_bench.py``).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import health as _k
from featagg_core.health.alerts import Alert

__all__ = ["canonical_csr", "equal_row_groups", "duplicate_alerts", "empty_alerts",
           "near_duplicate_pairs", "overlap_alert", "MAX_GROUP", "WINDOW"]

#: a band bucket with more items than this is compared within a window only
MAX_GROUP = 256
#: training rows compared either side of a test row in an oversized bucket
WINDOW = 32
#: SimHash layout: 64-bit words per row and bits per band (20 bands of 16 bits; the
#: kernel's band mask assumes 16)
N_WORDS = 5
BAND_BITS = 16


def canonical_csr(X) -> sp.csr_matrix:
    """``X`` as csr float32 with sorted columns, summed duplicates and no stored zeros.

    Parameters
    ----------
    X : sparse matrix or array
        The matrix.

    Returns
    -------
    scipy.sparse.csr_matrix
        The canonical form (``X`` itself when it already is one).
    """
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    if X.dtype != np.float32:
        X = X.astype(np.float32)
    if not X.has_canonical_format or (X.nnz and not np.all(X.data)):
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
        X.sort_indices()
    return X


def _parts(X):
    return (X.indptr.astype(np.int64, copy=False), X.indices.astype(np.int32, copy=False),
            X.data)


def equal_row_groups(X, Y=None, seed: int = 0) -> np.ndarray:
    """For every row, the smallest row index exactly equal to it (features, and labels when
    ``Y`` is given).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Features, canonical (:func:`canonical_csr`).
    Y : scipy.sparse.csr_matrix, optional
        Labels, canonical; rows must then be equal in both.
    seed : int
        Seed of the hash.

    Returns
    -------
    numpy.ndarray
        int64 representative of each row (``rep[i] == i`` for a row's first occurrence).
    """
    xp, xi, xd = _parts(X)
    xb = xd.view(np.uint32)
    h = _k.row_hashes(xp, xi, xb, True, seed)
    if Y is not None:
        yp, yi, _ = _parts(Y)
        hy = _k.row_hashes(yp, yi, np.empty(0, np.uint32), False, seed + 1)
        with np.errstate(over="ignore"):
            h = h ^ (hy * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1))
    else:
        yp, yi = xp, xi
    order = np.argsort(h, kind="stable")
    return _k.group_equal_rows(order, h, xp, xi, xb, True, yp, yi, Y is not None)


def duplicate_alerts(X, Y, offset_rows: Optional[np.ndarray] = None) -> List[Alert]:
    """``duplicate_rows`` (rows repeating an earlier row's features and labels) and
    ``conflicting_labels`` (rows whose features equal another row's, with other labels).

    Rows without features take no part (they are reported by :func:`empty_alerts`).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Training features, canonical.
    Y : scipy.sparse.csr_matrix
        Training labels, canonical.
    offset_rows : numpy.ndarray, optional
        The dataset row index of each row of ``X`` (default: 0 .. n-1).

    Returns
    -------
    list of Alert
        Zero, one or two alerts.
    """
    n = X.shape[0]
    ids = np.arange(n) if offset_rows is None else np.asarray(offset_rows)
    nonempty = np.diff(X.indptr) > 0
    rep_x = equal_row_groups(X)
    rep_xy = equal_row_groups(X, Y)
    rep_x[~nonempty] = np.flatnonzero(~nonempty)
    rep_xy[~nonempty] = np.flatnonzero(~nonempty)
    out = []
    dup = np.flatnonzero(rep_xy != np.arange(n))
    if dup.size:
        n_groups = np.unique(rep_xy[dup]).size
        feat_only = int(np.sum(rep_x != np.arange(n)))
        out.append(Alert(
            "duplicate_rows", "warning", int(dup.size),
            f"{dup.size:,} training rows repeat an earlier row exactly (features and labels; "
            f"{n_groups:,} distinct rows repeated){_pct(dup.size, n)}.",
            "Drop the repeated rows (keep the first of each), or make sure the copies are "
            "meant: duplicates over-weight those rows in training and, when split across "
            "train and test, inflate the scores.",
            rows=ids[dup], examples=[f"row {int(ids[i])} = row {int(ids[rep_xy[i]])}"
                                     for i in dup[:5]],
            extra={"first_rows": ids[rep_xy[dup]][:1000], "feature_duplicates": feat_only}))
    # conflicts: one features class holding more than one (features, labels) class
    cand = np.flatnonzero(rep_x != np.arange(n))
    if cand.size:
        members = np.flatnonzero(np.isin(rep_x, rep_x[cand]))
        pairs = np.unique(np.stack([rep_x[members], rep_xy[members]], axis=1), axis=0)
        cls, n_lab = np.unique(pairs[:, 0], return_counts=True)
        bad = cls[n_lab > 1]
        if bad.size:
            rows = members[np.isin(rep_x[members], bad)]
            out.append(Alert(
                "conflicting_labels", "warning", int(rows.size),
                f"{rows.size:,} training rows share identical features with another row but "
                f"carry different labels ({bad.size:,} groups).",
                "Check these rows' labels: merge the label sets if both are right, or fix "
                "the wrong one; a classifier cannot separate identical inputs.",
                rows=ids[rows], examples=[f"rows {', '.join(str(int(ids[j])) for j in rows[rep_x[rows] == b][:3])}"
                                          for b in bad[:5]],
                extra={"groups": int(bad.size)}))
    return out


def _pct(k: int, n: int) -> str:
    return f" ({100.0 * k / max(n, 1):.1f} % of {n:,})"


def empty_alerts(X, Y, X_test=None, Y_test=None, offset_rows=None) -> List[Alert]:
    """``empty_features`` (rows without any feature) and ``empty_labels`` (rows without
    any label), over the training rows and the test rows.

    Parameters
    ----------
    X, Y : scipy.sparse.csr_matrix
        Training features and labels.
    X_test, Y_test : scipy.sparse.csr_matrix, optional
        Test features and labels.
    offset_rows : numpy.ndarray, optional
        The dataset row index of each training row (default: 0 .. n-1).

    Returns
    -------
    list of Alert
        Zero, one or two alerts.
    """
    ids = np.arange(X.shape[0]) if offset_rows is None else np.asarray(offset_rows)
    out = []
    for kind, A, At, what, hint in (
            ("empty_features", X, X_test, "no features",
             "Drop these rows or find why their features are missing (a parsing problem, "
             "an empty document): every classifier gives them the same prediction."),
            ("empty_labels", Y, Y_test, "no labels",
             "Drop these rows from training and evaluation, or check the label file: a row "
             "with no labels counts as wrong at every P@k.")):
        r = np.flatnonzero(np.diff(A.indptr) == 0)
        t = (np.flatnonzero(np.diff(At.indptr) == 0) if At is not None
             else np.empty(0, np.int64))
        if r.size or t.size:
            where = f"{r.size:,} training rows" + (f" and {t.size:,} test rows"
                                                   if At is not None else "")
            out.append(Alert(kind, "warning", int(r.size + t.size), f"{where} have {what}.",
                             hint, rows=ids[r], test_rows=t,
                             examples=[f"row {int(ids[i])}" for i in r[:5]]))
    return out


def near_duplicate_pairs(X, X_test, threshold: float = 0.95, seed: int = 0,
                         max_group: int = MAX_GROUP, window: int = WINDOW
                         ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Every (test row, training row) pair at cosine >= ``threshold`` that the banding finds
    (exact copies always; see the module docstring for the recall at the threshold).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Training features (canonical).
    X_test : scipy.sparse.csr_matrix
        Test features (canonical, same columns).
    threshold : float
        Cosine at or above which a pair is a near-duplicate.
    seed : int
        Seed of the hyperplanes.
    max_group : int
        Largest band bucket compared all-against-all.
    window : int
        Training rows compared either side of a test row in a larger bucket.

    Returns
    -------
    test : numpy.ndarray
        int64 test row of each pair (sorted by test row, then training row).
    train : numpy.ndarray
        int64 training row of each pair.
    cosine : numpy.ndarray
        float64 cosine of each pair.
    stats : dict
        ``candidates`` (cosines computed) and ``exact`` (pairs of identical rows).
    """
    n_tr, n_te = X.shape[0], X_test.shape[0]
    keep_tr = np.flatnonzero(np.diff(X.indptr) > 0)
    keep_te = np.flatnonzero(np.diff(X_test.indptr) > 0)
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), {"candidates": 0,
                                                                         "exact": 0})
    if keep_tr.size == 0 or keep_te.size == 0:
        return empty
    Z = sp.vstack([X[keep_tr], X_test[keep_te]], format="csr")
    Z = canonical_csr(Z)
    n_a = keep_tr.size
    zp, zi, zd = _parts(Z)
    norms = np.sqrt(np.asarray(Z.multiply(Z).sum(axis=1), dtype=np.float64).ravel())
    ts, rs, cs = [], [], []
    # exact copies: equal rows, whatever the bands say
    rep = equal_row_groups(Z, seed=seed)
    te = np.arange(n_a, Z.shape[0])
    hit = te[rep[te] < n_a]
    n_exact = 0
    if hit.size:
        # every training row of the class, not only its representative
        tr_rows = np.arange(n_a)
        cls_tr = rep[tr_rows]
        order = np.argsort(cls_tr, kind="stable")
        sorted_cls = cls_tr[order]
        lo = np.searchsorted(sorted_cls, rep[hit], "left")
        hi = np.searchsorted(sorted_cls, rep[hit], "right")
        cnt = hi - lo
        t_exp = np.repeat(hit - n_a, cnt)
        starts = np.repeat(lo - np.cumsum(np.r_[0, cnt[:-1]]), cnt)
        r_exp = order[starts + np.arange(cnt.sum())]
        ts.append(t_exp)
        rs.append(r_exp)
        cs.append(np.ones(t_exp.size))
        n_exact = int(t_exp.size)
    sig = _k.simhash_signatures(zp, zi, zd, N_WORDS, seed)
    per_word = 64 // BAND_BITS
    n_bands = N_WORDS * per_word
    mask = np.uint64((1 << BAND_BITS) - 1)

    def band(b):
        w, off = divmod(b % n_bands, per_word)
        return (sig[:, w] >> np.uint64(off * BAND_BITS)) & mask

    work = 0
    for b in range(n_bands):
        # band b's bits first, then the next three bands': within an oversized bucket the
        # rows that also share band b+1 (as near-duplicates mostly do) sit side by side
        keys = band(b) << np.uint64(48)
        for s in (1, 2, 3):
            keys |= band(b + s) << np.uint64(48 - BAND_BITS * s)
        order = np.argsort(keys, kind="stable")
        t, r, c, wk = _k.verify_band_runs(order, keys, n_a, zp, zi, zd, norms,
                                          float(threshold), int(max_group), int(window))
        work += int(wk)
        ts.append(t)
        rs.append(r)
        cs.append(c)
    t = np.concatenate(ts)
    r = np.concatenate(rs)
    c = np.concatenate(cs)
    key = t * np.int64(n_a) + r
    key, first = np.unique(key, return_index=True)
    t, r, c = t[first], r[first], np.minimum(c[first], 1.0)
    return keep_te[t], keep_tr[r], c, {"candidates": work, "exact": n_exact}


def overlap_alert(X, X_test, threshold: float = 0.95, offset_rows=None, test_ids=None,
                  seed: int = 0) -> Optional[Alert]:
    """``train_test_overlap``: test rows with an exact or near-duplicate training row.

    Parameters
    ----------
    X, X_test : scipy.sparse.csr_matrix
        Training and test features (canonical).
    threshold : float
        The cosine threshold (0.95 by default, the issue's).
    offset_rows : numpy.ndarray, optional
        The dataset row index of each training row.
    test_ids : numpy.ndarray, optional
        The dataset index of each test row.
    seed : int
        Seed of the hyperplanes.

    Returns
    -------
    Alert or None
        The alert, or None when no test row has a near-duplicate.
    """
    t, r, c, stats = near_duplicate_pairs(X, X_test, threshold, seed)
    if t.size == 0:
        return None
    ids = np.arange(X.shape[0]) if offset_rows is None else np.asarray(offset_rows)
    tids = np.arange(X_test.shape[0]) if test_ids is None else np.asarray(test_ids)
    test_rows = np.unique(t)
    train_rows = np.unique(r)
    exact_t = np.unique(t[c >= 1.0 - 1e-6]).size
    order = np.argsort(-c, kind="stable")[:1000]
    return Alert(
        "train_test_overlap", "error", int(test_rows.size),
        f"{test_rows.size:,} test rows{_pct(test_rows.size, X_test.shape[0])} have a "
        f"training row with cosine >= {threshold:g} ({exact_t:,} of them an exact copy), "
        f"matching {train_rows.size:,} training rows: the test scores over-state how well "
        f"a model does on new data.",
        "Remove these test rows (or their training copies) and evaluate again; if the data "
        "has natural repeats, split by source (user, document, time) instead of by row.",
        rows=ids[train_rows], test_rows=tids[test_rows],
        examples=[f"test row {int(tids[t[i]])} ~ training row {int(ids[r[i]])} "
                  f"(cosine {c[i]:.3f})" for i in order[:5]],
        extra={"threshold": float(threshold), "exact_test_rows": int(exact_t),
               "pairs": [[int(tids[t[i]]), int(ids[r[i]]), round(float(c[i]), 4)]
                         for i in order],
               "candidates_verified": stats["candidates"]})
