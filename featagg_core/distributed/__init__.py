"""Dask-distributed twins of the parts of featagg_core that scale out.

The layout follows stumpy (``stump(T, m)`` / ``stumped(client, T, m)``): each twin takes a
Dask client first (setting up the cluster is the caller's business), the same inputs
and parameters as its single-machine counterpart, scatters its inputs once (or reads
them on the workers), submits the same numba kernels per worker over index ranges, and
merges. ``client`` is ``"serial"`` (the same code path in this process), a
``dask.distributed.Client``, or a scheduler address string (a client is opened for the
call and closed after it).

Twins (results equal the single-machine fit with the same seed)
    :func:`defrag_distributed` - ``Defrag(...).fit(X, Y)``: same ``labels_``, ``tree_``.
    :func:`ktxmlc_distributed` - ``KTXMLC(...).fit(X, Y)``: same trees, weights and
    predictions.
    :func:`vocabulary_distributed` - Bateni et al.'s distributed thresholding
    compression, values counted on the workers (:func:`distributed_threshold_compress`
    is the earlier name and signature, kept as a thin wrapper).

Data that does not fit one machine
    :func:`load_xc_shards` reads a directory of XC / svmlight shard files on the workers
    and returns a :class:`ShardedMultiLabel` that the twins accept in place of ``X``.

Why the results are equal: every sum that crosses a row partition (``XᵀY``, ``YᵀX``) is
computed exactly and rounded once (:mod:`featagg_core.utils.products`), and every node of a
tree is split by one task with the single machine's kernel, seed and member order.
Progress callbacks are the single-machine ones (``Defrag``: ``(level, n_levels)``;
``KTXMLC``, vocabulary: ``(fraction, message)``); one raising
:class:`featagg_core.utils.cancel.Cancelled` stops submitting, cancels the outstanding
futures and re-raises. A task lost with its worker is re-run; input scattered from the
driver that is lost with its worker gives :class:`ClusterError` (no model).

For the dashboard and the run model (``FEATAGG_DASK_SCHEDULER``)
    ``scheduler = scheduler_from_env()`` (None: fit here), ``describe_scheduler(scheduler)``
    for the sidebar line, and ``fit_defrag(X, Y, scheduler=scheduler, progress=...,
    **defrag_params)`` / ``fit_ktxmlc(X, Y, scheduler=scheduler, progress=...,
    **ktxmlc_params)``, which run the single-machine fit when ``scheduler`` is None.

Shared plumbing kept from the first vocabulary twin: :func:`dask_client` and
:func:`map_parts`.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

from featagg_core.distributed.blocks import ShardedMultiLabel, load_xc_shards
from featagg_core.distributed.defrag import defrag_distributed
from featagg_core.distributed.executor import ClusterError
from featagg_core.distributed.ktxmlc import ktxmlc_distributed
from featagg_core.distributed.vocab import vocabulary_distributed

__all__ = ["defrag_distributed", "ktxmlc_distributed", "vocabulary_distributed",
           "distributed_threshold_compress", "load_xc_shards", "ShardedMultiLabel",
           "ClusterError", "scheduler_from_env", "describe_scheduler", "fit_defrag",
           "fit_ktxmlc", "dask_client", "map_parts", "SCHEDULER_ENV"]

#: environment variable naming the scheduler the dashboard runs its fits on
SCHEDULER_ENV = "FEATAGG_DASK_SCHEDULER"


# ----------------------------------------------------------------------------------------
# the app's entry points
# ----------------------------------------------------------------------------------------
def scheduler_from_env(environ=None) -> Optional[str]:
    """The scheduler address (or ``"serial"``) in ``FEATAGG_DASK_SCHEDULER``.

    Parameters
    ----------
    environ : mapping, optional
        The environment to read (default ``os.environ``).

    Returns
    -------
    str or None
        The address, or None when the variable is unset or blank (fits then run on this
        machine).
    """
    env = os.environ if environ is None else environ
    value = str(env.get(SCHEDULER_ENV, "") or "").strip()
    return value or None


def describe_scheduler(scheduler, timeout: float = 3.0) -> Dict[str, Any]:
    """What the sidebar says about where fits run.

    Never raises; an unreachable scheduler gives ``ok=False`` and a message saying so.

    Parameters
    ----------
    scheduler : None, "serial", str or dask.distributed.Client
        None (fits run here), ``"serial"``, a scheduler address or a client.
    timeout : float, default=3.0
        Seconds to wait for a scheduler address to answer.

    Returns
    -------
    dict
        ``{"ok", "address", "workers", "threads", "message"}``.
    """
    if scheduler is None:
        return {"ok": True, "address": None, "workers": 0, "threads": 0,
                "message": "Fits run on this server."}
    if isinstance(scheduler, str) and scheduler.strip().lower() == "serial":
        return {"ok": True, "address": "serial", "workers": 1, "threads": 1,
                "message": "Fits run through the Dask code path in this process (serial)."}
    try:
        from distributed import Client

        if isinstance(scheduler, str):
            with Client(scheduler, timeout=f"{timeout}s", set_as_default=False) as c:
                info = c.scheduler_info(n_workers=-1)
        else:
            info = scheduler.scheduler_info(n_workers=-1)
    except Exception as exc:  # noqa: BLE001 - anything here means "not usable"
        return {"ok": False, "address": str(scheduler), "workers": 0, "threads": 0,
                "message": f"The Dask scheduler at {scheduler} cannot be reached ({exc})."}
    workers = info.get("workers", {})
    threads = sum(int(w.get("nthreads", 1)) for w in workers.values())
    address = info.get("address", str(scheduler))
    return {"ok": bool(workers), "address": address, "workers": len(workers),
            "threads": threads,
            "message": (f"Fits run on the Dask cluster at {address} ({len(workers)} workers, "
                        f"{threads} threads)." if workers else
                        f"The Dask cluster at {address} has no workers yet.")}


def fit_defrag(X, Y=None, *, scheduler=None, progress=None, **params):
    """A fitted Defrag, here or on a Dask scheduler.

    ``Defrag(**params).fit(X, Y, progress)`` when ``scheduler`` is None, else
    :func:`defrag_distributed` on it (same result).

    Parameters
    ----------
    X : sparse matrix of shape (n, d)
        The features.
    Y : sparse matrix of shape (n, L), optional
        The labels (needed by ``representation="XY"``).
    scheduler : None, "serial", str or dask.distributed.Client, optional
        Where to fit (None: in this process, without Dask).
    progress : callable, optional
        ``progress(fraction, message)``; may raise ``Cancelled``.
    **params
        Defrag's parameters.

    Returns
    -------
    Defrag
        The fitted model.
    """
    if scheduler is None:
        from featagg_core.agglomeration.defrag import Defrag

        return Defrag(**params).fit(X, Y, progress=progress)
    return defrag_distributed(scheduler, X, Y, progress=progress, **params)


def fit_ktxmlc(X, Y, *, scheduler=None, progress=None, **params):
    """A fitted KTXMLC, here or on a Dask scheduler.

    ``KTXMLC(**params).fit(X, Y, progress)`` when ``scheduler`` is None, else
    :func:`ktxmlc_distributed` on it (same predictions).

    Parameters
    ----------
    X : sparse matrix of shape (n, d)
        The features.
    Y : sparse matrix of shape (n, L)
        The 0/1 labels.
    scheduler : None, "serial", str or dask.distributed.Client, optional
        Where to fit (None: in this process, without Dask).
    progress : callable, optional
        ``progress(fraction, message)``; may raise ``Cancelled``.
    **params
        KTXMLC's parameters.

    Returns
    -------
    KTXMLC
        The fitted model.
    """
    if scheduler is None:
        from featagg_core.xmlc.ktxmlc import KTXMLC

        return KTXMLC(**params).fit(X, Y, progress=progress)
    return ktxmlc_distributed(scheduler, X, Y, progress=progress, **params)


# ----------------------------------------------------------------------------------------
# shared plumbing (kept from the first vocabulary twin)
# ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def dask_client(client=None, scheduler_address: Optional[str] = None, n_workers: int = 2,
                threads_per_worker: int = 1, processes: bool = False):
    """Yield a Dask client (or the string ``"serial"``).

    ``client``: an existing ``distributed.Client`` (used as is, not closed) or
    ``"serial"``. Else ``scheduler_address`` (``"tcp://host:8786"``) connects to a running
    cluster, and with neither a ``LocalCluster(n_workers, threads_per_worker, processes)``
    is started for the duration of the block and closed after it.

    Parameters
    ----------
    client : dask.distributed.Client or "serial", optional
        Used as is.
    scheduler_address : str, optional
        A running scheduler to connect to (the client is closed after the block).
    n_workers : int, default=2
        Workers of the local cluster.
    threads_per_worker : int, default=1
        Threads of each local worker.
    processes : bool, default=False
        Local workers as processes rather than threads.

    Yields
    ------
    dask.distributed.Client or str
        The client, or ``"serial"``.

    Raises
    ------
    ValueError
        When ``n_workers`` is not an integer >= 1.
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
        raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
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
    """Scatter ``parts`` once, then run each round's function on every part.

    For each function ``f`` in ``rounds`` compute ``f(part, **kw)`` on every part, where
    ``kw`` is what ``between(round_index, previous results)`` returned (``{}`` for the
    first round).

    Parameters
    ----------
    client : dask.distributed.Client or "serial"
        Where to run (``"serial"``: in this process, in order).
    parts : sequence
        The data parts.
    rounds : sequence of callable
        One function per round, ``f(part, **kw)``.
    between : callable, optional
        ``between(round_index, previous_results) -> dict`` of keyword arguments for the
        next round.

    Returns
    -------
    list of list
        The results of every round, one per part.
    """
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
