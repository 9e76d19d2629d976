"""The dashboard's one bounded job runner (no streamlit: the server's runner is
:func:`featagg_app.server.context.get_runner`, the panel a page draws is
:func:`featagg_app.runs_ui.job_panel`).

Signatures::

    JobRunner(max_workers=None, max_queued_per_session=4, threads_per_job=None,
              gate=None, shared_bytes=None)
        .submit(session_id, label, fn, estimate_s=None, kind="", *, needs=None,
                share_key=None, adapt=None) -> Job
        .cancel_session(session_id) -> int         # jobs cancelled
        .jobs(session_id=None) -> list[Job]        # queued and running, dispatch order
        .shared                                    # SharedResults: finished shared fits
        .max_workers, .threads_per_job, .gate, .shutdown(cancel=True)
    Job: job_id, session_id, label, kind, status ("queued"|"running"|"done"|"cancelled"
         |"failed"), progress (0..1), message, queue_position (1 = next, None unless
         queued), waiting_for (kernel groups still compiling), shared, elapsed_s,
         estimate_s, result, error, done, cancel(), wait(timeout)
    JobQueueFull (ValueError): a session already has max_queued_per_session jobs
    default_workers() -> int               # FEATAGG_JOB_WORKERS, else the cores
    friendly_error(exc) -> str             # the line a failed job shows

``fn(progress, cancel)`` does the work in a worker thread: ``progress(fraction, message)``
records how far it is and raises :class:`featagg_core.utils.cancel.Cancelled` once the job is
cancelled; ``cancel`` is a ``threading.Event`` (hand it to
``experiment.run_pipeline(..., cancel=cancel)``). ``fn`` must not call ``st.*`` (no
Streamlit context in worker threads). Its return value becomes ``job.result``.

Scheduling: a fixed pool of ``max_workers`` threads (default: the machine's cores, or
``FEATAGG_JOB_WORKERS``); the next job is taken round robin over the sessions that have
queued jobs, FIFO within a session, so one person's ten fits never starve a class of
twenty, and thirty people pressing Train at once queue (each sees its place in line)
instead of thirty fits sharing two cores. Each worker thread runs numba
(``numba.set_num_threads``, a per-thread setting) and OpenMP with ``threads_per_job =
max(1, cores // max_workers)`` threads, so running jobs never use more threads than the
machine has cores; the server's runner (``context.get_runner``) also caps the process-wide BLAS pool at that number.
A job submitted with ``needs`` (kernel groups, :mod:`featagg_app.server.warmup`) is passed over
while the ``gate`` says those kernels are still compiling in the background: the next
session's job starts instead, and the panel says what it waits for.

Sharing: jobs submitted with the same ``share_key`` (an identical fit on identical data:
``featagg_app.runs_ui.submit_run`` uses the run's ``spec_key`` plus the dataset's name and
feature/label names) are one computation. A second session's job subscribes to the queued
or running one (it occupies no worker; it shows the same progress), and a job submitted
after it finished gets the result from :attr:`JobRunner.shared` (a byte-bounded LRU,
``FEATAGG_SHARED_FITS_MB``, default 256) at once; ``adapt`` makes the session's own copy
(its own run id and dataset name; the fitted pipeline is shared read-only). Cancelling
one subscriber leaves the computation running for the others; it stops when the last one
cancels.

Memory: the runner holds a computation only while it is queued or running; a cancelled
or failed job drops its function and result at once (whatever they reference is freed); a
finished job's result lives as long as the page keeps the :class:`Job` — and, for shared
fits, while the byte-bounded cache keeps it.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict, deque
from typing import Any, Callable, Dict, List, Optional

from featagg_app.server.memory import SharedResults, shared_results_budget

__all__ = ["Job", "JobRunner", "JobQueueFull", "default_workers", "friendly_error"]

_log = logging.getLogger("featagg_app.server.jobs")

STATUSES = ("queued", "running", "done", "cancelled", "failed")
_FINAL = ("done", "cancelled", "failed")


class JobQueueFull(ValueError):
    """A session tried to queue more jobs than its share."""


def friendly_error(exc: BaseException) -> str:
    """One line a browser user can read (the traceback goes to the server log)."""
    from featagg_core.utils.cancel import Cancelled
    if isinstance(exc, Cancelled):
        return "Cancelled."
    if isinstance(exc, MemoryError):
        return ("The server ran out of memory for this job; try a smaller setting "
                "(fewer clusters or features, a sample of the data).")
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > 400:
        text = text[:397] + "…"
    if isinstance(exc, ValueError):          # DatasetError and our own checks read well
        return text
    return f"Unexpected error ({type(exc).__name__}): {text}"


class Job:
    """One session's handle on a unit of work of a :class:`JobRunner` (attributes in the
    module doc). Several handles share one computation when they were submitted with the
    same ``share_key`` (``shared`` is True for all but the first).

    Only the runner changes a job's state; pages read it (attribute reads are atomic).
    """

    def __init__(self, runner: "JobRunner", session_id: str, label: str,
                 estimate_s: Optional[float], kind: str):
        self.job_id = uuid.uuid4().hex[:12]
        self.session_id = str(session_id)
        self.label = str(label)
        self.kind = str(kind)
        self.estimate_s = None if estimate_s is None else float(estimate_s)
        self.status = "queued"
        self.progress = 0.0
        self.message = "waiting for a free worker"
        self.result: Any = None
        self.error: Optional[str] = None
        self.shared = False          # the result is (or will be) another session's fit
        self.started: Optional[float] = None
        self.finished: Optional[float] = None
        self.cancel_event = threading.Event()
        self._task: Optional[_Task] = None
        self._adapt: Optional[Callable] = None
        self._runner = runner
        self._finished_event = threading.Event()

    # -- reading
    @property
    def done(self) -> bool:
        """True once the job is done, cancelled or failed."""
        return self.status in _FINAL

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    @property
    def _fn(self) -> Optional[Callable]:
        task = self._task
        return None if task is None else task.fn

    @property
    def elapsed_s(self) -> float:
        """Seconds running so far (0 while queued; the run time once finished)."""
        if self.started is None:
            return 0.0
        end = self.finished if self.finished is not None else time.time()
        return max(0.0, end - self.started)

    @property
    def queue_position(self) -> Optional[int]:
        """1 for the next job to start, 2 for the one after, …; None unless queued."""
        if self.status != "queued":
            return None
        return self._runner._position(self)

    @property
    def waiting_for(self) -> List[str]:
        """Titles of the kernel groups this queued job waits for (compiling in the
        background on a fresh server), else []."""
        task, gate = self._task, self._runner.gate
        if self.status != "queued" or task is None or gate is None or not task.needs:
            return []
        return [g.title for g in gate.pending(task.needs)]

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the job is finished (True) or ``timeout`` passes (False)."""
        return self._finished_event.wait(timeout)

    # -- acting
    def cancel(self) -> None:
        """Ask the job to stop: a queued job is removed at once; a running one stops at
        its next progress call (its status turns "cancelled" when its thread returns). A
        computation other sessions share goes on for them; this handle is cancelled now."""
        if self.done:
            return
        self.cancel_event.set()
        self._runner._detach(self)

    def __repr__(self) -> str:
        return (f"Job({self.label!r}, status={self.status!r}, "
                f"progress={self.progress:.2f}, session={self.session_id[:8]!r})")


