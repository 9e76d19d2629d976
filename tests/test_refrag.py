"""REFRAG: prototypes and re-ranking against dense formulas and a brute-force re-ranker."""
import io
import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from featagg_core import metrics
from featagg_core.agglomeration.defrag import Defrag
from featagg_core.agglomeration.refrag import Refrag
from naive import (Clustering, dense_impute, dense_operator, dense_prototypes, refrag_rerank,
                   unit_rows)


def _problem(n=80, d=40, L=12, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, format="csr", random_state=rng).astype(np.float32)
    Y = sp.csr_matrix((rng.random((n, L)) < 0.2).astype(np.float32))
    Y = sp.csr_matrix(Y.toarray() * (np.arange(L) < L - 1))  # label L-1 never seen
    labels = rng.integers(0, 6, d)
    return X, Y, labels, rng


@pytest.mark.parametrize("normalization", ["cosine", "row", "none"])
def test_prototypes_equal_dense_formula(normalization):
    X, Y, labels, _ = _problem()
    r = Refrag(normalization=normalization).fit(X, Y, Clustering(labels))
    P = r.prototypes_
    assert sp.isspmatrix_csr(P) and P.shape == (Y.shape[1], X.shape[1])
    np.testing.assert_allclose(P.toarray(), dense_prototypes(X, Y, labels, normalization),
                               atol=1e-10)
    assert P[Y.shape[1] - 1].nnz == 0                   # unseen label: no prototype
    np.testing.assert_array_equal(r.label_frequency_, Y.getnnz(axis=0))


def test_pruning_keeps_large_entries_and_unit_norm():
    X, Y, labels, _ = _problem(seed=1)
    full = Refrag().fit(X, Y, Clustering(labels)).prototypes_.toarray()
    r = Refrag(prune_threshold=0.1).fit(X, Y, Clustering(labels))
    P = r.prototypes_.toarray()
    kept = np.abs(full) >= 0.1
    assert np.all((P != 0) == kept)
    np.testing.assert_allclose(P, unit_rows(np.where(kept, full, 0.0)), atol=1e-12)


@pytest.mark.parametrize("alpha,gamma,s,m,beta", [(0.8, 30.0, 100, 10, 0.0),
                                                  (0.5, 4.0, 3, 2, 0.5),
                                                  (0.0, 10.0, 5, 4, 1.0),
                                                  (0.3, 1.0, 2, 0, 2.0)])
def test_rerank_equals_brute_force(alpha, gamma, s, m, beta):
    X, Y, labels, rng = _problem(seed=2)
    r = Refrag(alpha=alpha, gamma=gamma, shortlist_size=s, n_prototype_candidates=m,
               propensity_exponent=beta).fit(X, Y, Clustering(labels))
    Xt = X[:30]
    S = sp.random(30, Y.shape[1], density=0.4, format="csr", random_state=rng)
    S.data = rng.uniform(0.01, 1.0, S.nnz)
    out, top_l, top_s = r.rerank(Xt, S, k=4, return_arrays=True)
    ref = refrag_rerank(r, Xt, S, 4, Y)
    for i, row in enumerate(ref):
        got = [(l, v) for l, v in zip(top_l[i], top_s[i]) if l >= 0]
        assert [l for l, _ in got] == [l for l, _ in row], i
        np.testing.assert_allclose([v for _, v in got], [v for _, v in row], rtol=1e-9)
        np.testing.assert_allclose(out[i].toarray().ravel()[[l for l, _ in row]],
                                   [v for _, v in row], rtol=1e-6)
    assert out.shape == S.shape and np.all(out.getnnz(axis=1) <= 4)


@pytest.mark.parametrize("norm", ["max", "minmax", "none"])
def test_alpha_one_returns_base_ranking(norm):
    X, Y, labels, rng = _problem(seed=3)
    Xt = X[:40]
    S = sp.random(40, Y.shape[1], density=0.5, format="csr", random_state=rng)
    S.data = np.round(rng.uniform(0.0, 1.0, S.nnz), 1) + 0.05      # with ties
    r = Refrag(alpha=1.0, score_normalization=norm).fit(X, Y, Clustering(labels))
    for k in (1, 3, 5):
        np.testing.assert_array_equal(metrics.top_k(r.rerank(Xt, S, k=k), k),
                                      metrics.top_k(S, k))


