"""Vocabulary compression of a categorical feature for a binary label.

Bateni, Chen, Esfandiari, Fu, Mirrokni & Rostamizadeh, "Categorical Feature Compression
via Submodular Optimization", ICML 2019.

A categorical feature X with ``n`` distinct values is mapped to ``m`` buckets
``Z = f(X)`` so that the mutual information I(Z; C) with a binary label C is as large as
possible.  Sort the values by P(C = 0 | x): an optimal compression is contiguous in that
order (Kurkoski & Yagi 2014), so it is a set S of ``m - 1`` split points, and
``F(S) = I(Z_S; C)`` is monotone submodular in S (the paper's re-parametrisation).  The
marginal gain of a split only depends on the counts between its two neighbours in S, so
with prefix sums and a Fenwick tree each gain costs O(log n) and the greedy runs in
O(n log n).

Methods (``VocabularyCompressor(method=...)``)
    ``"submodular"``  stochastic greedy (Mirzasoleiman et al. 2015) over split points,
                      ``(n/k) ln(1/epsilon)`` candidates per step, seeded; optional
                      local refinement of the split points (``refine``, never decreases F).
    ``"threshold"``   Badanidiyuru-Vondrak decreasing-threshold greedy (the building
                      block of the paper's distributed algorithm, see
                      :mod:`featagg_core.distributed`).
    ``"dp"``          the exact optimum by dynamic programming over split points
                      (Kurkoski & Yagi 2014), O(n^2 m); for n <= ``max_dp_values``.
    ``"frequency"``   the m - 1 most frequent values keep their own bucket, the rest share one.
    ``"bucketing"``   equal-mass contiguous buckets in the sorted order.
    ``"divisive"``    Dhillon, Mallela & Kumar (2003) information-theoretic divisive
                      clustering: k-means with the KL divergence between P(C | x) and the
                      cluster centres.

Several columns under one global budget: :func:`compress_columns`.
"""
from __future__ import annotations

import json
import math
import time
from numbers import Integral, Real
from typing import Any, Dict, Optional

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from featagg_core.utils.docstrings import fill_doc
from featagg_core._kernels import vocab as _k
from featagg_core.utils.polling import call_polled, new_stop
from featagg_core.utils.validation import (
    Interval,
    Options,
    check_param,
    parameter_error,
    validate_params,
)
from featagg_core.vocab.counts import (
    _as_1d,
    _check_labels,
    _mi_from_counts,
    _Prepared,
    check_counts,
    factorize,
)

METHODS = ("submodular", "threshold", "dp", "frequency", "bucketing", "divisive")
#: methods whose buckets are contiguous intervals of the P(C=0|x) order
CONTIGUOUS = ("submodular", "threshold", "dp", "bucketing")
_DEFAULT_EPS = {"submodular": 0.01, "threshold": 0.05}


def _divisive_init(c0, c1, order, m):
    """Dhillon et al.'s initialisation for two classes: split the values by their most
    likely class, then cut each group into equal-size pieces along P(C=0|x), with the
    m clusters shared between the two groups in proportion to their sizes."""
    n = len(order)
    tot = (c0 + c1).astype(np.float64)
    p0 = np.divide(c0, tot, out=np.full(n, 0.5), where=tot > 0)
    grp = (p0[order] >= 0.5).astype(np.int64)  # sorted ascending: group 0 then group 1
    n0 = int((grp == 0).sum())
    n1 = n - n0
    if m == 1 or n0 == 0 or n1 == 0:
        ka, kb = (m, 0) if n1 == 0 else (0, m)
    else:
        ka = int(np.clip(round(m * n0 / n), 1, m - 1))
        kb = m - ka
    init = np.empty(n, np.int64)
    pos = np.arange(n)
    if n0:
        init[order[:n0]] = (pos[:n0] * max(ka, 1)) // n0
    if n1:
        init[order[n0:]] = max(ka, 0) + (pos[: n1] * max(kb, 1)) // n1
    return np.minimum(init, m - 1)


def _json_values(vocab) -> list:
    """The vocabulary as a JSON-ready list (str / int / float / bool keep their type,
    missing values become null)."""
    if vocab.dtype.kind in "iub":
        return vocab.tolist()
    if pd.api.types.infer_dtype(vocab, skipna=False) in ("string", "integer", "boolean"):
        return vocab.tolist()  # fast path; the loop below handles missing values and floats
    out = []
    for v in vocab.tolist():
        if isinstance(v, (str, bool, int)) or v is None:
            out.append(v)
        elif isinstance(v, float):
            out.append(None if math.isnan(v) else v)
        else:
            raise ValueError(f"vocabulary: value {v!r} of type {type(v).__name__} cannot be "
                             "exported (str, int, float and bool values can)")
    return out


