"""Checks of an attributed graph: self-loops, duplicate and one-way edges of the file,
asymmetric entries of the matrix, isolated nodes, connected components, nodes without
features, constant features, class homophily.

Where the counts come from: the graph readers symmetrise the adjacency (an edge given in
either direction, or repeatedly, becomes one edge) and drop self-loops unless asked to keep
them (``featagg_core.data.load_graph``), so the matrix no longer shows what the file held.
They count it while parsing into ``GraphData.file_edges``; when that is there, the
``self_loops``, ``duplicate_edges`` and ``one_way_edges`` alerts report the file. When it
is None (a graph built in Python, a sample, an npz written before the counts existed) the
checks report what the matrix shows instead: self-loops kept on its diagonal, and
asymmetric entries (``asymmetric_edges``, checked in every case).

One-way edges: a file that lists every edge in one direction only follows the common
"each undirected edge once" convention (a note); a file that lists some edges both ways and
others one way is more likely a directed graph whose direction featagg will ignore (a
warning). Duplicates are a warning above :data:`DUPLICATE_SHARE` of the listed edges.

Homophily: the edge homophily ratio ``h`` (the share of edges between two labelled nodes
whose classes agree; Zhu et al. 2020) against its chance level ``sum_c p_c^2``, where
``p_c`` is class c's share of the labelled edge ends (the baseline of the adjusted
homophily of Platonov et al. 2023). Near chance, the graph says little about the classes.
"""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from featagg_core.health.alerts import Alert

__all__ = ["graph_alerts", "edge_homophily", "file_edge_alerts", "DUPLICATE_SHARE"]

#: share of the listed edges above which repeated edges are a warning (else a note)
DUPLICATE_SHARE = 0.05


def edge_homophily(A, y) -> tuple:
    """Edge homophily ratio and its chance level.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        Adjacency, n x n (each undirected edge stored both ways; self-loops ignored).
    y : numpy.ndarray
        Class of each node, -1 = unknown.

    Returns
    -------
    tuple of (float, float, int)
        ``(h, chance, edges)``: the share of labelled edges joining equal classes, the
        expected share for classes drawn at random with the edge ends' class frequencies,
        and the number of labelled edges (NaN, NaN, 0 when there are none).
    """
    C = sp.triu(sp.csr_matrix(A), k=1).tocoo()
    yi, yj = y[C.row], y[C.col]
    ok = (yi >= 0) & (yj >= 0)
    m = int(ok.sum())
    if m == 0:
        return float("nan"), float("nan"), 0
    h = float(np.mean(yi[ok] == yj[ok]))
    ends = np.concatenate([yi[ok], yj[ok]])
    p = np.bincount(ends) / ends.size
    return h, float(np.sum(p ** 2)), m


def graph_alerts(data) -> List[Alert]:
    """The graph checks of the module docstring.

    Parameters
    ----------
    data : featagg_core.data.GraphData
        The graph.

    Returns
    -------
    list of Alert
        The alerts found (unsorted).
    """
    A = sp.csr_matrix(data.A)
    n = A.shape[0]
    out = []
    diag = A.diagonal()
    loops = np.flatnonzero(diag != 0)
    fe = getattr(data, "file_edges", None)
    if fe is not None:
        out += file_edge_alerts(fe, loops)
    elif loops.size:
        out.append(Alert("self_loops", "info", int(loops.size),
                         f"{loops.size:,} nodes have an edge to themselves.",
                         "Harmless for most methods; drop them if the graph should have none "
                         "(a node's own features already describe it).",
                         rows=loops, examples=[f"node {int(i)}" for i in loops[:5]]))
    D = (A - A.T).tocsr()
    D.eliminate_zeros()
    if D.nnz:
        U = sp.triu(abs(D), k=1).tocoo()
        one_way = int(sp.csr_matrix((A != 0).astype(np.int8) - (A.T != 0).astype(np.int8)
                                    ).count_nonzero())
        out.append(Alert("asymmetric_edges", "warning", int(U.nnz),
                         f"{U.nnz:,} node pairs have different weights in the two directions "
                         f"({one_way:,} entries exist in one direction only).",
                         "featagg treats graphs as undirected: symmetrise the adjacency "
                         "(keep the larger weight) or check how the file was written.",
                         examples=[f"{int(r)} - {int(c)}" for r, c in zip(U.row[:5], U.col[:5])]))
    Aoff = A - sp.diags(diag)
    deg = np.asarray((Aoff != 0).sum(axis=1)).ravel()
    iso = np.flatnonzero(deg == 0)
    if iso.size:
        out.append(Alert("isolated_nodes", "warning" if iso.size > 0.05 * n else "info",
                         int(iso.size),
                         f"{iso.size:,} nodes{_pct(iso.size, n)} have no edge.",
                         "Their predictions rest on their features alone; check the edge "
                         "file covers them, or report results on connected nodes too.",
                         rows=iso, examples=[f"node {int(i)}" for i in iso[:5]]))
    if n:
        n_comp, lab = connected_components(A, directed=False)
        if n_comp > 1:
            sizes = np.bincount(lab)
            big = int(sizes.max())
            out.append(Alert("components", "info", int(n_comp),
                             f"The graph falls into {n_comp:,} connected components; the "
                             f"largest holds {big:,} nodes{_pct(big, n)}.",
                             "Methods that spread information along edges cannot cross "
                             "components; consider the largest component alone.",
                             examples=[f"{int(s):,} nodes" for s in np.sort(sizes)[::-1][:5]],
                             extra={"largest": big, "isolated": int(iso.size)}))
    X = sp.csr_matrix(data.X)
    if X.shape[1] > 0:
        nf = np.flatnonzero(np.diff(X.indptr) == 0)
        if nf.size:
            out.append(Alert("empty_features", "warning", int(nf.size),
                             f"{nf.size:,} nodes{_pct(nf.size, n)} have no features.",
                             "Find why their attributes are missing; feature selection and "
                             "classifiers see these nodes through their edges only.",
                             rows=nf, examples=[f"node {int(i)}" for i in nf[:5]]))
        Xc = X.tocsc()
        cnt = np.diff(Xc.indptr)
        const = np.flatnonzero(cnt == 0)
        full = np.flatnonzero(cnt == n)
        if full.size:
            vals = Xc.data
            seg = np.repeat(np.arange(X.shape[1]), cnt)
            lo = np.full(X.shape[1], np.inf)
            hi = np.full(X.shape[1], -np.inf)
            np.minimum.at(lo, seg, vals)
            np.maximum.at(hi, seg, vals)
            full = full[lo[full] == hi[full]]
        const = np.union1d(const, full)
        if const.size:
            names = data.feature_names
            out.append(Alert("constant_features", "info", int(const.size),
                             f"{const.size:,} of {X.shape[1]:,} node features take one value "
                             f"on every node.",
                             "Drop them: they cannot tell nodes apart.",
                             examples=[str(names[j]) if names is not None and j < len(names)
                                       else f"#{int(j)}" for j in const[:5]],
                             extra={"features": const[:1000]}))
    y = data.y
    if y is not None and n:
        y = np.asarray(y)
        h, chance, m = edge_homophily(A, y)
        if m:
            low = h <= chance + 0.1
            out.append(Alert("homophily", "warning" if low else "info", m,
                             f"Edge homophily {h:.2f}: {100 * h:.0f} % of the {m:,} edges "
                             f"between labelled nodes join nodes of the same class (chance "
                             f"level {chance:.2f}).",
                             "Near chance the edges carry little class information: prefer "
                             "feature-based methods, or ones built for heterophily."
                             if low else "The edges follow the classes: graph methods and "
                             "neighbourhood features should help.",
                             extra={"homophily": h, "chance": chance}))
        unl = np.flatnonzero(y < 0)
        if unl.size:
            out.append(Alert("unlabelled_nodes", "info", int(unl.size),
                             f"{unl.size:,} nodes{_pct(unl.size, n)} have no class.",
                             "They are used for structure but not scored.", rows=unl))
    return out


