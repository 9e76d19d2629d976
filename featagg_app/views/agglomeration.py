"""Figure builders and helpers for the Feature agglomeration page (no streamlit here).

The tree figures never ship the whole hierarchy to the browser: they draw the subtree under
one node down to a few levels (``DefragTree.to_plotly``, at most ``charts.MAX_MARKS``
blocks), labelled with the words each block stands for, and the page lets the user drill
down by picking a node; a 10^5-feature tree (~3·10^4 nodes) stays responsive. The cluster
inspector works on the whole matrix with row masks (a matrix-vector product per cluster),
never on a copy of the training rows.
"""
from __future__ import annotations

import io
import json
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp

from featagg_app.views.charts import MAX_MARKS, PALETTE, style

MAX_TREE_LEVELS = 8


# ----------------------------------------------------------------------------- tree
def _name(feature_names, j: int) -> str:
    return str(feature_names[j]) if feature_names is not None else f"f{j}"


def top_features(tree, v: int, counts: Optional[np.ndarray], k: int = 3) -> np.ndarray:
    """The ``k`` features under node ``v`` that occur in the most training points (ties:
    lower index first); without ``counts``, its first ``k`` members by index."""
    s, n = int(tree.start[int(v)]), int(tree.n_members[int(v)])
    members = np.asarray(tree.order[s:s + n], dtype=np.int64)
    if counts is None:
        return np.sort(members)[:k]
    c = np.asarray(counts)[members]
    if members.size > 4 * k:
        # everything tied with the k-th largest count stays a candidate (the lower index
        # wins a tie, whatever order argpartition leaves them in)
        kth = np.partition(c, members.size - k)[members.size - k]
        keep = c >= kth
        members, c = members[keep], c[keep]
    order = np.lexsort((members, -c))
    return members[order[:k]]


def node_words(tree, v: int, counts=None, feature_names=None, k: int = 2) -> str:
    """"learning · neural": the node's ``k`` most frequent features, by name."""
    return " · ".join(_name(feature_names, j) for j in top_features(tree, v, counts, k))


def tree_figure(tree, root: int = 0, levels: int = 4, kind: str = "icicle",
                feature_names: Optional[Sequence[str]] = None, height: int = 460,
                feature_counts: Optional[np.ndarray] = None) -> go.Figure:
    """Icicle (or sunburst) of the subtree under ``root``, ``levels`` levels deep.

    Every block is labelled with the words it stands for: its two most frequent features
    (``feature_counts``: points of the training rows per feature; by index without it),
    a leaf with its cluster id and top three. Sizes are member counts
    (``branchvalues="total"``); the colour is the depth. At most ``MAX_MARKS`` blocks are
    drawn (fewer levels when needed); the page's drill-down re-roots the figure to show
    deeper levels, and clicking a block zooms into it in the browser.
    """
    if kind not in ("icicle", "sunburst"):
        raise ValueError(f"kind must be 'icicle' or 'sunburst', got {kind!r}")
    levels = int(max(1, min(levels, MAX_TREE_LEVELS)))
    root = int(root)
    while levels > 1 and sum(1 for _ in tree.iter_nodes(root, max_depth=levels)) > MAX_MARKS:
        levels -= 1
    cols = tree.to_plotly(root=root, max_depth=levels)
    depth0 = int(tree.depth[root])
    rel = [d - depth0 for d in cols["depth"]]
    colors = [PALETTE[r % len(PALETTE)] for r in rel]
    labels, hover = [], []
    for v, val, d, leaf in zip(cols["node"], cols["values"], cols["depth"], cols["is_leaf"]):
        top = [_name(feature_names, j) for j in top_features(tree, v, feature_counts, 5)]
        if leaf:
            labels.append(f"cluster {int(tree.cluster[v])}: " + ", ".join(top[:3])
                          + ("…" if val > 3 else ""))
        else:
            labels.append(" · ".join(top[:2]))
        where = (f"cluster {int(tree.cluster[v])} (node {v})" if leaf else
                 ("root" if v == 0 else f"node {v}"))
        hover.append(f"{where} · depth {d}<br>{val:,} features<br>most frequent: "
                     + ", ".join(top))
    common = dict(ids=cols["ids"], labels=labels, parents=cols["parents"],
                  values=cols["values"], branchvalues="total",
                  marker=dict(colors=colors, line=dict(width=0.5, color="white")),
                  hovertext=hover, hoverinfo="text", maxdepth=levels + 1)
    trace = go.Icicle(**common, tiling=dict(orientation="v")) if kind == "icicle" \
        else go.Sunburst(**common)
    fig = go.Figure(trace)
    title = (f"Hierarchy under {'the root' if root == 0 else f'node {root}'} "
             f"({int(tree.n_members[root]):,} features), "
             f"{levels} level{'s' if levels != 1 else ''}")
    return style(fig, title=title, height=height)


