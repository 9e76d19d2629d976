"""featagg_core.metrics against brute-force per-point implementations, pyxclib's formulas
written out independently, scikit-learn/scipy, and hand-worked cases."""
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mutual_info_score, normalized_mutual_info_score

from featagg_core import metrics as M


# ---------------------------------------------------------------------------
# brute force: one point at a time, plain Python
# ---------------------------------------------------------------------------

def bf_ranking(score_row, sparse_cols=None):
    """Full ranking of one row: list of predicted labels, best first (ties: lower index).
    For sparse rows only the stored columns are candidates."""
    if sparse_cols is None:
        cand = list(range(len(score_row)))
        vals = {j: score_row[j] for j in cand}
    else:
        cand = list(sparse_cols)
        vals = dict(zip(sparse_cols, score_row))
    return sorted(cand, key=lambda j: (-vals[j], j))


def rows_of(Y_score):
    if sp.issparse(Y_score):
        S = sp.csr_matrix(Y_score)
        return [bf_ranking(list(S.data[S.indptr[i]:S.indptr[i + 1]]),
                           list(S.indices[S.indptr[i]:S.indptr[i + 1]]))
                for i in range(S.shape[0])]
    return [bf_ranking(list(r)) for r in np.asarray(Y_score)]


def truth_sets(Y_true):
    Y = sp.csr_matrix(Y_true)
    return [set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]][Y.data[Y.indptr[i]:Y.indptr[i + 1]] != 0]
                .tolist()) for i in range(Y.shape[0])]


def bf_precision(Y_true, Y_score, k):
    T, R = truth_sets(Y_true), rows_of(Y_score)
    return sum(len(set(r[:k]) & t) / k for t, r in zip(T, R)) / len(T)


def dcg(ranked, rel, k):
    return sum(rel(l) / math.log2(i + 2) for i, l in enumerate(ranked[:k]))


def bf_ndcg(Y_true, Y_score, k):
    T, R = truth_sets(Y_true), rows_of(Y_score)
    tot = 0.0
    for t, r in zip(T, R):
        if not t:
            continue
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(t))))
        tot += dcg(r, lambda l: float(l in t), k) / ideal
    return tot / len(T)


def bf_psp(Y_true, Y_score, w, k):
    T, R = truth_sets(Y_true), rows_of(Y_score)
    num = sum(sum(w[l] for l in r[:k] if l in t) for t, r in zip(T, R))
    den = sum(sum(sorted((w[l] for l in t), reverse=True)[:k]) for t in T)
    return num / den if den else 0.0


def bf_psndcg(Y_true, Y_score, w, k):
    T, R = truth_sets(Y_true), rows_of(Y_score)
    num = den = 0.0
    for t, r in zip(T, R):
        if not t:
            continue
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(t))))
        num += dcg(r, lambda l: w[l] if l in t else 0.0, k) / ideal
        best = sorted(t, key=lambda l: -w[l])
        den += dcg(best, lambda l: w[l], k) / ideal
    return num / den if den else 0.0


def bf_coverage(Y_true, Y_score, k):
    T, R = truth_sets(Y_true), rows_of(Y_score)
    present = set().union(*T) if T else set()
    hit = set()
    for t, r in zip(T, R):
        hit |= set(r[:k]) & t
    return len(hit) / len(present) if present else 0.0


# ---------------------------------------------------------------------------
# random problems with ties, empty rows, and sparse score rows of any length
# ---------------------------------------------------------------------------

