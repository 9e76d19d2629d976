"""FIAT: feature imputation via agglomeration (Jalan & Kar, IJCAI 2019, §4.2).

DEFRAG clusters the features into groups F_1..F_K. FIAT keeps, of the feature
co-occurrence matrix X^T X, only the blocks of pairs inside one cluster,

    C^F = sum_k X_{F_k}^T X_{F_k}        (X: points x features, as everywhere here),

a block-diagonal "pseudo co-occurrence" with at most sum_k d_k^2 <= d * max_k d_k
non-zeros (about d * d0 for DEFRAG's leaves), and uses it to fill in features that are
missing from a point. Everything stays sparse: C^F is built by a numba kernel that only
ever forms pairs of features of the same cluster, never X^T X and never a d x d array.
"""
from __future__ import annotations

from numbers import Real
from typing import Callable, Iterable, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from featagg_core._kernels import fiat_refrag as _k
from featagg_core.utils.validation import (
    Interval,
    Options,
    check_finite,
    check_param,
    validate_params,
)
from featagg_core.utils.docstrings import fill_doc

__all__ = ["Fiat", "pseudo_cooccurrence", "normalize_cooccurrence", "impute",
           "erase_features", "erasure_curve", "check_clustering", "warmup"]

NORMALIZATIONS = ("cosine", "conditional", "row", "none")


# ---------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------

def _as_csr(X, name="X", n_features=None) -> sp.csr_matrix:
    """Canonical float64 csr copy: sorted indices, no duplicates, no stored zeros.

    Kept apart from the shared :func:`featagg_core.utils.validation.as_csr` on purpose: float64,
    always a copy, stored zeros dropped, non-numeric input refused with FIAT's own wording,
    and the feature-count message names the clustering. Also used by REFRAG."""
    if not sp.issparse(X):
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a 2-D numeric (preferably scipy sparse) matrix, "
                             f"got {type(X).__name__} with shape {np.shape(X)}")
        X = sp.csr_matrix(arr)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    check_finite(X, name)  # before summing duplicates, as always here
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but the clustering / fitted "
                         f"model has {n_features}")
    return X


def check_clustering(clustering, n_features=None):
    """The feature clustering of ``clustering`` as ``(labels, n_clusters)``.

    Parameters
    ----------
    clustering : fitted Defrag, or 1-D int array
        A fitted :class:`~featagg_core.agglomeration.defrag.Defrag` (anything with ``labels_`` and,
        optionally, ``n_clusters_``) or a 1-D int array of cluster ids. Every feature must
        have a cluster id in ``[0, n_clusters)``.
    n_features : int or None, default None
        When given, the clustering must cover exactly this many features.

    Returns
    -------
    labels : int64 array (d,)
        The cluster of every feature.
    n_clusters : int
        ``n_clusters_`` of a Defrag, else ``labels.max() + 1`` (0 without features).

    Raises
    ------
    NotFittedError
        For an estimator (it has ``fit``) that is not fitted.
    ValueError
        For None, labels that are not 1-D integers, negative or too large ids, or another
        number of features than ``n_features``.
    """
    if clustering is None:
        raise ValueError("defrag must be a fitted Defrag (or an array of feature cluster "
                         "ids), got None")
    if hasattr(clustering, "labels_"):
        labels = clustering.labels_
        n_clusters = getattr(clustering, "n_clusters_", None)
    elif hasattr(clustering, "fit") and not hasattr(clustering, "labels_"):
        raise NotFittedError("the Defrag passed as defrag is not fitted: call its fit(X) "
                             "first")
    else:
        labels = clustering
        n_clusters = None
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError("defrag.labels_ must be a 1-D integer array (the cluster of every "
                         f"feature), got dtype {labels.dtype} and shape {labels.shape}")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError("defrag.labels_ holds negative cluster ids; every feature needs a "
                         "cluster")
    top = int(labels.max()) + 1 if labels.size else 0
    n_clusters = top if n_clusters is None else int(n_clusters)
    if top > n_clusters:
        raise ValueError(f"defrag.labels_ holds cluster id {top - 1} but n_clusters_ is "
                         f"{n_clusters}")
    if n_features is not None and labels.shape[0] != n_features:
        raise ValueError(f"the clustering covers {labels.shape[0]} features but X has "
                         f"{n_features}")
    return labels, n_clusters


# ---------------------------------------------------------------------------
# the pseudo co-occurrence and its normalisation
# ---------------------------------------------------------------------------

