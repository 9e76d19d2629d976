"""KTXMLC: tree invariants, beam search vs brute force, one-vs-all reduction, accuracy."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score

from featagg_core import metrics
from featagg_core._kernels.ktxmlc import cluster_rows
from featagg_core.ktxmlc import (KTXMLC, OneVsAll, _normalize_rows, elbow_curve,
                                 label_representation)
from featagg_core.synthetic import make_powerlaw_multilabel


@pytest.fixture(scope="module")
def small():
    d = make_powerlaw_multilabel(500, 200, 60, avg_labels=3, avg_features=15,
                                 random_state=3)
    X, Y = d.X, d.Y
    return sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y, dtype=np.float32)


def _check_tree(tr, L, K, max_depth, max_leaf):
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


@pytest.mark.parametrize("K,max_depth,max_leaf", [(2, 20, 8), (3, 2, 5), (6, 3, 4)])
def test_tree_respects_k_depth_leaf_size_and_covers_labels(small, K, max_depth, max_leaf):
    X, Y = small
    m = KTXMLC(n_clusters=K, n_trees=2, max_depth=max_depth, max_leaf_labels=max_leaf,
               random_state=1).fit(X, Y)
    assert len(m.trees_) == 2
    for tr in m.trees_:
        _check_tree(tr, Y.shape[1], K, max_depth, max_leaf)
    assert m.trees_[0]["depth"].max() <= max_depth + 1
    nodes = m.tree_nodes(1)
    assert len(nodes["children"]) == m.trees_[1]["parent"].shape[0]
    assert sorted(nodes["labels"][0].tolist()) == list(range(Y.shape[1]))


def test_balanced_binary_tree_splits_evenly(small):
    X, Y = small
    m = KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=7).fit(X, Y)
    tr = m.trees_[0]
    for v in np.nonzero((tr["n_children"] == 2) & (tr["label"] < 0))[0]:
        fc = tr["first_child"][v]
        if tr["label"][fc] >= 0:
            continue
        sizes = tr["hi"][fc:fc + 2] - tr["lo"][fc:fc + 2]
        assert abs(sizes[0] - sizes[1]) <= 1


def _brute_force_scores(m, X):
    """Every label's score by walking its root path with dense weights (no beam)."""
    Xn = _normalize_rows(sp.csr_matrix(X, dtype=np.float32)).toarray().astype(np.float64)
    W = m.W_.toarray().astype(np.float64)
    margins = Xn @ W.T + m.bias_w_.astype(np.float64)[None, :]
    logp = -np.maximum(0.0, 1.0 - margins) ** 2
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


@pytest.mark.parametrize("K", [2, 4])
def test_unbounded_beam_equals_exhaustive_scoring(small, K):
    X, Y = small
    m = KTXMLC(n_clusters=K, n_trees=3, max_leaf_labels=6, random_state=2).fit(X, Y)
    Xq = X[:40]
    ref = _brute_force_scores(m, Xq)
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
    kt = KTXMLC(n_clusters=L, n_trees=1, max_depth=1, max_leaf_labels=1,
                min_cluster_size=1, beam_width=L).fit(X, Y)
    ova = OneVsAll().fit(X, Y)
    Sk = kt.predict_scores(X[:100], k=10)
    So = ova.predict_scores(X[:100], k=10)
    assert np.array_equal(Sk.indices, So.indices)
    np.testing.assert_allclose(Sk.data, So.data, rtol=1e-6)
    # and one-vs-all itself is exhaustive: exp(-max(0, 1 - w'x)^2) per label
    ref = _brute_force_scores(ova, X[:100])
    top = np.argsort(-ref, axis=1, kind="stable")[:, :10]
    assert np.array_equal(np.sort(top, axis=1), So.indices.reshape(100, 10))


def test_results_do_not_depend_on_thread_count(small):
    X, Y = small
    a = KTXMLC(n_clusters=3, max_leaf_labels=5, n_jobs=1).fit(X, Y)
    b = KTXMLC(n_clusters=3, max_leaf_labels=5, n_jobs=2).fit(X, Y)
    assert (a.W_ != b.W_).nnz == 0
    np.testing.assert_array_equal(a.bias_w_, b.bias_w_)
    Sa, Sb = a.predict_scores(X, k=5), b.predict_scores(X, k=5)
    assert (Sa != Sb).nnz == 0
    c = KTXMLC(n_clusters=3, max_leaf_labels=5, random_state=9).fit(X, Y)
    assert not np.array_equal(c.trees_[0]["perm"], a.trees_[0]["perm"])


