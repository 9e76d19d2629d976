"""Per-browser-session state of the dashboard: the dataset, its shared split, one namespace
per page, and the run registry (the API every page builds on; see docs/RUN_MODEL.md).

Everything lives in ``st.session_state`` under keys starting with ``featagg.``; this module
holds no mutable state of its own. Shared read-only things (the bundled samples) are cached
once per server process with ``st.cache_resource``.

API::

    session_id() -> str
    current_dataset() / current_fingerprint() / current_origin() / current_source_id()
    set_dataset(data, origin="sample"|"upload", source_id=None)      # the sidebar
    require_dataset(kind) -> data                     # kind: multilabel | graph | table
    split_settings(data) / set_split_settings(data, ...)               # the sidebar
    current_split(data) -> experiment.Split           # one per session and dataset
    page_state(page, data=None) -> dict               # one namespace per page
    add_run(run) -> run ; runs(kind=None, fingerprint=None, split_id=None) ; get_run(id)
    run_title(run) -> str ; run_picker(label, kind, split, key, ...) -> Run | None
    show_error(exc, context=None)

**Runs.** Every fit is a :class:`featagg_core.experiment.Run` (its spec, split, metrics
and fitted :class:`~featagg_core.experiment.Pipeline`). :func:`add_run` appends it to the
session's registry; nothing is ever overwritten, so two KTXMLC runs (raw, then on DEFRAG
features) both stay, for Compare and Export. The registry is kept across dataset switches
(Compare compares across them); a page that reuses an upstream run takes it through
:func:`run_picker`, which only hands out runs fitted on the current split.

**Page state.** :func:`page_state` is a page's own dict (which run it shows, drill-down
position, …); all of them are emptied when the session switches dataset, so a page never
shows Bibtex's results over Delicious.
"""
from __future__ import annotations

import logging
import uuid
import weakref
from typing import Callable, Optional

import streamlit as st

from featagg_core.data.samples import list_samples, load_sample

KINDS = ("multilabel", "graph", "table")
DEFAULT_SAMPLES = {"multilabel": "bibtex", "graph": "cora", "table": "adult"}
KIND_TITLES = {"multilabel": "multi-label", "graph": "graph", "table": "table"}

#: the split every dataset starts with (the sidebar changes it per dataset)
DEFAULT_SPLIT = {"test_size": 0.2, "valid_size": 0.0, "random_state": 0, "how": None}

_DATASET = "featagg.dataset"        # dict(data=..., fingerprint=..., origin=..., name=...)
_PAGES = "featagg.pages"            # page -> dict (that page's namespace)
_RUNS = "featagg.runs"              # list of experiment.Run, oldest first
_SPLITS = "featagg.splits"          # fingerprint -> (settings tuple, Split)
_SPLIT_SETTINGS = "featagg.split_settings"   # fingerprint -> dict like DEFAULT_SPLIT
_SESSION_ID = "featagg.session_id"
_PICKED = "featagg.picker_auto"     # picker key -> the run id it picked by itself
_ESTIMATES = "featagg.estimates"    # (dataset, split, spec) -> estimated seconds
_NAMES = "featagg.names_digest"     # fingerprint -> (weakref to data, digest of its names)
#: seconds between two redraws of a running job's panel (each is a fragment rerun that every
#: other session pays for in GIL hand-offs while a job computes: once a second is enough)
PANEL_REFRESH_S = 1.0

_log = logging.getLogger("featagg_app")


def session_id() -> str:
    """A stable id of this browser session (the job runner's fairness and cancel key):
    Streamlit's own session id when running under Streamlit, else one made up once."""
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

def has_own_test(data) -> bool:
    """True when ``data`` is multi-label data with its own test part (``X_test``)."""
    xt = getattr(data, "X_test", None)
    return (getattr(data, "kind", None) == "multilabel" and xt is not None
            and xt.shape[0] > 0 and getattr(data, "Y_test", None) is not None)


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


