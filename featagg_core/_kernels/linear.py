"""numba kernels: L2-regularised squared-hinge linear SVM by dual coordinate descent.

Hsieh, Chang, Lin, Keerthi, Sundararajan, "A Dual Coordinate Descent Method for
Large-scale Linear SVM", ICML 2008 (Algorithm 1 with the shrinking of Section 3.2),
as liblinear's ``solve_l2r_l1l2_svc`` does it for ``L2R_L2LOSS_SVC_DUAL``:

    min_a  0.5 a^T (Q + D) a - e^T a,   a >= 0,   Q_ij = y_i y_j x_i^T x_j,  D_ii = 1 / (2C)

whose primal is ``0.5 ||w||^2 + C sum_i max(0, 1 - y_i w^T x_i)^2`` with ``w = sum a_i y_i x_i``.
The bias is an extra feature of constant value ``bias`` (regularised, as in liblinear).

The squared-hinge solver trains k labels of the same rows at once
(:func:`l2svc_dual_cd_block`, what a tree node's children need); :func:`l2svc_dual_cd` is
its one-label form. Random permutations come from a tiny xorshift64* generator seeded per
problem (:mod:`featagg_core._kernels._common`), so a problem's result never depends on
which thread solved it or in what order.
"""
import math

import numpy as np
from numba import njit

from featagg_core._kernels._common import minstd_next as next_state  # noqa: F401  (old names, kept)
from featagg_core._kernels._common import minstd_seed as seed_state  # noqa: F401
from featagg_core._kernels._common import xorshift64s_next, xorshift64s_seed
from featagg_core._kernels.stopflag import stop_requested


@njit(cache=True, nogil=True)
def _decision(indptr, indices, data, i, w, n_cols, bias):
    """``w^T x_i + w[n_cols] * bias`` for row i of a csr matrix (the bias weight first, then
    the row's entries in stored order: the order of summation the solvers rely on)."""
    wx = w[n_cols] * bias
    for p in range(indptr[i], indptr[i + 1]):
        wx += w[indices[p]] * data[p]
    return wx


@njit(cache=True, nogil=True)
def _half_sq_norm(w):
    """``0.5 ||w||^2``, summed in index order."""
    obj = 0.0
    for j in range(w.shape[0]):
        obj += 0.5 * w[j] * w[j]
    return obj


@njit(cache=True)
def shuffle_prefix(index, n, state):
    """Fisher-Yates shuffle of ``index[:n]`` driven by xorshift64* (uint64 ``state``,
    non-zero); bounded draws by multiply-shift (no division). Returns the new state."""
    for j in range(n - 1, 0, -1):
        state, r = xorshift64s_next(state)
        k = np.int64((r * np.uint64(j + 1)) >> np.uint64(32))
        t = index[j]
        index[j] = index[k]
        index[k] = t
    return state


@njit(cache=True, nogil=True)
def l2svc_dual_cd_block(indptr, indices, data, Y, n_cols, C, eps, max_iter, bias, seed,
                        stop):
    """Train ``k`` squared-hinge linear SVMs on the same csr matrix (rows = training points):
    :func:`l2svc_dual_cd_block_warm` from the zero dual point (``alpha = 0``, ``w = 0``),
    liblinear's start. Returns ``(Wt, n_iter)`` (see there)."""
    Wt, n_iter, _ = l2svc_dual_cd_block_warm(indptr, indices, data, Y, n_cols, C, eps,
                                             max_iter, bias, seed, stop,
                                             np.zeros((0, 0), data.dtype))
    return Wt, n_iter


@njit(cache=True, nogil=True)
def _add_row_times(Wt, indptr, indices, data, i, coef, bias, n_cols, k):
    """``Wt[:, j] += coef[j] * [x_i, bias]`` for the k labels: row i of the CSR matrix
    (and its bias column ``n_cols``) scaled per label and added to the weights -- the
    solver's update after a step, and the warm start's rebuilding of w from the duals."""
    for p in range(indptr[i], indptr[i + 1]):
        f = indices[p]
        x = data[p]
        for j in range(k):
            Wt[f, j] += coef[j] * x
    for j in range(k):
        Wt[n_cols, j] += coef[j] * bias


