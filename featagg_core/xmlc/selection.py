"""Choosing KTXMLC's settings from the data: the K elbow (:func:`elbow_curve`), the
data-chosen DEFRAG size (:func:`choose_d0`) and the raw-vs-DEFRAG comparison
(:func:`defrag_comparison`)."""
from __future__ import annotations

import math
import time
from numbers import Real
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.docstrings import fill_doc
from featagg_core._kernels import ktxmlc_cluster as _kc
from featagg_core.xmlc.tree_fitting import mix_seeds as _mix
from featagg_core.xmlc.inputs import check_X, check_Y
from featagg_core.xmlc.ktxmlc import KTXMLC, DefragKTXMLC, fit_defrag_member, sub_progress
from featagg_core.xmlc.label_vectors import label_representation
from featagg_core.utils.validation import (
    Interval,
    check_binary_labels,
    check_param,
    parameter_error,
)
from featagg_core.utils.validation import check_int as _check_int


# ----------------------------------------------------------------------------- elbow
class Elbow(NamedTuple):
    """The result of :func:`elbow_curve`: the K values, their WCSS and the elbow K."""

    ks: np.ndarray
    wcss: np.ndarray
    elbow: int


@fill_doc
def elbow_curve(X, Y, ks=(2, 4, 8, 16, 32, 64), representation="input", random_state=0,
                kmeans_max_iter=20):
    """Within-cluster sum of squares of the root partition for each K, and the elbow.

    The label vectors (:func:`label_representation`) are clustered as at a KTXMLC root
    with ``partition="kmeans"`` (k-means|| + spherical k-means, unbalanced); WCSS is
    ``sum_l ||r_l - mean of its cluster||^2``. The elbow is the K whose point lies
    farthest from the straight line joining the first and last points of the curve, both
    axes scaled to [0, 1] (the "kneedle" rule).

    {xml_X_Y_params}
    ks : iterable of int >= 1, default=(2, 4, 8, 16, 32, 64)
        The K values to try (a K of at least the number of labels has WCSS 0).
    representation : {"input", "joint"}, default="input"
        Label vectors (:func:`featagg_core.xmlc.label_vectors.label_representation`).
    random_state : int, default=0
        Seeds the k-means|| of each K.
    kmeans_max_iter : int, default=20
        Spherical k-means passes.

    Returns
    -------
    Elbow
        ``Elbow(ks, wcss, elbow)``.

    Raises
    ------
    ValueError
        When ``ks`` is empty or holds a K < 1, or for bad ``X`` / ``Y``.
    """
    given = ks
    ks = np.asarray(list(ks), dtype=np.int64)
    if ks.size == 0 or np.any(ks < 1):
        raise parameter_error("ks", "a non-empty list of positive integers", given)
    R = label_representation(X, Y, representation)
    L = R.shape[0]
    sq = np.asarray(R.multiply(R).sum(axis=1)).ravel()
    wcss = np.empty(ks.size)
    for j, K in enumerate(ks):
        if K >= L:
            wcss[j] = 0.0
            continue
        if K == 1:
            assign, nk = np.zeros(L, np.int64), 1
        else:
            assign, nk = _kc.cluster_rows(R.indptr.astype(np.int64), R.indices, R.data,
                                          R.shape[1], int(K), False,
                                          int(_mix(random_state, K)), 2.0, 0,
                                          kmeans_max_iter, 1e-4, 1, np.zeros(1, np.uint8))
        M = sp.csr_matrix((np.ones(L, np.float32), (assign, np.arange(L))), shape=(nk, L))
        S = M @ R
        sizes = np.asarray(M.sum(axis=1)).ravel()
        sums = np.asarray(S.multiply(S).sum(axis=1)).ravel()
        wcss[j] = float(sq.sum() - np.sum(sums / np.maximum(sizes, 1)))
    if ks.size <= 2:
        return Elbow(ks, wcss, int(ks[-1] if ks.size == 2 and wcss[0] > wcss[1] else ks[0]))
    order = np.argsort(ks)
    xs = ks[order].astype(float)
    ys = wcss[order]
    xn = (xs - xs[0]) / max(xs[-1] - xs[0], 1e-12)
    yr = ys.max() - ys.min()
    yn = (ys - ys.min()) / (yr if yr > 0 else 1.0)
    # distance to the chord from the first to the last point
    dx, dy = xn[-1] - xn[0], yn[-1] - yn[0]
    dist = np.abs(dy * xn - dx * yn + xn[-1] * yn[0] - yn[-1] * xn[0]) / max(math.hypot(dx, dy), 1e-12)
    return Elbow(ks, wcss, int(xs[int(np.argmax(dist))]))