def drill_options(tree, root: int, levels: int) -> list:
    """Nodes the user can re-root the tree figure at: the current root's ancestors (to climb
    back), then the inner nodes shown in the figure below the root."""
    out = []
    v = int(tree.parent[int(root)])
    ancestors = []
    while v >= 0:
        ancestors.append(v)
        v = int(tree.parent[v])
    out.extend(reversed(ancestors))
    out.append(int(root))
    for v in tree.iter_nodes(int(root), max_depth=levels):
        if v != int(root) and not tree.is_leaf(v):
            out.append(int(v))
    return out


def node_label(tree, v: int, counts=None, feature_names=None) -> str:
    """"root · 1,836 features", "node 5 · depth 2 · 459 features — learning · neural" or
    "cluster 17 (node 300) · depth 8 · 7 features — …" (the words with ``counts`` or
    ``feature_names``)."""
    v = int(v)
    n = f"{int(tree.n_members[v]):,} features"
    words = ""
    if counts is not None or feature_names is not None:
        words = " — " + node_words(tree, v, counts, feature_names)
    if v == 0:
        return f"root · {n}{words}"
    if tree.is_leaf(v):
        return (f"cluster {int(tree.cluster[v])} (node {v}) · depth {int(tree.depth[v])} · "
                f"{n}{words}")
    return f"node {v} · depth {int(tree.depth[v])} · {n}{words}"


# ----------------------------------------------------------------------------- sizes
def size_counts(cluster_sizes) -> pd.DataFrame:
    """Number of clusters of each size (sizes that occur only)."""
    s = np.asarray(cluster_sizes, dtype=np.int64)
    c = np.bincount(s)
    sizes = np.flatnonzero(c)
    return pd.DataFrame({"cluster size": sizes, "clusters": c[sizes]})


def size_histogram(cluster_sizes, d0: Optional[int] = None, height: int = 320) -> go.Figure:
    """Bar chart: how many clusters have each size (DEFRAG's are all ⌊·⌋/⌈·⌉ halves, ≤ d0)."""
    df = size_counts(cluster_sizes)
    fig = go.Figure(go.Bar(x=df["cluster size"], y=df["clusters"], marker_color=PALETTE[0],
                           hovertemplate="%{y:,} clusters of %{x} features<extra></extra>"))
    if d0 is not None:
        fig.add_vline(x=d0 + 0.5, line_dash="dot", line_color=PALETTE[3],
                      annotation_text=f"d0 = {d0}", annotation_position="top left")
    fig.update_xaxes(dtick=1 if df["cluster size"].max() <= 40 else None)
    return style(fig, title="Cluster sizes", height=height, xlabel="features in the cluster",
                 ylabel="clusters")


# ----------------------------------------------------------------------------- errors
def error_figure(errors: dict, titles: Optional[dict] = None, height: int = 260) -> go.Figure:
    """Horizontal bars of clustering error per method (lower is better); DEFRAG first.
    ``titles`` (method -> run title) is shown on hover."""
    names = list(errors)
    vals = [float(errors[k]) for k in names]
    colors = [PALETTE[0] if "DEFRAG" in k else PALETTE[8] for k in names]
    hover = [f"{k}: {v:.4f}" + (f"<br>{titles[k]}" if titles and k in titles else "")
             for k, v in zip(names, vals)]
    fig = go.Figure(go.Bar(x=vals, y=names, orientation="h", marker_color=colors,
                           text=[f"{v:.4f}" for v in vals], textposition="auto",
                           hovertext=hover, hoverinfo="text"))
    fig.update_yaxes(autorange="reversed")
    return style(fig, title="Clustering error (lower is better)", height=height,
                 xlabel="mean squared distance to the cluster mean")


# ----------------------------------------------------------------------------- inspector
def column_nnz(X) -> np.ndarray:
    """Number of points in which each feature is non-zero (explicit zeros not counted)."""
    X = sp.csc_matrix(X)
    cols = np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))
    return np.bincount(cols, weights=(X.data != 0), minlength=X.shape[1]).astype(np.int64)


