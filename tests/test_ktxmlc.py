"""KTXMLC: tree invariants, beam search vs brute force, one-vs-all reduction, calibration,
cancellation, artifacts, DEFRAG d0 choice."""
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score

from featagg_core.xmlc import tree_fitting as core
from featagg_core import metrics
from featagg_core.utils.cancel import Cancelled
from featagg_core._kernels.ktxmlc import _local_csr, node_rows
from featagg_core._kernels.ktxmlc_cluster import bisect_rows, cluster_rows
from featagg_core.xmlc.inputs import normalize_rows
from featagg_core.xmlc.ktxmlc import KTXMLC, OneVsAll
from featagg_core.xmlc.label_vectors import label_representation
from featagg_core.xmlc.selection import choose_d0, elbow_curve
from featagg_core.data.synthetic import make_powerlaw_multilabel

import naive


@pytest.fixture(scope="module")
def small():
    d = make_powerlaw_multilabel(500, 200, 60, avg_labels=3, avg_features=15,
                                 random_state=3)
    X, Y = d.X, d.Y
    return sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y, dtype=np.float32)


def _check_tree(tr, L, K, max_depth, max_leaf, partition):
    N = tr["parent"].shape[0]
    lab = tr["label"]
    # every label exactly once as a terminal node
    assert np.array_equal(np.sort(lab[lab >= 0]), np.arange(L))
    assert np.array_equal(np.sort(tr["perm"]), np.arange(L))
    for v in range(N):
        nc, fc = tr["n_children"][v], tr["first_child"][v]
        labels_v = set(tr["perm"][tr["lo"][v]:tr["hi"][v]].tolist())
        if lab[v] >= 0:
            assert nc == 0 and labels_v == {lab[v]}
            continue
        assert nc >= 1
        kids = np.arange(fc, fc + nc)
        assert np.all(tr["parent"][kids] == v)
        assert np.all(tr["depth"][kids] == tr["depth"][v] + 1)
        union = set()
        for c in kids:
            part = set(tr["perm"][tr["lo"][c]:tr["hi"][c]].tolist())
            assert not (union & part)
            union |= part
        assert union == labels_v
        if lab[fc] >= 0:  # leaf cluster: children are its labels
            assert np.all(lab[kids] >= 0)
            assert nc <= max_leaf or tr["depth"][v] == max_depth
            assert tr["depth"][v] <= max_depth
        else:
            assert 2 <= nc <= K
            assert len(labels_v) > max_leaf and tr["depth"][v] < max_depth
            if partition == "bisect":
                # min(K, ceil(m / max_leaf)) children of (nearly) equal size
                assert nc == min(K, -(-len(labels_v) // max_leaf))
                sizes = tr["hi"][kids] - tr["lo"][kids]
                assert sizes.max() - sizes.min() <= 2


@pytest.mark.parametrize("partition", ["bisect", "kmeans"])
@pytest.mark.parametrize("K,max_depth,max_leaf", [(2, 20, 8), (3, 2, 5), (6, 3, 4)])
def test_tree_respects_k_depth_leaf_size_and_covers_labels(small, K, max_depth, max_leaf,
                                                           partition):
    X, Y = small
    # the trees themselves, even where one_vs_all="auto" would keep one flat tree instead
    m = KTXMLC(n_clusters=K, n_trees=2, max_depth=max_depth, max_leaf_labels=max_leaf,
               partition=partition, random_state=1, one_vs_all="never").fit(X, Y)
    assert len(m.trees_) == 2
    for tr in m.trees_:
        _check_tree(tr, Y.shape[1], K, max_depth, max_leaf, partition)
    assert m.trees_[0]["depth"].max() <= max_depth + 1
    nodes = m.tree_nodes(1)
    assert len(nodes["children"]) == m.trees_[1]["parent"].shape[0]
    assert sorted(nodes["labels"][0].tolist()) == list(range(Y.shape[1]))


def test_balanced_binary_kmeans_tree_splits_evenly(small):
    X, Y = small
    m = KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=7, partition="kmeans").fit(X, Y)
    tr = m.trees_[0]
    for v in np.nonzero((tr["n_children"] == 2) & (tr["label"] < 0))[0]:
        fc = tr["first_child"][v]
        if tr["label"][fc] >= 0:
            continue
        sizes = tr["hi"][fc:fc + 2] - tr["lo"][fc:fc + 2]
        assert abs(sizes[0] - sizes[1]) <= 1


def _planted_rows(groups=5, per=30, d=40, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.eye(groups, d) * 5 + rng.random((groups, d)) * 0.1
    truth = np.repeat(np.arange(groups), per)
    R = normalize_rows(sp.csr_matrix(centres[truth] + rng.random((groups * per, d)) * 0.5))
    return R, truth


def test_cluster_kernel_recovers_planted_groups():
    R, truth = _planted_rows()
    for balanced in (False, True):
        assign, nk = cluster_rows(R.indptr.astype(np.int64), R.indices, R.data, 40, 5,
                                  balanced, 11, 2.0, 0, 20, 1e-4, 2, np.zeros(1, np.uint8))
        assert nk == 5
        assert adjusted_rand_score(truth, assign) == 1.0


def test_bisect_kernel_recovers_planted_pairs_and_numbers_halves_consecutively():
    # 4 planted groups, two "super-groups" {0,1} and {2,3}: the first split separates the
    # super-groups, the second the groups; halves of a split get consecutive ids
    rng = np.random.default_rng(2)
    d = 40
    base = np.zeros((4, d))
    base[0, :10] = base[1, :10] = 3
    base[2, 10:20] = base[3, 10:20] = 3
    for g in range(4):
        base[g, 20 + 5 * g:25 + 5 * g] = 2
    truth = np.repeat(np.arange(4), 25)
    R = normalize_rows(sp.csr_matrix(base[truth] + rng.random((100, d)) * 0.3))
    go = np.zeros(1, np.uint8)
    assign, ng = bisect_rows(R.indptr.astype(np.int64), R.indices, R.data, d, 4, 5, 20, 1e-4, go)
    assert ng == 4 and adjusted_rand_score(truth, assign) == 1.0
    assert np.all(np.bincount(assign) == 25)
    sup = assign[truth < 2]
    assert set(sup.tolist()) in ({0, 1}, {2, 3})
    # 3 groups of 100 rows: sizes proportional (34/33/33 give or take one)
    a3, n3 = bisect_rows(R.indptr.astype(np.int64), R.indices, R.data, d, 3, 5, 20, 1e-4, go)
    assert n3 == 3 and np.abs(np.bincount(a3) - 100 / 3).max() <= 1.5


def test_local_csr_and_node_rows_against_scipy():
    rng = np.random.default_rng(0)
    X = sp.random(300, 5000, density=0.002, format="csr", random_state=1, dtype=np.float32)
    X.sort_indices()
    for rows in (np.sort(rng.choice(300, 7, replace=False)), np.arange(300)):  # both branches
        lp, li, ld, feats = _local_csr(X.indptr.astype(np.int64), X.indices, X.data,
                                       rows.astype(np.int64), 5000)
        ref = X[rows]
        assert np.array_equal(feats, np.unique(ref.indices))
        got = sp.csr_matrix((ld, li.astype(np.int64), lp), shape=(rows.size, feats.size))
        assert (got - ref[:, feats]).nnz == 0
    Y = sp.csr_matrix((rng.random((300, 20)) < 0.1).astype(np.float32))
    Yc = sp.csc_matrix(Y)
    perm = rng.permutation(20)
    for lo, hi in ((0, 1), (3, 9), (0, 20)):
        got = node_rows(Yc.indptr.astype(np.int64), Yc.indices, perm, lo, hi)
        ref = np.nonzero(np.asarray(Y[:, perm[lo:hi]].sum(axis=1)).ravel() > 0)[0]
        assert np.array_equal(got, ref)


def _brute_force_scores(m, X, power):
    """Every label's score by walking its root path with dense weights (no beam)."""
    Xn = normalize_rows(sp.csr_matrix(X, dtype=np.float32)).toarray().astype(np.float64)
    W = m.W_.toarray().astype(np.float64)
    z = Xn @ W.T + m.bias_w_.astype(np.float64)[None, :]
    if power == 0:
        t = m.calibration_a_[None, :] * z + m.calibration_b_[None, :]
        logp = -np.logaddexp(0.0, -t)
    else:
        logp = -np.maximum(0.0, 1.0 - z) ** power
    S = np.zeros((X.shape[0], m.n_labels_))
    for t, tr in enumerate(m.trees_):
        off = m.node_offsets_[t]
        for v in np.nonzero(tr["label"] >= 0)[0]:
            path = np.zeros(X.shape[0])
            u = v
            while tr["parent"][u] >= 0:
                path += logp[:, off + u]
                u = tr["parent"][u]
            S[:, tr["label"][v]] += np.exp(path)
    return S / len(m.trees_)


@pytest.mark.parametrize("K,partition,score,power", [(2, "bisect", "calibrated", 0),
                                                     (4, "kmeans", "l2-hinge", 2),
                                                     (4, "bisect", "l3-hinge", 3)])
def test_unbounded_beam_equals_exhaustive_scoring(small, K, partition, score, power):
    X, Y = small
    m = KTXMLC(n_clusters=K, n_trees=3, max_leaf_labels=6, random_state=2,
               partition=partition, score=score).fit(X, Y)
    Xq = X[:40]
    ref = _brute_force_scores(m, Xq, power)
    L = Y.shape[1]
    S = m.predict_scores(Xq, k=L, beam_width=10 ** 6).toarray()
    np.testing.assert_allclose(S, ref, rtol=2e-5, atol=1e-7)
    # with the default beam a tree that misses a label contributes 0 to its average:
    # never more than the exhaustive score, and equal to it in most places
    S5 = m.predict_scores(Xq, k=5)
    assert np.all(np.diff(S5.indptr) == 5)
    rows = np.repeat(np.arange(40), 5)
    exact = ref[rows, S5.indices]
    assert np.all(S5.data <= exact * (1 + 2e-5))
    assert np.mean(np.isclose(S5.data, exact, rtol=2e-5)) > 0.8
    # with the unbounded beam the top-5 are the brute-force top-5
    S5u = m.predict_scores(Xq, k=5, beam_width=10 ** 6)
    top = np.argsort(-ref, axis=1, kind="stable")[:, :5]
    assert np.array_equal(np.sort(top, axis=1), S5u.indices.reshape(40, 5))


def test_k_equals_l_depth_one_reduces_to_one_vs_all(small):
    X, Y = small
    L = Y.shape[1]
    kt = KTXMLC(n_clusters=L, n_trees=1, max_depth=1, max_leaf_labels=1, partition="kmeans",
                min_cluster_size=1, beam_width=L, form="trees").fit(X, Y)
    ova = OneVsAll().fit(X, Y)
    Sk = kt.predict_scores(X[:100], k=10)
    So = ova.predict_scores(X[:100], k=10)
    assert np.array_equal(Sk.indices, So.indices)
    np.testing.assert_allclose(Sk.data, So.data, rtol=1e-6)
    # and one-vs-all itself is exhaustive: sigmoid(a w'x + b) per label
    ref = _brute_force_scores(ova, X[:100], 0)
    top = np.argsort(-ref, axis=1, kind="stable")[:, :10]
    assert np.array_equal(np.sort(top, axis=1), So.indices.reshape(100, 10))


def test_single_leaf_label_sets_train_one_tree(small):
    X, Y = small
    m = KTXMLC(n_trees=3, max_leaf_labels=100).fit(X, Y)  # 60 labels <= 100
    assert len(m.trees_) == 1 and m.trees_[0]["n_children"][0] == Y.shape[1]


def _flat_by_hand(trees, Yd, beam):
    """The one_vs_all="auto" rule from dense labels: every tree has <= beam leaf clusters,
    and n * L <= the trees' rows x classifiers (a node's rows: all at the root, else the
    positives of its labels, at most n)."""
    n, L = Yd.shape
    work = 0
    for tr in trees:
        leaves = 0
        for v in range(tr["parent"].shape[0]):
            nc = tr["n_children"][v]
            if nc == 0:
                continue
            leaves += tr["label"][tr["first_child"][v]] >= 0
            labels = tr["perm"][tr["lo"][v]:tr["hi"][v]]
            work += (n if v == 0 else min(n, int(Yd[:, labels].sum()))) * nc
        if leaves > beam:
            return False
    return n * L <= work


@pytest.mark.parametrize("n_trees,max_leaf,beam", [(3, 8, 10), (3, 8, 4), (1, 5, 100),
                                                   (3, 20, 10)])
def test_one_vs_all_auto_keeps_one_flat_tree_where_the_beam_prunes_nothing(small, n_trees,
                                                                        max_leaf, beam):
    X, Y = small
    params = dict(n_clusters=4, n_trees=n_trees, max_leaf_labels=max_leaf, beam_width=beam,
                  random_state=2)
    trees = KTXMLC(one_vs_all="never", form="trees", **params).fit(X, Y)
    # one_vs_all="auto" (the default), the rule of the trees' form (form="auto" chooses
    # between the forms on validation rows instead: tested below)
    auto = KTXMLC(form="trees", **params).fit(X, Y)
    expect = _flat_by_hand(trees.trees_, Y.toarray(), beam)
    assert expect == {(3, 8, 10): True, (3, 8, 4): False, (1, 5, 100): False,
                      (3, 20, 10): True}[(n_trees, max_leaf, beam)]
    S = auto.predict_scores(X, k=5)
    if expect:
        assert len(auto.trees_) == 1 and auto.trees_[0]["n_children"][0] == Y.shape[1]
        # exactly the one-vs-all model (same solver, seeds and calibration)
        So = OneVsAll(random_state=2).fit(X, Y).predict_scores(X, k=5)
        assert (S != So).nnz == 0
        # which is exhaustive: its top 5 are the 5 best sigmoid(a w'x + b) of every label
        ref = _brute_force_scores(auto, X[:50], 0)
        top = np.sort(np.argsort(-ref, axis=1, kind="stable")[:, :5], axis=1)
        assert np.array_equal(top, S[:50].indices.reshape(50, 5))
    else:
        assert len(auto.trees_) == n_trees
        assert (S != trees.predict_scores(X, k=5)).nnz == 0


def test_results_do_not_depend_on_thread_count_or_progress_hook(small):
    X, Y = small
    a = KTXMLC(n_clusters=3, max_leaf_labels=5, n_jobs=1).fit(X, Y)
    b = KTXMLC(n_clusters=3, max_leaf_labels=5, n_jobs=2).fit(X, Y, progress=lambda f, m: None)
    assert (a.W_ != b.W_).nnz == 0
    np.testing.assert_array_equal(a.bias_w_, b.bias_w_)
    np.testing.assert_array_equal(a.calibration_a_, b.calibration_a_)
    Sa, Sb = a.predict_scores(X, k=5), b.predict_scores(X, k=5)
    assert (Sa != Sb).nnz == 0
    c = KTXMLC(n_clusters=3, max_leaf_labels=5, random_state=9).fit(X, Y)
    assert not np.array_equal(c.trees_[0]["perm"], a.trees_[0]["perm"])


def test_fit_sigmoid_matches_logistic_regression_on_binned_data():
    rng = np.random.default_rng(0)
    z = rng.normal(size=50000) * 1.5
    y = rng.random(z.size) < 1 / (1 + np.exp(-(2.5 * z - 1.0)))
    nb = core.CALIB_BINS
    bins = np.clip(np.floor((z + core.CALIB_Z) * nb / (2 * core.CALIB_Z)).astype(int), 0, nb - 1)
    pos = np.bincount(bins[y], minlength=nb).astype(float)
    neg = np.bincount(bins[~y], minlength=nb).astype(float)
    a, b = core.fit_sigmoid(neg, pos)
    centres = -core.CALIB_Z + (bins + 0.5) * (2 * core.CALIB_Z / nb)
    ref = LogisticRegression(C=1e8, tol=1e-10, max_iter=1000).fit(centres[:, None], y)
    assert a == pytest.approx(ref.coef_[0, 0], rel=1e-3)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-3)
    assert core.fit_sigmoid(neg, np.zeros(nb)) == (1.0, 0.0)


def test_calibration_histogram_is_that_of_the_decision_values(small):
    # calibration_rows >= rows: every training row of every classifier is counted once,
    # so the label-classifier histogram can be rebuilt from W and the tree
    X, Y = small
    m = KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=20, calibration_rows=10 ** 6).fit(X, Y)
    tr = m.trees_[0]
    Xn = normalize_rows(X).toarray()
    z = Xn @ m.W_.toarray().T + m.bias_w_[None, :]
    Yd = Y.toarray() > 0
    pos = np.zeros(core.CALIB_BINS)
    neg = np.zeros(core.CALIB_BINS)
    for v in np.nonzero(tr["label"] >= 0)[0]:
        p = tr["parent"][v]
        labs = tr["perm"][tr["lo"][p]:tr["hi"][p]]
        rows = np.nonzero(Yd[:, labs].any(axis=1))[0] if p != 0 else np.arange(X.shape[0])
        if Yd[rows, tr["label"][v]].all():
            continue
        b = np.clip(np.floor((z[rows, v] + core.CALIB_Z) * core.CALIB_BINS
                             / (2 * core.CALIB_Z)).astype(int), 0, core.CALIB_BINS - 1)
        yy = Yd[rows, tr["label"][v]]
        np.add.at(pos, b[yy], 1)
        np.add.at(neg, b[~yy], 1)
    a_ref, b_ref = core.fit_sigmoid(neg, pos)
    a, b, n_neg, n_pos = m.calibration_[0]
    assert (n_neg, n_pos) == (neg.sum(), pos.sum())
    assert a == pytest.approx(a_ref, rel=1e-4) and b == pytest.approx(b_ref, abs=1e-4)
    assert a > 0  # a larger decision value means a likelier label


