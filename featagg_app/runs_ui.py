"""How a page runs things: its Run button, the job behind it, the panel while it runs, and
the run it shows afterwards — every page's Run goes through :func:`run_section`.

A page reads as widgets → one ``run_section(...)`` → views::

    sec = runs_ui.run_section(PAGE, data, split, spec, slot="defrag", key="fa_run",
                              button="Run", caption="on this server (…).",
                              picker=runs_ui.Picker("Show run", "agglomeration", "fa_show_run"),
                              empty="Choose the representation and d0, then press **Run**.")
    # here sec.run is the run to show (the page stopped with ``empty`` otherwise)

API::

    run_section(page, data, split, work, *, slot, key, button, …) -> Section
        work: a spec (one run), a list of specs (one job fitting them one after the
        other), or fn(progress, cancel) returning a Run or an object with ``.runs`` (an
        experiment, a triage report); see the function for the layouts
    Picker(label, kind, key, where=None, help=None, refit=True)     # which runs to show
    Batch(slot, specs, label, name_suffix="")      # more runs queued by the same press
    Section: clicked, running, job, new, run, runs
    queue_runs(page, data, split, work, *, slot, …) -> Job | None   # without a press: the
        runs a page queues by itself, a widget's change; its slot's run_section follows it
    latest_runs_of(split, specs) -> list | None ; specs_without_runs(split, specs) -> list
    page_result(page, slot, key, label, fn, pressed=None, button=None)  # no run
    run_picker(label, kind, split, key, *, where, on_refit, help, container) -> Run | None
    estimate(data, split, spec) / estimate_total(data, split, specs) -> seconds | None
    sampling_plan(data, split, spec, budget_s) -> dict
    submit_job / submit_run / submit_runs / running_job / follow_job / follow_run
    job_panel(job, key, run_every=PANEL_REFRESH_S) ; status_text(job) ; panel_progress_text(job)

Every fit runs on the server's job runner (:mod:`featagg_app.server.jobs`), one job per
page *slot* (kept in the page's namespace, :func:`featagg_app.state.page_jobs`): a second
press while it runs is refused (the button is disabled), its panel shows the queue
position, progress, elapsed time and estimate with a Cancel button, and the finished runs
go to the session's registry (:func:`featagg_app.state.add_run`) once, where Compare and
Export see them. A cancelled or failed job's outcome stays under its slot until the next
submit. Identical fits of different sessions (same data, names, split and spec) are one
computation (:func:`share_key`, :func:`own_copy`).

State: everything in ``st.session_state`` (per session); the data's statistics behind the
estimates are shared by every session through ``st.cache_resource``.
"""
from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass, field
from typing import Callable, Optional

import streamlit as st

from featagg_app import state
from featagg_app.server import context
from featagg_app.server.jobs import Job, JobQueueFull
from featagg_app.server.warmup import groups_for_page, groups_for_spec
from featagg_app.text import approx_seconds, md_escape, show_error
from featagg_core.runs.estimate import format_seconds

#: seconds between two redraws of a running job's panel (each is a fragment rerun that every
#: other session pays for in GIL hand-offs while a job computes: once a second is enough)
PANEL_REFRESH_S = 1.0

_PICKED = "featagg.picker_auto"     # picker key -> the run id it picked by itself
_ESTIMATES = "featagg.estimates"    # (dataset, split, spec) -> estimated seconds
_NAMES = "featagg.names_digest"     # fingerprint -> (weakref to data, digest of its names)
_OUTCOMES = "_outcomes"             # page namespace: slot -> (level, text) of the last job


# ---------------------------------------------------------------------------
# the job panel
# ---------------------------------------------------------------------------