def current_split(data):
    """The session's split of ``data`` (``experiment.make_split`` with
    :func:`split_settings`), made once and reused by every page until the settings change.

    A multi-label dataset with its own test part uses it (``split.how == "dataset"``).
    """
    from featagg_core.experiment import make_split
    settings = split_settings(data)
    key = (settings["test_size"], settings["valid_size"], settings["random_state"],
           settings["how"])
    store = st.session_state.setdefault(_SPLITS, {})
    hit = store.get(data.fingerprint)
    if hit is not None and hit[0] == key:
        return hit[1]
    split = make_split(data, **settings)
    store[data.fingerprint] = (key, split)
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
    rec["split_text"] = _describe_split(run)
    return rec


def _created_hm(run) -> str:
    created = str(getattr(run, "created", "") or "")
    return created[11:16] if len(created) >= 16 else created


def run_picker(label: str, kind: str, split, key: str, *, where: Optional[Callable] = None,
               on_refit: Optional[Callable] = None, help: Optional[str] = None,
               container=None):
    """A select box over this session's finished runs of ``kind`` on ``split``'s dataset
    (latest first, ``where(run)`` filters further), defaulting to the latest run on
    ``split`` and following new runs until the user picks one. Says which run it uses.

    Returns the picked run when it was fitted on ``split``; a run fitted on another split
    is never reused: the picker says so, offers ``on_refit(run)`` as a button (e.g. start a
    job with the run's spec on the current split) and returns None. Returns None when
    there is no run to pick (the caller says what to do then).
    """
    box = st if container is None else container
    # an imported pipeline scored on this split has a run record but was fitted elsewhere
    # (its pipeline's split differs): a record for Compare, never a step to reuse
    cands = [r for r in reversed(runs(kind=kind, fingerprint=split.dataset_fingerprint,
                                      status="done"))
             if getattr(r.pipeline, "split_id", None) == r.split_id
             and (where is None or where(r))]
    if not cands:
        return None
    ids = [r.run_id for r in cands]
    same = [r for r in cands if r.split_id == split.split_id]
    default = (same[0] if same else cands[0]).run_id
    auto = st.session_state.setdefault(_PICKED, {})
    cur = st.session_state.get(key)
    if cur not in ids or cur == auto.get(key):
        # not chosen by the user (or gone): follow the latest run on this split
        st.session_state[key] = default
        auto[key] = default
    by_id = {r.run_id: r for r in cands}
    # labels made now: format_func must not read the session state (AppTest calls it
    # outside the script run)
    labels = {r.run_id: f"{run_title(r)} · {_created_hm(r)}"
                        + ("" if r.split_id == split.split_id else " (another split)")
              for r in cands}
    rid = box.selectbox(label, ids, key=key, format_func=labels.__getitem__, help=help)
    run = by_id[rid]
    if run.split_id != split.split_id:
        box.warning(f"**{md_escape(run_title(run))}** was fitted on another split "
                    f"({md_escape(_describe_split(run))}); the current split is "
                    f"{md_escape(split.describe())}. Its fitted steps are not reused here "
                    "(some of the current test rows may have been its training rows).",
                    icon=":material/call_split:")
        if on_refit is not None and box.button(f"Refit {run.name} on the current split",
                                               key=f"{key}__refit"):
            on_refit(run)
        return None
    box.caption(f"Using **{md_escape(run_title(run))}** (run {run.run_id[:8]}, "
                f"{_created_hm(run)} UTC).")
    return run


def _describe_split(run) -> str:
    s = getattr(run, "split", None)
    if s is not None and hasattr(s, "describe"):
        return s.describe()
    if isinstance(s, dict) and s.get("description"):
        return str(s["description"])
    return f"split {run.split_id}"


# ---------------------------------------------------------------------------
# jobs: every fit goes through the server's job runner
# ---------------------------------------------------------------------------

def _jobs_of(page: str) -> dict:
    return page_state(page).setdefault("_jobs", {})


def _outcomes_of(page: str) -> dict:
    return page_state(page).setdefault("_outcomes", {})


def approx_seconds(seconds: Optional[float]) -> str:
    """"about 12 s" ("under a second"), or "not known yet" when there is no estimate (the
    server is still compiling the kernels it needs, or the spec is not one it can
    estimate)."""
    if seconds is None:
        return "not known yet"
    text = fmt_seconds(seconds)
    return text if text == "under a second" else f"about {text}"


