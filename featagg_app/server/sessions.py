"""Durable sessions: a person's work kept by the server under an unguessable key that
travels in the page URL (``?session=KEY``), so a reload, a reconnect or the same URL in
another tab brings it back (no streamlit here: :mod:`featagg_app.state` copies
``st.session_state`` in and out; the server's one store is
:func:`featagg_app.server.context.get_sessions`).

API::

    new_key() -> str                   # secrets.token_urlsafe(32): 256 random bits
    key_digest(key) -> str             # SHA-256 of the key: what the store is indexed by
    looks_like_key(text) -> bool       # the key's format (43 URL-safe characters)
    idle_seconds() / session_budgets()  # FEATAGG_IDLE_SESSION_MIN; the memory and spill caps
    SessionStore(spill_dir=None, mem_bytes=None, spill_bytes=None, idle_s=None, *,
                 spiller=None, size_of=None, busy=None, on_drop=None, clock=time.time)
        .create() -> (key, DurableSession)
        .lookup(key) -> DurableSession | None     # constant-time compare, brings it back
        .save(key, values) -> bool                # a script run ended: its state
        .drop(key) / .drop_sid(sid)
        .enforce() ; .sweep(now=None) -> [(sid, "expired" | "memory" | "spill")]
        .stats() -> dict
    Upload(kind, name, raw, extras, label, n_labels, data)   # an upload, its bytes kept
    AppSpiller()                       # what of the dashboard's state goes to disk, and how

**The key is a capability.** It is made by :func:`new_key` (``secrets``), never derived
from anything a person typed, never logged, never listed. The store keeps only its
SHA-256 (:func:`key_digest`); a lookup finds the entry by digest and compares digests with
``hmac.compare_digest``. Jobs, logs and spill folders use the session's ``sid``, a separate
random id that never leaves the server. An unknown, malformed or expired key finds nothing.

**Bounded.** Every session's values are measured (:func:`featagg_app.server.memory.deep_nbytes`
unless ``size_of`` says otherwise). When the sessions in memory exceed ``mem_bytes``
(``FEATAGG_SESSION_MEM_MB``, default 1024), the least recently used ones are *spilled*: the
spiller writes their heavy parts (uploaded bytes as files, fitted pipelines as artifacts
through :mod:`featagg_core.artifacts.store`; never pickle) to a folder of their own under
``spill_dir`` (default: a private temporary folder, removed when the server exits) and
keeps only the light rest in memory. When the spill folders exceed
``spill_bytes`` (``FEATAGG_SESSION_SPILL_MB``, default 2048), the least recently used
spilled sessions are forgotten. A session with a queued or running job (``busy(sid)``) is
never spilled or forgotten. A session not seen for ``idle_s`` (``FEATAGG_IDLE_SESSION_MIN``,
default 120 min; 0 = never) expires; ``on_drop(sid)`` is called for every forgotten session
(the server cancels its jobs there).

No module-level mutable state: everything lives in the :class:`SessionStore`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from featagg_app.server.memory import deep_nbytes

__all__ = ["new_key", "key_digest", "looks_like_key", "idle_seconds", "session_budgets",
           "SessionStore", "DurableSession", "Upload", "AppSpiller", "KEY_BYTES"]

_log = logging.getLogger("featagg_app")

#: random bytes of a session key (256 bits; the URL carries 43 characters)
KEY_BYTES = 32
_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def new_key() -> str:
    """A new session key: ``secrets.token_urlsafe(KEY_BYTES)`` (256 random bits).

    Returns
    -------
    str
        43 URL-safe characters.
    """
    return secrets.token_urlsafe(KEY_BYTES)


def key_digest(key: str) -> str:
    """The SHA-256 (hex) of ``key``: the store keeps this, never the key.

    Parameters
    ----------
    key : str
        A session key.

    Returns
    -------
    str
        64 hex digits.
    """
    return hashlib.sha256(str(key).encode("utf-8", "surrogatepass")).hexdigest()


def looks_like_key(text) -> bool:
    """True when ``text`` has the format of a key made by :func:`new_key`.

    Parameters
    ----------
    text : object
        What the URL's ``session`` parameter holds.

    Returns
    -------
    bool
    """
    return isinstance(text, str) and bool(_KEY_RE.match(text))


def idle_seconds() -> float:
    """``FEATAGG_IDLE_SESSION_MIN`` in seconds (default 120 minutes; 0 = never).

    Returns
    -------
    float
    """
    raw = os.environ.get("FEATAGG_IDLE_SESSION_MIN", "").strip()
    try:
        return max(0.0, float(raw) * 60.0) if raw else 7200.0
    except ValueError:
        return 7200.0


def _env_mb(name: str, default: float) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        mb = float(raw) if raw else default
    except ValueError:
        mb = default
    return int(max(0.0, mb) * 2 ** 20)


def session_budgets() -> Tuple[int, int]:
    """The durable sessions' caps in bytes: in memory (``FEATAGG_SESSION_MEM_MB``, default
    1024) and in the spill folder (``FEATAGG_SESSION_SPILL_MB``, default 2048).

    Returns
    -------
    tuple of int
        ``(mem_bytes, spill_bytes)``.
    """
    return _env_mb("FEATAGG_SESSION_MEM_MB", 1024.0), _env_mb("FEATAGG_SESSION_SPILL_MB",
                                                             2048.0)


def _folder_bytes(folder: Optional[Path]) -> int:
    if folder is None or not folder.exists():
        return 0
    total = 0
    for p in folder.rglob("*"):
        try:
            if p.is_file():
                total += p.stat().st_size
        except OSError:
            pass
    return total


@dataclasses.dataclass(eq=False)
class DurableSession:
    """One person's durable session (attributes only; the store changes them).

    ``sid`` is the session's id inside the server (jobs, logs, its spill folder): random,
    unrelated to the key. ``values`` is what :mod:`featagg_app.state` restores into
    ``st.session_state``; ``spilled`` says its heavy parts are on disk (``lookup`` brings
    them back)."""

    sid: str
    digest: str
    created: float
    last_seen: float
    values: Dict[str, Any] = dataclasses.field(default_factory=dict)
    nbytes: int = 0
    disk_bytes: int = 0
    spilled: bool = False
    folder: Optional[Path] = None
    dirty: bool = True
    measured_at: float = float("-inf")


class SessionStore:
    """The server's durable sessions: key → values, bounded in memory and on disk (see the
    module docstring).

    Parameters
    ----------
    spill_dir : str, Path or None
        Where spilled sessions go (one folder each, named by ``sid``); None: a private
        temporary folder made on first spill (``FEATAGG_SESSION_SPILL_DIR`` when set).
    mem_bytes, spill_bytes : int or None
        The caps (None: :func:`session_budgets`).
    idle_s : float or None
        Seconds without a save or lookup before a session expires (None:
        :func:`idle_seconds`; 0: never).
    spiller : object or None
        ``spill(values, folder) -> light values`` and ``restore(light, folder) -> values``
        (None: :class:`AppSpiller`).
    size_of : callable or None
        Bytes a session's values hold in memory (None: :func:`AppSpiller.size_of`).
    busy : callable or None
        ``busy(sid) -> bool``: the session has queued or running jobs (never spilled,
        forgotten or expired then).
    on_drop : callable or None
        ``on_drop(sid)`` after a session is forgotten (expired or evicted).
    clock : callable
        Seconds (``time.time``).
    """

    def __init__(self, spill_dir=None, mem_bytes: Optional[int] = None,
                 spill_bytes: Optional[int] = None, idle_s: Optional[float] = None, *,
                 spiller=None, size_of: Optional[Callable] = None,
                 busy: Optional[Callable] = None, on_drop: Optional[Callable] = None,
                 clock: Callable[[], float] = time.time):
        mem_default, spill_default = session_budgets()
        self.mem_bytes = mem_default if mem_bytes is None else max(0, int(mem_bytes))
        self.spill_bytes = spill_default if spill_bytes is None else max(0, int(spill_bytes))
        self.idle_s = idle_seconds() if idle_s is None else max(0.0, float(idle_s))
        self._spill_dir = None if spill_dir is None else Path(spill_dir)
        self._own_dir = False
        self.spiller = AppSpiller() if spiller is None else spiller
        self._size_of = size_of or getattr(self.spiller, "size_of", None) or deep_nbytes
        self._busy = busy or (lambda sid: False)
        self._on_drop = on_drop
        self._clock = clock
        #: a saved session is measured again at most this often (a measure walks its state)
        self.measure_every_s = 2.0
        self._lock = threading.RLock()
        self._items: "OrderedDict[str, DurableSession]" = OrderedDict()   # digest -> LRU
        self.spills = 0
        self.evictions = 0
        self.expired = 0

    # -- keys
    def create(self, key: Optional[str] = None,
               sid: Optional[str] = None) -> Tuple[str, DurableSession]:
        """A new session under a new key.

        Parameters
        ----------
        key, sid : str or None
            None (always, except below): a new key and id. An open tab whose session the
            store forgot (memory pressure) passes its own key and id to be kept again; the
            key then comes from that tab's server-side state, never from a URL.

        Returns
        -------
        tuple
            ``(key, DurableSession)``: give the key to the person (the URL), keep nothing
            else of it.
        """
        key = new_key() if key is None else key
        now = self._clock()
        rec = DurableSession(sid=sid or uuid.uuid4().hex, digest=key_digest(key), created=now,
                             last_seen=now)
        with self._lock:
            self._items[rec.digest] = rec
        return key, rec

    def _find(self, key) -> Optional[DurableSession]:
        if not looks_like_key(key):
            return None
        digest = key_digest(key)
        rec = self._items.get(digest)
        if rec is None or not hmac.compare_digest(rec.digest, digest):
            return None
        if self._expired(rec, self._clock()):
            self._forget(rec, "expired")
            return None
        return rec

    def lookup(self, key) -> Optional[DurableSession]:
        """The session of ``key``, with its values back in memory, or None for an unknown,
        malformed or expired key (nothing else is said about why).

        Parameters
        ----------
        key : str
            What the URL carries.

        Returns
        -------
        DurableSession or None
        """
        with self._lock:
            rec = self._find(key)
            if rec is None:
                return None
            rec.last_seen = self._clock()
            self._items.move_to_end(rec.digest)
            if rec.spilled:
                self._unspill(rec)
                self.enforce(protect=rec)
            return rec

    def save(self, key, values: Dict[str, Any]) -> bool:
        """Make ``values`` the session's state (the end of a script run) and keep the caps.

        Parameters
        ----------
        key : str
            The session's key.
        values : dict
            Its state (held by reference, not copied).

        Returns
        -------
        bool
            False when the key is unknown (expired meanwhile): nothing is kept.
        """
        with self._lock:
            rec = self._find(key)
            if rec is None:
                return False
            if rec.spilled:                    # a live tab saves its full state again
                self._remove_folder(rec)
                rec.spilled = False
            rec.values = values
            rec.dirty = True
            rec.last_seen = self._clock()
            self._items.move_to_end(rec.digest)
            self.enforce(protect=rec)
            return True

    def drop(self, key) -> bool:
        """Forget the session of ``key`` (and its spill folder).

        Parameters
        ----------
        key : str

        Returns
        -------
        bool
            True when there was one.
        """
        with self._lock:
            rec = self._find(key)
            if rec is None:
                return False
            self._forget(rec, "dropped")
            return True

    def drop_sid(self, sid: str) -> bool:
        """Forget the session whose ``sid`` is given (the reaper freeing an idle session).

        Parameters
        ----------
        sid : str

        Returns
        -------
        bool
            True when there was one.
        """
        with self._lock:
            for rec in list(self._items.values()):
                if rec.sid == sid:
                    self._forget(rec, "dropped")
                    return True
        return False

    # -- bounds
    def _expired(self, rec: DurableSession, now: float) -> bool:
        return self.idle_s > 0 and now - rec.last_seen >= self.idle_s and not self._busy(rec.sid)

    def enforce(self, protect: Optional[DurableSession] = None) -> List[Tuple[str, str]]:
        """Keep the caps: spill the least recently used sessions while the memory is over
        ``mem_bytes``, forget spilled ones while the spill folders are over
        ``spill_bytes`` (a busy session and ``protect`` are left alone).

        Parameters
        ----------
        protect : DurableSession or None
            The session being saved (never spilled by its own save).

        Returns
        -------
        list of tuple
            ``(sid, "memory" | "spill")`` of the sessions forgotten.
        """
        done = []
        with self._lock:
            now = self._clock()
            for rec in self._items.values():
                if rec.dirty and (now - rec.measured_at >= self.measure_every_s
                                  or not rec.nbytes):
                    rec.nbytes = self._measure(rec.values)
                    rec.measured_at = now
                    rec.dirty = False
            mem = sum(r.nbytes for r in self._items.values())
            for rec in list(self._items.values()):            # oldest first
                if mem <= self.mem_bytes:
                    break
                if rec.spilled or rec is protect or self._busy(rec.sid):
                    continue
                before = rec.nbytes
                self._spill(rec)
                mem += rec.nbytes - before
            for rec in list(self._items.values()):            # still over: forget
                if mem <= self.mem_bytes:
                    break
                if rec is protect or self._busy(rec.sid):
                    continue
                mem -= rec.nbytes
                self._forget(rec, "memory")
                done.append((rec.sid, "memory"))
            disk = sum(r.disk_bytes for r in self._items.values())
            for rec in list(self._items.values()):
                if disk <= self.spill_bytes:
                    break
                if rec.disk_bytes == 0 or rec is protect or self._busy(rec.sid):
                    continue
                disk -= rec.disk_bytes
                self._forget(rec, "spill")
                done.append((rec.sid, "spill"))
        return done

    def sweep(self, now: Optional[float] = None) -> List[Tuple[str, str]]:
        """Expire the sessions idle for ``idle_s`` and keep the caps (the reaper's thread
        calls it every few seconds).

        Parameters
        ----------
        now : float or None
            The time (None: the clock's).

        Returns
        -------
        list of tuple
            ``(sid, "expired" | "memory" | "spill")`` of the sessions forgotten.
        """
        now = self._clock() if now is None else float(now)
        done = []
        with self._lock:
            for rec in list(self._items.values()):
                if self._expired(rec, now):
                    self._forget(rec, "expired")
                    done.append((rec.sid, "expired"))
            done += self.enforce()
        return done

    def spill_detached(self, live_sids, grace_s: float = 0.0,
                       now: Optional[float] = None) -> int:
        """Spill every session no open tab uses (its sid not in ``live_sids``) and not
        saved for ``grace_s`` seconds: a closed tab's work waits on disk, not in memory.

        Parameters
        ----------
        live_sids : set of str
            The sessions some open tab uses.
        grace_s : float
            Seconds since the last save before a session counts as closed.
        now : float or None
            The time (None: the clock's).

        Returns
        -------
        int
            How many were spilled.
        """
        now = self._clock() if now is None else float(now)
        n = 0
        with self._lock:
            for rec in list(self._items.values()):
                if (rec.spilled or rec.sid in live_sids or now - rec.last_seen < grace_s
                        or self._busy(rec.sid) or not rec.values):
                    continue
                self._spill(rec)
                n += 1
            if n:
                self.enforce()
        return n

    def stats(self) -> Dict[str, int]:
        """Counts and bytes, for logs and tests.

        Returns
        -------
        dict
            ``sessions``, ``spilled``, ``mem_bytes``, ``disk_bytes``, ``spills``,
            ``evictions``, ``expired``.
        """
        with self._lock:
            items = list(self._items.values())
            return {"sessions": len(items), "spilled": sum(r.spilled for r in items),
                    "mem_bytes": sum(r.nbytes for r in items),
                    "disk_bytes": sum(r.disk_bytes for r in items),
                    "spills": self.spills, "evictions": self.evictions,
                    "expired": self.expired}

    def sids(self) -> List[str]:
        """The sessions' ids, least recently used first (ids, never keys).

        Returns
        -------
        list of str
        """
        with self._lock:
            return [r.sid for r in self._items.values()]

    def close(self) -> None:
        """Forget every session and remove the spill folder this store made."""
        with self._lock:
            for rec in list(self._items.values()):
                self._forget(rec, "dropped", notify=False)
            if self._own_dir and self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)

    # -- internals
    def _measure(self, values) -> int:
        try:
            return int(self._size_of(values))
        except Exception:  # noqa: BLE001 - a size is an estimate: never fail a save
            _log.debug("featagg sessions: measuring failed", exc_info=True)
            return 0

    def _root(self) -> Path:
        if self._spill_dir is None:
            env = os.environ.get("FEATAGG_SESSION_SPILL_DIR", "").strip()
            if env:
                self._spill_dir = Path(env)
            else:
                self._spill_dir = Path(tempfile.mkdtemp(prefix="featagg-sessions-"))
                self._own_dir = True
                # removed when the store goes or the server exits (people's uploads)
                weakref.finalize(self, shutil.rmtree, str(self._spill_dir), True)
        self._spill_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self._spill_dir

    def _spill(self, rec: DurableSession) -> None:
        folder = self._root() / rec.sid
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(mode=0o700)
        try:
            light = self.spiller.spill(rec.values, folder)
        except Exception:  # noqa: BLE001 - a failed spill forgets the heavy parts only
            _log.warning("featagg sessions: spilling session %s failed", rec.sid[:8],
                         exc_info=True)
            light = {}
        rec.values = light
        rec.folder = folder
        rec.spilled = True
        rec.disk_bytes = _folder_bytes(folder)
        rec.nbytes = self._measure(light)
        rec.measured_at = self._clock()
        rec.dirty = False
        self.spills += 1

    def _unspill(self, rec: DurableSession) -> None:
        try:
            rec.values = self.spiller.restore(rec.values, rec.folder)
        except Exception:  # noqa: BLE001 - what cannot be read back is lost, not fatal
            _log.warning("featagg sessions: restoring session %s failed", rec.sid[:8],
                         exc_info=True)
        self._remove_folder(rec)
        rec.spilled = False
        rec.dirty = True
        rec.measured_at = float("-inf")

    def _remove_folder(self, rec: DurableSession) -> None:
        if rec.folder is not None:
            shutil.rmtree(rec.folder, ignore_errors=True)
        rec.folder = None
        rec.disk_bytes = 0

    def _forget(self, rec: DurableSession, why: str, notify: bool = True) -> None:
        self._items.pop(rec.digest, None)
        self._remove_folder(rec)
        rec.values = {}
        if why == "expired":
            self.expired += 1
        elif why in ("memory", "spill"):
            self.evictions += 1
        if notify and self._on_drop is not None:
            try:
                self._on_drop(rec.sid)
            except Exception:  # noqa: BLE001
                _log.debug("featagg sessions: on_drop failed", exc_info=True)


# ---------------------------------------------------------------------------
# what of the dashboard's state is spilled, and how
# ---------------------------------------------------------------------------

@dataclasses.dataclass(eq=False)
class Upload:
    """One uploaded dataset with the bytes it was read from (so it can be spilled as files
    and read again). ``extras``: role → (file name, bytes); ``raw`` and the extras' bytes
    are None while spilled; ``data`` is the parsed dataset (None while spilled)."""

    kind: str
    name: str
    raw: Optional[bytes]
    extras: Dict[str, Tuple[str, Optional[bytes]]] = dataclasses.field(default_factory=dict)
    label: Optional[str] = None
    n_labels: Optional[int] = None
    data: Any = None
    fingerprint: Optional[str] = None

    def nbytes(self) -> int:
        """Bytes of the uploaded files held in memory.

        Returns
        -------
        int
        """
        return len(self.raw or b"") + sum(len(b or b"") for _, b in self.extras.values())


_PLAIN = (str, int, float, bool, type(None))
#: the state keys the spiller knows (featagg_app.state / featagg_app.intake.sidebar)
K_DATASET, K_RUNS, K_PAGES, K_UPLOADS = ("featagg.dataset", "featagg.runs", "featagg.pages",
                                         "featagg.uploads")
_SPILLED_PIPES = "featagg.spilled_pipelines"


def _plain(value, depth: int = 0, budget: Optional[list] = None) -> bool:
    """True for small JSON-like values (numbers, strings, lists/tuples/dicts of them):
    what stays in memory when a session is spilled."""
    budget = [20_000] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > 12:
        return False
    if isinstance(value, _PLAIN):
        return not isinstance(value, str) or len(value) <= 100_000
    try:
        import numpy as np
        if isinstance(value, np.generic) and value.dtype.kind in "biuf":
            return True
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1, budget) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v, depth + 1, budget)
                   for k, v in value.items())
    import datetime
    return isinstance(value, (datetime.date, datetime.time, datetime.timedelta))


class AppSpiller:
    """What of the dashboard's session state goes to disk when a session is spilled:

    * ``featagg.uploads`` (kind → :class:`Upload`): the files' bytes, as files; read again
      with featagg's readers when the session comes back;
    * ``featagg.dataset``: an upload is read again from its bytes; a bundled sample stays
      (it is shared); any other dataset (a data-folder file) is let go;
    * ``featagg.runs``: every run stays, its fitted pipeline saved as an artifact
      (:func:`featagg_core.artifacts.store.save_artifact`; a pipeline that cannot be saved
      is let go: the run keeps its metrics);
    * ``featagg.pages`` and every other value: what is small and plain (numbers, strings,
      the triage report, widget values) stays; job handles and computed objects are let
      go (the pages compute them again).
    """

    def size_of(self, values: Dict[str, Any]) -> int:
        """Bytes ``values`` holds in memory, not counting what other sessions share (the
        bundled samples) nor the job runner behind a job handle.

        Parameters
        ----------
        values : dict

        Returns
        -------
        int
        """
        seen: set = set()
        ds = values.get(K_DATASET)
        if isinstance(ds, dict) and ds.get("origin") == "sample":
            seen.add(id(ds.get("data")))
        total = 0
        for k, v in list(values.items()):
            if k == K_PAGES and isinstance(v, dict):
                for ns in list(v.values()):
                    if isinstance(ns, dict):
                        for nk, nv in list(ns.items()):
                            if nk != "_jobs":
                                total += deep_nbytes(nv, seen)
                continue
            if k == K_UPLOADS and isinstance(v, dict):
                for up in list(v.values()):
                    if isinstance(up, Upload):
                        total += up.nbytes() + deep_nbytes(up.data, seen)
                continue
            total += deep_nbytes(v, seen)
        return total

    def spill(self, values: Dict[str, Any], folder: Path) -> Dict[str, Any]:
        """Write the heavy parts of ``values`` into ``folder``; returns the light rest.

        Parameters
        ----------
        values : dict
            A session's state.
        folder : Path
            An empty folder of this session.

        Returns
        -------
        dict
            What stays in memory (``restore`` makes the state again from it).
        """
        out: Dict[str, Any] = {}
        for k, v in values.items():
            if k == K_UPLOADS and isinstance(v, dict):
                out[k] = {kind: self._spill_upload(up, folder) for kind, up in v.items()
                          if isinstance(up, Upload)}
            elif k == K_DATASET and isinstance(v, dict):
                if v.get("origin") == "sample":
                    out[k] = v
                elif v.get("origin") == "upload":
                    out[k] = dict(v, data=None)
            elif k == K_RUNS and isinstance(v, list):
                out[k], out[_SPILLED_PIPES] = self._spill_runs(v, folder)
            elif k == K_PAGES and isinstance(v, dict):
                out[k] = {page: {nk: nv for nk, nv in ns.items()
                                 if nk != "_jobs" and _plain(nv)}
                          for page, ns in v.items() if isinstance(ns, dict)}
            elif _plain(v):
                out[k] = v
        return out

    def restore(self, values: Dict[str, Any], folder: Optional[Path]) -> Dict[str, Any]:
        """The state again from what :meth:`spill` kept and wrote.

        Parameters
        ----------
        values : dict
            What :meth:`spill` returned.
        folder : Path or None
            The folder it wrote into.

        Returns
        -------
        dict
        """
        out = dict(values)
        uploads = {}
        for kind, up in (values.get(K_UPLOADS) or {}).items():
            try:
                uploads[kind] = self._restore_upload(up, folder)
            except Exception:  # noqa: BLE001 - an upload that cannot be read again is lost
                _log.warning("featagg sessions: an upload could not be read back",
                             exc_info=True)
        if K_UPLOADS in values:
            out[K_UPLOADS] = uploads
        ds = values.get(K_DATASET)
        if isinstance(ds, dict) and ds.get("origin") == "upload" and ds.get("data") is None:
            match = [u for u in uploads.values() if u.fingerprint == ds.get("fingerprint")]
            if match:
                out[K_DATASET] = dict(ds, data=match[0].data)
            else:
                out.pop(K_DATASET, None)
        pipes = out.pop(_SPILLED_PIPES, {}) or {}
        if pipes and folder is not None:
            from featagg_core.artifacts.store import load_artifact
            for run in out.get(K_RUNS) or []:
                name = pipes.get(getattr(run, "run_id", None))
                if name is None:
                    continue
                try:
                    run.pipeline = load_artifact(folder / name)
                except Exception:  # noqa: BLE001 - the run keeps its metrics
                    _log.warning("featagg sessions: a spilled pipeline could not be read "
                                 "back", exc_info=True)
        return out

    # -- parts
    @staticmethod
    def _write(folder: Path, name: str, raw: bytes) -> str:
        path = folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        return name

    def _spill_upload(self, up: "Upload", folder: Path) -> "Upload":
        if up.raw is None:                   # already on disk elsewhere: nothing to keep
            return up
        self._write(folder, f"upload-{up.kind}-main", up.raw)
        extras = {}
        for role, (name, raw) in up.extras.items():
            if raw is not None:
                self._write(folder, f"upload-{up.kind}-{role}", raw)
            extras[role] = (name, None)
        return dataclasses.replace(up, raw=None, extras=extras, data=None)

    def _restore_upload(self, up: "Upload", folder: Optional[Path]) -> "Upload":
        if up.raw is not None or folder is None:
            return up
        raw = (folder / f"upload-{up.kind}-main").read_bytes()
        extras = {role: (name, (folder / f"upload-{up.kind}-{role}").read_bytes())
                  for role, (name, _) in up.extras.items()}
        from featagg_app.intake.uploads import read_upload
        data = read_upload(up.kind, up.name, raw,
                           extras={r: (n, b) for r, (n, b) in extras.items()},
                           label=up.label, n_labels=up.n_labels)
        return dataclasses.replace(up, raw=raw, extras=extras, data=data,
                                   fingerprint=data.fingerprint)

    @staticmethod
    def _spill_runs(runs: list, folder: Path) -> Tuple[list, Dict[str, str]]:
        from featagg_core.artifacts.store import save_artifact
        kept, pipes = [], {}
        for i, run in enumerate(runs):
            pipe = getattr(run, "pipeline", None)
            if pipe is None or not dataclasses.is_dataclass(run):
                kept.append(run)
                continue
            name = f"run-{i}.fgz"
            try:
                save_artifact(pipe, folder / name,
                              dataset_fingerprint=getattr(run, "dataset_fingerprint", None))
                pipes[run.run_id] = name
            except Exception:  # noqa: BLE001 - not an artifact class: the run keeps its metrics
                _log.info("featagg sessions: a pipeline of run %s is not spilled",
                          getattr(run, "run_id", "?"), exc_info=True)
            kept.append(dataclasses.replace(run, pipeline=None))
        return kept, pipes
