"""The DEFRAG hierarchy as flat arrays (:class:`DefragTree`): the tree a
:class:`featagg_core.agglomeration.defrag.Defrag` fit grows and keeps as ``tree_``, with
its node walks, the plotly view the dashboard draws and its artifact arrays."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, List, Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

__all__ = ["DefragTree"]


# ----------------------------------------------------------------------------- tree
@dataclass(frozen=True)
class DefragTree:
    """The DEFRAG hierarchy as flat arrays (node 0 is the root; nodes are numbered level by level).

    Every node owns the contiguous range ``order[start[v] : start[v] + n_members[v]]`` of
    the feature permutation ``order``; a node's left child owns the first
    ``n_members // 2`` of its range, the right child the rest. Leaves are the clusters:
    ``cluster[v]`` is the cluster id of leaf ``v`` (-1 for inner nodes), clusters are
    numbered left to right, so cluster ``c``'s features are contiguous in ``order``.

    Attributes
    ----------
    parent, left, right : int64 arrays (-1 where absent)
    depth, start, n_members : int64 arrays
    n_iter : int32 array, rounds of the balanced 2-means at each inner node (0 for leaves)
    cluster : int64 array, cluster id of each leaf, -1 for inner nodes
    order : int64 array of length d, features grouped by node
    """
    parent: np.ndarray
    left: np.ndarray
    right: np.ndarray
    depth: np.ndarray
    start: np.ndarray
    n_members: np.ndarray
    n_iter: np.ndarray
    cluster: np.ndarray
    order: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes of the tree (inner nodes and leaves).

        Returns
        -------
        int
        """
        return int(self.parent.shape[0])

    @property
    def max_depth(self) -> int:
        """Depth of the deepest node (0 for a tree that is only its root).

        Returns
        -------
        int
        """
        return int(self.depth.max()) if self.n_nodes else 0

    @fill_doc
    def is_leaf(self, node: int) -> bool:
        """Whether ``node`` is a leaf (a cluster).

        Parameters
        ----------
        {node}

        Returns
        -------
        bool
        """
        return bool(self.left[node] < 0)

    @fill_doc
    def children(self, node: int) -> List[int]:
        """The children of ``node``, left before right (empty for a leaf).

        Parameters
        ----------
        {node}

        Returns
        -------
        list of int
        """
        return [int(c) for c in (self.left[node], self.right[node]) if c >= 0]

    @fill_doc
    def members(self, node: int) -> np.ndarray:
        """Feature indices under ``node`` (sorted ascending).

        Parameters
        ----------
        {node}

        Returns
        -------
        int64 array
        """
        s = int(self.start[node])
        return np.sort(self.order[s:s + int(self.n_members[node])])

    @cached_property
    def _leaf_nodes(self) -> np.ndarray:
        leaf = np.flatnonzero(self.cluster >= 0)
        out = leaf[np.argsort(self.cluster[leaf], kind="stable")]
        out.flags.writeable = False
        return out

    def leaves(self) -> np.ndarray:
        """Leaf node ids in cluster order (read-only array, computed once).

        Returns
        -------
        int64 array (K,)
            ``leaves()[c]`` is the node of cluster ``c``.
        """
        return self._leaf_nodes

    def iter_nodes(self, root: int = 0, max_depth: Optional[int] = None) -> Iterator[int]:
        """Node ids under ``root`` in depth-first pre-order (left before right), optionally
        only down to ``depth[root] + max_depth``.

        Parameters
        ----------
        root : int, default 0
            Where the walk starts.
        max_depth : int or None, default None
            Levels below ``root`` to visit; None visits the whole subtree.

        Yields
        ------
        int
            Node ids.
        """
        limit = None if max_depth is None else int(self.depth[root]) + int(max_depth)
        stack = [int(root)]
        while stack:
            v = stack.pop()
            yield v
            if limit is not None and self.depth[v] >= limit:
                continue
            for c in reversed(self.children(v)):
                stack.append(c)

    def to_plotly(self, root: int = 0, max_depth: Optional[int] = None,
                  feature_names=None) -> dict:
        """Columns for a plotly icicle/sunburst of the subtree under ``root``.

        ``values`` are member counts (``branchvalues="total"``). Leaves are labelled with
        their cluster id and, given ``feature_names``, their first members.

        Parameters
        ----------
        root : int, default 0
            The subtree's root node.
        max_depth : int or None, default None
            Levels below ``root`` to include; None includes the whole subtree.
        feature_names : sequence of str, optional
            Names of the features, to label the leaves with their first members.

        Returns
        -------
        dict
            ``ids``, ``parents``, ``values``, ``labels``, ``depth``, ``is_leaf``, ``node``:
            one list entry per node, in :meth:`iter_nodes` order.
        """
        nodes = list(self.iter_nodes(root, max_depth))
        ids, parents, values, labels, depth, leaf = [], [], [], [], [], []
        for v in nodes:
            ids.append(f"n{v}")
            parents.append("" if v == root else f"n{int(self.parent[v])}")
            values.append(int(self.n_members[v]))
            depth.append(int(self.depth[v]))
            leaf.append(self.is_leaf(v))
            if self.cluster[v] >= 0:
                text = f"cluster {int(self.cluster[v])}"
                if feature_names is not None:
                    names = [str(feature_names[j]) for j in self.members(v)[:3]]
                    text += ": " + ", ".join(names) + ("…" if self.n_members[v] > 3 else "")
            else:
                text = f"node {v} ({int(self.n_members[v])})"
            labels.append(text)
        return {"ids": ids, "parents": parents, "values": values, "labels": labels,
                "depth": depth, "is_leaf": leaf, "node": nodes}

    def _arrays(self) -> dict:
        return {f"tree_{k}": getattr(self, k) for k in
                ("parent", "left", "right", "depth", "start", "n_members", "n_iter",
                 "cluster", "order")}

    @classmethod
    def _from_arrays(cls, arrays: dict) -> "DefragTree":
        return cls(**{k: np.asarray(arrays[f"tree_{k}"]) for k in
                      ("parent", "left", "right", "depth", "start", "n_members", "n_iter",
                       "cluster", "order")})
