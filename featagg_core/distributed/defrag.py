"""``defrag_distributed``: DEFRAG on a Dask cluster, equal to ``Defrag(...).fit``.

1. Rows of X (and Y) are row blocks on the workers (scattered once, or read there by
   ``load_xc_shards``).
2. The feature representation is a tree reduction of per-block partial products: for
   ``"XY"`` one exact partial ``X_wᵀ Y_w`` per worker over the blocks it holds
   (double-double, see :mod:`featagg_core.utils.products`), summed by row ranges on
   different workers (``reduce_scatter``), rounded once and normalised per range; for ``"X"`` each block's ``X_kᵀ`` (its columns of R), concatenated in row
   order. Then the single machine's ``normalize_prune`` on the result. Sampling options
   (``sample_points``, ``sample_labels``) pick the same rows / labels from gathered row
   and label counts.
3. The tree is grown by DEFRAG's own level loop (``defrag._grow_tree``); each level's
   nodes run as tasks on the groups of :mod:`.groups` (several nodes per task, the node
   kernel ``split_level``), so only member positions and new orders travel.
4. The SSE of every leaf is computed where its group lives; ``Defrag._set_fitted`` makes
   the estimator.

Same kernels, same node seeds, same summation order inside every node, an exact
representation: the labels, tree and clustering error equal the single-machine fit's.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from featagg_core.utils import products as _products
from featagg_core.distributed.blocks import (
    add_counts,
    label_counts,
    local_groups,
    reduce_scatter,
    row_blocks,
    row_nnz,
    select_labels,
    select_rows,
    tree_reduce,
)
from featagg_core.distributed.blocks import ShardedMultiLabel  # noqa: E402 (kept apart: the input type)
from featagg_core.distributed.executor import Executor, with_retries
from featagg_core.distributed.groups import RowGroups

__all__ = ["defrag_distributed"]


# ---------------------------------------------------------------------------- tasks
def _partial_xy(*blocks):
    """The exact partial ``XᵀY`` of the row blocks one worker holds."""
    return _products.partial_xt_y([b[0] for b in blocks], [b[1] for b in blocks])


def _partial_x(block, start, n_rows):
    """This block's columns of R = Xᵀ (global point ids as column indices)."""
    X = block[0]
    C = sp.csr_matrix(X.T)  # d x n_k, sorted indices
    C.sort_indices()
    return sp.csr_matrix((C.data, C.indices.astype(np.int64) + int(start), C.indptr),
                         shape=(X.shape[1], int(n_rows)))


def _add_disjoint(a, b):
    """Rows of two column ranges of Xᵀ side by side: ``a`` holds the earlier points, so
    per row its entries come first (a concatenation: no arithmetic, no rounding)."""
    na = np.diff(a.indptr)
    nb = np.diff(b.indptr)
    ptr = np.r_[0, np.cumsum(na + nb)].astype(np.int64)
    ind = np.empty(ptr[-1], np.int64)
    dat = np.empty(ptr[-1], np.float32)
    rows_a = np.repeat(np.arange(a.shape[0]), na)
    rows_b = np.repeat(np.arange(b.shape[0]), nb)
    pos_a = ptr[rows_a] + (np.arange(a.nnz) - a.indptr[rows_a])
    pos_b = ptr[rows_b] + na[rows_b] + (np.arange(b.nnz) - b.indptr[rows_b])
    ind[pos_a], dat[pos_a] = a.indices, a.data
    ind[pos_b], dat[pos_b] = b.indices, b.data
    return sp.csr_matrix((dat, ind, ptr), shape=a.shape)


def _slice_partial(p, lo, hi):
    return p.rows(lo, hi, keep_count=lo == 0)


def _finish_range(R, lo, prune_threshold):
    """``_finish`` of the rows ``lo:`` of the representation (normalising is row-local)."""
    out, zero, n_inexact = _finish(R, prune_threshold)
    return out, zero + int(lo), n_inexact