def test_bibtex_accuracy_floor():
    from featagg_core.data.samples import load_sample

    d = load_sample("bibtex")
    m = KTXMLC().fit(d.X, d.Y)
    S = m.predict_scores(d.X_test, k=5)
    p1, p5 = (float(metrics.precision_at_k(d.Y_test, S, k)) for k in (1, 5))
    # predicting the most frequent training labels for everyone
    freq = np.asarray(d.Y.sum(axis=0)).ravel()
    pop = sp.csr_matrix(np.tile(freq, (d.X_test.shape[0], 1)))
    p1_pop = float(metrics.precision_at_k(d.Y_test, pop, 1))
    assert p1_pop < 0.2
    # omikuji (Parabel settings) reaches 63.6-63.8 / 28.5-28.8 on this split
    assert p1 > 0.61 and p5 > 0.28
    psp = float(metrics.psprecision_at_k(d.Y_test, S, metrics.inverse_propensity(d.Y), 5))
    assert psp > 0.57


def test_artifact_round_trip_and_old_state_refused(tmp_path, small):
    from featagg_core.artifacts.store import ArtifactError, load_artifact, save_artifact

    X, Y = small
    # three trees; one flat tree of a 3-tree KTXMLC (one_vs_all="auto"; and a label set
    # that fits one leaf), whose single tree the load check accepts; one-vs-all
    # (and a KTXMLC that chose its own form: what it chose survives the round trip)
    models = (KTXMLC(n_clusters=3, max_leaf_labels=5, form="trees").fit(X, Y),
              KTXMLC(n_clusters=3, max_leaf_labels=20, form="trees").fit(X, Y),
              KTXMLC(max_leaf_labels=100).fit(X, Y), OneVsAll().fit(X, Y),
              KTXMLC(n_clusters=3, max_leaf_labels=5).fit(X, Y))
    assert [len(m.trees_) for m in models[:4]] == [3, 1, 1, 1]
    assert models[4].selection_ and models[4].form_ in ("flat", "trees")
    for i, m in enumerate(models):
        path = tmp_path / f"{type(m).__name__}{i}.zip"
        save_artifact(m, path)
        m2 = load_artifact(path)
        assert type(m2) is type(m) and m2.get_params() == m.get_params()
        assert (m.predict_scores(X, k=5) != m2.predict_scores(X, k=5)).nnz == 0
        assert m2.model_size_bytes_ == m.model_size_bytes_
        if isinstance(m, KTXMLC):
            assert (m2.form_, m2.C_, m2.choice_) == (m.form_, m.C_, m.choice_)
    m = models[3]
    meta, arrays = m._artifact_state()
    old = {k: v for k, v in meta.items() if k not in ("state_version", "calibration")}
    with pytest.raises(ArtifactError, match="older featagg"):
        OneVsAll._from_artifact_state(m.get_params(), old,
                                      {k: v for k, v in arrays.items()
                                       if not k.startswith("calibration")})


