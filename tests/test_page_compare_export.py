"""Compare and Export pages: their table/chart/export builders against hand-made run
records and real runs, and AppTest runs of both pages as a person uses them."""
import io

import numpy as np
import pandas as pd
import pytest

from page_util import carry, click, ok, runs, widget
from featagg_app.views import compare as cv
from featagg_app.views import export as ev
from featagg_core import Defrag, KTXMLC
from featagg_core.artifacts.store import artifact_bytes, bundle_bytes, load_bundle
from featagg_core.experiment import make_split, run_pipeline
from featagg_core.data.synthetic import make_powerlaw_multilabel


def _rec(rid, name, kind, dataset, split_id, split_text, test, timings, spec, size=None):
    return {"run_id": rid, "title": f"#{rid} {name}", "name": name, "kind": kind,
            "dataset_name": dataset, "dataset_fingerprint": dataset[:3], "split_id": split_id,
            "split_text": split_text, "spec": spec, "status": "done", "timings": timings,
            "metrics": {"test": test}, "model_sizes": {"total": size} if size else {},
            "created": "2026-11-30T12:00:00+00:00"}


OWN, RANDOM = "Bibtex's own split: 4,880 training rows / 2,515 test", "a random 20 % split"
RUNS = [
    _rec("1", "KTXMLC K=2 T=3", "classifier", "bibtex", "s1", OWN,
         {"P@1": 0.63, "P@5": 0.28, "PSP@5": 0.58, "coverage@5": 0.95, "n_rows": 2515},
         {"classifier_s": 4.0, "predict_s": 0.2, "total_s": 4.3}, {"classifier": {}}, 2 ** 20),
    _rec("2", "KTXMLC K=2 T=3 · DEFRAG d0=8", "classifier", "bibtex", "s1", OWN,
         {"P@1": 0.61, "P@5": 0.27, "PSP@5": 0.55, "coverage@5": 0.97, "n_rows": 2515},
         {"defrag_s": 0.5, "classifier_s": 1.5, "total_s": 2.2},
         {"defrag": {}, "classifier": {}}, 2 ** 19),
    _rec("3", "DEFRAG-XY d0=8", "agglomeration", "bibtex", "s1", OWN,
         {"clustering_error": 0.30, "clusters": 256, "nnz_after": 122128},
         {"defrag_s": 0.5}, {"defrag": {}}),
    _rec("4", "KTXMLC K=2 T=3", "classifier", "bibtex", "s2", RANDOM, {"P@1": 0.66},
         {"classifier_s": 3.0}, {"classifier": {}}),
    _rec("5", "Vocabulary submodular m=10", "vocabulary", "adult", "s3", RANDOM,
         {"MI loss": 0.02}, {"vocabulary_s": 0.01}, {"vocabulary": {}}),
]


# --------------------------------------------------------------------------- Compare view
def test_runs_frame_groups_and_units():
    df = cv.runs_frame(RUNS)
    assert len(df) == 5 and df["run"].tolist()[0] == "#1 KTXMLC K=2 T=3"
    row = df.set_index("run_id").loc["2"]
    assert row["P@1"] == 0.61 and row[cv.TRAIN_TIME] == pytest.approx(2.0)   # 0.5 + 1.5
    assert df.set_index("run_id").loc["1", cv.SIZE] == pytest.approx(1.0)
    assert np.isnan(df.set_index("run_id").loc["3", "P@1"])
    # runs are grouped by (dataset, split): the same dataset on two splits is two groups
    assert cv.groups(df) == [f"bibtex · {OWN}", f"bibtex · {RANDOM}", f"adult · {RANDOM}"]
    assert cv.metric_columns(df)[:2] == ["P@1", "P@5"] and "n_rows" not in cv.metric_columns(df)
    assert cv.default_metrics(df[df["kind"] == "classifier"], "classifier") == \
        ["P@1", "P@5", "PSP@5", "coverage@5", cv.TRAIN_TIME]
    assert [cv.unit_of(m) for m in ("P@1", "PSP@5", "coverage@5", "nnz_after", cv.TRAIN_TIME,
                                    "clustering_error", "MI loss", "base P@1")] == \
        ["%", "%", "%", "count", "seconds", "score", "%", "%"]


