"""Figures and tables of the Triage page, built from a triage record
(:func:`featagg_core.triage.battery.run_triage`'s ``record``; no streamlit here). The charts are
the report's own (:func:`featagg_core.triage.report.figures`), so the page and the downloaded
HTML show the same pictures of the same numbers."""
from __future__ import annotations

from typing import Dict, List, Tuple

import pandas as pd
import plotly.graph_objects as go

from featagg_core.triage.report import figures, format_value, render_html, report_json

__all__ = ["experiment_figures", "steps_frame", "summary_frame", "stats_frame",
           "html_bytes", "json_bytes", "BUDGETS", "label_errors_note"]

#: the time budgets the page offers (seconds)
BUDGETS = [30, 60, 120, 300, 600]

_SUMMARY = {
    "defrag_tradeoff": ["classifier", "d0", "features", "P@1", "P@5", "PSP@5", "coverage@5",
                        "train_s", "P@1 kept", "speed", "same model as"],
    "refrag_tuning": ["alpha", "gamma", "beta", "base P@5", "P@5", "base coverage@5",
                      "coverage@5"],
    "vocabulary": ["column", "values", "buckets", "fitted MI loss", "held-out MI loss",
                   "unseen rows"],
}
_TABLE = {"defrag_tradeoff": "rows", "refrag_tuning": "rows", "vocabulary": "columns",
          "bmgufs_protocol": "selection", "bmgufs_heatmap": "grid",
          "bmgufs_robustness": "curve", "budget_curve": "curve"}


def experiment_figures(record: dict) -> Dict[str, List[Tuple[str, go.Figure]]]:
    """``{"stats" | experiment index as str: [(caption, figure)]}`` of the report's charts."""
    out: Dict[str, List[Tuple[str, go.Figure]]] = {}
    for fid, cap, spec in figures(record):
        key = "stats" if fid.startswith("stats-") else fid.split("-", 1)[0][3:]
        out.setdefault(key, []).append((cap, go.Figure(spec)))
    return out


def formatted(rows: List[dict], columns: List[str]) -> pd.DataFrame:
    """Rows as the report writes them (strings), in ``columns`` (those present)."""
    cols = [c for c in columns if any(c in r for r in rows)]
    return pd.DataFrame([{c: format_value(c, r.get(c)) for c in cols} for r in rows],
                        columns=cols)


def summary_frame(exp: dict) -> pd.DataFrame:
    """The experiment's main table, formatted as the report writes it (strings: the page
    shows it with ``st.table`` so tests and people read the same cells)."""
    rows = exp["tables"].get(_TABLE.get(exp["kind"], ""), [])
    cols = _SUMMARY.get(exp["kind"]) or list(dict.fromkeys(k for r in rows for k in r
                                                           if k not in ("run_id", "status",
                                                                        "run")))
    if exp["kind"] == "bmgufs_protocol":
        cols = ["method", "d", "ACC", "NMI", "gamma", "nnz(r)"]
    return formatted(rows, cols).rename(columns={"train_s": "training time",
                                                 "fit_s": "fit time"})


def steps_frame(record: dict) -> pd.DataFrame:
    """What was planned and what ran: one row per step."""
    return formatted(record["budget"]["steps"], ["title", "status", "estimate_s", "seconds",
                                                  "why"]).rename(
        columns={"title": "step", "estimate_s": "estimate", "seconds": "took",
                 "why": "note"})


def stats_frame(record: dict) -> pd.DataFrame:
    st = record["dataset"]["stats"]
    rows = [{"": k, "value": format_value(k, v)} for k, v in st.items()
            if k not in ("kind", "name") and not isinstance(v, (list, dict))]
    return pd.DataFrame(rows).set_index("")


def html_bytes(record: dict) -> bytes:
    return render_html(record).encode("utf-8")


def json_bytes(record: dict) -> bytes:
    return report_json(record).encode("utf-8")


def label_errors_note(record: dict) -> str:
    """Whether the triage looked for label errors, in a sentence ("" when it says nothing).

    Parameters
    ----------
    record : dict
        The triage record.

    Returns
    -------
    str
        E.g. "Label errors looked for (out-of-fold scores of the classifier, 4.2 s)." or
        "Label errors not looked for: no time left (…)".
    """
    le = (record.get("health") or {}).get("label_errors") or {}
    if record["dataset"]["kind"] != "multilabel" or not le:
        return ""
    if le.get("checked"):
        secs = le.get("seconds")
        return ("Label errors looked for (out-of-fold scores of the default classifier"
                + (f", {secs:.1f} s" if secs is not None else "") + ").")
    return f"Label errors not looked for: {le.get('why', '')}. A larger budget includes them."
