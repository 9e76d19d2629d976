"""BlockModel (ONMtF) and BMGUFS: checked against dense brute force, finite differences and
a planted attributed SBM."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score

from featagg_core.graph.block_model import BlockModel
from featagg_core.graph.bmgufs import BMGUFS, warmup
from featagg_core.graph.selection_problem import SelectionProblem
from naive import onmtf_symmetric as naive_onmtf


def _sbm(n=120, k=3, p_in=0.3, p_out=0.02, seed=0):
    rng = np.random.default_rng(seed)
    lab = rng.permutation(np.arange(n) % k)
    P = np.where(lab[:, None] == lab[None, :], p_in, p_out)
    up = np.triu(rng.random((n, n)) < P, 1)
    return sp.csr_matrix((up | up.T).astype(np.float64)), lab


def _planted(seed, n=240, k=4, n_inf=12, n_noise=60):
    """Attributed SBM: features 0..n_inf-1 follow the blocks (feature j is frequent in block
    j % k), the rest are noise with the same overall frequency."""
    rng = np.random.default_rng(seed)
    A, lab = _sbm(n, k, 0.15, 0.01, seed)
    fb = np.arange(n_inf) % k
    p_inf = np.where(lab[:, None] == fb[None, :], 0.35, 0.03)
    p_noise = (0.35 + (k - 1) * 0.03) / k
    Xi = rng.random((n, n_inf)) < p_inf
    Xn = rng.random((n, n_noise)) < p_noise
    perm = rng.permutation(n_inf + n_noise)          # informative features scattered
    X = np.hstack([Xi, Xn]).astype(np.float64)[:, perm]
    informative = np.flatnonzero(perm < n_inf)
    return A, sp.csr_matrix(X), lab, informative


# ---------------------------------------------------------------------------
# BlockModel
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("init", ["random", "spectral"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_onmtf_objective_decreases_monotonically_and_matches_dense(init, seed):
    A, _ = _sbm(seed=seed)
    Ad = A.toarray()
    bm = BlockModel(n_blocks=3, n_iter=60, random_state=seed, init=init).fit(A)
    h = bm.objective_
    assert h.shape == (bm.n_iter_ + 1,) and 1 <= bm.n_iter_ <= 60
    assert h[-1] < h[0]
    assert np.all(bm.F_ >= 0) and np.all(bm.S_ >= 0)
    # the recorded values are the true objective: refit with fewer iterations and compare
    # with the dense ||A - F S F^T||^2; then check they never rise
    for j in sorted({1, 2, 5, bm.n_iter_ // 2, bm.n_iter_}):
        bj = BlockModel(n_blocks=3, n_iter=j, random_state=seed, init=init).fit(A)
        dense = np.linalg.norm(Ad - bj.F_ @ bj.S_ @ bj.F_.T) ** 2
        assert h[bj.n_iter_] == pytest.approx(dense, rel=1e-9)
    assert np.all(np.diff(h) <= 0), np.diff(h).max()
    # independently: Ding et al.'s updates in dense numpy from the same start (n_iter=0)
    # give the same history, F and S, and the fit stopped early only where the next plain
    # update really raises ||A - F S F^T||^2
    b0 = BlockModel(n_blocks=3, n_iter=0, random_state=seed, init=init).fit(A)
    ref_h, ref_F, ref_S = naive_onmtf(Ad, b0.F_, b0.S_, bm.n_iter_)
    np.testing.assert_allclose(h, ref_h, rtol=1e-7)
    np.testing.assert_allclose(bm.F_, ref_F, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(bm.S_, ref_S, rtol=1e-6, atol=1e-12)
    if bm.n_iter_ < bm.n_iter:
        next_h = naive_onmtf(Ad, ref_F, ref_S, 1)[0]
        assert next_h[1] > next_h[0]


def test_onmtf_runs_all_iterations_from_random_starts():
    # from a random start the plain objective keeps falling for the paper's 100 iterations
    A, _ = _sbm(n=200, k=4, p_in=0.15, p_out=0.02, seed=5)
    for seed in range(3):
        bm = BlockModel(n_blocks=4, n_iter=100, random_state=seed).fit(A)
        assert bm.n_iter_ == 100
        assert np.all(np.diff(bm.objective_) <= 0)


def test_binarisation_is_a_partition_and_M_rre_match_brute_force():
    A, _ = _sbm(n=90, k=3, seed=4)
    bm = BlockModel(n_blocks=3, n_iter=50, random_state=0).fit(A)
    n = A.shape[0]
    assert bm.labels_.shape == (n,)
    assert bm.labels_.min() >= 0 and bm.labels_.max() < 3
    F = np.zeros((n, 3))
    F[np.arange(n), bm.labels_] = 1
    assert np.all(F.sum(1) == 1)                      # every node in exactly one block
    assert np.array_equal(bm.labels_, np.argmax(bm.F_, axis=1))
    D = F.T @ F
    Dp = np.linalg.pinv(D)
    M = Dp @ F.T @ A.toarray() @ F @ Dp
    np.testing.assert_allclose(bm.M_, M, rtol=1e-12, atol=1e-14)
    rre = np.linalg.norm(A.toarray() - F @ M @ F.T) / np.linalg.norm(A.toarray())
    assert bm.rre_ == pytest.approx(rre, rel=1e-10)
    np.testing.assert_array_equal(bm.block_sizes_, np.diag(D))


def test_rre_is_zero_on_a_perfect_block_graph():
    rng = np.random.default_rng(0)
    n, k = 60, 3
    lab = rng.permutation(np.arange(n) % k)
    M0 = np.array([[1.0, 0.0, 0.3], [0.0, 0.8, 0.0], [0.3, 0.0, 0.5]])
    F = np.eye(k)[lab]
    A = sp.csr_matrix(F @ M0 @ F.T)                   # exact block graph (with self-loops)
    exact = BlockModel.from_labels(A, lab)
    assert exact.rre_ == pytest.approx(0.0, abs=1e-7)
    np.testing.assert_allclose(exact.M_, M0, atol=1e-12)
    model = BMGUFS(n_blocks=k, n_candidates=4)
    cands = model.fit_block_models(A)
    best = min(cands, key=lambda b: b.rre_)
    assert best.rre_ < 1e-6
    assert adjusted_rand_score(lab, best.labels_) == pytest.approx(1.0)
    # a wrong partition is not perfect
    wrong = BlockModel.from_labels(A, np.roll(lab, 1))
    assert wrong.rre_ > 0.1


def test_blockmodel_recovers_a_clear_sbm():
    A, lab = _sbm(n=150, k=3, p_in=0.3, p_out=0.02, seed=3)
    cands = BMGUFS(n_blocks=3, n_candidates=3).fit_block_models(A)
    best = min(cands, key=lambda b: b.rre_)
    assert adjusted_rand_score(lab, best.labels_) > 0.9


# ---------------------------------------------------------------------------
# the selection objective
# ---------------------------------------------------------------------------
def _problem(seed=0, n=40, f=15, k=3):
    rng = np.random.default_rng(seed)
    A, lab = _sbm(n, k, 0.5, 0.05, seed)
    Y = rng.random((n, f)) * (rng.random((n, f)) < 0.5)
    Y[:, 0] = 0.0
    Y[0, 0] = 2.0                                      # a rare feature
    bm = BlockModel(n_blocks=k, n_iter=30, random_state=seed).fit(A)
    return Y, bm, SelectionProblem(sp.csr_matrix(Y), bm.labels_, bm.M_, 1e-6)


def _dense_losses(Y, bm, r, delta=1e-6):
    n, k = Y.shape[0], bm.M_.shape[0]
    F = np.eye(k)[bm.labels_]
    Dp = np.linalg.pinv(F.T @ F)
    R = np.diag(r)
    G = Y @ R @ Y.T
    Yb = F @ Dp @ F.T @ Y
    Lb = np.linalg.norm(G - Yb @ R @ Yb.T) ** 2 / np.linalg.norm(G) ** 2
    Db = Dp @ F.T @ Y
    T = Db @ R @ Db.T + delta
    Q = T / T.sum(1, keepdims=True)
    P = (bm.M_ + delta) / (bm.M_ + delta).sum(1, keepdims=True)
    return Lb, float(np.sum(P * np.log(P / Q)))


@pytest.mark.parametrize("seed", [0, 1])
def test_losses_match_the_dense_definitions(seed):
    Y, bm, prob = _problem(seed)
    rng = np.random.default_rng(10 + seed)
    r = rng.random(Y.shape[1])
    r[[2, 5]] = 0.0
    r /= np.linalg.norm(r)
    Lb, Lm, _, _, _ = prob.losses(r)
    Lb_d, Lm_d = _dense_losses(Y, bm, r)
    assert Lb == pytest.approx(Lb_d, rel=1e-9)
    assert Lm == pytest.approx(Lm_d, rel=1e-9)
    H = prob.H if isinstance(prob.H, np.ndarray) else prob.H.toarray()
    np.testing.assert_allclose(H, (Y.T @ Y) ** 2, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_match_finite_differences(seed):
    Y, bm, prob = _problem(seed)
    f = Y.shape[1]
    rng = np.random.default_rng(20 + seed)
    r = rng.random(f) + 0.05
    r[3] = 0.0                       # gradient at a zero weight (inactive feature) too
    r /= np.linalg.norm(r)
    _, _, gLb, gLm, _ = prob.losses(r, np.arange(f))
    h = 1e-6
    fd_b, fd_m = np.zeros(f), np.zeros(f)
    for j in range(f):
        e = np.zeros(f)
        e[j] = h
        up = prob.losses(r + e, np.arange(f), grad=False)
        dn = prob.losses(r - e, np.arange(f), grad=False)
        fd_b[j] = (up[0] - dn[0]) / (2 * h)
        fd_m[j] = (up[1] - dn[1]) / (2 * h)
    np.testing.assert_allclose(gLb, fd_b, rtol=1e-5, atol=1e-7 * np.abs(fd_b).max())
    np.testing.assert_allclose(gLm, fd_m, rtol=1e-5, atol=1e-7 * np.abs(fd_m).max())
    # and the active-set mat-vec gives the same gradient when r is sparse
    _, _, gLb2, _, _ = prob.losses(r)
    np.testing.assert_allclose(gLb2, gLb, rtol=1e-12)


def test_one_projected_gradient_step_by_hand():
    Y, bm, _ = _problem(0)
    A, _ = _sbm(40, 3, 0.5, 0.05, 0)
    model = BMGUFS(n_blocks=3, max_iter=1, beta_bar=0.3, gamma=1.5).fit(
        A, Y, block_model=bm)
    f = Y.shape[1]
    prob = SelectionProblem(sp.csr_matrix(Y), bm.labels_, bm.M_, 1e-6)
    r0 = np.full(f, 1 / np.sqrt(f))
    _, _, gb, gm, _ = prob.losses(r0)
    g = 0.7 * gb / np.linalg.norm(gb) + 0.3 * gm / np.linalg.norm(gm) + 1.5 / np.sqrt(f)
    r1 = np.maximum(r0 - 1e-2 * g, 0)
    np.testing.assert_allclose(model.scores_, r1 / np.linalg.norm(r1), rtol=1e-12)
    assert model.history_["L_b"].shape == (2,)
    assert model.history_["nnz"][0] == f


# ---------------------------------------------------------------------------
# BMGUFS end to end
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_features_ranked_first_and_beat_variance_and_random(seed):
    from featagg_core.graph.baselines import random_scores, rank_features, variance_score
    from featagg_core.graph.evaluation import evaluate_selection
    A, X, lab, informative = _planted(seed)
    model = BMGUFS(n_blocks=4, n_candidates=3, gamma=1.0).fit(A, X)
    assert model.n_nonzero_ >= 12
    top = model.select(12)
    precision = np.isin(top, informative).mean()
    var_top = rank_features(variance_score(X))[:12]
    rnd_top = rank_features(random_scores(X.shape[1], seed))[:12]
    assert precision >= 0.75, precision
    assert precision > np.isin(var_top, informative).mean()
    assert precision > np.isin(rnd_top, informative).mean()
    acc = {name: evaluate_selection(X, lab, idx, n_seeds=3)["acc_mean"]
           for name, idx in (("bmgufs", top), ("variance", var_top), ("random", rnd_top))}
    assert acc["bmgufs"] > acc["variance"] and acc["bmgufs"] > acc["random"], acc


def test_select_follows_the_gamma_path_to_d_features():
    """gamma = 3 leaves fewer than d weights: select(d) returns d features, the top d of
    the first gamma below it that keeps d (checked against one plain fit per gamma) —
    the same as fit_gamma_grid(d) — without a warning."""
    from featagg_core.graph.selection_problem import gammas_from
    A, X, lab, _ = _planted(0)
    model = BMGUFS(n_blocks=4, n_candidates=1, gamma=3.0).fit(A, X)
    nnz = model.n_nonzero_
    assert 0 < nnz < X.shape[1]
    d = nnz + 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no warning on the gamma path
        idx = model.select(d)
    assert idx.size == d
    bm = model.block_model_
    plain = {g: BMGUFS(gamma=g).fit(A, X, block_model=bm).scores_ for g in gammas_from(3.0)}
    g_used = next(g for g in gammas_from(3.0) if np.count_nonzero(plain[g]) >= d)
    assert g_used < 3.0 and model.last_selection_["gamma"] == g_used
    assert model.last_selection_["how"] == "gamma path"
    np.testing.assert_array_equal(idx, np.argsort(-plain[g_used], kind="stable")[:d])
    grid = BMGUFS(n_blocks=4, n_candidates=1, gamma=3.0).fit_gamma_grid(A, X, d,
                                                                         block_model=bm)
    np.testing.assert_array_equal(grid.select(d), idx)
    assert model.gamma_ == 3.0 and model.n_nonzero_ == nnz          # the fit is unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        top = model.select(nnz)                         # enough at the fitted gamma
    np.testing.assert_array_equal(top, np.argsort(-model.scores_, kind="stable")[:nnz])
    Xs = model.transform(X, d)
    assert sp.issparse(Xs)
    np.testing.assert_array_equal(Xs.toarray(), X.toarray()[:, idx])


def test_select_fills_by_score_and_warns_at_the_end_of_the_path():
    """Only gamma = 5 allowed (a one-value path): select(d) warns, returns d features, the
    non-zero weights first in weight order, then the zero-weight ones by how long they
    held a non-zero weight (replayed here with max_iter = t for every t), then index."""
    from featagg_core.graph.bmgufs import SelectionFilledWarning
    A, X, lab, _ = _planted(0)
    bm = BlockModel.from_labels(A, lab)
    T = 60
    m = BMGUFS(gamma=5.0, max_iter=T).fit_gamma_grid(A, X, X.shape[1], gammas=[5.0],
                                                    block_model=bm)
    nnz = m.n_nonzero_
    assert 0 < nnz < X.shape[1] - 10
    d = nnz + 10
    with pytest.warns(SelectionFilledWarning, match=r"nnz\(r\) < d"):
        idx = m.select(d)
    assert idx.size == d and m.last_selection_["filled"] == 10
    np.testing.assert_array_equal(idx[:nnz], np.argsort(-m.scores_, kind="stable")[:nnz])
    # by hand: the last t after which each weight was still non-zero
    held = np.zeros(X.shape[1], dtype=np.int64)
    for t in range(1, T + 1):
        r_t = BMGUFS(gamma=5.0, max_iter=t).fit(A, X, block_model=bm).scores_
        held[r_t > 0] = t
    rest = np.flatnonzero(m.scores_ == 0)
    want = rest[np.lexsort((rest, -held[rest]))][:10]
    assert len(set(held[want])) > 1                      # the order is not just the index
    np.testing.assert_array_equal(idx[nnz:], want)
    with pytest.raises(ValueError, match="only"):
        m.select(d, strict=True)
    with pytest.warns(SelectionFilledWarning, match="only 72 features"):
        assert m.select(500).size == X.shape[1]


def test_select_on_a_loaded_artifact_fills_and_warns(tmp_path):
    """An artifact keeps no training features: past nnz(r) it fills (and says why)."""
    from featagg_core.artifacts.store import load_artifact, save_artifact
    from featagg_core.graph.bmgufs import SelectionFilledWarning
    A, X, lab, _ = _planted(0)
    m = BMGUFS(n_blocks=4, n_candidates=1, gamma=3.0).fit(A, X)
    save_artifact(m, tmp_path / "m.fgz")
    back = load_artifact(tmp_path / "m.fgz")
    nnz = back.n_nonzero_
    with pytest.warns(SelectionFilledWarning, match="artifact"):
        idx = back.select(nnz + 3)
    assert idx.size == nnz + 3
    assert set(idx[:nnz]) == set(np.flatnonzero(back.scores_))
    np.testing.assert_array_equal(back.select(nnz), m.select(nnz))


def test_history_candidates_and_progress():
    A, X, lab, _ = _planted(1)
    calls = []
    model = BMGUFS(n_candidates=3, max_iter=20).fit(
        A, X, lab, progress=lambda stage, frac, msg: calls.append((stage, frac)))
    assert model.block_model_.M_.shape == (4, 4)          # k from the classes in y
    assert len(model.candidates_) == 3
    assert model.candidate_index_ == int(np.argmin([c.rre_ for c in model.candidates_]))
    np.testing.assert_allclose(model.candidate_rre_, [c.rre_ for c in model.candidates_])
    for key in ("L_b", "L_m", "nnz"):
        assert model.history_[key].shape == (21,)
    assert model.history_["nnz"][0] == X.shape[1]
    assert model.history_["nnz"][-1] == model.n_nonzero_
    assert np.linalg.norm(model.scores_) == pytest.approx(1.0)
    assert np.all(model.scores_ >= 0)
    assert [c for c in calls if c[0] == "block models"][-1][1] == pytest.approx(1.0)
    assert [c for c in calls if c[0] == "selection"][-1][1] == pytest.approx(1.0)
    np.testing.assert_allclose(model.induced_similarity_.sum(1), 1.0)
    # choosing another candidate reuses the fitted ones
    other = BMGUFS(n_candidates=3, max_iter=20, candidate=2).fit(
        A, X, lab, candidates=model.candidates_)
    assert other.block_model_ is model.candidates_[2]


def test_validation_messages():
    A, X, lab, _ = _planted(0)
    with pytest.raises(ValueError, match="beta_bar"):
        BMGUFS(n_blocks=2, beta_bar=1.5).fit(A, X)
    with pytest.raises(ValueError, match="gamma"):
        BMGUFS(n_blocks=2, gamma=-1).fit(A, X)
    with pytest.raises(ValueError, match="symmetric"):
        BMGUFS(n_blocks=2).fit(sp.triu(A).tocsr(), X)
    with pytest.raises(ValueError, match="non-negative"):
        BMGUFS(n_blocks=2).fit(A, -X)
    with pytest.raises(ValueError, match="rows"):
        BMGUFS(n_blocks=2).fit(A, X[:-1])
    with pytest.raises(ValueError, match="candidate"):
        BMGUFS(n_blocks=2, n_candidates=2, candidate=5).fit(A, X)
    with pytest.raises(ValueError, match="init"):
        BlockModel(2, init="kmeans").fit(A)
    with pytest.raises(NotFittedError):
        BMGUFS(n_blocks=2).select(3)
    m = BMGUFS(n_blocks=3, gamma=0.5)
    c = clone(m)
    assert c.get_params() == m.get_params()


def test_artifact_round_trip(tmp_path):
    from featagg_core.artifacts.store import load_artifact, save_artifact
    A, X, lab, _ = _planted(2)
    model = BMGUFS(n_blocks=4, n_candidates=2, max_iter=30).fit(A, X)
    path = tmp_path / "bmgufs.fgz"
    save_artifact(model, path)
    back = load_artifact(path)
    np.testing.assert_array_equal(back.scores_, model.scores_)
    np.testing.assert_array_equal(back.select(5), model.select(5))
    np.testing.assert_array_equal(back.block_model_.labels_, model.block_model_.labels_)
    np.testing.assert_array_equal(back.history_["L_m"], model.history_["L_m"])
    assert back.candidate_index_ == model.candidate_index_
    assert back.get_params() == model.get_params()
    bm = model.candidates_[1]
    save_artifact(bm, tmp_path / "bm.fgz")
    bm2 = load_artifact(tmp_path / "bm.fgz")
    assert bm2.rre_ == bm.rre_
    np.testing.assert_array_equal(bm2.M_, bm.M_)


def test_warmup_compiles_the_bmgufs_kernels():
    """``warmup()`` exists so a first BMGUFS fit does not wait for compilation: afterwards
    every kernel of a fit (ONMtF, the block sums, H in both storages, the selection's
    products) and the baselines' ``quad_diag_csr`` hold a compiled signature."""
    from featagg_core._kernels import bmgufs as k
    warmup()
    for kernel in (k.onmtf_symmetric, k.block_edge_sums, k.block_feature_sums,
                   k.gram_squared_counts, k.gram_squared_fill, k.gram_squared_dense,
                   k.sym_matvec_active, k.dense_sym_matvec_active, k.weighted_gram,
                   k.quad_diag, k.quad_diag_csr):
        assert kernel.signatures, kernel.py_func.__name__