def pseudo_cooccurrence(X, labels, n_clusters=None) -> sp.csr_matrix:
    """C^F = sum_k X[:, F_k]^T X[:, F_k]: the same-cluster blocks of X^T X, sparse.

    Parameters
    ----------
    X : sparse matrix (n, d)
        The points.
    labels : int array (d,)
        The cluster of every feature.
    n_clusters : int, optional
        Number of clusters (default ``labels.max() + 1``).

    Returns
    -------
    csr_matrix of float64 (d, d)
        Symmetric, sorted indices, at most ``sum_k d_k^2`` stored entries (pairs that never
        co-occur are not stored).
    """
    X = _as_csr(X)
    labels, n_clusters = check_clustering(np.asarray(labels), X.shape[1])
    d = X.shape[1]
    if d == 0:
        return sp.csr_matrix((0, 0), dtype=np.float64)
    sizes = np.bincount(labels, minlength=n_clusters).astype(np.int64)
    block_hi = np.cumsum(sizes)
    block_lo = block_hi - sizes
    order = np.argsort(labels, kind="stable").astype(np.int64)   # new id -> old id
    new_id = np.empty(d, np.int64)
    new_id[order] = np.arange(d, dtype=np.int64)
    # X with renumbered columns (clusters contiguous), csr and csc
    R = sp.csr_matrix((X.data, new_id[X.indices], X.indptr), shape=X.shape)
    R.sort_indices()
    Cc = R.tocsc()
    Cc.sort_indices()
    indptr, indices, data = _k.block_gram(
        R.indptr.astype(np.int64), R.indices.astype(np.int64), R.data,
        Cc.indptr.astype(np.int64), Cc.indices.astype(np.int64), Cc.data,
        block_lo, block_hi, order, max(int(sizes.max()), 1))
    return sp.csr_matrix((data, indices, indptr), shape=(d, d))


def normalize_cooccurrence(C, normalization="cosine", min_weight=0.0) -> sp.csr_matrix:
    """The imputation operator M from the pseudo co-occurrence C^F.

    ``"cosine"``: M_ab = C_ab / sqrt(C_aa C_bb) (cosine of the two feature columns, unit
    diagonal, symmetric); ``"conditional"``: M_ba = C_ab / C_aa (for 0/1 features the
    empirical P(b | a): how often a's occurrences come with b); ``"row"``: M = D^-1 C^F
    with D the row sums (each row a distribution over the cluster); ``"none"``: M = C^F.
    Off-diagonal entries below ``min_weight`` are dropped.

    Parameters
    ----------
    C : sparse matrix (d, d)
        The pseudo co-occurrence (:func:`pseudo_cooccurrence`).
    normalization : {"cosine", "conditional", "row", "none"}, default "cosine"
        The rule (see above).
    min_weight : float, default 0.0
        Off-diagonal entries with ``|M_ab| < min_weight`` are dropped.

    Returns
    -------
    csr_matrix of float64 (d, d)
        M (a new matrix; ``C`` is not modified).

    Raises
    ------
    ValueError
        For an unknown ``normalization``.
    """
    check_param("normalization", normalization, [Options(str, NORMALIZATIONS)])
    C = sp.csr_matrix(C, dtype=np.float64, copy=True)
    rows = np.repeat(np.arange(C.shape[0], dtype=np.int64), np.diff(C.indptr))
    if normalization == "cosine":
        diag = C.diagonal()
        scale = np.sqrt(np.maximum(diag, 0.0))
        den = scale[rows] * scale[C.indices]
        C.data = np.divide(C.data, den, out=np.zeros_like(C.data), where=den > 0)
    elif normalization == "conditional":
        diag = C.diagonal()
        den = diag[C.indices]
        C.data = np.divide(C.data, den, out=np.zeros_like(C.data), where=den > 0)
    elif normalization == "row":
        rs = np.asarray(C.sum(axis=1)).ravel()
        den = rs[rows]
        C.data = np.divide(C.data, den, out=np.zeros_like(C.data), where=den != 0)
    if min_weight > 0:
        off = rows != C.indices
        C.data[off & (np.abs(C.data) < min_weight)] = 0.0
    C.eliminate_zeros()
    return C


