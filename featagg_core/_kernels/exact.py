"""numba kernels: sparse products ``AᵀB`` summed exactly, so that any split of the rows
(threads, Dask partitions, shards) gives bit-identical float32 results.

A float32 sum depends on the order of its terms; a product computed on one machine and
the same product reduced from per-partition partial sums would then differ in the last
bit now and then, and one flipped bit can flip a near-tie in a balanced split. Here
every entry is accumulated as an unevaluated pair ``hi + lo`` of float64 numbers with
error-free transformations (Knuth's TwoSum):

* a term is the product of two float32 values, which is exact in float64 (24 + 24
  significant bits <= 53);
* ``(hi, e) = TwoSum(hi, term)`` loses nothing; the rounding error ``e`` is added to ``lo``
  by a second TwoSum whose own error ``f`` is checked: ``f == 0`` for every addition means
  ``hi + lo`` *is* the exact sum (it fails only when an entry needs more than ~106
  significant bits, i.e. its terms span more than ~2^(58 - log2 n_terms) in magnitude);
  such additions are counted and reported as ``n_inexact``;
* two partial sums are merged the same way (a TwoSum per component, errors checked);
* the exact value is rounded once, correctly, to float32 (:func:`_round_dd`).

An exact value has one correctly rounded float32, whatever the order of the additions
that produced it, so single-machine and distributed results are equal whenever
``n_inexact == 0`` (always the case for data of float32 token counts, tf-idf weights
and normalised rows: their sums need far fewer bits).
"""
import numpy as np
from numba import njit, prange

from featagg_core._kernels._common import count_row_cols
from featagg_core._kernels.stopflag import stop_requested


@njit(cache=True, inline="always")
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True)
def _round_dd(hi, lo):
    """The float32 nearest to the exact ``hi + lo`` (ties to even), for a renormalised pair
    (``hi == fl(hi + lo)``). ``hi`` and the exact value lie on the same side of every float32
    rounding boundary (those are float64 numbers, and none but ``hi`` itself lies in
    ``hi``'s rounding interval), so only a ``hi`` exactly at a boundary needs ``lo``."""
    f = np.float32(hi)
    fd = np.float64(f)
    if fd == hi or lo == 0.0 or not np.isfinite(hi):
        return f
    if hi > fd:
        nb = np.nextafter(f, np.float32(np.inf))
    else:
        nb = np.nextafter(f, np.float32(-np.inf))
    if (fd + np.float64(nb)) * 0.5 != hi:
        return f
    # hi is the midpoint of f and nb: the sign of lo decides
    if lo > 0.0:
        return f if f > nb else nb
    return f if f < nb else nb


@njit(cache=True, nogil=True)
def _accumulate_row(j, xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, out_ind, q0, acc_hi,
                    acc_lo, seen):
    """Sum row j of AᵀB into the dense accumulators; write its sorted column ids to
    ``out_ind[q0:]``. Returns (end of the row's entries, inexact additions)."""
    k = q0
    bad = 0
    for p in range(xt_ptr[j], xt_ptr[j + 1]):
        i = xt_ind[p]
        w = np.float64(xt_dat[p])
        for q in range(y_ptr[i], y_ptr[i + 1]):
            lab = y_ind[q]
            if not seen[lab]:
                seen[lab] = True
                out_ind[k] = lab
                k += 1
            s, e = _two_sum(acc_hi[lab], w * np.float64(y_dat[q]))
            acc_hi[lab] = s
            if e != 0.0:
                t, f = _two_sum(acc_lo[lab], e)
                acc_lo[lab] = t
                if f != 0.0:
                    bad += 1
    seg = np.sort(out_ind[q0:k])
    out_ind[q0:k] = seg
    return k, bad


@njit(cache=True, nogil=True, parallel=True)
def _row_counts(xt_ptr, xt_ind, y_ptr, y_ind, n_cols, n_chunks, stop):
    d = xt_ptr.shape[0] - 1
    counts = np.zeros(d + 1, np.int64)
    n_chunks = max(1, min(n_chunks, max(d, 1)))
    for ch in prange(n_chunks):
        lo = ch * d // n_chunks
        hi = (ch + 1) * d // n_chunks
        stamp = np.full(max(n_cols, 1), -1, np.int64)
        for j in range(lo, hi):
            if stop_requested(stop):
                break
            counts[j + 1] = count_row_cols(j, xt_ptr, xt_ind, y_ptr, y_ind, stamp)
    return np.cumsum(counts)


@njit(cache=True, nogil=True, parallel=True)
def _exact_rows(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols, n_chunks, stop, out_ptr,
                out_ind, out_a, out_b, rounded):
    """The fill pass shared by :func:`xt_y_rounded` and :func:`xt_y_partial`: every row of
    ``AᵀB`` (row pointers ``out_ptr`` from :func:`_row_counts`) into ``out_ind`` and, with
    ``rounded``, its correctly rounded float32 values into ``out_a``, else the exact pairs
    into ``out_a`` (hi) and ``out_b`` (lo). Returns the number of inexact additions."""
    d = xt_ptr.shape[0] - 1
    n_chunks = max(1, min(n_chunks, max(d, 1)))
    bad = np.zeros(n_chunks, np.int64)
    for ch in prange(n_chunks):
        lo = ch * d // n_chunks
        hi = (ch + 1) * d // n_chunks
        acc_hi = np.zeros(max(n_cols, 1), np.float64)
        acc_lo = np.zeros(max(n_cols, 1), np.float64)
        seen = np.zeros(max(n_cols, 1), np.bool_)
        for j in range(lo, hi):
            if stop_requested(stop):
                break
            q0 = out_ptr[j]
            k, b = _accumulate_row(j, xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, out_ind,
                                   q0, acc_hi, acc_lo, seen)
            bad[ch] += b
            for t in range(q0, k):
                lab = out_ind[t]
                h, l2 = _two_sum(acc_hi[lab], acc_lo[lab])
                if rounded:
                    out_a[t] = _round_dd(h, l2)
                else:
                    out_a[t] = h
                    out_b[t] = l2
                acc_hi[lab] = 0.0
                acc_lo[lab] = 0.0
                seen[lab] = False
    return bad.sum()


