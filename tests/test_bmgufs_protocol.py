"""BMGUFS protocol pieces: the number of blocks without labels (eigengap rule, checked
against dense eigenvalues computed here), H in both storages against (Y^T Y)^2, the gamma
grid that keeps nnz(r) >= d (against one fit per gamma), and the block-model fit check."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import featagg_core.graph.block_model as block_model
import featagg_core.graph.selection_problem as selection_problem
from featagg_core.graph.block_model import BlockModel, block_image
from featagg_core.graph.bmgufs import BMGUFS

from test_bmgufs import _planted, _sbm


def _eigengap_by_hand(A, k_lo=2, k_hi=20):
    """The rule of the docstring, written out with dense numpy."""
    Ad = A.toarray()
    deg = Ad.sum(1)
    deg = deg + deg.mean()
    s = 1.0 / np.sqrt(deg)
    w = np.sort(np.linalg.eigvalsh(s[:, None] * Ad * s[None, :]))[::-1]
    gaps = [w[k - 1] - w[k] for k in range(k_lo, k_hi + 1)]
    return k_lo + int(np.argmax(gaps))


@pytest.mark.parametrize("seed,k", [(0, 4), (1, 6)])
def test_no_labels_no_n_blocks_picks_k_by_the_eigengap_rule(seed, k):
    # n = 480 > 400: the sparse eigsh path, compared with dense eigenvalues
    A, lab = _sbm(n=480, k=k, p_in=0.2, p_out=0.01, seed=seed)
    rng = np.random.default_rng(seed)
    Xd = (rng.random((480, 30)) < 0.2).astype(float)
    Xd[0, 0] = 1.0
    X = sp.csr_matrix(Xd)
    m = BMGUFS(random_state=0, n_candidates=2, max_iter=5).fit(A, X)
    assert m.n_blocks_ == _eigengap_by_hand(A)
    assert m.n_blocks_ == k                       # a planted SBM shows its k
    assert m.block_model_.M_.shape == (k, k)
    assert "eigengap" in m.n_blocks_rule_ and f"k = {k}" in m.n_blocks_rule_


@pytest.mark.parametrize("k", [2, 3, 5])
def test_no_label_rule_finds_the_planted_k(k):
    """Planted-partition graphs with well separated blocks: the default fit without labels
    takes the planted k (and says where it came from), as the dense eigenvalues say."""
    A, lab = _sbm(n=300, k=k, p_in=0.2, p_out=0.01, seed=k)
    rng = np.random.default_rng(k)
    X = sp.csr_matrix((rng.random((300, 20)) < 0.2).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # the poor-fit warning
        m = BMGUFS(random_state=0, n_candidates=1, max_iter=2).fit(A, X)
    assert m.n_blocks_ == k == _eigengap_by_hand(A)
    assert m.k_source_ == "eigengap"
    assert m.block_model_.M_.shape == (k, k)


def test_one_dense_block_in_a_sparse_graph_gives_two_blocks():
    """One obvious block (120 dense nodes among 600 sparse ones): k = 2, the block and the
    rest, the smallest k the rule considers."""
    rng = np.random.default_rng(0)
    n = 600
    blk = np.arange(n) < 120
    P = np.where(blk[:, None] & blk[None, :], 0.3, 0.01)
    up = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_matrix((up | up.T).astype(np.float64))
    k, _, text = block_model.choose_n_blocks(A)
    assert k == 2 == _eigengap_by_hand(A)
    m = BlockModel(n_blocks=k, init="spectral", random_state=0).fit(A)
    # the two blocks are the dense block and the rest
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(blk, m.labels_) > 0.7


def _modularity_by_hand(A, labels):
    """Newman's Q = 1/2m sum_ij (A_ij - d_i d_j / 2m) [c_i = c_j], dense."""
    Ad = A.toarray()
    deg = Ad.sum(1)
    two_m = deg.sum()
    same = labels[:, None] == labels[None, :]
    return float(((Ad - np.outer(deg, deg) / two_m) * same).sum() / two_m)


