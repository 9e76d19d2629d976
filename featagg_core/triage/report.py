"""The triage report as one self-contained HTML file (and its JSON).

:func:`render_html` turns the ``record`` of :func:`featagg_core.triage.battery.run_triage` into a
page that needs nothing but a browser: plotly.js is inlined once (no CDN, no MathJax, no
web fonts), every chart is a plotly figure built from the record by :func:`figures` (the
dashboard's Triage page draws the same ones), and every number in a table is written as
``<span class="num" data-path="experiments/0/tables/rows/2/P@1" data-value="0.61">61.00
%</span>``: ``data-path`` is its place in the JSON, ``data-value`` its exact value, so a
reader (and the tests) can check that the page and the JSON agree. The page opens with
the recommendation (``record["recommendation"]["text"]``,
:mod:`featagg_core.triage.recommend`) and the data-health alerts, most serious first
(``record["health"]["alerts"]``, :func:`health_html`); the verdict sentences are the
record's own (``record["verdict"]``).

:func:`write_report` writes the HTML and/or the JSON atomically (a temporary file, then
``os.replace``): an interrupted run never leaves half a report.
"""
from __future__ import annotations

import html
import json
import math
from typing import Dict, List, Optional, Sequence, Tuple

from featagg_core.utils.docstrings import fill_doc

__all__ = ["figures", "experiment_figures", "render_html", "report_json", "write_report",
           "format_value", "rre_axis_range", "EXPLAIN", "health_html", "alert_examples"]

_PCT_KEYS = ("P@", "PSP@", "coverage@", "nDCG@", "ACC", "NMI", "MI loss", "kept", "share",
             "density", "positive rate", "explained", "max_drop")


