"""Extreme classification page: its table/figure builders against brute force, and AppTest
runs of the page (default Bibtex sample; a small uploaded dataset with a random split,
DEFRAG features and one-vs-all)."""
from pathlib import Path

import numpy as np
import pytest

from featagg_app import xmlc_view as xv
from featagg_core import metrics
from featagg_core.data import MultiLabelData
from featagg_core.ktxmlc import KTXMLC, elbow_curve
from featagg_core.synthetic import make_powerlaw_multilabel

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "extreme_classification.py")


@pytest.fixture(scope="module")
def trained():
    d = make_powerlaw_multilabel(400, 150, 40, random_state=1, test_size=0.25)
    m = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2).fit(d.X, d.Y)
    S = m.predict_scores(d.X_test, k=5)
    return d, m, S


# ------------------------------------------------------------------ builders
def test_random_split_is_a_partition():
    tr, te = xv.random_split(100, 0.3, seed=4)
    assert len(te) == 30 and len(tr) == 70
    assert np.array_equal(np.sort(np.r_[tr, te]), np.arange(100))
    with pytest.raises(ValueError):
        xv.random_split(10, 1.5)


def test_metrics_table_matches_hand_computed_precision(trained):
    d, m, S = trained
    ip = metrics.inverse_propensity(d.Y)
    T = xv.metrics_table(d.Y_test, S, ip)
    assert list(T.index) == ["P@k", "nDCG@k", "PSP@k", "PSnDCG@k", "coverage@k"]
    Yd, Sd = d.Y_test.toarray(), S.toarray()
    for k in (1, 3, 5):
        # brute force: top-k by score, ties to the lower label index
        top = np.argsort(-Sd, axis=1, kind="stable")[:, :k]
        p = np.mean([Yd[i, top[i]].sum() / k for i in range(Yd.shape[0])])
        assert T.loc["P@k", f"k={k}"] == pytest.approx(100 * p)
    flat = xv.flat_metrics(T)
    assert flat["P@1"] == T.loc["P@k", "k=1"] and "PSnDCG@5" in flat and "coverage@3" in flat


def test_bucket_figure_sums_to_precision(trained):
    d, m, S = trained
    fig = xv.bucket_figure(d.Y, d.Y_test, S, n_buckets=4, k=5)
    bars = np.asarray(fig.data[0].y)
    assert bars.shape == (4,)
    assert bars.sum() == pytest.approx(100 * metrics.precision_at_k(d.Y_test, S, 5))
    assert "head" in fig.data[0].x[0] and "tail" in fig.data[0].x[-1]


def test_sunburst_has_every_node_and_label_name(trained):
    d, m, S = trained
    names = [f"tag{j}" for j in range(d.Y.shape[1])]
    fig = xv.tree_sunburst(m, 1, names)
    sb = fig.data[0]
    N = m.trees_[1]["parent"].shape[0]
    assert len(sb.ids) == N
    assert set(names) <= set(sb.labels)
    # a node's value is the number of labels below it = the sum over its children
    vals = dict(zip(sb.ids, sb.values))
    kids = {}
    for i, p in zip(sb.ids, sb.parents):
        if p:
            kids.setdefault(p, []).append(i)
    for p, ch in kids.items():
        assert vals[p] == sum(vals[c] for c in ch)
    assert vals["n0"] == d.Y.shape[1]


def test_elbow_figure_marks_the_elbow(trained):
    d, _, _ = trained
    el = elbow_curve(d.X, d.Y, ks=[2, 4, 8, 16])
    fig = xv.elbow_figure(el)
    assert list(fig.data[0].x) == [2, 4, 8, 16]
    assert fig.data[1].x[0] == el.elbow


def test_example_predictions_mark_hits(trained):
    d, _, S = trained
    df = xv.example_predictions(d.Y_test, S, None, rows=[0, 1, 2])
    Yd = d.Y_test.toarray()
    top = metrics.top_k(S, 5)
    for r, i in enumerate([0, 1, 2]):
        assert df.loc[r, "hits"] == int(Yd[i, top[i][top[i] >= 0]].sum())
        assert df.loc[r, "top-5 predictions (score)"].count("✓") == df.loc[r, "hits"]


# ------------------------------------------------------------------ AppTest
def _app(data=None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=240)
    if data is not None:
        at.session_state["featagg.dataset"] = {"data": data, "fingerprint": data.fingerprint,
                                               "origin": "upload", "source_id": "upload",
                                               "name": data.name}
    return at


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_page_trains_on_bibtex_and_records_the_run():
    at = _app().run()
    _ok(at)
    assert any("Bibtex" in i.value or "bibtex" in i.value for i in at.info)
    at.number_input(key="xmlc_trees").set_value(1).run()   # one tree keeps the test short
    at.button(key="xmlc_train").click().run()
    _ok(at)
    cards = {m.label: m.value for m in at.metric}
    p1 = float(cards["P@1"].rstrip("%"))
    assert p1 > 55.0, cards        # omikuji (3 trees) reaches 63.9 on this split
    runs = at.session_state["featagg.runs"]
    assert len(runs) == 1 and runs[0]["method"] == "KTXMLC"
    assert runs[0]["metrics"]["P@1"] == pytest.approx(p1, abs=0.01)
    assert runs[0]["model_size_bytes"] > 0
    assert isinstance(at.session_state["featagg.store"]["ktxmlc"], KTXMLC)
    assert len(at.dataframe) == 2          # metrics table + example points
    assert at.session_state["xmlc_result"]["is_tree"]


def _small_upload():
    d = make_powerlaw_multilabel(300, 120, 30, random_state=5)
    return MultiLabelData(X=d.X, Y=d.Y, name="tiny", label_names=[f"t{j}" for j in range(30)])


def test_page_random_split_defrag_features_and_one_vs_all():
    data = _small_upload()
    at = _app(data).run()
    _ok(at)
    # no test split in the data: only the random split is offered
    assert at.radio(key="xmlc_split").options == ["random split"]
    at.radio(key="xmlc_features").set_value("agglomerated (DEFRAG)").run()
    _ok(at)
    assert any("DEFRAG" in i.value for i in at.info)
    at.radio(key="xmlc_model").set_value("One-vs-all").run()
    at.button(key="xmlc_train").click().run()
    _ok(at)
    run = at.session_state["featagg.runs"][-1]
    assert run["method"] == "OneVsAll + DEFRAG"
    assert run["params"]["n_features"] < 120
    assert "ova" in at.session_state["featagg.store"]
    # changing a parameter hides the stale result until the next Train
    at.number_input(key="xmlc_C_ova").set_value(2.0).run()
    _ok(at)
    assert any("press **Train**" in i.value for i in at.info)


def test_page_elbow_plot():
    data = _small_upload()
    at = _app(data).run()
    at.toggle(key="xmlc_elbow_on").set_value(True).run()
    _ok(at)
    assert any("Elbow at" in m.value for m in at.markdown)
