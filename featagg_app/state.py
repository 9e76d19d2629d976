"""Per-browser-session state of the dashboard: the dataset, its shared split, one namespace
per page, and the run registry (see docs/RUN_MODEL.md).

Everything lives in ``st.session_state`` under keys starting with ``featagg.``; this module
holds no mutable state of its own. Shared read-only things (the bundled samples) are cached
once per server process with ``st.cache_resource``. Submitting, following and picking runs
is :mod:`featagg_app.runs_ui`'s.

API::

    durable_session() -> str          # app.py, first: the session key of the URL (?session=)
    save_session()                    # app.py, last: the run's state into the server's store
    session_id() -> str
    current_dataset() / current_fingerprint() / current_origin() / current_source_id()
    set_dataset(data, origin="sample"|"upload", source_id=None)      # the sidebar
    require_dataset(kind) -> data                     # kind: multilabel | graph | table
    split_settings(data) / set_split_settings(data, ...)               # the sidebar
    current_split(data) -> experiment.Split           # one per session and dataset
    page_state(page, data=None) -> dict               # one namespace per page
    page_jobs(page) -> dict                           # its job slots (runs_ui fills them)
    add_run(run) -> run ; runs(kind=None, fingerprint=None, split_id=None) ; get_run(id)
    run_title(run) -> str ; run_record(run) -> dict ; split_text(run) -> str

**Runs.** Every fit is a :class:`featagg_core.experiment.Run` (its spec, split, metrics
and fitted :class:`~featagg_core.experiment.Pipeline`). :func:`add_run` appends it to the
session's registry; nothing is ever overwritten, so two KTXMLC runs (raw, then on DEFRAG
features) both stay, for Compare and Export. The registry is kept across dataset switches
(Compare compares across them); a page that reuses an upstream run takes it through
``runs_ui.run_picker``, which only hands out runs fitted on the current split.

**Durable sessions.** The page URL carries the session's key (``?session=KEY``, made by
:func:`featagg_app.server.sessions.new_key`). :func:`durable_session` runs first on every
script run: a new browser session whose URL names a known key gets that session's state
back (dataset, uploads, split, runs, page namespaces, widget values such as Large text);
a missing, made-up or expired key gets a new session and a new key in the URL; a page
change that dropped the parameter gets it back. :func:`save_session` runs last and hands
the state to the server's store (:func:`featagg_app.server.context.get_sessions`), which
bounds it (docs/ARCHITECTURE.md, "Durable sessions"). Jobs run under the durable session's
id (:func:`session_id`), so a reload finds its running job again.

**Page state.** :func:`page_state` is a page's own dict (which run it shows, drill-down
position, its job slots, …); all of them are emptied when the session switches dataset
(their queued and running jobs cancelled first), so a page never shows Bibtex's results
over Delicious.
"""
from __future__ import annotations

import hmac
import logging
import uuid
from typing import Optional

import streamlit as st

from featagg_app.text import md_escape, show_error
from featagg_core.data.samples import list_samples, load_sample
from featagg_core.runs.split import has_own_test, n_rows_of

KINDS = ("multilabel", "graph", "table")
DEFAULT_SAMPLES = {"multilabel": "bibtex", "graph": "cora", "table": "adult"}
KIND_TITLES = {"multilabel": "multi-label", "graph": "graph", "table": "table"}

#: the split every dataset starts with (the sidebar changes it per dataset)
DEFAULT_SPLIT = {"test_size": 0.2, "valid_size": 0.0, "random_state": 0, "how": None}

_DATASET = "featagg.dataset"        # dict(data=..., fingerprint=..., origin=..., name=...)
_PAGES = "featagg.pages"            # page -> dict (that page's namespace)
_RUNS = "featagg.runs"              # list of experiment.Run, oldest first
_SPLITS = "featagg.splits"          # (fingerprint, name) -> (settings tuple, Split)
_SPLIT_SETTINGS = "featagg.split_settings"   # fingerprint -> dict like DEFAULT_SPLIT
_SESSION_ID = "featagg.session_id"
_SESSION_KEY = "featagg.session_key"       # the durable session's key (also in the URL)
#: set for one run when the URL named a session this server does not have
SESSION_NOTICE = "featagg.session_unknown"
#: the URL query parameter that carries the session key (a contract: keep the name)
QUERY_PARAM = "session"
#: widget value kinds that may be given back through st.session_state (buttons, uploads,
#: selections and editors cannot be set that way)
_SETTABLE = frozenset({"bool_value", "int_value", "double_value", "string_value",
                       "double_array_value", "int_array_value", "string_array_value"})

_log = logging.getLogger("featagg_app")


def _same(a, b) -> bool:
    return (isinstance(a, str) and isinstance(b, str)
            and hmac.compare_digest(a.encode("utf-8", "surrogatepass"),
                                    b.encode("utf-8", "surrogatepass")))


