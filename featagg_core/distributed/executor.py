"""One small executor in front of a Dask client, or of this process (``client="serial"``).

The twins only use ``scatter``, ``submit``, ``gather`` and ``as_completed``; with
``"serial"`` every call runs at once in this process (the same functions, the same
arguments), so a serial run is the distributed algorithm without the cluster.

Contract kept here for every twin:

* **cancel**: the executor is a context manager; any exception leaving the block (a
  progress callback raising :class:`featagg_core.utils.cancel.Cancelled`, a bad input, a
  failed task) cancels every future it created (pending tasks stop, held results are
  freed), then propagates;
* **lost work**: a task whose worker dies is re-run by the scheduler on another worker
  when its inputs still exist (results equal: every task is deterministic). When they do
  not (data scattered from this process, or intermediate results whose own inputs were
  already freed), the wait raises :class:`LostWork`, and :func:`with_retries` runs the
  whole fit again from its inputs (in-memory input is scattered again; shard blocks are
  re-read from their files), at most ``retries`` times; after that, or when shard blocks
  themselves cannot be re-read, :class:`ClusterError` (no model is produced);
* **accounting**: bytes sent to the cluster (scattered data and task arguments, by
  ``dask.sizeof``) and bytes gathered back, for the benchmark.
"""
from __future__ import annotations

import time
import weakref
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

__all__ = ["Executor", "ClusterError", "LostWork", "resolve_client", "with_retries"]


class ClusterError(RuntimeError):
    """The cluster lost work it cannot redo (a worker holding input data died, or a task
    killed too many workers); the fit stopped and produced no model."""


class LostWork(ClusterError):
    """A worker died with results the scheduler cannot recompute; the fit can be run again
    from its inputs (see :func:`with_retries`)."""


def with_retries(attempt: Callable[[int], Any], retries: int = 2):
    """``attempt(i)`` for i = 0, 1, ... until one does not raise :class:`LostWork`.

    Each attempt opens its own executor, so the failed one's futures are cancelled first.

    Parameters
    ----------
    attempt : callable
        ``attempt(i)``, the i-th try.
    retries : int, default=2
        Tries after the first.

    Returns
    -------
    object
        What the first successful attempt returns.

    Raises
    ------
    ClusterError
        When every attempt lost its work (workers died).
    """
    for i in range(retries + 1):
        try:
            return attempt(i)
        except LostWork as exc:
            if i == retries:
                raise ClusterError(f"workers died during {retries + 1} attempts of the fit "
                                   f"(last: {exc}); no model was produced") from None


class Done:
    """A finished 'future' of the serial executor."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value

    def result(self):
        """The value (as a Dask future's ``result()``).

        Returns
        -------
        object
            The value.
        """
        return self.value


def _resolve(obj):
    if isinstance(obj, Done):
        return obj.value
    if isinstance(obj, list):
        return [_resolve(o) for o in obj]
    if isinstance(obj, tuple):
        items = [_resolve(o) for o in obj]
        # a NamedTuple (KTXMLC's TreeSpec, SolverSpec) keeps its type, as Dask keeps it
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def _in_worker(fn, *args, **kwargs):
    """Run ``fn`` in a Dask worker with numba limited to the worker's own threads (a
    worker with ``threads_per_worker=1`` must not spread its kernels over every core).

    With the Dask config key ``featagg.task-events`` true (the benchmark sets it), each
    task also logs an event ``"featagg"`` with its name, thread CPU seconds and wall
    times (``client.get_events("featagg")``): per-worker CPU per phase, which a shared
    machine's load does not inflate."""
    worker = None
    try:
        import numba
        from distributed import get_worker

        worker = get_worker()
        n = max(1, int(worker.state.nthreads))
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    except (ImportError, ValueError):  # not in a worker: leave numba alone
        pass
    import dask

    if worker is None or not dask.config.get("featagg.task-events", False):
        return fn(*args, **kwargs)
    c0, w0 = time.thread_time(), time.time()
    out = fn(*args, **kwargs)
    worker.log_event("featagg", {"fn": getattr(fn, "__name__", "?"), "worker": worker.address,
                                 "cpu": time.thread_time() - c0, "start": w0,
                                 "stop": time.time()})
    return out