def test_train_time_counts_reused_steps_where_they_were_fitted():
    agg = dict(_rec("a", "DEFRAG-XY d0=8", "agglomeration", "bibtex", "s1", OWN, {},
                    {"defrag_s": 0.5}, {"defrag": {}}), reused=[])
    clf = dict(_rec("b", "KTXMLC · DEFRAG", "classifier", "bibtex", "s1", OWN, {},
                    {"defrag_s": 0.0, "classifier_s": 2.0}, {}), reused=["defrag"],
               base_run_id="a")
    ref = dict(_rec("c", "KTXMLC · DEFRAG + REFRAG", "classifier", "bibtex", "s1", OWN, {},
                    {"defrag_s": 0.0, "classifier_s": 0.0, "rerank_s": 0.25}, {}),
               reused=["defrag", "classifier"], base_run_id="b")
    df = cv.runs_frame([agg, clf, ref]).set_index("run_id")
    assert df.loc["b", cv.TRAIN_TIME] == pytest.approx(2.5)
    assert df.loc["c", cv.TRAIN_TIME] == pytest.approx(2.75)     # 0.5 + 2.0 + 0.25
    alone = cv.runs_frame([ref]).set_index("run_id")             # bases not known: 0
    assert alone.loc["c", cv.TRAIN_TIME] == pytest.approx(0.25)


def test_latest_runs_baseline_and_deltas():
    df = cv.runs_frame(RUNS)
    g = f"bibtex · {OWN}"
    assert cv.latest_runs(df, "classifier", g) == ["1", "2"]
    # the plain classifier (no DEFRAG, no REFRAG) is the default baseline
    assert cv.default_baseline(df, ["2", "1"]) == "1"
    D = cv.delta_frame(df, ["1", "2"], ["P@1", "coverage@5", cv.TRAIN_TIME], "1")
    assert D.loc["#1 KTXMLC K=2 T=3", "Δ P@1"] == "baseline"
    assert D.loc["#2 KTXMLC K=2 T=3 · DEFRAG d0=8", "P@1"] == "61.00 %"
    assert D.loc["#2 KTXMLC K=2 T=3 · DEFRAG d0=8", "Δ P@1"] == "-2.00 pt"
    assert D.loc["#2 KTXMLC K=2 T=3 · DEFRAG d0=8", "Δ coverage@5"] == "+2.00 pt"
    assert D.loc["#2 KTXMLC K=2 T=3 · DEFRAG d0=8", f"Δ {cv.TRAIN_TIME}"] == "-2.00 s"
    b, v = (cv.runs_frame(RUNS).set_index("run_id").loc[k, cv.TRAIN_TIME] for k in "12")
    assert D.loc["#1 KTXMLC K=2 T=3", cv.SPEED] == "baseline"
    assert D.loc["#2 KTXMLC K=2 T=3 · DEFRAG d0=8", cv.SPEED] == f"{b / v:.1f}× faster"


def test_compare_claims_a_speed_only_outside_the_noise():
    """One timing each: under 0.2 s nothing is claimed, within ±15 % "no measurable
    difference", beyond it the ratio."""
    assert cv.speed_claim(0.04, 0.01) == "too fast to time"
    assert cv.speed_claim(1.0, 0.9) == "no measurable difference"
    assert cv.speed_claim(1.0, 0.5) == "2.0× faster"
    assert cv.speed_claim(0.5, 1.5) == "3.0× slower"


def test_a_sweep_of_defrag_runs_keeps_the_raw_classifier_in_the_default_selection():
    # a raw classifier, then a Triage-like sweep of seven DEFRAG runs on the same split
    sweep = [_rec(str(i), f"One-vs-all · DEFRAG d0={2 ** i}", "classifier", "bibtex", "s1",
                  OWN, {"P@1": 0.5 + i / 100}, {"classifier_s": 1.0},
                  {"defrag": {"d0": 2 ** i}, "classifier": {}}) for i in range(2, 9)]
    df = cv.runs_frame(RUNS[:1] + sweep)
    g = f"bibtex · {OWN}"
    picked = cv.latest_runs(df, "classifier", g)
    # six runs, oldest first: the raw classifier in place of the sweep's oldest shown run
    assert picked == ["1", "4", "5", "6", "7", "8"]
    assert cv.default_baseline(df, picked) == "1"
    # with a raw run among the latest six, the selection is just the latest six
    df2 = cv.runs_frame(RUNS[:1] + sweep + [dict(RUNS[0], run_id="9", title="#9 KTXMLC")])
    assert cv.latest_runs(df2, "classifier", g) == ["4", "5", "6", "7", "8", "9"]
    # other kinds are not classifiers on raw features: their latest six are kept as they are
    aggs = [_rec(f"a{i}", f"DEFRAG-XY d0={i}", "agglomeration", "bibtex", "s1", OWN, {},
                 {"defrag_s": 0.1}, {"defrag": {}}) for i in range(8)]
    assert cv.latest_runs(cv.runs_frame(aggs), "agglomeration", g) == \
        [f"a{i}" for i in range(2, 8)]


