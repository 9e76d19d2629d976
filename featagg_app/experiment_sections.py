"""The papers' experiments as page sections: widgets, one job, the experiment's runs added
to the session (so Compare lists them), and the result drawn with the report's charts and
tables (the same ones the triage report shows).

Every section is an expander a page calls with its name, dataset and split; its buttons
go through :func:`featagg_app.runs_ui.run_section`::

    experiment_sections.defrag_tradeoff(PAGE, data, split)        # Feature agglomeration
    experiment_sections.ktxmlc_sweep(PAGE, data, split, spec)     # Extreme classification
    experiment_sections.bmgufs_protocol(PAGE, data, split)        # Graph features
    experiment_sections.vocabulary_heldout(run, data, split)      # Vocabulary compression

The experiments themselves are :mod:`featagg_core.experiment`'s (no scoring here).
"""
from __future__ import annotations

from typing import Callable, Optional

import plotly.graph_objects as go
import streamlit as st

from featagg_app import runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape
from featagg_core.runs.estimate import format_seconds
from featagg_app.views import triage as tv

__all__ = ["run_experiment", "show_experiment", "show_summary_table", "defrag_tradeoff",
           "ktxmlc_sweep", "bmgufs_protocol", "vocabulary_heldout"]


def run_experiment(page: str, data, split, slot: str, label: str, fn: Callable, *,
                   key: str, button: str, container=None, disabled: bool = False,
                   estimate_s: Optional[float] = None):
    """The experiment's button and job (:func:`featagg_app.runs_ui.run_section`):
    ``fn(progress, cancel) -> Experiment`` is queued when the button is pressed; once done
    its finished runs are in the session's registry and the Experiment is kept in the
    page's namespace. Returns the latest finished Experiment of ``slot`` (or None)."""
    page_ns = state.page_state(page)
    sec = runs_ui.run_section(page, data, split, fn, slot=slot, key=key, button=button,
                              layout="button", container=container, primary=False,
                              disabled=disabled, label=label, estimate_s=estimate_s,
                              kind="experiment")
    if sec.job is not None and sec.job.status == "done":
        exp = sec.job.result
        page_ns.setdefault("experiments", {})[slot] = exp
        if exp.status == "cancelled":
            st.warning(f"{exp.title}: cancelled; the runs that finished are shown.")
    return page_ns.get("experiments", {}).get(slot)


def show_experiment(exp, key: str, table: bool = True) -> None:
    """Verdict sentences, the report's charts and the main table of an Experiment."""
    from featagg_core.triage.report import EXPLAIN, experiment_figures
    rec = exp.to_record()
    if exp.kind in EXPLAIN:
        st.caption(EXPLAIN[exp.kind])
    for v in rec["verdict"]:
        st.markdown(md_escape(v))
    figs = experiment_figures(rec)
    if figs:
        cols = st.columns(min(len(figs), 2))
        for i, (fid, cap, spec) in enumerate(figs):
            with cols[i % len(cols)]:
                st.plotly_chart(go.Figure(spec), width="stretch", key=f"{key}_{fid}")
                st.caption(cap)
    if table:
        show_summary_table(rec)


def show_summary_table(rec: dict) -> None:
    """An experiment record's main table (:func:`featagg_app.views.triage.summary_frame`):
    a static table when it is short enough to read at once (40 rows), else a scrolling
    one. The experiment sections and the Triage page both draw it here."""
    frame = tv.summary_frame(rec)
    if len(frame):
        if len(frame) <= 40:
            st.table(frame)
        else:
            st.dataframe(frame, hide_index=True)


