"""The squared-hinge dual coordinate descent solver against independent optimisers."""
import numpy as np
import pytest
import scipy.optimize as opt
import scipy.sparse as sp
from sklearn.svm import LinearSVC

from featagg_core._kernels.linear import l2svc_dual_cd, l2svc_primal_objective


def _problem(n, d, density, seed, sep=1.0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.normal(size=k))
    w_true = rng.normal(size=d)
    y = np.where(X @ w_true + 0.3 * rng.normal(size=n) > sep * 0.1, 1, -1).astype(np.int8)
    return X, y


def _solve(X, y, C, eps=1e-8, max_iter=20000, bias=1.0, seed=3):
    X = sp.csr_matrix(X, dtype=np.float64)
    w, it = l2svc_dual_cd(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
                          y, X.shape[1], C, eps, max_iter, bias, seed)
    return w, it


def _objective(X, y, w, C, bias=1.0):
    X = sp.csr_matrix(X, dtype=np.float64)
    return l2svc_primal_objective(X.indptr.astype(np.int64), X.indices.astype(np.int64),
                                  X.data, y, w, C, bias)


def _objective_numpy(X, y, w, C, bias=1.0):
    m = 1 - y * (X @ w[:-1] + w[-1] * bias)
    return 0.5 * w @ w + C * np.sum(np.maximum(0, m) ** 2)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_liblinear_via_sklearn(C, seed):
    X, y = _problem(150, 40, 0.2, seed)
    w, _ = _solve(X, y, C)
    ref = LinearSVC(loss="squared_hinge", dual=True, C=C, tol=1e-10, max_iter=200000,
                    fit_intercept=True, intercept_scaling=1.0).fit(X, y)
    w_ref = np.r_[ref.coef_.ravel(), ref.intercept_]
    f, f_ref = _objective_numpy(X, y, w, C), _objective_numpy(X, y, w_ref, C)
    assert abs(f - f_ref) <= 1e-3 * abs(f_ref)
    np.testing.assert_allclose(w, w_ref, atol=5e-3 * np.abs(w_ref).max())
    # the kernel's own objective agrees with the numpy one
    assert _objective(X, y, w, C) == pytest.approx(f, rel=1e-10)


def test_matches_lbfgs_on_the_primal():
    # the primal is differentiable (squared hinge): an independent quasi-Newton optimum
    X, y = _problem(120, 25, 0.3, 7)
    C = 2.0
    Xd = X.toarray()

    def f(w):
        m = 1 - y * (Xd @ w[:-1] + w[-1])
        h = np.maximum(0, m)
        g = w - 2 * C * np.r_[Xd.T @ (h * y), np.sum(h * y)]
        return 0.5 * w @ w + C * np.sum(h ** 2), g

    res = opt.minimize(f, np.zeros(26), jac=True, method="L-BFGS-B",
                       options=dict(gtol=1e-10, ftol=1e-14, maxiter=5000))
    w, _ = _solve(X, y, C)
    assert _objective_numpy(X, y, w, C) == pytest.approx(res.fun, rel=1e-4)
    np.testing.assert_allclose(w, res.x, atol=1e-3)


def test_default_tolerance_is_close_and_capped():
    X, y = _problem(300, 60, 0.1, 2)
    w_tight, _ = _solve(X, y, 1.0)
    w, it = _solve(X, y, 1.0, eps=0.1, max_iter=20)
    assert it <= 20
    f, f_opt = _objective_numpy(X, y, w, 1.0), _objective_numpy(X, y, w_tight, 1.0)
    assert f_opt <= f <= 1.05 * f_opt
    _, it1 = _solve(X, y, 1.0, eps=1e-12, max_iter=3)
    assert it1 == 3


def test_seed_changes_path_not_optimum_and_is_reproducible():
    X, y = _problem(200, 30, 0.2, 5)
    a, _ = _solve(X, y, 1.0, seed=1)
    b, _ = _solve(X, y, 1.0, seed=1)
    c, _ = _solve(X, y, 1.0, seed=99)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=1e-4)
    d1, _ = _solve(X, y, 1.0, eps=0.5, max_iter=2, seed=1)
    d2, _ = _solve(X, y, 1.0, eps=0.5, max_iter=2, seed=99)
    assert not np.array_equal(d1, d2)


def test_single_class_and_empty():
    X, _ = _problem(50, 10, 0.3, 3)
    y = -np.ones(50, np.int8)
    w, _ = _solve(X, y, 1.0)
    # only negatives: every decision value is negative, and for the optimum of
    # 0.5||w||^2 + C sum (1 + f_i)^2 the gradient vanishes: w = -2C sum_i (1 + f_i) x_i
    f = X @ w[:-1] + w[-1]
    assert np.all(f < 0)
    g = w + 2 * np.r_[X.T @ np.maximum(0, 1 + f), np.maximum(0, 1 + f).sum()]
    assert np.abs(g).max() < 1e-5
    e = sp.csr_matrix((0, 10))
    w0, it = _solve(e, np.zeros(0, np.int8), 1.0)
    assert it == 0 and not w0.any()


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_logistic_dual_matches_liblinear_via_sklearn(C):
    from sklearn.linear_model import LogisticRegression

    from featagg_core._kernels.linear import lr_dual_cd, lr_primal_objective

    X, y = _problem(200, 30, 0.2, 6)
    Xd = sp.csr_matrix(X, dtype=np.float64)
    parts = (Xd.indptr.astype(np.int64), Xd.indices.astype(np.int64), Xd.data)
    w, _ = lr_dual_cd(*parts, y, 30, C, 1e-8, 20000, 1.0, 3, np.zeros(1, np.uint8))
    # liblinear regularises the intercept too (intercept_scaling = the bias value)
    ref = LogisticRegression(C=C, solver="liblinear", tol=1e-12, max_iter=100000,
                             intercept_scaling=1.0).fit(X, y)
    w_ref = np.r_[ref.coef_.ravel(), ref.intercept_]
    f, f_ref = (lr_primal_objective(*parts, y, v, C, 1.0) for v in (w, w_ref))
    assert f == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(w, w_ref, atol=1e-5 * max(1.0, np.abs(w_ref).max()))