def test_one_chart_per_unit_and_one_panel_per_split():
    df = cv.runs_frame(RUNS)
    units = cv.unit_groups(["P@1", "P@5", "nnz_after", cv.TRAIN_TIME])
    assert units == {"%": ["P@1", "P@5"], "seconds": [cv.TRAIN_TIME], "count": ["nnz_after"]}
    with pytest.raises(ValueError, match="every metric"):
        cv.unit_figure(df, ["1"], ["P@1", "nnz_after"], "%")
    fig = cv.unit_figure(df, ["1", "2"], ["P@1", "P@5"], "%", baseline="1")
    np.testing.assert_allclose([list(t.y) for t in fig.data], [[63, 28], [61, 27]])  # in %
    assert [t.name for t in fig.data] == ["#1 KTXMLC K=2 T=3", "#2 KTXMLC K=2 T=3 · DEFRAG d0=8"]
    assert "Δ vs baseline: -2.00 pt" in fig.data[1].hovertext[0]
    assert "panel" not in fig.layout.title.text
    mixed = cv.unit_figure(df, ["1", "4"], ["P@1"], "%")
    assert {t.xaxis for t in mixed.data} == {"x", "x2"}                     # two panels
    assert "one panel per dataset and split" in mixed.layout.title.text


def test_csv_round_trip():
    df = cv.runs_frame(RUNS)
    back = pd.read_csv(io.BytesIO(cv.to_csv(df)))
    assert back["run_id"].astype(str).tolist() == df["run_id"].tolist()
    assert back["P@1"].iloc[0] == 0.63


# --------------------------------------------------------------------------- Export view
@pytest.fixture(scope="module")
def ml():
    return make_powerlaw_multilabel(300, 120, 20, random_state=0, test_size=0.2)


def test_pipeline_exports_and_entry_names(ml):
    split = make_split(ml)
    run = run_pipeline(ml, split, {"defrag": {"d0": 4}})
    files = {n: b for n, b, _ in ev.pipeline_exports("r1", run.pipeline,
                                                      [f"w{i}" for i in range(120)])}
    assert [ev.export_label(n) for n in files] == ["Feature clusters (CSV)"]
    csv = pd.read_csv(io.BytesIO(files["r1_clusters.csv"]))
    assert csv["cluster"].tolist() == run.pipeline.defrag.labels_.tolist()
    assert csv["feature_name"][5] == "w5"
    assert ev.entry_key("#3 KTXMLC K=2 T=3 · DEFRAG d0=8") == "run03_ktxmlc_k_2_t_3_defrag_d0_8"
    objs = ev.bundle_objects([run, run], ["#1 DEFRAG-XY d0=4", "#1 DEFRAG-XY d0=4"])
    assert len(objs) == 2                                   # names never collide
    assert "DEFRAG (Defrag, " in ev.describe_pipeline(run.pipeline)


def test_old_bundle_pairs_a_classifier_with_its_defrag(ml):
    """An older dashboard bundle held 'defrag' and a KTXMLC trained on its output: the
    import joins them, so the pipeline takes raw features (the bug: 'fitted on 128
    features; the current dataset has 1836')."""
    d = Defrag(d0=4).fit(ml.X, ml.Y)
    k = KTXMLC(n_trees=1).fit(d.transform(ml.X), ml.Y)
    objects, info = load_bundle(io.BytesIO(bundle_bytes({"defrag": d, "ktxmlc": k})))
    entries = {key: (pipe, note) for key, pipe, note in ev.pipelines_from_import(objects, info)}
    pipe, note = entries["ktxmlc"]
    assert "joined to the bundled DEFRAG 'defrag'" in note
    assert pipe.n_features_in_ == 120 and pipe.defrag is not None
    np.testing.assert_allclose(pipe.predict_scores(ml.X_test, 5).toarray(),
                               k.predict_scores(d.transform(ml.X_test), 5).toarray())
    assert entries["defrag"][0].kind == "agglomeration"
    assert ev.pipeline_name(pipe) == "Defrag + KTXMLC (older artifact)"
    # a REFRAG on its own cannot be evaluated: the note says why
    from featagg_core.agglomeration.refrag import Refrag
    lone = ev.pipelines_from_import({"refrag": Refrag().fit(ml.X, ml.Y, d)})
    assert lone[0][1] is None and "REFRAG" in lone[0][2]


