"""Synthetic generators: shapes, sparsity, distributions, determinism, planted structure."""
import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.data import CategoricalData, GraphData, MultiLabelData
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)
from featagg_core import metrics


def _same_csr(A, B):
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data))


# ---------------------------------------------------------------------------
# power-law multi-label
# ---------------------------------------------------------------------------

def test_powerlaw_shapes_and_types():
    data, info = make_powerlaw_multilabel(3000, 2000, 300, avg_labels=4, avg_features=30,
                                          feature_clusters=50, return_info=True)
    assert isinstance(data, MultiLabelData)
    X, Y = data.X, data.Y
    assert X.shape == (3000, 2000) and Y.shape == (3000, 300)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float32 and Y.dtype == np.float32
    assert set(np.unique(Y.data)) == {1.0}
    assert X.has_canonical_format and Y.has_canonical_format
    assert np.all(np.diff(Y.indptr) >= 1)                 # every point has a label
    # averages: label draws collapse a little, tokens become counts
    assert 3.0 < Y.nnz / 3000 <= 4.0
    tokens = X.sum() / 3000
    assert 28 < tokens < 32
    assert X.nnz / 3000 <= tokens
    assert info["feature_clusters"].shape == (2000,)
    assert set(np.unique(info["feature_clusters"])) == set(range(50))
    assert info["label_clusters"].shape == (300,)
    assert info["label_probabilities"].sum() == pytest.approx(1.0)


def test_powerlaw_label_frequencies_follow_zipf():
    for a in (0.8, 1.2):
        data = make_powerlaw_multilabel(20000, 500, 1000, avg_labels=1.0, avg_features=2,
                                        label_exponent=a, random_state=3)
        f = np.sort(np.asarray(data.Y.getnnz(0)))[::-1].astype(float)
        r = np.arange(1, 101)                               # the head, well sampled
        slope = np.polyfit(np.log(r), np.log(f[:100]), 1)[0]
        assert slope == pytest.approx(-a, abs=0.15)


def test_powerlaw_determinism_and_seed():
    a = make_powerlaw_multilabel(500, 300, 40, random_state=7)
    b = make_powerlaw_multilabel(500, 300, 40, random_state=7)
    c = make_powerlaw_multilabel(500, 300, 40, random_state=8)
    assert _same_csr(a.X, b.X) and _same_csr(a.Y, b.Y)
    assert not _same_csr(a.X, c.X)
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_powerlaw_planted_feature_groups_are_detectable():
    """Features of the same planted group co-occur far more than features of different
    groups (so feature clustering has something to find)."""
    data, info = make_powerlaw_multilabel(4000, 400, 40, avg_labels=2, avg_features=25,
                                          feature_clusters=10, noise=0.1,
                                          return_info=True, random_state=1)
    Xb = data.X.copy()
    Xb.data[:] = 1
    C = (Xb.T @ Xb).toarray()
    np.fill_diagonal(C, 0)
    g = info["feature_clusters"]
    same = g[:, None] == g[None, :]
    np.fill_diagonal(same, False)
    diff = ~same
    np.fill_diagonal(diff, False)
    assert C[same].mean() > 5 * C[diff].mean()


def test_powerlaw_labels_predictable_from_features():
    """A label's topic makes its features predictive: a centroid classifier on the
    training part beats the frequency baseline by a wide margin."""
    data = make_powerlaw_multilabel(3000, 600, 30, avg_labels=2, avg_features=30,
                                    feature_clusters=30, noise=0.1, test_size=0.3,
                                    random_state=2)
    assert data.X_test.shape[0] == 900 and data.X.shape[0] == 2100
    centroids = (data.Y.T @ data.X).toarray()
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True) + 1e-12
    scores = data.X_test @ centroids.T
    p1 = metrics.precision_at_k(data.Y_test, scores, 1)
    freq = np.asarray(data.Y.sum(0)).ravel()
    base = metrics.precision_at_k(data.Y_test, np.tile(freq, (900, 1)), 1)
    assert p1 > base + 0.2


def test_powerlaw_large_is_vectorised():
    # 10^6 features, ~2*10^6 non-zeros: finishes quickly only without per-row loops
    data = make_powerlaw_multilabel(100_000, 1_000_000, 20_000, avg_features=20,
                                    random_state=0)
    assert data.X.shape == (100_000, 1_000_000)
    assert 1.5e6 < data.X.nnz < 2.1e6
    assert data.feature_names is None or len(data.feature_names) == 1_000_000


def test_powerlaw_validation():
    with pytest.raises(ValueError, match="n_features"):
        make_powerlaw_multilabel(10, 0, 5)
    with pytest.raises(ValueError, match="noise"):
        make_powerlaw_multilabel(10, 10, 5, noise=1.5)
    with pytest.raises(ValueError, match="feature_clusters"):
        make_powerlaw_multilabel(10, 10, 5, feature_clusters=11)


# ---------------------------------------------------------------------------
# attributed SBM
# ---------------------------------------------------------------------------

