"""Tables and charts of the Compare page, built from run records (``Run.to_record()``).

Pure functions (no streamlit) so they can be unit tested. A record is the JSON-able dict of
a :class:`featagg_core.experiment.Run` (docs/RUN_MODEL.md): ``run_id``, ``name``, ``kind``,
``dataset_fingerprint``, ``dataset_name``, ``split_id``, ``split``, ``spec``, ``status``,
``timings`` (seconds), ``metrics`` = ``{"valid": {...}, "test": {...}}``, ``model_sizes``,
``created``. The page adds ``title`` (the run's name and number in the session) and
``split_text`` (``split.describe()``) before calling these.

Rules the builders keep:

* runs are grouped by (dataset, split): numbers from different splits are never drawn on
  one set of axes (one panel per group, and the page says so);
* one chart per unit: percentages (P@k, coverage, ACC, MI loss …) never share an axis with
  seconds, counts (nnz, clusters) or megabytes;
* runs are named by their title, never by a hash.
"""
from __future__ import annotations

import json
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from featagg_app.views.charts import PALETTE, style

#: the end of the name of a run fitted as one point of a curve its page draws (the
#: Vocabulary page's MI loss against the budget): Compare lists it, and picks it when asked
CURVE_SUFFIX = " (budget curve)"

#: identity columns of :func:`runs_frame`, in table order
ID_COLUMNS = ["run", "name", "kind", "dataset", "split", "created", "status", "run_id",
              "split_id", "dataset_fingerprint", "group"]
TRAIN_TIME = "train time (s)"
PREDICT_TIME = "predict (ms/point)"
SIZE = "model size (MB)"
VALID_PREFIX = "valid "

#: the metrics shown first for each kind of run
DEFAULT_METRICS = {
    "classifier": ["P@1", "P@5", "PSP@5", "coverage@5", TRAIN_TIME],
    "agglomeration": ["clustering_error", "clusters", "nnz_after", TRAIN_TIME],
    "feature_clustering": ["clustering_error", "clusters", TRAIN_TIME],
    "feature_selection": ["ACC", "NMI", "d", TRAIN_TIME],
    "vocabulary": ["MI loss", "I(Z;C)", TRAIN_TIME],
}
KIND_TITLES = {"classifier": "Classifiers", "agglomeration": "Feature agglomeration",
               "feature_clustering": "Feature-clustering baselines",
               "feature_selection": "Graph feature selection", "vocabulary": "Vocabulary"}

#: fit steps whose seconds add up to a run's training time
_FIT_STEPS = ("defrag_s", "feature_clustering_s", "classifier_s", "rerank_s", "impute_s",
              "selection_s", "selector_s", "vocabulary_s", "fit_s")
#: a pipeline step (``Run.reused``) -> the timing that step is recorded under
_STEP_TIMING = {"defrag": "defrag_s", "feature_clustering": "feature_clustering_s",
                "classifier": "classifier_s", "reranker": "rerank_s", "imputer": "impute_s",
                "selector": "selection_s", "vocabulary": "vocabulary_s"}

_PERCENT_PREFIXES = ("P@", "nDCG@", "PSP@", "PSnDCG@", "coverage@")
_PERCENT_NAMES = {"ACC", "NMI", "MI loss"}
_COUNT_NAMES = {"clusters", "features_after", "nnz_after", "d", "nnz(r)", "n_rows",
                "buckets"}
UNITS = ("%", "seconds", "ms per point", "count", "MB", "nats", "score")
UNIT_AXIS = {"%": "percent", "seconds": "seconds", "ms per point": "milliseconds per point",
             "count": "count", "MB": "megabytes", "nats": "nats", "score": "value"}


