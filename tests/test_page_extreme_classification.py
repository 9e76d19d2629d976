"""Extreme classification page: its table/figure builders against brute force, and AppTest
runs of the page (default Bibtex sample; a small uploaded dataset with a random split,
DEFRAG features and one-vs-all)."""
import numpy as np
import pytest

from page_util import click, ok, runs, widget
from featagg_app.views import xmlc as xv
from featagg_core import metrics
from featagg_core.data import MultiLabelData
from featagg_core.xmlc.ktxmlc import KTXMLC
from featagg_core.xmlc.selection import elbow_curve
from featagg_core.data.synthetic import make_powerlaw_multilabel


@pytest.fixture(scope="module")
def trained():
    d = make_powerlaw_multilabel(400, 150, 40, random_state=1, test_size=0.25)
    # the trees (9 leaf clusters fit the beam of 10: the default would keep a flat tree)
    m = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2, one_vs_all="never").fit(d.X, d.Y)
    S = m.predict_scores(d.X_test, k=5)
    return d, m, S


def test_kept_flat_tree_only_for_the_one_vs_all_auto_choice(trained):
    from featagg_core.xmlc.ktxmlc import OneVsAll
    d, m, _ = trained
    flat = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2).fit(d.X, d.Y)
    assert len(flat.trees_) == 1 and flat.trees_[0]["n_children"][0] == d.Y.shape[1]
    assert xv.kept_flat_tree(flat)
    assert not xv.kept_flat_tree(m)                               # the trees
    assert not xv.kept_flat_tree(KTXMLC(max_leaf_labels=100).fit(d.X, d.Y))  # one leaf
    assert not xv.kept_flat_tree(OneVsAll().fit(d.X, d.Y))


def test_form_choice_shows_the_candidates_the_model_scored(trained, tmp_path):
    from featagg_core.artifacts.store import load_artifact, save_artifact
    from featagg_core.xmlc.ktxmlc import OneVsAll
    d, _, _ = trained
    auto = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2).fit(d.X, d.Y)
    reason, table = xv.form_choice(auto)
    assert reason == auto.choice_ and len(table) == len(auto.selection_) >= 2
    for (_, row), cand in zip(table.iterrows(), auto.selection_):
        assert row["candidate"] == ("one flat model" if cand["form"] == "flat"
                                    else "label trees")
        assert row["C"] == cand["C"]
        assert row["validation P@1 (%)"] == pytest.approx(100 * cand["P@1"])
        assert row["validation P@5 (%)"] == pytest.approx(100 * cand["P@5"])
    won = table[table["chosen"] == "✓"]
    assert len(won) == 1 and won["C"].iloc[0] == auto.C_
    assert won["candidate"].iloc[0] == ("one flat model" if auto.form_ == "flat"
                                        else "label trees")
    # re-imported: the sentence survives, the candidates are not saved
    save_artifact(auto, tmp_path / "auto.fgz")
    assert xv.form_choice(load_artifact(tmp_path / "auto.fgz")) == (auto.choice_, None)
    # too few rows to hold any out: no choice was made, nothing to show
    few = KTXMLC(n_clusters=3, max_leaf_labels=6).fit(d.X[:200], d.Y[:200])
    assert few.selection_ == [] and xv.form_choice(few) is None
    # no choice made: a form that was set, or another model
    assert xv.form_choice(KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2,
                                 form="trees").fit(d.X, d.Y)) is None
    assert xv.form_choice(OneVsAll().fit(d.X, d.Y)) is None


# ------------------------------------------------------------------ builders
def test_metrics_table_matches_hand_computed_precision(trained):
    d, m, S = trained
    ip = metrics.inverse_propensity(d.Y)
    T = xv.metrics_table(metrics.ranking_metrics(d.Y_test, S, (1, 3, 5), ip))
    assert list(T.index) == ["P@k", "nDCG@k", "PSP@k", "PSnDCG@k", "coverage@k"]
    Yd, Sd = d.Y_test.toarray(), S.toarray()
    for k in (1, 3, 5):
        # brute force: top-k by score, ties to the lower label index
        top = np.argsort(-Sd, axis=1, kind="stable")[:, :k]
        p = np.mean([Yd[i, top[i]].sum() / k for i in range(Yd.shape[0])])
        assert T.loc["P@k", f"k={k}"] == pytest.approx(100 * p)