def test_progress_is_reported_and_monotone(small):
    X, Y = small
    seen = []
    KTXMLC(n_clusters=2, max_leaf_labels=5).fit(X, Y, progress=lambda f, msg: seen.append((f, msg)))
    fr = [f for f, _ in seen]
    assert fr[-1] == 1.0 and all(0 <= f <= 1 for f in fr)
    assert all(b >= a for a, b in zip(fr, fr[1:]))
    assert any("level" in msg for _, msg in seen) and any("classifiers" in msg for _, msg in seen)


def _pool_threads():
    return [t for t in threading.enumerate() if t.name.startswith("ktxmlc")]


@pytest.mark.parametrize("when", ["trees", "classifiers"])
def test_cancel_stops_the_fit_and_leaves_no_threads(when):
    d = make_powerlaw_multilabel(3000, 2000, 400, avg_labels=3, avg_features=20, random_state=1)
    calls = []

    def progress(f, msg):
        calls.append(msg)
        if when in msg:
            raise Cancelled("user pressed cancel")

    m = KTXMLC(n_clusters=4, max_leaf_labels=10, n_jobs=2)
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        m.fit(d.X, d.Y, progress=progress)
    assert time.perf_counter() - t0 < 30
    assert not _pool_threads()
    assert not hasattr(m, "W_")
    # OneVsAll and the DEFRAG pipeline let it through too
    def always(f, msg):
        raise Cancelled()

    with pytest.raises(Cancelled):
        OneVsAll(n_jobs=2).fit(d.X, d.Y, progress=always)
    from featagg_core.xmlc.ktxmlc import DefragKTXMLC
    with pytest.raises(Cancelled):
        DefragKTXMLC(d0=8, n_clusters=4, max_leaf_labels=10).fit(d.X, d.Y, progress=progress)
    assert not _pool_threads()