class _Task:
    """One computation: queued in its owner's round-robin queue, run by one worker, its
    progress and result handed to every :class:`Job` subscribed to it."""

    def __init__(self, fn: Callable, owner: str, share_key: Optional[str], needs: tuple):
        self.fn: Optional[Callable] = fn
        self.owner = owner
        self.share_key = share_key
        self.needs = tuple(needs or ())
        self.cancel_event = threading.Event()
        self.jobs: List[Job] = []
        self.status = "queued"
        self.started: Optional[float] = None


def default_workers() -> int:
    """``FEATAGG_JOB_WORKERS`` if set to a positive integer, else the number of cores."""
    cores = os.cpu_count() or 1
    raw = os.environ.get("FEATAGG_JOB_WORKERS", "").strip()
    if raw:
        try:
            n = int(raw)
            if n >= 1:
                return n
        except ValueError:
            pass
        _log.warning("FEATAGG_JOB_WORKERS=%r is not a positive integer; using %d workers",
                     raw, cores)
    return max(1, cores)


def _import_openmp_runtime() -> None:
    """Import scikit-learn's OpenMP helpers (which loads its OpenMP runtime, so the
    workers' ``threadpool_limits`` reaches it) in the thread that creates the runner,
    before any worker starts.

    A worker that imported ``sklearn.utils._openmp_helpers`` itself raced the first page's
    ``import sklearn`` in the script thread: two threads taking the package's and the
    submodule's import locks in opposite orders, Python breaks the deadlock by handing one
    of them the partly initialised module, and the first page failed with "cannot import
    name '_openmp_parallelism_enabled'" (about one run in two of
    tests/test_app_shell.py::test_home_loads_with_bibtex_in_use on its own)."""
    try:
        import sklearn.utils._openmp_helpers  # noqa: F401
    except Exception:  # noqa: BLE001 - without scikit-learn the limits skip OpenMP
        _log.debug("could not import scikit-learn's OpenMP helpers", exc_info=True)


