"""Every chart stays under charts.MAX_MARKS whatever the data's size, and the trees are named
by their words: the figure builders on large inputs, checked against the figure data and
against brute force; the page-level helpers (paging, large text) and an AppTest of the
Feature agglomeration page on a 2^14-feature set."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from featagg_app.views import charts, display
from featagg_app.views import agglomeration as dv
from featagg_app.views import xmlc as xv
from featagg_app.views import data as dav

M = charts.MAX_MARKS


def test_mark_count_counts_points_bars_sectors_and_cells():
    import plotly.graph_objects as go
    fig = go.Figure([go.Scatter(x=[1, 2, 3], y=[1, 2, 3]), go.Bar(x=["a", "b"], y=[1, 2])])
    assert charts.mark_count(fig) == 5
    fig.add_vline(x=1)
    assert charts.mark_count(fig) == 6
    assert charts.mark_count(go.Figure(go.Heatmap(z=np.zeros((4, 5))))) == 20
    assert charts.mark_count(go.Figure(go.Sunburst(ids=list("abc"), parents=["", "a", "a"],
                                                   labels=list("abc")))) == 3


def test_distributions_of_a_million_values_are_bounded_and_keep_their_mass():
    rng = np.random.default_rng(0)
    counts = np.minimum(rng.zipf(1.3, 1_000_000), 10 ** 6)
    fig = charts.rank_frequency(counts, head_size=100)
    assert charts.mark_count(fig) <= charts.MAX_POINTS + 2
    # the curve is the sorted counts sampled at log-spaced ranks, first and last included
    xs = np.concatenate([t.x for t in fig.data])
    ys = np.concatenate([t.y for t in fig.data])
    s = np.sort(counts)[::-1]
    assert xs[0] == 1 and xs[-1] == counts.size and (ys == s[xs - 1]).all()
    fig = charts.count_histogram(counts)
    assert charts.mark_count(fig) <= 60 and sum(fig.data[0].y) == counts.size
    deg = rng.integers(1, 200_000, 300_000)
    fig = charts.loglog_distribution(deg)
    assert charts.mark_count(fig) <= charts.MAX_POINTS
    # log bins: count per bin / width, so count = sum(y * width) over the bins
    xs = np.asarray(fig.data[0].x)
    edges = np.unique(np.round(np.geomspace(1, deg.max() + 1, charts.MAX_POINTS)).astype(int))
    width = np.diff(np.append(edges, deg.max() + 1))
    w = width[np.searchsorted(edges, xs)]
    assert np.sum(np.asarray(fig.data[0].y) * w) == pytest.approx(deg.size)
    fig = charts.bar([f"c{i}" for i in range(10_000)], np.arange(10_000)[::-1])
    assert charts.mark_count(fig) == 200 and "first 200 of 10,000" in fig.layout.title.text


def test_decimate_keeps_ends_and_peaks():
    x = np.arange(100_000)
    y = np.zeros(100_000)
    y[31_337] = 5.0
    y[77_000] = -3.0
    xs, ys = charts.decimate(x, y, 900)
    assert len(xs) <= 900 and xs[0] == 0 and xs[-1] == 99_999
    assert 31_337 in xs and 77_000 in xs and ys.max() == 5 and ys.min() == -3
    fig = charts.line(x, {"a": y, "b": -y})
    assert charts.mark_count(fig) <= charts.MAX_POINTS


def _big_defrag_tree(d=2 ** 12):
    """A DEFRAG tree over d features (fitted: the real structure, not a mock)."""
    from featagg_core.agglomeration.defrag import Defrag
    rng = np.random.default_rng(1)
    X = sp.random(400, d, density=0.003, format="csr", random_state=rng, dtype=np.float32)
    X.data[:] = 1
    return X, Defrag(d0=2, representation="X").fit(X)


def test_defrag_tree_figure_is_bounded_and_named_by_top_features():
    X, m = _big_defrag_tree()
    tree = m.tree_
    counts = dv.column_nnz(X)
    names = [f"w{j}" for j in range(X.shape[1])]
    fig = dv.tree_figure(tree, root=0, levels=dv.MAX_TREE_LEVELS, feature_names=names,
                         feature_counts=counts)
    tr = fig.data[0]
    assert charts.mark_count(fig) <= M and len(tr.ids) == 2 ** (dv.MAX_TREE_LEVELS + 1) - 1
    # a block's name is its two most frequent features (ties: lower index), brute force
    for node_id, text in list(zip(tr.ids, tr.labels))[:40]:
        v = int(node_id[1:])
        mem = tree.members(v)
        best = sorted(mem, key=lambda j: (-counts[j], j))[:2]
        if tree.is_leaf(v):
            assert text.startswith(f"cluster {int(tree.cluster[v])}: ")
        else:
            assert text == " · ".join(f"w{j}" for j in best)
    assert "most frequent" in tr.hovertext[0]
    # drill-down labels carry the words too
    sub = tree.children(0)[1]
    lab = dv.node_label(tree, sub, counts, names)
    assert lab.startswith(f"node {sub} · depth 1 · ") and " — w" in lab


def test_cluster_helpers_by_masks_match_slicing():
    X, m = _big_defrag_tree(2 ** 10)
    rng = np.random.default_rng(2)
    Y = sp.csr_matrix((rng.random((X.shape[0], 7)) < 0.2).astype(np.float32))
    rows = np.sort(rng.choice(X.shape[0], 250, replace=False))
    counts = dav.column_counts_of_rows(X, rows)
    assert (counts == dav.column_counts(X[rows])).all()
    c = 3
    tab = dv.cluster_table(m, c, feature_names=None, counts=counts)
    assert tab.equals(dv.cluster_table(m, c, X[rows]))
    fast = dv.cluster_top_labels(m, c, X, Y, rows=rows, k=4)
    slow = dv.cluster_top_labels(m, c, X[rows], Y[rows], k=4)
    assert fast["label"].tolist() == slow["label"].tolist()
    assert np.allclose(fast["weight"], slow["weight"])


class _FakeTreeModel:
    """The part of a fitted KTXMLC the sunburst reads (``tree_nodes``): a 10,000-label tree
    of 100 clusters × 100 labels, too big to draw at once."""

    def __init__(self, k=100, per=100):
        parent = [-1] + [0] * k + [1 + c for c in range(k) for _ in range(per)]
        N = len(parent)
        self.nodes = {"parent": np.asarray(parent), "depth": np.asarray(
            [0] + [1] * k + [2] * (k * per)),
            "label": np.asarray([-1] * (1 + k) + list(range(k * per))),
            "children": [np.arange(1, 1 + k)] + [np.arange(1 + k + c * per, 1 + k + (c + 1) * per)
                                                 for c in range(k)]
                        + [np.zeros(0, np.int64)] * (k * per),
            "n_labels": np.asarray([k * per] + [per] * k + [1] * (k * per)),
            "labels": [np.arange(k * per)] + [np.arange(c * per, (c + 1) * per)
                                              for c in range(k)]
                      + [np.asarray([j]) for j in range(k * per)]}
        assert N == 1 + k + k * per

    def tree_nodes(self, tree=0):
        return self.nodes


def test_label_tree_sunburst_draws_top_levels_then_drills_down():
    model = _FakeTreeModel()
    names = [f"tag{j}" for j in range(10_000)]
    counts = np.random.default_rng(3).integers(0, 1000, 10_000)
    fig = xv.tree_sunburst(model, 0, names, label_counts=counts)
    sb = fig.data[0]
    assert charts.mark_count(fig) <= M and len(sb.ids) == 101   # root + the 100 clusters
    assert "drill down" in fig.layout.title.text
    for i in (5, 77):
        lab = sb.labels[i]
        mem = np.arange((i - 1) * 100, i * 100)
        best = sorted(mem, key=lambda j: (-counts[j], j))[:2]
        assert lab == f"node {i}: tag{best[0]} · tag{best[1]}"
    nodes = model.tree_nodes()
    shown, complete = xv.shown_nodes(nodes, 0)
    assert not complete
    opts = xv.tree_drill_options(nodes, 0, shown)
    assert opts[0] == 0 and len(opts) == 101
    sub = xv.tree_sunburst(model, 0, names, root=7, label_counts=counts)
    assert len(sub.data[0].ids) == 101 and set(sub.data[0].labels[1:]) == \
        {f"tag{j}" for j in range(600, 700)}
    assert xv.tree_drill_options(nodes, 7, xv.shown_nodes(nodes, 7)[0]) == [0, 7]


def test_vocabulary_and_graph_figures_are_bounded():
    from featagg_app.views import graph_features as bv
    from featagg_app.views import vocabulary as vv
    from featagg_core.vocab.compressor import VocabularyCompressor
    rng = np.random.default_rng(4)
    values = rng.integers(0, 60_000, 200_000)
    labels = (rng.random(200_000) < 0.3).astype(np.int8)
    vc = VocabularyCompressor(64).fit(values, labels)
    assert charts.mark_count(vv.split_curve_figure(vc)) <= M
    n = 3000
    A = sp.random(n, n, density=0.01, format="csr", random_state=rng)
    A = ((A + A.T) > 0).astype(np.float32).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    nodes = bv.node_sample(A, seed=0)
    fig = bv.node_figure(A, nodes, rng.integers(0, 4, n))
    assert charts.mark_count(fig) <= M


def test_paging_and_large_text():
    df = pd.DataFrame({"a": np.arange(103)})
    assert display.page_of(df, 1, 25)["a"].tolist() == list(range(25))
    assert display.page_of(df, 5, 25)["a"].tolist() == [100, 101, 102]
    assert display.page_of(df, 99, 25)["a"].tolist() == [100, 101, 102]
    fig = charts.count_histogram(np.arange(10), title="t")
    big = charts.for_display(fig, large=True)
    assert big is not fig and big.layout.font.size == charts.LARGE_FONT
    assert big.layout.height > fig.layout.height and fig.layout.font.size is None
    assert charts.for_display(fig, large=False) is fig
