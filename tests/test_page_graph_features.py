"""Graph feature selection page: its table/figure builders against brute force, and AppTest
runs of the page on the default Cora sample."""
import numpy as np
import pytest
import scipy.sparse as sp

from page_util import click, column_formats, runs, settle, widget
from featagg_app.views import graph_features as bv
from featagg_core.graph.bmgufs import BMGUFS


def _graph(seed=0, n=150, k=3, f=40, p_in=0.2, p_out=0.01):
    rng = np.random.default_rng(seed)
    lab = rng.permutation(np.arange(n) % k)
    P = np.where(lab[:, None] == lab[None, :], p_in, p_out)
    up = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_matrix((up | up.T).astype(float))
    fb = np.arange(f) % k
    X = (rng.random((n, f)) < np.where(lab[:, None] == fb[None, :], 0.4, 0.05)).astype(float)
    X[:, -10:] = rng.random((n, 10)) < 0.15
    return A, sp.csr_matrix(X), lab


@pytest.fixture(scope="module")
def fitted():
    A, X, lab = _graph()
    m = BMGUFS(n_blocks=3, n_candidates=3, max_iter=40, gamma=1.0).fit(A, X)
    return A, X, lab, m


def test_candidates_table_and_rre_figure(fitted):
    A, X, lab, m = fitted
    T = bv.candidates_table(m)
    assert list(T["candidate"]) == [0, 1, 2]
    np.testing.assert_allclose(T["RRE"], [c.rre_ for c in m.candidates_])
    assert (T["used"] == "✓").sum() == 1 and T.loc[m.candidate_index_, "used"] == "✓"
    for c, bm in enumerate(m.candidates_):
        sizes = [int(s) for s in T.loc[c, "block sizes"].split(", ")]
        assert sum(sizes) == A.shape[0]
        assert sizes == np.bincount(bm.labels_, minlength=3).tolist()
    fig = bv.rre_figure(m)
    np.testing.assert_allclose(fig.data[0].y, T["RRE"])


def test_heatmaps_and_convergence(fitted):
    A, X, lab, m = fitted
    figM = bv.image_matrix_figure(m)
    np.testing.assert_allclose(np.asarray(figM.data[0].z), m.block_model_.M_)
    figS = bv.similarity_figure(m)
    P, Q = (np.asarray(t.z) for t in figS.data)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_allclose(Q.sum(1), 1.0)
    figC = bv.convergence_figure(m.history_)
    assert len(figC.data) == 3
    np.testing.assert_allclose(figC.data[0].y, m.history_["L_b"])
    np.testing.assert_allclose(figC.data[2].y, m.history_["nnz"])


def test_top_features_table_and_message(fitted):
    A, X, lab, m = fitted
    idx, msg = bv.select_with_message(m, 5)
    assert msg is None and len(idx) == 5
    names = [f"w{j}" for j in range(X.shape[1])]
    T = bv.top_features_table(m, idx, names, X)
    assert list(T["rank"]) == [1, 2, 3, 4, 5]
    assert list(T["name"]) == [names[j] for j in idx]
    assert np.all(np.diff(T["weight r"]) <= 0)
    np.testing.assert_array_equal(T["nodes with it"], (X.toarray()[:, idx] > 0).sum(0))
    big = BMGUFS(n_blocks=3, n_candidates=1, max_iter=100, gamma=5.0).fit(A, X)
    idx2, msg2 = bv.select_with_message(big, X.shape[1])
    assert msg2 is not None and "nnz(r) < d" in msg2
    assert sorted(idx2) == list(range(X.shape[1]))   # d features; the warning says how


def test_comparison_table_and_figure_from_the_core_comparison(fitted):
    """The page draws experiment.feature_selection_comparison's result: its table and
    figure show exactly those numbers (the comparison itself is tested with the core)."""
    from featagg_core.data import GraphData
    from featagg_core.experiment import feature_selection_comparison, make_split
    from featagg_core.graph.evaluation import evaluate_selection
    from featagg_core.graph import baselines as fsb
    A, X, lab, m = fitted
    g = GraphData(A=A, X=X, y=lab, name="t")
    split = make_split(g, 0.3)
    cmp = feature_selection_comparison(g, split, ds=(5, 20, 1000), n_seeds=2)
    assert cmp["ds"] == [5, 20]                       # d > f dropped
    # Laplacian score of the training subgraph, k-means on the test nodes: by hand
    tr, te = split.train, split.test
    order = fsb.rank_features(fsb.laplacian_score(X[tr], A[tr][:, tr]), False)
    exp = evaluate_selection(X[te], lab[te], order[:5], n_seeds=2)
    got = cmp["methods"]["Laplacian score (graph)"][5]
    assert got["acc_mean"] == pytest.approx(exp["acc_mean"])
    T = bv.comparison_table(cmp, "acc")
    assert set(T.columns) == {"d=5", "d=20"} and "all features" in T.index
    assert T.loc["Laplacian score (graph)", "d=5"].startswith(f"{exp['acc_mean']:.3f} ±")
    fig = bv.acc_nmi_figure(cmp)
    assert len(fig.data) == 2 * len(cmp["methods"])