def _scalar(value):
    """A table cell: numbers and strings as they are, anything else as compact JSON."""
    if value is None or isinstance(value, (bool, int, float, str, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    try:
        return json.dumps(value, default=str, sort_keys=True)
    except TypeError:
        return str(value)


def unit_of(metric: str) -> str:
    """The unit a metric column is drawn in: "%", "seconds", "ms per point", "count", "MB",
    "nats" or "score" (anything else, e.g. clustering error)."""
    base = metric[len(VALID_PREFIX):] if metric.startswith(VALID_PREFIX) else metric
    base = base[5:] if base.startswith("base ") else base
    if base == TRAIN_TIME or base.endswith("(s)"):
        return "seconds"
    if base == PREDICT_TIME:
        return "ms per point"
    if base == SIZE:
        return "MB"
    if base.startswith(_PERCENT_PREFIXES) or base in _PERCENT_NAMES:
        return "%"
    if base in _COUNT_NAMES:
        return "count"
    if base.startswith("I("):
        return "nats"
    return "score"


def is_percent(metric: str) -> bool:
    """True for metrics stored as fractions in [0, 1] and shown as percentages."""
    return unit_of(metric) == "%"


def train_seconds(timings: dict) -> Optional[float]:
    """A run's training time: the seconds of its fit steps (``total_s`` minus prediction
    when no step is itemised)."""
    timings = timings or {}
    steps = [float(v) for k, v in timings.items() if k in _FIT_STEPS and v is not None]
    if steps:
        return float(sum(steps))
    if timings.get("total_s") is not None:
        return float(timings["total_s"]) - float(timings.get("predict_s") or 0.0)
    return None


def pipeline_train_seconds(rec: dict, by_id: Dict[str, dict]) -> Optional[float]:
    """Training time of a run's whole pipeline: its own fit steps plus, for every step it
    reused from its base run (``reused``, ``base_run_id``), the time that step took where
    it was fitted (followed through the bases; 0 when the base is not in ``by_id``)."""
    timings = dict(rec.get("timings") or {})
    for step in rec.get("reused") or []:
        key = _STEP_TIMING.get(step)
        seen = {rec.get("run_id")}
        base, secs = by_id.get(rec.get("base_run_id")), 0.0
        while key and base is not None and base.get("run_id") not in seen:
            seen.add(base.get("run_id"))
            if step not in (base.get("reused") or []):
                secs = float((base.get("timings") or {}).get(key) or 0.0)
                break
            base = by_id.get(base.get("base_run_id"))
        if key:
            timings[key] = float(timings.get(key) or 0.0) + secs
    return train_seconds(timings)


def group_label(dataset: str, split_text: str) -> str:
    """"Bibtex · Bibtex's own split: 4,880 training rows / 2,515 test"."""
    return f"{dataset} · {split_text}"


def runs_frame(records: Iterable[dict]) -> pd.DataFrame:
    """One row per run: identity (``run`` is the title), every test metric under its own
    name (fractions, as recorded), every validation metric as ``valid <name>``, the
    training time of the whole pipeline (:func:`pipeline_train_seconds`: a reused step
    counts what it took in its own run), prediction time per point, model size, and the
    spec as JSON."""
    records = list(records)
    by_id = {rec.get("run_id"): rec for rec in records}
    rows = []
    for rec in records:
        ds = rec.get("dataset_name") or "dataset"
        split_text = rec.get("split_text") or f"split {str(rec.get('split_id'))[:8]}"
        row = {"run": rec.get("title") or rec.get("name"), "name": rec.get("name"),
               "kind": rec.get("kind"), "dataset": ds, "split": split_text,
               "created": rec.get("created"), "status": rec.get("status"),
               "run_id": rec.get("run_id"), "split_id": rec.get("split_id"),
               "dataset_fingerprint": rec.get("dataset_fingerprint"),
               "group": group_label(ds, split_text)}
        mets = rec.get("metrics") or {}
        for k, v in (mets.get("test") or {}).items():
            row[str(k)] = _scalar(v)
        for k, v in (mets.get("valid") or {}).items():
            row[VALID_PREFIX + str(k)] = _scalar(v)
        timings = rec.get("timings") or {}
        row[TRAIN_TIME] = pipeline_train_seconds(rec, by_id)
        if timings.get("predict_ms_per_point") is not None:
            row[PREDICT_TIME] = float(timings["predict_ms_per_point"])
        total = (rec.get("model_sizes") or {}).get("total")
        row[SIZE] = None if total is None else float(total) / 2 ** 20
        row["spec"] = json.dumps(rec.get("spec") or {}, sort_keys=True, default=str)
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=ID_COLUMNS + ["spec"])
    return pd.DataFrame(rows)


def metric_columns(df: pd.DataFrame) -> List[str]:
    """Numeric measurement columns (test metrics, then validation, times, size), in
    first-seen order; identity columns and ``n_rows`` left out."""
    skip = set(ID_COLUMNS) | {"spec", "n_rows", VALID_PREFIX + "n_rows"}
    cols = [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c])
            and df[c].notna().any()]
    test = [c for c in cols if not c.startswith(VALID_PREFIX) and c not in (TRAIN_TIME,
                                                                            PREDICT_TIME, SIZE)]
    valid = [c for c in cols if c.startswith(VALID_PREFIX)]
    rest = [c for c in (TRAIN_TIME, PREDICT_TIME, SIZE) if c in cols]
    return test + valid + rest