def test_run_jobs_cancels_pending_jobs_and_sets_stop():
    from concurrent.futures import ThreadPoolExecutor

    started = []

    def job(i):
        started.append(i)
        time.sleep(0.3)
        return i

    stop = np.zeros(1, np.uint8)

    def progress(f, msg):
        if started:
            raise Cancelled()

    with ThreadPoolExecutor(1) as pool:
        with pytest.raises(Cancelled):
            core.run_jobs(pool, job, list(range(20)), progress=progress, stop=stop)
    assert stop[0] == 1 and len(started) <= 2
    with ThreadPoolExecutor(2) as pool:
        assert core.run_jobs(pool, job, [3, 1, 2]) == [3, 1, 2]


def test_validation_and_sklearn_protocol(small):
    X, Y = small
    with pytest.raises(NotFittedError):
        KTXMLC().predict_scores(X)
    with pytest.raises(ValueError, match="n_clusters"):
        KTXMLC(n_clusters=1).fit(X, Y)
    with pytest.raises(ValueError, match="C"):
        KTXMLC(C=0).fit(X, Y)
    with pytest.raises(ValueError, match="partition"):
        KTXMLC(partition="ward").fit(X, Y)
    with pytest.raises(ValueError, match="score"):
        KTXMLC(score="sigmoid").fit(X, Y)
    with pytest.raises(ValueError, match="rows"):
        KTXMLC().fit(X, Y[:10])
    with pytest.raises(ValueError, match="0/1"):
        KTXMLC().fit(X, Y * 2)
    m = KTXMLC(n_clusters=4, beam_width=3)
    assert clone(m).get_params() == m.get_params()
    m.fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict_scores(X[:, :10])


def test_label_representation_in_label_blocks_equals_the_whole_product(small):
    X, Y = small
    Xn = normalize_rows(X)
    calls = []
    R = core.label_representation(Xn, Y, progress=lambda j, n: calls.append((j, n)),
                                  block_nnz=50)
    ref = normalize_rows(sp.csr_matrix(Y.T @ Xn))
    assert len(calls) > 5 and calls[-1][0] == calls[-1][1]
    assert abs(R - ref).max() < 1e-6 and R.shape == ref.shape


