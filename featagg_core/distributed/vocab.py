"""``vocabulary_distributed``: Bateni et al.'s distributed vocabulary compression.

Counting happens on the workers: every row part factorizes its values and counts labels
per value; the per-part tables are merged by a tree reduction of adjacent parts (earlier
rows on the left), which keeps the vocabulary in order of first appearance, the order
``VocabularyCompressor.fit`` uses (ties of P(C=0|x) are broken by it). The driver only
sees the vocabulary-sized counts. The thresholding then runs as before (see
:func:`vocabulary_distributed`). :func:`distributed_threshold_compress` is the twin's first
name and signature (it opens its own client), kept for existing callers.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from featagg_core._kernels import vocab as _kv
from featagg_core.distributed.blocks import is_future, tree_reduce
from featagg_core.distributed.cluster import dask_client
from featagg_core.distributed.executor import Executor, with_retries

__all__ = ["vocabulary_distributed", "distributed_threshold_compress"]


# ---------------------------------------------------------------------------- counting
def _count_part(part):
    """``(vocabulary, counts0, counts1)`` of one part ``(values, labels)``."""
    from featagg_core.vocab.counts import _as_1d, _check_labels, factorize

    values, labels = part
    codes, vocab = factorize(_as_1d(values, "values"))
    y = _check_labels(labels, len(codes))
    n = len(vocab)
    c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
    c0 = np.bincount(codes, minlength=n).astype(np.int64) - c1
    return vocab, c0, c1


def _merge_counts(a, b):
    """Counts of two adjacent parts (``a`` holds the earlier rows): values in order of first
    appearance, a's first."""
    va, a0, a1 = a
    vb, b0, b1 = b
    allv = np.concatenate([np.asarray(va, dtype=object), np.asarray(vb, dtype=object)]) \
        if np.asarray(va).dtype != np.asarray(vb).dtype else np.concatenate([va, vb])
    codes, uniq = pd.factorize(allv, use_na_sentinel=False)
    n = len(uniq)
    c0 = np.zeros(n, np.int64)
    c1 = np.zeros(n, np.int64)
    np.add.at(c0, codes, np.r_[a0, b0])
    np.add.at(c1, codes, np.r_[a1, b1])
    return np.asarray(uniq), c0, c1


def _finish_counts(table):
    """The same vocabulary conversion as ``factorize`` applies to a whole column."""
    from featagg_core.vocab.counts import factorize

    vocab, c0, c1 = table
    _, vocab = factorize(vocab)  # already unique and in order: only the dtype rule applies
    return vocab, c0, c1


# ---------------------------------------------------------------------------- rounds
def _part_max_gain(part):
    c0, c1, bounds, offset = part
    return _kv.chunks_max_gain(c0, c1, bounds)


def _part_threshold(part, k, eps, d):
    c0, c1, bounds, offset = part
    return _kv.chunks_threshold(c0, c1, bounds, offset, k, eps, d)


def _bucket_np(P0, P1, a, b):
    """Vectorised N-weighted negative conditional entropy of buckets [a, b)."""
    a0 = (P0[b] - P0[a]).astype(np.float64)
    a1 = (P1[b] - P1[a]).astype(np.float64)
    t = a0 + a1
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a0 > 0, a0 * np.log(a0 / t), 0.0) + np.where(a1 > 0, a1 * np.log(a1 / t), 0.0)
    return r


