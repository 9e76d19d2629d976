"""numba kernels for the ranking metrics (``featagg_core.metrics``).

All kernels take plain arrays and return arrays. Rows are independent, so the row loops
are ``prange`` loops whose results do not depend on the number of threads.
"""
import numpy as np
from numba import njit, prange

from featagg_core._kernels import PARALLEL
from featagg_core._kernels._common import lower_bound


@njit(cache=True, nogil=True, parallel=PARALLEL)
def csr_top_k(indptr, indices, data, k):
    """Top-``k`` stored entries of every csr row, best first.

    Order: larger value first; equal values towards the lower column index. Rows with
    fewer than ``k`` stored entries are padded with column ``-1`` (entries that are not
    stored are never predicted). Returns ``(cols, vals)`` of shape (n, k); padded
    positions hold ``-1`` / ``-inf``.
    """
    n = indptr.shape[0] - 1
    cols = np.full((n, k), -1, dtype=np.int64)
    vals = np.full((n, k), -np.inf, dtype=np.float64)
    if k == 0:
        return cols, vals
    for i in prange(n):
        filled = 0
        for p in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[p])
            c = np.int64(indices[p])
            if filled == k:
                # the last slot holds the worst entry kept so far
                lv = vals[i, k - 1]
                lc = cols[i, k - 1]
                if v < lv or (v == lv and c > lc):
                    continue
                pos = k - 1
            else:
                pos = filled
                filled += 1
            # shift worse entries one slot down (insertion into a sorted buffer)
            while pos > 0:
                pv = vals[i, pos - 1]
                pc = cols[i, pos - 1]
                if pv > v or (pv == v and pc < c):
                    break
                vals[i, pos] = pv
                cols[i, pos] = pc
                pos -= 1
            vals[i, pos] = v
            cols[i, pos] = c
    return cols, vals


@njit(cache=True, nogil=True, parallel=PARALLEL)
def rank_gains(indptr, indices, top, weights):
    """Gain of every ranked position: ``weights[l]`` when label ``l = top[i, r]`` is a true
    label of point ``i`` (csr ``indptr``/``indices`` with sorted indices), else 0.
    ``top`` entries of ``-1`` (padding) never hit."""
    n, k = top.shape
    out = np.zeros((n, k), dtype=np.float64)
    for i in prange(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        if lo == hi:
            continue
        for r in range(k):
            c = top[i, r]
            if c < 0:
                continue
            a = lower_bound(indices, lo, hi, c)     # in the sorted true labels of row i
            if a < hi and indices[a] == c:
                out[i, r] = weights[c]
    return out


@njit(cache=True, nogil=True, parallel=PARALLEL)
def oracle_gains(indptr, indices, weights, k):
    """Best achievable gains of every point: its true labels' weights in decreasing
    order, first ``k`` of them, padded with 0 (the "oracle" ranking pyxclib uses to
    normalise the propensity-scored metrics)."""
    n = indptr.shape[0] - 1
    out = np.zeros((n, k), dtype=np.float64)
    for i in prange(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        m = hi - lo
        if m == 0:
            continue
        w = np.empty(m, dtype=np.float64)
        for p in range(m):
            w[p] = weights[indices[lo + p]]
        w = np.sort(w)
        t = min(k, m)
        for r in range(t):
            out[i, r] = w[m - 1 - r]
    return out


@njit(cache=True, nogil=True)
def covered_labels(indptr, indices, top, n_labels):
    """Boolean mask over labels: label ``l`` was a correct prediction in some row's
    top-k (``top`` as from :func:`csr_top_k`; ``indices`` sorted per row)."""
    hit = np.zeros(n_labels, dtype=np.bool_)
    n, k = top.shape
    for i in range(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        if lo == hi:
            continue
        for r in range(k):
            c = top[i, r]
            if c < 0 or hit[c]:
                continue
            a = lower_bound(indices, lo, hi, c)
            if a < hi and indices[a] == c:
                hit[c] = True
    return hit


@njit(cache=True, nogil=True)
def bucket_hits(gains, top, buckets, n_buckets):
    """Per bucket, the cumulative hit mass over ranks: ``out[b, r]`` = sum over points of
    the gains at ranks ``<= r`` whose label lies in bucket ``b``."""
    n, k = top.shape
    out = np.zeros((n_buckets, k), dtype=np.float64)
    for i in range(n):
        for r in range(k):
            g = gains[i, r]
            if g != 0.0:
                out[buckets[top[i, r]], r] += g
    for b in range(n_buckets):
        for r in range(1, k):
            out[b, r] += out[b, r - 1]
    return out


@njit(cache=True, nogil=True, parallel=PARALLEL)
def dense_top_k(S, k):
    """Top-``k`` columns of every row of a dense score matrix, best first (larger value
    first, ties towards the lower column); ``-1`` beyond the row length. One pass per row
    with a sorted k-slot buffer: for the small k of ranking metrics this reads every score
    once and rejects almost all of them with a single comparison."""
    n, L = S.shape
    cols = np.full((n, k), -1, dtype=np.int64)
    if k == 0:
        return cols
    for i in prange(n):
        vals = np.empty(k, dtype=np.float64)
        filled = 0
        for c in range(L):
            v = np.float64(S[i, c])
            if filled == k:
                # columns arrive in increasing order, so a tie with the worst kept
                # entry loses (the kept one has the lower index)
                if v <= vals[k - 1]:
                    continue
                pos = k - 1
            else:
                pos = filled
                filled += 1
            while pos > 0 and vals[pos - 1] < v:
                vals[pos] = vals[pos - 1]
                cols[i, pos] = cols[i, pos - 1]
                pos -= 1
            vals[pos] = v
            cols[i, pos] = c
    return cols
