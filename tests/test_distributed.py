"""The Dask twins equal their single-machine fits exactly, on a LocalCluster started here.

Independent references: exact rational arithmetic (fractions) for the reduced products,
the single-machine estimators (whose own tests check them against brute force) for the
twins, featagg's readers on the whole data for the shards. Near-tie data shows that the
equality is not luck: the same data summed naively per partition changes the tree.
"""
import os
import threading
import time
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.utils import products as _products
from featagg_core.utils.cancel import Cancelled
from featagg_core.data import DatasetError, load_xc, save_xc
from featagg_core.agglomeration.defrag import Defrag, _build_tree, feature_representation
from featagg_core._kernels import defrag as _kd
from featagg_core.distributed import (
    ClusterError,
    defrag_distributed,
    describe_scheduler,
    ktxmlc_distributed,
    load_xc_shards,
    scheduler_from_env,
    vocabulary_distributed,
)
from featagg_core.runs.steps import fit_classifier, fit_defrag
from featagg_core.xmlc.ktxmlc import KTXMLC
from featagg_core.data.synthetic import make_powerlaw_multilabel
from featagg_core.vocab.counts import factorize

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TREE_KEYS = ("parent", "left", "right", "depth", "start", "n_members", "n_iter", "cluster",
             "order")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    c = Client(lc)
    yield c
    c.close()
    lc.close()


def near_tie_data(seed=0, n=600, base=40, copies=6, L=12):
    """Every feature has 5 twins whose values differ by a few ulps: their representations
    are nearly parallel, so the balanced splits rank them by the last bits."""
    rng = np.random.default_rng(seed)
    B = sp.random(n, base, density=0.15, format="csc", random_state=rng, dtype=np.float32)
    B.data = rng.uniform(0.05, 1.0, B.nnz).astype(np.float32)
    cols = []
    for j in range(base):
        for _ in range(copies):
            col = B[:, j].copy()
            col.data = (col.data * (1 + rng.integers(-3, 4, col.nnz) * 2.0 ** -23)).astype(np.float32)
            cols.append(col)
    X = sp.hstack(cols, format="csr")
    Y = sp.random(n, L, density=0.3, format="csr", random_state=rng, dtype=np.float32)
    Y.data[:] = 1
    return X, Y


def assert_same_defrag(a, b):
    assert np.array_equal(a.labels_, b.labels_)
    for k in TREE_KEYS:
        assert np.array_equal(getattr(a.tree_, k), getattr(b.tree_, k)), k
    assert a.clustering_error_ == b.clustering_error_
    assert np.array_equal(a.zero_features_, b.zero_features_)
    assert a.n_iter_ == b.n_iter_


def assert_same_ktxmlc(a, b, X):
    for ta, tb in zip(a.trees_, b.trees_):
        for k in ta:
            assert np.array_equal(ta[k], tb[k]), k
    for k in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(a.W_, k), getattr(b.W_, k)), k
    assert np.array_equal(a.bias_w_, b.bias_w_)
    assert np.array_equal(a.calibration_a_, b.calibration_a_)
    assert np.array_equal(a.calibration_b_, b.calibration_b_)
    assert a.calibration_ == b.calibration_
    assert a.train_work_ == b.train_work_
    Sa, Sb = a.predict_scores(X, k=5), b.predict_scores(X, k=5)
    assert (Sa != Sb).nnz == 0


# ---------------------------------------------------------------------------- exact sums
def _correctly_rounded(s: Fraction) -> np.float32:
    f = np.float32(float(s))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    errs = [abs(Fraction(float(c)) - s) for c in cands]
    best = [c for c, e in zip(cands, errs) if e == min(errs)]
    if len(best) > 1:  # ties to even
        best = [c for c in best if not (np.array(c).view(np.uint32) & 1)]
    return best[0]


