"""Tables and plotly figures of the Extreme classification page (unit-testable, no widgets).

Every number comes from a run (``run.metrics``) or ``experiment.bucket_metrics`` /
``experiment.predictions``: nothing here scores or splits."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp

from featagg_core import metrics

KS = (1, 3, 5)


def metrics_table(flat: dict, ks: Sequence[int] = KS) -> pd.DataFrame:
    """Rows P@k, nDCG@k, PSP@k, PSnDCG@k, coverage@k; columns k=1, k=3, k=5 (values in %),
    from a run's flat metrics (``run.metrics["test"]``, fractions)."""
    ks = list(ks)
    rows = {f"{name}@k": [100 * float(flat[f"{name}@{k}"]) for k in ks]
            for name in metrics.RANKING_METRICS if all(f"{name}@{k}" in flat for k in ks)}
    return pd.DataFrame(rows, index=[f"k={k}" for k in ks], dtype=float).T


def bucket_figure(buckets: pd.DataFrame, k: int = 5) -> go.Figure:
    """P@k split by label-frequency bucket, head (most frequent labels) to tail, from
    ``experiment.bucket_metrics`` (its ``P@k`` column, fractions that add up to P@k)."""
    contrib = 100 * buckets[f"P@{k}"].to_numpy(dtype=float)
    n = len(buckets)
    names = []
    for j in range(n):
        lo = int(buckets["min train examples"].iloc[j])
        hi = int(buckets["max train examples"].iloc[j])
        tag = "head" if j == 0 else ("tail" if j == n - 1 else str(buckets["bucket"].iloc[j]))
        names.append(f"{tag}<br>({lo}–{hi} train pts/label)")
    fig = go.Figure(go.Bar(x=names, y=contrib, marker_color=[
        f"rgba(214,39,40,{1 - 0.7 * j / max(n - 1, 1):.2f})" for j in range(n)],
        text=[f"{v:.1f}" for v in contrib], textposition="outside",
        hovertemplate="%{x}<br>contribution to P@" + str(k) + ": %{y:.2f}%<extra></extra>"))
    fig.update_layout(title=f"Accuracy by label frequency (contribution to P@{k}, "
                            f"sums to {contrib.sum():.1f}%)",
                      xaxis_title="label-frequency bucket (equal numbers of labels)",
                      yaxis_title=f"share of P@{k} (%)", height=380,
                      margin=dict(l=40, r=20, t=60, b=40))
    return fig


def elbow_figure(elbow) -> go.Figure:
    """WCSS of the root partition against K, the picked elbow highlighted."""
    ks, wcss = np.asarray(elbow.ks), np.asarray(elbow.wcss)
    order = np.argsort(ks)
    fig = go.Figure(go.Scatter(x=ks[order], y=wcss[order], mode="lines+markers",
                               name="WCSS", hovertemplate="K=%{x}<br>WCSS=%{y:.2f}<extra></extra>"))
    j = int(np.nonzero(ks == elbow.elbow)[0][0])
    fig.add_trace(go.Scatter(x=[ks[j]], y=[wcss[j]], mode="markers", name=f"elbow K={elbow.elbow}",
                             marker=dict(size=14, color="crimson", symbol="star")))
    fig.update_layout(title="Elbow: within-cluster sum of squares of the label clusters",
                      xaxis_title="K (children per node)", yaxis_title="WCSS", xaxis_type="log",
                      height=340, margin=dict(l=40, r=20, t=60, b=40))
    return fig


def tree_sunburst(model, tree: int = 0, label_names: Optional[Sequence[str]] = None,
                  max_depth: int = 4) -> go.Figure:
    """The label tree as a sunburst: rings are tree levels, leaves are labels (by name).

    Every node's value is the number of labels below it; ``max_depth`` rings are shown
    at once (click a sector to zoom in)."""
    nodes = model.tree_nodes(tree)
    parent, label = nodes["parent"], nodes["label"]
    N = parent.shape[0]
    ids = [f"n{v}" for v in range(N)]
    parents = ["" if parent[v] < 0 else f"n{parent[v]}" for v in range(N)]
    texts = []
    for v in range(N):
        if label[v] >= 0:
            lab = int(label[v])
            texts.append(str(label_names[lab]) if label_names is not None else f"label {lab}")
        elif v == 0:
            texts.append(f"all {nodes['n_labels'][0]} labels")
        else:
            texts.append(f"cluster {v} ({nodes['n_labels'][v]})")
    fig = go.Figure(go.Sunburst(ids=ids, parents=parents, labels=texts,
                                values=nodes["n_labels"].astype(float), branchvalues="total",
                                maxdepth=max_depth,
                                hovertemplate="%{label}<br>%{value} label(s)<extra></extra>"))
    fig.update_layout(title=f"Label tree {tree + 1} (K-way clusters → labels)", height=560,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def example_predictions(Y_true, S, label_names=None, rows: Sequence[int] = (0, 1, 2, 3, 4),
                        k: int = 5) -> pd.DataFrame:
    """A few test points: their true labels and the top-k predictions (✓ = correct)."""
    Y = sp.csr_matrix(Y_true)
    S = sp.csr_matrix(S)
    top = metrics.top_k(S, k)

    def name(l):
        return str(label_names[l]) if label_names is not None else str(l)

    out = []
    for i in rows:
        true = set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist())
        preds = []
        for l in top[i]:
            if l < 0:
                continue
            s = S[i, l]
            preds.append(f"{'✓' if l in true else '✗'} {name(l)} ({s:.2f})")
        out.append({"test point": int(i), "true labels": ", ".join(name(l) for l in sorted(true)),
                    f"top-{k} predictions (score)": " · ".join(preds),
                    "hits": sum(1 for l in top[i] if l in true)})
    return pd.DataFrame(out)
