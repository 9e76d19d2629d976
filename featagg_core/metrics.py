"""Ranking, clustering and information metrics.

Ranking metrics (extreme multi-label classification)
-----------------------------------------------------
:func:`precision_at_k`, :func:`ndcg_at_k`, :func:`psprecision_at_k`, :func:`psndcg_at_k` and
:func:`coverage_at_k` take ``(Y_true, Y_score, k)``, the propensity-scored ones
``(Y_true, Y_score, k, inv_propensity)`` (pyxclib's order ``(..., inv_propensity, k)`` is
recognised and accepted too):

* ``Y_true`` — n x L 0/1 matrix (csr or dense) of true labels.
* ``Y_score`` — n x L scores, a dense ``ndarray`` or a scipy sparse matrix (e.g. the csr
  that ``KTXMLC.predict_scores`` returns).
* ``k`` — an int (the metric is returned as a ``float``) or a list/tuple of ints (an
  ``ndarray`` with one value per k, computed from one top-k pass, e.g. ``k=(1, 3, 5)``).

Ranking rules, identical for every metric:

* higher score first; **ties go to the lower label index**;
* for a **sparse** ``Y_score`` only stored entries are predictions (stored zeros and
  negative scores included). Entries that are not stored rank after all stored ones, as
  if their score were -inf, and are never predicted: a row with fewer than ``k`` stored
  entries simply has fewer predictions, and the empty slots never hit (pyxclib pads such
  rows with a dummy label in the same way). For a **dense** ``Y_score`` every label has a
  score (``-inf`` allowed, NaN rejected), so every row has ``min(k, L)`` predictions;
* ``k`` larger than ``L`` is allowed: slots beyond the predictions never hit, and P@k
  still divides by ``k``.

Definitions (these follow pyxclib's ``xclib.evaluation.xc_metrics`` exactly):

* ``P@k = mean_i (1/k) * #{true labels of i among its top k}``;
* ``nDCG@k = mean_i DCG_i@k / IDCG_i@min(k, |y_i|)`` with
  ``DCG_i@k = sum_{r<k} y_i[top_r] / log2(r + 2)``;
* with inverse propensities ``w_l`` (:func:`inverse_propensity`), ``PSP@k`` is the
  propensity-weighted P@k *divided by the same quantity for the best achievable ranking*
  of each point (its true labels sorted by ``w`` descending): pyxclib's ``psprecision``
  returns ``mean_i PSP_i@k / mean_i oracle_i@k`` (a ratio of means, not a mean of ratios).
  ``PSnDCG@k`` likewise divides ``mean_i PSDCG_i@k / IDCG_i`` by the same mean for the
  oracle ranking (``IDCG_i`` is the plain one of nDCG, as in pyxclib);
* ``coverage@k`` = number of distinct labels that are a correct prediction in some
  point's top k, divided by the number of distinct labels present in ``Y_true``.

**Points with no true label** count in the average of every per-point metric and
contribute 0 to it (P@k and PSP@k exactly as pyxclib; pyxclib's nDCG also yields 0 for
them, since their DCG is 0). Use ``Y_true[Y_true.getnnz(1) > 0]`` to drop them. When no
point has any true label at all, every ranking metric returns 0.0 (instead of 0/0).

Clustering and information
--------------------------
:func:`clustering_accuracy` (Hungarian matching of clusters to classes),
:func:`normalized_mutual_info` (scikit-learn's), :func:`mutual_information` (of two discrete
variables, in nats) and :func:`mutual_information_loss`.

Head-to-tail analysis
---------------------
:func:`label_frequency_buckets` splits labels into frequency buckets (head first) and
:func:`precision_by_bucket` gives each bucket's contribution to P@k (the buckets sum to
P@k), the chart of the DEFRAG and PfastreXML papers.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import metrics as _k
from featagg_core.utils.docstrings import fill_doc

__all__ = [
    "top_k", "precision_at_k", "ndcg_at_k", "psprecision_at_k", "psndcg_at_k",
    "coverage_at_k", "ranking_metrics", "inverse_propensity", "clustering_accuracy", "normalized_mutual_info",
    "mutual_information", "mutual_information_loss", "label_frequency_buckets",
    "precision_by_bucket", "warmup",
]

# rows of a dense score matrix processed at once (bounds the temporary masks)
_DENSE_CHUNK_CELLS = 1 << 22
# up to this k, dense rows go through the one-pass numba kernel
_DENSE_KERNEL_MAX_K = 64


# ---------------------------------------------------------------------------
# input checks: the cut-offs, the 0/1 truth, the scores, the propensity weights
# ---------------------------------------------------------------------------

def _check_k(k):
    """Return (ks as int64 array, scalar?)."""
    scalar = isinstance(k, numbers.Integral) and not isinstance(k, bool)
    if scalar:
        ks = [int(k)]
    elif isinstance(k, (list, tuple, np.ndarray)):
        ks = list(k)
        if not ks:
            raise ValueError(f"k must be a non-empty list of cut-offs, got {k!r}")
        for v in ks:
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise ValueError(f"k must be integers (cut-offs), got {v!r}")
        ks = [int(v) for v in ks]
    else:
        raise ValueError(f"k must be a positive int or a list/tuple of them, got {k!r}")
    if min(ks) < 1:
        raise ValueError(f"k must be >= 1, got {min(ks)}")
    return np.asarray(ks, dtype=np.int64), scalar


def _check_true(Y_true, name="Y_true") -> sp.csr_matrix:
    """Binary truth as canonical csr (sorted indices, no duplicates, no explicit zeros)."""
    if sp.issparse(Y_true):
        Y = sp.csr_matrix(Y_true, copy=True)
        Y.sum_duplicates()
    else:
        arr = np.asarray(Y_true)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {arr.ndim} dimensions")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ValueError(f"{name} must be numeric 0/1, got dtype {arr.dtype}")
        Y = sp.csr_matrix(arr)
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        bad = Y.data[Y.data != 1][0]
        raise ValueError(f"{name} must hold only 0/1 values, found {bad!r}")
    Y.sort_indices()
    return Y


def _check_score(Y_score, shape):
    if sp.issparse(Y_score):
        S = sp.csr_matrix(Y_score)
        if S.shape != shape:
            raise ValueError(f"Y_score has shape {S.shape} but Y_true has shape {shape}")
        if not S.has_canonical_format:
            S = S.copy()
            S.sum_duplicates()
        if S.nnz and not np.isfinite(S.data).all() and np.isnan(S.data).any():
            raise ValueError("Y_score contains NaN")
        return S
    S = np.asarray(Y_score)
    if S.ndim != 2:
        raise ValueError(f"Y_score must be a 2-D matrix, got {S.ndim} dimensions")
    if S.shape != shape:
        raise ValueError(f"Y_score has shape {S.shape} but Y_true has shape {shape}")
    if not (np.issubdtype(S.dtype, np.number) or S.dtype == bool) or np.iscomplexobj(S):
        raise ValueError(f"Y_score must be real numbers, got dtype {S.dtype}")
    if np.issubdtype(S.dtype, np.floating) and np.isnan(S).any():
        raise ValueError("Y_score contains NaN")
    return S


def _check_weights(inv_propensity, n_labels):
    w = np.asarray(inv_propensity, dtype=np.float64).ravel()
    if w.shape[0] != n_labels:
        raise ValueError(f"inv_propensity has {w.shape[0]} entries, expected one per label "
                         f"({n_labels})")
    if not np.isfinite(w).all():
        raise ValueError("inv_propensity contains NaN or inf")
    return w


# ---------------------------------------------------------------------------
# top-k
# ---------------------------------------------------------------------------

def _dense_top_k(S: np.ndarray, k: int) -> np.ndarray:
    """Top-k columns of every row of a dense score matrix (exact ties, -1 padded).

    Small k (the usual 1..100): one numba pass per row with a k-slot buffer. Larger k:
    vectorised ``np.partition`` threshold per row; rows whose threshold value is tied
    beyond k are resolved towards the lower column index.
    """
    n, L = S.shape
    if S.dtype not in (np.float32, np.float64):
        S = S.astype(np.float64)
    if k <= _DENSE_KERNEL_MAX_K:
        return _k.dense_top_k(np.ascontiguousarray(S), k)
    out = np.full((n, k), -1, dtype=np.int64)
    t = min(k, L)
    if t == 0 or n == 0:
        return out
    step = max(1, _DENSE_CHUNK_CELLS // max(L, 1))
    cols = np.arange(L)
    for a in range(0, n, step):
        B = S[a:a + step]
        m = B.shape[0]
        if t == L:
            sel = np.broadcast_to(cols, (m, L))
        else:
            # the t-th largest score of each row: everything at or above it is in, except
            # surplus ties at the threshold, which are dropped from the highest column down
            thr = np.partition(B, L - t, axis=1)[:, L - t][:, None]
            keep = B >= thr
            surplus = np.flatnonzero(keep.sum(axis=1) > t)
            if surplus.size:
                Bs, ts = B[surplus], thr[surplus]
                at = Bs == ts
                need = t - (Bs > ts).sum(axis=1, keepdims=True)
                keep[surplus] = (Bs > ts) | (at & (np.cumsum(at, axis=1) <= need))
            sel = np.nonzero(keep)[1].reshape(m, t)      # column-ascending per row
        vals = np.take_along_axis(B, sel, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")  # stable: lower index first
        out[a:a + m, :t] = np.take_along_axis(sel, order, axis=1)
    return out


def top_k(Y_score, k: int) -> np.ndarray:
    """Indices of the ``k`` best-scored labels of every row, best first.

    Parameters
    ----------
    Y_score : ndarray or sparse matrix, shape (n, L)
    k : int

    Returns
    -------
    ndarray of int64, shape (n, k)
        Column indices ordered by decreasing score, ties towards the lower index; ``-1``
        where a row has fewer than ``k`` predictions (sparse rows with fewer stored
        entries, or ``k > L``).
    """
    ks, scalar = _check_k(k)
    if not scalar:
        raise ValueError(f"k must be a single integer, got {k!r}")
    kk = int(ks[0])
    if sp.issparse(Y_score):
        S = _check_score(Y_score, Y_score.shape)
        return _k.csr_top_k(S.indptr, S.indices, S.data, kk)[0]
    S = _check_score(Y_score, np.shape(Y_score))
    return _dense_top_k(S, kk)


def _ranked(Y_true, Y_score, k):
    ks, scalar = _check_k(k)
    Y = _check_true(Y_true)
    S = _check_score(Y_score, Y.shape)
    kmax = int(ks.max())
    if sp.issparse(S):
        top = _k.csr_top_k(S.indptr, S.indices, S.data, kmax)[0]
    else:
        top = _dense_top_k(S, kmax)
    return Y, top, ks, scalar


def _out(values, scalar):
    values = np.asarray(values, dtype=np.float64)
    return float(values[0]) if scalar else values


def _ndcg_normaliser(Y: sp.csr_matrix, ks: np.ndarray) -> np.ndarray:
    """(n, len(ks)): 1 / IDCG_i@min(k, |y_i|), 0 for points without labels."""
    n_pos = np.diff(Y.indptr).astype(np.int64)
    kmax = int(ks.max())
    disc = np.cumsum(1.0 / np.log2(np.arange(kmax) + 2.0))   # IDCG@1..kmax
    m = np.minimum(n_pos[:, None], ks[None, :])
    out = np.zeros(m.shape, dtype=np.float64)
    nz = m > 0
    out[nz] = 1.0 / disc[m[nz] - 1]
    return out


def _dcg(gains: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """(n, len(ks)) discounted cumulative gain at each cut-off."""
    kmax = gains.shape[1]
    c = np.cumsum(gains / np.log2(np.arange(kmax) + 2.0), axis=1)
    return c[:, ks - 1]


def _mean_rows(a: np.ndarray) -> np.ndarray:
    return a.mean(axis=0) if a.shape[0] else np.zeros(a.shape[1])


def _safe_ratio(num, den):
    num, den = np.asarray(num, float), np.asarray(den, float)
    out = np.zeros_like(num)
    ok = den > 0
    out[ok] = num[ok] / den[ok]
    return out


# ---------------------------------------------------------------------------
# ranking metrics
# ---------------------------------------------------------------------------

def precision_at_k(Y_true, Y_score, k=5):
    """Precision@k: ``mean_i (1/k) #hits in the top k`` (as pyxclib's ``precision``).

    Parameters
    ----------
    Y_true : sparse matrix or ndarray (n, L) of 0/1
    Y_score : ndarray or sparse matrix (n, L)
    k : int or list/tuple of int

    Returns
    -------
    float, or ndarray with one value per k when ``k`` is a list/tuple.
    """
    return _ranked_metric(_precision, Y_true, Y_score, k)


def _precision(Y, top, ks):
    gains = _k.rank_gains(Y.indptr, Y.indices, top, np.ones(Y.shape[1]))
    hits = np.cumsum(gains, axis=1)[:, ks - 1]
    return _mean_rows(hits) / ks


@fill_doc
def ndcg_at_k(Y_true, Y_score, k=5):
    """nDCG@k of a ranking.

    ``mean_i DCG_i@k / IDCG_i@min(k, |y_i|)`` (as pyxclib's ``ndcg``); points with no true
    labels contribute 0.

    {metric_sections}
    """
    return _ranked_metric(_ndcg, Y_true, Y_score, k)


def _ndcg(Y, top, ks):
    gains = _k.rank_gains(Y.indptr, Y.indices, top, np.ones(Y.shape[1]))
    return _mean_rows(_dcg(gains, ks) * _ndcg_normaliser(Y, ks))


def _ps_args(k, inv_propensity):
    """Accept both ``(Y_true, Y_score, k, inv_propensity)`` (the featagg order) and
    pyxclib's ``(Y_true, Y_score, inv_propensity, k)``: a float vector passed as ``k``
    together with integer cut-offs passed as ``inv_propensity`` is swapped."""
    if inv_propensity is None:
        if isinstance(k, np.ndarray) and k.ndim == 1 and not np.issubdtype(k.dtype, np.integer):
            raise ValueError("inv_propensity is required (from inverse_propensity(Y_train)); "
                             "k looks like it was given the propensities")
        raise ValueError("inv_propensity is required (from inverse_propensity(Y_train))")
    looks_like_k = (isinstance(inv_propensity, numbers.Integral)
                    or (isinstance(inv_propensity, (list, tuple))
                        and all(isinstance(v, numbers.Integral) for v in inv_propensity)))
    k_is_vector = (not isinstance(k, numbers.Integral)
                   and np.ndim(k) == 1
                   and (not isinstance(k, (list, tuple))
                        or not all(isinstance(v, numbers.Integral) for v in k)))
    if looks_like_k and k_is_vector:
        return inv_propensity, k
    return k, inv_propensity


def _ranked_metric(score, Y_true, Y_score, k):
    """The shared path of the ranking metrics: check and rank, ``score(Y, top, ks)``, a
    float for a scalar ``k``."""
    Y, top, ks, scalar = _ranked(Y_true, Y_score, k)
    return _out(score(Y, top, ks), scalar)


def _propensity_scored(score, Y_true, Y_score, k, inv_propensity):
    """The shared path of the propensity-scored metrics (either argument order)."""
    k, inv_propensity = _ps_args(k, inv_propensity)
    Y, top, ks, scalar = _ranked(Y_true, Y_score, k)
    return _out(score(Y, top, ks, _check_weights(inv_propensity, Y.shape[1])), scalar)


@fill_doc
def psprecision_at_k(Y_true, Y_score, k=5, inv_propensity=None):
    """Propensity-scored precision@k, normalised by the best achievable ranking.

    ``sum_i sum_{r<k} w[top_ir] y_i[top_ir]`` divided by the same sum for each point's
    oracle ranking (its true labels by decreasing ``w``), exactly pyxclib's
    ``psprecision`` (whose 1/k and 1/n cancel in the ratio). 1.0 means the top k holds
    the rarest true labels of every point.

    {ps_metric_sections}
    """
    return _propensity_scored(_psprecision, Y_true, Y_score, k, inv_propensity)


def _psprecision(Y, top, ks, w):
    kmax = int(ks.max())
    got = np.cumsum(_k.rank_gains(Y.indptr, Y.indices, top, w), axis=1)[:, ks - 1]
    best = np.cumsum(_k.oracle_gains(Y.indptr, Y.indices, w, kmax), axis=1)[:, ks - 1]
    return _safe_ratio(got.sum(axis=0), best.sum(axis=0))


@fill_doc
def psndcg_at_k(Y_true, Y_score, k=5, inv_propensity=None):
    """Propensity-scored nDCG@k, normalised by the best achievable ranking.

    pyxclib's ``psndcg``: ``mean_i PSDCG_i@k / IDCG_i`` over the same mean for the oracle
    ranking, with ``IDCG_i`` the plain (unweighted) ideal DCG at ``min(k, |y_i|)``.

    {ps_metric_sections}
    """
    return _propensity_scored(_psndcg, Y_true, Y_score, k, inv_propensity)


def _psndcg(Y, top, ks, w):
    kmax = int(ks.max())
    norm = _ndcg_normaliser(Y, ks)
    got = _dcg(_k.rank_gains(Y.indptr, Y.indices, top, w), ks) * norm
    best = _dcg(_k.oracle_gains(Y.indptr, Y.indices, w, kmax), ks) * norm
    return _safe_ratio(got.sum(axis=0), best.sum(axis=0))


@fill_doc
def coverage_at_k(Y_true, Y_score, k=5):
    """Coverage@k of a ranking.

    Distinct labels that are a correct prediction in some point's top k, over the distinct
    labels present in ``Y_true`` (0.0 when ``Y_true`` is empty).

    {metric_sections}
    """
    return _ranked_metric(_coverage, Y_true, Y_score, k)


def _coverage(Y, top, ks):
    present = np.count_nonzero(np.diff(Y.tocsc().indptr))
    vals = []
    for kk in ks:
        hit = _k.covered_labels(Y.indptr, Y.indices, np.ascontiguousarray(top[:, :kk]),
                                Y.shape[1])
        vals.append(hit.sum() / present if present else 0.0)
    return np.asarray(vals, dtype=np.float64)


#: the ranking metrics of :func:`ranking_metrics`, in report order
RANKING_METRICS = ("P", "nDCG", "PSP", "PSnDCG", "coverage")


def ranking_metrics(Y_true, Y_score, ks=(1, 3, 5), inv_propensity=None,
                    metrics=RANKING_METRICS) -> dict:
    """Several ranking metrics at several cut-offs from one top-k computation.

    Each value equals the single-metric function's (``precision_at_k`` etc.).

    Parameters
    ----------
    Y_true : sparse matrix or ndarray of shape (n, L)
        The true 0/1 labels.
    Y_score : ndarray or sparse matrix of shape (n, L)
        The predicted scores.
    ks : sequence of int, default=(1, 3, 5)
        The cut-offs.
    inv_propensity : ndarray of shape (L,), optional
        Inverse propensities (:func:`inverse_propensity`); without them the
        propensity-scored metrics are left out.
    metrics : sequence of str, default=RANKING_METRICS
        Which metrics, from ``RANKING_METRICS``.

    Returns
    -------
    dict
        ``{"P@1": ..., "nDCG@1": ..., "PSP@1": ..., "PSnDCG@1": ..., "coverage@1": ...,
        "P@3": ...}`` (fractions, metric names from ``metrics``, ordered by metric then k).

    Raises
    ------
    ValueError
        For an unknown metric name or bad inputs.
    """
    unknown = set(metrics) - set(RANKING_METRICS)
    if unknown:
        raise ValueError(f"metrics: unknown {sorted(unknown)}; choose from {RANKING_METRICS}")
    Y, top, ks_arr, _ = _ranked(Y_true, Y_score, list(ks))
    w = None if inv_propensity is None else _check_weights(inv_propensity, Y.shape[1])
    compute = {"P": lambda: _precision(Y, top, ks_arr), "nDCG": lambda: _ndcg(Y, top, ks_arr),
               "PSP": lambda: _psprecision(Y, top, ks_arr, w),
               "PSnDCG": lambda: _psndcg(Y, top, ks_arr, w),
               "coverage": lambda: _coverage(Y, top, ks_arr)}
    out = {}
    for name in metrics:
        if name.startswith("PS") and w is None:
            continue
        for k, v in zip(ks_arr, compute[name]()):
            out[f"{name}@{int(k)}"] = float(v)
    return out


def inverse_propensity(Y_train, A=0.55, B=1.5):
    """Inverse propensity of every label (Jain, Prabhu & Varma, KDD 2016).

    ``w_l = 1 + C (N_l + B)^-A`` with ``C = (ln N - 1)(B + 1)^A``, ``N`` the number of
    training points and ``N_l`` the number of them that carry label ``l`` (pyxclib's
    ``compute_inv_propesity``). Typical (A, B): (0.55, 1.5); Wikipedia (0.5, 0.4);
    Amazon (0.6, 2.6).

    Parameters
    ----------
    Y_train : sparse matrix or ndarray of shape (N, L)
        The training labels (0/1).
    A : float, default=0.55
        The exponent of the propensity model.
    B : float, default=1.5
        The offset of the propensity model.

    Returns
    -------
    ndarray of float64, shape (L,)
        ``w_l`` of every label.

    Raises
    ------
    ValueError
        When ``Y_train`` is not a 0/1 matrix or has no rows.
    """
    Y = _check_true(Y_train, "Y_train")
    N = Y.shape[0]
    if N < 1:
        raise ValueError("Y_train has no rows")
    freq = np.asarray(Y.getnnz(axis=0), dtype=np.float64)
    C = (np.log(N) - 1.0) * (B + 1.0) ** A
    return 1.0 + C * np.power(freq + B, -A)


# ---------------------------------------------------------------------------
# head-to-tail analysis
# ---------------------------------------------------------------------------

def label_frequency_buckets(Y_train, n_buckets=5, strategy="labels"):
    """Split labels into ``n_buckets`` frequency buckets, bucket 0 = head (most frequent).

    Labels are sorted by decreasing training frequency (ties: lower index first), then
    cut into consecutive buckets holding equal numbers of labels (``strategy="labels"``,
    the label quantiles the XC papers plot) or equal total occurrences
    (``strategy="mass"``).

    Parameters
    ----------
    Y_train : sparse matrix or ndarray of shape (N, L)
        The training labels (0/1).
    n_buckets : int, default=5
        How many buckets (>= 1).
    strategy : {"labels", "mass"}, default="labels"
        Equal numbers of labels or equal total occurrences per bucket.

    Returns
    -------
    ndarray of int64, shape (L,)
        The bucket of every label.

    Raises
    ------
    ValueError
        For a bad ``n_buckets`` or ``strategy``.
    """
    if not isinstance(n_buckets, numbers.Integral) or n_buckets < 1:
        raise ValueError(f"n_buckets must be a positive int, got {n_buckets!r}")
    if strategy not in ("labels", "mass"):
        raise ValueError(f"strategy must be 'labels' or 'mass', got {strategy!r}")
    Y = _check_true(Y_train, "Y_train")
    L = Y.shape[1]
    freq = np.asarray(Y.getnnz(axis=0), dtype=np.int64)
    order = np.argsort(-freq, kind="stable")
    rank_bucket = np.empty(L, dtype=np.int64)
    if strategy == "labels":
        rank_bucket[:] = (np.arange(L) * n_buckets) // max(L, 1)
    else:
        total = freq.sum()
        if total == 0:
            rank_bucket[:] = (np.arange(L) * n_buckets) // max(L, 1)
        else:
            before = np.cumsum(freq[order]) - freq[order]     # mass strictly before
            rank_bucket[:] = np.minimum((before * n_buckets) // total, n_buckets - 1)
    buckets = np.empty(L, dtype=np.int64)
    buckets[order] = rank_bucket
    return buckets


def precision_by_bucket(Y_true, Y_score, buckets, k=5, n_buckets=None):
    """Contribution of each label-frequency bucket to P@k.

    Entry ``b`` is ``mean_i (1/k) #{hits in the top k of i whose label is in bucket b}``,
    so the entries sum to :func:`precision_at_k`.

    Parameters
    ----------
    Y_true : sparse matrix or ndarray of shape (n, L)
        The true 0/1 labels.
    Y_score : ndarray or sparse matrix of shape (n, L)
        The predicted scores (higher ranks first; no NaN).
    buckets : int array of shape (L,)
        The bucket of every label, e.g. from :func:`label_frequency_buckets`.
    k : int or list/tuple of int, default=5
        The cut-off(s), each >= 1.
    n_buckets : int, default ``buckets.max() + 1``
        The number of buckets.

    Returns
    -------
    ndarray
        Shape (n_buckets,), or (len(k), n_buckets) when ``k`` is a list/tuple.

    Raises
    ------
    ValueError
        When ``buckets`` is not one non-negative integer per label or exceeds ``n_buckets``.
    """
    Y, top, ks, scalar = _ranked(Y_true, Y_score, k)
    b = np.asarray(buckets)
    if b.ndim != 1 or b.shape[0] != Y.shape[1] or not np.issubdtype(b.dtype, np.integer):
        raise ValueError(f"buckets must be an int vector with one entry per label "
                         f"({Y.shape[1]})")
    if b.size and b.min() < 0:
        raise ValueError("buckets must be non-negative")
    nb = int(b.max()) + 1 if n_buckets is None and b.size else int(n_buckets or 0)
    if b.size and b.max() >= nb:
        raise ValueError(f"n_buckets={nb} but buckets holds {int(b.max())}")
    gains = _k.rank_gains(Y.indptr, Y.indices, top, np.ones(Y.shape[1]))
    cum = _k.bucket_hits(gains, top, b.astype(np.int64), nb)      # (nb, kmax)
    n = max(Y.shape[0], 1)
    res = (cum[:, ks - 1] / (n * ks[None, :])).T                 # (len(ks), nb)
    return res[0] if scalar else res


# ---------------------------------------------------------------------------
# clustering and information
# ---------------------------------------------------------------------------

def _labels_1d(y, name):
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a


def _contingency(x, y):
    """Sparse contingency table (csr, counts) of two label vectors of equal length."""
    x = _labels_1d(x, "x")
    y = _labels_1d(y, "y")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"the two label vectors differ in length: {x.shape[0]} vs "
                         f"{y.shape[0]}")
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    xi, yi = xi.ravel(), yi.ravel()
    nx = int(xi.max()) + 1 if xi.size else 0
    ny = int(yi.max()) + 1 if yi.size else 0
    C = sp.coo_matrix((np.ones(xi.shape[0], dtype=np.int64), (xi, yi)),
                      shape=(nx, ny)).tocsr()
    C.sum_duplicates()
    return C


@fill_doc
def clustering_accuracy(y_true, y_pred):
    """Clustering accuracy of a partition against known classes.

    The fraction of points whose cluster maps to their class under the best one-to-one
    matching of clusters to classes (Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment`` on the contingency table). Any hashable labels;
    every point counts (filter unknown classes such as -1 beforehand).

    Parameters
    ----------
    {partition_pair}

    Returns
    -------
    float
        The accuracy in [0, 1].

    Raises
    ------
    ValueError
        When the two vectors are not 1-D or differ in length.
    """
    from scipy.optimize import linear_sum_assignment
    C = _contingency(y_true, y_pred)
    n = C.sum()
    if n == 0:
        return 0.0
    D = C.toarray()              # classes x clusters: small
    r, c = linear_sum_assignment(D, maximize=True)
    return float(D[r, c].sum() / n)


@fill_doc
def normalized_mutual_info(y_true, y_pred, average_method="arithmetic"):
    """Normalised mutual information (``sklearn.metrics.normalized_mutual_info_score``).

    Parameters
    ----------
    {partition_pair}
    average_method : {"arithmetic", "geometric", "min", "max"}, default="arithmetic"
        How the two entropies are averaged in the normaliser (scikit-learn's).

    Returns
    -------
    float
        NMI in [0, 1].
    """
    from sklearn.metrics import normalized_mutual_info_score
    y_true = _labels_1d(y_true, "y_true")
    y_pred = _labels_1d(y_pred, "y_pred")
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(f"y_true and y_pred differ in length: {y_true.shape[0]} vs "
                         f"{y_pred.shape[0]}")
    return float(normalized_mutual_info_score(y_true, y_pred,
                                              average_method=average_method))


def mutual_information(x, y):
    """Mutual information I(X; Y) of two discrete variables, in nats.

    From their contingency table (equals ``sklearn.metrics.mutual_info_score``):
    ``sum_ij p_ij ln(p_ij / (p_i p_j))`` over the non-empty cells.

    Parameters
    ----------
    x, y : array-like of shape (n,)
        The two variables' values (any hashable labels), one pair per observation.

    Returns
    -------
    float
        I(X; Y) in nats (>= 0).

    Raises
    ------
    ValueError
        When the vectors are not 1-D or differ in length.
    """
    C = _contingency(x, y).tocoo()
    n = C.data.sum()
    if n == 0:
        return 0.0
    pi = np.asarray(C.sum(axis=1)).ravel()
    pj = np.asarray(C.sum(axis=0)).ravel()
    nij = C.data.astype(np.float64)
    mi = np.sum(nij / n * (np.log(nij) + np.log(n) - np.log(pi[C.row]) - np.log(pj[C.col])))
    return float(max(mi, 0.0))


def mutual_information_loss(I_x, I_z, relative=False):
    """Information lost by compressing X into Z.

    ``I(X;C) - I(Z;C)`` (nats), or that loss as a fraction of ``I(X;C)`` when
    ``relative`` (0 when ``I(X;C)`` is 0).

    Parameters
    ----------
    I_x : float
        ``I(X;C)``, the information of the original variable about the class.
    I_z : float
        ``I(Z;C)``, the information of the compressed one.
    relative : bool, default=False
        Return the loss as a fraction of ``I_x``.

    Returns
    -------
    float
        The loss in nats, or the fraction.

    Raises
    ------
    ValueError
        When ``I_x`` or ``I_z`` is not finite.
    """
    I_x = float(I_x)
    I_z = float(I_z)
    if not (np.isfinite(I_x) and np.isfinite(I_z)):
        raise ValueError("I_x and I_z must be finite")
    loss = I_x - I_z
    if relative:
        return loss / I_x if I_x > 0 else 0.0
    return loss


def warmup():
    """Compile the kernels on tiny inputs (the dashboard calls this once at start-up)."""
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 0, 0]], dtype=np.float32))
    S = sp.csr_matrix(np.array([[0.5, 0.2, 0.0], [0.1, 0.0, 0.3]], dtype=np.float32))
    w = inverse_propensity(Y)
    precision_at_k(Y, S, (1, 2))
    psndcg_at_k(Y, S, 2, w)
    psprecision_at_k(Y, S, 2, w)
    coverage_at_k(Y, S, 2)
    precision_by_bucket(Y, S, label_frequency_buckets(Y, 2), 2)
    S64 = sp.csr_matrix(S, dtype=np.float64)
    top_k(S64, 2)
    top_k(S.toarray(), 2)
    top_k(S64.toarray(), 2)
