"""The one place that scores anything (part of :mod:`featagg_core.experiment`).

:func:`evaluate` scores a fitted :class:`~featagg_core.runs.pipeline.Pipeline` on rows of a split;
the sweeps the pages and the triage show (REFRAG's α curve, FIAT's erasure curve, the K
elbow on training rows, metrics per label-frequency bucket, the graph feature-selection
comparison, the vocabulary budget curve) are built on the same private helpers
(``_ranking``, ``_clustering_scores``, ``_selection_scores``, ``_vocabulary_scores``), so no
page re-implements a metric. Ranking metrics come from
:func:`featagg_core.metrics.ranking_metrics`, with inverse propensities from the training
rows' labels ``Y[split.train]``; all rates are fractions in [0, 1].
"""
from __future__ import annotations

import copy
import time
import warnings
from typing import Dict, NamedTuple, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.runs.split import ROWS, Split, check_split_fits, row_indices, take_rows
from featagg_core.utils.docstrings import fill_doc

__all__ = ["evaluate", "refrag_alpha_curve", "erasure_curve", "elbow", "bucket_metrics",
           "predictions", "Predictions", "feature_selection_comparison",
           "vocabulary_report", "vocabulary_budget_curve", "BUCKET_NAMES",
           "SELECTION_BASELINES", "DEFAULT_ALPHAS", "DEFAULT_FRACTIONS", "DEFAULT_DS"]

BUCKET_NAMES = ("head", "torso-head", "torso", "torso-tail", "tail")
DEFAULT_ALPHAS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0)
DEFAULT_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(10))
DEFAULT_DS = (16, 64, 128, 200, 600)
#: title -> feature_selection sub-spec of the baselines the graph page compares BMGUFS with
SELECTION_BASELINES = {
    "Laplacian score (graph)": {"kind": "laplacian", "affinity": "graph"},
    "Laplacian score (kNN)": {"kind": "laplacian", "affinity": "knn"},
    "SPEC (kNN)": {"kind": "spec", "affinity": "knn"},
    "variance": {"kind": "variance"},
    "random": {"kind": "random"},
}
_DATA_KIND = {"classifier": "multilabel", "agglomeration": "multilabel",
              "feature_clustering": "multilabel", "feature_selection": "graph",
              "vocabulary": "table"}


# ----------------------------------------------------------------------------- checks
def _pipeline_of(obj):
    from featagg_core.runs.pipeline import Pipeline, as_pipeline
    if isinstance(obj, Pipeline):
        return obj
    pipe = getattr(obj, "pipeline", None)          # a Run
    if isinstance(pipe, Pipeline):
        return pipe
    if pipe is None and hasattr(obj, "status"):
        raise ValueError(f"run {getattr(obj, 'name', '')!r} has no fitted pipeline (status "
                         f"{obj.status!r})")
    return as_pipeline(obj)