class D0Choice(NamedTuple):
    """The result of :func:`choose_d0`."""

    d0: Optional[int]   # None: do not agglomerate
    table: list         # one dict per fitted candidate ("raw" first)
    reason: str


def _train_work(model) -> int:
    return int(getattr(model, "train_work_", 0))


#: choose_d0 fits its candidates on this share of the training rows (at least
#: ``SAMPLE_MIN_ROWS`` of them, or all when there are fewer)
SAMPLE_FRACTION = 0.25
SAMPLE_MIN_ROWS = 2000


def choose_d0(X_train, Y_train, X_valid, Y_valid, candidates=(64, 32, 16, 8, 4, 2),
              tolerance=0.01, *, min_speedup=2.0, min_features=1000,
              defrag_representation="XY", sample_fraction=SAMPLE_FRACTION, budget=1.0,
              min_budget_s=2.0, progress=None, **ktxmlc_params) -> D0Choice:
    """The data-chosen DEFRAG size: the largest d0 whose validation P@1 stays within
    ``tolerance`` of KTXMLC on raw features *and* whose KTXMLC training does at most
    1/``min_speedup`` of the raw solver work; None when no candidate qualifies -- at a
    cost of at most about ``budget`` raw trainings.

    Procedure: a seeded sample of the training rows (``sample_fraction`` of them, at least
    ``SAMPLE_MIN_ROWS``) is drawn once; KTXMLC(**ktxmlc_params) is fitted on it with raw
    features and scored on the validation rows; then, from the largest d0 down (largest =
    fewest features = cheapest to try), ``Defrag(d0, defrag_representation)`` + the same
    KTXMLC are fitted on the sample and scored. The first candidate meeting both
    conditions is chosen. Early stops: the search returns None once a candidate misses
    the speed condition (smaller d0 keeps more features and costs more), and before a
    candidate whose expected CPU (the previous candidate's; the raw fit's for the first)
    would take the search past ``budget`` times the CPU of one raw training on all the
    training rows (estimated as the sample's raw fit CPU scaled by rows: the fits are
    linear in rows), or past ``min_budget_s`` when that is larger (below a couple of
    seconds timer noise and one-off costs dominate). With fewer than ``min_features`` features nothing is fitted and
    None is returned: on data that narrow agglomeration costs accuracy and saves little
    solver work (measured in ``benchmarks/results/xmlc.md``, notes section).

    The candidates compare features, not forms: unless ``ktxmlc_params`` sets ``form``,
    they are fitted with ``form="trees"`` (the trees, or one flat tree by ``one_vs_all``'s
    rule, at the given C), not KTXMLC's validated choice of form. "Solver work" is
    KTXMLC's ``train_work_`` (non-zeros of the rows each classifier is trained on,
    summed): a deterministic measure of one solver pass, so the choice does not depend on
    machine load; the table also gives measured seconds.

    Parameters
    ----------
    X_train, Y_train, X_valid, Y_valid : sparse or dense matrices
        Training and validation rows (never test rows).
    candidates : iterable of int
        d0 values to try (tried largest first).
    tolerance : float >= 0, default=0.01
        The largest P@1 loss allowed (fraction: 0.01 = one point).
    min_speedup : float > 0, default=2.0
        The smallest raw / agglomerated solver-work ratio that pays.
    min_features : int >= 0, default=1000
        Data with fewer features is not agglomerated.
    defrag_representation : {"XY", "X"}, default="XY"
        Defrag's ``representation``.
    sample_fraction : float in (0, 1], default=SAMPLE_FRACTION
        Share of the training rows the candidates are fitted on (1 = all).
    budget : float > 0, default=1.0
        The most CPU the search may spend, in raw trainings on all training rows.
    min_budget_s : float >= 0, default=2.0
        The budget in CPU seconds is at least this.
    progress : callable(fraction, message), optional
        May raise ``Cancelled``.
    **ktxmlc_params
        Passed to every KTXMLC.

    Returns
    -------
    D0Choice
        ``D0Choice(d0, table, reason)``: ``d0`` (int or None), ``table`` (dicts with
        ``d0`` ("raw" for raw features), ``features``, ``P@1``, ``P@5``, ``train_s``
        (Defrag + KTXMLC wall seconds), ``cpu_s``, ``work`` and ``speedup`` (raw work /
        work), ``model_bytes``, ``ok``) and ``reason`` (why that d0, or why none).

    Raises
    ------
    ValueError
        For a bad argument (the message names it) or bad matrices.
    """
    from featagg_core import metrics
    from featagg_core.agglomeration.defrag import Defrag

    X_train = check_X(X_train, "X_train")
    Y_train = check_Y(Y_train, X_train.shape[0])
    X_valid = check_X(X_valid, "X_valid", X_train.shape[1])
    Y_valid = check_binary_labels(Y_valid, X_valid.shape[0], "Y_valid", dtype=np.float32)
    tol = float(check_param("tolerance", tolerance, [Interval(Real, 0, None, closed="left")]))
    speed = float(check_param("min_speedup", min_speedup,
                              [Interval(Real, 0, None, closed="neither")]))
    frac = float(check_param("sample_fraction", sample_fraction,
                             [Interval(Real, 0, 1, closed="right")]))
    budget = float(check_param("budget", budget, [Interval(Real, 0, None, closed="neither")]))
    floor = float(check_param("min_budget_s", min_budget_s,
                              [Interval(Real, 0, None, closed="left")]))
    min_f = _check_int("min_features", min_features, 0)
    cands = sorted({_check_int("candidate d0", c, 1) for c in candidates}, reverse=True)
    d = X_train.shape[1]
    if d < min_f:
        return D0Choice(None, [], f"{d:,} features < {min_f:,}: agglomeration does not pay "
                                  "on data this narrow")
    params = {"form": "trees", **ktxmlc_params}
    seed = int(params.get("random_state", 0))
    n = X_train.shape[0]
    m = min(n, max(SAMPLE_MIN_ROWS, int(round(frac * n))))
    if m < n:
        rows = np.sort(np.random.default_rng(seed).choice(n, m, replace=False))
        X_train, Y_train = X_train[rows], Y_train[rows]
    steps = len(cands) + 1

    def score(model, Xv):
        S = model.predict_scores(Xv, k=5)
        return (float(metrics.precision_at_k(Y_valid, S, 1)),
                float(metrics.precision_at_k(Y_valid, S, 5)))

    c_start = time.process_time()
    t0 = time.perf_counter()
    raw = KTXMLC(**params).fit(X_train, Y_train,
                               progress=sub_progress(progress, 0, 1 / steps, "raw"))
    raw_s = time.perf_counter() - t0
    raw_cpu = time.process_time() - c_start
    cap = max(budget * raw_cpu * n / m, floor)  # CPU of `budget` raw trainings on all rows
    p1_raw, p5_raw = score(raw, X_valid)
    raw_work = max(_train_work(raw), 1)
    table = [dict(d0="raw", features=d, **{"P@1": p1_raw, "P@5": p5_raw}, train_s=raw_s,
                  cpu_s=raw_cpu, work=raw_work, speedup=1.0,
                  model_bytes=raw.model_size_bytes_, ok=True)]
    where = f" ({m:,} of {n:,} training rows)" if m < n else ""
    expect = raw_cpu
    for j, d0 in enumerate(cands):
        spent = time.process_time() - c_start
        if spent + expect > cap:
            return D0Choice(None, table, f"stopped before d0={d0}: the search has used "
                                         f"{spent:.1f} s CPU of its budget of {cap:.1f} s "
                                         f"({budget:g} raw training{'s' if budget != 1 else ''}"
                                         ") and no larger d0 qualified")
        t0, c0 = time.perf_counter(), time.process_time()
        df, model = fit_defrag_member(
            Defrag(d0=d0, representation=defrag_representation, random_state=seed),
            KTXMLC(**params), X_train, Y_train, progress, (j + 1) / steps,
            (j + 2) / steps, f"d0={d0}")
        secs = time.perf_counter() - t0
        expect = time.process_time() - c0
        p1, p5 = score(model, df.transform(X_valid))
        work = max(_train_work(model), 1)
        row = dict(d0=d0, features=int(df.n_clusters_), **{"P@1": p1, "P@5": p5},
                   train_s=secs, cpu_s=expect, work=work, speedup=raw_work / work,
                   model_bytes=model.model_size_bytes_ + df.labels_.nbytes,
                   ok=bool(p1 >= p1_raw - tol - 1e-12 and raw_work / work >= speed))
        table.append(row)
        if row["ok"]:
            return D0Choice(d0, table, f"d0={d0}: P@1 {100 * p1:.2f} vs raw {100 * p1_raw:.2f} "
                                       f"(within {100 * tol:.1f}), {raw_work / work:.1f}x "
                                       f"less solver work{where}")
        if raw_work / work < speed:
            return D0Choice(None, table, f"d0={d0} saves only {raw_work / work:.1f}x solver "
                                         f"work (< {speed:g}x) and smaller d0 saves less: "
                                         f"agglomeration does not pay here{where}")
    return D0Choice(None, table, f"every d0 loses more than {100 * tol:.1f} P@1 points on "
                                 f"the validation rows{where}")