def test_modularity_matches_the_dense_definition():
    A, lab = _sbm(n=90, k=3, p_in=0.3, p_out=0.05, seed=4)
    rng = np.random.default_rng(0)
    for labels in (lab, rng.integers(0, 4, 90), np.zeros(90, int)):
        k = int(labels.max()) + 1
        assert block_model.modularity(A, labels, k) == pytest.approx(
            _modularity_by_hand(A, labels), abs=1e-12)


def test_without_a_clear_gap_k_is_the_modularity_knee():
    """A random graph has no eigengap worth the name: k is the smallest k whose spectral
    partition reaches KNEE_SHARE of the best modularity (recomputed here with dense
    eigenvectors and the dense modularity), and the sentence says so."""
    from sklearn.cluster import KMeans
    rng = np.random.default_rng(5)
    n = 300
    up = np.triu(rng.random((n, n)) < 0.04, 1)
    A = sp.csr_matrix((up | up.T).astype(np.float64))
    k, w, text = block_model.choose_n_blocks(A)
    gaps = w[1:20] - w[2:21]
    assert gaps.max() < block_model.CLEAR_GAP * np.median(gaps)     # no clear gap
    assert "modularity knee" in text and f"k = {k} " in text
    Ad = A.toarray()
    deg = Ad.sum(1)
    deg = deg + deg.mean()
    s = 1.0 / np.sqrt(deg)
    ev, V = np.linalg.eigh(s[:, None] * Ad * s[None, :])
    V = V[:, np.argsort(-ev, kind="stable")]
    mods = []
    for kk in range(2, 21):
        E = V[:, :kk] / np.linalg.norm(V[:, :kk], axis=1)[:, None]
        lab = KMeans(n_clusters=kk, n_init=1, random_state=0).fit_predict(E)
        mods.append(_modularity_by_hand(A, lab))
    mods = np.array(mods)
    assert k == 2 + int(np.flatnonzero(mods >= block_model.KNEE_SHARE * mods.max())[0])
    m = BMGUFS(random_state=0, n_candidates=1, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m.fit(A, sp.csr_matrix((rng.random((n, 10)) < 0.3).astype(float)))
    assert m.n_blocks_ == k and m.k_source_ == "modularity"


def test_eigengap_small_graph_dense_path_matches_by_hand():
    A, _ = _sbm(n=150, k=3, p_in=0.25, p_out=0.02, seed=3)
    k, w, text = block_model.choose_n_blocks(A)
    assert k == _eigengap_by_hand(A) == 3
    assert w[0] >= w[1] >= w[2]


def test_labels_or_n_blocks_say_where_k_came_from():
    A, X, lab, _ = _planted(0)
    m = BMGUFS(random_state=0, n_candidates=1, max_iter=2).fit(A, X, lab)
    assert m.n_blocks_ == 4 and "node classes" in m.n_blocks_rule_
    assert m.k_source_ == "classes"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)         # the poor-fit warning
        m = BMGUFS(n_blocks=3, random_state=0, n_candidates=1, max_iter=2).fit(A, X)
    assert m.n_blocks_ == 3 and "given" in m.n_blocks_rule_
    assert m.k_source_ == "given"
    bm = m.block_model_
    assert BMGUFS(max_iter=2).fit(A, X, block_model=bm).k_source_ == "block model"


@pytest.mark.parametrize("density", [0.05, 0.6])
def test_h_storage_matches_brute_force(density):
    rng = np.random.default_rng(1)
    Y = sp.csr_matrix(rng.random((40, 25)) * (rng.random((40, 25)) < density))
    H = selection_problem.gram_squared(Y)
    ref = (Y.T @ Y).toarray() ** 2
    dense = isinstance(H, np.ndarray)
    assert dense == (np.count_nonzero(ref) >= selection_problem.DENSE_H_FILL * ref.size)
    np.testing.assert_allclose(H if dense else H.toarray(), ref, rtol=1e-12)


def test_dense_and_sparse_h_give_the_same_selection(monkeypatch):
    A, X, lab, _ = _planted(1)
    bm = BlockModel.from_labels(A, lab)
    monkeypatch.setattr(selection_problem, "DENSE_H_FILL", 0.0)        # always dense
    a = BMGUFS(max_iter=60).fit(A, X, block_model=bm)
    monkeypatch.setattr(selection_problem, "DENSE_H_FILL", 2.0)        # never dense
    b = BMGUFS(max_iter=60).fit(A, X, block_model=bm)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-10, atol=1e-14)
    assert np.array_equal(a.history_["nnz"], b.history_["nnz"])


