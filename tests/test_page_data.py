"""Data page: its statistics/figure builders against brute force, and AppTest runs of the
page on each kind of data (multi-label, graph with and without classes, table)."""
import os
import re

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no background JIT warm-up in AppTest runs


import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from featagg_app.views import charts
from featagg_app.views import data as dv
from featagg_core.data import CategoricalData, GraphData, MultiLabelData
from page_util import column_formats, widget



def _random_ml(n=40, d=30, L=12, seed=0, test=True):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    # power-law-ish labels: label j kept with probability ~ 1/(j+1)
    P = rng.random((n, L)) < (0.9 / (np.arange(L) + 1))[None, :]
    Y = sp.csr_matrix(P.astype(np.float32))
    Xt, Yt = (X[:7], Y[:7]) if test else (None, None)
    return MultiLabelData(X=X, Y=Y, X_test=Xt, Y_test=Yt,
                          feature_names=[f"word{i}" for i in range(d)],
                          label_names=[f"tag{j}" for j in range(L)], name="random")


# ---------------------------------------------------------------------------
# statistics against brute force
# ---------------------------------------------------------------------------

def test_counts_match_dense_brute_force():
    data = _random_ml()
    Xd, Yd = data.X.toarray(), data.Y.toarray()
    assert np.array_equal(dv.row_counts(data.X), (Xd != 0).sum(1))
    assert np.array_equal(dv.column_counts(data.Y), (Yd != 0).sum(0))
    # explicit zeros are not counted as occurrences
    M = sp.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([0, 1, 1]), np.array([0, 2, 3])),
                      shape=(2, 3))
    assert dv.column_counts(M).tolist() == [1, 1, 0]


def test_multilabel_summary_brute_force():
    data = _random_ml()
    s = dv.multilabel_summary(data)
    Xd, Yd = data.X.toarray(), data.Y.toarray()
    n, d = Xd.shape
    assert (s["n"], s["n_test"], s["d"], s["L"]) == (40, 7, 30, 12)
    assert s["nnz"] == int((Xd != 0).sum())
    assert s["labels_per_point"] == pytest.approx((Yd != 0).sum(1).mean())
    assert s["features_per_point"] == pytest.approx((Xd != 0).sum(1).mean())
    assert s["density"] == pytest.approx((Xd != 0).sum() / (n * d))
    freq = (Yd != 0).sum(0)
    assert s["tail_labels"] == int(((freq > 0) & (freq <= dv.TAIL_MAX_POINTS)).sum())
    assert s["unused_labels"] == int((freq == 0).sum())
    assert (s["max_label_points"], s["min_label_points"]) == (freq.max(), freq.min())
    assert s["median_label_points"] == np.median(freq)


def test_head_size_hand_cases():
    # 10 + 5 + 3 + 2 = 20 assignments; half (10) is reached by the first label alone
    assert dv.head_size(np.array([2, 10, 3, 5])) == 1
    # 4 4 4 4: half = 8 needs two labels
    assert dv.head_size(np.array([4, 4, 4, 4])) == 2
    assert dv.head_size(np.array([3, 3, 3, 0])) == 2   # 9 total, 4.5 needs two
    assert dv.head_size(np.zeros(5)) == 0


def test_top_items_order_names_and_ties():
    counts = np.array([3, 7, 7, 1, 0])
    df = dv.top_items(counts, ["a", "b", "c", "d", "e"], k=3, what="label", total=10)
    assert df["label"].tolist() == ["b", "c", "a"]          # tie 7/7: lower index first
    assert df["points"].tolist() == [7, 7, 3]
    assert df["share of points"].tolist() == pytest.approx([0.7, 0.7, 0.3])
    assert dv.top_items(counts, None, k=2)["label"].tolist() == ["#1", "#2"]


def test_count_histogram_bins_cover_every_point():
    rng = np.random.default_rng(1)
    small = rng.integers(0, 8, 500)
    fig = charts.count_histogram(small)
    assert sum(fig.data[0].y) == 500
    assert list(fig.data[0].x) == list(range(small.min(), small.max() + 1))
    wide = rng.integers(0, 10_000, 3000)
    fig = charts.count_histogram(wide, max_bins=60)
    assert sum(fig.data[0].y) == 3000 and len(fig.data[0].y) <= 60


def test_rank_frequency_is_sorted_loglog_and_downsampled():
    rng = np.random.default_rng(2)
    counts = rng.zipf(1.6, 50_000).clip(max=10**6)
    fig = charts.rank_frequency(counts, what="label", head_size=dv.head_size(counts))
    xs = np.concatenate([np.asarray(t.x) for t in fig.data])
    ys = np.concatenate([np.asarray(t.y) for t in fig.data])
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert len(xs) <= charts.MAX_POINTS + 1                 # never 50k points to the browser
    assert xs[0] == 1 and xs[-1] == np.count_nonzero(counts)  # first and last rank kept
    assert np.all(np.diff(ys) <= 0)                         # frequencies fall with rank
    assert ys[0] == counts.max()
    assert len(fig.data) == 2                               # head and tail traces


