"""REFRAG that never hurts by default: alpha, gamma and beta picked on validation rows.

Spec: ``"rerank": {"kind": "refrag", "tune": true, "tune_max_drop": 0.005}`` (a run-model
spec, docs/RUN_MODEL.md). The prototypes (``xi_l``, built from the training rows and the
feature clustering) do not depend on the three knobs, so REFRAG is fitted once and only
the re-ranking of the validation rows is repeated over :data:`TUNE_GRID`:

* ``alpha`` (weight of the classifier's own score) in {1, 0.9, …, 0.3}; ``alpha = 1`` is
  the classifier's ranking, so the grid always holds a point that changes nothing;
* ``gamma`` (sharpness of the prototype affinity) in {0.5, 1, 2, 4};
* ``beta`` = ``propensity_exponent`` (tilt towards rare labels) in {0, 0.5, 1}.

Rule (:func:`choose`, defined with REFRAG in
:mod:`featagg_core.agglomeration.refrag_choice`, which ``Refrag(alpha="auto")`` uses too): a grid point is admissible when its P@5 change against the
classifier on the tuning rows is at least ``-tune_max_drop`` (0.005 = half a point) with
95 % confidence: the per-row changes ``d_i`` (P@5 of the re-ranked row minus the
classifier's) give the bound ``mean(d) - 1.645 sd(d) / sqrt(n)``. A point estimate alone
is not enough (measured in benchmarks/results/refrag_tuning.md). Among the admissible points take the one with the largest
coverage@5 (ties: higher P@5, then larger alpha); if none raises coverage@5 above the
classifier's, take ``alpha = 1``. The metrics come from
the evaluation path's ranking helper (:func:`featagg_core.runs.evaluation._ranking`).

Which rows: the split's validation rows when it has them (the classifier and REFRAG were
fitted on ``split.train``, which excludes them). Without validation rows, 20 % of the
training rows (seeded by ``split.random_state``) are carved out, a classifier (with the
spec's DEFRAG / FIAT steps) and REFRAG are fitted on the other 80 % and tuned on the carved
rows; the run's REFRAG is then refitted on all training rows with the chosen values, and
the run's message says so. Test rows are never looked at.
"""
from __future__ import annotations

import copy
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from featagg_core.agglomeration.refrag_choice import (  # the rule lives with REFRAG
    TUNE_GRID,
    K,
    Z,
    batch_scores,
    choose,
    grid_points,
)
from featagg_core.utils.cancel import check_cancel
from featagg_core.utils.docstrings import fill_doc

__all__ = ["TUNE_GRID", "CARVE_FRACTION", "grid_points", "choose", "tune_on_rows",
           "tune_reranker"]

#: share of the training rows carved out for tuning when the split has no validation rows
CARVE_FRACTION = 0.2


def _batch_scores(Y, tops: List[np.ndarray], k: int) -> List[Tuple[float, float, float]]:
    """:func:`featagg_core.agglomeration.refrag_choice.batch_scores` (kept under its old
    name for callers of this module)."""
    return batch_scores(Y, tops, k)


