"""Feature-selection baselines and the k-means ACC/NMI protocol, against dense brute force
and sklearn/scipy."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from featagg_core.graph import baselines as fsb
from featagg_core._kernels.bmgufs import quad_diag_csr
from featagg_core.graph.evaluation import evaluate_selection, kmeans_scores, known_class_mask


def _data(seed=0, n=60, f=12, density=0.4):
    rng = np.random.default_rng(seed)
    up = np.triu(rng.random((n, n)) < 0.1, 1) * rng.random((n, n))
    W = up + up.T
    X = rng.random((n, f)) * (rng.random((n, f)) < density)
    X[:, 3] = 1.0                                   # constant feature
    X[:5, 4] = 0.0
    return sp.csr_matrix(W), X


def test_quad_diag_matches_dense():
    W, X = _data(1)
    Xs = sp.csr_matrix(X)
    got = quad_diag_csr(W.indptr, W.indices, W.data, Xs.indptr, Xs.indices, Xs.data,
                        X.shape[1])
    np.testing.assert_allclose(got, np.diag(X.T @ W.toarray() @ X), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_laplacian_score_matches_the_definition(seed):
    W, X = _data(seed)
    Wd = W.toarray()
    D = np.diag(Wd.sum(1))
    L = D - Wd
    one = np.ones(X.shape[0])
    expected = []
    for j in range(X.shape[1]):
        fj = X[:, j]
        ft = fj - (fj @ D @ one) / (one @ D @ one) * one
        den = ft @ D @ ft
        expected.append(ft @ L @ ft / den if den > 1e-10 else np.inf)
    got = fsb.laplacian_score(sp.csr_matrix(X), W)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    assert np.isinf(got[3])                           # constant feature ranked last
    order = fsb.rank_features(got, larger_is_better=False)
    assert order[-1] == 3


def _spec_dense(X, Wd, style):
    d = Wd.sum(1)
    keep = d > 0
    Wk, Xk, dk = Wd[np.ix_(keep, keep)], X[keep], d[keep]
    s = 1 / np.sqrt(dk)
    Ln = np.eye(len(dk)) - s[:, None] * Wk * s[None, :]
    lam, V = np.linalg.eigh(Ln)
    out = []
    for j in range(X.shape[1]):
        fh = np.sqrt(dk) * Xk[:, j]
        nrm = np.linalg.norm(fh)
        if nrm == 0:
            out.append(-np.inf)
            continue
        fh = fh / nrm
        phi1 = fh @ Ln @ fh
        if style == -1:
            out.append(-phi1)
        elif style == 0:
            den = 1 - (fh @ V[:, 0]) ** 2
            out.append(-phi1 / den if den > 1e-10 else -np.inf)
        else:
            out.append(sum((2 - lam[i]) * (fh @ V[:, i]) ** 2 for i in range(1, style)))
    return np.array(out)


@pytest.mark.parametrize("style", [-1, 0, 3])
def test_spec_matches_dense_eigendecomposition(style):
    W, X = _data(2, n=50)
    # a connected affinity so that the leading eigenvectors are well separated
    rng = np.random.default_rng(5)
    lab = np.arange(50) % 3
    Wd = np.where(lab[:, None] == lab[None, :], 1.0, 0.05) * rng.random((50, 50))
    Wd = np.triu(Wd, 1) + np.triu(Wd, 1).T
    got = fsb.spec_score(sp.csr_matrix(X), sp.csr_matrix(Wd), style=style)
    exp = _spec_dense(X, Wd, style)
    finite = np.isfinite(exp)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], exp[finite], rtol=1e-6, atol=1e-10)


def test_spec_phi2_equals_laplacian_score_ranking():
    W, X = _data(3)
    ls = fsb.laplacian_score(sp.csr_matrix(X), W)
    phi2 = fsb.spec_score(sp.csr_matrix(X), W, style=0)
    ok = np.isfinite(ls)
    np.testing.assert_allclose(-phi2[ok], ls[ok], rtol=1e-9)


def test_variance_and_random():
    _, X = _data(4)
    np.testing.assert_allclose(fsb.variance_score(sp.csr_matrix(X)), X.var(axis=0),
                               rtol=1e-10, atol=1e-15)
    r1 = fsb.random_scores(20, 1)
    assert not np.array_equal(fsb.rank_features(r1), np.arange(20))
    np.testing.assert_array_equal(r1, fsb.random_scores(20, 1))


def test_rank_features_ties_and_nonfinite():
    s = np.array([1.0, 3.0, np.nan, 3.0, -np.inf, 0.5])
    np.testing.assert_array_equal(fsb.rank_features(s), [1, 3, 0, 5, 2, 4])
    np.testing.assert_array_equal(fsb.rank_features(s, larger_is_better=False)[:3], [5, 0, 1])


@pytest.mark.parametrize("metric", ["cosine", "heat"])
def test_knn_graph_matches_brute_force(metric):
    rng = np.random.default_rng(0)
    X = rng.random((40, 6)) * (rng.random((40, 6)) < 0.7)
    X[7] = 0.0                                        # an all-zero row gets no edges
    W = fsb.knn_graph(sp.csr_matrix(X), n_neighbors=4, metric=metric)
    assert (W != W.T).nnz == 0
    assert W[7].nnz == 0 and W[:, 7].nnz == 0
    rows = [i for i in range(40) if i != 7]
    Xr = X[rows]
    if metric == "cosine":
        U = Xr / np.linalg.norm(Xr, axis=1, keepdims=True)
        dist = 1 - U @ U.T
    else:
        dist = np.sqrt(((Xr[:, None] - Xr[None]) ** 2).sum(-1))
    np.fill_diagonal(dist, np.inf)
    expected = set()
    for a in range(len(rows)):
        for b in np.argsort(dist[a], kind="stable")[:4]:
            expected.add((rows[a], rows[b]))
            expected.add((rows[b], rows[a]))
    got = set(zip(*W.nonzero()))
    # ties at the k-th neighbour may be broken differently: allow a tiny symmetric diff
    assert len(got ^ expected) <= 4, got ^ expected
    if metric == "cosine":
        i, j = next(iter(got & expected))
        ci, cj = X[i] / np.linalg.norm(X[i]), X[j] / np.linalg.norm(X[j])
        assert W[i, j] == pytest.approx(ci @ cj)


def test_block_pcg_matches_dense_solve():
    rng = np.random.default_rng(0)
    X = sp.random(80, 30, density=0.2, random_state=1, format="csr")
    Dw = rng.random(30) * 1e3 + 1e-3
    B = rng.random((30, 3))
    Xt = X.T.tocsr()
    got = fsb._block_pcg(lambda V: Xt @ (X @ V) + Dw[:, None] * V, B,
                         np.asarray(X.multiply(X).sum(0)).ravel() + Dw, tol=1e-12,
                         max_iter=500)
    exp = np.linalg.solve((X.T @ X).toarray() + np.diag(Dw), B)
    np.testing.assert_allclose(got, exp, rtol=1e-7, atol=1e-12)


def _planted(seed):
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from test_bmgufs import _planted as p
    return p(seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_graph_methods_find_planted_features(seed):
    A, X, lab, informative = _planted(seed)
    chance = len(informative) / X.shape[1]
    for name, scores, larger in (
            ("laplacian", fsb.laplacian_score(X, A), False),
            ("spec", fsb.spec_score(X, A, style=4), True),
            ("ndfs", fsb.ndfs_score(X, A, n_clusters=4, n_iter=15), True)):
        top = fsb.rank_features(scores, larger)[:12]
        prec = np.isin(top, informative).mean()
        assert prec >= 0.75, (name, prec, chance)


# ---------------------------------------------------------------------------
# the evaluation protocol
# ---------------------------------------------------------------------------
def _acc_brute(y, pred):
    classes, clusters = np.unique(y), np.unique(pred)
    best = 0
    for perm in itertools.permutations(classes, len(clusters)):
        m = dict(zip(clusters, perm))
        best = max(best, np.mean([m[p] == t for p, t in zip(pred, y)]))
    return best


def test_kmeans_scores_match_sklearn_and_brute_force_acc():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    X = rng.normal(size=(90, 4)) + np.eye(3, 4)[y] * 2.5
    res = kmeans_scores(X, y, n_seeds=3, random_state=7)
    seeds = np.random.RandomState(7).randint(0, 2 ** 31 - 1, size=3)
    accs, nmis = [], []
    for s in seeds:
        pred = KMeans(3, n_init=1, random_state=int(s)).fit_predict(X)
        accs.append(_acc_brute(y, pred))
        nmis.append(normalized_mutual_info_score(y, pred))
    np.testing.assert_allclose(res["acc"], accs)
    np.testing.assert_allclose(res["nmi"], nmis)
    assert res["acc_mean"] == pytest.approx(np.mean(accs))
    assert res["acc_sd"] == pytest.approx(np.std(accs))
    assert res["acc_mean"] > 0.8


def test_unknown_classes_are_dropped_and_empty_selection():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 20)
    y[:3] = -1
    X = sp.csr_matrix(rng.random((40, 5)))
    assert known_class_mask(y).sum() == 37
    assert known_class_mask(np.array(["a", None, "b"], dtype=object)).tolist() == [
        True, False, True]
    res = evaluate_selection(X, y, [], n_seeds=2)
    assert res["n_nodes"] == 37 and res["d"] == 0
    assert res["nmi_mean"] == pytest.approx(0.0)
    assert res["acc_mean"] == pytest.approx(20 / 37)      # one cluster: the larger class
    res2 = evaluate_selection(X, y, [0, 2], n_seeds=2)
    assert res2["d"] == 2 and res2["n_clusters"] == 2
    with pytest.raises(ValueError, match="selected"):
        evaluate_selection(X, y, [9])


def test_validation():
    W, X = _data(0)
    with pytest.raises(ValueError, match="W"):
        fsb.laplacian_score(X, W[:-1])
    with pytest.raises(ValueError, match="style"):
        fsb.spec_score(X, W, style=1)
    with pytest.raises(ValueError, match="n_neighbors"):
        fsb.knn_graph(X, n_neighbors=0)
    with pytest.raises(ValueError, match="beta"):
        fsb.ndfs_score(X, W, 2, beta=-1)