class JobRunner:
    """A bounded, fair pool of worker threads shared by every session of the server.

    Parameters
    ----------
    max_workers : int or None
        Jobs that run at the same time (None: :func:`default_workers`).
    max_queued_per_session : int
        Unfinished (queued or running) jobs one session may have; one more raises
        :class:`JobQueueFull`.
    threads_per_job : int or None
        numba/OpenMP threads each job may use (None: ``max(1, cores // max_workers)``).
    gate : object or None
        ``gate.ready(needs) -> bool`` and ``gate.pending(needs)``: a queued job whose
        ``needs`` (kernel group names) are not ready is passed over (the next session's
        job starts instead) until they are — :class:`featagg_app.server.warmup.KernelWarmup`.
    shared_bytes : int or None
        Budget of :attr:`shared` (None: :func:`shared_results_budget`).
    """

    def __init__(self, max_workers: Optional[int] = None, max_queued_per_session: int = 4,
                 threads_per_job: Optional[int] = None, gate=None,
                 shared_bytes: Optional[int] = None):
        workers = default_workers() if max_workers is None else int(max_workers)
        if workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers!r}")
        if int(max_queued_per_session) < 1:
            raise ValueError("max_queued_per_session must be >= 1, got "
                             f"{max_queued_per_session!r}")
        cores = os.cpu_count() or 1
        self.max_workers = workers
        self.max_queued_per_session = int(max_queued_per_session)
        self.threads_per_job = (max(1, cores // workers) if threads_per_job is None
                                else max(1, int(threads_per_job)))
        self.gate = gate
        self.shared = SharedResults(shared_results_budget() if shared_bytes is None
                                    else shared_bytes)
        self._lock = threading.Condition()
        self._queues: "OrderedDict[str, deque]" = OrderedDict()   # session -> queued tasks
        self._running: Dict[int, _Task] = {}
        self._live: Dict[str, _Task] = {}                           # share key -> task
        self._closed = False
        self._threads: List[threading.Thread] = []
        self._names = itertools.count(1)
        _import_openmp_runtime()
        for _ in range(workers):
            t = threading.Thread(target=self._worker, name=f"featagg-job-{next(self._names)}",
                                 daemon=True)
            t.start()
            self._threads.append(t)

    # -- submitting
    def submit(self, session_id: str, label: str, fn: Callable, estimate_s=None,
               kind: str = "", *, needs: Optional[tuple] = None,
               share_key: Optional[str] = None, adapt: Optional[Callable] = None) -> Job:
        """Queue ``fn(progress, cancel)`` for ``session_id``; returns its :class:`Job`.

        ``needs``: kernel groups the job needs (see ``gate``). ``share_key``: jobs with the
        same key compute the same thing (an identical fit: the spec key of the run plus
        what the session sees of the data), so a second one subscribes to the running or
        queued computation, and one submitted after it finished gets its result from
        :attr:`shared` at once; ``adapt(result)`` turns the shared result into this
        session's own (e.g. a Run with its own id and dataset name) — the computation's
        first job gets the result itself.
        """
        if not callable(fn):
            raise ValueError("fn must be a callable fn(progress, cancel)")
        sid = str(session_id)
        hit = None
        with self._lock:
            if self._closed:
                raise RuntimeError("the job runner is shut down")
            if share_key is not None:
                hit = self.shared.get(share_key)
            if hit is None:
                mine = self._unfinished(sid)
                if mine >= self.max_queued_per_session:
                    raise JobQueueFull(
                        f"You already have {mine} jobs waiting or running (at most "
                        f"{self.max_queued_per_session} per session); wait for one to "
                        "finish or cancel one.")
            job = Job(self, sid, label, estimate_s, kind)
            job._adapt = adapt
            if hit is None:
                task = self._live.get(share_key) if share_key is not None else None
                if task is not None and not task.cancel_event.is_set():
                    job.shared = True
                    job._task = task
                    task.jobs.append(job)
                    if task.status == "running":
                        lead = task.jobs[0]
                        job.status, job.started = "running", task.started
                        job.progress, job.message = lead.progress, lead.message
                else:
                    task = _Task(fn, sid, share_key, needs or ())
                    job._task = task
                    task.jobs.append(job)
                    if share_key is not None:
                        self._live[share_key] = task
                    self._queues.setdefault(sid, deque()).append(task)
                    self._lock.notify()
        if hit is not None:
            job.shared = True
            job.started = time.time()
            self._deliver(job, "done", hit)
        return job

    def _unfinished(self, sid: str) -> int:
        tasks = list(self._running.values()) + [t for q in self._queues.values() for t in q]
        return sum(1 for t in tasks for j in t.jobs if j.session_id == sid)

    def jobs(self, session_id: Optional[str] = None) -> List[Job]:
        """Running jobs, then queued ones in the order they will start."""
        with self._lock:
            tasks = list(self._running.values()) + self._dispatch_order()
            out = [j for t in tasks for j in t.jobs]
        if session_id is not None:
            out = [j for j in out if j.session_id == str(session_id)]
        return out

    def cancel_session(self, session_id: str) -> int:
        """Cancel every queued and running job of a session (e.g. when it ends); a
        computation other sessions share goes on for them."""
        todo = self.jobs(session_id)
        for job in todo:
            job.cancel()
        return len(todo)

    def shutdown(self, cancel: bool = True, timeout: Optional[float] = 10.0) -> None:
        """Stop accepting jobs, optionally cancel the unfinished ones, join the workers."""
        with self._lock:
            self._closed = True
            pending = [j for t in list(self._running.values()) + self._dispatch_order()
                       for j in t.jobs]
            self._lock.notify_all()
        if cancel:
            for job in pending:
                job.cancel()
        deadline = None if timeout is None else time.time() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.time()))

    # -- scheduling (all under self._lock)
    def _dispatch_order(self) -> List[_Task]:
        """Queued tasks in the order the round robin will start them (kernels allowing)."""
        queues = [list(q) for q in self._queues.values() if q]
        out = []
        depth = 0
        while True:
            layer = [q[depth] for q in queues if len(q) > depth]
            if not layer:
                return out
            out.extend(layer)
            depth += 1

    def _position(self, job: Job) -> Optional[int]:
        with self._lock:
            task = job._task
            for i, t in enumerate(self._dispatch_order()):
                if t is task:
                    return i + 1
        return None

    def _ready(self, task: _Task) -> bool:
        if self.gate is None or not task.needs:
            return True
        try:
            return bool(self.gate.ready(task.needs))
        except Exception:  # noqa: BLE001 - a broken gate never blocks the queue
            return True

    def _take(self) -> Optional[_Task]:
        """The head of the first session (round robin) whose head task can start."""
        for sid, q in self._queues.items():
            if q and self._ready(q[0]):
                task = q.popleft()
                self._queues.move_to_end(sid)     # this session goes to the back
                if not q:
                    del self._queues[sid]
                return task
        return None

    def _remove_queued(self, task: _Task) -> None:
        for sid, q in list(self._queues.items()):
            if task in q:
                q.remove(task)
                if not q:
                    del self._queues[sid]
                return

    def _detach(self, job: Job) -> None:
        """``job`` is cancelled: unsubscribe it; the computation stops when nobody is left."""
        finish = None
        with self._lock:
            task = job._task
            if task is None or job not in task.jobs:
                return                      # already finished, or being delivered
            others = [j for j in task.jobs if j is not job]
            if others:
                task.jobs.remove(job)
                job._task = None
                if task.owner == job.session_id:
                    task.owner = others[0].session_id
                finish = "cancelled"
            elif task.status == "queued":
                task.jobs.remove(job)
                job._task = None
                task.cancel_event.set()
                task.fn = None
                self._remove_queued(task)
                if task.share_key is not None and self._live.get(task.share_key) is task:
                    del self._live[task.share_key]
                finish = "cancelled before it started"
            else:                            # the last one: stop the computation
                task.cancel_event.set()
                if task.share_key is not None and self._live.get(task.share_key) is task:
                    del self._live[task.share_key]
                job.message = "cancelling…"
        if finish is not None:
            self._deliver(job, "cancelled", message=finish)

    # -- running
    def _worker(self) -> None:
        self._limit_threads()
        while True:
            with self._lock:
                task = None
                while not self._closed:
                    task = self._take()
                    if task is not None:
                        break
                    # tasks waiting for their kernels: look again soon
                    self._lock.wait(0.5 if self._queues else None)
                if task is None:
                    return
                self._mark_running(task)
            try:
                self._limit_threads()
                self._run(task)
            finally:
                with self._lock:
                    self._running.pop(id(task), None)

    def _mark_running(self, task: _Task) -> None:
        # a helper, so no loop variable of the worker's frame keeps a Job (and its
        # result) alive while the worker waits for the next task
        task.status = "running"
        task.started = time.time()
        self._running[id(task)] = task
        for job in task.jobs:
            job.status, job.started, job.message = "running", task.started, "starting"

    def _limit_threads(self) -> None:
        """numba's and OpenMP's thread counts are settings of the calling thread: set them
        in the worker (at start and before every job, since threadpoolctl only reaches the
        OpenMP runtimes loaded so far; scikit-learn's is loaded here first)."""
        n = self.threads_per_job
        try:
            import numba
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        except Exception:  # noqa: BLE001 - numba missing or refusing: run with its default
            _log.debug("could not set numba's thread count", exc_info=True)
        try:
            from threadpoolctl import threadpool_limits
            threadpool_limits(limits=n, user_api="openmp")
        except Exception:  # noqa: BLE001
            _log.debug("could not limit OpenMP threads", exc_info=True)

    def _run(self, task: _Task) -> None:
        from featagg_core.utils.cancel import Cancelled
        fn = task.fn
        task.fn = None
        if fn is None or task.cancel_event.is_set():
            self._finish_task(task, "cancelled", message="cancelled before it started")
            return
        event = task.cancel_event

        def progress(fraction: float = 0.0, message: str = "") -> None:
            if event.is_set():
                raise Cancelled("cancelled")
            try:
                f = float(fraction)
            except (TypeError, ValueError):
                f = 0.0
            for job in list(task.jobs):
                job.progress = min(1.0, max(0.0, f)) if f == f else job.progress
                if message:
                    job.message = str(message)

        try:
            result = fn(progress, event)
        except Cancelled:
            fn = None
            self._finish_task(task, "cancelled", message="cancelled")
            return
        except BaseException as exc:  # noqa: BLE001 - carried to the page as a message
            fn = None
            if event.is_set():
                self._finish_task(task, "cancelled", message="cancelled")
                return
            lead = task.jobs[0] if task.jobs else None
            _log.error("job %r (%s, session %s) failed", getattr(lead, "label", "?"),
                       getattr(lead, "kind", "?"), task.owner[:8], exc_info=exc)
            self._finish_task(task, "failed", error=friendly_error(exc))
            return
        fn = None
        status = getattr(result, "status", None)
        if event.is_set() or status == "cancelled":
            result = None
            self._finish_task(task, "cancelled", message="cancelled")
            return
        self._finish_task(task, "done", result=result)

    def _finish_task(self, task: _Task, status: str, result: Any = None,
                     error: Optional[str] = None, message: Optional[str] = None) -> None:
        with self._lock:
            task.fn = None
            task.status = status
            jobs = list(task.jobs)
            task.jobs.clear()
            if task.share_key is not None:
                if self._live.get(task.share_key) is task:
                    del self._live[task.share_key]
                if status == "done" and getattr(result, "status", "done") == "done" \
                        and not (isinstance(result, list) and any(
                            getattr(r, "status", "done") != "done" for r in result)):
                    self.shared.put(task.share_key, result)
        for job in jobs:
            self._deliver(job, status, result, error, message)

    def _deliver(self, job: Job, status: str, result: Any = None,
                 error: Optional[str] = None, message: Optional[str] = None) -> None:
        if status == "done" and job.shared and job._adapt is not None:
            try:
                result = job._adapt(result)
            except Exception as exc:  # noqa: BLE001
                _log.error("adapting a shared result for session %s failed",
                           job.session_id[:8], exc_info=exc)
                status, result, error = "failed", None, friendly_error(exc)
        with self._lock:
            job._task = None
            job._adapt = None
            job.result = result if status == "done" else None
            job.error = error
            job.finished = time.time()
            if job.started is None and status == "done":
                job.started = job.finished
            if status == "done":
                job.progress = 1.0
                job.message = "done"
            elif status == "failed":
                job.message = error or "failed"
            else:
                job.message = message or "cancelled"
            job.status = status
        job._finished_event.set()
