"""Artifact checks of the label-tree classifiers: KTXMLC, OneVsAll and DefragKTXMLC (the
stacked label trees and node classifiers every ``beam_predict`` indexes with).
"""
from __future__ import annotations

import math

import numpy as np

from featagg_core.artifacts.checks.checker import MAX_TREES, StateChecker

# ============================================================================ KTXMLC, OneVsAll
_TREE_KEYS = ("parent", "first_child", "n_children", "label", "depth", "lo", "hi")


def _form_choice(c) -> None:
    """What KTXMLC(form="auto") chose: ``form_``, ``C_`` and ``choice_`` (absent in
    artifacts saved before the choice existed)."""
    if "form_" in c.meta:
        c.m_choice("form_", ("flat", "trees"))
    c.m_float("C_", 0.0, optional=True)
    if "choice_" in c.meta and not isinstance(c.meta["choice_"], str):
        c.fail(c._mname("choice_"), "must be a string")
    c.m_any("choice_", optional=True)


def _solver_params(c: StateChecker) -> None:
    c.p_float("C", 0.0, lo_open=True)
    c.p_float("eps", 0.0, lo_open=True)
    c.p_int("max_iter", 1)
    c.p_float("weight_threshold", 0.0)
    c.p_float("bias", 0.0)
    c.p_bool("normalize")
    c.p_int("random_state", 0, 2**63 - 1)
    c.p_int("n_jobs", 1, 4096, none=True)
    # parameters of the calibrated-score KTXMLC (checked when the class has them)
    if c.has_param("score"):
        c.p_choice("score", ("calibrated", "l2-hinge", "l3-hinge"))
    if c.has_param("calibration_rows"):
        c.p_int("calibration_rows", 0)
    if c.has_param("loss"):
        c.p_choice("loss", ("squared_hinge", "log", "mixed"))
    if c.has_param("C_log"):
        c.p_float("C_log", 0.0, lo_open=True)


def _ktxmlc(c: StateChecker) -> None:
    K = c.p_int("n_clusters", 2)
    n_trees = c.p_int("n_trees", 1, MAX_TREES)
    c.p_int("max_depth", 1)
    c.p_int("max_leaf_labels", 1)
    c.p_int("beam_width", 1)
    c.p_choice("representation", ("input", "joint"))
    c.p_float("joint_weight", 0.0)
    c.p_bool("balanced", none=True)
    c.p_int("min_cluster_size", 1)
    c.p_float("kmeans_oversampling", 0.0, lo_open=True)
    c.p_int("kmeans_rounds", 1, none=True)
    c.p_int("kmeans_max_iter", 1)
    c.p_float("kmeans_tol", 0.0)
    if c.has_param("partition"):
        c.p_choice("partition", ("bisect", "kmeans"))
    if c.has_param("one_vs_all"):
        c.p_choice("one_vs_all", ("auto", "never"))
    if c.has_param("form"):
        c.p_choice("form", ("auto", "trees", "flat"))
    _solver_params(c)
    _check_tree_model(c, ova=False, n_trees=n_trees, K=K)


def _one_vs_all(c: StateChecker) -> None:
    _solver_params(c)
    _check_tree_model(c, ova=True)