def test_bibtex_accuracy_floor():
    from featagg_core.samples import load_sample

    d = load_sample("bibtex")
    m = KTXMLC().fit(d.X, d.Y)
    S = m.predict_scores(d.X_test, k=5)
    p1, p5 = (float(metrics.precision_at_k(d.Y_test, S, k)) for k in (1, 5))
    # predicting the most frequent training labels for everyone
    freq = np.asarray(d.Y.sum(axis=0)).ravel()
    pop = sp.csr_matrix(np.tile(freq, (d.X_test.shape[0], 1)))
    p1_pop = float(metrics.precision_at_k(d.Y_test, pop, 1))
    assert p1_pop < 0.2
    # omikuji (Parabel settings) reaches 63.9 / 28.5 on this split
    assert p1 > 0.60 and p5 > 0.27
    psp = float(metrics.psprecision_at_k(d.Y_test, S, metrics.inverse_propensity(d.Y), 5))
    assert psp > 0.4


def test_artifact_round_trip(tmp_path, small):
    from featagg_core.artifacts import load_artifact, save_artifact

    X, Y = small
    for m in (KTXMLC(n_clusters=3, max_leaf_labels=5).fit(X, Y), OneVsAll().fit(X, Y)):
        path = tmp_path / f"{type(m).__name__}.zip"
        save_artifact(m, path)
        m2 = load_artifact(path)
        assert type(m2) is type(m) and m2.get_params() == m.get_params()
        assert (m.predict_scores(X, k=5) != m2.predict_scores(X, k=5)).nnz == 0
        assert m2.model_size_bytes_ == m.model_size_bytes_


def test_progress_is_reported_and_monotone(small):
    X, Y = small
    seen = []
    KTXMLC(n_clusters=2, max_leaf_labels=5).fit(X, Y, progress=lambda f, msg: seen.append((f, msg)))
    fr = [f for f, _ in seen]
    assert fr[-1] == 1.0 and all(0 <= f <= 1 for f in fr)
    assert all(b >= a for a, b in zip(fr, fr[1:]))
    assert any("level" in msg for _, msg in seen) and any("classifiers" in msg for _, msg in seen)


def test_validation_and_sklearn_protocol(small):
    X, Y = small
    with pytest.raises(NotFittedError):
        KTXMLC().predict_scores(X)
    with pytest.raises(ValueError, match="n_clusters"):
        KTXMLC(n_clusters=1).fit(X, Y)
    with pytest.raises(ValueError, match="C"):
        KTXMLC(C=0).fit(X, Y)
    with pytest.raises(ValueError, match="rows"):
        KTXMLC().fit(X, Y[:10])
    with pytest.raises(ValueError, match="0/1"):
        KTXMLC().fit(X, Y * 2)
    m = KTXMLC(n_clusters=4, beam_width=3)
    assert clone(m).get_params() == m.get_params()
    m.fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict_scores(X[:, :10])


def test_cluster_kernel_recovers_planted_groups():
    rng = np.random.default_rng(0)
    centres = np.eye(5, 40)[:, :] * 5 + rng.random((5, 40)) * 0.1
    truth = np.repeat(np.arange(5), 30)
    R = sp.csr_matrix(centres[truth] + rng.random((150, 40)) * 0.5)
    R = _normalize_rows(R)
    for balanced in (False, True):
        assign, nk, _ = cluster_rows(R.indptr.astype(np.int64), R.indices, R.data, 40, 5,
                                     balanced, 11, 2.0, 0, 20, 1e-4, 2)
        assert nk == 5
        assert adjusted_rand_score(truth, assign) == 1.0


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
    from featagg_core.defrag import Defrag
    from featagg_core.ktxmlc import DefragKTXMLC, defrag_comparison

    X, Y = small
    pipe = DefragKTXMLC(d0=4, n_clusters=3, max_leaf_labels=6, n_trees=2).fit(X, Y)
    df = Defrag(d0=4, representation="XY", random_state=0).fit(X, Y)
    Xa = df.transform(X)
    assert pipe.models_[0].n_features_in_ == Xa.shape[1] < X.shape[1]
    # the pipeline equals Defrag followed by KTXMLC on the agglomerated matrix
    direct = KTXMLC(n_clusters=3, max_leaf_labels=6, n_trees=2).fit(Xa, Y)
    assert (pipe.predict_scores(X, k=5) != direct.predict_scores(Xa, k=5)).nnz == 0
    assert pipe.model_size_bytes_ < KTXMLC(n_clusters=3, max_leaf_labels=6,
                                           n_trees=2).fit(X, Y).model_size_bytes_
    # one DEFRAG realisation per tree: members average into valid top-k scores
    ens = DefragKTXMLC(d0=4, n_clusters=3, max_leaf_labels=6, n_trees=2, per_tree=True).fit(X, Y)
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