# ----------------------------------------------------------------------------- numbers
def format_value(key: str, value) -> str:
    """How the report writes a value of column ``key``.

    Fractions as %, seconds with one decimal, bytes in kB/MB, counts with thousands
    separators.

    Parameters
    ----------
    key : str
        The column (its name decides the unit).
    value : object
        The value.

    Returns
    -------
    str
        The text of the cell.
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    k = str(key)
    if isinstance(value, int):
        return _bytes(value) if "bytes" in k else f"{value:,}"
    v = float(value)
    if not math.isfinite(v):
        return "–"
    if "ratio" in k:
        return f"{v:.4f}"
    if k in ("speed-up", "lift") or "train time" in k:
        return f"{v:.2f}×"
    if k.endswith("_s") or k in ("seconds", "fit_s"):
        return f"{v:.1f} s"
    if "ms" in k:
        return f"{v:.3f} ms"
    if "I(" in k:
        return f"{v:.4f} nats"
    if "RRE" in k or k.endswith("_rre") or k == "wcss":
        return f"{v:.4f}"
    if any(p in k for p in _PCT_KEYS):
        return f"{100 * v:.2f} %"
    return f"{v:.4g}"


def _bytes(n: int) -> str:
    if n < 10_000:
        return f"{n:,} B"
    if n < 10_000_000:
        return f"{n / 1e3:.1f} kB"
    return f"{n / 1e6:.1f} MB"


def _num(path: str, key: str, value) -> str:
    text = html.escape(format_value(key, value))
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return (f'<span class="num" data-path="{html.escape(path)}" '
            f'data-value="{html.escape(repr(value))}">{text}</span>')


# ----------------------------------------------------------------------------- figures
# Figures are plain plotly JSON ({"data": [...], "layout": {...}}): no plotly import, no
# validation pass (building go.Figure objects took seconds on a busy machine), and
# ``plotly.graph_objects.Figure(spec)`` turns one into a figure when a page wants it.
def rre_axis_range(rre: Sequence[float]) -> List[float]:
    """The y-axis range of a chart of candidate block models' RRE.

    Candidates on a sparse graph often differ only in the third decimal (Cora:
    0.9953-0.9960), so an axis from 0 would draw equal bars: the range spans the values,
    padded by half their spread (at least 1e-4) and never below 0. The Triage report and
    the Graph features page draw their RRE charts on it.

    Parameters
    ----------
    rre : sequence of float
        The candidates' relative reconstruction errors.

    Returns
    -------
    list of float
        ``[low, high]``.
    """
    lo, hi = float(min(rre)), float(max(rre))
    pad = max((hi - lo) * 0.5, 1e-4)
    return [max(0.0, lo - pad), hi + pad]


def _fig(traces: List[dict], title: str, x: str, y: str, pct_y: bool = False,
         **layout) -> dict:
    lay = {"title": {"text": title}, "xaxis": {"title": {"text": x}},
           "yaxis": {"title": {"text": y}}, "template": "plotly_white", "height": 380,
           "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
           "legend": {"orientation": "h", "y": -0.2}}
    if pct_y:
        lay["yaxis"]["tickformat"] = ".0%"
    for k, v in layout.items():
        if isinstance(v, dict) and isinstance(lay.get(k), dict):
            lay[k] = {**lay[k], **v}
        else:
            lay[k] = v
    return {"data": traces, "layout": lay}


def _line(x, y, name, **kw) -> dict:
    return {"type": "scatter", "mode": kw.pop("mode", "lines+markers"), "x": list(x),
            "y": list(y), "name": name, **kw}


#: where a point's label may go, tried in this order, and the label's centre relative to
#: the point in fractions of the axis spans
_LABEL_SLOTS = (("top center", 0.0, 0.06), ("bottom center", 0.0, -0.06),
                ("middle right", 0.09, 0.0), ("middle left", -0.09, 0.0))
#: two label centres closer than this (fractions of the spans) would overlap
_LABEL_GAP = (0.11, 0.055)


def _place_point_labels(traces: List[dict]) -> None:
    """Give each text label of a markers+text scatter a side of its point where it overlaps
    no label placed before it (above, below, right, left); a label with no free side, or
    repeating the text of a label placed on a point this close (one-vs-all and a flat
    KTXMLC at the same d0), is left off (the hover still shows it).
    Runs that take the same time otherwise print their labels on top of each other."""
    pts = [(t, i, float(x), float(y)) for t in traces if t.get("text")
           for i, (x, y) in enumerate(zip(t["x"], t["y"]))]
    every = [(float(x), float(y)) for t in traces for x, y in zip(t["x"], t["y"])]
    if not pts:
        return
    xs, ys = [p[0] for p in every], [p[1] for p in every]
    span_x = (max(xs) - min(xs)) or 1.0
    span_y = (max(ys) - min(ys)) or 1.0
    placed = []  # (label centre x, y, text, point x, y) in span units
    for t in traces:
        if t.get("text"):
            t["hovertext"] = list(t["text"])
            t["text"] = list(t["text"])
            t["textposition"] = ["top center"] * len(t["text"])
    for t, i, x, y in pts:
        px, py, text = x / span_x, y / span_y, t["text"][i]
        if any(text == q[2] and abs(px - q[3]) < _LABEL_GAP[0]
               and abs(py - q[4]) < _LABEL_GAP[1] for q in placed):
            t["text"][i] = ""
            continue
        for pos, dx, dy in _LABEL_SLOTS:
            cx, cy = px + dx, py + dy
            if all(abs(cx - q[0]) >= _LABEL_GAP[0] or abs(cy - q[1]) >= _LABEL_GAP[1]
                   for q in placed):
                t["textposition"][i] = pos
                placed.append((cx, cy, text, px, py))
                break
        else:
            t["text"][i] = ""


def _tradeoff_figures(exp) -> List[Tuple[str, str, dict]]:
    rows = [r for r in exp["tables"].get("rows", []) if r.get("status") == "done"]
    if not rows:
        return []
    curve, timed = [], []
    xs = [r["d0"] for r in rows if r["d0"] is not None] or [1]
    # one colour per classifier, its raw-feature line in the same colour; the two raw lines
    # dashed differently so that both show when they nearly coincide
    colour = {"ktxmlc": "#1f77b4", "ova": "#2ca02c", "per_tree": "#9467bd"}
    dash = {"ktxmlc": "dash", "ova": "dot"}
    for kind in ("ktxmlc", "ova", "per_tree"):
        mine = sorted((r for r in rows if r["kind"] == kind and r["d0"] is not None),
                      key=lambda r: r["d0"])
        raw = next((r for r in rows if r["kind"] == ("ktxmlc" if kind == "per_tree" else kind)
                    and r["d0"] is None), None)
        if mine:
            title = mine[0]["classifier"]
            curve.append(_line([r["d0"] for r in mine], [r["P@1"] for r in mine],
                               f"{title}: DEFRAG", line={"color": colour[kind]},
                               marker={"color": colour[kind]}))
            timed.append(_line([r["train_s"] for r in mine], [r["P@1"] for r in mine],
                               f"{title}: DEFRAG", mode="markers+text",
                               text=[f"d0={r['d0']}" for r in mine],
                               textposition="top center", marker={"color": colour[kind]}))
        if raw is not None and kind != "per_tree":
            # across the measured d0 (a little wider around a single one, else no line)
            lo, hi = (min(xs), max(xs)) if min(xs) < max(xs) else (xs[0] / 1.25, xs[0] * 1.25)
            curve.append(_line([lo, hi], [raw["P@1"]] * 2,
                               f"{raw['classifier']}: raw features", mode="lines",
                               line={"dash": dash[kind], "color": colour[kind]}))
            timed.append(_line([raw["train_s"]], [raw["P@1"]],
                               f"{raw['classifier']}: raw features", mode="markers",
                               marker={"symbol": "diamond", "size": 11,
                                       "color": colour[kind]}))
    caption = ("P@1 against d0 (dashed or dotted, in the same colour: that classifier on "
               "raw features)")
    trees = {r["d0"]: r["P@1"] for r in rows if r["kind"] == "ktxmlc"}
    flat = {r["d0"]: r["P@1"] for r in rows if r["kind"] == "ova"}
    if trees and trees == flat:
        # KTXMLC's one_vs_all="auto" kept one flat tree: its curve lies under One-vs-all's
        caption += (". KTXMLC kept one flat tree on this dataset (one-vs-all), so its "
                    "points are One-vs-all's and its curve lies under theirs")
    _place_point_labels(timed)
    return [("d0_curve", caption,
             _fig(curve, "P@1 against d0", "d0 (largest leaf cluster)", "P@1", True,
                  xaxis={"type": "log", "tickvals": sorted(set(xs))})),
            ("d0_time", "P@1 against training time (each point a run)",
             _fig(timed, "P@1 against training time", "training seconds", "P@1", True))]


def _refrag_figures(exp):
    rows = exp["tables"].get("rows", [])
    if not rows:
        return []
    r = rows[0]
    keys = ["P@1", "P@5", "PSP@5", "coverage@5"]
    bars = [{"type": "bar", "name": "classifier", "x": keys,
             "y": [r[f"base {k}"] for k in keys]},
            {"type": "bar", "name": "+ REFRAG (tuned)", "x": keys, "y": [r[k] for k in keys]}]
    return [("refrag", "The classifier with and without REFRAG, on the test rows",
             _fig(bars, "REFRAG tuned on validation rows", "", "", True, barmode="group"))]


def _protocol_figures(exp):
    rows = [r for r in exp["tables"].get("selection", []) if r.get("status") == "done"]
    out = []
    if rows:
        lines = []
        for m in dict.fromkeys(r["method"] for r in rows):
            mine = sorted((r for r in rows if r["method"] == m), key=lambda r: r["d"])
            lines.append(_line([r["d"] for r in mine], [r["ACC"] for r in mine], m,
                               line={"width": 4 if m == "BMGUFS" else 2}))
        out.append(("selection", "Clustering accuracy of k-means on the selected features "
                                 "of the held-out nodes",
                    _fig(lines, "ACC against the number of selected features", "d", "ACC",
                         True, xaxis={"type": "log",      # ticks at the d values only
                                      "tickvals": sorted({r["d"] for r in rows})})))
    blocks = exp["tables"].get("block_models", [])
    if blocks:
        rre = [float(b["RRE"]) for b in blocks]
        bar = {"type": "bar", "x": [f"#{b['candidate']}" for b in blocks], "y": rre,
               "name": "RRE", "text": [f"{v:.4f}" for v in rre], "textposition": "outside",
               "marker": {"color": ["#d62728" if b["chosen"] else "#1f77b4" for b in blocks]}}
        out.append(("rre", "Relative reconstruction error of every candidate block model "
                           "(red: the one used)",
                    _fig([bar], "Block models: RRE", "candidate", "RRE",
                         yaxis={"range": rre_axis_range(rre)})))
    return out


def _heatmap_figures(exp):
    grid = [g for g in exp["tables"].get("grid", []) if "ACC" in g]
    if not grid:
        return []
    betas = sorted({g["beta_bar"] for g in grid})
    gammas = sorted({g["gamma"] for g in grid})
    z = [[next((g["ACC"] for g in grid if g["beta_bar"] == b and g["gamma"] == c), None)
          for b in betas] for c in gammas]
    heat = {"type": "heatmap", "x": betas, "y": gammas, "z": z, "colorscale": "Viridis",
            "colorbar": {"title": {"text": "ACC"}, "tickformat": ".0%"}}
    return [("heatmap", "ACC of the top-d features over β̄ (composition ratio) × γ "
                        "(sparsity)", _fig([heat], "BMGUFS over β̄ × γ", "β̄", "γ"))]


def _robust_figures(exp):
    rows = exp["tables"].get("curve", [])
    if not rows:
        return []
    lines = [_line([r["fraction"] for r in rows if r["method"] == m],
                   [r["ACC"] for r in rows if r["method"] == m], m)
             for m in dict.fromkeys(r["method"] for r in rows)]
    return [("robustness", "ACC when a share of the training graph's edges is moved at "
                           "random",
             _fig(lines, "Robustness to moved edges", "edges moved", "ACC", True,
                  xaxis={"tickformat": ".0%"}))]


def _vocab_figures(exp):
    cols = [c for c in exp["tables"].get("columns", []) if c["column"] != "total"]
    if not cols:
        return []
    names = [c["column"] for c in cols]
    bars = [{"type": "bar", "name": "fitted (training rows)", "x": names,
             "y": [1 - c["fitted MI loss"] for c in cols]},
            {"type": "bar", "name": "held-out (test rows)", "x": names,
             "y": [1 - c["held-out MI loss"] for c in cols]}]
    return [("mi_kept", "Share of I(X;C) the buckets keep, per column",
             _fig(bars, "MI kept: fitted vs held-out", "column", "I(Z;C) / I(X;C)", True,
                  barmode="group"))]


def _curve_figures(exp):
    rows = exp["tables"].get("curve", [])
    if not rows:
        return []
    return [("budget_curve", "Held-out MI loss against the buckets per column",
             _fig([_line([r["m"] for r in rows], [r["MI loss"] for r in rows], "MI loss")],
                  "MI loss against the budget", "m", "MI loss", True,
                  xaxis={"type": "log", "tickvals": sorted({r["m"] for r in rows})}))]


def _stats_figures(record):
    freq = record["dataset"]["stats"].get("label frequency")
    if not freq:
        return []
    line = _line(list(range(1, len(freq) + 1)), [max(v, 0.5) for v in freq],
                 "training points per label", mode="lines")
    return [("labels", "Training points per label, most frequent first (log-log: a straight "
                       "line is a power law)",
             _fig([line], "Label frequencies", "label rank", "training points",
                  xaxis={"type": "log"}, yaxis={"type": "log"}))]


_BUILDERS = {"defrag_tradeoff": _tradeoff_figures, "refrag_tuning": _refrag_figures,
             "bmgufs_protocol": _protocol_figures, "bmgufs_heatmap": _heatmap_figures,
             "bmgufs_robustness": _robust_figures, "vocabulary": _vocab_figures,
             "budget_curve": _curve_figures}


def experiment_figures(exp: dict) -> List[Tuple[str, str, dict]]:
    """The charts of one experiment record (:meth:`Experiment.to_record`).

    Parameters
    ----------
    exp : dict
        The experiment's record.

    Returns
    -------
    list of (str, str, dict)
        ``(id, caption, plotly figure as a JSON dict)`` per chart.
    """
    return list(_BUILDERS.get(exp["kind"], lambda e: [])(exp))


@fill_doc
def figures(record: dict) -> List[Tuple[str, str, dict]]:
    """Every chart of the report.

    The dataset's first, then each experiment's (ids made unique with the experiment's
    position).

    {triage_record_params}

    Returns
    -------
    list of (str, str, dict)
        ``(id, caption, plotly figure as a JSON dict)`` per chart.
    """
    out = [(f"stats-{fid}", cap, fig) for fid, cap, fig in _stats_figures(record)]
    for i, exp in enumerate(record.get("experiments", [])):
        for fid, cap, fig in _BUILDERS.get(exp["kind"], lambda e: [])(exp):
            out.append((f"exp{i}-{fid}", cap, fig))
    return out


# ----------------------------------------------------------------------------- html
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f4f4f4} td.t{text-align:left}
.verdict li{margin:.3em 0} .muted{color:#666;font-size:.9em}
.fig{margin:1em 0} code{background:#f4f4f4;padding:0 .3em}
td.wrap{white-space:normal;max-width:22em} table.alerts th{text-align:left} tr.sev-error td:first-child{color:#b00020}
tr.sev-warning td:first-child{color:#a05a00} tr.sev-info td:first-child{color:#555}
p.recommendation{font-size:1.1em;background:#f1f7ff;border-left:4px solid #1f77b4;
padding:.6em .9em}
"""

