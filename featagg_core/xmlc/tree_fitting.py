"""The building blocks of :class:`featagg_core.xmlc.ktxmlc.KTXMLC`'s fit, as plain functions.

This is the seam a distributed twin reuses (``ktxmlc_distributed(client, X, Y, **params)``
must predict exactly as the single-machine fit). A fit is (``X``/``Y``/``Yc`` as
:class:`CsrParts`, made once per fit; ``Yc`` is Y in csc form)::

    R = label_representation(Xn, Y)                      # driver: L x d label vectors (PIFA)
    trees = build_trees(R, spec, n_trees, executor)      # level by level, one job per node
    if flat_is_enough(trees, label_nnz, n, beam):        # the beam would prune nothing
        trees = [ova_tree(L)]                            # one-vs-all instead
    tasks = training_tasks(trees, Y)                     # deterministic (tree, node, children)
    results = run_jobs(executor, lambda t: train_task(X, Y, Yc, trees[t.tree],
                       label_positions(trees[t.tree]), t, solver, stop), tasks)
    W, bias_w, offsets = assemble_weights(trees, tasks, results, d)
    cal_a, cal_b, groups = calibration(trees, tasks, results, offsets, solver)

* Every job is a pure function of plain arrays and integers: node partitioning takes the
  label vectors of the node's labels and a seed derived from (random_state, tree, node
  id); node training takes X, Y and the tree only — a node's training rows are the rows
  having one of its labels (all rows at the root), computable from (Y, tree) alone
  (:func:`task_rows`). Seeds never depend on which worker runs a job or in what order,
  and results are gathered in submission order, so any executor gives the same model.
* The Dask twin (:mod:`featagg_core.distributed.ktxmlc`) reuses these functions with
  the data where it lives: ``build_trees(..., partition=hook)`` lets it partition a
  level's nodes on the workers holding their label vectors, ``training_tasks_for``
  plans from label counts, ``batch_problem`` + ``train_rows`` train a batch on the rows
  reaching its node only (selected on the workers), and ``assemble_weights`` /
  ``calibration`` take the results in task order. Label vectors are exact products
  (:class:`featagg_core.utils.products.ExactRows`), so any split of the rows gives the same
  bits, and calibration samples rows by their position among the node's training rows
  (never by global row id). It does not hand whole inputs to an executor (point 2
  below): scattering X to every worker would put all of X on each; row blocks stay
  where they are, a task gets its node's rows, and R's rows move with the node groups.
  Cancelling drops its queued tasks; a running one ends by itself (point 3).
* ``run_jobs`` polls its futures every 0.2 s and calls ``progress`` each time (the caller's
  callback may raise :class:`featagg_core.utils.cancel.Cancelled`); on any exception it sets the
  shared ``stop`` flag (long kernels poll it once per solver pass and per k-means pass,
  with an acquire load: :func:`featagg_core._kernels.stopflag.stop_requested`), cancels
  the jobs not started, waits for the running ones (which return at once) and re-raises.

What an executor must provide (the contract ``build_trees`` and ``run_jobs`` rely on):

1. ``submit(fn, *args) -> future``; the future has ``result(timeout=None)`` raising the
   builtin ``TimeoutError`` while the job runs (``concurrent.futures`` does since Python
   3.11; a Dask future's ``result(timeout=)`` does too), ``cancel()`` and ``cancelled()``.
   A ``concurrent.futures.ThreadPoolExecutor`` here; a Dask ``Client`` there.
2. The job arguments as they are: ``X``, ``Y``, ``Yc``, ``R``, the trees and the specs are
   read-only inside jobs, so a distributed executor may scatter them once per fit (they are
   the only large objects; a task carries four integers and a float).
3. Stopping: the ``stop`` array is shared memory between threads only. A process-based
   executor (Dask workers) does not see the driver's ``stop[0] = 1``: there ``cancel()``
   must drop the queued jobs and a running job ends by itself (its size is bounded: at
   most 64 classifiers of one node; timed in ``benchmarks/results/xmlc.md``); a
   worker-side flag (e.g. a Dask ``Event`` polled between jobs) is the twin's to add.
4. Nothing else: no ordering, no affinity, no state between jobs. Results must come back
   unchanged (tuples of numpy arrays); ``assemble_weights`` and ``calibration`` run on the
   driver in task order, which is what makes any executor's model identical.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.docstrings import fill_doc
from featagg_core.utils import products as _products
from featagg_core._kernels import ktxmlc as _k
from featagg_core._kernels import ktxmlc_cluster as _kc

_POLL_S = 0.2          # seconds between progress calls while waiting for a job
_TASK_CHILDREN = 64    # classifiers per training job (bounds a job's label matrix)
CALIB_BINS = 256       # histogram of training decision values in [-Z, Z]
CALIB_Z = 4.0
_NO_CLASSIFIER_B = 30.0  # calibration of a node trained on nothing: log sigmoid(30) ~ 0

def mix_seeds(*parts) -> np.ndarray:
    """Deterministic 31-bit seeds from integer arrays/scalars (splitmix64 rounds).

    Parameters
    ----------
    *parts : int or array of int
        What the seed derives from (e.g. random_state, tree, node ids); arrays broadcast.

    Returns
    -------
    ndarray of int64
        Seeds in [1, 2^31 - 2], one per broadcast element.
    """
    with np.errstate(over="ignore"):
        h = np.uint64(0x9E3779B97F4A7C15)
        for part in parts:
            v = np.asarray(part).astype(np.int64).astype(np.uint64)
            h = (h ^ v) * np.uint64(0xBF58476D1CE4E5B9)
            h = h ^ (h >> np.uint64(31))
            h = h * np.uint64(0x94D049BB133111EB)
            h = h ^ (h >> np.uint64(29))
        return (h % np.uint64(2147483646)).astype(np.int64) + 1


class TreeSpec(NamedTuple):
    """How label trees are grown (validated by the estimator)."""
    n_clusters: int
    partition: str          # "bisect" | "kmeans"
    max_depth: int
    max_leaf: int
    balanced: bool          # kmeans only
    min_size: int           # kmeans only
    oversampling: float
    rounds: int
    kmeans_max_iter: int
    kmeans_tol: float
    random_state: int


class SolverSpec(NamedTuple):
    """How node classifiers are trained (validated by the estimator)."""
    C: float
    eps: float
    max_iter: int
    threshold: float
    bias: float
    calib_rows: int         # per classifier: positives and negatives sampled for calibration
    random_state: int
    loss: int = 0           # 0 squared hinge (L2R_L2LOSS_SVC_DUAL), 1 logistic (L2R_LR_DUAL),
                            # -1 alternate by tree (even trees squared hinge, odd logistic)
    C_log: float = 10.0     # C of the logistic trees (napkinXC's default)


# ----------------------------------------------------------------------------- jobs
def run_jobs(executor, fn: Callable, items: Sequence, *, costs=None, progress=None,
             lo: float = 0.0, hi: float = 1.0, message: str = "", stop=None) -> list:
    """``[fn(item) for item in items]`` on ``executor``, results in submission order.

    ``progress(fraction, text)`` is called at least every 0.2 s while waiting (fraction in
    [lo, hi], by the ``costs`` of the jobs done); an exception from it or from a job sets
    ``stop[0] = 1``, cancels pending jobs, waits for the running ones and propagates.

    Parameters
    ----------
    executor : executor-like
        ``submit(fn, item)`` (module docstring, "what an executor must provide").
    fn : callable
        The job.
    items : sequence
        One job each.
    costs : sequence of float, optional
        Relative cost of each job (default 1 each), for the progress fraction.
    progress : callable(fraction, text), optional
        May raise to stop.
    lo, hi : float
        The progress range of these jobs.
    message : str
        Progress text before ``": i/n"``.
    stop : ndarray of uint8, shape (1,), optional
        The flag the kernels poll; set to 1 on an exception.

    Returns
    -------
    list
        The results, in the order of ``items``.
    """
    n = len(items)
    if n == 0:
        return []
    costs = np.ones(n) if costs is None else np.asarray(costs, dtype=float)
    total = float(costs.sum()) or 1.0
    futures = []
    out = [None] * n
    try:
        for it in items:
            futures.append(executor.submit(fn, it))
        done = 0.0
        for i, fut in enumerate(futures):
            while True:
                try:
                    out[i] = fut.result(timeout=_POLL_S)
                    break
                except TimeoutError:
                    if progress is not None:
                        progress(lo + (hi - lo) * done / total, f"{message}: {i}/{n}")
            done += costs[i]
            if progress is not None:
                progress(lo + (hi - lo) * done / total, f"{message}: {i + 1}/{n}")
    except BaseException:
        if stop is not None:
            stop[0] = 1
        for fut in futures:
            fut.cancel()
        for fut in futures:
            if not fut.cancelled():
                try:
                    fut.result()
                except BaseException:  # the first error is the one re-raised
                    pass
        raise
    return out


# ----------------------------------------------------------------------------- trees
def unit_rows(B: sp.csr_matrix) -> sp.csr_matrix:
    """The rows of a float32 csr scaled to unit L2 norm in place (zero rows stay zero).
    Row-local: a block of rows gets the same bits alone as inside the whole matrix.

    Parameters
    ----------
    B : scipy.sparse.csr_matrix
        float32 rows, modified in place.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``B``.
    """
    sq = np.asarray(B.multiply(B).sum(axis=1)).ravel()
    inv = np.zeros_like(sq)
    inv[sq > 0] = 1.0 / np.sqrt(sq[sq > 0])
    B.data *= np.repeat(inv.astype(np.float32), np.diff(B.indptr))
    return B


def concat_rows(parts: Sequence[sp.csr_matrix], n_cols: int) -> sp.csr_matrix:
    """Row blocks stacked in one concatenation (no other pass), with an int64 indptr.

    Parameters
    ----------
    parts : sequence of scipy.sparse.csr_matrix
        The row blocks, in order.
    n_cols : int
        Their number of columns.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (sum of rows, n_cols)
    """
    n_rows = sum(B.shape[0] for B in parts)
    indptr = np.zeros(n_rows + 1, np.int64)
    if parts:
        indptr[1:] = np.cumsum(np.concatenate([np.diff(B.indptr) for B in parts]))
    R = sp.csr_matrix((np.concatenate([B.data for B in parts]) if parts else
                       np.zeros(0, np.float32),
                       np.concatenate([B.indices for B in parts]) if parts else
                       np.zeros(0, np.int32), indptr), shape=(n_rows, n_cols))
    R.indptr = indptr  # scipy may have narrowed it; the kernels take int64
    return R


def label_representation(Xn: sp.csr_matrix, Y: sp.csr_matrix, progress=None,
                         block_nnz: int = 1 << 22) -> sp.csr_matrix:
    """PIFA (PECOS) = Parabel's label vectors: the normalised sum of the (already
    L2-normalised) rows of each label's positives; csr L x d, float32, int64 indptr.

    ``YᵀXn`` is an exact product (every entry the correctly rounded exact sum,
    :class:`featagg_core.utils.products.ExactRows`): it does not depend on the order of the
    rows, so the Dask twin, which sums it from row partitions, gets the same bits.
    Computed in blocks of labels whose positives hold about ``block_nnz`` feature
    non-zeros in all, calling ``progress(j, n_blocks)`` between blocks and about every
    0.1 s during one (it may raise to cancel: the kernel then stops at its next row).

    Parameters
    ----------
    Xn : scipy.sparse.csr_matrix, shape (n, d)
        Rows already L2-normalised.
    Y : scipy.sparse.csr_matrix, shape (n, L)
        0/1 labels.
    progress : callable(j, n_blocks), optional
        See above.
    block_nnz : int
        Feature non-zeros per block of labels, about.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (L, d)
        The label vectors.
    """
    prod = _products.ExactRows(Y, Xn)
    cum = prod.cumulative_work()
    L = Y.shape[1]
    bounds = [0]
    while bounds[-1] < L:
        nxt = int(np.searchsorted(cum, cum[bounds[-1]] + block_nnz, side="right")) - 1
        bounds.append(min(L, max(nxt, bounds[-1] + 1)))
    n_blocks = len(bounds) - 1
    parts = []
    for j, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        tick = None if progress is None else (lambda j=j: progress(j, n_blocks))
        parts.append(unit_rows(prod.rows(a, b, tick)))
        if progress is not None:
            progress(j + 1, n_blocks)
    return concat_rows(parts, Xn.shape[1])


def n_children_for(m: int, spec: TreeSpec) -> int:
    """Children of a node holding m labels (> max_leaf): "kmeans" asks K-means for K;
    "bisect" makes min(K, ceil(m / max_leaf)) balanced groups, so the last level's clusters
    hold close to ``max_leaf`` labels (PECOS's leaves hold max_leaf/2 .. max_leaf).

    Parameters
    ----------
    m : int
        Labels of the node.
    spec : TreeSpec
        How trees are grown.

    Returns
    -------
    int
    """
    if spec.partition == "kmeans":
        return spec.n_clusters
    return int(min(spec.n_clusters, math.ceil(m / spec.max_leaf)))


def partition_node(R: sp.csr_matrix, labels: np.ndarray, n_groups: int, seed: int,
                   spec: TreeSpec, stop=None):
    """Cluster the label vectors ``R[labels]`` into at most ``n_groups`` groups.

    Parameters
    ----------
    R : scipy.sparse.csr_matrix, shape (L, d')
        Label vectors.
    labels : ndarray of int
        The node's labels (rows of ``R``).
    n_groups : int
        Groups to ask for.
    seed : int
        The node's seed.
    spec : TreeSpec
        ``partition`` ("bisect" or "kmeans") and the k-means parameters.
    stop : ndarray of uint8, optional
        See :func:`run_jobs`.

    Returns
    -------
    assign : ndarray of int64
        Group id (0..n-1) of each label, in the order of ``labels``.
    n_groups_made : int
        Groups made (empty ones are dropped).
    """
    stop = np.zeros(1, np.uint8) if stop is None else stop
    # the root's labels are all of them in order: no copy of R (a long GIL-holding gather)
    sub = R if labels.size == R.shape[0] and np.array_equal(labels, np.arange(labels.size)) \
        else R[labels]
    Rp = sub.indptr.astype(np.int64)
    if spec.partition == "bisect":
        assign, _ = _kc.bisect_rows(Rp, sub.indices, sub.data, R.shape[1], int(n_groups),
                                    int(seed), spec.kmeans_max_iter, spec.kmeans_tol, stop)
    else:
        assign, _ = _kc.cluster_rows(Rp, sub.indices, sub.data, R.shape[1], int(n_groups),
                                     spec.balanced, int(seed), spec.oversampling,
                                     spec.rounds, spec.kmeans_max_iter, spec.kmeans_tol,
                                     spec.min_size, stop)
    ids, assign = np.unique(assign, return_inverse=True)  # compact, order kept
    return assign.astype(np.int64), int(ids.size)


def _new_tree(L):
    return dict(parent=[-1], first_child=[-1], n_children=[0], label=[-1], depth=[0],
                lo=[0], hi=[L], perm=np.arange(L, dtype=np.int64))


def _add_children(tr, v, sizes, labels=None):
    start = len(tr["parent"])
    tr["first_child"][v] = start
    tr["n_children"][v] = len(sizes)
    pos = tr["lo"][v]
    d = tr["depth"][v] + 1
    for c, size in enumerate(sizes):
        tr["parent"].append(v)
        tr["first_child"].append(-1)
        tr["n_children"].append(0)
        tr["label"].append(-1 if labels is None else int(labels[c]))
        tr["depth"].append(d)
        tr["lo"].append(pos)
        pos += int(size)
        tr["hi"].append(pos)
    return start


def build_trees(R: sp.csr_matrix, spec: TreeSpec, n_trees: int, executor, *,
                progress=None, lo=0.0, hi=0.1, stop=None, partition=None,
                n_labels=None) -> list:
    """Grow ``n_trees`` label trees level by level; the nodes of a level are partitioned
    in parallel jobs (:func:`partition_node`). Node ids follow creation order, so every
    node's children are consecutive ids; label nodes (``label >= 0``) are terminal.

    A node becomes a leaf cluster (its children are its labels) when it holds at most
    ``max_leaf`` labels or sits at ``max_depth``. Seeds depend on (random_state, tree,
    node id) only. Returns one dict of int64 arrays per tree (see ``KTXMLC``).

    ``partition(split, items, trees)``, if given, partitions one level's nodes instead of
    ``executor`` (``split``: their (tree, node) pairs; ``items``: :func:`partition_node`'s
    (labels, n_groups, seed) for each; returns its (assign, n_groups_made) per node);
    ``R`` may then be None and ``n_labels`` gives the number of labels. The Dask twin runs
    the nodes where their label vectors live.

    Parameters
    ----------
    R : scipy.sparse.csr_matrix or None
        Label vectors (None with ``partition``).
    spec : TreeSpec
        How the trees grow.
    n_trees : int
        Trees to grow.
    executor : executor-like
        Runs the partition jobs (:func:`run_jobs`).
    progress, lo, hi, stop :
        As in :func:`run_jobs` (one range for all levels).
    partition : callable, optional
        See above.
    n_labels : int, optional
        The number of labels when ``R`` is None.

    Returns
    -------
    list of dict
        One dict of int64 arrays per tree.
    """
    L = R.shape[0] if n_labels is None else int(n_labels)
    trees = [_new_tree(L) for _ in range(n_trees)]
    frontier = [(t, 0) for t in range(n_trees)]
    level = 0
    while frontier:
        split = []
        for (t, v) in frontier:
            tr = trees[t]
            m = tr["hi"][v] - tr["lo"][v]
            if m <= spec.max_leaf or tr["depth"][v] >= spec.max_depth:
                labs = tr["perm"][tr["lo"][v]:tr["hi"][v]]
                _add_children(tr, v, np.ones(m, np.int64), labels=labs)
            else:
                split.append((t, v))
        items = []
        for (t, v) in split:
            tr = trees[t]
            m = tr["hi"][v] - tr["lo"][v]
            items.append((tr["perm"][tr["lo"][v]:tr["hi"][v]].copy(), n_children_for(m, spec),
                          int(mix_seeds(spec.random_state, t, v, 7))))
        frac = lo + (hi - lo) * (1 - 0.5 ** level)
        if partition is not None:
            results = partition(split, items, trees) if split else []
        else:
            results = run_jobs(executor,
                               lambda it: partition_node(R, it[0], it[1], it[2], spec, stop),
                               items, costs=[len(it[0]) for it in items], progress=progress,
                               lo=frac, hi=lo + (hi - lo) * (1 - 0.5 ** (level + 1)),
                               message=f"label trees, level {level + 1}", stop=stop)
        new_frontier = []
        for (t, v), (assign, nk) in zip(split, results):
            tr = trees[t]
            a, b = tr["lo"][v], tr["hi"][v]
            order = np.argsort(assign, kind="stable")
            tr["perm"][a:b] = tr["perm"][a:b][order]
            start = _add_children(tr, v, np.bincount(assign, minlength=nk))
            new_frontier.extend((t, start + c) for c in range(nk))
        frontier = new_frontier
        level += 1
        if progress is not None:
            progress(lo + (hi - lo) * (1 - 0.5 ** level),
                     f"label trees: level {level} done ({len(frontier)} nodes to split next)")
    return [{k: (np.asarray(v, dtype=np.int64) if k != "perm" else v) for k, v in tr.items()}
            for tr in trees]


def ova_tree(L: int) -> dict:
    """The one-vs-all model as a tree: a root whose children are all labels.

    Parameters
    ----------
    L : int
        Labels.

    Returns
    -------
    dict
        The tree's node arrays (as ``build_trees``'s trees).
    """
    return dict(parent=np.r_[-1, np.zeros(L, np.int64)],
                first_child=np.r_[1, -np.ones(L, np.int64)],
                n_children=np.r_[L, np.zeros(L, np.int64)], label=np.r_[-1, np.arange(L)],
                depth=np.r_[0, np.ones(L, np.int64)], lo=np.r_[0, np.arange(L)],
                hi=np.r_[L, np.arange(1, L + 1)], perm=np.arange(L, dtype=np.int64))


# ----------------------------------------------------------------------------- training
class CsrParts(NamedTuple):
    """A csr (or csc) matrix's parts with an int64 index pointer, made once per fit so the
    jobs never convert it again (a per-job copy of a 10^6-row indptr holds the GIL)."""
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple

    @classmethod
    def of(cls, M):
        """The parts of ``M``.

        Parameters
        ----------
        M : scipy.sparse.csr_matrix or csc_matrix
            The matrix.

        Returns
        -------
        CsrParts
        """
        return cls(np.asarray(M.indptr, np.int64), M.indices, M.data, M.shape)


class TrainTask(NamedTuple):
    tree: int
    node: int
    c0: int       # first child id
    c1: int       # one past the last child id
    cost: float   # rows reaching the node x classifiers (for scheduling and progress)


def label_positions(tree: dict) -> np.ndarray:
    """pos[label] = the label's position in the tree's ``perm`` order.

    Parameters
    ----------
    tree : dict
        A tree (needs ``perm``).

    Returns
    -------
    ndarray of int64, shape (L,)
    """
    pos = np.empty(tree["perm"].shape[0], np.int64)
    pos[tree["perm"]] = np.arange(tree["perm"].shape[0])
    return pos


def training_tasks(trees: Sequence[dict], Y: sp.csr_matrix) -> list:
    """Every node's child classifiers in batches of at most 64, the costliest first
    (ties by tree and child id): a deterministic list for any executor.

    Parameters
    ----------
    trees : sequence of dict
        The trees.
    Y : scipy.sparse.csr_matrix, shape (n, L)
        0/1 labels.

    Returns
    -------
    list of TrainTask
    """
    return training_tasks_for(trees, np.bincount(np.asarray(Y.indices), minlength=Y.shape[1]),
                              Y.shape[0])


def training_tasks_for(trees: Sequence[dict], label_nnz: np.ndarray, n: int) -> list:
    """:func:`training_tasks` from the positives per label and the number of rows (what
    the Dask twin sums from its row blocks).

    Parameters
    ----------
    trees : sequence of dict
        The trees.
    label_nnz : ndarray of int, shape (L,)
        Positives per label.
    n : int
        Rows.

    Returns
    -------
    list of TrainTask
    """
    label_nnz = np.asarray(label_nnz, np.int64)
    tasks = []
    for t, tr in enumerate(trees):
        cum = np.r_[0, np.cumsum(label_nnz[tr["perm"]])]
        for v in np.nonzero(tr["n_children"] > 0)[0]:
            fc, nc = int(tr["first_child"][v]), int(tr["n_children"][v])
            reach = n if v == 0 else cum[tr["hi"][v]] - cum[tr["lo"][v]]
            for j0 in range(0, nc, _TASK_CHILDREN):
                j1 = min(nc, j0 + _TASK_CHILDREN)
                tasks.append(TrainTask(t, int(v), fc + j0, fc + j1, float(reach) * (j1 - j0)))
    tasks.sort(key=lambda z: (-z.cost, z.tree, z.c0))
    return tasks


def flat_is_enough(trees, label_nnz, n, beam) -> bool:
    """Whether one flat tree (one-vs-all: the root's children are every label) replaces
    the ensemble ``trees``.

    True when (1) the beam reaches every leaf cluster of every tree -- a tree has at most
    ``beam`` leaf clusters, so no level ever holds more than ``beam`` nodes and prediction
    scores every label anyway: the trees prune nothing -- and (2) one-vs-all's planned
    training work, ``n * L`` rows x classifiers, is at most the ensemble's, planned as
    :func:`training_tasks_for` does (each node's rows: every row at the root, else the
    positives of its labels, capped at ``n``). Then the exact
    one-vs-all model (DiSMEC's; PECOS's XR-Linear with a single layer when ``nr_splits``
    >= L) costs no more to train than the trees, less to predict, and drops the trees'
    approximation (measured on Bibtex, Delicious and Corel16k in
    ``benchmarks/results/xmlc_notes.md``). Only label counts and the trees are read, so
    the Dask twin decides the same.

    Parameters
    ----------
    trees : sequence of dict
        The grown trees (``build_trees``).
    label_nnz : ndarray of int, shape (L,)
        Positives per label.
    n : int
        Training rows.
    beam : int
        The beam width prediction will use.

    Returns
    -------
    bool
    """
    label_nnz = np.asarray(label_nnz, np.int64)
    L = label_nnz.shape[0]
    work = 0.0
    for tr in trees:
        nch, fc = tr["n_children"], tr["first_child"]
        has = nch > 0
        leafc = np.zeros(nch.shape[0], bool)
        leafc[has] = tr["label"][fc[has]] >= 0
        if int(leafc.sum()) > beam:
            return False
        cum = np.r_[0, np.cumsum(label_nnz[tr["perm"]])]
        reach = np.minimum(cum[tr["hi"]] - cum[tr["lo"]], n).astype(np.float64)
        reach[0] = n
        work += float(np.sum(reach[has] * nch[has]))
    return float(n) * L <= work


def task_rows(Yc: sp.csc_matrix, tree: dict, node: int) -> np.ndarray:
    """Training rows of a node's children: every row at the root, else the rows having
    at least one of the node's labels (Parabel's / PECOS's "teacher-forced" negatives).

    Parameters
    ----------
    Yc : scipy.sparse.csc_matrix or CsrParts, shape (n, L)
        Labels, column-major.
    tree : dict
        The node's tree.
    node : int
        The node id.

    Returns
    -------
    ndarray of int64
        Sorted row ids.
    """
    if node == 0:
        return np.arange(Yc.shape[0], dtype=np.int64)
    return _k.node_rows(np.asarray(Yc.indptr, np.int64), Yc.indices, tree["perm"],
                        int(tree["lo"][node]), int(tree["hi"][node]))


@fill_doc
def train_task(X: sp.csr_matrix, Y: sp.csr_matrix, Yc: sp.csc_matrix, tree: dict,
               pos: np.ndarray, task: TrainTask, solver: SolverSpec, stop, warm=None,
               keep_duals: bool = False) -> tuple:
    """Train the classifiers of children ``task.c0 .. task.c1 - 1`` of ``task.node`` on
    the rows of X reaching the node (:func:`task_rows`, :func:`train_rows`; ``warm`` and
    ``keep_duals`` as there).

    Parameters
    ----------
    X, Y, Yc : CsrParts or sparse matrices
        Features, labels and labels column-major.
    tree : dict
        The task's tree.
    pos : ndarray of int64
        :func:`label_positions` of the tree.
    task : TrainTask
        The batch to train.
    {solver_stop}
    warm : tuple or None, default=None
        As :func:`train_rows`.
    keep_duals : bool, default=False
        As :func:`train_rows`.

    Returns
    -------
    tuple
        As :func:`train_rows`.
    """
    rows = task_rows(Yc, tree, task.node)
    return train_rows(X, Y, rows, pos, batch_problem(tree, task, solver), solver, stop,
                      warm, keep_duals)


class BatchProblem(NamedTuple):
    """What a training job needs of its tree: the children's label position ranges
    ``[lo[j], hi[j])``, their seeds, the node's seed (the squared-hinge block solver's
    visiting order, shared by all the node's children), the loss and its C."""
    lo: np.ndarray
    hi: np.ndarray
    seeds: np.ndarray
    node_seed: int
    loss: int
    C: float


def batch_problem(tree: dict, task: TrainTask, solver: SolverSpec) -> BatchProblem:
    """The :class:`BatchProblem` of a task (small arrays: computed where the trees are).

    Parameters
    ----------
    tree : dict
        The task's tree.
    task : TrainTask
        The batch.
    solver : SolverSpec
        Seed, loss and C.

    Returns
    -------
    BatchProblem
    """
    loss = solver.loss if solver.loss >= 0 else task.tree % 2
    lo = tree["lo"][task.c0:task.c1]
    hi = tree["hi"][task.c0:task.c1]
    # seeds depend on (random_state, tree, parent depth, smallest label of the child,
    # child size): identical problems get identical permutations in any model.
    minlab = np.minimum.reduceat(tree["perm"][:hi[-1]], lo)
    seeds = mix_seeds(solver.random_state, task.tree, tree["depth"][task.node], minlab, hi - lo)
    # the node's seed from the node alone (not from the batch): any batching of its
    # children gives the same classifiers
    v_lo, v_hi = int(tree["lo"][task.node]), int(tree["hi"][task.node])
    node_seed = mix_seeds(solver.random_state, task.tree, tree["depth"][task.node],
                          int(tree["perm"][v_lo:v_hi].min()), v_hi - v_lo, 0x6E6F6465)
    return BatchProblem(lo.astype(np.int64), hi.astype(np.int64), seeds, int(node_seed),
                        int(loss), float(solver.C_log if loss == 1 else solver.C))


@fill_doc
def train_rows(X, Y, rows: np.ndarray, pos: np.ndarray, problem: BatchProblem,
               solver: SolverSpec, stop, warm=None, keep_duals: bool = False) -> tuple:
    """Train a batch's classifiers on the rows ``rows`` of (X, Y) (csr or
    :class:`CsrParts`; in this order: it fixes the solver's and the calibration sample's
    order, which goes by position among these rows).

    Returns the kernel's (counts, feats, vals, bias_w, n_iter, hist) (see
    :func:`featagg_core._kernels.ktxmlc.train_children_warm`) and the solver work:
    non-zeros of the training rows times the classifiers (one solver pass over them).
    ``warm``: the duals another solve of the same batch on the same rows returned (a
    warm start, squared hinge only; ``None``: from zero); with ``keep_duals`` the batch's
    final duals ``(counts, positions, values)`` are appended as an eighth element.

    Parameters
    ----------
    X, Y : CsrParts or scipy.sparse.csr_matrix
        Features and labels.
    rows : ndarray of int64
        The training rows, in order.
    pos : ndarray of int64
        :func:`label_positions` of the tree.
    problem : BatchProblem
        The batch.
    {solver_stop}
    warm : tuple or None, default=None
        ``(counts, positions, values)``: the non-zero dual variables another solve of this
        batch on these rows kept (``keep_duals``), the start of this solve; None: from
        zero.
    keep_duals : bool, default=False
        Append this solve's final non-zero duals in that form.

    Returns
    -------
    tuple
        ``(counts, feats, vals, bias_w, n_iter, hist, work)``, and the duals with
        ``keep_duals``.
    """
    Xp = np.asarray(X.indptr, np.int64)
    if warm is None:
        warm = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, X.data.dtype))
    res = _k.train_children_warm(Xp, X.indices, X.data, X.shape[1],
                                 np.asarray(Y.indptr, np.int64), Y.indices, pos, rows,
                                 problem.lo, problem.hi, problem.seeds, problem.node_seed,
                                 problem.C,
                                 solver.eps, solver.max_iter, solver.threshold, solver.bias,
                                 CALIB_BINS, CALIB_Z, solver.calib_rows, problem.loss, stop,
                                 warm[0], warm[1], warm[2], bool(keep_duals))
    work = int((Xp[rows + 1] - Xp[rows]).sum()) * problem.lo.shape[0]
    return res[:6] + (work,) + ((res[6:9],) if keep_duals else ())


