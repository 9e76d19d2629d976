"""REFRAG's tuning rule: which (alpha, gamma, propensity_exponent) to use, chosen on
validation rows (rows the base classifier was not trained on).

The prototypes do not depend on the three knobs, so only the re-ranking of the validation
rows is repeated over :data:`TUNE_GRID`:

* ``alpha`` (weight of the classifier's own score) in {1, 0.9, ..., 0.3}; ``alpha = 1`` is
  the classifier's ranking, so the grid always holds a point that changes nothing;
* ``gamma`` (sharpness of the prototype affinity) in {0.5, 1, 2, 4};
* ``beta`` = ``propensity_exponent`` (tilt towards rare labels) in {0, 0.5, 1}.

Rule (:func:`choose`): a grid point is admissible when its P@5 change against the
classifier on the tuning rows is at least ``-max_drop`` (default 0.005 = half a point)
with 95 % confidence: the per-row changes ``d_i`` (P@5 of the re-ranked row minus the
classifier's) give the bound ``mean(d) - 1.645 sd(d) / sqrt(n)``. Among the admissible
points take the one with the largest coverage@5 (ties: higher P@5, then larger alpha); if
none raises coverage@5 above the classifier's, take ``alpha = 1``.

Used by :class:`featagg_core.agglomeration.refrag.Refrag` (``alpha="auto"``) and by the
run model's tuning (``featagg_core.runs.refrag_tuning``), so both decide alike.
"""
from __future__ import annotations

import itertools
from typing import Dict, List, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import metrics as _mk

__all__ = ["TUNE_GRID", "Z", "K", "MAX_DROP", "grid_points", "choose", "batch_scores"]

TUNE_GRID = {"alpha": (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3),
             "gamma": (0.5, 1.0, 2.0, 4.0),
             "propensity_exponent": (0.0, 0.5, 1.0)}
#: a setting is kept only if the lower one-sided 95 % confidence bound of its P@5 change
#: on the tuning rows (paired per row against the classifier) is within the allowed drop
Z = 1.645
K = 5
#: the default largest P@5 drop allowed (a fraction: 0.005 = half a point)
MAX_DROP = 0.005


def grid_points(grid: Dict[str, tuple] = TUNE_GRID) -> List[Dict[str, float]]:
    """Every (alpha, gamma, propensity_exponent) of the grid.

    alpha = 1 once (the other two knobs do nothing there).

    Parameters
    ----------
    grid : dict of str to tuple, default=TUNE_GRID
        The values of each knob.

    Returns
    -------
    list of dict
        One dict of knob values per point.
    """
    pts = [{"alpha": 1.0, "gamma": float(grid["gamma"][0]),
            "propensity_exponent": float(grid["propensity_exponent"][0])}]
    for a, g, b in itertools.product(grid["alpha"], grid["gamma"],
                                     grid["propensity_exponent"]):
        if float(a) != 1.0:
            pts.append({"alpha": float(a), "gamma": float(g), "propensity_exponent": float(b)})
    return pts


def choose(table: List[dict], base: Dict[str, float], max_drop: float, k: int = K) -> dict:
    """The grid row the module docstring's rule picks from ``table``.

    Parameters
    ----------
    table : list of dict
        Rows with the knobs, ``P@k``, ``coverage@k`` and, when known, ``P@k change
        bound``: the lower confidence bound of the P@k change against the classifier.
    base : dict of str to float
        The classifier's own metrics.
    max_drop : float
        The largest P@k drop the rule accepts.
    k : int, default=K
        The cut-off of the rule.

    Returns
    -------
    dict
        The chosen row.
    """
    p, c = f"P@{k}", f"coverage@{k}"
    bound = f"P@{k} change bound"
    feasible = [r for r in table
                if (r[bound] if bound in r else r[p] - base[p]) >= -max_drop - 1e-12]
    gains = [r for r in feasible if r[c] > base[c] + 1e-12]
    if not gains:
        return next(r for r in table if r["alpha"] == 1.0)
    return max(gains, key=lambda r: (round(r[c], 12), round(r[p], 12), r["alpha"]))


def batch_scores(Y, tops: List[np.ndarray], k: int = K) -> List[Tuple[float, float, float]]:
    """``(P@k, coverage@k, P@k change bound)`` of each (n, k) top-label array.

    ``rank_gains`` runs once over all arrays stacked, ``covered_labels`` per array. The
    bound is ``mean(d) - Z * sd(d) / sqrt(n)`` of the per-row P@k change ``d`` against
    ``tops[0]`` (the classifier's own ranking).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (n, L)
        True 0/1 labels of the rows.
    tops : list of ndarray of int, shape (n, >= k) each
        Ranked labels per row (-1 = none); ``tops[0]`` is the classifier's.
    k : int, default=K
        The cut-off.

    Returns
    -------
    list of tuple
        One ``(P@k, coverage@k, bound)`` per array.
    """
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Y.sort_indices()
    n = Y.shape[0]
    tiled = sp.vstack([Y] * len(tops), format="csr")
    tiled.sort_indices()
    top_all = np.ascontiguousarray(np.vstack([np.asarray(t)[:, :k] for t in tops]),
                                   dtype=np.int64)
    gains = _mk.rank_gains(tiled.indptr.astype(np.int64), tiled.indices.astype(np.int64),
                           top_all, np.ones(Y.shape[1]))
    hits = gains.sum(axis=1).reshape(len(tops), n)
    present = np.count_nonzero(np.diff(Y.tocsc().indptr))
    out = []
    for j, top in enumerate(tops):
        cov = _mk.covered_labels(Y.indptr.astype(np.int64), Y.indices.astype(np.int64),
                                 np.ascontiguousarray(np.asarray(top)[:, :k], dtype=np.int64),
                                 Y.shape[1])
        d = (hits[j] - hits[0]) / k
        lcb = float(d.mean() - Z * d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        out.append((float(hits[j].mean() / k) if n else 0.0,
                    float(cov.sum() / present) if present else 0.0, lcb))
    return out
