"""Serve first, compile in the background: featagg's numba kernels on a fresh machine.

A fresh checkout has an empty numba cache, and compiling every kernel takes about a minute
of CPU (several minutes of wall time on a loaded machine). Nobody should wait for that
before the first page, and no visitor's click should compile in the server process (numba
compiles under a global lock, mostly holding the GIL: every session would stall). So::

    KernelWarmup(groups=GROUPS, processes=None).start()   # the server: one per process
        .ready(names) -> bool        # every group in ``names`` compiled (or given up on)
        .pending(names) -> [KernelGroup]   .wait(names, timeout) -> bool
        .state() -> {group: "pending"|"compiled"|"ready"|"failed"}   .all_ready -> bool
        .speed() -> dict             # this machine's speed for the estimates (never blocks)
        .then(fn)                    # fn() once all groups are ready (the server: its
                                     # first visit's imports and sample, first_visit.py)
        .close()
    GROUPS                           # kernel groups in the order pages need them
    groups_for_spec(spec) / groups_for_page(page) -> tuple of group names
    groups_in_order(first) -> GROUPS with ``first`` compiled first (a data-folder server)
    warm_up(modules) -> WarmupReport # compile/load in this process (the old warm-up)
    watch_compiles(log)              # log every kernel compiled in this process
    python -m featagg_app.server.warmup [--worker STATUS_DIR]   # fill the cache (all groups)

How it works. :meth:`KernelWarmup.start` spawns ``processes`` (default: the cores, at
most 2) child processes (``python -m featagg_app.server.warmup --worker DIR``), niced, that claim
the groups of :data:`GROUPS` one at a time in that order (an ``O_EXCL`` claim file in a
status directory), compile them by calling the ``warmup()`` of the group's modules (tiny
inputs) — which writes numba's on-disk cache — and drop a ``<group>.done`` marker. A loader
thread in the server waits for the markers and then calls the same ``warmup()`` functions
in the server, which only *load* the cache files the children wrote (numba looks for cache
files when a dispatcher is first called with a signature, so files written by another
process after the import are picked up; benchmarks/results/dashboard_notes.md). The job
runner (:mod:`featagg_app.server.jobs`) does not start a job until the groups it needs are ready,
and says so in the job panel; jobs of ready groups run meanwhile. When a child dies or
fails, its group is marked failed and counts as ready: the job then compiles in-process,
as numba always does. Once every group is ready, the loader measures this machine's speed
(``featagg_core.runs.estimate.measure_speed``) and re-measures it every
``SPEED_MAX_AGE_S`` in the background, so no page ever calibrates inside a rerun; until
the first measurement :meth:`KernelWarmup.speed` returns :data:`REFERENCE_SPEED`.

The order is the order a class needs them: DEFRAG (Feature agglomeration, most likely the
first click), KTXMLC and the ranking metrics (Extreme classification, and every
classifier's evaluation), the file readers (uploads), the data-health checks (the Data and
Triage pages run them inline), REFRAG/FIAT (Rare labels), BMGUFS
(Graph feature selection), the vocabulary compressors, then the rest.

No streamlit here; the state lives in the :class:`KernelWarmup` object (the server keeps
one, created by ``featagg_app.server.context.kernels()``).
"""
from __future__ import annotations

import gc
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]

#: modules warmed by ``python -m featagg_app.server.warmup`` and :func:`warm_up`, in order
MODULES = ("featagg_core.data", "featagg_core.metrics", "featagg_core.data.samples",
           "featagg_core.data.synthetic", "featagg_core.utils.products", "featagg_core.agglomeration.defrag",
           "featagg_core.agglomeration.fiat", "featagg_core.agglomeration.refrag", "featagg_core.xmlc.ktxmlc",
           "featagg_core.graph.bmgufs", "featagg_core.vocab.compressor", "featagg_core.artifacts.store",
           "featagg_core.experiment", "featagg_core.agglomeration.clustering",
           "featagg_core.runs.estimate", "featagg_core.health")

#: seconds between two speed calibrations of the server (the load changes)
SPEED_MAX_AGE_S = 300.0
#: a job waits at most this long for its kernels before it runs anyway (and compiles
#: in-process what is missing)
MAX_GATE_WAIT_S = 600.0

