"""Widgets tied to their dataset (issue 31): on every page, a second dataset loaded while
the page is open gives every dataset-dependent widget the value the new data calls for,
whatever was set on the first one; and the runs' names say what ran (settings off their
defaults, k and where it came from, one flat tree).

The expected values come from the data (its classes, labels, columns, features), not from
the page."""
import dataclasses

import numpy as np
import pytest

from page_util import click, ok, runs, switch_dataset, widget
from featagg_app.keys import data_key
from featagg_core.data import CategoricalData, MultiLabelData
from featagg_core.data.samples import load_sample
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)


def _classes(g) -> int:
    y = np.asarray(g.y)
    return int(np.unique(y[y >= 0]).size)


@pytest.fixture(scope="module")
def graph17():
    g = make_attributed_sbm(340, 17, p_in=0.2, p_out=0.004, n_informative=34, n_noise=16,
                            random_state=3)
    return dataclasses.replace(g, name="seventeen.graphml")


def test_graph_features_k_follows_the_new_graph(app_for, graph17):
    """Graph features open on the bundled Cora (7 classes); a 17-class graph is uploaded:
    the blocks box says 17 (it said 7 and the run said "k = 7 blocks (given)")."""
    cora = load_sample("cora")
    at = app_for("graph_features").run()              # no dataset picked: Cora
    ok(at)
    assert widget(at.number_input, "gf_k").value == _classes(cora) == 7
    # settings made on Cora, each of them a dataset-dependent one
    widget(at.number_input, "gf_k").set_value(5)
    widget(at.number_input, "gf_d").set_value(300)
    widget(at.number_input, "gf_cand").set_value(2)
    widget(at.checkbox, "gf_k_auto").check()
    at.run()
    ok(at)
    switch_dataset(at, graph17).run()
    ok(at)
    f = graph17.X.shape[1]
    k = widget(at.number_input, "gf_k")
    assert k.key == data_key("gf_k", graph17)
    assert k.value == _classes(graph17) == 17
    assert widget(at.number_input, "gf_d").value == min(64, f)
    assert widget(at.number_input, "gf_cand").value == 10
    assert widget(at.checkbox, "gf_k_auto").value is False
    # a run with the box's k: the name says k = 17 and the settings off their defaults
    widget(at.number_input, "gf_d").set_value(8)
    widget(at.number_input, "gf_cand").set_value(1)
    widget(at.number_input, "gf_iter").set_value(10)
    at.run()
    click(at, "gf_run")
    ok(at)
    run = runs(at)[-1]
    assert run.spec["feature_selection"]["n_blocks"] == 17
    assert run.name.startswith("BMGUFS d=8 β̄=0.6 γ=2 k=17 "), run.name
    assert "iterations=10" in run.name and "candidates=1" in run.name
    assert "from the classes" not in run.name
    # k from the data: the run names the k the fit took and where it came from
    widget(at.checkbox, "gf_k_auto").check()
    at.run()
    click(at, "gf_run")
    ok(at)
    auto = runs(at)[-1]
    assert auto.spec["feature_selection"]["n_blocks"] is None
    assert auto.pipeline.selector.n_blocks_ == 17
    assert "→ k=17 from the classes" in auto.name, auto.name


def _ml(L, seed, name):
    d = make_powerlaw_multilabel(300, 120, L, random_state=seed)
    return MultiLabelData(X=d.X, Y=d.Y, name=name, label_names=[f"t{j}" for j in range(L)])


def test_extreme_classification_knobs_follow_the_labels(app_for):
    a, b = _ml(30, 5, "thirty"), _ml(14, 6, "fourteen")
    at = app_for("extreme_classification", a).run()
    ok(at)
    assert widget(at.number_input, "xmlc_leaf").value == 30        # min(100, L)
    widget(at.number_input, "xmlc_trees").set_value(2).run()
    widget(at.number_input, "xmlc_beam").set_value(7).run()
    widget(at.number_input, "xmlc_C").set_value(2.0).run()
    assert widget(at.radio, "xmlc_preset").value == "custom"
    switch_dataset(at, b).run()
    ok(at)
    L = b.Y.shape[1]
    assert widget(at.radio, "xmlc_preset").value == "paper"
    assert {n: widget(at.number_input, f"xmlc_{n}").value
            for n in ("K", "trees", "depth", "leaf", "beam", "C")} == \
        {"K": min(16, L), "trees": 3, "depth": 20, "leaf": min(100, L), "beam": 10, "C": 0.5}
    # one tree asked on 14 labels (one leaf): the run says it is one flat tree, and names
    # the leaf size that differs from KTXMLC's default
    widget(at.number_input, "xmlc_trees").set_value(1).run()
    click(at, "xmlc_train", 240)
    ok(at)
    run = runs(at)[-1]
    clf = run.pipeline.classifier
    assert len(clf.trees_) == 1 and int(clf.trees_[0]["n_children"][0]) == L
    assert run.name.startswith(f"KTXMLC K={min(16, L)} T=1 leaf={L} → one flat tree"), \
        run.name