EXPLAIN = {
    "defrag_tradeoff": "The same classifier settings trained on the raw features and on "
                       "DEFRAG's agglomerated features (each cluster of at most d0 features "
                       "summed into one), scored on the test rows. 'P@1 kept' is the share "
                       "of the raw features' P@1. 'train s' is the median of 'fits timed' fits "
                       "(DEFRAG's own fit included; kernels compiled before the clock, a fit "
                       "under 0.2 s fitted again until the repeats add up to 0.2 s); "
                       "'speed' against the raw features is stated only when the two "
                       "fits' spreads do not overlap, 'no measurable difference' otherwise.",
    "refrag_tuning": "REFRAG re-ranks the classifier's shortlist with label prototypes "
                     "smoothed inside DEFRAG's clusters; α, γ and β were chosen on "
                     "validation rows (never the test rows) so that P@5 drops at most half "
                     "a point while coverage@5 rises.",
    "bmgufs_protocol": "BMGUFS and the baselines rank the node features on the training "
                       "nodes' subgraph; k-means on the top-d features of the held-out "
                       "nodes is scored against their classes (ACC, NMI). γ is lowered per d "
                       "until d weights are non-zero.",
    "bmgufs_heatmap": "The same score over the authors' grid of β̄ (weight of the image "
                      "matrix term) and γ (sparsity push).",
    "bmgufs_robustness": "A share of the training graph's edges moved to random node pairs "
                         "before the selection: how much the guidance matters.",
    "vocabulary": "Every categorical column compressed to m buckets maximising I(Z;C); the "
                  "mapping is fitted on the training rows and applied to the test rows.",
    "budget_curve": "The held-out MI loss of the default method at every budget.",
}


