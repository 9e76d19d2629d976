"""KTXMLC: extreme multi-label classification with K-way label trees.

Prajapati & Thakkar, "KTXMLC: A K-way tree based extreme multi-label classifier",
J. King Saud Univ. 2021 — a relative of Parabel (Prabhu et al. 2018), Bonsai (Khandagale
et al. 2020) and PECOS XR-Linear (Yu et al. 2022). Several trees over the *labels* are
grown by clustering label vectors (K children per node); every node holds one
squared-hinge linear classifier per child (one per label at the leaves), trained by dual
coordinate descent; prediction is a beam search down every tree. Where the beam would
reach every leaf cluster anyway (few labels), the fit keeps one flat tree -- one-vs-all --
instead, when that costs no more training work (``one_vs_all="auto"``, see
:class:`KTXMLC`).

Also here: :class:`OneVsAll` (DiSMEC-style baseline with the same solver and pruning) and :class:`DefragKTXMLC`
(feature agglomeration by :class:`featagg_core.agglomeration.defrag.Defrag` first). Choosing
K and d0 from the data is :mod:`featagg_core.xmlc.selection`'s.

Structure of a fit (the seam a distributed twin reuses): tree building and node training
are the plain functions of :mod:`featagg_core.xmlc.tree_fitting` — ``build_trees(R, spec,
n_trees, executor)``, ``training_tasks(trees, Y)``, ``train_task(X, Y, Yc, tree, pos,
task, solver, stop)``, ``assemble_weights`` and ``calibration`` — which take an
executor-like object (``submit``; futures with ``result(timeout)``/``cancel``) and plain
arrays. A node's training rows are computable from (Y, tree) alone (``task_rows``), every
seed derives from (random_state, tree, node), and results are gathered in submission
order, so any executor (threads here, a Dask client in ``featagg_core.distributed``)
yields the same model. :meth:`KTXMLC.fit` is that pipeline on a thread pool
(:mod:`featagg_core.xmlc.threaded_fit`);
``featagg_core.distributed.ktxmlc_distributed`` is it on a Dask cluster (label vectors
are exact products, so they do not depend on how the rows were split).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from featagg_core.utils.docstrings import fill_doc
from featagg_core.xmlc import tree_fitting as core
from featagg_core._kernels import ktxmlc as _k
from featagg_core._kernels.linear import l2svc_dual_cd, l2svc_primal_objective
from featagg_core.metrics import top_k
from featagg_core.utils.validation import Options, check_param, parameter_error, validate_params
from featagg_core.utils.validation import check_int as _check_int
from featagg_core.xmlc.artifact_state import (
    tree_model_artifact_state,
    tree_model_from_artifact_state,
)
from featagg_core.xmlc.inputs import (
    NON_NEGATIVE,
    POSITIVE,
    check_X,
    check_Y,
    int_from,
    n_label_columns,
    normalize_rows,
)
from featagg_core.xmlc.label_vectors import label_representation
from featagg_core.xmlc.threaded_fit import fit_trees_and_nodes, kernel_threads

__all__ = ["KTXMLC", "OneVsAll", "DefragKTXMLC", "warmup"]

_SCORES = {"calibrated": 0, "l2-hinge": 2, "l3-hinge": 3}
_LOSSES = {"squared_hinge": 0, "log": 1, "mixed": -1}

def _is_flat(trees, L) -> bool:
    """Whether ``trees`` is one flat tree (the root's children are every label)."""
    return len(trees) == 1 and int(trees[0]["n_children"][0]) == int(L) \
        and bool(np.all(trees[0]["label"][1:] >= 0))


# ----------------------------------------------------------------------------- model base
class _TreeModel(BaseEstimator):
    """Shared storage and beam-search prediction of KTXMLC and OneVsAll.

    Fitted state: ``trees_`` (one dict of node arrays per tree: ``parent``,
    ``first_child``, ``n_children``, ``label`` (-1 for a cluster node), ``depth``,
    ``lo``/``hi`` (the node's labels are ``perm[lo:hi]``), ``perm``), ``W_`` (csr, one row
    per node of all trees stacked: the classifier deciding to enter that node; the roots'
    rows are empty), ``bias_w_``, ``node_offsets_``, ``calibration_a_``/``calibration_b_``
    (per node: the node's log-score is log sigmoid(a z + b) of its decision value z) and
    ``calibration_`` ({group: (a, b, negatives, positives)}, group 0 = label classifiers,
    g > 0 = internal nodes at depth g).

    Parameters shared by both (declared in ``_parameter_constraints``; subclasses add
    theirs): ``C``, ``eps``, ``max_iter``, ``weight_threshold``, ``bias``, ``normalize``,
    ``score``, ``calibration_rows``, ``random_state``, ``n_jobs`` (see :class:`KTXMLC`).
    """

    _parameter_constraints: dict = {
        "C": POSITIVE,
        "eps": POSITIVE,
        "max_iter": int_from(1),
        "weight_threshold": NON_NEGATIVE,
        "bias": NON_NEGATIVE,
        "normalize": ["boolean"],
        "score": [Options(str, set(_SCORES))],
        "calibration_rows": int_from(0),
        "random_state": int_from(0),
        "n_jobs": int_from(1, allow_none=True),
    }

    # -- validation shared by both
    def _validate_params(self):
        """Check every parameter against ``_parameter_constraints`` (raises
        :class:`featagg_core.utils.validation.InvalidParameterError` naming the first bad one)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    def _solver_spec(self, calib, C=None, validate=True):
        if validate:
            self._validate_params()
        loss = getattr(self, "loss", "squared_hinge")
        C = float(self.C if C is None else C)
        C_log = C if loss == "log" else float(getattr(self, "C_log", 10.0))
        return core.SolverSpec(C, float(self.eps), int(self.max_iter),
                               float(self.weight_threshold), float(self.bias), calib,
                               int(self.random_state), _LOSSES[loss], C_log)

    def _n_jobs(self):
        n_jobs = None if self.n_jobs is None else int(self.n_jobs)
        return n_jobs or numba.get_num_threads()

    def _score_power(self):
        score = getattr(self, "score", "l2-hinge")
        check_param("score", score, [Options(str, set(_SCORES))])
        return _SCORES[score]

    def _finalise(self, X_shape, L, trees, W, bias_w, offsets, bias, cal_a, cal_b, groups):
        self.n_features_in_ = int(X_shape[1])
        self.n_labels_ = int(L)
        self.trees_ = trees
        self.W_ = W
        self.bias_w_ = np.asarray(bias_w, np.float32)
        self.node_offsets_ = np.asarray(offsets, np.int64)
        self.calibration_a_ = np.asarray(cal_a, np.float32)
        self.calibration_b_ = np.asarray(cal_b, np.float32)
        self.calibration_ = {int(g): tuple(float(x) for x in v) for g, v in groups.items()}
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

    def _fit_tail(self, X, Y, trees_or_n, spec, calib, progress, C=None, flat_rule=None,
                  trees=None, warm=None, keep_duals=False, prepared=False):
        """Fit on (X, Y): the trees grown (``trees_or_n`` an int), or one flat tree
        (``trees_or_n`` None), or the given ``trees`` as they are; ``warm`` / ``keep_duals``
        as :func:`~featagg_core.xmlc.threaded_fit.fit_trees_and_nodes` takes them (the
        duals kept go to ``self._duals``, a private attribute the form choice reads and
        deletes). ``prepared``: X and Y are already what :func:`check_X` /
        :func:`check_Y` return, X already normalised if the model normalises, and the
        parameters validated (the form choice's candidates -- copies of the validated
        parameters with a form, a C and passes that are valid too -- and the refit after
        it: :meth:`KTXMLC.fit` validates once and checks and normalises the rows once for
        all of them)."""
        solver = self._solver_spec(calib, C, validate=not prepared)
        n_jobs = self._n_jobs()
        if not prepared:
            X = check_X(X)
            Y = check_Y(Y, X.shape[0])
        t0 = time.perf_counter()
        if self.normalize and not prepared:
            X = normalize_rows(X)
        if progress is not None:
            progress(0.0, "rows normalised")
        stop = np.zeros(1, np.uint8)
        R = None
        if trees is not None:
            trees_or_n = list(trees)
        elif isinstance(trees_or_n, int):
            R = label_representation(X, Y, getattr(self, "representation", "input"),
                                     getattr(self, "joint_weight", 1.0), progress)
            if progress is not None:
                progress(0.02, "label representations computed")
        else:
            trees_or_n = [core.ova_tree(Y.shape[1])]
        flat_beam = None
        if flat_rule is None:
            flat_rule = getattr(self, "one_vs_all", "never") == "auto"
        if flat_rule:
            flat_beam = int(self.beam_width)
        out = fit_trees_and_nodes(X, Y, R, spec, solver, trees_or_n, n_jobs, progress, stop,
                                   None if trees is not None else flat_beam, warm, keep_duals)
        trees, W, bw, off, cal_a, cal_b, groups, work, duals = out
        if keep_duals:
            self._duals = duals
        self._finalise(X.shape, Y.shape[1], trees, W, bw, off, solver.bias, cal_a, cal_b,
                       groups)
        self.train_time_ = time.perf_counter() - t0
        self.train_work_ = work
        if progress is not None:
            progress(1.0, "done")
        return self

    @fill_doc
    def predict_scores(self, X, k=5, beam_width=None):
        """Top-k label scores of every row of X.

        Parameters
        ----------
        X : sparse or dense matrix, shape (n, n_features_in_)
            Features.
        k : int >= 1, default=5
            Labels kept per row (capped at the number of labels).
        beam_width : int >= 1 or None, default=None
            Overrides the fitted ``beam_width`` for this call.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n, n_labels_)
            float32, each row's top-k scores (probability-like, in (0, 1], averaged over
            trees); other entries are absent.

        {sklearn_not_fitted_raises}
        ValueError
            For a bad ``k`` / ``beam_width`` or ``X`` with another number of features.
        """
        self._check_fitted()
        k = _check_int("k", k, 1)
        beam = getattr(self, "beam_width", None) if beam_width is None else beam_width
        beam = _check_int("beam_width", beam if beam is not None else 10, 1)
        power = self._score_power()
        X = check_X(X, "X", self.n_features_in_)
        if getattr(self, "normalize", True):
            X = normalize_rows(X)
        return self._scores(X, k, beam, power)

    def _scores(self, X, k, beam, power):
        """:meth:`predict_scores` of rows already checked (and normalised if the model
        normalises), with validated ``k``, beam width and score power."""
        P = self._pred
        k = min(k, self.n_labels_)
        fm_ptr, fm_feat, fm_eptr, fm_child, fm_val = P["fm"]
        # every row visits at most every node, reading its non-zeros once per node
        with kernel_threads(X.nnz * self.W_.shape[0]):
            idx, val = _k.beam_predict(
                X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data, P["roots"],
                P["first_child"], P["n_children"], P["label"], P["leafc"], fm_ptr, fm_feat,
                fm_eptr, fm_child, fm_val, self.bias_w_, self._bias_value,
                self.calibration_a_, self.calibration_b_, power, self.n_labels_, beam, k,
                P["max_children"])
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

    @fill_doc
    def tree_nodes(self, tree=0):
        """The nodes of one tree, for plotting.

        Parameters
        ----------
        tree : int >= 0, default=0
            Which tree (less than the number of trees).

        Returns
        -------
        dict
            Arrays indexed by node id: ``parent`` (-1 at the root), ``children`` (list of
            child-id arrays), ``label`` (label id of a terminal label node, else -1),
            ``depth``, ``n_labels`` (labels below the node) and ``labels`` (list: the
            label ids below each node).

        {sklearn_not_fitted_raises}
        ValueError
            When ``tree`` is not one of the fitted trees.
        """
        self._check_fitted()
        tree = _check_int("tree", tree, 0)
        if tree >= len(self.trees_):
            raise parameter_error("tree", f"< {len(self.trees_)}", tree)
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
        return tree_model_artifact_state(self)

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        return tree_model_from_artifact_state(cls, params, meta, arrays)


# ----------------------------------------------------------------------------- KTXMLC
class KTXMLC(_TreeModel):
    """K-way label-tree extreme multi-label classifier (KTXMLC).

    Parameters
    ----------
    n_clusters : int, K, the most children of an internal node.
    n_trees : int, trees in the ensemble (different seeds); scores are averaged.
    max_depth : int, depth at which a node becomes a leaf whatever its size (root = 0).
    max_leaf_labels : int, a node with at most this many labels becomes a leaf.
    C : float, squared-hinge SVM cost (default 0.5, see Notes).
    beam_width : int, nodes kept per level at prediction.
    random_state : int, seeds the clustering and the coordinate-descent permutations.
    partition : "bisect" or "kmeans", how a node's labels are split (see Notes).
    score : "calibrated", "l2-hinge" or "l3-hinge", the log-score of a node on a path.
    representation : "input" or "joint", label vectors to cluster (see
        :func:`featagg_core.xmlc.label_vectors.label_representation`); ``joint_weight``
        weighs the co-occurrence part.
    balanced : bool or None ("kmeans" only), capacity-balanced clusters; None = balanced
        for K = 2 (as Parabel) and free for K > 2 (as Bonsai).
    min_cluster_size : int ("kmeans" only), smaller clusters are dissolved into their
        members' next-best clusters.
    kmeans_oversampling : float ("kmeans" only), k-means|| draws about
        ``kmeans_oversampling * K`` centres per round; ``kmeans_rounds`` (None =
        min(5, ceil(log psi))) rounds.
    kmeans_max_iter, kmeans_tol : k-means passes and stopping tolerance on the mean
        cosine similarity.
    eps, max_iter : dual coordinate descent tolerance and outer-iteration cap.
    weight_threshold : weights with ``|w| <= weight_threshold`` are pruned (bias excepted).
    bias : value of the constant bias feature.
    normalize : bool, L2-normalise rows of X before training and prediction.
    loss : "squared_hinge" (liblinear's L2R_L2LOSS_SVC_DUAL, Parabel/PECOS) or "log"
        (L2R_LR_DUAL, logistic regression, as napkinXC).
    calibration_rows : int, per classifier, at most this many positives and negatives
        (sampled deterministically) feed the calibration histogram; 0 = no calibration
        data (then ``score="calibrated"`` is a plain sigmoid of the decision value).
    n_jobs : int or None, threads training/clustering nodes in parallel (None = numba's
        thread count). Results do not depend on it.
    one_vs_all : "auto" or "never", "auto": when the beam reaches every leaf cluster of
        every grown tree (the trees would prune nothing at prediction) and one-vs-all
        costs no more training work than the ensemble, train one flat tree (one-vs-all)
        instead (see Notes); "never": always the trees (with ``form="auto"``: the flat
        model is not a candidate).
    form : "auto", "trees" or "flat", default "auto". "auto": the fit chooses between
        the flat model (one-vs-all) and the label trees, and C among ``{C/2, C, 2C}``,
        on validation rows carved from the training rows, then refits the winner on all
        of them (see Notes); "trees": the label trees (and ``one_vs_all``'s rule) at
        ``C``; "flat": one-vs-all at ``C``.

    Attributes
    ----------
    form_ : "flat" or "trees", the form fitted; ``C_`` : the C it was fitted with;
        ``choice_`` : one sentence saying what was chosen and on what evidence;
        ``selection_`` : the candidates tried (list of dicts: ``form``, ``C``, ``P@1``,
        ``P@5`` on the validation rows, ``work``, ``chosen``; empty when none was tried).
    trees_, W_, bias_w_, node_offsets_, calibration_a_, calibration_b_, calibration_ :
        the fitted trees, stacked node classifiers and their calibration (see
        ``_TreeModel``); ``n_features_in_``, ``n_labels_``, ``train_time_`` (s),
        ``model_size_bytes_``.

    Notes
    -----
    The paper fixes the K-way trees, k-means|| (Bahmani et al. 2012) seeding, spherical
    k-means, one-vs-rest squared-hinge node classifiers and beam search; the rest follows
    the best public peers, each choice measured against them on Bibtex, Delicious,
    Corel16k, Yeast, Scene and synthetic power-law sets (``benchmarks/xmlc_bench.py``;
    figures in ``benchmarks/results/xmlc.md``, notes section):

    * ``partition="bisect"`` (default) splits a node's labels into
      min(K, ceil(labels / max_leaf_labels)) balanced groups by recursive balanced
      spherical 2-means — PECOS's hierarchical k-means (a K-way level made of log2 K
      Parabel splits), so trees are shallow and the last clusters hold close to
      ``max_leaf_labels`` labels. ``"kmeans"`` is the paper's direct K-way k-means||.
    * Label vectors are PIFA / Parabel's (normalised sums of normalised rows); rows of X
      are L2-normalised (as Parabel, omikuji and PECOS's tf-idf pipeline) and a bias
      feature of value 1 is appended (and regularised, as in liblinear).
    * Negatives are Parabel's / PECOS's "teacher-forced" ones: the root's children are
      trained on all points, any other node's on the points having one of its labels; a
      child whose every training point is positive gets no classifier (log-score 0).
      The solver is liblinear's L2R_L2LOSS_SVC_DUAL with eps = 0.1, 20 iterations and
      weights pruned at 0.1 (omikuji's / PECOS's threshold on normalised rows). ``C``
      defaults to 0.5, not liblinear's / Parabel's / PECOS's 1, chosen on validation
      splits of the real sets' training rows: a stronger regulariser helps the many labels
      with few positives. A node's children share their training rows, so their problems
      are solved together (:func:`featagg_core._kernels.linear.l2svc_dual_cd_block`: each
      row visit serves every child, vectorised over labels; each child keeps its own duals,
      shrinking and stopping), for less training CPU and the same weights.
    * ``score="calibrated"`` (default): each classifier's decision value z enters the path
      as log sigmoid(a z + b), with (a, b) fitted once per level (label classifiers; the
      internal nodes of each depth) by Platt scaling on a histogram of the decision
      values (pruned weights) of every classifier's training rows (positives and a
      deterministic sample of negatives, at most ``calibration_rows`` of each, weighted).
      The product along a path is then PLT's (napkinXC's) chain of conditional
      probabilities P(node | parent, x), fitted rather than fixed; the Parabel/omikuji
      squared hinge exp(-max(0, 1 - z)^2) and PECOS's cubic ``l3-hinge`` are offered too.
      (The Jaakkola-Haussler leave-one-out bound on the decision values is far too loose
      with the squared hinge: it flips most support vectors' signs.)
    * A beam node that is a leaf cluster stays in the beam until every beam node is one;
      trees are averaged (a label a tree's beam missed counts 0 there).
    * ``one_vs_all="auto"`` (default): a tree is there to prune labels at prediction; when
      every tree has at most ``beam_width`` leaf clusters the beam reaches every label and
      prunes nothing, so, if one-vs-all's planned work (n x L rows x classifiers) is at
      most the ensemble's (:func:`featagg_core.xmlc.tree_fitting.flat_is_enough`), the fit
      keeps one flat tree: the exact one-vs-all model (DiSMEC's; PECOS's XR-Linear with a
      single layer), cheaper to train and to predict than the trees. Sets with more labels
      than ``beam_width * max_leaf_labels`` always keep their trees. A label set that fits
      one leaf (L <= ``max_leaf_labels``) is one flat tree whatever this setting.
    * ``form="auto"`` (default): no single fixed setting wins on every set (the flat model
      leads on P@1 where the trees lead on P@5, e.g. Corel16k; see
      ``benchmarks/results/xmlc.md``), so the data chooses.
      :func:`featagg_core.xmlc.form_choice.carve_rows` carves 20 % of the training rows
      (seeded by ``random_state``) as validation rows; candidates are fitted on the
      others (at most 50,000 of them): first the flat model and the trees at ``C`` (the
      flat model only when L <= ``beam_width * max_leaf_labels``, where its n x L work
      stays within the trees' order; the trees only when L > ``max_leaf_labels``), then
      the leading form at ``C/2`` and ``2C`` (4 candidate fits at most, on 80 % of the
      rows, every one's solver stopped at the looser tolerance 0.25 instead of ``eps``:
      a fixed pass count would stop the forms at different distances from their optima;
      the ``C/2`` and ``2C`` ones reuse the ``C`` candidate's label trees, which do not
      depend on C, and start their dual coordinate descent from its dual variables
      scaled by the ratio of the Cs, so they reach the tolerance sooner; see
      :mod:`featagg_core.xmlc.form_choice`). The winner
      (:func:`featagg_core.xmlc.form_choice.pick_candidate`): best validation P@1, P@5
      deciding between candidates whose P@1 differs by less than one standard error of
      the paired per-row difference, and the least training work between those tied on
      P@5 too (at equal work, the better P@1 estimate). It is refitted on all training
      rows, so the fitted model equals ``KTXMLC(form=form_, C=C_, one_vs_all="never")``
      fitted directly. Fewer than 50 validation rows: no choice,
      the trees (or one flat tree by ``one_vs_all``'s rule) at ``C``.
    """

    def __init__(self, n_clusters=16, n_trees=3, max_depth=20, max_leaf_labels=100, C=0.5,
                 beam_width=10, random_state=0, partition="bisect", score="calibrated",
                 representation="input", joint_weight=1.0, balanced=None,
                 min_cluster_size=2, kmeans_oversampling=2.0, kmeans_rounds=None,
                 kmeans_max_iter=20, kmeans_tol=1e-4, eps=0.1, max_iter=20,
                 weight_threshold=0.1, bias=1.0, normalize=True, calibration_rows=64,
                 loss="squared_hinge", C_log=10.0, n_jobs=None, one_vs_all="auto",
                 form="auto"):
        self.n_clusters = n_clusters
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.max_leaf_labels = max_leaf_labels
        self.C = C
        self.beam_width = beam_width
        self.random_state = random_state
        self.partition = partition
        self.score = score
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
        self.calibration_rows = calibration_rows
        self.loss = loss
        self.C_log = C_log
        self.n_jobs = n_jobs
        self.one_vs_all = one_vs_all
        self.form = form

    #: parameters added after KTXMLC artifacts were first saved, with the value that
    #: describes such an artifact's model (it was fitted without the choice of form)
    _params_added_later = {"form": "trees"}

    _parameter_constraints: dict = {
        **_TreeModel._parameter_constraints,
        "n_clusters": int_from(2),
        "n_trees": int_from(1),
        "max_depth": int_from(1),
        "max_leaf_labels": int_from(1),
        "beam_width": int_from(1),
        "partition": [Options(str, {"bisect", "kmeans"})],
        "representation": [Options(str, {"input", "joint"})],
        "joint_weight": NON_NEGATIVE,
        "balanced": ["boolean", None],
        "min_cluster_size": int_from(1),
        "kmeans_oversampling": POSITIVE,
        "kmeans_rounds": int_from(1, allow_none=True),
        "kmeans_max_iter": int_from(1),
        "kmeans_tol": NON_NEGATIVE,
        "loss": [Options(str, set(_LOSSES))],
        "C_log": POSITIVE,
        "one_vs_all": [Options(str, {"auto", "never"})],
        "form": [Options(str, {"auto", "trees", "flat"})],
    }

    def _tree_spec(self):
        """The :class:`featagg_core.xmlc.tree_fitting.TreeSpec` of the (validated) parameters."""
        self._validate_params()
        K = int(self.n_clusters)
        balanced = (K == 2) if self.balanced is None else bool(self.balanced)
        return core.TreeSpec(K, self.partition, int(self.max_depth), int(self.max_leaf_labels),
                             balanced, int(self.min_cluster_size),
                             float(self.kmeans_oversampling),
                             0 if self.kmeans_rounds is None else int(self.kmeans_rounds),
                             int(self.kmeans_max_iter), float(self.kmeans_tol),
                             int(self.random_state))

    @fill_doc
    def fit(self, X, Y, progress: Optional[Callable[[float, str], None]] = None):
        """Grow the label trees and train every node's classifiers.

        {xml_X_Y_params}
        progress : callable(fraction, message), optional
            Called per tree level, per trained node batch and at least every 0.2 s while a
            job runs (fraction in [0, 1], by the work done). It may raise
            :class:`featagg_core.utils.cancel.Cancelled`: the fit then stops its threads (jobs
            not started are dropped, running kernels return at their next solver pass)
            and the exception propagates; the estimator is left unfitted.

        Returns
        -------
        KTXMLC
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints`` (the message names it) or
            bad ``X`` / ``Y`` (no rows, not 0/1, row counts that differ, NaN).
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        if self.form != "auto":
            self._fit_form(X, Y, self.form, float(self.C), None, progress)
            self.selection_ = []
            self.choice_ = (f"{self.form} as set (C = {float(self.C):g})")
            return self
        X = check_X(X)
        Y = check_Y(Y, X.shape[0])
        # rows normalised once: the candidates take theirs from these (the same bits as
        # normalising them apart: the normalisation is row by row) and the refit uses all
        if self.normalize:
            X = normalize_rows(X)
        form, C, table, reason = self._choose_form(X, Y, sub_progress(progress, 0.0, 0.5,
                                                                        "choosing the form"),
                                                   normalized=True)
        self._fit_form(X, Y, form, C, False if table else None,
                       sub_progress(progress, 0.5, 1.0, f"refit ({form}, C = {C:g})")
                       if table else progress, prepared=True)
        self.selection_ = table
        self.choice_ = reason
        return self

    def _fit_form(self, X, Y, form, C, flat_rule, progress, trees=None, warm=None,
                  keep_duals=False, prepared=False):
        """Fit one form ("flat": one-vs-all as one flat tree; "trees": the label trees,
        replaced by one flat tree under ``flat_rule`` (None: ``one_vs_all``'s rule)) at
        ``C``; sets ``form_`` (what was fitted) and ``C_``. ``trees``, ``warm``,
        ``keep_duals`` and ``prepared``: as :meth:`_fit_tail` takes them (the form
        choice's candidates; ``prepared`` also the refit after the choice)."""
        if form == "flat":
            self._fit_tail(X, Y, None, None, int(self.calibration_rows), progress, C=C,
                           trees=trees, warm=warm, keep_duals=keep_duals, prepared=prepared)
        else:
            spec, n_trees, calib = self._fit_plan(n_label_columns(Y))
            self._fit_tail(X, Y, n_trees, spec, calib, progress, C=C, flat_rule=flat_rule,
                           trees=trees, warm=warm, keep_duals=keep_duals, prepared=prepared)
        self.form_ = "flat" if _is_flat(self.trees_, self.n_labels_) else "trees"
        self.C_ = float(C)
        return self

    def _choose_form(self, X, Y, progress, normalized=False):
        """``(form, C, table, reason)``: the form and C :mod:`featagg_core.xmlc.form_choice`
        picks on validation rows carved from (X, Y) (see Notes); ``table`` is empty when no
        choice was made (too few rows, or a single candidate). ``normalized``: as
        :meth:`_choose_form_rows`."""
        return self._choose_form_rows(X.shape[0], Y.shape[1],
                                      lambda rows: (X[rows], Y[rows]), progress, normalized)

    def _choose_form_rows(self, n, L, take, progress, normalized=False):
        """:meth:`_choose_form` on ``n`` rows and ``L`` labels whose rows are reached
        through ``take(rows) -> (X[rows], Y[rows])`` (sorted row numbers): only the rows
        :func:`~featagg_core.xmlc.form_choice.carve_rows` carves are asked for. The Dask
        twin passes a ``take`` over the rows it gathered from sharded input.
        ``normalized``: ``take`` returns rows of matrices :func:`check_X` / :func:`check_Y`
        returned, already normalised if the model normalises (:meth:`fit` normalises them
        once, for the candidates and the refit); otherwise they are checked and normalised
        here.

        The C0 candidates keep their dual variables (the support vectors') until the
        leading form is known; its C/2 and 2C candidates are then fitted on its trees from
        those duals (:func:`~featagg_core.xmlc.form_choice.warm_duals`), and the duals are
        dropped. Everything here runs in this process, so the Dask twin makes the same
        choice."""
        from featagg_core.xmlc import form_choice as fc

        spec = self._tree_spec()
        C0 = float(self.C)
        trees_differ = L > spec.max_leaf
        flat_ok = (not trees_differ) or (self.one_vs_all != "never"
                                          and L <= int(self.beam_width) * spec.max_leaf)
        forms = (["flat"] if flat_ok else []) + (["trees"] if trees_differ else [])
        fit_rows, valid_rows = fc.carve_rows(n, int(self.random_state))
        if valid_rows.size == 0:
            form = "trees" if trees_differ else "flat"
            return form, C0, [], (f"{form} at C = {C0:g} without a choice: fewer than "
                                  f"{fc.MIN_VALID_ROWS} validation rows in {n} rows")
        Xf, Yf = take(fit_rows)
        Xv, Yv = take(valid_rows)
        if not normalized:
            Xf, Xv = check_X(Xf), check_X(Xv, "X", Xf.shape[1])
            Yf, Yv = check_Y(Yf, Xf.shape[0]), check_Y(Yv, Xv.shape[0])
            if self.normalize:
                # once for every candidate (they fit and score with normalize=False): the
                # same rows a candidate would normalise itself, so the same bits
                Xf, Xv = normalize_rows(Xf), normalize_rows(Xv)
        table, hits, prec = [], [], []
        params = self.get_params(deep=False)   # every candidate's, but form, C, passes
        plan = [(f, C0) for f in forms]
        n_planned = len(plan) + len(fc.C_FACTORS) - 1
        at_c0 = {}   # form -> its C0 candidate's (trees, duals): the C grid starts there

        def trial(form, C, base=None):
            j = len(table)
            cand = self._candidate(form, C, params)
            warm = None if base is None else fc.warm_duals(base[1], C0, C)
            cand._fit_form(Xf, Yf, form, C, False,
                           sub_progress(progress, j / n_planned, (j + 1) / n_planned,
                                        f"candidate {form}, C = {C:g}"),
                           trees=None if base is None else base[0], warm=warm,
                           keep_duals=base is None, prepared=True)
            h1, h5 = fc.validation_hits(Yv, cand._scores(Xv, 5, int(cand.beam_width),
                                                         cand._score_power()), 5)
            hits.append(h1)
            prec.append(h5)
            table.append({"form": form, "C": float(C), "P@1": float(h1.mean()),
                          "P@5": float(h5.mean()), "work": int(cand.train_work_)})
            return cand

        for form, C in plan:
            cand = trial(form, C)   # only its trees and duals are kept, not its weights
            at_c0[form] = (cand.trees_, cand.__dict__.pop("_duals"))
            del cand
        # the C grid for the form that leads at C0, on its trees, from its duals
        work = [r["work"] for r in table]
        lead, _ = fc.pick_candidate(hits, prec, work)
        base = at_c0[table[lead]["form"]]
        at_c0.clear()             # the other form's duals are not needed any more
        for f in fc.C_FACTORS:
            if f != 1.0:
                trial(table[lead]["form"], C0 * f, base)
        del base
        work = [r["work"] for r in table]
        chosen, tied = fc.pick_candidate(hits, prec, work)
        by_p5, _ = fc.pick_candidate(hits, prec)
        form, C = table[chosen]["form"], table[chosen]["C"]
        for j, row in enumerate(table):
            row["chosen"] = j == chosen
        kind = ("p5" if chosen == by_p5 else
                "cost" if work[chosen] < work[by_p5] else "estimate")
        return form, C, table, fc.describe(form, C, table, chosen, tied, int(valid_rows.size),
                                           kind)

    def _candidate(self, form, C, params=None):
        """An unfitted copy of ``self`` that fits one fixed form at C, its solver stopped
        at the looser tolerance ``form_choice.CANDIDATE_EPS`` (within
        ``form_choice.CANDIDATE_MAX_ITER`` passes; a C-grid candidate started from the C0
        candidate's duals gets there sooner). ``params``: ``self.get_params(deep=False)``
        when the caller has them (read once for all the candidates)."""
        from featagg_core.xmlc import form_choice as fc

        params = dict(self.get_params(deep=False) if params is None else params)
        params.update(form=form, C=C, max_iter=min(int(self.max_iter), fc.CANDIDATE_MAX_ITER),
                      eps=max(float(self.eps), fc.CANDIDATE_EPS),
                      normalize=False)   # the choice hands it rows normalised once
        return type(self)(**params)

    def _fit_plan(self, n_labels):
        """(tree spec, trees to grow, calibration rows) of a fit on ``n_labels`` labels;
        also used by the Dask twin (``featagg_core.distributed.ktxmlc_distributed``), so it
        validates the parameters itself."""
        spec = self._tree_spec()
        n_trees = int(self.n_trees)
        calib = int(self.calibration_rows)
        if n_labels <= spec.max_leaf:
            # every tree would be the same single leaf cluster (one-vs-all over all
            # labels): train it once instead of n_trees times
            n_trees = 1
        return spec, n_trees, calib


class OneVsAll(_TreeModel):
    """One-vs-all squared-hinge linear classifiers with pruned weights (DiSMEC-style).

    Every label is trained against all points with the same dual coordinate descent
    solver as :class:`KTXMLC` and weights ``|w| <= weight_threshold`` pruned (DiSMEC's
    Δ = 0.01 on unnormalised data; 0.1 here as omikuji, since rows are normalised).
    Internally one tree of depth 1 whose root has every label as a child, so
    ``predict_scores`` ranks labels by their (calibrated or hinge) score.

    Parameters
    ----------
    C, eps, max_iter, weight_threshold, bias, normalize, score, calibration_rows,
    random_state, n_jobs :
        As in :class:`KTXMLC` (same defaults).
    """

    def __init__(self, C=0.5, eps=0.1, max_iter=20, weight_threshold=0.1, bias=1.0,
                 normalize=True, score="calibrated", calibration_rows=64, random_state=0,
                 n_jobs=None):
        self.C = C
        self.eps = eps
        self.max_iter = max_iter
        self.weight_threshold = weight_threshold
        self.bias = bias
        self.normalize = normalize
        self.score = score
        self.calibration_rows = calibration_rows
        self.random_state = random_state
        self.n_jobs = n_jobs

    @fill_doc
    def fit(self, X, Y, progress: Optional[Callable[[float, str], None]] = None):
        """Train one classifier per label (in batches of labels, in parallel).

        {xml_X_Y_params}
        progress : callable(fraction, message), optional
            As in :meth:`KTXMLC.fit` (may raise ``Cancelled``).

        Returns
        -------
        OneVsAll
        {xml_fit_raises}
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        return self._fit_tail(X, Y, None, None, int(self.calibration_rows), progress)


# ----------------------------------------------------------------------------- DEFRAG
def sub_progress(progress, lo, hi, what):
    """``progress`` of a part of a fit: its fractions mapped onto ``[lo, hi]`` of the
    whole and its messages prefixed with ``what``.

    Parameters
    ----------
    progress : callable(fraction, message) or None
        The whole's callback (it may raise ``Cancelled``).
    lo, hi : float
        The part's share of the whole.
    what : str
        The part's name in messages.

    Returns
    -------
    callable(fraction, message) or None
        None when ``progress`` is None.
    """
    if progress is None:
        return None

    def report(fraction, message):
        progress(lo + (hi - lo) * fraction, f"{what}: {message}")
    return report


def _defrag_progress(progress, lo, hi, what):
    """Defrag's ``progress(level, n_levels)`` mapped onto ours (which may raise Cancelled)."""
    if progress is None:
        return None

    def report(level, n_levels):
        progress(lo + (hi - lo) * min(1.0, level / max(n_levels, 1)),
                 f"{what}: feature tree level {level}/{n_levels}")
    return report


def fit_defrag_member(defrag, model, X, Y, progress=None, lo=0.0, hi=1.0, what="member"):
    """Fit ``defrag`` on (X, Y), then ``model`` on its agglomerated features: one
    DEFRAG + KTXMLC member (of :class:`DefragKTXMLC`, or a candidate of
    :func:`featagg_core.xmlc.selection.choose_d0`).

    Parameters
    ----------
    defrag : featagg_core.agglomeration.defrag.Defrag
        Unfitted.
    model : KTXMLC
        Unfitted.
    X : scipy.sparse.csr_matrix, shape (n, d)
        Features.
    Y : scipy.sparse.csr_matrix, shape (n, L)
        0/1 labels.
    progress : callable(fraction, message), optional
        The whole's callback: the Defrag reports in the first fifth of ``[lo, hi]``, the
        KTXMLC in the rest; it may raise ``Cancelled``, which propagates.
    lo, hi : float, default=0.0, 1.0
        The member's share of the whole.
    what : str, default="member"
        The member's name in messages.

    Returns
    -------
    tuple
        ``(defrag, model)``, both fitted.
    """
    mid = lo + 0.2 * (hi - lo)
    defrag.fit(X, Y, progress=_defrag_progress(progress, lo, mid, what))
    model.fit(defrag.transform(X), Y, progress=sub_progress(progress, mid, hi, what))
    return defrag, model


def _top_k_csr(S: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Keep each row's k largest entries (ties to the lower column)."""
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


class DefragKTXMLC(BaseEstimator):
    """DEFRAG feature agglomeration followed by KTXMLC on the agglomerated features.

    ``per_tree=False``: one :class:`~featagg_core.agglomeration.defrag.Defrag` (``d0``,
    ``defrag_representation``) and one KTXMLC of ``n_trees`` trees. ``per_tree=True``: the
    DEFRAG paper's ensemble, one Defrag realisation (seed ``random_state + t``) and one
    single-tree KTXMLC per tree; each member returns its labels reached by the beam
    (``beam_width * max_leaf_labels`` of them) and the scores are averaged over members.
    Other KTXMLC parameters take KTXMLC's defaults. Use :func:`choose_d0` to pick d0 from
    validation data (or learn that agglomeration does not pay on a data set).

    Parameters
    ----------
    d0 : int >= 1, default=8
        Defrag's ``d0`` (features per agglomerated group, about).
    defrag_representation : {"XY", "X"}, default="XY"
        Defrag's ``representation``.
    per_tree : bool, default=False
        One Defrag + single-tree KTXMLC per tree (the DEFRAG paper's ensemble), or one
        Defrag and one KTXMLC of ``n_trees`` trees.
    n_clusters, n_trees, max_depth, max_leaf_labels, C, beam_width, n_jobs :
        As in :class:`KTXMLC`.
    random_state : int >= 0, default=0
        Seed of member ``t``'s Defrag and KTXMLC is ``random_state + t``.

    Attributes
    ----------
    defrags_, models_ : list
        The members' fitted Defrag and KTXMLC; ``n_features_in_``, ``n_labels_``,
        ``train_time_`` (s), ``model_size_bytes_``.
    """

    _parameter_constraints: dict = {
        "d0": int_from(1),
        "defrag_representation": [Options(str, {"XY", "X"})],
        "per_tree": ["boolean"],
        "n_clusters": int_from(2),
        "n_trees": int_from(1),
        "max_depth": int_from(1),
        "max_leaf_labels": int_from(1),
        "C": POSITIVE,
        "beam_width": int_from(1),
        "random_state": int_from(0),
        "n_jobs": int_from(1, allow_none=True),
    }

    def __init__(self, d0=8, defrag_representation="XY", per_tree=False, n_clusters=16,
                 n_trees=3, max_depth=20, max_leaf_labels=100, C=0.5, beam_width=10,
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

    @fill_doc
    def fit(self, X, Y, progress=None):
        """Fit Defrag(s), then KTXMLC on the agglomerated features.

        {xml_X_Y_params}
        progress : callable(fraction, message), optional
            Called per feature-tree level and as in :meth:`KTXMLC.fit`; it may raise
            :class:`featagg_core.utils.cancel.Cancelled`, which propagates.

        Returns
        -------
        DefragKTXMLC
        {xml_fit_raises}
        """
        from featagg_core.agglomeration.defrag import Defrag  # the DEFRAG module; imported only when used

        validate_params(self.get_params(deep=False), self._parameter_constraints)
        n_trees = int(self.n_trees)
        X = check_X(X)
        Y = check_Y(Y, X.shape[0])
        t0 = time.perf_counter()
        members = n_trees if self.per_tree else 1
        defrags, models = [], []
        for t in range(members):
            seed = self.random_state + t
            df, model = fit_defrag_member(
                Defrag(d0=self.d0, representation=self.defrag_representation,
                       random_state=seed),
                self._ktxmlc(1 if self.per_tree else n_trees, seed), X, Y, progress,
                t / members, (t + 1) / members, f"member {t + 1}/{members}")
            defrags.append(df)
            models.append(model)
        self.defrags_, self.models_ = defrags, models
        self.n_features_in_ = X.shape[1]
        self.n_labels_ = Y.shape[1]
        self.train_time_ = time.perf_counter() - t0
        return self

    @fill_doc
    def transform(self, X):
        """Agglomerated features of the first member's Defrag.

        Parameters
        ----------
        X : sparse or dense matrix, shape (n, n_features_in_)
            Features.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n, n_agglomerated)
            The first member's Defrag applied to ``X``.

        {sklearn_not_fitted_raises}
        """
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        return self.defrags_[0].transform(check_X(X, "X", self.n_features_in_))

    @fill_doc
    def predict_scores(self, X, k=5):
        """Top-k label scores of every row of X, averaged over the members.

        Parameters
        ----------
        X : sparse or dense matrix, shape (n, n_features_in_)
            Raw features (each member agglomerates them with its own Defrag).
        k : int >= 1, default=5
            Labels kept per row (capped at the number of labels).

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n, n_labels_)
            float32, each row's top-k scores; with several members each returns the labels
            its beam reached (``beam_width * max_leaf_labels`` of them) and the average is
            cut to the top k (a label a member missed counts 0 there).

        {sklearn_not_fitted_raises}
        """
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        k = _check_int("k", k, 1)
        X = check_X(X, "X", self.n_features_in_)
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
        from featagg_core.agglomeration.defrag import Defrag

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
        """Bytes needed to predict: every member's KTXMLC arrays plus its Defrag labels."""
        if not hasattr(self, "models_"):
            raise NotFittedError("This DefragKTXMLC instance is not fitted yet")
        size = sum(m.model_size_bytes_ for m in self.models_)
        for df in self.defrags_:
            lab = getattr(df, "labels_", None)
            size += 0 if lab is None else np.asarray(lab).nbytes
        return int(size)


# ----------------------------------------------------------------------------- warmup
def warmup():
    """Compile the kernels on a tiny problem (the dashboard calls this at start-up)."""
    rng = np.random.default_rng(0)
    X = sp.random(12, 6, density=0.5, format="csr", random_state=1, dtype=np.float32)
    Yd = (rng.random((12, 5)) < 0.4).astype(np.float32)
    Yd[0, :] = 1
    Y = sp.csr_matrix(Yd)
    S = KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=2, n_jobs=1).fit(X, Y) \
        .predict_scores(X, k=2)
    # the form choice's scoring of its candidates (12 rows are too few for it to run here)
    from featagg_core.xmlc.form_choice import validation_hits
    validation_hits(Y, S, 2)
    # trees kept (one_vs_all="never"): the training of nodes below the root
    KTXMLC(n_clusters=3, n_trees=1, max_leaf_labels=2, partition="kmeans", n_jobs=1,
           one_vs_all="never").fit(X, Y)
    KTXMLC(n_clusters=2, n_trees=1, max_leaf_labels=2, partition="kmeans", n_jobs=1).fit(X, Y)
    Xl = sp.csr_matrix(X, dtype=np.float64)
    y = np.where(np.arange(12) % 2 == 0, 1, -1).astype(np.int8)
    w, _ = l2svc_dual_cd(Xl.indptr.astype(np.int64), Xl.indices.astype(np.int64), Xl.data,
                         y, 6, 1.0, 0.1, 5, 1.0, 1)
    l2svc_primal_objective(Xl.indptr.astype(np.int64), Xl.indices.astype(np.int64), Xl.data,
                           y, w, 1.0, 1.0)
