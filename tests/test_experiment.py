"""The run model (featagg_core.experiment): splits, specs, run_pipeline, Pipeline, evaluate and
the sweeps, each checked against an independent computation on small data."""
import json
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mutual_info_score

from featagg_core import (
    KTXMLC,
    Defrag,
    Fiat,
    Refrag,
    VocabularyCompressor,
    load_artifact,
    metrics,
    save_artifact,
)
from featagg_core.graph import baselines as fsb
from featagg_core.agglomeration.defrag import clustering_error, feature_representation
from featagg_core.experiment import (
    Pipeline,
    as_pipeline,
    bucket_metrics,
    canonical_spec,
    elbow,
    erasure_curve,
    evaluate,
    feature_selection_comparison,
    make_split,
    plan_run,
    predictions,
    refrag_alpha_curve,
    run_name,
    run_pipeline,
    split_rows,
    vocabulary_budget_curve,
    vocabulary_report,
)
from featagg_core.graph.evaluation import evaluate_selection
from featagg_core.xmlc.selection import elbow_curve
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)


@pytest.fixture(scope="module")
def ml():
    """Multi-label data without a test part of its own (random splits)."""
    return make_powerlaw_multilabel(360, 140, 24, avg_labels=3, avg_features=12,
                                    random_state=11)


@pytest.fixture(scope="module")
def ml_own():
    """Multi-label data with its own test part."""
    return make_powerlaw_multilabel(400, 120, 20, avg_labels=3, avg_features=12,
                                    random_state=5, test_size=0.25)


@pytest.fixture(scope="module")
def graph():
    return make_attributed_sbm(160, 3, p_in=0.2, p_out=0.01, n_informative=8, n_noise=24,
                               random_state=2)


@pytest.fixture(scope="module")
def table():
    return make_zipf_categorical(2500, 120, n_columns=2, random_state=3)


@pytest.fixture(scope="module")
def refrag_run(ml):
    split = make_split(ml, test_size=0.25, valid_size=0.1, random_state=4)
    spec = {"defrag": {"d0": 6}, "classifier": {"n_trees": 2, "max_leaf_labels": 6},
            "rerank": {"alpha": 0.5, "shortlist": 12}}
    run = run_pipeline(ml, split, spec)
    assert run.status == "done", run.message
    return run


# ----------------------------------------------------------------------------- splits
def test_random_split_follows_the_rule(ml):
    n = ml.X.shape[0]
    s = make_split(ml, test_size=0.2, valid_size=0.1, random_state=3)
    perm = np.random.default_rng(3).permutation(n)
    n_test, n_valid = round(0.2 * n), round(0.1 * n)
    np.testing.assert_array_equal(s.test, np.sort(perm[:n_test]))
    np.testing.assert_array_equal(s.valid, np.sort(perm[n_test:n_test + n_valid]))
    np.testing.assert_array_equal(s.train, np.sort(perm[n_test + n_valid:]))
    assert s.how == "random" and not s.own_test and s.test_size == 0.2
    # disjoint and covering
    allr = np.concatenate([s.train, s.valid, s.test])
    assert np.array_equal(np.sort(allr), np.arange(n))
    assert s.n_rows == n and s.n_test_rows == n_test
    assert not s.train.flags.writeable


def test_own_split_keeps_the_test_part_and_carves_valid_from_train(ml_own):
    s = make_split(ml_own, test_size=0.3, valid_size=0.2, random_state=1)
    n, n_test = ml_own.X.shape[0], ml_own.X_test.shape[0]
    assert s.how == "dataset" and s.own_test and s.test_size is None
    np.testing.assert_array_equal(s.test, np.arange(n_test))
    assert s.valid.size == round(0.2 * n)
    assert np.intersect1d(s.train, s.valid).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([s.train, s.valid])), np.arange(n))
    perm = np.random.default_rng(1).permutation(n)
    np.testing.assert_array_equal(s.valid, np.sort(perm[:s.valid.size]))
    assert s.describe() == (f"{ml_own.name}'s own split: {n:,} training rows "
                            f"({s.valid.size:,} of them validation) / {n_test:,} test")
    # how="random" ignores the own test part
    r = make_split(ml_own, how="random")
    assert r.how == "random" and r.n_rows == n and r.test.size == round(0.2 * n)