def file_edge_alerts(file_edges: dict, kept_loops=None) -> List[Alert]:
    """``self_loops``, ``duplicate_edges`` and ``one_way_edges`` from what the file held.

    Parameters
    ----------
    file_edges : dict
        ``GraphData.file_edges`` (the counts the reader took while parsing).
    kept_loops : numpy.ndarray, optional
        Nodes whose self-loop the graph kept (its diagonal); empty or None when the reader
        dropped them.

    Returns
    -------
    list of Alert
        The alerts whose count is above zero.
    """
    out = []
    ex = file_edges.get("examples") or {}
    listed = int(file_edges.get("listed_edges") or 0)
    k = int(file_edges.get("self_loops") or 0)
    kept = kept_loops is not None and len(kept_loops) > 0
    if k:
        out.append(Alert("self_loops", "info", k,
                         f"The file lists {k:,} edge{_s(k)} from a node to itself; the graph "
                         + ("keeps them." if kept else "drops them."),
                         "Nothing to do unless a loop means something in your data: a "
                         "node's own features already describe it.",
                         rows=np.asarray(kept_loops) if kept else None,
                         examples=list(ex.get("self_loops") or [])))
    k = int(file_edges.get("duplicate_edges") or 0)
    if k:
        out.append(Alert("duplicate_edges",
                         "warning" if k > DUPLICATE_SHARE * max(listed, 1) else "info", k,
                         f"{k:,} of the file's {listed:,} edges repeat an edge it lists "
                         f"earlier; the graph keeps one of each (with the largest weight "
                         f"given).",
                         "Check how the file was made (two exports appended, a join that "
                         "repeated rows): if the repeats were meant as weights, give each edge "
                         "once with its weight.",
                         examples=list(ex.get("duplicate_edges") or [])))
    k = file_edges.get("one_way_edges")
    if k:
        both = int(file_edges.get("two_way_edges") or 0) // 2     # pairs listed both ways
        if both:
            out.append(Alert("one_way_edges", "warning", int(k),
                             f"{k:,} edge{_s(k)} appear{'s' if k == 1 else ''} in one "
                             f"direction only, while {both:,} appear{'s' if both == 1 else ''} both "
                             f"ways; featagg treats "
                             f"the graph as undirected (each edge both ways).",
                             "If direction matters here (who cites or follows whom), featagg's "
                             "graph methods will not see it; if the file should list every "
                             "edge both ways, look for the missing reverse edges.",
                             examples=list(ex.get("one_way_edges") or [])))
        else:
            out.append(Alert("one_way_edges", "info", int(k),
                             f"The file lists each of its {k:,} edge{_s(k)} in one direction "
                             f"only; featagg treats the graph as undirected (each edge both "
                             f"ways).",
                             "Nothing to do if the edges have no direction; if direction "
                             "matters (who cites or follows whom), featagg's graph methods "
                             "will not see it.",
                             examples=list(ex.get("one_way_edges") or [])))
    return out


def _s(k: int) -> str:
    return "" if k == 1 else "s"


def _pct(k: int, n: int) -> str:
    return f" ({100.0 * k / max(n, 1):.1f} % of {n:,})"
