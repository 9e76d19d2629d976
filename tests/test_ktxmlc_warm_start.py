"""KTXMLC's warm start (the C grid of ``form="auto"``): the block solver started from
another C's duals, the duals a node batch keeps, and a candidate fitted from them -- each
against a cold solve (the same optimum) or the dual's definition."""
import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.xmlc import form_choice as fc
from featagg_core.xmlc import tree_fitting as core
from featagg_core.xmlc.inputs import normalize_rows
from featagg_core.xmlc.ktxmlc import KTXMLC
from featagg_core.data.synthetic import make_powerlaw_multilabel

from test_linear_solver import _block_problem, _objective_numpy


@pytest.mark.parametrize("C_from,C_to", [(0.5, 1.0), (1.0, 0.5)])
def test_warm_started_block_solver_reaches_the_cold_optimum(C_from, C_to):
    """A solve started from another C's duals (scaled by C_to / C_from, as KTXMLC's C grid
    does) ends at the optimum of a solve from zero: same weights, same primal objective,
    the optimality condition of its own; and from a better start it needs fewer passes."""
    from featagg_core._kernels.linear import l2svc_dual_cd_block, l2svc_dual_cd_block_warm

    X, Y = _block_problem(300, 40, 6, 21)
    parts = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    stop = np.zeros(1, np.uint8)
    W_cold, it_cold = l2svc_dual_cd_block(*parts, Y, 40, C_to, 1e-9, 20000, 1.0, 5, stop)
    # a rough solution at C_from (5 passes), its duals scaled to C_to
    _, _, alpha = l2svc_dual_cd_block_warm(*parts, Y, 40, C_from, 0.1, 5, 1.0, 5, stop,
                                           np.zeros((0, 0)))
    assert alpha.shape == (300, 6) and (alpha >= 0).all() and (alpha > 0).any()
    W_warm, it_warm, alpha_warm = l2svc_dual_cd_block_warm(
        *parts, Y, 40, C_to, 1e-9, 20000, 1.0, 5, stop, alpha * (C_to / C_from))
    Xb = np.c_[X.toarray(), np.ones(X.shape[0])]
    for j in range(6):
        f_cold = _objective_numpy(X, Y[j], W_cold[:, j], C_to)
        f_warm = _objective_numpy(X, Y[j], W_warm[:, j], C_to)
        assert abs(f_warm - f_cold) <= 1e-7 * f_cold
        np.testing.assert_allclose(W_warm[:, j], W_cold[:, j],
                                   atol=1e-4 * np.abs(W_cold[:, j]).max())
        # the returned duals are the solution's: w = sum_i alpha_i y_i x_i (bias included)
        np.testing.assert_allclose(Xb.T @ (alpha_warm[:, j] * Y[j]), W_warm[:, j],
                                   atol=1e-8 * max(1.0, np.abs(W_warm[:, j]).max()))
    assert it_warm.sum() < it_cold.sum()


def test_warm_start_from_the_optimum_stays_there_and_clips_negative_duals():
    from featagg_core._kernels.linear import l2svc_dual_cd_block_warm

    X, Y = _block_problem(200, 30, 3, 22)
    parts = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    stop = np.zeros(1, np.uint8)
    W, _, alpha = l2svc_dual_cd_block_warm(*parts, Y, 30, 1.0, 1e-9, 20000, 1.0, 5, stop,
                                           np.zeros((0, 0)))
    # restarted at its own optimum: one pass confirms it (every label converged)
    W2, it2, _ = l2svc_dual_cd_block_warm(*parts, Y, 30, 1.0, 1e-6, 20000, 1.0, 7, stop,
                                          alpha.copy())
    assert (it2 <= 2).all()
    np.testing.assert_allclose(W2, W, atol=1e-6 * np.abs(W).max())
    # an infeasible start (alpha < 0) is projected onto alpha >= 0: the same as zero there
    neg = -np.abs(alpha) - 1.0
    W3, it3, _ = l2svc_dual_cd_block_warm(*parts, Y, 30, 1.0, 0.1, 20, 1.0, 5, stop, neg)
    W4, it4, _ = l2svc_dual_cd_block_warm(*parts, Y, 30, 1.0, 0.1, 20, 1.0, 5, stop,
                                          np.zeros_like(alpha))
    assert np.array_equal(W3, W4) and np.array_equal(it3, it4)


@pytest.fixture(scope="module")
def data():
    d = make_powerlaw_multilabel(n_samples=600, n_features=120, n_labels=40, avg_labels=3,
                                 noise=0.3, feature_clusters=2, random_state=5)
    return d.X, d.Y


