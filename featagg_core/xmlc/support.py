"""Private parts of :mod:`featagg_core.xmlc.ktxmlc` (re-exported there): the declared
constraints shared by its estimators, the input checks and row normalisation, the label
vectors (:func:`label_representation`), the thread-pool fit pipeline over
:mod:`featagg_core.xmlc.tree_fitting`, the progress adapters of the DEFRAG members and the top-k
cut of averaged scores, and the artifact state of the tree models."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.docstrings import fill_doc
from featagg_core.xmlc import tree_fitting as core
from featagg_core.utils.products import exact_xt_y
from featagg_core.utils.validation import (
    Interval,
    Options,
    as_csr,
    check_binary_labels,
    check_n_features,
    check_param,
)

#: version of the fitted state saved in artifacts (2: calibrated node scores, PECOS-style
#: trees); older artifacts are refused with a message instead of being mis-read.
STATE_VERSION = 2

# declared parameter constraints (featagg_core.utils.validation), shared by the estimators
_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]


def _int_from(low: int, allow_none: bool = False) -> list:
    """The constraint "an integer >= low" (or None)."""
    interval = Interval(Integral, low, None, closed="left")
    return [interval, None] if allow_none else [interval]



# ----------------------------------------------------------------------------- inputs
def _check_X(X, name="X", n_features=None) -> sp.csr_matrix:
    """Shared float32 canonical csr (:func:`featagg_core.utils.validation.as_csr`), plus KTXMLC's
    refusal of a matrix without rows (checked before the feature count)."""
    X = as_csr(X, name, dtype=np.float32)
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    check_n_features(X, name, n_features)
    return X


def _check_binary_shape(Y) -> int:
    """Number of label columns of Y (validated later, in the fit)."""
    shape = getattr(Y, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else np.asarray(Y).shape[-1]


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


def label_representation(X, Y, representation="input", joint_weight=1.0, progress=None):
    """Label vectors used to cluster labels (rows L2-normalised, csr L x d').

    ``"input"``: the normalised sum of the normalised feature vectors of the label's
    positive points (Parabel / omikuji, PECOS's PIFA). ``"joint"``: that vector,
    concatenated with ``joint_weight`` times the label's normalised co-occurrence row of
    YᵀY, renormalised.

    Parameters
    ----------
    X : sparse or dense matrix, shape (n, d)
        Features (rows are L2-normalised here).
    Y : sparse or dense 0/1 matrix, shape (n, L)
        Labels.
    representation : {"input", "joint"}, default="input"
        Which label vectors (see above).
    joint_weight : float >= 0, default=1.0
        Weight of the co-occurrence part of ``"joint"`` vectors (unused for ``"input"``).
    progress : callable(fraction, message), optional
        Called per block of labels (fractions 0 to 0.02, the share of a KTXMLC fit); it
        may raise to stop.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (L, d) or (L, d + L)
        One L2-normalised row per label (float32).

    Raises
    ------
    ValueError
        For a bad ``X``/``Y`` or an unknown ``representation`` / negative ``joint_weight``.
    """
    X = _check_X(X)
    Y = _check_Y(Y, X.shape[0])
    check_param("representation", representation, [Options(str, {"input", "joint"})])
    report = None
    if progress is not None:
        def report(j, n):
            progress(0.02 * j / n, f"label representations: block {j}/{n}")
    R = core.label_representation(_normalize_rows(X), Y, report)
    if representation == "joint":
        w = float(check_param("joint_weight", joint_weight, _NON_NEGATIVE))
        R = _joint_vectors(R, exact_xt_y(Y, Y), w)
    return R


def _joint_vectors(R, YtY, joint_weight):
    """The ``"joint"`` label vectors of the labels of ``R``'s rows from their PIFA rows
    ``R`` and rows of ``YᵀY`` (row-local, so the Dask twin builds them per label range)."""
    C = _normalize_rows(sp.csr_matrix(YtY, dtype=np.float32))
    R = _normalize_rows(sp.hstack([R, C * np.float32(joint_weight)], format="csr"))
    R.indptr = R.indptr.astype(np.int64)
    return R


class _Pool:
    """A thread pool whose exit never drains queued work: on the way out it cancels what
    has not started (``shutdown(cancel_futures=True)``) and joins its threads."""

    def __init__(self, n_jobs):
        self.pool = ThreadPoolExecutor(max_workers=n_jobs, thread_name_prefix="ktxmlc")

    def __enter__(self):
        return self.pool

    def __exit__(self, *exc):
        self.pool.shutdown(wait=True, cancel_futures=True)
        return False


def flat_is_enough(trees, label_nnz, n, beam) -> bool:
    """Whether one flat tree (one-vs-all: the root's children are every label) replaces
    the ensemble ``trees``.

    True when (1) the beam reaches every leaf cluster of every tree -- a tree has at most
    ``beam`` leaf clusters, so no level ever holds more than ``beam`` nodes and prediction
    scores every label anyway: the trees prune nothing -- and (2) one-vs-all's planned
    training work, ``n * L`` rows x classifiers, is at most the ensemble's, planned as
    :func:`featagg_core.xmlc.tree_fitting.training_tasks_for` does (each node's rows: every row
    at the root, else the positives of its labels, capped at ``n``). Then the exact
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


def _fit_trees_and_nodes(X, Y, R, spec, solver, n_trees_or_trees, n_jobs, progress, stop,
                         flat_beam=None):
    """The fit pipeline of :mod:`featagg_core.xmlc.tree_fitting` on a thread pool: trees (or the
    given ones), node classifiers, weights, calibration. With ``flat_beam`` (the beam
    width) the grown trees are replaced by one flat tree when :func:`flat_is_enough`."""
    Yc = core.CsrParts.of(sp.csc_matrix(Y))
    label_nnz = np.diff(Yc.indptr)
    X, Y = core.CsrParts.of(X), core.CsrParts.of(Y)
    with _Pool(n_jobs) as pool:
        if isinstance(n_trees_or_trees, int):
            trees = core.build_trees(R, spec, n_trees_or_trees, pool, progress=progress,
                                     lo=0.02, hi=0.12, stop=stop)
            if flat_beam is not None and flat_is_enough(trees, label_nnz, X.shape[0],
                                                         flat_beam):
                trees = [core.ova_tree(Y.shape[1])]
        else:
            trees = n_trees_or_trees
        tasks = core.training_tasks(trees, Y)
        positions = [core.label_positions(tr) for tr in trees]

        def job(task):
            return core.train_task(X, Y, Yc, trees[task.tree], positions[task.tree], task,
                                   solver, stop)

        results = core.run_jobs(pool, job, tasks, costs=[t.cost for t in tasks],
                                progress=progress, lo=0.12, hi=0.99,
                                message="classifiers: node batches trained", stop=stop)
    W, bias_w, offsets = core.assemble_weights(trees, tasks, results, X.shape[1])
    cal_a, cal_b, groups = core.calibration(trees, tasks, results, offsets, solver)
    work = int(sum(r[6] for r in results))
    return trees, W, bias_w, offsets, cal_a, cal_b, groups, work


# ----------------------------------------------------------------------------- DEFRAG members
def _defrag_progress(progress, lo, hi, what):
    """Defrag's ``progress(level, n_levels)`` mapped onto ours (which may raise Cancelled)."""
    if progress is None:
        return None

    def report(level, n_levels):
        progress(lo + (hi - lo) * min(1.0, level / max(n_levels, 1)),
                 f"{what}: feature tree level {level}/{n_levels}")
    return report


def _sub_progress(progress, lo, hi, what):
    if progress is None:
        return None

    def report(fraction, message):
        progress(lo + (hi - lo) * fraction, f"{what}: {message}")
    return report


def _top_k_csr(S: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Keep each row's k largest entries (ties to the lower column)."""
    from featagg_core.metrics import top_k

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


# ----------------------------------------------------------------------------- artifacts
@fill_doc
def tree_model_artifact_state(model):
    """``(meta, arrays)`` of a fitted KTXMLC / OneVsAll (``_TreeModel._artifact_state``):
    the stacked node classifiers, their calibration and the trees' node arrays.

    Parameters
    ----------
    model : KTXMLC or OneVsAll
        Fitted.

    {artifact_state_returns}
    """
    model._check_fitted()
    meta = dict(state_version=STATE_VERSION, n_features_in_=model.n_features_in_,
                n_labels_=model.n_labels_, n_trees_=len(model.trees_),
                bias_value=model._bias_value, W_shape=list(model.W_.shape),
                calibration=[[g, *v] for g, v in sorted(model.calibration_.items())],
                train_time_=getattr(model, "train_time_", None))
    arrays = dict(W_data=model.W_.data.astype(np.float32),
                  W_indices=model.W_.indices.astype(np.int32),
                  W_indptr=model.W_.indptr.astype(np.int64), bias_w=model.bias_w_,
                  node_offsets=model.node_offsets_, calibration_a=model.calibration_a_,
                  calibration_b=model.calibration_b_,
                  perm=np.stack([tr["perm"] for tr in model.trees_]))
    for key in model._TREE_KEYS:
        arrays["tree_" + key] = np.concatenate([tr[key] for tr in model.trees_])
    return meta, arrays


def tree_model_from_artifact_state(cls, params, meta, arrays):
    """A fitted ``cls`` (KTXMLC / OneVsAll) from :func:`tree_model_artifact_state`'s
    output; refuses another ``STATE_VERSION`` (``_TreeModel._from_artifact_state``).

    Parameters
    ----------
    cls : type
        KTXMLC or OneVsAll.
    params, meta, arrays : dict
        The estimator's parameters and :func:`tree_model_artifact_state`'s output.

    Returns
    -------
    KTXMLC or OneVsAll
        Fitted.

    Raises
    ------
    featagg_core.artifacts.store.ArtifactError
        For another state version or arrays of the wrong shape.
    """
    from featagg_core.artifacts.registry import ArtifactError

    version = meta.get("state_version")
    if version != STATE_VERSION:
        raise ArtifactError(
            f"this {cls.__name__} artifact holds fitted state version {version!r} "
            f"(saved by an older featagg); this featagg reads version {STATE_VERSION}: "
            "its node scores are calibrated differently, so the model must be refitted")
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
    N = int(off[-1])
    for key in ("bias_w", "calibration_a", "calibration_b"):
        if np.asarray(arrays[key]).shape != (N,):
            raise ArtifactError(f"{cls.__name__} artifact: {key} has shape "
                                f"{np.asarray(arrays[key]).shape}, expected ({N},)")
    groups = {int(g[0]): tuple(g[1:]) for g in meta["calibration"]}
    obj._finalise((0, meta["n_features_in_"]), meta["n_labels_"], trees, W,
                  np.asarray(arrays["bias_w"]), off, meta["bias_value"],
                  arrays["calibration_a"], arrays["calibration_b"], groups)
    obj.train_time_ = meta.get("train_time_")
    return obj
