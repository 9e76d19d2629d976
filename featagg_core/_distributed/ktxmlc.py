"""``ktxmlc_distributed``: KTXMLC on a Dask cluster, equal to ``KTXMLC(...).fit``.

1. Row blocks of X, Y on the workers; each block is row-normalised there (as ``fit``).
2. Label vectors: one exact partial ``Y_wᵀ normalize(X_w)`` per worker over its blocks
   (and ``Y_wᵀ Y_w`` for ``"joint"``), summed by label ranges on different workers
   (``reduce_scatter``), rounded once, then KTXMLC's ``_label_vectors``;
   label frequencies are summed from per-block counts.
3. Trees: KTXMLC's own ``_build_trees`` with a ``cluster_level`` hook running each
   level's nodes of *all* trees as tasks on the groups of :mod:`.groups` (trees start on
   different workers and grow in parallel; ``_cluster_node`` is the node kernel).
4. Classifiers: KTXMLC's ``_train_plan`` batches. For a node, every block selects its
   rows reaching the node on its own worker (``node_rows`` on the block's labels); the
   pieces are concatenated in row order where the node's batches run, and
   ``train_children`` runs on exactly the rows (same order, same features) the single
   machine uses. At most ``2 x threads`` nodes are in flight, so memory stays bounded.
   The biggest task is a root's: its classifiers see every point (as on one machine).
5. ``_assemble`` and ``_finalise`` build the model: predictions equal the single fit's.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np
import scipy.sparse as sp

from .. import _products
from .blocks import (add_counts, label_counts, local_groups, reduce_scatter, row_blocks,
                     tree_reduce)
from .blocks import ShardedMultiLabel  # noqa: E402 (kept apart: the input type)
from .executor import Executor, with_retries
from .groups import RowGroups

__all__ = ["ktxmlc_distributed"]


# ---------------------------------------------------------------------------- tasks
def _normalized(block, normalize):
    from ..ktxmlc import _normalize_rows

    X, Y = block
    return (_normalize_rows(X) if normalize else X), Y


def _partials(joint, *blocks):
    """The exact partials ``Yᵀ normalize(X)`` (and ``YᵀY``) of one worker's blocks."""
    from ..ktxmlc import _normalize_rows

    Ys = [b[1] for b in blocks]
    p = _products.partial_xt_y(Ys, [_normalize_rows(b[0]) for b in blocks])
    return (p, _products.partial_xt_y(Ys, Ys) if joint else None)


def _merge_pair(a, b):
    return (_products.merge(a[0], b[0]),
            None if a[1] is None else _products.merge(a[1], b[1]))


def _slice_pair(pair, lo, hi):
    return tuple(None if p is None else p.rows(lo, hi, keep_count=lo == 0) for p in pair)


def _label_vectors(reduced, lo, representation, joint_weight):
    """KTXMLC's label vectors of the labels ``lo:`` (every step is row-local)."""
    from ..ktxmlc import _label_vectors as vectors

    YtXn = _products.rounded(reduced[0])
    YtY = None if reduced[1] is None else _products.rounded(reduced[1])
    R = vectors(YtXn, YtY, representation, joint_weight)
    bad = reduced[0].n_inexact + (0 if reduced[1] is None else reduced[1].n_inexact)
    return R, int(bad)


def _concat_vectors(*ranges):
    R = sp.vstack([r[0] for r in ranges], format="csr")
    R.indptr = R.indptr.astype(np.int64)
    return R, int(sum(r[1] for r in ranges))


def _first(pair):
    return pair[0]


def _meta(pair):
    R, bad = pair
    return int(R.shape[1]), int(R.nnz), bad


def _cluster_group(block, positions, seeds, params):
    from ..ktxmlc import _cluster_node

    n_cols, K, balanced = params[:3]
    rest = params[3:]
    return [_cluster_node(block[np.asarray(pos, np.int64)], n_cols, K, balanced, int(s), *rest)
            for pos, s in zip(positions, seeds)]


