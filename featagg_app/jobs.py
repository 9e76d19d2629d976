"""The dashboard's one bounded job runner, and the widget pages use while a job runs.

Signatures::

    get_runner() -> JobRunner              # the server's runner (st.cache_resource)
    JobRunner(max_workers=None, max_queued_per_session=4, threads_per_job=None)
        .submit(session_id, label, fn, estimate_s=None, kind="") -> Job
        .cancel_session(session_id) -> int         # jobs cancelled
        .jobs(session_id=None) -> list[Job]        # queued and running, dispatch order
        .max_workers, .threads_per_job, .shutdown(cancel=True)
    Job: job_id, session_id, label, kind, status ("queued"|"running"|"done"|"cancelled"
         |"failed"), progress (0..1), message, queue_position (1 = next, None unless
         queued), elapsed_s, estimate_s, result, error, done, cancel(), wait(timeout)
    JobQueueFull (ValueError): a session already has max_queued_per_session jobs
    job_panel(job, key, run_every=0.5)     # queue position, progress, elapsed, estimate,
                                           # Cancel; st.rerun() when the job finishes
    run_in_page(key, label=None, fn=None, estimate_s=None, kind="", start=False)
        -> the finished job's result once, else None (draws the panel / the outcome)
    forget(key)                            # drop a page's finished/cancelled/failed job

``fn(progress, cancel)`` does the work in a worker thread: ``progress(fraction, message)``
records how far it is and raises :class:`featagg_core._cancel.Cancelled` once the job is
cancelled; ``cancel`` is a ``threading.Event`` (hand it to
``experiment.run_pipeline(..., cancel=cancel)``). ``fn`` must not call ``st.*`` (no
Streamlit context in worker threads). Its return value becomes ``job.result``.

Scheduling: a fixed pool of ``max_workers`` threads (default: the machine's cores, or
``FEATAGG_JOB_WORKERS``); the next job is taken round robin over the sessions that have
queued jobs, FIFO within a session, so one person's ten fits never starve a class of
twenty. Each worker thread runs numba (``numba.set_num_threads``, a per-thread setting)
and OpenMP with ``threads_per_job = max(1, cores // max_workers)`` threads, so running
jobs never use more threads than the machine has cores; :func:`get_runner` also caps the
process-wide BLAS pool at that number.

Memory: the runner holds a job only while it is queued or running; a cancelled or failed
job drops its function and result at once (whatever they reference is freed); a finished
job's result lives as long as the page keeps the :class:`Job`.
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

import streamlit as st

__all__ = ["Job", "JobRunner", "JobQueueFull", "get_runner", "job_panel", "run_in_page",
           "forget", "default_workers", "friendly_error"]

_log = logging.getLogger("featagg_app.jobs")

STATUSES = ("queued", "running", "done", "cancelled", "failed")
_FINAL = ("done", "cancelled", "failed")
_STATE_KEY = "featagg.jobs"          # st.session_state: page key -> Job


class JobQueueFull(ValueError):
    """A session tried to queue more jobs than its share."""


def friendly_error(exc: BaseException) -> str:
    """One line a browser user can read (the traceback goes to the server log)."""
    from featagg_core._cancel import Cancelled
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
    """One unit of work submitted to a :class:`JobRunner` (attributes in the module doc).

    Only the runner changes a job's state; pages read it (attribute reads are atomic).
    """

    def __init__(self, runner: "JobRunner", session_id: str, label: str, fn: Callable,
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
        self.submitted = time.time()
        self.started: Optional[float] = None
        self.finished: Optional[float] = None
        self.cancel_event = threading.Event()
        self._fn: Optional[Callable] = fn
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
    def elapsed_s(self) -> float:
        """Seconds running so far (0 while queued; the run time once finished)."""
        if self.started is None:
            return 0.0
        end = self.finished if self.finished is not None else time.time()
        return max(0.0, end - self.started)

    @property
    def waited_s(self) -> float:
        """Seconds spent in the queue."""
        end = self.started if self.started is not None else (
            self.finished if self.finished is not None else time.time())
        return max(0.0, end - self.submitted)

    @property
    def queue_position(self) -> Optional[int]:
        """1 for the next job to start, 2 for the one after, …; None unless queued."""
        if self.status != "queued":
            return None
        return self._runner._position(self)

    @property
    def remaining_s(self) -> Optional[float]:
        """The estimate minus the elapsed time (never below 0), None without estimate."""
        if self.estimate_s is None:
            return None
        return max(0.0, self.estimate_s - self.elapsed_s)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the job is finished (True) or ``timeout`` passes (False)."""
        return self._finished_event.wait(timeout)

    # -- acting
    def cancel(self) -> None:
        """Ask the job to stop: a queued job is removed at once; a running one stops at
        its next progress call (its status turns "cancelled" when its thread returns)."""
        if self.done:
            return
        self.cancel_event.set()
        self._runner._cancel_queued(self)
        with self._runner._lock:
            if self.status == "running":
                self.message = "cancelling…"

    def __repr__(self) -> str:
        return (f"Job({self.label!r}, status={self.status!r}, "
                f"progress={self.progress:.2f}, session={self.session_id[:8]!r})")


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
    """

    def __init__(self, max_workers: Optional[int] = None, max_queued_per_session: int = 4,
                 threads_per_job: Optional[int] = None):
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
        self._lock = threading.Condition()
        self._queues: "OrderedDict[str, deque]" = OrderedDict()   # session -> queued jobs
        self._running: Dict[str, Job] = {}
        self._closed = False
        self._threads: List[threading.Thread] = []
        self._names = itertools.count(1)
        for _ in range(workers):
            t = threading.Thread(target=self._worker, name=f"featagg-job-{next(self._names)}",
                                 daemon=True)
            t.start()
            self._threads.append(t)

    # -- submitting
    def submit(self, session_id: str, label: str, fn: Callable, estimate_s=None,
               kind: str = "") -> Job:
        """Queue ``fn(progress, cancel)`` for ``session_id``; returns its :class:`Job`."""
        if not callable(fn):
            raise ValueError("fn must be a callable fn(progress, cancel)")
        sid = str(session_id)
        with self._lock:
            if self._closed:
                raise RuntimeError("the job runner is shut down")
            mine = len(self._queues.get(sid, ())) + sum(
                1 for j in self._running.values() if j.session_id == sid)
            if mine >= self.max_queued_per_session:
                raise JobQueueFull(
                    f"You already have {mine} jobs waiting or running (at most "
                    f"{self.max_queued_per_session} per session); wait for one to finish "
                    "or cancel one.")
            job = Job(self, sid, label, fn, estimate_s, kind)
            self._queues.setdefault(sid, deque()).append(job)
            self._lock.notify()
        return job

    def jobs(self, session_id: Optional[str] = None) -> List[Job]:
        """Running jobs, then queued ones in the order they will start."""
        with self._lock:
            out = list(self._running.values()) + self._dispatch_order()
        if session_id is not None:
            out = [j for j in out if j.session_id == str(session_id)]
        return out

    def cancel_session(self, session_id: str) -> int:
        """Cancel every queued and running job of a session (e.g. when it ends)."""
        todo = self.jobs(session_id)
        for job in todo:
            job.cancel()
        return len(todo)

    def shutdown(self, cancel: bool = True, timeout: Optional[float] = 10.0) -> None:
        """Stop accepting jobs, optionally cancel the unfinished ones, join the workers."""
        with self._lock:
            self._closed = True
            pending = list(self._running.values()) + self._dispatch_order()
            self._lock.notify_all()
        if cancel:
            for job in pending:
                job.cancel()
        deadline = None if timeout is None else time.time() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.time()))

    # -- scheduling (all under self._lock)
    def _dispatch_order(self) -> List[Job]:
        """Queued jobs in the order the round robin will start them."""
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
            order = self._dispatch_order()
        for i, j in enumerate(order):
            if j is job:
                return i + 1
        return None

    def _take(self) -> Optional[Job]:
        for sid, q in self._queues.items():
            if q:
                job = q.popleft()
                self._queues.move_to_end(sid)     # this session goes to the back
                if not q:
                    del self._queues[sid]
                return job
        return None

    def _cancel_queued(self, job: Job) -> None:
        with self._lock:
            q = self._queues.get(job.session_id)
            if q is None or job not in q:
                return
            q.remove(job)
            if not q:
                del self._queues[job.session_id]
        self._finish(job, "cancelled", message="cancelled before it started")

    # -- running
    def _worker(self) -> None:
        self._limit_threads()
        while True:
            with self._lock:
                job = None
                while not self._closed:
                    job = self._take()
                    if job is not None:
                        break
                    self._lock.wait()
                if job is None:
                    return
                job.status = "running"
                job.started = time.time()
                job.message = "starting"
                self._running[job.job_id] = job
            try:
                self._limit_threads()
                self._run(job)
            finally:
                with self._lock:
                    self._running.pop(job.job_id, None)

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
            import sklearn.utils._openmp_helpers  # noqa: F401 - loads its OpenMP runtime
            from threadpoolctl import threadpool_limits
            threadpool_limits(limits=n, user_api="openmp")
        except Exception:  # noqa: BLE001
            _log.debug("could not limit OpenMP threads", exc_info=True)

    def _run(self, job: Job) -> None:
        from featagg_core._cancel import Cancelled
        fn = job._fn
        job._fn = None
        if fn is None or job.cancel_event.is_set():
            self._finish(job, "cancelled", message="cancelled before it started")
            return
        event = job.cancel_event

        def progress(fraction: float = 0.0, message: str = "") -> None:
            if event.is_set():
                raise Cancelled("cancelled")
            try:
                f = float(fraction)
            except (TypeError, ValueError):
                f = 0.0
            job.progress = min(1.0, max(0.0, f)) if f == f else job.progress
            if message:
                job.message = str(message)

        try:
            result = fn(progress, event)
        except Cancelled:
            fn = None
            self._finish(job, "cancelled", message="cancelled")
            return
        except BaseException as exc:  # noqa: BLE001 - carried to the page as a message
            fn = None
            if event.is_set():
                self._finish(job, "cancelled", message="cancelled")
                return
            _log.error("job %r (%s, session %s) failed", job.label, job.kind,
                       job.session_id[:8], exc_info=exc)
            self._finish(job, "failed", error=friendly_error(exc))
            return
        fn = None
        status = getattr(result, "status", None)
        if event.is_set() or status == "cancelled":
            result = None
            self._finish(job, "cancelled", message="cancelled")
            return
        self._finish(job, "done", result=result)

    def _finish(self, job: Job, status: str, result: Any = None, error: Optional[str] = None,
                message: Optional[str] = None) -> None:
        with self._lock:
            job._fn = None
            job.result = result if status == "done" else None
            job.error = error
            job.finished = time.time()
            if status == "done":
                job.progress = 1.0
                job.message = "done"
            elif status == "failed":
                job.message = error or "failed"
            else:
                job.message = message or "cancelled"
            job.status = status
        job._finished_event.set()


# ----------------------------------------------------------------------------- server runner
@st.cache_resource(show_spinner=False)
def _server_runner() -> JobRunner:
    runner = JobRunner()
    if runner.threads_per_job < (os.cpu_count() or 1):
        try:  # BLAS pools are process-wide: cap them once for the whole server
            from threadpoolctl import threadpool_limits
            threadpool_limits(limits=runner.threads_per_job, user_api="blas")
        except Exception:  # noqa: BLE001
            _log.debug("could not limit BLAS threads", exc_info=True)
    _log.info("job runner: %d workers, %d threads per job", runner.max_workers,
              runner.threads_per_job)
    return runner


def get_runner() -> JobRunner:
    """The server's one :class:`JobRunner` (created on first use, shared by all sessions)."""
    return _server_runner()