@njit(cache=True, nogil=True)
def l2svc_dual_cd_block_warm(indptr, indices, data, Y, n_cols, C, eps, max_iter, bias,
                             seed, stop, alpha0):
    """Train ``k`` squared-hinge linear SVMs on the same csr matrix (rows = training points),
    starting from the dual point ``alpha0`` (warm start) or from zero.

    The k problems share their training matrix (the rows reaching one tree node), so each
    visit of a row serves all of them: its k decision values come from one pass over the
    row's non-zeros against a feature-major weight block ``Wt[f, 0:k]`` (k contiguous
    floats per feature, which the compiler vectorises), and one more pass adds the k dual
    steps. Per-row work is O(nnz_i * k) in vector operations instead of k scalar
    gather/scatter passes (benchmarks/results/xmlc_notes.md, *Block solver*).

    Each label is solved as Algorithm 1 of Hsieh et al. with liblinear's shrinking and
    stopping rule, on its own: its own dual variables, projected-gradient spread, shrunk
    set and convergence (a converged label takes no more steps). Unlike liblinear, which
    reorders its active prefix, every pass visits all rows in a fresh random order (one
    xorshift64* stream from ``seed``, the same for every label) and skips the rows a label
    has shrunk. So a label's iterates depend on its own problem and ``seed`` only, never on
    which other labels share the block: any grouping of a node's labels into blocks (one
    machine's batches, the Dask twin's smaller pieces) gives bit-identical weights.
    Scratch: the (n_cols + 1) x k weights and 6 bytes per (row, label) (dual variable,
    label, active flag) -- a root batch of 64 labels over 10^6 rows holds 384 MB.

    Parameters
    ----------
    indptr, indices, data : csr parts of the l x n_cols training matrix.
    Y : int8 array (k, l) of +1 / -1.
    C, eps, max_iter, bias : as :func:`l2svc_dual_cd`; ``max_iter`` caps the passes.
    seed : integer seed of the visiting order (the node's: shared by its labels).
    stop : one-element uint8 array polled before each pass and every 8,192 rows within
        one (a cancel does not wait for a whole pass over a large node): once another
        thread sets it to 1 the solver returns at once, with weights to be discarded.
    alpha0 : array (l, k) in the dtype of ``data``: the starting dual variables (negative
        entries are taken as 0, so the start is always feasible: the only constraint of
        this dual is ``alpha >= 0``), and ``w = sum_i alpha_i y_i x_i`` is rebuilt from
        them; an array with 0 rows starts from zero. The optimum does not depend on the
        start (the dual is strictly convex: ``D`` is positive), only the passes needed to
        reach ``eps`` do. KTXMLC's choice of C starts the C/2 and 2C candidates from the C
        candidate's duals (:mod:`featagg_core.xmlc.form_choice`).

    Returns
    -------
    Wt : array (n_cols + 1, k) in the dtype of ``data``; row ``n_cols`` is the bias weight.
    n_iter : int64 array (k,): passes in which each label was still being solved.
    alpha : array (l, k): the final dual variables (a warm start for another solve).
    """
    k = Y.shape[0]
    l = indptr.shape[0] - 1
    dt = data.dtype
    Wt = np.zeros((n_cols + 1, k), dt)
    n_iter = np.zeros(k, np.int64)
    if l == 0 or k == 0:
        return Wt, n_iter, np.zeros((l, k), dt)
    diag = 0.5 / C
    qd = np.empty(l, dt)
    for i in range(l):
        s = bias * bias
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * data[p]
        qd[i] = s + diag
    yt = np.empty((l, k), np.int8)        # row-major: a visit reads its row's k labels
    for j in range(k):
        for i in range(l):
            yt[i, j] = Y[j, i]
    alpha = np.zeros((l, k), dt)
    if alpha0.shape[0] > 0:
        # warm start: a feasible dual point (alpha >= 0) and the w it defines
        # (row by row, vectorised over the k labels as the solver's own updates)
        ay = np.empty(k, np.float64)
        for i in range(l):
            any_sv = False
            for j in range(k):
                a = alpha0[i, j]
                ay[j] = 0.0
                if a > 0.0:
                    alpha[i, j] = a
                    ay[j] = a * yt[i, j]
                    any_sv = True
            if not any_sv:
                continue
            _add_row_times(Wt, indptr, indices, data, i, ay, bias, n_cols, k)
    act = np.ones((l, k), np.uint8)       # row i is in label j's active (unshrunk) set
    n_act_row = np.full(l, k, np.int64)   # labels active on row i (0: skip the row)
    n_act_lab = np.full(k, l, np.int64)   # active rows of label j
    pgmax_old = np.full(k, np.inf)
    pgmin_old = np.full(k, -np.inf)
    pgmax_new = np.empty(k)
    pgmin_new = np.empty(k)
    # decision values and steps in float64, as the single solver's scalars (the weights
    # stay in the data's precision)
    wx = np.empty(k, np.float64)
    dvec = np.empty(k, np.float64)
    index = np.arange(l).astype(np.uint32)
    n_done = 0
    state = xorshift64s_seed(seed)
    it = 0
    while it < max_iter and n_done < k:
        if stop_requested(stop):
            break
        for j in range(k):
            pgmax_new[j] = -np.inf
            pgmin_new[j] = np.inf
        state = shuffle_prefix(index, l, state)
        for s in range(l):
            if (s & 8191) == 8191 and stop_requested(stop):
                return Wt, n_iter, alpha  # mid-pass: the caller discards a stopped solve
            i = index[s]
            if n_act_row[i] == 0:
                continue
            for j in range(k):
                wx[j] = Wt[n_cols, j] * bias
            for p in range(indptr[i], indptr[i + 1]):
                f = indices[p]
                x = data[p]
                for j in range(k):
                    wx[j] += Wt[f, j] * x
            moved = False
            for j in range(k):
                dvec[j] = 0.0
                if not act[i, j]:
                    continue
                yi = float(yt[i, j])
                g = yi * wx[j] - 1.0 + alpha[i, j] * diag
                pg = 0.0
                if alpha[i, j] == 0.0:
                    if g > pgmax_old[j]:
                        act[i, j] = 0     # shrunk for label j until it re-checks all rows
                        n_act_row[i] -= 1
                        n_act_lab[j] -= 1
                        continue
                    elif g < 0.0:
                        pg = g
                else:
                    pg = g
                if pg > pgmax_new[j]:
                    pgmax_new[j] = pg
                if pg < pgmin_new[j]:
                    pgmin_new[j] = pg
                if abs(pg) > 1e-12:
                    a_old = alpha[i, j]
                    a_new = a_old - g / qd[i]
                    if a_new < 0.0:
                        a_new = 0.0
                    alpha[i, j] = a_new
                    dvec[j] = (a_new - a_old) * yi
                    moved = True
            if moved:
                _add_row_times(Wt, indptr, indices, data, i, dvec, bias, n_cols, k)
        it += 1
        for j in range(k):
            if n_act_lab[j] < 0:
                continue                  # solved earlier
            n_iter[j] += 1
            if pgmax_new[j] - pgmin_new[j] <= eps:
                if n_act_lab[j] == l:
                    # solved: it leaves every row (its weights stay as they are)
                    n_done += 1
                    n_act_lab[j] = -1
                    for i in range(l):
                        act[i, j] = 0
                        n_act_row[i] -= 1
                    continue
                # converged on its shrunk set: re-check every row (liblinear's rule)
                for i in range(l):
                    if not act[i, j]:
                        act[i, j] = 1
                        n_act_row[i] += 1
                n_act_lab[j] = l
                pgmax_old[j] = np.inf
                pgmin_old[j] = -np.inf
                continue
            pgmax_old[j] = pgmax_new[j]
            pgmin_old[j] = pgmin_new[j]
            if pgmax_old[j] <= 0.0:
                pgmax_old[j] = np.inf
            if pgmin_old[j] >= 0.0:
                pgmin_old[j] = -np.inf
    return Wt, n_iter, alpha