def _concat_finished(*ranges):
    R = sp.vstack([r[0] for r in ranges], format="csr")
    return (R, np.concatenate([r[1] for r in ranges]).astype(np.int64),
            int(sum(r[2] for r in ranges)))


def _finish(R, prune_threshold):
    """Round (XY) and normalise the reduced representation exactly as ``feature_representation``."""
    from featagg_core.agglomeration.defrag import _k

    n_inexact = 0
    if isinstance(R, _products.Partial):
        n_inexact = R.n_inexact
        R = _products.rounded(R)
    R = sp.csr_matrix(R)
    R.sort_indices()
    indptr, indices, data, _ = _k.normalize_prune(
        R.indptr.astype(np.int64), R.indices.astype(np.int32), R.data.astype(np.float32),
        float(prune_threshold))
    out = sp.csr_matrix((data, indices, indptr), shape=R.shape)
    zero = np.flatnonzero(np.diff(indptr) == 0).astype(np.int64)
    return out, zero, n_inexact


def _finished_matrix(res):
    return res[0]


def _finished_meta(res):
    R, zero, n_inexact = res
    return zero, n_inexact, int(R.nnz), int(R.shape[1])


def _split_group(block, seg, starts, sizes, ids, seed, eps, max_iter):
    """Split the given nodes of one group (positions relative to the group's order
    segment ``seg``, which indexes the block's rows). Returns (new seg, rounds)."""
    from featagg_core.agglomeration.defrag import _k, _n_chunks

    from featagg_core.utils.polling import new_stop

    seg = np.array(seg, np.int64)
    it = _k.split_level(block.indptr.astype(np.int64, copy=False),
                        block.indices.astype(np.int32, copy=False),
                        block.data.astype(np.float32, copy=False), block.shape[1], seg,
                        np.asarray(starts, np.int64), np.asarray(sizes, np.int64),
                        np.asarray(ids, np.int64), seed, eps, max_iter, _n_chunks(),
                        new_stop())
    return seg, it


def _group_sse(block, seg, starts, sizes):
    from featagg_core.agglomeration.defrag import _k, _n_chunks

    return _k.cluster_sse(block.indptr.astype(np.int64, copy=False),
                          block.indices.astype(np.int32, copy=False),
                          block.data.astype(np.float32, copy=False), block.shape[1],
                          np.asarray(seg, np.int64), np.asarray(starts, np.int64),
                          np.asarray(sizes, np.int64), _n_chunks())


# ---------------------------------------------------------------------------- levels
class _Levels:
    """The ``split_level`` DEFRAG's level loop calls: one task per group."""

    def __init__(self, ex, groups, seed, eps, max_iter):
        self.ex, self.groups = ex, groups
        self.seed, self.eps, self.max_iter = seed, eps, max_iter
        self.level_bytes = []
        self.level_seconds = []
        self.level_epochs = []
        self.level_nodes = []

    def __call__(self, order, s_start, s_size, s_ids, tick=None):
        t0 = time.perf_counter()
        e0 = time.time()
        b0 = self.ex.bytes_to_cluster + self.ex.bytes_from_cluster
        nodes = [(0, int(a), int(a + n)) for a, n in zip(s_start, s_size)]
        plan = self.groups.plan(nodes, lambda t: order)
        subs = []
        for g, idx in plan:
            idx = np.asarray(idx, np.int64)
            seg = self.groups.positions(g, order[g.lo:g.hi])
            fut = self.ex.submit(_split_group, g.block, seg, s_start[idx] - g.lo, s_size[idx],
                                 s_ids[idx], self.seed, self.eps, self.max_iter,
                                 workers=self.groups.workers_of(g))
            subs.append((g, idx, fut))
        # tick: DEFRAG's heartbeat (repeats the last report; that is where a cancel comes)
        res = self.ex.gather([f for _, _, f in subs], poll=tick, every=0.2)
        iters = np.zeros(len(s_ids), np.int32)
        for (g, idx, _), (seg, it) in zip(subs, res):
            order[g.lo:g.hi] = g.rows[seg]
            iters[idx] = it
        self.level_bytes.append(self.ex.bytes_to_cluster + self.ex.bytes_from_cluster - b0)
        self.level_seconds.append(time.perf_counter() - t0)
        self.level_epochs.append((e0, time.time()))
        self.level_nodes.append(int(len(s_ids)))
        return iters


