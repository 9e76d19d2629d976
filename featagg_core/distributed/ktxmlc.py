"""``ktxmlc_distributed``: KTXMLC on a Dask cluster, equal to ``KTXMLC(...).fit``.

The fit is KTXMLC's own pipeline (:mod:`featagg_core.xmlc.tree_fitting`), run where the data
lives:

0. ``form="auto"`` (the default): KTXMLC's choice of form
   (:mod:`featagg_core.xmlc.form_choice`) runs in this process, on the same rows as on one
   machine -- :func:`~featagg_core.xmlc.form_choice.carve_rows` over the global row
   numbering (for shards, the rows of the data loaded as one matrix). In-memory input is
   indexed here; from a :class:`ShardedMultiLabel` only the carved rows travel to this
   process (``ShardedMultiLabel.take_rows``: each block sends its own carved rows), at
   most ``round(0.2 n)`` validation rows plus ``MAX_FIT_ROWS`` (50,000) candidate rows,
   however large the data. The winner is then fitted on the cluster on all rows (steps
   1-5), as ``KTXMLC.fit`` refits it.
1. Row blocks of X, Y on the workers; each block is row-normalised there (as ``fit``:
   row-local).
2. Label vectors: one exact partial ``Y_wᵀ normalize(X_w)`` per worker over its blocks
   (and ``Y_wᵀ Y_w`` for ``"joint"``), summed by label ranges on different workers
   (``reduce_scatter``) and rounded once: the bits of the single machine's
   :class:`~featagg_core.utils.products.ExactRows` product. Then ``core.unit_rows`` (and
   ``label_vectors.joint_vectors``), both row-local, per range. Label frequencies are summed from
   per-block counts.
3. Trees: ``core.build_trees`` with a ``partition`` hook that runs each level's nodes of
   *all* trees (``core.partition_node``, same items and seeds) as tasks on the groups of
   :mod:`.groups` (the workers holding those labels' vectors, several nodes per task;
   trees start on different workers and grow in parallel).
4. Classifiers: ``core.training_tasks_for`` (the single machine's batches, in its order).
   For a node, every block selects its rows reaching the node on its own worker
   (``node_rows`` on the block's labels); the pieces are concatenated in row order
   where the node's batches run, and ``core.train_rows`` trains each batch on exactly
   the rows (same order, same features) the single machine uses, with the batch's
   ``core.batch_problem`` (label ranges, seeds, loss) computed on the driver. A task
   ships that node's rows, never the whole X; the calibration sample goes by position
   among the node's rows, so it needs no global row ids. Only a root's batches see
   every point (as on one machine): one concatenation of the blocks, fetched by a
   worker at most once; they are cut into up to two pieces per worker thread
   (:func:`_split_root_batches`: the same model, and no root batch bounds the
   speed-up). At most ``2 x threads`` nodes are in flight (bounded memory).
5. ``core.assemble_weights`` and ``core.calibration`` on the results in task order, then
   ``_finalise``: trees, weights, calibration and so predictions equal the single fit's.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from featagg_core.xmlc import tree_fitting as core
from featagg_core.utils import products as _products
from featagg_core.distributed.blocks import (
    add_counts,
    label_counts,
    local_groups,
    reduce_scatter,
    row_blocks,
    tree_reduce,
)
from featagg_core.distributed.blocks import ShardedMultiLabel  # noqa: E402 (kept apart: the input type)
from featagg_core.distributed.executor import Executor, with_retries
from featagg_core.distributed.groups import RowGroups

__all__ = ["ktxmlc_distributed"]


# ---------------------------------------------------------------------------- tasks
def _normalized(block, normalize):
    from featagg_core.xmlc.inputs import normalize_rows

    X, Y = block
    return (normalize_rows(X) if normalize else X), Y


def _partials(joint, *blocks):
    """The exact partials ``Yᵀ normalize(X)`` (and ``YᵀY``) of one worker's blocks (the
    label vectors normalise the rows again, as ``label_vectors.label_representation`` does)."""
    from featagg_core.xmlc.inputs import normalize_rows

    Ys = [b[1] for b in blocks]
    p = _products.partial_xt_y(Ys, [normalize_rows(b[0]) for b in blocks])
    return (p, _products.partial_xt_y(Ys, Ys) if joint else None)


def _merge_pair(a, b):
    return (_products.merge(a[0], b[0]),
            None if a[1] is None else _products.merge(a[1], b[1]))


def _slice_pair(pair, lo, hi):
    return tuple(None if p is None else p.rows(lo, hi, keep_count=lo == 0) for p in pair)


def _label_vectors(reduced, lo, representation, joint_weight):
    """KTXMLC's label vectors of the labels ``lo:`` (every step is row-local)."""
    from featagg_core.xmlc.label_vectors import joint_vectors

    R = core.unit_rows(_products.rounded(reduced[0]))
    if representation == "joint":
        R = joint_vectors(R, _products.rounded(reduced[1]), joint_weight)
    bad = reduced[0].n_inexact + (0 if reduced[1] is None else reduced[1].n_inexact)
    return R, int(bad)


