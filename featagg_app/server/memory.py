"""Memory of a server many people use: sizes in bytes, a byte-bounded cache of shared fits,
and handing freed memory back to the operating system (no streamlit here).

    deep_nbytes(obj) -> int           # bytes of the arrays reachable from obj
    SharedResults(max_bytes)          # LRU by bytes: .get(key) / .put(key, value)
    shared_results_budget() -> int    # FEATAGG_SHARED_FITS_MB (default 256) in bytes
    release_memory() -> int           # gc.collect() + glibc malloc_trim(0); bytes freed
    rss_bytes() -> int                # this process's resident set size
    limit_malloc_arenas(n=2)          # glibc: at most n malloc arenas (call before threads)

Why ``malloc_trim``: glibc keeps freed heap pages of every thread's arena mapped; a server
whose sessions ended holds on to their peak unless it is asked to give the pages back.
Why fewer arenas: every thread that allocates may get its own arena (up to 8 per core),
each keeping its own free pages; Streamlit runs each session's script in its own thread.
"""
from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict, deque
from typing import Any, Callable

__all__ = ["deep_nbytes", "SharedResults", "shared_results_budget", "release_memory",
           "rss_bytes", "limit_malloc_arenas"]


def deep_nbytes(obj, _seen=None, _depth: int = 0) -> int:
    """Bytes of the numpy arrays and scipy sparse matrices reachable from ``obj``
    (attributes, dataclass fields, dicts, lists, tuples; each array counted once), plus
    64 bytes per other object: what a cached fit keeps alive, to bound caches in bytes."""
    import numpy as np
    seen = set() if _seen is None else _seen
    if id(obj) in seen or _depth > 40:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj.base if isinstance(obj.base, np.ndarray) else None
        if base is not None and id(base) in seen:
            return 0
        return int(obj.nbytes)
    if obj is None or isinstance(obj, (bool, int, float, complex, type, str, bytes)):
        return len(obj) if isinstance(obj, (str, bytes)) else 0
    if callable(obj) and not hasattr(obj, "__dict__"):
        return 0
    n = 64
    if hasattr(obj, "tocsr") and hasattr(obj, "nnz"):          # scipy sparse
        for part in ("data", "indices", "indptr", "row", "col", "offsets"):
            arr = getattr(obj, part, None)
            if isinstance(arr, np.ndarray):
                n += deep_nbytes(arr, seen, _depth + 1)
        return n
    if isinstance(obj, dict):
        items = list(obj.items())
        return n + sum(deep_nbytes(k, seen, _depth + 1) + deep_nbytes(v, seen, _depth + 1)
                       for k, v in items)
    if isinstance(obj, (list, tuple, set, frozenset, deque)):
        return n + sum(deep_nbytes(v, seen, _depth + 1) for v in list(obj))
    import types
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.MethodType,
                        threading.Thread)):
        return 0
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        n += sum(deep_nbytes(v, seen, _depth + 1) for v in list(fields.values()))
    for name in getattr(type(obj), "__slots__", ()) or ():
        n += deep_nbytes(getattr(obj, name, None), seen, _depth + 1)
    return n


class SharedResults:
    """A byte-bounded LRU cache of finished results shared by every session (identical fits
    on identical data: a :class:`featagg_core.experiment.Run` and its pipeline, read-only).

    ``max_bytes`` bounds the sum of :func:`deep_nbytes` of the values; a value above
    ``max_bytes // 4`` is not kept (it would evict everything else).
    """

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int] = deep_nbytes):
        self.max_bytes = max(0, int(max_bytes))
        self._size_of = size_of
        self._items: "OrderedDict[str, tuple]" = OrderedDict()
        self._lock = threading.Lock()
        self.nbytes = 0
        self.hits = 0

    def get(self, key: str):
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit[0]

    def put(self, key: str, value) -> bool:
        size = self._size_of(value)
        if size > self.max_bytes // 4:
            return False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._items[key] = (value, size)
            self.nbytes += size
            while self.nbytes > self.max_bytes and self._items:
                _, (_, s) = self._items.popitem(last=False)
                self.nbytes -= s
        return True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def __len__(self) -> int:
        return len(self._items)


def shared_results_budget() -> int:
    """Bytes of shared fits the server keeps (``FEATAGG_SHARED_FITS_MB``, default 256)."""
    raw = os.environ.get("FEATAGG_SHARED_FITS_MB", "").strip()
    try:
        mb = float(raw) if raw else 256.0
    except ValueError:
        mb = 256.0
    return int(max(0.0, mb) * 2 ** 20)


def _libc():
    try:
        import ctypes
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def release_memory() -> int:
    """Collect garbage and ask glibc to return free heap pages to the system
    (``malloc_trim(0)``); returns how many bytes the resident set shrank by (0 when that
    cannot be measured)."""
    before = rss_bytes()
    gc.collect()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    return max(0, before - rss_bytes())


def rss_bytes() -> int:
    """Resident set size of this process in bytes (0 when unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_malloc_arenas(n: int = 2) -> bool:
    """glibc's ``mallopt(M_ARENA_MAX, n)``; True when it was applied. Call it before the
    server starts its threads (``featagg_app.server.serve`` does; ``MALLOC_ARENA_MAX`` in the
    environment does the same for any process)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(-8, int(n)))          # M_ARENA_MAX = -8