def _planted(seed=0):
    """Head labels with many points, rare labels with 3 training points each; every label
    has its own 6 signature features (its DEFRAG-like cluster); points show a random half
    of their labels' signatures plus noise."""
    rng = np.random.default_rng(seed)
    n_head, n_rare, sig = 8, 24, 6
    L = n_head + n_rare
    d = L * sig + 60
    def sample(n, rare_per_label):
        rows = []
        ys = []
        for i in range(n):
            labs = list(rng.choice(n_head, size=2, replace=False))
            ys.append(labs)
        for l in range(n_head, L):
            for _ in range(rare_per_label):
                ys.append([int(rng.integers(0, n_head)), l])
        for labs in ys:
            x = np.zeros(d)
            for l in labs:
                f = l * sig + rng.choice(sig, size=3, replace=False)
                x[f] = rng.uniform(0.5, 1.5, 3)
            noise = L * sig + rng.choice(60, size=4, replace=False)
            x[noise] = rng.uniform(0.5, 1.5, 4)
            rows.append(x)
        Yd = np.zeros((len(ys), L))
        for i, labs in enumerate(ys):
            Yd[i, labs] = 1
        return sp.csr_matrix(np.array(rows)), sp.csr_matrix(Yd)
    Xtr, Ytr = sample(400, 3)
    Xte, Yte = sample(100, 2)
    clusters = np.minimum(np.arange(d) // sig, L + 9)
    return Xtr, Ytr, Xte, Yte, clusters, n_head


def test_refrag_finds_planted_rare_labels_more_often():
    Xtr, Ytr, Xte, Yte, clusters, n_head = _planted()
    # base: a ridge one-vs-rest model; its strong shrinkage favours the head labels
    D = Xtr.toarray()
    W = np.linalg.solve(D.T @ D + 100.0 * np.eye(D.shape[1]), D.T @ Ytr.toarray())
    S = sp.csr_matrix(np.clip(Xte.toarray() @ W, 1e-6, None))
    r = Refrag(alpha=0.5, gamma=2.0).fit(Xtr, Ytr, Clustering(clusters))
    R = r.rerank(Xte, S, k=3)
    rare = np.arange(Ytr.shape[1]) >= n_head
    Yr = Yte.toarray()[:, rare]
    def found(P):
        return int(((P.toarray()[:, rare] != 0) & (Yr == 1)).sum())
    top = metrics.top_k(S, 3)
    base_top = sp.csr_matrix((np.ones(top.size), top.ravel(),
                              np.arange(0, top.size + 1, 3)), shape=S.shape)
    n_base, n_ref = found(base_top), found(R)
    # 48 rare-label occurrences in the test set: the ridge base finds a handful
    assert n_ref >= n_base + 20, (n_base, n_ref)
    assert metrics.precision_at_k(Yte, R, 3) >= metrics.precision_at_k(Yte, S, 3)
    cov_base = metrics.coverage_at_k(Yte, S, 3)
    cov_ref = metrics.coverage_at_k(Yte, R, 3)
    assert cov_ref > cov_base


def test_real_defrag_and_impute_query_run():
    Xtr, Ytr, Xte, Yte, _, _ = _planted(1)
    dfg = Defrag(d0=6, random_state=0).fit(Xtr, Ytr)
    rng = np.random.default_rng(0)
    S = sp.random(Xte.shape[0], Ytr.shape[1], density=0.5, format="csr", random_state=rng)
    for iq in (False, True):
        r = Refrag(impute_query=iq).fit(Xtr, Ytr, dfg)
        R = r.rerank(Xte, S, k=5)
        assert R.shape == S.shape and np.all(R.getnnz(axis=1) == 5)
        # the prototypes are the dense formula's on Defrag's clusters, and the ranking is the
        # brute-force one (with the FIAT-imputed points M x as queries when impute_query)
        np.testing.assert_allclose(r.prototypes_.toarray(),
                                   dense_prototypes(Xtr, Ytr, dfg.labels_, r.normalization),
                                   atol=1e-10)
        M = dense_operator(Xtr, dfg.labels_, r.normalization)
        queries = dense_impute(Xte, M, 1.0) if iq else None
        for i, row in enumerate(refrag_rerank(r, Xte, S, 5, Ytr, queries=queries)):
            got = R[i].toarray().ravel()
            assert sorted(np.flatnonzero(got)) == sorted(l for l, _ in row), (iq, i)
            np.testing.assert_allclose(got[[l for l, _ in row]], [v for _, v in row],
                                       rtol=1e-5)


def test_validation_not_fitted_and_artifacts():
    from featagg_core.artifacts.store import load_artifact, save_artifact
    X, Y, labels, rng = _problem(seed=4)
    S = sp.random(X.shape[0], Y.shape[1], density=0.3, format="csr", random_state=rng)
    with pytest.raises(NotFittedError):
        Refrag().rerank(X, S)
    for bad in [dict(alpha=1.5), dict(gamma=-1), dict(shortlist_size=0),
                dict(n_prototype_candidates=-1), dict(normalization="x"),
                dict(score_normalization="softmax"), dict(prune_threshold=2.0),
                dict(propensity_exponent=-1)]:
        with pytest.raises(ValueError, match=list(bad)[0]):
            Refrag(**bad).fit(X, Y, Clustering(labels))
    r = Refrag().fit(X, Y, Clustering(labels))
    with pytest.raises(ValueError, match="shape"):
        r.rerank(X, S[:, :3])
    neg = S.copy()
    neg.data -= 2
    with pytest.raises(ValueError, match="minmax"):
        r.rerank(X, neg)
    with pytest.raises(ValueError, match="k must"):
        r.rerank(X, S, k=0)
    json.dumps(r.get_params())
    buf = io.BytesIO()
    save_artifact(r, buf)
    r2 = load_artifact(io.BytesIO(buf.getvalue()))
    assert (r2.rerank(X, S) != r.rerank(X, S)).nnz == 0
    np.testing.assert_array_equal(r2.labels_, labels)


# ------------------------------------------------------------------ alpha="auto"
def _grid_search_by_hand(Xf, Yf, dfg, Xv, Sv, Yv, max_drop=0.005):
    """The tuning rule written out: every (alpha, gamma, beta) of the grid as its own
    Refrag, P@5 change bound against the classifier (alpha = 1) per row, then the largest
    coverage@5 gain among the admissible points (ties: P@5, then alpha)."""
    n = Yv.shape[0]
    Ya = Yv.toarray() > 0

    def per_row_hits(R):
        top = metrics.top_k(R, 5)
        return np.array([sum(Ya[i, l] for l in top[i] if l >= 0) for i in range(n)]) / 5

    base_R = Refrag(alpha=1.0).fit(Xf, Yf, dfg).rerank(Xv, Sv, k=5)
    base_h, base_c = per_row_hits(base_R), metrics.coverage_at_k(Yv, base_R, 5)
    rows = [(1.0, 0.5, 0.0, base_h.mean(), base_c, 0.0)]
    for a in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3):
        for g in (0.5, 1.0, 2.0, 4.0):
            for b in (0.0, 0.5, 1.0):
                R = Refrag(alpha=a, gamma=g, propensity_exponent=b).fit(Xf, Yf, dfg).rerank(
                    Xv, Sv, k=5)
                h = per_row_hits(R)
                d = h - base_h
                rows.append((a, g, b, h.mean(), metrics.coverage_at_k(Yv, R, 5),
                             d.mean() - 1.645 * d.std(ddof=1) / np.sqrt(n)))
    ok = [r for r in rows if r[5] >= -max_drop - 1e-12 and r[4] > base_c + 1e-12]
    if not ok:
        return 1.0, 0.5, 0.0
    best = max(ok, key=lambda r: (round(r[4], 12), round(r[3], 12), r[0]))
    return best[:3]


