"""Tables and plotly figures for the Graph feature selection page (BMGUFS).

No streamlit here: every builder takes fitted featagg_core objects or plain arrays and
returns a DataFrame or a ``plotly.graph_objects.Figure``, so it can be unit tested.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp
from plotly.subplots import make_subplots

from featagg_app.views.charts import PALETTE, style
from featagg_core.triage.report import rre_axis_range

MAX_NODES_DRAWN = 400
#: edges drawn at most (each is three x/y entries: two ends and a break)
MAX_EDGES_DRAWN = 1500


def _legend_below(fig: go.Figure) -> go.Figure:
    """Legend under the plot area (subplot titles sit where the house legend would)."""
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left",
                                  x=0.0), margin=dict(b=40))
    return fig


# ---------------------------------------------------------------------------
# block models
# ---------------------------------------------------------------------------
def candidates_table(model) -> pd.DataFrame:
    """One row per candidate block model: RRE, ONMtF iterations, block sizes, and which one
    guides the selection."""
    rows = []
    for c, bm in enumerate(model.candidates_):
        k = bm.M_.shape[0]
        sizes = np.bincount(bm.labels_, minlength=k)
        rows.append({"candidate": c, "RRE": float(bm.rre_),
                     "ONMtF iterations": int(bm.objective_.shape[0] - 1),
                     "non-empty blocks": int(np.count_nonzero(sizes)),
                     "block sizes": ", ".join(str(int(s)) for s in sizes),
                     "used": "✓" if c == model.candidate_index_ else ""})
    return pd.DataFrame(rows)


def rre_figure(model) -> go.Figure:
    """Bar chart of each candidate's RRE, the one in use highlighted."""
    rre = np.array([bm.rre_ for bm in model.candidates_])
    colors = [PALETTE[3] if c == model.candidate_index_ else PALETTE[0]
              for c in range(rre.size)]
    fig = go.Figure(go.Bar(x=[f"#{c}" for c in range(rre.size)], y=rre, marker_color=colors,
                           text=[f"{v:.4f}" for v in rre], textposition="outside",
                           hovertemplate="candidate %{x}<br>RRE %{y:.5f}<extra></extra>"))
    fig.update_yaxes(range=rre_axis_range(rre))
    return style(fig, "Candidate block models: relative reconstruction error (red: in use)",
                 height=300, xlabel="candidate", ylabel="RRE = ‖A − FMFᵀ‖ / ‖A‖")


def _heat(M, name, colorscale="Blues", zmin=None, zmax=None):
    k = M.shape[0]
    ticks = [f"B{i}" for i in range(k)]
    return go.Heatmap(z=M, x=ticks, y=ticks, colorscale=colorscale, zmin=zmin, zmax=zmax,
                      name=name, hovertemplate="row %{y}, col %{x}: %{z:.4g}<extra>" + name +
                      "</extra>", colorbar=dict(thickness=10))


def image_matrix_figure(model) -> go.Figure:
    """Heatmap of the image matrix M (edge density between blocks) of the block model in use."""
    M = model.block_model_.M_
    fig = go.Figure(_heat(M, "M"))
    fig.update_yaxes(autorange="reversed")
    return style(fig, "Image matrix M: edge density between blocks", height=360)


def similarity_figure(model) -> go.Figure:
    """Side by side: the target P = rownorm(M + δ) and the block similarity induced by the
    selected features Q = rownorm(D̄ R D̄ᵀ + δ) (rows sum to 1)."""
    P, Q = model.target_similarity_, model.induced_similarity_
    zmax = float(max(P.max(), Q.max()))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("target: row-normalised M",
                                        "induced by the weighted features"))
    fig.add_trace(_heat(P, "P", "Viridis", 0.0, zmax), 1, 1)
    tr = _heat(Q, "Q", "Viridis", 0.0, zmax)
    tr.showscale = False
    fig.add_trace(tr, 1, 2)
    fig.update_yaxes(autorange="reversed")
    return style(fig, "Block-level similarity (L_m compares these row by row)", height=380)