_HEADERS = {"train_s": "train s", "predict_ms_per_point": "predict ms / point",
            "model_bytes": "model size", "fit_s": "fit s", "estimate_s": "estimate",
            "seconds": "took", "why": "note", "beta_bar": "β̄", "gamma": "γ",
            "alpha": "α", "beta": "β", "propensity_exponent": "β"}
#: tables longer than this are folded (<details>)
_FOLD_ROWS = 25


def _table(rows: Sequence[dict], path: str, columns: Optional[Sequence[str]] = None) -> str:
    if not rows:
        return '<p class="muted">(no rows)</p>'
    cols = list(columns) if columns else list(dict.fromkeys(k for r in rows for k in r))
    cols = [c for c in cols if c not in ("run_id", "status") or c == "status"
            and any(r.get("status") not in (None, "done") for r in rows)]
    head = "".join(f"<th>{html.escape(_HEADERS.get(str(c), str(c)))}</th>" for c in cols)
    body = []
    for i, r in enumerate(rows):
        cells = []
        for c in cols:
            v = r.get(c)
            cls = ' class="t"' if isinstance(v, str) or v is None else ""
            cells.append(f"<td{cls}>{_num(f'{path}/{i}/{c}', c, v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    out = f"<table><tr>{head}</tr>{''.join(body)}</table>"
    if len(rows) > _FOLD_ROWS:
        out = f"<details><summary>{len(rows)} rows</summary>{out}</details>"
    return out


def _kv(d: dict, path: str, skip=()) -> str:
    rows = []
    for k, v in d.items():
        if k in skip or isinstance(v, (list, dict)):
            continue
        rows.append(f'<tr><td class="t">{html.escape(str(k))}</td>'
                    f"<td>{_num(f'{path}/{k}', k, v)}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


_COLUMNS = {
    "defrag_tradeoff": ["classifier", "d0", "features", "P@1", "P@3", "P@5", "PSP@1",
                        "PSP@5", "coverage@5", "train_s", "predict_ms_per_point",
                        "model_bytes", "P@1 kept", "fits timed", "speed", "same model as",
                        "status"],
    "refrag_tuning": ["alpha", "gamma", "beta", "tuned on", "tuning rows", "base P@1",
                      "P@1", "base P@5", "P@5", "base PSP@5", "PSP@5", "base coverage@5",
                      "coverage@5"],
}


@fill_doc
def render_html(record: dict) -> str:
    """The report (module docstring) as one HTML string.

    {triage_record_params}

    Returns
    -------
    str
        A self-contained HTML page.
    """
    e = html.escape
    ds = record["dataset"]
    parts = [f"<h1>{e(record['title'])}</h1>",
             f'<p class="muted">{e(ds["kind"])} dataset · fingerprint '
             f'<code>{e(ds["fingerprint"])}</code> · {e(record["split"]["description"])} · '
             f'created {e(record["created"])} · status {e(record["status"])}</p>',
             ]
    rec = record.get("recommendation") or {}
    if rec.get("text"):
        parts.append('<h2>Recommendation</h2><p class="recommendation">'
                     f'{e(rec["text"])}</p>')
    parts.append(health_html(record))
    parts.append("<h2>Verdict</h2><ul class=\"verdict\">")
    parts += [f"<li>{e(v)}</li>" for v in record["verdict"]]
    parts.append("</ul>")
    fig_html = {}
    config = json.dumps({"displaylogo": False, "responsive": True})
    for fid, cap, fig in figures(record):
        spec = json.dumps(fig, allow_nan=False).replace("</", "<\\/")
        fig_html[fid] = (
            f'<div class="fig" data-figure="{e(fid)}"><div id="{e(fid)}" class="plot" '
            f'style="height:{int(fig["layout"].get("height", 380))}px"></div>'
            f'<script type="text/javascript">(function(){{var f={spec};'
            f'Plotly.newPlot("{e(fid)}",f.data,f.layout,{config});}})();</script>'
            f'<p class="muted">{e(cap)}</p></div>')
    parts.append("<h2>Dataset</h2>")
    parts.append(_kv(ds["stats"], "dataset/stats", skip=("kind", "name")))
    parts += [v for k, v in fig_html.items() if k.startswith("stats-")]
    for i, exp in enumerate(record.get("experiments", [])):
        parts.append(f"<h2>{e(exp['title'])}</h2>")
        if exp["kind"] in EXPLAIN:
            parts.append(f"<p>{e(EXPLAIN[exp['kind']])}</p>")
        if exp.get("status") not in ("done", None):
            parts.append(f'<p class="muted">Status: {e(exp["status"])} '
                         f'{e(exp.get("message", ""))}</p>')
        parts += [f"<p>{e(v)}</p>" for v in exp.get("verdict", [])]
        parts += [v for k, v in fig_html.items() if k.startswith(f"exp{i}-")]
        for name, rows in exp.get("tables", {}).items():
            if not rows:
                continue
            parts.append(f"<h3>{e(name.replace('_', ' '))}</h3>")
            parts.append(_table(rows, f"experiments/{i}/tables/{name}",
                                _COLUMNS.get(exp["kind"]) if name == "rows" else None))
    b = record["budget"]
    parts.append("<h2>Time budget</h2>")
    parts.append(_kv({k: b[k] for k in ("budget_s", "used_s")}, "budget"))
    parts.append(_table(b["steps"], "budget/steps",
                        ["title", "status", "estimate_s", "seconds", "why"]))
    rp = record["reproduce"]
    parts.append("<h2>Reproduce</h2>")
    parts.append(f"<p>Run again with the same numbers (times aside): <code>"
                 f"{e(rp['command'])}</code> (the JSON holds the plan).</p>")
    items = [("seed", "reproduce/seed", "seed", rp["seed"])]
    items += [(f"split {k}", f"reproduce/split/{k}", k, v) for k, v in rp["split"].items()]
    items.append(("split id", "split/split_id", "split_id", record["split"]["split_id"]))
    items += [(f"version of {k}", f"reproduce/versions/{k}", k, v)
              for k, v in rp["versions"].items()]
    parts.append("<table>" + "".join(
        f'<tr><td class="t">{e(label)}</td><td>{_num(path, key, v)}</td></tr>'
        for label, path, key, v in items) + "</table>")
    body = "\n".join(parts)
    js = _plotly_js().replace("</script", "<\\/script")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(record['title'])}</title><style>{_CSS}</style>"
            f"<script type=\"text/javascript\">{js}</script></head>"
            f"<body>{body}</body></html>")