def test_h_size_guard_names_the_size():
    Y = sp.csr_matrix(np.ones((5, 30)))
    with pytest.raises(ValueError, match="co-occurrence.*GiB"):
        selection_problem.gram_squared(Y, max_bytes=100)


@pytest.mark.parametrize("d", [10, 40, 70])
def test_gamma_grid_keeps_d_features_and_is_the_largest_such_gamma(d):
    A, X, lab, _ = _planted(0)
    bm = BlockModel.from_labels(A, lab)
    m = BMGUFS(gamma=3.0, max_iter=80).fit_gamma_grid(A, X, d, block_model=bm)
    # brute force: one plain fit per gamma of the grid
    nnz = {g: BMGUFS(gamma=g, max_iter=80).fit(A, X, block_model=bm).n_nonzero_
           for g in selection_problem.GAMMA_GRID}
    ok = [g for g in selection_problem.GAMMA_GRID if nnz[g] >= d]
    assert m.gamma_ == max(ok)
    assert m.n_nonzero_ >= d
    assert m.gamma_path_ == [(g, nnz[g]) for g in selection_problem.GAMMA_GRID if g >= m.gamma_]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # no "nnz(r) < d" warning
        assert m.select(d).size == d
    same = BMGUFS(gamma=m.gamma_, max_iter=80).fit(A, X, block_model=bm)
    np.testing.assert_array_equal(same.scores_, m.scores_)


def test_gammas_from_walks_down_the_grid():
    assert selection_problem.gammas_from(2.0) == [2.0, 1.0, 0.5, 0.25, 0.0]
    assert selection_problem.gammas_from(0.7) == [0.7, 0.5, 0.25, 0.0]


def test_fit_quality_against_permutations_by_hand_and_the_warning():
    # a sparse planted graph: every RRE >= 0.95 -> the warning, with the lift over chance
    A, X, lab, _ = _planted(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = BMGUFS(random_state=0, n_candidates=3, max_iter=3).fit(A, X, lab)
    q = m.fit_quality_
    assert q["best_rre"] == pytest.approx(min(c.rre_ for c in m.candidates_))
    rng = np.random.default_rng(0)
    null = np.mean([block_image(A.tocsr().astype(float), rng.permutation(
        m.candidates_[int(np.argmin(m.candidate_rre_))].labels_), 4)[2] for _ in range(5)])
    assert q["null_rre"] == pytest.approx(null)
    assert q["lift"] == pytest.approx((1 - q["best_rre"] ** 2) / (1 - null ** 2))
    if q["best_rre"] >= block_model.POOR_FIT_RRE:
        assert m.fit_warning_ and "fits poorly" in m.fit_warning_
        assert any("fits poorly" in str(w.message) for w in caught)
    # a dense two-block graph is reconstructed well: no warning
    A2, lab2 = _sbm(n=60, k=2, p_in=0.9, p_out=0.05, seed=0)
    X2 = sp.csr_matrix(np.eye(60)[:, :10] + 0.1)
    m2 = BMGUFS(random_state=0, n_candidates=2, max_iter=3).fit(A2, X2, lab2)
    assert m2.fit_quality_["best_rre"] < block_model.POOR_FIT_RRE
    assert m2.fit_warning_ is None


def test_new_attributes_survive_an_artifact_round_trip(tmp_path):
    from featagg_core.artifacts.store import load_artifact, save_artifact
    A, X, lab, _ = _planted(0)
    m = BMGUFS(random_state=0, n_candidates=2, max_iter=20, gamma=3.0).fit_gamma_grid(
        A, X, 30)
    path = tmp_path / "m.fgz"
    save_artifact(m, path)
    back = load_artifact(path)
    assert back.n_blocks_ == m.n_blocks_ and back.n_blocks_rule_ == m.n_blocks_rule_
    assert back.k_source_ == m.k_source_ == "eigengap"
    assert back.gamma_ == m.gamma_ and back.gamma_path_ == m.gamma_path_
    assert back.fit_quality_ == pytest.approx(m.fit_quality_)
    np.testing.assert_array_equal(back.select(30), m.select(30))