def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def status_text(job: Job) -> str:
    """One line for a job: "queued, 3rd in line", "running for 12 s of about 40 s", …"""
    if job.status == "queued":
        pos = job.queue_position
        where = ("next in line" if pos == 1 else
                 (f"{_ordinal(pos)} in line" if pos else "waiting"))
        if job.shared:
            where += ", together with an identical fit another session asked for"
        est = f" · estimated run time {format_seconds(job.estimate_s)}" \
            if job.estimate_s is not None else ""
        return f"**{job.label}** — queued, {where}{est}"
    if job.status == "running":
        est = (f" of about {format_seconds(job.estimate_s)} (estimate)"
               if job.estimate_s is not None else "")
        also = " (an identical fit another session asked for: shared)" if job.shared else ""
        return f"**{job.label}** — running for {format_seconds(job.elapsed_s)}{est}{also}"
    if job.status == "done":
        if job.shared:
            return (f"**{job.label}** — done (an identical fit on identical data was shared "
                    "with another session)")
        return f"**{job.label}** — done in {format_seconds(job.elapsed_s)}"
    if job.status == "cancelled":
        return f"**{job.label}** — cancelled"
    return f"**{job.label}** — failed: {job.error or job.message}"


def panel_progress_text(job: Job) -> str:
    """The line under a job's progress bar."""
    if job.cancelled and not job.done:
        return "cancelling…"
    if job.status == "running":
        return job.message
    waiting = job.waiting_for
    if waiting:
        return ("the server started recently and is still compiling the kernels for "
                + ", ".join(waiting) + "; other jobs run meanwhile")
    return "waiting for a free worker"


def _panel_body(job: Job, key: str) -> None:
    if job.done:
        st.rerun()                       # the whole page: it shows the outcome
        return
    with st.container(border=True):
        st.markdown(status_text(job))
        st.progress(float(job.progress), text=panel_progress_text(job))
        if st.button("Cancel", key=f"{key}__cancel", disabled=job.cancelled,
                     help="stop this job (the server frees its memory)"):
            job.cancel()
            st.rerun()


def job_panel(job: Job, key: str, run_every: float = PANEL_REFRESH_S) -> None:
    """Draw the panel of a queued or running job and redraw it every ``run_every`` s
    (an ``st.fragment``); when the job has finished, rerun the page so it shows the
    result. ``key`` must be unique on the page (it keys the Cancel button)."""

    @st.fragment(run_every=run_every)
    def _job_panel_fragment():
        _panel_body(job, key)

    if job.done:
        return
    _job_panel_fragment()


# ---------------------------------------------------------------------------
# estimates
# ---------------------------------------------------------------------------

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
    k = context.kernels()
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
        k = context.kernels()
        if k is not None and not k.ready(("defrag",)):
            # the estimate counts XᵀY's non-zeros with a DEFRAG kernel: on a server still
            # compiling it in the background, a page must not compile it in its rerun
            # (seconds of JIT for a visitor); "unknown" now, the real number once it is there
            return None
        if len(cache) > 200:
            cache.clear()
        try:
            # the server's calibration, measured in the background (never in a rerun)
            cache[key] = float(estimate_seconds(data, split, spec,
                                                speed=context.machine_speed(),
                                                stats=_stats(data, split)))
        except ValueError:
            cache[key] = None
    return cache[key]


def estimate_total(data, split, specs) -> Optional[float]:
    """The estimated seconds of fitting every spec of ``specs`` one after the other; None
    when one of them cannot be estimated (yet)."""
    total = 0.0
    for spec in specs:
        e = estimate(data, split, spec)
        if e is None:
            return None
        total += e
    return total


def sampling_plan(data, split, spec, budget_s: float) -> dict:
    """``featagg_core.runs.estimate.sampling_plan`` (what a baseline would cost, and the
    sample it should use instead), kept per session like :func:`estimate`."""
    from featagg_core.runs.estimate import sampling_plan as plan
    cache = st.session_state.setdefault(_ESTIMATES, {})
    key = ("plan", data.fingerprint, split.split_id, _spec_text(spec), float(budget_s))
    if key not in cache:
        cache[key] = plan(data, split, spec, speed=context.machine_speed(),
                          budget_s=budget_s, stats=_stats(data, split))
    return cache[key]


# ---------------------------------------------------------------------------
# submitting
# ---------------------------------------------------------------------------