def impute(X, operator_T, mix=1.0) -> sp.csr_matrix:
    """Apply FIAT's rule with the transposed operator ``operator_T`` (csr, d x d).

    Observed entries are kept; feature b missing from a point gets
    ``mix * sum_a M[b, a] x_a / max(1, sum_a M[b, a])`` over the point's observed a.

    Parameters
    ----------
    X : sparse or dense matrix (n, d)
        The points to impute.
    operator_T : csr_matrix (d, d)
        M^T, e.g. :attr:`Fiat.operator_`.
    mix : float, default 1.0
        Weight of the imputed values relative to the observed ones.

    Returns
    -------
    csr_matrix of float32 (n, d)
        Sorted indices; the observed entries unchanged.

    Raises
    ------
    ValueError
        For input that is not numeric 2-D, holds NaN, or has another number of columns than
        the operator.
    """
    X = _as_csr(X, n_features=operator_T.shape[0])
    T = operator_T
    n = X.shape[0]
    if n == 0 or X.nnz == 0:
        return sp.csr_matrix(X.shape, dtype=np.float32)
    t_len = np.diff(T.indptr).astype(np.int64)
    per_nz = t_len[X.indices]
    row_nnz = np.diff(X.indptr)
    csum = np.concatenate([[0], np.cumsum(per_nz)])
    bound = row_nnz + (csum[X.indptr[1:]] - csum[X.indptr[:-1]])
    counts, idx, dat = _k.impute_rows(
        X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
        T.indptr.astype(np.int64), T.indices.astype(np.int64), T.data.astype(np.float64),
        float(mix), X.shape[1], bound.astype(np.int64))
    return _compact(counts, bound, idx, dat, X.shape)


