"""Tables and plotly figures of the Extreme classification page (unit-testable, no widgets).

Every number comes from a run (``run.metrics``) or ``experiment.bucket_metrics`` /
``experiment.predictions``: nothing here scores or splits."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp

from featagg_app.views.charts import MAX_MARKS
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


def _label_name(label_names, lab: int) -> str:
    return str(label_names[lab]) if label_names is not None else f"label {lab}"


def _top_labels(labels: np.ndarray, counts, k: int) -> np.ndarray:
    """The ``k`` labels of ``labels`` seen in the most training points (ties: lower id);
    the first ``k`` by id without ``counts``."""
    labels = np.asarray(labels, dtype=np.int64)
    if counts is None or labels.size == 0:
        return np.sort(labels)[:k]
    c = np.asarray(counts)[labels]
    order = np.lexsort((labels, -c))
    return labels[order[:k]]


def shown_nodes(nodes: dict, root: int = 0, max_marks: int = MAX_MARKS):
    """Node ids of the label tree to draw under ``root``: the whole subtree when it has at
    most ``max_marks`` nodes, else as many whole levels as fit (at least the root and its
    children, the children cut to ``max_marks - 1``). Returns ``(ids, complete)``."""
    children = nodes["children"]
    out, level, complete = [int(root)], [int(root)], True
    while level:
        nxt = [int(c) for v in level for c in children[v]]
        if not nxt:
            break
        if len(out) + len(nxt) > max_marks:
            complete = False
            if len(out) == 1:
                out.extend(nxt[:max_marks - 1])
            break
        out.extend(nxt)
        level = nxt
    return out, complete


def tree_sunburst(model, tree: int = 0, label_names: Optional[Sequence[str]] = None,
                  max_depth: int = 4, root: int = 0, label_counts=None,
                  max_marks: int = MAX_MARKS, nodes: Optional[dict] = None) -> go.Figure:
    """The label tree as a sunburst: rings are tree levels, leaves are labels (by name),
    every inner node named by its most frequent labels (``label_counts``: training points
    per label).

    Every node's value is the number of labels below it; ``max_depth`` rings are shown at
    once (click a sector to zoom in). A tree of more than ``max_marks`` nodes is drawn
    from ``root`` down as many whole levels as fit (:func:`shown_nodes`): the page's
    drill-down re-roots it. ``nodes`` is ``model.tree_nodes(tree)`` when already at hand."""
    nodes = model.tree_nodes(tree) if nodes is None else nodes
    parent, label = nodes["parent"], nodes["label"]
    ids_v, complete = shown_nodes(nodes, root, max_marks)
    ids = [f"n{v}" for v in ids_v]
    parents = ["" if v == root else f"n{parent[v]}" for v in ids_v]
    texts, hover = [], []
    for v in ids_v:
        n_lab = int(nodes["n_labels"][v])
        if label[v] >= 0:
            name = _label_name(label_names, int(label[v]))
            texts.append(name)
            hover.append(f"{name}" + (f"<br>{int(label_counts[label[v]]):,} training points"
                                      if label_counts is not None else ""))
            continue
        top = [_label_name(label_names, int(j))
               for j in _top_labels(nodes["labels"][v], label_counts, 3)]
        head = f"all {n_lab:,} labels" if v == 0 else f"node {v}"
        texts.append(f"{head}: {' · '.join(top[:2])}" if v else head)
        hover.append(f"{head} · {n_lab:,} label(s)<br>most frequent: {', '.join(top)}")
    fig = go.Figure(go.Sunburst(ids=ids, parents=parents, labels=texts,
                                values=nodes["n_labels"][ids_v].astype(float),
                                branchvalues="total", maxdepth=max_depth,
                                hovertext=hover, hoverinfo="text"))
    what = "" if root == 0 else f" under node {root}"
    more = "" if complete else " (top levels; drill down for the rest)"
    if is_flat(nodes):
        title = (f"One flat tree: all {int(nodes['n_labels'][0]):,} labels under the root "
                 f"(one-vs-all){more}")
    else:
        title = f"Label tree {tree + 1}{what} (K-way clusters → labels){more}"
    fig.update_layout(title=title, height=560, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def is_flat(nodes: dict) -> bool:
    """Whether a tree (``model.tree_nodes(t)``) is one level: every child of the root is
    a label (one-vs-all, or a label set that fits one leaf), so it has no clusters.

    Parameters
    ----------
    nodes : dict
        ``model.tree_nodes(t)``: ``parent`` and ``label`` per node (node 0 the root).

    Returns
    -------
    bool
    """
    parent, label = np.asarray(nodes["parent"]), np.asarray(nodes["label"])
    return bool(parent.shape[0] > 1 and np.all(label[1:] >= 0) and np.all(parent[1:] == 0))


def kept_flat_tree(model) -> bool:
    """Whether a fitted KTXMLC kept one flat tree where label trees were possible (by its
    ``one_vs_all="auto"`` rule, or because ``form="auto"`` chose the flat model: see
    :func:`form_choice`).

    Parameters
    ----------
    model : object
        A fitted classifier.

    Returns
    -------
    bool
        True for a KTXMLC whose one tree is a root with every label as its child although
        its labels do not fit one leaf (``n_labels_ > max_leaf_labels``); False for
        anything else (trees, a label set that fits one leaf, one-vs-all itself).
    """
    if type(model).__name__ != "KTXMLC" or len(getattr(model, "trees_", ())) != 1:
        return False
    return (int(model.trees_[0]["n_children"][0]) == model.n_labels_
            and model.n_labels_ > int(model.max_leaf_labels))


def form_choice(model) -> Optional[tuple]:
    """What ``KTXMLC(form="auto")`` chose and the candidates it scored.

    Parameters
    ----------
    model : object
        A fitted classifier.

    Returns
    -------
    tuple of (str, pandas.DataFrame or None), or None
        ``(choice_, candidates)`` for a KTXMLC fitted with ``form="auto"``: its own
        sentence, and one row per candidate (form, C, validation P@1 and P@5 in %, ✓ on
        the chosen one) -- None when the model does not hold them (a run re-imported
        from an artifact keeps the sentence only). None for any other model or form, and
        for a fit that made no choice (too few rows to hold any out: ``selection_`` is
        empty).
    """
    reason = getattr(model, "choice_", None)
    if (type(model).__name__ != "KTXMLC" or getattr(model, "form", None) != "auto"
            or not isinstance(reason, str) or not reason.strip()):
        return None
    rows = getattr(model, "selection_", None)
    if rows is None:                  # re-imported: the candidates are not saved
        return reason, None
    if not rows:
        return None
    table = pd.DataFrame({
        "candidate": ["one flat model" if r["form"] == "flat" else "label trees"
                      for r in rows],
        "C": [float(r["C"]) for r in rows],
        "validation P@1 (%)": [100.0 * float(r["P@1"]) for r in rows],
        "validation P@5 (%)": [100.0 * float(r["P@5"]) for r in rows],
        "chosen": ["✓" if r.get("chosen") else "" for r in rows]})
    return reason, table


def tree_drill_options(nodes: dict, root: int, shown: Sequence[int]) -> list:
    """Inner nodes to re-root the label tree at: ``root``'s ancestors, ``root``, then the
    inner nodes drawn below it."""
    parent, label = nodes["parent"], nodes["label"]
    anc, v = [], int(parent[int(root)])
    while v >= 0:
        anc.append(v)
        v = int(parent[v])
    out = list(reversed(anc)) + [int(root)]
    out += [int(v) for v in shown if int(v) != int(root) and label[v] < 0
            and len(nodes["children"][v])]
    return out


def tree_node_label(nodes: dict, v: int, label_names=None, label_counts=None) -> str:
    """"root · 10,000 labels" / "node 12 · depth 2 · 640 labels — tagA · tagB"."""
    v = int(v)
    n = f"{int(nodes['n_labels'][v]):,} labels"
    top = " · ".join(_label_name(label_names, int(j))
                     for j in _top_labels(nodes["labels"][v], label_counts, 2))
    if v == 0:
        return f"root · {n}"
    return f"node {v} · depth {int(nodes['depth'][v])} · {n} — {top}"


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