def test_alpha_auto_equals_an_explicit_grid_search_and_keeps_p5():
    from featagg_core.xmlc.ktxmlc import KTXMLC
    Xtr, Ytr, Xte, Yte, _, _ = _planted(3)
    n = Xtr.shape[0]
    perm = np.random.default_rng(0).permutation(n)
    va, fi = np.sort(perm[:n // 4]), np.sort(perm[n // 4:])
    # a strongly regularised classifier: rare labels score low, their prototypes help
    clf = KTXMLC(form="flat", C=0.02, random_state=0).fit(Xtr[fi], Ytr[fi])
    dfg = Defrag(d0=6, random_state=0).fit(Xtr[fi], Ytr[fi])
    Sv = clf.predict_scores(Xtr[va], k=Ytr.shape[1])
    r = Refrag().fit(Xtr[fi], Ytr[fi], dfg, validation=(Xtr[va], Sv, Ytr[va]))
    assert r.alpha == "auto" and r.tuned_
    expect = _grid_search_by_hand(Xtr[fi], Ytr[fi], dfg, Xtr[va], Sv, Ytr[va])
    got = (r.alpha_, r.gamma_, r.propensity_exponent_)
    assert got[0] == expect[0] and (got[0] == 1.0 or got == pytest.approx(expect))
    assert r.alpha_ < 1.0, r.choice_   # the set is built so that re-ranking pays
    # held-out rows: P@5 not below the classifier's minus the rule's tolerance, coverage up
    St = clf.predict_scores(Xte, k=Ytr.shape[1])
    Rt = r.rerank(Xte, St, k=5)
    assert metrics.precision_at_k(Yte, Rt, 5) >= metrics.precision_at_k(Yte, St, 5) - 0.005
    assert metrics.coverage_at_k(Yte, Rt, 5) > metrics.coverage_at_k(Yte, St, 5)
    # the tuned knobs are what a Refrag with those numbers does
    fixed = Refrag(alpha=r.alpha_, gamma=r.gamma_,
                   propensity_exponent=r.propensity_exponent_).fit(Xtr[fi], Ytr[fi], dfg)
    assert (fixed.rerank(Xte, St, k=5) != Rt).nnz == 0


def test_alpha_auto_without_validation_rows_falls_back_and_says_so():
    from featagg_core.agglomeration.refrag import FALLBACK
    Xtr, Ytr, Xte, _, _, _ = _planted(0)
    dfg = Defrag(d0=6, random_state=0).fit(Xtr, Ytr)
    r = Refrag().fit(Xtr, Ytr, dfg)
    assert not r.tuned_ and "not tuned" in r.choice_
    assert (r.alpha_, r.gamma_, r.propensity_exponent_) == FALLBACK
    S = sp.random(Xte.shape[0], Ytr.shape[1], density=0.5, format="csr", random_state=1)
    fixed = Refrag(alpha=FALLBACK[0], gamma=FALLBACK[1],
                   propensity_exponent=FALLBACK[2]).fit(Xtr, Ytr, dfg)
    assert (r.rerank(Xte, S, k=5) != fixed.rerank(Xte, S, k=5)).nnz == 0
    with pytest.raises(ValueError, match="alpha='auto'"):
        fixed.tune(Xte, S, S)
