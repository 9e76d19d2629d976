"""Where the rows of a reduced representation live while a tree is grown on it.

DEFRAG (features) and KTXMLC (labels) grow trees level by level; a node's split needs
the representation rows of its members, and nothing else. The representation starts as
one block (the result of the tree reduction) and is handed down the tree:

* a *group* is a contiguous range ``[lo, hi)`` of one tree's item order (DEFRAG's
  ``order``, KTXMLC's ``perm``) made of whole nodes, with a block holding exactly the
  rows of its items, placed on one worker;
* every level, each group runs one task over all of its nodes to split (several nodes
  per task); only the nodes' member positions go out and their new order / cluster
  assignments come back;
* while there are fewer groups than ``target`` (2 per worker thread), a group with
  several nodes to split is cut in two at the node boundary nearest its middle; the
  right half's rows are taken from the parent's block on the parent's worker and move to
  the least loaded worker (each row moves at most once per doubling: log2(workers)
  times); the left half keeps using the parent's block (no copy).

So after the first few levels every worker holds only its part of the representation
(the root level needs it whole on one worker, as a single machine does: its split is one
sequential 2-means / k-means whose floating-point order must not change).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from featagg_core.distributed.executor import Executor

__all__ = ["Group", "RowGroups", "take_rows"]


def take_rows(block, positions):
    """Rows ``positions`` of a block (a csr matrix), in that order.

    Parameters
    ----------
    block : scipy.sparse.csr_matrix
        The block of rows a worker holds.
    positions : array-like of int
        Row positions within the block.

    Returns
    -------
    scipy.sparse.csr_matrix
        Those rows.
    """
    return block[np.asarray(positions, np.int64)]


@dataclass
class Group:
    tree: int
    lo: int
    hi: int
    block: object          # future of the csr rows of ``rows``
    rows: np.ndarray       # global item ids of the block's rows, in block order (a left
    #                        half shares its parent's block, so this can be a superset)
    worker: Optional[str]

    @property
    def size(self) -> int:
        return self.hi - self.lo


class RowGroups:
    """Groups of every tree (see the module docstring).

    ``root_block``: future of the full representation (item ``i`` = row ``i``);
    ``n_items``: its rows; ``n_trees``: trees grown on it at once (all start from the same
    block, tree ``t``'s root on worker ``t % n_workers``)."""

    def __init__(self, ex: Executor, root_block, n_items: int, n_trees: int = 1,
                 target: Optional[int] = None):
        self.ex = ex
        self.workers = ex.workers()
        self.target = max(n_trees, int(target if target is not None else 2 * ex.total_threads()))
        self.local: Dict[int, np.ndarray] = {}
        self.groups: Dict[int, List[Group]] = {}
        rows = np.arange(n_items, dtype=np.int64)
        for t in range(n_trees):
            w = None if ex.serial else self.workers[t % len(self.workers)]
            self.groups[t] = [Group(t, 0, n_items, root_block, rows, w)]
            self.local[t] = rows.copy()
        self.bytes_moved_estimate = 0

    def n_groups(self) -> int:
        """The number of groups over all trees.

        Returns
        -------
        int
            The count.
        """
        return sum(len(g) for g in self.groups.values())

    def all_groups(self) -> List[Group]:
        """Every group, tree by tree.

        Returns
        -------
        list of Group
            The groups.
        """
        return [g for t in sorted(self.groups) for g in self.groups[t]]

    def _load(self) -> Dict[Optional[str], int]:
        load: Dict[Optional[str], int] = {w: 0 for w in (self.workers if not self.ex.serial else [None])}
        for g in self.all_groups():
            load[g.worker] = load.get(g.worker, 0) + g.size
        return load

    def positions(self, g: Group, items: np.ndarray) -> np.ndarray:
        """Rows of ``g``'s block holding the global ``items``.

        Parameters
        ----------
        g : Group
            The group.
        items : ndarray of int
            Global item (row) ids.

        Returns
        -------
        ndarray of int64
            Their positions in the group's block.
        """
        return self.local[g.tree][np.asarray(items, np.int64)]

    def plan(self, nodes: Sequence[Tuple[int, int, int]], order_of) -> List[Tuple[Group, List[int]]]:
        """Assign the nodes to split at this level to groups.

        First cutting groups while there are fewer than ``target``.

        Parameters
        ----------
        nodes : sequence of (int, int, int)
            ``(tree, lo, hi)`` of each node to split.
        order_of : callable
            ``order_of(t)`` is the current item order of tree ``t``.

        Returns
        -------
        list of (Group, list of int)
            ``(group, node indices)`` pairs.
        """
        by_group = self._assign(nodes)
        while self.n_groups() < self.target:
            cands = [(sum(nodes[i][2] - nodes[i][1] for i in idx), id(g), g, idx)
                     for g, idx in by_group if len(idx) >= 2]
            if not cands:
                break
            _, _, g, idx = max(cands, key=lambda c: (c[0], -c[2].lo, -c[2].tree))
            self._cut(g, [nodes[i] for i in idx], order_of(g.tree))
            by_group = self._assign(nodes)
        return by_group

    def _assign(self, nodes) -> List[Tuple[Group, List[int]]]:
        out: Dict[int, Tuple[Group, List[int]]] = {}
        for i, (t, lo, hi) in enumerate(nodes):
            gs = self.groups[t]
            starts = [g.lo for g in gs]
            j = int(np.searchsorted(starts, lo, side="right")) - 1
            g = gs[j]
            if not (g.lo <= lo and hi <= g.hi):  # pragma: no cover - cuts follow node edges
                raise RuntimeError(f"node [{lo}, {hi}) of tree {t} straddles a group")
            out.setdefault(id(g), (g, []))[1].append(i)
        return sorted(out.values(), key=lambda p: (p[0].tree, p[0].lo))

    def _cut(self, g: Group, nodes, order: np.ndarray) -> None:
        """Cut ``g`` at the start of one of its nodes (the one nearest the middle)."""
        starts = sorted(lo for (_, lo, _) in nodes)[1:]
        mid = (g.lo + g.hi) / 2.0
        c = int(min(starts, key=lambda s: (abs(s - mid), s)))
        load = self._load()
        load[g.worker] = load.get(g.worker, 0) - g.size
        right_worker = g.worker if self.ex.serial else min(self.workers, key=lambda w: (load.get(w, 0), w))
        # the left half keeps using the parent's block (its rows are a subset: no copy);
        # the right half's rows are taken from it where it lives, then move with the tasks
        left = Group(g.tree, g.lo, c, g.block, g.rows, g.worker)
        items = np.asarray(order[c:g.hi], np.int64).copy()
        block = self.ex.submit(take_rows, g.block, self.positions(g, items))
        right = Group(g.tree, c, g.hi, block, items, right_worker)
        self.local[g.tree][items] = np.arange(items.shape[0], dtype=np.int64)
        gs = self.groups[g.tree]
        i = gs.index(g)
        gs[i:i + 1] = [left, right]
        if right_worker != g.worker:
            self.bytes_moved_estimate += right.size  # rows handed to another worker

    def workers_of(self, g: Group):
        """The worker preference of a task on group ``g``.

        Parameters
        ----------
        g : Group
            The group.

        Returns
        -------
        list of str or None
            ``[g.worker]``, or None when the group has no worker (serial).
        """
        return None if g.worker is None else [g.worker]
