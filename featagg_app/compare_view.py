"""Tables and charts of the Compare page, built from the session's run registry.

Pure functions (no streamlit) so they can be unit tested: a run is the dict that
:func:`featagg_app.session.record_run` stores.
"""
from __future__ import annotations

import json
from typing import Iterable, List, Optional, Sequence

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

#: identifying columns, in table order
ID_COLUMNS = ["run_id", "timestamp", "page", "method", "dataset", "kind", "fingerprint"]
METRIC_PREFIX = ""          # metric columns keep their own names (P@1, ACC, MI loss, …)
TIME_PREFIX = "time: "      # timings (seconds)
PARAM_PREFIX = "param: "


def _scalar(value):
    """A table cell: numbers and strings as they are, anything else as compact JSON."""
    if value is None or isinstance(value, (bool, int, float, str, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    try:
        return json.dumps(value, default=str)
    except TypeError:
        return str(value)


def runs_frame(runs: Iterable[dict]) -> pd.DataFrame:
    """One row per run: identity, ``params`` (one ``param: name`` column each, plus a
    readable summary), every metric, every timing (``time: name``) and model size."""
    rows = []
    for run in runs:
        row = {c: run.get(c) for c in ID_COLUMNS}
        params = run.get("params") or {}
        row["parameters"] = ", ".join(f"{k}={_scalar(v)}" for k, v in params.items())
        for k, v in params.items():
            row[PARAM_PREFIX + str(k)] = _scalar(v)
        for k, v in (run.get("metrics") or {}).items():
            row[METRIC_PREFIX + str(k)] = _scalar(v)
        for k, v in (run.get("timings") or {}).items():
            row[TIME_PREFIX + str(k)] = _scalar(v)
        size = run.get("model_size_bytes")
        row["model MB"] = None if size is None else size / 2**20
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=ID_COLUMNS + ["parameters", "model MB"])
    return df


def metric_columns(df: pd.DataFrame) -> List[str]:
    """Numeric metric columns (not identity, parameters or timings), in first-seen order."""
    skip = set(ID_COLUMNS) | {"parameters"}
    out = []
    for c in df.columns:
        if c in skip or c.startswith(TIME_PREFIX) or c.startswith(PARAM_PREFIX) or c == "model MB":
            continue
        if pd.api.types.is_numeric_dtype(df[c]) and df[c].notna().any():
            out.append(c)
    return out


def numeric_columns(df: pd.DataFrame) -> List[str]:
    """Every numeric column with a value (metrics, timings, numeric parameters, size)."""
    return [c for c in df.columns if c not in ID_COLUMNS and pd.api.types.is_numeric_dtype(df[c])
            and df[c].notna().any()]


def filter_runs(df: pd.DataFrame, datasets: Optional[Sequence[str]] = None,
                methods: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """Rows whose dataset and method are among the given ones (None = no filter)."""
    mask = pd.Series(True, index=df.index)
    if datasets is not None:
        mask &= df["dataset"].isin(list(datasets))
    if methods is not None:
        mask &= df["method"].isin(list(methods))
    return df[mask]


def run_label(df: pd.DataFrame) -> pd.Series:
    """Short legend text of each run: method, its distinguishing parameters and id."""
    return df["method"].astype(str) + " · " + df["run_id"].astype(str)


def _facet(df: pd.DataFrame) -> Optional[str]:
    # Runs on different datasets are never drawn on one set of axes: one panel each.
    return "dataset" if df["dataset"].nunique() > 1 else None


def grouped_bar_figure(df: pd.DataFrame, metrics: Sequence[str]) -> go.Figure:
    """Grouped bars: one group per metric, one bar per run (a panel per dataset)."""
    metrics = [m for m in metrics if m in df.columns]
    long = df.assign(run=run_label(df)).melt(id_vars=["run", "dataset", "method"],
                                             value_vars=metrics, var_name="metric",
                                             value_name="value").dropna(subset=["value"])
    fig = px.bar(long, x="metric", y="value", color="run", barmode="group",
                 facet_col=_facet(df), hover_data=["method"],
                 title="Metrics per run" + (" (one panel per dataset)" if _facet(df) else ""))
    fig.update_layout(legend_title_text="run", margin=dict(t=60, b=40))
    return fig


def tradeoff_figure(df: pd.DataFrame, x: str, y: str) -> go.Figure:
    """Scatter of two numeric columns, a point per run, coloured by method (a panel per
    dataset), with each run's parameters on hover."""
    d = df.dropna(subset=[x, y]).assign(run=lambda t: run_label(t))
    fig = px.scatter(d, x=x, y=y, color="method", symbol="method", facet_col=_facet(d),
                     hover_name="run", hover_data={"parameters": True},
                     title=f"{y} against {x}" + (" (one panel per dataset)" if _facet(d) else ""))
    fig.update_traces(marker=dict(size=12, line=dict(width=1, color="white")))
    if x.startswith(TIME_PREFIX) and (d[x] > 0).all() and d[x].max() > 20 * max(d[x].min(), 1e-9):
        fig.update_xaxes(type="log")
    return fig


def default_tradeoff(df: pd.DataFrame) -> tuple:
    """A sensible (x, y) for the trade-off chart given what was recorded: P@1 against
    training time, MI loss against budget, ACC against d, else the first two numbers."""
    cols = numeric_columns(df)
    times = [c for c in cols if c.startswith(TIME_PREFIX)]
    for y, xs in (("P@1", times), ("MI loss", [PARAM_PREFIX + "budget"]),
                  ("ACC", [PARAM_PREFIX + "d"]), ("clustering error", times)):
        for x in xs:
            if y in cols and x in cols:
                return x, y
    if len(cols) >= 2:
        return cols[0], cols[1]
    return (cols[0], cols[0]) if cols else (None, None)


def to_csv(df: pd.DataFrame) -> bytes:
    """The table as UTF-8 CSV bytes (for the download button)."""
    return df.to_csv(index=False).encode("utf-8")