def check_applicable(pipe, data, split: Split, *, fingerprint: Optional[str] = None) -> None:
    """ValueError when ``pipe`` cannot be scored on ``data``/``split``.

    Another kind of data, other feature / label counts, a split of another dataset, or the
    same dataset split differently from the one it was fitted on (its training rows could
    be scored).

    Parameters
    ----------
    pipe : Pipeline or Run
        The fitted pipeline (or a run holding one).
    data : MultiLabelData, GraphData or CategoricalData
        The dataset to score on.
    split : Split
        The split to score on.
    fingerprint : str, optional
        ``data``'s fingerprint when the caller already has it.

    Raises
    ------
    ValueError
        Saying why, in the user's terms.
    """
    fp = data.fingerprint if fingerprint is None else fingerprint
    if not isinstance(split, Split):
        raise ValueError(f"split must be a Split from make_split, got {type(split).__name__}")
    if split.dataset_fingerprint != fp:
        check_split_fits(data, split)
    kind = pipe.kind
    if data.kind != _DATA_KIND[kind]:
        raise ValueError(f"a {kind.replace('_', ' ')} pipeline needs a {_DATA_KIND[kind]} "
                         f"dataset; this one is a {data.kind} dataset")
    if pipe.dataset_fingerprint == fp and pipe.split_id is not None \
            and pipe.split_id != split.split_id:
        raise ValueError(f"this pipeline was fitted on split {pipe.split_id} of this dataset; "
                         f"split {split.split_id} may test it on rows it was trained on. "
                         "Use the same test/validation fractions and seed, or refit")
    if data.kind in ("multilabel", "graph"):
        d = data.X.shape[1]
        if pipe.n_features_in_ is not None and pipe.n_features_in_ != d:
            lab = f" and {pipe.n_labels_:,} labels" if pipe.n_labels_ is not None else ""
            have = f" and {data.Y.shape[1]:,} labels" if pipe.n_labels_ is not None else ""
            raise ValueError(f"the model was fitted on {pipe.n_features_in_:,} features{lab}; "
                             f"this dataset has {d:,} features{have}")
        if kind == "classifier" and pipe.n_labels_ is not None \
                and pipe.n_labels_ != data.Y.shape[1]:
            raise ValueError(f"the model predicts {pipe.n_labels_:,} labels; this dataset has "
                             f"{data.Y.shape[1]:,}")
    if data.kind == "table":
        missing = [c for c in pipe.columns_ or [] if c not in data.table.columns]
        if missing:
            raise ValueError(f"the model compresses column {missing[0]!r}, which this table "
                             "does not have")


def _rows(data, split, rows):
    idx, _ = row_indices(split, rows)
    if idx.size == 0:
        raise ValueError(f"rows={rows!r}: this split has no {rows} rows")
    return take_rows(data, split, rows)


def _applicable_rows(pipeline, data, split, rows):
    """The pipeline of ``pipeline`` (a Pipeline or Run), checked against ``data`` and
    ``split`` (:func:`check_applicable`), and the data of ``rows`` of the split."""
    pipe = _pipeline_of(pipeline)
    check_applicable(pipe, data, split)
    return pipe, _rows(data, split, rows)


def _inv_propensity(data, split):
    from featagg_core.metrics import inverse_propensity
    return inverse_propensity(data.Y[split.train])


# ----------------------------------------------------------------------------- helpers
def _ranking(Y, scores, ks, inv, metrics=None, prefix="") -> Dict[str, float]:
    from featagg_core.metrics import RANKING_METRICS, ranking_metrics
    flat = ranking_metrics(Y, scores, list(ks), inv, metrics=metrics or RANKING_METRICS)
    return {prefix + k: v for k, v in flat.items()}


#: rows scored per block when a run can be cancelled (a cancel lands between blocks)
_BLOCK_ROWS = 20_000


def _final_and_base(pipe, X, k, cancel=None):
    """(final, base or None): the pipeline's scores and, when it re-ranks or imputes, the
    classifier's own (no FIAT, no REFRAG) for the ``base`` metrics. With ``cancel``, large
    inputs are scored in blocks of rows and ``cancel`` is checked between them."""
    if cancel is not None and X.shape[0] > _BLOCK_ROWS:
        from featagg_core.utils.cancel import check_cancel
        parts = []
        for lo in range(0, X.shape[0], _BLOCK_ROWS):
            check_cancel(cancel)
            parts.append(_final_and_base(pipe, X[lo:lo + _BLOCK_ROWS], k))
        final = sp.vstack([p[0] for p in parts]).tocsr()
        base = None if parts[0][1] is None else sp.vstack([p[1] for p in parts]).tocsr()
        return final, base
    final, base = pipe.scores(X, k)
    if pipe.imputer is not None:
        base = pipe.scores(X, k, rerank=False, impute=False)[0]
    elif pipe.reranker is None:
        base = None
    return final, base