def _url_key() -> Optional[str]:
    try:
        value = st.query_params.get(QUERY_PARAM)
    except Exception:  # noqa: BLE001
        return None
    return value if isinstance(value, str) and value else None


def _set_url_key(key: str) -> None:
    try:
        if st.query_params.get(QUERY_PARAM) != key:
            st.query_params[QUERY_PARAM] = key
    except Exception:  # noqa: BLE001 - no URL (a bare script run)
        _log.debug("featagg: cannot set the session query parameter", exc_info=True)


def _restore(rec, key: str, replace: bool = False) -> None:
    if replace:        # this tab showed another session: nothing of it may stay behind
        for k in list(st.session_state.keys()):
            if k not in rec.values:
                try:
                    del st.session_state[k]
                except Exception:  # noqa: BLE001
                    _log.debug("featagg: could not drop %r", k, exc_info=True)
    for k, v in rec.values.items():
        if k in (_SESSION_KEY, SESSION_NOTICE):
            continue
        try:
            st.session_state[k] = v
        except Exception:  # noqa: BLE001 - a value Streamlit refuses stays behind
            _log.debug("featagg: could not restore %r", k, exc_info=True)
    st.session_state[_SESSION_KEY] = key
    st.session_state[_SESSION_ID] = rec.sid


def durable_session() -> str:
    """Tie this browser session to its durable session (``app.py`` calls it first on every
    script run); returns the session's key, which the URL then carries.

    * this browser session has a key: it stays (the URL gets it back when a page change
      dropped it; a URL naming another known session switches to that one);
    * a new browser session whose URL names a known key: that session's state comes back;
    * otherwise (no key, a made-up or expired one): a new session, a new key in the URL,
      and :data:`SESSION_NOTICE` set when the URL named one (``app.py`` says so).
    """
    from featagg_app.server import context
    store = context.get_sessions()
    url_key = _url_key()
    mine = st.session_state.get(_SESSION_KEY)
    if mine is not None:
        if url_key is not None and not _same(url_key, mine):
            rec = store.lookup(url_key)
            if rec is not None:
                save_session()                 # what this tab showed stays with its key
                _restore(rec, url_key, replace=True)
                return url_key
        if store.lookup(mine) is None:        # forgotten meanwhile: keep this tab's work
            store.create(key=mine, sid=session_id())
        _set_url_key(mine)
        return mine
    if url_key is not None:
        rec = store.lookup(url_key)
        if rec is not None:
            _restore(rec, url_key)
            _set_url_key(url_key)
            return url_key
        st.session_state[SESSION_NOTICE] = True
    key, rec = store.create()
    st.session_state[_SESSION_KEY] = key
    st.session_state[_SESSION_ID] = rec.sid
    _set_url_key(key)
    return key


def _run_state():
    """(values by user key, widget value kind by user key) of this run, read from
    Streamlit's own session state without its execution-control checks: the run may be
    ending through ``st.stop()`` or ``st.rerun()``, after which every ``st.session_state``
    access raises. None when Streamlit's internals are not there."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        safe = get_script_run_ctx().session_state
        raw = safe._state
        with safe._lock:
            values = dict(raw.filtered_state)
            kinds = {}
            for k in values:
                wid = raw.get_widget_id_from_key(k)
                meta = None if wid is None else raw.get_widget_metadata(wid)
                if wid is not None:
                    kinds[k] = getattr(meta, "value_type", None) or "?"
        return values, kinds
    except Exception:  # noqa: BLE001 - internals moved
        _log.debug("featagg: cannot read the run's state", exc_info=True)
        return None


def save_session() -> None:
    """Hand this run's state to the server's store under the session's key (``app.py``
    calls it when a script run ends, however it ends: ``st.stop()`` and ``st.rerun()``
    included). Widget values are kept when they can be given back (not buttons, uploads
    or selections)."""
    got = _run_state()
    if got is None:
        return
    state, kinds = got
    key = state.get(_SESSION_KEY)
    if key is None:
        return
    from featagg_app.server.context import get_sessions
    from featagg_app.server.sessions import _plain
    values = {}
    for k, v in state.items():
        if k in (_SESSION_KEY, SESSION_NOTICE):
            continue
        if k in kinds:
            if kinds[k] not in _SETTABLE or isinstance(v, dict) or not _plain(v):
                continue
        elif not str(k).startswith("featagg.") and not _plain(v):
            continue
        elif str(k).startswith("featagg_upload_"):      # an uploader never seen this run
            continue
        values[k] = v
    store = get_sessions()
    if not store.save(key, values):
        store.create(key=key, sid=str(state.get(_SESSION_ID) or uuid.uuid4().hex))
        store.save(key, values)


def session_id() -> str:
    """A stable id of this person's session (the job runner's fairness and cancel key):
    the durable session's id (:func:`durable_session`; a reload keeps it), Streamlit's own
    session id when a page runs without it, else one made up once."""
    sid = st.session_state.get(_SESSION_ID)
    if sid is None:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        sid = str(getattr(get_script_run_ctx(), "session_id", None) or uuid.uuid4().hex)
        st.session_state[_SESSION_ID] = sid
    return sid


# ---------------------------------------------------------------------------
# samples (shared, read-only, cached once per server process)
# ---------------------------------------------------------------------------

@st.cache_resource(show_spinner="Loading the sample dataset…", max_entries=16)
def load_sample_cached(name: str):
    """The bundled sample ``name`` (``featagg_core.data.samples.load_sample``), shared read-only
    by every session of this server process. Do not modify the returned object."""
    return load_sample(name)


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
    ``source_id``: the sample name for samples). Empties every page's namespace when the
    dataset changes (what a page shows belongs to the dataset it was computed on); the run
    registry is kept."""
    fp = data.fingerprint
    old = _entry()
    if old is None or old["fingerprint"] != fp:
        cancel_page_jobs()
        st.session_state[_PAGES] = {}
    st.session_state[_DATASET] = {"data": data, "fingerprint": fp, "origin": origin,
                                  "source_id": source_id,
                                  "name": getattr(data, "name", "") or "dataset"}


