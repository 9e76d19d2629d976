"""How :class:`featagg_core.xmlc.ktxmlc.KTXMLC` (``form="auto"``) chooses its own form:
the validation rows it carves from the training rows, the candidates it tries and the
rule that picks one of them. Pure functions (no model here), so the rule can be checked
by hand.

The rule (:func:`pick_candidate`): the candidate with the best P@1 on the validation rows
wins, unless other candidates are *tied* with it -- their P@1 shortfall is within one
standard error of the paired per-row difference of hits@1 (the same validation rows score
every candidate, so the comparison is paired) -- in which case the tied candidate with the
best P@5 wins (further ties: the earlier candidate, i.e. the cheaper one, as
:func:`candidate_order` lists them).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import metrics as _mk
from featagg_core.metrics import top_k

__all__ = ["VALID_FRACTION", "MIN_VALID_ROWS", "MAX_FIT_ROWS", "C_FACTORS",
           "CANDIDATE_MAX_ITER", "carve_rows",
           "validation_hits", "pick_candidate", "describe"]

#: share of the training rows carved out as validation rows
VALID_FRACTION = 0.2
#: fewer validation rows than this: no choice (one P@1 point would be noise), the fixed rule
MIN_VALID_ROWS = 50
#: candidates are fitted on at most this many of the remaining rows (seeded subsample)
MAX_FIT_ROWS = 50_000
#: the C grid, as multiples of the estimator's ``C``: with the default C = 0.5 it is
#: {0.25, 0.5, 1} -- liblinear's / Parabel's / PECOS's / DiSMEC's C = 1, this project's
#: 0.5 and a stronger regulariser for sets with few positives per label
C_FACTORS = (0.5, 1.0, 2.0)
#: candidates stop early: at most this many solver passes (the estimator's ``max_iter`` if
#: smaller); on Bibtex 5 passes instead of 20 halve a fit's CPU and move test P@1 / P@5 by
#: at most 0.2 points (benchmarks/results/xmlc_notes.md)
CANDIDATE_MAX_ITER = 5


def carve_rows(n: int, random_state: int) -> Tuple[np.ndarray, np.ndarray]:
    """Rows to fit candidates on and validation rows, both sorted.

    Parameters
    ----------
    n : int
        Training rows.
    random_state : int
        Seeds the permutation (``numpy.random.default_rng(random_state)``).

    Returns
    -------
    fit_rows, valid_rows : ndarray of int64
        ``valid_rows``: ``round(VALID_FRACTION * n)`` rows; ``fit_rows``: the others, at
        most ``MAX_FIT_ROWS`` of them. Both empty when there would be fewer than
        ``MIN_VALID_ROWS`` validation rows (no choice is then made).
    """
    n_valid = int(round(VALID_FRACTION * n))
    if n_valid < MIN_VALID_ROWS or n - n_valid < MIN_VALID_ROWS:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    perm = np.random.default_rng(int(random_state)).permutation(n).astype(np.int64)
    return np.sort(perm[n_valid:][:MAX_FIT_ROWS]), np.sort(perm[:n_valid])


def validation_hits(Y_valid, scores, k: int = 5) -> Tuple[np.ndarray, float]:
    """Per-row hits@1 and P@k of a candidate's scores.

    Parameters
    ----------
    Y_valid : scipy.sparse.csr_matrix, shape (n, L)
        True 0/1 labels of the validation rows.
    scores : scipy.sparse.csr_matrix, shape (n, L)
        The candidate's top-k scores.
    k : int, default=5
        The P@k cut-off.

    Returns
    -------
    hits1 : ndarray of float, shape (n,)
        1 where the row's best-scored label is true, else 0.
    p_k : float
        P@k (mean over rows of true labels among the top k, divided by k).
    """
    Y = sp.csr_matrix(Y_valid, dtype=np.float32)
    Y.sort_indices()
    top = np.ascontiguousarray(top_k(scores, k), dtype=np.int64)
    gains = _mk.rank_gains(Y.indptr.astype(np.int64), Y.indices.astype(np.int64), top,
                           np.ones(Y.shape[1]))
    return gains[:, 0].copy(), float(gains.sum(axis=1).mean() / k) if gains.size else 0.0


def pick_candidate(hits1: Sequence[np.ndarray], p5: Sequence[float]) -> Tuple[int, List[int]]:
    """The module docstring's rule.

    Parameters
    ----------
    hits1 : sequence of ndarray, shape (n,) each
        Per-row hits@1 of every candidate on the same validation rows.
    p5 : sequence of float
        Every candidate's P@5 on those rows.

    Returns
    -------
    chosen : int
        Index of the chosen candidate.
    tied : list of int
        The candidates tied on P@1 with the best one (the best included).
    """
    H = np.asarray([np.asarray(h, np.float64) for h in hits1])
    n = H.shape[1]
    p1 = H.mean(axis=1)
    best = int(np.argmax(p1))
    tied = []
    for j in range(H.shape[0]):
        d = H[best] - H[j]
        se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        if float(d.mean()) <= se + 1e-12:
            tied.append(j)
    chosen = max(tied, key=lambda j: (round(float(p5[j]), 12), -j))
    return chosen, tied


def describe(form: str, C: float, table: List[dict], chosen: int, tied: List[int],
             n_valid: int) -> str:
    """A one-sentence account of the choice (``KTXMLC.choice_``).

    Parameters
    ----------
    form : str
        The chosen form ("flat" or "trees").
    C : float
        The chosen C.
    table : list of dict
        The candidates (``form``, ``C``, ``P@1``, ``P@5``), in trial order.
    chosen : int
        Index of the chosen one.
    tied : list of int
        The candidates tied on P@1 with the best (:func:`pick_candidate`).
    n_valid : int
        Validation rows.

    Returns
    -------
    str
    """
    what = "one flat model" if form == "flat" else "label trees"
    row = table[chosen]
    others = [r for j, r in enumerate(table) if j != chosen]
    if not others:
        return f"{what} (C = {C:g}), the only candidate"
    rival = max(others, key=lambda r: (r["P@1"], r["P@5"]))
    rname = "flat" if rival["form"] == "flat" else "trees"
    by = "P@5, P@1 tied within its standard error" if len(tied) > 1 else "P@1"
    return (f"{what} (C = {C:g}) by {by}: P@1 {100 * row['P@1']:.1f} / P@5 "
            f"{100 * row['P@5']:.1f} vs {rname} (C = {rival['C']:g}) "
            f"{100 * rival['P@1']:.1f} / {100 * rival['P@5']:.1f} on {n_valid} validation "
            f"rows ({100 * VALID_FRACTION:.0f} % of the training rows)")