def test_bucket_figure_sums_to_precision(trained):
    from featagg_core.experiment import bucket_metrics, make_split, run_pipeline
    d, _, _ = trained
    split = make_split(d)
    run = run_pipeline(d, split, {"classifier": {"n_clusters": 3, "max_leaf_labels": 6,
                                                 "n_trees": 2}})
    fig = xv.bucket_figure(bucket_metrics(run, d, split, "test", k=5, n_buckets=4), k=5)
    bars = np.asarray(fig.data[0].y)
    assert bars.shape == (4,)
    # the buckets add up to P@5, computed by hand from the pipeline's scores
    S = run.pipeline.predict_scores(d.X_test, k=5).toarray()
    top = np.argsort(-S, axis=1, kind="stable")[:, :5]
    Yd = d.Y_test.toarray()
    p5 = np.mean([Yd[i, top[i]].sum() / 5 for i in range(Yd.shape[0])])
    assert bars.sum() == pytest.approx(100 * p5)
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


def test_sunburst_of_a_flat_tree_says_it_is_flat(trained):
    """A flat KTXMLC (one-vs-all kept by ``one_vs_all="auto"``) is drawn as what it is:
    every label under the root, no K-way clusters in the title; a grown tree is not."""
    d, m, _ = trained
    names = [f"tag{j}" for j in range(d.Y.shape[1])]
    flat = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2).fit(d.X, d.Y)
    assert xv.kept_flat_tree(flat)
    nodes = flat.tree_nodes(0)
    assert xv.is_flat(nodes) and not xv.is_flat(m.tree_nodes(1))
    fig = xv.tree_sunburst(flat, 0, names, nodes=nodes)
    assert fig.layout.title.text.startswith(f"One flat tree: all {d.Y.shape[1]} labels")
    assert list(fig.data[0].parents).count("n0") == d.Y.shape[1]
    assert "K-way" in xv.tree_sunburst(m, 1, names).layout.title.text


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
def _small_upload():
    d = make_powerlaw_multilabel(300, 120, 30, random_state=5)
    return MultiLabelData(X=d.X, Y=d.Y, name="tiny", label_names=[f"t{j}" for j in range(30)])


def test_page_trains_on_bibtex_and_records_the_run(app_for):
    at = app_for("extreme_classification", timeout=240).run()
    ok(at)
    assert any("Bibtex" in i.value or "bibtex" in i.value for i in at.info)
    assert any("own split" in c.value for c in at.caption)
    widget(at.number_input, "xmlc_trees").set_value(1).run()   # one tree keeps the test short
    click(at, "xmlc_train", 240)
    ok(at)
    cards = {m.label: m.value for m in at.metric}
    p1 = float(cards["P@1"].rstrip("%"))
    assert p1 > 55.0, cards        # omikuji (3 trees) reaches 63.9 on this split
    done = runs(at)
    # the name says what ran: one tree asked, one flat tree fitted (see below)
    assert len(done) == 1 and done[0].name.startswith("KTXMLC K=16 T=1 → one flat tree")
    assert 100 * done[0].metrics["test"]["P@1"] == pytest.approx(p1, abs=0.01)
    assert done[0].model_sizes["total"] > 0
    assert isinstance(done[0].pipeline.classifier, KTXMLC)
    assert len(at.dataframe) == 3          # metrics table + candidates + example points
    # the flat model won the choice on the held-out training rows, and the page says so:
    # the model's own sentence and its candidates, the chosen one ticked
    flat = done[0].pipeline.classifier
    assert len(flat.trees_) == 1 and flat.trees_[0]["n_children"][0] == 159
    assert flat.form_ == "flat" and any("one flat tree" in c.value for c in at.caption)
    assert "What KTXMLC chose" in [h.value for h in at.subheader]
    shown = at.dataframe[1].value
    assert list(shown["C"]) == [r["C"] for r in flat.selection_]
    assert list(shown["chosen"]) == ["✓" if r["chosen"] else "" for r in flat.selection_]
    assert any("It chose" in c.value and "validation rows" in c.value for c in at.caption)
    widget(at.checkbox, "xmlc_keep_trees").check().run()
    click(at, "xmlc_train", 240)
    ok(at)
    grown = runs(at)[-1].pipeline.classifier
    assert grown.one_vs_all == "never" and grown.trees_[0]["depth"].max() == 2
    assert not any("one flat tree" in c.value for c in at.caption)
    assert "What KTXMLC chose" not in [h.value for h in at.subheader]
    assert len(at.dataframe) == 2


def _whole_state(at) -> dict:
    """Every key of the session, widget values included: what the page sees when the
    dataset is changed in the sidebar while the person stays on it."""
    return {k: at.session_state[k] for k in at.session_state}


def _knobs(at) -> dict:
    return {k: widget(at.number_input, f"xmlc_{k}").value
            for k in ("K", "trees", "depth", "leaf", "beam")}