# ----------------------------------------------------------------------------------------
# the estimator
# ----------------------------------------------------------------------------------------
class VocabularyCompressor(BaseEstimator):
    """Compress a categorical vocabulary to ``budget`` buckets maximising I(Z; C).

    Parameters
    ----------
    budget : int
        Number of buckets m (>= 1).  Fewer are used when the column has fewer distinct
        values (or, for ``threshold``, when no split has a positive gain).
    method : {"submodular", "threshold", "dp", "frequency", "bucketing", "divisive"}
    random_state : int or None
        Seed of the stochastic greedy's sampling (other methods are deterministic).
    epsilon : float or None
        Accuracy parameter: stochastic greedy samples ``(n/k) ln(1/epsilon)`` candidates per
        step (default 0.01); the threshold greedy lowers its threshold by ``1 + epsilon``
        per level down to ``epsilon d / k`` (default 0.05).
    refine : bool
        After the greedy (``submodular`` / ``threshold``), move each split point to its best
        position between its neighbours until no move helps (O(n) per sweep); then, on
        columns with at most ``max_dp_values`` atoms, compute the exact optimum with as
        many buckets by the divide-and-conquer DP (O(m n log n): the bucket gain satisfies
        the quadrangle inequality on the sorted values, Iwata & Ozawa 2014) and keep it
        when it is better.  Both steps only raise F, so the (1 - 1/e - epsilon) guarantee
        is kept, and small columns get the optimum, which the local moves alone can miss
        (measured in ``benchmarks/results/vocab_dp.md``).  Default True.
    handle_unseen : {"prior", "dedicated"}
        Where :meth:`transform` puts values not seen in ``fit``: ``"prior"`` (default) -
        the bucket whose label distribution is closest (KL) to the prior P(C) of the fitting
        data, i.e. where a value with no evidence of its own belongs (for ``frequency``: the
        shared tail bucket, as in hashing-to-OOV practice); ``"dedicated"`` - an extra
        bucket id ``n_buckets_``.  With ``min_count > 1`` unseen values go to the bucket
        of the rare-value pool (they are the rarest values of all).
    min_count : int
        Values seen fewer than ``min_count`` times are pooled into one pseudo-value (their
        pooled counts decide where the pool sorts and which bucket it joins), which keeps
        values seen once or twice from being sorted to the extremes P(C=0|x) in {0, 1}
        by noise.  Default 1: no pooling, as in the paper.
    merge_ties : bool
        Never cut between values with the same P(C=0|x) (an optimum never needs to: see
        :class:`_Prepared`); the optimisers then work on the ``n_atoms_`` runs instead of
        the n values, which is exact and often much smaller.  Default True.
    max_iter, tol : int, float
        Iteration cap and relative objective tolerance of ``divisive``.
    max_dp_values : int
        ``dp`` refuses columns with more distinct values than this (O(n^2 m) time).

    Attributes
    ----------
    vocabulary_ : ndarray (n,)
        The distinct values (int64 when all are ints, else object), first-appearance order.
    counts_ : ndarray (n, 2) int64
        Label-0 / label-1 counts per value.
    order_ : ndarray (n,)
        Vocabulary indices sorted by ascending P(C=0 | x) (ties: vocabulary index).
    bucket_of_ : ndarray (n,) int64
        Bucket of each vocabulary entry.  Buckets are numbered by ascending P(C=0 | Z=z).
    n_buckets_ : int
    n_atoms_ : int
        Number of units the optimisers choose cuts between (runs of tied values, the
        rare pool); equals n when ``merge_ties=False`` and ``min_count=1``.
    split_points_ : ndarray or None
        For contiguous methods, the sorted split positions ``t`` (1..n-1) in the sorted
        order: bucket j holds sorted values ``split_points_[j-1] .. split_points_[j]-1``.
        ``None`` for ``frequency`` / ``divisive``.
    chosen_, gains_ : ndarray
        ``submodular`` / ``threshold``: split points in the order the greedy picked them
        and their marginal gains (nats); used by :func:`compress_columns`.
    mutual_information_ : float
        I(Z; C) in nats on the fitting data.
    mutual_information_full_ : float
        I(X; C) in nats on the fitting data.
    mi_loss_ : float
        (I(X;C) - I(Z;C)) / I(X;C) (0 when I(X;C) = 0).
    unseen_bucket_ : int
    fit_time_ : float
        Seconds (wall) from the counts on: sorting, atoms, optimisation, bucket ids.
    optimize_time_ : float
        Seconds (wall) of the optimisation and bucket ids alone (after sorting).

    Notes
    -----
    Follows the paper: values are ordered by the empirical P(C = 0 | x) and the objective
    is evaluated on empirical counts, so by default a value seen once sits at 0 or 1 like
    any other (``min_count`` pools rare values instead).  Ties in P(C=0 | x) are broken
    by vocabulary index (first appearance), which keeps ``fit`` deterministic, and tied
    runs are not cut (``merge_ties``).  Missing values (None / NaN) are one category.
    The stochastic greedy uses a private splitmix64 stream seeded by ``random_state``.
    Choices of ours: the ``refine`` step (a 1-D local search as in quantiser design), tie
    merging, ``min_count``, ``dp`` over exactly ``min(m, n_atoms)`` buckets (adding a
    split never lowers I), the early stop of the greedy once no split has a positive
    gain, and the unseen-value rule.

    Artifacts: the vocabulary is stored as an int64 array when all values are ints, else
    as a JSON list in the meta (str / int / float / bool values round-trip with their type).
    """

    _parameter_constraints: dict = {
        "budget": [Interval(Integral, 1, None, closed="left")],
        "method": [Options(str, METHODS)],
        "random_state": [Interval(Integral, None, None, closed="neither"), None],
        "epsilon": [Interval(Real, 0, 1, closed="neither"), None],
        "refine": ["boolean"],
        "handle_unseen": [Options(str, {"prior", "dedicated"})],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "merge_ties": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        # 0 is allowed: no exact DP at all (benchmarks/vocab_bench.py switches the polish
        # off that way)
        "max_dp_values": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, budget=100, method="submodular", random_state=0, epsilon=None,
                 refine=True, handle_unseen="prior", min_count=1, merge_ties=True,
                 max_iter=50, tol=1e-6, max_dp_values=5000):
        self.budget = budget
        self.min_count = min_count
        self.merge_ties = merge_ties
        self.method = method
        self.random_state = random_state
        self.epsilon = epsilon
        self.refine = refine
        self.handle_unseen = handle_unseen
        self.max_iter = max_iter
        self.tol = tol
        self.max_dp_values = max_dp_values

    # ------------------------------------------------------------------ validation
    def _validate(self):
        """Check every parameter against ``_parameter_constraints`` (also called by the
        run-spec, artifact and distributed code before anything is fitted)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)

    def _eps(self):
        if self.epsilon is None:
            return _DEFAULT_EPS.get(self.method)
        return float(self.epsilon)

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.default_rng().integers(0, 2**62))
        return int(self.random_state) & ((1 << 63) - 1)

    # ------------------------------------------------------------------ fitting
    @fill_doc
    def fit(self, values, labels, progress=None):
        """Fit on a 1-D array of hashable ``values`` and 0/1 ``labels`` of the same length.

        Parameters
        ----------
        values : 1-D array-like, pandas Series or list
            The categorical column (missing values are a category of their own).
        labels : 1-D array-like of 0/1 or bool
            The binary label of each row; both classes must occur.
        progress : callable(fraction, message), optional
            Called at the start, before and after the optimisation and about every 0.1 s
            while the ``dp`` / ``divisive`` kernels run; it may raise (e.g.
            :class:`featagg_core.utils.cancel.Cancelled`) to stop (the kernel returns early,
            the exception propagates, nothing is fitted).

        {vocab_fit_returns}

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints`` (the message names it),
            labels that are not 0/1 or of another length, empty values, one class only,
            or ``method="dp"`` on a column with more than ``max_dp_values`` atoms.
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        if progress is not None:
            progress(0.0, "counting values")
        codes, vocab = factorize(values)
        y = _check_labels(labels, len(codes))
        if len(codes) == 0:
            raise ValueError("values: empty")
        n = len(vocab)
        c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
        c0 = np.bincount(codes, minlength=n).astype(np.int64) - c1
        return self._fit_counts(vocab, c0, c1, progress)

    @fill_doc
    def fit_counts(self, vocabulary, counts0, counts1, progress=None):
        """Fit from a vocabulary and its per-value label-0 / label-1 counts.

        Parameters
        ----------
        vocabulary : 1-D array-like
            The distinct values.
        counts0, counts1 : 1-D array-like of int
            Label-0 / label-1 count of each value (:func:`check_counts`).
        progress : callable(fraction, message), optional
            As in :meth:`fit`.

        {vocab_fit_returns}

        Raises
        ------
        ValueError
            As :meth:`fit`, and for counts :func:`check_counts` refuses.
        """
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        return self._fit_counts(*check_counts(vocabulary, counts0, counts1), progress)

    def _fit_counts(self, vocab, c0, c1, progress=None):
        N0, N1 = int(c0.sum()), int(c1.sum())
        if N0 == 0 or N1 == 0:
            raise ValueError("labels: both classes 0 and 1 must occur (I(X;C) is 0 otherwise)")
        n = len(vocab)
        t0 = time.perf_counter()
        if progress is not None:
            progress(0.1, f"sorting {n:,} values")
        prep = _Prepared(c0, c1, self.min_count, self.merge_ties)
        t1 = time.perf_counter()
        if progress is not None:
            progress(0.2, f"{self.method}: {prep.n_atoms:,} atoms into {self.budget} buckets")
        stop = new_stop()
        tick = None if progress is None else (
            lambda: progress(0.2, f"{self.method}: optimising"))
        A = prep.n_atoms
        m = int(min(self.budget, A))
        N = float(N0 + N1)
        eps = self._eps()
        method = self.method
        self.chosen_ = np.zeros(0, np.int64)
        self.gains_ = np.zeros(0)
        self.levels_ = np.zeros(0, np.int64)
        self._prep = prep
        self.vocabulary_ = vocab
        self.counts_ = np.column_stack([c0, c1]).astype(np.int64)
        self.order_ = prep.order.astype(np.int64)
        self.n_atoms_ = A
        splits = None
        if method == "submodular":
            ch, gains = _k.stochastic_greedy(prep.P0a, prep.P1a, m - 1, eps, self._seed())
            self.chosen_, self.gains_ = prep.to_values(ch), gains / N
        elif method == "threshold":
            ch, gains, levels = _k.threshold_greedy(prep.P0a, prep.P1a, m - 1, eps, -1.0)
            self.chosen_, self.gains_, self.levels_ = prep.to_values(ch), gains / N, levels
        elif method == "dp":
            if A > self.max_dp_values:
                raise parameter_error(
                    "max_dp_values", f"at least the column's {A} distinct values (after "
                    "merging ties) for method 'dp', which is O(n^2 m)", self.max_dp_values)
            sa, _ = call_polled(_k.dp_optimal, (prep.P0a, prep.P1a, m, stop), stop, tick)
            splits = prep.to_values(sa)
        elif method == "bucketing":
            total = prep.P0a + prep.P1a
            targets = total[-1] * np.arange(1, m) / m
            pos = np.searchsorted(total, targets, side="left")
            sa = np.unique(np.clip(pos, 1, A - 1)) if A > 1 else np.zeros(0, np.int64)
            splits = prep.to_values(sa)
        if method in ("submodular", "threshold"):
            self._set_splits(self.chosen_)
        elif splits is not None:
            self._set_splits(np.asarray(splits, np.int64), refine=False)
        elif method == "frequency":
            mf = int(min(self.budget, n))
            cnt = c0 + c1
            top = np.argsort(-cnt, kind="stable")[: mf - 1] if mf < n else np.arange(n)
            raw = np.full(n, len(top), np.int64)
            raw[top] = np.arange(len(top))
            self._set_buckets(raw, tail=len(top) if mf < n else None)
        else:  # divisive, on atoms (values of one atom have the same P(C|x), hence cluster)
            c0a = np.diff(prep.P0a).astype(np.float64)
            c1a = np.diff(prep.P1a).astype(np.float64)
            init = _divisive_init(c0a, c1a, np.arange(A), m)
            lab, self.n_iter_ = call_polled(
                _k.divisive_kl, (c0a, c1a, init, m, int(self.max_iter), float(self.tol), stop),
                stop, tick)
            atom_of = np.empty(n, np.int64)
            atom_of[prep.order] = _k.assign_sorted(n, prep.bpos)
            self._set_buckets(lab[atom_of], tail=None)
        self.fit_time_ = time.perf_counter() - t0
        self.optimize_time_ = time.perf_counter() - t1
        if progress is not None:
            progress(1.0, f"{self.n_buckets_} buckets")
        return self

    def _set_splits(self, splits, refine=None):
        """Derive the fitted state from split points (positions in the sorted order that
        are atom boundaries)."""
        prep = self._prep
        splits = np.unique(np.asarray(splits, np.int64))
        if (self.refine if refine is None else refine) and len(splits):
            sa = _k.refine_splits(prep.P0a, prep.P1a, prep.to_atoms(splits), 50)
            if prep.n_atoms <= self.max_dp_values:
                # exact polish: the optimum with as many buckets, kept only if better
                da, value = _k.dp_monotone(prep.P0a, prep.P1a, len(sa) + 1, new_stop())
                if value > _k.objective(prep.P0a, prep.P1a, sa) * (1 + 1e-12) + 1e-300:
                    sa = da
            splits = np.unique(prep.to_values(sa))
        self.split_points_ = splits
        n = len(self.order_)
        bucket_sorted = _k.assign_sorted(n, splits)
        bucket_of = np.empty(n, np.int64)
        bucket_of[self.order_] = bucket_sorted
        self._finish(bucket_of, tail=None)

    def _set_buckets(self, raw, tail):
        """Relabel arbitrary cluster labels by ascending P(C=0|Z=z), dropping empty ones."""
        c0, c1 = self.counts_[:, 0], self.counts_[:, 1]
        used, inv = np.unique(raw, return_inverse=True)
        b0 = np.bincount(inv, weights=c0)
        b1 = np.bincount(inv, weights=c1)
        p = b0 / np.maximum(b0 + b1, 1e-300)
        rank = np.empty(len(used), np.int64)
        rank[np.argsort(p, kind="stable")] = np.arange(len(used))
        self.split_points_ = None
        tail_bucket = None
        if tail is not None:
            hit = np.nonzero(used == tail)[0]
            tail_bucket = int(rank[hit[0]]) if len(hit) else None
        self._finish(rank[inv].astype(np.int64), tail=tail_bucket)

    def _finish(self, bucket_of, tail):
        c0, c1 = self.counts_[:, 0], self.counts_[:, 1]
        self.bucket_of_ = bucket_of
        self.n_buckets_ = int(bucket_of.max()) + 1 if len(bucket_of) else 0
        b0 = np.bincount(bucket_of, weights=c0, minlength=self.n_buckets_)
        b1 = np.bincount(bucket_of, weights=c1, minlength=self.n_buckets_)
        self.bucket_counts_ = np.column_stack([b0, b1]).astype(np.int64)
        self.mutual_information_ = _mi_from_counts(b0, b1)
        self.mutual_information_full_ = _mi_from_counts(c0, c1)
        full = self.mutual_information_full_
        self.mi_loss_ = float(max(full - self.mutual_information_, 0.0) / full) if full > 0 else 0.0
        rare = getattr(self, "_prep", None)
        rare = rare.rare if rare is not None else np.zeros(0, bool)
        if self.handle_unseen == "dedicated":
            self.unseen_bucket_ = self.n_buckets_
        elif self.min_count > 1 and rare.any() and self.method != "frequency":
            self.unseen_bucket_ = int(bucket_of[np.flatnonzero(rare)[0]])  # the rare pool's
        elif tail is not None:
            self.unseen_bucket_ = int(tail)
        else:
            N0, N1 = c0.sum(), c1.sum()
            pr0 = N0 / (N0 + N1)
            q0 = b0 / np.maximum(b0 + b1, 1e-300)
            with np.errstate(divide="ignore"):
                score = pr0 * np.log(q0) + (1 - pr0) * np.log(1 - q0)  # -KL + const
            self.unseen_bucket_ = int(np.argmax(score))

    def truncate(self, n_splits):
        """A copy keeping only the first ``n_splits`` greedy picks (``submodular`` /
        ``threshold``): what the greedy would have returned with ``budget = n_splits + 1``
        (used by the global-budget merge of :func:`compress_columns`).

        Parameters
        ----------
        n_splits : int >= 0
            Greedy picks to keep.

        Returns
        -------
        VocabularyCompressor
            A new fitted compressor (this one is unchanged).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            For a method other than ``submodular`` / ``threshold``.
        """
        self._check_fitted()
        if self.method not in ("submodular", "threshold"):
            raise ValueError(f"truncate: only for greedy methods, not {self.method!r}")
        new = VocabularyCompressor(**self.get_params())
        new.budget = int(n_splits) + 1
        for a in ("vocabulary_", "counts_", "order_", "_prep", "n_atoms_", "fit_time_",
                  "optimize_time_"):
            setattr(new, a, getattr(self, a))
        new.chosen_ = self.chosen_[:n_splits]
        new.gains_ = self.gains_[:n_splits]
        new.levels_ = self.levels_[:n_splits]
        new._set_splits(new.chosen_)
        return new

    # ------------------------------------------------------------------ using it
    def _check_fitted(self):
        if not hasattr(self, "bucket_of_"):
            raise NotFittedError("This VocabularyCompressor is not fitted yet; call fit first.")

    def transform(self, values):
        """Bucket id (int64) of each value; unseen values go to ``unseen_bucket_``.

        Parameters
        ----------
        values : 1-D array-like, pandas Series or list
            Values of the column.

        Returns
        -------
        ndarray of int64, shape (n,)
            Bucket ids.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        """
        self._check_fitted()
        arr = _as_1d(values, "values")
        idx = pd.Index(self.vocabulary_).get_indexer(pd.Index(arr) if arr.dtype != object
                                                    else pd.Index(arr, dtype=object))
        out = np.full(len(arr), self.unseen_bucket_, np.int64)
        seen = idx >= 0
        out[seen] = self.bucket_of_[idx[seen]]
        return out

    def fit_transform(self, values, labels):
        """:meth:`fit`, then :meth:`transform` of the same values.

        Parameters
        ----------
        values, labels :
            As in :meth:`fit`.

        Returns
        -------
        ndarray of int64, shape (n,)
            Bucket ids of ``values``.
        """
        return self.fit(values, labels).transform(values)

    @property
    def mapping_(self) -> Dict[Any, int]:
        """dict value -> bucket id (built on each access: O(n))."""
        self._check_fitted()
        return dict(zip(self.vocabulary_.tolist(), self.bucket_of_.tolist()))

    @property
    def p0_sorted_(self) -> np.ndarray:
        """P(C = 0 | x) of the values in sorted order, as used for sorting (the pooled ratio
        for values rarer than ``min_count``): the paper's key picture."""
        self._check_fitted()
        return self._prep.key_sorted

    def mapping_frame(self) -> pd.DataFrame:
        """Table of value, bucket, count, positives, P(C=0|x), in sorted order.

        Returns
        -------
        pandas.DataFrame
            Columns ``value``, ``bucket``, ``count``, ``positives``, ``p_c0``.
        """
        self._check_fitted()
        o = self.order_
        c = self.counts_[o]
        return pd.DataFrame({"value": self.vocabulary_[o], "bucket": self.bucket_of_[o],
                             "count": c.sum(axis=1), "positives": c[:, 1],
                             "p_c0": c[:, 0] / np.maximum(c.sum(axis=1), 1)})

    def to_csv(self, path_or_buf=None) -> Optional[str]:
        """Write the mapping as CSV (columns value,bucket,count,positives,p_c0).

        Parameters
        ----------
        path_or_buf : str, path or file-like, optional
            Where to write (pandas' ``to_csv``); None returns the text.

        Returns
        -------
        str or None
            The CSV text when ``path_or_buf`` is None.
        """
        return self.mapping_frame().to_csv(path_or_buf, index=False)

    def to_json(self, path_or_buf=None) -> Optional[str]:
        """The mapping as JSON: ``{"method", "budget", "n_buckets", "unseen_bucket",
        "mutual_information", "mutual_information_full", "values": [...], "buckets": [...]}``
        (parallel lists so that int and str values keep their type).

        Parameters
        ----------
        path_or_buf : str, path or file-like, optional
            Where to write; None returns the text.

        Returns
        -------
        str or None
            The JSON text when ``path_or_buf`` is None.
        """
        self._check_fitted()
        doc = {"method": self.method, "budget": int(self.budget), "n_buckets": self.n_buckets_,
               "unseen_bucket": self.unseen_bucket_,
               "mutual_information": self.mutual_information_,
               "mutual_information_full": self.mutual_information_full_,
               "values": _json_values(self.vocabulary_), "buckets": self.bucket_of_.tolist()}
        text = json.dumps(doc)
        if path_or_buf is None:
            return text
        if hasattr(path_or_buf, "write"):
            path_or_buf.write(text)
        else:
            with open(path_or_buf, "w", encoding="utf-8") as fh:
                fh.write(text)
        return None

    # ------------------------------------------------------------------ artifacts
    _FITTED_SCALARS = ("n_buckets_", "n_atoms_", "mutual_information_", "mutual_information_full_",
                       "mi_loss_", "unseen_bucket_", "fit_time_", "optimize_time_")

    def _artifact_state(self):
        self._check_fitted()
        meta = {a: getattr(self, a) for a in self._FITTED_SCALARS}
        meta["has_splits"] = self.split_points_ is not None
        arrays = {"counts": self.counts_, "order": self.order_, "bucket_of": self.bucket_of_,
                  "chosen": self.chosen_, "gains": self.gains_, "levels": self.levels_,
                  "bucket_counts": self.bucket_counts_}
        if self.split_points_ is not None:
            arrays["split_points"] = self.split_points_
        if self.vocabulary_.dtype.kind == "i":
            arrays["vocabulary"] = self.vocabulary_.astype(np.int64)
        else:
            meta["vocabulary"] = _json_values(self.vocabulary_)
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        if "vocabulary" in arrays:
            obj.vocabulary_ = np.asarray(arrays["vocabulary"], np.int64)
        else:
            v = np.empty(len(meta["vocabulary"]), dtype=object)
            v[:] = meta["vocabulary"]
            obj.vocabulary_ = v
        obj.counts_ = np.asarray(arrays["counts"], np.int64)
        obj.order_ = np.asarray(arrays["order"], np.int64)
        obj.bucket_of_ = np.asarray(arrays["bucket_of"], np.int64)
        obj.bucket_counts_ = np.asarray(arrays["bucket_counts"], np.int64)
        obj.chosen_ = np.asarray(arrays["chosen"], np.int64)
        obj.gains_ = np.asarray(arrays["gains"], np.float64)
        obj.levels_ = np.asarray(arrays["levels"], np.int64)
        obj.split_points_ = (np.asarray(arrays["split_points"], np.int64)
                             if meta.get("has_splits") else None)
        for a in cls._FITTED_SCALARS:
            setattr(obj, a, meta[a])
        obj._prep = _Prepared(obj.counts_[:, 0], obj.counts_[:, 1], obj.min_count, obj.merge_ties)
        obj.n_atoms_ = obj._prep.n_atoms
        return obj