def _outcomes_of(page: str) -> dict:
    return state.page_state(page).setdefault(_OUTCOMES, {})


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
    slots = state.page_jobs(page)
    old = slots.get(slot)
    if old is not None and old.status in ("queued", "running"):
        return old
    try:
        job = context.get_runner().submit(
            state.session_id(), label, fn, estimate_s=estimate_s, kind=kind,
            needs=groups_for_page(page) if needs is None else needs,
            share_key=share_key, adapt=adapt)
    except JobQueueFull as exc:
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


def share_key(data, planned_runs, name_suffix: str = "") -> str:
    """The job runner's share key of fitting ``planned_runs`` (``experiment.plan_run``
    results) on ``data``: their spec keys (dataset fingerprint, split, canonical spec),
    :func:`_names_digest` and the suffix their names get."""
    keys = ",".join(r.spec_key for r in planned_runs)
    return f"runs:{keys}:{_names_digest(data)}" + (f":{name_suffix}" if name_suffix else "")


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
                estimate_s: Optional[float] = None, name_suffix: str = ""):
    """Queue several specs as **one** job that fits them one after the other (e.g. every
    method of the Vocabulary page: one queue slot, one Cancel); :func:`follow_run` returns
    the list of their Runs. Specs are checked before anything is queued. ``name_suffix``
    is added to every run's name (the Vocabulary page's budget-curve points)."""
    import dataclasses

    from featagg_core.distributed import scheduler_from_env
    from featagg_core.experiment import plan_run, run_pipeline
    from featagg_core.utils.cancel import cancelling_progress
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
            out.append(dataclasses.replace(run, name=run.name + name_suffix)
                       if name_suffix else run)
        return out

    if estimate_s is None:
        estimate_s = estimate_total(data, split, planned)
    needs = tuple(dict.fromkeys(g for spec in planned for g in groups_for_spec(spec)))
    needs = tuple(dict.fromkeys(needs + groups_for_page(page)))
    return submit_job(page, slot, label, work, estimate_s=estimate_s, kind="run",
                      needs=needs, share_key=share_key(data, plans, name_suffix),
                      adapt=lambda runs: [own_copy(r, data) for r in runs])


# ---------------------------------------------------------------------------
# following
# ---------------------------------------------------------------------------

def running_job(page: str, slot: str):
    """The job of ``page``/``slot`` while it is queued or running, else None."""
    job = state.page_jobs(page).get(slot)
    return job if job is not None and job.status in ("queued", "running") else None


def _show_outcome(page: str, slot: str) -> None:
    out = _outcomes_of(page).get(slot)
    if out is None:
        return
    level, text = out
    (st.warning if level == "warning" else st.error)(md_escape(text), icon="⚠️")


def follow_job(page: str, slot: str, draw: bool = True):
    """While the job of ``page``/``slot`` is queued or running, draw its panel (queue
    position, progress, elapsed time, estimate, Cancel) and return None. Once it ended,
    return it (once) and forget it; a cancelled or failed job's outcome stays shown under
    the slot until the next submit. ``draw=False`` only collects a finished job (call it
    again with ``draw=True`` where the panel belongs)."""
    slots = state.page_jobs(page)
    job = slots.get(slot)
    if job is None:
        if draw:
            _show_outcome(page, slot)
        return None
    if job.status in ("queued", "running"):
        if draw:
            job_panel(job, key=f"job:{page}:{slot}")
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


def _collect_runs(page: str, slot: str, runs, draw: bool) -> list:
    """Add the finished ones of ``runs`` to the registry; say which did not finish."""
    done, failed = [], []
    for run in runs:
        (done if run.status == "done" else failed).append(run)
    for run in done:
        state.add_run(run)
    if failed:
        _outcomes_of(page)[slot] = ("error", "; ".join(
            f"{r.name}: cancelled." if r.status == "cancelled" else f"{r.name} failed: {r.message}"
            for r in failed))
        if draw:
            _show_outcome(page, slot)
    return done