# ----------------------------------------------------------------------------- widgets
def _fmt_seconds(s: Optional[float]) -> str:
    from featagg_core.estimate import format_seconds
    return "—" if s is None else format_seconds(s)


def status_text(job: Job) -> str:
    """One line for a job: "Queued: 2nd in line", "Running: 12 s of about 40 s", …"""
    if job.status == "queued":
        pos = job.queue_position
        where = "next in line" if pos == 1 else (f"{pos} in line" if pos else "waiting")
        est = f" · estimated run time {_fmt_seconds(job.estimate_s)}" \
            if job.estimate_s is not None else ""
        return f"**{job.label}** — queued, {where}{est}"
    if job.status == "running":
        est = (f" of about {_fmt_seconds(job.estimate_s)} (estimate)"
               if job.estimate_s is not None else "")
        return f"**{job.label}** — running for {_fmt_seconds(job.elapsed_s)}{est}"
    if job.status == "done":
        return f"**{job.label}** — done in {_fmt_seconds(job.elapsed_s)}"
    if job.status == "cancelled":
        return f"**{job.label}** — cancelled"
    return f"**{job.label}** — failed: {job.error or job.message}"


def _panel_body(job: Job, key: str) -> None:
    if job.done:
        st.rerun()                       # the whole page: it shows the outcome
        return
    with st.container(border=True):
        st.markdown(status_text(job))
        text = job.message if job.status == "running" else "waiting for a free worker"
        if job.cancelled and not job.done:
            text = "cancelling…"
        st.progress(float(job.progress), text=text)
        if st.button("Cancel", key=f"{key}__cancel", disabled=job.cancelled,
                     help="stop this job (the server frees its memory)"):
            job.cancel()
            st.rerun()