def default_metrics(df: pd.DataFrame, kind: str) -> List[str]:
    """The metrics the page shows first for runs of ``kind`` (those recorded)."""
    have = set(metric_columns(df))
    picked = [m for m in DEFAULT_METRICS.get(kind, []) if m in have]
    return picked or metric_columns(df)[:5]


def groups(df: pd.DataFrame) -> List[str]:
    """The (dataset, split) groups of ``df``, in the order their first run appears."""
    return list(dict.fromkeys(df["group"].tolist())) if len(df) else []


def _is_plain(spec_text) -> bool:
    """Whether a run's spec (JSON text) has no agglomeration, re-ranking or imputation step:
    a classifier on the raw features."""
    try:
        spec = json.loads(spec_text)
    except (TypeError, ValueError):
        spec = {}
    return not any(k in spec for k in ("defrag", "rerank", "impute"))


def latest_runs(df: pd.DataFrame, kind: str, group: Optional[str] = None,
                n: int = 6) -> List[str]:
    """run_ids of the ``n`` latest runs of ``kind`` (in ``group`` when given), oldest first.

    A curve's points (names ending in :data:`CURVE_SUFFIX`: a page refits a method at
    every budget) are passed over while the group has other runs: the curve is drawn by
    its page, and the runs a person asked for are the ones to compare. When none of them is a plain classifier on raw features but an older run of the group
    is, the latest such run takes the oldest one's place: a Triage or a d0 sweep adds many
    DEFRAG runs at once, and the deltas should still start from the raw classifier (see
    :func:`default_baseline`) rather than from one of the sweep's points.
    """
    sel = df[df["kind"] == kind]
    if group is not None:
        sel = sel[sel["group"] == group]
    asked = sel[~sel["name"].astype(str).str.endswith(CURVE_SUFFIX)]
    if len(asked):
        sel = asked
    ids = sel["run_id"].tolist()
    latest = ids[-n:]
    if kind != "classifier" or len(ids) <= n:
        return latest
    plain = [rid for rid, spec in zip(ids, sel["spec"]) if _is_plain(spec)]
    if not plain or any(rid in latest for rid in plain):
        return latest
    return [plain[-1]] + latest[1:]


def default_baseline(df: pd.DataFrame, run_ids: Sequence[str]) -> Optional[str]:
    """The run deltas are shown against: the oldest selected run without an agglomeration
    or re-ranking step (a plain classifier on raw features), else the oldest selected."""
    sel = df.set_index("run_id").loc[[r for r in run_ids if r in set(df["run_id"])]]
    if sel.empty:
        return None
    for rid, row in sel.iterrows():
        if _is_plain(row["spec"]):
            return rid
    return sel.index[0]