# ----------------------------------------------------------------------------- DEFRAG
def defrag_tradeoff(page: str, data, split) -> None:
    """Feature agglomeration: raw features vs DEFRAG at several d0, paired by classifier."""
    from featagg_core.experiment import DEFAULT_D0S, defrag_tradeoff as run_tradeoff
    with st.expander("Experiment: raw features vs DEFRAG, paired (the paper's d0 curve)",
                     expanded=False):
        st.markdown(
            "The same classifier settings trained twice: on the raw features and on DEFRAG's "
            "agglomerated features, for every **d0** you pick. The table pairs them: P@k, "
            "PSP@k, coverage@k, training and prediction time, model size and the number of "
            "features; **P@1 kept** is the share of the raw features' P@1, **speed** what "
            "the training times allow to say: a fit under 0.2 s is fitted again until its "
            "repeats add up to 0.2 s, and \"N× faster\" is stated only when the two fits' "
            "spreads (CPU seconds) do not overlap, \"no measurable difference\" otherwise; "
            "KTXMLC that kept one flat tree is the one-vs-all model and is named so. The "
            "sentence below says which d0 keeps at least 98 % of the raw P@1 and how it "
            "trains. *Per-tree ensemble* is "
            "the DEFRAG paper's ensemble of DEFRAG realisations: one agglomeration (its own seed) "
            "per tree, each tree a one-tree KTXMLC on its own features, scores averaged.")
        c1, c2, c3 = st.columns([2, 2, 1.4])
        d0s = c1.multiselect("d0 values", [1, 2, 4, 8, 16, 32, 64, 128],
                             default=list(DEFAULT_D0S),
                             key=data_key(f"{page}_tr_d0s", data))
        kinds = c2.multiselect("Classifiers", ["KTXMLC", "one-vs-all"],
                               default=["KTXMLC", "one-vs-all"],
                               key=data_key(f"{page}_tr_kinds", data))
        per_tree = c3.checkbox("Per-tree ensemble", value=True,
                               key=data_key(f"{page}_tr_per_tree", data),
                               help="the DEFRAG paper's ensemble of DEFRAG realisations: "
                                    "KTXMLC with one agglomeration (its own seed) per tree")
        classifiers = tuple({"KTXMLC": "ktxmlc", "one-vs-all": "ova"}[k] for k in kinds)
        specs = [{"classifier": {"kind": k}} for k in classifiers]
        specs += [{"defrag": {"d0": d}, "classifier": {"kind": k}} for d in d0s
                  for k in classifiers]
        if per_tree:
            specs += [{"defrag": {"d0": d, "per_tree": True}, "classifier": {}} for d in d0s]
        est = runs_ui.estimate_total(data, split, specs) if d0s and classifiers else None

        def work(progress, cancel, d0s=tuple(d0s), classifiers=classifiers,
                 per_tree=per_tree):
            return run_tradeoff(data, split, d0s, classifiers, per_tree=per_tree,
                                progress=progress, cancel=cancel)

        exp = run_experiment(page, data, split, "tradeoff", "Raw vs DEFRAG", work,
                             key=f"{page}_tr_run",
                             button=f"Run {len(specs)} fits (≈ {format_seconds(est)})",
                             disabled=not d0s or not classifiers, estimate_s=est)
        if exp is not None and exp.split_id == split.split_id:
            show_experiment(exp, f"{page}_tr")


# ----------------------------------------------------------------------------- KTXMLC
def ktxmlc_sweep(page: str, data, split, classifier: dict) -> None:
    """Extreme classification: P@k and time against K or T."""
    from featagg_core.experiment import DEFAULT_KS, DEFAULT_TREES, ktxmlc_sweep as sweep
    with st.expander("Experiment: P@k and time against K and against the number of trees",
                     expanded=False):
        st.markdown(
            "One KTXMLC run per value, everything else as set above (raw features). **K** "
            "goes from 2 to 64 on a fine grid, with the KTXMLC paper's 5, 6 and 10; the "
            "elbow of the root's clustering (training rows) is marked. **T** shows how much "
            "each extra tree adds for its training time. The sweep always grows the label "
            "trees (as **Always grow the trees**), even where KTXMLC's default would keep "
            "one flat tree.")
        c1, c2 = st.columns([1, 3])
        which = c1.radio("Vary", ["K", "trees T"], key=data_key(f"{page}_sw_param", data),
                         horizontal=True)
        param = "n_clusters" if which == "K" else "n_trees"
        L = int(data.Y.shape[1])
        grid = [k for k in DEFAULT_KS if k < L] if param == "n_clusters" else list(DEFAULT_TREES)
        values = c2.multiselect("Values", grid, default=grid,
                                key=data_key(f"{page}_sw_{param}", data))
        # a sweep of the trees' K and T: never the flat tree of one_vs_all="auto"
        base = {"classifier": {**{k: v for k, v in classifier.items() if k != param},
                               "one_vs_all": "never"}}
        specs = [{"classifier": dict(base["classifier"], **{param: v})} for v in values]
        est = runs_ui.estimate_total(data, split, specs) if values else None

        def work(progress, cancel, param=param, values=tuple(values), base=base):
            return sweep(data, split, param, values, spec=base, progress=progress,
                         cancel=cancel)

        exp = run_experiment(page, data, split, f"sweep_{param}",
                             f"KTXMLC sweep over {which}", work, key=f"{page}_sw_run",
                             button=f"Run {len(specs)} fits (≈ {format_seconds(est)})",
                             disabled=not values, estimate_s=est)
        if exp is not None and exp.split_id == split.split_id:
            _sweep_figure(exp, param, f"{page}_sw_fig_{param}")


def _sweep_figure(exp, param, key):
    rows = [r for r in exp.tables.get("rows", []) if r.get("status") == "done"]
    for v in exp.verdict:
        st.markdown(md_escape(v))
    if not rows:
        return
    name = "K" if param == "n_clusters" else "T"
    x = [r[param] for r in rows]
    fig = go.Figure()
    for k in ("P@1", "P@3", "P@5"):
        fig.add_trace(go.Scatter(x=x, y=[r[k] for r in rows], mode="lines+markers", name=k))
    fig.add_trace(go.Scatter(x=x, y=[r["train_s"] for r in rows], mode="lines+markers",
                             name="training seconds", yaxis="y2", line={"dash": "dot"}))
    if "elbow" in exp.summary:
        fig.add_vline(x=exp.summary["elbow"], line_dash="dash",
                      annotation_text=f"elbow K = {exp.summary['elbow']}")
    fig.update_layout(template="plotly_white", height=380, xaxis_title=name,
                      title=f"P@k and training time against {name}",
                      margin={"t": 50},
                      yaxis={"title": "P@k", "tickformat": ".0%"},
                      yaxis2={"title": "training seconds", "overlaying": "y",
                              "side": "right", "rangemode": "tozero", "showgrid": False},
                      xaxis_type="log" if param == "n_clusters" else "linear",
                      legend={"orientation": "h", "y": -0.25})
    st.plotly_chart(fig, width="stretch", key=key)
    st.table(tv.formatted(rows, [param, "P@1", "P@3", "P@5", "PSP@5", "train_s",
                                  "predict_ms_per_point", "model_bytes"]).rename(
        columns={param: name, "train_s": "training time",
                 "predict_ms_per_point": "predict / point", "model_bytes": "model size"}))