def test_elbow_finds_planted_number_of_label_groups():
    # labels fall in 4 groups with disjoint features: WCSS drops sharply until K = 4
    rng = np.random.default_rng(1)
    n, L, d = 800, 40, 80
    group = np.arange(L) % 4
    Y = sp.csr_matrix((rng.random((n, L)) < 0.06).astype(np.float32))
    rows, cols = Y.nonzero()
    feats = group[cols] * 20 + rng.integers(0, 20, size=cols.size)
    X = sp.csr_matrix((np.ones(cols.size, np.float32), (rows, feats)), shape=(n, d))
    res = elbow_curve(X, Y, ks=[1, 2, 3, 4, 6, 8, 12, 16])
    assert res.elbow == 4
    R = label_representation(X, Y)
    Rd = R.toarray()
    assert res.wcss[0] == pytest.approx(((Rd - Rd.mean(0)) ** 2).sum(), rel=1e-5)
    assert np.all(np.diff(res.wcss[:4]) < 0)


def test_defrag_pipeline_trains_on_agglomerated_features(small):
    from featagg_core.agglomeration.defrag import Defrag
    from featagg_core.xmlc.ktxmlc import DefragKTXMLC
    from featagg_core.xmlc.selection import defrag_comparison

    X, Y = small
    kw = dict(n_clusters=3, max_leaf_labels=6, n_trees=2)
    pipe = DefragKTXMLC(d0=4, **kw).fit(X, Y)
    df = Defrag(d0=4, representation="XY", random_state=0).fit(X, Y)
    Xa = df.transform(X)
    assert pipe.models_[0].n_features_in_ == Xa.shape[1] < X.shape[1]
    # the pipeline equals Defrag followed by KTXMLC on the agglomerated matrix
    direct = KTXMLC(**kw).fit(Xa, Y)
    assert (pipe.predict_scores(X, k=5) != direct.predict_scores(Xa, k=5)).nnz == 0
    assert pipe.model_size_bytes_ < KTXMLC(**kw).fit(X, Y).model_size_bytes_
    # one DEFRAG realisation per tree: members average into valid top-k scores
    ens = DefragKTXMLC(d0=4, per_tree=True, **kw).fit(X, Y)
    assert len(ens.models_) == 2 and all(len(m.trees_) == 1 for m in ens.models_)
    S = ens.predict_scores(X[:50], k=5)
    assert np.all(np.diff(S.indptr) == 5) and np.all((S.data > 0) & (S.data <= 1))
    S0 = ens.models_[0].predict_scores(ens.defrags_[0].transform(X[:50]), k=Y.shape[1])
    S1 = ens.models_[1].predict_scores(ens.defrags_[1].transform(X[:50]), k=Y.shape[1])
    ref = ((S0 + S1) / 2).toarray()
    rows = np.repeat(np.arange(50), 5)
    np.testing.assert_allclose(S.data, ref[rows, S.indices], rtol=1e-6)
    rows_ = defrag_comparison(X[:400], Y[:400], X[400:], Y[400:], d0=4, n_clusters=3,
                              max_leaf_labels=6, n_trees=1)
    assert [r["features"] for r in rows_] == ["raw", "defrag"]
    assert all(0 <= r["P@1"] <= 1 and r["model_size_bytes"] > 0 for r in rows_)
    # the rows are brute-force P@k / nDCG@k of the two models trained on their own: KTXMLC on
    # the raw features, and the DEFRAG pipeline (its defaults: XY representation, one DEFRAG)
    kw1 = dict(n_clusters=3, max_leaf_labels=6, n_trees=1)
    for r, model in zip(rows_, (KTXMLC(**kw1), DefragKTXMLC(d0=4, **kw1))):
        model.fit(X[:400], Y[:400])
        S = model.predict_scores(X[400:], k=5)
        assert r["model_size_bytes"] == model.model_size_bytes_
        for kk in (1, 3, 5):
            Yt = Y[400:]
            assert r[f"P@{kk}"] == pytest.approx(naive.precision_at_k(Yt, S, kk), abs=1e-12)
            assert r[f"nDCG@{kk}"] == pytest.approx(naive.ndcg_at_k(Yt, S, kk), abs=1e-12)


def test_choose_d0_follows_its_rule(small):
    X, Y = small
    Xtr, Ytr, Xva, Yva = X[:400], Y[:400], X[400:], Y[400:]
    kw = dict(n_clusters=4, max_leaf_labels=10, n_trees=1)
    narrow = choose_d0(Xtr, Ytr, Xva, Yva, **kw)  # 200 features < min_features
    assert narrow.d0 is None and narrow.table == [] and "features" in narrow.reason
    for tol, speed in ((1.0, 1.0), (0.0, 1.5), (0.02, 50.0)):
        ch = choose_d0(Xtr, Ytr, Xva, Yva, candidates=(2, 8, 4), tolerance=tol,
                       min_speedup=speed, min_features=0, **kw)
        raw = ch.table[0]
        assert raw["d0"] == "raw" and raw["features"] == 200
        # the raw row is KTXMLC(form="trees", **kw) on the training rows (all of them:
        # fewer than SAMPLE_MIN_ROWS), scored on the validation rows
        S = KTXMLC(form="trees", **kw).fit(Xtr, Ytr).predict_scores(Xva, k=5)
        assert raw["P@1"] == pytest.approx(float(metrics.precision_at_k(Yva, S, 1)))
        tried = [r["d0"] for r in ch.table[1:]]
        assert tried == [8, 4, 2][:len(tried)]  # largest first
        ok = [r for r in ch.table[1:] if r["P@1"] >= raw["P@1"] - tol - 1e-12
              and r["speedup"] >= speed]
        assert all(r["ok"] == (r in ok) for r in ch.table[1:])
        # chosen = the first (largest) qualifying d0; None if none qualified
        assert ch.d0 == (ok[0]["d0"] if ok else None)
        if ch.d0 is not None:
            assert ch.table[-1]["d0"] == ch.d0 and ch.table[-1]["features"] < 200
    assert ch.d0 is None  # a 50x saving is impossible at these sizes


