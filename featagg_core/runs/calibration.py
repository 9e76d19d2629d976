"""This machine's speed, measured: small versions of the kernels that dominate each method,
timed in CPU seconds of the calling thread (:func:`calibrate`, the rates the cost model of
:mod:`featagg_core.runs.estimate` divides work units by; ``measure_speed`` runs it in a thread
limited to a job's threads), and :func:`warmup_kernels`, which compiles the kernels only the
calibration calls.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict

import numpy as np
import scipy.sparse as sp


def _timed(fn: Callable[[], float], min_cpu: float = 0.02, max_rep: int = 20):
    """(units per CPU second, wall seconds, CPU seconds) of ``fn`` (returns its units),
    repeated until ``min_cpu`` CPU seconds of this thread have been spent."""
    units = 0.0
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    for _ in range(max_rep):
        units += fn()
        if time.thread_time() - cpu0 >= min_cpu:
            break
    cpu = max(time.thread_time() - cpu0, 1e-6)
    wall = max(time.perf_counter() - wall0, 1e-6)
    return units / cpu, wall, cpu


def _rand_csr(n: int, m: int, per_row: int, rng, symmetric: bool = False) -> sp.csr_matrix:
    """A quick random csr matrix with ``per_row`` entries per row (scipy's sp.random is
    much slower to build)."""
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, m, n * per_row)
    M = sp.csr_matrix((np.ones(n * per_row, np.float32), (rows, cols)), shape=(n, m))
    if symmetric:
        M = ((M + M.T) > 0).astype(np.float64).tocsr()
    M.sum_duplicates()
    M.sort_indices()
    return M


def _xt_y_args(X: sp.csr_matrix, Y: sp.csr_matrix, stop: np.ndarray) -> tuple:
    """The arguments of ``_kernels.defrag.xt_y`` as the calibration passes them (one
    builder for :func:`calibrate` and :func:`warmup_kernels`, so both compile the same
    signature)."""
    Xt = X.T.tocsr()
    return (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int32),
            Xt.data.astype(np.float32, copy=False), Y.indptr.astype(np.int64),
            Y.indices.astype(np.int32), Y.data.astype(np.float32), Y.shape[1], 1, stop)


def warmup_kernels() -> None:
    """Compile (or load from numba's cache) the kernels only the calibration calls.

    The plain ``Xᵀ Y`` kernel ``_kernels.defrag.xt_y`` times the sparse product rate but no
    fit uses it any more (DEFRAG builds its representation with the exact product), so no
    fit's ``warmup()`` compiles it. Without this, the server's first calibration (run by
    its kernel loader once every group is ready) compiled it in the server process, under
    numba's lock, stalling every session's rerun (measured in benchmarks/results/cold_start.md).
    """
    from featagg_core._kernels import defrag as kd
    X = _rand_csr(6, 5, 2, np.random.default_rng(0))
    Y = _rand_csr(6, 3, 1, np.random.default_rng(1))
    kd.xt_y(*_xt_y_args(X, Y, np.zeros(1, np.uint8)))


def calibrate() -> Dict[str, float]:
    """Time each kernel family once, in the calling thread (``measure_speed`` runs it in a
    thread limited to a job's threads).

    Returns
    -------
    dict of str to float
        Work units per CPU second of one thread, per kernel family, and ``wall_factor``
        (wall / CPU seconds during the calibration, the machine's current load).
    """
    from sklearn.cluster import KMeans
    from sklearn.cluster._kmeans import _mini_batch_step

    from featagg_core._kernels import bmgufs as kb
    from featagg_core._kernels import defrag as kd
    from featagg_core._kernels import vocab as kv
    from featagg_core._kernels.ktxmlc import train_children
    from featagg_core.xmlc.tree_fitting import CALIB_BINS, CALIB_Z
    from featagg_core.data.synthetic import make_powerlaw_multilabel

    rng = np.random.default_rng(0)
    data = make_powerlaw_multilabel(1500, 3000, 200, avg_features=25, random_state=0)
    X = data.X.tocsr()
    Y = data.Y.tocsr()
    n, d = X.shape
    stop = np.zeros(1, np.uint8)
    out: Dict[str, float] = {}
    walls, cpus = 0.0, 0.0

    # --- Xᵀ Y: units = sum_i nnz(x_i) nnz(y_i)
    args = _xt_y_args(X, Y, stop)
    cross = float(np.dot(np.diff(X.indptr), np.diff(Y.indptr)))
    kd.xt_y(*args)

    def xty():
        kd.xt_y(*args)
        return cross
    out["sparse"], w, c = _timed(xty)
    walls, cpus = walls + w, cpus + c

    # --- DEFRAG's split of one level: units = nnz of the level x rounds
    ptr, ind, dat = kd.xt_y(*args)
    R = sp.csr_matrix((dat, ind, ptr), shape=(d, Y.shape[1]))
    rp, ri, rd, _ = kd.normalize_prune(R.indptr.astype(np.int64), R.indices.astype(np.int32),
                                       R.data.astype(np.float32), 0.0)
    starts = np.arange(0, d, d // 8, dtype=np.int64)[:8]
    sizes = np.full(8, d // 8, np.int64)
    ids = np.arange(8, dtype=np.int64)
    row_nnz = np.diff(rp)

    def split():
        order = np.arange(d, dtype=np.int64)
        it = kd.split_level(rp, ri, rd, Y.shape[1], order, starts, sizes, ids, 0, 1e-4, 50,
                            1, stop)
        work = 0.0
        for k in range(8):
            work += float(row_nnz[order[starts[k]:starts[k] + sizes[k]]].sum()) * it[k]
        return work
    split()
    out["defrag"], w, c = _timed(split)
    walls, cpus = walls + w, cpus + c

    # --- dual coordinate descent (KTXMLC / one-vs-all): units = (nnz + rows) x classifiers
    Xn = sp.csr_matrix(sp.diags(1.0 / np.sqrt(np.maximum(
        np.asarray(X.multiply(X).sum(axis=1)).ravel(), 1e-12))) @ X, dtype=np.float32)
    L = Y.shape[1]
    rows = np.arange(n, dtype=np.int64)
    pos = np.arange(L, dtype=np.int64)
    lo = np.arange(0, 32, dtype=np.int64)
    hi = lo + 1
    seeds = np.arange(1, 33, dtype=np.int64)
    # the arguments KTXMLC's fit passes (_ktxmlc_core.train_task): squared hinge, C = 1,
    # calibration histograms of 64 rows per classifier, a stop flag nobody sets
    targs = (Xn.indptr.astype(np.int64), Xn.indices, Xn.data, d, Y.indptr.astype(np.int64),
             Y.indices, pos, rows, lo, hi, seeds, 7, 1.0, 0.1, 20, 0.1, 1.0,
             CALIB_BINS, CALIB_Z, 64, 0, np.zeros(1, np.uint8))
    train_children(*targs)

    def solve():
        train_children(*targs)
        return 32.0 * (Xn.nnz + 8.0 * n)
    out["linear"], w, c = _timed(solve)
    walls, cpus = walls + w, cpus + c

    # --- mini-batch k-means step: units = batch x centres x (nnz per row + 1)
    def kmeans_rate(K, cols, b):
        Rk = _rand_csr(b, cols, 12, rng)
        C = np.full((K, cols), 0.01, np.float32)
        counts = np.ones(K, np.float32)
        unit = np.ones(b, np.float32)
        avg = Rk.nnz / Rk.shape[0]
        rs = np.random.RandomState(0)
        batch = Rk
        _mini_batch_step(batch, unit, C, C, counts, rs, random_reassign=False, n_threads=1)

        def step():
            _mini_batch_step(batch, unit, C, C, counts, rs, random_reassign=False,
                             n_threads=1)
            return b * K * (avg + 1.0)
        return _timed(step)
    out["pairs"], w, c = kmeans_rate(64, 256, 256)
    walls, cpus = walls + w, cpus + c
    out["pairs_big"], w, c = kmeans_rate(4096, 4096, 64)        # 64 MB of centres
    walls, cpus = walls + w, cpus + c

    # --- memory streaming (dense passes over k-means centres): bytes per second
    big = np.ones((2048, 4096), np.float32)

    def stream():
        np.multiply(big, np.float32(1.0), out=big)
        return float(big.nbytes)
    out["stream"], w, c = _timed(stream)
    walls, cpus = walls + w, cpus + c
    del big

    # --- ONMtF (BlockModel): units = iterations x (nnz(A) k + n k^2)
    A = _rand_csr(1500, 1500, 3, rng, symmetric=True)
    k = 7
    F0 = np.ascontiguousarray(rng.random((1500, k)) + 0.1)

    def onmtf():
        F = F0.copy()
        S = np.ascontiguousarray(F.T @ (A @ F))
        h = kb.onmtf_symmetric(A.indptr, A.indices, A.data, float(A.nnz), F, S, 20, 1e-300,
                               stop)
        return (h.shape[0] - 1) * (A.nnz * k + 1500 * k * k)
    onmtf()
    out["onmtf"], w, c = _timed(onmtf)
    walls, cpus = walls + w, cpus + c

    # --- a small scikit-learn k-means (BMGUFS's restarts, the ACC/NMI scoring): units =
    # points x clusters x dims x iterations, plus its per-call cost
    E = rng.random((1000, 8))

    def small_kmeans():
        km = KMeans(n_clusters=7, n_init=1, random_state=0, max_iter=30).fit(E)
        return 1000.0 * 7 * 8 * max(km.n_iter_, 1)
    out["kmeans_dense"], w, c = _timed(small_kmeans)
    walls, cpus = walls + w, cpus + c

    # --- the vocabulary's stochastic greedy: units = values x log2(values)
    nv = 20000
    c0 = rng.integers(1, 50, nv)
    c1 = rng.integers(0, 50, nv)
    P0 = np.concatenate([[0], np.cumsum(c0)]).astype(np.int64)
    P1 = np.concatenate([[0], np.cumsum(c1)]).astype(np.int64)
    kv.stochastic_greedy(P0, P1, 9, 0.01, 0)

    def greedy():
        kv.stochastic_greedy(P0, P1, 99, 0.01, 0)
        return nv * math.log2(nv)
    out["vocab"], w, c = _timed(greedy)
    walls, cpus = walls + w, cpus + c

    # --- a plain sparse mat-vec loop (BMGUFS's selection, the kNN Gram): units = nnz
    H = _rand_csr(3000, 3000, 30, rng).astype(np.float64)
    r = np.ones(3000)
    active = np.arange(3000, dtype=np.int64)
    kb.sym_matvec_active(H.indptr, H.indices, H.data, r, active)

    def matvec():
        kb.sym_matvec_active(H.indptr, H.indices, H.data, r, active)
        return float(H.nnz)
    out["matvec"], w, c = _timed(matvec)
    walls, cpus = walls + w, cpus + c

    # --- the vocabulary's exact DP: units = values^2 x buckets
    q0 = np.concatenate([[0], np.cumsum(c0[:300])]).astype(np.int64)
    q1 = np.concatenate([[0], np.cumsum(c1[:300])]).astype(np.int64)
    kv.dp_optimal(q0, q1, 3, stop)

    def dp():
        kv.dp_optimal(q0, q1, 5, stop)
        return 300.0 * 300.0 * 5
    out["dp"], w, c = _timed(dp)
    walls, cpus = walls + w, cpus + c

    # --- one small numpy / scipy call (the Python-level cost of loops over nodes, batches)
    v = np.ones(64)

    def calls():
        for _ in range(200):
            np.dot(v, v)
        return 200.0
    out["py"], w, c = _timed(calls)
    walls, cpus = walls + w, cpus + c

    out["wall_factor"] = float(min(8.0, max(1.0, walls / max(cpus, 1e-6))))
    return out