@njit(cache=True, nogil=True)
def xt_y_rounded(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols, n_chunks, stop):
    """Rows of ``AᵀB`` (csr, sorted indices, float32, each entry the correctly rounded exact
    sum) from ``Aᵀ`` in csr (= A in csc) and ``B`` in csr, both float32.

    Returns ``(indptr, indices, data, n_inexact)``. Parallel over chunks of rows of AᵀB;
    the result does not depend on ``n_chunks``. ``stop[0] == 1`` (set by another thread,
    read once per row) ends the work early; the caller then discards the output."""
    d = xt_ptr.shape[0] - 1
    out_ptr = _row_counts(xt_ptr, xt_ind, y_ptr, y_ind, n_cols, n_chunks, stop)
    out_ind = np.empty(out_ptr[d], np.int32)
    out_dat = np.empty(out_ptr[d], np.float32)
    bad = _exact_rows(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols, n_chunks, stop,
                      out_ptr, out_ind, out_dat, np.empty(0, np.float64), True)
    return out_ptr, out_ind, out_dat, bad


@njit(cache=True, nogil=True)
def xt_y_partial(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols, n_chunks, stop):
    """As :func:`xt_y_rounded`, but each entry is kept as its exact renormalised pair
    ``(hi, lo)`` (float64 arrays) so that partial products over disjoint row sets can be
    merged exactly (:func:`merge_partials`) and rounded once (:func:`round_partial`).

    Returns ``(indptr, indices, hi, lo, n_inexact)``."""
    d = xt_ptr.shape[0] - 1
    out_ptr = _row_counts(xt_ptr, xt_ind, y_ptr, y_ind, n_cols, n_chunks, stop)
    out_ind = np.empty(out_ptr[d], np.int32)
    out_hi = np.empty(out_ptr[d], np.float64)
    out_lo = np.empty(out_ptr[d], np.float64)
    bad = _exact_rows(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_cols, n_chunks, stop,
                      out_ptr, out_ind, out_hi, out_lo, False)
    return out_ptr, out_ind, out_hi, out_lo, bad


@njit(cache=True, nogil=True)
def merge_partials(a_ptr, a_ind, a_hi, a_lo, b_ptr, b_ind, b_hi, b_lo):
    """Exact entry-wise sum of two partial products of the same shape (sorted csr rows of
    renormalised pairs; an empty ``lo`` array means all zeros). Returns
    ``(indptr, indices, hi, lo, n_inexact)``."""
    n = a_ptr.shape[0] - 1
    cap = a_ind.shape[0] + b_ind.shape[0]
    out_ptr = np.zeros(n + 1, np.int64)
    out_ind = np.empty(cap, np.int32)
    out_hi = np.empty(cap, np.float64)
    out_lo = np.empty(cap, np.float64)
    a_has = a_lo.shape[0] > 0
    b_has = b_lo.shape[0] > 0
    q = 0
    bad = 0
    for r in range(n):
        p, pe = a_ptr[r], a_ptr[r + 1]
        s, se = b_ptr[r], b_ptr[r + 1]
        while p < pe or s < se:
            if s >= se or (p < pe and a_ind[p] < b_ind[s]):
                out_ind[q] = a_ind[p]
                out_hi[q] = a_hi[p]
                out_lo[q] = a_lo[p] if a_has else 0.0
                p += 1
            elif p >= pe or b_ind[s] < a_ind[p]:
                out_ind[q] = b_ind[s]
                out_hi[q] = b_hi[s]
                out_lo[q] = b_lo[s] if b_has else 0.0
                s += 1
            else:
                h, e = _two_sum(a_hi[p], b_hi[s])
                t, f1 = _two_sum(a_lo[p] if a_has else 0.0, b_lo[s] if b_has else 0.0)
                u, f2 = _two_sum(t, e)
                if f1 != 0.0 or f2 != 0.0:
                    bad += 1
                out_ind[q] = a_ind[p]
                out_hi[q], out_lo[q] = _two_sum(h, u)
                p += 1
                s += 1
            q += 1
        out_ptr[r + 1] = q
    return out_ptr, out_ind[:q].copy(), out_hi[:q].copy(), out_lo[:q].copy(), bad


@njit(cache=True, nogil=True)
def round_partial(hi, lo):
    """Correctly rounded float32 of every renormalised pair."""
    out = np.empty(hi.shape[0], np.float32)
    for t in range(hi.shape[0]):
        out[t] = _round_dd(hi[t], lo[t])
    return out
