"""A categorical column's label counts and the order the compressors work in: the column
and its 0/1 labels checked (``_as_1d``, ``_check_labels``), its vocabulary and per-value
label counts (:func:`factorize`, :func:`check_counts`), I(Z; C) of bucket counts
(``_mi_from_counts``), the values sorted by P(C = 0 | x) (:func:`sort_order`) with their
prefix counts (``_prefix``) and the atoms an optimiser may cut between (``_Prepared``).

Shared by :mod:`featagg_core.vocab.compressor`, the Dask twin
(``featagg_core.distributed.vocab``) and the table experiments."""
from __future__ import annotations

import numpy as np
import pandas as pd


def _mi_from_counts(b0, b1) -> float:
    """I(Z; C) in nats from per-bucket label counts (vectorised; 0 log 0 = 0)."""
    b0 = np.asarray(b0, dtype=np.float64)
    b1 = np.asarray(b1, dtype=np.float64)
    N0, N1 = b0.sum(), b1.sum()
    N = N0 + N1
    if N <= 0 or N0 == 0 or N1 == 0:
        return 0.0
    b = b0 + b1
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = np.where(b0 > 0, b0 * np.log(b0 * N / (b * N0)), 0.0)
        t1 = np.where(b1 > 0, b1 * np.log(b1 * N / (b * N1)), 0.0)
    return float(max((t0.sum() + t1.sum()) / N, 0.0))


def _as_1d(values, name: str) -> np.ndarray:
    if isinstance(values, (pd.Series, pd.Index)):
        arr = values.to_numpy()
    else:
        arr = np.asarray(values) if not isinstance(values, (list, tuple)) else None
        if arr is None:
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    return arr


def _check_labels(labels, n: int) -> np.ndarray:
    y = _as_1d(labels, "labels")
    if y.shape[0] != n:
        raise ValueError(f"labels: length {y.shape[0]} does not match values ({n})")
    if y.dtype == bool:
        return y.astype(np.int8)
    try:
        yf = pd.to_numeric(pd.Series(y), errors="raise").to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        raise ValueError("labels: must be 0/1 (or booleans)") from None
    if not np.all((yf == 0) | (yf == 1)):
        bad = y[~((yf == 0) | (yf == 1))][0]
        raise ValueError(f"labels: must be 0/1 (or booleans), found {bad!r}")
    return yf.astype(np.int8)


def check_counts(vocabulary, counts0, counts1):
    """Validated ``(vocabulary, counts0, counts1)`` (int64 counts, distinct values, every
    value seen at least once).

    Parameters
    ----------
    vocabulary : 1-D array-like
        The distinct values.
    counts0, counts1 : 1-D array-like of int
        Label-0 / label-1 count of each value.

    Returns
    -------
    tuple
        ``(vocabulary as a 1-D array, counts0 as int64, counts1 as int64)``.

    Raises
    ------
    ValueError
        For counts of another length, negative counts, a value that never occurs, or
        repeated values.
    """
    vocab = _as_1d(vocabulary, "vocabulary")
    c0 = np.asarray(counts0, dtype=np.int64)
    c1 = np.asarray(counts1, dtype=np.int64)
    if c0.shape != (len(vocab),) or c1.shape != (len(vocab),):
        raise ValueError("counts0/counts1: must be 1-D with one count per vocabulary value")
    if (c0 < 0).any() or (c1 < 0).any() or ((c0 + c1) == 0).any():
        raise ValueError("counts0/counts1: counts must be >= 0 and every value must "
                         "occur at least once")
    if not pd.Index(vocab).is_unique:
        raise ValueError("vocabulary: values must be distinct")
    return vocab, c0, c1