def follow_run(page: str, slot: str = "run", draw: bool = True):
    """:func:`follow_job` for a :func:`submit_run` job: returns the finished Run once (it
    is added to the registry), None while it runs or when it was cancelled or failed (the
    page then says so). For a :func:`submit_runs` job: the list of its finished Runs."""
    job = follow_job(page, slot, draw)
    if job is None or job.status != "done":
        return None
    several = isinstance(job.result, list)
    done = _collect_runs(page, slot, job.result if several else [job.result], draw)
    if several:
        return done
    return done[0] if done else None


# ---------------------------------------------------------------------------
# the run picker
# ---------------------------------------------------------------------------

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
    cands = [r for r in reversed(state.runs(kind=kind, fingerprint=split.dataset_fingerprint,
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
    labels = {r.run_id: f"{state.run_title(r)} · {_created_hm(r)}"
                        + ("" if r.split_id == split.split_id else " (another split)")
              for r in cands}
    rid = box.selectbox(label, ids, key=key, format_func=labels.__getitem__, help=help)
    run = by_id[rid]
    if run.split_id != split.split_id:
        box.warning(f"**{md_escape(state.run_title(run))}** was fitted on another split "
                    f"({md_escape(state.split_text(run))}); the current split is "
                    f"{md_escape(split.describe())}. Its fitted steps are not reused here "
                    "(some of the current test rows may have been its training rows).",
                    icon=":material/call_split:")
        if on_refit is not None and box.button(f"Refit {run.name} on the current split",
                                               key=f"{key}__refit"):
            on_refit(run)
        return None
    box.caption(f"Using **{md_escape(state.run_title(run))}** (run {run.run_id[:8]}, "
                f"{_created_hm(run)} UTC).")
    return run


# ---------------------------------------------------------------------------
# the one run helper of the pages
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Picker:
    """The runs a :func:`run_section` offers to show: a select box (:func:`run_picker`)
    over this session's finished runs of ``kind`` on the split that ``where`` accepts.
    ``refit``: offer to refit a run of another split in the section's slot."""
    label: str
    kind: str
    key: str
    where: Optional[Callable] = None
    help: Optional[str] = None
    refit: bool = True


@dataclass(frozen=True)
class Batch:
    """More runs the same press queues as a job of their own (its own queue place and
    Cancel), e.g. the Vocabulary page's budget curves; ``name_suffix`` marks their names."""
    slot: str
    specs: list
    label: str
    name_suffix: str = ""


@dataclass
class Section:
    """What :func:`run_section` did in this script run."""
    clicked: bool = False            # the button was pressed (and the work queued)
    running: bool = False            # a job of the slot is queued or running
    job: Optional[Job] = None        # the slot's job, once, in the run after it ended
    new: list = field(default_factory=list)      # runs it added to the registry now
    run: object = None               # the picked run (with a Picker)
    runs: Optional[list] = None      # the latest run of each spec (a list of specs)


def queue_runs(page: str, data, split, work, *, slot: str, label: Optional[str] = None,
               base=None, estimate_s: Optional[float] = None, kind: str = "",
               name_suffix: str = "", error: Optional[str] = "The run cannot start",
               rerun: bool = False):
    """Queue ``work`` in ``page``'s ``slot`` as :func:`run_section` queues a press: a spec
    (one run, ``base``: a run whose fitted steps it reuses), a list of specs (one job,
    ``label``, ``name_suffix`` added to the runs' names) or ``fn(progress, cancel)``
    (a job of ``kind``).
    A page calls it for the runs it queues without a press (the baselines behind a new
    DEFRAG run, another block model picked in a select box); the :func:`run_section` of
    ``slot`` follows the job (its panel, its runs into the registry). A spec the core
    refuses is shown with ``error`` as context and nothing is queued. ``rerun``: rerun the
    page once the job is queued (when the slot's section is already drawn above, so it
    shows the job's panel). Returns the Job, None when nothing was queued."""
    try:
        if callable(work):
            job = submit_job(page, slot, label or slot, work, estimate_s=estimate_s, kind=kind)
        elif isinstance(work, dict):
            job = submit_run(page, data, split, work, slot=slot, base=base, label=label,
                             estimate_s=estimate_s)
        else:
            job = submit_runs(page, data, split, list(work), slot=slot,
                              label=label or f"{len(work)} runs", estimate_s=estimate_s,
                              name_suffix=name_suffix)
    except ValueError as exc:
        show_error(exc, context=error)
        return None
    if rerun and job is not None:
        st.rerun()
    return job


def latest_runs_of(split, specs) -> Optional[list]:
    """The latest finished run of each spec of ``specs`` on ``split`` (a run records its
    canonical spec: pass canonical specs); None when one of them has none."""
    done = state.runs(fingerprint=split.dataset_fingerprint, split_id=split.split_id,
                      status="done")
    out = []
    for spec in specs:
        hits = [r for r in done if r.spec == spec]
        if not hits:
            return None
        out.append(hits[-1])
    return out


def specs_without_runs(split, specs) -> list:
    """The specs of ``specs`` (canonical) with no finished run on ``split`` yet, in order:
    what is left to fit (one pass over the registry)."""
    done = [r.spec for r in state.runs(fingerprint=split.dataset_fingerprint,
                                       split_id=split.split_id, status="done")]
    return [spec for spec in specs if spec not in done]


def run_section(page: str, data, split, work, *, slot: str, key: Optional[str] = None,
                button: str = "Run", caption: str = "", label: Optional[str] = None,
                layout: str = "row", columns=(1, 4), container=None, primary: bool = True,
                disabled: bool = False, start: Optional[bool] = None,
                offer: Optional[Callable] = None, base=None,
                estimate_s: Optional[float] = None, kind: str = "",
                error: str = "The run cannot start", picker: Optional[Picker] = None,
                empty: Optional[str] = None, stop: bool = True,
                also: Optional[Batch] = None) -> Section:
    """A page's Run: the button, the job it queues, its panel, and the run to show.

    ``work`` is a spec (one run, ``base``: a run whose fitted steps it reuses), a list of
    specs (one job fitting them one after the other), or ``fn(progress, cancel)`` returning
    a Run or an object with ``runs`` (an experiment, a triage report): the finished runs
    go to the session's registry. ``slot`` names the job in the page (one at a time).
    ``work=None`` (layout ``"button"``): the section queues nothing of its own (no
    button); its slot holds what ``offer``, the picker's refits or :func:`queue_runs`
    queue there, and it draws their panel and collects their runs.

    Layouts:

    * ``"row"``: in ``columns`` the button (``key``, ``button``; disabled while the slot's
      job runs) and "Estimated time: … ``caption``"; then the job's panel (or its
      outcome), then ``picker``'s select box, or with a list of specs and no picker the
      latest run of each spec;
    * ``"button"``: the button alone (in ``container``), then the panel (an experiment,
      the triage, an import's evaluation); ``start`` instead of a button: the caller's
      own (its value); ``offer`` instead of a button: the caller's own buttons when the
      work depends on which is pressed (a baseline in full or on a sample): after the
      panel, and only while no job of the slot runs, ``offer()`` draws them and returns
      the spec (or list of specs) of the one pressed (None: none was), which is queued,
      and the page reruns to show its panel;
    * ``"fallback"``: the panel and the picker first; when there is no run to show, the
      info ``empty`` and the button, whose label ``button`` may say ``{estimate}``.

    When there is nothing to show (no picked run, a spec without a run), ``empty`` is said
    (unless the job is still running) and the script stops (``stop=False``: it goes on).
    A spec the core refuses is shown with ``error`` as context. ``also``: more runs the
    same press queues as a job of their own (:class:`Batch`). Returns a :class:`Section`.
    """
    if work is None and layout != "button":
        raise ValueError("run_section: work=None needs layout='button'")
    sec = Section()
    specs = None if work is None or callable(work) else \
        ([work] if isinstance(work, dict) else list(work))
    makes_runs = not callable(work)     # the job's result is a Run or a list of Runs

    def submit(what, rerun: bool = False) -> None:
        job = queue_runs(page, data, split, what, slot=slot, label=label, base=base,
                         estimate_s=estimate_s, kind=kind, error=error)
        if job is None:
            return
        if also is not None and also.specs:
            queue_runs(page, data, split, also.specs, slot=also.slot, label=also.label,
                       name_suffix=also.name_suffix, error=error)
        sec.clicked = True
        if rerun:
            st.rerun()

    def expected_s() -> Optional[float]:     # what the caption and button promise
        if estimate_s is not None:
            return estimate_s
        return None if specs is None else estimate_total(data, split, specs)

    busy = running_job(page, slot) is not None
    if layout == "row":
        c1, c2 = st.columns(list(columns))
        pressed = c1.button(button, type="primary" if primary else "secondary", key=key,
                            disabled=disabled or busy)
        c2.caption(f"Estimated time: {approx_seconds(expected_s())} "
                   f"{caption}".rstrip())
        if pressed:
            submit(work)
    elif layout == "button":
        box = st if container is None else container
        if work is not None and offer is None:
            pressed = start if start is not None else box.button(
                button, type="primary" if primary else "secondary", key=key,
                disabled=disabled or busy)
            if pressed:
                submit(work)
    elif layout != "fallback":
        raise ValueError(f"run_section: unknown layout {layout!r}")

    sec.job = job = follow_job(page, slot)
    if job is not None and job.status == "done":
        if makes_runs:
            found = job.result if isinstance(job.result, list) else [job.result]
            sec.new = _collect_runs(page, slot, found, draw=True)
        else:       # an experiment's or a triage's runs: the finished ones, silently
            found = getattr(job.result, "runs", [job.result])
            sec.new = [state.add_run(r) for r in found if getattr(r, "status", "") == "done"]
    if also is not None:
        follow_run(page, also.slot)
    sec.running = running_job(page, slot) is not None
    if offer is not None and not sec.running:
        chosen = offer()
        if chosen is not None:
            submit(chosen, rerun=True)

    if picker is not None:
        refit = (lambda r: queue_runs(page, data, split, r.spec, slot=slot, error=error,
                                      rerun=True)) if picker.refit else None
        sec.run = run_picker(picker.label, picker.kind, split, picker.key,
                             where=picker.where, on_refit=refit, help=picker.help)
        missing = sec.run is None
    elif specs is not None and layout != "fallback":
        sec.runs = latest_runs_of(split, specs)
        missing = sec.runs is None
    else:
        missing = False
    if not missing:
        return sec
    if layout == "fallback":
        if not sec.running:
            if empty:
                st.info(empty)
            text = button.format(estimate=approx_seconds(expected_s()))
            if st.button(text, key=key, type="primary" if primary else "secondary"):
                submit(work, rerun=True)
        st.stop()
    if empty and not sec.running:
        st.info(empty)
    if stop:
        st.stop()
    return sec


def page_result(page: str, slot: str, key, label: str, fn: Callable, *,
                pressed: Optional[bool] = None, button: Optional[str] = None,
                button_key: Optional[str] = None, container=None):
    """A computation of the page that is no run (an elbow curve, a sweep of α, a
    comparison table), done once per ``key`` in a job of ``slot``: returns its result once
    it is there (kept in the page's namespace), None meanwhile (the panel shows). It is
    queued when it is missing: by itself (once per ``key``: not again after it failed or
    was cancelled), or with ``pressed`` (a button's value) when the button was pressed.
    ``button``: the label of a button drawn here (``button_key``, in ``container``;
    disabled while the job runs) whose press queues it (it is then ``pressed``)."""
    if button is not None:
        box = st if container is None else container
        pressed = box.button(button, key=button_key,
                             disabled=running_job(page, slot) is not None)
    ns = state.page_state(page)
    done = ns.setdefault("_results", {}).setdefault(slot, {})
    asked = ns.setdefault("_asked", {})
    wanted = pressed if pressed is not None else asked.get(slot) != key
    if key not in done and wanted and running_job(page, slot) is None:
        asked[slot] = key
        submit_job(page, slot, label, fn)
    job = follow_job(page, slot)
    if job is not None and job.status == "done":
        done[asked.get(slot)] = job.result
    return done.get(key)