def _clustering_scores(pipe, X, Y) -> Dict[str, float]:
    from featagg_core.agglomeration.defrag import clustering_error, feature_representation
    clus = pipe.clustering()
    rep = clus.representation
    R, _ = feature_representation(X, Y if rep == "XY" else None, rep)
    Xt = pipe.transform(X)
    return {"clustering_error": float(clustering_error(R, clus.labels_, clus.n_clusters_)),
            "clusters": int(clus.n_clusters_), "features_after": int(Xt.shape[1]),
            "nnz_before": int(X.nnz), "nnz_after": int(Xt.nnz)}


def _known(y):
    from featagg_core.graph.evaluation import known_class_mask
    return known_class_mask(np.asarray(y))


def _selection_scores(X, y, selected, n_seeds: int, random_state: int = 0) -> Optional[dict]:
    """k-means ACC/NMI of the selected columns of the nodes with a known class
    (:func:`featagg_core.graph.evaluation.evaluate_selection`), None without two classes."""
    from featagg_core.graph.evaluation import evaluate_selection
    if y is None:
        return None
    mask = _known(y)
    if np.unique(np.asarray(y)[mask]).size < 2:
        return None
    return evaluate_selection(X, y, np.asarray(selected, np.int64), n_seeds=int(n_seeds),
                              random_state=random_state)


def _vocabulary_scores(cc, columns, table, labels):
    """Per column: I(X;C) of the raw values, I(Z;C) of the buckets (nats, on these rows),
    the vocabulary size, buckets and unseen rows."""
    import pandas as pd

    from featagg_core.metrics import mutual_information
    labels = np.asarray(labels)
    out = []
    for col in columns:
        vc = cc.compressors[col]
        values = table[col].to_numpy()
        codes = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)[0]
        out.append({"column": col, "values": int(len(vc.vocabulary_)),
                    "buckets": int(vc.n_buckets_),
                    "I(X;C)": float(mutual_information(codes, labels)),
                    "I(Z;C)": float(mutual_information(vc.transform(values), labels)),
                    "unseen rows": int((~pd.Index(values).isin(vc.vocabulary_)).sum())})
    return out


def _vocabulary_totals(per_column) -> Dict[str, float]:
    ix = float(sum(r["I(X;C)"] for r in per_column))
    iz = float(sum(r["I(Z;C)"] for r in per_column))
    return {"I(Z;C)": iz, "I(X;C)": ix, "MI loss": max(ix - iz, 0.0) / ix if ix > 0 else 0.0,
            "buckets": int(sum(r["buckets"] for r in per_column)),
            "columns": len(per_column)}


# ----------------------------------------------------------------------------- evaluate
@fill_doc
def evaluate(pipeline, data, split: Split, rows: str = "test", ks: Sequence[int] = (1, 3, 5),
             *, n_seeds: int = 10) -> Dict[str, float]:
    """Score a fitted pipeline (or a run) on ``rows`` of ``split``: a flat ``{name: float}``.

    * classifier: ``P@k``, ``nDCG@k``, ``PSP@k``, ``PSnDCG@k``, ``coverage@k`` for every k
      in ``ks`` (propensities from ``Y[split.train]``); with a re-ranker or an imputer
      also the classifier's own as ``base P@k``, …;
    * agglomeration / feature clustering: ``clustering_error`` of the representation built
      from ``rows`` (no sampling), ``clusters``, ``features_after``, ``nnz_before``,
      ``nnz_after``;
    * feature selection: ``ACC``, ``NMI`` (and their ``sd``) of k-means (``n_seeds`` seeds,
      k = classes among the rows) on the selected columns of the ``rows`` nodes with a known
      class, ``d``, and ``nnz(r)`` for BMGUFS;
    * vocabulary: ``I(Z;C)``, ``I(X;C)`` (nats, sums over columns), ``MI loss``, ``buckets``.

    Parameters
    ----------
    {evaluated}
    {ks_ranking}
    n_seeds : int, default=10
        k-means seeds of the feature-selection scores.

    Returns
    -------
    dict of str to float
        The metrics above, always with ``n_rows``.

    Raises
    ------
    ValueError
        When the pipeline cannot be scored on these rows (:func:`check_applicable`), or
        for a bad ``rows`` / ``ks``.
    """
    return _evaluate(_pipeline_of(pipeline), data, split, rows, ks, n_seeds=n_seeds)[0]


