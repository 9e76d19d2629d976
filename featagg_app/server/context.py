"""What one dashboard server process holds for every session: the job runner, the
background compilation of the kernels and the speed the estimates use, created once on first
use (``st.cache_resource``), and the settings the server was started with.

API::

    get_runner() -> JobRunner              # the server's one job runner
    get_sessions() -> SessionStore         # the server's durable sessions (key in the URL)
    kernels() -> KernelWarmup | None       # the background compilation (None: FEATAGG_WARMUP=0)
    kernel_warmup_enabled() -> bool
    machine_speed() -> dict | None         # the speed the estimates use (never measures)
    data_dir() -> str | None               # FEATAGG_DATA_DIR, the server's data folder
"""
from __future__ import annotations

import logging
import os
from typing import Optional

import streamlit as st

from featagg_app.server.jobs import JobRunner
from featagg_app.server.sessions import SessionStore

#: the server's data folder (``scripts/dashboard.sh --data-dir DIR`` sets it)
ENV_DATA_DIR = "FEATAGG_DATA_DIR"

_log = logging.getLogger("featagg_app.server.jobs")


def data_dir() -> Optional[str]:
    """The server's data folder as given (``FEATAGG_DATA_DIR``), None when unset."""
    return os.environ.get(ENV_DATA_DIR, "").strip() or None


def kernel_warmup_enabled() -> bool:
    """False when the environment says ``FEATAGG_WARMUP=0`` (in-process AppTest runs)."""
    return os.environ.get("FEATAGG_WARMUP", "1").strip() != "0"


@st.cache_resource(show_spinner=False)
def _server_kernels():
    from featagg_app.server.warmup import KernelWarmup, groups_in_order, watch_compiles
    watch_compiles()
    kw = {"freeze_gc": True}
    if data_dir() is not None:    # its first job is an open: the parser compiles first
        kw["groups"] = groups_in_order(("readers",))
    return KernelWarmup(**kw).start()


def kernels():
    """The server's :class:`featagg_app.server.warmup.KernelWarmup` (started on first use: the
    background compilation of numba's kernels), or None with ``FEATAGG_WARMUP=0``."""
    if not kernel_warmup_enabled():
        return None
    return _server_kernels()


def machine_speed() -> Optional[dict]:
    """This server's latest speed calibration for the estimates, measured in the
    background (:meth:`KernelWarmup.speed`); None without a warm-up (the estimate then
    measures it itself, as a library call does)."""
    k = kernels()
    return None if k is None else k.speed()


@st.cache_resource(show_spinner=False)
def _server_runner() -> JobRunner:
    runner = JobRunner(gate=kernels())
    if runner.threads_per_job < (os.cpu_count() or 1):
        try:  # BLAS pools are process-wide: cap them once for the whole server
            from threadpoolctl import threadpool_limits
            threadpool_limits(limits=runner.threads_per_job, user_api="blas")
        except Exception:  # noqa: BLE001
            _log.debug("could not limit BLAS threads", exc_info=True)
    _log.info("job runner: %d workers, %d threads per job, %.0f MB of shared fits",
              runner.max_workers, runner.threads_per_job, runner.shared.max_bytes / 2 ** 20)
    return runner


def get_runner() -> JobRunner:
    """The server's one :class:`JobRunner` (created on first use, shared by all sessions)."""
    return _server_runner()


@st.cache_resource(show_spinner=False)
def _server_sessions() -> SessionStore:
    runner = get_runner()
    store = SessionStore(busy=lambda sid: bool(runner.jobs(sid)),
                         on_drop=runner.cancel_session)
    _log.info("durable sessions: %.0f MB in memory, %.0f MB spilled at most, kept %s",
              store.mem_bytes / 2 ** 20, store.spill_bytes / 2 ** 20,
              f"{store.idle_s / 60:.0f} min after their last use" if store.idle_s
              else "until a cap needs their room")
    return store


def get_sessions() -> SessionStore:
    """The server's one :class:`featagg_app.server.sessions.SessionStore` (created on first
    use): every person's durable session, found by the key in the page URL. A forgotten
    session's jobs are cancelled; a session with a queued or running job is kept."""
    return _server_sessions()