@fill_doc
def tune_on_rows(reranker, X_rows, base_scores, Y_rows, inv, *, max_drop: float,
                 grid: Dict[str, tuple] = TUNE_GRID, cancel=None,
                 progress: Optional[Callable[[float, str], None]] = None
                 ) -> Tuple[dict, List[dict], Dict[str, float]]:
    """Score every grid point on the given rows.

    The chosen point's and the classifier's metrics are recomputed with the evaluation
    path's ``_ranking`` (they are what the run reports).

    Parameters
    ----------
    reranker : Refrag
        The fitted re-ranker.
    X_rows : sparse matrix
        What REFRAG compares with prototypes, for these rows.
    base_scores : sparse matrix
        The classifier's shortlist for these rows (at least ``reranker.shortlist_size``
        wide).
    Y_rows : sparse matrix
        The rows' true labels.
    inv : ndarray
        Inverse propensities of the labels.
    max_drop : float
        As :func:`choose`.
    grid : dict of str to tuple, default=TUNE_GRID
        The knobs' values.
    {tuning_progress}

    Returns
    -------
    chosen : dict
        The chosen row.
    table : list of dict
        Every grid point's row.
    base : dict of str to float
        The classifier's own metrics.
    """
    from featagg_core.runs.evaluation import _ranking
    from featagg_core._kernels import fiat_refrag as fk
    base = _ranking(Y_rows, base_scores, (K,), inv, metrics=("P", "coverage"))
    pts = grid_points(grid)
    cand = reranker.candidates(X_rows, base_scores)    # knob-independent, computed once
    tops = []
    for i, pt in enumerate(pts):
        check_cancel(cancel)
        model = copy.copy(reranker)
        model.set_params(**pt)
        top, _ = fk.score_candidates(cand["labels"], cand["base"], cand["cosine"],
                                     cand["shortlisted"], model.label_weights(),
                                     pt["alpha"], pt["gamma"], K)
        tops.append(top)
        if progress is not None and (i % 16 == 0 or i == len(pts) - 1):
            progress((i + 1) / len(pts), f"REFRAG tuning: {i + 1}/{len(pts)} settings")
    check_cancel(cancel)
    table = [{**pt, f"P@{K}": p5, f"coverage@{K}": c5, f"P@{K} change bound": lcb}
             for pt, (p5, c5, lcb) in zip(pts, _batch_scores(Y_rows, tops, K))]
    best = dict(choose(table, base, max_drop))
    model = copy.copy(reranker)
    model.set_params(**{k: best[k] for k in ("alpha", "gamma", "propensity_exponent")})
    best.update(_ranking(Y_rows, model.rerank_candidates(cand, k=K), (K,), inv,
                         metrics=("P", "coverage")))
    return best, table, base


def _carve(split) -> Tuple[np.ndarray, np.ndarray]:
    """Positions (into ``split.train``) of the rows kept for fitting and carved out."""
    n = split.train.size
    n_valid = min(max(1, int(round(CARVE_FRACTION * n))), n - 1)
    perm = np.random.default_rng(split.random_state).permutation(n)
    return np.sort(perm[n_valid:]), np.sort(perm[:n_valid])


def _base_pipeline(X, Y, spec: dict, progress=None):
    """The spec's feature steps and classifier (no re-ranker) fitted on X, Y."""
    from featagg_core.runs.steps import fit_classifier, fit_defrag, fit_fiat, fit_per_tree
    from featagg_core.runs.pipeline import Pipeline
    pipe = Pipeline(spec=spec)
    pipe.n_features_in_, pipe.n_labels_ = int(X.shape[1]), int(Y.shape[1])
    if "defrag" in spec and spec["defrag"]["per_tree"]:
        pipe.classifier = fit_per_tree(X, Y, spec["defrag"], spec["classifier"], progress)
        pipe.defrag = pipe.classifier.defrags_[0]
    else:
        if "defrag" in spec:
            pipe.defrag = fit_defrag(X, Y, spec["defrag"])
        pipe.classifier = fit_classifier(pipe._features(X), Y, spec["classifier"], progress)
    if "impute" in spec:
        own = spec["impute"].get("defrag")
        pipe.imputer = fit_fiat(X, spec["impute"], fit_defrag(X, Y, own) if own else pipe.defrag)
    return pipe


def _shortlist(pipe, X, width: int):
    """(what REFRAG compares with prototypes, the classifier's shortlist) for rows X."""
    Xq = X if pipe.imputer is None else pipe.imputer.transform(pipe._check_X(X))
    return Xq, pipe.classifier.predict_scores(pipe._features(Xq), k=width)


