"""Vocabulary compression page: its builders against direct computations, and AppTest
runs of the page on the default Adult sample."""
import io
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import mutual_info_score

from page_util import click, ok, runs, widget
from featagg_app.views import vocabulary as vv
from featagg_app.views.compare import CURVE_SUFFIX
from featagg_core.data import CategoricalData
from featagg_core.experiment import make_split, run_pipeline, vocabulary_budget_curve
from featagg_core.vocab.compressor import VocabularyCompressor, compress_columns


def _table(seed=0, n_rows=2000):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 60, n_rows)
    b = rng.integers(0, 8, n_rows)
    eff = rng.normal(0, 2, 60)
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-eff[a]))).astype(np.int8)
    t = pd.DataFrame({"a": a.astype(str), "b": b, "flag": np.where(rng.random(n_rows) < .3, "x", "y")})
    return t, y


def _runs(t, y, methods, m, allocation):
    data = CategoricalData(table=t, labels=y, label_name="y", name="t")
    split = make_split(data)
    out = {}
    for meth in methods:
        alloc = allocation if meth in ("submodular", "threshold") or allocation != "greedy" \
            else "uniform"
        out[meth] = run_pipeline(data, split, {"vocabulary": {
            "method": meth, "budget": m, "columns": ["a", "b"], "allocation": alloc}})
    return data, split, out


def test_summary_and_allocation_tables_match_the_runs():
    t, y = _table()
    data, split, res = _runs(t, y, ["submodular", "frequency"], 5, "greedy")
    S = vv.summary_table(res)
    assert list(S["method"]) == [vv.METHOD_TITLES["submodular"], vv.METHOD_TITLES["frequency"]]
    te = split.test
    for (meth, run), (_, row) in zip(res.items(), S.iterrows()):
        cc = run.pipeline.vocabulary
        # by hand: I(Z;C) and I(X;C) of the test rows with sklearn's mutual information
        iz = sum(mutual_info_score(y[te], vc.transform(t[c].to_numpy()[te]))
                 for c, vc in cc.compressors.items())
        ix = sum(mutual_info_score(y[te], t[c].to_numpy()[te]) for c in cc.compressors)
        assert row["I(Z;C) nats"] == pytest.approx(iz)
        assert row["I(X;C) nats"] == pytest.approx(ix)
        assert row["MI loss"] == pytest.approx((ix - iz) / ix)
        assert sum(cc.allocation.values()) <= 10
    ccs = {m: r.pipeline.vocabulary for m, r in res.items()}
    A = vv.allocation_table(ccs)
    assert list(A.index) == ["a", "b"]
    assert A[vv.METHOD_TITLES["frequency"]].tolist() == [5, 5]
    fig = vv.allocation_figure(ccs)
    assert [list(tr.y) for tr in fig.data] == [A[c].tolist() for c in A.columns]


def test_loss_curves_decrease_and_match_direct_runs():
    t, y = _table(1)
    data = CategoricalData(table=t, labels=y, label_name="y", name="t")
    split = make_split(data)
    curves = {}
    for meth in ("submodular", "bucketing"):
        spec = {"vocabulary": {"method": meth, "budget": 2, "columns": ["a"]}}
        curves[meth] = vocabulary_budget_curve(data, split, spec, [2, 5, 20])
    long = vv.curves_frame(curves)
    for meth, g in long.groupby("method"):
        # the fit on the training rows, scored on the test rows, at m = 5: by hand
        vc = VocabularyCompressor(5, method=meth).fit(t["a"].to_numpy()[split.train],
                                                      y[split.train])
        te = split.test
        ix = mutual_info_score(y[te], t["a"].to_numpy()[te])
        iz = mutual_info_score(y[te], vc.transform(t["a"].to_numpy()[te]))
        assert g.set_index("m").loc[5, "MI loss"] == pytest.approx((ix - iz) / ix)
    fig = vv.loss_curve_figure(long)
    assert len(fig.data) == 2 and fig.layout.xaxis.type == "log"
    # the page draws a curve from one run per budget: the same numbers as the sweep
    for meth in ("submodular", "bucketing"):
        pts = [run_pipeline(data, split, {"vocabulary": {"method": meth, "budget": b,
                                                         "columns": ["a"]}})
               for b in (2, 5, 20)]
        from_runs = vv.curve_from_runs(pts)
        assert from_runs["m"].tolist() == [2, 5, 20]
        cols = ["I(Z;C)", "I(X;C)", "MI loss", "buckets"]
        assert np.allclose(from_runs[cols].to_numpy(float), curves[meth][cols].to_numpy(float))


