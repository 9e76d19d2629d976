"""The experiment sections of the pages (AppTest, small data): each is one job, its runs go
to the registry, the table and verdict come from featagg_core.experiment, the elbow's K
lands in the K widget, REFRAG tuned says what it chose, the vocabulary page starts at a
budget that compresses and shows fitted against held-out MI."""
import numpy as np
import pandas as pd

from page_util import click, ok, runs, widget
from featagg_core.data import CategoricalData
from featagg_core.data.synthetic import make_attributed_sbm, make_powerlaw_multilabel


def _ml():
    return make_powerlaw_multilabel(260, 100, 15, random_state=4, test_size=0.25)


def test_feature_agglomeration_raw_vs_defrag_section(app_for):
    at = app_for("feature_agglomeration", _ml())
    at.run()
    ok(at)
    page = "Feature agglomeration"
    widget(at.multiselect, f"{page}_tr_d0s").set_value([1, 8])
    widget(at.multiselect, f"{page}_tr_kinds").set_value(["KTXMLC"])
    widget(at.checkbox, f"{page}_tr_per_tree").uncheck()
    at.run()
    click(at, f"{page}_tr_run")
    ok(at)
    tables = [t.value for t in at.table]
    tr = next(t for t in tables if "P@1 kept" in t.columns)
    assert list(tr["d0"]) == ["–", "1", "8"]
    assert tr["P@1 kept"].iloc[1] == "100.00 %"           # d0 = 1: every feature kept
    assert any(m.value.startswith("KTXMLC: ") for m in at.markdown)
    names = [r.name for r in runs(at)]
    assert sum("KTXMLC" in n for n in names) == 3


def test_extreme_classification_sweep_and_elbow_preselect(app_for):
    at = app_for("extreme_classification", _ml())
    at.run()
    ok(at)
    page = "Extreme classification"
    widget(at.radio, f"{page}_sw_param").set_value("trees T")
    at.run()
    widget(at.multiselect, f"{page}_sw_n_trees").set_value([1, 2])
    at.run()
    click(at, f"{page}_sw_run")
    ok(at)
    t = next(t.value for t in at.table if "T" in t.value.columns)
    assert list(t["T"]) == ["1", "2"]
    widget(at.toggle, "xmlc_elbow_on").set_value(True)
    from page_util import settle
    settle(at)
    settle(at)
    ok(at)
    st = at.session_state["featagg.pages"][page]
    assert st.get("elbow_applied") is not None
    assert widget(at.number_input, "xmlc_K").value == st["elbow_applied"][1]


def test_graph_features_protocol_section(app_for):
    g = make_attributed_sbm(180, 3, p_in=0.15, p_out=0.01, n_informative=9, n_noise=27,
                            random_state=5)
    at = app_for("graph_features", g)
    at.run()
    widget(at.number_input, "gf_cand").set_value(1)
    widget(at.number_input, "gf_iter").set_value(30)
    widget(at.number_input, "gf_d").set_value(8)
    widget(at.checkbox, "gf_k_auto").check()
    at.run()
    click(at, "gf_run")
    ok(at)
    assert any("blocks" in c.value and "k = 3" in c.value for c in at.caption)
    page = "Graph feature selection"
    widget(at.multiselect, f"{page}_bp_ds").set_value([8, 16])
    widget(at.number_input, f"{page}_bp_cand").set_value(1)
    at.run()
    click(at, f"{page}_bp_run")
    ok(at)
    t = next(t.value for t in at.table if "method" in t.value.columns)
    assert {"BMGUFS", "variance", "all features"} <= set(t["method"])


def test_rare_labels_tuned_refrag(app_for):
    data = _ml()
    at = app_for("rare_labels", data).run()
    ok(at)
    click(at, "rl_train_default")                        # a small classifier to re-rank
    ok(at)
    assert widget(at.toggle, "rl_tune").value is True        # tuned unless switched off
    click(at, "rl_refrag_run")
    ok(at)
    assert any("REFRAG tuned on" in s.value for s in at.success)
    assert any(r.name.endswith("+ REFRAG tuned") for r in runs(at))


def test_vocabulary_default_budget_and_heldout_table(app_for):
    from featagg_core.experiment import default_budget, make_split
    rng = np.random.default_rng(1)
    a = rng.integers(0, 40, 3000)
    t = CategoricalData(table=pd.DataFrame({"a": a.astype(str),
                                            "b": rng.integers(0, 6, 3000).astype(str)}),
                        labels=(rng.random(3000) < rng.random(40)[a]).astype(np.int8),
                        label_name="y", name="t")
    at = app_for("vocabulary", t)
    at.run()
    ok(at)
    m0, _ = default_budget(t, make_split(t), ["a", "b"])
    assert widget(at.select_slider, "vc_m").value == m0
    click(at, "vc_run")
    ok(at)
    tables = [x.value for x in at.table]
    held = next(x for x in tables if "held-out MI loss" in x.columns)
    assert list(held["column"]) == ["a", "b", "total"]