def _label_index(block):
    Yc = sp.csc_matrix(block[1])
    return Yc.indptr.astype(np.int64), Yc.indices


def _node_piece(block, index, perm, lo, hi):
    """The rows of this block reaching a node (any of the labels ``perm[lo:hi]``)."""
    from ..ktxmlc import _k

    X, Y = block
    rows = _k.node_rows(index[0], index[1], perm, int(lo), int(hi), X.shape[0])
    return X[rows], Y[rows]


def _concat(*pieces):
    X = sp.vstack([p[0] for p in pieces], format="csr")
    Y = sp.vstack([p[1] for p in pieces], format="csr")
    return X, Y


def _train_batch(node_block, pos, lo, hi, seeds, d, solver):
    from ..ktxmlc import _k

    X, Y = node_block
    C, eps, max_iter, thr, bias = solver
    rows = np.arange(X.shape[0], dtype=np.int64)
    return _k.train_children(X.indptr.astype(np.int64), X.indices, X.data, d,
                             Y.indptr.astype(np.int64), Y.indices, pos, rows, lo, hi, seeds,
                             C, eps, max_iter, thr, bias)


# ---------------------------------------------------------------------------- hooks
class _Shape:
    """What ``_build_trees`` needs of R when the rows live on the cluster."""

    def __init__(self, n_rows, n_cols):
        self.shape = (int(n_rows), int(n_cols))


class _LastReport:
    """A progress callback that remembers its last report, so that a long wait can repeat
    it (letting a cancel through) without inventing progress."""

    def __init__(self, progress):
        self.progress = progress
        self.last = (0.0, "label representations computed")

    def __call__(self, fraction, message):
        self.last = (fraction, message)
        self.progress(fraction, message)

    def repeat(self):
        self.progress(*self.last)


class _ClusterLevels:
    def __init__(self, ex, groups, random_state, report=None):
        self.ex, self.groups, self.random_state = ex, groups, random_state
        self.report = report
        self.level_bytes = []
        self.level_seconds = []
        self.level_epochs = []
        self.level_nodes = []

    def __call__(self, split, trees, params):
        from ..ktxmlc import _node_seed

        if not split:
            return []
        t0, e0 = time.perf_counter(), time.time()
        b0 = self.ex.bytes_to_cluster + self.ex.bytes_from_cluster
        nodes = [(t, int(trees[t]["lo"][v]), int(trees[t]["hi"][v])) for t, v in split]
        plan = self.groups.plan(nodes, lambda t: trees[t]["perm"])
        subs = []
        for g, idx in plan:
            perm = trees[g.tree]["perm"]
            positions = [self.groups.positions(g, perm[nodes[i][1]:nodes[i][2]]) for i in idx]
            seeds = [_node_seed(self.random_state, split[i][0], split[i][1]) for i in idx]
            subs.append((idx, self.ex.submit(_cluster_group, g.block, positions, seeds, params,
                                             workers=self.groups.workers_of(g))))
        results = [None] * len(split)
        poll = None if self.report is None else self.report.repeat
        for (idx, _), res in zip(subs, self.ex.gather([f for _, f in subs], poll=poll)):
            for i, r in zip(idx, res):
                results[i] = r
        self.level_bytes.append(self.ex.bytes_to_cluster + self.ex.bytes_from_cluster - b0)
        self.level_seconds.append(time.perf_counter() - t0)
        self.level_epochs.append((e0, time.time()))
        self.level_nodes.append(len(split))
        return results


