"""Compare and Export pages: their table/chart/export builders against hand-made runs, and
AppTest runs of both pages as a person uses them."""
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from featagg_app import compare_view as cv
from featagg_app import export_view as ev
from featagg_core import Defrag, VocabularyCompressor
from featagg_core.synthetic import make_powerlaw_multilabel, make_zipf_categorical

ROOT = Path(__file__).resolve().parents[1]


def _run(run_id, page, method, dataset, params, metrics, timings, size=None):
    return {"run_id": run_id, "timestamp": "2026-11-30T12:00:00+00:00", "page": page,
            "method": method, "dataset": dataset, "fingerprint": dataset[:3], "kind": "multilabel",
            "params": params, "metrics": metrics, "timings": timings, "model_size_bytes": size}


RUNS = [
    _run("a1", "Extreme classification", "KTXMLC", "bibtex", {"K": 2, "trees": 3},
         {"P@1": 63.0, "P@3": 39.0}, {"train": 4.0}, 2**20),
    _run("a2", "Extreme classification", "OneVsAll", "bibtex", {"C": 1.0},
         {"P@1": 64.0, "P@3": 40.0}, {"train": 40.0}, 2 * 2**20),
    _run("b1", "Feature agglomeration", "DEFRAG-XY", "bibtex", {"d0": 8},
         {"clustering error": 0.71}, {"fit": 0.3}),
    _run("c1", "Extreme classification", "KTXMLC", "delicious", {"K": 2, "trees": 3},
         {"P@1": 66.0}, {"train": 30.0}),
    _run("d1", "Vocabulary compression", "submodular", "adult", {"budget": 10},
         {"MI loss": 0.02}, {"fit": 0.01}),
]


def test_runs_frame_flattens_every_field():
    df = cv.runs_frame(RUNS)
    assert len(df) == 5
    row = df.set_index("run_id").loc["a2"]
    assert row["P@1"] == 64.0 and row["time: train"] == 40.0 and row["param: C"] == 1.0
    assert row["model MB"] == pytest.approx(2.0)
    assert row["parameters"] == "C=1.0"
    assert np.isnan(df.set_index("run_id").loc["b1", "P@1"])
    assert cv.metric_columns(df)[:2] == ["P@1", "P@3"]
    assert "time: train" not in cv.metric_columns(df)
    assert cv.runs_frame([]).empty


def test_filters_and_default_tradeoff():
    df = cv.runs_frame(RUNS)
    only = cv.filter_runs(df, ["bibtex"], ["KTXMLC", "OneVsAll"])
    assert sorted(only["run_id"]) == ["a1", "a2"]
    assert cv.default_tradeoff(only) == ("time: train", "P@1")
    vocab = cv.filter_runs(df, ["adult"], None)
    assert cv.default_tradeoff(vocab) == ("param: budget", "MI loss")


def test_datasets_never_share_axes():
    df = cv.filter_runs(cv.runs_frame(RUNS), ["bibtex", "delicious"], ["KTXMLC"])
    fig = cv.tradeoff_figure(df, "time: train", "P@1")
    # one panel (x axis) per dataset, each dataset's points only in its own panel
    axes = {tr.xaxis for tr in fig.data}
    assert len(axes) == 2
    assert "one panel per dataset" in fig.layout.title.text
    bars = cv.grouped_bar_figure(df, ["P@1"])
    assert len({tr.xaxis for tr in bars.data}) == 2
    single = cv.grouped_bar_figure(cv.filter_runs(df, ["bibtex"], None), ["P@1"])
    assert "panel" not in single.layout.title.text


def test_csv_round_trip():
    df = cv.runs_frame(RUNS)
    back = pd.read_csv(io.BytesIO(cv.to_csv(df)))
    assert back["run_id"].tolist() == df["run_id"].tolist()
    assert back["P@1"].iloc[0] == 63.0


@pytest.fixture(scope="module")
def ml():
    return make_powerlaw_multilabel(300, 120, 20, random_state=0, test_size=0.2)