def resolve_client(client):
    """The client to use and whether this code owns it.

    Parameters
    ----------
    client : "serial", dask.distributed.Client or str
        ``"serial"``, a client, or a scheduler address.

    Returns
    -------
    client : dask.distributed.Client or None
        None for serial.
    owned : bool
        True when a client was opened here (for an address) and must be closed.

    Raises
    ------
    ClusterError
        When the scheduler at an address cannot be reached.
    ValueError
        For anything else.
    """
    if isinstance(client, str):
        if client.strip().lower() == "serial":
            return None, False
        from distributed import Client

        address = client.strip()
        try:
            return Client(address, timeout="10s", set_as_default=False), True
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"client: cannot reach the Dask scheduler at {address!r} "
                               f"({exc}); start it or check the address") from None
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask is in requirements.txt
        Client = ()
    if Client and isinstance(client, Client):
        return client, False
    raise ValueError("client must be 'serial', a dask.distributed.Client or a scheduler "
                     f"address such as 'tcp://host:8786', got {client!r}")


class Executor:
    """See the module docstring. ``Executor(client)`` with ``client`` as the twins take it."""

    def __init__(self, client):
        self.client, self._owned = resolve_client(client)
        self._live: "weakref.WeakSet" = weakref.WeakSet()
        self.bytes_to_cluster = 0
        self.bytes_from_cluster = 0
        self.n_tasks = 0
        self._cancelling = False

    # ------------------------------------------------------------------ basics
    @property
    def serial(self) -> bool:
        return self.client is None

    def workers(self) -> List[str]:
        """Worker addresses, sorted (``["serial"]`` in serial mode).

        Returns
        -------
        list of str
            The addresses.
        """
        if self.serial:
            return ["serial"]
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return sorted(info)

    def total_threads(self) -> int:
        """The threads of all workers (1 in serial mode).

        Returns
        -------
        int
            At least 1.
        """
        if self.serial:
            return 1
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None:
                self.cancel()
        finally:
            if self._owned:
                self.client.close()
        return False

    def cancel(self) -> None:
        """Cancel every future this executor created: pending tasks stop, and finished
        results (blocks, partial products) are freed although the traceback of the
        exception being raised still references their futures."""
        if self.serial:
            return
        live = list(self._live)
        if live:
            self._cancelling = True
            try:
                self.client.cancel(live, force=True)
            except Exception:  # noqa: BLE001 - best effort while unwinding another error
                pass

    # ------------------------------------------------------------------ work
    def scatter(self, values: Sequence[Any]) -> list:
        """Send values to the workers once (spread over them).

        Parameters
        ----------
        values : sequence
            The values.

        Returns
        -------
        list
            Their futures.
        """
        values = list(values)
        if self.serial:
            return [Done(v) for v in values]
        from dask.sizeof import sizeof

        self.bytes_to_cluster += int(sum(sizeof(v) for v in values))
        futures = self.client.scatter(values, hash=False)
        for f in futures:
            self._live.add(f)
        return futures

    def broadcast(self, value: Any):
        """Send one (small) value to every worker.

        Parameters
        ----------
        value : object
            The value.

        Returns
        -------
        future
            Its future.
        """
        if self.serial:
            return Done(value)
        from dask.sizeof import sizeof

        self.bytes_to_cluster += int(sizeof(value)) * max(1, len(self.workers()))
        fut = self.client.scatter(value, broadcast=True, hash=False)
        self._live.add(fut)
        return fut

    def submit(self, fn: Callable, *args, workers: Optional[Sequence[str]] = None,
               priority: int = 0):
        """``fn(*args)`` as a task.

        Futures among ``args`` (also inside lists/tuples) are replaced by their values.

        Parameters
        ----------
        fn : callable
            The task.
        *args
            Its arguments.
        workers : sequence of str, optional
            A preference (another worker may run it if the preferred one is gone).
        priority : int, default=0
            The scheduler's priority.

        Returns
        -------
        future
            The task's future.
        """
        self.n_tasks += 1
        if self.serial:
            return Done(fn(*_resolve(args)))
        from dask.sizeof import sizeof
        from distributed import Future

        self.bytes_to_cluster += int(sum(sizeof(a) for a in args if not isinstance(a, Future)))
        kw = {}
        if workers:
            kw = {"workers": list(workers), "allow_other_workers": True}
        fut = self.client.submit(_in_worker, fn, *args, pure=False, priority=priority, **kw)
        self._live.add(fut)
        return fut

    def gather(self, futures: Sequence[Any], poll: Optional[Callable[[], None]] = None,
               every: float = 0.5) -> list:
        """Results of ``futures``.

        While waiting, ``poll()`` is called every ``every`` seconds (a progress callback that
        may raise ``Cancelled``: a long level is then abandoned within about a second, not
        when it ends).

        Parameters
        ----------
        futures : sequence
            The futures.
        poll : callable, optional
            Called while waiting.
        every : float, default=0.5
            Seconds between polls.

        Returns
        -------
        list
            The results, in the order of ``futures``.
        """
        futures = list(futures)
        if self.serial:
            return [f.value for f in futures]
        if poll is not None:
            from distributed import wait

            while True:
                try:
                    self._translate(lambda: wait(futures, timeout=every))
                    break
                except TimeoutError:
                    poll()
        out = self._translate(lambda: self.client.gather(futures))
        self._count_back(out)
        return out

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Tuple[Any, Any]]:
        """``(future, result)`` pairs in completion order (serial: submission order).

        Parameters
        ----------
        futures : iterable
            The futures.

        Yields
        ------
        (future, object)
            Each future with its result.
        """
        futures = list(futures)
        if self.serial:
            for f in futures:
                yield f, f.value
            return
        from distributed import as_completed

        it = as_completed(futures, with_results=False)
        for f in it:
            res = self._translate(f.result)
            self._count_back([res])
            yield f, res

    def completion_queue(self) -> "Completions":
        """A queue of futures that gives ``(future, result)`` pairs as they finish.

        Futures are added to it and the pairs come out as they finish (serial: in the order
        added).

        Returns
        -------
        Completions
            The queue.
        """
        return Completions(self)

    def release(self, futures: Iterable[Any]) -> None:
        """Drop futures early (the scheduler frees their data once nothing needs it).

        Parameters
        ----------
        futures : iterable
            The futures.
        """
        if self.serial:
            return
        for f in futures:
            if f is not None and hasattr(f, "release"):
                self._live.discard(f)
                f.release()

    # ------------------------------------------------------------------ helpers
    def _count_back(self, values) -> None:
        from dask.sizeof import sizeof

        self.bytes_from_cluster += int(sum(sizeof(v) for v in values))

    def _translate(self, get: Callable[[], Any]):
        from concurrent.futures import CancelledError

        from distributed.scheduler import KilledWorker

        try:
            return get()
        except KilledWorker as exc:
            raise ClusterError(f"a task died with its worker on every retry ({exc}); the fit "
                               "stopped and produced no model") from None
        except CancelledError as exc:
            if self._cancelling:
                raise
            raise LostWork(f"a Dask worker died with results that cannot be recomputed "
                           f"({' '.join(str(exc).split())})") from None