# ----------------------------------------------------------------------------------------
# several columns, one budget
# ----------------------------------------------------------------------------------------
class ColumnCompression:
    """Result of :func:`compress_columns`: one fitted compressor per column.

    Attributes: ``compressors`` (dict column -> VocabularyCompressor), ``allocation``
    (dict column -> buckets), ``report`` (DataFrame: column, n_values, buckets, I(X;C),
    I(Z;C), loss), ``mi_loss`` (sum(I(X_i;C) - I(Z_i;C)) / sum I(X_i;C)), ``seconds``
    (everything) and ``fit_seconds`` (the optimisation alone, summed over columns).
    """

    def __init__(self, compressors, allocation, method, budget, seconds):
        self.compressors = compressors
        self.allocation = allocation
        self.method = method
        self.budget = budget
        self.seconds = seconds
        self.fit_seconds = float(sum(vc.fit_time_ for vc in compressors.values()))
        rows = []
        for col, vc in compressors.items():
            rows.append({"column": col, "n_values": len(vc.vocabulary_),
                         "buckets": vc.n_buckets_, "I(X;C)": vc.mutual_information_full_,
                         "I(Z;C)": vc.mutual_information_, "loss": vc.mi_loss_})
        self.report = pd.DataFrame(rows)
        tx = float(self.report["I(X;C)"].sum()) if rows else 0.0
        tz = float(self.report["I(Z;C)"].sum()) if rows else 0.0
        self.mi_loss = max(tx - tz, 0.0) / tx if tx > 0 else 0.0

    def transform(self, table) -> pd.DataFrame:
        """Bucket ids of every compressed column of ``table``.

        Parameters
        ----------
        table : pandas.DataFrame
            Holds every compressed column (others are ignored).

        Returns
        -------
        pandas.DataFrame
            One int64 column of bucket ids per compressed column, ``table``'s index.
        """
        return pd.DataFrame({c: vc.transform(table[c]) for c, vc in self.compressors.items()},
                            index=getattr(table, "index", None))