def _evaluate(pipe, data, split, rows, ks, *, n_seeds=10, fingerprint=None, cancel=None):
    """(metrics, prediction seconds) — evaluate's body, also timed by run_pipeline (which
    passes its ``cancel``)."""
    if rows not in ROWS:
        raise ValueError(f"rows must be one of {', '.join(ROWS)}, got {rows!r}")
    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive integers, got {ks!r}")
    check_applicable(pipe, data, split, fingerprint=fingerprint)
    part = _rows(data, split, rows)
    kind = pipe.kind
    t0 = time.perf_counter()
    if kind == "classifier":
        final, base = _final_and_base(pipe, part.X, max(ks), cancel)
        seconds = time.perf_counter() - t0
        inv = _inv_propensity(data, split)
        out = _ranking(part.Y, final, ks, inv)
        if base is not None:
            out.update(_ranking(part.Y, base, ks, inv, prefix="base "))
        out["n_rows"] = int(part.X.shape[0])
        return out, seconds
    if kind in ("agglomeration", "feature_clustering"):
        out = _clustering_scores(pipe, part.X, part.Y)
        out["n_rows"] = int(part.X.shape[0])
        return out, time.perf_counter() - t0
    if kind == "feature_selection":
        sel = np.asarray(pipe.selected_, np.int64)
        out: Dict[str, float] = {"d": int(sel.size)}
        if type(pipe.selector).__name__ == "BMGUFS":
            out["nnz(r)"] = int(np.count_nonzero(pipe.selector.scores_))
        ev = _selection_scores(part.X, part.y, sel, n_seeds) if sel.size else None
        if ev is not None:
            out.update({"ACC": ev["acc_mean"], "NMI": ev["nmi_mean"], "ACC sd": ev["acc_sd"],
                        "NMI sd": ev["nmi_sd"]})
        out["n_rows"] = int(part.A.shape[0])
        return out, time.perf_counter() - t0
    per_col = _vocabulary_scores(pipe.vocabulary, pipe.columns_, part.table, part.labels)
    out = _vocabulary_totals(per_col)
    out["n_rows"] = int(len(part.labels))
    return out, time.perf_counter() - t0


# ----------------------------------------------------------------------------- predictions
class Predictions(NamedTuple):
    """Scores of a classifier pipeline on rows of a split: ``scores`` (the pipeline's top k),
    ``base`` (the classifier's own shortlist without REFRAG/FIAT, or None), ``Y_true``,
    ``Y_train`` (the training rows' labels) and ``rows`` (their indices)."""
    scores: sp.csr_matrix
    base: Optional[sp.csr_matrix]
    Y_true: sp.csr_matrix
    Y_train: sp.csr_matrix
    rows: np.ndarray


@fill_doc
def predictions(pipeline, data, split: Split, rows: str = "test", k: int = 5) -> Predictions:
    """The score matrices the pages show examples from (no metric computed here).

    Parameters
    ----------
    {evaluated}
    k : int, default=5
        Labels kept per row.

    Returns
    -------
    Predictions
        ``scores``, ``base``, ``Y_true``, ``Y_train`` and ``rows``.

    Raises
    ------
    {not_applicable}
    """
    pipe, part = _applicable_rows(pipeline, data, split, rows)
    final, base = _final_and_base(pipe, part.X, int(k))
    idx = row_indices(split, rows)[0]
    return Predictions(final, base, sp.csr_matrix(part.Y), sp.csr_matrix(data.Y[split.train]),
                       idx)