#: examples (row ids, names) an alert shows in the report
_EXAMPLES = 5
_SEV_CLASS = {"error": "sev-error", "warning": "sev-warning", "info": "sev-info"}


def alert_examples(alert: dict, n: int = _EXAMPLES) -> str:
    """A few examples of an alert, in words: its named examples, else its first training
    and test rows (0-based, as in the JSON).

    Parameters
    ----------
    alert : dict
        One alert's JSON (``Alert.to_dict()``).
    n : int, default=5
        At most this many of each.

    Returns
    -------
    str
        E.g. ``"training rows 3, 17, 52 …; test rows 0, 8"`` ("" when there is none).
    """
    ex = [str(x) for x in (alert.get("examples") or [])][:n]
    if ex:
        more = " …" if len(alert.get("examples") or []) > n else ""
        return ", ".join(ex) + more
    parts = []
    for key, name in (("rows", "training rows"), ("test_rows", "test rows")):
        v = alert.get(key) or []
        if v:
            parts.append(f"{name} " + ", ".join(str(int(i)) for i in v[:n])
                         + (" …" if len(v) > n else ""))
    return "; ".join(parts)


@fill_doc
def health_html(record: dict) -> str:
    """The report's "Data health" section: every alert, most serious first (severity,
    what was found, how many, examples, what to do).

    {triage_record_params}

    Returns
    -------
    str
        An HTML fragment ("" for a record made before the health checks existed).
    """
    e = html.escape
    h = record.get("health")
    if h is None:
        return ""
    alerts = h.get("alerts")
    out = ['<h2>Data health</h2>']
    if alerts is None:
        out.append(f'<p class="muted">Not checked: {e(h.get("why", ""))}</p>')
        return "".join(out)
    if not alerts:
        out.append("<p>The health checks found nothing to report.</p>")
        return "".join(out)
    counts = {s: sum(a.get("severity") == s for a in alerts) for s in ("error", "warning",
                                                                        "info")}
    out.append("<p>" + ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()
                                 if n) + " (most serious first).</p>")
    rows = []
    for i, a in enumerate(alerts):
        sev = str(a.get("severity", ""))
        rows.append(f'<tr class="{_SEV_CLASS.get(sev, "")}" data-alert="{e(str(a.get("type")))}">'
                    f'<td class="t"><b>{e(sev)}</b></td><td class="t">{e(str(a.get("type")))}'
                    f'</td><td>{_num(f"health/alerts/{i}/count", "count", a.get("count"))}</td>'
                    f'<td class="t wrap">{e(str(a.get("message", "")))}</td>'
                    f'<td class="t wrap">{e(alert_examples(a))}</td>'
                    f'<td class="t wrap">{e(str(a.get("hint", "")))}</td></tr>')
    out.append('<table class="alerts"><tr><th>severity</th><th>alert</th><th>count</th>'
               '<th>what was found</th><th>examples</th><th>what to do</th></tr>'
               + "".join(rows) + "</table>")
    return "".join(out)


