"""Free what a browser session holds once it is gone (or idle for long).

Streamlit keeps a disconnected session (its ``st.session_state``: the dataset, every run
and its fitted pipeline) in ``MemorySessionStorage`` for ``server.disconnectedSessionTTL``
seconds so a reconnect can resume it, and nothing cancels its jobs. After the TTL the entry
only *expires* — it is dropped the next time the storage is touched, and the session's
state is never cleared or shut down. In a classroom that means the server keeps the peak
of every student who closed the tab. This module closes the gap::

    get_reaper() -> SessionReaper          # the server's one (st.cache_resource)
    session_seen()                         # app.py, every script run of a session
    SessionReaper(runner, grace_s=None, idle_s=None, every_s=10.0, manager=None)
        .seen(session_id, state)           # a session ran a script (state: SessionState)
        .sweep(now=None) -> [(session_id, "closed" | "idle")]
        .start() / .stop()

Every ``every_s`` seconds a daemon thread compares the sessions it has seen with the
runtime's session manager (``Runtime.instance()._session_mgr``, its active websocket
sessions). A session whose websocket has been gone for ``grace_s`` (default: the server's
``server.disconnectedSessionTTL``, which ``scripts/dashboard.sh`` sets to 60 s) — or that
the runtime no longer knows at all — is closed: its session state is cleared, the runtime
is asked to close it (``close_session``: Streamlit's own shutdown, uploaded files and
caches), and the freed memory is handed back to the system
(:func:`featagg_app.server.memory.release_memory`). Its *work* is not lost: it belongs to
its durable session (:mod:`featagg_app.server.sessions`, the key in the URL), whose jobs
keep running and which no open tab uses any more, so the sweep spills it to disk
(``sessions.spill_detached``) until a reload brings it back, it expires, or the spill cap
needs its room (``sessions.sweep``; a forgotten durable session's jobs are cancelled). A
session still connected but without a script run or a job for ``idle_s``
(``FEATAGG_IDLE_SESSION_MIN``, default 120 min; 0 = never) keeps its connection but loses
its ``featagg.*`` state (runs, dataset, page namespaces) and its durable session; its next
run says so (:data:`FREED_KEY`).

Debug only: with ``FEATAGG_MEMORY_REPORT=file`` each sweep also appends where the server's
memory sits (:mod:`featagg_app.server.memreport`).

No module-level mutable state: the registry lives in the :class:`SessionReaper`.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Callable, Dict, List, Optional, Tuple

import streamlit as st

_log = logging.getLogger("featagg_app")

#: st.session_state key set when an idle session's state was freed (app.py says so)
FREED_KEY = "featagg.freed_idle"
_PREFIX = "featagg."


def idle_seconds() -> float:
    """``FEATAGG_IDLE_SESSION_MIN`` in seconds (default 120 minutes; 0 = never): the
    durable sessions' (:func:`featagg_app.server.sessions.idle_seconds`)."""
    from featagg_app.server.sessions import idle_seconds as durable_idle
    return durable_idle()


def _configured_ttl() -> float:
    try:
        from streamlit import config
        return float(config.get_option("server.disconnectedSessionTTL"))
    except Exception:  # noqa: BLE001
        return 120.0


def _runtime_manager():
    try:
        from streamlit.runtime import Runtime
        if not Runtime.exists():
            return None
        return getattr(Runtime.instance(), "_session_mgr", None)
    except Exception:  # noqa: BLE001
        return None


class _Seen:
    __slots__ = ("state", "last_run", "gone_since", "durable")

    def __init__(self, state, now: float, durable: Optional[str] = None):
        self.state = state
        self.last_run = now
        self.gone_since: Optional[float] = None
        self.durable = durable

    def job_sid(self, sid: str) -> str:
        """The id its jobs run under: its durable session's, else the Streamlit one."""
        return self.durable or sid