def test_feature_agglomeration_settings_start_afresh(app_for):
    a, b = _ml(30, 5, "thirty"), _ml(14, 6, "fourteen")
    at = app_for("feature_agglomeration", a).run()
    ok(at)
    widget(at.slider, "fa_d0").set_value(32)
    widget(at.number_input, "fa_seed").set_value(3)
    widget(at.radio, "fa_agg").set_value("avg")
    widget(at.multiselect, "Feature agglomeration_tr_d0s").set_value([4])
    at.run()
    switch_dataset(at, b).run()
    ok(at)
    assert widget(at.slider, "fa_d0").value == 8
    assert widget(at.number_input, "fa_seed").value == 0
    assert widget(at.radio, "fa_agg").value == "sum"
    assert widget(at.multiselect, "Feature agglomeration_tr_d0s").value != [4]
    assert widget(at.slider, "fa_d0").key == data_key("fa_d0", b)
    widget(at.slider, "fa_d0").set_value(16)
    widget(at.radio, "fa_agg").set_value("avg")
    widget(at.checkbox, "fa_km").uncheck()
    at.run()
    click(at, "fa_run")
    ok(at)
    defrag = [r for r in runs(at) if r.kind == "agglomeration"]
    assert [r.name for r in defrag] == ["DEFRAG-XY d0=16 aggregation=avg"]


def test_rare_labels_knobs_start_afresh(app_for):
    a, b = _ml(30, 5, "thirty"), _ml(14, 6, "fourteen")
    at = app_for("rare_labels", a).run()
    click(at, "rl_train_default")             # the knobs show once there is a classifier
    ok(at)
    widget(at.toggle, "rl_tune").set_value(False)
    widget(at.number_input, "rl_short").set_value(50)
    widget(at.slider, "rl_mix").set_value(0.75)
    at.run()
    switch_dataset(at, b).run()
    click(at, "rl_train_default")
    ok(at)
    assert widget(at.toggle, "rl_tune").value is True
    assert widget(at.number_input, "rl_short").value == 100
    assert widget(at.slider, "rl_mix").value == 0.25
    # REFRAG with settings of its own: the name lists them
    widget(at.toggle, "rl_tune").set_value(False).run()
    widget(at.slider, "rl_alpha").set_value(0.7)
    widget(at.number_input, "rl_short").set_value(50)
    at.run()
    click(at, "rl_refrag_run")
    ok(at)
    ref = [r for r in runs(at) if "rerank" in r.spec][-1]
    assert ref.dataset_fingerprint == b.fingerprint
    assert " + REFRAG α=0.7 shortlist=50" in ref.name, ref.name


def _table(seed, n_columns, name):
    t = make_zipf_categorical(400, 30, n_columns=n_columns, random_state=seed)
    return dataclasses.replace(t, name=name)


def test_vocabulary_label_columns_and_budget_follow_the_table(app_for):
    a, b = _table(0, 3, "three.csv"), _table(1, 2, "two.csv")
    at = app_for("vocabulary", a).run()
    ok(at)
    cols_a = list(a.table.columns)
    widget(at.multiselect, "vc_columns").set_value(cols_a[:1])
    widget(at.number_input, "vc_min_count").set_value(3)
    widget(at.checkbox, "vc_curves").set_value(False)
    at.run()
    ok(at)
    switch_dataset(at, b).run()
    ok(at)
    assert widget(at.multiselect, "vc_columns").value == list(b.table.columns)
    assert widget(at.number_input, "vc_min_count").value == 1
    assert widget(at.checkbox, "vc_curves").value is True
    assert widget(at.selectbox, "vc_label").value == widget(at.selectbox, "vc_label").options[0]
    # a run with settings off their defaults names them
    widget(at.multiselect, "vc_methods").set_value(["frequency"])
    widget(at.number_input, "vc_min_count").set_value(2)
    widget(at.checkbox, "vc_curves").set_value(False)
    widget(at.multiselect, "vc_columns").set_value([b.table.columns[0]])
    at.run()
    click(at, "vc_run")
    ok(at)
    run = runs(at)[-1]
    m = run.spec["vocabulary"]["budget"]
    assert run.name.startswith(f"Vocabulary frequency m={m}"), run.name
    assert "on 1 column" in run.name and "min count=2" in run.name


def test_triage_budget_and_data_top_values_start_afresh(app_for):
    a, b = _table(0, 3, "three.csv"), _table(1, 2, "two.csv")
    b = dataclasses.replace(b, table=b.table.rename(columns=lambda c: f"b_{c}"))
    at = app_for("triage", a).run()
    ok(at)
    widget(at.select_slider, "tri_budget").set_value(120).run()
    switch_dataset(at, b).run()
    ok(at)
    assert widget(at.select_slider, "tri_budget").value == 60
    at = app_for("data", a).run()
    ok(at)
    col = widget(at.selectbox, "data_top_values_column")
    col.set_value(col.options[-1]).run()
    switch_dataset(at, b).run()
    ok(at)
    col = widget(at.selectbox, "data_top_values_column")
    assert col.options and all(str(o).startswith("b_") for o in col.options)
    assert col.value == col.options[0]