def cluster_table(model, cluster: int, X=None, feature_names=None,
                  counts: Optional[np.ndarray] = None) -> pd.DataFrame:
    """The features of one cluster: index, name and the number of points using it (from
    ``counts``, points per feature, when given — e.g. of the training rows, computed once
    — else counted in ``X``)."""
    members = model.cluster_members(int(cluster))
    if counts is None:
        counts_m = column_nnz(X[:, members])
    else:
        counts_m = np.asarray(counts, dtype=np.int64)[members]
    names = [str(feature_names[j]) if feature_names is not None else f"feature {j}"
             for j in members]
    df = pd.DataFrame({"feature": members, "name": names, "points": counts_m})
    return df.sort_values(["points", "feature"], ascending=[False, True]).reset_index(drop=True)


def cluster_top_labels(model, cluster: int, X, Y, label_names=None, k: int = 5,
                       rows: Optional[np.ndarray] = None) -> pd.DataFrame:
    """Labels most associated with a cluster: the largest entries of the cluster's row of
    (X G)ᵀ Y, i.e. how often the cluster's features occur with each label — over ``rows``
    of X and Y (all rows when None). Two sparse matrix-vector products: no copy of the
    rows or columns."""
    members = model.cluster_members(int(cluster))
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    g = np.zeros(X.shape[1], dtype=np.float64)
    g[members] = 1.0
    w = np.asarray(X @ g).ravel()
    if rows is not None:
        keep = np.zeros(X.shape[0], dtype=bool)
        keep[np.asarray(rows, dtype=np.int64)] = True
        w[~keep] = 0.0
    scores = np.asarray(Y.T @ w).ravel()
    top = np.argsort(-scores, kind="stable")[:k]
    top = top[scores[top] > 0]
    names = [str(label_names[j]) if label_names is not None else f"label {j}" for j in top]
    return pd.DataFrame({"label": names, "weight": scores[top]})


def find_feature(feature_names, query: str, limit: int = 50) -> list:
    """Indices of features whose name contains ``query`` (case-insensitive), exact matches
    first, at most ``limit``."""
    if feature_names is None or not query:
        return []
    q = query.strip().lower()
    if not q:
        return []
    exact, partial = [], []
    for j, nm in enumerate(feature_names):
        s = str(nm).lower()
        if s == q:
            exact.append(j)
        elif q in s:
            partial.append(j)
    return (exact + partial)[:limit]


# ----------------------------------------------------------------------------- exports
def assignment_csv(model, feature_names=None) -> bytes:
    """CSV with one row per feature: ``feature,name,cluster``."""
    d = len(model.labels_)
    names = [str(feature_names[j]) for j in range(d)] if feature_names is not None else \
        [f"feature {j}" for j in range(d)]
    df = pd.DataFrame({"feature": np.arange(d), "name": names, "cluster": model.labels_})
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def clusters_json(model, feature_names=None) -> bytes:
    """JSON: parameters, K, error and each cluster's member indices (and names)."""
    out = {"method": "DEFRAG", "params": model.get_params(), "n_clusters": model.n_clusters_,
           "clustering_error": model.clustering_error_, "clusters": []}
    labels = np.asarray(model.labels_)
    order = np.lexsort((np.arange(labels.shape[0]), labels))  # by cluster, then feature
    bounds = np.cumsum(np.bincount(labels, minlength=model.n_clusters_))[:-1]
    for c, mem in enumerate(np.split(order, bounds)):
        entry = {"cluster": c, "features": mem.tolist()}
        if feature_names is not None:
            entry["names"] = [str(feature_names[j]) for j in mem]
        out["clusters"].append(entry)
    return json.dumps(out, indent=1).encode("utf-8")


def short_number(n) -> str:
    """1,234 → "1,234"; 334,668 → "335k"; 12,345,678 → "12.3M"."""
    n = float(n)
    if abs(n) < 10_000:
        return f"{n:,.0f}"
    if abs(n) < 1_000_000:
        return f"{n / 1e3:,.0f}k"
    if abs(n) < 1_000_000_000:
        return f"{n / 1e6:,.3g}M"
    return f"{n / 1e9:,.3g}G"


def reduction_summary(metrics: dict, d: int) -> dict:
    """Dimensions and non-zeros before/after agglomeration, from an agglomeration run's
    test metrics (``features_after``, ``nnz_before``, ``nnz_after``) and the feature count
    ``d``."""
    K, before, after = (int(metrics["features_after"]), int(metrics["nnz_before"]),
                        int(metrics["nnz_after"]))
    return {"d": int(d), "K": K, "nnz_before": before, "nnz_after": after,
            "dim_ratio": d / max(K, 1), "nnz_ratio": before / max(after, 1)}