def test_page_preset_follows_the_numbers(app_for):
    """The preset radio says which settings the page will train: a number changed by hand
    switches it to Custom; picking a preset sets its numbers (the page's PRESETS)."""
    at = app_for("extreme_classification", timeout=240).run()
    ok(at)
    assert widget(at.radio, "xmlc_preset").value == "paper"
    assert _knobs(at) == {"K": 16, "trees": 3, "depth": 20, "leaf": 100, "beam": 10}
    widget(at.number_input, "xmlc_trees").set_value(1).run()
    ok(at)
    assert widget(at.radio, "xmlc_preset").value == "custom"
    assert _knobs(at)["trees"] == 1                  # the person's number is kept
    widget(at.radio, "xmlc_preset").set_value("fast").run()
    ok(at)
    assert _knobs(at) == {"K": 16, "trees": 1, "depth": 4, "leaf": 10, "beam": 5}
    at.run()                                         # and it stays the fast preset
    assert widget(at.radio, "xmlc_preset").value == "fast"
    widget(at.radio, "xmlc_preset").set_value("paper").run()
    assert _knobs(at)["trees"] == 3 and widget(at.radio, "xmlc_preset").value == "paper"
    widget(at.number_input, "xmlc_trees").set_value(3).run()   # the preset's own value: no change
    assert widget(at.radio, "xmlc_preset").value == "paper"


def test_page_custom_keeps_the_hidden_settings_of_its_preset(app_for):
    """Custom started from Fast trains with Fast's settings that have no widget (balanced
    clusters, 5 k-means and solver passes: the page's PRESET_EXTRAS), and says so; Custom
    started from Default trains with KTXMLC's own values. Changing the beam must not also
    make the solver run 20 passes instead of 5."""
    data = _small_upload()
    at = app_for("extreme_classification", data).run()
    ok(at)
    widget(at.radio, "xmlc_preset").set_value("fast").run()
    widget(at.number_input, "xmlc_beam").set_value(6).run()
    ok(at)
    assert widget(at.radio, "xmlc_preset").value == "custom"
    assert any("started from **Fast" in c.value for c in at.caption)
    click(at, "xmlc_train", 240)
    ok(at)
    fast_custom = runs(at)[-1].spec["classifier"]
    assert (fast_custom["beam_width"], fast_custom["max_iter"], fast_custom["kmeans_max_iter"],
            fast_custom["balanced"]) == (6, 5, 5, True)
    widget(at.radio, "xmlc_preset").set_value("paper").run()
    widget(at.number_input, "xmlc_beam").set_value(6).run()
    assert widget(at.radio, "xmlc_preset").value == "custom"
    assert not any("started from" in c.value for c in at.caption)
    click(at, "xmlc_train", 240)
    ok(at)
    paper_custom = runs(at)[-1].spec["classifier"]
    defaults = KTXMLC().get_params()
    assert paper_custom["beam_width"] == 6
    assert paper_custom.get("max_iter", defaults["max_iter"]) == defaults["max_iter"] == 20
    assert paper_custom.get("balanced", defaults["balanced"]) == defaults["balanced"]


def test_page_numbers_follow_a_dataset_change_in_the_sidebar(app_for):
    """Bibtex (159 labels) → a 14-label set while staying on the page. Streamlit resets a
    number outside its new range to the minimum, which used to leave leaves of 1 label
    and K = 2. The widgets are keyed by the dataset (featagg_app.keys.data_key): every
    dataset starts from its preset fitted to its label count, back on Bibtex too, and a
    custom number set on one dataset does not carry over to another."""
    small = make_powerlaw_multilabel(300, 50, 14, random_state=0, test_size=0.25)
    at = app_for("extreme_classification", timeout=240).run()
    ok(at)
    at2 = app_for("extreme_classification", small, state=_whole_state(at)).run()
    ok(at2)
    assert _knobs(at2) == {"K": 14, "trees": 3, "depth": 20, "leaf": 14, "beam": 10}
    assert widget(at2.radio, "xmlc_preset").value == "paper"
    from featagg_core.data.samples import load_sample
    at3 = app_for("extreme_classification", load_sample("bibtex"), origin="sample",
                  source_id="bibtex", state=_whole_state(at2)).run()
    ok(at3)
    assert _knobs(at3) == {"K": 16, "trees": 3, "depth": 20, "leaf": 100, "beam": 10}
    # custom numbers on Bibtex (leaf 50, K 20) stay Bibtex's: the small set starts afresh
    widget(at3.number_input, "xmlc_leaf").set_value(50).run()
    widget(at3.number_input, "xmlc_K").set_value(20).run()
    assert widget(at3.radio, "xmlc_preset").value == "custom"
    at4 = app_for("extreme_classification", small, state=_whole_state(at3)).run()
    ok(at4)
    assert _knobs(at4) == {"K": 14, "trees": 3, "depth": 20, "leaf": 14, "beam": 10}
    assert widget(at4.radio, "xmlc_preset").value == "paper"