def _compact(counts, bound, idx, dat, shape) -> sp.csr_matrix:
    """csr from rows written at offsets cumsum(bound) with ``counts`` valid entries each."""
    starts = np.concatenate([[0], np.cumsum(bound)[:-1]]).astype(np.int64)
    total = int(counts.sum())
    row_of = np.repeat(np.arange(len(counts)), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = starts[row_of] + (np.arange(total) - first[row_of])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = sp.csr_matrix((dat[pos].astype(np.float32), idx[pos].astype(np.int32), indptr),
                        shape=shape)
    out.has_sorted_indices = True
    return out


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------

class Fiat(BaseEstimator):
    """FIAT feature imputation with DEFRAG's block-diagonal pseudo co-occurrence.

    Parameters
    ----------
    defrag : fitted Defrag, or array of int (d,)
        The feature clustering (``labels_`` and ``n_clusters_`` are used; a plain array
        of cluster ids works too).
    normalization : {"cosine", "conditional", "row", "none"}, default "cosine"
        How C^F is turned into the imputation operator M (see
        :func:`normalize_cooccurrence`). "cosine" makes M_ab the cosine between the
        columns of features a and b, so two features that always occur together with the
        same value have weight 1.
    mix : float, default 0.25
        Weight of the imputed values relative to the observed ones (0 = no imputation,
        1 = restore perfectly correlated features exactly). An imputed feature is a
        guess, so it gets less weight than an observed one. 0.25 is the best single value
        of {0.1, 0.25, 0.5, 1} on 80/20 validation splits of the training rows of Bibtex,
        Delicious and Corel16k with half of each validation row's features erased
        (``benchmarks/refrag_fiat_bench.py --fiat-mix``; measured in
        ``benchmarks/results/fiat_mix.md``). The best value depends on the data, and
        imputing rows that lost nothing can cost P@1, so on most data FIAT is for rows
        known to have lost features.
    min_weight : float, default 0.0
        Drop off-diagonal operator entries below this weight (prunes weak pairs).

    Attributes
    ----------
    cooccurrence_ : csr (d, d)   the pseudo co-occurrence C^F of the training data
    operator_ : csr (d, d)       M^T, the operator used by :meth:`transform`
    labels_ : int array (d,)     the feature clusters (copied from ``defrag``)
    n_clusters_ : int
    n_features_in_ : int

    Notes
    -----
    Follows the paper: C^F = sum_k X_{F_k}^T X_{F_k} over the training data, and the
    imputation of a point x is built from C^F x. The paper leaves the normalisation
    open; ours (a choice, documented here) keeps every observed entry of x as it is and
    gives a missing feature b the value

        mix * sum_{a observed} M_ba x_a / max(1, sum_{a observed} M_ba),

    a similarity-weighted average of the observed values once the similarity mass
    reaches 1, and proportionally less below it. With "cosine" and ``mix = 1`` a feature
    that is perfectly correlated with an observed one is restored exactly. Artifacts store
    ``labels_`` and the operators, so a loaded Fiat works without its Defrag; ``defrag``
    itself is not saved (it comes back as None), and ``get_params()`` reports a Defrag
    object as None so that parameters stay JSON; ``clone()`` keeps the reference.
    """

    def __init__(self, defrag=None, normalization="cosine", mix=0.25, min_weight=0.0):
        self.defrag = defrag
        self.normalization = normalization
        self.mix = mix
        self.min_weight = min_weight

    #: what every ``__init__`` parameter may be (checked at the start of :meth:`fit`);
    #: ``defrag`` is checked against the data in :meth:`fit` (:func:`check_clustering`)
    _parameter_constraints = {
        "defrag": "no_validation",
        "normalization": [Options(str, NORMALIZATIONS)],
        "mix": [Interval(Real, 0, None, closed="left")],
        "min_weight": [Interval(Real, 0, None, closed="left")],
    }

    def _check_params(self):
        """The declared constraints (also called by :meth:`transform`, the spec checks and
        the artifact checks)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    def fit(self, X, y=None, progress=None):
        """Build C^F and the imputation operator from training data X (n, d).

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            The training points.
        y : None
            Ignored (scikit-learn's signature).
        progress : callable or None, default None
            ``progress(fraction, message)``, if given, is called before and after each of the
            two steps; it may raise (e.g. :class:`featagg_core.utils.cancel.Cancelled`),
            which propagates.

        Returns
        -------
        Fiat
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside its declared constraint (``"<name> must be ..., got
            ..."``), a clustering that is missing or does not cover X's features, or bad X.
        NotFittedError
            When ``defrag`` is a Defrag that is not fitted.
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        if progress is not None:
            progress(0.0, "FIAT: pseudo co-occurrence")
        X = _as_csr(X)
        labels, n_clusters = check_clustering(self.defrag, X.shape[1])
        C = pseudo_cooccurrence(X, labels, n_clusters)
        if progress is not None:
            progress(0.6, "FIAT: imputation operator")
        M = normalize_cooccurrence(C, self.normalization, float(self.min_weight))
        self.cooccurrence_ = C
        self.operator_ = M if self.normalization in ("cosine", "none") else M.T.tocsr()
        self.operator_.sort_indices()
        self.labels_ = labels
        self.n_clusters_ = int(n_clusters)
        self.n_features_in_ = int(X.shape[1])
        if progress is not None:
            progress(1.0, "FIAT: done")
        return self

    def _check_fitted(self):
        if not hasattr(self, "operator_"):
            raise NotFittedError("this Fiat is not fitted yet: call fit(X) first")

    @fill_doc
    def transform(self, X):
        """Imputed copy of X: csr float32, same shape, observed entries unchanged.

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            Points with the features the Fiat was fitted on.

        Returns
        -------
        csr_matrix of float32 (n, d)

        Raises
        ------
        {not_fitted}
        ValueError
            For another number of columns than in ``fit``, or a parameter changed to a value
            outside its constraint.
        """
        self._check_fitted()
        self._check_params()
        return impute(X, self.operator_, float(self.mix))

    # -- artifacts ---------------------------------------------------------
    def _artifact_state(self):
        self._check_fitted()
        C, T = self.cooccurrence_, self.operator_
        meta = {"n_clusters": self.n_clusters_, "n_features": self.n_features_in_}
        arrays = {"labels": self.labels_,
                  "C_indptr": C.indptr, "C_indices": C.indices, "C_data": C.data,
                  "T_indptr": T.indptr, "T_indices": T.indices, "T_data": T.data}
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        params = dict(params)
        params["defrag"] = None          # the clustering travels as labels_
        obj = cls(**params)
        d = int(meta["n_features"])
        obj.labels_ = np.asarray(arrays["labels"], dtype=np.int64)
        obj.n_clusters_ = int(meta["n_clusters"])
        obj.n_features_in_ = d
        obj.cooccurrence_ = sp.csr_matrix(
            (arrays["C_data"], arrays["C_indices"], arrays["C_indptr"]), shape=(d, d))
        obj.operator_ = sp.csr_matrix(
            (arrays["T_data"], arrays["T_indices"], arrays["T_indptr"]), shape=(d, d))
        if obj.labels_.shape[0] != d:
            raise ValueError("labels does not have one entry per feature")
        return obj

    def get_params(self, deep=True):
        """Parameters, JSON-serialisable: a ``defrag`` *object* is reported as None.

        The clustering is an input, not a hyper-parameter; artifacts carry it as
        ``labels_``. :func:`sklearn.base.clone` still keeps the reference (see
        ``__sklearn_clone__``). An array of cluster ids is reported as a list.

        Parameters
        ----------
        deep : bool, default True
            Ignored (Fiat has no sub-estimator parameters).

        Returns
        -------
        dict
            Parameter name -> value.
        """
        params = super().get_params(deep=False)
        params["defrag"] = _json_clustering(params.get("defrag"))
        return params

    def __sklearn_clone__(self):
        params = super().get_params(deep=False)      # the real defrag reference
        return type(self)(**params)


def _json_clustering(value):
    if value is None or isinstance(value, list):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    return None


# ---------------------------------------------------------------------------
# the erasure experiment
# ---------------------------------------------------------------------------

def erase_features(X, fraction, random_state=0) -> sp.csr_matrix:
    """Remove ``round(fraction * nnz_i)`` of the non-zero features of every row at random.

    The draw is one random key per stored entry, so for a fixed ``random_state`` the
    entries erased at a smaller fraction are also erased at every larger one (nested
    erasures, a smooth curve).

    Parameters
    ----------
    X : sparse or dense matrix (n, d)
        The points.
    fraction : float in [0, 1]
        Share of every row's non-zeros to erase.
    random_state : int or None, default 0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    csr_matrix of float32 (n, d)

    Raises
    ------
    ValueError
        For a ``fraction`` outside [0, 1] or bad X.
    """
    check_param("fraction", fraction, [Interval(Real, 0, 1, closed="both")])
    X = _as_csr(X)
    n = X.shape[0]
    rng = np.random.default_rng(random_state)
    key = rng.random(X.nnz)
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    order = np.lexsort((key, rows))                    # by row, then key
    rank = np.empty(X.nnz, np.int64)
    rank[order] = np.arange(X.nnz) - X.indptr[rows[order]]
    n_erase = np.floor(fraction * np.diff(X.indptr) + 0.5).astype(np.int64)
    keep = rank >= n_erase[rows]
    out = sp.csr_matrix((X.data[keep], X.indices[keep],
                         np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=n))])),
                        shape=X.shape)
    return out.astype(np.float32)