def test_defrag_choice_with_all_candidates_is_loose_enough(small):
    X, Y = small
    ch = choose_d0(X[:400], Y[:400], X[400:], Y[400:], candidates=(4,), tolerance=1.0,
                   min_speedup=1e-9, min_features=0, n_clusters=4, n_trees=1)
    assert ch.d0 == 4 and ch.table[1]["ok"]


def test_logistic_and_mixed_trees_are_calibrated_per_loss(small):
    X, Y = small
    m = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2, loss="mixed",
               form="trees").fit(X, Y)
    groups = set(m.calibration_)
    assert 0 in groups and 1000 in groups  # label classifiers of each loss apart
    S = m.predict_scores(X[:40], k=Y.shape[1], beam_width=10 ** 6).toarray()
    np.testing.assert_allclose(S, _brute_force_scores(m, X[:40], 0), rtol=2e-5, atol=1e-7)
    with pytest.raises(ValueError, match="loss"):
        KTXMLC(loss="hinge").fit(X, Y)


# ----------------------------------------------------------------------------- form="auto"
def _warm_grid_candidate(X, Y, base, C0, C, seed, params):
    """A C-grid candidate as documented, assembled from tree_fitting's building blocks
    (not KTXMLC's choice): the C0 candidate ``base``'s trees; every node batch solved at
    C0 from zero to the candidates' tolerance 0.25 (20 passes at most), keeping its duals;
    those duals times C / C0 as the start of a solve at C to the same tolerance; weights
    and calibration assembled by hand."""
    Xn = normalize_rows(sp.csr_matrix(X, dtype=np.float32))
    Yf = sp.csr_matrix(Y, dtype=np.float32)
    Yc = sp.csc_matrix(Yf)
    trees = base.trees_
    tasks = core.training_tasks(trees, Yf)
    pos = [core.label_positions(tr) for tr in trees]
    stop = np.zeros(1, np.uint8)
    solver0 = core.SolverSpec(C0, 0.25, 20, 0.1, 1.0, 64, seed)

    def train(task, solver, warm, keep):
        return core.train_task(Xn, Yf, Yc, trees[task.tree], pos[task.tree], task, solver,
                               stop, warm, keep)

    first = [train(t, solver0, None, True) for t in tasks]
    # the by-hand pipeline is the C0 candidate: the same weights as KTXMLC's own fit
    W0, _, _ = core.assemble_weights(trees, tasks, first, Xn.shape[1])
    assert (W0 != base.W_).nnz == 0
    solver = solver0._replace(C=C)
    f = np.float32(C / C0)
    res = [train(t, solver, (r[7][0], r[7][1], r[7][2] * f), False)
           for t, r in zip(tasks, first)]
    W, bw, off = core.assemble_weights(trees, tasks, res, Xn.shape[1])
    cal_a, cal_b, groups = core.calibration(trees, tasks, res, off, solver)
    m = KTXMLC(form=base.form, C=C, random_state=seed, **params)
    m._finalise(Xn.shape, Yf.shape[1], trees, W, bw, off, 1.0, cal_a, cal_b, groups)
    m.train_work_ = int(sum(r[6] for r in res))
    return m


def _by_hand_choice(X, Y, params, seed):
    """KTXMLC(form="auto")'s documented choice, recomputed independently: 20 % of the rows
    (default_rng(seed).permutation) held out; flat and trees at C (solver tolerance 0.25,
    20 passes at most), then the leader at C/2 and 2C (on its trees, from its duals times
    the ratio of the Cs, to the same tolerance: :func:`_warm_grid_candidate`); best P@1;
    among those within one paired standard error of it, best P@5; among those within one
    paired standard error of that, least work; among equal work, best P@1, then P@5."""
    n = X.shape[0]
    nv = round(0.2 * n)
    perm = np.random.default_rng(seed).permutation(n)
    va, fi = np.sort(perm[:nv]), np.sort(perm[nv:])
    rows = []
    Yv = Y[va].toarray()
    models = {}

    def fit(form, C, base=None):
        if base is None:
            m = KTXMLC(form=form, one_vs_all="never", C=C, random_state=seed, eps=0.25,
                       **params).fit(X[fi], Y[fi])   # candidates stop at eps = 0.25
            models[form] = m
        else:
            m = _warm_grid_candidate(X[fi], Y[fi], base, 0.5, C, seed, params)
        S = m.predict_scores(X[va], k=5)
        Sd = S.toarray()
        top5 = np.argsort(-Sd, axis=1, kind="stable")[:, :5]
        hit = np.take_along_axis(Yv, top5, 1) * (np.take_along_axis(Sd, top5, 1) > 0)
        rows.append(dict(form=form, C=C, hits=hit[:, 0], prec=hit.sum(1) / 5,
                         work=m.train_work_,
                         p1=float(metrics.precision_at_k(Y[va], S, 1)),
                         p5=float(metrics.precision_at_k(Y[va], S, 5))))

    def close(key, best, among):
        out = []
        for j in among:
            d = rows[best][key] - rows[j][key]
            if d.mean() <= d.std(ddof=1) / np.sqrt(nv) + 1e-12:
                out.append(j)
        return out

    def best():
        b1 = int(np.argmax([r["hits"].mean() for r in rows]))
        tied = close("hits", b1, range(len(rows)))
        b5 = max(tied, key=lambda j: (round(rows[j]["prec"].mean(), 12), -j))
        tied5 = close("prec", b5, tied)
        if len(tied) == 1:
            return b1
        least = min(rows[j]["work"] for j in tied5)
        return max((j for j in tied5 if rows[j]["work"] == least),
                   key=lambda j: (rows[j]["hits"].mean(), rows[j]["prec"].mean(), -j))

    fit("flat", 0.5)
    fit("trees", 0.5)
    lead = rows[best()]["form"]
    fit(lead, 0.25, models[lead])
    fit(lead, 1.0, models[lead])
    return rows, rows[best()]