def assemble_weights(trees: Sequence[dict], tasks: Sequence[TrainTask], results: Sequence,
                     n_features: int):
    """Stack every node's classifier into one node-major csr (one row per node of all
    trees; rows of roots and untrained nodes are empty).

    Parameters
    ----------
    trees : sequence of dict
        The trees.
    tasks, results : sequences
        The training tasks and their results, in task order.
    n_features : int
        Columns of W.

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (nodes, n_features)
    bias_w : ndarray of float32, shape (nodes,)
    offsets : ndarray of int64, shape (n_trees + 1,)
        First node row of each tree.
    """
    offsets = np.r_[0, np.cumsum([tr["parent"].shape[0] for tr in trees])].astype(np.int64)
    N = int(offsets[-1])
    cnt = np.zeros(N, np.int64)
    bias_w = np.zeros(N, np.float32)
    by_start = {}
    for task, res in zip(tasks, results):
        g0 = offsets[task.tree] + task.c0
        cnt[g0:g0 + res[0].shape[0]] = res[0]
        bias_w[g0:g0 + res[0].shape[0]] = res[3]
        by_start[g0] = res
    feats, vals = [], []
    for g0 in sorted(by_start):
        feats.append(by_start[g0][1])
        vals.append(by_start[g0][2])
    indptr = np.r_[0, np.cumsum(cnt)].astype(np.int64)
    W = sp.csr_matrix((np.concatenate(vals) if vals else np.zeros(0, np.float32),
                       np.concatenate(feats) if feats else np.zeros(0, np.int32), indptr),
                      shape=(N, n_features))
    return W, bias_w, offsets