def fmt_seconds(seconds: Optional[float]) -> str:
    """"under a second", "12 s", "4 min", "1.5 h" (estimates and elapsed times)."""
    if seconds is None:
        return "unknown"
    s = float(seconds)
    if s < 1:
        return "under a second"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _spec_text(spec) -> str:
    import json
    return json.dumps(spec, sort_keys=True, default=str)


@st.cache_resource(max_entries=4, show_spinner=False)
def _shared_stats(fingerprint: str, split_id: str, _data, _split):
    """``estimate.multilabel_stats`` of a dataset and split, once per server: every spec a
    page estimates (the trade-off table's twenty, the baselines' sampling plans) and every
    session on the same split read the same sizes (a pass over 10^6 rows and a sampled
    XᵀY count each time otherwise). Holds no reference to the dataset's matrices."""
    from featagg_core.runs.estimate import multilabel_stats
    return multilabel_stats(_data, _split)


def _stats(data, split):
    """The shared stats of a multi-label ``data`` and ``split``; None otherwise, or while
    the DEFRAG kernels (which count XᵀY's non-zeros) are still compiling in the background:
    the estimate then computes only the sizes its spec reads, as it would on its own."""
    if getattr(data, "kind", None) != "multilabel":
        return None
    from featagg_app.server import jobs
    k = jobs.kernels()
    if k is not None and not k.ready(("defrag",)):
        return None
    return _shared_stats(data.fingerprint, split.split_id, data, split)


def estimate(data, split, spec) -> Optional[float]:
    """``featagg_core.runs.estimate.estimate_seconds`` for ``spec`` on ``split`` (None when the
    spec is not one it can estimate: the page then says "unknown"). Kept per session for
    (dataset, split, spec): the data's statistics behind it cost a pass over the rows,
    which a page must not pay on every rerun."""
    from featagg_core.runs.estimate import estimate_seconds
    cache = st.session_state.setdefault(_ESTIMATES, {})
    key = (data.fingerprint, split.split_id, _spec_text(spec))
    if key not in cache:
        from featagg_app.server import jobs
        k = jobs.kernels()
        if k is not None and not k.ready(("defrag",)):
            # the estimate counts XᵀY's non-zeros with a DEFRAG kernel: on a server still
            # compiling it in the background, a page must not compile it in its rerun
            # (seconds of JIT for a visitor); "unknown" now, the real number once it is there
            return None
        if len(cache) > 200:
            cache.clear()
        try:
            # the server's calibration, measured in the background (never in a rerun)
            from featagg_app.server.jobs import machine_speed
            cache[key] = float(estimate_seconds(data, split, spec, speed=machine_speed(),
                                                stats=_stats(data, split)))
        except ValueError:
            cache[key] = None
    return cache[key]


def sampling_plan(data, split, spec, budget_s: float) -> dict:
    """``featagg_core.agglomeration.clustering.sampling_plan`` (what a baseline would cost, and
    the sample it should use instead), kept per session like :func:`estimate`."""
    from featagg_core.agglomeration.clustering import sampling_plan as plan
    cache = st.session_state.setdefault(_ESTIMATES, {})
    key = ("plan", data.fingerprint, split.split_id, _spec_text(spec), float(budget_s))
    if key not in cache:
        from featagg_app.server.jobs import machine_speed
        cache[key] = plan(data, split, spec, speed=machine_speed(), budget_s=budget_s,
                          stats=_stats(data, split))
    return cache[key]


def submit_job(page: str, slot: str, label: str, fn: Callable, *,
               estimate_s: Optional[float] = None, kind: str = "",
               needs: Optional[tuple] = None, share_key: Optional[str] = None,
               adapt: Optional[Callable] = None):
    """Queue ``fn(progress, cancel)`` on the server's job runner for this session and
    remember the job in ``page``'s namespace under ``slot`` (one job per slot; a new
    submit replaces a finished one, never a running one). Returns the Job, or None when
    this session's queue is full (the page says so). ``needs``: the kernel groups the job
    needs (default: the page's, ``warmup.groups_for_page``), so a job on a server that is
    still compiling them waits in the queue instead of compiling in-process;
    ``share_key``/``adapt``: see ``jobs.JobRunner.submit`` (identical fits are shared)."""
    from featagg_app.server import jobs
    from featagg_app.server.warmup import groups_for_page
    slots = _jobs_of(page)
    old = slots.get(slot)
    if old is not None and old.status in ("queued", "running"):
        return old
    try:
        job = jobs.get_runner().submit(
            session_id(), label, fn, estimate_s=estimate_s, kind=kind,
            needs=groups_for_page(page) if needs is None else needs,
            share_key=share_key, adapt=adapt)
    except jobs.JobQueueFull as exc:
        st.warning(str(exc), icon=":material/hourglass_top:")
        return None
    slots[slot] = job
    _outcomes_of(page).pop(slot, None)
    return job