@pytest.mark.parametrize("make,expect", [
    # labels over few feature groups, 3 labels a point: the trees lead on P@1 and P@5
    (dict(n_samples=2000, n_features=400, n_labels=60, avg_labels=3, noise=0.3,
          feature_clusters=2), "trees"),
    # 6 labels a point over 3 groups: the flat model leads on both
    (dict(n_samples=2000, n_features=400, n_labels=60, avg_labels=6, noise=0.3,
          feature_clusters=3), "flat"),
])
def test_form_auto_picks_the_form_that_wins_on_validation_rows(make, expect):
    d = make_powerlaw_multilabel(random_state=1, **make)
    params = dict(n_clusters=4, max_leaf_labels=5, beam_width=12)
    rows, win = _by_hand_choice(d.X, d.Y, params, seed=0)
    # the sets are built so that this form wins, by the independent comparison at C = 0.5
    flat, trees = rows[0], rows[1]
    better = "trees" if (trees["p1"], trees["p5"]) > (flat["p1"], flat["p5"]) else "flat"
    assert better == expect and win["form"] == expect, [(r["form"], r["C"], r["p1"], r["p5"])
                                                       for r in rows]
    auto = KTXMLC(random_state=0, **params).fit(d.X, d.Y)
    assert (auto.form_, auto.C_) == (win["form"], win["C"])
    assert [(r["form"], r["C"]) for r in auto.selection_] == [(r["form"], r["C"]) for r in rows]
    np.testing.assert_allclose([r["P@1"] for r in auto.selection_], [r["p1"] for r in rows])
    np.testing.assert_allclose([r["P@5"] for r in auto.selection_], [r["p5"] for r in rows])
    assert ("one flat model" if expect == "flat" else "label trees") in auto.choice_
    # the winner refitted on all rows: the same model as that form fitted directly
    direct = KTXMLC(form=win["form"], C=win["C"], one_vs_all="never", random_state=0,
                    **params).fit(d.X, d.Y)
    assert (auto.predict_scores(d.X_test if d.X_test is not None else d.X, k=5)
            != direct.predict_scores(d.X_test if d.X_test is not None else d.X, k=5)).nnz == 0
    assert len(auto.trees_) == (1 if expect == "flat" else len(direct.trees_))


def test_form_choice_rule_by_hand():
    from featagg_core.xmlc.form_choice import pick_candidate
    n = 100
    a = np.r_[np.ones(60), np.zeros(40)]
    b = np.r_[np.ones(59), np.zeros(41)]          # one row behind a: tied on P@1
    c = np.r_[np.ones(40), np.zeros(60)]          # 20 rows behind: not tied
    rng = np.random.default_rng(0)
    p_lo = rng.random(n) * 0.4                      # P@5 per row around 0.2
    p_hi = p_lo + 0.1                               # 10 points better on every row
    p_eq = p_lo.copy()
    # P@1: a and b tied, c far behind; P@5 decides between a and b
    assert pick_candidate([a, b, c], [p_lo, p_hi, p_hi]) == (1, [0, 1])
    assert pick_candidate([a, b, c], [p_hi, p_lo, p_hi]) == (0, [0, 1])
    assert pick_candidate([c, a], [p_hi, p_lo]) == (1, [1])        # P@1 decides alone
    # tied on P@1 and on P@5: the least work wins (without costs: the best P@5, first)
    assert pick_candidate([a, b], [p_lo, p_eq], cost=[5.0, 3.0]) == (1, [0, 1])
    assert pick_candidate([a, b], [p_lo, p_eq]) == (0, [0, 1])
    assert pick_candidate([a, b], [p_lo, p_hi], cost=[1.0, 9.0]) == (1, [0, 1])
    # tied on both at equal work: the better P@1 estimate (a), whatever the order; then P@5
    assert pick_candidate([b, a], [p_lo, p_eq], cost=[2.0, 2.0]) == (1, [0, 1])
    assert pick_candidate([a, b], [p_lo, p_eq], cost=[2.0, 2.0]) == (0, [0, 1])
    p_up = p_lo + np.r_[np.full(50, 0.051), np.full(50, -0.049)]   # +0.001, within its SE
    assert pick_candidate([a, a], [p_lo, p_up], cost=[2.0, 2.0]) == (1, [0, 1])


def test_form_auto_without_enough_rows_keeps_the_fixed_rule(small):
    X, Y = small
    m = KTXMLC(n_clusters=4, max_leaf_labels=8, random_state=2).fit(X[:200], Y[:200])
    ref = KTXMLC(n_clusters=4, max_leaf_labels=8, random_state=2,
                 form="trees").fit(X[:200], Y[:200])
    assert m.selection_ == [] and "without a choice" in m.choice_
    assert (m.predict_scores(X, k=5) != ref.predict_scores(X, k=5)).nnz == 0
    with pytest.raises(ValueError, match="form"):
        KTXMLC(form="forest").fit(X, Y)


def test_choose_d0_sample_and_budget_by_hand(small, monkeypatch):
    """The documented cost rule: candidates on a seeded sample of the training rows, and
    no candidate started once its expected CPU would pass the budget."""
    from featagg_core.xmlc import selection
    X, Y = small
    Xtr, Ytr, Xva, Yva = X[:400], Y[:400], X[400:], Y[400:]
    kw = dict(n_clusters=4, max_leaf_labels=10, n_trees=1, random_state=3)
    monkeypatch.setattr(selection, "SAMPLE_MIN_ROWS", 0)
    ch = choose_d0(Xtr, Ytr, Xva, Yva, candidates=(8,), tolerance=1.0, min_speedup=1e-9,
                   min_features=0, sample_fraction=0.5, min_budget_s=1e6, **kw)
    rows = np.sort(np.random.default_rng(3).choice(400, 200, replace=False))
    S = KTXMLC(form="trees", **kw).fit(Xtr[rows], Ytr[rows]).predict_scores(Xva, k=5)
    assert ch.table[0]["P@1"] == pytest.approx(float(metrics.precision_at_k(Yva, S, 1)))
    assert ch.d0 == 8 and "200 of 400 training rows" in ch.reason
    # a budget of ~0: the raw fit is all it may do
    none = choose_d0(Xtr, Ytr, Xva, Yva, candidates=(8, 4), tolerance=1.0,
                     min_speedup=1e-9, min_features=0, budget=1e-9, min_budget_s=0.0, **kw)
    assert none.d0 is None and [r["d0"] for r in none.table] == ["raw"]
    assert none.reason.startswith("stopped before d0=8")
    # the largest candidate's CPU sets the expectation for the next one
    two = choose_d0(Xtr, Ytr, Xva, Yva, candidates=(8, 4), tolerance=0.0, min_speedup=1e9,
                    min_features=0, min_budget_s=1e6, **kw)
    assert [r["d0"] for r in two.table] == ["raw", 8]   # 8 misses the speed: stop
    assert all(r["cpu_s"] >= 0 for r in two.table)