@fill_doc
def bucket_metrics(pipeline, data, split: Split, rows: str = "test", k: int = 5,
                   n_buckets: int = 5):
    """Accuracy and coverage per label-frequency bucket.

    Buckets from the training rows' label frequencies
    (:func:`featagg_core.metrics.label_frequency_buckets`; bucket 0 = head, equal numbers
    of labels).

    Parameters
    ----------
    {evaluated}
    k : int, default=5
        The cut-off.
    n_buckets : int, default=5
        The number of buckets.

    Returns
    -------
    pandas.DataFrame
        One row per bucket: ``bucket`` (head … tail), ``labels``, ``min train examples``,
        ``max train examples``, ``P@k`` (the bucket's share of P@k; the buckets add up to
        P@k), ``coverage@k`` (of the bucket's labels present in the rows, the fraction some
        row predicts correctly in its top k), and ``base P@k`` / ``base coverage@k`` when
        the pipeline re-ranks or imputes. Fractions in [0, 1].

    Raises
    ------
    {not_applicable}
    """
    import pandas as pd

    from featagg_core.metrics import label_frequency_buckets, precision_by_bucket
    pred = predictions(pipeline, data, split, rows, k)
    b = label_frequency_buckets(pred.Y_train, n_buckets)
    freq = np.asarray(pred.Y_train.getnnz(axis=0), np.int64)
    present = np.asarray(pred.Y_true.getnnz(axis=0)) > 0
    names = BUCKET_NAMES if n_buckets == 5 else tuple(f"bucket {i + 1}" for i in range(n_buckets))
    out = pd.DataFrame({
        "bucket": list(names), "labels": np.bincount(b, minlength=n_buckets),
        "min train examples": [int(freq[b == i].min()) if np.any(b == i) else 0
                               for i in range(n_buckets)],
        "max train examples": [int(freq[b == i].max()) if np.any(b == i) else 0
                               for i in range(n_buckets)]})
    for prefix, S in (("", pred.scores), ("base ", pred.base)):
        if S is None:
            continue
        out[f"{prefix}P@{k}"] = precision_by_bucket(pred.Y_true, S, b, k, n_buckets)
        hit = _covered_labels(pred.Y_true, S, k)
        out[f"{prefix}coverage@{k}"] = [
            float(hit[(b == i) & present].sum() / ((b == i) & present).sum())
            if ((b == i) & present).any() else np.nan for i in range(n_buckets)]
    return out


def _covered_labels(Y, S, k) -> np.ndarray:
    """Boolean (L,): labels that are a correct top-k prediction of some row."""
    from featagg_core.metrics import top_k
    top = top_k(sp.csr_matrix(S), int(k))
    rows = np.repeat(np.arange(top.shape[0]), top.shape[1])
    lab = top.ravel()
    ok = lab >= 0
    rows, lab = rows[ok], lab[ok]
    hits = np.asarray(Y[rows, lab]).ravel() != 0
    out = np.zeros(Y.shape[1], dtype=bool)
    out[lab[hits]] = True
    return out