def convergence_figure(history: dict) -> go.Figure:
    """L_b and L_m per iteration (left axis / right axis) and the number of non-zero weights."""
    it = np.arange(len(history["L_b"]))
    fig = make_subplots(rows=1, cols=2, specs=[[{"secondary_y": True}, {}]],
                        subplot_titles=("losses", "non-zero weights nnz(r)"))
    fig.add_trace(go.Scatter(x=it, y=history["L_b"], name="L_b (structural equivalence)",
                             line=dict(color=PALETTE[0])), 1, 1, secondary_y=False)
    fig.add_trace(go.Scatter(x=it, y=history["L_m"], name="L_m (image-matrix KL)",
                             line=dict(color=PALETTE[1])), 1, 1, secondary_y=True)
    fig.add_trace(go.Scatter(x=it, y=history["nnz"], name="nnz(r)",
                             line=dict(color=PALETTE[2])), 1, 2)
    fig.update_yaxes(title_text="L_b", secondary_y=False, row=1, col=1)
    fig.update_yaxes(title_text="L_m", secondary_y=True, row=1, col=1)
    fig.update_xaxes(title_text="iteration")
    return _legend_below(style(fig, "Convergence", height=380))


# ---------------------------------------------------------------------------
# selected features
# ---------------------------------------------------------------------------
def select_with_message(model, d: int):
    """``model.select(d)`` plus the warning text when fewer than d weights are non-zero."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idx = model.select(int(d))
    msg = next((str(w.message) for w in caught if issubclass(w.category, UserWarning)), None)
    return idx, msg


def top_features_table(model, idx, feature_names=None, X=None) -> pd.DataFrame:
    """Selected features in order: rank, column, name (when known), weight r and the number
    of nodes that have the feature."""
    idx = np.asarray(idx, dtype=np.int64)
    df = pd.DataFrame({"rank": np.arange(1, idx.size + 1), "feature": idx})
    if feature_names is not None:
        names = list(feature_names)
        df["name"] = [str(names[j]) for j in idx]
    df["weight r"] = model.scores_[idx]
    if X is not None:
        Xc = sp.csc_matrix(X)
        df["nodes with it"] = np.diff(Xc.indptr)[idx]
    return df


def weights_figure(model, top: int = 100) -> go.Figure:
    """The largest weights, sorted (how concentrated the selection is)."""
    r = np.sort(model.scores_)[::-1][:top]
    fig = go.Figure(go.Bar(x=np.arange(1, r.size + 1), y=r, marker_color=PALETTE[0],
                           hovertemplate="rank %{x}: r = %{y:.4g}<extra></extra>"))
    return style(fig, f"Top {r.size} feature weights", height=280, xlabel="rank",
                 ylabel="weight r")


# ---------------------------------------------------------------------------
# comparison with the baselines (experiment.feature_selection_comparison's result)
# ---------------------------------------------------------------------------
def comparison_table(cmp: dict, metric: str = "acc") -> pd.DataFrame:
    """Methods x d table of "mean ± sd" strings for ``metric`` ("acc" or "nmi")."""
    rows = {}
    for name, per_d in cmp["methods"].items():
        row = {}
        for d in cmp["ds"]:
            r = per_d[d]
            cell = f"{r[metric + '_mean']:.3f} ± {r[metric + '_sd']:.3f}"
            if name != "all features" and r.get("d", d) < d:
                cell += f" (only {r['d']})"
            row[f"d={d}"] = cell
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def acc_nmi_figure(cmp: dict) -> go.Figure:
    """ACC and NMI against d for every method (error bars: sd over k-means seeds)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("clustering accuracy", "NMI"))
    for i, (name, per_d) in enumerate(cmp["methods"].items()):
        color = PALETTE[i % len(PALETTE)]
        dash = "dot" if name == "all features" else None
        width = 3 if name == "BMGUFS" else 1.5
        for col, key in ((1, "acc"), (2, "nmi")):
            fig.add_trace(go.Scatter(
                x=cmp["ds"], y=[per_d[d][key + "_mean"] for d in cmp["ds"]],
                error_y=dict(type="data", array=[per_d[d][key + "_sd"] for d in cmp["ds"]],
                             visible=True, thickness=1),
                mode="lines+markers", name=name, legendgroup=name, showlegend=col == 1,
                line=dict(color=color, dash=dash, width=width)), 1, col)
    fig.update_xaxes(type="log", title_text="d (selected features)",
                     tickvals=cmp["ds"], ticktext=[str(d) for d in cmp["ds"]])
    return _legend_below(style(fig, "k-means on the selected features vs the node classes",
                               height=460))


