"""Quick dataset triage: a bounded battery of experiments and a report a person can hand on.

    report = run_triage(data, budget_s=120)          # a TriageReport
    report.record                                     # every number, JSON-able
    featagg_core.triage.report.write_report(report.record, "report.html", "report.json")

The battery depends on the kind of data (every step goes through the run model,
docs/RUN_MODEL.md, on one split):

* **multi-label** — dataset statistics and the head/tail shape of the labels (training
  rows: the *head* is the smallest set of most frequent labels carrying half of the label
  occurrences, the *tail* the rest, :func:`featagg_core.metrics.label_frequency_buckets`
  with ``strategy="mass"``); KTXMLC on raw features paired with KTXMLC on DEFRAG features
  at several d0 (:func:`featagg_core.runs.experiments.multilabel.defrag_tradeoff`'s table and verdict);
  one-vs-all against the trees on the same features; REFRAG tuned on the validation rows
  on top of the raw KTXMLC (``"rerank": {"tune": true}``, the classifier reused); the
  DEFRAG paper's per-tree ensemble when time is left.
* **graph** — statistics, BMGUFS against the baselines at several d (gamma kept per d),
  then the beta_bar x gamma heat map and the edge-perturbation curve when time is left.
* **table** — statistics, the vocabulary compression of every column at the default
  budget with the held-out vs fitted MI and the DP check, then the budget curve.

**Budget.** Every run is planned with :func:`featagg_core.runs.estimate.estimate_seconds` on
this machine's measured speed: runs are taken in priority order while the planned total
stays within ``PLAN_SHARE`` of the budget, the rest are listed as skipped (a multi-label
triage always plans raw KTXMLC and KTXMLC on DEFRAG d0 = 8). While running, each step gets
a deadline (``OVERRUN`` times its estimate, at least ``MIN_STEP_S``, never past the overall
deadline; the always-planned steps and the graph protocol only the overall one); a step
that overruns it is cancelled through the run model's ``cancel`` and
reported as stopped, and the triage goes on with the next one. A skipped step is taken
after all when its estimate, scaled by how long the finished steps took against theirs
(x0.5..x3), fits in ``PLAN_SHARE`` of the time left (an estimate made on a loaded machine
that turns out pessimistic does not leave the budget unused).

**Reproducing.** The record holds the dataset fingerprint, the split settings and its id,
the seeds, the library versions and the plan (the spec of every step). ``run_triage(data,
replay=record)`` (CLI: ``--replay report.json``) runs exactly that plan again without
budget cuts and gives the same numbers (times aside).
"""
from __future__ import annotations

import datetime as _dt
import math
import platform
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

__all__ = ["run_triage", "TriageReport", "dataset_stats", "FORMAT", "PLAN_SHARE",
           "OVERRUN", "MIN_STEP_S"]

FORMAT = "featagg-triage/1"
#: share of the budget the plan may fill (the rest absorbs estimate errors and the report)
PLAN_SHARE = 0.7
#: a step may take this many times its estimate before it is stopped
OVERRUN = 3.0
MIN_STEP_S = 15.0
#: seconds kept for assembling the report after the last step
REPORT_RESERVE_S = 2.0
D0_PRIORITY = (8, 16, 4, 32)


class _Deadline:
    """``threading.Event``-like: set when the user cancels or the deadline passes."""

    def __init__(self, outer, deadline: float):
        self.outer, self.deadline = outer, float(deadline)

    def is_set(self) -> bool:
        return (self.outer is not None and self.outer.is_set()) or \
            time.monotonic() >= self.deadline

    def user(self) -> bool:
        return self.outer is not None and self.outer.is_set()


@dataclass(eq=False)
class TriageReport:
    """What :func:`run_triage` returns: ``record`` (the JSON of the report: every number,
    the plan, the reproduction block), the :class:`~featagg_core.runs.experiments.multilabel.Experiment`
    objects and all their runs (the dashboard adds them to Compare)."""
    record: Dict[str, Any]
    experiments: List[Any] = field(default_factory=list)

    @property
    def runs(self) -> list:
        return [r for e in self.experiments for r in e.runs]

    @property
    def status(self) -> str:
        return self.record.get("status", "done")