#: The machine speed the estimates use until this server measured its own (~1 min after a
#: cold start, at once with a warm cache): ``measure_speed(threads=1)`` on this
#: repository's 2-core reference machine (rates per CPU second, medians of three runs; the
#: wall factor of a quiet machine). Estimates are "about" numbers; the first real
#: calibration replaces this.
REFERENCE_SPEED = {
    "sparse": 2.9e7, "defrag": 2.0e8, "linear": 6.0e7, "pairs": 1.1e9, "pairs_big": 9.8e7,
    "stream": 2.7e10, "onmtf": 4.0e8, "kmeans_dense": 5.1e8, "vocab": 3.5e7,
    "matvec": 7.5e8, "dp": 1.95e8, "py": 1.9e6, "wall_factor": 1.0, "threads": 1.0,
    "measured": 0.0, "reference": 1.0}

_log = logging.getLogger("featagg_app")


@dataclass(frozen=True)
class KernelGroup:
    """Kernels one page (or step) needs: ``modules`` whose ``warmup()`` compiles them."""
    name: str
    title: str
    modules: tuple


GROUPS = (
    KernelGroup("defrag", "DEFRAG (feature agglomeration)",
                ("featagg_core.agglomeration.defrag", "featagg_core.agglomeration.clustering")),
    # second, so the second compile worker takes it while the first compiles DEFRAG's
    # own kernels: the exact XᵀY (about half of DEFRAG's JIT) then is in the
    # cache when DEFRAG's warm-up reaches its XY fit. Self-contained groups still: "defrag"
    # compiles the product itself if this one is not done yet.
    KernelGroup("products", "the exact sparse products (DEFRAG's XᵀY, KTXMLC's label "
                "vectors)", ("featagg_core.utils.products",)),
    KernelGroup("xmlc", "KTXMLC, one-vs-all and the ranking metrics",
                ("featagg_core.metrics", "featagg_core.xmlc.ktxmlc")),
    KernelGroup("readers", "the file readers (uploads)", ("featagg_core.data",)),
    # the Data and Triage pages run the cheap health checks inline (not as a job, so no
    # gate waits for them): compiled before a class reaches them, not in the server
    KernelGroup("health", "the data-health checks (Data and Triage pages)",
                ("featagg_core.health",)),
    KernelGroup("rare_labels", "REFRAG and FIAT (rare labels)",
                ("featagg_core.agglomeration.refrag", "featagg_core.agglomeration.fiat")),
    KernelGroup("graph", "BMGUFS (graph feature selection)", ("featagg_core.graph.bmgufs",)),
    KernelGroup("vocabulary", "the vocabulary compressors", ("featagg_core.vocab.compressor",)),
    KernelGroup("rest", "the remaining kernels",
                ("featagg_core.data.samples", "featagg_core.data.synthetic", "featagg_core.artifacts.store",
                 "featagg_core.experiment", "featagg_core.runs.estimate")),
)
GROUP_NAMES = tuple(g.name for g in GROUPS)

#: groups a page's jobs need (sweeps and evaluations); a page not listed waits for all
PAGE_GROUPS = {
    "Feature agglomeration": ("defrag",),
    "Extreme classification": ("defrag", "xmlc"),
    "Rare labels": ("xmlc", "rare_labels"),
    "Graph feature selection": ("graph",),
    "Vocabulary compression": ("vocabulary",),
    "Compare": (),
}


def groups_for_spec(spec: dict) -> tuple:
    """Kernel groups a run of ``spec`` (docs/RUN_MODEL.md) needs: fitting and scoring."""
    keys = set(spec or ())
    out = []
    if keys & {"defrag", "feature_clustering"}:
        out.append("defrag")
    if "classifier" in keys:
        out += ["defrag", "xmlc"]             # KTXMLC's label tree shares DEFRAG's kernels
    if keys & {"rerank", "impute"}:
        out += ["defrag", "rare_labels"]
    if "feature_selection" in keys:
        out.append("graph")
    if "vocabulary" in keys:
        out.append("vocabulary")
    if not out:
        return GROUP_NAMES
    return tuple(dict.fromkeys(out))