#: unit -> (scale, format of a value, format of a difference)
_FORMATS = {"%": (100.0, "{:.2f} %", "{:+.2f} pt"), "seconds": (1.0, "{:.2f} s", "{:+.2f} s"),
            "ms per point": (1.0, "{:.3f} ms", "{:+.3f} ms"),
            "MB": (1.0, "{:.2f} MB", "{:+.2f} MB"), "count": (1.0, "{:,.0f}", "{:+,.0f}")}
_PLAIN = (1.0, "{:.4g}", "{:+.4g}")


def _fmt(value, metric: str) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    scale, fmt, _ = _FORMATS.get(unit_of(metric), _PLAIN)
    return fmt.format(scale * float(value))


def _fmt_delta(delta, metric: str) -> str:
    if delta is None or not np.isfinite(delta):
        return "–"
    scale, _, fmt = _FORMATS.get(unit_of(metric), _PLAIN)
    return fmt.format(scale * delta)


#: the column of :func:`delta_frame` that says what the training times allow to claim
SPEED = "speed vs baseline"


def speed_claim(base_s: float, run_s: float) -> str:
    """What one timing of a run against one of the baseline allows to say
    (:func:`featagg_core.utils.timing.compare`): "too fast to time" when either is under
    0.2 s (a run on this page was timed once), "N× faster" / "N× slower" when the two are
    further apart than ±15 % of each (the jitter of one timing on a busy machine), "no
    measurable difference" otherwise."""
    from featagg_core.utils.timing import Timing, compare
    claim = compare(Timing((base_s,)), Timing((run_s,)))
    return {"too_fast": "too fast to time", "same": "no measurable difference",
            "faster": f"{claim.ratio:.1f}× faster",
            "slower": f"{1 / claim.ratio:.1f}× slower" if claim.ratio > 0 else "slower"}[
        claim.kind]


def delta_frame(df: pd.DataFrame, run_ids: Sequence[str], metrics: Sequence[str],
                baseline: Optional[str]) -> pd.DataFrame:
    """Numbers of the chosen runs and their difference to ``baseline``: one row per run
    (``run`` title as index), per metric a value column and a ``Δ <metric>`` column (the
    baseline's own row shows "baseline"). Percentages in points, times in seconds. With
    the training time, :data:`SPEED` says what the two timings allow to claim
    (:func:`speed_claim`)."""
    by_id = df.set_index("run_id")
    base = by_id.loc[baseline] if baseline in by_id.index else None
    rows = {}
    for rid in run_ids:
        if rid not in by_id.index:
            continue
        r = by_id.loc[rid]
        out = {}
        for m in metrics:
            v = r.get(m)
            out[m] = _fmt(v, m)
            if base is not None:
                if rid == baseline:
                    out[f"Δ {m}"] = "baseline"
                else:
                    b = base.get(m)
                    ok = v is not None and b is not None and pd.notna(v) and pd.notna(b)
                    out[f"Δ {m}"] = _fmt_delta(float(v) - float(b), m) if ok else "–"
                    if m == TRAIN_TIME:
                        out[SPEED] = speed_claim(float(b), float(v)) if ok else "–"
                if m == TRAIN_TIME and rid == baseline:
                    out[SPEED] = "baseline"
        rows[r["run"]] = out
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "run"
    return frame


def unit_groups(metrics: Sequence[str]) -> Dict[str, List[str]]:
    """The chosen metrics grouped by unit (:func:`unit_of`), in :data:`UNITS` order."""
    out: Dict[str, List[str]] = {}
    for m in metrics:
        out.setdefault(unit_of(m), []).append(m)
    return {u: out[u] for u in UNITS if u in out}