def _check_tree_model(c: StateChecker, ova: bool, n_trees=None, K=None) -> None:
    """The stacked label trees and node classifiers of KTXMLC / OneVsAll (see
    ``ktxmlc._TreeModel``): what ``build_feature_major`` and ``beam_predict`` index with."""
    d = c.m_int("n_features_in_", 0)
    L = c.m_int("n_labels_", 1)
    T = c.m_int("n_trees_", 1, MAX_TREES)
    bias = c.m_float("bias_value", 0.0)
    c.m_float("train_time_", 0.0, none=True, optional=True)
    _form_choice(c)
    shape = c.m_list("W_shape", 2)
    if ova and T != 1:
        c.fail(c._mname("n_trees_"), f"= {T}; a one-vs-all model has exactly one tree")
    if n_trees is not None and T != n_trees and T != 1:
        # one tree whatever n_trees: a label set that fits one leaf, or the flat tree of
        # one_vs_all="auto"; that single tree must then be flat (checked below)
        c.fail(c._mname("n_trees_"), f"= {T} but params n_trees = {n_trees}")
    if bias != float(c.params["bias"]):
        c.fail(c._mname("bias_value"), f"= {bias} but params bias = {c.params['bias']}")
    off = c.arr("node_offsets", "i", (T + 1,), lo=0)
    if off[0] != 0 or np.any(np.diff(off) < 1):
        c.fail(c.aname("node_offsets"), "must start at 0 and increase by at least 1 per tree")
    N = int(off[-1])
    if not (isinstance(shape[0], int) and shape[0] == N and isinstance(shape[1], int)
            and shape[1] == d):
        c.fail(c._mname("W_shape"), f"= {shape}, expected [{N}, {d}] (nodes, features)")
    c.csr("W_data", "W_indices", "W_indptr", (N, d))
    c.arr("bias_w", "f", (N,))
    # the per-node score calibration of the calibrated-score KTXMLC, when it has one
    if c.has("calibration_a") or c.has("calibration_b"):
        c.arr("calibration_a", "f", (N,))
        c.arr("calibration_b", "f", (N,))
    if "state_version" in c.meta:
        c.m_int("state_version", 1, 1000)
    if "calibration" in c.meta:
        cal = c.m_list("calibration")
        if not all(isinstance(g, list) and g and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in g) for g in cal):
            c.fail(c._mname("calibration"), "must be a list of lists of finite numbers")
    perm = c.permutation("perm", L, shape=(T, L))
    tr = {k: c.arr("tree_" + k, "i", (N,), lo=-1, hi=max(N, L)) for k in _TREE_KEYS}
    Wp = c.arrays[c.prefix + "W_indptr"]
    for t in range(T):
        a, b = int(off[t]), int(off[t + 1])
        _check_label_tree(c, t, {k: v[a:b].astype(np.int64) for k, v in tr.items()},
                          perm[t], L, ova or (n_trees is not None and T != n_trees), K)
        if Wp[a + 1] != Wp[a]:
            c.fail(c.aname("W_indptr"), f"tree {t}'s root has a classifier (it must not)")


def _check_label_tree(c, t, tr, perm, L, ova, K) -> None:
    P, FC, NC, LAB = tr["parent"], tr["first_child"], tr["n_children"], tr["label"]
    DEP, LO, HI = tr["depth"], tr["lo"], tr["hi"]
    N = P.shape[0]
    ids = np.arange(N)
    where = f"tree {t}"

    def bad(key, msg):
        c.fail(c.aname("tree_" + key), f"{where}: {msg}")

    if P[0] != -1 or DEP[0] != 0 or LO[0] != 0 or HI[0] != L or LAB[0] != -1:
        bad("parent", "node 0 is not a root holding every label")
    if N > 1 and (np.any(P[1:] < 0) or np.any(P[1:] >= ids[1:])):
        bad("parent", "a node's parent does not come before it")
    if np.any(NC < 0) or np.any(NC > N):
        bad("n_children", "out of range")
    has = NC > 0
    if np.any(FC[~has] != -1):
        bad("first_child", "set on a node without children")
    if np.any(FC[has] <= ids[has]) or np.any(FC[has] + NC[has] > N):
        bad("first_child", "children outside the tree or before their parent")
    if N > 1:
        counts = np.bincount(P[1:], minlength=N)
        if np.any(counts != NC):
            bad("n_children", "does not match the nodes naming that parent")
        pv = P[1:]
        v = ids[1:]
        if np.any(v < FC[pv]) or np.any(v >= FC[pv] + NC[pv]):
            bad("first_child", "a node lies outside its parent's block of children")
        if np.any(DEP[1:] != DEP[pv] + 1):
            bad("depth", "is not the parent's depth + 1")
    elif NC[0] != 0:
        bad("n_children", "the root has children outside the tree")
    if np.any(LO < 0) or np.any(HI < LO) or np.any(HI > L):
        bad("lo", "label ranges out of [0, n_labels]")
    is_lab = LAB >= 0
    if np.any(LAB >= L) or np.any(LAB < -1):
        bad("label", f"label ids out of [0, {L})")
    if np.any(NC[is_lab] != 0) or np.any(HI[is_lab] != LO[is_lab] + 1):
        bad("label", "a label node has children or holds other than one label")
    if is_lab.any() and np.any(perm[LO[is_lab]] != LAB[is_lab]):
        bad("label", "does not match perm at the node's position")
    if np.any(~is_lab & ~has & (HI != LO)):
        bad("n_children", "a cluster node holding labels has no children")
    if N > 1:
        pv = P[1:]
        v = ids[1:]
        first = v == FC[pv]
        if np.any(is_lab[v] != is_lab[FC[pv]]):
            bad("label", "a node mixes label children and cluster children")
        if np.any(LO[v][first] != LO[pv][first]):
            bad("lo", "a first child does not start where its parent starts")
        nf = ~first
        if np.any(LO[v][nf] != HI[v - 1][nf]):
            bad("lo", "children's label ranges are not consecutive")
        last = v == FC[pv] + NC[pv] - 1
        if np.any(HI[v][last] != HI[pv][last]):
            bad("hi", "the last child does not end where its parent ends")
    leafc = np.zeros(N, bool)
    leafc[has] = is_lab[FC[has]]
    inner = has & ~leafc
    if ova:
        if N != L + 1 or not leafc[0]:
            bad("parent", "a one-vs-all tree is one root with every label as its child")
        return
    if K is not None and inner.any() and int(NC[inner].max()) > K:
        bad("n_children", f"a node has more than n_clusters = {K} cluster children")