def calibration_group(tree: dict, task: TrainTask, solver: SolverSpec = None) -> int:
    """0 for label classifiers (pooled over depths), else the depth of the children;
    plus 1000 for the trees trained with the logistic loss (their decision values live on
    another scale).

    Parameters
    ----------
    tree : dict
        The task's tree.
    task : TrainTask
        The batch of classifiers.
    solver : SolverSpec or None, default=None
        The solver (None: squared hinge).

    Returns
    -------
    int
        The calibration group.
    """
    g = 0 if tree["label"][task.c0] >= 0 else int(tree["depth"][task.c0])
    loss = 0 if solver is None else (solver.loss if solver.loss >= 0 else task.tree % 2)
    return g + 1000 * loss


def fit_sigmoid(neg: np.ndarray, pos: np.ndarray, n_iter: int = 100):
    """Platt scaling on a histogram: (a, b) minimising the weighted logistic loss of
    sigmoid(a z + b) for bin centres z on [-CALIB_Z, CALIB_Z] with ``pos``/``neg`` counts
    (Newton's method with backtracking and a tiny ridge, so separable histograms stay
    finite). Returns (1, 0) (a plain sigmoid) when either class is missing.

    Parameters
    ----------
    neg, pos : ndarray, shape (CALIB_BINS,)
        Negative / positive (weighted) counts per bin.
    n_iter : int
        Newton steps at most.

    Returns
    -------
    tuple of float
        ``(a, b)``.
    """
    if pos.sum() <= 0 or neg.sum() <= 0:
        return 1.0, 0.0
    n_bins = pos.shape[0]
    z = -CALIB_Z + (np.arange(n_bins) + 0.5) * (2 * CALIB_Z / n_bins)
    w = pos + neg
    keep = w > 0
    z, wp, wn = z[keep], pos[keep], neg[keep]
    scale = float(wp.sum() + wn.sum())
    ridge = 1e-6

    def loss(a, b):
        f = a * z + b
        # -log sigmoid(f) for positives, -log(1 - sigmoid(f)) for negatives
        return (np.sum(wp * np.logaddexp(0.0, -f)) + np.sum(wn * np.logaddexp(0.0, f))) \
            / scale + 0.5 * ridge * a * a

    # start from the prior log-odds (Platt's b0), slope 1
    a, b = 1.0, float(np.log(wp.sum() / wn.sum()))
    cur = loss(a, b)
    for _ in range(n_iter):
        f = a * z + b
        p = 0.5 * (1.0 + np.tanh(0.5 * f))
        gpos, gneg = wp * (p - 1.0), wn * p  # d loss / d f per bin (times scale)
        g = (gpos + gneg) / scale
        ga = np.sum(g * z) + ridge * a
        gb = np.sum(g)
        h = (wp + wn) * p * (1.0 - p) / scale
        haa, hab, hbb = np.sum(h * z * z) + ridge, np.sum(h * z), np.sum(h) + 1e-12
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        step = 1.0
        while step > 1e-8:
            na, nb = a - step * da, b - step * db
            new = loss(na, nb)
            if new <= cur:
                break
            step *= 0.5
        if step <= 1e-8:
            break
        done = cur - new < 1e-12
        a, b, cur = na, nb, new
        if done:
            break
    return float(a), float(b)