def _allocate(n_values: Dict[str, int], budget: int, weights: Dict[str, float]) -> Dict[str, int]:
    """Split ``budget`` buckets over columns in proportion to ``weights`` (largest
    remainders), at least 1 and at most n_values per column; leftovers re-distributed."""
    cols = list(n_values)
    cap = np.array([n_values[c] for c in cols], np.int64)
    w = np.array([max(weights[c], 0.0) for c in cols], np.float64)
    if w.sum() <= 0:
        w = np.ones(len(cols))
    alloc = np.ones(len(cols), np.int64)
    left = budget - len(cols)
    while left > 0:
        open_ = alloc < cap
        if not open_.any():
            break
        share = np.where(open_, w, 0.0)
        if share.sum() <= 0:
            share = open_.astype(np.float64)
        ideal = left * share / share.sum()
        add = np.minimum(np.floor(ideal).astype(np.int64), cap - alloc)
        if add.sum() == 0:  # hand out single buckets by largest remainder
            rem = np.where(open_, ideal - np.floor(ideal), -1.0)
            idx = np.argsort(-rem, kind="stable")[: left]
            idx = idx[open_[idx]]
            add = np.zeros_like(alloc)
            add[idx] = 1
        alloc += add
        left -= int(add.sum())
    return {c: int(a) for c, a in zip(cols, alloc)}


