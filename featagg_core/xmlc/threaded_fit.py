"""KTXMLC's fit on one machine: the pipeline of :mod:`featagg_core.xmlc.tree_fitting` run on
a local thread pool (the Dask twin, ``featagg_core.distributed.ktxmlc``, runs the same
functions on a cluster).
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np
import scipy.sparse as sp

from featagg_core.xmlc import tree_fitting as core

#: below this much planned solver work (non-zeros x classifiers x solver passes: about
#: 20 ms of one core, far under the 0.2 s between two progress calls) the node
#: classifiers are trained on the calling thread (:class:`_InlineExecutor`)
SMALL_TRAINING_WORK = 1 << 25
#: below this much work (multiply-adds, about: a millisecond or two of one core) a
#: parallel (``prange``) kernel runs on the calling thread alone (:func:`kernel_threads`)
SMALL_KERNEL_WORK = 1 << 21


@contextmanager
def kernel_threads(work):
    """Run the parallel numba kernels called inside on one thread when ``work`` is below
    :data:`SMALL_KERNEL_WORK`; otherwise change nothing.

    Why: waking numba's worker threads for a parallel region and waiting for them at its
    end costs CPU of its own -- the idle workers spin before they sleep, and a master
    whose worker is not scheduled spins at the barrier, more so on a busy machine. On
    tiny inputs (the form choice's validation rows, a small batch to predict) that costs
    more than the region's work. The kernels' results do not depend on the number of
    threads, so only the CPU changes. ``numba.set_num_threads`` is per thread: other
    threads keep theirs, and this one gets its count back on the way out.

    Parameters
    ----------
    work : int or float
        The kernels' work, about (e.g. non-zeros read times the classifiers scored).

    Yields
    ------
    None
        Inside, this thread's numba thread count is 1 (small work) or unchanged.
    """
    before = numba.get_num_threads()
    if work >= SMALL_KERNEL_WORK or before == 1:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


class _CancellingPool:
    """A thread pool whose exit never drains queued work: on the way out it cancels what
    has not started (``shutdown(cancel_futures=True)``) and joins its threads.

    Parameters
    ----------
    n_jobs : int
        Threads.
    """

    def __init__(self, n_jobs):
        self.pool = ThreadPoolExecutor(max_workers=n_jobs, thread_name_prefix="ktxmlc")

    def __enter__(self):
        return self.pool

    def __exit__(self, *exc):
        self.pool.shutdown(wait=True, cancel_futures=True)
        return False


class _InlineExecutor:
    """An executor that runs each job in the calling thread as it is submitted (a
    finished future), for training work too small to be worth starting the pool's threads
    for: :func:`~featagg_core.xmlc.tree_fitting.run_jobs` then reports and stops between
    jobs as it does with a pool, and a job's exception comes out of its future."""

    def submit(self, fn, *args):
        fut = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - raised again by fut.result()
            fut.set_exception(exc)
        return fut


def fit_trees_and_nodes(X, Y, R, spec, solver, n_trees_or_trees, n_jobs, progress, stop,
                        flat_beam=None, warm=None, keep_duals=False):
    """Trees (or the given ones), node classifiers, weights and calibration, on a thread
    pool (the classifiers in the calling thread when their planned solver work is below
    :data:`SMALL_TRAINING_WORK`). With ``flat_beam`` (the beam width) the grown trees are
    replaced by one flat tree when :func:`featagg_core.xmlc.tree_fitting.flat_is_enough`.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix, shape (n, d)
        Features (already normalised if the model normalises).
    Y : scipy.sparse.csr_matrix, shape (n, L)
        0/1 labels.
    R : scipy.sparse.csr_matrix or None
        Label vectors (needed only when trees are grown).
    spec : featagg_core.xmlc.tree_fitting.TreeSpec or None
        How to grow the trees.
    solver : featagg_core.xmlc.tree_fitting.SolverSpec
        How to train the node classifiers.
    n_trees_or_trees : int or list of dict
        Trees to grow, or the trees to use as they are.
    n_jobs : int
        Threads.
    progress : callable(fraction, message) or None
        Called as the work advances (fractions 0.02 to 0.99); it may raise to stop.
    stop : ndarray of uint8, shape (1,)
        The shared stop flag the kernels poll.
    flat_beam : int or None, default=None
        The beam width, when a flat tree may replace the grown ones.
    warm : Mapping or None, default=None
        Warm start: ``{(tree, node, first child): duals}`` as ``keep_duals`` returned them
        for the same trees on the same rows (a fit at another C); tasks not in it start
        from zero.
    keep_duals : bool, default=False
        Also return every task's final duals (the support vectors' dual variables).

    Returns
    -------
    tuple
        ``(trees, W, bias_w, offsets, cal_a, cal_b, groups, work, duals)``: the trees, the
        stacked node classifiers, their calibration, the solver work (non-zeros trained
        on) and the duals (a dict as ``warm``; None without ``keep_duals``).
    """
    Yc = core.CsrParts.of(sp.csc_matrix(Y))
    label_nnz = np.diff(Yc.indptr)
    X, Y = core.CsrParts.of(X), core.CsrParts.of(Y)
    with _CancellingPool(n_jobs) as pool:
        if isinstance(n_trees_or_trees, int):
            trees = core.build_trees(R, spec, n_trees_or_trees, pool, progress=progress,
                                     lo=0.02, hi=0.12, stop=stop)
            if flat_beam is not None and core.flat_is_enough(trees, label_nnz, X.shape[0],
                                                              flat_beam):
                trees = [core.ova_tree(Y.shape[1])]
        else:
            trees = n_trees_or_trees
        tasks = core.training_tasks(trees, Y)
        positions = [core.label_positions(tr) for tr in trees]

        warm = warm or {}

        def job(task):
            start = warm.get((task.tree, task.node, task.c0))
            if start is not None:   # positions are kept narrow (see below)
                start = (start[0], start[1].astype(np.int32), start[2])
            return core.train_task(X, Y, Yc, trees[task.tree], positions[task.tree], task,
                                   solver, stop, start, keep_duals)

        # planned work (rows x classifiers, times the non-zeros per row and the passes)
        # so small that starting threads and waiting for them costs more than they save
        # (the form choice's candidates on sets of a few thousand rows): this thread
        nnz_per_row = X.indptr[-1] / max(X.shape[0], 1)
        small = sum(t.cost for t in tasks) * nnz_per_row * solver.max_iter \
            < SMALL_TRAINING_WORK
        results = core.run_jobs(_InlineExecutor() if small else pool, job, tasks,
                                costs=[t.cost for t in tasks],
                                progress=progress, lo=0.12, hi=0.99,
                                message="classifiers: node batches trained", stop=stop)
    W, bias_w, offsets = core.assemble_weights(trees, tasks, results, X.shape[1])
    cal_a, cal_b, groups = core.calibration(trees, tasks, results, offsets, solver)
    work = int(sum(r[6] for r in results))
    # a dual's position among its node's rows fits 16 bits when there are fewer than 65,536
    # rows (always so for the form choice's candidates, at most MAX_FIT_ROWS = 50,000):
    # 6 bytes per support vector kept instead of 8
    narrow = np.uint16 if X.shape[0] < 65536 else np.int32
    duals = ({(t.tree, t.node, t.c0): (r[7][0], r[7][1].astype(narrow), r[7][2])
              for t, r in zip(tasks, results)} if keep_duals else None)
    return trees, W, bias_w, offsets, cal_a, cal_b, groups, work, duals