def groups_in_order(first: Sequence[str] = ()) -> tuple:
    """:data:`GROUPS` with the groups named in ``first`` compiled first (in that order),
    the others after them in their usual order. A server with a data folder
    (``FEATAGG_DATA_DIR``) compiles the readers first: opening a folder file is the first
    thing anyone does there, and its job waits for them."""
    by_name = {g.name: g for g in GROUPS}
    head = tuple(by_name[n] for n in dict.fromkeys(first) if n in by_name)
    return head + tuple(g for g in GROUPS if g not in head)


def groups_for_page(page: str) -> tuple:
    """Kernel groups the jobs of ``page`` need (all groups for a page not in
    :data:`PAGE_GROUPS`, e.g. Export's evaluation of an imported pipeline)."""
    return PAGE_GROUPS.get(page, GROUP_NAMES)


# ----------------------------------------------------------------------------- in-process
@dataclass
class WarmupReport:
    """What :func:`warm_up` did: seconds per module, errors by module."""
    timings: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    seconds: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)

    def summary(self) -> str:
        state = f"done in {self.seconds:.1f} s" if self.done.is_set() else "running"
        parts = [f"warm-up {state}: {len(self.timings)} modules"]
        if self.errors:
            parts.append(f"errors in {', '.join(sorted(self.errors))}")
        return "; ".join(parts)