def defrag_comparison(X, Y, X_test, Y_test, d0=8, defrag_representation="XY",
                      per_tree=False, ks=(1, 3, 5), **ktxmlc_params):
    """Train KTXMLC on raw features and on DEFRAG features; accuracy, time and size.

    Parameters
    ----------
    X, Y : sparse or dense matrices
        Training features and 0/1 labels.
    X_test, Y_test : sparse or dense matrices
        Rows to score (never used in fitting).
    d0, defrag_representation, per_tree :
        :class:`featagg_core.xmlc.ktxmlc.DefragKTXMLC`'s.
    ks : iterable of int, default=(1, 3, 5)
        The k of P@k and nDCG@k.
    **ktxmlc_params
        Passed to the raw KTXMLC (and those DefragKTXMLC takes, to it).

    Returns
    -------
    list of dict
        Two dicts (``"raw"`` and ``"defrag"``) with P@k, nDCG@k, train seconds, predict
        milliseconds per point and model size in bytes.
    """
    from featagg_core import metrics

    rows = []
    raw = KTXMLC(**ktxmlc_params)
    dfk = DefragKTXMLC(d0=d0, defrag_representation=defrag_representation,
                       per_tree=per_tree, **{k: v for k, v in ktxmlc_params.items()
                                             if k in DefragKTXMLC().get_params()})
    for name, model in (("raw", raw), ("defrag", dfk)):
        t0 = time.perf_counter()
        model.fit(X, Y)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        S = model.predict_scores(X_test, k=max(ks))
        pred_ms = 1000 * (time.perf_counter() - t0) / X_test.shape[0]
        row = dict(features=name, train_s=train_s, predict_ms_per_point=pred_ms,
                   model_size_bytes=model.model_size_bytes_)
        for kk in ks:
            row[f"P@{kk}"] = float(metrics.precision_at_k(Y_test, S, kk))
            row[f"nDCG@{kk}"] = float(metrics.ndcg_at_k(Y_test, S, kk))
        rows.append(row)
    return rows