# ---------------------------------------------------------------------------- twin
def vocabulary_distributed(client, values=None, labels=None, budget=100, *, counts=None,
                           parts=None, epsilon=0.1, forced_fraction=None, n_parts=None,
                           refine=False, progress=None):
    """Distributed vocabulary compression by thresholding (Bateni et al., ICML 2019).

    1. Count labels per value on the workers (per-part counts, tree reduction) and sort
       the values by P(C=0 | x) (on the driver, vocabulary-sized arrays only).
    2. Force ``p = ceil(forced_fraction * k)`` split points evenly spaced in the sorted
       order (``k = budget - 1``). They cut the values into ``p + 1`` contiguous chunks,
       and with the chunk ends fixed F is a sum of independent per-chunk objectives.
       Keeping any ``(1 - forced_fraction) k`` points of an optimum and adding the forced
       ones loses at most a ``forced_fraction`` share of its value (submodularity).
    3. The chunks are grouped into ``n_parts`` contiguous parts and scattered to the
       workers. Round 1: each part returns its largest singleton gain, the driver takes
       the maximum ``d``. Round 2: each part runs the Badanidiyuru-Vondrak decreasing
       thresholds ``d, d/(1+eps), ...`` on its chunks with the remaining budget ``k - p``
       and returns its picks with their level. Chunks are independent, so a chunk's picks
       at each level only depend on its own earlier picks: the paper's synchronous rounds
       (one per threshold) need no communication and run locally.
    4. Merge: sort all picks by (level, position), the order in which one machine
       scanning level by level would take them, and trim to ``k - p``.

    Parameters
    ----------
    client : ``"serial"``, a ``dask.distributed.Client`` or a scheduler address.
    values, labels : 1-D arrays (as for ``VocabularyCompressor.fit``), cut into row parts
        and scattered; or
    parts : list of ``(values, labels)`` row parts (arrays, or futures of such pairs
        already on the cluster), in row order; or
    counts : tuple (vocabulary, counts0, counts1), already counted.
    budget : int, buckets m.
    epsilon : float, threshold decrease factor 1 + epsilon and stopping threshold
        epsilon d / k.
    forced_fraction : float or None, share of the budget spent on forced split points
        (default ``epsilon``).
    n_parts : int or None, tasks of the thresholding rounds (default
        ``min(#chunks, 4 * workers)``); row parts for ``values`` (default 2 per worker).
    refine : bool, apply the single-machine local refinement to the merged split points
        (off by default: the result is the paper's algorithm).
    progress : optional ``progress(fraction, message)``; may raise
        :class:`~featagg_core.utils.cancel.Cancelled` (outstanding tasks are cancelled).

    Returns
    -------
    VocabularyCompressor
        Fitted (``method="threshold"``), with ``distributed_info_`` = dict of ``n_chunks``,
        ``n_parts``, ``forced``, ``d``, ``rounds``, ``seconds``, ``count_parts``.
    """
    from featagg_core.vocab.compressor import VocabularyCompressor

    t0 = time.perf_counter()
    vc = VocabularyCompressor(budget=budget, method="threshold", epsilon=epsilon, refine=refine,
                              merge_ties=False)
    vc._validate()
    if not (0 < float(epsilon) < 1):
        raise ValueError(f"epsilon must be a number in (0, 1), got {epsilon!r}")
    ff = float(epsilon if forced_fraction is None else forced_fraction)
    if not (0 <= ff < 1):
        raise ValueError(f"forced_fraction must be a number in [0, 1), got {forced_fraction!r}")
    given = sum(x is not None for x in (counts, parts)) + (values is not None or labels is not None)
    if given != 1:
        raise ValueError("values/labels: give values and labels, or parts=[(values, labels), "
                         "...], or counts=(vocabulary, counts0, counts1)")
    return with_retries(lambda attempt: _fit_once(
        client, vc, values, labels, budget, counts, parts, epsilon, ff, n_parts, progress, t0))