def display_name(data) -> str:
    """The sample's title (e.g. "Bibtex (tag suggestion)") for a bundled sample, else the
    dataset's ``name`` (e.g. an uploaded file's name)."""
    name = getattr(data, "name", "") or "dataset"
    for info in list_samples():
        if info.name == name:
            return info.title if load_sample(name) is data else name
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
# the shared split (one per session and dataset)
# ---------------------------------------------------------------------------

def split_settings(data) -> dict:
    """This session's split settings for ``data``: ``test_size`` (ignored when the dataset's
    own test part is used), ``valid_size``, ``random_state`` and ``how`` (None: the
    dataset's own test part when it has one; "random": a random split even then)."""
    saved = st.session_state.get(_SPLIT_SETTINGS, {}).get(data.fingerprint)
    return dict(DEFAULT_SPLIT, **(saved or {}))


def set_split_settings(data, test_size: float, valid_size: float, random_state: int,
                       how: Optional[str] = None) -> None:
    """Change this session's split of ``data`` (the sidebar's split widget). Runs fitted on
    the old split stay in the registry; pages no longer reuse them (see
    :func:`run_picker`)."""
    st.session_state.setdefault(_SPLIT_SETTINGS, {})[data.fingerprint] = {
        "test_size": float(test_size), "valid_size": float(valid_size),
        "random_state": int(random_state), "how": how}


#: a split is shared by every session of the server only for data of at most this many
#: rows (its row indices: 1 MiB at most; the cache keeps 16, 16 MiB at most, beyond the
#: sessions' lifetime); a larger upload's split lives and dies with its session, as before
SHARED_SPLIT_MAX_ROWS = 2 ** 17


def _row_count(data) -> int:
    """Rows a split of ``data`` indexes: ``n_rows_of`` (points, nodes, table rows) and a
    multi-label dataset's own test rows."""
    return n_rows_of(data) + (int(data.X_test.shape[0]) if has_own_test(data) else 0)


@st.cache_resource(max_entries=16, show_spinner=False)
def _shared_split(fingerprint: str, name: str, kind: str, test_size, valid_size,
                  random_state, how, _data):
    """One :class:`~featagg_core.runs.split.Split` per dataset (fingerprint, name, kind)
    and settings for the whole server: a split is a deterministic function of them and
    read-only (frozen, its row arrays not writeable), so a class on Bibtex holds one copy
    of its row indices (59 KB), not one per student and per durable session kept after the
    class. The name is part of the key because the split carries it (``dataset_name``):
    two people uploading the same bytes under different file names must each see their
    own name, never the other's (the class simulator's cross-talk check caught exactly
    that with the fingerprint alone)."""
    from featagg_core.experiment import make_split
    return make_split(_data, test_size=test_size, valid_size=valid_size,
                      random_state=random_state, how=how)


