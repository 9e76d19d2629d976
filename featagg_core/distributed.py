"""Dask-distributed twins of the parts of featagg_core that scale out.

The layout follows stumpy (``stump`` / ``stumped``): each distributed function sits here
next to the shared plumbing, takes the same inputs as its single-machine counterpart plus
``client`` / ``scheduler_address``, and returns the same kind of fitted object.

Shared plumbing
    :func:`dask_client` - a context manager yielding a ``distributed.Client``: the one
    passed in (left open), one connected to ``scheduler_address``, or a ``LocalCluster``
    started for the call and shut down afterwards.
    :func:`map_parts` - scatter a list of parts to the workers once and run one or more
    rounds of a function over them, gathering each round's results on the driver.
    Both accept ``client="serial"``, which runs the identical code path in this process
    (used by tests to check that a Dask run equals a single-process run).

Available twins
    :func:`distributed_threshold_compress` - Bateni et al. (ICML 2019) distributed
    vocabulary compression (twin of ``VocabularyCompressor(method="threshold")``).
"""
from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ._kernels import vocab as _kv


# ----------------------------------------------------------------------------------------
# shared plumbing
# ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def dask_client(client=None, scheduler_address: Optional[str] = None, n_workers: int = 2,
                threads_per_worker: int = 1, processes: bool = False):
    """Yield a Dask client (or the string ``"serial"``).

    ``client``: an existing ``distributed.Client`` (used as is, not closed) or
    ``"serial"``.  Else ``scheduler_address`` (``"tcp://host:8786"``) connects to a running
    cluster, and with neither a ``LocalCluster(n_workers, threads_per_worker, processes)``
    is started for the duration of the block and closed after it.
    """
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster
    if scheduler_address is not None:
        c = Client(scheduler_address)
        try:
            yield c
        finally:
            c.close()
        return
    if not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers: must be an int >= 1, got {n_workers!r}")
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                           processes=processes, dashboard_address=":0")
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def map_parts(client, parts: Sequence[Any], rounds: Sequence[Callable[..., Any]],
              between: Optional[Callable[[int, List[Any]], Dict[str, Any]]] = None) -> List[List[Any]]:
    """Scatter ``parts`` once, then for each function ``f`` in ``rounds`` compute
    ``f(part, **kw)`` on every part, where ``kw`` is what ``between(round_index, previous
    results)`` returned (``{}`` for the first round).  Returns the results of every round."""
    out: List[List[Any]] = []
    kw: Dict[str, Any] = {}
    if client == "serial":
        for r, f in enumerate(rounds):
            if r and between is not None:
                kw = between(r, out[-1])
            out.append([f(p, **kw) for p in parts])
        return out
    futures = client.scatter(list(parts), broadcast=False)
    for r, f in enumerate(rounds):
        if r and between is not None:
            kw = between(r, out[-1])
        out.append(client.gather(client.map(f, futures, pure=False, **kw)))
    return out


# ----------------------------------------------------------------------------------------
# vocabulary compression (Bateni et al. 2019, Section "distributed implementation")
# ----------------------------------------------------------------------------------------
def _vocab_part_max_gain(part):
    c0, c1, bounds, offset = part
    return _kv.chunks_max_gain(c0, c1, bounds)


def _vocab_part_threshold(part, k=1, eps=0.1, d=0.0):
    c0, c1, bounds, offset = part
    return _kv.chunks_threshold(c0, c1, bounds, offset, k, eps, d)