def test_exact_products_equal_rational_arithmetic_for_any_partition():
    rng = np.random.default_rng(0)
    n, d, L = 300, 14, 9
    X = sp.random(n, d, density=0.3, format="csr", random_state=rng, dtype=np.float32)
    X.data = (rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-5, 5, X.nnz)).astype(np.float32)
    Y = sp.random(n, L, density=0.4, format="csr", random_state=rng, dtype=np.float32)
    Y.data = rng.standard_normal(Y.nnz).astype(np.float32)
    Xd, Yd = X.toarray(), Y.toarray()
    ref = np.zeros((d, L), np.float32)
    for j in range(d):
        for lab in range(L):
            s = sum((Fraction(float(Xd[i, j])) * Fraction(float(Yd[i, lab]))
                     for i in range(n) if Xd[i, j] and Yd[i, lab]), Fraction(0))
            ref[j, lab] = _correctly_rounded(s)
    M, bad = _products.exact_xt_y(X, Y, return_inexact=True)
    assert bad == 0
    assert np.array_equal(M.toarray(), ref)
    assert (sp.csr_matrix(X.T @ Y).toarray() != ref).sum() > 0  # float32 sums are not exact
    for cuts in ([0, 300], [0, 1, 150, 151, 299, 300], [0, 77, 300]):
        parts = [_products.partial_xt_y(X[a:b], Y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        rng.shuffle(parts)  # any merge order
        P = parts[0]
        for q in parts[1:]:
            P = _products.merge(q, P)
        assert P.n_inexact == 0
        assert np.array_equal(_products.rounded(P).toarray(), ref)


@pytest.mark.parametrize("max_ranges", [1, 3, 16])
def test_reduce_scatter_by_row_ranges_equals_one_product(client, max_ranges):
    from featagg_core.distributed.blocks import reduce_scatter
    from featagg_core.distributed.defrag import _concat_finished, _finish_range, _slice_partial
    from featagg_core.distributed.executor import Executor
    X, Y = near_tie_data(seed=9, copies=2)
    cuts = [0, 50, 51, 300, 420, 600]
    for cl in ("serial", client):
        with Executor(cl) as ex:
            parts = [ex.submit(_products.partial_xt_y, X[a:b], Y[a:b])
                     for a, b in zip(cuts[:-1], cuts[1:])]
            fut = reduce_scatter(ex, parts, X.shape[1], _slice_partial, _products.merge,
                                 _finish_range, _concat_finished, max_ranges=max_ranges,
                                 finish_args=(0.0,))
            R, zero, bad = ex.gather([fut])[0]
        ref, _ = feature_representation(X, Y, "XY")
        assert bad == 0 and (R != ref).nnz == 0 and R.shape == ref.shape
        assert np.array_equal(zero, np.flatnonzero(np.diff(ref.indptr) == 0))


def test_inexact_additions_are_counted():
    X = sp.csr_matrix(np.array([[2.0 ** 100], [2.0 ** -100], [-(2.0 ** 100)]], np.float32))
    Y = sp.csr_matrix(np.ones((3, 1), np.float32))
    M, bad = _products.exact_xt_y(X, Y, return_inexact=True)
    assert bad == 0 and M.toarray()[0, 0] == np.float32(2.0 ** -100)  # 200 bits: still exact
    X = sp.csr_matrix(np.array([[2.0 ** 100], [2.0 ** -10], [2.0 ** -80]], np.float32))
    _, bad = _products.exact_xt_y(X, sp.csr_matrix(np.ones((3, 1), np.float32)),
                                  return_inexact=True)
    assert bad == 1  # the two small terms are 70 bits apart: their sum needs a third double


# ---------------------------------------------------------------------------- DEFRAG
def test_near_tie_data_is_sensitive_to_summation_order():
    """Naive float32 partial sums (what a plain map-reduce would do) change the tree."""
    X, Y = near_tie_data()
    R, _ = feature_representation(X, Y, "XY")
    ref = _build_tree(R, 4, 0, 1e-4, 50)
    for cuts in ([0, 300, 600], [0, 101, 377, 600]):
        P = None
        for a, b in zip(cuts[:-1], cuts[1:]):
            part = sp.csr_matrix(X[a:b].T @ Y[a:b], dtype=np.float32)
            P = part if P is None else sp.csr_matrix(P + part, dtype=np.float32)
        P.sort_indices()
        ip, ii, dd, _ = _kd.normalize_prune(P.indptr.astype(np.int64), P.indices.astype(np.int32),
                                            P.data.astype(np.float32), 0.0)
        naive = _build_tree(sp.csr_matrix((dd, ii, ip), shape=P.shape), 4, 0, 1e-4, 50)
        assert not np.array_equal(naive.order, ref.order)


@pytest.mark.parametrize("representation", ["XY", "X"])
def test_defrag_twin_equals_single_machine_on_near_ties(client, representation):
    X, Y = near_tie_data(seed=1)
    single = Defrag(d0=4, representation=representation, random_state=3).fit(X, Y)
    for cl, n_parts in ((client, 2), (client, 5), ("serial", 3)):
        dist = defrag_distributed(cl, X, Y, d0=4, representation=representation,
                                  random_state=3, n_parts=n_parts)
        assert_same_defrag(single, dist)
        info = dist.distributed_info_
        assert info["n_inexact"] == 0 and info["blocks"] == n_parts and info["groups"] >= 2


def test_defrag_twin_with_sampling_pruning_and_address(client):
    X, Y = near_tie_data(seed=2, copies=3)
    kw = dict(d0=3, representation="XY", random_state=5, sample_points=0.6,
              sample_labels=0.5, prune_threshold=0.01)
    single = Defrag(**kw).fit(X, Y)
    dist = defrag_distributed(client.scheduler.address, X, Y, n_parts=4, **kw)
    assert_same_defrag(single, dist)


def test_defrag_validation():
    X, Y = near_tie_data(seed=3, copies=1)
    with pytest.raises(ValueError, match="needs the label matrix Y"):
        defrag_distributed("serial", X, None)
    with pytest.raises(ValueError, match="d0"):
        defrag_distributed("serial", X, Y, d0=0)
    with pytest.raises(ValueError, match="unexpected keyword|got an unexpected"):
        defrag_distributed("serial", X, Y, depth=3)
    with pytest.raises(ValueError, match="client"):
        defrag_distributed(42, X, Y)


# ---------------------------------------------------------------------------- KTXMLC
@pytest.fixture(scope="module")
def xmlc_data():
    data = make_powerlaw_multilabel(1500, 300, 150, avg_labels=3, random_state=4)
    return data.X, data.Y


@pytest.mark.parametrize("params", [dict(n_trees=2, max_leaf_labels=20),
                                    dict(n_trees=2, max_leaf_labels=20, loss="mixed"),
                                    dict(n_trees=2, n_clusters=3, max_leaf_labels=15,
                                         representation="joint", partition="kmeans")])
def test_ktxmlc_twin_equals_single_machine(client, xmlc_data, params):
    X, Y = xmlc_data
    single = KTXMLC(random_state=7, **params).fit(X, Y)
    seen = []
    dist = ktxmlc_distributed(client, X, Y, n_parts=3, random_state=7,
                              progress=lambda f, m: seen.append(f), **params)
    assert_same_ktxmlc(single, dist, X[:400])
    assert dist.distributed_info_["n_inexact"] == 0
    # the root batches were cut across the workers (and the model is still the same)
    from featagg_core.xmlc import tree_fitting as core
    assert dist.distributed_info_["train_tasks"] > len(core.training_tasks(single.trees_, Y))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and len(seen) > 5


def test_ktxmlc_twin_makes_the_same_flat_tree_choice(client, xmlc_data):
    """one_vs_all="auto": the twin decides from the same label counts and trees."""
    X, Y = xmlc_data
    params = dict(n_trees=3, max_leaf_labels=40)  # 4 leaf clusters per tree <= beam 10
    single = KTXMLC(random_state=7, **params).fit(X, Y)
    assert len(single.trees_) == 1 and single.trees_[0]["n_children"][0] == Y.shape[1]
    dist = ktxmlc_distributed(client, X, Y, n_parts=3, random_state=7, **params)
    assert_same_ktxmlc(single, dist, X[:400])


def test_ktxmlc_serial_twin_and_dispatch(xmlc_data):
    X, Y = xmlc_data
    params = dict(n_trees=1, max_leaf_labels=30, random_state=1)
    spec = {"kind": "ktxmlc", **params}          # the run model decides where it fits
    single = fit_classifier(X, Y, spec)
    assert not hasattr(single, "distributed_info_")
    dist = fit_classifier(X, Y, spec, scheduler="serial")
    assert_same_ktxmlc(single, dist, X[:300])
    with pytest.raises(ValueError, match="Y"):
        ktxmlc_distributed("serial", X, None)


def test_ktxmlc_label_vectors_do_not_depend_on_blocks_or_row_order(xmlc_data):
    """The label vectors are exact products: label blocks of any size, and the rows in
    any order, give the same bits (a float32 scipy product does not)."""
    from featagg_core.xmlc import tree_fitting as core
    from featagg_core.xmlc.inputs import normalize_rows
    X, Y = xmlc_data
    Xn = normalize_rows(X)
    whole = core.label_representation(Xn, Y, block_nnz=1 << 30)
    blocks = core.label_representation(Xn, Y, block_nnz=500)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    shuffled = core.label_representation(Xn[perm], Y[perm], block_nnz=2000)
    for other in (blocks, shuffled):
        assert (whole != other).nnz == 0
        assert np.array_equal(whole.indptr, other.indptr)
    # and they are PIFA: unit rows along the sum of each label's normalised rows
    dense = (Y.T @ Xn).toarray().astype(np.float64)
    dense /= np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-30)
    assert np.allclose(whole.toarray(), dense, atol=1e-6)


def test_ktxmlc_train_tasks_get_only_their_nodes_rows(xmlc_data, monkeypatch):
    """A training task receives the rows reaching its node (the single machine's
    ``task_rows``), never the whole X, except at a root."""
    from featagg_core.xmlc import tree_fitting as core
    from featagg_core.distributed import ktxmlc as dk
    X, Y = xmlc_data
    seen = []
    real = dk._train_batch

    def spy(node_block, pos, problem, solver):
        seen.append((node_block[0].shape[0], problem.lo.copy()))
        return real(node_block, pos, problem, solver)

    monkeypatch.setattr(dk, "_train_batch", spy)
    model = ktxmlc_distributed("serial", X, Y, n_parts=3, n_trees=1, max_leaf_labels=20,
                                form="trees")  # the trees, not the flat model form="auto" may pick
    tree = model.trees_[0]
    Yc = sp.csc_matrix(Y)
    by_lo = {}
    for task in core.training_tasks(model.trees_, Y):
        by_lo[int(tree["lo"][task.c0]), int(tree["depth"][task.c0])] = \
            core.task_rows(Yc, tree, task.node).shape[0]
    assert len(seen) == len(by_lo) > 2
    sizes = sorted(m for m, _ in seen)
    assert sizes == sorted(by_lo.values())
    assert sizes[-1] == X.shape[0] and sizes[-2] < X.shape[0]  # only the root sees all


# ---------------------------------------------------------------------------- vocabulary
def test_vocabulary_counts_on_workers_equal_single_pass(client):
    rng = np.random.default_rng(5)
    vals = rng.choice(np.array(["a", "b", 3, 4.5, None, "z"], dtype=object), 3000,
                      p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    vals[rng.random(3000) < 0.05] = np.nan
    y = (rng.random(3000) < 0.4).astype(int)
    codes, vocab = factorize(vals)
    c1 = np.bincount(codes, weights=y).astype(np.int64)
    c0 = np.bincount(codes).astype(np.int64) - c1
    ref = vocabulary_distributed("serial", budget=4, counts=(vocab, c0, c1))
    parts = [(vals[a:b], y[a:b]) for a, b in ((0, 1000), (1000, 1001), (1001, 3000))]
    for res in (vocabulary_distributed(client, vals, y, budget=4),
                vocabulary_distributed(client, parts=parts, budget=4),
                vocabulary_distributed("serial", vals, y, budget=4)):
        assert [str(v) for v in res.vocabulary_] == [str(v) for v in vocab]
        assert np.array_equal(res.counts_, np.column_stack([c0, c1]))
        assert np.array_equal(res.split_points_, ref.split_points_)
        assert res.distributed_info_["count_parts"] >= 2
    with pytest.raises(ValueError, match="values/labels"):
        vocabulary_distributed("serial", vals, budget=4)


# ---------------------------------------------------------------------------- shards
def _write_shards(tmp_path, X, Y, cuts):
    paths = []
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        p = tmp_path / f"part-{k:02d}.txt"
        save_xc((X[a:b], Y[a:b]), str(p))
        paths.append(p)
    return paths


def test_shards_read_on_workers_feed_the_twins(client, tmp_path, xmlc_data):
    X, Y = xmlc_data
    paths = _write_shards(tmp_path, X, Y, [0, 400, 900, 1500])
    whole = [load_xc(str(p)) for p in paths]  # featagg's reader, file by file
    Xw = sp.vstack([w.X for w in whole], format="csr")
    Yw = sp.vstack([w.Y for w in whole], format="csr")
    h = load_xc_shards(client, str(tmp_path / "part-*.txt"))
    assert (h.n_samples, h.n_features, h.n_labels, h.n_blocks) == (1500, 300, 150, 3)
    assert h.nnz_X == Xw.nnz and len(h.fingerprint) == 16
    assert (h.gather().X != Xw).nnz == 0
    assert_same_defrag(Defrag(d0=8).fit(Xw, Yw), defrag_distributed(client, h, d0=8))
    params = dict(n_trees=1, max_leaf_labels=25)
    assert_same_ktxmlc(KTXMLC(**params).fit(Xw, Yw), ktxmlc_distributed(client, h, **params),
                       Xw[:300])
    with pytest.raises(ValueError, match="carries its own labels"):
        defrag_distributed(client, h, Yw)
    with pytest.raises(ValueError, match="another Dask client"):
        defrag_distributed("serial", h)


def test_form_choice_on_shards_gathers_only_the_carved_rows(client, tmp_path, xmlc_data,
                                                           monkeypatch):
    from featagg_core.distributed.blocks import ShardedMultiLabel
    from featagg_core.xmlc import form_choice as fc

    X, Y = xmlc_data
    paths = _write_shards(tmp_path, X, Y, [0, 400, 900, 1500])
    whole = [load_xc(str(p)) for p in paths]
    Xw = sp.vstack([w.X for w in whole], format="csr")
    Yw = sp.vstack([w.Y for w in whole], format="csr")
    h = load_xc_shards(client, str(tmp_path / "part-*.txt"))
    # a small cap, so that it bounds the candidate rows (1200 of the 1500 rows are not
    # validation rows); the single machine runs with the same cap
    monkeypatch.setattr(fc, "MAX_FIT_ROWS", 500)
    taken = []
    real = ShardedMultiLabel.take_rows

    def recording(self, rows):
        out = real(self, rows)
        taken.append((np.asarray(rows).copy(), out))
        return out

    monkeypatch.setattr(ShardedMultiLabel, "take_rows", recording)
    params = dict(n_trees=1, max_leaf_labels=25, random_state=3)
    dist = ktxmlc_distributed(client, h, **params)
    assert len(taken) == 1                      # one gather, of exactly the carved rows
    rows, (Xg, Yg) = taken[0]
    fit_rows, valid_rows = fc.carve_rows(1500, 3)
    assert (fit_rows.size, valid_rows.size) == (500, 300)
    assert np.array_equal(rows, np.union1d(fit_rows, valid_rows))
    assert rows.size <= valid_rows.size + fc.MAX_FIT_ROWS < h.n_samples
    assert Xg.shape[0] == Yg.shape[0] == rows.size
    assert (Xg != Xw[rows]).nnz == 0 and (Yg != Yw[rows]).nnz == 0
    assert dist.distributed_info_["choice_rows_gathered"] == rows.size
    single = KTXMLC(**params).fit(Xw, Yw)
    assert (dist.form_, dist.C_, dist.choice_) == (single.form_, single.C_, single.choice_)
    assert dist.selection_ == single.selection_ and len(single.selection_) >= 3
    assert_same_ktxmlc(single, dist, Xw[:300])
    # a gather of a few rows from one block sends only those rows
    assert (real(h, [401, 402, 899])[0] != Xw[[401, 402, 899]]).nnz == 0
    with pytest.raises(ValueError, match="sorted"):
        real(h, [3, 2])


def test_twin_on_shards_picks_the_trees_where_the_single_machine_does(client, tmp_path):
    # labels over few feature groups, 3 labels a point: the trees win on the validation
    # rows (tests/test_ktxmlc.py::test_form_auto_picks_the_form_that_wins_on_validation_rows)
    d = make_powerlaw_multilabel(n_samples=2000, n_features=400, n_labels=60, avg_labels=3,
                                 noise=0.3, feature_clusters=2, random_state=1)
    paths = _write_shards(tmp_path, d.X, d.Y, [0, 700, 1300, 2000])
    whole = [load_xc(str(p)) for p in paths]
    Xw = sp.vstack([w.X for w in whole], format="csr")
    Yw = sp.vstack([w.Y for w in whole], format="csr")
    h = load_xc_shards(client, str(tmp_path / "part-*.txt"))
    params = dict(n_clusters=4, max_leaf_labels=5, beam_width=12, random_state=0)
    single = KTXMLC(**params).fit(Xw, Yw)
    dist = ktxmlc_distributed(client, h, **params)
    assert single.form_ == "trees" and "label trees" in single.choice_
    assert (dist.form_, dist.C_, dist.choice_) == (single.form_, single.C_, single.choice_)
    assert dist.selection_ == single.selection_
    assert dist.get_params()["form"] == "auto"
    assert_same_ktxmlc(single, dist, Xw[:300])


def test_shard_errors(client, tmp_path, xmlc_data):
    X, Y = xmlc_data
    _write_shards(tmp_path, X, Y, [0, 10, 20])
    save_xc((X[:5, :200], Y[:5]), str(tmp_path / "part-09.txt"))
    with pytest.raises(DatasetError, match="part-09.txt.*200 features"):
        load_xc_shards(client, str(tmp_path))
    with pytest.raises(DatasetError, match="no shard files"):
        load_xc_shards(client, str(tmp_path / "nothing-*.txt"))
    (tmp_path / "part-10.txt").write_text("3 300 150\n0 1:2\n")
    with pytest.raises(DatasetError, match="part-10.txt"):
        load_xc_shards(client, [str(tmp_path / "part-10.txt")])


# ---------------------------------------------------------------------------- cancel
def test_cancel_from_progress_stops_and_frees_the_cluster(client):
    X, Y = near_tie_data(seed=6)

    def progress(level, n_levels):
        if level >= 2:
            raise Cancelled("stop")

    def n_tasks():
        return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))

    before = n_tasks()
    with pytest.raises(Cancelled):
        defrag_distributed(client, X, Y, d0=2, progress=progress)
    deadline = time.time() + 10
    while time.time() < deadline and n_tasks() > before:
        time.sleep(0.05)
    assert n_tasks() <= before


