"""KTXMLC: extreme multi-label classification with K-way label trees.

Prajapati & Thakkar, "KTXMLC: A K-way tree based extreme multi-label classifier",
J. King Saud Univ. 2021 — a relative of Parabel (Prabhu et al. 2018) and Bonsai
(Khandagale et al. 2020). Several trees over the *labels* are grown by clustering label
representations (k-means|| seeding + spherical k-means, K children per node); every node
holds one squared-hinge linear classifier per child (one per label at the leaves),
trained by dual coordinate descent; prediction is a beam search down every tree.

Also here: :class:`OneVsAll` (DiSMEC-style baseline with the same solver and pruning),
:func:`elbow_curve` (WCSS of the root partition against K) and :class:`DefragKTXMLC`
(feature agglomeration by :class:`featagg_core.defrag.Defrag` first).
"""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple, Optional

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ._kernels import ktxmlc as _k
from ._kernels.linear import l2svc_dual_cd, l2svc_primal_objective
from ._products import exact_xt_y
from ._validation import as_csr, check_binary_labels, check_n_features
from ._validation import check_int as _check_int

__all__ = ["KTXMLC", "OneVsAll", "DefragKTXMLC", "elbow_curve", "label_representation",
           "defrag_comparison", "warmup"]

_TASK_CHILDREN = 64  # classifiers per training task (bounds a task's label matrix)


# ----------------------------------------------------------------------------- helpers
def _check_X(X, name="X", n_features=None) -> sp.csr_matrix:
    """Shared float32 canonical csr (:func:`featagg_core._validation.as_csr`), plus KTXMLC's
    refusal of a matrix without rows (checked before the feature count)."""
    X = as_csr(X, name, dtype=np.float32)
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    check_n_features(X, name, n_features)
    return X


def _check_Y(Y, n_rows) -> sp.csr_matrix:
    return check_binary_labels(Y, n_rows, "Y", dtype=np.float32)


def _normalize_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Rows scaled to unit L2 norm (zero rows stay zero); a new float32 csr."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    inv = np.zeros_like(sq)
    nz = sq > 0
    inv[nz] = 1.0 / np.sqrt(sq[nz])
    out = sp.csr_matrix(sp.diags(inv.astype(np.float32)) @ X, dtype=np.float32)
    out.sort_indices()
    return out


def _check_pos(name, value, strict=True):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (v <= 0 if strict else v < 0):
        raise ValueError(f"{name} must be {'> 0' if strict else '>= 0'}, got {value!r}")
    return v


_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(*parts) -> np.ndarray:
    """Deterministic 31-bit seeds from integer arrays/scalars (splitmix64 rounds)."""
    with np.errstate(over="ignore"):
        h = np.uint64(0x9E3779B97F4A7C15)
        for part in parts:
            v = np.asarray(part).astype(np.int64).astype(np.uint64)
            h = (h ^ v) * np.uint64(0xBF58476D1CE4E5B9)
            h = h ^ (h >> np.uint64(31))
            h = h * np.uint64(0x94D049BB133111EB)
            h = h ^ (h >> np.uint64(29))
        return (h % np.uint64(2147483646)).astype(np.int64) + 1


def label_representation(X, Y, representation="input", joint_weight=1.0):
    """Label vectors used to cluster labels (rows L2-normalised, csr L x d').

    ``"input"``: the normalised sum of the normalised feature vectors of the label's
    positive points (Parabel / omikuji). ``"joint"``: that vector, concatenated with
    ``joint_weight`` times the label's normalised co-occurrence row of YᵀY, renormalised.
    """
    X = _check_X(X)
    Y = _check_Y(Y, X.shape[0])
    if representation not in ("input", "joint"):
        raise ValueError(f"representation must be 'input' or 'joint', got {representation!r}")
    # YᵀX and YᵀY with exactly summed entries: equal for any split of the rows (the Dask
    # twin reduces them from row partitions, featagg_core.distributed.ktxmlc_distributed)
    YtY = exact_xt_y(Y, Y) if representation == "joint" else None
    return _label_vectors(exact_xt_y(Y, _normalize_rows(X)), YtY, representation,
                          joint_weight)


def _label_vectors(YtXn, YtY, representation, joint_weight):
    """Label vectors from ``Yᵀ normalize(X)`` (and ``YᵀY`` for ``"joint"``)."""
    R = _normalize_rows(sp.csr_matrix(YtXn))
    if representation == "joint":
        w = _check_pos("joint_weight", joint_weight, strict=False)
        C = _normalize_rows(sp.csr_matrix(YtY, dtype=np.float32))
        R = _normalize_rows(sp.hstack([R, C * np.float32(w)], format="csr"))
    return R


# ----------------------------------------------------------------------------- trees
def _node_seed(random_state, t, v) -> int:
    """Seed of the clustering of node ``v`` of tree ``t``."""
    return int(_mix(random_state, t, v, 7))


def _cluster_node(sub, n_cols, K, balanced, seed, oversampling, rounds, kmeans_max_iter,
                  kmeans_tol, min_size):
    """Cluster the label vectors ``sub`` (csr rows) of one node: (assign, n_clusters)."""
    assign, nk, _ = _k.cluster_rows(sub.indptr.astype(np.int64), sub.indices, sub.data,
                                    n_cols, K, balanced, seed, oversampling, rounds,
                                    kmeans_max_iter, kmeans_tol, min_size)
    return assign, nk