# ----------------------------------------------------------------------------- sweeps
@fill_doc
def refrag_alpha_curve(pipeline, data, split: Split, alphas: Sequence[float] = DEFAULT_ALPHAS,
                       rows: str = "test", ks: Sequence[int] = (5,)):
    """REFRAG's trade-off: the pipeline's ranking metrics (at ``ks``) for every α.

    The rest of the re-ranker unchanged. The classifier's shortlist is computed once.
    α = 1 is the classifier's own ranking.

    Parameters
    ----------
    {pipeline_fitted}
    {data_split_fitted}
    alphas : sequence of float, default=DEFAULT_ALPHAS
        The mixing weights to try.
    {rows_scored}
    ks : sequence of int, default=(5,)
        The cut-offs.

    Returns
    -------
    pandas.DataFrame
        ``alpha`` and ``P@k``, …, ``coverage@k``.

    Raises
    ------
    ValueError
        When the pipeline has no re-ranker or cannot be scored on these rows.
    """
    import pandas as pd
    pipe = _pipeline_of(pipeline)
    if pipe.reranker is None:
        raise ValueError("this pipeline has no re-ranker: add a 'rerank' step (REFRAG)")
    check_applicable(pipe, data, split)
    part = _rows(data, split, rows)
    X = part.X if pipe.imputer is None else pipe.imputer.transform(pipe._check_X(part.X))
    kmax = max(int(k) for k in ks)
    base = pipe.classifier.predict_scores(pipe._features(X), k=max(kmax, pipe.shortlist))
    inv = _inv_propensity(data, split)
    out = []
    for a in alphas:
        reranker = copy.copy(pipe.reranker)
        reranker.set_params(alpha=float(a))
        out.append({"alpha": float(a),
                    **_ranking(part.Y, reranker.rerank(X, base, k=kmax), ks, inv)})
    return pd.DataFrame(out)


@fill_doc
def erasure_curve(pipeline, data, split: Split, fractions: Sequence[float] = DEFAULT_FRACTIONS,
                  rows: str = "test", ks: Sequence[int] = (1, 3, 5), *, random_state: int = 0,
                  max_rows: Optional[int] = None):
    """FIAT's experiment: erase a fraction of every row's features at random and score.

    The erasure is nested across fractions for one ``random_state``
    (:func:`featagg_core.agglomeration.fiat.erase_features`); the pipeline is scored without (``P@k``)
    and, when it has an imputer, with FIAT (``P@k FIAT``).

    Parameters
    ----------
    {pipeline_fitted}
    {data_split_fitted}
    fractions : sequence of float, default=DEFAULT_FRACTIONS
        The fractions of features to erase.
    {rows_scored}
    ks : sequence of int, default=(1, 3, 5)
        The cut-offs.
    random_state : int, default=0
        Seeds the erasure.
    max_rows : int, optional
        Keeps only the first rows (the page uses 1,000).

    Returns
    -------
    pandas.DataFrame
        A row per fraction.

    Raises
    ------
    {not_applicable}
    """
    import pandas as pd

    from featagg_core.agglomeration.fiat import erase_features
    pipe = _pipeline_of(pipeline)
    if pipe.classifier is None:
        raise ValueError("the erasure curve needs a classifier pipeline")
    check_applicable(pipe, data, split)
    part = _rows(data, split, rows)
    X, Y = part.X, part.Y
    if max_rows is not None:
        X, Y = X[:int(max_rows)], Y[:int(max_rows)]
    inv = _inv_propensity(data, split)
    kmax = max(int(k) for k in ks)
    out = []
    for p in fractions:
        Xe = erase_features(X, float(p), random_state)
        row = {"fraction": float(p)}
        row.update(_ranking(Y, pipe.scores(Xe, kmax, impute=False)[0], ks, inv, ("P",)))
        if pipe.imputer is not None:
            fiat = _ranking(Y, pipe.scores(Xe, kmax)[0], ks, inv, ("P",))
            row.update({f"{k} FIAT": v for k, v in fiat.items()})
        out.append(row)
    return pd.DataFrame(out)