class SessionReaper:
    """Closes sessions that are gone and frees idle ones (see the module docstring).

    Parameters
    ----------
    runner : JobRunner
        Its ``cancel_session`` and ``jobs`` are used.
    grace_s : float or None
        Seconds a session may stay disconnected (None: ``server.disconnectedSessionTTL``).
    idle_s : float or None
        Seconds without a script run or job before a connected session's state is freed
        (None: :func:`idle_seconds`; 0: never).
    every_s : float
        Seconds between two sweeps of the background thread.
    manager : callable or None
        Returns the runtime's session manager (``list_active_sessions``,
        ``get_session_info``, ``close_session``) or None; default: the running server's.
    release : callable or None
        Called after sessions were freed (default: :func:`featagg_app.server.memory.release_memory`).
    sessions : SessionStore or None
        The durable sessions (:func:`featagg_app.server.context.get_sessions`): each sweep
        spills those no open tab uses and expires the idle ones; an idle session freed
        here is forgotten there too.
    """

    def __init__(self, runner, grace_s: Optional[float] = None,
                 idle_s: Optional[float] = None, every_s: float = 10.0,
                 manager: Optional[Callable] = None, release: Optional[Callable] = None,
                 sessions=None):
        self.runner = runner
        self.grace_s = _configured_ttl() if grace_s is None else float(grace_s)
        self.idle_s = idle_seconds() if idle_s is None else float(idle_s)
        self.every_s = float(every_s)
        self._manager = manager or _runtime_manager
        if release is None:
            from featagg_app.server.memory import release_memory
            release = release_memory
        self._release = release
        self.sessions = sessions
        self._lock = threading.Lock()
        self._seen: Dict[str, _Seen] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.closed = 0
        self.freed_idle = 0

    # -- registry
    def seen(self, session_id: str, state=None, durable: Optional[str] = None) -> None:
        """Session ``session_id`` ran a script now; ``state`` is its ``SessionState`` (kept
        as a weak reference, so the reaper never keeps a session alive); ``durable`` is
        the id of the durable session it shows (its jobs run under that id)."""
        now = time.time()
        with self._lock:
            rec = self._seen.get(session_id)
            if rec is None:
                ref = None
                if state is not None:
                    try:
                        ref = weakref.ref(state)
                    except TypeError:
                        ref = lambda s=state: s  # noqa: E731 - not weak-referenceable
                self._seen[session_id] = _Seen(ref, now, durable)
            else:
                rec.last_run = now
                rec.gone_since = None
                rec.durable = durable or rec.durable

    def known(self) -> List[str]:
        with self._lock:
            return list(self._seen)

    # -- sweeping
    def sweep(self, now: Optional[float] = None) -> List[Tuple[str, str]]:
        """One pass: close the sessions gone for ``grace_s``, free the idle ones. Returns
        ``[(session_id, "closed" | "idle")]``."""
        now = time.time() if now is None else float(now)
        mgr = self._manager()
        if mgr is None:
            return []
        try:
            active = {info.session.id for info in mgr.list_active_sessions()}
        except Exception:  # noqa: BLE001
            _log.debug("featagg reaper: cannot list sessions", exc_info=True)
            return []
        done = []
        with self._lock:
            items = list(self._seen.items())
        for sid, rec in items:
            state = rec.state() if rec.state is not None else None
            if sid not in active:
                if rec.gone_since is None:
                    rec.gone_since = now
                if now - rec.gone_since >= self.grace_s or (rec.state is not None
                                                            and state is None):
                    self._close(mgr, sid, state)
                    done.append((sid, "closed"))
                continue
            rec.gone_since = None
            if (self.idle_s > 0 and now - rec.last_run >= self.idle_s and state is not None
                    and not self.runner.jobs(rec.job_sid(sid))
                    and not state.get(FREED_KEY, False)
                    and self._script_idle(mgr, sid)):
                self._free_idle(sid, state, rec.job_sid(sid))
                rec.last_run = now
                done.append((sid, "idle"))
        with self._lock:
            live = {r.durable for s, r in self._seen.items() if s in active and r.durable}
        spilled, forgotten = self._sweep_durable(live, now)
        done += forgotten
        if spilled and not done:
            freed = self._release()
            _log.info("featagg: spilled %d durable session(s) no tab shows to disk; %.0f MB "
                      "returned to the system", spilled, (freed or 0) / 2 ** 20)
        if done:
            freed = self._release()
            _log.info("featagg: freed %d session(s) (%s)%s; %.0f MB returned to the system",
                      len(done), ", ".join(f"{s[:8]} {why}" for s, why in done),
                      f"; {spilled} durable session(s) no tab shows spilled to disk"
                      if spilled else "", (freed or 0) / 2 ** 20)
        return done

    def _sweep_durable(self, live: set, now: float) -> Tuple[int, List[Tuple[str, str]]]:
        """Spill the durable sessions no open tab uses, expire the idle ones: returns how
        many were spilled and ``[(sid, "durable expired" | …)]`` of those forgotten."""
        if self.sessions is None:
            return 0, []
        try:
            n = self.sessions.spill_detached(live, grace_s=self.grace_s, now=now)
            return n, [(sid, f"durable {why}") for sid, why in self.sessions.sweep(now)]
        except Exception:  # noqa: BLE001 - the server must never lose its reaper
            _log.exception("featagg reaper: sweeping the durable sessions failed")
            return 0, []

    def _close(self, mgr, sid: str, state) -> None:
        # its jobs are not cancelled: they belong to its durable session (a reload of the
        # same URL follows them); a session without one ran them under this id
        with self._lock:
            rec = self._seen.get(sid)
        if rec is None or rec.durable is None:
            try:
                self.runner.cancel_session(sid)
            except Exception:  # noqa: BLE001
                _log.debug("featagg reaper: cancel_session failed", exc_info=True)
        if state is not None:
            try:
                state.clear()
            except Exception:  # noqa: BLE001
                _log.debug("featagg reaper: clearing the state failed", exc_info=True)
        try:
            mgr.close_session(sid)
        except Exception:  # noqa: BLE001
            _log.debug("featagg reaper: close_session failed", exc_info=True)
        with self._lock:
            self._seen.pop(sid, None)
        self.closed += 1

    @staticmethod
    def _script_idle(mgr, sid: str) -> bool:
        try:
            info = mgr.get_session_info(sid)
        except Exception:  # noqa: BLE001
            return False
        state = getattr(getattr(info, "session", None), "_state", None)
        return state is not None and "NOT_RUNNING" in str(state)

    def _free_idle(self, sid: str, state, job_sid: Optional[str] = None) -> None:
        self.runner.cancel_session(job_sid or sid)
        if self.sessions is not None and job_sid:
            self.sessions.drop_sid(job_sid)
        try:
            keys = [k for k in list(state.filtered_state) if str(k).startswith(_PREFIX)]
            for k in keys:
                try:
                    del state[k]
                except KeyError:
                    pass
            state[FREED_KEY] = True
        except Exception:  # noqa: BLE001
            _log.debug("featagg reaper: freeing an idle session failed", exc_info=True)
        self.freed_idle += 1

    # -- the thread
    def start(self) -> "SessionReaper":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="featagg-reaper",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - the server must never lose its reaper
                _log.exception("featagg reaper: a sweep failed")
            self._debug_report()

    def _debug_report(self) -> None:
        """``FEATAGG_MEMORY_REPORT=file``: append where the memory sits (debug only)."""
        from featagg_app.server import memreport
        path = memreport.enabled()
        if not path:
            return
        try:
            memreport.write(path, runner=self.runner, store=self.sessions, reaper=self)
        except Exception:  # noqa: BLE001
            _log.debug("featagg reaper: the memory report failed", exc_info=True)


# ----------------------------------------------------------------------------- the server
@st.cache_resource(show_spinner=False)
def _server_reaper() -> SessionReaper:
    from featagg_app.server.context import get_runner, get_sessions
    reaper = SessionReaper(get_runner(), sessions=get_sessions()).start()
    _log.info("featagg: sessions are freed %.0f s after they disconnect%s", reaper.grace_s,
              f", and after {reaper.idle_s / 60:.0f} min without activity"
              if reaper.idle_s else "")
    return reaper


def get_reaper() -> SessionReaper:
    """The server's :class:`SessionReaper` (created and started once per process)."""
    return _server_reaper()


def session_seen() -> None:
    """Tell the server's reaper that this session ran a script (``app.py`` calls it on
    every run; without a Streamlit script context it does nothing)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        ctx = get_script_run_ctx()
    except Exception:  # noqa: BLE001
        return
    if ctx is None:
        return
    state = getattr(ctx.session_state, "_state", None)
    durable = None
    try:
        durable = st.session_state.get("featagg.session_id")
    except Exception:  # noqa: BLE001
        pass
    get_reaper().seen(str(ctx.session_id), state, durable)