def _train(ex, est, blocks, trees, label_nnz, n, d, solver, report, window):
    """KTXMLC's training batches as tasks (see the module docstring, step 4)."""
    from ..ktxmlc import _assemble, _collect, _train_plan

    tasks = _train_plan(trees, label_nnz, n)
    perms = [ex.broadcast(tr["perm"]) for tr in trees]
    poss = [ex.broadcast(tr["_pos"]) for tr in trees]
    index = [ex.submit(_label_index, b) for b in blocks]
    by_node = {}
    for task in tasks:  # costliest nodes first, as the single machine orders them
        by_node.setdefault((task[1], task[2]), []).append(task)
    node_queue = deque(by_node)
    all_rows = [None]

    def node_block(t, v):
        if v == 0:  # a root's classifiers see every point
            if all_rows[0] is None:
                all_rows[0] = ex.submit(_concat, *blocks)
            return all_rows[0]
        tr = trees[t]
        pieces = [ex.submit(_node_piece, b, ix, perms[t], int(tr["lo"][v]), int(tr["hi"][v]))
                  for b, ix in zip(blocks, index)]
        return ex.submit(_concat, *pieces)

    queue = ex.completion_queue()
    pending = {}      # future key -> (task, node)
    left = {}         # node -> batches not finished
    held = {}         # node -> its row block future

    def start_next():
        t, v = node_queue.popleft()
        nb = node_block(t, v)
        held[(t, v)] = nb
        left[(t, v)] = len(by_node[(t, v)])
        for task in by_node[(t, v)]:
            _, _, _, c0, c1 = task
            lo, hi, seeds = est._batch_problem(trees[t], t, v, c0, c1)
            f = ex.submit(_train_batch, nb, poss[t], lo, hi, seeds, d, solver,
                          priority=int(min(task[0], 2.0 ** 40) // 1024))
            pending[getattr(f, "key", id(f))] = (task, (t, v))
            queue.add(f)

    for _ in range(min(window, len(node_queue))):
        start_next()

    poll = None if report is None else report.repeat

    def completed():
        while len(queue):
            f, res = queue.next(poll)
            task, node = pending.pop(getattr(f, "key", id(f)))
            left[node] -= 1
            if left[node] == 0:
                nb = held.pop(node)
                if nb is not all_rows[0]:
                    ex.release([nb])
                if node_queue:
                    start_next()
            yield task, (lambda r=res: r)

    results = _collect(completed(), len(tasks), report, 0.3)
    ex.release([all_rows[0]])
    return _assemble(trees, results, d)


# ---------------------------------------------------------------------------- twin
def ktxmlc_distributed(client, X, Y=None, *, progress=None, n_parts=None, retries=2,
                       **ktxmlc_params):
    """KTXMLC on a Dask cluster: a fitted :class:`~featagg_core.ktxmlc.KTXMLC` whose trees,
    weights and so predictions equal ``KTXMLC(**ktxmlc_params).fit(X, Y)``'s.

    Parameters
    ----------
    client : ``"serial"``, a ``dask.distributed.Client`` or a scheduler address.
    X, Y : as for ``KTXMLC.fit`` (cut into ``n_parts`` row blocks, scattered once), or
        ``X`` a :class:`ShardedMultiLabel` and ``Y=None``.
    progress : ``progress(fraction, message)`` as ``KTXMLC.fit`` takes it (the last report
        is repeated about every 0.5 s while tasks run); raising
        :class:`~featagg_core._cancel.Cancelled` from it cancels the outstanding tasks.
    n_parts : int, row blocks for in-memory input (default: one per worker thread, >= 2).
    retries : int, times the fit is run again from its inputs when workers die with
        results the scheduler cannot recompute (then :class:`ClusterError`).
    **ktxmlc_params : ``KTXMLC``'s parameters (``n_jobs`` is ignored: the cluster's
        threads decide).

    Returns
    -------
    KTXMLC, with ``distributed_info_`` (workers, blocks, groups, seconds per phase, bytes,
    per-level bytes of the tree growth, ``n_inexact``).
    """
    from ..ktxmlc import KTXMLC, _check_X, _check_Y

    try:
        est = KTXMLC(**ktxmlc_params)
    except TypeError as exc:
        raise ValueError(f"ktxmlc_distributed: {exc}") from None
    est._tree_params()
    est._solver_params()
    if not isinstance(X, ShardedMultiLabel):  # validated once, scattered per attempt
        X = _check_X(X)
        if Y is None:
            raise ValueError("Y: KTXMLC needs the label matrix Y (n x L, 0/1)")
        Y = _check_Y(Y, X.shape[0])
    fitted = with_retries(lambda attempt: _fit_once(client, X, Y, est, progress, n_parts,
                                                    attempt), retries)
    if progress is not None:
        progress(1.0, "done")
    return fitted


def _fit_once(client, X, Y, est, progress, n_parts, attempt):
    """One attempt of :func:`ktxmlc_distributed` (a fresh executor: see ``with_retries``)."""
    from ..ktxmlc import _build_trees

    tree_args = est._tree_params()
    C, eps, max_iter, thr, bias, _ = est._solver_params()
    times = {}
    phases = []  # (name, epoch start, epoch end)
    t0, e0 = time.perf_counter(), time.time()
    with Executor(client) as ex:
        blocks = row_blocks(ex, X, Y, n_parts, lambda X_, Y_: (X_, Y_))
        n, d, L = blocks.n_samples, blocks.n_features, blocks.n_labels
        futs = [ex.submit(_normalized, b, bool(est.normalize)) for b in blocks.futures]
        times["blocks_s"] = time.perf_counter() - t0
        t1, e1 = time.perf_counter(), time.time()
        phases.append(("blocks", e0, e1))
        joint = est.representation == "joint"
        parts = [ex.submit(_partials, joint, *fs, workers=None if w is None else [w])
                 for w, fs in local_groups(ex, futs)]
        vec = reduce_scatter(ex, parts, L, _slice_pair, _merge_pair, _label_vectors,
                             _concat_vectors, finish_args=(est.representation,
                                                           est.joint_weight))
        R = ex.submit(_first, vec)
        counts = tree_reduce(ex, [ex.submit(label_counts, b, L) for b in futs], add_counts)
        (n_cols, nnz_R, n_inexact), label_nnz = ex.gather([ex.submit(_meta, vec), counts])
        del vec, parts
        times["representation_s"] = time.perf_counter() - t1
        e2 = time.time()
        phases.append(("representation", e1, e2))
        report = None if progress is None else _LastReport(progress)
        if report is not None:
            report(0.0, "label representations computed")
        t2 = time.perf_counter()
        groups = RowGroups(ex, R, L, n_trees=tree_args[0])
        del R
        levels = _ClusterLevels(ex, groups, est.random_state, report)
        trees = _build_trees(_Shape(L, n_cols), *tree_args, est.random_state, None, report,
                             cluster_level=levels)
        n_groups = groups.n_groups()
        del groups
        times["trees_s"] = time.perf_counter() - t2
        e3 = time.time()
        phases += [(f"level {i + 1}", a, b) for i, (a, b) in enumerate(levels.level_epochs)]
        W, bw, off = _train(ex, est, futs, trees, np.asarray(label_nnz, np.int64), n, d,
                            (C, eps, max_iter, thr, bias), report,
                            window=2 * ex.total_threads())
        times["train_s"] = time.time() - e3
        phases.append(("classifiers", e3, time.time()))
        est._finalise((n, d), L, trees, W, bw, off, bias)
        est.train_time_ = time.perf_counter() - t0
        est.distributed_info_ = {
            "workers": 1 if ex.serial else len(ex.workers()), "blocks": len(futs),
            "groups": n_groups, "n_inexact": int(n_inexact), "nnz_R": int(nnz_R),
            "bytes_to_cluster": int(ex.bytes_to_cluster),
            "bytes_from_cluster": int(ex.bytes_from_cluster),
            "level_bytes": [int(b) for b in levels.level_bytes],
            "level_seconds": [float(s) for s in levels.level_seconds],
            "level_nodes": levels.level_nodes,
            "tasks": int(ex.n_tasks), **times, "seconds": est.train_time_,
            "phases": phases, "attempts": attempt + 1}
    return est