def calibration(trees: Sequence[dict], tasks: Sequence[TrainTask], results: Sequence,
                offsets: np.ndarray, solver: SolverSpec = None):
    """Per-node sigmoid parameters (a, b) from the decision-value histograms: one Platt fit
    per calibration group (label classifiers; internal nodes of each depth), summed over
    the tasks in task order. Nodes with no classifier (every row positive) and roots get
    (0, 30): log-probability ~ 0.

    Parameters
    ----------
    trees, tasks, results :
        As in :func:`assemble_weights`.
    offsets : ndarray of int64
        :func:`assemble_weights`'s.
    solver : SolverSpec, optional
        The loss of each tree (:func:`calibration_group`).

    Returns
    -------
    tuple
        ``(cal_a, cal_b, groups)``: float32 arrays per node, and a dict
        {group: (a, b, n_neg, n_pos)} for diagnostics.
    """
    hists = {}
    for task, res in zip(tasks, results):
        g = calibration_group(trees[task.tree], task, solver)
        hists[g] = hists.get(g, 0) + res[5]
    fitted = {}
    for g in sorted(hists):
        h = hists[g]
        a, b = fit_sigmoid(h[0], h[1])
        fitted[g] = (a, b, float(h[0].sum()), float(h[1].sum()))
    N = int(offsets[-1])
    cal_a = np.zeros(N, np.float32)
    cal_b = np.full(N, _NO_CLASSIFIER_B, np.float32)
    for task, res in zip(tasks, results):
        a, b = fitted[calibration_group(trees[task.tree], task, solver)][:2]
        g0 = offsets[task.tree] + task.c0
        trained = (res[0] > 0) | (res[4] > 0)
        sl = slice(g0, g0 + res[0].shape[0])
        cal_a[sl] = np.where(trained, a, 0.0)
        cal_b[sl] = np.where(trained, b, _NO_CLASSIFIER_B)
    return cal_a, cal_b, fitted