def _names_digest(data) -> str:
    """A digest of what a person sees of ``data`` beyond its numbers (its name, feature,
    label and class names, table columns), kept per session and dataset: two uploads with
    equal numbers and different names never share a fit."""
    import hashlib
    memo = st.session_state.setdefault(_NAMES, {})
    fp = data.fingerprint
    hit = memo.get(fp)
    if hit is not None and hit[0]() is data:
        return hit[1]
    h = hashlib.sha1()
    h.update(str(getattr(data, "name", "")).encode())
    for attr in ("feature_names", "label_names", "class_names", "label_name"):
        names = getattr(data, attr, None)
        h.update(f"|{attr}:".encode())
        if names is None:
            continue
        if isinstance(names, str):
            h.update(names.encode())
            continue
        h.update("\x1f".join(map(str, names)).encode())
    table = getattr(data, "table", None)
    if table is not None:
        h.update("|columns:".encode() + "\x1f".join(map(str, table.columns)).encode())
    digest = h.hexdigest()[:16]
    if len(memo) > 32:
        memo.clear()
    memo[fp] = (weakref.ref(data), digest)      # never keeps an old dataset alive
    return digest


def share_key(data, planned_runs) -> str:
    """The job runner's share key of fitting ``planned_runs`` (``experiment.plan_run``
    results) on ``data``: their spec keys (dataset fingerprint, split, canonical spec) and
    :func:`_names_digest`."""
    keys = ",".join(r.spec_key for r in planned_runs)
    return f"runs:{keys}:{_names_digest(data)}"


def own_copy(run, data):
    """This session's own Run of a fit shared with another session: a new run id, time
    stamp and the dataset name this session knows; the metrics, timings and sizes copied;
    the fitted pipeline shared read-only (nothing in the app modifies a fitted pipeline)."""
    import copy
    import dataclasses
    import datetime as _dt
    return dataclasses.replace(
        run, run_id=uuid.uuid4().hex,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        dataset_name=str(getattr(data, "name", "") or ""), timings=dict(run.timings),
        metrics=copy.deepcopy(run.metrics), model_sizes=dict(run.model_sizes),
        reused=list(run.reused))


def submit_run(page: str, data, split, spec: dict, *, slot: str = "run", base=None,
               label: Optional[str] = None, estimate_s: Optional[float] = None):
    """Queue ``experiment.run_pipeline(data, split, spec, base=base)`` as a job of this
    session (see :func:`submit_job`); :func:`follow_run` picks its Run up. The spec is
    checked first, so a bad spec raises ValueError here, before anything is queued."""
    from featagg_app.server.warmup import groups_for_page, groups_for_spec
    from featagg_core.distributed import scheduler_from_env
    from featagg_core.experiment import plan_run, run_pipeline
    planned = plan_run(data, split, spec)
    spec_c = planned.spec
    scheduler = scheduler_from_env()  # FEATAGG_DASK_SCHEDULER: DEFRAG/KTXMLC on a cluster

    def work(progress, cancel):
        return run_pipeline(data, split, spec_c, progress=progress, cancel=cancel, base=base,
                            scheduler=scheduler)

    if estimate_s is None:
        estimate_s = estimate(data, split, spec_c)
    # an identical fit (same data, names, split and spec) of any session is shared; a run
    # reusing this session's steps (base) is its own
    shared = {} if base is not None else {
        "share_key": share_key(data, [planned]), "adapt": lambda run: own_copy(run, data)}
    needs = tuple(dict.fromkeys(groups_for_spec(spec_c) + groups_for_page(page)))
    return submit_job(page, slot, label or planned.name, work, estimate_s=estimate_s,
                      kind="run", needs=needs, **shared)