@fill_doc
def elbow(data, split: Split, ks: Sequence[int] = (2, 4, 8, 16, 32, 64), *, pipeline=None,
          representation: str = "input", random_state: int = 0):
    """The K elbow of KTXMLC's root on the *training* rows.

    :func:`featagg_core.xmlc.selection.elbow_curve` on ``X[train]``, or on the pipeline's
    agglomerated training features when ``pipeline`` has a DEFRAG step.

    Parameters
    ----------
    {data_split_fitted}
    ks : sequence of int, default=(2, 4, 8, 16, 32, 64)
        The numbers of clusters K to try.
    pipeline : Pipeline or Run, optional
        A pipeline whose DEFRAG step builds the features.
    representation : {"input", "joint"}, default="input"
        KTXMLC's label representation (what the root clusters).
    random_state : int, default=0
        Seeds the clusterings.

    Returns
    -------
    Elbow
        :func:`featagg_core.xmlc.selection.elbow_curve`'s ``(ks, wcss, elbow)``.

    Raises
    ------
    ValueError
        For a dataset that is not multilabel or a pipeline fitted on another split.
    """
    from featagg_core.xmlc.selection import elbow_curve
    check_split_fits(data, split)
    if data.kind != "multilabel":
        raise ValueError(f"the K elbow needs a multilabel dataset, got a {data.kind} one")
    part = take_rows(data, split, "train")
    X = part.X
    if pipeline is not None:
        pipe = _pipeline_of(pipeline)
        if pipe.split_id is not None and pipe.split_id != split.split_id:
            raise ValueError("the pipeline was fitted on another split")
        X = pipe._features(pipe._check_X(X))
    return elbow_curve(X, part.Y, ks=ks, representation=representation,
                       random_state=random_state)


@fill_doc
def feature_selection_comparison(data, split: Split, base=None, methods: Optional[dict] = None,
                                 ds: Sequence[int] = DEFAULT_DS, rows: str = "test",
                                 n_seeds: int = 3, progress=None, cancel=None) -> dict:
    """ACC/NMI of k-means on the top-d features of BMGUFS and of every baseline.

    ``base``: a BMGUFS run or pipeline on this split; ``methods``: title ->
    feature_selection sub-spec, default :data:`SELECTION_BASELINES`; at each d, plus all
    features: the paper's protocol, with every ranking fitted on the training nodes'
    subgraph and scored on the ``rows`` nodes.

    Parameters
    ----------
    data : GraphData
        The graph.
    split : Split
        Its split (rankings are fitted on the training nodes).
    base : Run or Pipeline, optional
        A fitted BMGUFS run or pipeline of this split.
    methods : dict, optional
        Title -> feature_selection sub-spec of each baseline.
    ds : sequence of int, default=DEFAULT_DS
        The numbers of top features to score.
    {rows_scored}
    {n_seeds}
    {work_progress}

    Returns
    -------
    dict
        ``{"ds", "methods": {title: {d: scores}}, "n_seeds"}`` with
        :func:`featagg_core.graph.evaluation.evaluate_selection`'s dicts as scores.

    Raises
    ------
    ValueError
        For a dataset that is not a graph, or a ``base`` that is not a feature-selection
        run or pipeline.
    """
    from featagg_core.utils.cancel import cancelling_progress, check_cancel
    from featagg_core.runs.spec import canonical_spec
    from featagg_core.runs.steps import fit_selector
    check_split_fits(data, split)
    if data.kind != "graph":
        raise ValueError(f"feature selection needs a graph dataset, got a {data.kind} one")
    methods = SELECTION_BASELINES if methods is None else methods
    specs = {title: canonical_spec({"feature_selection": dict(m)})["feature_selection"]
             for title, m in methods.items()}
    f = data.X.shape[1]
    ds = [int(d) for d in ds if int(d) <= f] or [f]
    train, part = take_rows(data, split, "train"), _rows(data, split, rows)
    orders = {}
    if base is not None:
        pipe = _pipeline_of(base)
        check_applicable(pipe, data, split)
        if pipe.selector is None:
            raise ValueError("base must be a feature-selection run or pipeline")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            orders["BMGUFS"] = {d: np.asarray(pipe.selector.select(d), np.int64) for d in ds}
    total = len(specs) + 2
    for i, (title, spec) in enumerate(specs.items()):
        check_cancel(cancel)
        spec = dict(spec, d=max(ds)) if spec["kind"] != "all" else spec
        cb = cancelling_progress(progress, cancel, i / total, (i + 1) / total)
        model, _, _ = fit_selector(train.A, train.X, train.y, spec, cb)
        orders[title] = {d: model.select(d) for d in ds}
    check_cancel(cancel)
    out = {}
    for title, per_d in orders.items():
        out[title] = {d: _selection_scores(part.X, part.y, idx, n_seeds) for d, idx in
                      per_d.items()}
        check_cancel(cancel)
    allf = _selection_scores(part.X, part.y, np.arange(f), n_seeds)
    out["all features"] = {d: allf for d in ds}
    if progress is not None:
        progress(1.0, "k-means on the selections done")
    return {"ds": ds, "methods": out, "n_seeds": int(n_seeds)}


