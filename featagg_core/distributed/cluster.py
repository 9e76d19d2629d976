"""Where the twins run: the Dask client and the scheduler the dashboard and the run model
are told about.

``FEATAGG_DASK_SCHEDULER`` (:data:`SCHEDULER_ENV`) names the scheduler the dashboard runs
its fits on: :func:`scheduler_from_env` reads it (None: fit on this machine) and
:func:`describe_scheduler` says in one line where fits run. :func:`dask_client` opens a
client for a block (an existing one, a scheduler address, or a local cluster) and
:func:`map_parts` runs rounds of a function over scattered parts (the first vocabulary
twin's plumbing).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

#: environment variable naming the scheduler the dashboard runs its fits on
SCHEDULER_ENV = "FEATAGG_DASK_SCHEDULER"


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