def test_node_sample_and_figure():
    A, X, lab = _graph(1, n=2000, p_in=0.005, p_out=0.0005)      # mean degree ~ 4
    nodes = bv.node_sample(A, 200, seed=0)
    assert nodes.size == 200 and np.unique(nodes).size == 200
    sub = A[nodes][:, nodes]
    # snowball samples keep edges: far more than a uniform sample would
    rng = np.random.default_rng(0)
    uni = np.sort(rng.choice(2000, 200, replace=False))
    assert sub.nnz > 2 * A[uni][:, uni].nnz
    fig = bv.node_figure(A, nodes, lab, lab, ["a", "b", "c"])
    pts = sum(len(t.x) for t in fig.data[1:])
    assert pts == 200
    assert all("class" in t.text[0] for t in fig.data[1:])
    small = bv.node_sample(A[:50][:, :50], 200)
    np.testing.assert_array_equal(small, np.arange(50))


# ------------------------------------------------------------------ the page (AppTest)
def _app(app_for, data=None):
    return app_for("graph_features", data, timeout=240)


def test_page_runs_on_the_default_sample_and_switches_candidate(app_for):
    at = _app(app_for)
    at.run()
    assert not at.exception
    assert any("Cora" in i.value for i in at.info)
    assert any("Run BMGUFS" in i.value for i in at.info)
    assert any("random 20 % test split" in c.value for c in at.caption)
    widget(at.number_input, "gf_cand").set_value(2)
    widget(at.number_input, "gf_iter").set_value(25)
    widget(at.number_input, "gf_d").set_value(2000)        # clipped to f = 1433
    at.run()
    click(at, "gf_run")
    assert not at.exception, at.exception
    cards = {m.label: m.value for m in at.metric}
    assert cards["RRE of the block model"].startswith("0.99")
    assert int(cards["Non-zero weights (of 1,433)"].replace(",", "")) <= 1433
    assert len(at.dataframe) >= 2                      # candidates + top features
    top = next(df for df in at.dataframe if "nodes with it" in df.value.columns)
    assert column_formats(top)["nodes with it"] == "localized"   # thousands separators
    run = runs(at)[-1]
    assert run.name.startswith("BMGUFS") and "ACC" in run.metrics["test"]
    model = run.pipeline.selector
    assert len(model.candidates_) == 2
    # Cora is sparse: every block model fits poorly, and the page says so once (the run's
    # note repeats the warning; the section of the selected features leaves it out)
    assert model.fit_warning_ and model.fit_warning_ in run.message
    assert sum("fits poorly" in w.value for w in at.warning) == 1
    # fitted on the training nodes' subgraph only
    assert model.block_model_.labels_.shape == (run.split.train.size,)
    other = 1 - model.candidate_index_
    widget(at.selectbox, "gf_candidate").set_value(other)
    settle(at)
    assert not at.exception
    assert runs(at)[-1].pipeline.selector.candidate_index_ == other
    assert len(runs(at)) == 2


def test_page_warns_when_gamma_leaves_fewer_than_d_and_compares(app_for):
    at = _app(app_for)
    at.run()
    widget(at.number_input, "gf_cand").set_value(1)
    widget(at.number_input, "gf_gamma").set_value(4.0)
    widget(at.number_input, "gf_iter").set_value(200)
    widget(at.number_input, "gf_d").set_value(600)
    at.run()
    click(at, "gf_run")
    assert not at.exception, at.exception
    # γ = 4 leaves fewer than 600 weights: the page lowers γ as BMGUFS.select(d) does
    assert any("gamma lowered from 4" in w.value for w in at.warning)
    assert len(runs(at)[-1].pipeline.selected_) == 600
    widget(at.number_input, "gf_seeds").set_value(1)
    at.run()
    click(at, "gf_compare_btn")
    assert not at.exception, at.exception
    assert len(at.tabs) == 2
    texts = " ".join(str(df.value.index.tolist()) for df in at.dataframe)
    assert "Laplacian score (graph)" in texts and "all features" in texts


def test_page_on_an_uploaded_graph_without_classes_shows_feature_names(app_for):
    import dataclasses

    from featagg_core.data.synthetic import make_attributed_sbm
    g = make_attributed_sbm(200, 3, p_in=0.1, p_out=0.01, n_informative=9, n_noise=21,
                            random_state=2)
    names = [f"word_{j}" for j in range(g.X.shape[1])]
    g = dataclasses.replace(g, y=None, feature_names=names, name="my_graph.graphml")
    at = _app(app_for, g)
    at.run()
    assert not at.exception
    assert widget(at.number_input, "gf_k").value == 6          # no classes: default k
    widget(at.number_input, "gf_k").set_value(3)
    widget(at.number_input, "gf_cand").set_value(2)
    widget(at.number_input, "gf_gamma").set_value(0.5)
    widget(at.number_input, "gf_d").set_value(5)
    at.run()
    click(at, "gf_run")
    assert not at.exception, at.exception
    top = next(df.value for df in at.dataframe if "name" in df.value.columns)
    assert top["name"].tolist() == [names[j] for j in top["feature"]]
    assert any("no classes" in i.value for i in at.info)
    run = runs(at)[-1]
    assert "ACC" not in run.metrics["test"] and run.dataset_name == "my_graph.graphml"