def test_rows_depend_only_on_n_and_seed_and_split_id_on_everything(ml):
    other = make_powerlaw_multilabel(ml.X.shape[0], 30, 5, random_state=99)
    a, b = make_split(ml, random_state=2), make_split(other, random_state=2)
    for part in ("train", "valid", "test"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    assert a.split_id != b.split_id                      # different data
    assert make_split(ml, random_state=2).split_id == a.split_id   # stable
    assert make_split(ml, random_state=2) == a
    assert len(a.split_id) == 16 and int(a.split_id, 16) >= 0
    assert make_split(ml, random_state=3).split_id != a.split_id
    assert make_split(ml, test_size=0.3, random_state=2).split_id != a.split_id
    assert make_split(ml, valid_size=0.1, random_state=2).split_id != a.split_id


def test_graph_and_table_splits_and_split_rows(graph, table):
    g = make_split(graph, test_size=0.25, random_state=1)
    assert g.n_rows == graph.A.shape[0] and "nodes" in g.describe()
    sub = split_rows(graph, g, "train")
    A = graph.A.toarray()
    np.testing.assert_array_equal(sub.A.toarray(), A[np.ix_(g.train, g.train)])
    np.testing.assert_array_equal(sub.X.toarray(), graph.X.toarray()[g.train])
    np.testing.assert_array_equal(sub.y, np.asarray(graph.y)[g.train])
    t = make_split(table, valid_size=0.1)
    part = split_rows(table, t, "train+valid")
    idx = np.sort(np.concatenate([t.train, t.valid]))
    assert part.table.equals(table.table.iloc[idx].reset_index(drop=True))
    np.testing.assert_array_equal(part.labels, table.labels[idx])
    with pytest.raises(ValueError, match="another dataset"):
        split_rows(graph, t, "test")


@pytest.mark.parametrize("kw, message", [
    ({"test_size": 0.0}, "test_size"), ({"test_size": 1.0}, "test_size"),
    ({"valid_size": 0.9}, "leave no training"), ({"random_state": -1}, "random_state"),
    ({"how": "dataset"}, "no test part"), ({"test_size": "0.2"}, "test_size")])
def test_bad_split_arguments(ml, kw, message):
    with pytest.raises(ValueError, match=message):
        make_split(ml, **kw)


# ----------------------------------------------------------------------------- specs
def test_canonical_spec_fills_defaults_and_orders_keys():
    a = canonical_spec({"classifier": {"n_trees": 2}, "defrag": {}})
    b = canonical_spec({"defrag": {"d0": 8, "representation": "XY"},
                        "classifier": {"kind": "ktxmlc", "n_trees": 2,
                                       "n_clusters": KTXMLC().n_clusters}})
    assert a == b and json.dumps(a) == json.dumps(b)
    assert canonical_spec(a) == a                       # idempotent
    assert list(a) == ["defrag", "classifier"]
    assert list(a["classifier"])[0] == "kind"
    assert a["classifier"]["C"] == KTXMLC().C and a["defrag"]["per_tree"] is False
    # REFRAG without a pipeline defrag gets its own (defaults), with one it uses it
    r = canonical_spec({"classifier": {}, "rerank": {}})
    assert r["rerank"]["defrag"]["d0"] == Defrag().d0 and r["rerank"]["shortlist"] == 100
    assert "defrag" not in canonical_spec({"defrag": {}, "classifier": {},
                                           "rerank": {}})["rerank"]


@pytest.mark.parametrize("spec, key", [
    ({"classifier": {"n_tres": 2}}, "classifier.n_tres"),
    ({"classifier": {"n_clusters": 1}}, "classifier.n_clusters"),
    ({"classifier": {"kind": "svm"}}, "classifier.kind"),
    ({"defrag": {"d0": 0}}, "defrag"),
    ({"defrag": {"d0": "8"}}, "defrag.d0"),
    ({"rerank": {}}, "rerank"),
    ({"bogus": {}}, "bogus"),
    ({"classifier": {}, "rerank": {"alpha": 2.0}}, "rerank"),
    ({"feature_clustering": {"kind": "kmeans"}}, "feature_clustering.n_clusters"),
    ({"feature_selection": {"d": 0}}, "feature_selection.d"),
    ({"vocabulary": {"method": "dp", "allocation": "greedy"}}, "vocabulary.allocation"),
    ({"defrag": {"per_tree": True}}, "defrag.per_tree"),
    ({"defrag": {"per_tree": True, "sample_points": 0.5}, "classifier": {}}, "defrag.sample_points"),
    ({"vocabulary": {}, "defrag": {}}, "defrag"),
])
def test_bad_spec_raises_naming_the_key(spec, key):
    with pytest.raises(ValueError) as err:
        canonical_spec(spec)
    assert str(err.value).startswith(key)


def test_spec_that_does_not_fit_the_data_fails_before_any_work(ml, graph, table):
    with pytest.raises(ValueError, match="multilabel dataset"):
        run_pipeline(graph, make_split(graph), {"classifier": {}})
    with pytest.raises(ValueError, match="vocabulary.columns"):
        run_pipeline(table, make_split(table), {"vocabulary": {"columns": ["nope"]}})
    with pytest.raises(ValueError, match="another dataset"):
        run_pipeline(ml, make_split(table), {"defrag": {}})
    with pytest.raises(ValueError, match="feature_clustering.n_clusters"):
        run_pipeline(ml, make_split(ml), {"feature_clustering": {"n_clusters": 10_000}})


def test_run_names():
    assert run_name(canonical_spec({"classifier": {"n_trees": 3}, "defrag": {"d0": 8}})) == \
        "KTXMLC K=16 T=3 · DEFRAG d0=8"
    assert run_name(canonical_spec({"classifier": {"kind": "ova"}})) == "One-vs-all C=0.5"
    assert run_name(canonical_spec({"defrag": {}})) == "DEFRAG-XY d0=8"
    assert run_name(canonical_spec({"feature_clustering": {"n_clusters": 256}})) == \
        "k-means K=256 (XY)"
    assert run_name(canonical_spec({"feature_selection": {}})) == "BMGUFS d=64 β̄=0.6 γ=2"
    assert run_name(canonical_spec({"vocabulary": {"budget": 10}})) == \
        "Vocabulary submodular m=10"
    assert run_name(canonical_spec({"classifier": {}, "rerank": {"alpha": 0.4}})).endswith(
        " + REFRAG α=0.4")


# ----------------------------------------------------------------------------- classifier
def test_pipeline_is_fitted_on_training_rows_and_predicts_as_by_hand(ml, refrag_run):
    run, pipe, split = refrag_run, refrag_run.pipeline, refrag_run.split
    X, Y = ml.X[split.train], ml.Y[split.train]
    # every step equals the estimator fitted on the training rows by hand
    dfg = Defrag(d0=6).fit(X, Y)
    np.testing.assert_array_equal(pipe.defrag.labels_, dfg.labels_)
    clf = KTXMLC(n_trees=2, max_leaf_labels=6).fit(dfg.transform(X), Y)
    ref = Refrag(alpha=0.5, shortlist_size=12).fit(X, Y, dfg)
    Xt, Yt = ml.X[split.test], ml.Y[split.test]
    base = clf.predict_scores(dfg.transform(Xt), k=12)
    by_hand = ref.rerank(Xt, base, k=5)
    got = pipe.predict_scores(Xt, k=5)
    assert (got != by_hand).nnz == 0 and got.nnz == by_hand.nnz
    # evaluate = the metrics computed directly on the test rows
    inv = metrics.inverse_propensity(Y)
    m = run.metrics["test"]
    for k in (1, 3, 5):
        assert m[f"P@{k}"] == pytest.approx(metrics.precision_at_k(Yt, by_hand, k), abs=1e-12)
        assert m[f"nDCG@{k}"] == pytest.approx(metrics.ndcg_at_k(Yt, by_hand, k), abs=1e-12)
        assert m[f"PSP@{k}"] == pytest.approx(metrics.psprecision_at_k(Yt, by_hand, k, inv),
                                              abs=1e-12)
        assert m[f"coverage@{k}"] == pytest.approx(metrics.coverage_at_k(Yt, by_hand, k),
                                                   abs=1e-12)
        assert m[f"base P@{k}"] == pytest.approx(metrics.precision_at_k(Yt, base, k), abs=1e-12)
    assert m["n_rows"] == split.test.size
    assert evaluate(pipe, ml, split) == m
    valid = evaluate(run, ml, split, rows="valid")
    assert valid == run.metrics["valid"] and valid["n_rows"] == split.valid.size
    assert m["P@1"] > 0.3          # a model that learnt nothing scores ~ labels/L


def test_run_record_timings_sizes_and_spec_key(ml, refrag_run):
    run = refrag_run
    rec = json.loads(json.dumps(run.to_record()))
    # every setting off its default (leaf size, shortlist), and after the fit what
    # KTXMLC's form='auto' chose, read here from the fitted model itself
    chose = {"flat": "one flat tree", "trees": "label trees"}[run.pipeline.classifier.form_]
    assert rec["name"] == (f"KTXMLC K=16 T=2 leaf=6 · DEFRAG d0=6 → {chose} "
                           "+ REFRAG α=0.5 shortlist=12")
    assert rec["kind"] == "classifier" and rec["status"] == "done"
    assert rec["split"]["n_test"] == run.split.test.size and "pipeline" not in rec
    for key in ("defrag_s", "classifier_s", "rerank_s", "predict_s", "total_s",
                "predict_ms_per_point"):
        assert run.timings[key] >= 0
    sizes = run.model_sizes
    assert sizes["total"] == sum(v for k, v in sizes.items() if k != "total") > 0
    assert sizes["reranker"] == sum(a.nbytes for a in run.pipeline.reranker._artifact_state()[1]
                                    .values())
    same = plan_run(ml, run.split, {"defrag": {"d0": 6, "representation": "XY"},
                                    "classifier": {"n_trees": 2, "max_leaf_labels": 6},
                                    "rerank": {"alpha": 0.5, "shortlist": 12}})
    assert same.spec_key == run.spec_key and same.status == "queued"
    assert same.run_id != run.run_id
    other = plan_run(ml, make_split(ml, random_state=9), run.spec)
    assert other.spec_key != run.spec_key


def test_artifact_round_trip(ml, refrag_run, tmp_path):
    pipe, split = refrag_run.pipeline, refrag_run.split
    save_artifact(pipe, tmp_path / "p.fgz", dataset_fingerprint=ml.fingerprint)
    back = load_artifact(tmp_path / "p.fgz")
    assert isinstance(back, Pipeline) and back.artifact_manifest_["class"] == "Pipeline"
    assert back.spec == pipe.spec and back.split_id == pipe.split_id
    Xt = ml.X[split.test]
    assert (back.predict_scores(Xt, 5) != pipe.predict_scores(Xt, 5)).nnz == 0
    assert evaluate(back, ml, split) == refrag_run.metrics["test"]
    # a pipeline refuses to be scored on another split of the data it was fitted on
    with pytest.raises(ValueError, match="fitted on split"):
        evaluate(back, ml, make_split(ml, random_state=1))


@pytest.mark.parametrize("spec", [
    {"defrag": {"d0": 5, "per_tree": True}, "classifier": {"n_trees": 2, "max_leaf_labels": 6}},
    {"classifier": {"kind": "ova"}, "impute": {"mix": 0.7, "defrag": {"d0": 5}}},
])
def test_per_tree_and_fiat_pipelines(ml_own, spec, tmp_path):
    split = make_split(ml_own)
    run = run_pipeline(ml_own, split, spec)
    assert run.status == "done", run.message
    pipe = run.pipeline
    Xt, X, Y = ml_own.X_test, ml_own.X, ml_own.Y
    if "impute" in spec:
        dfg = Defrag(d0=5).fit(X, Y)
        fiat = Fiat(dfg, mix=0.7).fit(X)
        np.testing.assert_array_equal(pipe.imputer.operator_.toarray(), fiat.operator_.toarray())
        by_hand = pipe.classifier.predict_scores(fiat.transform(Xt), k=5)
        base = pipe.classifier.predict_scores(Xt, k=5)
        assert run.metrics["test"]["base P@1"] == pytest.approx(
            metrics.precision_at_k(ml_own.Y_test, base, 1), abs=1e-12)
    else:
        assert pipe.defrag is pipe.classifier.defrags_[0]
        by_hand = pipe.classifier.predict_scores(Xt, k=5)
    assert (pipe.predict_scores(Xt, 5) != by_hand).nnz == 0
    save_artifact(pipe, tmp_path / "p.fgz")
    back = load_artifact(tmp_path / "p.fgz")
    assert (back.predict_scores(Xt, 5) != by_hand).nnz == 0
    np.testing.assert_array_equal(back.transform(Xt).toarray(), pipe.transform(Xt).toarray())


def test_base_reuses_equal_steps_and_refuses_another_split(ml, refrag_run):
    split = refrag_run.split
    spec = dict(refrag_run.spec)
    spec["rerank"] = dict(spec["rerank"], alpha=0.2)
    run = run_pipeline(ml, split, spec, base=refrag_run)
    assert run.status == "done" and run.base_run_id == refrag_run.run_id
    assert run.pipeline.classifier is refrag_run.pipeline.classifier
    assert run.pipeline.defrag is refrag_run.pipeline.defrag
    assert run.pipeline.reranker is not refrag_run.pipeline.reranker
    assert sorted(run.reused) == ["classifier", "defrag"]
    # a different classifier spec is refitted, not reused (REFRAG does not depend on it)
    spec2 = dict(refrag_run.spec, classifier=dict(refrag_run.spec["classifier"], n_trees=1))
    run2 = run_pipeline(ml, split, spec2, base=refrag_run.pipeline)
    assert run2.pipeline.classifier is not refrag_run.pipeline.classifier
    assert run2.pipeline.reranker is refrag_run.pipeline.reranker
    assert run2.reused == ["defrag", "reranker"]
    with pytest.raises(ValueError, match="split"):
        run_pipeline(ml, make_split(ml, random_state=8), spec, base=refrag_run)


# ----------------------------------------------------------------------------- cancel / fail
def test_cancel_before_and_during_a_run(ml):
    split = make_split(ml)
    ev = threading.Event()
    ev.set()
    run = run_pipeline(ml, split, {"classifier": {}}, cancel=ev)
    assert run.status == "cancelled" and run.pipeline is None and run.metrics == {}
    for spec in ({"defrag": {"d0": 4}, "classifier": {"n_trees": 3}},
                 {"classifier": {"kind": "ova"}}):
        ev = threading.Event()
        calls = []

        def progress(fraction, message):
            calls.append(message)
            ev.set()                     # the user presses Cancel at the first update

        run = run_pipeline(ml, split, spec, progress=progress, cancel=ev)
        assert run.status == "cancelled" and run.pipeline is None
        assert len(calls) == 1           # nothing reported after the cancel


def test_cancel_graph_and_table_runs(graph, table):
    for data, spec in ((graph, {"feature_selection": {"d": 4, "n_candidates": 3}}),
                       (table, {"vocabulary": {"budget": 5}})):
        ev = threading.Event()
        run = run_pipeline(data, make_split(data), spec,
                           progress=lambda f, m: ev.set(), cancel=ev)
        assert run.status == "cancelled"


def test_failure_while_fitting_gives_status_failed(ml, monkeypatch, caplog):
    from featagg_core.xmlc import ktxmlc

    def broken(self, X, Y, progress=None):
        raise RuntimeError("solver diverged")
    monkeypatch.setattr(ktxmlc.KTXMLC, "fit", broken)
    run = run_pipeline(ml, make_split(ml), {"classifier": {}})
    assert run.status == "failed" and "solver diverged" in run.message
    assert run.pipeline is None
    assert "solver diverged" in caplog.text          # the traceback is logged


# ----------------------------------------------------------------------------- other kinds
def test_agglomeration_and_feature_clustering(ml_own, tmp_path):
    split = make_split(ml_own)
    run = run_pipeline(ml_own, split, {"defrag": {"d0": 6, "representation": "X"}})
    dfg = Defrag(d0=6, representation="X").fit(ml_own.X)
    np.testing.assert_array_equal(run.pipeline.defrag.labels_, dfg.labels_)
    R, _ = feature_representation(ml_own.X_test, representation="X")
    m = run.metrics["test"]
    assert m["clustering_error"] == pytest.approx(clustering_error(R, dfg.labels_), rel=1e-12)
    assert m["nnz_after"] == dfg.transform(ml_own.X_test).nnz
    assert m["clusters"] == m["features_after"] == dfg.n_clusters_
    # on the training rows the error is the fit's own
    assert evaluate(run, ml_own, split, rows="train")["clustering_error"] == \
        pytest.approx(dfg.clustering_error_, rel=1e-6)
    K = dfg.n_clusters_
    for kind in ("random_balanced", "kmeans", "ward"):
        fc = run_pipeline(ml_own, split, {"feature_clustering": {"kind": kind, "n_clusters": K,
                                                                 "random_state": 1}})
        assert fc.status == "done", fc.message
        lab = fc.pipeline.feature_clustering.labels_
        assert lab.shape == (ml_own.X.shape[1],) and np.unique(lab).size <= K
        Rt, _ = feature_representation(ml_own.X_test, ml_own.Y_test, "XY")
        assert fc.metrics["test"]["clustering_error"] == pytest.approx(
            clustering_error(Rt, lab, K), rel=1e-12)
        G = sp.csr_matrix((np.ones(lab.size), (np.arange(lab.size), lab)))
        np.testing.assert_allclose(fc.pipeline.transform(ml_own.X_test).toarray(),
                                   (ml_own.X_test @ G).toarray(), rtol=1e-6)
        save_artifact(fc.pipeline, tmp_path / f"{kind}.fgz")
        np.testing.assert_array_equal(
            load_artifact(tmp_path / f"{kind}.fgz").feature_clustering.labels_, lab)
    from featagg_core.agglomeration.clustering import random_balanced_labels
    rb = run_pipeline(ml_own, split, {"feature_clustering": {"kind": "random_balanced",
                                                             "n_clusters": K}})
    np.testing.assert_array_equal(rb.pipeline.feature_clustering.labels_,
                                  random_balanced_labels(ml_own.X.shape[1], K, 0))


def test_feature_selection_is_inductive_and_scored_on_test_nodes(graph, tmp_path):
    split = make_split(graph, test_size=0.3)
    spec = {"feature_selection": {"d": 6, "n_candidates": 2, "max_iter": 30, "gamma": 0.5}}
    run = run_pipeline(graph, split, spec)
    assert run.status == "done", run.message
    from featagg_core import BMGUFS
    tr = split.train
    A_tr = graph.A.tocsr()[tr][:, tr]
    ref = BMGUFS(n_candidates=2, max_iter=30, gamma=0.5).fit(A_tr, graph.X[tr],
                                                             np.asarray(graph.y)[tr])
    np.testing.assert_array_equal(run.pipeline.selector.scores_, ref.scores_)
    np.testing.assert_array_equal(run.pipeline.selected_, ref.select(6))
    te = split.test
    ev = evaluate_selection(graph.X[te], np.asarray(graph.y)[te], ref.select(6), n_seeds=10)
    m = run.metrics["test"]
    assert m["ACC"] == pytest.approx(ev["acc_mean"]) and m["NMI"] == pytest.approx(ev["nmi_mean"])
    assert m["d"] == 6 and m["nnz(r)"] == np.count_nonzero(ref.scores_)
    assert m["n_rows"] == te.size
    save_artifact(run.pipeline, tmp_path / "b.fgz")
    back = load_artifact(tmp_path / "b.fgz")
    np.testing.assert_array_equal(back.selected_, ref.select(6))
    np.testing.assert_array_equal(back.transform(graph.X).toarray(),
                                  graph.X.toarray()[:, ref.select(6)])
    # a baseline on the training subgraph
    lap = run_pipeline(graph, split, {"feature_selection": {"kind": "laplacian", "d": 6}})
    order = fsb.rank_features(fsb.laplacian_score(graph.X[tr], A_tr), False)
    np.testing.assert_array_equal(lap.pipeline.selected_, order[:6])
    # the comparison: BMGUFS (the run) and the baselines at each d, on the test nodes
    cmp = feature_selection_comparison(graph, split, base=run, ds=(4, 6),
                                       methods={"Laplacian score (graph)":
                                                {"kind": "laplacian", "affinity": "graph"}},
                                       n_seeds=2)
    assert cmp["ds"] == [4, 6] and set(cmp["methods"]) == {"BMGUFS", "Laplacian score (graph)",
                                                           "all features"}
    assert cmp["methods"]["Laplacian score (graph)"][6] == evaluate_selection(
        graph.X[te], np.asarray(graph.y)[te], order[:6], n_seeds=2)
    assert cmp["methods"]["BMGUFS"][4]["acc_mean"] == pytest.approx(evaluate_selection(
        graph.X[te], np.asarray(graph.y)[te], ref.select(4), n_seeds=2)["acc_mean"])


def test_vocabulary_counts_training_rows_and_scores_test_rows(table, tmp_path):
    split = make_split(table, random_state=5)
    run = run_pipeline(table, split, {"vocabulary": {"budget": 8}})
    assert run.status == "done", run.message
    tr, te = split.train, split.test
    y = np.asarray(table.labels)
    iz = ix = 0.0
    for col in table.table.columns:
        values = table.table[col].to_numpy()
        ref = VocabularyCompressor(8).fit(values[tr], y[tr])
        vc = run.pipeline.vocabulary.compressors[col]
        np.testing.assert_array_equal(vc.counts_, ref.counts_)
        iz += mutual_info_score(y[te], ref.transform(values[te]))
        ix += mutual_info_score(y[te], values[te])
    m = run.metrics["test"]
    assert m["I(Z;C)"] == pytest.approx(iz, rel=1e-9) and m["I(X;C)"] == pytest.approx(ix)
    assert m["MI loss"] == pytest.approx((ix - iz) / ix) and m["n_rows"] == te.size
    rep = vocabulary_report(run, table, split)
    assert rep["I(Z;C)"].sum() == pytest.approx(iz) and list(rep["column"]) == \
        list(table.table.columns)
    curve = vocabulary_budget_curve(table, split, {"vocabulary": {}}, [2, 8])
    assert curve.loc[curve["m"] == 8, "I(Z;C)"].iloc[0] == pytest.approx(iz)
    assert curve.loc[curve["m"] == 2, "I(Z;C)"].iloc[0] < iz + 1e-12
    save_artifact(run.pipeline, tmp_path / "v.fgz")
    back = load_artifact(tmp_path / "v.fgz")
    assert back.transform(table.table).equals(run.pipeline.transform(table.table))
    assert evaluate(back, table, split) == m


# ----------------------------------------------------------------------------- sweeps
def test_refrag_alpha_curve_and_buckets(ml, refrag_run):
    pipe, split = refrag_run.pipeline, refrag_run.split
    curve = refrag_alpha_curve(refrag_run, ml, split, alphas=[1.0, 0.5, 0.0], ks=(1, 5))
    at = curve.set_index("alpha")
    m = refrag_run.metrics["test"]
    assert at.loc[0.5, "P@5"] == pytest.approx(m["P@5"], abs=1e-12)
    assert at.loc[0.5, "coverage@1"] == pytest.approx(m["coverage@1"], abs=1e-12)
    assert pipe.reranker.alpha == 0.5                   # the sweep did not touch the model
    buckets = bucket_metrics(refrag_run, ml, split, k=5)
    assert buckets["P@5"].sum() == pytest.approx(m["P@5"], abs=1e-12)
    assert buckets["base P@5"].sum() == pytest.approx(m["base P@5"], abs=1e-12)
    assert buckets["labels"].sum() == ml.Y.shape[1]
    # coverage per bucket by brute force
    pred = predictions(refrag_run, ml, split, k=5)
    Yt = pred.Y_true.toarray()
    top = metrics.top_k(pred.scores, 5)
    freq = np.asarray(ml.Y[split.train].sum(axis=0)).ravel()
    order = np.argsort(-freq, kind="stable")
    bucket_of = np.empty(freq.size, int)
    bucket_of[order] = (np.arange(freq.size) * 5) // freq.size
    for b in range(5):
        labels_b = [lab for lab in range(freq.size) if bucket_of[lab] == b and Yt[:, lab].any()]
        hit = [lab for lab in labels_b if any(Yt[i, lab] and lab in top[i] for i in
                                              range(Yt.shape[0]))]
        if labels_b:
            assert buckets["coverage@5"].iloc[b] == pytest.approx(len(hit) / len(labels_b))
        assert buckets["max train examples"].iloc[b] == freq[bucket_of == b].max()


def test_erasure_curve_matches_fiat_module_and_elbow_uses_training_rows(ml_own):
    from featagg_core.agglomeration import fiat as fiat_mod
    split = make_split(ml_own)
    run = run_pipeline(ml_own, split, {"defrag": {"d0": 5}, "classifier": {"n_trees": 1},
                                       "impute": {"mix": 0.5}})
    pipe = run.pipeline
    fr = [0.0, 0.3, 0.6]
    ours = erasure_curve(run, ml_own, split, fr, ks=(1, 3))
    ref = fiat_mod.erasure_curve(lambda Z: pipe.scores(Z, 3, impute=False)[0], ml_own.X_test,
                                 ml_own.Y_test, fiat=pipe.imputer, fractions=fr, k=(1, 3))
    for col in ("P@1", "P@3", "P@1 FIAT", "P@3 FIAT"):
        np.testing.assert_allclose(ours[col].to_numpy(), ref[col].to_numpy(), atol=1e-12)
    el = elbow(ml_own, split, ks=(2, 4, 8))
    direct = elbow_curve(ml_own.X[split.train], ml_own.Y[split.train], ks=(2, 4, 8))
    np.testing.assert_allclose(el.wcss, direct.wcss)
    el2 = elbow(ml_own, split, ks=(2, 4), pipeline=run)
    direct2 = elbow_curve(pipe.defrag.transform(ml_own.X[split.train]), ml_own.Y[split.train],
                          ks=(2, 4))
    np.testing.assert_allclose(el2.wcss, direct2.wcss)


def test_legacy_objects_wrap_into_pipelines(ml_own):
    split = make_split(ml_own)
    clf = KTXMLC(n_trees=1).fit(ml_own.X, ml_own.Y)
    pipe = as_pipeline(clf)
    assert pipe.split_id is None and pipe.kind == "classifier"
    m = evaluate(pipe, ml_own, split)
    assert m["P@1"] == pytest.approx(metrics.precision_at_k(
        ml_own.Y_test, clf.predict_scores(ml_own.X_test, k=5), 1))
    with pytest.raises(ValueError, match="fitted on 120 features"):
        evaluate(pipe, make_powerlaw_multilabel(50, 30, 20, random_state=0),
                 make_split(make_powerlaw_multilabel(50, 30, 20, random_state=0)))


def test_blockwise_scoring_equals_whole_and_stops_on_cancel(ml, refrag_run, monkeypatch):
    from featagg_core.runs import evaluation as _evaluation
    from featagg_core.experiment import Cancelled
    whole = evaluate(refrag_run, ml, refrag_run.split)
    monkeypatch.setattr(_evaluation, "_BLOCK_ROWS", 7)
    blocks, _ = _evaluation._evaluate(refrag_run.pipeline, ml, refrag_run.split, "test",
                                      (1, 3, 5), cancel=threading.Event())
    assert blocks == whole
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        _evaluation._evaluate(refrag_run.pipeline, ml, refrag_run.split, "test", (1, 3, 5),
                              cancel=ev)


def test_a_loose_vocabulary_compressor_wraps_with_its_column(table):
    split = make_split(table)
    col = table.table.columns[0]
    values, y = table.table[col].to_numpy(), np.asarray(table.labels)
    vc = VocabularyCompressor(6).fit(values[split.train], y[split.train])
    m = evaluate(as_pipeline(vc, column=col), table, split)
    te = split.test
    assert m["I(Z;C)"] == pytest.approx(mutual_info_score(y[te], vc.transform(values[te])))
    with pytest.raises(ValueError, match="column"):
        as_pipeline(vc)