def test_log_ticks_readable():
    assert charts.log_ticks(1, 5000) == [1, 10, 100, 1000]
    assert charts.log_ticks(29, 700) == [50, 100, 200, 500]
    fig = charts.rank_frequency(np.array([700, 300, 29]))
    assert list(fig.layout.yaxis.tickvals) == [50, 100, 200, 500]
    assert list(fig.layout.xaxis.tickvals) == [1, 2]


def test_graph_summary_against_networkx():
    nx = pytest.importorskip("networkx")
    G = nx.gnm_random_graph(60, 150, seed=3)
    G.add_node(60)                                           # one isolated node
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(61), dtype=np.float32))
    y = np.r_[np.arange(60) % 4, -1]
    X = sp.random(61, 9, density=0.2, format="csr", random_state=0, dtype=np.float32)
    s = dv.graph_summary(GraphData(A=A, X=X, y=y))
    assert s["nodes"] == 61 and s["edges"] == G.number_of_edges()
    assert s["mean_degree"] == pytest.approx(2 * G.number_of_edges() / 61)
    assert s["max_degree"] == max(dict(G.degree()).values())
    assert s["isolated"] == nx.number_of_isolates(G)
    assert s["classes"] == 4 and s["labelled"] == 60
    sizes = dv.class_sizes(y, ["a", "b", "c", "d"])
    assert dict(zip(sizes["class"], sizes["nodes"])) == {"a": 15, "b": 15, "c": 15, "d": 15}
    # degree plot: node counts per degree equal networkx's degree histogram
    fig = dv.degree_figure(A)
    hist = nx.degree_histogram(G)
    expect = {k: v for k, v in enumerate(hist) if k > 0 and v > 0}
    assert dict(zip(fig.data[0].x.tolist(), fig.data[0].y.tolist())) == expect


def test_table_statistics_hand_case():
    table = pd.DataFrame({"city": ["a", "b", "a", "c", "a", None],
                          "os": ["x", "x", "x", "x", "y", "y"]})
    t = CategoricalData(table=table, labels=np.array([1, 0, 1, 0, 0, 1], np.int8),
                        label_name="click")
    s = dv.table_summary(t)
    assert (s["rows"], s["columns"], s["positives"]) == (6, 2, 3)
    v = dv.vocabulary_sizes(t)
    assert dict(zip(v["column"], v["values"])) == {"city": 4, "os": 2}   # None is a value
    top = dv.top_values(t, "city")
    assert top["value"].tolist()[0] == "a" and top["rows"].tolist()[0] == 3
    assert top.set_index("value").loc["a", "positive rate"] == pytest.approx(2 / 3)
    assert top.set_index("value").loc["<missing>", "rows"] == 1


# ---------------------------------------------------------------------------
# the page (AppTest)
# ---------------------------------------------------------------------------

def _run_page_with(app_for, data):
    return app_for("data", data, timeout=120).run()


def _metrics(at):
    return {m.label: m.value for m in at.metric}


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_page_multilabel_shows_sizes_plots_and_names(app_for):
    data = _random_ml()
    at = _run_page_with(app_for, data)
    _ok(at)
    m = _metrics(at)
    assert m["Points n (train)"] == "40" and m["Test points"] == "7"
    assert m["Features d"] == "30" and m["Labels L"] == "12"
    assert m["Non-zeros (nnz)"] == f"{data.X.nnz:,}"
    kinds = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(kinds) >= 3                                    # label law + two histograms
    assert "log" in kinds[0] and "Label frequency" in kinds[0]
    top = at.dataframe[0].value
    assert top["label"].iloc[0] == "tag0"                     # the most frequent label by name
    # shares shown in percent of the 40 training points (formatted "%.2f %%" on the page)
    assert top["share of points"].tolist() == pytest.approx(
        (100 * top["points"] / 40).tolist())
    assert not at.info                                        # no fallback notice


def test_page_graph_with_and_without_classes(app_for):
    nx = pytest.importorskip("networkx")
    G = nx.path_graph(12)
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, dtype=np.float32))
    X = sp.identity(12, format="csr", dtype=np.float32)
    at = _run_page_with(app_for, GraphData(A=A, X=X, y=np.arange(12) % 3, name="path"))
    _ok(at)
    m = _metrics(at)
    assert m["Nodes"] == "12" and m["Edges"] == "11" and m["Classes"] == "3"
    assert len(at.get("plotly_chart")) >= 2
    feats = next(df.value for df in at.dataframe if "share of nodes" in df.value.columns)
    assert feats["share of nodes"].tolist() == pytest.approx([100 / 12] * len(feats))
    at = _run_page_with(app_for, GraphData(A=A, X=X, y=None, name="path-no-classes"))
    _ok(at)
    assert _metrics(at)["Classes"] == "—"
    assert any("no node classes" in i.value for i in at.info)