def _build_trees(R, n_trees, K, max_depth, max_leaf, balanced, min_size, oversampling,
                 rounds, kmeans_max_iter, kmeans_tol, random_state, pool, progress,
                 cluster_level=None):
    """Grow ``n_trees`` label trees level by level; nodes of a level cluster in parallel.

    Returns one dict of arrays per tree. Node ids follow creation order, so every node's
    children are consecutive ids; label nodes (``label >= 0``) are the terminal nodes.
    ``cluster_level(split, trees, params)``, if given, clusters the nodes ``split`` (list
    of (tree, node)) of one level instead of ``pool`` (``R`` then only needs ``.shape``);
    ``params`` are :func:`_cluster_node`'s arguments after the seed. The Dask twin uses it."""
    L = R.shape[0]
    params = (oversampling, rounds, kmeans_max_iter, kmeans_tol, min_size)
    trees = []
    for t in range(n_trees):
        trees.append(dict(parent=[-1], first_child=[-1], n_children=[0], label=[-1],
                          depth=[0], lo=[0], hi=[L], perm=np.arange(L, dtype=np.int64)))
    frontier = [(t, 0) for t in range(n_trees)]
    level = 0
    while frontier:
        split = []
        for (t, v) in frontier:
            tr = trees[t]
            m = tr["hi"][v] - tr["lo"][v]
            if m <= max_leaf or tr["depth"][v] >= max_depth:
                _add_label_children(tr, v)
            else:
                split.append((t, v))

        def job(item):
            t, v = item
            tr = trees[t]
            labs = tr["perm"][tr["lo"][v]:tr["hi"][v]]
            return _cluster_node(R[labs], R.shape[1], K, balanced,
                                 _node_seed(random_state, t, v), *params)

        if cluster_level is None:
            results = list(pool.map(job, split))
        else:
            results = cluster_level(split, trees, (R.shape[1], K, balanced) + params)
        new_frontier = []
        for (t, v), (assign, nk) in zip(split, results):
            tr = trees[t]
            lo, hi = tr["lo"][v], tr["hi"][v]
            order = np.argsort(assign, kind="stable")
            tr["perm"][lo:hi] = tr["perm"][lo:hi][order]
            sizes = np.bincount(assign, minlength=nk)
            start = len(tr["parent"])
            tr["first_child"][v] = start
            tr["n_children"][v] = int(nk)
            pos = lo
            for c in range(nk):
                tr["parent"].append(v)
                tr["first_child"].append(-1)
                tr["n_children"].append(0)
                tr["label"].append(-1)
                tr["depth"].append(tr["depth"][v] + 1)
                tr["lo"].append(pos)
                pos += int(sizes[c])
                tr["hi"].append(pos)
                new_frontier.append((t, start + c))
        frontier = new_frontier
        level += 1
        if progress is not None:
            progress(min(0.3, 0.3 * (1 - 0.5 ** level)),
                     f"label trees: level {level} done ({len(frontier)} nodes to split next)")
    out = []
    for tr in trees:
        out.append({k: (np.asarray(v, dtype=np.int64) if k != "perm" else v)
                    for k, v in tr.items()})
    return out


def _add_label_children(tr, v):
    lo, hi = tr["lo"][v], tr["hi"][v]
    start = len(tr["parent"])
    tr["first_child"][v] = start
    tr["n_children"][v] = hi - lo
    d = tr["depth"][v] + 1
    for q in range(lo, hi):
        tr["parent"].append(v)
        tr["first_child"].append(-1)
        tr["n_children"].append(0)
        tr["label"].append(int(tr["perm"][q]))
        tr["depth"].append(d)
        tr["lo"].append(q)
        tr["hi"].append(q + 1)


def _ova_tree(L):
    return dict(parent=np.r_[-1, np.zeros(L, np.int64)], first_child=np.r_[1, -np.ones(L, np.int64)],
                n_children=np.r_[L, np.zeros(L, np.int64)], label=np.r_[-1, np.arange(L)],
                depth=np.r_[0, np.ones(L, np.int64)], lo=np.r_[0, np.arange(L)],
                hi=np.r_[L, np.arange(1, L + 1)], perm=np.arange(L, dtype=np.int64))


def _train_plan(trees, label_nnz, n):
    """The training batches of every tree, costliest first: ``(cost, tree, node,
    first child, end child)``, at most ``_TASK_CHILDREN`` children each. Also stores each
    tree's label -> tree position map in ``tree["_pos"]`` (removed by :func:`_assemble`)."""
    tasks = []
    for t, tr in enumerate(trees):
        perm = tr["perm"]
        L = perm.shape[0]
        pos = np.empty(L, np.int64)
        pos[perm] = np.arange(L)
        tr["_pos"] = pos
        cum = np.r_[0, np.cumsum(label_nnz[perm])]
        # seeds depend on (random_state, tree, parent depth, smallest label of the child,
        # child size): identical problems get identical permutations in any model.
        for v in np.nonzero(tr["n_children"] > 0)[0]:
            fc, nc = int(tr["first_child"][v]), int(tr["n_children"][v])
            reach = n if v == 0 else cum[tr["hi"][v]] - cum[tr["lo"][v]]
            for j0 in range(0, nc, _TASK_CHILDREN):
                j1 = min(nc, j0 + _TASK_CHILDREN)
                tasks.append((float(reach) * (j1 - j0), t, int(v), fc + j0, fc + j1))
    tasks.sort(key=lambda z: (-z[0], z[1], z[3]))
    return tasks