# ----------------------------------------------------------------------------- stats
@fill_doc
def dataset_stats(data, split) -> Dict[str, Any]:
    """Headline numbers of the dataset (and of the training rows for the label shape).

    Parameters
    ----------
    {data_any}
    split : Split
        Its split; label frequencies are counted on the training rows.

    Returns
    -------
    dict
        Kind, name and the sizes that matter for the kind (rows, features, labels,
        non-zeros and the label-frequency shape; nodes, edges, classes; rows, columns,
        vocabularies).
    """
    from featagg_core.metrics import label_frequency_buckets
    out: Dict[str, Any] = {"kind": data.kind, "name": str(getattr(data, "name", "") or "")}
    if data.kind == "multilabel":
        X, Y = data.X, data.Y
        Ytr = Y[split.train]
        freq = np.asarray(Ytr.getnnz(axis=0), np.int64)
        L = int(Y.shape[1])
        tail = label_frequency_buckets(Ytr, 2, "mass") == 1
        n_test = int(data.X_test.shape[0]) if split.own_test else int(split.test.size)
        out.update({
            "rows": int(X.shape[0]), "test rows": n_test, "features": int(X.shape[1]),
            "labels": L, "nnz": int(X.nnz),
            "density": float(X.nnz / max(X.shape[0] * X.shape[1], 1)),
            "features per point": float(X.nnz / max(X.shape[0], 1)),
            "labels per point": float(Y.nnz / max(Y.shape[0], 1)),
            "points per label": float(np.median(freq)) if L else 0.0,
            "tail labels": int(tail.sum()), "tail share": float(tail.mean()) if L else 0.0,
            "labels with at most 5 training points": int(np.sum(freq <= 5)),
            "labels without training points": int(np.sum(freq == 0)),
            "head labels": int(L - tail.sum())})
        order = np.sort(freq)[::-1]
        out["label frequency"] = [int(v) for v in order]
    elif data.kind == "graph":
        A = data.A.tocsr()
        deg = np.diff(A.indptr)
        loops = int(A.diagonal().astype(bool).sum())
        from featagg_core.graph.evaluation import known_class_mask
        y = None if data.y is None else np.asarray(data.y)
        out.update({"nodes": int(A.shape[0]), "edges": int((A.nnz - loops) // 2 + loops),
                    "features": int(data.X.shape[1]), "feature nnz": int(data.X.nnz),
                    "feature density": float(data.X.nnz / max(data.X.shape[0] *
                                                              data.X.shape[1], 1)),
                    "mean degree": float(deg.mean()) if deg.size else 0.0,
                    "isolated nodes": int(np.sum(deg == 0)),
                    "classes": None if y is None else int(np.unique(y[known_class_mask(y)])
                                                          .size)})
    else:
        from featagg_core.runs.experiments.table import atoms_per_column
        t = data.table
        labels = np.asarray(data.labels)
        atoms = atoms_per_column(t, labels)
        out.update({"rows": int(len(labels)), "columns": int(t.shape[1]),
                    "positive rate": float(labels.mean()) if labels.size else 0.0,
                    "label": str(data.label_name),
                    "values per column": {str(c): int(t[c].nunique(dropna=False))
                                          for c in t.columns},
                    "atoms per column": {str(c): int(v) for c, v in atoms.items()}})
    return out


def _stats_verdict(stats) -> List[str]:
    if stats["kind"] == "multilabel":
        return [f"{stats['rows']:,} training and {stats['test rows']:,} test points, "
                f"{stats['features']:,} features ({100 * stats['density']:.2f} % non-zero, "
                f"{stats['features per point']:.0f} per point), {stats['labels']:,} labels "
                f"({stats['labels per point']:.1f} per point).",
                f"Labels in the tail are {100 * stats['tail share']:.0f} % of L: the "
                f"{stats['tail labels']:,} least frequent labels carry half of the label "
                f"occurrences; " + (
                    f"{stats['labels with at most 5 training points']:,} labels have at "
                    f"most 5 training points." if stats['labels with at most 5 training points']
                    else "every label has more than 5 training points.")]
    if stats["kind"] == "graph":
        cls = "" if stats["classes"] is None else f", {stats['classes']} classes"
        return [f"{stats['nodes']:,} nodes, {stats['edges']:,} edges (mean degree "
                f"{stats['mean degree']:.1f}, {stats['isolated nodes']:,} isolated), "
                f"{stats['features']:,} node features "
                f"({100 * stats['feature density']:.2f} % non-zero){cls}."]
    big = max(stats["values per column"].items(), key=lambda kv: kv[1])
    return [f"{stats['rows']:,} rows, {stats['columns']} categorical columns (the largest, "
            f"{big[0]}, has {big[1]:,} values), label {stats['label']} "
            f"({100 * stats['positive rate']:.1f} % positive)."]


# ----------------------------------------------------------------------------- plans
def _versions() -> Dict[str, str]:
    import numba
    import scipy
    import sklearn

    from featagg_core import __version__
    out = {"featagg": __version__, "python": platform.python_version(),
           "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
           "scikit-learn": sklearn.__version__}
    try:
        import plotly
        out["plotly"] = plotly.__version__
    except ImportError:                                       # pragma: no cover
        pass
    return out


def _estimate(data, split, spec, speed) -> float:
    from featagg_core.runs.estimate import estimate_seconds
    try:
        return float(estimate_seconds(data, split, spec, speed=speed))
    except ValueError:
        return math.nan


def _multilabel_plan(data, split, seed, speed) -> List[dict]:
    """Candidate steps, in priority order, with their estimates."""
    kt = {"kind": "ktxmlc", "random_state": seed}
    ova = {"kind": "ova", "random_state": seed}
    dfr = {"representation": "XY", "random_state": seed}
    runs = [("ktxmlc", None, {"classifier": dict(kt)})]
    runs.append(("ktxmlc", 8, {"defrag": dict(dfr, d0=8), "classifier": dict(kt)}))
    runs.append(("ova", None, {"classifier": dict(ova)}))
    steps = []
    for kind, d0, spec in runs:
        steps.append({"step": "tradeoff", "kind": kind, "d0": d0, "spec": spec})
    steps.append({"step": "refrag", "spec": {"classifier": dict(kt),
                                             "rerank": {"kind": "refrag", "tune": True,
                                                        "defrag": dict(dfr, d0=8)}}})
    for d0 in D0_PRIORITY[1:]:
        steps.append({"step": "tradeoff", "kind": "ktxmlc", "d0": d0,
                      "spec": {"defrag": dict(dfr, d0=d0), "classifier": dict(kt)}})
    steps.append({"step": "tradeoff", "kind": "ova", "d0": 8,
                  "spec": {"defrag": dict(dfr, d0=8), "classifier": dict(ova)}})
    steps.append({"step": "tradeoff", "kind": "per_tree", "d0": 8,
                  "spec": {"defrag": dict(dfr, d0=8, per_tree=True), "classifier": dict(kt)}})
    for d0 in D0_PRIORITY[1:]:
        steps.append({"step": "tradeoff", "kind": "ova", "d0": d0,
                      "spec": {"defrag": dict(dfr, d0=d0), "classifier": dict(ova)}})
    for s in steps:
        est = _estimate(data, split, s["spec"], speed)
        if s["step"] == "refrag":          # the classifier is reused from the raw run
            est = max(est - _estimate(data, split, runs[0][2], speed), 0.5) \
                + 0.2 * _estimate(data, split, runs[0][2], speed)
        s["estimate_s"] = est       # a reused DEFRAG is counted again: an upper bound
    return steps


def _graph_plan(data, split, seed, speed) -> List[dict]:
    from featagg_core.runs.estimate import estimate_breakdown
    f = int(data.X.shape[1])
    ds = [d for d in (16, 64, 200) if d <= f] or [f]
    steps = []
    for n_cand in (10, 3):
        spec = {"feature_selection": {"kind": "bmgufs", "d": ds[-1], "n_candidates": n_cand,
                                      "random_state": seed}}
        try:
            parts = estimate_breakdown(data, split, spec, speed=speed)
        except ValueError:
            parts = {"total": math.nan}
        sel = sum(v for k, v in parts.items() if "selection" in k)
        # the gamma walk runs the selection for a few gammas per d (about 3 on the
        # graphs we tried); the five baselines rank once and cost about two selections
        est = len(ds) * (parts["total"] + 2.0 * sel) + 2.0 * sel + 2.0 * len(ds)
        steps.append({"step": "bmgufs_protocol", "estimate_s": est,
                      "params": {"ds": ds, "bmgufs": {"n_candidates": n_cand,
                                                      "random_state": seed}}})
    sel = sel or 1.0
    blocks = sum(v for k, v in parts.items() if "block" in k or "spectral" in k)
    d = 64 if f >= 64 else f
    steps.append({"step": "bmgufs_heatmap", "estimate_s": blocks + 33 * (sel + 0.3),
                  "params": {"d": d, "bmgufs": {"n_candidates": 3, "random_state": seed}}})
    steps.append({"step": "bmgufs_robustness", "estimate_s": 6 * (blocks + 3 * sel + 1.0),
                  "params": {"d": d, "bmgufs": {"n_candidates": 3, "random_state": seed},
                             "random_state": seed}})
    return steps


def _table_plan(data, split, seed, speed) -> List[dict]:
    from featagg_core.runs.experiments.table import BUDGET_STEPS, default_budget
    m, _ = default_budget(data, split)
    spec = {"vocabulary": {"budget": m}}
    one = _estimate(data, split, spec, speed)
    atoms = dataset_stats(data, split)["atoms per column"]
    budgets = [b for b in BUDGET_STEPS if b <= max(2, max(atoms.values()))]
    return [{"step": "vocabulary", "estimate_s": 4 * one + 1.0,   # budget: default_budget
             "params": {"budget": None, "methods": ["submodular", "frequency", "bucketing"]}},
            {"step": "budget_curve", "estimate_s": len(budgets) * one,
             "params": {"budgets": budgets, "method": "submodular"}}]


def _secs(s: float) -> str:
    """Seconds for a sentence: one decimal below 10 s (so that 'estimated 1.9 s; 1.6 s
    left' does not read as '2 s; 2 s')."""
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def _choose(steps: List[dict], budget_s: float, must: int = 1) -> None:
    """Mark every step ``planned`` or ``skipped``: priority order, while the plan fits in
    PLAN_SHARE of the budget; the first ``must`` steps always run (multi-label: raw KTXMLC
    and KTXMLC on DEFRAG d0 = 8, the pair the report is about) and, like the graph
    protocol, are marked ``must``: they are stopped at the overall deadline only, not at
    ``OVERRUN`` times their estimate (on a loaded machine a protocol can overrun its
    estimate several times over, and the report would lose its main comparison; measured in
    benchmarks/results/triage.md). The graph protocol comes in two sizes (10 and 3
    candidate block models): the larger if it fits, else the smaller."""
    used = 0.0
    have_protocol = False
    protocols = [i for i, s in enumerate(steps) if s["step"] == "bmgufs_protocol"]
    for i, s in enumerate(steps):
        est = s["estimate_s"] if math.isfinite(s["estimate_s"]) else 5.0
        fits = used + est <= PLAN_SHARE * budget_s
        if s["step"] == "bmgufs_protocol":
            take = not have_protocol and (fits or i == protocols[-1])
        else:
            take = fits or i < must
        if take:
            s["status"] = "planned"
            used += est
            if i < must or s["step"] == "bmgufs_protocol":
                s["must"] = True               # what the report is about: only the deadline
            have_protocol |= s["step"] == "bmgufs_protocol"
        else:
            s["status"] = "skipped"
            s["why"] = ("the larger protocol was planned" if s["step"] == "bmgufs_protocol"
                        and have_protocol else
                        f"estimated {_secs(est)}; {_secs(max(PLAN_SHARE * budget_s - used, 0))} "
                        f"of the plan left")


# ----------------------------------------------------------------------------- running
def _multilabel_steps(data, split, steps, admit, deadline_of, progress, cancel_user,
                      out_of_time) -> List[Any]:
    """The multi-label steps in priority order, each run when ``admit`` says so: the
    tradeoff runs (DEFRAG reused per d0) become one Experiment, the REFRAG step (on the raw
    KTXMLC run) another."""
    trade = [s for s in steps if s["step"] == "tradeoff"]
    tradeoff_exp, extra, runs_by_step = None, [], {}
    total = max(len(steps), 1)
    for i, s in enumerate(steps):
        if cancel_user():
            break
        if not admit(s, steps[i + 1:]):
            continue
        if out_of_time():
            s["status"], s["why"] = "skipped", "no time left"
            continue
        sub = _sub(progress, i, total)
        if s["step"] == "tradeoff":
            runs_by_step[id(s)] = _tradeoff_run(data, split, s, runs_by_step, trade,
                                                deadline_of, sub)
            continue
        base = next((runs_by_step.get(id(t)) for t in trade if t["kind"] == "ktxmlc"
                     and t["d0"] is None), None)
        if base is None or base.status != "done":
            s["status"], s["why"] = "skipped", "the raw KTXMLC run did not finish"
            continue
        extra.append(_refrag(data, split, s, base, deadline_of, sub))
    ran = [t for t in trade if id(t) in runs_by_step]
    if ran:
        tradeoff_exp = _tradeoff(data, split, ran, [runs_by_step[id(t)] for t in ran])
    return ([tradeoff_exp] if tradeoff_exp is not None else []) + extra


def _tradeoff_run(data, split, s, runs_by_step, trade, deadline_of, progress):
    """One tradeoff run; a DEFRAG step at the same d0 fitted before is reused."""
    from featagg_core.runs.run import run_pipeline
    base = None
    if s["d0"] is not None and s["kind"] != "per_tree":
        base = next((runs_by_step[id(t)] for t in trade if id(t) in runs_by_step
                     and t["d0"] == s["d0"] and t["kind"] != "per_tree"
                     and runs_by_step[id(t)].status == "done"), None)
    cancel = deadline_of(s)
    s["started"] = time.monotonic()
    run = run_pipeline(data, split, s["spec"], progress=progress, cancel=cancel, base=base)
    _finish(s, run, cancel)
    return run


def _tradeoff(data, split, steps, runs) -> Any:
    """The tradeoff runs (in the order they ran) as one Experiment: table, summary,
    verdict (with the one-vs-all against trees comparison). Training times are the honest
    ones of :func:`featagg_core.runs.experiments.multilabel.time_rows` (a fit under 0.2 s
    is fitted again until its repeats cover 0.2 s), speed-ups stated only outside their
    spread, and KTXMLC that kept one flat tree is reported as the one-vs-all model it is."""
    from featagg_core.runs.experiments.base import Experiment
    from featagg_core.runs.experiments.multilabel import (
        CLASSIFIER_TITLES,
        _relative,
        _row,
        _tradeoff_summary,
        speed_phrase,
        time_rows,
    )
    from featagg_core.utils.timing import Timing, compare
    exp = Experiment("defrag_tradeoff", "Raw features vs DEFRAG, paired",
                     {"d0s": sorted({s["d0"] for s in steps if s["d0"] is not None}),
                      "classifiers": sorted({s["kind"] for s in steps}),
                      "per_tree": any(s["kind"] == "per_tree" for s in steps),
                      "ks": [1, 3, 5]}, split_id=split.split_id)
    rows, defrag_s, defrag_cpu = [], {}, {}
    t0 = time.perf_counter()
    for s, run in zip(steps, runs):
        exp.runs.append(run)
        if run.status == "done" and s["d0"] is not None and s["kind"] != "per_tree" \
                and "defrag" not in run.reused:
            defrag_s.setdefault(s["d0"], float(run.timings.get("defrag_s", 0.0)))
            defrag_cpu.setdefault(s["d0"], float(run.timings.get("defrag_cpu_s", math.nan)))
    for s, run in zip(steps, runs):
        rows.append(_row(run, (1, 3, 5), {"classifier": CLASSIFIER_TITLES[s["kind"]],
                                          "kind": s["kind"], "d0": s["d0"]},
                         defrag_s.get(s["d0"]), defrag_cpu.get(s["d0"])))
    timings = time_rows(data, split, runs, rows)
    _relative(rows, timings)
    exp.tables["rows"] = rows
    kinds = [k for k in ("ktxmlc", "ova") if any(s["kind"] == k for s in steps)]
    exp.summary, exp.verdict = _tradeoff_summary(rows, kinds,
                                                 any(s["kind"] == "per_tree" for s in steps))
    ova_i = next((i for i, r in enumerate(rows) if r["kind"] == "ova" and r["d0"] is None
                  and r["status"] == "done"), None)
    kt_i = next((i for i, r in enumerate(rows) if r["kind"] == "ktxmlc" and r["d0"] is None
                 and r["status"] == "done"), None)
    if ova_i is not None and kt_i is not None:
        ova, kt = rows[ova_i], rows[kt_i]
        claim = compare(timings.get(ova_i, Timing((ova["train_s"],))),
                        timings.get(kt_i, Timing((kt["train_s"],))))
        same = bool(kt.get("same model as"))
        exp.summary["ova_vs_trees"] = {"ova P@1": ova["P@1"], "ktxmlc P@1": kt["P@1"],
                                       "ova P@5": ova["P@5"], "ktxmlc P@5": kt["P@5"],
                                       "same model": same,
                                       "ktxmlc vs ova training": "same model" if same
                                       else claim.kind,
                                       "ktxmlc / ova train time": kt["train_s"] / ova["train_s"]
                                       if claim.kind in ("faster", "slower") and not same
                                       else math.nan}
        if same:
            exp.verdict.append(
                f"One-vs-all against the trees on raw features: KTXMLC kept one flat tree, "
                f"so it is the one-vs-all model (P@1 {100 * ova['P@1']:.1f} %, P@5 "
                f"{100 * ova['P@5']:.1f} %, training {timings[ova_i].text()}, "
                f"{ova['predict_ms_per_point']:.2f} ms per point to predict).")
        else:
            tmp = dict(kt, speed={"same": "", "too_fast": "too fast to time",
                                  "faster": f"{claim.ratio:.1f}× faster",
                                  "slower": f"{1 / claim.ratio:.1f}× slower"}[claim.kind]
                       if claim.kind != "same" else "", **{"speed basis": claim.basis})
            exp.verdict.append(
                f"One-vs-all against the trees on raw features: P@1 {100 * ova['P@1']:.1f} % "
                f"vs {100 * kt['P@1']:.1f} %, P@5 {100 * ova['P@5']:.1f} % vs "
                f"{100 * kt['P@5']:.1f} %; against one-vs-all, KTXMLC "
                f"{speed_phrase(ova, tmp)} and predicts in "
                f"{kt['predict_ms_per_point']:.2f} vs {ova['predict_ms_per_point']:.2f} ms "
                "per point.")
    exp.seconds = time.perf_counter() - t0
    return exp


def _refrag(data, split, step, base_run, deadline_of, progress) -> Any:
    from featagg_core.runs.experiments.base import Experiment
    from featagg_core.runs.run import run_pipeline
    exp = Experiment("refrag_tuning", "REFRAG tuned on validation rows",
                     {"spec": step["spec"]}, split_id=split.split_id)
    cancel = deadline_of(step)
    step["started"] = time.monotonic()
    run = run_pipeline(data, split, step["spec"], progress=progress, cancel=cancel,
                       base=base_run)
    _finish(step, run, cancel)
    exp.runs = [run]
    if run.status == "done":
        m = run.metrics["test"]
        info = getattr(run.pipeline.reranker, "tuning_", {})
        row = {"run": run.name, "run_id": run.run_id, "message": run.message,
               "alpha": info.get("alpha"), "gamma": info.get("gamma"),
               "beta": info.get("propensity_exponent"), "tuned on": info.get("rows"),
               "tuning rows": info.get("n_rows")}
        for k in ("P@1", "P@5", "PSP@5", "coverage@5"):
            row[k], row[f"base {k}"] = m[k], m[f"base {k}"]
        exp.tables["rows"] = [row]
        exp.tables["grid"] = [dict(g) for g in info.get("grid", [])]
        exp.summary = {k: row[k] for k in row if k not in ("run", "run_id", "message")}
        up = "raises" if m["coverage@5"] > m["base coverage@5"] else \
            "leaves" if m["coverage@5"] == m["base coverage@5"] else "lowers"
        exp.verdict.append(
            f"REFRAG (tuned on {info.get('n_rows', 0):,} {info.get('rows', '')} rows: α = "
            f"{info.get('alpha', 1):g}, γ = {info.get('gamma', 1):g}, β = "
            f"{info.get('propensity_exponent', 0):g}) {up} coverage@5 "
            + (f"from {100 * m['base coverage@5']:.1f} % to {100 * m['coverage@5']:.1f} %"
               if up != "leaves" else f"at {100 * m['coverage@5']:.1f} %")
            + f", P@5 {100 * m['base P@5']:.2f} → {100 * m['P@5']:.2f} %, PSP@5 "
              f"{100 * m['base PSP@5']:.2f} → {100 * m['PSP@5']:.2f} % on the test rows.")
    else:
        exp.status = run.status
        exp.message = run.message
    exp.seconds = float(run.timings.get("total_s", 0.0))
    return exp


def _finish(step, run, cancel) -> None:
    step["seconds"] = time.monotonic() - step.pop("started", time.monotonic())
    step["run_id"] = run.run_id
    if run.status == "done":
        step["status"] = "done"
    elif run.status == "cancelled":
        step["status"] = "cancelled" if cancel.user() else "stopped"
        step["why"] = ("cancelled" if cancel.user() else
                       f"stopped after {step['seconds']:.0f} s: over its time share")
    else:
        step["status"] = "failed"
        step["why"] = run.message


def _sub(progress, i, n):
    if progress is None:
        return None
    return lambda f, m: progress((i + min(max(float(f), 0.0), 1.0)) / max(n, 1), m)


def _experiment_step(data, split, step, cancel, progress):
    from featagg_core.runs.experiments import graph as ge
    from featagg_core.runs.experiments import table as te
    from featagg_core.runs.evaluation import vocabulary_budget_curve
    from featagg_core.runs.experiments.base import Experiment
    p = step["params"]
    if step["step"] == "bmgufs_protocol":
        return ge.bmgufs_protocol(data, split, p["ds"], bmgufs=p["bmgufs"],
                                  progress=progress, cancel=cancel)
    if step["step"] == "bmgufs_heatmap":
        return ge.bmgufs_heatmap(data, split, p["d"], bmgufs=p["bmgufs"], progress=progress,
                                 cancel=cancel)
    if step["step"] == "bmgufs_robustness":
        return ge.bmgufs_robustness(data, split, p["d"], bmgufs=p["bmgufs"],
                                    random_state=p["random_state"], progress=progress,
                                    cancel=cancel)
    if step["step"] == "vocabulary":
        return te.vocabulary_experiment(data, split, p["budget"], p["methods"],
                                        progress=progress, cancel=cancel)
    curve = vocabulary_budget_curve(data, split, {"vocabulary": {"method": p["method"]}},
                                    p["budgets"], progress=progress, cancel=cancel)
    exp = Experiment("budget_curve", "MI kept against the budget", dict(p),
                     split_id=split.split_id)
    exp.tables["curve"] = curve.to_dict("records")
    rows = exp.tables["curve"]
    reach = next((r for r in rows if r["MI loss"] <= 0.01), None)
    if reach is not None:
        exp.verdict.append(f"{p['method']} keeps 99 % of the held-out I(X;C) from m = "
                           f"{int(reach['m'])} buckets per column.")
    return exp


@fill_doc
def run_triage(data, *, budget_s: float = 120.0, split=None, seed: int = 0,
               progress: Optional[Callable[[float, str], None]] = None, cancel=None,
               speed: Optional[dict] = None, replay: Optional[dict] = None,
               source: str = "") -> TriageReport:
    """The battery of the module docstring on ``data`` within ``budget_s`` seconds.

    Parameters
    ----------
    {data_any}
    budget_s : float, default=120.0
        Seconds the whole triage may take (> 0).
    split : Split, optional
        The split to use (default: the dataset's own test part, else a random 20 %;
        15 % of the training rows for validation, ``seed``).
    seed : int, default=0
        Seeds the split and every method.
    {progress}
    cancel : threading.Event-like, optional
        Stops the triage (what finished is reported).
    speed : dict, optional
        This machine's calibration (:func:`featagg_core.runs.estimate.default_speed` by default).
    replay : dict, optional
        The ``record`` of an earlier triage of the same dataset: its plan and split are run
        again, every step, no budget cuts.
    source : str, default=""
        How the data was named (path or ``sample:NAME``), for the reproduction command.

    Returns
    -------
    TriageReport
        The record (every number, the plan, the reproduction block) and the experiments.

    Raises
    ------
    ValueError
        For a budget that is not a positive number, or a ``replay`` that is not a triage
        report of this dataset.
    """
    from featagg_core.runs.run import jsonable
    from featagg_core.runs.split import make_split
    t_start = time.monotonic()
    budget_s = float(budget_s)
    if not budget_s > 0:
        raise ValueError(f"budget must be a positive number of seconds, got {budget_s!r}")
    if replay is not None:
        if replay.get("format") != FORMAT:
            raise ValueError("the replayed report is not a featagg triage report")
        if replay["dataset"]["fingerprint"] != data.fingerprint:
            raise ValueError("the replayed report was made from another dataset (its "
                             "fingerprint differs); give the same file")
        seed = int(replay["reproduce"]["seed"])
        settings = replay["reproduce"]["split"]
        split = make_split(data, **settings)
    elif split is None:
        settings = {"test_size": 0.2, "valid_size": 0.15, "random_state": int(seed)}
        split = make_split(data, **settings)
    else:
        settings = {"test_size": split.test_size if split.test_size is not None else 0.2,
                    "valid_size": split.valid_size, "random_state": split.random_state,
                    "how": split.how}
    report = lambda f, m: progress(min(f, 1.0), m) if progress is not None else None  # noqa
    report(0.0, "dataset statistics")
    stats = dataset_stats(data, split)
    report(0.01, "checking the data's health")
    alerts, health_why = _health(data, split)
    if replay is not None:
        steps = [dict(s, status="planned") for s in replay["reproduce"]["plan"]]
        speed_info = {}
        _warm(data, split, steps)
    else:
        from featagg_core.runs.estimate import default_speed
        speed = speed or default_speed()
        speed_info = {"wall_factor": float(speed.get("wall_factor", 1.0))}
        planner = {"multilabel": _multilabel_plan, "graph": _graph_plan,
                   "table": _table_plan}[data.kind]
        steps = planner(data, split, int(seed), speed)
        _warm(data, split, steps)
        _choose(steps, max(budget_s - (time.monotonic() - t_start) - REPORT_RESERVE_S, 1.0),
                must=2 if data.kind == "multilabel" else 1)
    deadline = t_start + budget_s - REPORT_RESERVE_S if replay is None else math.inf

    def deadline_of(step):
        est = step.get("estimate_s", math.nan)
        own = max(OVERRUN * est, MIN_STEP_S) if math.isfinite(est) else MIN_STEP_S
        if step.get("must"):      # the pair / protocol the verdict is about: the deadline only
            own = math.inf
        return _Deadline(cancel, min(deadline, time.monotonic() + own)
                         if replay is None else math.inf)

    user = (lambda: cancel is not None and cancel.is_set())

    def admit(s, rest) -> bool:
        """A planned step runs. A skipped one is taken after all when its estimate,
        corrected by how long the finished steps took against theirs (x0.5..x3), fits in
        the time left after the planned steps still to come (the plan's share of it)."""
        if s["status"] == "planned":
            return True
        if replay is not None or s["status"] != "skipped" or s["step"] == "bmgufs_protocol":
            return False
        finished = [t for t in steps if t["status"] == "done" and t.get("seconds") is not None
                    and math.isfinite(t.get("estimate_s", math.nan))]
        est_sum = sum(t["estimate_s"] for t in finished)
        ratio = min(max(sum(t["seconds"] for t in finished) / est_sum, 0.5), 3.0) \
            if finished and est_sum > 0 else 1.0

        def cost(t):
            e = t.get("estimate_s", math.nan)
            return (e if math.isfinite(e) else 5.0) * ratio
        need = sum(cost(t) for t in rest if t["status"] == "planned")
        if cost(s) + need <= PLAN_SHARE * (deadline - time.monotonic()):
            s["status"] = "planned"
            s["why"] = (f"added while running: the steps before it took {ratio:.1f}× their "
                        "estimates")
            return True
        return False

    planned = [s for s in steps if s["status"] == "planned"]
    experiments = []
    total = sum(s.get("estimate_s", 1.0) if math.isfinite(s.get("estimate_s", 1.0)) else 1.0
                for s in planned) or 1.0
    done_est = 0.0

    def span(est):
        lo = 0.05 + 0.9 * done_est / total
        hi = 0.05 + 0.9 * min(done_est + est, total) / total
        return lambda f, m: report(lo + (hi - lo) * min(max(float(f), 0.0), 1.0), m)

    out_of_time = (lambda: time.monotonic() >= deadline - 0.5)
    if data.kind == "multilabel":
        experiments += _multilabel_steps(data, split, steps, admit, deadline_of, span(total),
                                         user, out_of_time)
    else:
        for i, s in enumerate(steps):
            if user():
                if s["status"] == "planned":
                    s["status"], s["why"] = "cancelled", "cancelled"
                continue
            if not admit(s, steps[i + 1:]):
                continue
            if out_of_time():
                s["status"], s["why"] = "skipped", "no time left"
                continue
            cancel_s = deadline_of(s)
            s["started"] = time.monotonic()
            try:
                exp = _experiment_step(data, split, s, cancel_s, span(s["estimate_s"]))
            except Exception as exc:  # noqa: BLE001 - a failed step is reported, not raised
                from featagg_core.utils.cancel import Cancelled
                s["seconds"] = time.monotonic() - s.pop("started")
                if isinstance(exc, Cancelled):
                    s["status"] = "cancelled" if cancel_s.user() else "stopped"
                    s["why"] = "cancelled" if cancel_s.user() else \
                        f"stopped after {s['seconds']:.0f} s: over its time share"
                else:
                    s["status"], s["why"] = "failed", str(exc)
                continue
            s["seconds"] = time.monotonic() - s.pop("started")
            if exp.status == "cancelled":
                s["status"] = "cancelled" if cancel_s.user() else "stopped"
                s["why"] = "cancelled" if cancel_s.user() else \
                    f"stopped after {s['seconds']:.0f} s: over its time share"
                if not exp.tables:
                    continue
                s["partial"] = True           # what finished is in the report
            else:
                s["status"] = "done"
            experiments.append(exp)
            done_est += s["estimate_s"] if math.isfinite(s["estimate_s"]) else 0.0
    for s in steps:
        s.pop("started", None)
        if s["status"] == "planned":
            s["status"], s["why"] = ("cancelled", "cancelled") if user() else \
                ("skipped", "no time left")
    label_errors = {"checked": False, "why": "only multi-label data has them"}
    if data.kind == "multilabel" and alerts is not None:
        label_errors = _label_errors_plan(steps, replay, deadline)
        if label_errors["checked"] and not user():
            report(0.93, "looking for label errors (the classifier on every fold)")
            t_le = time.monotonic()
            full, why = _health(data, split, label_errors=True)
            label_errors["seconds"] = time.monotonic() - t_le
            if full is not None:
                alerts = full
            else:
                label_errors.update(checked=False, why=why)
    report(0.96, "the recommendation")
    from featagg_core.triage.recommend import recommend
    advice = recommend(data, split, experiments, alerts, seed=int(seed),
                       time_left_s=deadline - time.monotonic(), share=PLAN_SHARE,
                       cancel=cancel)
    record = _record(data, split, settings, seed, budget_s, stats, steps, experiments,
                     speed_info, t_start, source, replay is not None)
    record["health"] = {"alerts": alerts, "label_errors": label_errors} \
        if alerts is not None else {"alerts": None, "why": health_why}
    record["recommendation"] = jsonable(advice)
    report(1.0, "report ready")
    return TriageReport(record=record, experiments=experiments)


def _warm(data, split, steps) -> None:
    """Before any fit's clock: the classifier specs of a multi-label plan fitted once on a
    slice of the training rows (:func:`featagg_core.runs.experiments.multilabel.warm_kernels`;
    inside the budget: with an empty numba cache the compilation happens here)."""
    if data.kind != "multilabel":
        return
    from featagg_core.runs.experiments.multilabel import warm_kernels
    warm_kernels(data, split, [s["spec"] for s in steps if s.get("step") == "tradeoff"
                               and s.get("spec")])


def _health(data, split, label_errors: bool = False):
    """The data-health alerts of ``data`` on ``split`` (:func:`featagg_core.health.check`),
    most serious first, as JSON dicts; ``(None, why)`` when the checks failed (the triage
    goes on without them and says so)."""
    from featagg_core.health import check
    try:
        found = check(data, split, label_errors=label_errors)
    except Exception as exc:  # noqa: BLE001 - a failed check must not lose the triage
        return None, f"the health checks failed: {exc}"
    order = {"error": 0, "warning": 1, "info": 2}
    found = sorted(found, key=lambda a: order.get(a.severity, 3))
    return [a.to_dict() for a in found], ""


#: folds of the label-error check (:func:`featagg_core.health.check`'s default)
LABEL_ERROR_FOLDS = 5


def _label_errors_plan(steps, replay, deadline) -> Dict[str, Any]:
    """Whether the triage looks for label errors: a replay does what its record did; else
    when ``LABEL_ERROR_FOLDS`` fits of the raw KTXMLC on 4/5 of the training rows (its
    measured time) fit in ``PLAN_SHARE`` of the time left."""
    if replay is not None:
        done = bool(((replay.get("health") or {}).get("label_errors") or {}).get("checked"))
        return {"checked": done, "why": "as in the replayed report"}
    raw = next((s for s in steps if s["step"] == "tradeoff" and s["kind"] == "ktxmlc"
                and s["d0"] is None and s["status"] == "done"), None)
    if raw is None:
        return {"checked": False, "why": "the raw KTXMLC run did not finish"}
    est = LABEL_ERROR_FOLDS * 0.8 * float(raw.get("seconds") or 0.0) + 1.0
    left = deadline - time.monotonic()
    if est <= PLAN_SHARE * left:
        return {"checked": True, "estimate_s": est}
    return {"checked": False, "estimate_s": est,
            "why": f"no time left (estimated {_secs(est)}; {_secs(max(left, 0))} left)"}


def _step_title(s) -> str:
    if s["step"] == "tradeoff":
        from featagg_core.runs.experiments.multilabel import CLASSIFIER_TITLES
        feat = "raw features" if s["d0"] is None else f"DEFRAG d0 = {s['d0']}"
        return f"{CLASSIFIER_TITLES[s['kind']]} on {feat}"
    return {"refrag": "REFRAG tuned on validation rows",
            "bmgufs_protocol": "BMGUFS against the baselines",
            "bmgufs_heatmap": "BMGUFS over β̄ × γ", "bmgufs_robustness":
            "robustness to moved edges", "vocabulary": "vocabulary compression",
            "budget_curve": "MI against the budget"}[s["step"]]


def _record(data, split, settings, seed, budget_s, stats, steps, experiments, speed_info,
            t_start, source, replayed) -> Dict[str, Any]:
    from featagg_core.runs.run import jsonable
    verdict = _stats_verdict(stats)
    for e in experiments:
        verdict += list(e.verdict)
    # a protocol left out because its larger size ran is in the report: not listed
    skipped = [s for s in steps if s["status"] in ("skipped", "stopped")
               and s.get("why") != "the larger protocol was planned" and not s.get("partial")]
    partial = [s for s in steps if s.get("partial")]
    if partial:
        verdict.append("Cut short by the time budget (what finished is shown): " +
                       "; ".join(f"{_step_title(s)} ({s.get('why', s['status'])})"
                                 for s in partial) + ".")
    if skipped:
        verdict.append("Not in this report (time budget " + f"{budget_s:.0f} s): " +
                       "; ".join(f"{_step_title(s)} ({s.get('why', s['status'])})"
                                 for s in skipped) + ".")
    plan = [{k: v for k, v in s.items() if k in ("step", "kind", "d0", "spec", "params",
                                                 "estimate_s")}
            for s in steps if s["status"] in ("done", "stopped", "failed", "cancelled")]
    used = time.monotonic() - t_start
    cancelled = any(s["status"] == "cancelled" for s in steps)
    name = stats.get("name") or "the dataset"
    src = source or "DATA"
    return jsonable({
        "format": FORMAT, "title": f"Triage of {name}",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "status": "cancelled" if cancelled else "done",
        "dataset": {"name": name, "kind": data.kind, "fingerprint": data.fingerprint,
                    "source": str(getattr(data, "source", "") or ""), "given_as": source,
                    "stats": stats},
        "split": split.to_record(),
        "reproduce": {"seed": int(seed), "split": settings, "versions": _versions(),
                      "command": f"python -m featagg_core triage {src} --replay report.json "
                                 "--out report.html",
                      "replayed": bool(replayed), "plan": plan},
        "budget": {"budget_s": budget_s, "used_s": used, "speed": speed_info,
                   "plan_share": PLAN_SHARE, "overrun": OVERRUN,
                   "steps": [{"title": _step_title(s), **{k: s.get(k) for k in
                              ("step", "kind", "d0", "status", "estimate_s", "seconds",
                               "why", "run_id", "must")}} for s in steps]},
        "verdict": verdict,
        "experiments": [e.to_record() for e in experiments]})