@njit(cache=True, nogil=True)
def l2svc_dual_cd(indptr, indices, data, y, n_cols, C, eps, max_iter, bias, seed):
    """Train one squared-hinge linear SVM on a csr matrix (rows = training points):
    :func:`l2svc_dual_cd_block` with one label.

    Parameters
    ----------
    indptr, indices, data : csr parts of the l x n_cols training matrix.
    y : int8 array of +1 / -1 (length l).
    C, eps, max_iter : liblinear's C, stopping tolerance on the projected-gradient
        spread, and outer-iteration cap.
    bias : value of the constant bias feature (0 disables it).
    seed : integer seed of the permutation generator.

    Returns
    -------
    w : array of n_cols + 1 entries in the dtype of ``data`` (the last one is the bias
        weight).
    n_iter : outer iterations run.
    """
    Y = np.empty((1, y.shape[0]), np.int8)
    for i in range(y.shape[0]):
        Y[0, i] = y[i]
    Wt, n_iter = l2svc_dual_cd_block(indptr, indices, data, Y, n_cols, C, eps, max_iter,
                                     bias, seed, np.zeros(1, np.uint8))
    return Wt[:, 0].copy(), n_iter[0]


@njit(cache=True)
def l2svc_primal_objective(indptr, indices, data, y, w, C, bias):
    """``0.5 ||w||^2 + C sum max(0, 1 - y_i (w^T x_i + w_b * bias))^2`` (w includes the bias)."""
    l = indptr.shape[0] - 1
    n_cols = w.shape[0] - 1
    obj = _half_sq_norm(w)
    for i in range(l):
        wx = _decision(indptr, indices, data, i, w, n_cols, bias)
        m = 1.0 - y[i] * wx
        if m > 0.0:
            obj += C * m * m
    return obj


