"""Debug only: where a server's resident memory sits (issue 31's after-class residue).

With ``FEATAGG_MEMORY_REPORT=/path/file.jsonl`` in the server's environment, the session
reaper appends one JSON line per sweep (every 10 s) from :func:`report`; unset (the
default) nothing is measured. Each line: the resident set (anonymous vs file-backed),
glibc's heap (in use vs free but not returned), the shared-fit cache, the durable sessions
(in memory vs spilled, and what their values still hold), Streamlit's own session manager,
uploaded and media files, session-scoped data caches, and object counts by type.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import time
from collections import Counter

ENV = "FEATAGG_MEMORY_REPORT"


def enabled() -> str:
    """The report file (``FEATAGG_MEMORY_REPORT``), or '' when the report is off."""
    return os.environ.get(ENV, "").strip()


def _smaps() -> dict:
    out = {}
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[0].rstrip(":") in ("Rss", "Anonymous",
                                                                  "Shared_Clean",
                                                                  "Private_Clean",
                                                                  "Private_Dirty"):
                    out[parts[0].rstrip(":")] = int(parts[1]) / 1024
    except OSError:
        pass
    return out


def _anon_maps() -> dict:
    """Resident MB of the anonymous mappings by shape: glibc's 64 MB arenas, 1 MiB
    (pymalloc's arenas), 8 MB (thread stacks), the main heap, the rest."""
    out: dict = {}
    cur = None
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                parts = line.split()
                if parts and "-" in parts[0] and not parts[0].endswith(":"):
                    a, b = parts[0].split("-")
                    size = int(b, 16) - int(a, 16)
                    name = parts[5] if len(parts) > 5 else ""
                    if name == "[heap]":
                        cur = "main_heap"
                    elif name:
                        cur = None
                    elif size == 64 * 2 ** 20 or (2 ** 26 - size) < 2 ** 21 and size > 2 ** 25:
                        cur = "arena_64M"
                    elif size == 2 ** 20:
                        cur = "1MiB"
                    elif 8 * 2 ** 20 <= size <= 8 * 2 ** 20 + 8192:
                        cur = "stack_8M"
                    else:
                        cur = "other"
                elif parts and parts[0] == "Rss:" and cur is not None:
                    out[cur] = out.get(cur, 0.0) + int(parts[1]) / 1024
    except OSError:
        pass
    return out


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                                              "hblkhd", "usmblks", "fsmblks", "uordblks",
                                              "fordblks", "keepcost")]


def _mallinfo() -> dict:
    try:
        libc = ctypes.CDLL("libc.so.6")
        f = libc.mallinfo2
        f.restype = _MallInfo2
        m = f()
        mb = 2 ** 20
        return {"heap_mb": m.arena / mb, "mmapped_mb": m.hblkhd / mb,
                "in_use_mb": m.uordblks / mb, "free_mb": m.fordblks / mb,
                "free_chunks": m.ordblks}
    except (OSError, AttributeError):
        return {}


def _durable(store) -> dict:
    from featagg_app.server.memory import deep_nbytes
    mem = spilled = 0
    n_mem = n_spilled = 0
    keys = Counter()
    with store._lock:
        items = list(store._items.values())
    for rec in items:
        size = deep_nbytes(rec.values)
        if rec.spilled:
            n_spilled += 1
            spilled += size
        else:
            n_mem += 1
            mem += size
        keys.update(rec.values.keys())
    return {"in_memory": n_mem, "spilled": n_spilled, "in_memory_mb": mem / 2 ** 20,
            "spilled_light_mb": spilled / 2 ** 20, "keys": dict(keys.most_common(12)),
            "stats": store.stats()}


def _streamlit() -> dict:
    out = {}
    try:
        from streamlit.runtime import Runtime
        if not Runtime.exists():
            return out
        rt = Runtime.instance()
        mgr = rt._session_mgr
        out["active_sessions"] = len(mgr.list_active_sessions())
        out["all_sessions"] = len(mgr.list_sessions())
        storage = getattr(mgr, "_session_storage", None)
        cache = getattr(storage, "_cache", None)
        if cache is not None:
            out["session_storage"] = len(cache)
        up = rt._uploaded_file_mgr
        out["uploaded_files"] = getattr(up, "_file_count", None)
        out["uploaded_mb"] = (getattr(up, "_total_bytes", 0) or 0) / 2 ** 20
        media = getattr(rt._media_file_mgr, "_storage", None)
        files = getattr(media, "_files_by_id", None)
        if files is not None:
            out["media_files"] = len(files)
            out["media_mb"] = sum(len(getattr(f, "content", b"") or b"")
                                  for f in list(files.values())) / 2 ** 20
        from streamlit.runtime.caching import cache_data_api
        caches = getattr(cache_data_api._data_caches, "_function_caches", {})
        out["data_cache_scopes"] = len(caches)
    except Exception as exc:  # noqa: BLE001 - a debug report never breaks the server
        out["error"] = repr(exc)
    return out


def report(runner=None, store=None, reaper=None) -> dict:
    """One snapshot (see the module docstring)."""
    from featagg_app.server.memory import rss_bytes
    gc.collect()
    out = {"t": time.time(), "pid": os.getpid(), "rss_mb": rss_bytes() / 2 ** 20, "smaps_mb": _smaps(),
           "malloc": _mallinfo(), "pymalloc_blocks": sys.getallocatedblocks()}
    shared = getattr(runner, "shared", None)
    if shared is not None:
        out["shared_fits"] = {"n": len(shared), "mb": shared.nbytes / 2 ** 20}
    if store is not None:
        out["durable"] = _durable(store)
    if reaper is not None:
        out["reaper_seen"] = len(reaper.known())
    out["streamlit"] = _streamlit()
    out["anon_maps_mb"] = _anon_maps()
    if os.environ.get(ENV + "_TRIM", "").strip() == "1":    # how much a trim gives back now
        from featagg_app.server.memory import release_memory
        out["trim_probe_mb"] = release_memory() / 2 ** 20
    objs = gc.get_objects()
    out["gc_objects"] = len(objs)
    counts = Counter(type(o).__qualname__ for o in objs)
    out["types"] = dict(counts.most_common(25))
    try:
        import numpy as np
        arrays = [o for o in objs if isinstance(o, np.ndarray)]
        out["ndarrays"] = len(arrays)
        out["ndarray_own_mb"] = sum(a.nbytes for a in arrays if a.base is None) / 2 ** 20
    except ImportError:
        pass
    del objs
    return out


def write(path: str, **kw) -> None:
    """Append :func:`report` as one JSON line to ``path``."""
    with open(path, "a") as f:
        f.write(json.dumps(report(**kw), default=str) + "\n")