def unit_figure(df: pd.DataFrame, run_ids: Sequence[str], metrics: Sequence[str],
                unit: str, baseline: Optional[str] = None) -> go.Figure:
    """Grouped bars of ``metrics`` (all in one ``unit``), one bar per run, one panel per
    (dataset, split) group of the chosen runs. Percentages are drawn in percent; the
    baseline run's bars are outlined and hovering a bar shows its difference to it."""
    if any(unit_of(m) != unit for m in metrics):
        raise ValueError(f"unit_figure: every metric must be in {unit!r}, got "
                         f"{[(m, unit_of(m)) for m in metrics]}")
    by_id = df.set_index("run_id")
    ids = [r for r in run_ids if r in by_id.index]
    grps = list(dict.fromkeys(by_id.loc[ids, "group"].tolist())) if ids else []
    scale = 100.0 if unit == "%" else 1.0
    fig = make_subplots(rows=1, cols=max(1, len(grps)), shared_yaxes=True,
                        subplot_titles=grps if len(grps) > 1 else None)
    base = by_id.loc[baseline] if baseline in by_id.index else None
    for gi, g in enumerate(grps):
        for i, rid in enumerate(r for r in ids if by_id.loc[r, "group"] == g):
            row = by_id.loc[rid]
            ys, hover = [], []
            for m in metrics:
                v = row.get(m)
                v = float(v) * scale if v is not None and pd.notna(v) else None
                ys.append(v)
                text = f"{row['run']}<br>{m}: {_fmt(row.get(m), m)}"
                if base is not None and rid != baseline and base["group"] == g:
                    bv = base.get(m)
                    if v is not None and bv is not None and pd.notna(bv):
                        text += f"<br>Δ vs baseline: {_fmt_delta(float(row.get(m)) - float(bv), m)}"
                hover.append(text)
            color = PALETTE[ids.index(rid) % len(PALETTE)]
            fig.add_trace(go.Bar(x=list(metrics), y=ys, name=str(row["run"]),
                                 legendgroup=rid,
                                 marker=dict(color=color,
                                             line=dict(width=3 if rid == baseline else 0,
                                                       color="black")),
                                 hovertext=hover, hoverinfo="text"),
                          row=1, col=gi + 1)
    fig.update_layout(barmode="group")
    title = {"%": "Quality (percent)", "seconds": "Time (seconds)",
             "ms per point": "Prediction time", "count": "Sizes (counts)",
             "MB": "Model size", "nats": "Information (nats)"}.get(unit, "Scores")
    if len(grps) > 1:
        title += " — one panel per dataset and split"
    fig = style(fig, title=title, height=380, ylabel=UNIT_AXIS.get(unit, unit))
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left",
                                  x=0.0), margin=dict(b=40))
    return fig


def tradeoff_figure(df: pd.DataFrame, run_ids: Sequence[str], x: str, y: str) -> go.Figure:
    """One point per run (its title on hover), ``y`` against ``x``, one colour per (dataset,
    split) group."""
    by_id = df.set_index("run_id")
    ids = [r for r in run_ids if r in by_id.index]
    fig = go.Figure()
    sx = 100.0 if is_percent(x) else 1.0
    sy = 100.0 if is_percent(y) else 1.0
    for gi, g in enumerate(dict.fromkeys(by_id.loc[ids, "group"].tolist()) if ids else []):
        sub = by_id.loc[[r for r in ids if by_id.loc[r, "group"] == g]]
        sub = sub[sub[x].notna() & sub[y].notna()] if x in sub and y in sub else sub.iloc[0:0]
        fig.add_trace(go.Scatter(x=sub[x].astype(float) * sx, y=sub[y].astype(float) * sy,
                                 mode="markers+text", name=g, text=sub["run"],
                                 textposition="top center",
                                 marker=dict(size=12, color=PALETTE[gi % len(PALETTE)])))
    return style(fig, title=f"{y} against {x}", height=400,
                 xlabel=f"{x} ({UNIT_AXIS.get(unit_of(x), '')})",
                 ylabel=f"{y} ({UNIT_AXIS.get(unit_of(y), '')})")


def to_csv(df: pd.DataFrame) -> bytes:
    """The table as UTF-8 CSV bytes (for the download button)."""
    return df.to_csv(index=False).encode("utf-8")
