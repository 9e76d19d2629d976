"""Builders for the "Rare labels and imputation" page (REFRAG and FIAT): tables and plotly
figures from a run's metrics and the core's sweeps (``experiment.bucket_metrics``,
``refrag_alpha_curve``, ``erasure_curve``, ``predictions``). Nothing here splits or scores;
no streamlit here, so everything is unit-tested.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp

from featagg_core import metrics as M

from featagg_app.views import charts

KS = (1, 3, 5)


def metrics_table(flat: dict, names=("P", "PSP", "coverage"), ks=KS) -> pd.DataFrame:
    """Two rows, "classifier" and "REFRAG" (or the re-ranked/imputed pipeline), columns
    ``P@1`` … ``coverage@5`` in %, from a run's flat metrics (its ``base …`` entries are
    the classifier's own, as ``experiment.evaluate`` reports them)."""
    cols = [f"{n}@{k}" for n in names for k in ks]
    rows = {"classifier": {c: 100 * float(flat[f"base {c}"]) for c in cols},
            "REFRAG": {c: 100 * float(flat[c]) for c in cols}}
    df = pd.DataFrame.from_dict(rows, orient="index")[cols]
    df.index.name = "method"
    return df


def bucket_table(buckets: pd.DataFrame, k: int = 5) -> pd.DataFrame:
    """``experiment.bucket_metrics``' frame for the page: bucket, labels, training examples
    per label (range), ``P@k classifier`` / ``P@k REFRAG`` (the bucket's share of P@k, in %;
    the buckets add up to P@k) and ``coverage classifier`` / ``coverage REFRAG`` (% of the
    bucket's labels present in the test rows that some test row predicts correctly)."""
    out = pd.DataFrame({
        "bucket": buckets["bucket"], "labels": buckets["labels"],
        "train examples / label": [f"{lo}–{hi}" for lo, hi in zip(
            buckets["min train examples"], buckets["max train examples"])]})
    for name, prefix in (("classifier", "base "), ("REFRAG", "")):
        out[f"P@{k} {name}"] = 100 * buckets[f"{prefix}P@{k}"].astype(float)
        out[f"coverage {name}"] = 100 * buckets[f"{prefix}coverage@{k}"].astype(float)
    return out.reset_index(drop=True)


def bucket_figure(table: pd.DataFrame, methods: Sequence[str], k=5) -> go.Figure:
    """Grouped bars: coverage@k per frequency bucket, one bar per method."""
    series = {m: table[f"coverage {m}"].round(2).tolist() for m in methods}
    return charts.grouped_bars(table["bucket"].tolist(), series,
                               title=f"Coverage@{k} by label-frequency bucket (head → tail)",
                               xlabel="labels grouped by training frequency",
                               ylabel=f"% of the bucket's labels found (coverage@{k})")


def rare_examples(Y_train, Y_test, base, reranked, label_names=None, k=5,
                  max_rows=10) -> pd.DataFrame:
    """Correct labels REFRAG put in a test point's top k that the base did not, rarest
    first: test point, label, training examples, base rank (or "not in top 100"),
    REFRAG rank."""
    freq = np.asarray((Y_train != 0).sum(axis=0)).ravel()
    Yt = sp.csr_matrix(Y_test)
    top_r = M.top_k(reranked, k)
    base_csr = sp.csr_matrix(base)
    top_b = M.top_k(base_csr, k)
    rows, labs, rr = [], [], []
    for r in range(k):
        lab = top_r[:, r]
        idx = np.flatnonzero(lab >= 0)
        hit = np.asarray(Yt[idx, lab[idx]]).ravel() != 0
        in_base = (top_b[idx] == lab[idx, None]).any(axis=1)
        sel = idx[hit & ~in_base]
        rows.append(sel)
        labs.append(lab[sel])
        rr.append(np.full(sel.size, r + 1))
    rows, labs, rr = (np.concatenate(a) if a else np.zeros(0, int) for a in (rows, labs, rr))
    if rows.size == 0:
        return pd.DataFrame(columns=["test point", "label", "train examples", "base rank",
                                     "REFRAG rank"])
    order = np.lexsort((rows, freq[labs]))[:max_rows]
    rows, labs, rr = rows[order], labs[order], rr[order]
    base_rank = []
    for i, lab in zip(rows, labs):
        a, b_ = base_csr.indptr[i], base_csr.indptr[i + 1]
        cols, vals = base_csr.indices[a:b_], base_csr.data[a:b_]
        pos = np.flatnonzero(cols == lab)
        if pos.size == 0:
            base_rank.append("not shortlisted")
        else:
            v = vals[pos[0]]
            base_rank.append(str(int(((vals > v) | ((vals == v) & (cols < lab))).sum()) + 1))
    names = [str(label_names[l]) if label_names is not None else f"label {l}" for l in labs]
    return pd.DataFrame({"test point": rows, "label": names, "train examples": freq[labs],
                         "base rank": base_rank, "REFRAG rank": rr})