# ---------------------------------------------------------------------------- twin
def defrag_distributed(client, X, Y=None, d0=8, representation="XY", random_state=0, *,
                       progress=None, n_parts=None, retries=2, **params):
    """DEFRAG on a Dask cluster: a fitted :class:`~featagg_core.agglomeration.defrag.Defrag` equal to
    ``Defrag(d0, representation, random_state, **params).fit(X, Y)`` (same ``labels_``,
    ``tree_``, ``clustering_error_``).

    Parameters
    ----------
    client : ``"serial"``, a ``dask.distributed.Client`` or a scheduler address.
    X, Y : matrices as for ``Defrag.fit`` (cut into ``n_parts`` row blocks and scattered
        once), or ``X`` a :class:`ShardedMultiLabel` from :func:`load_xc_shards` and
        ``Y=None``.
    d0, representation, random_state, **params : ``Defrag``'s parameters.
    progress : ``progress(level, n_levels)`` as ``Defrag.fit`` calls it: ``(0, n)`` at the
        start, after each level, and repeated while tasks run (about every 0.2-0.5 s);
        raising :class:`~featagg_core.utils.cancel.Cancelled` from it cancels the outstanding
        tasks and re-raises.
    n_parts : int, row blocks for in-memory input (default: one per worker thread, >= 2).
    retries : int, times the fit is run again from its inputs when workers die with
        results the scheduler cannot recompute (then :class:`ClusterError`).

    Returns
    -------
    Defrag, with ``distributed_info_``: workers, blocks, groups, seconds per phase, bytes
    sent to / gathered from the cluster, per-level bytes, ``n_inexact`` (additions that
    could not be kept exact; 0 means the representation is bit-identical).
    """
    from featagg_core.agglomeration.defrag import Defrag

    try:
        est = Defrag(d0=d0, representation=representation, random_state=random_state,
                     **params)
    except TypeError as exc:
        raise ValueError(f"defrag_distributed: {exc}") from None
    est._check_params()
    if not isinstance(X, ShardedMultiLabel):  # validated once, scattered per attempt
        X, Y = est._check_fit_input(X, Y)
    return with_retries(lambda attempt: _fit_once(client, X, Y, est, progress, n_parts,
                                                  attempt), retries)


