"""REFRAG tuned on validation rows: the fast candidate scoring equals rerank(), the chosen
knobs are a grid point that the rule picks in a brute-force search written out here, the
test rows never influence the choice, and the carved-rows path says what it did."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core import metrics
from featagg_core.runs.refrag_tuning import TUNE_GRID, choose, grid_points
from featagg_core.experiment import make_split, run_pipeline
from featagg_core.data.synthetic import make_powerlaw_multilabel

SPEC = {"defrag": {"d0": 8}, "classifier": {"n_trees": 1},
        "rerank": {"kind": "refrag", "tune": True}}


@pytest.fixture(scope="module")
def data():
    return make_powerlaw_multilabel(420, 150, 30, random_state=3)


@pytest.fixture(scope="module", params=[0.005, 0.05])
def tuned(data, request):
    """The default bound (on this data nothing beats the classifier within it: alpha = 1)
    and a loose one (a REFRAG setting wins)."""
    split = make_split(data, test_size=0.25, valid_size=0.2, random_state=1)
    spec = {**SPEC, "rerank": {**SPEC["rerank"], "tune_max_drop": request.param}}
    return split, run_pipeline(data, split, spec)


def test_candidate_scoring_equals_rerank(data, tuned):
    split, run = tuned
    pipe = run.pipeline
    X = data.X[split.valid]
    base = pipe.classifier.predict_scores(pipe._features(X), k=pipe.shortlist)
    cand = pipe.reranker.candidates(X, base)
    rng = np.random.default_rng(0)
    for alpha, gamma, beta in [(1.0, 1.0, 0.0), (0.0, 2.0, 1.0)] + \
            [tuple(rng.random(3) * [1, 5, 2]) for _ in range(4)]:
        r = copy.copy(pipe.reranker)
        r.set_params(alpha=float(alpha), gamma=float(gamma), propensity_exponent=float(beta))
        a = r.rerank(X, base, k=5)
        b = r.rerank_candidates(cand, k=5)
        assert (a != b).nnz == 0
        np.testing.assert_array_equal(a.indices, b.indices)


def test_chosen_knobs_are_the_brute_force_choice_on_the_grid(data, tuned):
    split, run = tuned
    pipe = run.pipeline
    info = pipe.reranker.tuning_
    assert run.status == "done" and info["rows"] == "validation"
    knobs = (pipe.reranker.alpha, pipe.reranker.gamma, pipe.reranker.propensity_exponent)
    assert knobs in {(p["alpha"], p["gamma"], p["propensity_exponent"])
                     for p in grid_points(TUNE_GRID)}
    # brute force: rerank the validation rows for every grid point with rerank() itself
    X, Y = data.X[split.valid], data.Y[split.valid]
    base = pipe.classifier.predict_scores(pipe._features(X), k=pipe.shortlist)
    inv = metrics.inverse_propensity(data.Y[split.train])
    base_m = metrics.ranking_metrics(Y, base, [5], inv, metrics=("P", "coverage"))
    base_rows = _row_p5(Y, base)
    table = []
    for p in grid_points(TUNE_GRID):
        r = copy.copy(pipe.reranker)
        r.set_params(**p)
        S = r.rerank(X, base, k=5)
        m = metrics.ranking_metrics(Y, S, [5], inv, metrics=("P", "coverage"))
        d = _row_p5(Y, S) - base_rows              # per-row P@5 change, paired
        m["bound"] = d.mean() - 1.645 * d.std(ddof=1) / np.sqrt(d.size)
        table.append({**p, **m})
    for mine, ref in zip(info["grid"], table):
        assert mine["P@5"] == pytest.approx(ref["P@5"], abs=1e-12)
        assert mine["coverage@5"] == pytest.approx(ref["coverage@5"], abs=1e-12)
        assert mine["P@5 change bound"] == pytest.approx(ref["bound"], abs=1e-12)
    bound = info["max_drop"]
    feasible = [t for t in table if t["bound"] >= -bound - 1e-12]
    better = [t for t in feasible if t["coverage@5"] > base_m["coverage@5"] + 1e-12]
    if better:
        top = max(t["coverage@5"] for t in better)
        ok = [t for t in better if abs(t["coverage@5"] - top) < 1e-12]
        top_p = max(t["P@5"] for t in ok)
        ok = [t for t in ok if abs(t["P@5"] - top_p) < 1e-12]
        want = max(ok, key=lambda t: t["alpha"])
    else:
        want = next(t for t in table if t["alpha"] == 1.0)
    assert knobs == (want["alpha"], want["gamma"], want["propensity_exponent"])
    # the validation numbers the run reports are the chosen point's, within the bound
    assert info["P@5"] >= info["base P@5"] - bound - 1e-12
    assert "REFRAG tuned on the split's" in run.message


def _row_p5(Y, S):
    """Per-row P@5 by hand (dense): the 5 best scores, ties to the lower label."""
    Yd, Sd = Y.toarray().astype(np.float64), S.toarray()
    out = np.zeros(Yd.shape[0])
    for i in range(Yd.shape[0]):
        nz = np.flatnonzero(Sd[i])
        top = sorted(nz, key=lambda j: (-Sd[i, j], j))[:5]
        out[i] = Yd[i, top].sum() / 5
    return out


def test_choose_rule_on_a_hand_made_table():
    base = {"P@5": 0.30, "coverage@5": 0.50}
    rows = [{"alpha": 1.0, "gamma": 1.0, "propensity_exponent": 0.0, "P@5": 0.30,
             "coverage@5": 0.50},
            {"alpha": 0.5, "gamma": 1.0, "propensity_exponent": 0.0, "P@5": 0.20,
             "coverage@5": 0.90},                      # too costly
            {"alpha": 0.8, "gamma": 2.0, "propensity_exponent": 0.5, "P@5": 0.296,
             "coverage@5": 0.60},
            {"alpha": 0.9, "gamma": 2.0, "propensity_exponent": 0.5, "P@5": 0.299,
             "coverage@5": 0.60}]                      # same coverage, better P@5
    assert choose(rows, base, 0.005)["alpha"] == 0.9
    assert choose(rows, base, 0.0)["alpha"] == 1.0     # nothing feasible gains: keep base


def test_test_rows_never_influence_the_choice(data):
    split = make_split(data, test_size=0.25, valid_size=0.2, random_state=1)
    a = run_pipeline(data, split, SPEC)
    # scramble the labels of every test-part row: same choice, same validation numbers
    Y = data.Y.tolil()
    rng = np.random.default_rng(5)
    for i in split.test:
        Y[i, :] = 0
        Y[i, rng.integers(0, Y.shape[1], 3)] = 1
    other = type(data)(X=data.X, Y=sp.csr_matrix(Y, dtype=np.float32),
                       feature_names=data.feature_names, label_names=data.label_names,
                       name=data.name)
    split2 = make_split(other, test_size=0.25, valid_size=0.2, random_state=1)
    assert np.array_equal(split2.test, split.test)
    b = run_pipeline(other, split2, SPEC)
    ka = a.pipeline.reranker.tuning_
    kb = b.pipeline.reranker.tuning_
    assert [ka[k] for k in ("alpha", "gamma", "propensity_exponent")] == \
        [kb[k] for k in ("alpha", "gamma", "propensity_exponent")]
    assert ka["P@5"] == kb["P@5"] and ka["coverage@5"] == kb["coverage@5"]


def test_without_validation_rows_they_are_carved_from_training(data):
    split = make_split(data, test_size=0.25, random_state=2)
    run = run_pipeline(data, split, SPEC)
    info = run.pipeline.reranker.tuning_
    assert run.status == "done" and info["rows"] == "carved"
    assert info["n_rows"] == round(0.2 * split.train.size)
    assert "carved from the training rows" in run.message
    assert "+ REFRAG tuned" in run.name  # (the name may go on with what the fit chose)


def test_tune_spec_is_checked():
    from featagg_core.experiment import canonical_spec
    spec = canonical_spec(SPEC)
    assert spec["rerank"]["tune"] is True and spec["rerank"]["tune_max_drop"] == 0.005
    with pytest.raises(ValueError, match="rerank.tune_max_drop"):
        canonical_spec({**SPEC, "rerank": {"tune": True, "tune_max_drop": 2.0}})
    with pytest.raises(ValueError, match="rerank.tune"):
        canonical_spec({**SPEC, "rerank": {"tune": "yes"}})