def sweep_figure(sweep: pd.DataFrame, current_alpha: Optional[float] = None) -> go.Figure:
    """P@5 against coverage@5 over an alpha sweep (``experiment.refrag_alpha_curve``:
    columns alpha, P@5, coverage@5 as fractions), alpha written at every point; the current
    alpha highlighted."""
    sweep = sweep.assign(**{"P@5": 100 * sweep["P@5"], "coverage@5": 100 * sweep["coverage@5"]})
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sweep["coverage@5"], y=sweep["P@5"], mode="lines+markers+text",
                             text=[f"α={a:g}" if a in (1.0, 0.5, 0.0) else ""
                                   for a in sweep["alpha"]],
                             hovertext=[f"α={a:g}" for a in sweep["alpha"]],
                             textposition="top center", name="REFRAG, α from 1 (base) to 0",
                             marker=dict(color=charts.PALETTE[0])))
    if current_alpha is not None:
        cur = sweep[np.isclose(sweep["alpha"], current_alpha)]
        if len(cur):
            fig.add_trace(go.Scatter(x=cur["coverage@5"], y=cur["P@5"], mode="markers",
                                     name=f"current α = {current_alpha:g}",
                                     marker=dict(size=14, symbol="star",
                                                 color=charts.PALETTE[1])))
    return charts.style(fig, "Accuracy against coverage as α moves weight to the prototypes",
                        420, xlabel="coverage@5 (%)", ylabel="P@5 (%)")


def erasure_figure(curve: pd.DataFrame, ks=KS) -> go.Figure:
    """P@k against the erased fraction, without (dashed) and with FIAT (solid)."""
    fig = go.Figure()
    for i, k in enumerate(ks):
        c = charts.PALETTE[i % len(charts.PALETTE)]
        fig.add_trace(go.Scatter(x=curve["fraction"], y=curve[f"P@{k}"] * 100,
                                 mode="lines+markers", name=f"P@{k} erased",
                                 line=dict(color=c, dash="dash"), marker=dict(color=c)))
        fig.add_trace(go.Scatter(x=curve["fraction"], y=curve[f"P@{k} FIAT"] * 100,
                                 mode="lines+markers", name=f"P@{k} erased + FIAT",
                                 line=dict(color=c), marker=dict(color=c, symbol="diamond")))
    fig = charts.style(fig, "Precision as features are erased, with and without FIAT", 460,
                       xlabel="fraction of each point's features erased",
                       ylabel="precision (%)")
    # six entries: above the plot they ran into the title, so they go under the x axis
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left",
                                  x=0.0), margin=dict(b=40))
    return fig


def imputation_example(x_orig, x_erased, x_imputed, clusters, feature_names=None,
                       max_rows=None) -> pd.DataFrame:
    """What FIAT did to one point: every feature that was there, was erased, or was
    imputed, with its cluster and value before / after. Status: "kept", "erased, restored",
    "erased, lost", "imputed (new)". Sorted: restored first, then new, lost, kept (by
    value after FIAT within a status); ``max_rows`` cuts the table."""
    def dense_row(v):
        v = sp.csr_matrix(v)
        out = {}
        for j, val in zip(v.indices, v.data):
            out[int(j)] = float(val)
        return out
    o, e, z = dense_row(x_orig), dense_row(x_erased), dense_row(x_imputed)
    feats = sorted(set(o) | set(z))
    rows = []
    rank = {"erased, restored": 0, "imputed (new)": 1, "erased, lost": 2, "kept": 3}
    for j in feats:
        if j in e:
            st = "kept"
        elif j in o:
            st = "erased, restored" if j in z else "erased, lost"
        else:
            st = "imputed (new)"
        name = str(feature_names[j]) if feature_names is not None else f"feature {j}"
        rows.append({"feature": name, "cluster": int(clusters[j]), "status": st,
                     "original": o.get(j, 0.0), "after erasure": e.get(j, 0.0),
                     "after FIAT": z.get(j, 0.0)})
    df = pd.DataFrame(rows, columns=["feature", "cluster", "status", "original",
                                     "after erasure", "after FIAT"])
    if len(df):
        df["_r"] = df["status"].map(rank)
        df = df.sort_values(["_r", "after FIAT"], ascending=[True, False]).drop(columns="_r")
    df = df.reset_index(drop=True)
    return df if max_rows is None else df.head(max_rows)


def status_counts(example: pd.DataFrame) -> dict:
    """Counts of each status in an :func:`imputation_example` table."""
    return {s: int((example["status"] == s).sum()) for s in
            ("kept", "erased, restored", "erased, lost", "imputed (new)")}