def factorize(values):
    """``(codes, vocabulary)`` of a 1-D array of hashable values (missing values are a
    category of their own).  Vocabulary order = first appearance.

    Parameters
    ----------
    values : 1-D array-like, pandas Series or list
        Hashable values.

    Returns
    -------
    codes : ndarray of int64, shape (n,)
        Index of each value in ``vocabulary``.
    vocabulary : ndarray
        The distinct values (int64 when all are ints, else as pandas gives them).

    Raises
    ------
    ValueError
        When ``values`` is not 1-D.
    """
    arr = _as_1d(values, "values")
    codes, uniques = pd.factorize(arr, use_na_sentinel=False)
    vocab = np.asarray(uniques)
    if vocab.dtype == object and len(vocab) and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in vocab):
        vocab = vocab.astype(np.int64)
    return codes.astype(np.int64), vocab


def sort_order(c0, c1) -> np.ndarray:
    """Values sorted by ascending P(C=0 | x) = c0 / (c0 + c1); ties by vocabulary index.

    Parameters
    ----------
    c0, c1 : 1-D array-like
        Label-0 / label-1 count of each value (a value with no counts sorts at 0.5).

    Returns
    -------
    ndarray of int
        Vocabulary indices in that order.
    """
    c0 = np.asarray(c0, np.float64)
    tot = c0 + np.asarray(c1, np.float64)
    p0 = np.divide(c0, tot, out=np.full_like(c0, 0.5), where=tot > 0)
    return np.argsort(p0, kind="stable")


def _prefix(c0, c1, order):
    P0 = np.zeros(len(order) + 1, np.int64)
    P1 = np.zeros(len(order) + 1, np.int64)
    np.cumsum(c0[order], out=P0[1:])
    np.cumsum(c1[order], out=P1[1:])
    return P0, P1


class _Prepared:
    """Sorted order and the *atoms* the optimisers work on.

    ``key`` is P(C=0 | x) per value, with values seen fewer than ``min_count`` times
    pooled into one value (their pooled ratio).  ``order`` sorts by key (the pool first
    among equal keys, then vocabulary index).  Atoms are maximal runs that are never cut:
    the rare pool, and with ``merge_ties`` every run of equal keys.  Cutting inside a run
    of equal P(C=0|x) never helps: with the neighbouring cuts fixed, g(L) + g(R) is a
    convex function of how much of the run goes left (g is jointly convex), so an end of
    the run is at least as good, and an optimum exists with cuts at atom boundaries only.
    ``bpos`` are the atom boundaries as positions in the sorted order of values, and
    ``P0a``/``P1a`` the prefix counts at atom boundaries.
    """

    def __init__(self, c0, c1, min_count, merge_ties):
        n = len(c0)
        cnt = c0 + c1
        self.rare = cnt < max(int(min_count), 1)
        key = c0 / np.maximum(cnt, 1)
        if self.rare.any():
            key = key.copy()
            key[self.rare] = c0[self.rare].sum() / cnt[self.rare].sum()
        if self.rare.any():  # the pool first among equal keys, then vocabulary index
            self.order = np.lexsort((np.arange(n), ~self.rare, key))
        else:
            self.order = np.argsort(key, kind="stable")
        ks, rs = key[self.order], self.rare[self.order]
        self.key_sorted = ks
        if merge_ties:
            boundary = ks[1:] != ks[:-1]
        else:
            boundary = ~(rs[1:] & rs[:-1])
        self.bpos = (np.flatnonzero(boundary) + 1).astype(np.int64)
        self.P0, self.P1 = _prefix(c0, c1, self.order)
        edges = np.r_[0, self.bpos, n].astype(np.int64)
        self.P0a = np.ascontiguousarray(self.P0[edges])
        self.P1a = np.ascontiguousarray(self.P1[edges])
        self.n_atoms = len(edges) - 1

    def to_atoms(self, pos):
        """Atom-boundary indices (1..n_atoms-1) of value positions that are boundaries."""
        return (np.searchsorted(self.bpos, pos) + 1).astype(np.int64)

    def to_values(self, ja):
        return self.bpos[np.asarray(ja, np.int64) - 1]
