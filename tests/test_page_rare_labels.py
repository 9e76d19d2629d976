"""Rare labels page: its table/figure builders against brute force, and AppTest runs."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from naive import dense_top
from page_util import click, column_formats, ok, runs, widget
from featagg_app.views import rare_labels as rv
from featagg_core import metrics as M


def _scores(n, L, seed, density=0.6):
    rng = np.random.default_rng(seed)
    S = sp.random(n, L, density=density, format="csr", random_state=rng)
    S.data = rng.uniform(0.01, 1.0, S.nnz)
    return S


def _labels(n, L, seed):
    rng = np.random.default_rng(seed)
    P = rng.random((n, L)) < (0.8 / (np.arange(L) + 1) ** 0.7)[None, :]
    return sp.csr_matrix(P.astype(np.float32))


def test_bucket_table_from_the_core_matches_brute_force():
    """The page's bucket table is experiment.bucket_metrics' (fractions → %), and its
    coverage per bucket is the brute-force one."""
    from featagg_core.experiment import bucket_metrics, make_split, run_pipeline
    d = _small()
    split = make_split(d)
    run = run_pipeline(d, split, {"classifier": {"n_trees": 1}, "rerank": {"alpha": 0.3}})
    bt = rv.bucket_table(bucket_metrics(run, d, split, "test", k=5), k=5)
    S = run.pipeline.scores(d.X_test, 5)[0]
    B = run.pipeline.scores(d.X_test, 5, rerank=False)[0]
    Yd = d.Y_test.toarray()
    b = M.label_frequency_buckets(d.Y, 5)
    present = Yd.sum(0) > 0
    for name, scores in (("REFRAG", S), ("classifier", B)):
        top = dense_top(scores, 5)
        hit = np.zeros(d.Y.shape[1], bool)
        for i, row in enumerate(top):
            for lab in row:
                hit[lab] |= Yd[i, lab] == 1
        for i in range(5):
            m = (b == i) & present
            exp = 100 * hit[m].sum() / m.sum() if m.sum() else np.nan
            np.testing.assert_allclose(bt[f"coverage {name}"][i], exp)
        np.testing.assert_allclose(bt[f"P@5 {name}"].sum(),
                                   M.precision_at_k(d.Y_test, scores, 5) * 100)
    assert bt["labels"].sum() == d.Y.shape[1]
    fig = rv.bucket_figure(bt, ["classifier", "REFRAG"])
    assert len(fig.data) == 2 and list(fig.data[0].x) == list(bt["bucket"])


def test_rare_examples_are_new_correct_labels_rarest_first():
    Ytr, Yte = _labels(300, 25, 4), _labels(80, 25, 5)
    S, R = _scores(80, 25, 6), _scores(80, 25, 7)
    ex = rv.rare_examples(Ytr, Yte, S, R, [f"t{j}" for j in range(25)], k=5, max_rows=500)
    tb, tr = dense_top(S, 5), dense_top(R, 5)
    Yd = Yte.toarray()
    expected = {(i, l) for i in range(80) for l in tr[i] if Yd[i, l] == 1 and l not in tb[i]}
    got = {(int(i), int(n[1:])) for i, n in zip(ex["test point"], ex["label"])}
    assert got == expected and len(ex) == len(expected) > 0
    assert list(ex["train examples"]) == sorted(ex["train examples"])
    for _, row in ex.iterrows():
        l = int(row["label"][1:])
        assert row["REFRAG rank"] == tr[row["test point"]].index(l) + 1
        full = dense_top(S[row["test point"]], 1000)[0]
        assert row["base rank"] == (str(full.index(l) + 1) if l in full else "not shortlisted")


def test_imputation_example_statuses():
    orig = sp.csr_matrix(np.array([[1.0, 2.0, 0.0, 3.0, 0.0]]))
    erased = sp.csr_matrix(np.array([[1.0, 0.0, 0.0, 0.0, 0.0]]))
    imputed = sp.csr_matrix(np.array([[1.0, 0.5, 0.0, 0.0, 0.25]]))
    ex = rv.imputation_example(orig, erased, imputed, np.array([0, 0, 1, 1, 0]),
                               ["a", "b", "c", "d", "e"])
    st = dict(zip(ex["feature"], ex["status"]))
    assert st == {"a": "kept", "b": "erased, restored", "d": "erased, lost",
                  "e": "imputed (new)"}
    assert list(ex["status"])[0] == "erased, restored"
    assert rv.status_counts(ex) == {"kept": 1, "erased, restored": 1, "erased, lost": 1,
                                    "imputed (new)": 1}
    assert dict(zip(ex["feature"], ex["cluster"])) == {"a": 0, "b": 0, "d": 1, "e": 0}


def test_metrics_table_and_figures():
    flat = {f"{m}@{k}": 0.1 * k for m in ("P", "PSP", "coverage") for k in rv.KS}
    flat.update({f"base {m}@{k}": 0.05 * k for m in ("P", "PSP", "coverage") for k in rv.KS})
    T = rv.metrics_table(flat)
    assert list(T.index) == ["classifier", "REFRAG"]
    assert T.loc["REFRAG", "P@3"] == pytest.approx(30.0)
    assert T.loc["classifier", "coverage@5"] == pytest.approx(25.0)
    sweep = pd.DataFrame({"alpha": [1.0, 0.5, 0.0], "P@5": [0.50, 0.48, 0.30],
                          "coverage@5": [0.20, 0.30, 0.40]})
    fig = rv.sweep_figure(sweep, 0.5)
    assert len(fig.data) == 2 and list(fig.data[0].y) == [50, 48, 30]
    curve = pd.DataFrame({"fraction": [0, 0.5], **{f"P@{k}": [0.5, 0.4] for k in rv.KS},
                          **{f"P@{k} FIAT": [0.5, 0.45] for k in rv.KS}})
    erasure = rv.erasure_figure(curve)
    assert len(erasure.data) == 6
    # P@k in percent, and six legend entries under the x axis (above, they ran into the
    # title)
    assert list(erasure.data[1].y) == [50.0, 45.0]
    assert erasure.layout.legend.y < 0 and erasure.layout.legend.yanchor == "top"


# ---------------------------------------------------------------------------
# the page (AppTest)
# ---------------------------------------------------------------------------

def _small():
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    d = make_powerlaw_multilabel(500, 300, 40, avg_labels=3, avg_features=15,
                                 test_size=0.3, random_state=1)
    d.name = "small synthetic"
    return d


def _state_with(data, *specs):
    """The session state (for ``app_for(..., state=)``) whose registry holds runs of
    ``specs`` on the default split of ``data``."""
    from featagg_core.experiment import make_split, run_pipeline
    split = make_split(data)
    done = []
    for spec in specs:
        done.append(run_pipeline(data, split, spec))
        assert done[-1].status == "done", done[-1].message
    return {"featagg.runs": done}


def test_page_never_trains_unasked_then_alpha_one_is_the_classifier(app_for):
    data = _small()
    at = app_for("rare_labels", data).run()
    ok(at)
    assert at.title[0].value == "Rare labels and imputation"
    # no classifier run: the page says so, trains nothing, and offers a named button
    assert any("No classifier run on this split yet" in i.value for i in at.info)
    assert runs(at) == []
    assert at.button(key="rl_train_default").label.startswith("Train KTXMLC K=2 T=1")
    click(at, "rl_train_default")
    ok(at)
    # the run's name: the spec's, then the form KTXMLC chose (form="auto")
    (trained,) = runs(at)
    clf = trained.pipeline.classifier
    flat = len(clf.trees_) == 1 and int(clf.trees_[0]["n_children"][0]) == data.Y.shape[1]
    assert trained.name.startswith("KTXMLC K=2 T=1 → "
                                   + ("one flat tree" if flat else "label trees")), trained.name
    assert any(f"Using **#1 {trained.name}**" in c.value for c in at.caption)
    # REFRAG is tuned on validation rows unless the user switches it off
    assert widget(at.toggle, "rl_tune").value is True
    click(at, "rl_refrag_run")
    click(at, "rl_fiat_run")
    ok(at)
    labels = [m.label for m in at.metric]
    assert "coverage@5 with REFRAG" in labels and "P@1 erased + FIAT" in labels
    names = [r.name for r in runs(at)]
    assert any(n.endswith("+ REFRAG tuned") for n in names), names
    assert any("FIAT mix=0.25" in n for n in names)
    assert any("REFRAG tuned on" in s.value for s in at.success)
    assert len(at.get("download_button")) == 2
    n_runs = len(runs(at))
    widget(at.toggle, "rl_tune").set_value(False)
    at.run()
    widget(at.slider, "rl_alpha").set_value(1.0)
    click(at, "rl_refrag_run")
    ok(at)
    df = at.dataframe[0].value
    np.testing.assert_allclose(df.loc["REFRAG"].to_numpy(), df.loc["classifier"].to_numpy())
    assert len(runs(at)) == n_runs + 1
    at.run()                                          # a rerun makes no run
    assert len(runs(at)) == n_runs + 1


def test_page_uses_the_picked_run_and_matches_the_library(app_for):
    from featagg_core.agglomeration.defrag import Defrag
    from featagg_core.agglomeration.fiat import Fiat, erase_features
    from featagg_core.agglomeration.refrag import Refrag
    data = _small()
    state = _state_with(data, {"classifier": {"n_trees": 1}},
                        {"defrag": {"d0": 5}, "classifier": {"n_trees": 1}})
    at = app_for("rare_labels", data, origin="sample", state=state).run()
    ok(at)
    # the latest classifier run (on DEFRAG features) is used by default, and named
    latest = state["featagg.runs"][1].name
    assert latest.startswith("KTXMLC K=16 T=1 · DEFRAG d0=5")
    assert any(f"Using **#2 {latest}**" in c.value for c in at.caption)
    widget(at.toggle, "rl_tune").set_value(False)              # REFRAG's own defaults
    at.run()
    click(at, "rl_refrag_run")
    click(at, "rl_fiat_run")
    ok(at)
    base = state["featagg.runs"][1]
    clus = base.pipeline.defrag
    # independent: the classifier's shortlist, REFRAG fitted by hand on the training rows
    np.testing.assert_array_equal(clus.labels_, Defrag(d0=5).fit(data.X, data.Y).labels_)
    S = base.pipeline.predict_scores(data.X_test, k=100)
    R = Refrag().fit(data.X, data.Y, clus).rerank(data.X_test, S, k=5)
    df = at.dataframe[0].value
    # the rare labels REFRAG found: training counts with thousands separators
    found = [d for d in at.dataframe if "train examples" in d.value.columns]
    assert len(found) == 1 and column_formats(found[0])["train examples"] == "localized"
    np.testing.assert_allclose(df.loc["REFRAG", "P@5"],
                               M.precision_at_k(data.Y_test, R, 5) * 100)
    np.testing.assert_allclose(df.loc["classifier", "coverage@5"],
                               M.coverage_at_k(data.Y_test, S, 5) * 100)
    # FIAT card: P@1 of the erased + imputed first 1000 test points
    Xs, Ys = data.X_test[:1000], data.Y_test[:1000]
    Xi = Fiat(clus).fit(data.X).transform(erase_features(Xs, 0.5, random_state=0))
    card = [m for m in at.metric if m.label == "P@1 erased + FIAT"][0]
    assert card.value == f"{M.precision_at_k(Ys, base.pipeline.predict_scores(Xi, k=5), 1) * 100:.2f} %"
    # both new runs reused the classifier run's fitted steps
    for r in runs(at)[2:]:
        assert r.base_run_id == base.run_id and "classifier" in r.reused
