"""Per-browser-session state of the dashboard (the API every page builds on).

Everything lives in ``st.session_state`` under keys starting with ``featagg.``; this module
holds no mutable state of its own. Shared read-only things (the bundled samples) are cached
once per server process with ``st.cache_resource``.

API (see docs/CONVENTIONS.md)::

    current_dataset() -> data | None
    set_dataset(data, origin="sample"|"upload") -> None        # used by the sidebar
    require_dataset(kind) -> data                               # kind: multilabel|graph|table
    put(key, value) -> None ; get(key, default=None) -> value
    record_run(page, method, dataset, params, metrics, timings, model_size_bytes=None) -> dict
    runs() -> list[dict]
    show_error(exc) -> None

Fitted objects stored with :func:`put` belong to the dataset they were fitted on: when the
session switches to another dataset (sidebar pick or upload) the ``put`` store is emptied,
so a page never reuses e.g. a Defrag fitted on Bibtex for Delicious. The run registry
(:func:`runs`) is kept across dataset switches (the Compare page compares across them).
"""
from __future__ import annotations

import datetime as _dt
import logging
import uuid
from typing import Any, Optional

import streamlit as st

KINDS = ("multilabel", "graph", "table")
DEFAULT_SAMPLES = {"multilabel": "bibtex", "graph": "cora", "table": "adult"}
KIND_TITLES = {"multilabel": "multi-label", "graph": "graph", "table": "table"}

_DATASET = "featagg.dataset"        # dict(data=..., fingerprint=..., origin=..., name=...)
_STORE = "featagg.store"            # dict key -> value (per-dataset fitted objects)
_RUNS = "featagg.runs"              # list of run dicts

_log = logging.getLogger("featagg_app")


# ---------------------------------------------------------------------------
# samples (shared, read-only, cached once per server process)
# ---------------------------------------------------------------------------

@st.cache_resource(show_spinner="Loading the sample dataset…", max_entries=16)
def load_sample_cached(name: str):
    """The bundled sample ``name`` (``featagg_core.samples.load_sample``), shared read-only
    by every session of this server process. Do not modify the returned object."""
    from featagg_core.samples import load_sample
    return load_sample(name)


def list_samples_safe(kind: Optional[str] = None) -> list:
    """``featagg_core.samples.list_samples(kind)``, or [] if the module is not there yet."""
    try:
        from featagg_core.samples import list_samples
    except ImportError:
        return []
    return list(list_samples(kind))


# ---------------------------------------------------------------------------
# the session's dataset
# ---------------------------------------------------------------------------

def _entry() -> Optional[dict]:
    return st.session_state.get(_DATASET)


def current_dataset():
    """The dataset this browser session picked (sample or upload), or None."""
    e = _entry()
    return None if e is None else e["data"]


def current_fingerprint() -> Optional[str]:
    """Fingerprint of :func:`current_dataset` (computed once when it was set)."""
    e = _entry()
    return None if e is None else e["fingerprint"]


def current_origin() -> Optional[str]:
    """"sample" or "upload" for the current dataset, None when nothing is picked."""
    e = _entry()
    return None if e is None else e["origin"]


def current_source_id() -> Optional[str]:
    """The sample name of the current dataset when it is a bundled sample, else None."""
    e = _entry()
    return e.get("source_id") if e is not None and e["origin"] == "sample" else None


def set_dataset(data, origin: str = "sample", source_id: Optional[str] = None) -> None:
    """Make ``data`` the session's dataset (``origin``: "sample" or "upload";
    ``source_id``: the sample name for samples). Empties the :func:`put` store when the
    dataset changes (fitted objects belong to the dataset they were fitted on)."""
    fp = data.fingerprint
    old = _entry()
    if old is None or old["fingerprint"] != fp:
        st.session_state[_STORE] = {}
    st.session_state[_DATASET] = {"data": data, "fingerprint": fp, "origin": origin,
                                  "source_id": source_id,
                                  "name": getattr(data, "name", "") or "dataset"}


def display_name(data) -> str:
    """The sample's title (e.g. "Bibtex (tag suggestion)") for a bundled sample, else the
    dataset's ``name`` (e.g. an uploaded file's name)."""
    name = getattr(data, "name", "") or "dataset"
    for info in list_samples_safe():
        if info.name == name:
            try:
                from featagg_core.samples import load_sample
                if load_sample(name) is data:
                    return info.title
            except Exception:  # noqa: BLE001 - a label must never fail
                pass
            break
    return name


def dataset_label(data) -> str:
    """Short human description: "Bibtex (tag suggestion) — multi-label, 4,880 points ×
    1,836 features, 159 labels"."""
    name = display_name(data)
    kind = getattr(data, "kind", "")
    if kind == "multilabel":
        extra = (f"{data.X.shape[0]:,} points × {data.X.shape[1]:,} features, "
                 f"{data.Y.shape[1]:,} labels")
    elif kind == "graph":
        extra = f"{data.A.shape[0]:,} nodes, {data.A.nnz // 2:,} edges"
    elif kind == "table":
        extra = f"{len(data.labels):,} rows × {len(data.table.columns)} columns"
    else:
        extra = ""
    return f"{name} — {KIND_TITLES.get(kind, kind)}, {extra}" if extra else name


