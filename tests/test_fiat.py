"""FIAT: the pseudo co-occurrence C^F and the imputation, against dense formulas."""
import io
import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from featagg_core.agglomeration.fiat import (
    Fiat,
    erase_features,
    erasure_curve,
    normalize_cooccurrence,
    pseudo_cooccurrence,
)
from naive import Clustering, dense_cf, dense_impute, dense_operator
from naive import precision_at_k as naive_precision_at_k


def _data(n=60, d=40, density=0.15, seed=0, signed=True):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    if signed:
        X.data = rng.standard_normal(X.nnz)
    return X.astype(np.float32), rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cf_equals_dense_formula_and_nnz_bound(seed):
    X, rng = _data(seed=seed)
    labels = rng.integers(0, 7, X.shape[1])
    C = pseudo_cooccurrence(X, labels)
    np.testing.assert_allclose(C.toarray(), dense_cf(X, labels), rtol=1e-10, atol=1e-10)
    sizes = np.bincount(labels)
    assert C.nnz <= int((sizes ** 2).sum())
    assert C.has_sorted_indices or np.all(np.diff(C.indices[C.indptr[0]:C.indptr[1]]) > 0)
    for i in range(C.shape[0]):                    # sorted, unique columns per row
        row = C.indices[C.indptr[i]:C.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
    # only same-cluster pairs are stored
    r = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
    assert np.all(labels[r] == labels[C.indices])


def test_cf_extreme_clusterings():
    X, _ = _data(seed=3)
    d = X.shape[1]
    D = X.toarray().astype(np.float64)
    # one cluster: the full Gram matrix; singletons: its diagonal
    np.testing.assert_allclose(pseudo_cooccurrence(X, np.zeros(d, int)).toarray(), D.T @ D,
                               atol=1e-10)
    np.testing.assert_allclose(pseudo_cooccurrence(X, np.arange(d)).toarray(),
                               np.diag((D * D).sum(0)), atol=1e-10)


def test_cf_stays_sparse_at_large_d():
    # 2e5 features: a d x d array would need 320 GB; C^F has at most d * 4 entries
    rng = np.random.default_rng(0)
    n, d = 3000, 200_000
    X = sp.random(n, d, density=2e-4, format="csr", random_state=rng)
    labels = np.arange(d) // 4
    C = pseudo_cooccurrence(X, labels)
    assert C.shape == (d, d) and C.nnz <= 4 * d
    f = Fiat(Clustering(labels)).fit(X)
    Z = f.transform(X[:50])
    assert Z.shape == (50, d)


def test_cosine_normalization_dense():
    X, rng = _data(seed=4, signed=False)
    labels = rng.integers(0, 5, X.shape[1])
    C = pseudo_cooccurrence(X, labels)
    M = normalize_cooccurrence(C, "cosine").toarray()
    Cd = dense_cf(X, labels)
    s = np.sqrt(np.diag(Cd))
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.where(np.outer(s, s) > 0, Cd / np.outer(s, s), 0.0)
    np.testing.assert_allclose(M, ref, atol=1e-12)
    K = normalize_cooccurrence(C, "conditional").toarray()     # K[b, a] = C_ab / C_aa
    dg = np.diag(Cd)
    np.testing.assert_allclose(K, np.where(dg[None, :] > 0, Cd / np.where(dg > 0, dg, 1)[None, :],
                                           0.0), atol=1e-12)
    R = normalize_cooccurrence(C, "row").toarray()
    rs = Cd.sum(1, keepdims=True)
    np.testing.assert_allclose(R, np.where(rs != 0, Cd / np.where(rs == 0, 1, rs), 0),
                               atol=1e-12)


@pytest.mark.parametrize("normalization", ["cosine", "conditional", "row", "none"])
@pytest.mark.parametrize("mix", [1.0, 0.3])
def test_transform_equals_dense_rule(normalization, mix):
    X, rng = _data(seed=5, signed=False)
    labels = rng.integers(0, 6, X.shape[1])
    f = Fiat(Clustering(labels), normalization=normalization, mix=mix).fit(X)
    Xt, _ = _data(n=30, seed=6, signed=False)
    Z = f.transform(Xt)
    assert sp.isspmatrix_csr(Z) and Z.shape == Xt.shape and Z.dtype == np.float32
    M = normalize_cooccurrence(pseudo_cooccurrence(X, labels), normalization).toarray()
    np.testing.assert_allclose(Z.toarray(), dense_impute(Xt, M, mix), rtol=2e-6, atol=1e-7)
    # observed entries are never changed
    D = Xt.toarray()
    np.testing.assert_array_equal(Z.toarray()[D != 0], D[D != 0])


def test_restores_perfectly_correlated_features():
    # features come in groups of three copies with identical values on every point;
    # DEFRAG-style clusters hold each group; erase one or two copies per group
    rng = np.random.default_rng(7)
    n, g = 300, 30
    base = sp.random(n, g, density=0.2, format="csr", random_state=rng)
    base.data = rng.uniform(0.5, 3.0, base.nnz)
    X = sp.hstack([base, base, base]).tocsr()          # feature j, j+g, j+2g identical
    labels = np.tile(np.arange(g), 3)
    f = Fiat(Clustering(labels), mix=1.0).fit(X)
    Xt = X[:100].tocsr()
    D = Xt.toarray()
    E = D.copy()
    E[:, g:] = 0                                        # keep only the first copy
    Z = f.transform(sp.csr_matrix(E)).toarray()
    np.testing.assert_allclose(Z, D, rtol=1e-6)
    E2 = D.copy()
    E2[:, g:2 * g] = 0                                  # two copies kept, one erased
    Z2 = f.transform(sp.csr_matrix(E2)).toarray()
    np.testing.assert_allclose(Z2, D, rtol=1e-6)
    # features of *other* clusters are not touched
    assert np.all((Z != 0) <= np.tile(D[:, :g] != 0, 3))


def test_restores_perfectly_correlated_features_with_real_defrag():
    # 8 groups of 4 identical columns; each group lives on its own set of points, so
    # copies have cosine 1 and different groups cosine 0. Whatever clusters the real
    # Defrag forms, an erased column must come back exactly when one of its copies is
    # kept in the same cluster, and stay empty otherwise.
    Defrag = pytest.importorskip("featagg_core.agglomeration.defrag").Defrag
    rng = np.random.default_rng(8)
    n, g, c = 400, 8, 4
    point_group = rng.integers(0, g, n)
    val = rng.uniform(0.5, 2.0, n) * (rng.random(n) < 0.7)
    D = np.zeros((n, g * c))
    for j in range(g * c):
        D[:, j] = np.where(point_group == j // c, val, 0.0)
    X = sp.csr_matrix(D)
    dfg = Defrag(d0=4, representation="X", random_state=0).fit(X)
    f = Fiat(dfg, mix=1.0).fit(X)
    keep = np.arange(g * c) % c == 0                   # keep the first copy of each group
    E = D * keep
    Z = f.transform(sp.csr_matrix(E)).toarray()
    lab = dfg.labels_
    restorable = np.array([lab[j] == lab[(j // c) * c] for j in range(g * c)])
    assert restorable[~keep].sum() >= 4                # DEFRAG-X groups copies together
    np.testing.assert_allclose(Z[:, restorable], D[:, restorable], rtol=1e-6)
    assert np.all(Z[:, ~restorable] == 0)


def test_mix_zero_is_identity_and_uncorrelated_stays_small():
    X, rng = _data(seed=9, signed=False)
    labels = rng.integers(0, 4, X.shape[1])
    f = Fiat(Clustering(labels), mix=0.0).fit(X)
    assert (f.transform(X) != X.astype(np.float32)).nnz == 0


def test_erase_features_exact_nested_seeded():
    X, _ = _data(n=80, d=50, density=0.3, seed=10, signed=False)
    nnz = np.diff(X.indptr)
    prev = X
    for p in [0.0, 0.1, 0.5, 0.9, 1.0]:
        E = erase_features(X, p, random_state=3)
        assert E.shape == X.shape
        np.testing.assert_array_equal(np.diff(E.indptr), nnz - np.floor(p * nnz + 0.5))
        # a subset of X with the same values, and of the previous (smaller) erasure
        Ed, Xd, Pd = E.toarray(), X.toarray(), prev.toarray()
        assert np.all(Ed[Ed != 0] == Xd[Ed != 0].astype(np.float32))
        assert np.all((Ed != 0) <= (Pd != 0))
        prev = E
    a = erase_features(X, 0.5, random_state=1)
    b = erase_features(X, 0.5, random_state=1)
    c = erase_features(X, 0.5, random_state=2)
    assert (a != b).nnz == 0 and (a != c).nnz > 0
    with pytest.raises(ValueError, match="fraction"):
        erase_features(X, 1.5)


def test_erasure_curve_shape_and_fiat_column():
    X, rng = _data(n=50, d=30, seed=11, signed=False)
    Y = sp.csr_matrix((rng.random((50, 6)) < 0.3).astype(float))
    W = rng.random((30, 6))
    f = Fiat(Clustering(rng.integers(0, 5, 30))).fit(X)
    df = erasure_curve(lambda Z: sp.csr_matrix(Z @ W), X, Y, fiat=f,
                       fractions=[0.0, 0.5], k=(1, 3))
    assert list(df["fraction"]) == [0.0, 0.5]
    assert {"P@1", "P@3", "P@1 FIAT", "P@3 FIAT"} <= set(df.columns)
    assert df[["P@1", "P@3"]].to_numpy().min() >= 0
    # every value is brute-force P@k of the classifier on the erased (then FIAT-imputed)
    # points: the erasure is the one erase_features draws, the imputation FIAT's dense rule
    M = dense_operator(X, f.labels_, f.normalization)
    for row, p in zip(df.to_dict("records"), [0.0, 0.5]):
        Xe = erase_features(X, p, random_state=0)
        assert (p == 0.0) == ((Xe != X).nnz == 0)
        # the classifier's scores; a point with every feature erased gets none (no label)
        S, Sf = (sp.csr_matrix(Z @ W) for Z in (Xe.toarray(), dense_impute(Xe, M, f.mix)))
        for k in (1, 3):
            assert row[f"P@{k}"] == pytest.approx(naive_precision_at_k(Y, S, k), abs=1e-12)
            assert row[f"P@{k} FIAT"] == pytest.approx(naive_precision_at_k(Y, Sf, k),
                                                       abs=1e-12)


def test_validation_and_not_fitted():
    X, _ = _data()
    d = X.shape[1]
    with pytest.raises(NotFittedError):
        Fiat(Clustering(np.zeros(d, int))).transform(X)
    with pytest.raises(ValueError, match="normalization"):
        Fiat(Clustering(np.zeros(d, int)), normalization="l3").fit(X)
    with pytest.raises(ValueError, match="mix"):
        Fiat(Clustering(np.zeros(d, int)), mix=-1).fit(X)
    with pytest.raises(ValueError, match="features"):
        Fiat(Clustering(np.zeros(d + 1, int))).fit(X)
    with pytest.raises(ValueError, match="defrag"):
        Fiat(None).fit(X)
    f = Fiat(Clustering(np.zeros(d, int))).fit(X)
    with pytest.raises(ValueError, match="features"):
        f.transform(X[:, :5])


def test_clone_params_and_artifact_round_trip():
    from featagg_core.artifacts.store import load_artifact, save_artifact
    X, rng = _data(seed=12, signed=False)
    clus = Clustering(rng.integers(0, 5, X.shape[1]))
    f = Fiat(clus, mix=0.5).fit(X)
    json.dumps(f.get_params())                          # JSON-serialisable parameters
    g = clone(f)
    assert g.defrag is clus and not hasattr(g, "operator_")
    buf = io.BytesIO()
    save_artifact(f, buf)
    h = load_artifact(io.BytesIO(buf.getvalue()))
    assert h.defrag is None and h.mix == 0.5
    np.testing.assert_array_equal(h.labels_, clus.labels_)
    assert (h.transform(X) != f.transform(X)).nnz == 0