def _collect(done_iter, n_tasks, progress, p0):
    """``{(tree, first child): result}`` from ``(task, get_result)`` pairs, reporting
    progress as they complete."""
    results = {}
    done = 0
    for task, get in done_iter:
        results[(task[1], task[3])] = get()
        done += 1
        if progress is not None and (done == n_tasks or done % max(1, n_tasks // 50) == 0):
            progress(p0 + (1 - p0) * done / n_tasks,
                     f"classifiers: {done}/{n_tasks} node batches trained")
    return results


def _assemble(trees, results, d):
    """The stacked node-major weight matrix, bias weights and node offsets of the trees."""
    counts, feats, vals, biases = [], [], [], []
    offsets = [0]
    for t, tr in enumerate(trees):
        N = tr["parent"].shape[0]
        cnt = np.zeros(N, np.int64)
        bw = np.zeros(N, np.float32)
        keys = sorted(c0 for (tt, c0) in results if tt == t)
        for c0 in keys:
            c, f, vv, b, _ = results[(t, c0)]
            cnt[c0:c0 + c.shape[0]] = c
            bw[c0:c0 + c.shape[0]] = b
            feats.append(f)
            vals.append(vv)
        counts.append(cnt)
        biases.append(bw)
        offsets.append(offsets[-1] + N)
        tr.pop("_pos", None)
    cnt = np.concatenate(counts)
    indptr = np.r_[0, np.cumsum(cnt)].astype(np.int64)
    W = sp.csr_matrix((np.concatenate(vals) if vals else np.zeros(0, np.float32),
                       np.concatenate(feats) if feats else np.zeros(0, np.int32), indptr),
                      shape=(offsets[-1], d))
    return W, np.concatenate(biases), np.asarray(offsets, np.int64)


# ----------------------------------------------------------------------------- model base
class _TreeModel(BaseEstimator):
    """Shared storage, training and beam-search prediction of KTXMLC and OneVsAll.

    Fitted state: ``trees_`` (one dict of node arrays per tree: ``parent``,
    ``first_child``, ``n_children``, ``label`` (-1 for a cluster node), ``depth``,
    ``lo``/``hi`` (the node's labels are ``perm[lo:hi]``), ``perm``), ``W_`` (csr, one row
    per node of all trees stacked: the classifier deciding to enter that node; the roots'
    rows are empty), ``bias_w_``.
    """

    # -- validation shared by both
    def _solver_params(self):
        C = _check_pos("C", self.C)
        eps = _check_pos("eps", self.eps)
        max_iter = _check_int("max_iter", self.max_iter, 1)
        thr = _check_pos("weight_threshold", self.weight_threshold, strict=False)
        bias = _check_pos("bias", self.bias, strict=False)
        n_jobs = _check_int("n_jobs", self.n_jobs, 1, allow_none=True)
        return C, eps, max_iter, thr, bias, n_jobs or numba.get_num_threads()

    def _train(self, X, Y, trees, C, eps, max_iter, thr, bias, pool, progress, p0=0.3):
        n, d = X.shape
        Yc = sp.csc_matrix(Y)
        Ycp, Yci = Yc.indptr.astype(np.int64), Yc.indices
        Xp, Xi, Xd = X.indptr.astype(np.int64), X.indices, X.data
        Yp, Yi = Y.indptr.astype(np.int64), Y.indices
        tasks = _train_plan(trees, np.diff(Ycp), n)

        def job(task):
            _, t, v, c0, c1 = task
            tr = trees[t]
            if v == 0:
                rows = np.arange(n, dtype=np.int64)
            else:
                rows = _k.node_rows(Ycp, Yci, tr["perm"], int(tr["lo"][v]), int(tr["hi"][v]), n)
            lo, hi, seeds = self._batch_problem(tr, t, v, c0, c1)
            return _k.train_children(Xp, Xi, Xd, d, Yp, Yi, tr["_pos"], rows, lo, hi, seeds,
                                     C, eps, max_iter, thr, bias)

        futures = [(task, pool.submit(job, task)) for task in tasks]
        results = _collect(((task, fut.result) for task, fut in futures), len(tasks),
                           progress, p0)
        return _assemble(trees, results, d)

    def _batch_problem(self, tr, t, v, c0, c1):
        """Label ranges and solver seeds of the children ``c0 .. c1-1`` of node ``v``."""
        lo = tr["lo"][c0:c1]
        hi = tr["hi"][c0:c1]
        minlab = np.minimum.reduceat(tr["perm"][:hi[-1]], lo)
        seeds = _mix(self.random_state, t, tr["depth"][v], minlab, hi - lo)
        return lo.astype(np.int64), hi.astype(np.int64), seeds

    def _finalise(self, X_shape, L, trees, W, bias_w, offsets, bias):
        self.n_features_in_ = int(X_shape[1])
        self.n_labels_ = int(L)
        self.trees_ = trees
        self.W_ = W
        self.bias_w_ = bias_w.astype(np.float32)
        self.node_offsets_ = offsets
        self._bias_value = float(bias)
        self._prepare_predict()

    def _prepare_predict(self):
        trees, off = self.trees_, self.node_offsets_
        fc = np.concatenate([np.where(tr["first_child"] >= 0, tr["first_child"] + off[t], -1)
                             for t, tr in enumerate(trees)]).astype(np.int64)
        nch = np.concatenate([tr["n_children"] for tr in trees]).astype(np.int64)
        lab = np.concatenate([tr["label"] for tr in trees]).astype(np.int64)
        leafc = np.zeros(fc.shape[0], np.bool_)
        has = nch > 0
        leafc[has] = lab[fc[has]] >= 0
        W = self.W_
        fm = _k.build_feature_major(fc, nch, W.indptr.astype(np.int64),
                                    W.indices.astype(np.int32), W.data.astype(np.float32))
        self._pred = dict(roots=off[:-1].copy(), first_child=fc, n_children=nch, label=lab,
                          leafc=leafc, fm=fm, max_children=int(nch.max()) if nch.size else 1)

    def _check_fitted(self):
        if not hasattr(self, "W_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call fit(X, Y) first")

    def predict_scores(self, X, k=5, beam_width=None):
        """Top-k label scores of every row of X.

        Parameters
        ----------
        X : sparse or dense matrix, n x n_features_in_.
        k : int, labels kept per row (capped at the number of labels).
        beam_width : int or None, overrides the fitted ``beam_width`` for this call.

        Returns
        -------
        csr_matrix n x L (float32) holding each row's top-k scores (probability-like,
        in (0, 1], averaged over trees); other entries are absent.
        """
        self._check_fitted()
        k = _check_int("k", k, 1)
        beam = getattr(self, "beam_width", None) if beam_width is None else beam_width
        beam = _check_int("beam_width", beam if beam is not None else 10, 1)
        X = _check_X(X, "X", self.n_features_in_)
        if getattr(self, "normalize", True):
            X = _normalize_rows(X)
        P = self._pred
        k = min(k, self.n_labels_)
        fm_ptr, fm_feat, fm_eptr, fm_child, fm_val = P["fm"]
        idx, val = _k.beam_predict(X.indptr.astype(np.int64), X.indices.astype(np.int32),
                                   X.data, P["roots"], P["first_child"], P["n_children"],
                                   P["label"], P["leafc"], fm_ptr, fm_feat, fm_eptr, fm_child,
                                   fm_val, self.bias_w_, self._bias_value, self.n_labels_,
                                   beam, k, P["max_children"])
        keep = idx >= 0
        indptr = np.r_[0, np.cumsum(keep.sum(axis=1))]
        S = sp.csr_matrix((val[keep], idx[keep], indptr), shape=(X.shape[0], self.n_labels_))
        S.sort_indices()
        return S

    # -- introspection
    @property
    def model_size_bytes_(self) -> int:
        """Bytes of the arrays needed to predict (weights, biases, tree structure)."""
        self._check_fitted()
        _, arrays = self._artifact_state()
        return int(sum(a.nbytes for a in arrays.values()))

    def tree_nodes(self, tree=0):
        """The nodes of one tree, for plotting.

        Returns a dict of arrays indexed by node id: ``parent`` (-1 at the root),
        ``children`` (list of child-id arrays), ``label`` (label id of a terminal label
        node, else -1), ``depth``, ``n_labels`` (labels below the node) and ``labels``
        (list: the label ids below each node).
        """
        self._check_fitted()
        tree = _check_int("tree", tree, 0)
        if tree >= len(self.trees_):
            raise ValueError(f"tree must be < {len(self.trees_)}, got {tree}")
        tr = self.trees_[tree]
        N = tr["parent"].shape[0]
        children = [np.arange(tr["first_child"][v], tr["first_child"][v] + tr["n_children"][v])
                    if tr["n_children"][v] > 0 else np.zeros(0, np.int64) for v in range(N)]
        labels = [tr["perm"][tr["lo"][v]:tr["hi"][v]] for v in range(N)]
        return dict(parent=tr["parent"].copy(), children=children, label=tr["label"].copy(),
                    depth=tr["depth"].copy(), n_labels=(tr["hi"] - tr["lo"]).copy(),
                    labels=labels)

    # -- artifacts
    _TREE_KEYS = ("parent", "first_child", "n_children", "label", "depth", "lo", "hi")

    def _artifact_state(self):
        self._check_fitted()
        meta = dict(n_features_in_=self.n_features_in_, n_labels_=self.n_labels_,
                    n_trees_=len(self.trees_), bias_value=self._bias_value,
                    W_shape=list(self.W_.shape), train_time_=getattr(self, "train_time_", None))
        arrays = dict(W_data=self.W_.data.astype(np.float32),
                      W_indices=self.W_.indices.astype(np.int32),
                      W_indptr=self.W_.indptr.astype(np.int64), bias_w=self.bias_w_,
                      node_offsets=self.node_offsets_,
                      perm=np.stack([tr["perm"] for tr in self.trees_]))
        for key in self._TREE_KEYS:
            arrays["tree_" + key] = np.concatenate([tr[key] for tr in self.trees_])
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        off = np.asarray(arrays["node_offsets"], np.int64)
        trees = []
        for t in range(int(meta["n_trees_"])):
            tr = {key: np.asarray(arrays["tree_" + key][off[t]:off[t + 1]], np.int64)
                  for key in cls._TREE_KEYS}
            tr["perm"] = np.asarray(arrays["perm"][t], np.int64)
            trees.append(tr)
        W = sp.csr_matrix((arrays["W_data"], arrays["W_indices"], arrays["W_indptr"]),
                          shape=tuple(meta["W_shape"]))
        obj._finalise((0, meta["n_features_in_"]), meta["n_labels_"], trees, W,
                      np.asarray(arrays["bias_w"]), off, meta["bias_value"])
        obj.train_time_ = meta.get("train_time_")
        return obj


# ----------------------------------------------------------------------------- KTXMLC
class KTXMLC(_TreeModel):
    """K-way label-tree extreme multi-label classifier (KTXMLC).

    Parameters
    ----------
    n_clusters : int, K, the children of every internal node (2 = Parabel-like binary
        trees; use :func:`elbow_curve` to pick a larger K).
    n_trees : int, trees in the ensemble (different seeds); scores are averaged.
    max_depth : int, depth at which a node becomes a leaf whatever its size (root = 0).
    max_leaf_labels : int, a node with at most this many labels becomes a leaf.
    C : float, squared-hinge SVM cost.
    beam_width : int, nodes kept per level at prediction.
    random_state : int, seeds the clustering and the coordinate-descent permutations.
    representation : "input" or "joint", label vectors to cluster (see
        :func:`label_representation`); ``joint_weight`` weighs the co-occurrence part.
    balanced : bool or None, capacity-balanced clusters; None = balanced for K = 2 (as
        Parabel) and free for K > 2 (as Bonsai).
    min_cluster_size : int, smaller clusters are dissolved into their members' next-best
        clusters.
    kmeans_oversampling : float, k-means|| draws about ``kmeans_oversampling * K`` centres
        per round; ``kmeans_rounds`` (None = min(5, ceil(log psi))) rounds.
    kmeans_max_iter, kmeans_tol : spherical k-means passes and stopping tolerance on the
        mean cosine similarity.
    eps, max_iter : dual coordinate descent tolerance and outer-iteration cap.
    weight_threshold : weights with ``|w| <= weight_threshold`` are pruned (bias excepted).
    bias : value of the constant bias feature.
    normalize : bool, L2-normalise rows of X before training and prediction.
    n_jobs : int or None, threads training/clustering nodes in parallel (None = numba's
        thread count). Results do not depend on it.

    Attributes
    ----------
    trees_, W_, bias_w_, node_offsets_ : the fitted trees and stacked node classifiers
        (see ``_TreeModel``); ``n_features_in_``, ``n_labels_``, ``train_time_`` (s),
        ``model_size_bytes_``.

    Notes
    -----
    Choices where the paper is vague follow Parabel / omikuji: label vectors are the
    normalised sums of normalised feature vectors of their positives; rows of X are
    L2-normalised and a bias feature of value 1 is appended (and regularised, as in
    liblinear); the root's children are trained on all points and any other node's on the
    points having at least one of its labels; a child whose every training point is
    positive gets no classifier (log-score 0); the solver is liblinear's
    L2R_L2LOSS_SVC_DUAL with eps = 0.1, 20 iterations and weights pruned at 0.1; a path's
    score is the sum of -max(0, 1 - wᵀx)² exponentiated at the labels, leaf clusters stay
    in the beam until every beam node is a leaf cluster, and trees are averaged.
    The node partitioning follows the KTXMLC paper: k-means|| seeding (Bahmani et al.
    2012) then spherical k-means, K-way, with balanced assignment as an option.
    """

    def __init__(self, n_clusters=2, n_trees=3, max_depth=20, max_leaf_labels=100, C=1.0,
                 beam_width=10, random_state=0, representation="input", joint_weight=1.0,
                 balanced=None, min_cluster_size=2, kmeans_oversampling=2.0,
                 kmeans_rounds=None, kmeans_max_iter=20, kmeans_tol=1e-4, eps=0.1,
                 max_iter=20, weight_threshold=0.1, bias=1.0, normalize=True, n_jobs=None):
        self.n_clusters = n_clusters
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.max_leaf_labels = max_leaf_labels
        self.C = C
        self.beam_width = beam_width
        self.random_state = random_state
        self.representation = representation
        self.joint_weight = joint_weight
        self.balanced = balanced
        self.min_cluster_size = min_cluster_size
        self.kmeans_oversampling = kmeans_oversampling
        self.kmeans_rounds = kmeans_rounds
        self.kmeans_max_iter = kmeans_max_iter
        self.kmeans_tol = kmeans_tol
        self.eps = eps
        self.max_iter = max_iter
        self.weight_threshold = weight_threshold
        self.bias = bias
        self.normalize = normalize
        self.n_jobs = n_jobs

    def _tree_params(self):
        """Validated tree parameters in :func:`_build_trees`' order (n_trees, K, max_depth,
        max_leaf, balanced, min_size, oversampling, rounds, kmeans_max_iter, kmeans_tol);
        also used by the Dask twin."""
        K = _check_int("n_clusters", self.n_clusters, 2)
        n_trees = _check_int("n_trees", self.n_trees, 1)
        max_depth = _check_int("max_depth", self.max_depth, 1)
        max_leaf = _check_int("max_leaf_labels", self.max_leaf_labels, 1)
        _check_int("beam_width", self.beam_width, 1)
        _check_int("random_state", self.random_state, 0)
        min_size = _check_int("min_cluster_size", self.min_cluster_size, 1)
        rounds = _check_int("kmeans_rounds", self.kmeans_rounds, 1, allow_none=True) or 0
        km_iter = _check_int("kmeans_max_iter", self.kmeans_max_iter, 1)
        km_tol = _check_pos("kmeans_tol", self.kmeans_tol, strict=False)
        overs = _check_pos("kmeans_oversampling", self.kmeans_oversampling)
        if self.balanced not in (None, True, False):
            raise ValueError(f"balanced must be True, False or None, got {self.balanced!r}")
        if self.representation not in ("input", "joint"):
            raise ValueError(f"representation must be 'input' or 'joint', "
                             f"got {self.representation!r}")
        balanced = (K == 2) if self.balanced is None else bool(self.balanced)
        return (n_trees, K, max_depth, max_leaf, balanced, min_size, overs, rounds, km_iter,
                km_tol)

    def fit(self, X, Y, progress: Optional[Callable[[float, str], None]] = None):
        """Grow the label trees and train every node's classifiers.

        Parameters
        ----------
        X : sparse n x d features; Y : sparse n x L 0/1 labels.
        progress : optional ``callable(fraction, message)`` called per tree level and per
            batch of trained nodes (fraction in [0, 1]).
        """
        tree_args = self._tree_params()
        C, eps, max_iter, thr, bias, n_jobs = self._solver_params()
        X = _check_X(X)
        Y = _check_Y(Y, X.shape[0])
        t0 = time.perf_counter()
        if self.normalize:
            X = _normalize_rows(X)
        R = label_representation(X, Y, self.representation, self.joint_weight)
        R.indptr = R.indptr.astype(np.int64)
        if progress is not None:
            progress(0.0, "label representations computed")
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            trees = _build_trees(R, *tree_args, self.random_state, pool, progress)
            W, bw, off = self._train(X, Y, trees, C, eps, max_iter, thr, bias, pool, progress)
        self._finalise(X.shape, Y.shape[1], trees, W, bw, off, bias)
        self.train_time_ = time.perf_counter() - t0
        if progress is not None:
            progress(1.0, "done")
        return self


class OneVsAll(_TreeModel):
    """One-vs-all squared-hinge linear classifiers with pruned weights (DiSMEC-style).

    Every label is trained against all points with the same dual coordinate descent
    solver as :class:`KTXMLC` and weights ``|w| <= weight_threshold`` pruned (DiSMEC's
    Δ = 0.01 on unnormalised data; 0.1 here as omikuji, since rows are normalised).
    Internally one tree of depth 1 whose root has every label as a child, so
    ``predict_scores`` ranks labels by exp(-max(0, 1 - wᵀx)²). Parameters as KTXMLC.
    """

    def __init__(self, C=1.0, eps=0.1, max_iter=20, weight_threshold=0.1, bias=1.0,
                 normalize=True, random_state=0, n_jobs=None):
        self.C = C
        self.eps = eps
        self.max_iter = max_iter
        self.weight_threshold = weight_threshold
        self.bias = bias
        self.normalize = normalize
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, Y, progress: Optional[Callable[[float, str], None]] = None):
        """Train one classifier per label (in batches of labels, in parallel)."""
        _check_int("random_state", self.random_state, 0)
        C, eps, max_iter, thr, bias, n_jobs = self._solver_params()
        X = _check_X(X)
        Y = _check_Y(Y, X.shape[0])
        t0 = time.perf_counter()
        if self.normalize:
            X = _normalize_rows(X)
        trees = [_ova_tree(Y.shape[1])]
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            W, bw, off = self._train(X, Y, trees, C, eps, max_iter, thr, bias, pool,
                                     progress, p0=0.0)
        self._finalise(X.shape, Y.shape[1], trees, W, bw, off, bias)
        self.train_time_ = time.perf_counter() - t0
        if progress is not None:
            progress(1.0, "done")
        return self


# ----------------------------------------------------------------------------- elbow
class Elbow(NamedTuple):
    ks: np.ndarray
    wcss: np.ndarray
    elbow: int


def elbow_curve(X, Y, ks=(2, 4, 8, 16, 32, 64), representation="input", random_state=0,
                kmeans_max_iter=20):
    """Within-cluster sum of squares of the root partition for each K, and the elbow.

    The label vectors (:func:`label_representation`) are clustered exactly as at a
    KTXMLC root (k-means|| + spherical k-means, unbalanced); WCSS is
    ``sum_l ||r_l - mean of its cluster||^2``. The elbow is the K whose point lies
    farthest from the straight line joining the first and last points of the curve, both
    axes scaled to [0, 1] (the "kneedle" rule).

    Returns
    -------
    Elbow(ks, wcss, elbow)
    """
    ks = np.asarray(list(ks), dtype=np.int64)
    if ks.size == 0 or np.any(ks < 1):
        raise ValueError("ks must be a non-empty list of positive integers")
    R = label_representation(X, Y, representation)
    L = R.shape[0]
    sq = np.asarray(R.multiply(R).sum(axis=1)).ravel()
    wcss = np.empty(ks.size)
    for j, K in enumerate(ks):
        if K >= L:
            wcss[j] = 0.0
            continue
        if K == 1:
            assign, nk = np.zeros(L, np.int64), 1
        else:
            assign, nk, _ = _k.cluster_rows(R.indptr.astype(np.int64), R.indices, R.data,
                                            R.shape[1], int(K), False,
                                            int(_mix(random_state, K)), 2.0, 0,
                                            kmeans_max_iter, 1e-4, 1)
        M = sp.csr_matrix((np.ones(L, np.float32), (assign, np.arange(L))), shape=(nk, L))
        S = M @ R
        sizes = np.asarray(M.sum(axis=1)).ravel()
        sums = np.asarray(S.multiply(S).sum(axis=1)).ravel()
        wcss[j] = float(sq.sum() - np.sum(sums / np.maximum(sizes, 1)))
    if ks.size <= 2:
        return Elbow(ks, wcss, int(ks[-1] if ks.size == 2 and wcss[0] > wcss[1] else ks[0]))
    order = np.argsort(ks)
    xs = ks[order].astype(float)
    ys = wcss[order]
    xn = (xs - xs[0]) / max(xs[-1] - xs[0], 1e-12)
    yr = ys.max() - ys.min()
    yn = (ys - ys.min()) / (yr if yr > 0 else 1.0)
    # distance to the chord from the first to the last point
    dx, dy = xn[-1] - xn[0], yn[-1] - yn[0]
    dist = np.abs(dy * xn - dx * yn + xn[-1] * yn[0] - yn[-1] * xn[0]) / max(math.hypot(dx, dy), 1e-12)
    return Elbow(ks, wcss, int(xs[int(np.argmax(dist))]))


# ----------------------------------------------------------------------------- DEFRAG
class DefragKTXMLC(BaseEstimator):
    """DEFRAG feature agglomeration followed by KTXMLC on the agglomerated features.

    ``per_tree=False``: one :class:`~featagg_core.defrag.Defrag` (``d0``,
    ``defrag_representation``) and one KTXMLC of ``n_trees`` trees. ``per_tree=True``: the
    DEFRAG paper's ensemble, one Defrag realisation (seed ``random_state + t``) and one
    single-tree KTXMLC per tree; each member returns its labels reached by the beam
    (``beam_width * max_leaf_labels`` of them) and the scores are averaged over members.
    """

    def __init__(self, d0=8, defrag_representation="XY", per_tree=False, n_clusters=2,
                 n_trees=3, max_depth=20, max_leaf_labels=100, C=1.0, beam_width=10,
                 random_state=0, n_jobs=None):
        self.d0 = d0
        self.defrag_representation = defrag_representation
        self.per_tree = per_tree
        self.n_clusters = n_clusters
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.max_leaf_labels = max_leaf_labels
        self.C = C
        self.beam_width = beam_width
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _ktxmlc(self, n_trees, seed):
        return KTXMLC(n_clusters=self.n_clusters, n_trees=n_trees, max_depth=self.max_depth,
                      max_leaf_labels=self.max_leaf_labels, C=self.C,
                      beam_width=self.beam_width, random_state=seed, n_jobs=self.n_jobs)

    def fit(self, X, Y, progress=None):
        from .defrag import Defrag  # the DEFRAG module; imported only when used

        n_trees = _check_int("n_trees", self.n_trees, 1)
        X = _check_X(X)
        Y = _check_Y(Y, X.shape[0])
        t0 = time.perf_counter()
        members = n_trees if self.per_tree else 1
        self.defrags_, self.models_ = [], []
        for t in range(members):
            seed = self.random_state + t
            df = Defrag(d0=self.d0, representation=self.defrag_representation,
                        random_state=seed).fit(X, Y)
            sub = None
            if progress is not None:
                def sub(f, msg, t=t):
                    progress((t + f) / members, f"member {t + 1}/{members}: {msg}")
            model = self._ktxmlc(1 if self.per_tree else n_trees, seed)
            model.fit(df.transform(X), Y, progress=sub)
            self.defrags_.append(df)
            self.models_.append(model)
        self.n_features_in_ = X.shape[1]
        self.n_labels_ = Y.shape[1]
        self.train_time_ = time.perf_counter() - t0
        return self

    def transform(self, X):
        """Agglomerated features of the first member's Defrag."""
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        return self.defrags_[0].transform(_check_X(X, "X", self.n_features_in_))

    def predict_scores(self, X, k=5):
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        k = _check_int("k", k, 1)
        X = _check_X(X, "X", self.n_features_in_)
        if len(self.models_) == 1:
            return self.models_[0].predict_scores(self.defrags_[0].transform(X), k=k)
        wide = min(self.n_labels_, max(k, self.beam_width * self.max_leaf_labels))
        total = None
        for df, m in zip(self.defrags_, self.models_):
            S = m.predict_scores(df.transform(X), k=wide)
            total = S if total is None else total + S
        total = sp.csr_matrix(total / len(self.models_), dtype=np.float32)
        return _top_k_csr(total, k)

    def _artifact_state(self):
        """Each member's Defrag and KTXMLC state, arrays prefixed ``m<t>.defrag.`` /
        ``m<t>.model.`` (the members' parameters are derived from this object's)."""
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        meta = {"n_features_in_": self.n_features_in_, "n_labels_": self.n_labels_,
                "train_time_": getattr(self, "train_time_", None), "members": []}
        arrays = {}
        for t, (df, m) in enumerate(zip(self.defrags_, self.models_)):
            d_meta, d_arr = df._artifact_state()
            m_meta, m_arr = m._artifact_state()
            meta["members"].append({"defrag": d_meta, "model": m_meta,
                                    "defrag_params": df.get_params(deep=False),
                                    "model_params": m.get_params(deep=False)})
            arrays.update({f"m{t}.defrag.{k}": v for k, v in d_arr.items()})
            arrays.update({f"m{t}.model.{k}": v for k, v in m_arr.items()})
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        from .defrag import Defrag

        obj = cls(**params)
        obj.defrags_, obj.models_ = [], []
        for t, member in enumerate(meta["members"]):
            def part(prefix):
                return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
            obj.defrags_.append(Defrag._from_artifact_state(
                member["defrag_params"], member["defrag"], part(f"m{t}.defrag.")))
            obj.models_.append(KTXMLC._from_artifact_state(
                member["model_params"], member["model"], part(f"m{t}.model.")))
        obj.n_features_in_ = int(meta["n_features_in_"])
        obj.n_labels_ = int(meta["n_labels_"])
        obj.train_time_ = meta.get("train_time_")
        return obj

    @property
    def model_size_bytes_(self) -> int:
        size = sum(m.model_size_bytes_ for m in self.models_)
        for df in self.defrags_:
            lab = getattr(df, "labels_", None)
            size += 0 if lab is None else np.asarray(lab).nbytes
        return int(size)


def _top_k_csr(S: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Keep each row's k largest entries (ties to the lower column)."""
    from .metrics import top_k

    idx = top_k(S, k)
    n = S.shape[0]
    rows = np.repeat(np.arange(n), idx.shape[1])
    cols = idx.ravel()
    ok = cols >= 0
    vals = np.asarray(S[rows[ok], cols[ok]]).ravel()
    keep = vals > 0
    out = sp.csr_matrix((vals[keep], (rows[ok][keep], cols[ok][keep])), shape=S.shape,
                        dtype=np.float32)
    out.sort_indices()
    return out


def defrag_comparison(X, Y, X_test, Y_test, d0=8, defrag_representation="XY",
                      per_tree=False, ks=(1, 3, 5), **ktxmlc_params):
    """Train KTXMLC on raw features and on DEFRAG features; accuracy, time and size.

    Returns a list of two dicts (``"raw"`` and ``"defrag"``) with P@k, nDCG@k, train
    seconds, predict milliseconds per point and model size in bytes.
    """
    from . import metrics

    rows = []
    raw = KTXMLC(**ktxmlc_params)
    dfk = DefragKTXMLC(d0=d0, defrag_representation=defrag_representation,
                       per_tree=per_tree, **{k: v for k, v in ktxmlc_params.items()
                                             if k in DefragKTXMLC().get_params()})
    for name, model in (("raw", raw), ("defrag", dfk)):
        t0 = time.perf_counter()
        model.fit(X, Y)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        S = model.predict_scores(X_test, k=max(ks))
        pred_ms = 1000 * (time.perf_counter() - t0) / X_test.shape[0]
        row = dict(features=name, train_s=train_s, predict_ms_per_point=pred_ms,
                   model_size_bytes=model.model_size_bytes_)
        for kk in ks:
            row[f"P@{kk}"] = float(metrics.precision_at_k(Y_test, S, kk))
            row[f"nDCG@{kk}"] = float(metrics.ndcg_at_k(Y_test, S, kk))
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- warmup
def warmup():
    """Compile the kernels on a tiny problem (the dashboard calls this at start-up)."""
    rng = np.random.default_rng(0)
    X = sp.random(12, 6, density=0.5, format="csr", random_state=1, dtype=np.float32)
    Yd = (rng.random((12, 5)) < 0.4).astype(np.float32)
    Yd[0, :] = 1
    Y = sp.csr_matrix(Yd)
    KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=2, n_jobs=1).fit(X, Y).predict_scores(X, k=2)
    KTXMLC(n_clusters=3, n_trees=1, max_leaf_labels=2, n_jobs=1).fit(X, Y)
    Xl = sp.csr_matrix(X, dtype=np.float64)
    y = np.where(np.arange(12) % 2 == 0, 1, -1).astype(np.int8)
    w, _ = l2svc_dual_cd(Xl.indptr.astype(np.int64), Xl.indices.astype(np.int64), Xl.data,
                         y, 6, 1.0, 0.1, 5, 1.0, 1)
    l2svc_primal_objective(Xl.indptr.astype(np.int64), Xl.indices.astype(np.int64), Xl.data,
                           y, w, 1.0, 1.0)