def _concat_vectors(*ranges):
    n_cols = ranges[0][0].shape[1]
    return core.concat_rows([r[0] for r in ranges], n_cols), int(sum(r[1] for r in ranges))


def _first(pair):
    return pair[0]


def _meta(pair):
    R, bad = pair
    return int(R.shape[1]), int(R.nnz), bad


def _partition_group(block, jobs, spec):
    """``core.partition_node`` for several nodes whose label vectors are rows of ``block``
    (``jobs``: (block positions, groups wanted, seed) per node)."""
    return [core.partition_node(block, np.asarray(pos, np.int64), int(ng), int(seed), spec)
            for pos, ng, seed in jobs]


def _label_index(block):
    import scipy.sparse as sp

    Yc = sp.csc_matrix(block[1])
    return Yc.indptr.astype(np.int64), Yc.indices


def _node_piece(block, index, perm, lo, hi):
    """The rows of this block reaching a node (any of the labels ``perm[lo:hi]``), in
    row order."""
    from featagg_core.xmlc.ktxmlc import _k

    X, Y = block
    rows = _k.node_rows(index[0], index[1], perm, int(lo), int(hi))
    return X[rows], Y[rows]


def _concat(*pieces):
    import scipy.sparse as sp

    X = sp.vstack([p[0] for p in pieces], format="csr")
    Y = sp.vstack([p[1] for p in pieces], format="csr")
    return X, Y


def _train_batch(node_block, pos, problem, solver):
    """``core.train_rows`` on every row of a node's block (they are the node's rows)."""
    X, Y = node_block
    rows = np.arange(X.shape[0], dtype=np.int64)
    return core.train_rows(X, Y, rows, pos, problem, solver, np.zeros(1, np.uint8))


# ---------------------------------------------------------------------------- hooks
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