def test_kept_duals_are_the_node_classifiers_duals(data):
    """keep_duals returns each child's non-zero dual variables: w = sum_i alpha_i y_i x_i
    over the node's rows (bias feature 1 included) gives back its (unpruned) weights."""
    X, Y = data
    Xn = normalize_rows(sp.csr_matrix(X, dtype=np.float32))
    Yf = sp.csr_matrix(Y, dtype=np.float32)
    tree = core.ova_tree(Yf.shape[1])
    task = core.training_tasks([tree], Yf)[0]
    solver = core.SolverSpec(0.5, 0.1, 5, 0.0, 1.0, 0, 3)   # no pruning
    res = core.train_task(Xn, Yf, sp.csc_matrix(Yf), tree, core.label_positions(tree), task,
                          solver, np.zeros(1, np.uint8), None, True)
    cnt, pos, val = res[7]
    assert cnt.shape == (task.c1 - task.c0,) and cnt.sum() == pos.size == val.size > 0
    assert (val > 0).all()
    Xb = np.c_[Xn.toarray(), np.ones(Xn.shape[0])]
    Yd = Yf.toarray()
    starts = np.r_[0, np.cumsum(cnt)]
    wstart = np.r_[0, np.cumsum(res[0])]
    for j in range(task.c1 - task.c0):
        lab = task.c0 + j - 1                   # child c of the one-vs-all tree is label c-1
        p, v = pos[starts[j]:starts[j + 1]], val[starts[j]:starts[j + 1]]
        y = np.where(Yd[p, lab] > 0, 1.0, -1.0)
        w = Xb[p].T @ (v * y)
        w_model = np.zeros(Xn.shape[1])
        w_model[res[1][wstart[j]:wstart[j + 1]]] = res[2][wstart[j]:wstart[j + 1]]
        np.testing.assert_allclose(w[:-1], w_model, atol=2e-5)
        np.testing.assert_allclose(w[-1], res[3][j], atol=2e-5)


@pytest.mark.parametrize("form", ["trees", "flat"])
def test_warm_started_candidate_equals_a_cold_fit_at_convergence(data, form):
    """A C-grid candidate as the form choice fits it (the C0 candidate's trees, its duals
    scaled to the new C), run to convergence, is the model a cold fit at that C reaches:
    the same weights to solver tolerance and the same top-5 labels."""
    X, Y = data
    params = dict(n_clusters=4, max_leaf_labels=5, random_state=1, one_vs_all="never",
                  eps=1e-6, weight_threshold=0.0, n_jobs=1)
    base = KTXMLC(form=form, C=0.5, max_iter=5, **params)
    base._fit_form(X, Y, form, 0.5, False, None, keep_duals=True)
    assert base._duals and len(base._duals) == len(core.training_tasks(base.trees_, Y))
    for C in (0.25, 1.0):
        cold = KTXMLC(form=form, C=C, max_iter=5000, **params).fit(X, Y)
        # the trees do not depend on C: the reused ones are those a fit at C grows
        assert len(cold.trees_) == len(base.trees_)
        for a, b in zip(cold.trees_, base.trees_):
            assert all(np.array_equal(a[k], b[k]) for k in a)
        warm = KTXMLC(form=form, C=C, max_iter=5000, **params)
        warm._fit_form(X, Y, form, C, False, None, trees=base.trees_,
                       warm=fc.warm_duals(base._duals, 0.5, C))
        scale = max(1.0, abs(cold.W_).max())
        assert abs(warm.W_ - cold.W_).max() < 1e-3 * scale
        np.testing.assert_allclose(warm.bias_w_, cold.bias_w_, atol=1e-3 * scale)
        S_w, S_c = warm.predict_scores(X, k=5), cold.predict_scores(X, k=5)
        top_w = np.argsort(-S_w.toarray(), axis=1, kind="stable")[:, :5]
        top_c = np.argsort(-S_c.toarray(), axis=1, kind="stable")[:, :5]
        assert (top_w == top_c).mean() > 0.99
        np.testing.assert_allclose(S_w.toarray(), S_c.toarray(), atol=1e-3)


def test_warm_duals_scale_by_the_ratio_of_the_cs():
    d = {(0, 0, 1): (np.array([2, 1]), np.array([0, 3, 1], np.int32),
                     np.array([1.0, 2.0, 4.0], np.float32))}
    out = fc.warm_duals(d, 0.5, 1.0)
    assert np.array_equal(out[(0, 0, 1)][2], [2.0, 4.0, 8.0])
    assert np.array_equal(d[(0, 0, 1)][2], [1.0, 2.0, 4.0])       # not changed in place
    assert out[(0, 0, 1)][1] is d[(0, 0, 1)][1]