def _fit_column(vc: "VocabularyCompressor", coded, progress):
    """``vc.fit_counts`` on one column's counts (``progress`` passed only when given, so a
    wrapped ``fit_counts`` with the plain signature keeps working)."""
    if progress is None:
        return vc.fit_counts(*coded)
    return vc.fit_counts(*coded, progress=progress)


def compress_columns(table, labels, budget, method="submodular", allocation=None,
                     columns=None, progress=None, **params) -> ColumnCompression:
    """Compress several categorical columns under one global budget of buckets.

    Parameters
    ----------
    table : pandas.DataFrame
        The categorical columns.
    labels : 1-D array-like of 0/1 or bool
        The binary label of each row.
    budget : int
        Total number of buckets over all columns (>= number of columns).
    method : str
        A :class:`VocabularyCompressor` method.
    allocation : {"greedy", "uniform", "mi"} or None
        ``"greedy"`` (the paper's scheme, default for ``submodular``/``threshold``): each
        column's greedy run records the marginal gain of every split it picks; the runs
        are merged by always taking the column whose next gain is largest, which is the
        greedy algorithm on the sum of the per-column (independent, submodular)
        objectives.  ``"uniform"`` (default for the other methods): equal shares;
        ``"mi"``: shares proportional to I(X_i; C).  Shares are capped at each column's
        vocabulary size and the surplus is re-distributed.
    columns : list or None, default=None
        The columns to compress (None: every column of ``table``).
    progress : callable(fraction, message), optional
        Called per column (and inside each column's fit); may raise to stop.
    **params
        Passed to every VocabularyCompressor.

    Returns
    -------
    ColumnCompression
        One fitted compressor per column, the allocation and the report.

    Raises
    ------
    ValueError
        For no columns, a ``budget`` below the number of columns, an unknown
        ``allocation`` (or ``"greedy"`` with a non-greedy method), bad labels, or what a
        column's :class:`VocabularyCompressor` refuses.
    """
    t0 = time.perf_counter()
    if columns is None:
        columns = list(table.columns)
    if not columns:
        raise ValueError("columns: no columns to compress")
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, Integral) \
            or budget < len(columns):
        raise parameter_error("budget", f"an integer >= the number of columns "
                              f"({len(columns)})", budget)
    if allocation is None:
        allocation = "greedy" if method in ("submodular", "threshold") else "uniform"
    check_param("allocation", allocation, [Options(str, {"greedy", "uniform", "mi"})])
    if allocation == "greedy" and method not in ("submodular", "threshold"):
        raise parameter_error("allocation", f"'uniform' or 'mi' for method {method!r} "
                              "('greedy' needs method 'submodular' or 'threshold')", allocation)
    y = _check_labels(labels, len(table))
    n_cols = len(columns)

    def column_progress(i, name):
        if progress is None:
            return None

        def report(fraction, message):
            progress(0.2 + 0.8 * (i + float(fraction)) / n_cols, f"{name}: {message}")
        return report

    coded = {}
    for i, c in enumerate(columns):
        if progress is not None:
            progress(0.2 * i / n_cols, f"{c}: counting values")
        codes, vocab = factorize(table[c])
        n = len(vocab)
        c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
        coded[c] = (vocab, np.bincount(codes, minlength=n).astype(np.int64) - c1, c1)
    n_values = {c: len(v[0]) for c, v in coded.items()}
    extra = int(budget) - len(columns)
    comps: Dict[str, VocabularyCompressor] = {}
    if allocation == "greedy":
        runs = {}
        for i, c in enumerate(columns):
            vc = VocabularyCompressor(budget=int(min(n_values[c], extra + 1)), method=method,
                                      **params)
            runs[c] = _fit_column(vc, coded[c], column_progress(i, c))
        offsets = np.zeros(len(columns) + 1, np.int64)
        offsets[1:] = np.cumsum([len(runs[c].gains_) for c in columns])
        gains = np.concatenate([runs[c].gains_ for c in columns]) if columns else np.zeros(0)
        take = _k.merge_column_gains(gains.astype(np.float64), offsets, extra)
        for c, q in zip(columns, take):
            comps[c] = runs[c].truncate(int(q))
        alloc = {c: comps[c].n_buckets_ for c in columns}
    else:
        if allocation == "uniform":
            w = {c: 1.0 for c in columns}
        else:
            w = {c: _mi_from_counts(coded[c][1], coded[c][2]) for c in columns}
        alloc = _allocate(n_values, int(budget), w)
        for i, c in enumerate(columns):
            comps[c] = _fit_column(VocabularyCompressor(budget=alloc[c], method=method,
                                                        **params),
                                   coded[c], column_progress(i, c))
    return ColumnCompression(comps, alloc, method, int(budget), time.perf_counter() - t0)


def warmup():
    """Compile every kernel on a tiny input (the dashboard calls this once)."""
    vals = np.array([0, 1, 2, 3, 4, 5, 1, 2])
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    for m in METHODS:
        VocabularyCompressor(3, method=m).fit(vals, y).transform(vals)
    P0 = np.array([0, 1, 2], np.int64)
    P1 = np.array([0, 0, 1], np.int64)
    _k.neighbour_gains(P0, P1, np.zeros(0, np.int64), np.array([1], np.int64))
    _k.gains_from_scratch(P0, P1, np.zeros(0, np.int64), np.array([1], np.int64))
    _k.objective(P0, P1, np.zeros(0, np.int64))
    _k.max_singleton_gain(P0, P1, 0, 2)
    _k.merge_column_gains(np.array([0.1]), np.array([0, 1], np.int64), 1)
    c = np.array([1, 2, 0, 3], np.int64)
    b = np.array([0, 2, 4], np.int64)
    _k.chunks_threshold(c, c[::-1].copy(), b, 0, 1, 0.1, _k.chunks_max_gain(c, c[::-1].copy(), b))
