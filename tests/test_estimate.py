"""The run-time estimate: its data sizes against direct computation, its formulas against
hand-computed values on a fixed speed, and every spec family of docs/RUN_MODEL.md."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.runs import estimate as E
from featagg_core.experiment import make_split
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)

RATES = ("sparse", "defrag", "linear", "pairs", "pairs_big", "stream", "onmtf",
         "kmeans_dense", "vocab", "matvec", "dp", "py")


def _speed(rate=1e7, wall=1.0):
    s = {k: rate for k in RATES}
    s["wall_factor"] = wall
    return s


@pytest.fixture(scope="module")
def ml():
    data = make_powerlaw_multilabel(600, 900, 60, random_state=0, test_size=0.25)
    return data, make_split(data)


def test_xty_nnz_exact_and_extrapolated():
    data = make_powerlaw_multilabel(3000, 2000, 300, random_state=1)
    rows = np.arange(0, 3000, 2)
    X, Y = data.X[rows], data.Y[rows]
    exact = (X.T @ Y).nnz
    assert E._xty_nnz(data.X, data.Y, rows) == exact
    # forced to sample: within 25 % of the exact count
    approx = E._xty_nnz(data.X, data.Y, rows, exact_limit=2000)
    assert abs(approx - exact) / exact < 0.25


def test_stats_are_the_training_and_held_out_rows(ml):
    data, split = ml
    st = E._MLStats(data, split)
    Xtr, Ytr = data.X[split.train], data.Y[split.train]
    assert (st.n, st.d, st.L) == (Xtr.shape[0], data.X.shape[1], data.Y.shape[1])
    assert st.nnz == Xtr.nnz
    assert st.cross == float(np.dot(np.diff(Xtr.indptr), np.diff(Ytr.indptr)))
    assert st.nnz_ho == data.X_test[split.test].nnz
    assert st.nnz_R == (Xtr.T @ Ytr).nnz


def test_shared_stats_are_the_rows_sizes_and_give_the_same_estimates(ml):
    """multilabel_stats (computed once, shared by a page's many estimates) holds the same
    sizes as a direct count, no reference to the matrices, and every estimate and sampling
    plan made with it equals the one made without."""
    from featagg_core.runs.estimate import sampling_plan
    data, split = ml
    st = E.multilabel_stats(data, split)
    Xtr, Ytr = data.X[split.train], data.Y[split.train]
    assert st.X is None and st.Y is None
    assert st.nnz == Xtr.nnz and st.nnz_ho == data.X_test[split.test].nnz
    assert st.nnz_R == (Xtr.T @ Ytr).nnz
    s = _speed()
    specs = [{"defrag": {"d0": 8}}, {"defrag": {"d0": 4, "representation": "X"}},
             {"classifier": {"kind": "ktxmlc"}}, {"classifier": {"kind": "ova"}},
             {"defrag": {"d0": 8}, "classifier": {"kind": "ktxmlc"}},
             {"feature_clustering": {"kind": "kmeans", "n_clusters": 40}}]
    for spec in specs:
        assert E.estimate_breakdown(data, split, spec, s, stats=st) == \
            E.estimate_breakdown(data, split, spec, s), spec
    for kind in ("random_balanced", "kmeans", "ward"):
        spec = {"feature_clustering": {"kind": kind, "n_clusters": 40}}
        assert sampling_plan(data, split, spec, s, budget_s=0.01, stats=st) == \
            sampling_plan(data, split, spec, s, budget_s=0.01)
    other = make_split(data, how="random", test_size=0.3, random_state=1)
    with pytest.raises(ValueError, match="stats must be"):
        E.estimate_seconds(data, other, specs[0], s, stats=st)


def test_one_vs_all_formula_by_hand(ml):
    data, split = ml
    st = E._MLStats(data, split)
    s = _speed()
    C = E._MODEL
    parts = E.estimate_breakdown(data, split, {"classifier": {"kind": "ova"}}, s)
    train = C["lin_pass"] * st.L * (st.nnz + C["lin_row"] * st.n) / s["linear"] \
        + C["lin_task"] * math.ceil(st.L / 64) / s["py"]
    assert parts["one-vs-all: training"] == pytest.approx(train)
    pred = C["ova_predict"] * (st.nnz_ho + st.n_ho) * st.L ** 0.7 / s["linear"]
    assert parts["one-vs-all: scoring"] == pytest.approx(pred)
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))


def test_defrag_formula_by_hand(ml):
    from featagg_core.agglomeration.defrag import balanced_depth_cap
    data, split = ml
    st = E._MLStats(data, split)
    s = _speed()
    C = E._MODEL
    parts = E.estimate_breakdown(data, split, {"defrag": {"d0": 8, "representation": "XY"}}, s)
    levels = balanced_depth_cap(st.d, 8)
    assert parts["DEFRAG: representation"] == pytest.approx(
        C["defrag_rep_xy"] * st.cross / s["sparse"])
    assert parts["DEFRAG: tree"] == pytest.approx(
        C["defrag_rounds"] * levels * st.nnz_R / s["defrag"]
        + C["defrag_node"] * 2.0 ** (levels + 1) / s["py"])


def test_tree_shape_and_hits():
    assert E._tree_shape(159, 2, 100, 20) == (1, [1.0, 2.0], 79.5)
    D, nodes, leaf = E._tree_shape(5000, 2, 100, 20)
    assert D == 6 and nodes[-1] == 64 and leaf == pytest.approx(5000 / 64)
    assert E._tree_shape(50, 2, 100, 20) == (0, [1], 50.0)
    # a point with 3 independent labels among 4 nodes hits 4 (1 - (3/4)^3) of them
    assert E._hits(np.array([3.0]), 4, 1.0)[0] == pytest.approx(4 * (1 - 0.75 ** 3))
    assert E._hits(np.array([0.0]), 4, 1.0)[0] == 0


def test_wall_factor_scales_and_more_work_costs_more(ml):
    data, split = ml
    spec = {"classifier": {"kind": "ktxmlc"}}
    one = E.estimate_seconds(data, split, spec, _speed(wall=1.0))
    two = E.estimate_seconds(data, split, spec, _speed(wall=2.0))
    assert two == pytest.approx(2 * one)
    faster = E.estimate_seconds(data, split, spec, _speed(rate=2e7))
    assert faster < one
    more_trees = E.estimate_seconds(data, split, {"classifier": {"n_trees": 6}}, _speed())
    assert more_trees > one
    big = make_powerlaw_multilabel(2400, 900, 60, random_state=0, test_size=0.25)
    assert E.estimate_seconds(big, make_split(big), spec, _speed()) > 2 * one


def test_every_spec_family_is_estimated(ml):
    data, split = ml
    g = make_attributed_sbm(120, 3, n_informative=10, n_noise=30, random_state=0)
    gs = make_split(g)
    t = make_zipf_categorical(500, 40, n_columns=2, random_state=0)
    ts = make_split(t)
    s = _speed(rate=1e8)
    specs = [
        (data, split, {"defrag": {}}), (data, split, {"defrag": {"representation": "X"}}),
        (data, split, {"classifier": {}}), (data, split, {"classifier": {"kind": "ova"}}),
        (data, split, {"classifier": {"n_clusters": 8}, "defrag": {"d0": 16}}),
        (data, split, {"classifier": {"n_trees": 2}, "defrag": {"per_tree": True}}),
        (data, split, {"classifier": {}, "defrag": {}, "rerank": {}}),
        (data, split, {"classifier": {}, "rerank": {"defrag": {"d0": 8}}}),
        (data, split, {"classifier": {}, "defrag": {}, "impute": {}}),
        (data, split, {"feature_clustering": {"kind": "kmeans", "n_clusters": 64}}),
        (data, split, {"feature_clustering": {"kind": "ward", "n_clusters": 64}}),
        (data, split, {"feature_clustering": {"kind": "random_balanced", "n_clusters": 64}}),
    ] + [(g, gs, {"feature_selection": {"kind": k, "d": 8}})
         for k in ("bmgufs", "laplacian", "spec", "ndfs", "variance", "random")] \
      + [(g, gs, {"feature_selection": {"kind": "all"}})] \
      + [(t, ts, {"vocabulary": {"method": m, "budget": 4}})
         for m in ("submodular", "threshold", "dp", "frequency", "bucketing", "divisive")]
    for d, sp_, spec in specs:
        secs = E.estimate_seconds(d, sp_, spec, s)
        assert 0 < secs < 1e4 and math.isfinite(secs), spec


def test_bad_specs_raise_value_error(ml):
    data, split = ml
    with pytest.raises(ValueError, match="classifier"):
        E.estimate_seconds(data, split, {"classifier": {"n_clusterz": 2}}, _speed())
    with pytest.raises(ValueError):
        E.estimate_seconds(data, split, {"feature_selection": {"kind": "bmgufs"}}, _speed())


def test_speed_calibration_and_cache(monkeypatch):
    s = E.measure_speed(threads=1)
    assert set(RATES) <= set(s) and all(s[k] > 0 for k in RATES)
    assert s["threads"] == 1 and s["wall_factor"] >= 1
    # the run-model kernels are slower per unit than a plain mat-vec (what the model uses)
    assert s["sparse"] < s["matvec"]
    calls = []
    monkeypatch.setattr(E, "measure_speed", lambda threads=None: calls.append(threads) or s)
    E._cached_speed.cache_clear()
    a = E.default_speed(threads=1)
    b = E.default_speed(threads=1)
    assert a == b and calls == [1]
    E._cached_speed.cache_clear()


def test_estimate_warmup_compiles_the_calibrations_own_xt_y(monkeypatch):
    """The server calibrates once every kernel group is compiled: every signature the
    calibration calls ``_kernels.defrag.xt_y`` with (the one kernel no fit uses) must be one
    ``estimate.warmup`` compiles, or the first calibration JIT-compiles in the server."""
    import numba
    from featagg_core._kernels import defrag as kd
    real, seen = kd.xt_y, {"warmup": set(), "calibration": set()}
    phase = ["warmup"]

    def recording(*args):
        seen[phase[0]].add(tuple(numba.typeof(a) for a in args))
        return real(*args)

    monkeypatch.setattr(kd, "xt_y", recording)
    E.warmup()
    phase[0] = "calibration"
    E.measure_speed(threads=1)
    assert seen["warmup"] and seen["calibration"]
    assert seen["calibration"] <= seen["warmup"]
    # and the product it times is XᵀY (scipy) on the tiny warm-up input
    from featagg_core.runs.calibration import _rand_csr, _xt_y_args
    X = _rand_csr(7, 5, 2, np.random.default_rng(3))
    Y = _rand_csr(7, 4, 2, np.random.default_rng(4))
    ptr, ind, dat = real(*_xt_y_args(X, Y, np.zeros(1, np.uint8)))
    got = sp.csr_matrix((dat, ind, ptr), shape=(5, 4)).toarray()
    np.testing.assert_allclose(got, (X.T @ Y).toarray(), rtol=1e-6)


def test_job_threads(monkeypatch):
    import os
    cores = os.cpu_count() or 1
    monkeypatch.setenv("FEATAGG_JOB_WORKERS", "1")
    assert E.job_threads() == cores
    monkeypatch.delenv("FEATAGG_JOB_WORKERS")
    assert E.job_threads() == 1
    monkeypatch.setenv("FEATAGG_JOB_WORKERS", "nonsense")
    assert E.job_threads() == 1


def test_sparse_pattern_helper():
    from featagg_core.runs.calibration import _rand_csr
    rng = np.random.default_rng(0)
    M = _rand_csr(50, 50, 3, rng, symmetric=True)
    assert (M != M.T).nnz == 0 and M.shape == (50, 50)
    assert sp.isspmatrix_csr(M)


@pytest.mark.parametrize("params", [
    {"n_clusters": 3, "max_leaf_labels": 6, "n_trees": 2},       # flat: 3 leaf clusters
    {"n_clusters": 16, "max_leaf_labels": 2, "n_trees": 3},      # flat: 9 leaf clusters
    {"n_clusters": 16, "max_leaf_labels": 1, "n_trees": 3},      # trees: 16 > the beam
    {"n_clusters": 3, "max_leaf_labels": 6, "one_vs_all": "never"},
])
def test_ktxmlc_estimate_follows_the_fits_flat_choice(params):
    """The estimate prices the model the fit trains: when ``KTXMLC(one_vs_all="auto")``
    keeps one flat tree, the estimate's parts are the label trees (still grown) plus
    one-vs-all's training and scoring; otherwise the trees'."""
    from featagg_app.views.xmlc import kept_flat_tree
    from featagg_core.xmlc.ktxmlc import KTXMLC
    data = make_powerlaw_multilabel(400, 300, 18, avg_labels=3, random_state=2,
                                    test_size=0.25)
    split = make_split(data)
    params = dict(params, form="trees")  # the trees' form, where one_vs_all's rule applies
    flat = kept_flat_tree(KTXMLC(**params).fit(data.X, data.Y))
    parts = E.estimate_breakdown(data, split, {"classifier": params}, _speed())
    K = params["n_clusters"]
    assert any(k.endswith("label trees") for k in parts)
    assert any("(one flat tree)" in k for k in parts) == flat
    if flat:
        ova = E.estimate_breakdown(data, split, {"classifier": {"kind": "ova"}}, _speed())
        assert parts[f"KTXMLC K={K} (one flat tree): training"] == pytest.approx(
            ova["one-vs-all: training"])