def test_split_curve_data_is_the_sorted_ratio_with_the_cuts():
    t, y = _table(2)
    vc = VocabularyCompressor(4).fit(t["a"], y)
    d = vv.split_curve_data(vc)
    assert np.all(np.diff(d["p0"]) >= 0)
    c = vc.counts_[vc.order_]
    np.testing.assert_allclose(d["p0"], c[:, 0] / c.sum(1))
    assert len(d["splits_x"]) == len(vc.split_points_) == 3
    w = c.sum(1) / c.sum()
    np.testing.assert_allclose(d["splits_x"], np.cumsum(w)[vc.split_points_ - 1])
    qs = [q for _, _, q in d["segments"]]
    bc = vc.bucket_counts_
    np.testing.assert_allclose(qs, bc[:, 0] / bc.sum(1))
    fig = vv.split_curve_figure(vc, "a")
    assert len(fig.data) == 3


def test_label_from_column_and_mapping_files():
    t, y = _table(3)
    lab, pos = vv.labels_from_column(t["flag"])
    assert pos == "y" and np.array_equal(lab, (t["flag"] == "y").to_numpy().astype(np.int8))
    assert vv.binary_columns(t) == ["flag"]
    with pytest.raises(ValueError, match="label column"):
        vv.labels_from_column(t["b"])
    cc = compress_columns(t, y, 8, columns=["a", "b"])
    df = pd.read_csv(io.BytesIO(vv.mapping_csv(cc)))
    assert set(df["column"]) == {"a", "b"} and len(df) == t["a"].nunique() + t["b"].nunique()
    doc = json.loads(vv.mapping_json(cc))
    for col, vc in cc.compressors.items():
        got = dict(zip(map(str, doc["columns"][col]["values"]), doc["columns"][col]["buckets"]))
        assert got == {str(k): v for k, v in vc.mapping_.items()}


# ------------------------------------------------------------------ the page (AppTest)
def _app(app_for):
    return app_for("vocabulary", timeout=240)


def _by_label(widgets, label):
    """Dataset-dependent widgets have the dataset in their key: find them by label."""
    return next(w for w in widgets if w.label == label)


def test_page_runs_on_the_default_adult_sample(app_for):
    at = _app(app_for)
    at.run()
    assert not at.exception, at.exception
    assert any("Adult" in i.value for i in at.info)
    assert any("Compress" in i.value for i in at.info)
    assert any("random 20 % test split" in c.value for c in at.caption)
    widget(at.checkbox, "vc_curves").set_value(True)
    click(at, "vc_run", 300)
    ok(at)
    cards = {mm.label: mm.value for mm in at.metric}
    assert any(k.startswith("MI loss") for k in cards), cards
    every = runs(at)
    methods = widget(at.multiselect, "vc_methods").value
    done = [r for r in every if not r.name.endswith(CURVE_SUFFIX)]
    assert len(done) == len(methods) and "dp" in methods      # Adult columns are small
    assert all(r.kind == "vocabulary" for r in every)
    # the curves are runs too: every method at every other budget of the curve (its run at
    # m is the point at m), and the chart draws their test MI loss
    m = widget(at.select_slider, "vc_m").value
    curve = [r for r in every if r.name.endswith(CURVE_SUFFIX)]
    budgets = sorted({r.spec["vocabulary"]["budget"] for r in curve} | {m})
    assert len(budgets) >= 3 and budgets[0] == 2
    points = {(r.spec["vocabulary"]["method"], r.spec["vocabulary"]["budget"]) for r in curve}
    assert len(curve) == len(points) == len(methods) * (len(budgets) - 1)
    assert points == {(meth, b) for meth in methods for b in budgets if b != m}
    import base64
    fig = next(c for c in at.get("plotly_chart") if "MI loss versus budget" in c.proto.spec)

    def _values(y):      # plotly writes numpy arrays as {"dtype": "f8", "bdata": base64}
        if isinstance(y, dict):
            return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).tolist()
        return list(y)
    drawn = {tr["name"]: _values(tr["y"]) for tr in json.loads(fig.proto.spec)["data"]}
    loss = {(r.spec["vocabulary"]["method"], r.spec["vocabulary"]["budget"]):
            r.metrics["test"]["MI loss"] for r in curve + done}
    for meth in methods:
        want = [loss[(meth, b)] for b in budgets]
        got = [np.nan if v is None else v for v in drawn[vv.METHOD_TITLES[meth]]]
        assert np.allclose(got, np.where(np.asarray(want) > 1e-12, want, np.nan),
                           equal_nan=True), meth
    # with the same (uniform) split of the budget, the DP optimum loses the least on the
    # training rows it was fitted on (on the test rows any method may generalise better)
    fitted = {r.spec["vocabulary"]["method"]: r.pipeline.vocabulary.mi_loss for r in done}
    for meth in ("bucketing", "frequency", "divisive"):
        assert fitted["dp"] <= fitted[meth] + 1e-12
    assert len(at.get("plotly_chart")) >= 4                 # curves, time, split curve, alloc
    # switch the picture to another column and method: no rerun of the compression
    _by_label(at.selectbox, "Column").set_value("education").run()
    assert not at.exception
    assert len(runs(at)) == len(every)