def test_result_table_formats():
    T = ev.result_table({"P@1": 0.6312, "clusters": 256, "clustering_error": 0.30189,
                         "base PSP@5": 0.5})
    assert T.loc["P@1", "value"] == "63.12 %" and T.loc["clusters", "value"] == "256"
    assert T.loc["clustering_error", "value"] == "0.3019"
    assert T.loc["base PSP@5", "value"] == "50.00 %"


# --------------------------------------------------------------------------- AppTest
def _session_with(data, *specs, base_first=True):
    split = make_split(data)
    done = []
    for spec in specs:
        done.append(run_pipeline(data, split, spec,
                                 base=done[-1] if done and base_first else None))
    return {"featagg.runs": done}, done


def test_compare_page_empty_then_the_latest_classifiers_with_deltas(ml, app_for):
    at = app_for("compare").run()
    assert not at.exception
    assert any("No runs yet" in i.value for i in at.info)

    state, done = _session_with(ml, {"classifier": {"n_trees": 1}},
                                {"defrag": {"d0": 4}, "classifier": {"n_trees": 1}},
                                base_first=False)
    at = app_for("compare", ml, origin="sample", state=state).run()
    ok(at)
    # default view: this dataset and split, the classifier runs, the plain one as baseline
    (group,) = at.multiselect(key="cmp_groups").value
    assert group.startswith(f"{ml.name} · ") and done[0].split.describe() in group
    assert at.radio(key="cmp_kind").value == "classifier"
    picked = next(m for m in at.multiselect if m.label == "Runs")
    assert len(picked.value) == 2
    table = at.table[0].value
    # the runs' names: the spec's, then what the fit chose (ml's labels fit one flat tree)
    t1, t2 = (f"#{i} {r.name}" for i, r in enumerate(done, 1))
    assert t1.startswith("#1 KTXMLC K=16 T=1 → ") and \
        t2.startswith("#2 KTXMLC K=16 T=1 · DEFRAG d0=4 → ")
    assert list(table.index) == [t1, t2]
    assert table.loc[t1, "Δ P@1"] == "baseline"
    p1 = [100 * r.metrics["test"]["P@1"] for r in done]
    assert table.loc[t2, "Δ P@1"] == f"{p1[1] - p1[0]:+.2f} pt"
    # one chart per unit: percentages and seconds apart (the trade-off chart aside)
    import json
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"]
              for c in at.get("plotly_chart")]
    assert titles[:2] == ["Quality (percent)", "Time (seconds)"]
    assert not at.warning                                   # one split: no mixing note


def test_compare_page_says_when_splits_are_mixed(ml, app_for):
    split_a, split_b = make_split(ml), make_split(ml, how="random", test_size=0.3)
    a = run_pipeline(ml, split_a, {"classifier": {"n_trees": 1}})
    b = run_pipeline(ml, split_b, {"classifier": {"n_trees": 1}})
    at = app_for("compare", ml, origin="sample", runs=[a, b]).run()
    ok(at)
    groups = at.multiselect(key="cmp_groups").options
    assert len(groups) == 2 and len(at.multiselect(key="cmp_groups").value) == 1
    at.multiselect(key="cmp_groups").set_value(list(groups)).run()
    ok(at)
    assert any("different datasets or splits" in w.value for w in at.warning)
    assert len(at.table) == 2                               # one table per group


def test_export_page_offers_pipelines_bundle_and_csv(ml, app_for):
    state, done = _session_with(ml, {"defrag": {"d0": 4}},
                                {"defrag": {"d0": 4}, "classifier": {"n_trees": 1}})
    at = app_for("export", ml, origin="sample", state=state).run()
    ok(at)
    labels = [b.label for b in at.get("download_button")]
    assert labels.count("Artifact (.fgz)") == 2
    # each DEFRAG step's clusters, labelled by what they are (the file name,
    # "run01_defrag_xy_d0_4_clusters.csv", was the label and was cut short on the page)
    assert labels.count("Feature clusters (CSV)") == 2
    assert not any(lbl.endswith(".csv") for lbl in labels)
    assert any(lbl.startswith("Bundle of all 2 pipelines") for lbl in labels)
    assert "Run registry (JSON)" in labels


def test_export_page_without_models(app_for):
    at = app_for("export").run()
    assert not at.exception
    assert any("Nothing trained" in i.value for i in at.info)