def test_page_table_vocabulary_and_top_values(app_for):
    table = pd.DataFrame({"city": list("abacab"), "os": list("xxxxyy")})
    at = _run_page_with(app_for, CategoricalData(table=table,
                                        labels=np.array([1, 0, 1, 0, 0, 1], np.int8),
                                        label_name="click", name="clicks"))
    _ok(at)
    m = _metrics(at)
    assert m["Rows"] == "6" and m["Positives"] == "3" and m["Columns"] == "2"
    top = at.dataframe[0].value
    assert top["value"].iloc[0] == "a" and top["rows"].iloc[0] == 3
    # shown in percent, one decimal on every row: "a" is 2 of 3 positives
    assert top["positive rate"].iloc[0] == pytest.approx(100 * 2 / 3)
    widget(at.selectbox, "data_top_values_column").set_value("os").run()
    _ok(at)
    shown = at.dataframe[0].value
    assert shown["value"].tolist() == ["x", "y"]
    assert shown["positive rate"].tolist() == pytest.approx([50.0, 50.0])   # 2/4, 1/2


def test_every_count_column_shows_thousands_separators(app_for):
    """Counts in the tables (points, nodes, rows) use the browser's thousands separator,
    as the cards above them do ("29,170", not "29170"); shares keep two decimals."""
    nx = pytest.importorskip("networkx")
    A = sp.csr_matrix(nx.to_scipy_sparse_array(nx.path_graph(12), dtype=np.float32))
    table = pd.DataFrame({"city": list("abacab")})
    cases = [(_random_ml(), {"points": "localized", "share of points": "%.2f %%"}),
             (GraphData(A=A, X=sp.identity(12, format="csr", dtype=np.float32),
                        y=np.arange(12) % 3, name="path"),
              {"nodes": "localized", "share of nodes": "%.2f %%"}),
             (CategoricalData(table=table, labels=np.array([1, 0, 1, 0, 0, 1], np.int8),
                              label_name="click", name="clicks"),
              {"rows": "localized", "positive rate": "%.1f %%"})]
    for data, want in cases:
        at = _run_page_with(app_for, data)
        _ok(at)
        assert at.dataframe, data.name
        for element in at.dataframe:
            shown = column_formats(element)
            assert {c: shown.get(c) for c in want} == want, (data.name, shown)


# ---------------------------------------------------------------------------
# data health, first on the page
# ---------------------------------------------------------------------------

def _faulty_ml():
    """60 training rows, row 1 a copy of row 0 (features and labels), the 7 test rows
    copies of training rows 10..16: a duplicate and a train/test overlap, known answers."""
    d = _random_ml(n=60, test=False)
    X, Y = d.X.tolil(), d.Y.tolil()
    X[1], Y[1] = X[0], Y[0]
    X, Y = X.tocsr(), Y.tocsr()
    return MultiLabelData(X=X, Y=Y, X_test=X[10:17], Y_test=Y[10:17],
                          feature_names=d.feature_names, label_names=d.label_names,
                          name="faulty")


_SEV = re.compile(r"^:(red|orange|blue)\[\*\*(error|warning|info)\*\*\] · ")


def _alert_expanders(at):
    """(severity, label) of the health expanders, in page order."""
    return [(m.group(2), e.label) for e in at.expander for m in [_SEV.match(e.label)] if m]


def test_page_shows_the_health_alerts_first_most_serious_first(app_for):
    from featagg_core.health import check
    from featagg_app import state  # noqa: F401  (the page's split: the dataset's own test)
    data = _faulty_ml()
    at = _run_page_with(app_for, data)
    _ok(at)
    found = _alert_expanders(at)
    sev, labels = [f[0] for f in found], [f[1] for f in found]
    order = {"error": 0, "warning": 1, "info": 2}
    assert sev == sorted(sev, key=order.get) and sev[0] == "error"
    kinds = {a.type: a for a in check(data, None, label_errors=False)}
    assert {"duplicate_rows", "train_test_overlap"} <= set(kinds)
    text = " ".join(labels)
    assert "error" in labels[0] and kinds["train_test_overlap"].severity == "error"
    # the overlap: every one of the 7 test rows, named with its training row in the page
    assert kinds["train_test_overlap"].count == 7
    bodies = " ".join(m.value for m in at.markdown)
    assert "What to do" in bodies and "Examples" in bodies
    # shown before the statistics: the first subheader of the page is the health section
    assert at.subheader[0].value == "Data health"
    for a in kinds.values():                          # every alert, in its own words
        assert any(a.message[:25] in lab for lab in labels), a.message
    # the label errors are looked for on the job runner when asked
    from page_util import click
    assert any(b.label == "Look for label errors" for b in at.button)
    click(at, "data_health_label_errors")
    _ok(at)
    cap = " ".join(c.value for c in at.caption)
    assert "Label errors looked for" in cap
    assert not any(b.label == "Look for label errors" for b in at.button)