def warm_up(modules=MODULES, report: Optional[WarmupReport] = None,
            calibrate: bool = False) -> WarmupReport:
    """Import each module of ``modules`` and call its ``warmup()`` if it has one (compiles
    the kernels, or loads them from numba's cache). With ``calibrate`` also measure the
    machine's speed once (``featagg_core.runs.estimate.default_speed``).

    An exception while importing a module or in its warm-up is logged and kept in
    ``report.errors`` (it never stops the app).
    """
    report = report or WarmupReport()
    t_all = time.perf_counter()
    for name in modules:
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001
            report.errors[name] = f"{type(exc).__name__}: {exc}"
            _log.error("featagg warm-up: importing %s failed", name, exc_info=exc)
            continue
        fn = getattr(mod, "warmup", None)
        if callable(fn):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001
                report.errors[name] = f"{type(exc).__name__}: {exc}"
                _log.error("featagg warm-up: %s.warmup() failed", name, exc_info=exc)
                continue
        report.timings[name] = time.perf_counter() - t0
    if calibrate:
        t0 = time.perf_counter()
        try:
            importlib.import_module("featagg_core.runs.estimate").default_speed()
            report.timings["featagg_core.runs.estimate (calibration)"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            report.errors["featagg_core.runs.estimate"] = f"{type(exc).__name__}: {exc}"
            _log.error("featagg warm-up: the speed calibration failed", exc_info=exc)
    report.seconds = time.perf_counter() - t_all
    report.done.set()
    return report


def watch_compiles(log: Optional[Callable[[str], None]] = None) -> Callable[[], int]:
    """Log every featagg kernel numba compiles in this process (not loads from its cache):
    "JIT in the server process: featagg_core._kernels.defrag.split_level, 3.1 s (thread
    featagg-job-1)". Returns a function giving the number seen so far. Installed once per
    server process (``featagg_app.server.context.kernels``); the cold-start benchmark counts the lines.
    """
    from numba.core import event as ev

    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    local = threading.local()
    count = [0]

    class _Listener(ev.Listener):
        def on_start(self, event):
            depth = getattr(local, "depth", 0)
            if depth == 0:
                local.t0 = time.perf_counter()
                disp = event.data.get("dispatcher")
                local.name = (f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
                              if disp is not None else "?")
            local.depth = depth + 1

        def on_end(self, event):
            local.depth = getattr(local, "depth", 1) - 1
            if local.depth == 0 and local.name.startswith("featagg_core"):
                count[0] += 1
                say(f"[featagg] JIT in the server process: {local.name}, "
                    f"{time.perf_counter() - local.t0:.1f} s (thread "
                    f"{threading.current_thread().name})")

    ev.register("numba:compile", _Listener())
    return lambda: count[0]


# ----------------------------------------------------------------------------- children
def _marker(status_dir: Path, group: str, what: str) -> Path:
    return Path(status_dir) / f"{group}.{what}"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _read_groups(status_dir: Path) -> Sequence[KernelGroup]:
    try:
        raw = json.loads((Path(status_dir) / "groups.json").read_text())
        return tuple(KernelGroup(g["name"], g["title"], tuple(g["modules"])) for g in raw)
    except (OSError, ValueError, KeyError, TypeError):
        return GROUPS


def compile_groups(status_dir, groups: Optional[Sequence[KernelGroup]] = None) -> List[str]:
    """A compile worker's loop: claim the next unclaimed group of ``groups`` (in order;
    default: the ``groups.json`` the server wrote into ``status_dir``, else
    :data:`GROUPS`), compile it with :func:`warm_up`, write ``<group>.done`` (JSON:
    seconds, CPU seconds, errors) — or ``<group>.failed`` — and go on until every group is
    claimed. Returns the groups this worker compiled. Several workers share one
    ``status_dir``."""
    status_dir = Path(status_dir)
    groups = _read_groups(status_dir) if groups is None else groups
    mine = []
    for g in groups:
        try:
            fd = os.open(_marker(status_dir, g.name, "claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            rep = warm_up(g.modules)
            info = {"seconds": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                    "errors": rep.errors, "pid": os.getpid()}
            _write_atomic(_marker(status_dir, g.name, "failed" if rep.errors else "done"),
                          json.dumps(info))
        except BaseException as exc:  # noqa: BLE001 - the server falls back to in-process
            _write_atomic(_marker(status_dir, g.name, "failed"),
                          json.dumps({"errors": {g.name: f"{type(exc).__name__}: {exc}"}}))
            if not isinstance(exc, Exception):
                raise
        mine.append(g.name)
    return mine


def _child_setup(niceness: int) -> Callable[[], None]:
    def setup():
        try:
            os.nice(niceness)
        except OSError:
            pass
        try:   # die with the server (Linux): never leave a compiler running
            import ctypes
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PDEATHSIG
        except Exception:  # noqa: BLE001
            pass
    return setup


def default_processes() -> int:
    """``FEATAGG_COMPILE_PROCESSES`` if set (0: compile nothing in the background), else
    the cores, at most 2 (each child needs ~150 MB while compiling)."""
    raw = os.environ.get("FEATAGG_COMPILE_PROCESSES", "").strip()
    if raw.isdigit():
        return int(raw)
    return max(1, min(2, os.cpu_count() or 1))


# ----------------------------------------------------------------------------- the server
class KernelWarmup:
    """Background compilation for one server process (see the module docstring).

    Parameters
    ----------
    groups : sequence of KernelGroup, default :data:`GROUPS`
    processes : int or None
        Compile workers (None: :func:`default_processes`; 0: none — every group is loaded
        in the server's loader thread, compiling there if the cache is empty).
    niceness : int
        Added to the workers' nice value (the pages stay responsive while they compile).
    calibrate : bool
        Measure the machine's speed once every group is ready, and every
        ``SPEED_MAX_AGE_S`` after.
    log : callable(str) or None
        Where the progress lines go (default: stderr, the server log).
    freeze_gc : bool
        Once every group is loaded, ``gc.collect()`` then ``gc.freeze()`` (the server's
        :func:`featagg_app.server.context.kernels` sets it; a test process keeps its collector).
    """

    def __init__(self, groups: Sequence[KernelGroup] = GROUPS, processes: Optional[int] = None,
                 niceness: int = 5, calibrate: bool = True,
                 log: Optional[Callable[[str], None]] = None, freeze_gc: bool = False):
        self.groups = tuple(groups)
        self.freeze_gc = bool(freeze_gc)
        self.processes = default_processes() if processes is None else int(processes)
        self.niceness = int(niceness)
        self.calibrate = bool(calibrate)
        self._say = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._state: Dict[str, str] = {g.name: "pending" for g in self.groups}
        self._ready_at: Dict[str, float] = {}
        self._speed: Optional[dict] = None
        self._procs: List[subprocess.Popen] = []
        self._dir: Optional[Path] = None
        self._closed = threading.Event()
        self.started: Optional[float] = None
        self.all_ready_at: Optional[float] = None
        # what to do once every group is ready, before the "all … ready" line (then());
        # taken by the loader when it sets all_ready_at, under the lock
        self._then: List[Callable[[], Optional[str]]] = []

    # -- lifecycle
    def start(self) -> "KernelWarmup":
        """Start the loader thread, which spawns the compile workers (returns at once).

        The workers are children of the loader thread, not of the caller: they are told to
        die with the thread that made them (``PR_SET_PDEATHSIG``), and the caller may be a
        session's script thread that ends a moment later; the loader lives as long as the
        server."""
        if self.started is not None:
            return self
        self.started = time.time()
        self._dir = Path(tempfile.mkdtemp(prefix="featagg-kernels-"))
        _write_atomic(self._dir / "groups.json", json.dumps(
            [{"name": g.name, "title": g.title, "modules": list(g.modules)}
             for g in self.groups]))
        import atexit
        atexit.register(self.close)
        threading.Thread(target=self._loader, name="featagg-kernels", daemon=True).start()
        return self

    def _spawn(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                            env.get("PYTHONPATH", "").split(os.pathsep) if p])
        for _ in range(self.processes):
            try:
                self._procs.append(subprocess.Popen(
                    [sys.executable, "-m", "featagg_app.server.warmup", "--worker", str(self._dir)],
                    cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    preexec_fn=_child_setup(self.niceness)))
            except OSError as exc:
                self._say(f"[featagg] kernels: could not start a compile worker ({exc}); "
                          "compiling in the server instead")
                break
        self._say(f"[featagg] kernels: compiling {len(self.groups)} groups in "
                  f"{len(self._procs)} background process(es), in the order pages need "
                  "them; pages are served meanwhile")

    def then(self, fn: Callable[[], Optional[str]]) -> "KernelWarmup":
        """Call ``fn()`` in the loader thread once every group is ready, before the
        ``kernels: all … groups ready`` line and before the garbage collector freezes what
        is loaded; at once in a thread of its own when that moment has passed already.

        The server uses it to do what its first visitor would otherwise wait for
        (:func:`featagg_app.server.first_visit.warm_server`). ``fn`` may return a line
        to log; an exception is logged and changes nothing else.

        Parameters
        ----------
        fn : callable() -> str or None
            The work.

        Returns
        -------
        KernelWarmup
            ``self``.
        """
        with self._lock:
            late = self.all_ready_at is not None
            if not late:
                self._then.append(fn)
        if late:
            threading.Thread(target=self._call_then, args=([fn],),
                             name="featagg-warm-late", daemon=True).start()
        return self

    def _call_then(self, fns) -> None:
        for fn in fns:
            t0 = time.perf_counter()
            try:
                line = fn()
            except Exception:  # noqa: BLE001 - a warm-up step failing changes nothing else
                _log.exception("featagg: a warm-up step failed")
                continue
            if line:
                self._say(f"{line} ({time.perf_counter() - t0:.1f} s)")

    def close(self) -> None:
        """Stop the workers and the loader, remove the status directory."""
        self._closed.set()
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        with self._changed:
            self._changed.notify_all()
        if self._dir is not None:
            for f in self._dir.glob("*"):
                try:
                    f.unlink()
                except OSError:
                    pass
            try:
                self._dir.rmdir()
            except OSError:
                pass

    # -- reading
    def state(self) -> Dict[str, str]:
        """``{group: "pending" | "compiled" | "ready" | "failed"}`` ("failed" counts as
        ready: the job compiles what it needs in-process)."""
        with self._lock:
            return dict(self._state)

    def _is_ready(self, name: str) -> bool:
        st = self._state.get(name)
        return st is None or st in ("ready", "failed", "compiled")

    def ready(self, names: Iterable[str]) -> bool:
        """True when every group of ``names`` is compiled (or failed, or unknown), or the
        job has waited long enough (:data:`MAX_GATE_WAIT_S` after the start)."""
        if self.started is not None and time.time() - self.started > MAX_GATE_WAIT_S:
            return True
        with self._lock:
            return all(self._is_ready(n) for n in names)

    def pending(self, names: Iterable[str]) -> List[KernelGroup]:
        """The groups of ``names`` still compiling."""
        by_name = {g.name: g for g in self.groups}
        with self._lock:
            return [by_name[n] for n in names if n in by_name and not self._is_ready(n)]

    @property
    def all_ready(self) -> bool:
        with self._lock:
            return all(s in ("ready", "failed") for s in self._state.values())

    def wait(self, names: Iterable[str] = GROUP_NAMES, timeout: Optional[float] = None) -> bool:
        """Block until :meth:`ready` (True) or ``timeout`` seconds pass (False)."""
        names = tuple(names)
        deadline = None if timeout is None else time.time() + timeout
        with self._changed:
            while not all(self._is_ready(n) for n in names):
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(0.5 if left is None else min(0.5, left))
        return True

    def speed(self) -> dict:
        """This machine's latest speed calibration (``featagg_core.runs.estimate``), or
        :data:`REFERENCE_SPEED` before the first one. Never measures."""
        return dict(self._speed or REFERENCE_SPEED)

    def elapsed(self) -> float:
        return 0.0 if self.started is None else time.time() - self.started

    # -- the loader thread
    def _set(self, name: str, state: str) -> None:
        with self._changed:
            self._state[name] = state
            self._ready_at.setdefault(name, time.time())
            self._changed.notify_all()

    def _marker_of(self, name: str) -> Optional[str]:
        for what in ("done", "failed"):
            if self._dir is not None and _marker(self._dir, name, what).exists():
                return what
        return None

    def _loader(self) -> None:
        self._spawn()
        to_load = [g for g in self.groups]
        while to_load and not self._closed.is_set():
            workers_alive = any(p.poll() is None for p in self._procs)
            progressed = False
            for g in list(to_load):
                mark = self._marker_of(g.name)
                if mark is None and workers_alive:
                    continue
                if mark == "done":
                    self._set(g.name, "compiled")   # jobs may start: the cache is on disk
                t0, c0 = time.perf_counter(), time.thread_time()
                rep = warm_up(g.modules)            # loads (or, without a worker, compiles)
                took = time.perf_counter() - t0
                how = {"done": "compiled in the background",
                       "failed": "the background compile failed; compiled here",
                       None: "compiled in the server"}[mark]
                self._set(g.name, "failed" if rep.errors else "ready")
                self._say(f"[featagg] kernels: {g.name} ready after {self.elapsed():.1f} s "
                          f"({how}; loading took {took:.1f} s, "
                          f"{time.thread_time() - c0:.1f} s CPU)"
                          + (f"; errors: {rep.errors}" if rep.errors else ""))
                to_load.remove(g)
                progressed = True
            if not progressed:
                self._closed.wait(0.2)
        if self._closed.is_set():
            return
        with self._lock:
            self.all_ready_at = time.time()
            then, self._then = self._then, []
        self._call_then(then)
        self._say(f"[featagg] kernels: all {len(self.groups)} groups ready after "
                  f"{self.elapsed():.1f} s")
        if self.freeze_gc:
            # what is loaded now (modules, numba's dispatchers and compiled libraries,
            # scikit-learn, plotly, pandas) lives as long as the server: move it out of the
            # garbage collector's reach, so a full collection - the reaper's after freeing a
            # session, Python's own - walks only what sessions created. A
            # session already open now keeps only Streamlit's own small objects past its
            # close if they form cycles: the reaper empties its state (the dataset, the
            # fits), which refcounting frees
            gc.collect()
            gc.freeze()
        for p in self._procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        while self.calibrate and not self._closed.is_set():
            try:
                from featagg_core.runs.estimate import measure_speed
                self._speed = measure_speed()
            except Exception as exc:  # noqa: BLE001 - estimates keep the last speed
                _log.warning("featagg: the speed calibration failed: %s", exc)
            if self._closed.wait(SPEED_MAX_AGE_S):
                return


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if argv[:1] == ["--worker"] and len(argv) == 2:
        import warnings
        warnings.simplefilter("ignore")     # numba's performance hints on tiny inputs
        compile_groups(argv[1])
        return 0
    rep = warm_up(calibrate=True)       # fill numba's on-disk cache in this process
    print(f"[featagg] {rep.summary()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