def current_split(data):
    """The session's split of ``data`` (``experiment.make_split`` with
    :func:`split_settings`), made once and reused by every page until the settings change;
    sessions on the same dataset with the same settings share one (read-only) object when
    the data has at most :data:`SHARED_SPLIT_MAX_ROWS` rows (a class's sample or small
    uploads; a large upload's split is its session's own and is freed with it).

    A multi-label dataset with its own test part uses it (``split.how == "dataset"``).
    """
    settings = split_settings(data)
    key = (settings["test_size"], settings["valid_size"], settings["random_state"],
           settings["how"])
    name, kind = str(getattr(data, "name", "") or ""), str(getattr(data, "kind", ""))
    store = st.session_state.setdefault(_SPLITS, {})
    hit = store.get((data.fingerprint, name))
    if hit is not None and hit[0] == key:
        return hit[1]
    if _row_count(data) <= SHARED_SPLIT_MAX_ROWS:
        split = _shared_split(data.fingerprint, name, kind, *key, _data=data)
    else:
        from featagg_core.experiment import make_split
        split = make_split(data, **settings)
    store[(data.fingerprint, name)] = (key, split)
    return split


def split_caption(split) -> str:
    """The line a page shows under its title: which split it is on."""
    return f"Split: {md_escape(split.describe())} (change it in the sidebar)"


# ---------------------------------------------------------------------------
# one namespace per page
# ---------------------------------------------------------------------------

def page_state(page: str, data=None) -> dict:
    """The namespace (a dict) of ``page`` in this session: what the page shows (e.g. the
    id of its last run), never a fitted object other pages read. Emptied when the session
    switches dataset; with ``data`` also when that page last ran on another dataset (a page
    that fell back to a sample of another kind)."""
    pages = st.session_state.setdefault(_PAGES, {})
    ns = pages.get(page)
    fp = None if data is None else data.fingerprint
    if ns is None or (fp is not None and ns.get("_fingerprint", fp) != fp):
        ns = pages[page] = {}
    if fp is not None:
        ns["_fingerprint"] = fp
    return ns


def page_jobs(page: str) -> dict:
    """The job slots of ``page`` (slot name -> Job) in its namespace: what
    ``runs_ui`` submits and follows, and what :func:`set_dataset` cancels."""
    return page_state(page).setdefault("_jobs", {})


def cancel_page_jobs() -> int:
    """Cancel every queued or running job the session's pages started (the dataset is
    changing: their results would belong to the old one). Returns how many."""
    n = 0
    for ns in st.session_state.get(_PAGES, {}).values():
        for job in ns.get("_jobs", {}).values():
            if job.status in ("queued", "running"):
                job.cancel()
                n += 1
    return n


# ---------------------------------------------------------------------------
# the run registry
# ---------------------------------------------------------------------------

def add_run(run):
    """Append ``run`` (an ``experiment.Run``) to this session's registry and return it.
    Runs are never replaced: adding the same run object twice keeps one entry."""
    reg = st.session_state.setdefault(_RUNS, [])
    if not any(r is run or r.run_id == run.run_id for r in reg):
        reg.append(run)
    return run


def runs(kind: Optional[str] = None, fingerprint: Optional[str] = None,
         split_id: Optional[str] = None, status: Optional[str] = None) -> list:
    """This session's runs, oldest first, optionally only those of ``kind`` ("classifier",
    "agglomeration", "feature_clustering", "feature_selection", "vocabulary"), dataset
    ``fingerprint``, ``split_id`` and ``status`` ("done", …)."""
    out = []
    for r in st.session_state.get(_RUNS, []):
        if kind is not None and r.kind != kind:
            continue
        if fingerprint is not None and r.dataset_fingerprint != fingerprint:
            continue
        if split_id is not None and r.split_id != split_id:
            continue
        if status is not None and r.status != status:
            continue
        out.append(r)
    return out


def get_run(run_id: Optional[str]):
    """The run with ``run_id`` in this session's registry, or None."""
    if run_id is None:
        return None
    for r in st.session_state.get(_RUNS, []):
        if r.run_id == run_id:
            return r
    return None


def run_number(run) -> int:
    """1-based position of ``run`` in this session's registry (0 when not in it)."""
    for i, r in enumerate(st.session_state.get(_RUNS, []), 1):
        if r.run_id == run.run_id:
            return i
    return 0


def run_title(run) -> str:
    """"#3 KTXMLC K=2 T=3 · DEFRAG d0=8": the run's name (from its spec) and its number in
    this session, so two runs of one spec stay apart."""
    n = run_number(run)
    return f"#{n} {run.name}" if n else str(run.name)


def run_record(run) -> dict:
    """``run.to_record()`` plus ``title`` (:func:`run_title`) and ``split_text`` (the
    split's description): what Compare and Export's run table show."""
    rec = dict(run.to_record())
    rec["title"] = run_title(run)
    rec["split_text"] = split_text(run)
    return rec


def split_text(run) -> str:
    """How ``run``'s split is described: Compare's and Export's tables, the run picker's
    warning about a run of another split."""
    s = getattr(run, "split", None)
    if s is not None and hasattr(s, "describe"):
        return s.describe()
    if isinstance(s, dict) and s.get("description"):
        return str(s["description"])
    return f"split {run.split_id}"