def test_page_random_split_defrag_features_and_one_vs_all(app_for):
    data = _small_upload()
    at = app_for("extreme_classification", data).run()
    ok(at)
    # no test part in the data: the session's split is a random one, and the page says so
    assert any("random 20 % test split" in c.value for c in at.caption)
    at.radio(key="xmlc_features").set_value("agglomerated (DEFRAG)").run()
    ok(at)
    assert any("DEFRAG" in i.value for i in at.info)
    at.radio(key="xmlc_model").set_value("One-vs-all").run()
    click(at, "xmlc_train")
    ok(at)
    run = runs(at)[-1]
    assert run.name == "One-vs-all C=0.5 · DEFRAG d0=8"
    assert run.pipeline.n_features_in_ == 120                      # raw features in
    assert run.pipeline.classifier.n_features_in_ < 120           # DEFRAG features
    assert run.metrics["test"]["n_rows"] == 60                    # 20 % of 300
    # changing a parameter shows that the results are the last run's until Train
    widget(at.number_input, "xmlc_C_ova").set_value(2.0).run()
    ok(at)
    assert any("press **Train**" in i.value for i in at.info)


def test_page_reuses_a_defrag_run_of_the_same_split_only(app_for):
    data = _small_upload()
    at = app_for("feature_agglomeration", data).run()
    widget(at.checkbox, "fa_km").uncheck()
    click(at, "fa_run")
    from page_util import carry
    state = carry(at)
    defrag_run = runs(at)[0]
    at = app_for("extreme_classification", state=state).run()
    at.radio(key="xmlc_features").set_value("agglomerated (DEFRAG)").run()
    ok(at)
    assert any("Using the DEFRAG clustering of **#1 DEFRAG-XY d0=8**" in i.value
               for i in at.info)
    widget(at.number_input, "xmlc_trees").set_value(1).run()
    click(at, "xmlc_train")
    run = runs(at)[-1]
    assert run.reused == ["defrag"] and run.pipeline.defrag is defrag_run.pipeline.defrag
    # another split: the DEFRAG run is not reused, the page says so and offers a refit
    at.session_state["featagg.split_settings"] = {data.fingerprint: {
        "test_size": 0.3, "valid_size": 0.0, "random_state": 1, "how": None}}
    at.run()
    ok(at)
    assert any("fitted on another split" in w.value for w in at.warning)
    assert any(b.label.startswith("Refit DEFRAG-XY d0=8") for b in at.button)
    assert any("No DEFRAG run on this split" in i.value for i in at.info)
    # the refit: DEFRAG with the run's spec on the current split, then used by the page
    click(at, "xmlc_defrag_run__refit")
    ok(at)
    refit = [r for r in runs(at) if r.kind == "agglomeration"][-1]
    assert refit.run_id != defrag_run.run_id and refit.split_id != defrag_run.split_id
    assert refit.spec == defrag_run.spec
    assert any("Using the DEFRAG clustering of" in i.value for i in at.info)
    assert not any(b.label.startswith("Refit DEFRAG-XY d0=8") for b in at.button)


def test_page_elbow_plot(app_for):
    data = _small_upload()
    at = app_for("extreme_classification", data).run()
    widget(at.toggle, "xmlc_elbow_on").set_value(True)
    from page_util import settle
    settle(at)
    ok(at)
    assert any("Elbow at" in m.value for m in at.markdown)


def test_page_says_when_its_estimate_is_not_known_yet(app_for, monkeypatch):
    # a server still compiling the kernels an estimate needs has no estimate yet: the
    # caption says so in words, not "about unknown"
    from featagg_app import runs_ui
    from featagg_app.text import approx_seconds

    assert approx_seconds(None) == "not known yet"
    assert approx_seconds(12.3) == "about 12 s"
    assert approx_seconds(0.2) == "under a second"
    monkeypatch.setattr(runs_ui, "estimate", lambda data, split, spec: None)
    at = app_for("extreme_classification").run()
    ok(at)
    shown = [c.value for c in at.caption if c.value.startswith("Estimated time")]
    assert shown and shown[0].startswith("Estimated time: not known yet on this server")
    assert not any("unknown" in c.value for c in at.caption)