class Completions:
    """See :meth:`Executor.completion_queue`."""

    def __init__(self, ex: Executor):
        self.ex = ex
        self._serial: list = []
        self._ac = None
        self._n = 0
        self._last_poll = time.monotonic()
        if not ex.serial:
            from distributed import as_completed

            self._ac = as_completed([], with_results=False)

    def add(self, future) -> None:
        """Add a future to the queue.

        Parameters
        ----------
        future : future
            A future of this executor.
        """
        self._n += 1
        if self._ac is None:
            self._serial.append(future)
        else:
            self._ac.add(future)

    def __len__(self) -> int:
        return self._n

    def next(self, poll: Optional[Callable[[], None]] = None, every: float = 0.5):
        """The next finished ``(future, result)``; ``StopIteration`` when none is left.

        Parameters
        ----------
        poll : callable, optional
            Called every ``every`` seconds while waiting (see ``gather``).
        every : float, default=0.5
            Seconds between polls.

        Returns
        -------
        (future, object)
            The future and its result.

        Raises
        ------
        StopIteration
            When no future is left.
        """
        if self._n == 0:
            raise StopIteration
        self._n -= 1
        if self._ac is None:
            f = self._serial.pop(0)
            return f, f.value
        while poll is not None and not self._ac.has_ready():
            time.sleep(min(every, 0.05))
            if time.monotonic() - self._last_poll >= every:
                self._last_poll = time.monotonic()
                poll()
        f = next(self._ac)
        res = self.ex._translate(f.result)
        self.ex._count_back([res])
        return f, res