@fill_doc
def tune_reranker(reranker, data, split, spec: dict, pipe, clustering, cancel=None,
                  progress: Optional[Callable[[float, str], None]] = None):
    """Tune a REFRAG fitted on ``split.train`` as the module docstring says.

    Parameters
    ----------
    reranker : Refrag
        The fitted re-ranker, part of ``pipe``.
    data : MultiLabelData
        The dataset.
    {split_its}
    spec : dict
        The canonical run spec.
    pipe : Pipeline
        The fitted pipeline.
    clustering : Defrag or FeatureClusters
        The feature clustering REFRAG uses (refitting on the carved rows uses the spec's
        own one when it has it).
    {tuning_progress}

    Returns
    -------
    reranker : Refrag
        With the chosen knobs.
    note : str
        What was chosen and why.
    info : dict
        The chosen knobs, the rows tuned on, ``max_drop``, the classifier's and the chosen
        point's P@5 / coverage@5, and the whole grid.
    """
    from featagg_core.runs.steps import fit_defrag, fit_refrag
    from featagg_core.metrics import inverse_propensity
    sub = spec["rerank"]
    max_drop = float(sub["tune_max_drop"])
    width = max(K, int(sub["shortlist"]))
    X_train, Y_train = data.X[split.train], data.Y[split.train]
    inv = inverse_propensity(Y_train)
    report = (lambda lo, hi: None if progress is None else
              (lambda f, m: progress(lo + (hi - lo) * f, m)))
    if split.valid.size:
        X_v, Y_v = data.X[split.valid], data.Y[split.valid]
        Xq, base = _shortlist(pipe, X_v, width)
        best, table, base_m = tune_on_rows(reranker, Xq, base, Y_v, inv, max_drop=max_drop,
                                           cancel=cancel, progress=report(0.0, 1.0))
        where = f"the split's {split.valid.size:,} validation rows"
        tuned = copy.copy(reranker)
    else:
        keep, carved = _carve(split)
        X_f, Y_f = X_train[keep], Y_train[keep]
        check_cancel(cancel)
        if progress is not None:
            progress(0.0, f"REFRAG tuning: fitting the classifier on {keep.size:,} of the "
                          f"training rows")
        tmp = _base_pipeline(X_f, Y_f, spec)
        check_cancel(cancel)
        own = sub.get("defrag")
        tmp_clustering = fit_defrag(X_f, Y_f, own) if own else tmp.defrag
        tmp_refrag = fit_refrag(X_f, Y_f, sub, tmp_clustering)
        Xq, base = _shortlist(tmp, X_train[carved], width)
        best, table, base_m = tune_on_rows(tmp_refrag, Xq, base, Y_train[carved],
                                           inverse_propensity(Y_f), max_drop=max_drop,
                                           cancel=cancel, progress=report(0.5, 1.0))
        where = (f"{carved.size:,} rows carved from the training rows (the split has no "
                 f"validation rows; a classifier was fitted on the other {keep.size:,} for "
                 f"tuning)")
        tuned = copy.copy(reranker)
    knobs = {k: best[k] for k in ("alpha", "gamma", "propensity_exponent")}
    tuned.set_params(**knobs)
    p, c = f"P@{K}", f"coverage@{K}"
    info = {**knobs, "rows": "validation" if split.valid.size else "carved",
            "n_rows": int(split.valid.size if split.valid.size else carved.size),
            "max_drop": max_drop, "base P@5": base_m[p], "base coverage@5": base_m[c],
            "P@5": best[p], "coverage@5": best[c], "grid": table}
    if knobs["alpha"] == 1.0:
        verdict = ("no setting raised coverage@5 while keeping P@5 within "
                   f"{100 * max_drop:.1f} points of the classifier's with 95 % confidence, "
                   "so alpha = 1 keeps the classifier's ranking")
    else:
        verdict = (f"P@5 {100 * base_m[p]:.2f} → {100 * best[p]:.2f} %, coverage@5 "
                   f"{100 * base_m[c]:.2f} → {100 * best[c]:.2f} % there")
    note = (f"REFRAG tuned on {where}: alpha = {knobs['alpha']:g}, gamma = "
            f"{knobs['gamma']:g}, beta = {knobs['propensity_exponent']:g} ({verdict})")
    tuned.tuning_ = info
    return tuned, note, info
