"""Artifact checks of the agglomeration estimators: Defrag (its labels, cluster sizes and
the binary feature tree every transform walks), Fiat and Refrag.
"""
from __future__ import annotations

import numpy as np

from featagg_core.artifacts.checks.checker import StateChecker

def _defrag(c: StateChecker) -> None:
    d0 = c.p_int("d0", 1)
    c.p_choice("representation", ("XY", "X"))
    c.p_int("random_state", 0, 2**63 - 1)
    c.p_float("sample_points", 0.0, 1.0, lo_open=True)
    c.p_float("sample_labels", 0.0, 1.0, lo_open=True)
    c.p_float("prune_threshold", 0.0, 1.0)
    c.p_float("eps", 0.0)
    c.p_int("max_iter", 1)
    c.p_choice("aggregation", ("sum", "avg"))
    d = c.m_int("n_features_in_", 1)
    K = c.m_int("n_clusters_", 1, d)
    c.m_float("clustering_error_", 0.0)
    c.m_int("n_iter_", 0, 2**62)
    labels = c.arr("labels_", "i", (d,), lo=0, hi=K - 1,
                   rule=f"cluster ids below meta n_clusters_ = {K}")
    sizes = c.arr("cluster_sizes_", "i", (K,), lo=1, hi=d)
    zero = c.arr("zero_features_", "i", (None,), lo=0, hi=d - 1)
    if zero.size > 1 and np.any(np.diff(zero) <= 0):
        c.fail(c.aname("zero_features_"), "is not strictly increasing")
    tree = _check_binary_tree(c, d, d0)
    leaves = tree["leaves"]
    if leaves.size != K:
        c.fail(c._mname("n_clusters_"), f"= {K} but the tree has {leaves.size} leaves")
    if not np.array_equal(sizes, tree["n_members"][leaves]):
        c.fail(c.aname("cluster_sizes_"), "does not match the sizes of the tree's leaves")
    expect = np.repeat(np.arange(K), tree["n_members"][leaves])
    if not np.array_equal(labels[tree["order"]], expect):
        c.fail(c.aname("labels_"), "does not match the clusters of the tree's leaves")


def _check_binary_tree(c: StateChecker, d: int, d0: int) -> dict:
    """DefragTree arrays: node 0 the root, parents before children, each inner node with a
    left and a right child splitting its contiguous range of ``order``, leaves numbered
    0..K-1 left to right, ``order`` a permutation of the d features."""
    parent = c.arr("tree_parent", "i", (None,), lo=-1)
    N = parent.shape[0]
    if N < 1:
        c.fail(c.aname("tree_parent"), "is empty (a tree has at least its root)")
    ids = np.arange(N)
    left = c.arr("tree_left", "i", (N,), lo=-1, hi=N - 1,
                 rule=f"child node ids inside the tree of {N} nodes, -1 at leaves")
    right = c.arr("tree_right", "i", (N,), lo=-1, hi=N - 1,
                  rule=f"child node ids inside the tree of {N} nodes, -1 at leaves")
    depth = c.arr("tree_depth", "i", (N,), lo=0, hi=N)
    start = c.arr("tree_start", "i", (N,), lo=0, hi=d)
    size = c.arr("tree_n_members", "i", (N,), lo=1, hi=d)
    c.arr("tree_n_iter", "i", (N,), lo=0)
    cluster = c.arr("tree_cluster", "i", (N,), lo=-1, hi=N - 1)
    order = c.permutation("tree_order", d)
    if parent[0] != -1 or depth[0] != 0 or start[0] != 0 or size[0] != d:
        c.fail(c.aname("tree_parent"), "node 0 is not a root spanning every feature")
    if N > 1:
        pv = parent[1:]
        if np.any(pv < 0) or np.any(pv >= ids[1:]):
            c.fail(c.aname("tree_parent"), "a node's parent does not come before it")
    inner = left >= 0
    if np.any(inner != (right >= 0)):
        c.fail(c.aname("tree_right"), "a node has exactly one child")
    vi = ids[inner]
    li, ri = left[inner], right[inner]
    if np.any(li <= vi) or np.any(ri <= vi) or np.any(li == ri):
        c.fail(c.aname("tree_left"), "a child does not come after its parent")
    if np.any(parent[li] != vi) or np.any(parent[ri] != vi):
        c.fail(c.aname("tree_parent"), "does not agree with tree_left/tree_right")
    n_child = np.bincount(parent[1:], minlength=N) if N > 1 else np.zeros(N, np.int64)
    if np.any(n_child != 2 * inner):
        c.fail(c.aname("tree_parent"), "a node is the child of no one or of two nodes")
    if N > 1 and np.any(depth[1:] != depth[parent[1:]] + 1):
        c.fail(c.aname("tree_depth"), "is not the parent's depth + 1")
    if np.any(start[li] != start[vi]) or np.any(size[li] + size[ri] != size[vi]) \
            or np.any(start[ri] != start[vi] + size[li]):
        c.fail(c.aname("tree_start"), "a node's children do not split its feature range")
    if np.any(size[vi] <= d0):
        c.fail(c.aname("tree_n_members"), f"a node of at most d0 = {d0} features is split")
    if np.any(start + size > d):
        c.fail(c.aname("tree_start"), "a node's range runs past the features")
    leaf = ids[~inner]
    if np.any(cluster[inner] != -1) or np.any(cluster[leaf] < 0):
        c.fail(c.aname("tree_cluster"), "must be -1 exactly at the inner nodes")
    leaves = leaf[np.argsort(start[leaf], kind="stable")]
    if not np.array_equal(cluster[leaves], np.arange(leaves.size)):
        c.fail(c.aname("tree_cluster"), "leaves are not numbered 0..K-1 from left to right")
    return {"leaves": leaves, "n_members": size, "order": order}



