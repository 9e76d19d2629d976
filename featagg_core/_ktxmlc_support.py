"""Private parts of :mod:`featagg_core.ktxmlc` (re-exported there): the declared
constraints shared by its estimators, the input checks and row normalisation, the label
vectors (:func:`label_representation`), the thread-pool fit pipeline over
:mod:`featagg_core._ktxmlc_core`, the progress adapters of the DEFRAG members and the top-k
cut of averaged scores."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from . import _ktxmlc_core as core
from ._products import exact_xt_y
from ._validation import (Interval, Options, as_csr, check_binary_labels, check_n_features,
                          check_param)

# declared parameter constraints (featagg_core._validation), shared by the classes below
_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]


def _int_from(low: int, allow_none: bool = False) -> list:
    """The constraint "an integer >= low" (or None)."""
    interval = Interval(Integral, low, None, closed="left")
    return [interval, None] if allow_none else [interval]



# ----------------------------------------------------------------------------- inputs
def _check_X(X, name="X", n_features=None) -> sp.csr_matrix:
    """Shared float32 canonical csr (:func:`featagg_core._validation.as_csr`), plus KTXMLC's
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


def _fit_trees_and_nodes(X, Y, R, spec, solver, n_trees_or_trees, n_jobs, progress, stop):
    """The fit pipeline of :mod:`featagg_core._ktxmlc_core` on a thread pool: trees (or the
    given ones), node classifiers, weights, calibration."""
    Yc = core.CsrParts.of(sp.csc_matrix(Y))
    X, Y = core.CsrParts.of(X), core.CsrParts.of(Y)
    with _Pool(n_jobs) as pool:
        if isinstance(n_trees_or_trees, int):
            trees = core.build_trees(R, spec, n_trees_or_trees, pool, progress=progress,
                                     lo=0.02, hi=0.12, stop=stop)
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