@fill_doc
def vocabulary_report(pipeline, data, split: Split, rows: str = "test"):
    """Per compressed column, on ``rows``, what the compression keeps.

    Parameters
    ----------
    {evaluated}

    Returns
    -------
    pandas.DataFrame
        ``values`` (training vocabulary), ``buckets``, ``I(X;C)``, ``I(Z;C)`` (nats),
        ``MI loss`` and ``unseen rows`` (values the training rows never had), one row per
        column.

    Raises
    ------
    {not_applicable}
    """
    import pandas as pd
    pipe, part = _applicable_rows(pipeline, data, split, rows)
    per_col = _vocabulary_scores(pipe.vocabulary, pipe.columns_, part.table, part.labels)
    df = pd.DataFrame(per_col)
    df["MI loss"] = np.where(df["I(X;C)"] > 0, (df["I(X;C)"] - df["I(Z;C)"]).clip(lower=0)
                             / df["I(X;C)"].where(df["I(X;C)"] > 0, 1.0), 0.0)
    return df


@fill_doc
def vocabulary_budget_curve(data, split: Split, spec: dict, budgets: Sequence[int],
                            rows: str = "test", progress=None, cancel=None):
    """MI loss against the budget.

    The vocabulary spec refitted on the training rows at every per-column budget m and
    scored on ``rows``.

    Parameters
    ----------
    {table_data_split}
    spec : dict
        A run spec with a vocabulary step.
    budgets : sequence of int
        The per-column budgets m.
    {rows_scored}
    {work_progress}

    Returns
    -------
    pandas.DataFrame
        ``m``, ``I(Z;C)``, ``I(X;C)``, ``MI loss``, ``buckets``, ``fit_s``.

    Raises
    ------
    ValueError
        When ``spec`` has no vocabulary step or does not fit the table.
    """
    import pandas as pd

    from featagg_core.utils.cancel import cancelling_progress, check_cancel
    from featagg_core.runs.spec import canonical_spec, check_spec_fits
    from featagg_core.runs.steps import fit_vocabulary
    spec = canonical_spec(spec)
    if "vocabulary" not in spec:
        raise ValueError("vocabulary_budget_curve needs a vocabulary spec")
    check_split_fits(data, split)
    check_spec_fits(spec, data)
    train, part = take_rows(data, split, "train"), _rows(data, split, rows)
    out = []
    budgets = [int(m) for m in budgets]
    for i, m in enumerate(budgets):
        check_cancel(cancel)
        params = canonical_spec({"vocabulary": dict(spec["vocabulary"], budget=m)})["vocabulary"]
        cb = cancelling_progress(progress, cancel, i / len(budgets), (i + 1) / len(budgets))
        t0 = time.perf_counter()
        cc, cols = fit_vocabulary(train.table, train.labels, params, cancel, cb)
        fit_s = time.perf_counter() - t0
        totals = _vocabulary_totals(_vocabulary_scores(cc, cols, part.table, part.labels))
        out.append({"m": m, **{k: totals[k] for k in ("I(Z;C)", "I(X;C)", "MI loss",
                                                      "buckets")}, "fit_s": fit_s})
    return pd.DataFrame(out)