def test_page_other_label_per_column_budget_and_threshold(app_for):
    at = _app(app_for)
    at.run()
    _by_label(at.selectbox, "Label column").set_value("gender").run()
    assert not at.exception, at.exception
    assert "gender" not in _by_label(at.multiselect, "Columns to compress").options
    widget(at.radio, "vc_scheme").set_value("per column")
    widget(at.select_slider, "vc_m").set_value(3)
    widget(at.multiselect, "vc_methods").set_value(["threshold", "frequency"])
    widget(at.checkbox, "vc_curves").set_value(False)
    click(at, "vc_run")
    ok(at)
    done = runs(at)
    assert sorted(r.spec["vocabulary"]["method"] for r in done) == ["frequency", "threshold"]
    assert all(r.dataset_name.endswith("(label: gender)") for r in done)
    assert all(r.spec["vocabulary"]["allocation"] == "per_column" for r in done)
    cc = done[0].pipeline.vocabulary
    assert all(v <= 3 for v in cc.allocation.values())


def test_natural_threshold_of_a_rating_and_its_labels():
    ratings = np.array([1, 2, 3, 3, 4, 4, 4, 5, 5, 4, 3, 2])          # median 3.5
    assert vv.natural_threshold(ratings.astype(str)) == 4.0
    np.testing.assert_array_equal(vv.labels_from_threshold(ratings, 4), ratings >= 4)
    assert vv.natural_threshold([1, 1, 1, 2, 3]) == 2.0    # median 1: everyone would be >= 1
    with pytest.raises(ValueError, match="one class"):
        vv.labels_from_threshold(ratings, 9)
    t = pd.DataFrame({"rating": ratings.astype(str), "id": [str(i) for i in range(12)],
                      "w": list("abcabcabcabc"), "flag": list("xy" * 6)})
    # the rating (5 numbers) is offered; two-valued and non-numeric columns are not
    assert vv.numeric_columns(t) == ["rating", "id"]


def test_page_takes_a_numeric_label_with_a_threshold(app_for):
    """MovieLens-like: a 1-5 rating column is the label "rating ≥ 4" by default (the
    median moved to a value that occurs), the runs are fitted on exactly those labels, and
    another threshold gives another dataset."""
    rng = np.random.default_rng(0)
    n = 1500
    item = rng.integers(0, 40, n)
    quality = rng.normal(0, 1.2, 40)
    rating = np.clip(np.round(3.4 + quality[item] + rng.normal(0, 0.8, n)), 1, 5).astype(int)
    t = pd.DataFrame({"item": item.astype(str), "genre": (item % 5).astype(str),
                      "rating": rating.astype(str)})
    data = CategoricalData(table=t, labels=(rng.random(n) < 0.5).astype(np.int8),
                           label_name="clicked", name="ratings")
    at = app_for("vocabulary", data, timeout=240)
    at.run()
    ok(at)
    box = _by_label(at.selectbox, "Label column")
    choice = next(o for o in box.options if o.startswith("rating"))
    box.set_value(choice).run()
    ok(at)
    cut = _by_label(at.number_input, "Positive when at least")
    assert cut.value == float(np.unique(rating)[np.searchsorted(np.unique(rating),
                                                                np.median(rating))])
    assert any(f"rating ≥ {cut.value:g}" in c.value for c in at.caption)
    widget(at.multiselect, "vc_methods").set_value(["frequency"])
    widget(at.checkbox, "vc_curves").set_value(False)
    click(at, "vc_run")
    ok(at)
    done = runs(at)
    assert len(done) == 1 and done[0].dataset_name.endswith(f"(label: rating ≥ {cut.value:g})")
    split = make_split(CategoricalData(table=t.drop(columns=["rating"]),
                                       labels=(rating >= cut.value).astype(np.int8),
                                       label_name="r"))
    fitted = done[0].pipeline.vocabulary.compressors["item"]
    y = (rating >= cut.value).astype(np.int8)
    # the labels the run was fitted on are rating >= cut: the full-column MI says so
    counts = pd.crosstab(t["item"].to_numpy()[split.train], y[split.train]).to_numpy()
    assert fitted.mutual_information_full_ == pytest.approx(
        mutual_info_score(None, None, contingency=counts), rel=1e-9)