def distributed_threshold_compress(values=None, labels=None, budget=100, *, counts=None,
                                   epsilon=0.1, forced_fraction=None, n_parts=None,
                                   client=None, scheduler_address=None, n_workers=2,
                                   threads_per_worker=1, processes=False, refine=False):
    """Distributed vocabulary compression by thresholding (twin of ``method="threshold"``).

    1. Count labels per value and sort the values by P(C=0 | x) (on the driver).
    2. Force ``p = ceil(forced_fraction * k)`` split points evenly spaced in the sorted
       order (``k = budget - 1``).  They cut the values into ``p + 1`` contiguous chunks,
       and with the chunk ends fixed F is a sum of independent per-chunk objectives.
       Keeping any ``(1 - forced_fraction) k`` points of an optimum and adding the forced
       ones loses at most a ``forced_fraction`` share of its value (submodularity).
    3. The chunks are grouped into ``n_parts`` contiguous parts and scattered to the
       workers; each worker holds O(n / n_parts) counts.  Round 1: each part returns its
       largest singleton gain, the driver takes the maximum ``d``.  Round 2: each part
       runs the Badanidiyuru-Vondrak decreasing thresholds ``d, d/(1+eps), ...`` on its
       chunks with the remaining budget ``k - p`` and returns its picks with their level.
       Because the chunks are independent, a chunk's picks at each level only depend on
       its own earlier picks, so the paper's synchronous rounds (one per threshold) need
       no communication and are run locally.
    4. Merge: sort all picks by (level, position) - exactly the order in which one machine
       scanning level by level would take them - and trim to ``k - p``.

    Parameters
    ----------
    values, labels : 1-D arrays (as for ``VocabularyCompressor.fit``), or
    counts : tuple (vocabulary, counts0, counts1) instead of values/labels.
    budget : int
        Buckets m.
    epsilon : float
        Threshold decrease factor 1 + epsilon and stopping threshold epsilon d / k.
    forced_fraction : float or None
        Share of the budget spent on forced split points (default ``epsilon``).
    n_parts : int or None
        Number of Dask tasks (default: ``min(#chunks, 4 * n_workers)``).
    client, scheduler_address, n_workers, threads_per_worker, processes :
        Where to run: see :func:`dask_client` (``client="serial"``: this process).
    refine : bool
        Apply the single-machine local refinement to the merged split points (off by
        default so that the result is the paper's algorithm).

    Returns
    -------
    VocabularyCompressor
        Fitted (``method="threshold"``), with ``distributed_info_`` = dict of ``n_chunks``,
        ``n_parts``, ``forced``, ``d``, ``rounds``, ``seconds``.
    """
    from .vocab import VocabularyCompressor, _Prepared, check_counts

    t0 = time.perf_counter()
    vc = VocabularyCompressor(budget=budget, method="threshold", epsilon=epsilon, refine=refine,
                              merge_ties=False)
    vc._validate()
    if not (0 < float(epsilon) < 1):
        raise ValueError(f"epsilon: must be in (0, 1), got {epsilon!r}")
    ff = float(epsilon if forced_fraction is None else forced_fraction)
    if not (0 <= ff < 1):
        raise ValueError(f"forced_fraction: must be in [0, 1), got {forced_fraction!r}")
    # step 1: counts and order (reuses the estimator's validation)
    if counts is not None:
        vocab, c0, c1 = check_counts(*counts)
        if c0.sum() == 0 or c1.sum() == 0:
            raise ValueError("labels: both classes 0 and 1 must occur (I(X;C) is 0 otherwise)")
    else:
        if values is None or labels is None:
            raise ValueError("values/labels: give both, or counts=(vocabulary, counts0, counts1)")
        from .vocab import _check_labels, factorize
        codes, vocab = factorize(values)
        y = _check_labels(labels, len(codes))
        n = len(vocab)
        c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
        c0 = np.bincount(codes, minlength=n).astype(np.int64) - c1
        if c0.sum() == 0 or c1.sum() == 0:
            raise ValueError("labels: both classes 0 and 1 must occur (I(X;C) is 0 otherwise)")
    n = len(vocab)
    k = int(min(budget, n)) - 1
    prep = _Prepared(c0, c1, 1, False)  # the n values in P(C=0|x) order, as in the paper
    order = prep.order
    s0 = np.ascontiguousarray(c0[order], np.int64)
    s1 = np.ascontiguousarray(c1[order], np.int64)
    # step 2: forced split points, evenly spaced by index
    p = min(int(math.ceil(ff * k)), k) if k > 0 else 0
    forced = np.unique(np.round(np.arange(1, p + 1) * n / (p + 1)).astype(np.int64))
    forced = forced[(forced > 0) & (forced < n)]
    bounds = np.r_[0, forced, n].astype(np.int64)
    n_chunks = len(bounds) - 1
    k_left = k - len(forced)
    # step 3: contiguous parts of chunks, each with only its own counts
    with dask_client(client, scheduler_address, n_workers, threads_per_worker, processes) as cl:
        if n_parts is None:
            n_w = n_workers
            if cl != "serial" and (client is not None or scheduler_address is not None):
                n_w = max(1, len(cl.scheduler_info().get("workers", {})))
            n_parts = min(n_chunks, 4 * max(1, n_w))
        n_parts = max(1, min(int(n_parts), n_chunks))
        cuts = np.round(np.linspace(0, n_chunks, n_parts + 1)).astype(np.int64)
        parts = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            lo, hi = bounds[a], bounds[b]
            parts.append((s0[lo:hi].copy(), s1[lo:hi].copy(), bounds[a:b + 1] - lo, int(lo)))
        d_holder = {}

        def between(r, prev):
            d_holder["d"] = float(max(prev)) if prev else 0.0
            return {"k": max(k_left, 0), "eps": float(epsilon), "d": d_holder["d"]}

        if k_left > 0:
            _, res = map_parts(cl, parts, [_vocab_part_max_gain, _vocab_part_threshold], between)
        else:
            res = []
    # step 4: merge by (level, position) and trim
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
    vc.distributed_info_ = {"n_chunks": n_chunks, "n_parts": len(parts), "forced": len(forced),
                            "d": d_holder.get("d", 0.0) / N, "rounds": 2 if k_left > 0 else 0,
                            "seconds": vc.fit_time_}
    return vc


def _bucket_np(P0, P1, a, b):
    """Vectorised N-weighted negative conditional entropy of buckets [a, b)."""
    a0 = (P0[b] - P0[a]).astype(np.float64)
    a1 = (P1[b] - P1[a]).astype(np.float64)
    t = a0 + a1
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a0 > 0, a0 * np.log(a0 / t), 0.0) + np.where(a1 > 0, a1 * np.log(a1 / t), 0.0)
    return r
