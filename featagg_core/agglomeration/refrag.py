"""REFRAG: re-ranking via agglomeration (Jalan & Kar, IJCAI 2019, §4.3).

A base extreme classifier ranks head labels well and rare labels badly: it has seen few
examples of them. REFRAG re-ranks the classifier's shortlist with closed-form label
*prototypes* built from DEFRAG's block-diagonal pseudo co-occurrence C^F:

    xi_l = normalise( M X^T y_l ),   M the normalised C^F (see :mod:`featagg_core.agglomeration.fiat`),

i.e. the (normalised) sum of the label's training points, smoothed inside DEFRAG's feature
clusters so that a rare label's few examples cover the features that co-occur with theirs.
A test point x (L2-normalised) gets, for every candidate label,

    score_l = alpha * base_l + (1 - alpha) * w_l^beta * exp(-gamma / 2 * ||x - xi_l||^2),

the combination PfastreXML's re-ranker uses for its tail-label classifiers (Jain, Prabhu &
Varma, KDD 2016; their defaults alpha = 0.8, gamma = 30), with an optional propensity
factor w_l^beta (w = inverse propensity scaled to max 1; beta = 0 is the paper's formula,
see ``propensity_exponent``). Candidates are the base
classifier's top-s labels (s = ``shortlist_size``) and the ``n_prototype_candidates``
labels whose prototypes are nearest to x, which is how labels the base classifier missed
entirely can enter the ranking.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from featagg_core._kernels import fiat_refrag as _k
from featagg_core.agglomeration.fiat import (
    NORMALIZATIONS,
    _as_csr,
    check_clustering,
    impute,
    normalize_cooccurrence,
    pseudo_cooccurrence,
)
from featagg_core.utils.validation import Interval, Options, check_param, validate_params
from featagg_core.utils.docstrings import fill_doc

__all__ = ["Refrag", "l2_normalize_rows", "warmup"]

SCORE_NORMALIZATIONS = {"none": 0, "max": 1, "minmax": 2}
#: (alpha, gamma, propensity_exponent) of ``alpha="auto"`` when no validation rows were
#: given: the earlier fixed defaults (tuned once on Delicious; they can cost P@5 elsewhere,
#: which is why "auto" tunes whenever it has validation rows)
FALLBACK = (0.4, 1.0, 0.5)
#: the largest P@5 drop the tuning accepts (``refrag_choice.MAX_DROP``)
MAX_DROP = 0.005


def l2_normalize_rows(X) -> sp.csr_matrix:
    """Rows scaled to unit L2 norm (all-zero rows stay zero); csr float64.

    Parameters
    ----------
    X : sparse or dense matrix (n, d)
        The rows to scale (not modified).

    Returns
    -------
    csr_matrix of float64 (n, d)
    """
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    sq = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    scale = np.divide(1.0, sq, out=np.zeros_like(sq), where=sq > 0)
    X.data *= np.repeat(scale, np.diff(X.indptr))
    return X


def _check_labels(Y, n) -> sp.csr_matrix:
    """Y as a float64 0/1 csr copy with ``n`` rows.

    Not :func:`featagg_core.utils.validation.check_binary_labels` (KTXMLC's): float64, 0/1 is
    checked before the row count, the wording differs ("0/1 values", "got shape ..."), and a
    label matrix without columns is accepted."""
    if not sp.issparse(Y):
        arr = np.asarray(Y)
        if arr.ndim != 2:
            raise ValueError(f"Y must be a 2-D 0/1 label matrix, got shape {arr.shape}")
        Y = sp.csr_matrix(arr)
    Y = sp.csr_matrix(Y, dtype=np.float64, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        raise ValueError("Y must hold only 0/1 values")
    if Y.shape[0] != n:
        raise ValueError(f"Y has {Y.shape[0]} rows but X has {n}")
    return Y


class Refrag(BaseEstimator):
    """REFRAG re-ranking of a base classifier's scores with DEFRAG label prototypes.

    Parameters
    ----------
    alpha : "auto" or float in [0, 1], default "auto"
        Weight of the (row-normalised) base score; ``1 - alpha`` goes to the prototype
        affinity. ``alpha = 1`` returns the base ranking unchanged. ``"auto"``: alpha,
        gamma and ``propensity_exponent`` are tuned together on validation rows (the
        ``validation=`` argument of :meth:`fit`, or :meth:`tune`) by
        :func:`featagg_core.agglomeration.refrag_choice.choose`: the largest coverage@5
        gain whose P@5 change against the classifier is >= -``MAX_DROP`` (half a point)
        with 95 % confidence, else alpha = 1 (the classifier's ranking); the given gamma
        and propensity_exponent are then not used. Without validation rows nothing can
        be tuned: the fixed fallback (``FALLBACK``: alpha = 0.4, gamma = 1,
        propensity_exponent = 0.5) is used and ``tuned_`` is False.
    gamma : float >= 0, default 1.0
        Sharpness of the affinity exp(-gamma/2 ||x - xi_l||^2) (on unit vectors
        ||x - xi||^2 = 2 - 2 cos). Large gamma: only very close prototypes count
        (PfastreXML's 30 makes the affinity ~0 for all but near-duplicates on our data).
    shortlist_size : int >= 1, default 100
        How many of the base classifier's best labels per point are re-scored (the base
        must supply at least this many, e.g. ``predict_scores(X, k=100)``, for the full
        effect; rows with fewer use what they have).
    n_prototype_candidates : int >= 0, default 10
        Labels whose prototypes are nearest to the point (largest cosine, among the
        prototypes sharing at least one feature with it) join the candidates even if the
        base classifier did not shortlist them (base score 0).
    normalization : {"cosine", "row", "none"}, default "cosine"
        How C^F is normalised before smoothing the prototypes ("none" is the literal
        C^F X^T Y of the paper; see :func:`featagg_core.agglomeration.fiat.normalize_cooccurrence`).
    prune_threshold : float >= 0, default 0.0
        Prototype entries below this value (after L2 normalisation) are dropped and the
        prototype re-normalised; bounds the model size on large data.
    score_normalization : {"max", "minmax", "none"}, default "max"
        How each row's shortlisted base scores are mapped to [0, 1] before mixing:
        divided by the row's best score, min-max scaled, or used as given. Every choice
        keeps the base order within the row.
    impute_query : bool, default False
        Compare prototypes with the FIAT-imputed point (M x) instead of x.
    propensity_exponent : float >= 0, default 0.5
        beta: the affinity of label l is multiplied by (w_l / max w)^beta with w the
        inverse propensity of the training labels (``metrics.inverse_propensity``), which
        tilts the re-ranking further towards rare labels; 0 gives the paper's formula.
    propensity_A, propensity_B : float, default 0.55, 1.5
        Parameters of the inverse propensity (Jain et al. 2016).

    Attributes
    ----------
    alpha_, gamma_, propensity_exponent_ : float
        The knobs the re-ranking uses (the parameters when alpha is a number; the tuned
        or fallback values with ``alpha="auto"``); ``tuned_`` : bool, whether they were
        tuned on validation rows; ``choice_`` : one sentence saying what was chosen and
        why.
    prototypes_ : csr (L, d)       unit-norm label prototypes (rows), zero for labels
                                   without training examples
    operator_ : csr (d, d)         M^T (used when ``impute_query``)
    label_frequency_ : int (L,)    training examples per label
    inv_propensity_ : float (L,)   inverse propensity of every label
    labels_ : int (d,), n_clusters_ : int   the feature clustering used
    n_features_in_ : int, n_labels_ : int

    Notes
    -----
    Follows the paper for the prototypes (columns of C^F X^T Y, normalised) and the
    affinity; the training points are L2-normalised before summing (our choice) so long
    documents do not dominate a prototype. The linear mix of base score and affinity
    follows PfastreXML's re-ranker as the issue describes it. The propensity factor
    (``propensity_exponent``) is our addition; 0 gives the paper's formula. The shortlist
    size, the nearest prototype candidates and the base score normalisation are our
    choices (measured by ``benchmarks/refrag_fiat_bench.py``). ``alpha="auto"`` (default)
    tunes the three knobs on validation rows: no fixed setting is safe everywhere (the
    earlier fixed alpha = 0.4, gamma = 1, propensity_exponent = 0.5, picked on Delicious,
    cost P@5 points on Enron; figures in ``benchmarks/results/``). PfastreXML's alpha = 0.8,
    gamma = 30 change almost nothing on our data. Artifacts store the prototypes, the operator
    and the clustering (``labels_``), so a loaded Refrag needs no Defrag.
    """

    def __init__(self, alpha="auto", gamma=1.0, shortlist_size=100, n_prototype_candidates=10,
                 normalization="cosine", prune_threshold=0.0, score_normalization="max",
                 impute_query=False, propensity_exponent=0.5, propensity_A=0.55,
                 propensity_B=1.5):
        self.alpha = alpha
        self.gamma = gamma
        self.shortlist_size = shortlist_size
        self.n_prototype_candidates = n_prototype_candidates
        self.normalization = normalization
        self.prune_threshold = prune_threshold
        self.score_normalization = score_normalization
        self.impute_query = impute_query
        self.propensity_exponent = propensity_exponent
        self.propensity_A = propensity_A
        self.propensity_B = propensity_B

    #: what every ``__init__`` parameter may be (checked at the start of :meth:`fit`)
    _parameter_constraints = {
        "alpha": [Options(str, {"auto"}), Interval(Real, 0, 1, closed="both")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "shortlist_size": [Interval(Integral, 1, None, closed="left")],
        "n_prototype_candidates": [Interval(Integral, 0, None, closed="left")],
        "normalization": [Options(str, NORMALIZATIONS)],
        "prune_threshold": [Interval(Real, 0, 1, closed="both")],
        "score_normalization": [Options(str, SCORE_NORMALIZATIONS)],
        "impute_query": ["boolean"],
        "propensity_exponent": [Interval(Real, 0, None, closed="left")],
        "propensity_A": [Interval(Real, 0, None, closed="left")],
        "propensity_B": [Interval(Real, 0, None, closed="left")],
    }

    # -- validation --------------------------------------------------------
    def _check_params(self):
        """The declared constraints (also called by :meth:`rerank`,
        :meth:`rerank_candidates`, the spec checks and the artifact checks)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    # -- fit ---------------------------------------------------------------
    def fit(self, X, Y, defrag, progress=None, validation=None):
        """Build the label prototypes (and, with ``alpha="auto"``, tune the knobs).

        Parameters
        ----------
        X : sparse matrix (n, d)
            The training features.
        Y : sparse matrix (n, L)
            The 0/1 training labels.
        defrag : fitted Defrag, or int array (d,)
            The feature clustering (or the feature cluster ids), fitted on data with the same
            d features.
        progress : callable(fraction, message), optional
            Called between the steps (C^F, the label sums, the smoothing); it may raise
            (e.g. :class:`featagg_core.utils.cancel.Cancelled`), which propagates.
        validation : tuple (X_valid, scores_valid, Y_valid), optional
            Rows not used to train the base classifier, its scores for them (at least
            ``shortlist_size`` wide) and their true labels: with ``alpha="auto"`` the
            knobs are tuned on them (:meth:`tune`); ignored for a numeric alpha.

        Returns
        -------
        Refrag
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside its declared constraint (``"<name> must be ..., got
            ..."``), labels that are not 0/1 or have another number of rows, or a clustering
            that does not cover X's features.
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        if progress is not None:
            progress(0.0, "REFRAG: pseudo co-occurrence")
        X = _as_csr(X)
        Y = _check_labels(Y, X.shape[0])
        labels, n_clusters = check_clustering(defrag, X.shape[1])
        C = pseudo_cooccurrence(X, labels, n_clusters)
        M = normalize_cooccurrence(C, self.normalization)
        MT = M if self.normalization in ("cosine", "none") else M.T.tocsr()
        MT.sort_indices()
        if progress is not None:
            progress(0.3, "REFRAG: label sums")
        # xi_l = M Xn^T y_l  ->  as rows: (Y^T Xn) M^T
        A = (Y.T.tocsr() @ l2_normalize_rows(X)).tocsr()
        if progress is not None:
            progress(0.6, "REFRAG: smoothing the prototypes")
        P = l2_normalize_rows((A @ M.T).tocsr())
        if self.prune_threshold > 0 and P.nnz:
            P.data[np.abs(P.data) < self.prune_threshold] = 0.0
            P.eliminate_zeros()
            P = l2_normalize_rows(P)
        P.sort_indices()
        self.prototypes_ = P
        self._set_derived()
        self.operator_ = MT
        self.label_frequency_ = np.asarray(Y.getnnz(axis=0), dtype=np.int64)
        from featagg_core.metrics import inverse_propensity
        self.inv_propensity_ = inverse_propensity(Y, A=float(self.propensity_A),
                                                  B=float(self.propensity_B))
        self.labels_ = labels
        self.n_clusters_ = int(n_clusters)
        self.n_features_in_ = int(X.shape[1])
        self.n_labels_ = int(Y.shape[1])
        self._set_knobs()
        if self.alpha == "auto" and validation is not None:
            self.tune(*validation)
        if progress is not None:
            progress(1.0, "REFRAG: done")
        return self

    def _set_knobs(self):
        """``alpha_``/``gamma_``/``propensity_exponent_``: the parameters, or the fallback
        with ``alpha="auto"`` (until :meth:`tune`)."""
        if self.alpha == "auto":
            self.alpha_, self.gamma_, self.propensity_exponent_ = FALLBACK
            self.tuned_ = False
            self.choice_ = (f"not tuned (no validation rows given): fallback alpha = "
                            f"{FALLBACK[0]:g}, gamma = {FALLBACK[1]:g}, propensity_exponent = "
                            f"{FALLBACK[2]:g}")
        else:
            self.alpha_, self.gamma_ = float(self.alpha), float(self.gamma)
            self.propensity_exponent_ = float(self.propensity_exponent)
            self.tuned_ = False
            self.choice_ = "alpha, gamma and propensity_exponent as set"

    def _knobs(self):
        """(alpha, gamma, propensity_exponent) the re-ranking uses: the parameters when
        alpha is a number (so ``set_params`` takes effect at once), else the fitted ones."""
        if self.alpha != "auto":
            return float(self.alpha), float(self.gamma), float(self.propensity_exponent)
        return (float(getattr(self, "alpha_", FALLBACK[0])),
                float(getattr(self, "gamma_", FALLBACK[1])),
                float(getattr(self, "propensity_exponent_", FALLBACK[2])))

    @fill_doc
    def tune(self, X_valid, scores_valid, Y_valid, max_drop=MAX_DROP):
        """Tune alpha, gamma and propensity_exponent on validation rows (``alpha="auto"``).

        Every point of :data:`featagg_core.agglomeration.refrag_choice.TUNE_GRID` re-ranks
        the rows (the knob-independent part, :meth:`candidates`, is computed once) and
        :func:`featagg_core.agglomeration.refrag_choice.choose` picks one (module
        docstring there). Sets ``alpha_``, ``gamma_``, ``propensity_exponent_``,
        ``tuned_ = True``, ``choice_`` and ``tuning_table_`` (every grid point's P@5,
        coverage@5 and P@5 change bound).

        Parameters
        ----------
        X_valid : sparse matrix (n, d)
            Validation rows (never rows the base classifier was trained on).
        scores_valid : sparse matrix (n, L)
            The base classifier's scores for them (at least ``shortlist_size`` wide).
        Y_valid : sparse matrix (n, L)
            Their true 0/1 labels.
        max_drop : float in [0, 1), default=MAX_DROP
            The largest P@5 drop (fraction) the rule accepts.

        Returns
        -------
        Refrag
            ``self``.

        Raises
        ------
        {not_fitted}
        ValueError
            When ``alpha`` is not "auto", or for matrices that do not match.
        """
        from featagg_core.agglomeration import refrag_choice as rc

        self._check_fitted()
        if self.alpha != "auto":
            raise ValueError(f"tune() needs alpha='auto', got alpha={self.alpha!r}")
        max_drop = float(check_param("max_drop", max_drop,
                                     [Interval(Real, 0, 1, closed="left")]))
        Y_valid = _check_labels(Y_valid, _as_csr(X_valid).shape[0])
        cand = self.candidates(X_valid, scores_valid)
        base_top = _k.score_candidates(cand["labels"], cand["base"], cand["cosine"],
                                       cand["shortlisted"], self._weights(0.0), 1.0, 1.0,
                                       rc.K)[0]
        pts = rc.grid_points()
        tops = [base_top]
        for pt in pts:
            tops.append(_k.score_candidates(cand["labels"], cand["base"], cand["cosine"],
                                            cand["shortlisted"],
                                            self._weights(pt["propensity_exponent"]),
                                            pt["alpha"], pt["gamma"], rc.K)[0])
        scored = rc.batch_scores(Y_valid, tops, rc.K)
        p5, c5 = f"P@{rc.K}", f"coverage@{rc.K}"
        base = {p5: scored[0][0], c5: scored[0][1]}
        table = [{**pt, p5: a, c5: b, f"P@{rc.K} change bound": lcb}
                 for pt, (a, b, lcb) in zip(pts, scored[1:])]
        best = rc.choose(table, base, max_drop)
        self.alpha_, self.gamma_ = float(best["alpha"]), float(best["gamma"])
        self.propensity_exponent_ = float(best["propensity_exponent"])
        self.tuned_ = True
        self.tuning_table_ = table
        n = Y_valid.shape[0]
        if best["alpha"] == 1.0:
            self.choice_ = (f"alpha = 1 (the classifier's ranking): no setting raised "
                            f"coverage@5 without risking more than {100 * max_drop:g} P@5 "
                            f"points, on {n} validation rows")
        else:
            self.choice_ = (f"alpha = {self.alpha_:g}, gamma = {self.gamma_:g}, "
                            f"propensity_exponent = {self.propensity_exponent_:g}: "
                            f"coverage@5 {100 * best[c5]:.1f} vs {100 * base[c5]:.1f}, "
                            f"P@5 {100 * best[p5]:.2f} vs {100 * base[p5]:.2f} on {n} "
                            "validation rows (the largest coverage gain whose P@5 change is "
                            f">= -{100 * max_drop:g} points with 95 % confidence)")
        return self

    def _set_derived(self):
        P = self.prototypes_
        self._prototypes_T = P.T.tocsr()
        self._prototypes_T.sort_indices()
        self._has_proto = np.diff(P.indptr) > 0

    def _check_fitted(self):
        if not hasattr(self, "prototypes_"):
            raise NotFittedError("this Refrag is not fitted yet: call fit(X, Y, defrag) "
                                 "first")

    # -- prediction --------------------------------------------------------
    def _shortlist(self, scores, n):
        L = self.n_labels_
        if sp.issparse(scores):
            S = sp.csr_matrix(scores, dtype=np.float64, copy=True)
            S.sum_duplicates()
        else:
            arr = np.asarray(scores, dtype=np.float64)
            if arr.ndim != 2:
                raise ValueError(f"scores must be a 2-D (n, L) matrix, got shape {arr.shape}")
            S = sp.csr_matrix(arr)
        if S.shape != (n, L):
            raise ValueError(f"scores has shape {S.shape}, expected ({n}, {L}): one row per "
                             "point of X and one column per label the Refrag was fitted on")
        if S.nnz and not np.all(np.isfinite(S.data)):
            raise ValueError("scores contains NaN or infinite values")
        mode = SCORE_NORMALIZATIONS[self.score_normalization]
        if mode == 1 and S.nnz and S.data.min() < 0:
            raise ValueError("scores has negative values; score_normalization='max' needs "
                             "non-negative scores (use 'minmax')")
        offs, idx, dat = _k.row_shortlist(S.indptr.astype(np.int64), S.indices.astype(np.int64),
                                          S.data, int(self.shortlist_size), mode)
        out = sp.csr_matrix((dat, idx, offs), shape=S.shape)
        out.has_sorted_indices = True
        return out

    @fill_doc
    def label_weights(self):
        """The per-label affinity factor: (w_l / max w)^beta, 0 for labels without a
        prototype.

        Returns
        -------
        float64 array (L,)

        Raises
        ------
        {not_fitted}
        """
        self._check_fitted()
        return self._weights(self._knobs()[2])

    def _weights(self, beta):
        w = np.asarray(self.inv_propensity_, dtype=np.float64)
        beta = float(beta)
        out = (w / w.max()) ** beta if (beta > 0 and w.size and w.max() > 0) \
            else np.ones_like(w)
        return np.where(self._has_proto, out, 0.0)

    def _queries(self, X):
        if self.impute_query:
            X = impute(X, self.operator_, 1.0)
        return l2_normalize_rows(X)

    @fill_doc
    def rerank(self, X, scores, k=5, return_arrays=False):
        """Re-rank the base classifier's scores.

        Parameters
        ----------
        X : sparse matrix (n, d)
            The points the scores are for.
        scores : sparse matrix (n, L)
            Base scores (e.g. ``KTXMLC.predict_scores(X, k=100)``); unstored entries are "not
            shortlisted".
        k : int, default 5
            How many labels to return per point.
        return_arrays : bool, default False
            Also return the (n, k) label and score arrays.

        Returns
        -------
        csr_matrix of float32 (n, L), or tuple
            Every row's re-ranked top-k scores (and, when ``return_arrays``,
            ``(matrix, top_labels, top_scores)`` with -1 padding).

        Raises
        ------
        {not_fitted}
        ValueError
            For ``k < 1``, scores of another shape, NaN scores, negative scores with
            ``score_normalization="max"``, or X with other features.
        """
        self._check_fitted()
        self._check_params()
        check_param("k", k, [Interval(Integral, 1, None, closed="left")])
        X = _as_csr(X, n_features=self.n_features_in_)
        n = X.shape[0]
        S = self._shortlist(scores, n)
        Q = self._queries(X)
        PT = self._prototypes_T
        top_l, top_s = _k.rerank_rows(
            Q.indptr.astype(np.int64), Q.indices.astype(np.int64), Q.data,
            PT.indptr.astype(np.int64), PT.indices.astype(np.int64), PT.data,
            self.label_weights(), S.indptr.astype(np.int64), S.indices.astype(np.int64),
            S.data,
            *self._knobs()[:2], int(self.n_prototype_candidates), int(k),
            self.n_labels_)
        valid = top_l >= 0
        counts = valid.sum(axis=1)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        out = sp.csr_matrix((top_s[valid].astype(np.float32), top_l[valid], indptr),
                            shape=(n, self.n_labels_))
        out.sort_indices()
        if return_arrays:
            return out, top_l, top_s
        return out

    @fill_doc
    def candidates(self, X, scores):
        """What :meth:`rerank` scores, computed once so that alpha, gamma and
        ``propensity_exponent`` can be varied cheaply (REFRAG tuning).

        :meth:`rerank_candidates` turns them into exactly what :meth:`rerank` returns for the
        current knobs.

        Parameters
        ----------
        X : sparse matrix (n, d)
            The points the scores are for.
        scores : sparse matrix (n, L)
            The base scores, as for :meth:`rerank`.

        Returns
        -------
        dict
            (n, c) arrays ``labels`` (-1 padded), ``base`` (the normalised shortlist score),
            ``cosine`` (with the label's prototype), ``shortlisted``.

        Raises
        ------
        {not_fitted}
        """
        self._check_fitted()
        X = _as_csr(X, n_features=self.n_features_in_)
        S = self._shortlist(scores, X.shape[0])
        Q = self._queries(X)
        PT = self._prototypes_T
        width = int(np.diff(S.indptr).max(initial=0)) + int(self.n_prototype_candidates)
        lab, base, cos, short = _k.rerank_candidates(
            Q.indptr.astype(np.int64), Q.indices.astype(np.int64), Q.data,
            PT.indptr.astype(np.int64), PT.indices.astype(np.int64), PT.data,
            self._has_proto, S.indptr.astype(np.int64), S.indices.astype(np.int64), S.data,
            int(self.n_prototype_candidates), self.n_labels_, max(width, 1))
        return {"labels": lab, "base": base, "cosine": cos, "shortlisted": short}

    @fill_doc
    def rerank_candidates(self, cand, k=5):
        """:meth:`rerank`'s csr (n, L) top-k from :meth:`candidates` with the current
        alpha, gamma and propensity_exponent (equal to ``rerank(X, scores, k)``).

        Parameters
        ----------
        cand : dict
            What :meth:`candidates` returned.
        k : int, default 5
            How many labels to return per point.

        Returns
        -------
        csr_matrix of float32 (n, L)

        Raises
        ------
        {not_fitted}
        """
        self._check_fitted()
        self._check_params()
        top_l, top_s = _k.score_candidates(cand["labels"], cand["base"], cand["cosine"],
                                           cand["shortlisted"], self.label_weights(),
                                           *self._knobs()[:2], int(k))
        valid = top_l >= 0
        indptr = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int64)
        out = sp.csr_matrix((top_s[valid].astype(np.float32), top_l[valid], indptr),
                            shape=(top_l.shape[0], self.n_labels_))
        out.sort_indices()
        return out

    @fill_doc
    def affinity(self, X, labels):
        """Affinity w_l^beta exp(-gamma/2 ||x - xi_l||^2) of every point to given labels.

        Meant for inspection (the page's examples), vectorised over the rows.

        Parameters
        ----------
        X : sparse matrix (n, d)
            The points.
        labels : int array (n, m)
            Labels per point; -1 entries give 0.

        Returns
        -------
        float64 array (n, m)

        Raises
        ------
        {not_fitted}
        """
        self._check_fitted()
        X = _as_csr(X, n_features=self.n_features_in_)
        labels = np.asarray(labels, dtype=np.int64)
        Q = self._queries(X)
        rows = np.repeat(np.arange(labels.shape[0]), labels.shape[1])
        lab = labels.ravel()
        ok = lab >= 0
        cos = np.zeros(lab.shape[0])
        cos[ok] = np.asarray(Q[rows[ok]].multiply(self.prototypes_[lab[ok]]).sum(axis=1)).ravel()
        aff = np.exp(-0.5 * self._knobs()[1] * (2.0 - 2.0 * cos))
        aff *= self.label_weights()[np.maximum(lab, 0)]
        aff[~ok] = 0.0
        return aff.reshape(labels.shape)

    # -- artifacts ---------------------------------------------------------
    def _artifact_state(self):
        self._check_fitted()
        P, T = self.prototypes_, self.operator_
        meta = {"n_clusters": self.n_clusters_, "n_features": self.n_features_in_,
                "n_labels": self.n_labels_}
        if self.alpha == "auto":
            # the knobs the fit chose (a numeric alpha needs none: the parameters are them)
            meta.update(alpha_=self._knobs()[0], gamma_=self._knobs()[1],
                        propensity_exponent_=self._knobs()[2],
                        tuned_=bool(getattr(self, "tuned_", False)),
                        choice_=str(getattr(self, "choice_", "")))
        arrays = {"labels": self.labels_, "label_frequency": self.label_frequency_,
                  "inv_propensity": self.inv_propensity_,
                  "P_indptr": P.indptr, "P_indices": P.indices, "P_data": P.data,
                  "T_indptr": T.indptr, "T_indices": T.indices, "T_data": T.data}
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        d, L = int(meta["n_features"]), int(meta["n_labels"])
        obj.n_features_in_, obj.n_labels_ = d, L
        obj.n_clusters_ = int(meta["n_clusters"])
        obj.labels_ = np.asarray(arrays["labels"], dtype=np.int64)
        obj.label_frequency_ = np.asarray(arrays["label_frequency"], dtype=np.int64)
        obj.inv_propensity_ = np.asarray(arrays["inv_propensity"], dtype=np.float64)
        obj.prototypes_ = sp.csr_matrix(
            (arrays["P_data"], arrays["P_indices"], arrays["P_indptr"]), shape=(L, d))
        obj.operator_ = sp.csr_matrix(
            (arrays["T_data"], arrays["T_indices"], arrays["T_indptr"]), shape=(d, d))
        if obj.labels_.shape[0] != d or obj.label_frequency_.shape[0] != L:
            raise ValueError("labels / label_frequency do not match n_features / n_labels")
        obj._set_derived()
        obj._set_knobs()
        if obj.alpha == "auto" and "alpha_" in meta:
            obj.alpha_, obj.gamma_ = float(meta["alpha_"]), float(meta["gamma_"])
            obj.propensity_exponent_ = float(meta["propensity_exponent_"])
            obj.tuned_, obj.choice_ = bool(meta.get("tuned_")), str(meta.get("choice_", ""))
        return obj


def warmup():
    """Compile REFRAG's (and FIAT's) kernels on tiny inputs."""
    X = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]))
    Y = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    r = Refrag(n_prototype_candidates=1).fit(X, Y, np.array([0, 0, 1]))
    S = sp.csr_matrix(np.array([[0.9, 0.1], [0.2, 0.0], [0.5, 0.5]]))
    r.rerank(X, S, k=2)
    r.rerank_candidates(r.candidates(X, S), k=2)             # REFRAG tuning
    from featagg_core.agglomeration import fiat
    fiat.Fiat(np.array([0, 0, 1])).fit(X).transform(X)