def job_panel(job: Job, key: str, run_every: float = 0.5) -> None:
    """Draw the panel of a queued or running job and redraw it every ``run_every`` s
    (an ``st.fragment``); when the job has finished, rerun the page so it shows the
    result. ``key`` must be unique on the page (it keys the Cancel button)."""

    @st.fragment(run_every=run_every)
    def _job_panel_fragment():
        _panel_body(job, key)

    if job.done:
        return
    _job_panel_fragment()


def _jobs_state() -> dict:
    return st.session_state.setdefault(_STATE_KEY, {})


def run_in_page(key: str, label: Optional[str] = None, fn: Optional[Callable] = None,
                estimate_s: Optional[float] = None, kind: str = "", start: bool = False):
    """The page's whole "submit or show" step for one job slot ``key``.

    With ``start=True`` (e.g. the Run button was pressed) any unfinished job in the slot
    is cancelled and ``fn`` is submitted for this session. Then: a queued or running job
    draws :func:`job_panel` and returns None; a finished job returns its result **once**
    (the slot is emptied: store the result, e.g. ``session.add_run(run)``); a cancelled
    or failed one shows its message (until the next start or :func:`forget`) and returns
    None; an empty slot returns None. A full queue is reported with ``st.warning``.
    """
    from featagg_app import session
    state = _jobs_state()
    if start:
        if fn is None:
            raise ValueError("run_in_page(start=True) needs fn")
        old = state.pop(key, None)
        if old is not None and not old.done:
            old.cancel()
        try:
            state[key] = get_runner().submit(session.session_id(), label or key, fn,
                                             estimate_s=estimate_s, kind=kind)
        except JobQueueFull as exc:
            st.warning(str(exc))
            return None
    job = state.get(key)
    if job is None:
        return None
    if job.status == "done":
        state.pop(key, None)
        return job.result
    if job.status == "cancelled":
        st.info(f"{job.label}: cancelled.")
        return None
    if job.status == "failed":
        st.error(f"{job.label} failed: {job.error}")
        return None
    job_panel(job, key)
    return None


def forget(key: str) -> None:
    """Empty a page's job slot (cancelling the job if it is still running)."""
    job = _jobs_state().pop(key, None)
    if job is not None and not job.done:
        job.cancel()