class _PartitionLevels:
    """``core.build_trees``' ``partition`` hook: a level's nodes as tasks on the groups
    holding their label vectors."""

    def __init__(self, ex, groups, spec, report=None):
        self.ex, self.groups, self.spec = ex, groups, spec
        self.report = report
        self.level_bytes = []
        self.level_seconds = []
        self.level_epochs = []
        self.level_nodes = []

    def __call__(self, split, items, trees):
        t0, e0 = time.perf_counter(), time.time()
        b0 = self.ex.bytes_to_cluster + self.ex.bytes_from_cluster
        nodes = [(t, int(trees[t]["lo"][v]), int(trees[t]["hi"][v])) for t, v in split]
        plan = self.groups.plan(nodes, lambda t: trees[t]["perm"])
        subs = []
        for g, idx in plan:
            jobs = [(self.groups.positions(g, items[i][0]), items[i][1], items[i][2])
                    for i in idx]
            subs.append((idx, self.ex.submit(_partition_group, g.block, jobs, self.spec,
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


def _split_root_batches(tasks, pieces):
    """The tasks with every root batch cut into up to ``pieces`` batches of consecutive
    children (order kept). A root's classifiers see every point, so one root batch is the
    longest task of a fit (16 classifiers over all rows with K = 16); cut, they run on
    different workers. The model does not change: each classifier is trained on the same
    rows with the same seeds (``core.batch_problem``: the squared-hinge block solver's
    visiting order comes from the node, not the batch, and gives every label the same
    iterates in any grouping), and the calibration histograms are sums of integer weights,
    exact in any grouping."""
    out = []
    for task in tasks:
        m = task.c1 - task.c0
        k = min(m, pieces) if task.node == 0 else 1
        cuts = np.round(np.linspace(task.c0, task.c1, k + 1)).astype(np.int64)
        for a, b in zip(cuts[:-1], cuts[1:]):
            out.append(core.TrainTask(task.tree, task.node, int(a), int(b),
                                      task.cost * (b - a) / m))
    return out


def _train(ex, blocks, trees, label_nnz, n, solver, report, window, lo=0.12, hi=0.99):
    """KTXMLC's training batches as tasks (see the module docstring, step 4). Returns the
    tasks and their results, in task order."""
    threads = ex.total_threads()
    tasks = core.training_tasks_for(trees, label_nnz, n)
    if threads > 1:
        tasks = _split_root_batches(tasks, 2 * threads)
    perms = [ex.broadcast(tr["perm"]) for tr in trees]
    poss = [ex.broadcast(core.label_positions(tr)) for tr in trees]
    index = [ex.submit(_label_index, b) for b in blocks]
    by_node = {}
    for i, task in enumerate(tasks):  # costliest nodes first, as the single machine
        by_node.setdefault((task.tree, task.node), []).append(i)
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
    pending = {}      # future key -> (task index, node)
    left = {}         # node -> batches not finished
    held = {}         # node -> its row block future

    def start_next():
        t, v = node_queue.popleft()
        nb = node_block(t, v)
        held[(t, v)] = nb
        left[(t, v)] = len(by_node[(t, v)])
        for i in by_node[(t, v)]:
            task = tasks[i]
            problem = core.batch_problem(trees[t], task, solver)
            f = ex.submit(_train_batch, nb, poss[t], problem, solver,
                          priority=int(min(task.cost, 2.0 ** 40) // 1024))
            pending[getattr(f, "key", id(f))] = (i, (t, v))
            queue.add(f)

    for _ in range(min(window, len(node_queue))):
        start_next()

    poll = None if report is None else report.repeat
    results = [None] * len(tasks)
    total = float(sum(t.cost for t in tasks)) or 1.0
    done_cost, n_done = 0.0, 0
    while len(queue):
        f, res = queue.next(poll)
        i, node = pending.pop(getattr(f, "key", id(f)))
        results[i] = res
        done_cost += tasks[i].cost
        n_done += 1
        left[node] -= 1
        if left[node] == 0:
            nb = held.pop(node)
            if nb is not all_rows[0]:
                ex.release([nb])
            if node_queue:
                start_next()
        if report is not None:
            report(lo + (hi - lo) * done_cost / total,
                   f"classifiers: node batches trained: {n_done}/{len(tasks)}")
    ex.release([all_rows[0]])
    return tasks, results


# ---------------------------------------------------------------------------- twin
def ktxmlc_distributed(client, X, Y=None, *, progress=None, n_parts=None, retries=2,
                       **ktxmlc_params):
    """KTXMLC on a Dask cluster: a fitted :class:`~featagg_core.xmlc.ktxmlc.KTXMLC` whose trees,
    weights and so predictions equal ``KTXMLC(**ktxmlc_params).fit(X, Y)``'s.

    Parameters
    ----------
    client : ``"serial"``, a ``dask.distributed.Client`` or a scheduler address.
    X, Y : as for ``KTXMLC.fit`` (cut into ``n_parts`` row blocks, scattered once), or
        ``X`` a :class:`ShardedMultiLabel` and ``Y=None``.
    progress : ``progress(fraction, message)`` as ``KTXMLC.fit`` takes it (the last report
        is repeated about every 0.5 s while tasks run); raising
        :class:`~featagg_core.utils.cancel.Cancelled` from it cancels the outstanding tasks.
    n_parts : int, row blocks for in-memory input (default: one per worker thread, >= 2).
    retries : int, times the fit is run again from its inputs when workers die with
        results the scheduler cannot recompute (then :class:`ClusterError`).
    **ktxmlc_params : ``KTXMLC``'s parameters (``n_jobs`` is ignored: the cluster's
        threads decide).

    Returns
    -------
    KTXMLC, with ``form_``, ``C_``, ``choice_``, ``selection_`` as ``KTXMLC.fit`` sets them
    (with ``form="auto"`` the choice is made in this process on the rows the single machine
    carves; on a :class:`ShardedMultiLabel` only those rows are gathered from the workers,
    bounded by ``form_choice.MAX_FIT_ROWS`` plus the validation rows) and
    ``distributed_info_`` (workers, blocks, groups, seconds per phase, bytes, per-level
    bytes of the tree growth, ``n_inexact``, ``choice_rows_gathered``: rows gathered from
    shards for the choice, 0 otherwise).
    """
    from featagg_core.xmlc.inputs import check_X, check_Y
    from featagg_core.xmlc.ktxmlc import KTXMLC

    try:
        est = KTXMLC(**ktxmlc_params)
    except TypeError as exc:
        raise ValueError(f"ktxmlc_distributed: {exc}") from None
    est._fit_plan(1)          # validates the tree and calibration parameters
    est._solver_spec(0)
    est._score_power()
    if not isinstance(X, ShardedMultiLabel):  # validated once, scattered per attempt
        X = check_X(X)
        if Y is None:
            raise ValueError("Y: KTXMLC needs the label matrix Y (n x L, 0/1)")
        Y = check_Y(Y, X.shape[0])
    choice = None
    gathered = 0
    if est.form == "auto":
        # KTXMLC(form="auto")'s choice: its candidates are fitted here, in-process, on at
        # most form_choice.MAX_FIT_ROWS rows; the cluster then fits the winner on all rows
        # (as KTXMLC.fit refits it), so the twin stays the single-machine model
        if isinstance(X, ShardedMultiLabel):
            form, C, table, reason, gathered = _choose_on_shards(est, X)
        else:
            form, C, table, reason = est._choose_form(X, Y, None)
        params = {**est.get_params(deep=False), "form": form, "C": C}
        if table:
            params["one_vs_all"] = "never"
        choice = (KTXMLC(**params), table, reason)
    run = est if choice is None else choice[0]
    fitted = with_retries(lambda attempt: _fit_once(client, X, Y, run, progress, n_parts,
                                                    attempt), retries)
    fitted.C_ = float(run.C)
    fitted.form_ = "flat" if (len(fitted.trees_) == 1 and int(
        fitted.trees_[0]["n_children"][0]) == fitted.n_labels_) else "trees"
    fitted.selection_ = [] if choice is None else choice[1]
    fitted.choice_ = f"{run.form} as set (C = {float(run.C):g})" if choice is None \
        else choice[2]
    if choice is not None:
        fitted.set_params(form="auto", C=est.C, one_vs_all=est.one_vs_all)
    fitted.distributed_info_["choice_rows_gathered"] = int(gathered)
    if progress is not None:
        progress(1.0, "done")
    return fitted


def _choose_on_shards(est, h):
    """``est._choose_form`` on a :class:`ShardedMultiLabel`: the rows
    :func:`~featagg_core.xmlc.form_choice.carve_rows` carves over the handle's global row
    numbering (the rows of the same data loaded as one matrix) are gathered from the
    workers -- each block sends only its carved rows, at most ``round(0.2 n) +
    MAX_FIT_ROWS`` rows in all, never the whole matrix -- and the single machine's choice
    runs on them here. Returns ``(form, C, table, reason, rows gathered)``."""
    from featagg_core.xmlc import form_choice as fc
    from featagg_core.xmlc.inputs import check_X, check_Y

    n = int(h.n_samples)
    rows = fc.carved_rows(n, int(est.random_state))
    if rows.size:
        Xg, Yg = h.take_rows(rows)
        Xg = check_X(Xg)           # the canonical rows KTXMLC.fit would index
        Yg = check_Y(Yg, Xg.shape[0])
    else:
        Xg = Yg = None

    def take(wanted):
        at = np.searchsorted(rows, wanted)
        return Xg[at], Yg[at]

    form, C, table, reason = est._choose_form_rows(n, int(h.n_labels), take, None)
    return form, C, table, reason, int(rows.size)


def _fit_once(client, X, Y, est, progress, n_parts, attempt):
    """One attempt of :func:`ktxmlc_distributed` (a fresh executor: see ``with_retries``)."""
    times = {}
    phases = []  # (name, epoch start, epoch end)
    t0, e0 = time.perf_counter(), time.time()
    report = None if progress is None else _LastReport(progress)
    with Executor(client) as ex:
        blocks = row_blocks(ex, X, Y, n_parts, lambda X_, Y_: (X_, Y_))
        n, d, L = blocks.n_samples, blocks.n_features, blocks.n_labels
        spec, n_trees, calib = est._fit_plan(L)
        solver = est._solver_spec(calib)
        futs = [ex.submit(_normalized, b, bool(est.normalize)) for b in blocks.futures]
        if report is not None:
            report(0.0, "rows normalised")
        times["blocks_s"] = time.perf_counter() - t0
        t1, e1 = time.perf_counter(), time.time()
        phases.append(("blocks", e0, e1))
        joint = est.representation == "joint"
        parts = [ex.submit(_partials, joint, *fs, workers=None if w is None else [w])
                 for w, fs in local_groups(ex, futs)]
        vec = reduce_scatter(ex, parts, L, _slice_pair, _merge_pair, _label_vectors,
                             _concat_vectors, finish_args=(est.representation,
                                                           float(est.joint_weight)))
        R = ex.submit(_first, vec)
        counts = tree_reduce(ex, [ex.submit(label_counts, b, L) for b in futs], add_counts)
        poll = None if report is None else report.repeat
        (n_cols, nnz_R, n_inexact), label_nnz = ex.gather([ex.submit(_meta, vec), counts],
                                                          poll=poll)
        del vec, parts
        times["representation_s"] = time.perf_counter() - t1
        e2 = time.time()
        phases.append(("representation", e1, e2))
        if report is not None:
            report(0.02, "label representations computed")
        t2 = time.perf_counter()
        if est.form == "flat":
            n_trees = 1           # the flat model: no trees to grow (as KTXMLC.fit)
        groups = RowGroups(ex, R, L, n_trees=n_trees)
        del R
        levels = _PartitionLevels(ex, groups, spec, report)
        trees = core.build_trees(None, spec, n_trees, None, progress=report, lo=0.02,
                                 hi=0.12, partition=levels, n_labels=L)
        n_groups = groups.n_groups()
        del groups
        if est.form == "flat" or (est.one_vs_all == "auto" and core.flat_is_enough(
                trees, label_nnz, n, int(est.beam_width))):
            trees = [core.ova_tree(L)]  # as KTXMLC.fit decides (same label counts, trees)
        times["trees_s"] = time.perf_counter() - t2
        e3 = time.time()
        phases += [(f"level {i + 1}", a, b) for i, (a, b) in enumerate(levels.level_epochs)]
        tasks, results = _train(ex, futs, trees, np.asarray(label_nnz, np.int64), n, solver,
                                report, window=2 * ex.total_threads())
        times["train_s"] = time.time() - e3
        phases.append(("classifiers", e3, time.time()))
        W, bw, off = core.assemble_weights(trees, tasks, results, d)
        cal_a, cal_b, cal_groups = core.calibration(trees, tasks, results, off, solver)
        est._finalise((n, d), L, trees, W, bw, off, solver.bias, cal_a, cal_b, cal_groups)
        est.train_time_ = time.perf_counter() - t0
        est.train_work_ = int(sum(r[6] for r in results))
        est.distributed_info_ = {
            "workers": 1 if ex.serial else len(ex.workers()), "blocks": len(futs),
            "groups": n_groups, "n_inexact": int(n_inexact), "nnz_R": int(nnz_R),
            "n_cols_R": int(n_cols), "train_tasks": len(tasks),
            "bytes_to_cluster": int(ex.bytes_to_cluster),
            "bytes_from_cluster": int(ex.bytes_from_cluster),
            "level_bytes": [int(b) for b in levels.level_bytes],
            "level_seconds": [float(s) for s in levels.level_seconds],
            "level_nodes": levels.level_nodes,
            "tasks": int(ex.n_tasks), **times, "seconds": est.train_time_,
            "phases": phases, "attempts": attempt + 1}
    return est
