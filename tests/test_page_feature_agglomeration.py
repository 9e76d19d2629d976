"""Feature agglomeration page: its view helpers against brute force, and AppTest runs."""
import io
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from page_util import click, column_formats, ok, runs, widget
from featagg_app.views import agglomeration as dv
from featagg_core.agglomeration.defrag import Defrag


def _fitted(d=60, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(80, d, density=0.1, format="csr", random_state=rng, dtype=np.float32)
    Y = sp.csr_matrix((rng.random((80, 6)) < 0.3).astype(np.float32))
    return X, Y, Defrag(d0=4).fit(X, Y)


# ------------------------------------------------------------------ helpers
def test_tree_figure_levels_and_drill_down():
    X, Y, m = _fitted()
    t = m.tree_
    fig = dv.tree_figure(t, root=0, levels=2)
    tr = fig.data[0]
    assert tr.type == "icicle" and len(tr.ids) == 7  # root + 2 + 4
    assert list(tr.values)[0] == 60
    sub = t.children(0)[0]
    fig2 = dv.tree_figure(t, root=sub, levels=1, kind="sunburst")
    assert fig2.data[0].type == "sunburst" and len(fig2.data[0].ids) == 3
    assert fig2.data[0].parents[0] == ""
    opts = dv.drill_options(t, sub, 2)
    assert opts[0] == 0 and opts[1] == sub  # ancestor to climb back, then the root shown
    assert all(not t.is_leaf(v) for v in opts)
    with pytest.raises(ValueError, match="kind"):
        dv.tree_figure(t, kind="pie")
    assert dv.node_label(t, 0).startswith("root · 60 features")
    leaf = t.leaves()[3]
    assert dv.node_label(t, leaf).startswith("cluster 3 ")


def test_size_histogram_counts():
    sizes = np.array([7, 8, 7, 7, 3])
    df = dv.size_counts(sizes)
    assert df.to_dict("list") == {"cluster size": [3, 7, 8], "clusters": [1, 3, 1]}
    fig = dv.size_histogram(sizes, d0=8)
    assert list(fig.data[0].x) == [3, 7, 8] and list(fig.data[0].y) == [1, 3, 1]


def test_cluster_table_labels_and_exports():
    X, Y, m = _fitted()
    names = [f"w{j}" for j in range(60)]
    c = 5
    members = np.flatnonzero(m.labels_ == c)
    tab = dv.cluster_table(m, c, X, names)
    assert sorted(tab["feature"]) == members.tolist()
    Xd = X.toarray()
    for _, row in tab.iterrows():
        assert row["points"] == int((Xd[:, row["feature"]] != 0).sum())
        assert row["name"] == f"w{row['feature']}"
    top = dv.cluster_top_labels(m, c, X, Y, [f"t{j}" for j in range(6)], k=3)
    w = Xd[:, members].sum(1) @ Y.toarray()
    best = np.argsort(-w, kind="stable")[:3]
    assert top["label"].tolist() == [f"t{j}" for j in best if w[j] > 0]
    csv = pd.read_csv(io.BytesIO(dv.assignment_csv(m, names)))
    assert csv["cluster"].tolist() == m.labels_.tolist() and csv["name"][3] == "w3"
    js = json.loads(dv.clusters_json(m, names))
    assert js["n_clusters"] == m.n_clusters_
    assert js["clusters"][c]["features"] == members.tolist()
    assert dv.find_feature(names, "w1")[:3] == [1, 10, 11]
    assert dv.find_feature(names, " W5 ") == [5, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]
    assert dv.find_feature(["xab", "ab", "abc"], "ab") == [1, 0, 2]
    assert dv.find_feature(names, "") == [] and dv.find_feature(None, "w") == []
    assert [dv.short_number(v) for v in (999, 9999, 334_668, 12_345_678, 2.5e9)] == \
        ["999", "9,999", "335k", "12.3M", "2.5G"]
    Xa = m.transform(X)
    red = dv.reduction_summary({"features_after": Xa.shape[1], "nnz_before": X.nnz,
                                "nnz_after": Xa.nnz}, 60)
    assert red["d"] == 60 and red["K"] == m.n_clusters_ and red["nnz_before"] == X.nnz
    assert red["nnz_ratio"] == pytest.approx(X.nnz / Xa.nnz)


def test_error_figure_names_the_runs():
    fig = dv.error_figure({"DEFRAG": 0.3, "random balanced": 0.5},
                          {"DEFRAG": "#1 DEFRAG-XY d0=8", "random balanced": "#2 random"})
    bar = fig.data[0]
    assert list(bar.x) == [0.3, 0.5] and list(bar.y) == ["DEFRAG", "random balanced"]
    assert "#1 DEFRAG-XY d0=8" in bar.hovertext[0]


# ------------------------------------------------------------------ the page
def _agglomeration(at):
    return [r for r in runs(at) if r.kind == "agglomeration"]


def _baselines(at):
    return {r.spec["feature_clustering"]["kind"]: r for r in runs(at)
            if r.kind == "feature_clustering"}


def test_page_runs_on_default_sample_and_keeps_the_model(app_for):
    from featagg_core.agglomeration.defrag import clustering_error, feature_representation
    at = app_for("feature_agglomeration", timeout=180)
    at.run()
    assert not at.exception
    assert at.title[0].value == "Feature agglomeration"
    assert any("How it works" in e.label for e in at.expander)
    assert any("press **Run**" in i.value for i in at.info)
    assert any("own split" in c.value for c in at.caption)      # says which split
    click(at, "fa_run")
    ok(at)
    run = _agglomeration(at)[-1]
    m = run.pipeline.defrag
    from featagg_core.data.samples import load_sample
    bib = load_sample("bibtex")
    assert m.n_clusters_ == 256 and m.representation == "XY"  # 1836 features, d0 = 8
    metrics = {mt.label: mt.value for mt in at.metric}
    assert metrics["Clusters K"] == "256"
    assert metrics["Dimensions"] == f"{bib.X.shape[1]:,} → 256"
    assert run.name == "DEFRAG-XY d0=8" and run.metrics["test"]["clusters"] == 256
    # fitted on the training rows: the same as Defrag on them, by hand
    ref = Defrag(d0=8, representation="XY").fit(bib.X, bib.Y)    # Bibtex's own split:
    np.testing.assert_array_equal(m.labels_, ref.labels_)        # train = the X part
    # its error is measured on the test rows' representation, by hand
    R, _ = feature_representation(bib.X_test, bib.Y_test, "XY")
    assert run.metrics["test"]["clustering_error"] == pytest.approx(
        clustering_error(R, m.labels_, 256))
    # the baselines ran as their own runs on the same split; DEFRAG beats random balanced
    base = _baselines(at)
    assert set(base) == {"random_balanced", "kmeans"}
    assert all(r.split_id == run.split_id for r in base.values())
    assert run.metrics["test"]["clustering_error"] < \
        base["random_balanced"].metrics["test"]["clustering_error"]
    labels = [b.label for b in at.get("download_button")]
    assert "Pipeline (featagg artifact)" in labels
    # cluster inspector: searching a word selects its cluster
    names = [str(w) for w in bib.feature_names]
    j = next(names.index(w) for w in ("learning", "network", names[0]) if w in names)
    widget(at.text_input, "fa_query").input(str(bib.feature_names[j])).run()
    assert not at.exception
    c = int(m.labels_[j])
    assert any(ni.value == c for ni in at.number_input if ni.key.startswith("fa_cluster"))
    tables = [df.value for df in at.dataframe]
    assert any(str(bib.feature_names[j]) in t.get("name", pd.Series([])).tolist()
               for t in tables)
    # its point counts show thousands separators, as the cards
    inspector = next(df for df in at.dataframe if "points" in df.value.columns)
    assert column_formats(inspector)["points"] == "localized"


def test_page_x_representation_small_d0_and_drill_down(app_for):
    at = app_for("feature_agglomeration", timeout=180)
    at.run()
    widget(at.radio, "fa_rep").set_value("X")
    widget(at.slider, "fa_d0").set_value(64)
    widget(at.checkbox, "fa_km").uncheck()
    click(at, "fa_run")
    ok(at)
    m = _agglomeration(at)[-1].pipeline.defrag
    assert m.representation == "X" and m.d0 == 64 and m.cluster_sizes_.max() <= 64
    assert "kmeans" not in _baselines(at)
    # drill down into the root's right child
    right = m.tree_.children(0)[1]
    sel = [s for s in at.selectbox if s.key.startswith("fa_drill_")][0]
    sel.set_value(right).run()
    assert not at.exception
    assert at.session_state["featagg.pages"]["Feature agglomeration"]["root"] == right
    sel = [s for s in at.selectbox if s.key.startswith("fa_drill_")][0]
    assert sel.value == right


def test_page_on_a_tiny_uploaded_dataset_with_one_cluster(app_for):
    from featagg_core.data import MultiLabelData
    rng = np.random.default_rng(3)
    X = sp.random(30, 6, density=0.4, format="csr", random_state=rng, dtype=np.float32)
    Y = sp.csr_matrix((rng.random((30, 3)) < 0.4).astype(np.float32))
    data = MultiLabelData(X=X, Y=Y, feature_names=[f"f{j}" for j in range(6)],
                          label_names=["a", "b", "c"], name="tiny.txt")
    at = app_for("feature_agglomeration", data, timeout=120)
    at.run()
    click(at, "fa_run")
    ok(at)
    m = _agglomeration(at)[-1].pipeline.defrag
    assert m.n_clusters_ == 1 and m.labels_.tolist() == [0] * 6  # d = 6 <= d0 = 8
    assert {mt.label: mt.value for mt in at.metric}["Dimensions"] == "6 → 1"
    assert _baselines(at) == {}                                   # nothing to compare
    assert any("random 20 % test split" in c.value for c in at.caption)
    tab = [df.value for df in at.dataframe][0]
    assert sorted(tab["name"]) == [f"f{j}" for j in range(6)]


def test_page_baseline_buttons_queue_their_own_runs(app_for):
    # the baselines after a DEFRAG run: random balanced queued by itself, Ward and k-means
    # on a press of their buttons, each collected into the registry once it is done
    from featagg_core.data import MultiLabelData
    rng = np.random.default_rng(5)
    X = sp.random(120, 64, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Y = sp.csr_matrix((rng.random((120, 5)) < 0.3).astype(np.float32))
    data = MultiLabelData(X=X, Y=Y, name="small.txt")
    at = app_for("feature_agglomeration", data, timeout=120)
    at.run()
    widget(at.checkbox, "fa_km").uncheck()
    click(at, "fa_run")
    ok(at)
    K = _agglomeration(at)[-1].pipeline.defrag.n_clusters_
    assert set(_baselines(at)) == {"random_balanced"}
    assert sum(c.value.startswith("Done: ") for c in at.caption) == 1
    assert at.button(key="fa_base_ward").label.startswith("Run (≈ ")
    click(at, "fa_base_ward")
    ok(at)
    base = _baselines(at)
    assert set(base) == {"random_balanced", "ward"}
    assert base["ward"].spec["feature_clustering"]["n_clusters"] == K
    assert sum(c.value.startswith("Done: ") for c in at.caption) == 2
    click(at, "fa_base_kmeans")
    ok(at)
    assert set(_baselines(at)) == {"random_balanced", "ward", "kmeans"}
    assert len([r for r in runs(at) if r.kind == "feature_clustering"]) == 3