def erasure_curve(predict_scores: Callable, X_test, Y_test, fiat: Optional[Fiat] = None,
                  fractions: Iterable[float] = tuple(np.round(np.arange(0, 1.0, 0.1), 1)),
                  k=(1, 3, 5), random_state=0, progress: Optional[Callable] = None):
    """P@k of a trained classifier on test points with a fraction of features erased,
    without and (when ``fiat`` is given) with FIAT imputation.

    Parameters
    ----------
    predict_scores : callable
        X -> (n, L) score matrix (e.g. ``lambda X: clf.predict_scores(X, k=5)``).
    X_test : sparse matrix (n, d)
        The test points.
    Y_test : sparse matrix (n, L)
        Their 0/1 labels.
    fiat : Fiat or None, default None
        A fitted Fiat; adds the ``P@k FIAT`` columns.
    fractions : iterable of float
        The erased fractions p (0.0 ... 0.9 by default).
    k : int or sequence of int, default (1, 3, 5)
        The cut-offs.
    random_state : int, default 0
        Seed of the erasures (:func:`erase_features`).
    progress : callable or None, default None
        Called as ``progress(done, total)`` after every fraction, for progress bars.

    Returns
    -------
    pandas.DataFrame
        A row per fraction: ``fraction``, ``P@k`` (erased) and ``P@k FIAT`` (erased then
        imputed) for every k.
    """
    import pandas as pd

    from featagg_core.metrics import precision_at_k
    ks = list(k) if isinstance(k, (list, tuple)) else [int(k)]
    fractions = [float(f) for f in fractions]
    rows = []
    total = len(fractions)
    for j, p in enumerate(fractions):
        Xe = erase_features(X_test, p, random_state)
        row = {"fraction": p}
        pk = np.atleast_1d(precision_at_k(Y_test, predict_scores(Xe), ks))
        for kk, v in zip(ks, pk):
            row[f"P@{kk}"] = float(v)
        if fiat is not None:
            pf = np.atleast_1d(precision_at_k(Y_test, predict_scores(fiat.transform(Xe)), ks))
            for kk, v in zip(ks, pf):
                row[f"P@{kk} FIAT"] = float(v)
        rows.append(row)
        if progress is not None:
            progress(j + 1, total)
    return pd.DataFrame(rows)


def warmup():
    """Compile FIAT's kernels on tiny inputs (the dashboard calls this at start-up)."""
    X = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]]))
    f = Fiat(np.array([0, 0, 1])).fit(X)
    f.transform(X)
