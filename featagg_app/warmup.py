"""Compile featagg's numba kernels once per server process, before a student clicks.

``warm_up()`` imports every ``featagg_core`` module of :data:`MODULES` and calls its ``warmup()``
(each module compiles its kernels on tiny inputs). ``app.py`` calls
:func:`start_background` under ``st.cache_resource``, so it happens once per server
process, in a daemon thread, and the first page renders without waiting.

Why the background thread cannot race: numba compiles under its global compiler lock, so a
page that calls a kernel while the thread is compiling it waits for that compilation (or
compiles it itself under the same lock) and then uses the finished machine code; module
imports are serialised by Python's import lock. The kernels are ``@njit(cache=True)``, and
``scripts/dashboard.sh`` runs ``python -m featagg_app.warmup`` before starting the server,
so the on-disk cache is already filled and the in-process warm-up only loads it.

No streamlit here; no module-level mutable state (the status lives in the returned object).
"""
from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from dataclasses import dataclass, field

#: modules warmed, in order
MODULES = ("featagg_core.data", "featagg_core.metrics", "featagg_core.samples",
           "featagg_core.synthetic", "featagg_core.defrag", "featagg_core.fiat",
           "featagg_core.refrag", "featagg_core.ktxmlc", "featagg_core.bmgufs",
           "featagg_core.vocab", "featagg_core.artifacts", "featagg_core.experiment",
           "featagg_core.feature_clustering", "featagg_core.estimate")

_log = logging.getLogger("featagg_app")


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


def warm_up(modules=MODULES, report: WarmupReport | None = None) -> WarmupReport:
    """Import each module of ``modules`` and call its ``warmup()`` if it has one.

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
    if "featagg_core.estimate" in modules:
        # the machine's speed for the estimates pages show before a job starts: measured
        # now, so no first visitor waits for it (it is re-measured every few minutes)
        t0 = time.perf_counter()
        try:
            importlib.import_module("featagg_core.estimate").default_speed()
            report.timings["featagg_core.estimate (calibration)"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            report.errors["featagg_core.estimate"] = f"{type(exc).__name__}: {exc}"
            _log.error("featagg warm-up: the speed calibration failed", exc_info=exc)
    report.seconds = time.perf_counter() - t_all
    report.done.set()
    return report


def start_background(modules=MODULES) -> WarmupReport:
    """Run :func:`warm_up` in a daemon thread; returns its report at once (``report.done``
    is set when it finishes)."""
    report = WarmupReport()
    threading.Thread(target=warm_up, args=(modules, report), name="featagg-warmup",
                     daemon=True).start()
    return report


if __name__ == "__main__":  # python -m featagg_app.warmup: fill numba's on-disk cache
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rep = warm_up()
    print(f"[featagg] {rep.summary()}", file=sys.stderr)
    sys.exit(0)