def _normalize_rows_by_product(X):
    """The plain definition: squared norms by ``X.multiply(X)``, rows scaled by the sparse
    product ``diag(inv) @ X`` (which drops zero results), sorted."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    inv = np.zeros_like(sq)
    nz = sq > 0
    inv[nz] = 1.0 / np.sqrt(sq[nz])
    out = sp.csr_matrix(sp.diags(inv.astype(np.float32)) @ X, dtype=np.float32)
    out.sort_indices()
    return out


@pytest.mark.parametrize("case", ["plain", "stored_zero", "empty_rows", "tiny", "huge",
                                  "float64", "unsorted", "dense_rows"])
def test_normalize_rows_bits_equal_the_product(case):
    """normalize_rows' scaling of the data in place gives the sparse product's bits, and
    the inputs it does not take that way (stored zeros, underflow, overflow, float64,
    unsorted indices) still get the product's result."""
    rng = np.random.default_rng(7)
    X = sp.random(300, 120, density=0.9 if case == "dense_rows" else 0.1, format="csr",
                  random_state=4, dtype=np.float32)
    X.data = (rng.standard_normal(X.nnz) * 3).astype(np.float32)
    if case == "stored_zero":
        X.data[::17] = 0.0
    elif case == "empty_rows":
        X = sp.csr_matrix(X.multiply((np.arange(300) % 5 != 0)[:, None]))
    elif case == "tiny":
        X.data[5] = np.float32(1e-30)     # its square underflows
    elif case == "huge":
        X.data[9] = np.float32(1e30)      # its square overflows: the row scales to 0
    elif case == "float64":
        X = sp.csr_matrix(X, dtype=np.float64) * (1 + 1e-9)
    elif case == "unsorted":
        X = X.copy()
        X.indices[X.indptr[3]:X.indptr[4]] = X.indices[X.indptr[3]:X.indptr[4]][::-1].copy()
        X.has_sorted_indices = False
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    got, ref = normalize_rows(X), _normalize_rows_by_product(X)
    assert got.dtype == np.float32 and got.has_sorted_indices and got.shape == ref.shape
    assert np.array_equal(got.indptr, ref.indptr) and np.array_equal(got.indices, ref.indices)
    assert got.data.tobytes() == ref.data.tobytes()
    # the caller's matrix is untouched and shares no array with the result
    assert all(np.array_equal(a, b) for a, b in zip(before, (X.data, X.indices, X.indptr)))
    assert not np.shares_memory(got.data, X.data)
    assert not np.shares_memory(got.indices, X.indices)


def test_small_kernel_work_runs_on_one_thread_with_the_same_scores(small, monkeypatch):
    """Below SMALL_KERNEL_WORK predict_scores' beam search runs on the calling thread
    alone: the same scores as with every thread, and the caller's numba thread count is
    back afterwards (also when the kernel raises)."""
    import numba
    from featagg_core.xmlc import threaded_fit
    X, Y = small
    m = KTXMLC(n_clusters=4, max_leaf_labels=10, n_trees=2, random_state=1).fit(X, Y)
    seen = []
    real = threaded_fit.numba.set_num_threads
    monkeypatch.setattr(threaded_fit.numba, "set_num_threads",
                        lambda n: (seen.append(n), real(n))[1])
    before = numba.get_num_threads()
    monkeypatch.setattr(threaded_fit, "SMALL_KERNEL_WORK", 0)           # never small
    S_all = m.predict_scores(X, k=5)
    assert seen == []
    monkeypatch.setattr(threaded_fit, "SMALL_KERNEL_WORK", float("inf"))  # always small
    S_one = m.predict_scores(X, k=5)
    assert (before == 1 and seen == []) or seen == [1, before]
    assert numba.get_num_threads() == before
    assert (S_all != S_one).nnz == 0 and S_all.data.tobytes() == S_one.data.tobytes()
    with pytest.raises(RuntimeError):
        with threaded_fit.kernel_threads(0):
            raise RuntimeError("inside")
    assert numba.get_num_threads() == before


def test_small_training_work_runs_in_the_calling_thread_with_the_same_model(small,
                                                                             monkeypatch):
    """Below SMALL_TRAINING_WORK the node classifiers are trained in the calling thread
    (no pool thread runs them): the same model as on the pool, progress still reported
    per batch, and a Cancelled raised by progress still stops the fit."""
    from featagg_core.xmlc import threaded_fit
    X, Y = small
    kw = dict(form="flat", n_jobs=2, random_state=2)
    monkeypatch.setattr(threaded_fit, "SMALL_TRAINING_WORK", 0)             # the pool
    pooled = KTXMLC(**kw).fit(X, Y)
    monkeypatch.setattr(threaded_fit, "SMALL_TRAINING_WORK", float("inf"))  # inline
    ran_in = []
    real = core.train_task
    monkeypatch.setattr(core, "train_task",
                        lambda *a: (ran_in.append(threading.current_thread()), real(*a))[1])
    seen = []
    inline = KTXMLC(**kw).fit(X, Y, progress=lambda f, msg: seen.append(msg))
    assert ran_in and all(t is threading.main_thread() for t in ran_in)
    assert any("classifiers: node batches trained" in msg for msg in seen)
    assert (inline.W_ != pooled.W_).nnz == 0
    assert inline.W_.data.tobytes() == pooled.W_.data.tobytes()
    assert inline.bias_w_.tobytes() == pooled.bias_w_.tobytes()
    assert inline.calibration_b_.tobytes() == pooled.calibration_b_.tobytes()

    def cancel(f, msg):
        if "classifiers" in msg:
            raise Cancelled()

    m = KTXMLC(**kw)
    with pytest.raises(Cancelled):
        m.fit(X, Y, progress=cancel)
    assert not hasattr(m, "W_") and not _pool_threads()