def _block_problem(n, d, k, seed):
    """k label vectors of the same rows: a few frequent, most rare (as a tree node's)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, format="csr", random_state=seed,
                  data_rvs=lambda m: rng.normal(size=m))
    Wtrue = rng.normal(size=(d, k))
    S = X @ Wtrue + 0.5 * rng.normal(size=(n, k))
    cut = np.quantile(S, 1 - np.geomspace(0.4, 0.01, k), axis=0).diagonal()
    Y = np.where(S > cut, 1, -1).T.astype(np.int8)
    return sp.csr_matrix(X, dtype=np.float64), np.ascontiguousarray(Y)


@pytest.mark.parametrize("C", [0.3, 1.0, 10.0])
def test_block_solver_solves_each_label_to_liblinears_optimum(C):
    from featagg_core._kernels.linear import l2svc_dual_cd_block

    X, Y = _block_problem(300, 40, 9, 11)
    parts = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    Wt, n_iter = l2svc_dual_cd_block(*parts, Y, 40, C, 1e-10, 20000, 1.0, 5,
                                     np.zeros(1, np.uint8))
    assert Wt.shape == (41, 9) and n_iter.shape == (9,)
    Xb = np.c_[X.toarray(), np.ones(X.shape[0])]
    for j in range(9):
        ref = LinearSVC(loss="squared_hinge", dual=True, C=C, tol=1e-10, max_iter=200000,
                        fit_intercept=True, intercept_scaling=1.0).fit(X, Y[j])
        w_ref = np.r_[ref.coef_.ravel(), ref.intercept_]
        f, f_ref = _objective_numpy(X, Y[j], Wt[:, j], C), _objective_numpy(X, Y[j], w_ref, C)
        assert f <= f_ref * (1 + 1e-6)
        np.testing.assert_allclose(Wt[:, j], w_ref, atol=1e-3 * np.abs(w_ref).max())
        # optimality on its own: the primal gradient w - 2C sum_i max(0, 1 - y_i f_i) y_i x_i
        # vanishes
        m = np.maximum(0.0, 1.0 - Y[j] * (Xb @ Wt[:, j]))
        g = Wt[:, j] - 2 * C * Xb.T @ (m * Y[j])
        assert np.abs(g).max() < 1e-5 * max(1.0, np.abs(Wt[:, j]).max())
    # labels converge after different numbers of passes: each one stops on its own
    assert len(set(n_iter.tolist())) > 1 and n_iter.max() < 20000
    # and the same problems in another order give the same optima
    Wt2, _ = l2svc_dual_cd_block(*parts, np.ascontiguousarray(Y[::-1]), 40, C, 1e-10, 20000,
                                 1.0, 5, np.zeros(1, np.uint8))
    np.testing.assert_allclose(Wt2[:, ::-1], Wt, atol=1e-6 * max(1.0, np.abs(Wt).max()))


def test_block_solver_gives_each_label_the_same_weights_in_any_grouping():
    # at the usual loose tolerance, where the iterates (not only the optimum) decide the
    # weights: all labels in one block, two blocks, or each alone -> identical bits (what
    # lets the Dask twin cut a node's batches differently from one machine)
    from featagg_core._kernels.linear import l2svc_dual_cd_block

    X, Y = _block_problem(400, 50, 7, 12)
    X = sp.csr_matrix(X, dtype=np.float32)
    parts = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)

    def solve(rows):
        return l2svc_dual_cd_block(*parts, np.ascontiguousarray(Y[rows]), 50, 1.0, 0.1, 20,
                                   1.0, 9, np.zeros(1, np.uint8))

    W_all, it_all = solve(list(range(7)))
    W_a, it_a = solve([0, 1, 2])
    W_b, it_b = solve([3, 4, 5, 6])
    assert np.array_equal(np.c_[W_a, W_b], W_all) and np.array_equal(np.r_[it_a, it_b], it_all)
    for j in range(7):
        W_j, it_j = solve([j])
        assert np.array_equal(W_j[:, 0], W_all[:, j]) and it_j[0] == it_all[j]


def test_block_solver_stops_on_the_flag_and_takes_empty_problems():
    from featagg_core._kernels.linear import l2svc_dual_cd_block

    X, Y = _block_problem(100, 20, 4, 13)
    parts = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    Wt, n_iter = l2svc_dual_cd_block(*parts, Y, 20, 1.0, 0.1, 20, 1.0, 5,
                                     np.ones(1, np.uint8))
    assert not Wt.any() and not n_iter.any()
    e = sp.csr_matrix((0, 20))
    Wt, n_iter = l2svc_dual_cd_block(e.indptr.astype(np.int64), e.indices.astype(np.int64),
                                     e.data, np.zeros((4, 0), np.int8), 20, 1.0, 0.1, 20, 1.0,
                                     5, np.zeros(1, np.uint8))
    assert Wt.shape == (21, 4) and not Wt.any() and not n_iter.any()