@njit(cache=True, nogil=True)
def lr_dual_cd(indptr, indices, data, y, n_cols, C, eps, max_iter, bias, seed, stop):
    """L2-regularised logistic regression by dual coordinate descent (Yu, Huang & Lin,
    "Dual coordinate descent methods for logistic regression and maximum entropy models",
    MLJ 2011; liblinear's ``solve_l2r_lr_dual``, L2R_LR_DUAL, as napkinXC trains its nodes):

        min_a  0.5 a^T Q a + sum_i a_i log a_i + (C - a_i) log(C - a_i),  0 < a_i < C

    whose primal is ``0.5 ||w||^2 + C sum_i log(1 + exp(-y_i w^T x_i))``; each coordinate
    is a 1-D Newton problem solved to a tolerance that tightens as the outer passes
    converge. The bias is an extra feature of value ``bias``. ``stop``: a one-element
    uint8 array polled once per pass (1: return the weights of the last pass). Returns
    ``(w, n_iter)``.
    """
    l = indptr.shape[0] - 1
    w = np.zeros(n_cols + 1, data.dtype)
    if l == 0:
        return w, 0
    xtx = np.empty(l, np.float64)
    alpha = np.empty(2 * l, np.float64)
    a0 = min(0.001 * C, 1e-8)
    for i in range(l):
        s = bias * bias
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * data[p]
        xtx[i] = s
        alpha[2 * i] = a0
        alpha[2 * i + 1] = C - a0
        d = y[i] * a0
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += d * data[p]
        w[n_cols] += d * bias
    index = np.arange(l).astype(np.uint32)
    state = xorshift64s_seed(seed)
    innereps = 1e-2
    innereps_min = min(1e-8, eps)
    max_inner = 100
    it = 0
    while it < max_iter:
        if stop_requested(stop):
            break
        state = shuffle_prefix(index, l, state)
        newton_iter = 0
        gmax = 0.0
        for s_ in range(l):
            i = index[s_]
            yi = float(y[i])
            wx = _decision(indptr, indices, data, i, w, n_cols, bias)
            b = yi * wx
            a = xtx[i]
            ind1 = 2 * i
            ind2 = 2 * i + 1
            sign = 1.0
            if 0.5 * a * (alpha[ind2] - alpha[ind1]) + b < 0:
                ind1 = 2 * i + 1
                ind2 = 2 * i
                sign = -1.0
            alpha_old = alpha[ind1]
            z = alpha_old
            if C - z < 0.5 * C:
                z = 0.1 * z
            gp = a * (z - alpha_old) + sign * b + math.log(z / (C - z))
            if abs(gp) > gmax:
                gmax = abs(gp)
            inner = 0
            while inner <= max_inner:
                if abs(gp) < innereps:
                    break
                gpp = a + C / (C - z) / z
                tmpz = z - gp / gpp
                if tmpz <= 0:
                    z *= 0.1
                else:
                    z = tmpz
                gp = a * (z - alpha_old) + sign * b + math.log(z / (C - z))
                newton_iter += 1
                inner += 1
            if inner > 0:
                alpha[ind1] = z
                alpha[ind2] = C - z
                d = sign * (z - alpha_old) * yi
                for p in range(indptr[i], indptr[i + 1]):
                    w[indices[p]] += d * data[p]
                w[n_cols] += d * bias
        it += 1
        if gmax < eps:
            break
        if newton_iter <= l / 10:
            innereps = max(innereps_min, 0.1 * innereps)
    return w, it


@njit(cache=True)
def lr_primal_objective(indptr, indices, data, y, w, C, bias):
    """``0.5 ||w||^2 + C sum log(1 + exp(-y_i (w^T x_i + w_b * bias)))``."""
    l = indptr.shape[0] - 1
    n_cols = w.shape[0] - 1
    obj = _half_sq_norm(w)
    for i in range(l):
        wx = _decision(indptr, indices, data, i, w, n_cols, bias)
        m = -y[i] * wx
        obj += C * (math.log1p(math.exp(m)) if m < 30 else m)
    return obj