def require_dataset(kind: str):
    """The session's dataset if it is of ``kind`` ("multilabel" | "graph" | "table"), else
    the default bundled sample for ``kind`` (bibtex / cora / adult), saying so in the page.

    Works when a page runs on its own (``AppTest.from_file("pages/x.py")``). If even the
    sample cannot be loaded, shows the error and stops the script run (``st.stop``).
    """
    if kind not in KINDS:
        raise ValueError(f"require_dataset: kind must be one of {KINDS}, got {kind!r}")
    data = current_dataset()
    if data is not None and data.kind == kind:
        return data
    name = DEFAULT_SAMPLES[kind]
    try:
        sample = load_sample_cached(name)
    except Exception as exc:  # noqa: BLE001 - never a traceback in the browser
        show_error(exc, context=f"Could not load the default {KIND_TITLES[kind]} sample "
                                f"{name!r}")
        st.stop()
    if data is None:
        st.info(f"This page works on {KIND_TITLES[kind]} data: using the bundled sample "
                f"**{md_escape(display_name(sample))}**. Pick another dataset in the sidebar.")
    else:
        st.info(f"This page works on {KIND_TITLES[kind]} data, and the dataset picked in the "
                f"sidebar (**{md_escape(display_name(data))}**) is "
                f"{KIND_TITLES.get(data.kind, data.kind)} data: using the bundled sample "
                f"**{md_escape(display_name(sample))}** here instead.")
    return sample


# ---------------------------------------------------------------------------
# per-session fitted objects
# ---------------------------------------------------------------------------

def put(key: str, value: Any) -> None:
    """Keep ``value`` for this browser session under ``key`` (e.g. ``"defrag"``).
    Emptied when the session switches dataset (see module docstring)."""
    st.session_state.setdefault(_STORE, {})[key] = value


def get(key: str, default: Any = None) -> Any:
    """The value :func:`put` under ``key`` in this session, or ``default``."""
    return st.session_state.get(_STORE, {}).get(key, default)


# ---------------------------------------------------------------------------
# run registry (the Compare page reads it)
# ---------------------------------------------------------------------------

def record_run(page: str, method: str, dataset, params: dict, metrics: dict, timings: dict,
               model_size_bytes: Optional[int] = None) -> dict:
    """Append one run to this session's registry and return the stored dict.

    ``dataset`` is the data object the run used (its ``name`` and ``fingerprint`` are
    stored, not the data) or a plain name string. ``params``/``metrics``/``timings``
    (seconds) are copied into plain dicts. The stored dict has keys ``run_id`` (short
    hex), ``timestamp`` (ISO 8601, UTC), ``page``, ``method``, ``dataset``,
    ``fingerprint``, ``kind``, ``params``, ``metrics``, ``timings``, ``model_size_bytes``.
    """
    if isinstance(dataset, str):
        ds_name, fp, kind = dataset, None, None
    else:
        ds_name = getattr(dataset, "name", "") or "dataset"
        fp = getattr(dataset, "fingerprint", None)
        kind = getattr(dataset, "kind", None)
    run = {
        "run_id": uuid.uuid4().hex[:8],
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "page": str(page),
        "method": str(method),
        "dataset": ds_name,
        "fingerprint": fp,
        "kind": kind,
        "params": dict(params or {}),
        "metrics": dict(metrics or {}),
        "timings": dict(timings or {}),
        "model_size_bytes": None if model_size_bytes is None else int(model_size_bytes),
    }
    st.session_state.setdefault(_RUNS, []).append(run)
    return run


def runs() -> list:
    """This session's runs, oldest first (a copy of the list; the dicts are the stored ones)."""
    return list(st.session_state.get(_RUNS, []))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

_MD_SPECIAL = "\\`*[]<>$~|"  # not "_": intraword underscores stay literal in CommonMark


def md_escape(text: str) -> str:
    """Escape markdown (and Streamlit's $…$ LaTeX) so a file name or message shows as typed."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))


def error_message(exc: BaseException) -> str:
    """The text :func:`show_error` shows for ``exc`` (no markdown escaping): the message of a
    DatasetError / ValueError, else a generic line naming the exception type."""
    if isinstance(exc, ValueError):  # DatasetError is a ValueError
        return str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError):
        return "Not enough memory for this operation; try a smaller dataset or setting."
    return (f"Something went wrong ({type(exc).__name__}: {exc}). The details are in the "
            f"server log.")


def show_error(exc: BaseException, context: Optional[str] = None) -> None:
    """Show ``exc`` in the page with ``st.error`` — the message only, never a traceback.
    DatasetError/ValueError messages are shown as they are; anything else is logged on the
    server (with its traceback) and shown as a short generic line."""
    if not isinstance(exc, ValueError):
        _log.error("featagg: unexpected error", exc_info=exc)
    msg = md_escape(error_message(exc))
    st.error(f"{md_escape(context)}: {msg}" if context else msg, icon="⚠️")


def stored() -> dict:
    """A copy of this session's ``put`` store: key -> fitted object (the Export page lists it)."""
    return dict(st.session_state.get(_STORE, {}))