def test_export_imports_a_pipeline_and_evaluates_it_on_the_current_split(ml, app_for):
    state, done = _session_with(ml, {"defrag": {"d0": 4}},
                                {"defrag": {"d0": 4}, "classifier": {"n_trees": 1}})
    blob = artifact_bytes(done[1].pipeline, dataset_fingerprint=ml.fingerprint)
    at = app_for("export", ml, origin="sample", state=state).run()
    up = next(u for u in at.file_uploader if u.key == "artifact_upload")
    up.set_value(("pipe.fgz", blob, "application/zip"))
    at.run()
    ok(at)
    assert any("Loaded 1 object(s)" in s.value for s in at.success)
    click(at, "eval_pipe")
    ok(at)
    table = at.table[0].value
    assert table.loc["P@1", "value"] == f"{100 * done[1].metrics['test']['P@1']:.2f} %"
    assert runs(at)[-1].name.endswith("(imported)")
    # another split of the same dataset: refused, with the reason
    at.session_state["featagg.split_settings"] = {ml.fingerprint: {
        "test_size": 0.3, "valid_size": 0.0, "random_state": 0, "how": "random"}}
    click(at, "eval_pipe")
    assert any("may test it on rows it was trained on" in e.value for e in at.error)


def test_compare_shows_real_runs_from_several_pages(app_for):
    """Runs made by really running the Feature agglomeration and Vocabulary compression
    pages (one browser session: its state carried from page to page) all reach Compare."""
    state = {}
    for page, button in (("feature_agglomeration.py", "fa_run"), ("vocabulary.py", "vc_run")):
        at = app_for(page, state=state, timeout=240).run()
        if page == "vocabulary.py":
            widget(at.checkbox, "vc_curves").set_value(False)
        click(at, button)
        ok(at)
        state = carry(at)
    done = state["featagg.runs"]
    kinds = {r.kind for r in done}
    assert {"agglomeration", "feature_clustering", "vocabulary"} <= kinds, kinds
    at = app_for("compare", state=state).run()
    ok(at)
    groups = at.multiselect(key="cmp_groups").options
    assert len(groups) == 2                               # Bibtex's split, Adult's split
    table = at.dataframe[0].value
    assert len(table) == len(done) and set(table["kind"]) == kinds


def test_export_evaluates_a_lone_vocabulary_compressor_on_its_column(app_for):
    from sklearn.metrics import mutual_info_score
    from featagg_core.data.synthetic import make_zipf_categorical
    from featagg_core.vocab.compressor import VocabularyCompressor
    t = make_zipf_categorical(3000, 40, n_columns=2, random_state=1)
    col = t.table.columns[1]
    vc = VocabularyCompressor(5).fit(t.table[col].to_numpy(), t.labels)
    at = app_for("export", t).run()
    up = next(u for u in at.file_uploader if u.key == "artifact_upload")
    up.set_value(("vc.fgz", artifact_bytes(vc), "application/zip"))
    at.run()
    widget(at.selectbox, "col_vc").set_value(col).run()
    click(at, "eval_vc")
    ok(at)
    table = at.table[0].value
    te = make_split(t).test
    vals, y = t.table[col].to_numpy()[te], np.asarray(t.labels)[te]
    assert float(table.loc["I(Z;C)", "value"]) == pytest.approx(
        mutual_info_score(y, vc.transform(vals)), rel=1e-3)


def test_export_import_is_charged_to_the_upload_load_budget(ml, app_for, monkeypatch):
    """An artifact is imported under the same load budget as a dataset upload
    (``intake.uploads.max_load_bytes``: 256 MiB unless FEATAGG_MAX_LOAD_MB says otherwise),
    not the library's 1 GiB default: with the upload default made smaller than the
    artifact's arrays, the page refuses it with the figure (the old page loaded it)."""
    from featagg_app.intake import uploads
    state, done = _session_with(ml, {"defrag": {"d0": 4}},
                                {"defrag": {"d0": 4}, "classifier": {"n_trees": 1}})
    blob = artifact_bytes(done[1].pipeline, dataset_fingerprint=ml.fingerprint)
    monkeypatch.delenv("FEATAGG_MAX_LOAD_MB", raising=False)
    monkeypatch.setattr(uploads, "DEFAULT_LOAD_MB", 0.01)         # 10 KiB
    at = app_for("export", ml, origin="sample", state=state).run()
    up = next(u for u in at.file_uploader if u.key == "artifact_upload")
    up.set_value(("pipe.fgz", blob, "application/zip"))
    at.run()
    assert not at.exception
    assert not any("Loaded" in s.value for s in at.success)
    assert any("was refused" in e.value and "MiB" in e.value for e in at.error), \
        [e.value for e in at.error]