# ----------------------------------------------------------------------------- BMGUFS
def bmgufs_protocol(page: str, data, split, bmgufs: Optional[dict] = None) -> None:
    """Graph features: the BMGUFS protocol, its beta_bar x gamma heat map and the
    edge-perturbation curve, each its own job."""
    from featagg_core import experiment as ex
    if data.y is None:
        return
    extra = dict(bmgufs or {})
    f = int(data.X.shape[1])
    with st.expander("Experiments: the BMGUFS protocol, its β̄ × γ grid and noisy edges",
                     expanded=False):
        st.markdown(
            "**Protocol**: BMGUFS against the baselines at several d, γ lowered per d from "
            "the top of the paper's grid until d features keep a non-zero weight; with the "
            "check of the candidate block models. **Grid**: the authors' β̄ ∈ {0, 0.1, …, 1} "
            "× γ ∈ {1, 2, 3} at one d (the block models are computed once). **Noisy edges**: "
            "a share of the training graph's edges moved to random node pairs before the "
            "selection (the paper's robustness figure). Everything is fitted on the "
            "training nodes and judged by k-means on the held-out nodes.")
        c1, c2, c3 = st.columns(3)
        ds = c1.multiselect("d values", [d for d in (8, 16, 32, 64, 128, 200, 600) if d <= f],
                            default=[d for d in (16, 64, 200) if d <= f] or [f],
                            key=data_key(f"{page}_bp_ds", data))
        d_grid = c2.number_input("d for the grid and the noise curve", 1, f, min(64, f),
                                 key=data_key(f"{page}_bp_d", data))
        n_cand = c3.number_input("Candidate block models", 1, 10, 3,
                                 key=data_key(f"{page}_bp_cand", data))
        extra["n_candidates"] = int(n_cand)
        b1, b2, b3 = st.columns(3)
        one = runs_ui.estimate(data, split, {"feature_selection": {"kind": "bmgufs",
                                                                   "d": max(ds or [8]),
                                                                   **extra}})

        def protocol(progress, cancel, ds=tuple(ds), extra=dict(extra)):
            return ex.bmgufs_protocol(data, split, ds, bmgufs=extra, progress=progress,
                                      cancel=cancel)

        def heatmap(progress, cancel, d=int(d_grid), extra=dict(extra)):
            return ex.bmgufs_heatmap(data, split, d, bmgufs=extra, progress=progress,
                                     cancel=cancel)

        def noise(progress, cancel, d=int(d_grid), extra=dict(extra)):
            return ex.bmgufs_robustness(data, split, d, bmgufs=extra, progress=progress,
                                        cancel=cancel)

        est = {} if one is None else {"protocol": one * max(len(ds), 1) + 10,
                                      "heatmap": one * 4, "noise": one * 6}
        for slot, title, fn, box, button, key, off in (
                ("protocol", "BMGUFS protocol", protocol, b1,
                 f"Protocol (≈ {format_seconds(est.get('protocol'))})", f"{page}_bp_run",
                 not ds),
                ("heatmap", "BMGUFS grid", heatmap, b2, "β̄ × γ grid (33 selections)",
                 f"{page}_bh_run", False),
                ("noise", "BMGUFS noisy edges", noise, b3, "Noisy edges (6 levels)",
                 f"{page}_br_run", False)):
            exp = run_experiment(page, data, split, slot, title, fn, key=key, button=button,
                                 container=box, disabled=off, estimate_s=est.get(slot))
            if exp is not None and exp.split_id == split.split_id:
                st.markdown(f"**{exp.title}**")
                show_experiment(exp, f"{page}_{slot}")


# ----------------------------------------------------------------------------- vocabulary
def vocabulary_heldout(run, data, split) -> None:
    """Vocabulary compression: the MI a run was fitted to next to the MI it keeps on the
    held-out rows, per column."""
    from featagg_core.experiment import vocabulary_heldout as heldout
    rows = heldout(run, data, split)
    st.markdown("**Fitted against held-out MI**: the compression maximises I(Z;C) on the "
                "training rows; on rows it never saw, values it did not know go to the "
                "fallback bucket and rare values' label rates do not repeat, so the kept "
                "share is lower.")
    st.table(tv.formatted(rows, ["column", "values", "buckets", "fitted I(X;C)",
                                  "fitted I(Z;C)", "fitted MI loss", "held-out I(X;C)",
                                  "held-out I(Z;C)", "held-out MI loss", "unseen rows"]))
