"""Table and figure builders of the Vocabulary compression page (no streamlit here, so
they are unit-testable): the summary of the methods' runs, the MI-loss versus budget curves
(from the runs of each budget, or ``experiment.vocabulary_budget_curve``), timings, the sorted P(C=0|x) curve with the split
points, the per-column budget allocation, and the mapping files. Every number comes from a
run's metrics or the core's sweeps; nothing here fits or scores."""
from __future__ import annotations

import json
from typing import Dict, List, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from featagg_app.views import charts
from featagg_core.vocab.compressor import ColumnCompression
from featagg_core.vocab.counts import _Prepared, factorize

METHOD_TITLES = {
    "submodular": "Submodular (stochastic greedy)",
    "threshold": "Threshold greedy",
    "dp": "Exact DP",
    "bucketing": "Equal-mass bucketing",
    "frequency": "Most frequent",
    "divisive": "Divisive (Dhillon et al.)",
}
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0.0)

BUDGET_STEPS = [2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
#: the page offers the DP when every chosen column has at most this many atoms
DP_PAGE_LIMIT = 2000


def binary_columns(table: pd.DataFrame) -> List[str]:
    """Columns with exactly two distinct non-missing values (candidate label columns)."""
    return [c for c in table.columns if table[c].nunique(dropna=True) == 2]


def labels_from_column(values) -> tuple:
    """0/1 labels from a two-valued column: the larger value (sorted as text) is 1.
    Returns ``(labels int8, positive value)``; missing values raise ValueError."""
    s = pd.Series(values)
    if s.isna().any():
        raise ValueError("label column: has missing values")
    u = sorted(s.astype(str).unique())
    if len(u) != 2:
        raise ValueError(f"label column: needs exactly two values, has {len(u)}")
    return (s.astype(str) == u[1]).to_numpy().astype(np.int8), u[1]


#: a numeric column with at most this many distinct values is offered as a label with a
#: threshold (a rating, a count, an age; not an id)
NUMERIC_LABEL_MAX_VALUES = 100


def _as_numbers(values) -> np.ndarray:
    return pd.to_numeric(pd.Series(values).astype(str).str.strip(), errors="coerce").to_numpy(
        dtype=float)


def numeric_columns(table: pd.DataFrame) -> List[str]:
    """Columns whose every value reads as a number, with 3 to
    :data:`NUMERIC_LABEL_MAX_VALUES` distinct values: candidate labels with a threshold
    (MovieLens' ``rating``).

    Parameters
    ----------
    table : pandas.DataFrame
        The table (values as text).

    Returns
    -------
    list of str
        The columns, in table order.
    """
    out = []
    for c in table.columns:
        k = table[c].nunique(dropna=True)
        if 3 <= k <= NUMERIC_LABEL_MAX_VALUES and np.isfinite(_as_numbers(table[c])).all():
            out.append(c)
    return out


def natural_threshold(values) -> float:
    """The default cut of a numeric label: the median, moved up to the smallest value that
    occurs at or above it (a rating of 1-5 with median 4 gives "rating >= 4"), and one
    value further when every row is at or above it (so that both classes occur).

    Parameters
    ----------
    values : array-like
        The column (numbers, possibly as text).

    Returns
    -------
    float
        The threshold: rows with a value >= it are the positive class.
    """
    x = _as_numbers(values)
    u = np.unique(x[np.isfinite(x)])
    if u.size < 2:
        raise ValueError("label column: needs at least two distinct numbers")
    t = u[np.searchsorted(u, np.median(x))]
    if (x >= t).all():
        t = u[1]
    return float(t)


def labels_from_threshold(values, threshold: float) -> np.ndarray:
    """0/1 labels of a numeric column: 1 where the value is at least ``threshold``.

    Parameters
    ----------
    values : array-like
        The column (numbers, possibly as text).
    threshold : float
        The cut.

    Returns
    -------
    numpy.ndarray of int8
        The labels.

    Raises
    ------
    ValueError
        For a value that is no number, or a cut that leaves one class only.
    """
    x = _as_numbers(values)
    if not np.isfinite(x).all():
        raise ValueError("label column: every value must be a number for a threshold")
    y = (x >= float(threshold)).astype(np.int8)
    if y.all() or not y.any():
        raise ValueError(f"a threshold of {threshold:g} puts every row in one class (the "
                         f"values run from {x.min():g} to {x.max():g})")
    return y


def atoms_per_column(table: pd.DataFrame, labels, columns: Sequence[str], min_count: int = 1) -> Dict[str, int]:
    """Number of atoms (tie runs) per column: the size the optimisers work on."""
    y = np.asarray(labels)
    out = {}
    for c in columns:
        codes, vocab = factorize(table[c])
        n = len(vocab)
        c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
        c0 = np.bincount(codes, minlength=n).astype(np.int64) - c1
        out[c] = _Prepared(c0, c1, min_count, True).n_atoms
    return out


def summary_table(runs: dict) -> pd.DataFrame:
    """One row per method (``runs``: method -> vocabulary Run): MI loss, I(X;C), I(Z;C)
    (sums over the columns, nats, on the test rows), buckets, and the seconds of the fit
    on the training rows and of the whole run."""
    rows = []
    for meth, run in runs.items():
        t = run.metrics["test"]
        rows.append({"method": METHOD_TITLES.get(meth, meth),
                     "MI loss": float(t["MI loss"]),
                     "I(X;C) nats": float(t["I(X;C)"]),
                     "I(Z;C) nats": float(t["I(Z;C)"]),
                     "buckets": int(t["buckets"]),
                     "optimisation s": float(run.timings.get("vocabulary_s", 0.0)),
                     "total s": float(run.timings.get("total_s", 0.0))})
    return pd.DataFrame(rows)


def curve_from_runs(runs) -> pd.DataFrame:
    """One method's MI-loss curve from its runs, one per budget: the frame
    ``experiment.vocabulary_budget_curve`` gives (``m``, ``I(Z;C)``, ``I(X;C)``,
    ``MI loss``, ``buckets``, ``fit_s``), measured on the runs' test rows."""
    rows = []
    for r in runs:
        test = r.metrics["test"]
        rows.append({"m": int(r.spec["vocabulary"]["budget"]),
                     **{k: test[k] for k in ("I(Z;C)", "I(X;C)", "MI loss", "buckets")},
                     "fit_s": float(r.timings.get("vocabulary_s", 0.0))})
    return pd.DataFrame(rows)


def curves_frame(curves: dict) -> pd.DataFrame:
    """``experiment.vocabulary_budget_curve`` frames (method -> frame) as one long table:
    method, m, MI loss, seconds."""
    parts = [pd.DataFrame({"method": meth, "m": c["m"].astype(int), "MI loss": c["MI loss"],
                           "seconds": c["fit_s"]}) for meth, c in curves.items()]
    return pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame(columns=["method", "m", "MI loss", "seconds"])


def loss_curve_figure(curves: pd.DataFrame) -> go.Figure:
    """MI loss versus buckets per column, one line per method (log x; log y where > 0)."""
    fig = go.Figure()
    pos = curves["MI loss"][curves["MI loss"] > 1e-12]
    for meth, g in curves.groupby("method", sort=False):
        g = g.sort_values("m")
        y = g["MI loss"].to_numpy(dtype=float)
        if len(pos):  # a loss of (numerically) 0 has no place on a log axis
            y = np.where(y > 1e-12, y, np.nan)
        fig.add_trace(go.Scatter(x=g["m"], y=y, mode="lines+markers",
                                 name=METHOD_TITLES.get(meth, meth)))
    charts.style(fig, "MI loss versus budget (buckets per column)", height=420)
    fig.update_layout(legend=_LEGEND_BELOW)
    ms = sorted(int(v) for v in curves["m"].unique())
    fig.update_xaxes(type="log", title="buckets per column m", tickvals=ms,
                     ticktext=[f"{v:,}" for v in ms])
    if len(pos):
        fig.update_yaxes(type="log", exponentformat="power",
                         title="MI loss (log; 0 not drawn)")
    else:
        fig.update_yaxes(title="MI loss")
    return fig


def time_figure(summary: pd.DataFrame) -> go.Figure:
    """Optimisation seconds per method (bar)."""
    return charts.bar(summary["method"], summary["optimisation s"],
                      title="Time per method (optimisation, all columns)", xlabel="",
                      ylabel="seconds")


def allocation_table(results: Dict[str, ColumnCompression]) -> pd.DataFrame:
    """Buckets given to each column by each method (columns × methods)."""
    cols = None
    data = {}
    for meth, cc in results.items():
        cols = list(cc.allocation) if cols is None else cols
        data[METHOD_TITLES.get(meth, meth)] = [int(cc.allocation[c]) for c in cols]
    return pd.DataFrame(data, index=pd.Index(cols or [], name="column"))


def allocation_figure(results: Dict[str, ColumnCompression]) -> go.Figure:
    T = allocation_table(results)
    fig = charts.grouped_bars(list(T.index), {c: T[c].tolist() for c in T.columns},
                              title="Per-column budget allocation (buckets)", xlabel="",
                              ylabel="buckets", height=420)
    fig.update_layout(legend=dict(_LEGEND_BELOW, y=-0.35))
    return fig


def split_curve_data(vc, max_points: int = charts.MAX_POINTS) -> dict:
    """The paper's key picture as arrays: values in sorted order on x (cumulative share of
    the rows, so frequent values take more room), P(C=0|x) on y, the split points (x of
    each cut) and every bucket's P(C=0|z) as a horizontal segment."""
    c = vc.counts_[vc.order_]
    w = c.sum(axis=1).astype(np.float64)
    right = np.cumsum(w) / w.sum()
    left = right - w / w.sum()
    mid = (left + right) / 2
    p = np.asarray(vc.p0_sorted_, np.float64)
    keep = np.arange(len(p))
    if len(p) > max_points:  # thin out, keeping both ends
        keep = np.unique(np.r_[np.linspace(0, len(p) - 1, max_points).astype(int)])
    out = {"x": mid[keep], "p0": p[keep], "splits_x": np.zeros(0), "segments": []}
    b_sorted = vc.bucket_of_[vc.order_]
    if vc.split_points_ is not None:
        out["splits_x"] = left[vc.split_points_]
    bc = vc.bucket_counts_
    for z in range(vc.n_buckets_):
        idx = np.flatnonzero(b_sorted == z)
        if len(idx) == 0:
            continue
        q = bc[z, 0] / max(bc[z].sum(), 1)
        out["segments"].append((float(left[idx.min()]), float(right[idx.max()]), float(q)))
    return out


def split_curve_figure(vc, column: str = "", max_lines: int = 300) -> go.Figure:
    """Sorted P(C=0|x) with the chosen split points (vertical lines) and each bucket's
    P(C=0|z) (horizontal segments)."""
    d = split_curve_data(vc)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=d["x"], y=d["p0"], mode="markers", name="P(C=0 | x) per value",
                             marker=dict(size=4, opacity=0.6)))
    if vc.split_points_ is not None and len(d["segments"]) <= max_lines:
        xs, ys = [], []
        for a, b, q in d["segments"]:
            xs += [a, b, None]
            ys += [q, q, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="P(C=0 | z) per bucket",
                                 line=dict(width=2)))
    sx = d["splits_x"]
    if len(sx):
        step = max(1, len(sx) // max_lines)
        xs, ys = [], []
        for x in sx[::step]:
            xs += [x, x, None]
            ys += [0, 1, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="split points",
                                 line=dict(width=1, dash="dot", color="rgba(200,30,30,0.6)")))
    title = f"Sorted P(C=0 | x) with the split points{' — ' + column if column else ''}"
    charts.style(fig, title, height=440)
    fig.update_layout(legend=_LEGEND_BELOW)
    fig.update_xaxes(title="values sorted by P(C=0 | x) (cumulative share of rows)", range=[0, 1])
    fig.update_yaxes(title="P(C=0 | x)", range=[-0.02, 1.02])
    return fig


def mapping_frame(cc: ColumnCompression) -> pd.DataFrame:
    """All columns' mappings in one table: column, value, bucket, count, positives, p_c0."""
    parts = []
    for col, vc in cc.compressors.items():
        f = vc.mapping_frame()
        f.insert(0, "column", col)
        parts.append(f)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def mapping_csv(cc: ColumnCompression) -> bytes:
    return mapping_frame(cc).to_csv(index=False).encode()


def mapping_json(cc: ColumnCompression) -> bytes:
    """``{"method", "budget", "mi_loss", "columns": {column: <VocabularyCompressor.to_json>}}``."""
    doc = {"method": cc.method, "budget": cc.budget, "mi_loss": cc.mi_loss,
           "columns": {str(c): json.loads(vc.to_json()) for c, vc in cc.compressors.items()}}
    return json.dumps(doc).encode()