def submit_runs(page: str, data, split, specs: list, *, slot: str, label: str,
                estimate_s: Optional[float] = None):
    """Queue several specs as **one** job that fits them one after the other (e.g. every
    method of the Vocabulary page: one queue slot, one Cancel); :func:`follow_run` returns
    the list of their Runs. Specs are checked before anything is queued."""
    from featagg_core.utils.cancel import cancelling_progress
    from featagg_core.distributed import scheduler_from_env
    from featagg_core.experiment import plan_run, run_pipeline
    plans = [plan_run(data, split, spec) for spec in specs]
    planned = [p.spec for p in plans]
    scheduler = scheduler_from_env()

    def work(progress, cancel):
        out = []
        for i, spec in enumerate(planned):
            report = cancelling_progress(progress, None, i / len(planned),
                                         (i + 1) / len(planned))
            run = run_pipeline(data, split, spec, progress=report, cancel=cancel,
                               scheduler=scheduler)
            if run.status == "cancelled":
                return run                  # the runner marks the whole job cancelled
            out.append(run)
        return out

    if estimate_s is None:
        estimate_s = sum(estimate(data, split, spec) or 0.0 for spec in planned)
    from featagg_app.server.warmup import groups_for_page, groups_for_spec
    needs = tuple(dict.fromkeys(g for spec in planned for g in groups_for_spec(spec)))
    needs = tuple(dict.fromkeys(needs + groups_for_page(page)))
    return submit_job(page, slot, label, work, estimate_s=estimate_s, kind="run",
                      needs=needs, share_key=share_key(data, plans),
                      adapt=lambda runs: [own_copy(r, data) for r in runs])


def running_job(page: str, slot: str):
    """The job of ``page``/``slot`` while it is queued or running, else None."""
    job = _jobs_of(page).get(slot)
    return job if job is not None and job.status in ("queued", "running") else None


def follow_job(page: str, slot: str, draw: bool = True):
    """While the job of ``page``/``slot`` is queued or running, draw its panel (queue
    position, progress, elapsed time, estimate, Cancel) and return None. Once it ended,
    return it (once) and forget it; a cancelled or failed job's outcome stays shown under
    the slot until the next submit. ``draw=False`` only collects a finished job (call it
    again with ``draw=True`` where the panel belongs)."""
    from featagg_app.server import jobs
    slots = _jobs_of(page)
    job = slots.get(slot)
    if job is None:
        if draw:
            _show_outcome(page, slot)
        return None
    if job.status in ("queued", "running"):
        if draw:
            jobs.job_panel(job, key=f"job:{page}:{slot}", run_every=PANEL_REFRESH_S)
        return None
    del slots[slot]
    if job.status == "cancelled":
        _outcomes_of(page)[slot] = ("warning", f"{job.label}: cancelled.")
    elif job.status == "failed":
        # the runner logged the traceback; job.error is the line a person can read
        _outcomes_of(page)[slot] = ("error", f"{job.label} failed: {job.error or job.message}")
    if draw:
        _show_outcome(page, slot)
    return job


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


def _show_outcome(page: str, slot: str) -> None:
    out = _outcomes_of(page).get(slot)
    if out is None:
        return
    level, text = out
    (st.warning if level == "warning" else st.error)(md_escape(text), icon="⚠️")


def follow_run(page: str, slot: str = "run", draw: bool = True):
    """:func:`follow_job` for a :func:`submit_run` job: returns the finished Run once (it
    is added to the registry), None while it runs or when it was cancelled or failed (the
    page then says so). For a :func:`submit_runs` job: the list of its finished Runs."""
    job = follow_job(page, slot, draw)
    if job is None or job.status != "done":
        return None
    several = isinstance(job.result, list)
    done, failed = [], []
    for run in (job.result if several else [job.result]):
        (done if run.status == "done" else failed).append(run)
    for run in done:
        add_run(run)
    if failed:
        _outcomes_of(page)[slot] = ("error", "; ".join(
            f"{r.name}: cancelled." if r.status == "cancelled" else f"{r.name} failed: {r.message}"
            for r in failed))
        if draw:
            _show_outcome(page, slot)
    if several:
        return done
    return done[0] if done else None


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