# ============================================================================ DefragKTXMLC
def _defrag_ktxmlc(c: StateChecker) -> None:
    c.p_int("d0", 1)
    c.p_choice("defrag_representation", ("XY", "X"))
    per_tree = c.p_bool("per_tree")
    c.p_int("n_clusters", 2)
    n_trees = c.p_int("n_trees", 1, MAX_TREES)
    c.p_int("max_depth", 1)
    c.p_int("max_leaf_labels", 1)
    c.p_float("C", 0.0, lo_open=True)
    c.p_int("beam_width", 1)
    c.p_int("random_state", 0, 2**62)
    c.p_int("n_jobs", 1, 4096, none=True)
    d = c.m_int("n_features_in_", 1)
    L = c.m_int("n_labels_", 1)
    c.m_float("train_time_", 0.0, none=True, optional=True)
    _form_choice(c)
    members = c.m_list("members", n_trees if per_tree else 1)
    for t, m in enumerate(members):
        if not isinstance(m, dict) or set(m) != {"defrag", "model", "defrag_params",
                                                 "model_params"}:
            c.fail(c._mname("members"), f"entry {t} is not a member description")
        df = c.sub("Defrag", m["defrag_params"], m["defrag"], f"m{t}.defrag.",
                   f"DefragKTXMLC member {t} Defrag")
        kt = c.sub("KTXMLC", m["model_params"], m["model"], f"m{t}.model.",
                   f"DefragKTXMLC member {t} KTXMLC")
        if df.meta["n_features_in_"] != d:
            c.fail(c._mname("members"), f"member {t}'s Defrag has "
                   f"{df.meta['n_features_in_']} features, the model {d}")
        if kt.meta["n_features_in_"] != df.meta["n_clusters_"]:
            c.fail(c._mname("members"), f"member {t}'s KTXMLC takes "
                   f"{kt.meta['n_features_in_']} features but its Defrag makes "
                   f"{df.meta['n_clusters_']}")
        if kt.meta["n_labels_"] != L:
            c.fail(c._mname("members"), f"member {t}'s KTXMLC has {kt.meta['n_labels_']} "
                   f"labels, the model {L}")


#: class name -> check of its state
CHECKS = {"KTXMLC": _ktxmlc, "OneVsAll": _one_vs_all, "DefragKTXMLC": _defrag_ktxmlc}
