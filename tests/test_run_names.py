"""Run names: every setting that differs from its default is in the name, and a finished
run's name adds what the fit chose (one flat tree, the number of blocks and its source)."""
import dataclasses

import numpy as np
import pytest

from featagg_core.data.synthetic import make_attributed_sbm, make_powerlaw_multilabel
from featagg_core.graph.block_model import choose_n_blocks
from featagg_core.runs.run import run_pipeline
from featagg_core.runs.spec import canonical_spec, fitted_run_name, run_name
from featagg_core.runs.split import make_split, take_rows


def _name(spec):
    return run_name(canonical_spec(spec))


def test_names_list_every_setting_off_its_default():
    # the defaults alone: the short names documented in docs/RUN_MODEL.md
    assert _name({"classifier": {}}) == "KTXMLC K=16 T=3"
    assert _name({"feature_selection": {}}) == "BMGUFS d=64 β̄=0.6 γ=2"
    # the page's fast preset: each of its settings is in the name
    fast = _name({"classifier": {"n_trees": 1, "max_depth": 4, "max_leaf_labels": 10,
                                 "beam_width": 5, "balanced": True, "kmeans_max_iter": 5,
                                 "max_iter": 5}})
    assert fast.startswith("KTXMLC K=16 T=1 ")
    for part in ("depth=4", "leaf=10", "beam=5", "balanced", "k-means passes=5",
                 "iterations=5"):
        assert f" {part}" in fast, (part, fast)
    assert _name({"classifier": {"one_vs_all": "never"}}) == "KTXMLC K=16 T=3 trees always"
    assert _name({"classifier": {"C": 1.0}}) == "KTXMLC K=16 T=3 C=1"
    assert _name({"classifier": {"random_state": 4}}) == "KTXMLC K=16 T=3 seed=4"
    # BMGUFS: a given k is in the name; so are the candidates, iterations and keep_d
    assert _name({"feature_selection": {"n_blocks": 7}}) == "BMGUFS d=64 β̄=0.6 γ=2 k=7"
    bm = _name({"feature_selection": {"n_candidates": 2, "max_iter": 25, "keep_d": False}})
    assert bm == "BMGUFS d=64 β̄=0.6 γ=2 γ as given iterations=25 candidates=2"
    assert _name({"defrag": {"aggregation": "avg", "sample_points": 0.5}}) == \
        "DEFRAG-XY d0=8 aggregation=avg points=0.5"
    assert _name({"vocabulary": {"budget": 10, "columns": ["a", "b"], "min_count": 3}}) == \
        "Vocabulary submodular m=10 on 2 columns min count=3"
    # REFRAG's own clustering is named only when it is not the default one
    assert _name({"classifier": {}, "rerank": {"alpha": 0.4}}) == \
        "KTXMLC K=16 T=3 + REFRAG α=0.4"
    assert _name({"classifier": {}, "rerank": {"alpha": 0.4, "defrag": {"d0": 16}}}) == \
        "KTXMLC K=16 T=3 + REFRAG α=0.4 on DEFRAG d0=16"
    # two specs that differ in any setting have different names
    a = _name({"classifier": {"weight_threshold": 0.2}})
    assert a != _name({"classifier": {}}) and "weight_threshold=0.2" in a


@pytest.fixture(scope="module")
def ml():
    return make_powerlaw_multilabel(300, 120, 20, random_state=0)


def test_a_ktxmlc_run_that_kept_one_flat_tree_says_so(ml):
    split = make_split(ml, test_size=0.2)
    run = run_pipeline(ml, split, {"classifier": {"n_trees": 3, "n_clusters": 16}})
    clf = run.pipeline.classifier
    # 20 labels fit one leaf of 100: one tree whose root's children are all the labels
    assert len(clf.trees_) == 1 and int(clf.trees_[0]["n_children"][0]) == 20
    assert run.name.startswith("KTXMLC K=16 T=3 → ") and "flat" in run.name
    # the trees grown when asked: no "flat" in the name
    grown = run_pipeline(ml, split, {"classifier": {"n_trees": 2, "max_leaf_labels": 4,
                                                    "n_clusters": 2, "one_vs_all": "never"}})
    assert len(grown.pipeline.classifier.trees_) == 2
    assert "flat" not in grown.name and grown.name.startswith("KTXMLC K=2 T=2 leaf=4")
    # the same spec on the same data and split: the same name
    again = run_pipeline(ml, split, {"classifier": {"n_trees": 3, "n_clusters": 16}})
    assert again.name == run.name
    # a plan (before the fit) has the spec's name only
    assert fitted_run_name(run.spec, None) == "KTXMLC K=16 T=3"


def test_a_bmgufs_run_names_its_k_and_where_it_came_from():
    g = make_attributed_sbm(150, 4, p_in=0.15, p_out=0.01, n_informative=12, n_noise=12,
                            random_state=1)
    split = make_split(g, test_size=0.2)
    spec = {"feature_selection": {"d": 6, "n_candidates": 1, "max_iter": 10}}
    run = run_pipeline(g, split, spec)
    train = take_rows(g, split, "train")
    n_classes = np.unique(np.asarray(train.y)).size
    assert f"k={n_classes} from the classes" in run.name, run.name
    # no classes: the eigengap rule's k on the training graph
    bare = dataclasses.replace(g, y=None)
    split2 = make_split(bare, test_size=0.2)
    run2 = run_pipeline(bare, split2, spec)
    k, _, rule = choose_n_blocks(take_rows(bare, split2, "train").A)
    how = "by the modularity knee" if "modularity" in rule else "by the eigengap rule"
    assert f"k={k} {how}" in run2.name, run2.name
    # k given: in the spec's name, nothing chosen
    run3 = run_pipeline(g, split, {"feature_selection": dict(spec["feature_selection"],
                                                             n_blocks=3)})
    assert " k=3" in run3.name and "from the classes" not in run3.name


def test_a_reranked_run_names_the_classifier_choice_next_to_the_classifier(ml):
    split = make_split(ml, test_size=0.2)
    run = run_pipeline(ml, split, {"classifier": {"n_trees": 1}, "rerank": {"alpha": 0.5}})
    clf = run.pipeline.classifier
    assert len(clf.trees_) == 1 and int(clf.trees_[0]["n_children"][0]) == 20   # flat
    assert run.name.startswith("KTXMLC K=16 T=1 → one flat tree"), run.name
    assert run.name.endswith(" + REFRAG α=0.5")
    # a flat form asked for in the spec is said once, by the spec's name
    asked = run_pipeline(ml, split, {"classifier": {"n_trees": 1, "form": "flat"}})
    assert asked.name.startswith("KTXMLC K=16 T=1 one flat tree") and \
        asked.name.count("flat") == 1, asked.name