def _fiat(c: StateChecker) -> None:
    from featagg_core.agglomeration.fiat import NORMALIZATIONS
    d = c.m_int("n_features", 1)
    K = c.m_int("n_clusters", 1, d)
    _clustering_param(c, d, K)
    c.p_choice("normalization", NORMALIZATIONS)
    c.p_float("mix", 0.0)
    c.p_float("min_weight", 0.0)
    c.arr("labels", "i", (d,), lo=0, hi=K - 1, rule=f"cluster ids below meta n_clusters = {K}")
    c.csr("C_data", "C_indices", "C_indptr", (d, d))
    c.csr("T_data", "T_indices", "T_indptr", (d, d))


def _clustering_param(c: StateChecker, d: int, K: int) -> None:
    """``defrag`` is reported as None (a Defrag object) or as the list of cluster ids."""
    v = c.p_any("defrag")
    if v is None:
        return
    if not isinstance(v, list) or len(v) != d or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < K for x in v):
        c.fail(c._pname("defrag"), f"must be None or {d} cluster ids in [0, {K})")


def _refrag(c: StateChecker) -> None:
    from featagg_core.agglomeration.fiat import NORMALIZATIONS
    from featagg_core.agglomeration.refrag import SCORE_NORMALIZATIONS
    if c.params.get("alpha") == "auto":
        # tuned on validation rows: the knobs it chose are in meta
        c.p_choice("alpha", ("auto",))
        c.m_float("alpha_", 0.0, 1.0)
        c.m_float("gamma_", 0.0)
        c.m_float("propensity_exponent_", 0.0)
        c.m_any("tuned_")
        c.m_any("choice_")
    else:
        c.p_float("alpha", 0.0, 1.0)
    c.p_float("gamma", 0.0)
    c.p_int("shortlist_size", 1)
    c.p_int("n_prototype_candidates", 0)
    c.p_choice("normalization", NORMALIZATIONS)
    c.p_float("prune_threshold", 0.0, 1.0)
    c.p_choice("score_normalization", tuple(SCORE_NORMALIZATIONS))
    c.p_bool("impute_query")
    c.p_float("propensity_exponent", 0.0)
    c.p_float("propensity_A", 0.0)
    c.p_float("propensity_B", 0.0)
    d = c.m_int("n_features", 1)
    L = c.m_int("n_labels", 1)
    K = c.m_int("n_clusters", 1, d)
    c.arr("labels", "i", (d,), lo=0, hi=K - 1, rule=f"cluster ids below meta n_clusters = {K}")
    c.arr("label_frequency", "i", (L,), lo=0)
    c.arr("inv_propensity", "f", (L,), lo=0.0)
    c.csr("P_data", "P_indices", "P_indptr", (L, d))
    c.csr("T_data", "T_indices", "T_indptr", (d, d))


#: class name -> check of its state
CHECKS = {"Defrag": _defrag, "Fiat": _fiat, "Refrag": _refrag}