# ---------------------------------------------------------------------------
# node drawing
# ---------------------------------------------------------------------------
def node_sample(A, n_max: int = MAX_NODES_DRAWN, seed: int = 0) -> np.ndarray:
    """Up to ``n_max`` nodes forming connected pieces: breadth-first snowballs from random
    start nodes (a uniform sample of a sparse graph would show almost no edges)."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    if n <= n_max:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    taken = np.zeros(n, dtype=bool)
    out = []
    starts = rng.permutation(n)
    per_snowball = max(n_max // 8, 10)
    for s in starts:
        if len(out) >= n_max:
            break
        if taken[s]:
            continue
        queue, got = [s], 0
        taken[s] = True
        while queue and got < per_snowball and len(out) < n_max:
            v = queue.pop(0)
            out.append(v)
            got += 1
            nb = A.indices[A.indptr[v]:A.indptr[v + 1]]
            nb = nb[~taken[nb]]
            if nb.size > 6:
                nb = rng.choice(nb, 6, replace=False)
            taken[nb] = True
            queue.extend(nb.tolist())
        taken[np.asarray(queue, dtype=np.int64)] = False   # queued but not drawn: free again
        taken[np.asarray(out, dtype=np.int64)] = True
    return np.sort(np.asarray(out[:n_max], dtype=np.int64))


def node_figure(A, nodes, blocks, classes=None, class_names=None, seed: int = 0) -> go.Figure:
    """Force-directed drawing of the subgraph on ``nodes``, coloured by block (hover: node,
    block, class)."""
    import networkx as nx
    A = sp.csr_matrix(A)
    nodes = np.asarray(nodes, dtype=np.int64)
    sub = A[nodes][:, nodes].tocoo()
    G = nx.Graph()
    G.add_nodes_from(range(nodes.size))
    G.add_edges_from((int(i), int(j)) for i, j in zip(sub.row, sub.col) if i < j)
    pos = nx.spring_layout(G, seed=seed, iterations=60)
    xy = np.array([pos[i] for i in range(nodes.size)])
    edges = list(G.edges())
    if len(edges) > MAX_EDGES_DRAWN:          # the figure stays under charts.MAX_MARKS
        pick = np.random.default_rng(seed).choice(len(edges), MAX_EDGES_DRAWN, replace=False)
        edges = [edges[k] for k in np.sort(pick)]
    ex, ey = [], []
    for i, j in edges:
        ex += [xy[i, 0], xy[j, 0], None]
        ey += [xy[i, 1], xy[j, 1], None]
    fig = go.Figure(go.Scatter(x=ex, y=ey, mode="lines", line=dict(width=0.5, color="#bbb"),
                               hoverinfo="skip", showlegend=False))
    b = np.asarray(blocks)[nodes]
    for blk in np.unique(b):
        sel = np.flatnonzero(b == blk)
        if classes is not None:
            cl = np.asarray(classes)[nodes[sel]]
            if class_names is not None:
                names = list(class_names)
                cl = [names[c] if 0 <= int(c) < len(names) else str(c) for c in cl]
            text = [f"node {nodes[s]}<br>block B{blk}<br>class {c}" for s, c in zip(sel, cl)]
        else:
            text = [f"node {nodes[s]}<br>block B{blk}" for s in sel]
        fig.add_trace(go.Scatter(x=xy[sel, 0], y=xy[sel, 1], mode="markers", name=f"B{blk}",
                                 marker=dict(size=7, color=PALETTE[int(blk) % len(PALETTE)],
                                             line=dict(width=0.5, color="white")),
                                 text=text, hovertemplate="%{text}<extra></extra>"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    return style(fig, f"{nodes.size} nodes (connected samples), coloured by block", height=520)