def random_problem(seed, n=40, L=12, sparse_scores=True, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Yd = (rng.random((n, L)) < 0.2).astype(np.float32)
    Yd[rng.random(n) < 0.15] = 0                       # points with no labels
    # few distinct values -> many ties; negatives and zeros included
    Sd = rng.integers(-2, 4, size=(n, L)).astype(dtype) / 2
    if sparse_scores:
        mask = rng.random((n, L)) < rng.uniform(0.05, 0.9, size=(n, 1))
        rows, cols = np.nonzero(mask)
        S = sp.csr_matrix((Sd[rows, cols], (rows, cols)), shape=(n, L))
        # make sure stored zeros survive as predictions
        S = sp.csr_matrix((Sd[rows, cols], cols, np.r_[0, np.cumsum(mask.sum(1))]),
                          shape=(n, L))
        assert S.nnz == mask.sum()
    else:
        S = Sd
    return sp.csr_matrix(Yd), S


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sparse_scores", [True, False])
def test_against_brute_force(seed, sparse_scores):
    Y, S = random_problem(seed, sparse_scores=sparse_scores)
    w = M.inverse_propensity(Y)
    ks = [1, 2, 3, 5, 12, 15]          # 15 > L
    P = M.precision_at_k(Y, S, ks)
    N = M.ndcg_at_k(Y, S, ks)
    PS = M.psprecision_at_k(Y, S, ks, w)
    PN = M.psndcg_at_k(Y, S, ks, inv_propensity=w)
    C = M.coverage_at_k(Y, S, ks)
    for j, k in enumerate(ks):
        assert P[j] == pytest.approx(bf_precision(Y, S, k), abs=1e-12)
        assert N[j] == pytest.approx(bf_ndcg(Y, S, k), abs=1e-12)
        assert PS[j] == pytest.approx(bf_psp(Y, S, w, k), abs=1e-12)
        assert PN[j] == pytest.approx(bf_psndcg(Y, S, w, k), abs=1e-12)
        assert C[j] == pytest.approx(bf_coverage(Y, S, k), abs=1e-12)
        # scalar k gives a float equal to the list entry
        p = M.precision_at_k(Y, S, k)
        assert isinstance(p, float) and p == pytest.approx(P[j])


def test_dense_and_sparse_agree_when_all_stored():
    Y, S = random_problem(7, sparse_scores=False)
    Ssp = sp.csr_matrix(S)
    # csr_matrix(dense) drops zeros: store them explicitly
    Ssp = sp.csr_matrix((S.ravel(), np.tile(np.arange(S.shape[1]), S.shape[0]),
                         np.arange(0, S.size + 1, S.shape[1])), shape=S.shape)
    for f in (M.precision_at_k, M.ndcg_at_k, M.coverage_at_k):
        np.testing.assert_allclose(f(Y, S, [1, 3, 5]), f(Y, Ssp, [1, 3, 5]))
    np.testing.assert_array_equal(M.top_k(S, 6), M.top_k(Ssp, 6))


def test_top_k_matches_brute_force_and_pads():
    Y, S = random_problem(3, n=30, L=9, sparse_scores=True)
    top = M.top_k(S, 11)
    assert top.shape == (30, 11) and top.dtype == np.int64
    for i, r in enumerate(rows_of(S)):
        exp = (r + [-1] * 11)[:11]
        assert top[i].tolist() == exp
    Sd = random_problem(3, n=30, L=9, sparse_scores=False)[1]
    topd = M.top_k(Sd, 11)
    for i, r in enumerate(rows_of(Sd)):
        assert topd[i].tolist() == (r + [-1] * 11)[:11]


@pytest.mark.parametrize("path", ["kernel", "partition"])
def test_dense_top_k_both_paths(monkeypatch, path):
    """The numba one-pass kernel and the vectorised partition path (forced through several
    row chunks) both keep exact ties, with -inf/inf and integer scores too."""
    rng = np.random.default_rng(0)
    S = rng.integers(0, 3, size=(50, 40)).astype(np.float32)
    S[0, 5] = np.inf
    S[1, :] = -np.inf
    S[2, ::3] = -np.inf
    monkeypatch.setattr(M, "_DENSE_CHUNK_CELLS", 100)
    monkeypatch.setattr(M, "_DENSE_KERNEL_MAX_K", 64 if path == "kernel" else 0)
    for k in (1, 4, 39, 40, 45):
        top = M.top_k(S, k)
        for i, r in enumerate(rows_of(S)):
            assert top[i].tolist() == (r + [-1] * k)[:k]
    Si = rng.integers(-3, 3, size=(20, 10))
    top = M.top_k(Si, 3)
    for i, r in enumerate(rows_of(Si)):
        assert top[i].tolist() == r[:3]


def test_unsorted_and_duplicate_sparse_scores():
    # row 0 stored out of order with a duplicate (summed: label 2 -> 0.6)
    S = sp.csr_matrix((np.array([0.5, 0.3, 0.9, 0.3]), np.array([3, 2, 0, 2]),
                       np.array([0, 4])), shape=(1, 5))
    assert M.top_k(S, 3).tolist() == [[0, 2, 3]]


# ---------------------------------------------------------------------------
# hand-worked cases
# ---------------------------------------------------------------------------

def test_hand_worked_precision_ndcg():
    # point 0: true {0, 2}; scores rank 1, 0, 2, 3   -> P@1 = 0, P@2 = 1/2, P@3 = 2/3
    # point 1: true {3};    scores rank 3, ...        -> P@1 = 1, P@2 = 1/2, P@3 = 1/3
    # point 2: no labels                              -> 0
    Y = np.array([[1, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]])
    S = np.array([[0.8, 0.9, 0.1, 0.0], [0.0, 0.1, 0.2, 0.7], [1, 1, 1, 1.0]])
    np.testing.assert_allclose(M.precision_at_k(Y, S, (1, 2, 3)),
                               [1 / 3, (0.5 + 0.5) / 3, (2 / 3 + 1 / 3) / 3])
    # nDCG@2: point 0 DCG = 1/log2(3), IDCG@2 = 1 + 1/log2(3); point 1 = 1; point 2 = 0
    d0 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert M.ndcg_at_k(Y, S, 2) == pytest.approx((d0 + 1.0) / 3)
    # coverage@1: only label 3 is hit; labels present {0, 2, 3}
    assert M.coverage_at_k(Y, S, 1) == pytest.approx(1 / 3)
    assert M.coverage_at_k(Y, S, 3) == pytest.approx(1.0)


def test_ties_go_to_lower_index():
    Y = np.array([[0, 1, 0]])
    S = np.array([[0.5, 0.5, 0.5]])
    assert M.precision_at_k(Y, S, 1) == 0.0           # label 0 wins the tie
    assert M.precision_at_k(Y, S, 2) == 0.5
    S2 = sp.csr_matrix((np.array([0.5, 0.5]), np.array([2, 1]), np.array([0, 2])),
                       shape=(1, 3))
    assert M.precision_at_k(Y, S2, 1) == 1.0          # stored 1 and 2 tie -> 1


def test_sparse_missing_entries_never_predicted_but_stored_zero_is():
    Y = sp.csr_matrix(np.array([[1, 0, 0, 1]]))
    # label 3 stored with score 0 and label 1 with -1: both predictions; label 0 absent
    S = sp.csr_matrix((np.array([0.0, -1.0]), np.array([3, 1]), np.array([0, 2])),
                      shape=(1, 4))
    assert M.top_k(S, 4).tolist() == [[3, 1, -1, -1]]
    assert M.precision_at_k(Y, S, (1, 4)).tolist() == [1.0, 0.25]


def test_hand_worked_propensity():
    # w = [1, 4, 2]; point 0 true {0, 1}, ranked 0 first -> PSP@1 num 1, oracle 4
    # point 1 true {2}, ranked 2 first -> num 2, oracle 2  => PSP@1 = 3/6
    Y = np.array([[1, 1, 0], [0, 0, 1]])
    S = np.array([[0.9, 0.5, 0.0], [0.0, 0.1, 0.7]])
    w = np.array([1.0, 4.0, 2.0])
    assert M.psprecision_at_k(Y, S, 1, w) == pytest.approx(0.5)
    # @2: num 1+4 + 2 = 7, oracle 4+1 + 2 = 7
    assert M.psprecision_at_k(Y, S, 2, w) == pytest.approx(1.0)
    # PSnDCG@2: point 0: (1 + 4/log2 3)/(1 + 1/log2 3); oracle (4 + 1/log2 3)/(same)
    #           point 1: 2/1 for both
    i0 = 1 + 1 / math.log2(3)
    num = (1 + 4 / math.log2(3)) / i0 + 2
    den = (4 + 1 / math.log2(3)) / i0 + 2
    assert M.psndcg_at_k(Y, S, 2, w) == pytest.approx(num / den)


def test_inverse_propensity_formula():
    rng = np.random.default_rng(1)
    Y = sp.csr_matrix((rng.random((200, 30)) < 0.1).astype(np.float32))
    w = M.inverse_propensity(Y, A=0.6, B=2.6)
    N = 200
    C = (math.log(N) - 1) * (2.6 + 1) ** 0.6
    exp = [1 + C * (float(Y[:, j].sum()) + 2.6) ** -0.6 for j in range(30)]
    np.testing.assert_allclose(w, exp)
    # rarer label -> larger inverse propensity
    f = np.asarray(Y.sum(0)).ravel()
    assert np.all(np.diff(w[np.argsort(f)]) <= 1e-12)


def test_all_empty_truth_returns_zero():
    Y = sp.csr_matrix((3, 4))
    S = np.ones((3, 4))
    w = np.ones(4)
    for v in (M.precision_at_k(Y, S, 2), M.ndcg_at_k(Y, S, 2), M.psprecision_at_k(Y, S, 2, w),
              M.psndcg_at_k(Y, S, 2, w), M.coverage_at_k(Y, S, 2)):
        assert v == 0.0


def test_validation_errors():
    Y = np.eye(3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        M.precision_at_k(Y, Y, 0)
    with pytest.raises(ValueError, match="shape"):
        M.precision_at_k(Y, np.ones((3, 4)), 1)
    with pytest.raises(ValueError, match="0/1"):
        M.precision_at_k(2 * Y, Y, 1)
    with pytest.raises(ValueError, match="NaN"):
        M.ndcg_at_k(Y, np.full((3, 3), np.nan), 1)
    with pytest.raises(ValueError, match="inv_propensity"):
        M.psprecision_at_k(Y, Y, 1, np.ones(2))
    with pytest.raises(ValueError, match="integers"):
        M.precision_at_k(Y, Y, [1, 2.5])


# ---------------------------------------------------------------------------
# head-to-tail buckets
# ---------------------------------------------------------------------------

def test_buckets_and_precision_by_bucket():
    Y, S = random_problem(11, n=60, L=20, sparse_scores=True)
    b = M.label_frequency_buckets(Y, 4)
    f = np.asarray(Y.getnnz(0))
    order = sorted(range(20), key=lambda j: (-f[j], j))
    assert [b[j] for j in order] == [r * 4 // 20 for r in range(20)]
    bm = M.label_frequency_buckets(Y, 3, strategy="mass")
    # head buckets are more frequent than tail buckets
    assert f[bm == 0].min() >= f[bm == 2].max()
    for k in (1, 3, 5):
        pb = M.precision_by_bucket(Y, S, b, k)
        assert pb.shape == (4,)
        assert pb.sum() == pytest.approx(M.precision_at_k(Y, S, k))
        T, R = truth_sets(Y), rows_of(S)
        for bb in range(4):
            exp = sum(sum(1 for l in r[:k] if l in t and b[l] == bb) / k
                      for t, r in zip(T, R)) / len(T)
            assert pb[bb] == pytest.approx(exp)
    assert M.precision_by_bucket(Y, S, b, [1, 3]).shape == (2, 4)


# ---------------------------------------------------------------------------
# clustering and information
# ---------------------------------------------------------------------------

def bf_clustering_accuracy(y, c):
    classes, clusters = sorted(set(y)), sorted(set(c))
    best = 0
    # brute force over injective maps of clusters onto classes (padded with None)
    pad = classes + [None] * max(0, len(clusters) - len(classes))
    for perm in itertools.permutations(pad, len(clusters)):
        m = dict(zip(clusters, perm))
        best = max(best, sum(1 for a, b in zip(y, c) if m[b] == a))
    return best / len(y)


@pytest.mark.parametrize("seed", range(5))
def test_clustering_accuracy_brute_force(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 30)
    c = np.where(rng.random(30) < 0.6, (y + 1) % 4, rng.integers(0, 5, 30))
    assert M.clustering_accuracy(y, c) == pytest.approx(bf_clustering_accuracy(y.tolist(),
                                                                              c.tolist()))


def test_clustering_accuracy_hand_worked():
    assert M.clustering_accuracy([0, 0, 1, 1], ["b", "b", "a", "a"]) == 1.0
    assert M.clustering_accuracy([0, 0, 1, 1], [1, 1, 1, 1]) == 0.5
    assert M.clustering_accuracy([0, 1, 2], [5, 5, 7]) == pytest.approx(2 / 3)


@pytest.mark.parametrize("seed", range(4))
def test_mutual_information_vs_sklearn_and_formula(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 500)
    y = (x + rng.integers(0, 3, 500)) % 4
    assert M.mutual_information(x, y) == pytest.approx(mutual_info_score(x, y), abs=1e-12)
    # plain double loop over the joint distribution
    mi = 0.0
    for a in set(x):
        for b in set(y):
            pab = np.mean((x == a) & (y == b))
            if pab:
                mi += pab * math.log(pab / (np.mean(x == a) * np.mean(y == b)))
    assert M.mutual_information(x, y) == pytest.approx(mi, abs=1e-12)
    assert M.normalized_mutual_info(x, y) == pytest.approx(normalized_mutual_info_score(x, y))


def test_mutual_information_cases_and_loss():
    x = np.array(["a", "a", "b", "b"])
    assert M.mutual_information(x, [0, 0, 1, 1]) == pytest.approx(math.log(2))
    assert M.mutual_information(x, [0, 1, 0, 1]) == pytest.approx(0.0, abs=1e-15)
    assert M.mutual_information_loss(0.5, 0.3) == pytest.approx(0.2)
    assert M.mutual_information_loss(0.5, 0.3, relative=True) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="length"):
        M.mutual_information([1, 2], [1])


def test_large_sparse_consistency_with_dense():
    """Sparse kernel and dense argpartition path agree on a bigger random problem."""
    rng = np.random.default_rng(5)
    n, L = 2000, 300
    Y = sp.random(n, L, density=0.02, random_state=1, format="csr")
    Y.data[:] = 1
    Sd = np.round(rng.random((n, L)), 2)                # ties
    full = sp.csr_matrix((Sd.ravel(), np.tile(np.arange(L), n), np.arange(0, n * L + 1, L)),
                         shape=(n, L))
    np.testing.assert_array_equal(M.top_k(Sd, 7), M.top_k(full, 7))
    w = M.inverse_propensity(Y)
    np.testing.assert_allclose(M.psndcg_at_k(Y, Sd, [1, 3, 5], w),
                               M.psndcg_at_k(Y, full, [1, 3, 5], w))


def test_ps_argument_orders():
    """featagg order (k, inv_propensity), keywords, and pyxclib's (inv_propensity, k)."""
    Y, S = random_problem(2)
    w = M.inverse_propensity(Y)
    ref = M.psprecision_at_k(Y, S, 3, w)
    assert M.psprecision_at_k(Y, S, k=3, inv_propensity=w) == ref
    assert M.psprecision_at_k(Y, S, w, 3) == ref
    assert M.psprecision_at_k(Y, S, list(w), 3) == ref
    np.testing.assert_array_equal(M.psndcg_at_k(Y, S, w, [1, 3]), M.psndcg_at_k(Y, S, [1, 3], w))
    with pytest.raises(ValueError, match="inv_propensity is required"):
        M.psndcg_at_k(Y, S, 3)


def test_ndcg_normaliser_as_pyxclib_writes_it():
    """pyxclib divides DCG@k by min(IDCG@|y|, IDCG@k) (a cumulative table indexed by
    |y|-1, with |y|=0 wrapping to the table's end); for 0/1 gains that is
    IDCG@min(k, |y|). Recompute it that way, vectorised over points."""
    Y, S = random_problem(9, n=50, L=15)
    k = 4
    top = M.top_k(S, k)
    Yd = Y.toarray()
    flags = np.where(top >= 0, np.take_along_axis(Yd, np.maximum(top, 0), 1), 0)
    table = np.cumsum(1 / np.log2(np.arange(1, 16) + 1))
    n = table[Yd.sum(1).astype(int) - 1]
    dcg = np.cumsum(flags / np.log2(np.arange(k) + 2), axis=1)
    expect = [np.mean(dcg[:, j] / np.minimum(n, table[j])) for j in range(k)]
    np.testing.assert_allclose(M.ndcg_at_k(Y, S, [1, 2, 3, 4]), expect)
    # precision the same way: mean of cumulative hits / rank
    np.testing.assert_allclose(M.precision_at_k(Y, S, [1, 2, 3, 4]),
                               np.mean(np.cumsum(flags, 1) / np.arange(1, k + 1), 0))


def test_ranking_metrics_equals_the_single_metric_functions():
    """One top-k pass for all metrics gives exactly what each metric gives on its own,
    for dense and sparse scores, with and without propensities."""
    from featagg_core import metrics as M
    rng = np.random.default_rng(11)
    Y = sp.csr_matrix((rng.random((60, 25)) < 0.12).astype(np.float32))
    dense = rng.random((60, 25)).round(2)          # rounded: ties happen
    sparse = sp.random(60, 25, density=0.2, format="csr", random_state=3)
    inv = M.inverse_propensity(Y)
    for S in (dense, sparse):
        got = M.ranking_metrics(Y, S, (1, 3, 5), inv)
        assert list(got)[:5] == ["P@1", "P@3", "P@5", "nDCG@1", "nDCG@3"]
        ks = [1, 3, 5]
        single = {"P": M.precision_at_k(Y, S, ks), "nDCG": M.ndcg_at_k(Y, S, ks),
                  "PSP": M.psprecision_at_k(Y, S, ks, inv),
                  "PSnDCG": M.psndcg_at_k(Y, S, ks, inv), "coverage": M.coverage_at_k(Y, S, ks)}
        for name, values in single.items():
            for k, v in zip(ks, values):
                assert got[f"{name}@{k}"] == v                     # same cut-offs: exact
        for k in ks:                                               # one cut-off at a time
            assert got[f"PSnDCG@{k}"] == pytest.approx(M.psndcg_at_k(Y, S, k, inv), rel=1e-12)
            assert got[f"P@{k}"] == pytest.approx(M.precision_at_k(Y, S, k), rel=1e-12)
        no_ps = M.ranking_metrics(Y, S, [2])
        assert set(no_ps) == {"P@2", "nDCG@2", "coverage@2"}
    with pytest.raises(ValueError, match="unknown"):
        M.ranking_metrics(Y, dense, [1], metrics=("P@k",))