def test_plain_exports_and_evaluation(ml):
    d = Defrag(d0=4).fit(ml.X, ml.Y)
    files = dict((n, b) for n, b, _ in ev.plain_exports("defrag", d, [f"w{i}" for i in range(120)]))
    csv = pd.read_csv(io.BytesIO(files["defrag_clusters.csv"]))
    assert csv["cluster"].tolist() == d.labels_.tolist() and csv["feature_name"][5] == "w5"
    res = ev.evaluate(d, ml)
    assert res["clusters"] == d.n_clusters_ and res["features after"] == d.n_clusters_
    assert res["clustering error"] == pytest.approx(d.clustering_error_)
    with pytest.raises(ValueError, match="needs a table dataset"):
        ev.evaluate(VocabularyCompressor(4).fit(["a", "b"], [0, 1]), ml)

    t = make_zipf_categorical(2000, 50, random_state=1)
    col = t.table.columns[0]
    vc = VocabularyCompressor(5).fit(t.table[col].to_numpy(), t.labels)
    res = ev.evaluate(vc, t, column=col)
    assert res["I(Z;C)"] == pytest.approx(vc.mutual_information_, rel=1e-9)
    assert res["I(X;C)"] == pytest.approx(vc.mutual_information_full_, rel=1e-9)
    assert res["unseen values"] == 0
    names = [n for n, _, _ in ev.plain_exports("vocab", vc)]
    assert names == ["vocab_mapping.csv", "vocab_mapping.json"]


# --------------------------------------------------------------------------- AppTest

def _app(page, data=None, store=None, runs=None):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=120)
    if data is not None:
        at.session_state["featagg.dataset"] = {"data": data, "fingerprint": data.fingerprint,
                                               "origin": "upload", "source_id": "upload",
                                               "name": data.name}
    if store is not None:
        at.session_state["featagg.store"] = store
    if runs is not None:
        at.session_state["featagg.runs"] = runs
    return at.run()


def test_compare_page_empty_then_runs_from_several_pages():
    at = _app("compare.py")
    assert not at.exception
    assert any("No runs yet" in i.value for i in at.info)

    at = _app("compare.py", runs=RUNS)
    assert not at.exception, [e.value for e in at.exception]
    # default filter: the latest run's dataset (adult)
    assert any("1 of 5 runs" in s.value for s in at.subheader)
    at.multiselect[0].set_value(["bibtex"]).run()   # runs from two pages on one dataset
    assert any("3 of 5 runs" in s.value for s in at.subheader)
    assert len(at.get("plotly_chart")) == 2
    at.multiselect[0].set_value(["bibtex", "delicious"]).run()
    assert any("4 of 5 runs" in s.value for s in at.subheader)
    assert any("one panel per dataset" in c.value for c in at.caption)


def test_export_page_offers_artifact_bundle_and_csv(ml):
    d = Defrag(d0=4).fit(ml.X, ml.Y)
    at = _app("export.py", data=ml, store={"defrag": d, "not a model": 3}, runs=RUNS[:1])
    assert not at.exception, [e.value for e in at.exception]
    labels = [b.label for b in at.get("download_button")]
    assert "Artifact (.fgz)" in labels
    assert "defrag_clusters.csv" in labels
    assert any(lbl.startswith("Bundle of all 1 fitted objects") for lbl in labels)
    assert "Run registry (JSON)" in labels


def test_export_page_without_models():
    at = _app("export.py")
    assert not at.exception
    assert any("Nothing trained" in i.value for i in at.info)


def test_compare_shows_real_runs_from_several_pages():
    """Runs made by really running the Feature agglomeration and Vocabulary compression
    pages (one browser session: its state carried from page to page) all reach Compare."""
    import os
    os.environ.setdefault("FEATAGG_WARMUP", "0")
    from streamlit.testing.v1 import AppTest
    state = {}
    for page, button in (("feature_agglomeration.py", "fa_run"), ("vocabulary.py", "vc_run")):
        at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=240)
        for k, v in state.items():
            at.session_state[k] = v
        at.run()
        at.button(key=button).click().run()
        assert not at.exception, [e.value for e in at.exception]
        state = {k: at.session_state[k] for k in ("featagg.runs",)
                 if k in at.session_state}
    runs = state["featagg.runs"]
    pages = {r["page"] for r in runs}
    assert len(pages) == 2, pages
    at = _app("compare.py", runs=runs)
    assert not at.exception, [e.value for e in at.exception]
    at.multiselect[0].set_value(sorted({r["dataset"] for r in runs})).run()
    assert any(f"{len(runs)} of {len(runs)} runs" in s.value for s in at.subheader)
    table = at.dataframe[0].value
    assert set(table["page"]) == pages