# ---------------------------------------------------------------------------- app glue
def test_scheduler_from_env_and_description(client):
    assert scheduler_from_env({}) is None
    assert scheduler_from_env({"FEATAGG_DASK_SCHEDULER": "  "}) is None
    assert scheduler_from_env({"FEATAGG_DASK_SCHEDULER": " tcp://h:8786 "}) == "tcp://h:8786"
    d = describe_scheduler(client)
    assert d["ok"] and d["workers"] == 2 and "2 workers" in d["message"]
    assert describe_scheduler(None)["message"] == "Fits run on this server."
    bad = describe_scheduler("tcp://127.0.0.1:9", timeout=0.5)
    assert not bad["ok"] and "cannot be reached" in bad["message"]
    X, Y = near_tie_data(seed=7, copies=2)
    spec = {"d0": 4, "representation": "XY"}
    assert_same_defrag(fit_defrag(X, Y, spec), fit_defrag(X, Y, spec, scheduler=client))


# ---------------------------------------------------------------------------- processes
def test_processes_cluster_data_travels_and_a_killed_worker_is_survived(tmp_path, xmlc_data):
    """Real worker processes: a worker killed mid-fit costs re-run tasks, re-read shards or
    (when the scheduler cannot recompute a result) a re-run of the fit, and the model
    still equals the single machine's; with scattered input the fit may also stop with
    ClusterError after its retries (never a wrong model)."""
    from distributed import Client, LocalCluster
    X, Y = xmlc_data
    _write_shards(tmp_path, X, Y, [0, 500, 1000, 1500])
    single = Defrag(d0=2).fit(X, Y)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as lc, Client(lc) as c:
        h = load_xc_shards(c, str(tmp_path))
        dist = defrag_distributed(c, h, d0=2)
        assert_same_defrag(single, dist)
        moved = sum(sum(e["total"] for e in log) for log in c.run(
            lambda dask_worker: list(dask_worker.transfer_incoming_log)).values())
        assert moved > 0  # blocks really went from one worker process to the other

        def killer(level, n_levels, done=[]):
            if level == 2 and not done:
                done.append(1)
                victim = sorted(c.scheduler_info()["workers"])[0]
                threading.Thread(target=lambda: _kill(c, victim), daemon=True).start()
                time.sleep(1.0)

        before = set(c.scheduler_info()["workers"])
        assert_same_defrag(single, defrag_distributed(c, h, d0=2, progress=killer))
        assert set(c.scheduler_info()["workers"]) != before  # one worker died mid-fit
        def killer2(level, n_levels, done=[]):
            if level == 2 and not done:
                done.append(1)
                _kill(c, sorted(c.scheduler_info()["workers"])[-1])
                time.sleep(1.0)

        try:
            res = defrag_distributed(c, X, Y, d0=2, progress=killer2)
        except ClusterError as exc:  # allowed: no model rather than a wrong one
            assert "no model was produced" in str(exc)
        else:
            assert_same_defrag(single, res)


def _kill(c, address):
    try:
        c.run(os._exit, 1, workers=[address])
    except Exception:  # the worker dies before answering
        pass


def _sleep_then(x, seconds):
    time.sleep(seconds)
    return x


def test_a_cancel_is_seen_while_a_long_task_runs(client):
    from featagg_core.distributed.executor import Executor
    calls = []

    def poll():
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise Cancelled("stop")

    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        with Executor(client) as ex:
            fut = ex.submit(_sleep_then, 1, 3.0)
            ex.gather([fut], poll=poll, every=0.2)
    assert time.monotonic() - t0 < 2.0  # not the task's 3 s
    deadline = time.time() + 5
    while time.time() < deadline and fut.status != "cancelled":
        time.sleep(0.05)
    assert fut.status == "cancelled"