def _plotly_js() -> str:
    """plotly.js from the installed plotly package (read as a file: importing plotly's
    Python API is not needed)."""
    import importlib.util
    import os
    spec = importlib.util.find_spec("plotly")
    for base in (spec.submodule_search_locations or []):
        path = os.path.join(base, "package_data", "plotly.min.js")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return fh.read()
    import plotly.offline                                     # pragma: no cover
    return plotly.offline.get_plotlyjs()


@fill_doc
def report_json(record: dict) -> str:
    """The record as JSON text (strict: no NaN, keys as given).

    {triage_record_params}

    Returns
    -------
    str
        The JSON text.
    """
    return json.dumps(record, indent=1, allow_nan=False, ensure_ascii=False)


@fill_doc
def write_report(record: dict, html_path: Optional[str] = None,
                 json_path: Optional[str] = None) -> Dict[str, str]:
    """Write the HTML and/or JSON atomically.

    Parameters
    ----------
    {triage_record}
    html_path : str, optional
        Where to write the HTML page.
    json_path : str, optional
        Where to write the JSON record.

    Returns
    -------
    dict of str to str
        ``{"html": path, "json": path}`` for what was written.
    """
    from featagg_core.data import _atomic_write
    out = {}
    if json_path:
        text = report_json(record).encode("utf-8")
        _atomic_write(json_path, lambda fh: fh.write(text))
        out["json"] = str(json_path)
    if html_path:
        page = render_html(record).encode("utf-8")
        _atomic_write(html_path, lambda fh: fh.write(page))
        out["html"] = str(html_path)
    return out