def _fit_once(client, vc, values, labels, budget, counts, parts, epsilon, ff, n_parts,
              progress, t0):
    """One attempt of :func:`vocabulary_distributed` (a fresh executor)."""
    from featagg_core.vocab.counts import _Prepared, _as_1d, _check_labels, check_counts

    with Executor(client) as ex:
        n_w = 1 if ex.serial else len(ex.workers())
        count_parts = 0
        if counts is not None:
            vocab, c0, c1 = check_counts(*counts)
        else:
            if parts is None:
                if values is None or labels is None:
                    raise ValueError("values/labels: give both, or counts=(vocabulary, "
                                     "counts0, counts1)")
                v = _as_1d(values, "values")
                y = _check_labels(labels, len(v))
                if len(v) == 0:
                    raise ValueError("values: empty")
                k_rows = max(1, min(len(v), 2 * ex.total_threads()))
                cuts = np.round(np.linspace(0, len(v), k_rows + 1)).astype(np.int64)
                futs = ex.scatter([(v[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])
            else:
                parts = list(parts)
                if not parts:
                    raise ValueError("parts: empty list")
                futs = [p if is_future(p) else ex.scatter([p])[0] for p in parts]
            count_parts = len(futs)
            table = tree_reduce(ex, [ex.submit(_count_part, f) for f in futs], _merge_counts)
            vocab, c0, c1 = ex.gather([ex.submit(_finish_counts, table)])[0]
            del table, futs
        if c0.sum() == 0 or c1.sum() == 0:
            raise ValueError("labels: both classes 0 and 1 must occur (I(X;C) is 0 otherwise)")
        if progress is not None:
            progress(0.3, f"counted {len(vocab)} values")
        n = len(vocab)
        k = int(min(budget, n)) - 1
        prep = _Prepared(c0, c1, 1, False)  # the n values in P(C=0|x) order, as in the paper
        order = prep.order
        s0 = np.ascontiguousarray(c0[order], np.int64)
        s1 = np.ascontiguousarray(c1[order], np.int64)
        p = min(int(math.ceil(ff * k)), k) if k > 0 else 0
        forced = np.unique(np.round(np.arange(1, p + 1) * n / (p + 1)).astype(np.int64))
        forced = forced[(forced > 0) & (forced < n)]
        bounds = np.r_[0, forced, n].astype(np.int64)
        n_chunks = len(bounds) - 1
        k_left = k - len(forced)
        if n_parts is None:
            n_parts = min(n_chunks, 4 * max(1, n_w))
        n_parts = max(1, min(int(n_parts), n_chunks))
        cuts = np.round(np.linspace(0, n_chunks, n_parts + 1)).astype(np.int64)
        chunk_parts = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            lo, hi = bounds[a], bounds[b]
            chunk_parts.append((s0[lo:hi].copy(), s1[lo:hi].copy(), bounds[a:b + 1] - lo, int(lo)))
        d = 0.0
        res = []
        if k_left > 0:
            futs = ex.scatter(chunk_parts)
            gains = ex.gather([ex.submit(_part_max_gain, f) for f in futs])
            d = float(max(gains)) if gains else 0.0
            if progress is not None:
                progress(0.6, "round 1: largest singleton gain")
            res = ex.gather([ex.submit(_part_threshold, f, max(k_left, 0), float(epsilon), d)
                             for f in futs])
    if progress is not None:
        progress(0.9, "round 2: thresholds")
    if res:
        pos = np.concatenate([r[0] for r in res])
        gains = np.concatenate([r[1] for r in res])
        levels = np.concatenate([r[2] for r in res])
        sel = np.lexsort((pos, levels))[: k_left]
        pos, gains, levels = pos[sel], gains[sel], levels[sel]
    else:
        pos, gains, levels = np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    # fitted estimator: forced points first (gains of inserting them left to right)
    P0, P1 = prep.P0, prep.P1
    N = float(P0[-1] + P1[-1])
    fg = np.zeros(len(forced))
    if len(forced):
        lo = np.r_[0, forced[:-1]]
        hi = np.full_like(forced, n)
        fg = _bucket_np(P0, P1, lo, forced) + _bucket_np(P0, P1, forced, hi) \
            - _bucket_np(P0, P1, lo, hi)
    vc.vocabulary_ = vocab
    vc.counts_ = np.column_stack([c0, c1]).astype(np.int64)
    vc.order_ = order.astype(np.int64)
    vc._prep = prep
    vc.n_atoms_ = prep.n_atoms
    vc.chosen_ = np.r_[forced, pos].astype(np.int64)
    vc.gains_ = np.r_[fg, gains] / N
    vc.levels_ = np.r_[np.full(len(forced), -1), levels].astype(np.int64)
    vc._set_splits(vc.chosen_)
    vc.fit_time_ = vc.optimize_time_ = time.perf_counter() - t0
    vc.distributed_info_ = {"n_chunks": n_chunks, "n_parts": len(chunk_parts),
                            "forced": len(forced), "d": d / N,
                            "rounds": 2 if k_left > 0 else 0, "seconds": vc.fit_time_,
                            "count_parts": count_parts}
    if progress is not None:
        progress(1.0, "done")
    return vc


def distributed_threshold_compress(values=None, labels=None, budget=100, *, counts=None,
                                   epsilon=0.1, forced_fraction=None, n_parts=None,
                                   client=None, scheduler_address=None, n_workers=2,
                                   threads_per_worker=1, processes=False, refine=False):
    """The first name of :func:`vocabulary_distributed` (kept for existing callers).

    Where to run: ``client`` (a ``distributed.Client`` or ``"serial"``), else
    ``scheduler_address``, else a ``LocalCluster(n_workers, threads_per_worker,
    processes)`` started for the call (see :func:`dask_client`). Values are now counted
    on the workers too.

    Parameters
    ----------
    values, labels : 1-D arrays, optional
        The column's values and the 0/1 labels (as for ``VocabularyCompressor.fit``).
    budget : int, default=100
        Buckets m.
    counts : tuple (vocabulary, counts0, counts1), optional
        Already counted, instead of ``values`` and ``labels``.
    epsilon : float, default=0.1
        Threshold decrease factor 1 + epsilon.
    forced_fraction : float, optional
        Share of the budget spent on forced split points (default ``epsilon``).
    n_parts : int, optional
        Tasks of the thresholding rounds.
    refine : bool, default=False
        Apply the single-machine local refinement to the merged split points.
    client, scheduler_address, n_workers, threads_per_worker, processes
        Where to run, as :func:`dask_client`.

    Returns
    -------
    VocabularyCompressor
        The fitted compressor.

    Raises
    ------
    ValueError
        Without ``values`` and ``labels`` or ``counts``, or for a bad parameter.
    """
    with dask_client(client, scheduler_address, n_workers, threads_per_worker, processes) as cl:
        if values is None and labels is None and counts is None:
            raise ValueError("values/labels: give both, or counts=(vocabulary, counts0, "
                             "counts1)")
        if counts is None and (values is None or labels is None):
            raise ValueError("values/labels: give both, or counts=(vocabulary, counts0, "
                             "counts1)")
        return vocabulary_distributed(cl, values, labels, budget, counts=counts,
                                      epsilon=epsilon, forced_fraction=forced_fraction,
                                      n_parts=n_parts, refine=refine)