def _fit_once(client, X, Y, est, progress, n_parts, attempt):
    """One attempt of :func:`defrag_distributed` (a fresh executor: see ``with_retries``)."""
    from featagg_core.agglomeration.defrag import _grow_tree, _top_fraction, balanced_depth_cap

    need_y = est.representation == "XY"
    times = {}
    phases = []  # (name, epoch start, epoch end): the benchmark buckets transfers by them
    t0, e0 = time.perf_counter(), time.time()
    with Executor(client) as ex:
        blocks = row_blocks(ex, X, Y, n_parts, lambda X_, Y_: (X_, Y_))
        if need_y and blocks.n_labels is None:
            raise ValueError("representation='XY' needs the label matrix Y; pass Y or use "
                             "representation='X'")
        futs, starts = blocks.futures, blocks.starts
        d = blocks.n_features
        if d < 1:
            raise ValueError("X has no features (0 columns)")
        n_rows = blocks.n_samples
        cap = balanced_depth_cap(d, int(est.d0))
        poll = None  # as Defrag.fit: (0, n_levels) at the start and while R is built
        if progress is not None:
            progress(0, cap)

            def poll():
                progress(0, cap)
        if float(est.sample_points) < 1.0:
            nnz = np.concatenate(ex.gather([ex.submit(row_nnz, b) for b in futs], poll=poll))
            rows = _top_fraction(nnz, float(est.sample_points))
            sel = [rows[(rows >= a) & (rows < b)] - a for a, b in zip(starts[:-1], starts[1:])]
            futs = [ex.submit(select_rows, b, s) for b, s in zip(futs, sel)]
            starts = np.r_[0, np.cumsum([len(s) for s in sel])].astype(np.int64)
            n_rows = int(starts[-1])
        if need_y and float(est.sample_labels) < 1.0:
            counts = ex.gather([tree_reduce(ex, [ex.submit(label_counts, b, blocks.n_labels)
                                                 for b in futs], add_counts)], poll=poll)[0]
            cols = _top_fraction(counts, float(est.sample_labels))
            futs = [ex.submit(select_labels, b, cols) for b in futs]
        times["blocks_s"] = time.perf_counter() - t0
        t1, e1 = time.perf_counter(), time.time()
        phases.append(("blocks", e0, e1))
        if need_y:
            parts = [ex.submit(_partial_xy, *fs, workers=None if w is None else [w])
                     for w, fs in local_groups(ex, futs)]
            finished = reduce_scatter(ex, parts, d, _slice_partial, _products.merge,
                                      _finish_range, _concat_finished,
                                      finish_args=(float(est.prune_threshold),))
        else:
            parts = [ex.submit(_partial_x, b, int(a), n_rows) for b, a in zip(futs, starts[:-1])]
            reduced = tree_reduce(ex, parts, _add_disjoint)
            finished = ex.submit(_finish, reduced, float(est.prune_threshold))
            del reduced
        R = ex.submit(_finished_matrix, finished)
        zero, n_inexact, nnz_R, _ = ex.gather([ex.submit(_finished_meta, finished)],
                                              poll=poll)[0]
        del finished, parts
        times["representation_s"] = time.perf_counter() - t1
        phases.append(("representation", e1, time.time()))
        t2 = time.perf_counter()
        groups = RowGroups(ex, R, d)
        del R
        levels = _Levels(ex, groups, int(est.random_state) & 0xFFFFFFFFFFFFFFFF,
                         float(est.eps), int(est.max_iter))
        tree = _grow_tree(d, int(est.d0), levels, progress)
        times["tree_s"] = time.perf_counter() - t2
        phases += [(f"level {i + 1}", a, b) for i, (a, b) in enumerate(levels.level_epochs)]
        t3, e3 = time.perf_counter(), time.time()
        leaves = tree.leaves()
        l_start, l_size = tree.start[leaves], tree.n_members[leaves]
        subs = []
        for g in groups.all_groups():
            inside = (l_start >= g.lo) & (l_start < g.hi)
            seg = groups.positions(g, tree.order[g.lo:g.hi])
            subs.append(ex.submit(_group_sse, g.block, seg, l_start[inside] - g.lo,
                                  l_size[inside], workers=groups.workers_of(g)))
        sse = np.concatenate(ex.gather(subs))
        times["sse_s"] = time.perf_counter() - t3
        phases.append(("leaf SSE", e3, time.time()))
        est._set_fitted(tree, sse, zero)
        est.distributed_info_ = {
            "workers": 1 if ex.serial else len(ex.workers()), "blocks": len(futs),
            "groups": groups.n_groups(), "n_inexact": int(n_inexact), "nnz_R": int(nnz_R),
            "bytes_to_cluster": int(ex.bytes_to_cluster),
            "bytes_from_cluster": int(ex.bytes_from_cluster),
            "level_bytes": [int(b) for b in levels.level_bytes],
            "level_seconds": [float(s) for s in levels.level_seconds],
            "level_nodes": levels.level_nodes,
            "tasks": int(ex.n_tasks), **times, "seconds": time.perf_counter() - t0,
            "phases": phases, "attempts": attempt + 1}
    return est