def test_sbm_graph_structure():
    g, info = make_attributed_sbm(1200, 4, p_in=0.05, p_out=0.004, n_informative=20,
                                  n_noise=60, return_info=True, random_state=0)
    assert isinstance(g, GraphData)
    A = g.A
    assert A.shape == (1200, 1200)
    assert (A != A.T).nnz == 0
    assert A.diagonal().sum() == 0
    assert set(np.unique(A.data)) == {1.0}
    z = info["blocks"]
    assert np.array_equal(z, g.y)
    assert np.bincount(z).tolist() == [300] * 4
    # edge densities within / between blocks match p_in / p_out
    Ad = A.toarray()
    same = z[:, None] == z[None, :]
    n_same_pairs = (same.sum() - 1200)
    within = Ad[same].sum() / n_same_pairs
    between = Ad[~same].sum() / (~same).sum()
    assert within == pytest.approx(0.05, rel=0.1)
    assert between == pytest.approx(0.004, rel=0.15)


def test_sbm_triangular_pairs_exact_when_p_is_one():
    g = make_attributed_sbm(30, 3, p_in=1.0, p_out=0.0, n_informative=3, n_noise=0,
                            random_state=4)
    Ad = g.A.toarray()
    same = g.y[:, None] == g.y[None, :]
    np.fill_diagonal(same, False)
    assert np.array_equal(Ad.astype(bool), same)


def test_sbm_informative_features_follow_blocks():
    g, info = make_attributed_sbm(1500, 5, n_informative=25, n_noise=75, return_info=True,
                                  random_state=2)
    X = g.X.toarray()
    assert X.shape == (1500, 100)
    assert np.array_equal(info["informative"], np.arange(25))
    onehot = np.eye(5)[g.y]
    # best |correlation| of each feature with a block indicator
    Xc = X - X.mean(0)
    Bc = onehot - onehot.mean(0)
    corr = (Xc.T @ Bc) / (np.linalg.norm(Xc, axis=0)[:, None] * np.linalg.norm(Bc, axis=0)
                          + 1e-12)
    best = np.abs(corr).max(1)
    assert best[:25].min() > 3 * best[25:].max()
    # each informative feature's best block is its planted one
    assert np.array_equal(np.abs(corr[:25]).argmax(1), info["feature_blocks"])
    # noise features have the same marginal rate as informative ones (on average)
    assert X[:, 25:].mean() == pytest.approx(X[:, :25].mean(), rel=0.15)


def test_sbm_determinism():
    a = make_attributed_sbm(300, 3, random_state=5)
    b = make_attributed_sbm(300, 3, random_state=5)
    c = make_attributed_sbm(300, 3, random_state=6)
    assert _same_csr(a.A, b.A) and _same_csr(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not _same_csr(a.A, c.A)


def test_sbm_validation():
    with pytest.raises(ValueError, match="p_in"):
        make_attributed_sbm(10, 2, p_in=2.0)
    with pytest.raises(ValueError, match="n_blocks"):
        make_attributed_sbm(3, 5)


# ---------------------------------------------------------------------------
# Zipf categorical
# ---------------------------------------------------------------------------

def test_zipf_categorical_shapes_and_frequencies():
    t, info = make_zipf_categorical(50_000, 2000, zipf_a=1.1, n_columns=2, return_info=True,
                                    random_state=0)
    assert isinstance(t, CategoricalData)
    assert t.table.shape == (50_000, 2) and list(t.table.columns) == ["col0", "col1"]
    assert t.labels.dtype == np.int8 and set(np.unique(t.labels)) <= {0, 1}
    counts = t.table["col0"].value_counts().to_numpy().astype(float)
    r = np.arange(1, 51)
    slope = np.polyfit(np.log(r), np.log(counts[:50]), 1)[0]
    assert slope == pytest.approx(-1.1, abs=0.15)
    # the most frequent observed value is the one with the largest planted probability
    vocab = info["vocabulary"][0]
    top = t.table["col0"].value_counts().index[0]
    assert top == vocab[info["value_probabilities"][0].argmax()]


def test_zipf_categorical_label_rate_varies_by_value():
    t, info = make_zipf_categorical(100_000, 50, zipf_a=0.5, effect_scale=1.5,
                                    return_info=True, random_state=1)
    df = t.table.assign(y=t.labels)
    rate = df.groupby("col0")["y"].mean()
    assert rate.max() - rate.min() > 0.5
    # observed per-value rate tracks the planted effect
    vocab = list(info["vocabulary"][0])
    eff = info["effects"][0][[vocab.index(v) for v in rate.index]]
    assert np.corrcoef(eff, rate.to_numpy())[0, 1] > 0.9
    assert metrics.mutual_information(t.table["col0"].to_numpy(), t.labels) > 0.02


def test_zipf_categorical_determinism():
    a = make_zipf_categorical(1000, 30, random_state=3)
    b = make_zipf_categorical(1000, 30, random_state=3)
    c = make_zipf_categorical(1000, 30, random_state=4)
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_zipf_categorical_validation():
    with pytest.raises(ValueError, match="base_rate"):
        make_zipf_categorical(10, 5, base_rate=1.0)
    with pytest.raises(ValueError, match="n_values"):
        make_zipf_categorical(10, 0)
